"""gpuwork.py - shared helpers of the workloads in tests/gpu (run.sh).

Protocol with run.sh (stdout, one line each, flushed):
  view total=T free=F      what the workload was told before allocating
  held=H oom=0|1           bytes it held when it stopped, and whether it
                           stopped on its framework's out-of-memory error
  missing: NAME            a framework is not installed (exit status 3)
  ready                    a compute workload is warmed up (then waits for
                           the go file)
Sampling handshake (--sample-dir DIR): every --every MiB held, and once at
the out-of-memory error, the workload writes DIR/sample.N ("held=H oom=X")
and waits until run.sh has read the driver's and the slice's figures and
created DIR/ack.N.  So both are read while the workload holds exactly H.
"""
import os
import sys
import time

MiB = 1 << 20
ACK_WAIT_S = 60  # run.sh answers within a second; a dead harness must not hang us


def out(line):
    print(line, flush=True)


def missing(name):
    out("missing: %s" % name)
    sys.exit(3)


class Sampler:
    """Pauses at sample points until run.sh acknowledges them."""

    def __init__(self, sample_dir, every_mib):
        self.dir = sample_dir
        self.every = every_mib * MiB
        self.next = self.every
        self.n = 0

    def point(self, held, oom=False):
        if not self.dir:
            return
        if not oom and held < self.next:
            return
        while held >= self.next:
            self.next += self.every
        self.n += 1
        tmp = os.path.join(self.dir, ".sample.%d" % self.n)
        with open(tmp, "w") as f:
            f.write("held=%d oom=%d pid=%d\n" % (held, 1 if oom else 0, os.getpid()))
        os.rename(tmp, os.path.join(self.dir, "sample.%d" % self.n))
        ack = os.path.join(self.dir, "ack.%d" % self.n)
        end = time.monotonic() + ACK_WAIT_S
        while not os.path.exists(ack):
            if time.monotonic() > end:
                out("error: no ack for sample %d" % self.n)
                sys.exit(4)
            time.sleep(0.01)


def fill_args(argv):
    """--sample-dir DIR --every MIB --step MIB (defaults: none, 512, 64)."""
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--sample-dir", default=None)
    p.add_argument("--every", type=int, default=512)
    p.add_argument("--step", type=int, default=64)
    p.add_argument("--dev", type=int, default=0)
    return p.parse_args(argv)


def barrier(ready_msg, go_path, wait_s=120):
    """Print ready, then wait for go_path (all tenants start together)."""
    out(ready_msg)
    if not go_path:
        return
    end = time.monotonic() + wait_s
    while not os.path.exists(go_path):
        if time.monotonic() > end:
            out("error: no go file %s" % go_path)
            sys.exit(4)
        time.sleep(0.005)


def timed_loop(step, seconds, skip_s=1.0):
    """Run step() (returns iterations done) for seconds; iterations/s over
    [skip_s, seconds] (the first second is ramp-up: pacing, clocks)."""
    start = time.monotonic()
    n = 0
    t_from = None
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            break
        if t_from is None and now - start >= skip_s:
            t_from, n = now, 0
        n += step()
    return n / (time.monotonic() - t_from)
