#!/bin/sh
# t3047-daemon-array.t - job arrays ("array", tessel run --array): one job per index, each with
# TESSEL_ARRAY_JOB_ID, _TASK_ID, _TASK_COUNT, _TASK_MIN, _TASK_MAX in its environment (as
# Slurm's SLURM_ARRAY_*); %N runs at most N elements at once (the others wait with that
# reason); tessel ps shows elements as ARRAYID_INDEX; the API takes "40_3" as a job id;
# tessel kill ARRAYID_INDEX cancels one element, tessel kill ARRAYID all of them; a dependency
# on an array's id waits for every element.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"
cli_setup
elements() { # ARRAYID -> "ID:INDEX:STATE ..." of its elements, by index
    api GET '/v1/jobs?limit=1000'
    jq -r '[.jobs[] | select(.array_id == '"$1"') | "\(.array_index):\(.state)"] | join(" ")' "$TD/out"
}
count_state() { # ARRAYID STATE
    api GET '/v1/jobs?limit=1000'
    jq -r '[.jobs[] | select(.array_id == '"$1"' and .state == "'"$2"'")] | length' "$TD/out"
}

# --- one job per index, with the array variables ---------------------------------------------------
admin run --array 1,3,5 -- sh -c 'echo "$TESSEL_ARRAY_JOB_ID $TESSEL_ARRAY_TASK_ID $TESSEL_ARRAY_TASK_COUNT $TESSEL_ARRAY_TASK_MIN $TESSEL_ARRAY_TASK_MAX $TESSEL_JOB_ID"'
A=$(out)
is "$RC" 0 "tessel run --array 1,3,5 submits (detached: it prints the array's id, $A)"
wait_for '[ "$(count_state '"$A"' succeeded)" = 3 ]'
ok $? "three elements ran and succeeded"
is "$(elements "$A")" "1:succeeded 3:succeeded 5:succeeded" "with indexes 1, 3 and 5"
api GET "/v1/jobs/${A}_3"
E3=$(jget .id)
is "$CODE $(jget .array_id) $(jget .array_index) $(jget .display_id)" "200 $A 3 ${A}_3" \
    "GET /v1/jobs/${A}_3 is element 3 (array_id, array_index, display_id)"
is "$(cat "$TD/data/jobs/$E3/stdout")" "$A 3 3 1 5 $E3" \
    "its environment: TESSEL_ARRAY_JOB_ID=$A _TASK_ID=3 _TASK_COUNT=3 _TASK_MIN=1 _TASK_MAX=5"
api GET "/v1/jobs/${A}_4"
is "$CODE" 404 "an index the array does not have: 404"
admin ps -a
grep -q "^${A}_5 " "$TD/o"; ok $? "tessel ps shows element 5 as ${A}_5"

# --- %N ------------------------------------------------------------------------------------------------
api POST /v1/jobs '{"argv":["sh","-c","while [ ! -e '"$TD"'/go ]; do sleep 0.1; done"],"array":"0-5%2"}'
B=$(jget .id)
is "$CODE $(jget .array_size)" "201 6" "an array 0-5%2 of 6 elements is accepted"
wait_for '[ "$(count_state '"$B"' running)" = 2 ]'
ok $? "two elements run"
sleep 0.5
is "$(count_state "$B" running) $(count_state "$B" pending)" "2 4" "no more than two (%2); four wait"
api GET "/v1/jobs/${B}_5"
is "$(jget .reason)" "waiting: array $B runs at most 2 elements at once (%2)" "the others say why"
touch "$TD/go"
wait_for '[ "$(count_state '"$B"' succeeded)" = 6 ]'
ok $? "all six run in turn and succeed"

# --- kill one, kill all ----------------------------------------------------------------------------------
rm -f "$TD/go"
admin run --array 0-3 -- sh -c "while [ ! -e $TD/go ]; do sleep 0.1; done"
C=$(out)
wait_for '[ "$(count_state '"$C"' running)" = 4 ]'
ok $? "an array of four runs"
admin kill "${C}_2"
is "$RC $(out)" "0 job ${C}_2: cancelling" "tessel kill ${C}_2 cancels that element"
wait_for '[ "$(elements '"$C"')" = "0:running 1:running 2:cancelled 3:running" ]'
ok $? "only element 2 is cancelled"
admin run -d --after "$C:any" true
AFT=$(out)
admin kill "$C"
is "$RC $(out)" "0 array $C: 3 element(s) cancelled or cancelling" "tessel kill $C cancels the others"
wait_for '[ "$(count_state '"$C"' cancelled)" = 4 ]'
ok $? "every element is cancelled"
wait_for '[ "$(job_state '"$AFT"')" = succeeded ]'
ok $? "a job after the array's id ($C:any) ran once every element had ended"
api GET "/v1/jobs/$AFT"
is "$(jq -r '.after | length' "$TD/out")" 4 "its dependencies are the four elements"
admin kill "$C"
is "$RC" 1 "killing an array that has ended: exit 1"

# --- bad arrays ---------------------------------------------------------------------------------------
admin run --array 5-1 true
is "$RC" 2 "tessel run --array 5-1: usage error"
one_line_error; ok $? "... in one line: $(errtext)"
api POST /v1/jobs '{"argv":["true"],"array":"0-5000"}'
is "$CODE $(jget .error.field)" "400 array" "an index above 1000 is refused"
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
