#!/bin/sh
# t3249-daemon-idle-share-launch.t - a launch of a job with a compute share made while its idle
# reclamation's checkpoint is under way (docs/suspend.md, "The next CUDA call"): it asks for the
# restore at the job's slice, before its compute share reads any event of the driver, and goes
# on once the job is restored for it, by its own call.  Job A (half a GPU: TESSEL_CUDA_CORE_LIMIT
# 50, shared), in a queue whose idle time is 2 s, has two processes under the interposer: P holds
# 512 MiB with a pattern; Q has launched kernels (measured through events by its compute share)
# and is idle.  P is stopped (SIGSTOP) so that the driver's lock waits for it: the reclamation's
# checkpoint stays open.  Meanwhile Q launches again: the launch sets the slice's wake word and
# has not returned.  Once P goes on, the reclamation is recorded, tesseld restores the job for
# Q's launch, which returns with success, and every byte of P's pattern is back.
#
# tesseld sets the reclaim word before the suspend word (suspend_idle), and a launch held at the
# suspend gate looks at the reclaim word before its first driver call (compute.c,
# suspended_wait), so no launch can find the gate closed by a reclamation without asking.
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
SCRIPT="echo core=\$TESSEL_CUDA_CORE_LIMIT mode=\$TESSEL_CUDA_CORE_MODE; /bin/sh $G/p.sh & $PROBE ctx modload launch:k launch:k waitfile:$G/q launch:k waitfile:$G/qend; wait"
api POST /v1/jobs "{\"argv\":[\"/bin/sh\",\"-c\",\"$SCRIPT\"],\"gpu\":0.5,\"class\":\"interactive\",\"queue\":\"lab\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0' && [ \$(logs $A | grep -c '^launch k rc=0') = 2 ] && [ -s $G/ppid ]"
ok $? "job A: P holds 512 MiB with its pattern, Q launched two kernels"
logs "$A" | grep -q '^core=50 mode=shared'; ok $? "A has a compute share: $(logs "$A" | grep '^core=')"
P=$(cat "$G/ppid")
kill -STOP "$P"; ok $? "P ($P) is stopped: a checkpoint of it waits"
wait_for '[ "$(step $A)" = suspend ]'; ok $? "A, idle, is being reclaimed: its checkpoint is under way"
SPATH=$(find "$TD/data" -path "*/$A/slice" | head -n 1)
[ -f "$SPATH" ]; ok $? "A's slice file: $SPATH"
"$SLICE" "$SPATH" idle | grep -q 'reclaim=1'; ok $? "its reclaim word is set ($("$SLICE" "$SPATH" idle))"
touch "$G/q"
wait_for "$SLICE $SPATH idle | grep -q 'wake=1'"
ok $? "Q's launch, made during the checkpoint, asks for the restore at the slice ($($SLICE "$SPATH" idle))"
is "$(logs "$A" | grep -c '^launch k')" 2 "... and has not returned"
is "$(step $A)" suspend "the checkpoint is still under way (P stopped)"

kill -CONT "$P"
wait_for "[ \$(logs $A | grep -c '^launch k') = 3 ]"; ok $? "once P goes on, Q's launch returns"
is "$(logs "$A" | grep -c '^launch k rc=0')" 3 "... with success"
grep -q "job $A suspended by tesseld (idle for" "$TD/tesseld.log"; ok $? "A was reclaimed (tesseld's log)"
api GET "/v1/jobs/$A/events"
jq -e '[.events[] | select(.event == "resume" and .who == "tesseld")] | length >= 1' "$TD/out" >/dev/null
ok $? "and resumed by tesseld for Q's launch (no person's resume)"
touch "$G/pend" "$G/qend"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"
logs "$A" | grep -q '^check ok'; ok $? "every byte of P's pattern is back"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
