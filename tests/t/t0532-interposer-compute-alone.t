#!/bin/sh
# t0532-interposer-compute-alone.t - a strict TESSEL_CUDA_CORE_LIMIT of L %
# alone on a time-sliced GPU (the fake's default model, default event order:
# an event is timestamped when its stream reaches it) gives L +- 5 % of the
# solo rate (an unlimited process alone on a GPU) for L = 10, 20, ... 90
# with a launch-heavy loop (5 ms kernels), and for 10, 30, 50, 70, 90 with a
# launch-then-synchronize loop (20 ms kernels): in every complete 1 s window.
# Each run on a fake GPU of its own, all at once.  Simulated device time.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
LOAD=$HELPERS/tcu-load
[ -x "$LOAD" ] || skip_all "tcu-load not built"
export TESSEL_FAKE_GPUS=16xT4:8G TESSEL_DEVICE_REGISTRY="$TMP"
unset TESSEL_FAKE_EVENT_ORDER TESSEL_FAKE_TIMESLICE_US TESSEL_FAKE_SWITCH_US
N=0
run() { # NAME DEV LIMIT LOOP US
    if [ "$3" = - ]; then
        "$LOAD" --dev="$2" --loop="$4" --us="$5" --depth=16 --ms=2300 --go="$TMP/go" \
            >"$TMP/out.$1" 2>&1 &
    else
        TESSEL_SLICE="$TMP/slice.$1" TESSEL_CUDA_CORE_LIMIT=$3 LD_PRELOAD="$PRE" \
            "$LOAD" --dev="$2" --loop="$4" --us="$5" --ms=2300 --go="$TMP/go" \
            >"$TMP/out.$1" 2>&1 &
    fi
    N=$((N + 1))
}
run solo 0 - heavy 5000
dev=1
for pct in 10 20 30 40 50 60 70 80 90; do
    run heavy$pct $dev $pct heavy 5000
    dev=$((dev + 1))
done
for pct in 10 30 50 70 90; do
    run sync$pct $dev $pct sync 20000
    dev=$((dev + 1))
done
all_ready() { [ "$(cat "$TMP"/out.* 2>/dev/null | grep -c '^ready')" -eq $N ]; }
wait_until all_ready
touch "$TMP/go"
wait

solo=$(val windows "$(grep '^load' "$TMP/out.solo")" | tr ',' '\n' |
    awk '{ s += $1; n++ } END { if (n) printf "%.1f", s / n; else print 0 }')
diag "solo rate: $solo % of the device"
ok $(awk -v s="$solo" 'BEGIN { exit !(s > 0) }' && echo 0 || echo 1) \
    "the solo run measured its rate: $solo %"
near() { awk -v t="$1" -v v="$2" -v s="$solo" 'BEGIN { d = v - t * s / 100; exit !(d >= -5 && d <= 5) }'; }
check() { # NAME LIMIT WHAT
    out=$(grep '^load' "$TMP/out.$1")
    windows=$(val windows "$out")
    diag "$3 at $2 %: 1 s windows $windows %, overall $(val share "$out") %"
    bad=0
    [ "$windows" = none ] || [ -z "$windows" ] && bad=1
    for w in $(echo "$windows" | tr ',' ' '); do
        near "$2" "$w" || bad=1
    done
    ok $bad "$3, strict $2 % alone: every 1 s window within 5 points ($windows %)"
}
for pct in 10 20 30 40 50 60 70 80 90; do
    check heavy$pct $pct "launch-heavy loop (5 ms kernels)"
done
for pct in 10 30 50 70 90; do
    check sync$pct $pct "launch-then-synchronize loop (20 ms kernels)"
done
done_testing
