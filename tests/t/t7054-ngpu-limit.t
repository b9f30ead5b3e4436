#!/bin/sh
# t7054-ngpu-limit.t - a queue limit in normal GPU units holds on tesseld (issue 22, item 4;
# docs/scheduler-queues.md, "Normalised GPUs"): with T4s at speed 0.5 a queue limited to
# ngpu 0.5 runs one whole-T4 job and the next waits with QueueLimit on ngpu; usage.ngpu says
# 0.5; when an admin lowers the speed to 0.25 the scheduler is rebuilt and the second job
# starts (0.25 + 0.25); back at speed 1 a whole-T4 job (ngpu 1) can never fit the limit and is
# refused at submission; a queue without an ngpu limit is not bounded by the speeds.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"

td_setup
td_start --fake-gpus 3xT4:16G --no-cgroups --allow-root-jobs
api PUT "/v1/gpu-models/Fake%20T4" '{"speed":0.5}'
is "$CODE $(jget .speed)" "200 0.5" "the T4s' speed is 0.5"
api POST /v1/queues '{"name":"small","limit":{"ngpu":0.5}}'
is "$CODE" 201 "queue small: limit ngpu 0.5"
submit() {
    api POST /v1/jobs "{\"argv\":[\"sleep\",\"300\"],\"gpu\":1,\"queue\":\"$1\"}"
    jget .id
}
J1=$(submit small)
wait_for '[ "$(job_state "$J1")" = running ]'; ok $? "job $J1 (one T4 = 0.5 ngpu) runs"
J2=$(submit small)
reason() {
    api GET "/v1/jobs/$1"
    jget .reason
}
wait_for '[ "$(reason "$J2")" != null ]'
is "$(job_state "$J2") | $(reason "$J2")" \
    "pending | QueueLimit: queue 'small' would exceed its limit ngpu=0.5 (uses 0.5, job asks 0.5)" \
    "job $J2 waits: QueueLimit on ngpu, with the figures"
api GET /v1/queues/small
is "$(jget .usage.ngpu) $(jget .usage.gpu) $(jget .running) $(jget .pending)" "0.5 1 1 1" \
    "queue small uses 0.5 ngpu (1 GPU), 1 running, 1 pending"

api PUT "/v1/gpu-models/Fake%20T4" '{"speed":0.25}'
is "$CODE" 200 "an admin lowers the T4s' speed to 0.25"
wait_for '[ "$(job_state "$J2")" = running ]'; ok $? "the scheduler is rebuilt: job $J2 starts"
is "$(job_state "$J1")" running "job $J1 kept running through the rebuild"
api GET /v1/queues/small
is "$(jget .usage.ngpu) $(jget .usage.gpu)" "0.5 2" "queue small: 0.5 ngpu for 2 GPUs"

api DELETE "/v1/gpu-models/Fake%20T4"
is "$CODE $(jget .speed)" "200 1" "the speed is reset: 1"
api POST /v1/jobs '{"argv":["true"],"gpu":1,"queue":"small"}'
is "$CODE" 422 "a whole-T4 job (ngpu 1) in a queue limited to 0.5 is refused at submission"
jget .error.message | grep -q "ngpu=0.5"; ok $? "... and the message names the ngpu limit"
api POST /v1/jobs '{"argv":["sleep","300"],"gpu":0.5,"queue":"small"}'
J3=$(jget .id)
wait_for '[ "$(reason "$J3")" != null ]'
reason "$J3" | grep -q "^QueueLimit: queue 'small' would exceed its limit ngpu=0.5"
ok $? "a half-T4 job waits: the two running jobs now count 1 each (2 in all)"

api POST /v1/queues '{"name":"free"}'
J4=$(submit free)
wait_for '[ "$(job_state "$J4")" = running ]'; ok $? "a queue without an ngpu limit runs its job"
td_stop; ok $? "tesseld stops cleanly"
done_testing
