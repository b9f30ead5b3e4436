# tests/slurm/reader.py - a client of tessel-slurm-submit --read (tesseld's reader of the jobs'
# states, src/slurmsub/read.h) for t9015 and bench/slurm/poll.sh: start READER --read once (as
# tesseld keeps it) with a socketpair on its fds 0 and 1, and send REQUEST (a frame each way,
# src/slurmsub/subproto.h).
#
#   reader.py READER REQUEST       print the answer (t9015)
#   reader.py READER REQUEST K     once untimed (slurm_init, the first connection: as at
#                                  tesseld's first poll), then K times, printing each answer's
#                                  wall time in microseconds, then "bytes B cpu_us C" (the
#                                  reader's user + system CPU over the K requests, from /proc)
import os, socket, struct, subprocess, sys, time

reader, request = sys.argv[1], sys.argv[2].encode()
k = int(sys.argv[3]) if len(sys.argv) > 3 else 0
a, b = socket.socketpair()
p = subprocess.Popen([reader, "--read"], stdin=b.fileno(), stdout=b.fileno())
b.close()
tick = os.sysconf("SC_CLK_TCK")


def cpu_us():
    with open("/proc/%d/stat" % p.pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) * 1000000 // tick


def take(n):
    out = b""
    while len(out) < n:
        c = a.recv(n - len(out))
        if not c:
            sys.exit("reader.py: the reader ended")
        out += c
    return out


def ask():
    a.sendall(struct.pack(">I", len(request)) + request)
    (n,) = struct.unpack(">I", take(4))
    return take(n)


if not k:
    sys.stdout.write(ask().decode())
    a.close()
    sys.exit(p.wait())
ask()  # slurm_init and the first connection, as at tesseld's first poll: not timed
c0 = cpu_us()
for _ in range(k):
    t0 = time.monotonic_ns()
    ans = ask()
    print((time.monotonic_ns() - t0) // 1000)
    if b'"errno"' in ans[:40]:
        sys.exit("reader.py: " + ans.decode())
print("bytes %d cpu_us %d" % (len(ans), cpu_us() - c0))
a.close()
p.wait()
