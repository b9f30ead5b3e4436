#!/bin/sh
# t3007-daemon-preempt-requeue.t - preemption carries out libsched's plan with requeue: queue a
# (guaranteed 1 GPU) borrows all 4 GPUs while b (guaranteed 3) is idle; b submits 3 one-GPU
# jobs; exactly 3 of a's jobs, the youngest, are stopped and go back to pending (same id,
# preemptions 1, a marker line in their log naming the job and queue, a reason to wait); b's
# jobs run; when b's jobs end, a's requeued jobs run again and their log continues.  Queue
# usage and "guarantee_satisfied" follow along.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"

td_setup
# --min-runtime 0: a job may be preempted as soon as it runs (libsched's default is 60 s).
td_start --fake-gpus 4xT4:16G --no-cgroups --min-runtime 0 ||
    missing "tesseld did not start"
G="$TD/go"
mkdir -p "$G"
# A one-GPU job of queue $1 that prints a line per attempt and runs until the go-file $2 exists.
held() {
    api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"echo attempt of $2; while [ ! -e $G/$2 ]; do sleep 0.05; done; echo done $2\"],\"gpu\":1,\"queue\":\"$1\",\"name\":\"$2\"}"
    jget .id
}
states() { # states ID... -> "running pending ..."
    _s=""
    for _j in "$@"; do _s="$_s $(job_state "$_j")"; done
    echo "${_s# }"
}

api POST /v1/queues '{"name":"a","guarantee":{"gpu":1}}'
is "$CODE $(jget .guarantee.gpu) $(jget .limit.gpu)" "201 1 null" "queue a is guaranteed 1 GPU"
api POST /v1/queues '{"name":"b","guarantee":{"gpu":3}}'
is "$CODE $(jget .guarantee.gpu)" "201 3" "queue b is guaranteed 3 GPUs"

A1=$(held a a1)
A2=$(held a a2)
A3=$(held a a3)
A4=$(held a a4)
wait_for '[ "$(states $A1 $A2 $A3 $A4)" = "running running running running" ]'
ok $? "with b idle, a borrows all 4 GPUs (4 whole-GPU jobs run)"
api GET /v1/queues/a
is "$(jget .usage.gpu) $(jget .running) $(jget .gpu_milli)" "4 4 4000" \
    "queue a's usage: 4 GPUs held by 4 running jobs"
wait_for '[ "$(jget .guarantee_satisfied)" = true ] || { api GET /v1/queues/a; false; }'
ok $? "queue a holds its guarantee"
wait_for '[ -s "$TD/data/jobs/$A4/stdout" ]'

B1=$(held b b1)
B2=$(held b b2)
B3=$(held b b3)
wait_for '[ "$(states $B1 $B2 $B3)" = "running running running" ]'
ok $? "b submits 3 one-GPU jobs: they run"
is "$(states $A1 $A2 $A3 $A4)" "running pending pending pending" \
    "exactly 3 of a's jobs, the youngest, were preempted and are pending again"
api GET "/v1/jobs/$A4"
is "$(jget .id) $(jget .preemptions) $(jget .started_at) $(jget .placement)" "$A4 1 null []" \
    "a requeued job keeps its id, counts 1 preemption, holds nothing"
# Pending again, its reason says why it waits now (the preemption is in its count and its
# log's marker line): a's jobs wait behind each other for a GPU.
case "$(jget .reason_code) $(jget .reason)" in
"Priority Priority: behind job"*" of queue 'a' "* | "Resources Resources: "*) r=0 ;;
*) r=1 ;;
esac
ok $r "its reason says why it waits now"
diag "reason: $(jget .reason)"
api GET "/v1/jobs/$A1"
is "$(jget .state) $(jget .preemptions)" "running 0" "a's oldest job was not touched"
api GET "/v1/jobs/$A4/logs"
grep -q "^\[tessel\] job $A4 preempted to make room for job [0-9]* of queue 'b'; requeued (preemption 1)$" "$TD/out"
ok $? "the log of a requeued job has a marker line"
api GET /v1/queues/a
is "$(jget .usage.gpu) $(jget .running) $(jget .pending)" "1 1 3" \
    "queue a now holds 1 GPU (its guarantee), 3 jobs pending"
api GET /v1/queues/b
is "$(jget .usage.gpu) $(jget .running) $(jget .pending)" "3 3 0" "queue b holds its 3 GPUs"
wait_for '[ "$(jget .guarantee_satisfied)" = true ] || { api GET /v1/queues/b; false; }'
ok $? "queue b holds its guarantee"
api GET /v1/gpus
is "$(jget '[.gpus[].allocated_milli] | add')" "4000" "all 4 GPUs are allocated, none twice"

# b's jobs end: a's requeued jobs run again (a new attempt each, appended to the same log).
touch "$G/b1" "$G/b2" "$G/b3"
wait_for '[ "$(states $B1 $B2 $B3)" = "succeeded succeeded succeeded" ]'
ok $? "b's jobs end"
wait_for '[ "$(states $A1 $A2 $A3 $A4)" = "running running running running" ]'
ok $? "a's requeued jobs run again when b's GPUs free"
api GET "/v1/jobs/$A3"
is "$(jget .preemptions) $(jget .reason)" "1 null" "a restarted job keeps its count"
touch "$G/a1" "$G/a2" "$G/a3" "$G/a4"
wait_for '[ "$(states $A1 $A2 $A3 $A4)" = "succeeded succeeded succeeded succeeded" ]'
ok $? "all of a's jobs then succeed"
api GET "/v1/jobs/$A4/logs"
is "$(grep -c "^attempt of a4$" "$TD/out") $(grep -c "^done a4$" "$TD/out")" "2 1" \
    "the log holds both attempts (the first stopped, the second done)"
api GET /v1/queues/a
is "$(jget .usage.gpu) $(jget .running) $(jget .pending)" "0 0 0" "nothing is held afterwards"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
