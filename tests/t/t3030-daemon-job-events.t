#!/bin/sh
# t3030-daemon-job-events.t - the job model's history through the API and the CLI: a job's
# events (GET /v1/jobs/ID/events) come in order with who and why for a run that exits, a
# cancel of a running job and of a pending one, and a preemption that requeues (the preempting
# event names the job and queue it makes room for); the job's end_cause says why it ended;
# another user gets 404; `tessel show` prints the fields and the history (and --json both);
# the history survives a restart, and a restart during a preemption carries it on from the
# store's columns.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ -x "$TESSEL_BUILD/bin/tessel" ] || missing "$TESSEL_BUILD/bin/tessel"

td_setup
# --min-runtime 0: a job may be preempted as soon as it runs.
FLAGS="--fake-gpus 2xT4:16G --no-cgroups --min-runtime 0 --allow-root-jobs"
td_start $FLAGS || missing "tesseld did not start"
G="$TD/go"
mkdir -p "$G"
# held QUEUE NAME [EXTRA JSON]: a one-GPU job that runs until the go-file NAME exists.
held() {
    api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $G/$2 ]; do sleep 0.05; done\"],\"gpu\":1,\"queue\":\"$1\",\"name\":\"$2\"$3}"
    jget .id
}
# events ID -> "event:from>to ..." of its history (spawned left out: one or two per start).
events() {
    api GET "/v1/jobs/$1/events"
    jget '[.events[] | select(.event != "spawned") | "\(.event):\(.from // "-")>\(.to)"] | join(" ")'
}

# --- a run that exits 3 ----------------------------------------------------------------------
api POST /v1/jobs '{"argv":["sh","-c","exit 3"]}'
E=$(jget .id)
wait_for '[ "$(job_state $E)" = failed ]'; ok $? "a job exiting 3 fails"
api GET "/v1/jobs/$E"
is "$(jget .end_cause) $(jget .exit_code) $(jget .reason)" "exit 3 exited with status 3" \
    "its end_cause is exit, beside the reason"
is "$(events $E)" "submit:->pending start:pending>running fail:running>failed" \
    "its events: submit, start, fail"
api GET "/v1/jobs/$E/events"
is "$(jget '.events[0].who') $(jget '.events[0].detail.queue') $(jget '.events[-1].who')" \
    "admin default tesseld" "submitted by admin to queue default; the end is tesseld's"
is "$(jget '.events[-1].detail.exit_code') $(jget '.events[-1].detail.end_cause')" "3 exit" \
    "the end event carries the exit code and cause"
is "$(jget '[.events[].id] | . == sort') $(jget '.job')" "true $E" "oldest first, for job $E"

# --- cancel of a running job, and of a pending one ---------------------------------------------
api POST /v1/queues '{"name":"hold","limit":{"gpu":0}}'
is "$CODE" 201 "a queue that can run nothing"
C=$(held default c)
wait_for '[ "$(job_state $C)" = running ] && [ -s "$TD/data/jobs/$C/pid" ]'
ok $? "a job runs"
api POST "/v1/jobs/$C/cancel" '{}'
is "$CODE $(jget .reason)" "200 cancelling" "its cancel is asked"
wait_for '[ "$(job_state $C)" = cancelled ]'; ok $? "it ends cancelled"
api GET "/v1/jobs/$C"
is "$(jget .end_cause)" "cancelled" "end_cause cancelled"
is "$(events $C)" "submit:->pending start:pending>running kill:running>running killed:running>cancelled" \
    "its events: submit, start, kill, killed"
api GET "/v1/jobs/$C/events"
is "$(jget '[.events[] | select(.event == "kill")][0] | "\(.who) \(.why)"')" "admin cancelling" \
    "the kill was admin's"
case "$(jget '.events[-1].why')" in "cancelled by admin ("*) r=0 ;; *) r=1 ;; esac
ok $r "the end says by whom: $(jget '.events[-1].why')"
api POST /v1/jobs '{"argv":["true"],"gpu":1,"queue":"hold"}'
H=$(jget .id)
api POST "/v1/jobs/$H/cancel" '{}'
is "$CODE $(jget .state) $(jget .end_cause)" "200 cancelled cancelled" "a pending job is cancelled at once"
is "$(events $H)" "submit:->pending cancel:pending>cancelled" "its events: submit, cancel"

# --- who may read a history --------------------------------------------------------------------
api POST /v1/users '{"name":"bob"}'
api POST /v1/tokens '{"user":"bob"}'
BOB=$(jget .token)
api GET "/v1/jobs/$C/events" "" "$BOB"
is "$CODE $(jget .error.code)" "404 not_found" "another user's job history: 404"
api GET "/v1/jobs/999999/events"
is "$CODE" 404 "an unknown job: 404"
api GET "/v1/jobs/x/events"
is "$CODE" 404 "not a job id: 404"

