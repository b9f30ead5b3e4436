#!/bin/sh
# t3045-daemon-time-limit.t - time limits ("time_limit", tessel run --time): a job that reaches
# its limit gets SIGTERM (it may clean up and exit), one that ignores SIGTERM gets SIGKILL after
# --kill-wait; both end failed with the reason "time limit (2s)".  Slurm's formats are taken
# by the API and the CLI; a bad one is refused with one line.  The limit is enforced after a
# restart of tesseld (kill -9 while the job runs, started again after its limit passed).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups --kill-wait 1s || missing "tesseld did not start"
cli_setup

# --- formats ----------------------------------------------------------------------------------
api POST /v1/jobs '{"argv":["true"],"time_limit":"1-02:03:04"}'
is "$CODE $(jget .time_limit)" "201 93784" "time_limit takes Slurm's D-HH:MM:SS (93784 s)"
api POST /v1/jobs '{"argv":["true"],"time_limit":90}'
is "$CODE $(jget .time_limit)" "201 90" "or seconds"
api POST /v1/jobs '{"argv":["true"],"time_limit":"1:60"}'
is "$CODE $(jget .error.field)" "400 time_limit" "a bad time limit is refused (400, field time_limit)"
api POST /v1/jobs '{"argv":["true"],"time_limit":-1}'
is "$CODE" 400 "a negative one too"
admin run -d --time 25:61 true
is "$RC" 2 "tessel run --time 25:61: usage error (exit 2)"
one_line_error; ok $? "... with one line: $(errtext)"
admin run -d --time 10m true
J=$(out)
api GET "/v1/jobs/$J"
is "$RC $(jget .time_limit)" "0 600" "tessel run --time 10m sends 600 s"

# --- SIGTERM at the limit ------------------------------------------------------------------------
api POST /v1/jobs '{"argv":["sh","-c","trap \"echo got TERM; exit 3\" TERM; while :; do sleep 0.1; done"],"time_limit":"2s"}'
J=$(jget .id)
wait_for '[ "$(job_state '"$J"')" = failed ]'
ok $? "a job that runs past its 2 s limit ends failed"
api GET "/v1/jobs/$J"
is "$(jget .reason) $(jget .end_cause)" "time limit (2s) time_limit" "its reason says: time limit (2s); end_cause time_limit"
is "$(jget .exit_code)" 3 "it got SIGTERM and exited on its own (status 3 from its trap)"
grep -qx "got TERM" "$TD/data/jobs/$J/stdout"; ok $? "its trap ran (its log says so)"

# --- SIGKILL after --kill-wait ------------------------------------------------------------------
api POST /v1/jobs '{"argv":["sh","-c","trap \"\" TERM; while :; do sleep 0.1; done"],"time_limit":"2s"}'
J=$(jget .id)
wait_for '[ "$(job_state '"$J"')" = failed ]'
ok $? "a job that ignores SIGTERM ends too"
api GET "/v1/jobs/$J"
is "$(jget .reason) $(jget .signal)" "time limit (2s) 9" "killed by SIGKILL after --kill-wait: time limit (2s)"

# --- the CLI: exit status and reason --------------------------------------------------------------
admin run --quiet --time 1s -- sh -c 'sleep 30'
is "$RC" 143 "tessel run --time 1s in the foreground: the job's status (128 + SIGTERM)"
admin ps -a --json
is "$(jq -r '[.jobs[] | select(.reason == "time limit (1s)")] | length' "$TD/o")" 1 \
    "tessel ps shows its reason: time limit (1s)"

# --- restart: the limit holds ---------------------------------------------------------------------
api POST /v1/jobs '{"argv":["sh","-c","sleep 60"],"time_limit":"3s"}'
J=$(jget .id)
wait_for '[ "$(job_state '"$J"')" = running ]'
ok $? "a job with a 3 s limit runs"
td_kill9
sleep 4 # past its limit while tesseld is down
td_start --fake-gpus 1xT4:16G --no-cgroups --kill-wait 1s || missing "tesseld did not start again"
wait_for '[ "$(job_state '"$J"')" = failed ]'
ok $? "after a restart, the job past its limit is stopped"
api GET "/v1/jobs/$J"
is "$(jget .reason) $(jget .end_cause)" "time limit (3s) time_limit" "with the reason time limit (3s), end_cause time_limit"
td_stop
ok $? "tesseld stops cleanly (no sanitizer report)"
done_testing
