#!/bin/sh
# t3214-daemon-psusp-stopped.t - a victim that holds its own checkpoint (docs/security.md,
# "Preemption by suspension"): the job's process is stopped (SIGSTOP) when the scheduler picks
# it for a preemption by suspension, so the driver's lock waits for it; past the bound on a
# preemption's checkpoint (--test-psusp-ckpt-ms 2000 here, 120 s by default) tesseld kills and
# requeues it as any victim, the preemptor runs, and the log says why.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ARGS="$ARGS --min-runtime 0 --test-psusp-ckpt-ms 2000"
ckpt_start
probe_pid() { read -r _ _ _jp <"$TD/data/jobs/$1/pid" && echo "$_jp"; }

api POST /v1/queues '{"name":"prod","guarantee_gpu_milli":1000}'
api POST /v1/queues '{"name":"scratch","guarantee_gpu_milli":0}'
is "$CODE" 201 "queues prod (guaranteed the GPU) and scratch (nothing)"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/a\"],\"gpu\":1,\"queue\":\"scratch\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A (scratch) holds 1 GiB"
PA=$(probe_pid $A)
[ -n "$PA" ] && kill -STOP "$PA"; ok $? "A's process ($PA) is stopped: a checkpoint of it will wait"

api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"echo prod ran\"],\"gpu\":1,\"queue\":\"prod\"}"
P=$(jget .id)
wait_for "api GET /v1/jobs/$A && [ \"\$(jget .checkpoint)\" = suspend ]"
ok $? "A is picked for a preemption by suspension: its checkpoint is under way"
wait_for '[ "$(job_state $P)" = succeeded ]'; ok $? "past the bound A is killed instead, and P runs"
wait_for '[ "$(job_state $A)" = pending ] || [ "$(job_state $A)" = running ]'
api GET "/v1/jobs/$A"
is "$(jget .preemptions) $(jget .suspended_for)" "1 null" "A was requeued (a preemption counted), not suspended"
grep -q "job $A preempted for job $P (its suspension's checkpoint took longer than 2 s" "$TD/tesseld.log"
ok $? "the log says why the suspension became a requeue"
api GET "/v1/jobs/$A/events"
jq -e '[.events[].event] | index("suspend") == null' "$TD/out" >/dev/null
ok $? "no suspend in A's history"
api POST "/v1/jobs/$A/cancel"
wait_for '[ "$(job_state $A)" = cancelled ]'

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
