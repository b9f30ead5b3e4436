#!/bin/sh
# t3243-daemon-rebuild-np-counted.t - a running non-preemptible job stays counted when its
# queue's guarantee is lowered below it (docs/suspend.md, the third review's F3;
# docs/scheduler-queues.md): on one GPU, queue lab (guaranteed 1 GPU) runs an interactive job A
# of the whole GPU; lab's guarantee is lowered to 0.5 GPU, then tesseld restarts (its
# scheduler is built again from the store: A no longer fits lab's guarantee, so libsched
# refuses it as a submission).  A training job B of another queue asking for the GPU stays
# pending, before and after the restart: the GPU is not given twice.
# An interactive job D of lab, pending since before the change and beyond the guarantee at the
# restart, stays pending with libsched's reason (GuaranteeLimit), and is weighed again when the
# guarantee is raised, without another restart: A's end then lets D start (within the guarantee
# again, it comes before B), and D's lets B start.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
ARGS="--fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs"
td_setup
# shellcheck disable=SC2086
td_start $ARGS
state() { api GET "/v1/jobs/$1" && jget .state; }

api POST /v1/queues '{"name":"lab","guarantee":{"gpu":1}}'
is "$CODE" 201 "queue lab, guaranteed 1 GPU"
api POST /v1/queues '{"name":"other"}'
is "$CODE" 201 "queue other, no guarantee"
api POST /v1/jobs '{"argv":["sleep","300"],"gpu":1,"class":"interactive","queue":"lab"}'
A=$(jget .id)
wait_for '[ "$(state $A)" = running ]'; ok $? "interactive job A runs on the whole GPU"

api POST /v1/jobs '{"argv":["sleep","300"],"gpu":1,"class":"interactive","queue":"lab"}'
D=$(jget .id)
is "$CODE $(jget .state)" "201 pending" "interactive job D of lab waits for the GPU"

api PATCH /v1/queues/lab '{"guarantee":{"gpu":0.5}}'
is "$CODE $(jget .guarantee.gpu)" "200 0.5" "lab's guarantee lowered to 0.5 GPU below A"
api POST /v1/jobs '{"argv":["sleep","300"],"gpu":1,"queue":"other"}'
B=$(jget .id)
# Several of tesseld's passes (a job submitted after B, with nothing to wait for, ends).
api POST /v1/jobs '{"argv":["true"],"queue":"other"}'
C=$(jget .id)
wait_for '[ "$(state $C)" = succeeded ]'; ok $? "a CPU job submitted after B ran to its end"
is "$(state $B)" pending "training job B of queue other stays pending (A holds the GPU)"

td_stop; ok $? "tesseld stops (SIGTERM)"
# shellcheck disable=SC2086
td_start $ARGS
is "$(state $A)" running "after the restart A still runs"
api POST /v1/jobs '{"argv":["true"],"queue":"other"}'
C=$(jget .id)
wait_for '[ "$(state $C)" = succeeded ]'; ok $? "a CPU job submitted after the restart ran to its end"
is "$(state $B)" pending "B is still pending: A, beyond lab's guarantee, is counted (the GPU is not given twice)"
grep -q "job $A: .*not counted" "$TD/tesseld.log"
is $? 1 "tesseld's log says nothing of A not being counted"
api GET "/v1/jobs/$D"
is "$(jget .state)" pending "D, beyond lab's lowered guarantee, stays pending after the restart"
wait_for "api GET /v1/jobs/$D && jget .reason | grep -q \"^GuaranteeLimit: .*queue 'lab''s guarantee\""
ok $? "... and says why: $(jget .reason)"
api PATCH /v1/queues/lab '{"guarantee":{"gpu":1}}'
is "$CODE" 200 "lab's guarantee raised to 1 GPU again"
wait_for "api GET /v1/jobs/$D && jget .reason | grep -q 'guarantee gpu=1 '"
ok $? "D is weighed again under the new guarantee, without a restart: $(jget .reason)"

api POST "/v1/jobs/$A/cancel"
is "$CODE" 200 "A cancelled"
wait_for '[ "$(state $D)" = running ]'; ok $? "then D, within lab's guarantee again, runs on the GPU"
is "$(state $B)" pending "B waits for it"
api POST "/v1/jobs/$D/cancel"
wait_for '[ "$(state $B)" = running ]'; ok $? "D cancelled: B runs on the GPU"
api POST "/v1/jobs/$B/cancel"
td_stop
is "$?" 0 "tesseld stops cleanly"
done_testing
