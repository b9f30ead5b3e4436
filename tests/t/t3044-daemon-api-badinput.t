#!/bin/sh
# t3044-daemon-api-badinput.t - the API's answers to bad or forbidden input on users, tokens,
# queues, the fields of a job (and its batch fields time_limit, after, array) and the job
# list's parameters: each is refused with its status, an error code and the field at fault,
# and nothing is created; a user cannot act for another.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
chmod 755 "$TD" # the jobs of nobody below reach their directories under it
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"

# refused NAME STATUS ERROR FIELD METHOD PATH [BODY] [TOKEN]: the answer is STATUS with
# {"error": {"code": ERROR, "field": FIELD, "message": ...}} (FIELD "-" = none).
refused() {
    _n=$1 _s=$2 _e=$3 _f=$4
    shift 4
    api "$@"
    _got="$CODE $(jget .error.code) $(jget '.error.field // "-"')"
    is "$_got" "$_s $_e $_f" "$_n: $_s $_e ($(jget .error.message))"
}

# --- users ----------------------------------------------------------------------------------
refused "a user without a name" 400 missing_field name POST /v1/users '{}'
refused "a user with a bad name" 400 invalid_value name POST /v1/users '{"name":"Bad Name"}'
refused "a user with an unknown role" 400 invalid_value role POST /v1/users \
    '{"name":"carol","role":"boss"}'
api GET /v1/users/carol
is "$CODE" 404 "none of them was created"
api POST /v1/users '{"name":"nobody"}'
is "$CODE" 201 "admin creates user nobody"
refused "the same user twice" 409 conflict - POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
api POST /v1/users '{"name":"dave"}'
refused "nobody looks at dave" 403 forbidden - GET /v1/users/dave "" "$NB"
refused "nobody lists dave's tokens" 403 forbidden user GET "/v1/tokens?user=dave" "" "$NB"
refused "nobody makes a token for dave" 403 forbidden user POST /v1/tokens '{"user":"dave"}' "$NB"
refused "a token for nobody known" 400 invalid_value user POST /v1/tokens '{"user":"zed"}'
refused "a token whose name is not a string" 400 invalid_value name POST /v1/tokens \
    '{"name":5}'
refused "deleting a token that does not exist" 404 not_found - DELETE /v1/tokens/999999
refused "nobody creates a user" 403 forbidden - POST /v1/users '{"name":"eve"}' "$NB"
refused "admin deletes itself" 409 conflict - DELETE /v1/users/admin
api GET /v1/users/nobody "" "$NB"
is "$CODE $(jget .name)" "200 nobody" "nobody may look at himself"

# --- the batch fields of a job --------------------------------------------------------------
refused "time_limit below 0" 400 invalid_value time_limit POST /v1/jobs \
    '{"argv":["true"],"time_limit":-5}'
refused "time_limit not a duration" 400 invalid_value time_limit POST /v1/jobs \
    '{"argv":["true"],"time_limit":"soon"}'
refused "time_limit of a wrong type" 400 invalid_value time_limit POST /v1/jobs \
    '{"argv":["true"],"time_limit":[1]}'
refused "after not a dependency list" 400 invalid_value after POST /v1/jobs \
    '{"argv":["true"],"after":"12:maybe"}'
refused "after of a wrong type" 400 invalid_value after POST /v1/jobs \
    '{"argv":["true"],"after":12}'
refused "after a job that does not exist" 400 invalid_value after POST /v1/jobs \
    '{"argv":["true"],"after":"999999"}'
refused "array not a range" 400 invalid_value array POST /v1/jobs \
    '{"argv":["true"],"array":"9-1"}'
refused "array of a wrong type" 400 invalid_value array POST /v1/jobs \
    '{"argv":["true"],"array":7}'
# --- the fields of a job ----------------------------------------------------------------------
job() { refused "$1" "$2" "$3" "$4" POST /v1/jobs "$5"; }
job "argv not an array" 400 invalid_value argv '{"argv":"true"}'
job "argv with a number" 400 invalid_value argv '{"argv":["echo",5]}'
job "an empty argv[0]" 400 invalid_value argv '{"argv":[""]}'
job "shell not a boolean" 400 invalid_value shell '{"argv":["true"],"shell":"yes"}'
job "a name of a wrong type" 400 invalid_value name '{"argv":["true"],"name":7}'
job "env not an object" 400 invalid_value env '{"argv":["true"],"env":["A=1"]}'
job "an env name holding =" 400 invalid_value env '{"argv":["true"],"env":{"A=B":"1"}}'
job "an env value not a string" 400 invalid_value env '{"argv":["true"],"env":{"A":1}}'
job "gpu and gpus both" 400 invalid_value gpus '{"argv":["true"],"gpu":0.5,"gpus":1}'
job "gpu not a number" 400 invalid_value gpu '{"argv":["true"],"gpu":"half"}'
job "gpu with 4 decimals" 400 invalid_value gpu '{"argv":["true"],"gpu":0.0005}'
job "gpu 3 on a one-GPU node" 422 unsatisfiable gpus '{"argv":["true"],"gpu":3}'
job "gpus 0" 400 invalid_value gpus '{"argv":["true"],"gpus":0}'
job "gpus 5 on a one-GPU node" 422 unsatisfiable gpus '{"argv":["true"],"gpus":5}'
job "gpu_mem without a GPU" 400 invalid_value gpu_mem '{"argv":["true"],"gpu_mem":"1G"}'
job "cpu 0" 400 invalid_value cpu '{"argv":["true"],"cpu":0}'
job "more CPUs than the node has" 422 unsatisfiable cpu '{"argv":["true"],"cpu":100000}'
job "a queue of a wrong type" 400 invalid_value queue '{"argv":["true"],"queue":5}'
job "requeue not a boolean" 400 invalid_value requeue '{"argv":["true"],"requeue":"no"}'

