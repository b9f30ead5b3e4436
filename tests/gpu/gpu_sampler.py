"""gpu_sampler.py - what the GPU and the slices did during a compute row.

Run by run.sh outside any slice (no LD_PRELOAD) while a compute row's
workloads run.  Every --interval seconds it reads, through NVML (ctypes),
device 0's utilisation (percent of the sample period a kernel ran), SM
clock and power draw, the per-process SM utilisation NVML keeps
(nvmlDeviceGetProcessUtilization), and, through tcu-slice, the device time
each slice's processes were charged (busy_ns) and their pids.  When the
file --stop exists it prints one line over the window [--skip, --skip +
--length] seconds after it started:

  diag util=U% sm=C MHz power=P W slices=i:share/nvml,...

share: the slice's busy_ns grown over the window / the window (the device
time the interposer counted, as a fraction of wall time); nvml: the sum of
NVML's SM utilisation of the slice's processes over the window, as a
fraction.  A figure NVML does not give is "na".  These explain a row's
figures (e.g. a throughput ratio above the share while the device time
holds it: the clock rises when the GPU is less loaded); they are no verdict.

  gpu_sampler.py --tcu-slice PATH --stop FILE [--go FILE] --skip S --length L SLICE...
"""
import argparse
import ctypes
import os
import subprocess
import time


class Util(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class ProcUtil(ctypes.Structure):  # nvmlProcessUtilizationSample_t
    _fields_ = [("pid", ctypes.c_uint), ("timeStamp", ctypes.c_ulonglong),
                ("smUtil", ctypes.c_uint), ("memUtil", ctypes.c_uint),
                ("encUtil", ctypes.c_uint), ("decUtil", ctypes.c_uint)]


def slice_state(tool, path):
    """(busy_ns of device 0, set of pids) from tcu-slice, or (None, set())."""
    try:
        out = subprocess.run([tool, path], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None, set()
    busy, pids = None, set()
    for line in out.splitlines():
        w = line.split()
        if line.startswith("device 0 "):
            for f in w:
                if f.startswith("busy_ns="):
                    busy = int(f[8:])
        elif line.startswith("proc ") and len(w) > 1:
            pids.add(int(w[1]))
    return busy, pids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tcu-slice", required=True)
    ap.add_argument("--stop", required=True)
    ap.add_argument("--go", help="start the clock when this file exists")
    ap.add_argument("--skip", type=float, default=1.0)
    ap.add_argument("--length", type=float, default=5.0)
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("slices", nargs="*")
    a = ap.parse_args()

    nv = ctypes.CDLL("libnvidia-ml.so.1")
    nv.nvmlInit_v2()
    h = ctypes.c_void_p()
    nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))

    def fn(name):
        return getattr(nv, name, None)

    get_util, get_clock = fn("nvmlDeviceGetUtilizationRates"), fn("nvmlDeviceGetClockInfo")
    get_power, get_putil = fn("nvmlDeviceGetPowerUsage"), fn("nvmlDeviceGetProcessUtilization")

    while a.go and not os.path.exists(a.go) and not os.path.exists(a.stop):
        time.sleep(0.01)
    t0 = time.monotonic()
    lo, hi = a.skip, a.skip + a.length
    utils, clocks, powers = [], [], []
    first, last = {}, {}   # slice -> (t, busy) at the window's ends
    pids = {s: set() for s in a.slices}
    psm = {}               # pid -> sum of smUtil samples in the window
    npsamples = {}         # pid -> number of samples
    last_seen = ctypes.c_ulonglong(int(time.time() * 1e6))
    while not os.path.exists(a.stop):
        t = time.monotonic() - t0
        inwin = lo <= t <= hi
        if inwin:
            u = Util()
            if get_util and get_util(h, ctypes.byref(u)) == 0:
                utils.append(u.gpu)
            c = ctypes.c_uint()
            if get_clock and get_clock(h, 1, ctypes.byref(c)) == 0:  # NVML_CLOCK_SM
                clocks.append(c.value)
            p = ctypes.c_uint()
            if get_power and get_power(h, ctypes.byref(p)) == 0:
                powers.append(p.value / 1000.0)
            if get_putil:
                n = ctypes.c_uint(0)
                get_putil(h, None, ctypes.byref(n), last_seen)
                if n.value:
                    arr = (ProcUtil * n.value)()
                    if get_putil(h, arr, ctypes.byref(n), last_seen) == 0:
                        for i in range(n.value):
                            psm[arr[i].pid] = psm.get(arr[i].pid, 0) + arr[i].smUtil
                            npsamples[arr[i].pid] = npsamples.get(arr[i].pid, 0) + 1
                            last_seen.value = max(last_seen.value, arr[i].timeStamp)
            for s in a.slices:
                busy, ps = slice_state(a.tcu_slice, s)
                pids[s] |= ps
                if busy is not None:
                    first.setdefault(s, (t, busy))
                    last[s] = (t, busy)
        time.sleep(a.interval)

    def mean(xs, fmt):
        return fmt % (sum(xs) / len(xs)) if xs else "na"

    parts = []
    for i, s in enumerate(a.slices, 1):
        if s in first and last[s][0] > first[s][0]:
            share = "%.3f" % ((last[s][1] - first[s][1]) / 1e9 / (last[s][0] - first[s][0]))
        else:
            share = "na"
        sm = [psm[p] / npsamples[p] for p in pids[s] if npsamples.get(p)]
        parts.append("%d:%s/%s" % (i, share, "%.3f" % (sum(sm) / 100.0) if sm else "na"))
    print("diag util=%s%% sm=%s MHz power=%s W slices=%s" % (
        mean(utils, "%.1f"), mean(clocks, "%.0f"), mean(powers, "%.0f"),
        ",".join(parts) or "-"))


if __name__ == "__main__":
    main()
