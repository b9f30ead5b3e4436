#!/bin/sh
# t0601-gpu-simulated-compute.t - the compute rows of tests/gpu/run.sh in
# SIMULATED mode on the fake driver (tcu-load, 10 ms simulated kernels): each
# row runs, says SIMULATED, prints its throughput figures, its ratios, its
# threshold and a verdict, and the exit status follows the verdicts.  The
# verdicts themselves are not asserted: on the fake they come from the wall
# clock of a shared CI machine (t052x test the shares on the fake's own
# timeline; the real figures come from a GPU run, docs/gpu-conformance.md).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/gpusim.sh"
gs_setup t0601
gs_run --rows compute --seconds 1
gs_verdicts
ok $(grep -q '^SIMULATED # compute baseline: one workload alone, no interposer: [0-9][0-9.]* it/s' "$TMP/out" && echo 0 || echo 1) \
    "the baseline (one workload alone, no interposer) is a rate"
num='[0-9][0-9]*\.[0-9]*'
for l in 25 50 75; do
    n=$(grep -c "^SIMULATED compute-strict-$l  *\(PASS\|FAIL\)  $num it/s alone in a strict $l % slice, solo $num: ratio $num; device busy \($num\|?\) % (NVML) | need: device busy $l +- 5 % (NVML" "$TMP/out")
    is "$n" 1 "compute-strict-$l: rate, ratio to solo, the device's busy time and threshold"
done
for mix in 30/70 50/50 25/25/50 25/25/25/25; do
    k=$(echo "$mix" | tr '/' '\n' | wc -l)
    ratios=$(printf "$num/%.0s" $(seq 2 "$k"))$num
    n=$(grep -c "^SIMULATED compute-tenants-$mix  *\(PASS\|FAIL\)  each/solo $ratios; parts $ratios; sum $num it/s vs $num unlimited together: $num | need: each tenant's part of the sum" "$TMP/out")
    is "$n" 1 "compute-tenants-$mix: $k tenants' ratios, their parts of the sum, the sum against unlimited time-slicing"
done
n=$(grep -c "^SIMULATED compute-shared-idle  *\(PASS\|FAIL\)  30 % shared beside an idle 70 % shared tenant: $num it/s, ratio $num of solo | need: ratio >= 0.40" "$TMP/out")
is "$n" 1 "compute-shared-idle: rate and ratio of the busy tenant"
gs_no_doc
done_testing
