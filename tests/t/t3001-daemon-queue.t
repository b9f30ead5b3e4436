#!/bin/sh
# t3001-daemon-queue.t - jobs queue when the GPUs are full and start when room frees; the
# interim order (queue priority, job priority, submission) and backfill; a queue's GPU cap;
# nested queues: an ancestor's limit, subtree usage, a live edit, restored after a restart.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"

td_setup
td_start --fake-gpus 2xT4:16G --no-cgroups || missing "tesseld did not start"
G="$TD/go"
mkdir -p "$G"
# A job that runs until the test creates its go-file.
held() { # held NAME GPU [PRIORITY] -> id
    api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $G/$1 ]; do sleep 0.05; done\"],\"gpu\":$2,\"priority\":${3:-0},\"name\":\"$1\"}"
    jget .id
}

api GET /v1/gpus
is "$(jget '[.gpus[] | (.nvlink_peers | map(tostring) | join(","))] | join(";")')" "1;0" \
    "NVML discovery: the two GPUs of one spec entry are NVLink peers"
is "$(jget '[.gpus[] | .sm_count > 0 and (.uuid | startswith("GPU-"))] | all')" "true" \
    "every GPU has an SM count and a UUID"

A=$(held a 1)
B=$(held b 0.5)
C=$(held c 0.5)
wait_for '[ "$(job_state $A)" = running ] && [ "$(job_state $B)" = running ] && [ "$(job_state $C)" = running ]'
ok $? "three jobs fill two GPUs (1 + 0.5 + 0.5)"
api GET /v1/gpus
is "$(jget '[.gpus[].allocated_milli] | add')" "2000" "2000 milli-GPU are allocated"
api GET "/v1/jobs/$B"
PB=$(jget '.placement[0].gpu')
api GET "/v1/jobs/$C"
is "$(jget '.placement[0].gpu')" "$PB" "the two halves share one GPU"

D=$(held d 0.5)
E=$(held e 1 5)
F=$(held f 0.25 -5)
wait_for '[ "$(job_state $F)" = pending ] && [ "$(jget .reason)" != null ]'
is "$(job_state $D) $(job_state $E) $(job_state $F)" "pending pending pending" \
    "with the GPUs full, new jobs queue"
api GET "/v1/jobs/$D"
diag "reason of a waiting job: $(jget .reason)"
case "$(jget .reason_code) $(jget .reason)" in "Resources Resources: "* | "Priority Priority: "*) r=0 ;; *) r=1 ;; esac
ok $r "a waiting job says why"

# B ends: half a GPU frees.  E (priority 5) is first but needs a whole GPU; D (0.5) fits and
# is before F (priority -5).
touch "$G/b"
wait_for '[ "$(job_state $B)" = succeeded ] && [ "$(job_state $D)" = running ]'
ok $? "when half a GPU frees, the next job that fits starts"
is "$(job_state $E) $(job_state $F)" "pending pending" "the others still wait"

# A ends: a whole GPU frees; E (priority 5) goes before F.
touch "$G/a"
wait_for '[ "$(job_state $E)" = running ]'
ok $? "the higher-priority whole-GPU job starts when a GPU frees"
is "$(job_state $F)" "pending" "the low-priority job still waits"
touch "$G/c"
wait_for '[ "$(job_state $F)" = running ]'
ok $? "the last job starts when room frees"
touch "$G/d" "$G/e" "$G/f"
wait_for '[ "$(job_state $F)" = succeeded ] && [ "$(job_state $E)" = succeeded ]'
ok $? "all jobs end"
api GET /v1/gpus
is "$(jget '[.gpus[].allocated_milli] | add')" "0" "nothing is allocated afterwards"

