#!/bin/sh
# t0600-gpu-simulated.t - tests/gpu/run.sh (the real-GPU proof) in its
# SIMULATED mode on the fake driver, so that the script's plumbing cannot rot
# between the rare runs on a GPU: every line says SIMULATED, every
# framework-free memory/behaviour row is printed once with its figures, its
# threshold and a verdict, the exit status follows the verdicts, docs are
# never written, the memory rows that the fake can prove PASS with their
# figures, the same rows FAIL when the interposer is left out
# (--no-interposer), and bad options are refused with one line.  The compute
# rows: t0601.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
RUN=$TESSEL_SRCDIR/tests/gpu/run.sh
for f in lib/libtessel-cuda.so tests/fake/libcuda.so.1 tests/fake/libnvidia-ml.so.1 \
    tests/interposer/tcu-slice tests/interposer/tcu-load; do
    if [ ! -e "$TESSEL_BUILD/$f" ]; then
        echo "1..1"
        echo "not ok 1 - $TESSEL_BUILD/$f is built (make)"
        exit 1
    fi
done
if ! command -v python3 >/dev/null; then
    echo "1..1"
    echo "not ok 1 - python3 is installed (tests/gpu's workloads are Python)"
    exit 1
fi
TMP=$(mktemp -d /tmp/tessel-t0600.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# A 12 GiB fake GPU: room for the view row (limit + 1 GiB outside the slice,
# 1 GiB inside) and a short fill when the interposer is left out.
export TESSEL_FAKE_GPUS=1xSimGPU:12G:132
DOC=$TESSEL_SRCDIR/docs/gpu-conformance.md
sum_before=$(cksum <"$DOC")

"$RUN" --simulate --build "$TESSEL_BUILD" --rows memory,fork,exec,kill,view,multigpu \
    --doc "$TMP/doc.md" >"$TMP/out" 2>&1
rc=$?
sed 's/^/# /' "$TMP/out"
nfail=$(grep -c '^SIMULATED [^ ]* *FAIL ' "$TMP/out")
ok $([ "$rc" -eq "$([ "$nfail" -gt 0 ] && echo 1 || echo 0)" ] && echo 0 || echo 1) \
    "exit status $rc follows the verdicts ($nfail rows FAIL)"
is "$(grep -vc '^SIMULATED ' "$TMP/out")" 0 "every line of $(wc -l <"$TMP/out") says SIMULATED"
for r in mem-driver-ctypes mem-two-processes fork-after-nvml exec-child sigkill-returns-memory \
    view-in-slice; do
    n=$(grep -c "^SIMULATED $r  *\(PASS\|FAIL\)  .* | need: " "$TMP/out")
    is "$n" 1 "row $r: once, with figures, threshold and verdict"
done
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
l=$(grep '^SIMULATED sigkill-returns-memory ' "$TMP/out")
ok $(echo "$l" | grep -q ' PASS  killed a holder of [0-9]* MiB.* next process held 3[0-9][0-9][0-9] MiB (oom=1)' && echo 0 || echo 1) \
    "sigkill-returns-memory PASSes: the killed holder's memory comes back: $l"
l=$(grep '^SIMULATED fork-after-nvml ' "$TMP/out")
ok $(echo "$l" | grep -q 'outside: exit 0, CUDA initialised by the NVML query 0, child cuinit=0 alloc=0; in slice: exit [0-9]*, initialised [01], ' && echo 0 || echo 1) \
    "fork-after-nvml measures both sides: $l"
ok $([ ! -e "$TMP/doc.md" ] && echo 0 || echo 1) "SIMULATED mode writes no doc (--doc $TMP/doc.md)"
is "$(cksum <"$DOC")" "$sum_before" "docs/gpu-conformance.md is untouched"

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
done_testing
