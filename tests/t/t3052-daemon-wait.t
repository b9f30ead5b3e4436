#!/bin/sh
# t3052-daemon-wait.t - the long poll GET /v1/jobs/{id}/wait?until=started|finished&timeout=S
# and the foreground `tessel run` that uses it: the wait answers the job once the state asked
# for is reached (or at the timeout), a clear 400 for bad parameters, 404
# for a job the caller may not see; a log follower ends with the job; `tessel run` returns the
# job's exit status and prints its output, with tesseld's periodic tick an hour long (so the
# job's end and the client's wake-up come from events, not from polling).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"
[ -x "$TESSEL_BUILD/bin/tessel" ] || missing "tessel not built"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups --test-tick-ms 3600000 || missing "tesseld did not start"
cli_setup
gate() { printf '{"argv":["sh","-c","while [ ! -e %s/go%s ]; do sleep 0.05; done; echo done%s"],"gpu":1}' "$TD" "$1" "$1"; }

# --- bad parameters -------------------------------------------------------------------------------
api POST /v1/jobs "$(gate 1)"
A=$(jget .id)
for q in "until=ended" "until=" "timeout=abc" "timeout=-1" "timeout=61" "timeout=nan" \
    "timeout=1e9" "timeout="; do
    api GET "/v1/jobs/$A/wait?$q"
    is "$CODE $(jget .error.code) $(jget .error.field)" "400 invalid_parameter ${q%%=*}" \
        "wait?$q: 400 ($(jget .error.message))"
done
api GET "/v1/jobs/$A/wait?timeout=abc"
is "$(jget .error.message)" "timeout must be a number of seconds from 0 to 60" \
    "the 400 says what timeout must be"
api GET "/v1/jobs/999999/wait?timeout=0"
is "$CODE" 404 "wait for a job that does not exist: 404"
api GET "/v1/jobs/$A/wait?timeout=0" "" ""
is "$CODE" 401 "wait without a token: 401"
api POST /v1/users '{"name":"bob"}'
api POST /v1/tokens '{"user":"bob"}'
BOB=$(jget .token)
api GET "/v1/jobs/$A/wait?timeout=0" "" "$BOB"
is "$CODE $(jget .error.message)" "404 no job $A" "wait for another user's job: 404, as for none"

# --- started / finished ---------------------------------------------------------------------------
api GET "/v1/jobs/$A/wait?until=started&timeout=30"
is "$CODE $(jget .state)" "200 running" "until=started: answered with the job running"
api GET "/v1/jobs/$A/wait?until=finished&timeout=0.2"
is "$CODE $(jget .state)" "200 running" "until=finished, timeout 0.2 s: answered at the timeout, still running"
(sleep 0.5 && touch "$TD/go1") &
BG=$!
api GET "/v1/jobs/$A/wait?until=finished&timeout=60"
is "$CODE $(jget .state)" "200 succeeded" "until=finished: answered once the job has ended"
wait $BG
api POST /v1/jobs '{"argv":["true"],"gpu":1}'
B=$(jget .id)
api GET "/v1/jobs/$B/wait?until=finished&timeout=60"
is "$CODE $(jget .state) $(jget .exit_code)" "200 succeeded 0" "a pending job: until=finished answers after its start and end"

# --- a follower ends with the job ------------------------------------------------------------------
api POST /v1/jobs "$(gate 2)"
C=$(jget .id)
wait_for '[ "$(job_state '"$C"')" = running ]'
(sleep 0.5 && touch "$TD/go2") &
BG=$!
curl -s -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/jobs/$C/logs?follow=1" >"$TD/follow"
is "$(cat "$TD/follow")" "done2" "logs?follow=1 ends once the job has ended, with all its output"
is "$(job_state "$C")" succeeded "and the job has ended then"
wait $BG

# --- tessel run, foreground ------------------------------------------------------------------------
export TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN"
tcli run -- sh -c 'echo out; echo err >&2; exit 7'
is "$RC" 7 "tessel run returns the job's exit status (7)"
is "$(out)" out "its stdout"
is "$(errtext)" err "its stderr"
tcli run -- true
is "$RC" 0 "tessel run -- true: 0"
tcli run -- sh -c 'kill -TERM $$'
is "$RC" 143 "a job killed by SIGTERM: 128 + 15"
# One waiting for the GPU: it starts at the end of the job that holds it.
api POST /v1/jobs "$(gate 3)"
E=$(jget .id)
wait_for '[ "$(job_state '"$E"')" = running ]'
(sleep 1 && touch "$TD/go3") &
BG=$!
tcli run --quiet --gpu 1 -- sh -c 'exit 5'
is "$RC" 5 "a foreground job that waited for the GPU returns its status (5)"
wait $BG
unset TESSEL_URL TESSEL_TOKEN

td_stop
ok $? "tesseld stops cleanly"
done_testing
