#!/bin/sh
# t0605-gpu-simulated-ckpt.t - the checkpoint rows of tests/gpu/run.sh in SIMULATED mode on the
# fake driver (docs/suspend.md): the framework-free round trip through cuCheckpointProcess*
# PASSes with its figures (states RUNNING,LOCKED,CHECKPOINTED,LOCKED,RUNNING; the target absent
# from NVML while checkpointed; every byte back at the same address); the PyTorch and nvcc rows
# say "not applicable" (they need a GPU); SIMULATED on every line, no doc written.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/gpusim.sh"
gs_setup t0605 python
export TESSEL_FAKE_GPUS=1xSimGPU:4G:132

gs_run --rows ckpt
gs_verdicts
gs_rows ckpt-round-trip-drv
l=$(grep '^SIMULATED ckpt-round-trip-drv ' "$TMP/out")
ok $(echo "$l" | grep -q ' PASS  states RUNNING,LOCKED,CHECKPOINTED,LOCKED,RUNNING; NVML while checkpointed: 0 MiB; contents ok=1 at \(0x[0-9a-f]*\) -> \1 ' && echo 0 || echo 1) \
    "ckpt-round-trip-drv PASSes with its figures: $l"
for r in ckpt-round-trip-torch ckpt-round-trip-nvcc; do
    ok $(grep -q "^SIMULATED $r *not applicable: SIMULATED" "$TMP/out" && echo 0 || echo 1) \
        "$r: not applicable in SIMULATED mode"
done
gs_no_doc

done_testing
