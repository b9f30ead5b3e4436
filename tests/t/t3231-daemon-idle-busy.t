#!/bin/sh
# t3231-daemon-idle-busy.t - idle reclamation's setting and what counts as work
# (docs/suspend.md, "Idle reclamation"): the queue's idle_reclaim through the API and `tessel
# queues`, bad values refused with nothing stored (API 400 naming the field, the CLI's exit 2);
# in a queue whose idle time is 3 s, a job that launches a kernel every 0.1 s, a job that
# copies 4 KiB to the GPU every 0.1 s and a job that says --idle-reclaim=off are never
# reclaimed, while a job started after them, holding memory and idle, is (so they ran
# idle-time-long and more before it); the busy jobs' launches and copies all succeeded.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start
cli() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" HOME="$TD" "$TESSEL_BUILD/bin/tessel" "$@"; }
njobs() { api GET /v1/jobs && jq '.jobs | length' "$TD/out"; }

for bad in '"30"' '-1' '"31d"' '"soon"' 'true' '2592001'; do
    api POST /v1/queues "{\"name\":\"bad\",\"idle_reclaim\":$bad}"
    is "$CODE $(jget .error.field)" "400 idle_reclaim" "queue idle_reclaim $bad is refused (400)"
done
api GET /v1/queues/bad
is "$CODE" 404 "no queue was made by them"
api POST /v1/queues '{"name":"lab","idle_reclaim":"3s"}'
is "$CODE $(jget .idle_reclaim)" "201 3" "queue lab: 3 s (a duration string)"
api PATCH /v1/queues/lab '{"idle_reclaim":"31d"}'
is "$CODE $(jget .error.field)" "400 idle_reclaim" "31 days is past the bound (400)"
api GET /v1/queues/lab
is "$(jget .idle_reclaim)" 3 "and lab keeps its 3 s"
cli queues add scratch --idle-reclaim 30m >/dev/null 2>&1
api GET /v1/queues/scratch
is "$(jget .idle_reclaim)" 1800 "tessel queues add --idle-reclaim 30m"
cli queues set scratch --idle-reclaim off >/dev/null 2>&1
api GET /v1/queues/scratch
is "$(jget .idle_reclaim)" 0 "tessel queues set --idle-reclaim off"
cli queues set scratch --idle-reclaim 30 >/dev/null 2>&1
is $? 2 "tessel queues set --idle-reclaim 30 (no unit) exits 2"
cli queues >"$TD/q" 2>&1
grep -q "^lab .* 3s " "$TD/q"; ok $? "tessel queues shows lab's idle time in its IDLE column"

N0=$(njobs)
api POST /v1/jobs '{"argv":["true"],"idle_reclaim":"soon"}'
is "$CODE $(jget .error.field)" "400 idle_reclaim" "a job's idle_reclaim \"soon\" is refused (400)"
api POST /v1/jobs '{"argv":["true"],"idle_reclaim":-5}'
is "$CODE $(jget .error.field)" "400 idle_reclaim" "a job's idle_reclaim -5 is refused (400)"
cli run -d --idle-reclaim=bogus true >/dev/null 2>&1
is $? 2 "tessel run --idle-reclaim=bogus exits 2"
is "$(njobs)" "$N0" "no job was stored by them"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"modload\",\"launchuntil:k:$G/busy\"],\"gpu\":0.25,\"queue\":\"lab\",$ENV}"
BUSY=$(jget .id)
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"waitfile:$G/off\"],\"gpu\":0.25,\"queue\":\"lab\",\"idle_reclaim\":\"off\",$ENV}"
OFF=$(jget .id)
is "$CODE $(jget .idle_reclaim)" "201 0" "a job that says off: its idle_reclaim is 0 (never)"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"copyuntil:$G/copy\"],\"gpu\":0.25,\"queue\":\"lab\",$ENV}"
COPY=$(jget .id)
wait_for "logs $OFF | grep -q '^alloc mem rc=0'" && wait_for "logs $BUSY | grep -q '^modload rc=0'" &&
    wait_for "logs $COPY | grep -q '^alloc mem rc=0'"
ok $? "the busy job launches, the copying job copies, the off job holds 256 MiB idle"

api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"waitfile:$G/c\"],\"gpu\":0.25,\"queue\":\"lab\",$ENV}"
C=$(jget .id)
wait_for "logs $C | grep -q '^alloc mem rc=0'"; ok $? "a third job, started after both, holds 256 MiB idle"
wait_for '[ "$(job_state $C)" = suspended ]'; ok $? "the third job is reclaimed"
api GET "/v1/jobs/$C"
is "$(jget .suspended_reason)" idle "for idleness"
is "$(job_state "$BUSY")" running "the busy job, idle never 3 s, is not reclaimed"
is "$(job_state "$OFF")" running "the off job, idle longer than 3 s, is not reclaimed"
is "$(job_state "$COPY")" running "the copying job (copies are GPU work) is not reclaimed"
for j in $BUSY $OFF $COPY; do
    api GET "/v1/jobs/$j/events"
    is "$(jq '[.events[] | select(.event == "suspend")] | length' "$TD/out")" 0 \
        "job $j has no suspend in its history"
done
touch "$G/busy" "$G/off" "$G/copy"
wait_for '[ "$(job_state $BUSY)" = succeeded ] && [ "$(job_state $OFF)" = succeeded ] && [ "$(job_state $COPY)" = succeeded ]'
ok $? "all three end"
logs "$BUSY" | grep -Eq '^launchuntil k n=[1-9][0-9]* bad=0 rc=0$'
ok $? "every launch of the busy job succeeded: $(logs "$BUSY" | grep launchuntil)"
logs "$COPY" | grep -Eq '^copyuntil n=[1-9][0-9]* bad=0$'
ok $? "every copy of the copying job succeeded: $(logs "$COPY" | grep copyuntil)"
api POST "/v1/jobs/$C/cancel"
wait_for '[ "$(job_state $C)" = cancelled ]'; ok $? "the reclaimed job is cancelled"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
