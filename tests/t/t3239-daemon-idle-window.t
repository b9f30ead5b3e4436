#!/bin/sh
# t3239-daemon-idle-window.t - a call made while an idle reclamation's checkpoint is under way
# (docs/suspend.md, "The next CUDA call"): it waits at the job's slice and asks for the restore,
# not in the driver where the checkpoint's lock would hold it unseen.  Job A, in a queue whose
# idle time is 2 s, has two processes under the interposer: P holds 512 MiB with a pattern, Q a
# context and an event, both idle.  P is stopped (SIGSTOP) so that the driver's lock waits for
# it: the reclamation's checkpoint stays open.  Meanwhile Q queries a stream (a gated call, not
# GPU work): its call sets the slice's wake word and has not returned.  Once P goes on, the
# reclamation is recorded, tesseld restores the job for Q's call, the call returns and every
# byte of P's pattern is back.  (Before the fix the reclaim word was set only after the
# checkpoint: Q's call went into the driver and stayed there.)
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
SLICE=$TESSEL_BUILD/tests/interposer/tcu-slice
[ -x "$SLICE" ] || missing "tcu-slice not built"
ckpt_start
step() { api GET "/v1/jobs/$1" && jget .checkpoint; }

api POST /v1/queues '{"name":"lab","idle_reclaim":"2s"}'
is "$CODE" 201 "queue lab: idle_reclaim 2s"
cat >"$G/p.sh" <<EOS
echo \$\$ >"$G/ppid"
exec "$PROBE" ctx alloc:mem:512M pattern:512M waitfile:"$G/pend" check:512M
EOS
SCRIPT="/bin/sh $G/p.sh & $PROBE ctx evcreate waitfile:$G/q call:streamquery waitfile:$G/qend; wait"
api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"$SCRIPT\"],\"gpu\":1,\"class\":\"interactive\",\"queue\":\"lab\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0' && logs $A | grep -q '^evcreate rc=0' && [ -s $G/ppid ]"
ok $? "job A: P holds 512 MiB with its pattern, Q a context and an event"
P=$(cat "$G/ppid")
kill -STOP "$P"; ok $? "P ($P) is stopped: a checkpoint of it waits"
wait_for '[ "$(step $A)" = suspend ]'; ok $? "A, idle, is being reclaimed: its checkpoint is under way"
SPATH=$(find "$TD/data" -path "*/$A/slice" | head -n 1)
[ -f "$SPATH" ]; ok $? "A's slice file: $SPATH"
touch "$G/q"
wait_for "$SLICE $SPATH idle | grep -q 'wake=1'"
ok $? "Q's stream query, made during the checkpoint, waits at the slice and asks for the restore ($($SLICE "$SPATH" idle))"
logs "$A" | grep -q '^call streamquery'; is $? 1 "... and has not returned"
is "$(step $A)" suspend "the checkpoint is still under way (P stopped)"

kill -CONT "$P"
wait_for "logs $A | grep -q '^call streamquery'"; ok $? "once P goes on, Q's call returns"
logs "$A" | grep -q '^call streamquery rc=0'; ok $? "... with success: $(logs "$A" | grep '^call streamquery')"
grep -q "job $A suspended by tesseld (idle for" "$TD/tesseld.log"; ok $? "A was reclaimed (tesseld's log)"
api GET "/v1/jobs/$A/events"
jq -e '[.events[] | select(.event == "resume" and .who == "tesseld")] | length >= 1' "$TD/out" >/dev/null
ok $? "and resumed by tesseld for Q's call"
touch "$G/pend" "$G/qend"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
logs "$A" | grep -q '^check ok'; ok $? "every byte of P's pattern is back"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