# --- preemption with requeue --------------------------------------------------------------------
api POST /v1/queues '{"name":"a","guarantee":{"gpu":1}}'
api POST /v1/queues '{"name":"b","guarantee":{"gpu":1}}'
is "$CODE" 201 "queues a and b, each guaranteed 1 GPU"
A1=$(held a a1)
A2=$(held a a2)
wait_for '[ "$(job_state $A1)" = running ] && [ "$(job_state $A2)" = running ]'
ok $? "with b idle, a borrows both GPUs"
B1=$(held b b1)
wait_for '[ "$(job_state $B1)" = running ]'; ok $? "b's job runs"
is "$(job_state $A1) $(job_state $A2)" "running pending" "a's youngest job was preempted, requeued"
is "$(events $A2)" "submit:->pending start:pending>running preempt:running>running requeue:running>pending" \
    "its events: submit, start, preempt, requeue"
api GET "/v1/jobs/$A2/events"
is "$(jget '[.events[] | select(.event == "preempt")][0] | "\(.who) \(.detail.preempt_for) \(.detail.preempt_queue)"')" \
    "tesseld $B1 b" "the preempt event names the job and queue it makes room for"
is "$(jget '.events[-1].why')" "requeued: preempted to make room for job $B1 of queue 'b'" \
    "the requeue says why"
api GET "/v1/jobs/$A2"
is "$(jget .end_cause) $(jget .preemptions)" "null 1" "pending again: no end cause, 1 preemption"

# --- tessel show --------------------------------------------------------------------------------
TS() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="${TOK:-$TD_ADMIN}" XDG_CONFIG_HOME="$TD" "$TESSEL_BUILD/bin/tessel" "$@"; }
TS show "$C" >"$TD/show.out" 2>"$TD/show.err"
is "$?" 0 "tessel show JOB"
grep -qE '^end_cause +cancelled$' "$TD/show.out"; ok $? "it shows the end cause"
grep -qE '^state +cancelled$' "$TD/show.out"; ok $? "and the state"
grep -qE '^TIME +WHO +EVENT +FROM +TO +WHY +DETAIL$' "$TD/show.out"; ok $? "then the history's table"
grep -qE ' admin +kill +running +running +cancelling ' "$TD/show.out"; ok $? "with the kill, by admin"
TS show --json "$A2" >"$TD/show.json"
is "$(jq -r '"\(.job.id) \(.events | length > 3) \(.events[0].event)"' "$TD/show.json")" "$A2 true submit" \
    "--json: the job and its events"
TOK=$BOB TS show "$C" >/dev/null 2>"$TD/show.err"
is "$?" 1 "another user's job: exit 1"
TS show 12x >/dev/null 2>&1
is "$?" 2 "a bad job id: usage error"

# --- restart: the history stays; a preemption under way goes on -----------------------------
N=$(api GET "/v1/jobs/$C/events"; jget '.events | length')
td_stop; ok $? "tesseld stops cleanly"
td_start $FLAGS || missing "tesseld did not restart"
api GET "/v1/jobs/$C/events"
is "$(jget '.events | length')" "$N" "after a restart the history is all there"
# A preemption under way when tesseld is killed: the store holds it in columns only (the
# reason is no help: 'x').  b1 ends; a1 is marked preempting for it since long ago, as a
# killed tesseld leaves it; the restarted one carries the stop on (its grace is over: SIGKILL)
# and requeues a1 for that job and queue.
touch "$G/b1"
wait_for '[ "$(job_state $B1)" = succeeded ]'; ok $? "b's job ends"
wait_for '[ "$(job_state $A2)" = running ]'; ok $? "a's requeued job runs again"
command -v sqlite3 >/dev/null || missing "sqlite3"
td_kill9
sqlite3 "$TD/data/tessel.db" "UPDATE jobs SET preempt_for = $B1, preempt_queue = 'b', preempt_ms = 1, reason = 'x' WHERE id = $A1"
td_start $FLAGS || missing "tesseld did not restart"
wait_for 'api GET "/v1/jobs/$A1/events"; [ "$(jget "[.events[].event] | index(\"requeue\")")" != null ]'
ok $? "the restarted tesseld carries the preemption on: a1 is requeued"
is "$(jget '[.events[] | select(.event == "requeue")][0] | "\(.who): \(.why)"')" \
    "tesseld: requeued: preempted to make room for job $B1 of queue 'b'" \
    "for the job and queue the store's columns name"
touch "$G/a1"
wait_for '[ "$(job_state $A1)" = succeeded ]'; ok $? "a1's next attempt succeeds"
api GET "/v1/jobs/$A1"
is "$(jget .end_cause) $(jget .preemptions)" "exit 1" "end_cause exit, 1 preemption"
touch "$G/a2" "$G/c"
wait_for '[ "$(job_state $A2)" = succeeded ]'; ok $? "the requeued job finishes its second attempt"
is "$(events $A2 | tr ' ' '\n' | tail -n 2 | tr '\n' ' ')" "start:pending>running exit:running>succeeded " \
    "its history ends with the second start and the exit"
td_stop; ok $? "tesseld stops cleanly"
done_testing
