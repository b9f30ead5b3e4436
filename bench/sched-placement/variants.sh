#!/bin/sh
# variants.sh - our fgd against Tessel's default on trace variants that are
# not in ../shared, built here from the default pod list (seeded awk):
#   gpuspec25   25 % of GPU pods name one model, drawn in proportion to the
#               cluster's GPUs of that model (V100M16|V100M32 as one)
#   gpuspec33   33 % of GPU pods name a model set, drawn 40/20/20/20 % over
#               G2, T4, V100M16|V100M32, G3|P100 (small pools over-asked)
#   multigpu40  40 % of 1-GPU whole pods become 2/4/8-GPU pods (50/30/20 %),
#               CPU scaled with the GPU count
#   multigpu20  the same with 20 % (another seed)
# These are our constructions, not the FGD paper's gpuspec*/multigpu* files.
#
# Usage: bench/sched-placement/variants.sh [BUILD_DIR]
set -eu
B=${1:-build}
SIM="$B/bin/tessel-sim"
TR=${TESSEL_SHARED:-$(dirname "$0")/../../../shared}/traces/alibaba-gpu-2023
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
P="$TR/openb_pod_list_default.csv"
awk -F, -v OFS=, 'BEGIN { srand(5) } NR == 1 { print; next }
    { if ($4 > 0 && rand() < 0.25) { r = rand() * 6212
        $6 = r < 4392 ? "G2" : r < 5234 ? "T4" : r < 5546 ? "G3" : r < 5813 ? "P100" : r < 6210 ? "V100M16|V100M32" : "A10" }
      print }' "$P" >"$D/gpuspec25.csv"
awk -F, -v OFS=, 'BEGIN { srand(7) } NR == 1 { print; next }
    { if ($4 > 0 && rand() < 0.33) { r = rand()
        $6 = r < 0.4 ? "G2" : r < 0.6 ? "T4" : r < 0.8 ? "V100M16|V100M32" : "G3|P100" }
      print }' "$P" >"$D/gpuspec33.csv"
awk -F, -v OFS=, 'BEGIN { srand(11) } NR == 1 { print; next }
    { if ($4 == 1 && $5 == 1000 && rand() < 0.4) { r = rand()
        $4 = r < 0.5 ? 2 : r < 0.8 ? 4 : 8; $2 = $2 * $4 }
      print }' "$P" >"$D/multigpu40.csv"
awk -F, -v OFS=, 'BEGIN { srand(13) } NR == 1 { print; next }
    { if ($4 == 1 && $5 == 1000 && rand() < 0.2) { r = rand()
        $4 = r < 0.5 ? 2 : r < 0.8 ? 4 : 8; $2 = $2 * $4 }
      print }' "$P" >"$D/multigpu20.csv"
for v in gpuspec25 gpuspec33 multigpu40 multigpu20; do
    echo "== $v"
    "$SIM" --nodes "$TR/openb_node_list_gpu_node.csv" --pods "$D/$v.csv" \
        --policy fgd,tessel,bestfit --seeds 42-51
done
