#!/bin/sh
# t3051-daemon-coalesce.t - a burst of submissions is coalesced into a few scheduling passes:
# with passes at least 500 ms apart (--test-pass-gap-ms; the default is 5 ms) and no periodic
# tick, 200 submissions in one burst (one curl, one connection) make far fewer passes than 200
# (tessel_sched_passes_total in /metrics), and every job is handed to the scheduler: all 200
# pending behind a job that holds the only GPU, each with the scheduler's reason.  (That the
# end of a job starts the next is t3050's.)
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tesseld" ] || missing "tesseld not built"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups --submit-rate 0 --test-tick-ms 3600000 \
    --test-pass-gap-ms 500 || missing "tesseld did not start"
metric() { curl -s "$TD_URL/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

api POST /v1/jobs '{"argv":["sh","-c","while [ ! -e '"$TD"'/go ]; do sleep 0.05; done"],"gpu":1}'
A=$(jget .id)
wait_for '[ "$(job_state '"$A"')" = running ]'
ok $? "job $A holds the only GPU"
sleep 1 # the passes of its start are over
P0=$(metric tessel_sched_passes_total)
C0=$(metric tessel_sched_cycles_total)
set --
for i in $(seq 200); do set -- "$@" -o /dev/null "$TD_URL/v1/jobs"; done
curl -s -w '%{http_code}\n' -H "Authorization: Bearer $TD_ADMIN" \
    -H 'Content-Type: application/json' --data-binary '{"argv":["true"],"gpu":1}' "$@" \
    >"$TD/codes"
is "$(sort -u "$TD/codes" | tr '\n' ' ')" "201 " "200 submissions in one burst, all accepted"
api GET "/v1/jobs?state=pending"
is "$(jq '.jobs | length' "$TD/out")" 200 "all 200 pending"
# The last submissions' pass (at most one gap after the burst).
wait_for '[ "$(metric tessel_sched_passes_total)" -gt "$P0" ]'
sleep 1
P1=$(metric tessel_sched_passes_total)
C1=$(metric tessel_sched_cycles_total)
N=$((P1 - P0))
diag "200 submissions: $N pass(es), $((C1 - C0)) cycle(s)"
[ "$N" -ge 1 ] && [ "$N" -lt 50 ]
ok $? "200 submissions made $N passes: coalesced (at least 1, fewer than 50)"
[ $((C1 - C0)) -ge 1 ] && [ $((C1 - C0)) -le "$N" ]
ok $? "the passes ran $((C1 - C0)) scheduling cycle(s), one at most per pass"
api GET "/v1/jobs?state=pending"
is "$(jq '[.jobs[] | select(.reason != null)] | length' "$TD/out")" 200 \
    "each pending job has its reason from the scheduler (it was handed over)"
td_stop
ok $? "tesseld stops cleanly"
touch "$TD/go" # job $A ends (the test's cleanup kills it too)
done_testing
