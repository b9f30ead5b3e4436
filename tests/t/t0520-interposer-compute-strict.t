#!/bin/sh
# t0520-interposer-compute-strict.t - TESSEL_CUDA_CORE_LIMIT in strict mode
# holds a slice to its share of an otherwise idle GPU within +-5 points,
# overall and in each 1-second window, for limits of 10 to 90 %, with a
# launch-heavy loop and a launch-then-synchronize loop, and on every launch
# path (cuLaunchKernel_ptsz, cuLaunchKernelEx, cuLaunchCooperativeKernel,
# cuLaunchCooperativeKernelMultiDevice, cuGraphLaunch).  Kernels of 5 ms
# (20 ms when synchronised each time) keep the 16 loops' CPU use small, so
# that a loaded host does not starve the loops themselves.  Shares come from
# the fake's simulated timeline (busy time of the process / elapsed), not
# from this machine's speed.  The slice file's busy time matches.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
LOAD=$HELPERS/tcu-load
SLICE_TOOL=$HELPERS/tcu-slice
[ -x "$LOAD" ] || missing "tcu-load not built"
# One fake GPU per run, all runs at once (each on an idle device).
export TESSEL_FAKE_GPUS=16xT4:8G TESSEL_FAKE_EVENT_ORDER=device
export TESSEL_DEVICE_REGISTRY="$TMP"

# run NAME DEV LIMIT LOOP US PATH: one tcu-load in its own slice, 2.3 s.
run() {
    TESSEL_SLICE="$TMP/slice.$1" TESSEL_CUDA_CORE_LIMIT=$3 LD_PRELOAD="$PRE" \
        "$LOAD" --dev="$2" --loop="$4" --us="$5" --path="$6" --ms=2300 --go="$TMP/go" \
        >"$TMP/out.$1" 2>&1 &
}
dev=0
for pct in 10 30 50 70 90; do
    run heavy$pct $dev $pct heavy 5000 launch
    dev=$((dev + 1))
    run sync$pct $dev $pct sync 20000 launch
    dev=$((dev + 1))
done
run ptsz30 $dev 30 heavy 5000 ptsz
run ex50 $((dev + 1)) 50 heavy 5000 ex
run coop70 $((dev + 2)) 70 sync 20000 coop
run multi40 $((dev + 3)) 40 heavy 5000 multi
run graph60 $((dev + 4)) 60 heavy 8000 graph
# Long kernels, launch-heavy, at a low limit: the first launches must not
# queue a burst before the first measurement comes back.
run long10 $((dev + 5)) 10 heavy 20000 launch
# A shared start line once all 16 have initialised (CPU-heavy under ASan).
all_ready() { [ "$(cat "$TMP"/out.* 2>/dev/null | grep -c '^ready')" -eq 16 ]; }
wait_until all_ready
touch "$TMP/go"
wait

# within TARGET FIGURE: |FIGURE - TARGET| <= 5
within() { awk -v t="$1" -v v="$2" 'BEGIN { d = v - t; exit !(d >= -5 && d <= 5) }'; }
check() {
    name=$1 target=$2 what=$3
    out=$(cat "$TMP/out.$name")
    share=$(val share "$out")
    windows=$(val windows "$out")
    diag "$what at $target %: share $share %, 1 s windows $windows %"
    ok $(within "$target" "${share:-999}" && echo 0 || echo 1) \
        "$what, limit $target %: achieved $share % overall"
    bad=0
    for w in $(echo "$windows" | tr ',' ' '); do
        within "$target" "$w" || bad=1
    done
    [ "$windows" = none ] && bad=1
    ok $bad "$what, limit $target %: every 1 s window within 5 points ($windows)"
}
for pct in 10 30 50 70 90; do
    check heavy$pct $pct "launch-heavy loop (cuLaunchKernel, 5 ms kernels)"
    check sync$pct $pct "launch-then-synchronize loop (20 ms kernels)"
done
check ptsz30 30 "cuLaunchKernel_ptsz, launch-heavy"
check ex50 50 "cuLaunchKernelEx, launch-heavy"
check coop70 70 "cuLaunchCooperativeKernel, launch-then-synchronize (20 ms)"
check multi40 40 "cuLaunchCooperativeKernelMultiDevice, launch-heavy"
check graph60 60 "cuGraphLaunch (4-kernel graph, 8 ms), launch-heavy"
check long10 10 "launch-heavy loop of 20 ms kernels"

# The slice file holds the measured device time: within 5 % of the fake's
# (events time a kernel from its start event, so the host's launch latency
# on an idle device is counted too; the launches in flight at exit are not).
out=$(cat "$TMP/out.heavy50")
fake_busy=$(val busy "$out")
shm_busy=$(val busy_ns "$("$SLICE_TOOL" "$TMP/slice.heavy50" | grep '^device 0')")
diag "heavy50: fake busy $fake_busy ns, slice file busy_ns $shm_busy"
ok $(awk -v a="$fake_busy" -v b="$shm_busy" 'BEGIN { exit !(b <= a * 1.05 && b >= a * 0.95) }' &&
    echo 0 || echo 1) "the slice file's busy time is the measured device time"
is "$(val core_limit "$("$SLICE_TOOL" "$TMP/slice.heavy50" | grep '^device 0')")" 50 \
    "the slice file holds the share (core_limit=50)"
done_testing
