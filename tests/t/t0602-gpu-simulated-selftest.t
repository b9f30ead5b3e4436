#!/bin/sh
# t0602-gpu-simulated-selftest.t - the verdicts of tests/gpu/run.sh can
# fail: in SIMULATED mode on the fake driver with --no-interposer (slices not
# enforced), the memory rows FAIL with figures that show the whole GPU used
# and the exit status is 1; bad options are refused with one line and exit
# status 2, nothing run.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/gpusim.sh"
gs_setup t0602 python
# The verdicts can fail: without the interposer nothing holds a slice (a
# 6 GiB fake GPU keeps the unlimited fill short).
TESSEL_FAKE_GPUS=1xSimGPU:6G:132 "$RUN" --simulate --no-interposer --rows memory --build "$TESSEL_BUILD" --doc "$TMP/doc.md" >"$TMP/self" 2>&1
rc=$?
sed 's/^/# /' "$TMP/self"
is "$rc" 1 "--no-interposer: exit status 1"
l=$(grep '^SIMULATED mem-driver-ctypes ' "$TMP/self")
ok $(echo "$l" | grep -q ' FAIL  oom=1 held [0-9]* MiB, driver at OOM [0-9]* MiB, .* view total/free 6144/' && echo 0 || echo 1) \
    "--no-interposer: mem-driver-ctypes FAILs (the whole 6 GiB GPU is used): $l"
is "$(grep -c '^SIMULATED mem-two-processes  *FAIL ' "$TMP/self")" 1 "--no-interposer: mem-two-processes FAILs"

# Bad input: one line, exit status 2, nothing run.
"$RUN" --simulate --seconds x >"$TMP/bad" 2>&1
rc=$?
is "$rc:$(wc -l <"$TMP/bad")" "2:1" "--seconds x: refused with one line: $(cat "$TMP/bad")"
"$RUN" --simulate --rows memory,bogus >"$TMP/bad" 2>&1
rc=$?
is "$rc:$(wc -l <"$TMP/bad")" "2:1" "--rows memory,bogus: refused with one line: $(cat "$TMP/bad")"
ok $([ ! -e "$TMP/doc.md" ] && echo 0 || echo 1) "--no-interposer writes no doc"
done_testing
