#!/bin/sh
# preempt.sh - issue 21 item 2's figure: the GPU-hours lost to preemption when victims are
# suspended (their GPU memory checkpointed and given back, resumed later) against when they
# are killed and requeued, on the same Alibaba GPU trace, side by side (tessel-sim events
# --preempt suspend, then --preempt requeue; docs/suspend.md, "Preemption by suspension").
# Target: at least 90 % fewer GPU-hours lost with suspension.
#
# Usage: bench/sim/preempt.sh [BUILD_DIR] [EXTRA tessel-sim events ARGS]
#   (make build/bin/tessel-sim first; about a minute in all on one core)
# Two cases of docs/scheduler-queues.md: the trace's 8,152 pods with arrivals compressed
# 1000x on 400 nodes (the recorded trace, contended), and 2,000 pods drawn from it arriving
# every 2 s on 50 nodes (steadily loaded).  The checkpoint's cost comes from the figures
# measured on an H200 (tessel-sim's defaults: --ckpt-save-bw, --ckpt-restore-bw, --ckpt-mem);
# EXTRA args change them (e.g. --ckpt-save-bw 0.31 --ckpt-restore-bw 0.37, the fake driver's
# host-memory copies of docs/suspend.md).
set -eu
B=${1:-build}
[ $# -gt 0 ] && shift
SIM="$B/bin/tessel-sim"
[ -x "$SIM" ] || { echo "preempt.sh: $SIM not built (make $SIM)" >&2; exit 1; }
HERE=$(dirname "$0")
TR=${TESSEL_SHARED:-$HERE/../../../shared}/traces/alibaba-gpu-2023
Q=$HERE/../../examples/queues.conf
PIN=""
command -v taskset >/dev/null 2>&1 && PIN="taskset -c 0"

# lost CASE-NAME ARGS...: prints both runs' preemption lines and the ratio.
lost() {
    name=$1
    shift
    s=$($PIN "$SIM" events --nodes "$TR/openb_node_list_gpu_node.csv" \
        --pods "$TR/openb_pod_list_default.csv" --queues "$Q" "$@" --preempt suspend)
    r=$($PIN "$SIM" events --nodes "$TR/openb_node_list_gpu_node.csv" \
        --pods "$TR/openb_pod_list_default.csv" --queues "$Q" "$@" --preempt requeue)
    echo "== $name: tessel-sim events $*"
    printf '%s\n' "$s" | grep -E '^(cluster|preemption)'
    printf '%s\n' "$r" | grep -E '^(cluster|preemption)'
    ls=$(printf '%s\n' "$s" | sed -n 's/^preemption ([a-z ]*): GPU-hours lost \([0-9.]*\):.*/\1/p')
    lr=$(printf '%s\n' "$r" | sed -n 's/^preemption ([a-z ]*): GPU-hours lost \([0-9.]*\):.*/\1/p')
    awk -v s="$ls" -v r="$lr" 'BEGIN {
        if (r <= 0) { print "no GPU-hours lost with requeue: nothing to compare"; exit }
        printf "GPU-hours lost: suspend %.2f, requeue %.2f, ratio %.3f: %.1f %% fewer (target >= 90 %%)\n",
               s, r, s / r, 100 * (1 - s / r) }'
}

lost "trace, arrivals 1000x compressed, 400 nodes" --time-scale 1000 --max-nodes 400 "$@"
lost "2000 pods of the trace every 2 s, 50 nodes" --synthetic 2000 --interarrival 2 \
    --max-nodes 50 "$@"
