#!/bin/sh
# t3216-daemon-psusp-noapi.t - preemption by suspension on a driver without the checkpoint API
# (TESSEL_FAKE_CHECKPOINT=0; docs/suspend.md, "Preemption by suspension"): a training job's
# default (preemptible suspend) cannot give its GPU memory back there, so the victim is killed
# and requeued as before, tesseld's log saying why; the preemptor runs, and the victim runs
# again after it (its pattern written anew by its second attempt).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
export TESSEL_FAKE_CHECKPOINT=0 # this driver has no checkpoint API
ARGS="$ARGS --min-runtime 0"
ckpt_start

api POST /v1/queues '{"name":"prod","guarantee_gpu_milli":1000}'
api POST /v1/queues '{"name":"scratch","guarantee_gpu_milli":0}'
is "$CODE" 201 "queues prod (guaranteed the GPU) and scratch (nothing)"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/a\",\"check:1G\"],\"gpu\":1,\"queue\":\"scratch\",$ENV}"
A=$(jget .id)
is "$(jget .preemptible)" suspend "job A (scratch, training) is preemptible by suspension by default"
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "A holds 1 GiB with its pattern written"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:3G\",\"pattern:3G\",\"check:3G\",\"waitfile:$G/p\"],\"gpu\":1,\"queue\":\"prod\",$ENV}"
P=$(jget .id)
wait_for "logs $P | grep -q '^check ok'"; ok $? "prod's job P gets the GPU and uses 3 GiB of it"
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .preemptions) $(jget .suspended_for)" "pending 1 null" \
    "A was killed and requeued, not suspended"
grep -q "job $A preempted for job $P (suspension failed, requeued instead: the driver has no checkpoint API)" \
    "$TD/tesseld.log"
ok $? "tesseld's log says the suspension became a requeue, and why"
api GET "/v1/jobs/$A/events"
jq -e '[.events[].event] | index("suspend") == null and index("requeue") != null' "$TD/out" >/dev/null
ok $? "A's history has a requeue and no suspend"

touch "$G/p"
wait_for '[ "$(job_state $P)" = succeeded ]'; ok $? "P ends"
wait_for '[ "$(job_state $A)" = running ]'; ok $? "A runs again"
wait_for "[ \$(logs $A | grep -c '^pattern rc=0') -ge 2 ]"; ok $? "its second attempt writes its pattern anew"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "A ends"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
