#!/bin/sh
# t3000-daemon-api.t - tesseld's API on loopback with fake GPUs: auth (401/403), users and
# tokens, two users who cannot see or touch each other's jobs, bad input (400/404/405/413/422
# with JSON errors), queues, nodes/GPUs marked simulated, metrics, and a store left consistent.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"

td_setup
# Its API-only users (no system account) submit jobs: as root they would be refused by default
# (t3006 checks that); this test is about the API, so it allows them to run as root.
td_start --fake-gpus 1xRTX4090:24G --no-cgroups --allow-root-jobs || missing "tesseld did not start"

# --- health, auth --------------------------------------------------------------------------
api GET /healthz "" ""
is "$CODE $(jget .status) $(jget .simulated)" "200 ok true" "healthz answers ok, simulated"
is "$(stat -c %a "$TD/data/admin.token")" "600" "admin.token has mode 0600"
api GET /v1/jobs "" ""
is "$CODE $(jget .error.code)" "401 unauthorized" "no token: 401 with a JSON error"
api GET /v1/jobs "" "tsl_0123456789012345678901234567890123456789012345678901234567890123"
is "$CODE $(jget .error.code)" "401 unauthorized" "unknown token: 401"
api GET /v1/jobs "" "garbage"
is "$CODE" "401" "malformed token: 401"
api GET /v1/whoami
is "$CODE $(jget .user) $(jget .role)" "200 admin admin" "the admin token is admin's"
! grep -q "${TD_ADMIN#tsl_}" "$TD"/data/tessel.db*; ok $? "the token itself is not in the store"

# --- users and tokens -----------------------------------------------------------------------
api POST /v1/users '{"name":"alice"}'
is "$CODE $(jget .role)" "201 user" "admin creates user alice"
api POST /v1/users '{"name":"bob","role":"user"}'
is "$CODE" "201" "admin creates user bob"
api POST /v1/users '{"name":"alice"}'
is "$CODE $(jget .error.code)" "409 conflict" "a second alice: 409"
api POST /v1/users '{"name":"Alice!"}'
is "$CODE $(jget .error.field)" "400 name" "a bad user name: 400 naming the field"
api POST /v1/tokens '{"user":"alice","name":"laptop"}'
is "$CODE" "201" "admin creates a token for alice"
ALICE=$(jget .token)
api POST /v1/tokens '{"user":"bob"}'
BOB=$(jget .token)
api GET /v1/whoami "" "$ALICE"
is "$(jget .user) $(jget .role)" "alice user" "alice's token is alice's"
api GET /v1/users "" "$ALICE"
is "$CODE $(jget .error.code)" "403 forbidden" "a user may not list users: 403"
api POST /v1/tokens '{"user":"bob"}' "$ALICE"
is "$CODE" "403" "alice may not create a token for bob"
api POST /v1/queues '{"name":"big"}' "$ALICE"
is "$CODE" "403" "a user may not create queues"
api GET /v1/tokens "" "$ALICE"
is "$CODE $(jget '.tokens | length') $(jget '.tokens[0].user')" "200 1 alice" \
    "alice lists only her own token"
is "$(jget '.tokens[0] | has("token")')" "false" "listed tokens carry no secret"

# --- jobs of two users ------------------------------------------------------------------------
api POST /v1/jobs '{"argv":["sh","-c","echo alice-secret"],"gpu":0.25}' "$ALICE"
is "$CODE $(jget .state) $(jget .user) $(jget .gpu_milli) $(jget .simulated)" \
    "201 pending alice 250 true" "alice submits a 0.25-GPU job"
