#!/bin/sh
# t3035-daemon-queue-default-reclaim.t - the default queue is reclaimable like any other queue
# (issue 14): given a guarantee with `tessel queues set default`, a job of the default queue gets
# its guaranteed GPU back from a queue that borrowed it (a queue with no guarantee governs
# nothing, so all it runs is borrowed).  The other way round too: a queue owed its guarantee
# reclaims the GPU from the default queue, which out of the box governs nothing.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tessel" ] || missing "tessel not built"

td_setup
# --min-runtime 0: a job may be preempted as soon as it runs (libsched's default is 60 s).
td_start --fake-gpus 1xT4:16G --no-cgroups --min-runtime 0 || missing "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
spin='while :; do sleep 0.05; done'

# --- the default queue gets its guarantee back from a borrower ----------------------------
tcli queues add research
is "$RC" "0" "queues add research (no guarantee: it governs nothing)"
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"$spin\"],\"gpu\":1,\"queue\":\"research\"}"
R=$(jget .id)
wait_for '[ "$(job_state $R)" = running ]'
ok $? "a training job of research takes the only GPU"

tcli queues set default --guarantee gpu=1
is "$RC" "0" "queues set default --guarantee gpu=1"
api GET /v1/queues/default
is "$CODE $(jget .guarantee.gpu)" "200 1" "the default queue is guaranteed one GPU"

api POST /v1/jobs '{"argv":["sh","-c","echo default ran"],"gpu":1}'
D=$(jget .id)
is "$(jget .queue)" "default" "a job without a queue goes to the default queue"
wait_for '[ "$(job_state $D)" = succeeded ]'
ok $? "the default queue's job gets its guaranteed GPU back and runs"
api GET "/v1/jobs/$R"
is "$(jget .preemptions)" "1" "the borrower was preempted once"
wait_for '[ "$(job_state $R)" = running ]'
ok $? "the requeued borrower runs again once the GPU is free"

# --- and the default queue is reclaimed when another queue is owed ------------------------
tcli queues set default --guarantee none
is "$RC" "0" "queues set default --guarantee none (back to governing nothing)"
tcli queues set research --guarantee gpu=1
is "$RC" "0" "queues set research --guarantee gpu=1"
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"$spin\"],\"gpu\":1}"
D2=$(jget .id)
api POST /v1/jobs/$R/cancel
wait_for '[ "$(job_state $D2)" = running ]'
ok $? "a default-queue job takes the GPU research left"
api POST /v1/jobs '{"argv":["sh","-c","echo research ran"],"gpu":1,"queue":"research"}'
R2=$(jget .id)
wait_for '[ "$(job_state $R2)" = succeeded ]'
ok $? "research, owed its guarantee, reclaims the GPU from the default queue"
api GET "/v1/jobs/$D2"
is "$(jget .preemptions)" "1" "the default queue's job was the one preempted"
tcli queues --json
is "$(jq -r '.queues[] | select(.name == "research") | .guarantee_satisfied' "$TD/o")" "true" \
    "tessel queues: research's guarantee is held"

api POST /v1/jobs/$D2/cancel
wait_for '[ "$(job_state $D2)" = cancelled ]'
ok $? "the default queue's job is cancelled (nothing left running)"
td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
