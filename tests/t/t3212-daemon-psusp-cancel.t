#!/bin/sh
# t3212-daemon-psusp-cancel.t - a job cancelled while it is suspended by a preemption
# (docs/suspend.md, "Preemption by suspension"): it ends cancelled (by whom), its processes
# gone while checkpointed, nothing of it left on the GPU; the preemptor runs on, untouched, and
# the GPU is free once it ends.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ARGS="$ARGS --min-runtime 0"
ckpt_start

api POST /v1/queues '{"name":"prod","guarantee_gpu_milli":1000}'
api POST /v1/queues '{"name":"scratch","guarantee_gpu_milli":0}'
is "$CODE" 201 "queues prod (guaranteed the GPU) and scratch (nothing)"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:1G\",\"pattern:1G\",\"waitfile:$G/a\",\"check:1G\"],\"gpu\":1,\"queue\":\"scratch\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^pattern rc=0'"; ok $? "job A (scratch) holds 1 GiB"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:2G\",\"pattern:2G\",\"check:2G\",\"waitfile:$G/p\"],\"gpu\":1,\"queue\":\"prod\",$ENV}"
P=$(jget .id)
wait_for '[ "$(job_state $A)" = suspended ]'; ok $? "prod's job P preempts A by suspension"
wait_for "logs $P | grep -q '^check ok'"; ok $? "P runs with 2 GiB of the GPU"

api POST "/v1/jobs/$A/cancel"
is "$CODE" 200 "A is cancelled while suspended for P"
wait_for '[ "$(job_state $A)" = cancelled ]'; ok $? "A ends cancelled"
api GET "/v1/jobs/$A"
is "$(jget .end_cause) $(jget .suspended_for) $(jget .preemptions)" "cancelled null 0" \
    "its end cause is the cancel; no suspension or requeue is left on it"
api GET "/v1/jobs/$A/events"
jq -e '[.events[].event] | index("suspend") != null and last == "killed"' "$TD/out" >/dev/null
ok $? "its history: suspended (for P), then killed by the cancel"
is "$(job_state "$P")" running "P runs on"
touch "$G/p"
wait_for '[ "$(job_state $P)" = succeeded ]'; ok $? "P ends well"
wait_for '[ "$(used)" -lt $MiB ]'; ok $? "nothing is left on the GPU ($(used) bytes used)"
api GET /v1/gpus
is "$(jget '.gpus[0].allocated_milli')" 0 "nothing is held"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
