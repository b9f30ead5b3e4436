#!/bin/sh
# t0603-gpu-simulated-exec-kill.t - two behaviour rows of tests/gpu/run.sh
# in SIMULATED mode on the fake driver: an exec'd child and a SIGKILLed
# holder.  Each is printed once with its figures, threshold and verdict,
# SIMULATED on every line, the exit status follows the verdicts, no doc is
# written; the SIGKILLed holder's memory comes back (PASS with figures).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/gpusim.sh"
gs_setup t0603 python
# A 12 GiB fake GPU: room for the view row (limit + 1 GiB outside the slice,
# 1 GiB inside) and a short fill when the interposer is left out.
export TESSEL_FAKE_GPUS=1xSimGPU:12G:132

gs_run --rows exec,kill
gs_verdicts
gs_rows exec-child sigkill-returns-memory
l=$(grep '^SIMULATED sigkill-returns-memory ' "$TMP/out")
ok $(echo "$l" | grep -q ' PASS  killed a holder of [0-9]* MiB.* next process held 3[0-9][0-9][0-9] MiB (oom=1)' && echo 0 || echo 1) \
    "sigkill-returns-memory PASSes: the killed holder's memory comes back: $l"
gs_no_doc

done_testing
