#!/bin/sh
# t0523-interposer-suspend.t - suspend and resume of a slice by another
# process (what tesseld does through libshm): after tshm_suspend new launches
# wait inside the interposer (no signal: the application's handlers are not
# touched), the work already queued drains and tshm_drained reports it; the
# slice's measured busy time and launch count stay still while suspended;
# tshm_resume lets the loop go on.  The slice file shows the usage per
# process and device (busy time, memory, the thread held) through libshm's
# read API.  Slice: strict 90 %, launch-heavy, 20 ms kernels.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/interposer/tcu.sh"
LOAD=$HELPERS/tcu-load
SLICE_TOOL=$HELPERS/tcu-slice
[ -x "$LOAD" ] || missing "tcu-load not built"
export TESSEL_FAKE_EVENT_ORDER=device TESSEL_DEVICE_REGISTRY="$TMP"
S="$TMP/slice"

TESSEL_SLICE="$S" TESSEL_CUDA_CORE_LIMIT=90 LD_PRELOAD="$PRE" \
    "$LOAD" --us=20000 --go="$TMP/go" --until="$TMP/stop" >"$TMP/out" 2>&1 &
pid=$!
wait_until grep -qs ready "$TMP/out"
is "$("$SLICE_TOOL" "$S" state | cut -d' ' -f2-3)" "suspended=0 drained=0" \
    "a running slice is neither suspended nor drained"
touch "$TMP/go"
launched() { [ "$(val launches "$("$SLICE_TOOL" "$S" state)")" -ge 5 ]; }
wait_until launched

is "$("$SLICE_TOOL" "$S" suspend)" ok "tshm_suspend"
drained() { [ "$(val drained "$("$SLICE_TOOL" "$S" state)")" = 1 ]; }
wait_until drained
s1=$("$SLICE_TOOL" "$S" state)
diag "drained: $s1"
n1=$(val launches "$s1")
b1=$(val busy_ns "$s1")
# Every launch made before the suspend ran to its end and was measured:
# busy = launches x 20 ms (+ the launch latency each start event adds).
ok $(awk -v b="$b1" -v n="$n1" 'BEGIN { exit !(b >= n * 20e6 && b <= n * 20e6 * 1.01) }' &&
    echo 0 || echo 1) "drained: all $n1 launches completed, busy $b1 ns = $n1 x 20 ms"
show=$("$SLICE_TOOL" "$S")
proc=$(printf '%s\n' "$show" | grep "^proc $pid ")
diag "$proc"
is "$(val waiting "$proc")" 1 "the slice file shows the process's launching thread held"
is "$(val inflight "$proc")" 0 "and nothing of it in flight"
is "$(val busy "$proc")" "$b1" "per-process busy time in the slice file = the slice's"
is "$(val used "$proc")" $((64 * MiB)) "per-process memory in the slice file: its 64 MiB context"
sleep 0.5
s2=$("$SLICE_TOOL" "$S" state)
is "$(val launches "$s2") $(val busy_ns "$s2")" "$n1 $b1" \
    "0.5 s suspended: no launch reached the driver, no device time used"
# The same program without the interposer, held at its start line: the
# signals it catches are the same set.
"$LOAD" --go="$TMP/never" >"$TMP/out.bare" 2>&1 &
bare=$!
wait_until grep -qs ready "$TMP/out.bare"
is "$(awk '/^SigCgt/ {print $2}' /proc/$pid/status)" \
    "$(awk '/^SigCgt/ {print $2}' /proc/$bare/status)" \
    "no signal handler installed: caught signals as without the interposer"
kill $bare
wait $bare 2>/dev/null

is "$("$SLICE_TOOL" "$S" resume)" ok "tshm_resume"
more() { [ "$(val launches "$("$SLICE_TOOL" "$S" state)")" -ge $((n1 + 5)) ]; }
wait_until more
s3=$("$SLICE_TOOL" "$S" state)
diag "resumed: $s3"
is "$(val suspended "$s3")" 0 "resumed: launches go on ($(val launches "$s3") > $n1)"
is "$(val waiting "$("$SLICE_TOOL" "$S" | grep "^proc $pid ")")" 0 "no thread held any more"
touch "$TMP/stop"
wait $pid
out=$(grep '^load' "$TMP/out")
diag "$out"
ok $([ -n "$out" ] && echo 0 || echo 1) "the program ran to its end normally"

# A thread that launched and ended leaves nothing counted in flight (its
# launches' measurements are read or dropped as it exits): a slice whose
# process lives on without launching still drains.
S2="$TMP/slice2"
TESSEL_SLICE="$S2" TESSEL_CUDA_CORE_LIMIT=90 LD_PRELOAD="$PRE" "$LOAD" --thread --us=20000 \
    --ms=300 --linger="$TMP/stop2" >"$TMP/out2" 2>&1 &
pid2=$!
wait_until grep -qs 'thread ended' "$TMP/out2"
is "$("$SLICE_TOOL" "$S2" suspend)" ok "suspend a slice whose launching thread has ended"
st=$("$SLICE_TOOL" "$S2" state)
diag "$st"
is "$(val drained "$st")" 1 "drained at once: the ended thread's launches are not left in flight"
touch "$TMP/stop2"
wait $pid2
done_testing
