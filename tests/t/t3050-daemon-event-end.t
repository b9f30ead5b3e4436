#!/bin/sh
# t3050-daemon-event-end.t - a job's end starts the next pending job at once, without the
# periodic tick: tesseld runs with a tick of an hour (--test-tick-ms), so only events can run a
# scheduling pass.  The end of a job (its supervisor's exit, SIGCHLD) starts the job waiting for
# its GPU; a cancel does too; a burst of short jobs on one GPU runs through, one after the
# other; and the counter of passes in /metrics moves with them.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups --test-tick-ms 3600000 || missing "tesseld did not start"
passes() { curl -s "$TD_URL/metrics" | awk '$1 == "tessel_sched_passes_total" {print $2}'; }
gate() { printf '{"argv":["sh","-c","while [ ! -e %s/go%s ]; do sleep 0.05; done"],"gpu":1}' "$TD" "$1"; }

# --- the end of a job starts the next -------------------------------------------------------------
api POST /v1/jobs "$(gate 1)"
A=$(jget .id)
wait_for '[ "$(job_state '"$A"')" = running ]'
ok $? "job $A (a whole GPU) runs"
api POST /v1/jobs '{"argv":["true"],"gpu":1}'
B=$(jget .id)
sleep 0.3
is "$(job_state "$B")" pending "job $B, which needs the same GPU, waits"
P0=$(passes)
touch "$TD/go1"
wait_for '[ "$(job_state '"$B"')" = succeeded ]'
ok $? "job $A's end started job $B, which ran to its end, with no tick in between"
is "$(job_state "$A")" succeeded "job $A succeeded"
P1=$(passes)
[ "$P1" -gt "$P0" ]
ok $? "passes were counted for the ends (tessel_sched_passes_total $P0 -> $P1)"

# --- a cancel does too -----------------------------------------------------------------------------
api POST /v1/jobs "$(gate 2)"
C=$(jget .id)
wait_for '[ "$(job_state '"$C"')" = running ]'
api POST /v1/jobs '{"argv":["true"],"gpu":1}'
D=$(jget .id)
api POST "/v1/jobs/$C/cancel"
is "$CODE" 200 "cancel of running job $C accepted"
wait_for '[ "$(job_state '"$D"')" = succeeded ]'
ok $? "job $C's cancel ended it and started job $D"
is "$(job_state "$C")" cancelled "job $C cancelled"

# --- a chain of 20 short jobs on one GPU runs through ----------------------------------------------
first=""
for i in $(seq 20); do
    api POST /v1/jobs '{"argv":["true"],"gpu":1}'
    [ -z "$first" ] && first=$(jget .id)
done
last=$(jget .id)
wait_for '[ "$(curl -s -H "Authorization: Bearer $TD_ADMIN" "$TD_URL/v1/jobs?state=active" | jq ".jobs | length")" = 0 ]'
ok $? "20 jobs that each need the whole GPU all ran, each started by the end of the one before"
api GET "/v1/jobs?state=succeeded"
is "$(jq "[.jobs[] | select(.id >= $first and .id <= $last)] | length" "$TD/out")" 20 \
    "all 20 succeeded"

td_stop
ok $? "tesseld stops cleanly"
done_testing