is "$(jget .gpu_mem)" "6442450944" "its default gpu_mem is exactly a quarter of 24 GiB (6442450944)"
AJ=$(jget .id)
api POST /v1/jobs '{"argv":["sh","-c","exit 3"]}' "$BOB"
is "$CODE" "201" "bob submits a job"
BJ=$(jget .id)
wait_for '[ "$(job_state $AJ)" = succeeded ]'; ok $? "alice's job succeeds"
wait_for '[ "$(job_state $BJ)" = failed ]'; ok $? "bob's job fails"
api GET "/v1/jobs/$BJ"
is "$(jget .exit_code) $(jget .reason)" "3 exited with status 3" "bob's exit status is recorded"
api GET "/v1/jobs/$AJ" "" "$BOB"
is "$CODE $(jget .error.code)" "404 not_found" "bob cannot see alice's job"
api GET "/v1/jobs/$AJ/logs" "" "$BOB"
is "$CODE" "404" "bob cannot read alice's logs"
api POST "/v1/jobs/$AJ/cancel" "" "$BOB"
is "$CODE" "404" "bob cannot cancel alice's job"
api GET "/v1/jobs?state=finished" "" "$BOB"
is "$(jget '[.jobs[].user] | unique | join(",")')" "bob" "bob's list holds only his jobs"
api GET "/v1/jobs?user=alice" "" "$BOB"
is "$CODE" "403" "bob may not filter on alice"
api GET "/v1/jobs/$AJ/logs" "" "$ALICE"
is "$CODE $(cat "$TD/out")" "200 alice-secret" "alice reads her job's output"
api GET "/v1/jobs" ""
is "$(jget '.jobs | length')" "2" "the admin sees both jobs"
api GET "/v1/jobs/$AJ/logs?follow=1" "" "$ALICE"
is "$CODE $(cat "$TD/out")" "200 alice-secret" "following a finished job's log ends"
api POST "/v1/jobs/$AJ/cancel" "" "$ALICE"
is "$CODE $(jget .error.code)" "409 conflict" "cancelling a finished job: 409"

# follow a job from submission to its end: the answer holds everything it wrote
api POST /v1/jobs '{"argv":["sh","-c","echo one; sleep 0.5; echo two >&2; sleep 0.5; echo three"]}' "$ALICE"
FJ=$(jget .id)
api GET "/v1/jobs/$FJ/logs?follow=1" "" "$ALICE"
is "$CODE $(cat "$TD/out" | tr '\n' ' ')" "200 one three " "following stdout from submission to the end"
api GET "/v1/jobs/$FJ/logs?stream=stderr" "" "$ALICE"
is "$(cat "$TD/out")" "two" "stderr is kept apart"
api GET "/v1/jobs/$FJ/logs?offset=4" "" "$ALICE"
is "$(cat "$TD/out")" "three" "offset skips what was already read"

# cancel a pending and a running job
api POST /v1/jobs '{"argv":["sleep","300"],"gpu":1}' "$ALICE"
RJ=$(jget .id)
wait_for '[ "$(job_state $RJ)" = running ]'; ok $? "a whole-GPU job runs"
api POST /v1/jobs '{"argv":["true"],"gpu":0.5}' "$ALICE"
PJ=$(jget .id)
wait_for '[ "$(job_state $PJ)" = pending ] && [ "$(jget .reason)" != null ]'
is "$(job_state $PJ)" "pending" "a job that does not fit waits"
diag "reason: $(jget .reason)"
api POST "/v1/jobs/$PJ/cancel" "" "$ALICE"
is "$CODE $(jget .state)" "200 cancelled" "cancelling a pending job is immediate"
api POST "/v1/jobs/$RJ/cancel" "" "$ALICE"
is "$CODE" "200" "cancelling a running job is accepted"
wait_for '[ "$(job_state $RJ)" = cancelled ]'; ok $? "the running job ends cancelled"
api GET "/v1/jobs/$RJ"
is "$(jget .signal)" "15" "it was stopped by SIGTERM"

# --- bad input ------------------------------------------------------------------------------
bad() { # bad BODY CODE ERRCODE FIELD DESCRIPTION
    api POST /v1/jobs "$1" "$ALICE"
    is "$CODE $(jget .error.code) $(jget '.error.field // "-"')" "$2 $3 $4" "$5"
}
bad '{"argv":' 400 invalid_json - "malformed JSON: 400"
bad '["x"]' 400 invalid_json - "a JSON array body: 400"
bad '{"argv":["x"],"gpuz":1}' 400 unknown_field gpuz "an unknown field: 400 naming it"
bad '{"argv":["x"],"gpu":1.5}' 400 invalid_value gpu "1.5 GPUs: 400"
bad '{"argv":["x"],"gpus":2}' 422 unsatisfiable gpus "2 GPUs on a one-GPU node: 422"
bad '{"argv":["x"],"gpu":0.5,"gpu_mem":"25G"}' 422 unsatisfiable gpu_mem "25G on a 24G GPU: 422"
bad '{"argv":["x"],"gpu":-0.5}' 400 invalid_value gpu "a negative GPU share: 400"
bad '{"argv":["x"],"mem":"-1G"}' 400 invalid_value mem "a negative memory size: 400"
bad '{"argv":["x"],"mem":"9000P"}' 422 unsatisfiable mem "an absurd memory size: 422"
bad '{"argv":["x"],"cpu":100000}' 422 unsatisfiable cpu "more CPUs than the node: 422"
bad '{"argv":["x"],"priority":5000}' 400 invalid_value priority "an out-of-range priority: 400"
bad '{"argv":["x"],"class":"batch"}' 400 invalid_value class "an unknown class: 400"
bad '{"argv":["x"],"queue":"nope"}' 400 invalid_value queue "an unknown queue: 400"
bad '{"gpu":0.5}' 400 missing_field argv "no argv: 400"
bad '{"argv":["a","b"],"shell":true}' 400 invalid_value argv "shell with two strings: 400"
bad '{"argv":["x"],"cwd":"relative"}' 400 invalid_value cwd "a relative cwd: 400"
head -c 70000 /dev/zero | tr '\0' ' ' >"$TD/big"
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -H "Authorization: Bearer $ALICE" \
    --data-binary @"$TD/big" "$TD_URL/v1/jobs")
