#!/bin/sh
# traces.sh - the placement benchmark of issue 3: 10-seed means of our fgd and
# of Tessel's default policy on the Alibaba GPU-sharing traces, under the FGD
# paper's protocol, next to the paper's published FGD means.
#
# Usage: bench/sched-placement/traces.sh [BUILD_DIR] [EXTRA tessel-sim ARGS]
#   (make build/bin/tessel-sim first; about 3 s per trace on one core)
# Prints a Markdown table; docs/scheduler-placement.md records a run.
set -eu
B=${1:-build}
[ $# -gt 0 ] && shift
SIM="$B/bin/tessel-sim"
TR=${TESSEL_SHARED:-$(dirname "$0")/../../../shared}/traces/alibaba-gpu-2023
PIN=""
command -v taskset >/dev/null 2>&1 && PIN="taskset -c 0"

# The FGD paper's published FGD means (README of the trace), at 130 % load;
# at 100 % it publishes the default trace only.
pub130() {
    case $1 in
    default) echo 95.39 ;; cpu050) echo 95.21 ;; cpu100) echo 95.35 ;;
    cpu200) echo 95.05 ;; cpu250) echo 93.41 ;; gpushare40) echo 94.15 ;;
    gpushare60) echo 91.40 ;; gpushare80) echo 89.30 ;; gpushare100) echo 86.90 ;;
    esac
}

echo "| trace | our fgd @100 | tessel @100 | published FGD @130 | our fgd @130 | fgd - published | tessel @130 | tessel - published |"
echo "|---|---|---|---|---|---|---|---|"
for t in default gpushare40 gpushare60 gpushare80 gpushare100 cpu050 cpu100 cpu200 cpu250; do
    out=$($PIN "$SIM" --nodes "$TR/openb_node_list_gpu_node.csv" \
        --pods "$TR/openb_pod_list_$t.csv" --policy fgd,tessel --seeds 42-51 "$@")
    p=$(pub130 $t)
    printf '%s\n' "$out" | awk -v t=$t -v p=$p '
        $1 == "fgd" { f100 = $4; f130 = $5 }
        $1 == "tessel" { t100 = $4; t130 = $5 }
        END { printf "| %s | %.2f | %.2f | %.2f | %.2f | %+.2f | %.2f | %+.2f |\n",
                     t, f100, t100, p, f130, f130 - p, t130, t130 - p }'
done
echo
echo "Published FGD at 100 % load, default trace: 95.23."
