#!/bin/sh
# t3244-daemon-idle-inherit.t - a queue's idle_reclaim inherited down the queue tree, and the
# queue's time as the most its jobs may ask (docs/suspend.md, "The setting"; migration 24; the
# review RV15b's L4).  Queue org says 30m; its child lab says nothing and takes org's (the
# API's idle_reclaim, idle_reclaim_own null and idle_reclaim_from org; `tessel queues`'s IDLE
# column "30m(org)"), its child fast says 10m, its child ops says off and ops's child keeps
# off; a change of org's time reaches lab at once; lab set, then back to inherit (API and
# CLI); a top-level queue that inherits says never.  Bad values are refused (400, `tessel
# queues` exit 2) with nothing changed.  A user (not an admin) who asks a longer time than
# their queue's, or off, is refused 422 naming the queue, its time and where it is set, with
# nothing stored; a shorter one (at or above the floor) and the queue's are accepted; an
# admin may ask anything.  Then a job of a child queue that says nothing is reclaimed after
# its parent's time (3 s), and its next call restores it.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ARGS="$ARGS --submit-rate 0"
ckpt_start
cli() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="${CLI_TOK:-$TD_ADMIN}" HOME="$TD" "$TESSEL_BUILD/bin/tessel" "$@"; }
q() { api GET "/v1/queues/$1" && jq -r '"\(.idle_reclaim) \(.idle_reclaim_own) \(.idle_reclaim_from)"' "$TD/out"; }
njobs() { api GET /v1/jobs && jq '.jobs | length' "$TD/out"; }

# --- inheritance ---------------------------------------------------------------------------
api POST /v1/queues '{"name":"org","idle_reclaim":"30m"}'
is "$CODE" 201 "org: 30m"
api POST /v1/queues '{"name":"lab","parent":"org"}'
is "$CODE $(jget .idle_reclaim) $(jget .idle_reclaim_own) $(jget .idle_reclaim_from)" \
    "201 1800 null org" "lab, which says nothing, takes org's 30m (own null, from org)"
api POST /v1/queues '{"name":"fast","parent":"org","idle_reclaim":"10m"}'
is "$(q fast)" "600 600 fast" "fast's own 10m wins over org's"
api POST /v1/queues '{"name":"ops","parent":"org","idle_reclaim":"off"}'
is "$(q ops)" "0 0 ops" "ops says off: never, its own"
api POST /v1/queues '{"name":"opskid","parent":"ops"}'
is "$(q opskid)" "0 null ops" "ops's child keeps ops's off"
api POST /v1/queues '{"name":"solo"}'
is "$(q solo)" "0 null null" "a top-level queue that says nothing: never, from no queue"
is "$(q default)" "0 null null" "so does the default queue"

cli queues >"$TD/q" 2>&1
grep -q "^  lab .* 30m(org) " "$TD/q"; ok $? "tessel queues: lab's IDLE is 30m(org)"
grep -q "^  fast .* 10m " "$TD/q"; ok $? "fast's IDLE is its own 10m"
grep -q "^    opskid .* off(ops) " "$TD/q"; ok $? "opskid's IDLE is off(ops)"
grep -q "^solo .* - " "$TD/q"; ok $? "solo's IDLE is -"

api PATCH /v1/queues/org '{"idle_reclaim":"1h"}'
is "$CODE $(q lab)" "200 3600 null org" "org set to 1h: lab takes it at once"
api PATCH /v1/queues/lab '{"idle_reclaim":120}'
is "$CODE $(q lab)" "200 120 120 lab" "lab set to 120 s: its own"
api PATCH /v1/queues/lab '{"idle_reclaim":"inherit"}'
is "$CODE $(q lab)" "200 3600 null org" "lab back to inherit (\"inherit\"): org's again"
cli queues set lab --idle-reclaim 2m >/dev/null 2>&1
is "$?:$(q lab)" "0:120 120 lab" "tessel queues set lab --idle-reclaim 2m"
cli queues set lab --idle-reclaim inherit >/dev/null 2>&1
is "$?:$(q lab)" "0:3600 null org" "tessel queues set lab --idle-reclaim inherit"
api PATCH /v1/queues/fast '{"idle_reclaim":null}'
is "$CODE $(q fast)" "200 3600 null org" "null is inherit too"

# --- bad values: refused, nothing changed --------------------------------------------------
for bad in '"soon"' '-5' '"inherits"' '2592001' 'true'; do
    api PATCH /v1/queues/lab "{\"idle_reclaim\":$bad}"
    is "$CODE $(jget .error.code) $(jget .error.field)" "400 invalid_value idle_reclaim" \
        "idle_reclaim $bad refused: $(jget .error.message)"
