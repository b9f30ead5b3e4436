#!/bin/sh
# speed.sh - placement decisions per second on one core, this build against the
# baseline (bench/lib/baseline.sh: main before issue 15) side by side in one
# run: the trace's 1,213 GPU nodes, and ten copies of them (12,130 nodes),
# replaying the default pod list topped up to 130 % of the (larger) cluster's
# GPUs, seed 42.  Only the time inside tsched_allocate() counts (tessel-sim
# measures it).  Baseline and new runs alternate (A B A B ...) so that the
# load of a shared machine hits both alike; each run prints the 1-minute
# load average; the table gives the medians and new / baseline.
#
# Usage: bench/sched-placement/speed.sh [BUILD_DIR] [POLICIES] [REPS]
#   BENCH_BASE_DIR=DIR uses DIR as the baseline's build (else baseline.sh).
# Targets (issue 15): at 12,130 nodes >= 2x the baseline's decisions/s with
# tessel and >= 1.6x with fgd; at 1,213 nodes no slower.
set -eu
B=${1:-build}
POL=${2:-tessel,fgd}
REPS=${3:-3}
HERE=$(dirname "$0")
BASE=$("$HERE/../lib/baseline.sh")
TR=${TESSEL_SHARED:-$HERE/../../../shared}/traces/alibaba-gpu-2023
[ -x "$B/bin/tessel-sim" ] || {
    echo "speed.sh: $B/bin/tessel-sim is missing (make build-all)" >&2
    exit 1
}
[ -f "$TR/openb_node_list_gpu_node.csv" ] || {
    echo "speed.sh: no trace in $TR (set TESSEL_SHARED)" >&2
    exit 1
}
PIN=""
command -v taskset >/dev/null 2>&1 && PIN="taskset -c 0"
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
echo "# baseline: $BASE; new: $B; $(nproc) CPUs; policies $POL; $REPS runs each"
for copies in 1 10; do
    for rep in $(seq "$REPS"); do
        for build in base new; do
            dir=$B
            [ $build = base ] && dir=$BASE
            load=$(cut -d' ' -f1 /proc/loadavg)
            $PIN "$dir/bin/tessel-sim" --nodes "$TR/openb_node_list_gpu_node.csv" \
                --pods "$TR/openb_pod_list_default.csv" --policy "$POL" --seeds 42 \
                --node-copies $copies | awk -v b=$build -v n=$((copies * 1213)) -v r=$rep -v l="$load" \
                'NR > 1 { print n, $1, b, r, $NF, l }' | tee -a "$OUT" |
                awk '{ printf "run %s %-4s %6d nodes %-8s %8d decisions/s (load %s)\n", $4, $3, $1, $2, $5, $6 }'
        done
    done
done
echo
echo "| nodes | policy | baseline decisions/s | new decisions/s | new / baseline | load (1 min) |"
echo "|---|---|---|---|---|---|"
sort -k1,1n -k2,2 -k3,3 -k5,5n "$OUT" | awk '
    function med(a, n) { return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function flush() {
        if (key == "") return
        mb = med(bv, nb); mn = med(nv, nn)
        printf "| %s | %s | %.0f | %.0f | %.2fx | %s-%s |\n", kn, kp, mb, mn, mn / mb, lmin, lmax
    }
    {
        k = $1 " " $2
        if (k != key) { flush(); key = k; kn = $1; kp = $2; nb = nn = 0; lmin = lmax = $6 }
        if ($3 == "base") bv[++nb] = $5; else nv[++nn] = $5
        if ($6 < lmin) lmin = $6; if ($6 > lmax) lmax = $6
    }
    END { flush() }'
