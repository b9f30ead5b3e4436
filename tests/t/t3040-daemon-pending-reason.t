#!/bin/sh
# t3040-daemon-pending-reason.t - why a pending job waits, through the API: "reason_code" and
# "reason" of each kind libsched gives (QueueLimit, GuaranteeLimit, Resources, Priority,
# Guarantee, Preempting; Reservation needs a job pending 15 minutes and is libsched's
# test_wait), in GET /v1/jobs/ID and GET /v1/jobs; cleared once the job runs; a job its
# queue's limit can never hold refused at submission (422, one line), while a queue closed
# with a limit of 0 takes jobs that wait.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"

td_setup
# --min-runtime 0: a job may be preempted as soon as it runs (libsched's default is 60 s).
td_start --fake-gpus 2xT4:16G --no-cgroups --min-runtime 0 || missing "tesseld did not start"
G="$TD/go"
mkdir -p "$G"
# held NAME GPU [QUEUE [CLASS [PRIORITY]]] -> id: runs until the test creates $G/NAME; a
# SIGTERM (preemption) only leaves a mark, so a victim stays until SIGKILL.
held() {
    api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"trap 'touch $G/$1.term' TERM; while [ ! -e $G/$1 ]; do sleep 0.05; done\"],\"gpu\":$2,\"queue\":\"${3:-default}\",\"class\":\"${4:-training}\",\"priority\":${5:-0},\"name\":\"$1\"}"
    jget .id
}
# code_of ID -> reason_code (the last answer is the job)
code_of() {
    api GET "/v1/jobs/$1"
    jget .reason_code
}

# --- QueueLimit, and the refusal of a job the limit can never hold ---
api POST /v1/queues '{"name":"vision","limit":{"gpu":0.5}}'
is "$CODE" "201" "queue vision is limited to half a GPU"
V1=$(held v1 0.5 vision)
wait_for '[ "$(job_state $V1)" = running ]'
ok $? "vision's first half-GPU job runs"
V2=$(held v2 0.5 vision)
wait_for '[ "$(code_of $V2)" = QueueLimit ]'
ok $? "the second waits with reason_code QueueLimit"
is "$(jget .reason)" "QueueLimit: queue 'vision' would exceed its limit gpu=0.5 (uses 0.5, job asks 0.5)" \
    "its reason gives the limit, the usage and the ask"
api GET "/v1/jobs?state=active"
is "$(jget "[.jobs[] | select(.id == $V2) | .reason_code] | .[0]")" "QueueLimit" \
    "GET /v1/jobs carries reason_code too"
is "$(jget "[.jobs[] | select(.id == $V1) | .reason_code] | .[0]")" "null" \
    "a running job has no reason_code"

api POST /v1/jobs '{"argv":["true"],"gpu":1,"queue":"vision"}'
is "$CODE $(jget .error.code)" "422 unsatisfiable" "a whole GPU in a queue limited to half: 422"
is "$(jget .error.message)" \
    "this job can never run: QueueLimit: the job asks gpu=1, above queue 'vision''s limit gpu=0.5" \
    "the message names the queue and its limit"
api POST /v1/queues '{"name":"dept","limit":{"gpu":1}}'
api POST /v1/queues '{"name":"proj","parent":"dept"}'
is "$CODE" "201" "a project under a department limited to one GPU"
api POST /v1/jobs '{"argv":["true"],"gpus":2,"queue":"proj"}'
is "$CODE $(jget .error.message)" \
    "422 this job can never run: QueueLimit: the job asks gpu=2, above queue 'dept''s limit gpu=1" \
    "an ancestor's limit refuses too, naming the ancestor"
api GET "/v1/jobs?state=active"
is "$(jget '.jobs | length')" "2" "nothing refused was stored"
# A limit of 0 closes a queue for now (a partition that is down): accepted, and it waits.
api POST /v1/queues '{"name":"closed","limit":{"gpu":0}}'
api POST /v1/jobs '{"argv":["true"],"gpu":0.5,"queue":"closed"}'
H=$(jget .id)
is "$CODE" "201" "a job of a queue closed with a limit of 0 is accepted"
wait_for '[ "$(code_of $H)" = QueueLimit ]'
ok $? "and waits: QueueLimit"
is "$(jget .reason)" "QueueLimit: queue 'closed' is closed (limit gpu=0): its jobs wait until an admin raises it" \
    "its reason says the queue is closed"
