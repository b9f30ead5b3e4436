"""cupy_fill.py - CuPy (memory pool off: one cudaMalloc per array) allocates
64 MiB arrays until its out-of-memory error.  Options: gpuwork.fill_args."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuwork  # noqa: E402

args = gpuwork.fill_args(sys.argv[1:])
try:
    import cupy
except ImportError:
    gpuwork.missing("cupy")
cupy.cuda.Device(args.dev).use()
cupy.cuda.set_allocator(None)
free, total = cupy.cuda.runtime.memGetInfo()
gpuwork.out("view total=%d free=%d" % (total, free))
sampler = gpuwork.Sampler(args.sample_dir, args.every)
step = args.step * gpuwork.MiB
held, bufs = 0, []
oom = 0
try:
    while True:
        bufs.append(cupy.empty(step, dtype=cupy.uint8))
        held += step
        sampler.point(held)
except cupy.cuda.memory.OutOfMemoryError:
    oom = 1
except cupy.cuda.runtime.CUDARuntimeError as e:
    oom = 1 if "memory allocation" in str(e).lower() or "out of memory" in str(e).lower() else 0
    if not oom:
        gpuwork.out("error: %s" % e)
sampler.point(held, oom=bool(oom))
gpuwork.out("held=%d oom=%d" % (held, oom))
