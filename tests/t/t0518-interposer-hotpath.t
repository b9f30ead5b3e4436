#!/bin/sh
# t0518-interposer-hotpath.t - the hot path makes no system call: 1000 more
# cuMemAlloc_v2 + cuMemFree_v2 + cuMemGetInfo_v2 rounds cost as many more
# system calls of each kind with the interposer as without it (strace counts,
# one per system call name).  One system call in any of the three hooks would
# add 1000 or more of its kind; the fake driver's own futex and mmap counts
# vary by a few dozen between runs on a loaded machine, so a kind may differ
# by fewer than 250 (a quarter of what one call per round would add).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
command -v strace >/dev/null || missing "strace not installed"
[ "${TESSEL_SANITIZE:-0}" = 1 ] && not_applicable "ASan's own system calls would be counted"
export TESSEL_CUDA_MEM_LIMIT=1G
count() { # count NAME PRELOAD N: system calls of a run with N rounds, "name calls" in $TMP/NAME
    if [ -n "$2" ]; then
        LD_PRELOAD="$2" strace -f -c -o "$TMP/st" "$PROBE" ctx loop:$3 >"$TMP/out" 2>&1
    else
        strace -f -c -o "$TMP/st" "$PROBE" ctx loop:$3 >"$TMP/out" 2>&1
    fi
    grep -q "loop $3 failures=0" "$TMP/out" || echo "# loop failed: $(cat "$TMP/out")" >&2
    # rows: % seconds usecs/call calls [errors] syscall; the total row last
    awk '$1 ~ /^[0-9.]+$/ && $NF != "total" {print $NF, $4}' "$TMP/st" | sort >"$TMP/$1"
    awk '$NF == "total" {print $(NF-2)}' "$TMP/st"
}
b1=$(count b1 "" 1000)
b2=$(count b2 "" 2000)
p1=$(count p1 "$PRE" 1000)
p2=$(count p2 "$PRE" 2000)
diag "system calls: without $b1 / $b2, with $p1 / $p2 (1000 / 2000 rounds)"
# per kind: (p2 - p1) - (b2 - b1), what 1000 more rounds add with the interposer alone
worst=$(awk '{c[FILENAME, $1] = $2; k[$1] = 1}
    END {
        m = -1
        for (n in k) {
            d = (c[P2, n] - c[P1, n]) - (c[B2, n] - c[B1, n])
            a = d < 0 ? -d : d
            if (a > m) { m = a; w = d " " n }
        }
        print w
    }' B1="$TMP/b1" B2="$TMP/b2" P1="$TMP/p1" P2="$TMP/p2" "$TMP/b1" "$TMP/b2" "$TMP/p1" "$TMP/p2")
diag "largest difference of one kind: $worst"
ok $([ "${worst%% *}" -gt -250 ] && [ "${worst%% *}" -lt 250 ] && echo 0 || echo 1) \
    "1000 more rounds add $((p2 - p1)) system calls with, $((b2 - b1)) without; no kind differs by 250 ($worst): none from the hooks"
ok $([ "$p1" -gt "$b1" ] && echo 0 || echo 1) "initialisation does make system calls ($((p1 - b1)), once)"
done_testing
