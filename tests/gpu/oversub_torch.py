"""oversub_torch.py - oversubscription on a real GPU (tests/gpu/oversub.sh runs it).

Inside a slice (libtessel-cuda preloaded, TESSEL_CUDA_MEM_LIMIT and
TESSEL_CUDA_MEM_OVERSUBSCRIBE set), PyTorch allocates 256 MiB tensors until
torch.OutOfMemoryError, then measures the bandwidth of a kernel (in-place add)
over the first tensor (device memory) and over the last one (spilled into host
memory, if the slice spilled), and at its peak prints what nvidia-smi and the
slice file say.  One "oversub KEY=VALUE ..." line per figure.
"""
import os
import subprocess
import sys

try:
    import torch
except ImportError:
    print("oversub missing=torch")
    sys.exit(2)

MiB = 1 << 20
STEP = 256 * MiB
if not torch.cuda.is_available():
    print("oversub error=no-cuda")
    sys.exit(2)
free, total = torch.cuda.mem_get_info()
print("oversub view_total=%d view_free=%d" % (total, free), flush=True)
bufs = []
try:
    while len(bufs) < 4096:
        bufs.append(torch.empty(STEP, dtype=torch.uint8, device="cuda"))
except torch.OutOfMemoryError:
    pass
print("oversub tensors=%d bytes=%d" % (len(bufs), len(bufs) * STEP), flush=True)
free2, total2 = torch.cuda.mem_get_info()
print("oversub view_free_at_peak=%d" % free2, flush=True)
smi = subprocess.run(
    ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
    capture_output=True, text=True)
for line in smi.stdout.splitlines():
    pid, used = [x.strip() for x in line.split(",")[:2]]
    if pid == str(os.getpid()):
        print("oversub driver_used_mib=%s" % used, flush=True)
slice_tool = os.environ.get("TCU_SLICE_TOOL")
if slice_tool and os.environ.get("TESSEL_SLICE"):
    out = subprocess.run([slice_tool, os.environ["TESSEL_SLICE"]], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("device 0 "):
            print("oversub slice %s" % line, flush=True)


def bandwidth(t, reps=5):
    t.add_(1)  # first touch: maps (or migrates) the pages
    torch.cuda.synchronize()
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(reps):
        t.add_(1)
    b.record()
    torch.cuda.synchronize()
    ms = a.elapsed_time(b)
    return 2.0 * t.numel() * reps / (ms / 1000.0) / 1e9  # read + write, GB/s


if len(bufs) >= 2:
    dev = bandwidth(bufs[0])
    spill = bandwidth(bufs[-1])
    print("oversub dev_gbs=%.1f spill_gbs=%.1f ratio=%.4f" % (dev, spill, spill / dev), flush=True)