is "$CODE $(jget .error.code)" "413 payload_too_large" "a 70000-byte body: 413"
api GET /v1/jobs/424242 "" "$ALICE"
is "$CODE $(jget .error.code)" "404 not_found" "an unknown job id: 404"
api GET /v1/jobs/x1 "" "$ALICE"
is "$CODE" "404" "a malformed job id: 404"
api PUT /v1/jobs "" "$ALICE"
is "$CODE $(jget .error.code)" "405 method_not_allowed" "PUT /v1/jobs: 405"
api GET /v1/nothing "" "$ALICE"
is "$CODE $(jget .error.code)" "404 not_found" "an unknown route: 404"
api GET "/v1/jobs?state=bogus" "" "$ALICE"
is "$CODE $(jget .error.code)" "400 invalid_parameter" "an unknown state filter: 400"
api GET "/v1/jobs" ""
is "$(jget '.jobs | length')" "5" "bad requests left no job behind"

# Default GPU memory of a fraction: memory x milli / 1000 exactly, in integer arithmetic.
# The job sleeps longer than the test runs: it ends cancelled, never succeeded (a 'sleep 1' could
# succeed before its cancel on a loaded machine, and the metrics below count succeeded jobs).
gm() { # gm GPU -> the default gpu_mem of a cancelled job asking for GPU
    api POST /v1/jobs "{\"argv\":[\"sleep\",\"300\"],\"gpu\":$1,\"gpu_mem\":null}" "$ALICE"
    _id=$(jget .id)
    jget .gpu_mem
    api POST "/v1/jobs/$_id/cancel" "" "$ALICE" >/dev/null
}
is "$(gm 0.5)" "12884901888" "gpu 0.5 of 24 GiB: default gpu_mem 12884901888, not 12884901500"
is "$(gm 0.125)" "3221225472" "gpu 0.125 of 24 GiB: 3221225472 (exact)"
is "$(gm 0.001)" "25769803" "gpu 0.001 of 24 GiB: 25769803 (25769803.776 rounded down)"
is "$(gm 0.999)" "25744033972" "gpu 0.999 of 24 GiB: 25744033972 (floor of 25769803776 x 0.999)"

# 422 messages give sizes as people write them; field kept.
api POST /v1/jobs '{"argv":["x"],"gpu":0.5,"gpu_mem":"100G"}' "$ALICE"
is "$CODE $(jget .error.field) $(jget .error.message)" \
    "422 gpu_mem 100 GiB of GPU memory asked, the largest GPU has 24.0 GiB" "422 gpu_mem: human sizes"
api POST /v1/jobs '{"argv":["x"],"mem":"9000P"}' "$ALICE"
case "$(jget .error.message)" in "8.79 EiB of memory asked, this node has "*GiB) r=0 ;; *) r=1 ;; esac
ok $r "422 mem: human sizes ($(jget .error.message))"

