#!/bin/sh
# t0524-interposer-compute-calm.t - a compute limit that does not bind is
# cheap and still counted: while a slice is calm (credit in its bucket, no
# wait for its share) one launch in 32 on average is measured with an event
# pair and the others are charged the measured estimate, so the driver sees
# a small fraction of the event records; the slice's busy time still matches
# the device's.  A limit that binds measures every launch.  A suspend in the
# calm state drains and accounts every launch.  docs/compute-shares.md,
# "Sampling while calm".
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
LOAD=$HELPERS/tcu-load
SLICE_TOOL=$HELPERS/tcu-slice
[ -x "$LOAD" ] || missing "tcu-load not built"
[ -x "$SLICE_TOOL" ] || missing "tcu-slice not built"
export TESSEL_FAKE_EVENT_ORDER=device TESSEL_DEVICE_REGISTRY="$TMP"
# calls NAME FILE: how many times the driver saw NAME (fake's call log).
calls() { awk -v n="$1" '$1 == n { c += $2 } END { print c + 0 }' "$2"; }
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b * p / 100) }'; }

# 1. Calm: 200 us kernels, 600 us of host time after each: about 25 % of the
#    GPU against a limit of 90 %.
TESSEL_SLICE="$TMP/s1" TESSEL_CUDA_CORE_LIMIT=90 TESSEL_FAKE_CALLS_FILE="$TMP/calls1" \
    LD_PRELOAD="$PRE" "$LOAD" --us=200 --gap=600 --ms=1500 >"$TMP/out1" 2>&1
out=$(grep '^load' "$TMP/out1")
diag "calm: $out"
st=$("$SLICE_TOOL" "$TMP/s1" state)
diag "calm slice: $st"
n=$(val launches "$out")
rec=$(calls cuEventRecord "$TMP/calls1")
fake=$(val busy "$out")
mine=$(val busy_ns "$st")
diag "calm: $n launches, $rec cuEventRecord calls; busy: fake $fake ns, slice file $mine ns"
ok $([ "$n" -ge 200 ] && echo 0 || echo 1) "calm: the loop ran ($n launches)"
ok $([ "$rec" -ge 2 ] && [ $((rec * 4)) -le "$n" ] && echo 0 || echo 1) \
    "calm: launches are sampled: $rec event records for $n launches (at most 1 in 4)"
is "$(val launches "$st")" "$n" "calm: the slice file counts every launch"
ok $(within "$mine" "$fake" 10 && echo 0 || echo 1) \
    "calm: busy time in the slice file within 10 % of the device's ($mine vs $fake ns)"

# 2. Binding: a launch-heavy loop at 30 % measures every launch (a fresh pair
#    is two records, a launch past a full ring one).
TESSEL_SLICE="$TMP/s2" TESSEL_CUDA_CORE_LIMIT=30 TESSEL_FAKE_CALLS_FILE="$TMP/calls2" \
    LD_PRELOAD="$PRE" "$LOAD" --us=5000 --ms=1000 >"$TMP/out2" 2>&1
out=$(grep '^load' "$TMP/out2")
diag "binding: $out"
n=$(val launches "$out")
rec=$(calls cuEventRecord "$TMP/calls2")
ok $([ "$n" -ge 20 ] && [ "$rec" -ge "$n" ] && echo 0 || echo 1) \
    "binding: every launch measured: $rec event records for $n launches"
ok $(awk -v s="$(val share "$out")" 'BEGIN { exit !(s >= 25 && s <= 35) }' && echo 0 || echo 1) \
    "binding: the share holds ($(val share "$out") % for 30 %)"

# 3. Suspend while calm: 2 ms kernels, 6 ms of host time after each.
S="$TMP/s3"
TESSEL_SLICE="$S" TESSEL_CUDA_CORE_LIMIT=90 LD_PRELOAD="$PRE" \
    "$LOAD" --us=2000 --gap=6000 --go="$TMP/go" --until="$TMP/stop" >"$TMP/out3" 2>&1 &
pid=$!
wait_until grep -qs ready "$TMP/out3"
touch "$TMP/go"
launched() { [ "$(val launches "$("$SLICE_TOOL" "$S" state)")" -ge 40 ]; }
wait_until launched
is "$("$SLICE_TOOL" "$S" suspend)" ok "calm: tshm_suspend"
drained() { [ "$(val drained "$("$SLICE_TOOL" "$S" state)")" = 1 ]; }
wait_until drained
s1=$("$SLICE_TOOL" "$S" state)
diag "calm, drained: $s1"
n1=$(val launches "$s1")
b1=$(val busy_ns "$s1")
# Every launch is charged at least its 2 ms (one charged nothing, or a pending
# batch not published, would fall below).  An event pair also times the
# host's way from its start record to the launch (the device reaches the
# start event at once on an idle stream, as a real GPU does), and unmeasured
# launches are charged the pairs' average: 2.04-2.13 ms a launch under ASan on
# a quiet machine, more under load; 1.5x bounds it (a double-charged batch).
ok $(awk -v b="$b1" -v n="$n1" 'BEGIN { exit !(b >= n * 2e6 * 0.99 && b <= n * 2e6 * 1.5) }' &&
    echo 0 || echo 1) "calm, drained: all $n1 launches accounted, busy $b1 ns >= $n1 x 2 ms"
sleep 0.5
s2=$("$SLICE_TOOL" "$S" state)
is "$(val launches "$s2") $(val busy_ns "$s2")" "$n1 $b1" \
    "calm: 0.5 s suspended, nothing launched or accounted"
is "$("$SLICE_TOOL" "$S" resume)" ok "calm: tshm_resume"
more() { [ "$(val launches "$("$SLICE_TOOL" "$S" state)")" -ge $((n1 + 10)) ]; }
wait_until more
ok 0 "calm: launches go on after the resume"
touch "$TMP/stop"
wait $pid
ok $(grep -qs '^load' "$TMP/out3" && echo 0 || echo 1) "calm: the program ran to its end"
done_testing
