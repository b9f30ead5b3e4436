"""nvml_view.py - NVML's figures, read with ctypes (no framework, no CUDA).

Run by run.sh outside any slice (no LD_PRELOAD) it is the driver's own
account of each process; run inside a slice it shows what the slice's
NVML view tells tools such as nvidia-smi.

  nvml_view.py            one line per NVML device:
                          "dev=I total=T used=U procs=N procsum=S pids=P:B,..."
                          (procsum: the sum of the processes' used memory,
                          "na" when the driver does not report it)
  nvml_view.py --sum I    procsum of NVML device I only ("all": of every device)
  nvml_view.py --count    the number of NVML devices
"""
import ctypes
import sys

NVML_ERROR_INSUFFICIENT_SIZE = 7
NOT_AVAILABLE = (1 << 64) - 1


class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class Proc(ctypes.Structure):  # nvmlProcessInfo_t (_v2 / _v3 entry points)
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


def procs(nv, h):
    for name in ("nvmlDeviceGetComputeRunningProcesses_v3",
                 "nvmlDeviceGetComputeRunningProcesses_v2"):
        fn = getattr(nv, name, None)
        if fn is None:
            continue
        cap = 64
        while True:
            n = ctypes.c_uint(cap)
            arr = (Proc * cap)()
            rc = fn(h, ctypes.byref(n), arr)
            if rc == NVML_ERROR_INSUFFICIENT_SIZE and cap < 4096:
                cap *= 4
                continue
            if rc != 0:
                raise SystemExit("nvml_view: %s: error %d" % (name, rc))
            return [(arr[i].pid, arr[i].usedGpuMemory) for i in range(n.value)]
    raise SystemExit("nvml_view: no nvmlDeviceGetComputeRunningProcesses_v2/_v3")


def main():
    nv = ctypes.CDLL("libnvidia-ml.so.1")
    rc = nv.nvmlInit_v2()
    if rc != 0:
        raise SystemExit("nvml_view: nvmlInit_v2: error %d" % rc)
    count = ctypes.c_uint()
    nv.nvmlDeviceGetCount_v2(ctypes.byref(count))
    if sys.argv[1:] == ["--count"]:
        print(count.value)
        return
    only = sys.argv[2] if len(sys.argv) == 3 and sys.argv[1] == "--sum" else None
    if only == "all":
        total, na = 0, False
        for i in range(count.value):
            h = ctypes.c_void_p()
            if nv.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)) != 0:
                raise SystemExit("nvml_view: handle %d" % i)
            ps = procs(nv, h)
            na = na or any(b == NOT_AVAILABLE for _, b in ps)
            total += sum(b for _, b in ps if b != NOT_AVAILABLE)
        print("na" if na else total)
        return
    only = None if only is None else int(only)
    for i in range(count.value):
        if only is not None and i != only:
            continue
        h = ctypes.c_void_p()
        rc = nv.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h))
        if rc != 0:
            raise SystemExit("nvml_view: handle %d: error %d" % (i, rc))
        m = Memory()
        nv.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m))
        ps = procs(nv, h)
        if any(b == NOT_AVAILABLE for _, b in ps):
            s = "na"
        else:
            s = str(sum(b for _, b in ps))
        if only is not None:
            print(s)
            return
        print("dev=%d total=%d used=%d procs=%d procsum=%s pids=%s" % (
            i, m.total, m.used, len(ps), s,
            ",".join("%d:%d" % (p, b) for p, b in ps) or "-"))
    if only is not None:
        raise SystemExit("nvml_view: no NVML device %d" % only)


if __name__ == "__main__":
    main()
