"""fork_nvml.py - an NVML memory query, then os.fork, then CUDA in the child.

The pattern of PyTorch's DataLoader, Ray and many launchers: the parent asks
NVML about memory (pynvml, nvidia-smi bindings) without using CUDA itself,
then forks workers that each use CUDA.  The real driver refuses CUDA in the
child of a parent that initialised CUDA (cuInit before fork), so a slice
must answer NVML without initialising CUDA in the parent.  Framework-free
(ctypes).  Output: "nvml used=U" then "child cuinit=R alloc=R" (CUresult
codes, 0 = success) and "parent cuda_initialised_before_fork=0|1".
Exit status 0 when the child's CUDA worked.
"""
import ctypes
import os
import sys


class Mem(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


nv = ctypes.CDLL("libnvidia-ml.so.1")
rc = nv.nvmlInit_v2()
h = ctypes.c_void_p()
rc = rc or nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
m = Mem()
rc = rc or nv.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m))
print("nvml rc=%d total=%d used=%d" % (rc, m.total, m.used), flush=True)
# Did anything in this process initialise CUDA?  cuDriverGetVersion works
# without cuInit; cuDeviceGetCount answers CUDA_ERROR_NOT_INITIALIZED (3)
# until cuInit ran.  (Loading libcuda here does not initialise it.)
cu = ctypes.CDLL("libcuda.so.1")
n = ctypes.c_int()
inited = 1 if cu.cuDeviceGetCount(ctypes.byref(n)) == 0 else 0
print("parent cuda_initialised_before_fork=%d" % inited, flush=True)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    res = [cu.cuInit(0), -1]
    if res[0] == 0:
        dev = ctypes.c_int()
        ctx = ctypes.c_void_p()
        p = ctypes.c_ulonglong()
        rc = cu.cuDeviceGet(ctypes.byref(dev), 0)
        rc = rc or cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
        rc = rc or cu.cuCtxSetCurrent(ctx)
        rc = rc or cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(64 << 20))
        rc = rc or cu.cuMemFree_v2(p)
        res[1] = rc
    os.write(w, ("child cuinit=%d alloc=%d\n" % tuple(res)).encode())
    os._exit(0 if res == [0, 0] else 1)
os.close(w)
line = os.read(r, 200).decode().strip()
_, status = os.waitpid(pid, 0)
print(line or "child died: status %d" % status, flush=True)
sys.exit(0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1)