# order=desc: newest first; before= pages backwards.
api GET "/v1/jobs?limit=1000" ""
ALL=$(jget '[.jobs[].id] | join(",")')
NEWEST=$(jget '.jobs[-1].id')
api GET "/v1/jobs?order=desc&limit=3" ""
is "$CODE $(jget '[.jobs[].id] | join(",")')" "200 $NEWEST,$((NEWEST - 1)),$((NEWEST - 2))" "order=desc&limit=3: the 3 newest, newest first"
api GET "/v1/jobs?order=desc&limit=2&before=$((NEWEST - 2))" ""
is "$(jget '[.jobs[].id] | join(",")')" "$((NEWEST - 3)),$((NEWEST - 4))" "before=N pages on to older jobs"
api GET "/v1/jobs?order=desc&limit=10000" ""
is "$(jget '[.jobs[].id] | reverse | join(",")')" "$ALL" "order=desc lists the same jobs as the default order"
api GET "/v1/jobs?order=desc&state=active&user=alice" ""
is "$CODE $(jget '[.jobs[] | select(.user != "alice" or (.state != "pending" and .state != "running"))] | length')" "200 0" "order=desc keeps the filters"
api GET "/v1/jobs?order=asc&limit=1" ""
is "$CODE $(jget '.jobs[0].id')" "200 $(echo "$ALL" | cut -d, -f1)" "order=asc is the default order"
api GET "/v1/jobs?order=sideways" ""
is "$CODE $(jget .error.code) $(jget .error.field)" "400 invalid_parameter order" "order=sideways: 400"
api GET "/v1/jobs?before=3" ""
is "$CODE $(jget .error.field)" "400 before" "before without order=desc: 400"

# --- queues -----------------------------------------------------------------------------------
api POST /v1/queues '{"name":"big","priority":10,"max_gpu_milli":2000}'
is "$CODE $(jget .priority) $(jget .max_gpu_milli)" "201 10 2000" "admin creates a queue"
api PATCH /v1/queues/big '{"max_gpu_milli":null}'
is "$CODE $(jget .max_gpu_milli)" "200 null" "admin lifts its cap"
api GET /v1/queues "" "$ALICE"
is "$CODE $(jget '[.queues[].name] | join(",")')" "200 big,default" "users list queues"
api DELETE /v1/queues/default
is "$CODE" "409" "the default queue cannot be deleted"
api DELETE /v1/queues/big
is "$CODE" "204" "admin deletes an empty queue"

# Nested queues with a guarantee and a limit per resource (libsched's model).
qerr() { # qerr METHOD PATH BODY STATUS CODE FIELD NAME
    api "$1" "$2" "$3"
    is "$CODE $(jget .error.code) $(jget .error.field)" "$4 $5 $6" "$7"
}
api POST /v1/queues '{"name":"research","guarantee":{"gpu":4,"gpu_mem":"64G","cpu":16,"mem":"128G"},"limit":{"gpu":8}}'
is "$CODE $(jget .parent) $(jget .guarantee.gpu) $(jget .guarantee.gpu_mem) $(jget .guarantee.cpu) $(jget .guarantee.mem) $(jget .limit.gpu) $(jget .limit.mem)" \
    "201 null 4 68719476736 16 137438953472 8 null" \
    "a department queue: GPUs as a number, sizes answered in bytes, null = no limit"
is "$(jget .guarantee_gpu_milli) $(jget .max_gpu_milli) $(jget .usage.gpu) $(jget .pending)" \
    "4000 8000 0 0" "the milli-GPU aliases and the usage"
api POST /v1/queues '{"name":"vision","parent":"research","guarantee":{"gpu":1.5,"gpu_mem":"40G","cpu":8,"mem":"64G"},"limit":{"gpu":3},"weight":2}'
is "$CODE $(jget .parent) $(jget .guarantee.gpu) $(jget .weight) $(jget .limit.gpu)" \
    "201 research 1.5 2 3" "a project queue nested under it"
api POST /v1/queues '{"name":"nlp","parent":"research","guarantee":{"gpu":2}}'
is "$CODE $(jget .guarantee.gpu) $(jget .guarantee.cpu) $(jget .guarantee.mem) $(jget .limit.cpu)" \
    "201 2 0 0 null" "a sibling: resources its parent guarantees default to 0"
api GET /v1/queues/research "" "$ALICE"
is "$CODE $(jget '.children | join(",")')" "200 nlp,vision" "the parent lists its children"
qerr POST /v1/queues '{"name":"audio","parent":"research","guarantee":{"gpu":1}}' \
    409 conflict guarantee.gpu "children's guarantees beyond the parent's (1.5 + 2 + 1 > 4): 409"
diag "$(jget .error.message)"
qerr POST /v1/queues '{"name":"audio","parent":"research","guarantee":{"mem":null}}' \
    400 invalid_value guarantee.mem "no guarantee under a parent that guarantees memory: 400"
qerr POST /v1/queues '{"name":"audio","parent":"nope"}' 400 invalid_value parent "an unknown parent: 400"
qerr POST /v1/queues '{"name":"audio","parent":"default"}' 400 invalid_value parent \
    "the default queue has no children: 400"
qerr POST /v1/queues '{"name":"audio","guarantee":{"gpu":2},"limit":{"gpu":1}}' \
    400 invalid_value guarantee.gpu "a guarantee above the limit: 400"
