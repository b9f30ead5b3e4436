"""torch_fill.py - PyTorch allocates 64 MiB tensors until torch.OutOfMemoryError.

Options: see gpuwork.fill_args (--sample-dir, --every, --step, --dev).
Run with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True for the VMM path.
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
if not torch.cuda.is_available():
    gpuwork.out("error: torch.cuda.is_available() is False")
    sys.exit(2)
torch.cuda.set_device(args.dev)
free, total = torch.cuda.mem_get_info()
gpuwork.out("view total=%d free=%d" % (total, free))
sampler = gpuwork.Sampler(args.sample_dir, args.every)
step = args.step * gpuwork.MiB
held, bufs = 0, []
try:
    while True:
        bufs.append(torch.empty(step, dtype=torch.uint8, device="cuda"))
        held += step
        sampler.point(held)
except torch.cuda.OutOfMemoryError:
    sampler.point(held, oom=True)
    gpuwork.out("held=%d oom=1" % held)
    sys.exit(0)
