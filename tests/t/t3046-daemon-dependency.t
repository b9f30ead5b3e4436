#!/bin/sh
# t3046-daemon-dependency.t - job dependencies ("after", tessel run --after / --dependency): a
# job waits, pending with the reason "dependency: waiting for job N to succeed", until the
# jobs it names have ended as asked (ok: succeeded, any: ended, notok: failed), then runs; when
# that can never happen it is cancelled, "dependency never satisfied".  A dependency on a job
# that does not exist, or that the caller may not see, is refused with the same answer (nothing
# learnt about others' jobs).  A held job is released after a restart of tesseld too.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"
cli_setup
# A job that waits for the file $TD/goN, then exits with status S: gate N S
gate() { printf '{"argv":["sh","-c","while [ ! -e %s/go%s ]; do sleep 0.1; done; exit %s"]}' "$TD" "$1" "$2"; }
reason() { api GET "/v1/jobs/$1"; jget .reason; }

api POST /v1/jobs "$(gate 1 0)"
A=$(jget .id)
api POST /v1/jobs "$(gate 2 3)"
F=$(jget .id)

# --- waits, then runs ---------------------------------------------------------------------------
api POST /v1/jobs '{"argv":["true"],"after":"'"$A"'"}'
B=$(jget .id)
is "$CODE $(jget .state) $(jget .held)" "201 pending true" "a job after job $A is accepted, pending and held"
wait_for '[ "$(reason '"$B"')" = "dependency: waiting for job '"$A"' to succeed" ]'
ok $? "its reason: dependency: waiting for job $A to succeed"
api GET "/v1/jobs/$B"
is "$(jq -c .after "$TD/out")" '[{"job":'"$A"',"type":"ok"}]' "the API lists its dependency"
admin ps --json
is "$(jq -r '.jobs[] | select(.id == '"$B"') | .reason' "$TD/o")" \
    "dependency: waiting for job $A to succeed" "tessel ps shows the same reason"
sleep 0.5
is "$(job_state "$B")" pending "it stays pending while job $A runs"
touch "$TD/go1"
wait_for '[ "$(job_state '"$B"')" = succeeded ]'
ok $? "once job $A succeeded it ran and succeeded"

# --- can never hold: cancelled -------------------------------------------------------------------
api POST /v1/jobs '{"argv":["true"],"after":"'"$F"':ok"}'
C=$(jget .id)
api POST /v1/jobs '{"argv":["true"],"after":"'"$F"':any"}'
D=$(jget .id)
api POST /v1/jobs '{"argv":["true"],"after":"'"$F"':notok"}'
E=$(jget .id)
touch "$TD/go2"
wait_for '[ "$(job_state '"$C"')" = cancelled ]'
ok $? "a job after $F:ok is cancelled when job $F fails"
is "$(reason "$C") $(jget .end_cause)" "dependency never satisfied: job $F failed (it had to succeed) dependency" \
    "its reason: dependency never satisfied: job $F failed (it had to succeed); end_cause dependency"
wait_for '[ "$(job_state '"$D"')" = succeeded ]'
ok $? "a job after $F:any runs when job $F ends, however"
wait_for '[ "$(job_state '"$E"')" = succeeded ]'
ok $? "a job after $F:notok runs when job $F fails"

# --- a chain: a cancel for a dependency is itself an end that others wait for -----------------------
# C was cancelled above: a job after C:ok can never run either, one after C:notok runs.
api POST /v1/jobs '{"argv":["true"],"after":"'"$C"':ok"}'
P=$(jget .id)
api POST /v1/jobs '{"argv":["true"],"after":"'"$P"':notok"}'
Q=$(jget .id)
wait_for '[ "$(job_state '"$P"')" = cancelled ]'
ok $? "a job after $C:ok (cancelled itself) is cancelled"
is "$(reason "$P")" "dependency never satisfied: job $C cancelled (it had to succeed)" \
    "its reason names job $C"
wait_for '[ "$(job_state '"$Q"')" = succeeded ]'
ok $? "a job after $P:notok runs once job $P was cancelled (an end met in the same check's wake)"

# --- many at once: 70 held elements in one submission, released by one end -------------------------
api POST /v1/jobs "$(gate 4 0)"
W=$(jget .id)
api POST /v1/jobs '{"argv":["true"],"array":"0-69","after":"'"$W"'"}'
is "$CODE $(jget .held)" "201 true" "an array of 70 elements after job $W is accepted, held"
ARR=$(jget .array_id)
held_count() { api GET "/v1/jobs?state=pending&limit=1000"; jq "[.jobs[] | select(.array_id == $ARR and .held)] | length" "$TD/out"; }
wait_for '[ "$(reason $((ARR + 69)))" = "dependency: waiting for job '"$W"' to succeed" ]'
ok $? "its last element waits for job $W"
is "$(held_count)" 70 "all 70 are held while job $W runs"
touch "$TD/go4"
wait_for '[ "$(job_state $((ARR + 69)))" = succeeded ] && [ "$(job_state "$ARR")" = succeeded ]'
ok $? "once job $W succeeded the first and the last element ran"
api GET "/v1/jobs?limit=1000"
is "$(jq "[.jobs[] | select(.array_id == $ARR and .state == \"succeeded\")] | length" "$TD/out")" 70 \
    "and all 70 succeeded"

# --- Slurm's form, through the CLI ------------------------------------------------------------------
admin run -d --dependency "afterok:$A,afterany:$F" true
G=$(out)
is "$RC" 0 "tessel run --dependency afterok:$A,afterany:$F is accepted"
wait_for '[ "$(job_state '"$G"')" = succeeded ]'
ok $? "and runs (both already ended as asked)"
api GET "/v1/jobs/$G"
is "$(jq -c '[.after[] | .type]' "$TD/out")" '["ok","any"]' "with the two kinds"
admin run -d --after "$A:maybe" true
is "$RC" 2 "tessel run --after $A:maybe: usage error"
one_line_error; ok $? "... in one line: $(errtext)"

# --- refused: unknown, another user's (the same answer), not yet existing ------------------------------
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
api POST /v1/jobs '{"argv":["true"],"after":"999999"}' "$NB"
is "$CODE $(jget .error.message)" "400 no job 999999" "a dependency on an unknown job is refused"
api POST /v1/jobs '{"argv":["true"],"after":"'"$A"'"}' "$NB"
is "$CODE $(jget .error.message)" "400 no job $A" "one on another user's job gets the same answer"
api GET /v1/jobs?order=desc\&limit=1
NEXT=$(( $(jget '.jobs[0].id') + 1 ))
api POST /v1/jobs '{"argv":["true"],"after":"'"$NEXT"'"}'
is "$CODE" 400 "a job cannot depend on itself or a later job (no cycle can be made)"

# --- restart: a held job is released when its dependency ends ---------------------------------------
api POST /v1/jobs "$(gate 3 0)"
H=$(jget .id)
wait_for '[ "$(job_state '"$H"')" = running ]'
api POST /v1/jobs '{"argv":["true"],"after":"'"$H"'"}'
K=$(jget .id)
td_kill9
touch "$TD/go3"
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start again"
wait_for '[ "$(job_state '"$K"')" = succeeded ]'
ok $? "after a restart, the held job runs once its dependency succeeded"
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
