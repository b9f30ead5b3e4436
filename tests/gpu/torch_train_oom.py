"""torch_train_oom.py - PyTorch training whose batch grows until it does not fit.

A small MLP trains with SGD; the batch grows by half each step.  Expected in
a slice: a clean torch.OutOfMemoryError (no crash, no other error), after
which the process frees its cache and trains one more step at the last batch
that fitted ("recovered=1").  With --sample-dir, run.sh reads the driver's
and the slice's figures at the error (gpuwork.Sampler, "held" = memory
reserved by PyTorch's caching allocator then).
Output: "batch=B oom=1 last_ok=B0 recovered=0|1 held=H".
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuwork  # noqa: E402

args = gpuwork.fill_args(sys.argv[1:])
try:
    import torch
except ImportError:
    gpuwork.missing("torch")
torch.manual_seed(0)
dev = torch.device("cuda", args.dev)
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
    torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
    torch.nn.Linear(4096, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
sampler = gpuwork.Sampler(args.sample_dir, 1 << 30)  # the error only


def step(batch):
    x = torch.randn(batch, 1024, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize(dev)
    return float(loss)


batch, last_ok = 256, 0
while True:
    try:
        step(batch)
    except torch.OutOfMemoryError:
        held = torch.cuda.memory_reserved(dev)
        sampler.point(held, oom=True)
        break
    last_ok = batch
    batch = batch * 3 // 2
    if batch > 1 << 24:
        gpuwork.out("error: no out-of-memory error up to batch %d" % batch)
        sys.exit(1)
torch.cuda.empty_cache()
recovered = 0
if last_ok:
    try:
        step(last_ok)
        recovered = 1
    except torch.OutOfMemoryError:
        recovered = 0
gpuwork.out("batch=%d oom=1 last_ok=%d recovered=%d held=%d" % (batch, last_ok, recovered, held))
