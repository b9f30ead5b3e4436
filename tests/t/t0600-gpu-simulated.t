#!/bin/sh
# t0600-gpu-simulated.t - tests/gpu/run.sh (the real-GPU proof) in its
# SIMULATED mode on the fake driver, so that the script's plumbing cannot rot
# between the rare runs on a GPU: every line says SIMULATED, every
# framework-free memory row is printed once with its figures, its threshold
# and a verdict, the exit status follows the verdicts, docs are never
# written, the memory rows PASS with their figures, several GPUs are "not
# applicable".  Compute rows: t0601; the self-test (--no-interposer) and bad
# options: t0602; fork, exec, SIGKILL and the view: t0603.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/gpusim.sh"
gs_setup t0600 python
# A 12 GiB fake GPU: room for the view row (limit + 1 GiB outside the slice,
# 1 GiB inside) and a short fill when the interposer is left out.
export TESSEL_FAKE_GPUS=1xSimGPU:12G:132

gs_run --rows memory,multigpu
gs_verdicts
gs_rows mem-driver-ctypes mem-two-processes
is "$(grep -c '^SIMULATED \(mem-pytorch\|mem-cupy\|mem-jax\|mem-nvcc\|train-\|graphs-\|multiprocessing\|dataloader\)' "$TMP/out")" 0 \
    "no framework row runs SIMULATED"
is "$(grep -c '^SIMULATED multi-gpu-reordered  *not applicable: ' "$TMP/out")" 1 \
    "several GPUs: 'not applicable', not a PASS"
# Rows the fake can prove: the limit holds and the slice counts what the driver does.
l=$(grep '^SIMULATED mem-driver-ctypes ' "$TMP/out")
ok $(echo "$l" | grep -q ' PASS  oom=1 held 3[0-9][0-9][0-9] MiB, driver at OOM 40[0-9][0-9] MiB, max |slice-driver| 0 MiB over [0-9]* points, view total/free 4096/' && echo 0 || echo 1) \
    "mem-driver-ctypes PASSes: a 4 GiB slice stops the fill at OOM below 4096 MiB: $l"
l=$(grep '^SIMULATED mem-two-processes ' "$TMP/out")
ok $(echo "$l" | grep -q ' PASS  both OOM=1/1, .* driver (both) 40[0-9][0-9] MiB' && echo 0 || echo 1) \
    "mem-two-processes PASSes: together <= 4096 MiB: $l"
gs_no_doc

done_testing
