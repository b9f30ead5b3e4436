#!/bin/sh
# bench/slurm/nodes.sh - what the cluster's GPUs cost and how fresh they are (docs/slurm-backend.md,
# "The cluster's GPUs"), on the test cluster of tests/slurm/cluster.sh with spank_tessel.so and a
# tessel-node-exporter on each node: S jobs of one shard each, each holding GPU memory through the
# fake driver, spread over both nodes; then, side by side:
#   - one exporter's GET /v1/node and GET /metrics: wall time (curl, from the controller's
#     namespace, as tesseld and Prometheus ask) and bytes;
#   - tesseld's GET /v1/gpus (local socket): wall time;
#   - the age of the figures GET /v1/gpus shows (its time minus figures_at), sampled at random
#     moments: what "refreshed within a few seconds" is;
#   - the exporters' and tesseld's CPU time over the run (/proc/PID/stat).
#
# Usage (root, a built tree): bench/slurm/nodes.sh [BUILD]   (default: build)
#   BENCH_SLICES=S  jobs (default 12: 3 per GPU of the 4), BENCH_REQS=K requests timed (default 50)
#   BENCH_NODE_POLL=P  tesseld's --slurm-node-poll (default 2)
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-$SRC/build}" && pwd)
SLICES=${BENCH_SLICES:-12}
REQS=${BENCH_REQS:-50}
NPOLL=${BENCH_NODE_POLL:-2}
[ "$(id -u)" = 0 ] || { echo "nodes.sh: run as root (network namespaces, slurmd)" >&2; exit 1; }
for f in "$B/bin/tesseld" "$B/bin/tessel-node-exporter" "$B/slurm/spank_tessel.so" \
    "$B/lib/libtessel-cuda.so" "$B/tests/fake/libnvidia-ml.so.1" "$B/tests/interposer/tcu-probe"; do
    [ -e "$f" ] || { echo "nodes.sh: $f is not built" >&2; exit 1; }
done
. "$SRC/tests/slurm/cluster.sh"
W=$(mktemp -d /tmp/tessel-bench-nodes.XXXXXX)
PIDS=
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; sleep 0.5; tsc_stop; rm -rf "$W"' EXIT
FAKE=$B/tests/fake
export TESSEL_FAKE_GPUS=2xFakeGPU:8G LD_LIBRARY_PATH=$FAKE
TSC_PLUGIN_ARGS="interposer=$B/lib/libtessel-cuda.so nvml=$FAKE/libnvidia-ml.so.1 nvml_timeout=5"
tsc_start "$B/slurm/spank_tessel.so" || { echo "nodes.sh: the cluster: $TSC_WHY" >&2; exit 1; }
for n in n1 n2; do
    tsc_on "$n" sh -c ': >>"$TESSEL_FAKE_STATE" && chmod 666 "$TESSEL_FAKE_STATE"'
    nsenter --target "$(cat "$TSC/slurmd-$n.pid")" --net --uts --mount \
        "$B/bin/tessel-node-exporter" --nvml "$FAKE/libnvidia-ml.so.1" >>"$W/exp-$n.log" 2>&1 &
    eval "EXP_$n=\$!"
    PIDS="$PIDS $!"
done
nsenter --net=/run/netns/$tsc_ns-ctl "$B/bin/tesseld" --data-dir "$W/data" --listen 127.0.0.1:0 \
    --socket "$W/sock" --no-cgroups --fake-gpus 2xFakeGPU:8G --slurm \
    --slurm-conf "$TSC/etc/slurm.conf" --slurm-node-poll "$NPOLL" >"$W/tesseld.log" 2>&1 &
TD=$!
PIDS="$PIDS $TD"
i=0
while [ ! -S "$W/sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
GO=$TSC/out/go
j=0
while [ $j -lt "$SLICES" ]; do
    tsc sbatch --parsable -o /dev/null --gres=shard:1 \
        --wrap="$B/tests/interposer/tcu-probe ctx alloc:mem:256M waitfile:$GO" >/dev/null || exit 1
    j=$((j + 1))
done
# Every job running and its slice seen by tesseld.
i=0
while [ $i -lt 600 ]; do
    n=$(curl -s --unix-socket "$W/sock" http://localhost/v1/gpus |
        jq '[.gpus[].slices[] | select(.mem_used > 0)] | length' 2>/dev/null)
    [ "${n:-0}" -ge "$SLICES" ] && break
    sleep 0.1
    i=$((i + 1))
done
[ "${n:-0}" -ge "$SLICES" ] || { echo "nodes.sh: only ${n:-0} of $SLICES slices seen" >&2; exit 1; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
c0_e=$(cpu "$EXP_n1")
c0_t=$(cpu "$TD")
t0=$(date +%s%N)

# stats FILE: median and largest of microsecond figures, in ms.
stats() {
    sort -n "$1" | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
        printf "%10.2f %10.2f", m / 1000, v[NR] / 1000}'
}
ctl() { nsenter --net=/run/netns/$tsc_ns-ctl "$@"; }
printf '%-34s %10s %10s %10s\n' "" "median ms" "max ms" "bytes"
for path in /v1/node /metrics; do
    : >"$W/t"
    k=0
    while [ $k -lt "$REQS" ]; do
        ctl curl -s -o "$W/body" -w '%{time_total}\n' "http://10.250.0.12:9407$path" |
            awk '{printf "%d\n", $1 * 1e6}' >>"$W/t"
        k=$((k + 1))
    done
    printf '%-34s %s %10d\n' "exporter n1 GET $path" "$(stats "$W/t")" "$(wc -c <"$W/body")"
done
: >"$W/t"
: >"$W/age"
k=0
while [ $k -lt "$REQS" ]; do
    curl -s -o "$W/body" -w '%{time_total}\n' --unix-socket "$W/sock" http://localhost/v1/gpus |
        awk '{printf "%d\n", $1 * 1e6}' >>"$W/t"
    now=$(date +%s%3N)
    # The oldest figures of the answer: its time minus the earliest figures_at.
    jq -r '[.gpus[].figures_at] | min | (sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) * 1000
        + (capture("\\.(?<ms>[0-9]+)Z$").ms | tonumber)' "$W/body" |
        awk -v now="$now" '{printf "%d\n", (now - $1) * 1000}' >>"$W/age"
    # At random moments: 0 to 0.99 s apart.
    sleep "0.$(($(od -An -N1 -tu1 /dev/urandom) % 100))"
    k=$((k + 1))
done
printf '%-34s %s %10d\n' "tesseld GET /v1/gpus (socket)" "$(stats "$W/t")" "$(wc -c <"$W/body")"
printf '%-34s %s\n' "age of its figures" "$(stats "$W/age")"
t1=$(date +%s%N)
hz=$(getconf CLK_TCK)
c1_e=$(cpu "$EXP_n1")
c1_t=$(cpu "$TD")
awk -v e=$((c1_e - c0_e)) -v t=$((c1_t - c0_t)) -v hz="$hz" -v w=$(((t1 - t0) / 1000000)) 'BEGIN {
    printf "over %.1f s: exporter n1 CPU %.2f s (%.2f %%), tesseld CPU %.2f s (%.2f %%)\n",
        w / 1000, e / hz, 100 * e / hz / (w / 1000), t / hz, 100 * t / hz / (w / 1000) }'
echo "slices: $SLICES (2 nodes x 2 SIMULATED GPUs), tesseld --slurm-node-poll $NPOLL, exporter --interval 1"
touch "$GO"
