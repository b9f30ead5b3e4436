#!/bin/sh
# t0522-interposer-compute-priority.t - TESSEL_CUDA_CORE_PRIORITY: a
# low-priority training slice (no limit, launch-heavy, 5 ms kernels) has the
# GPU to itself; a high-priority inference slice (strict 60 %, launch then
# synchronize, 10 ms kernels) arrives and gets its 60 %; the low slice gets
# what is left (100 - 60 - the 5-point headroom kept for the high slice's
# demand to grow = 35 %), and everything back within one window when the
# high slice goes quiet.  Shares from the fake's timeline, +-5 points, in
# 500 ms windows (low) and 1 s windows (high: 10 ms kernels would make a
# 500 ms window's share jump by 2 points a kernel).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
LOAD=$HELPERS/tcu-load
[ -x "$LOAD" ] || missing "tcu-load not built"
export TESSEL_FAKE_EVENT_ORDER=device TESSEL_DEVICE_REGISTRY="$TMP"

TESSEL_SLICE="$TMP/low" TESSEL_CUDA_CORE_PRIORITY=low LD_PRELOAD="$PRE" \
    "$LOAD" --us=5000 --window=500 --go="$TMP/golow" --until="$TMP/stoplow" >"$TMP/out.low" 2>&1 &
low=$!
TESSEL_SLICE="$TMP/high" TESSEL_CUDA_CORE_PRIORITY=high TESSEL_CUDA_CORE_LIMIT=60 \
    LD_PRELOAD="$PRE" "$LOAD" --loop=sync --us=10000 --window=1000 --go="$TMP/gohigh" --ms=2500 \
    >"$TMP/out.high" 2>&1 &
high=$!
wait_until grep -qs ready "$TMP/out.low"
wait_until grep -qs ready "$TMP/out.high"
touch "$TMP/golow"
sleep 1.5
touch "$TMP/gohigh"
wait $high
sleep 1.5
touch "$TMP/stoplow"
wait $low

outl=$(grep '^load' "$TMP/out.low")
outh=$(grep '^load' "$TMP/out.high")
diag "low: $outl"
diag "high: $outh"
from=$(($(val t0 "$outh") + 500000000))
to=$(val t1 "$outh")
ph=$(printf '%s\n' "$outl" |
    awk -v t0="$(val t0 "$outh")" -v from="$from" -v to="$to" -v settle=250000000 \
    -f "$TESSEL_SRCDIR/tests/interposer/phases.awk")
diag "low's windows: $ph"
in_range() {
    [ "$1" != none ] || return 1
    lo=${1%..*} hi=${1#*..}
    awk -v l="$lo" -v h="$hi" -v t="$2" 'BEGIN { exit !(l >= t - 5 && h <= t + 5) }'
}
ok $(in_range "$(val before "$ph")" 100 && echo 0 || echo 1) \
    "low priority alone uses the GPU: $(val before "$ph") %"
# High's first window is its ramp (low's queue of up to 20 ms drains first).
hw=$(val windows "$outh" | cut -d, -f2- | tr ',' '\n' | sort -n | sed -n '1p;$p' | paste -sd' ')
ok $(in_range "$(echo "$hw" | sed 's/ /../')" 60 && echo 0 || echo 1) \
    "high priority gets what it asks (60 %) after its first window: $(val windows "$outh") %"
ok $(in_range "$(val during "$ph")" 35 && echo 0 || echo 1) \
    "low priority gets what is left (35 %): $(val during "$ph") %"
ok $(in_range "$(val after "$ph")" 100 && echo 0 || echo 1) \
    "low priority gets the GPU back within one window once high is quiet: $(val after "$ph") %"
done_testing