# A queue capped at 500 milli-GPU runs one half-GPU job at a time.
api POST /v1/queues '{"name":"small","max_gpu_milli":500}'
is "$CODE" "201" "a queue capped at 0.5 GPU"
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $G/q1 ]; do sleep 0.05; done\"],\"gpu\":0.5,\"queue\":\"small\"}"
Q1=$(jget .id)
api POST /v1/jobs "{\"argv\":[\"true\"],\"gpu\":0.5,\"queue\":\"small\"}"
Q2=$(jget .id)
# A job of the default queue submitted after Q2: once it has run, the scheduler has decided
# about Q2 too.
api POST /v1/jobs '{"argv":["true"],"gpu":0.5}'
Q3=$(jget .id)
wait_for '[ "$(job_state $Q1)" = running ] && [ "$(job_state $Q3)" = succeeded ]'
is "$(job_state $Q2)" "pending" "the second job of the capped queue waits although GPUs are free"
is "$(jget .reason_code) $(jget .reason)" \
    "QueueLimit QueueLimit: queue 'small' would exceed its limit gpu=0.5 (uses 0.5, job asks 0.5)" \
    "and says why"
touch "$G/q1"
wait_for '[ "$(job_state $Q2)" = succeeded ]'
ok $? "it runs once the first has ended"

# Nested queues: a department limited to half a GPU over a project.  Limits of ancestors
# hold, usage adds up the subtree, and an edit applies to the running scheduler.
api POST /v1/queues '{"name":"dept","limit":{"gpu":0.5,"mem":"1G"}}'
is "$CODE" "201" "a department limited to half a GPU"
api POST /v1/queues '{"name":"proj","parent":"dept","guarantee":{"gpu":0.25}}'
is "$CODE $(jget .parent)" "201 dept" "a project under it"
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $G/n1 ]; do sleep 0.05; done\"],\"gpu\":0.5,\"queue\":\"proj\",\"mem\":\"256M\"}"
N1=$(jget .id)
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $G/n2 ]; do sleep 0.05; done\"],\"gpu\":0.5,\"queue\":\"proj\"}"
N2=$(jget .id)
api POST /v1/jobs '{"argv":["true"],"gpu":0.5}'
N3=$(jget .id)
wait_for '[ "$(job_state $N1)" = running ] && [ "$(job_state $N3)" = succeeded ]'
is "$(job_state $N2)" "pending" "the project's second job waits: its department is at its limit"
is "$(jget .reason)" "QueueLimit: queue 'dept' would exceed its limit gpu=0.5 (uses 0.5, job asks 0.5)" \
    "and says which queue"
api GET /v1/queues/proj
is "$(jget .usage.gpu) $(jget .usage.gpu_mem) $(jget .usage.mem) $(jget .running) $(jget .pending)" \
    "0.5 8589934592 268435456 1 1" "the project's usage: what its running job holds"
api GET /v1/queues/dept
is "$(jget .usage.gpu) $(jget .running) $(jget .pending) $(jget '.children | join(",")')" \
    "0.5 1 1 proj" "the department's usage is its subtree's"
api PATCH /v1/queues/dept '{"limit":{"gpu":1}}'
is "$CODE $(jget .limit.gpu) $(jget .limit.mem)" "200 1 1073741824" "the admin raises the limit"
wait_for '[ "$(job_state $N2)" = running ]'
ok $? "the waiting job starts without a restart"
touch "$G/n1" "$G/n2"
wait_for '[ "$(job_state $N2)" = succeeded ]'

# Queues are restored on restart.
td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
td_start --fake-gpus 2xT4:16G --no-cgroups
api GET /v1/queues/proj
is "$CODE $(jget .parent) $(jget .guarantee.gpu)" "200 dept 0.25" "after a restart the project is there"
api POST /v1/jobs '{"argv":["true"],"gpu":1,"queue":"proj"}'
N4=$(jget .id)
wait_for '[ "$(job_state $N4)" = succeeded ]'
ok $? "and takes jobs, within its department's limit"
td_stop; ok $? "tesseld stops cleanly again"
done_testing
