"""drv_fill.py - a framework-free CUDA program: the driver API through ctypes.

Used by run.sh for the rows that need no framework (and so also run in its
SIMULATED mode on the fake driver of tests/fake):

  drv_fill.py [--dev N] [--step MIB] [--sample-dir DIR --every MIB] [--go PATH]
      fill: cuMemAlloc_v2 STEP MiB at a time until CUDA_ERROR_OUT_OF_MEMORY;
      prints "view total=T free=F" then "held=H oom=0|1" (gpuwork.py);
      --go: after the view (the context exists), print "ready" and wait for
      PATH before allocating
  drv_fill.py --hold MIB [--until PATH]
      allocate MIB, print "holding held=H pid=P", wait until PATH exists (or
      stdin reaches EOF without --until), free and exit
  drv_fill.py --hold MIB --then PROG ARG...
      allocate MIB, print "exec held=H pid=P", then execv PROG ARG... (the
      memory is the driver's to release at exec; the slice must see it go)
"""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuwork  # noqa: E402

CUDA_ERROR_OUT_OF_MEMORY = 2


def main():
    argv = sys.argv[1:]
    then = None
    if "--then" in argv:
        i = argv.index("--then")
        then, argv = argv[i + 1:], argv[:i]
    hold = None
    until = None
    go = None
    rest = []
    it = iter(argv)
    for a in it:
        if a == "--hold":
            hold = int(next(it))
        elif a == "--until":
            until = next(it)
        elif a == "--go":
            go = next(it)
        else:
            rest.append(a)
    args = gpuwork.fill_args(rest)
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        gpuwork.out("error: libcuda.so.1: %s" % e)
        return 2

    def check(rc, what):
        if rc != 0:
            gpuwork.out("error: %s: CUresult %d" % (what, rc))
            sys.exit(2)

    check(cu.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(dev), args.dev), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    check(cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo_v2")
    gpuwork.out("view total=%d free=%d" % (total.value, free.value))
    if go:
        gpuwork.barrier("ready", go)

    step = args.step * gpuwork.MiB
    want = None if hold is None else hold * gpuwork.MiB
    sampler = gpuwork.Sampler(args.sample_dir, args.every)
    ptrs = []
    held = 0
    rc = 0
    while want is None or held < want:
        n = step if want is None else min(step, want - held)
        p = ctypes.c_ulonglong()
        rc = cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n))
        if rc != 0:
            break
        ptrs.append(p)
        held += n
        sampler.point(held)
    if want is None or rc != 0:
        oom = rc == CUDA_ERROR_OUT_OF_MEMORY
        if rc not in (0, CUDA_ERROR_OUT_OF_MEMORY):
            gpuwork.out("error: cuMemAlloc_v2: CUresult %d" % rc)
        sampler.point(held, oom=True)
        gpuwork.out("held=%d oom=%d" % (held, 1 if oom else 0))
        return 0 if want is None and oom else 1
    if then:
        gpuwork.out("exec held=%d pid=%d" % (held, os.getpid()))
        os.execv(then[0], then)
    gpuwork.out("holding held=%d pid=%d" % (held, os.getpid()))
    if until:
        while not os.path.exists(until):
            time.sleep(0.02)
    else:
        sys.stdin.read()
    for p in ptrs:
        cu.cuMemFree_v2(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
