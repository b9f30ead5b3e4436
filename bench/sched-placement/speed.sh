#!/bin/sh
# speed.sh - placement decisions per second on one core: the trace's 1,213
# GPU nodes, and ten copies of them (12,130 nodes), replaying the default pod
# list topped up to 130 % of the (larger) cluster's GPUs, seed 42.
# Only the time inside tsched_allocate() counts (tessel-sim measures it).
#
# Usage: bench/sched-placement/speed.sh [BUILD_DIR] [POLICIES]
# Targets (issue 3): >= 20,000/s at 1,213 nodes, >= 2,000/s at 12,130.
set -eu
B=${1:-build}
POL=${2:-tessel,fgd}
SIM="$B/bin/tessel-sim"
TR=${TESSEL_SHARED:-$(dirname "$0")/../../../shared}/traces/alibaba-gpu-2023
PIN=""
command -v taskset >/dev/null 2>&1 && PIN="taskset -c 0"
for copies in 1 10; do
    echo "== $((copies * 1213)) nodes"
    $PIN "$SIM" --nodes "$TR/openb_node_list_gpu_node.csv" \
        --pods "$TR/openb_pod_list_default.csv" --policy "$POL" --seeds 42 \
        --node-copies $copies | awk '{print $1, $NF}'
done
