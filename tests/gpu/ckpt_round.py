"""ckpt_round.py - a round trip through the driver's checkpoint API (cuCheckpointProcess*,
driver 570 or later; docs/suspend.md), for run.sh's ckpt rows.

  ckpt_round.py target drv MIB --until PATH
  ckpt_round.py target torch MIB --until PATH
      allocate MIB of device memory (the driver API through ctypes, or a PyTorch tensor),
      fill it with a seeded pseudo-random pattern, print "holding ptr=0x... pid=P", wait
      until PATH exists, then compare every byte and the address with what it wrote and
      print "verified ok=1|0 ptr=0x..."
  ckpt_round.py ctl PID
      from another process: lock (10 s timeout) and checkpoint PID, print what NVML says PID
      holds meanwhile ("checkpointed held=B", B 0 when it is gone from NVML's list), restore
      and unlock it, print "restored states=..." with every state seen, or "error: ..."

A framework-free target runs on the fake driver too (run.sh --simulate).
"""
import ctypes
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpuwork  # noqa: E402

STATES = {0: "RUNNING", 1: "LOCKED", 2: "CHECKPOINTED", 3: "FAILED"}
MiB = 1 << 20
BLOCK = MiB  # the pattern: one seeded random MiB, repeated


def pattern():
    return random.Random(21).randbytes(BLOCK)


def wait_until(path):
    while not os.path.exists(path):
        time.sleep(0.05)


def cuda():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        gpuwork.missing("libcuda.so.1 (%s)" % e)
    return cu


def check(rc, what):
    if rc != 0:
        gpuwork.out("error: %s returned %d" % (what, rc))
        sys.exit(1)


def target_drv(mib, until):
    cu = cuda()
    check(cu.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    ptr = ctypes.c_ulonglong()
    check(cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(mib * MiB)), "cuMemAlloc_v2")
    block = pattern()
    for i in range(mib):
        check(cu.cuMemcpyHtoD_v2(ctypes.c_ulonglong(ptr.value + i * BLOCK), block,
                                 ctypes.c_size_t(BLOCK)), "cuMemcpyHtoD_v2")
    gpuwork.out("holding ptr=0x%x pid=%d" % (ptr.value, os.getpid()))
    wait_until(until)
    buf = ctypes.create_string_buffer(BLOCK)
    ok = 1
    for i in range(mib):
        rc = cu.cuMemcpyDtoH_v2(buf, ctypes.c_ulonglong(ptr.value + i * BLOCK),
                                ctypes.c_size_t(BLOCK))
        if rc != 0 or buf.raw != block:
            ok = 0
            break
    base, size = ctypes.c_ulonglong(), ctypes.c_size_t()
    rc = cu.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ptr)
    if rc != 0 or base.value != ptr.value or size.value < mib * MiB:
        ok = 0
    gpuwork.out("verified ok=%d ptr=0x%x" % (ok, base.value))


def target_torch(mib, until):
    try:
        import torch
    except ImportError:
        gpuwork.missing("torch")
    g = torch.Generator(device="cpu").manual_seed(21)
    host = torch.randint(0, 256, (mib * MiB,), dtype=torch.uint8, generator=g)
    t = host.to("cuda")
    torch.cuda.synchronize()
    gpuwork.out("holding ptr=0x%x pid=%d" % (t.data_ptr(), os.getpid()))
    wait_until(until)
    same = torch.equal(t.cpu(), host)
    gpuwork.out("verified ok=%d ptr=0x%x" % (1 if same else 0, t.data_ptr()))


def held_by(pid):
    """What NVML says pid holds on any device (0 when it is not listed)."""
    here = os.path.dirname(os.path.abspath(__file__))
    import subprocess
    r = subprocess.run([sys.executable, os.path.join(here, "nvml_view.py")],
                       capture_output=True, text=True, check=False)
    total = 0
    for line in r.stdout.splitlines():
        for f in line.split():
            if f.startswith("pids="):
                for e in f[5:].split(","):
                    p, _, b = e.partition(":")
                    if p == str(pid) and b.isdigit():
                        total += int(b)
    return total


class LockArgs(ctypes.Structure):
    _fields_ = [("timeoutMs", ctypes.c_uint), ("reserved0", ctypes.c_uint),
                ("reserved1", ctypes.c_ulonglong * 7)]


def ctl(pid):
    cu = cuda()
    for name in ("cuCheckpointProcessLock", "cuCheckpointProcessCheckpoint",
                 "cuCheckpointProcessRestore", "cuCheckpointProcessUnlock",
                 "cuCheckpointProcessGetState"):
        if not hasattr(cu, name):
            gpuwork.missing("%s (driver 570 or later)" % name)
    check(cu.cuInit(0), "cuInit")
    seen = []

    def state():
        s = ctypes.c_int(-1)
        check(cu.cuCheckpointProcessGetState(pid, ctypes.byref(s)), "cuCheckpointProcessGetState")
        seen.append(STATES.get(s.value, str(s.value)))

    state()
    check(cu.cuCheckpointProcessLock(pid, ctypes.byref(LockArgs(timeoutMs=10000))),
          "cuCheckpointProcessLock")
    state()
    check(cu.cuCheckpointProcessCheckpoint(pid, None), "cuCheckpointProcessCheckpoint")
    state()
    gpuwork.out("checkpointed held=%d" % held_by(pid))
    check(cu.cuCheckpointProcessRestore(pid, None), "cuCheckpointProcessRestore")
    state()
    check(cu.cuCheckpointProcessUnlock(pid, None), "cuCheckpointProcessUnlock")
    state()
    gpuwork.out("restored states=%s held=%d" % (",".join(seen), held_by(pid)))


def main():
    a = sys.argv[1:]
    if len(a) == 5 and a[0] == "target" and a[1] in ("drv", "torch") and a[3] == "--until":
        (target_drv if a[1] == "drv" else target_torch)(int(a[2]), a[4])
    elif len(a) == 2 and a[0] == "ctl":
        ctl(int(a[1]))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
