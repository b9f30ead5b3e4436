"""torch_load.py - the compute workload: fp16 matmuls in a loop.

  torch_load.py [--seconds S] [--size N] [--go PATH] [--graph]
Warms up, prints "ready", waits for PATH (all tenants of a row start
together), then runs S seconds: N x N fp16 matmuls, 20 per synchronisation
(launch-heavy), and prints "its=R" (matmuls per second over [1 s, S]).
--graph: the 20 matmuls are one CUDA graph (torch.cuda.graph capture),
replayed; before timing, the replay's result is checked against eager
execution ("graph_ok=0|1").
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuwork  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=6)
p.add_argument("--size", type=int, default=4096)
p.add_argument("--go", default=None)
p.add_argument("--graph", action="store_true")
args = p.parse_args()
try:
    import torch
except ImportError:
    gpuwork.missing("torch")
PER = 20
torch.manual_seed(0)
a = torch.randn(args.size, args.size, device="cuda", dtype=torch.float16) / args.size ** 0.5
b = torch.randn(args.size, args.size, device="cuda", dtype=torch.float16)
out = torch.empty_like(b)


def chain():
    x = b
    for _ in range(PER):
        x = a @ x
    out.copy_(x)


for _ in range(3):
    chain()
torch.cuda.synchronize()
if args.graph:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        chain()  # warm-up on a side stream, as torch.cuda.graph wants
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        chain()
    chain()
    want = out.clone()
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    gpuwork.out("graph_ok=%d" % int(torch.allclose(out, want, rtol=1e-2, atol=1e-2)))
    run = g.replay
else:
    run = chain


def step():
    run()
    torch.cuda.synchronize()
    return PER


gpuwork.barrier("ready", args.go)
gpuwork.out("its=%.2f" % gpuwork.timed_loop(step, args.seconds))
