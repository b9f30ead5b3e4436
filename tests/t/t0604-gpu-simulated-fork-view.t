#!/bin/sh
# t0604-gpu-simulated-fork-view.t - two behaviour rows of tests/gpu/run.sh
# in SIMULATED mode on the fake driver: fork after an NVML query, and the
# view from inside a slice.  Each is printed once with its figures, threshold
# and verdict, SIMULATED on every line, the exit status follows the verdicts,
# no doc is written; fork-after-nvml measures both sides.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/gpusim.sh"
gs_setup t0604 python
# A 12 GiB fake GPU: room for the view row (limit + 1 GiB outside the slice,
# 1 GiB inside) and a short fill when the interposer is left out.
export TESSEL_FAKE_GPUS=1xSimGPU:12G:132

gs_run --rows fork,view
gs_verdicts
gs_rows fork-after-nvml view-in-slice
l=$(grep '^SIMULATED fork-after-nvml ' "$TMP/out")
ok $(echo "$l" | grep -q 'outside: exit 0, CUDA initialised by the NVML query 0, child cuinit=0 alloc=0; in slice: exit [0-9]*, initialised [01], ' && echo 0 || echo 1) \
    "fork-after-nvml measures both sides: $l"
l=$(grep '^SIMULATED view-in-slice ' "$TMP/out")
ok $(echo "$l" | grep -q ' PASS  NVML (nvml_view.py): total 4096 MiB, used [0-9]* MiB (slice [0-9]*), 1 processes listed with ' && echo 0 || echo 1) \
    "view-in-slice passes: the slice's process alone is listed, not the one outside it: $l"
gs_no_doc

done_testing
