#!/bin/sh
# t3005-daemon-preempt.t - queues with guarantees (libsched's queue layer): a training job
# running beyond its queue's guarantee is preempted when a queue owed capacity needs the GPU;
# submitted with "requeue": false, it ends "preempted" and the owed job starts (requeueing is
# t3007's).  Non-training jobs must fit the guarantee.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"

td_setup
# --min-runtime 0: a job may be preempted as soon as it runs (libsched's default is 60 s).
td_start --fake-gpus 1xT4:16G --no-cgroups --min-runtime 0 ||
    missing "tesseld did not start"
G="$TD/go"
mkdir -p "$G"

api POST /v1/queues '{"name":"prod","guarantee_gpu_milli":1000}'
is "$CODE $(jget .guarantee_gpu_milli)" "201 1000" "queue prod is guaranteed one GPU"
api POST /v1/queues '{"name":"scratch","guarantee_gpu_milli":0,"weight":2}'
is "$CODE $(jget .guarantee_gpu_milli) $(jget .weight)" "201 0 2" "queue scratch has no guarantee"
api POST /v1/queues '{"name":"bad","guarantee_gpu_milli":2000,"max_gpu_milli":1000}'
is "$CODE $(jget .error.field)" "400 guarantee.gpu" "a guarantee above the cap: 400, naming guarantee.gpu"

api POST /v1/jobs '{"argv":["sleep","300"],"gpu":1,"queue":"scratch","class":"interactive"}'
is "$CODE $(jget .error.code)" "422 unsatisfiable" \
    "an interactive job beyond its queue's guarantee can never run: 422"

api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $G/s ]; do sleep 0.05; done\"],\"gpu\":1,\"queue\":\"scratch\",\"requeue\":false}"
S=$(jget .id)
is "$(jget .requeue) $(jget .preemptions)" "false 0" "the job says it is not to be requeued"
wait_for '[ "$(job_state $S)" = running ]'
ok $? "a training job of scratch takes the idle GPU beyond its guarantee"

api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"echo prod ran\"],\"gpu\":1,\"queue\":\"prod\"}"
P=$(jget .id)
wait_for '[ "$(job_state $S)" = preempted ]'
ok $? "when prod needs its guaranteed GPU, the scratch job is preempted"
api GET "/v1/jobs/$S"
is "$(jget .reason)" "preempted to make room for job $P of queue 'prod'" \
    "its reason names the job and queue it made room for"
is "$(jget .preemptions)" "1" "its preemption is counted"
is "$(jget .signal)" "15" "it was stopped with SIGTERM"
wait_for '[ "$(job_state $P)" = succeeded ]'
ok $? "the prod job then runs"
api GET "/v1/jobs/$P/logs"
is "$(cat "$TD/out")" "prod ran" "and its output is there"
api GET /v1/gpus
is "$(jget '.gpus[0].allocated_milli')" "0" "nothing is held afterwards"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
