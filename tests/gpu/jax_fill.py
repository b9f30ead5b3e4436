"""jax_fill.py - JAX fills its device until RESOURCE_EXHAUSTED.

Set XLA_PYTHON_CLIENT_PREALLOCATE=false (XLA allocates as it goes) or =true
(XLA reserves XLA_PYTHON_CLIENT_MEM_FRACTION of the free memory it is told
about at start; arrays then come out of that reservation).  run.sh sets the
fraction to 0.9 with preallocation (what a user would), 1.0 without.
The view comes from NVML inside the process (JAX has no mem_get_info).
Options: gpuwork.fill_args.
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuwork  # noqa: E402

args = gpuwork.fill_args(sys.argv[1:])
try:
    import jax
    import jax.numpy as jnp
except ImportError:
    gpuwork.missing("jax")
gpus = [d for d in jax.devices() if d.platform == "gpu"]
if not gpus:
    gpuwork.out("error: jax sees no GPU (jax[cuda] not installed?)")
    sys.exit(2)
dev = gpus[args.dev]
jax.device_put(jnp.zeros((1,)), dev).block_until_ready()


class Mem(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


nv = ctypes.CDLL("libnvidia-ml.so.1")
nv.nvmlInit_v2()
h = ctypes.c_void_p()
nv.nvmlDeviceGetHandleByIndex_v2(args.dev, ctypes.byref(h))
m = Mem()
nv.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m))
gpuwork.out("view total=%d free=%d" % (m.total, m.free))
sampler = gpuwork.Sampler(args.sample_dir, args.every)
step = args.step * gpuwork.MiB
held, bufs = 0, []
oom = 0
try:
    while True:
        bufs.append(jax.device_put(jnp.zeros((step,), dtype=jnp.uint8), dev).block_until_ready())
        held += step
        sampler.point(held)
except Exception as e:  # XlaRuntimeError has no stable import path
    t = str(e)
    oom = 1 if "RESOURCE_EXHAUSTED" in t or "out of memory" in t.lower() else 0
    if not oom:
        gpuwork.out("error: %s" % t.splitlines()[0][:200])
sampler.point(held, oom=bool(oom))
gpuwork.out("held=%d oom=%d" % (held, oom))
