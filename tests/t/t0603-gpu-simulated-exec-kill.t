#!/bin/sh
# t0603-gpu-simulated-exec-kill.t - two behaviour rows of tests/gpu/run.sh
# in SIMULATED mode on the fake driver: an exec'd child and a SIGKILLed
# holder.  Each is printed once with its figures, threshold and verdict,
# SIMULATED on every line, the exit status follows the verdicts, no doc is
# written; the SIGKILLed holder's memory comes back (PASS with figures).
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
TMP=$(mktemp -d /tmp/tessel-t0603.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# A 12 GiB fake GPU: room for the view row (limit + 1 GiB outside the slice,
# 1 GiB inside) and a short fill when the interposer is left out.
export TESSEL_FAKE_GPUS=1xSimGPU:12G:132
DOC=$TESSEL_SRCDIR/docs/gpu-conformance.md
sum_before=$(cksum <"$DOC")

"$RUN" --simulate --build "$TESSEL_BUILD" --rows exec,kill \
    --doc "$TMP/doc.md" >"$TMP/out" 2>&1
rc=$?
sed 's/^/# /' "$TMP/out"
nfail=$(grep -c '^SIMULATED [^ ]* *FAIL ' "$TMP/out")
ok $([ "$rc" -eq "$([ "$nfail" -gt 0 ] && echo 1 || echo 0)" ] && echo 0 || echo 1) \
    "exit status $rc follows the verdicts ($nfail rows FAIL)"
is "$(grep -vc '^SIMULATED ' "$TMP/out")" 0 "every line of $(wc -l <"$TMP/out") says SIMULATED"
for r in exec-child sigkill-returns-memory; do
    n=$(grep -c "^SIMULATED $r  *\(PASS\|FAIL\)  .* | need: " "$TMP/out")
    is "$n" 1 "row $r: once, with figures, threshold and verdict"
done
l=$(grep '^SIMULATED sigkill-returns-memory ' "$TMP/out")
ok $(echo "$l" | grep -q ' PASS  killed a holder of [0-9]* MiB.* next process held 3[0-9][0-9][0-9] MiB (oom=1)' && echo 0 || echo 1) \
    "sigkill-returns-memory PASSes: the killed holder's memory comes back: $l"
ok $([ ! -e "$TMP/doc.md" ] && echo 0 || echo 1) "SIMULATED mode writes no doc (--doc $TMP/doc.md)"
is "$(cksum <"$DOC")" "$sum_before" "docs/gpu-conformance.md is untouched"

done_testing
