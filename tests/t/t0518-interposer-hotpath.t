#!/bin/sh
# t0518-interposer-hotpath.t - the hot path makes no system call: 1000 more
# cuMemAlloc_v2 + cuMemFree_v2 + cuMemGetInfo_v2 rounds cost as many more
# system calls with the interposer as without it (strace counts; one system
# call in any of the three hooks would add 1000 or more; the fake driver's
# own futex timing varies by a few).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
command -v strace >/dev/null || missing "strace not installed"
[ "${TESSEL_SANITIZE:-0}" = 1 ] && not_applicable "ASan's own system calls would be counted"
export TESSEL_CUDA_MEM_LIMIT=1G
count() { # count PRELOAD N: system calls of a run with N rounds
    if [ -n "$1" ]; then
        LD_PRELOAD="$1" strace -f -c -o "$TMP/st" "$PROBE" ctx loop:$2 >"$TMP/out" 2>&1
    else
        strace -f -c -o "$TMP/st" "$PROBE" ctx loop:$2 >"$TMP/out" 2>&1
    fi
    grep -q "loop $2 failures=0" "$TMP/out" || echo "# loop failed: $(cat "$TMP/out")" >&2
    awk '$NF == "total" {print $(NF-2)}' "$TMP/st"
}
b1=$(count "" 1000)
b2=$(count "" 2000)
p1=$(count "$PRE" 1000)
p2=$(count "$PRE" 2000)
diag "system calls: without $b1 / $b2, with $p1 / $p2 (1000 / 2000 rounds)"
added=$(((p2 - p1) - (b2 - b1)))
ok $([ "$added" -ge -10 ] && [ "$added" -le 10 ] && echo 0 || echo 1) \
    "1000 more rounds add $((p2 - p1)) system calls with, $((b2 - b1)) without: none from the hooks"
ok $([ "$p1" -gt "$b1" ] && echo 0 || echo 1) "initialisation does make system calls ($((p1 - b1)), once)"
done_testing
