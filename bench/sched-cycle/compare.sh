#!/bin/sh
# compare.sh - one full scheduling cycle with 10,000 pending jobs
# (bench-sched-cycle), this build against the baseline (bench/lib/baseline.sh:
# main before issue 15) side by side in one run, on the trace's 1,213 GPU
# nodes and on ten copies of them (12,130 nodes, with ten copies of the pod
# list, so that the cluster ends as full: ~89.5 % of the GPUs).  Baseline and
# new runs alternate (A B A B ...) so that the load of a shared machine hits
# both alike; each run prints the 1-minute load average; the table gives the
# medians of the timing thread's CPU time (the figure to read on a shared
# machine) and of the wall-clock time, and new / baseline.  Both builds must
# report the same starts, plans and victims (checked).
#
# Usage: bench/sched-cycle/compare.sh [BUILD_DIR] [REPS] [EXTRA bench-sched-cycle ARGS]
#   BENCH_BASE_DIR=DIR uses DIR as the baseline's build (else baseline.sh).
# Targets (issue 15): at 12,130 nodes <= 1/4 of the baseline's cycle; at
# 1,213 nodes no slower.
set -eu
B=${1:-build}
REPS=${2:-3}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
HERE=$(dirname "$0")
BASE=$("$HERE/../lib/baseline.sh")
TR=${TESSEL_SHARED:-$HERE/../../../shared}/traces/alibaba-gpu-2023
[ -x "$B/bench/bench-sched-cycle" ] || {
    echo "compare.sh: $B/bench/bench-sched-cycle is missing (make build-all)" >&2
    exit 1
}
[ -f "$TR/openb_node_list_gpu_node.csv" ] || {
    echo "compare.sh: no trace in $TR (set TESSEL_SHARED)" >&2
    exit 1
}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
# K copies of a CSV, the first column (the name) suffixed -cK
copies() {
    awk -F, -v OFS=, -v k="$2" 'NR == 1 { print; next } { l[NR] = $0 }
        END { for (c = 0; c < k; c++) for (i = 2; i <= NR; i++) {
                  n = index(l[i], ","); print substr(l[i], 1, n - 1) "-c" c substr(l[i], n) } }' "$1"
}
cp "$TR/openb_node_list_gpu_node.csv" "$D/nodes1.csv"
cp "$TR/openb_pod_list_default.csv" "$D/pods1.csv"
copies "$TR/openb_node_list_gpu_node.csv" 10 >"$D/nodes10.csv"
copies "$TR/openb_pod_list_default.csv" 10 >"$D/pods10.csv"
PIN=""
command -v taskset >/dev/null 2>&1 && PIN="taskset -c 0"
echo "# baseline: $BASE; new: $B; $(nproc) CPUs; $REPS runs each; extra args: $*"
for k in 1 10; do
    for rep in $(seq "$REPS"); do
        for build in base new; do
            dir=$B
            [ $build = base ] && dir=$BASE
            load=$(cut -d' ' -f1 /proc/loadavg)
            $PIN "$dir/bench/bench-sched-cycle" --nodes "$D/nodes$k.csv" --pods "$D/pods$k.csv" \
                --reps 1 "$@" 2>/dev/null | awk -v b=$build -v n=$((k * 1213)) -v r=$rep -v l="$load" '
                /^run 1:/ { for (i = 1; i <= NF; i++) {
                              if ($i == "starts,") s = $(i - 1); if ($i == "plans,") p = $(i - 1)
                              if ($i == "victims,") v = $(i - 1)
                              if ($i == "wall,") w = $(i - 2); if ($i == "CPU") c = $(i - 2) }
                            printf "%s %s %s %s %s %s %s %s %s\n", n, b, r, c, w, s, p, v, l }'
        done
    done
done >"$D/runs"
awk '{ printf "run %s %-4s %6d nodes: %s starts, %s plans, %s victims: %7.1f ms CPU, %7.1f ms wall (load %s)\n",
       $3, $2, $1, $6, $7, $8, $4, $5, $9 }' "$D/runs"
if [ "$(awk '{ print $1, $6, $7, $8 }' "$D/runs" | sort -u | awk '{ print $1 }' | uniq -d)" ]; then
    echo "compare.sh: the builds decided differently (starts, plans or victims differ)" >&2
    exit 1
fi
echo
echo "| nodes | baseline ms CPU | new ms CPU | new / baseline | baseline ms wall | new ms wall | load (1 min) |"
echo "|---|---|---|---|---|---|---|"
for n in 1213 12130; do
    med() { awk -v n=$n -v b=$1 -v f=$2 '$1 == n && $2 == b { print $f }' "$D/runs" | sort -n |
        awk '{ a[NR] = $1 } END { print NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
    bc=$(med base 4) nc=$(med new 4) bw=$(med base 5) nw=$(med new 5)
    loads=$(awk -v n=$n '$1 == n { print $9 }' "$D/runs" | sort -n | sed -n '1p;$p' | paste -sd-)
    echo "$n $bc $nc $bw $nw $loads" | awk '{ printf "| %s | %.1f | %.1f | %.2f (1/%.1f) | %.1f | %.1f | %s |\n",
        $1, $2, $3, $3 / $2, $2 / $3, $4, $5, $6 }'
done