api POST "/v1/jobs/$H/cancel"

touch "$G/v1"
wait_for '[ "$(job_state $V2)" = running ]'
ok $? "the waiting job runs once the first ends"
is "$(jget .reason_code) $(jget .reason)" "null null" "and has no reason any more"
touch "$G/v2"

# --- GuaranteeLimit ---
api POST /v1/queues '{"name":"nlp","guarantee":{"gpu":0.5}}'
I1=$(held i1 0.5 nlp interactive)
wait_for '[ "$(job_state $I1)" = running ]'
ok $? "an interactive job within nlp's guarantee runs"
I2=$(held i2 0.5 nlp interactive)
wait_for '[ "$(code_of $I2)" = GuaranteeLimit ]'
ok $? "a second one waits: GuaranteeLimit"
is "$(jget .reason)" \
    "GuaranteeLimit: interactive and inference jobs of queue 'nlp' must fit within its guarantee gpu=0.5 (they use 0.5, job asks 0.5)" \
    "its reason gives the guarantee and what such jobs use"
touch "$G/i1" "$G/i2"
wait_for '[ "$(job_state $I2)" = succeeded ]'
ok $? "it runs once the first has ended"

# --- Resources and Priority ---
A=$(held a 0.7)
B=$(held b 0.7)
wait_for '[ "$(job_state $A)" = running ] && [ "$(job_state $B)" = running ]'
ok $? "two 0.7 jobs take a GPU each"
C=$(held c 0.5)
D=$(held d 0.5)
wait_for '[ "$(code_of $D)" = Priority ]'
ok $? "the later of two half-GPU jobs: Priority"
is "$(jget .reason)" \
    "Priority: behind job $C of queue 'default' (no GPU has 0.5 free with 8.00 GiB (best: gpu0 has 0.3 and 4.80 GiB free))" \
    "behind which job, and what it lacks"
is "$(code_of $C)" "Resources" "the first: Resources"
is "$(jget .reason)" \
    "Resources: no GPU has 0.5 free with 8.00 GiB (best: gpu0 has 0.3 and 4.80 GiB free)" \
    "which GPU comes closest, with its free share and memory"
touch "$G/a"
wait_for '[ "$(job_state $C)" = running ] && [ "$(job_state $D)" = running ]'
ok $? "once a GPU frees, both halves run"
touch "$G/b" "$G/c" "$G/d"
wait_for '[ "$(job_state $D)" = succeeded ] && [ "$(job_state $B)" = succeeded ]'
ok $? "the GPUs are free again"

# --- Guarantee (reclaim) and Preempting ---
api POST /v1/queues '{"name":"prod","guarantee":{"gpu":1}}'
api POST /v1/queues '{"name":"scratch","guarantee":{"gpu":0}}'
S1=$(held s1 1 scratch)
S2=$(held s2 1 scratch)
wait_for '[ "$(job_state $S1)" = running ] && [ "$(job_state $S2)" = running ]'
ok $? "scratch borrows both GPUs"
P=$(held p 1 prod)
wait_for '[ "$(code_of $P)" = Guarantee ]'
ok $? "prod, owed its guarantee, waits for a victim: Guarantee"
is "$(jget .reason)" \
    "Guarantee: waiting for queue 'prod' to get back its guarantee (reclaiming from job $S2)" \
    "its reason names the job being stopped"
S3=$(held s3 1 scratch training 5)
wait_for '[ "$(code_of $S3)" = Preempting ]'
ok $? "a higher-priority job of scratch preempts its own: Preempting"
is "$(jget .reason)" "Preempting: waiting for lower-priority job $S1 of queue 'scratch' to stop" \
    "its reason names the job being stopped"
touch "$G/s1" "$G/s2" "$G/s3" "$G/p"
wait_for '[ "$(job_state $P)" = succeeded ] && [ "$(job_state $S3)" = succeeded ]'
ok $? "everything ends"

td_stop
ok $? "tesseld stops cleanly"
done_testing
