#!/bin/sh
# headroom.sh - how much of the gap to "published FGD + 0.5 point" the node
# resources leave open: Tessel, our fgd and bestfit on each trace as it is and
# on the same pod list with every pod's CPU and memory request set to 0 (so
# that no GPU can be stranded by CPU or memory and only the GPU-level packing
# of the arrival stream is left), 10-seed means at 130 % load.
#
# Usage: bench/sched-placement/headroom.sh [BUILD_DIR] [EXTRA tessel-sim ARGS]
set -eu
B=${1:-build}
[ $# -gt 0 ] && shift
SIM="$B/bin/tessel-sim"
TR=${TESSEL_SHARED:-$(dirname "$0")/../../../shared}/traces/alibaba-gpu-2023
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
PIN=""
command -v taskset >/dev/null 2>&1 && PIN="taskset -c 0"

pub130() {
    case $1 in
    default) echo 95.39 ;; cpu050) echo 95.21 ;; cpu100) echo 95.35 ;;
    cpu200) echo 95.05 ;; cpu250) echo 93.41 ;; gpushare40) echo 94.15 ;;
    gpushare60) echo 91.40 ;; gpushare80) echo 89.30 ;; gpushare100) echo 86.90 ;;
    esac
}

run() { # POD_LIST [EXTRA ARGS] -> "tessel fgd bestfit" at 130 %
    pods=$1
    shift
    $PIN "$SIM" --nodes "$TR/openb_node_list_gpu_node.csv" --pods "$pods" \
        --policy tessel,fgd,bestfit --seeds 42-51 "$@" | awk '
        $1 == "tessel" { t = $5 } $1 == "fgd" { f = $5 } $1 == "bestfit" { b = $5 }
        END { printf "%s %s %s", t, f, b }'
}

echo "| trace | published + 0.5 | tessel | fgd | bestfit | tessel, CPU+mem 0 | fgd, CPU+mem 0 | bestfit, CPU+mem 0 |"
echo "|---|---|---|---|---|---|---|---|"
for t in default gpushare40 gpushare60 gpushare80 gpushare100 cpu050 cpu100 cpu200 cpu250; do
    P="$TR/openb_pod_list_$t.csv"
    awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "cpu_milli") c = i; if ($i == "memory_mib") m = i }
                                print; next }
                      { $c = 0; $m = 0; print }' "$P" >"$D/$t.csv"
    real=$(run "$P" "$@")
    zero=$(run "$D/$t.csv" "$@")
    echo "$t $(pub130 $t) $real $zero" | awk '{ printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
        $1, $2 + 0.5, $3, $4, $5, $6, $7, $8 }'
done
