#!/bin/sh
# t0521-interposer-compute-shared.t - TESSEL_CUDA_CORE_MODE=shared is
# work-conserving: slice A (20 %) alone on a GPU uses all of it; when slice B
# (30 %) comes, the device splits by their limits (spare 50 % shared 20:30,
# so 40 % and 60 %); when B goes quiet, A gets everything back within one
# window.  Both launch-heavy, 5 ms kernels; shares from the fake's timeline,
# in 500 ms windows, +-5 points.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
LOAD=$HELPERS/tcu-load
[ -x "$LOAD" ] || missing "tcu-load not built"
export TESSEL_FAKE_EVENT_ORDER=device TESSEL_DEVICE_REGISTRY="$TMP" TESSEL_CUDA_CORE_MODE=shared

TESSEL_SLICE="$TMP/a" TESSEL_CUDA_CORE_LIMIT=20 LD_PRELOAD="$PRE" \
    "$LOAD" --us=5000 --window=500 --go="$TMP/goa" --until="$TMP/stopa" >"$TMP/out.a" 2>&1 &
a=$!
TESSEL_SLICE="$TMP/b" TESSEL_CUDA_CORE_LIMIT=30 LD_PRELOAD="$PRE" \
    "$LOAD" --us=5000 --window=500 --go="$TMP/gob" --ms=2000 >"$TMP/out.b" 2>&1 &
b=$!
wait_until grep -qs ready "$TMP/out.a"
wait_until grep -qs ready "$TMP/out.b"
touch "$TMP/goa"
sleep 1.5
touch "$TMP/gob"
wait $b
sleep 1.5
touch "$TMP/stopa"
wait $a

outa=$(grep '^load' "$TMP/out.a")
outb=$(grep '^load' "$TMP/out.b")
diag "A: $outa"
diag "B: $outb"
# B's first window is its ramp (A's queue drains, the registry shows B
# within 20 ms); B's windows after it, and A's windows inside B's run but
# after B's first 500 ms, are the split.
from=$(($(val t0 "$outb") + 500000000))
to=$(val t1 "$outb")
ph=$(printf '%s\n' "$outa" |
    awk -v t0="$(val t0 "$outb")" -v from="$from" -v to="$to" -v settle=250000000 \
    -f "$TESSEL_SRCDIR/tests/interposer/phases.awk")
diag "A's windows: $ph"
# in LO..HI TARGET: both ends within 5 points of TARGET
in_range() {
    [ "$1" != none ] || return 1
    lo=${1%..*} hi=${1#*..}
    awk -v l="$lo" -v h="$hi" -v t="$2" 'BEGIN { exit !(l >= t - 5 && h <= t + 5) }'
}
ok $(in_range "$(val before "$ph")" 100 && echo 0 || echo 1) \
    "A alone (limit 20 %, shared) uses the idle GPU: $(val before "$ph") %"
ok $(in_range "$(val during "$ph")" 40 && echo 0 || echo 1) \
    "A beside B gets 20 + 50 x 20/50 = 40 %: $(val during "$ph") %"
bw=$(val windows "$outb" | cut -d, -f2- | tr ',' '\n' | sort -n | sed -n '1p;$p' | paste -sd' ')
ok $(in_range "$(echo "$bw" | sed 's/ /../')" 60 && echo 0 || echo 1) \
    "B beside A gets 30 + 50 x 30/50 = 60 %: windows $(val windows "$outb") %"
ok $(in_range "$(val after "$ph")" 100 && echo 0 || echo 1) \
    "A gets the whole GPU back within one window once B is quiet: $(val after "$ph") %"
done_testing