# --- the job list's parameters ------------------------------------------------------------------
refused "an empty state filter" 400 invalid_parameter state GET "/v1/jobs?state="
refused "limit 0" 400 invalid_parameter limit GET "/v1/jobs?limit=0"
refused "after not a job id" 400 invalid_parameter after GET "/v1/jobs?after=x"
refused "before not a job id" 400 invalid_parameter before GET "/v1/jobs?before=x"

# --- queues -------------------------------------------------------------------------------------
refused "a queue without a name" 400 missing_field name POST /v1/queues '{}'
refused "a queue with a bad name" 400 invalid_value name POST /v1/queues '{"name":"Q 1"}'
refused "a parent of a wrong type" 400 invalid_value parent POST /v1/queues \
    '{"name":"q1","parent":5}'
refused "a priority of a wrong type" 400 invalid_value priority POST /v1/queues \
    '{"name":"q1","priority":"high"}'
refused "weight 0" 400 invalid_value weight POST /v1/queues '{"name":"q1","weight":0}'
refused "looking at a queue that does not exist" 404 not_found - GET /v1/queues/nope
refused "deleting a queue that does not exist" 404 not_found - DELETE /v1/queues/nope
refused "nobody creates a queue" 403 forbidden - POST /v1/queues '{"name":"q2"}' "$NB"
api GET /v1/queues/q1
is "$CODE" 404 "no queue was created by any of them"

api GET "/v1/jobs?all=1"
is "$(jget '.jobs | length')" 0 "no job was created by any of them"

# after another user's job: the same answer as for a job that does not exist
api POST /v1/jobs '{"argv":["true"]}'
A=$(jget .id)
api POST /v1/jobs '{"argv":["true"],"after":"'"$A"'"}' "$NB"
is "$CODE $(jget .error.message)" "400 no job $A" "nobody cannot depend on admin's job $A: 'no job $A' (nothing learnt)"

# an array that has finished cannot be cancelled again
api POST /v1/jobs '{"argv":["true"],"array":"0-1"}'
R=$(jget .id)
wait_for '[ "$(job_state '"$R"')" = succeeded ]'
wait_for '[ "$(job_state '"${R}_1"')" = succeeded ]'
ok $? "array $R ran its two elements"
refused "cancelling a finished array" 409 conflict - POST "/v1/jobs/$R/cancel"
# --- a job of another account: suspend and resume it as its owner ----------------------------
# (tesseld makes the slice file for the account, owned by it; the owner may suspend, others not)
api POST /v1/jobs '{"argv":["sleep","300"],"gpu":0.5}' "$NB"
S=$(jget .id)
wait_for '[ "$(job_state '"$S"')" = running ]'
ok $? "nobody's GPU job $S runs"
api POST /v1/users '{"name":"daemon"}'
api POST /v1/tokens '{"user":"daemon"}'
DM=$(jget .token)
refused "another user suspends it" 404 not_found - POST "/v1/jobs/$S/suspend" "" "$DM"
refused "resuming it while it is not suspended" 409 conflict - POST "/v1/jobs/$S/resume" "" "$NB"
api POST "/v1/jobs/$S/suspend" "" "$NB"
is "$CODE $(jget .state)" "200 suspended" "its owner suspends it"
SL=$(find "$TD/data" -path "*$S*" -name slice 2>/dev/null | head -1)
is "$(stat -c %U "$SL" 2>/dev/null)" nobody "its slice file belongs to the job's account"
refused "suspending it twice" 409 conflict - POST "/v1/jobs/$S/suspend" "" "$NB"
api POST "/v1/jobs/$S/resume" "" "$NB"
is "$CODE $(jget .state)" "200 running" "its owner resumes it"
api POST "/v1/jobs/$S/cancel" "" "$NB"
wait_for '[ "$(job_state '"$S"')" = cancelled ]'
ok $? "and cancels it"
td_stop
ok $? "tesseld stops cleanly"
done_testing