done
is "$(q lab)" "3600 null org" "lab unchanged"
cli queues set lab --idle-reclaim bogus >"$TD/o" 2>&1
is "$?" 2 "tessel queues set --idle-reclaim bogus exits 2: $(head -1 "$TD/o")"
is "$(q lab)" "3600 null org" "lab still unchanged"

# --- the queue's time is the most its jobs may ask (not an admin's) ------------------------
ATOK=$(token_of alice)
BEFORE=$(njobs)
api POST /v1/jobs '{"argv":["true"],"queue":"lab","idle_reclaim":"2h"}' "$ATOK"
is "$CODE $(jget .error.code) $(jget .error.field)" "422 unsatisfiable idle_reclaim" \
    "alice's 2h in lab (1h from org) is refused"
is "$(jget .error.message)" \
    "idle_reclaim 2h is above queue 'lab''s idle time of 1h, from its parent queue 'org', the most its jobs may ask: ask 1h or less, or leave it out (its queue's); only an admin may submit a job with a longer time or \"off\"" \
    "naming the queue, its time and where it is set"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","idle_reclaim":"off"}' "$ATOK"
is "$CODE $(jget .error.field)" "422 idle_reclaim" "alice's off in lab is refused"
jget .error.message | grep -q "^idle_reclaim off is above queue 'lab'"; ok $? "naming off"
api PATCH /v1/queues/fast '{"idle_reclaim":"10m"}'
api POST /v1/jobs '{"argv":["true"],"queue":"fast","idle_reclaim":"20m"}' "$ATOK"
is "$CODE $(jget .error.message)" \
    "422 idle_reclaim 20m is above queue 'fast''s idle time of 10m, the most its jobs may ask: ask 10m or less, or leave it out (its queue's); only an admin may submit a job with a longer time or \"off\"" \
    "20m in fast (its own 10m) is refused, with no parent named"
CLI_TOK=$ATOK cli run -d --queue lab --idle-reclaim=off true >"$TD/o" 2>&1
RC=$?
[ "$RC" -ne 0 ] && grep -q "above queue 'lab'" "$TD/o"
ok $? "tessel run --idle-reclaim=off in lab fails ($RC): $(head -1 "$TD/o")"
is "$(njobs)" "$BEFORE" "nothing was stored"

api POST /v1/jobs '{"argv":["true"],"queue":"lab","idle_reclaim":"30m"}' "$ATOK"
is "$CODE $(jget .idle_reclaim)" "201 1800" "a shorter time (30m) is accepted"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","idle_reclaim":"1h"}' "$ATOK"
is "$CODE $(jget .idle_reclaim)" "201 3600" "the queue's own time (1h) is accepted"
api POST /v1/jobs '{"argv":["true"],"queue":"lab"}' "$ATOK"
is "$CODE $(jget .idle_reclaim)" "201 null" "its queue's (null) is accepted"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","idle_reclaim":"1m"}' "$ATOK"
is "$CODE $(jget .error.field)" "422 idle_reclaim" "below the floor (1m < 5m) still refused"
api POST /v1/jobs '{"argv":["true"],"queue":"opskid","idle_reclaim":"off"}' "$ATOK"
is "$CODE $(jget .idle_reclaim)" "201 0" "off in a queue that says never is accepted"
api POST /v1/jobs '{"argv":["true"],"queue":"solo","idle_reclaim":"1d"}' "$ATOK"
is "$CODE $(jget .idle_reclaim)" "201 86400" "any time in a queue with none"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","idle_reclaim":"off"}'
is "$CODE $(jget .idle_reclaim)" "201 0" "an admin may submit off in lab"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","idle_reclaim":"2h"}'
is "$CODE $(jget .idle_reclaim)" "201 7200" "and a longer time"

# --- at run time: a child that says nothing is reclaimed after its parent's time ----------
api PATCH /v1/queues/org '{"idle_reclaim":"3s"}'
is "$CODE $(q lab)" "200 3 null org" "org: 3 s (an admin's), lab inherits it"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:128M\",\"pattern:128M\",\"modload\",\"waitfile:$G/a\",\"launch:k\",\"check:128M\"],\"gpu\":0.5,\"queue\":\"lab\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^modload rc=0'"; ok $? "job A of lab holds 128 MiB with its pattern, then waits"
wait_for '[ "$(api GET /v1/jobs/'"$A"' && jget .suspended_reason)" = idle ]'
ok $? "A, idle, is reclaimed after org's 3 s"
touch "$G/a"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "its next call restores it, and it ends"
logs "$A" | grep -q '^check ok'; ok $? "every byte of its pattern is back"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