qerr POST /v1/queues '{"name":"audio","guarantee":{"gpu":0.0005}}' 400 invalid_value guarantee.gpu \
    "a GPU amount finer than milli: 400"
qerr POST /v1/queues '{"name":"audio","guarantee":{"gpu":-1}}' 400 invalid_value guarantee.gpu \
    "a negative GPU amount: 400"
qerr POST /v1/queues '{"name":"audio","limit":{"mem":"lots"}}' 400 invalid_value limit.mem \
    "a bad size: 400"
qerr POST /v1/queues '{"name":"audio","limit":{"gpus":1}}' 400 unknown_field limit.gpus \
    "an unknown resource: 400"
qerr POST /v1/queues '{"name":"audio","guarantee":{"gpu":1},"guarantee_gpu_milli":1000}' \
    400 invalid_value guarantee_gpu_milli "a resource and its alias together: 400"
qerr POST /v1/queues '{"name":"vision"}' 409 conflict name "a taken name: 409"
qerr PATCH /v1/queues/research '{"guarantee":{"gpu":3}}' 409 conflict guarantee.gpu \
    "lowering a parent below its children's guarantees (3.5): 409"
qerr PATCH /v1/queues/vision '{"parent":"nlp"}' 400 invalid_value parent "a parent cannot change: 400"
api PATCH /v1/queues/vision '{"guarantee":{"gpu":2},"limit":{"gpu":null,"cpu":32}}'
is "$CODE $(jget .guarantee.gpu) $(jget .guarantee.mem) $(jget .limit.gpu) $(jget .limit.cpu)" \
    "200 2 68719476736 null 32" "PATCH changes only the resources it names"
api PATCH /v1/queues/vision '{"guarantee_gpu_milli":500}'
is "$CODE $(jget .guarantee.gpu)" "200 0.5" "the milli-GPU alias still edits the GPU guarantee"
api POST /v1/jobs '{"argv":["true"],"queue":"research"}' "$ALICE"
is "$CODE $(jget .error.code) $(jget .error.field)" "400 invalid_value queue" \
    "a job for a queue with children: 400 (jobs go to leaf queues)"
api POST /v1/jobs '{"argv":["true"],"queue":"vision","class":"interactive","gpu":1}' "$ALICE"
is "$CODE $(jget .error.code) $(jget .error.field)" "422 unsatisfiable class" \
    "an interactive job above its queue's GPU guarantee (0.5): 422"
api POST /v1/jobs '{"argv":["true"],"queue":"vision","class":"interactive","cpu":0.5}' "$ALICE"
V=$(jget .id)
is "$CODE $(jget .requeue) $(jget .preemptions)" "201 true 0" \
    "a job in a nested queue (requeue by default, no preemption yet)"
wait_for '[ "$(job_state $V)" = succeeded ]'
ok $? "it runs"
api DELETE /v1/queues/research
is "$CODE $(jget .error.code)" "409 conflict" "a queue with children cannot be deleted"
api DELETE /v1/queues/vision
is "$CODE" "204" "a leaf without active jobs can"
api DELETE /v1/queues/nlp
api DELETE /v1/queues/research
is "$CODE" "204" "then its parent"
api GET /v1/queues "" "$ALICE"
is "$(jget '[.queues[].name] | join(",")')" "default" "only the default queue is left"

# --- nodes, gpus, metrics ---------------------------------------------------------------------
api GET /v1/gpus "" "$ALICE"
is "$CODE $(jget '.gpus | length') $(jget '.gpus[0].simulated') $(jget '.gpus[0].memory_total')" \
    "200 1 true 25769803776" "GET /v1/gpus: one simulated 24 GiB GPU"
api GET /v1/nodes "" "$ALICE"
is "$(jget '.nodes[0].simulated') $(jget '.nodes[0].gpus | length')" "true 1" \
    "GET /v1/nodes: the node is simulated"
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' "$TD_URL/metrics")
is "$CODE" "200" "metrics answer without a token"
grep -q '^tessel_jobs{state="succeeded"} 3$' "$TD/out"; ok $? "metrics count 3 succeeded jobs"
grep -q '^tessel_gpus{simulated="1"} 1$' "$TD/out"; ok $? "metrics mark the GPU simulated"

# --- users deleted lose access ---------------------------------------------------------------
api DELETE /v1/users/bob
is "$CODE" "204" "admin deletes bob"
api GET /v1/whoami "" "$BOB"
is "$CODE" "401" "bob's token no longer works"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
