#!/bin/sh
# t3242-daemon-idle-again.t - a job restored from an idle reclamation is not reclaimed again
# before it has been back for its idle time (docs/suspend.md, "How often a job may be
# reclaimed"): queue lab's idle time is 4 s; job A (256 MiB with a pattern) is reclaimed, its
# next call (a launch) restores it, and it then idles again: its second reclamation is recorded
# at least 4 s after the restore's resume event (the times tesseld stores, not a stopwatch of
# the test), with no reclamation between; its next call restores it again and its pattern is
# intact.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/ckpt.sh"
ckpt_start
# ev N EVENT: the time, in ms since the epoch, of job A's Nth event EVENT (1 the first)
ev() {
    api GET "/v1/jobs/$A/events" >/dev/null
    jq -r --argjson n "$1" --arg e "$2" \
        '[.events[] | select(.event == $e)] | .[$n - 1].time // empty |
         ((.[0:19] + "Z" | fromdateiso8601) * 1000 + (.[20:23] | tonumber))' "$TD/out"
}
nev() { api GET "/v1/jobs/$A/events" && jq --arg e "$1" '[.events[] | select(.event == $e)] | length' "$TD/out"; }

api POST /v1/queues '{"name":"lab","idle_reclaim":"4s"}'
is "$CODE $(jget .idle_reclaim)" "201 4" "queue lab: 4 s of idleness (an admin's setting)"
api POST /v1/jobs "{\"argv\":[\"$PROBE\",\"ctx\",\"alloc:mem:256M\",\"pattern:256M\",\"modload\",\"waitfile:$G/a\",\"launch:k\",\"waitfile:$G/a2\",\"launch:k\",\"check:256M\"],\"gpu\":0.5,\"queue\":\"lab\",$ENV}"
A=$(jget .id)
wait_for "logs $A | grep -q '^modload rc=0'"; ok $? "A holds 256 MiB with its pattern, then waits"
wait_for '[ "$(nev suspend)" = 1 ]'; ok $? "A, idle, is reclaimed"
api GET "/v1/jobs/$A"
is "$(jget .state) $(jget .suspended_reason)" "suspended idle" "suspended for idleness"

touch "$G/a" # its next call: a launch
wait_for "logs $A | grep -q '^launch k rc=0'"; ok $? "its launch asks for its GPU and goes on once restored"
R1=$(ev 1 resume)
[ -n "$R1" ]; ok $? "the restore's resume event is recorded ($R1)"

wait_for '[ "$(nev suspend)" = 2 ]'; ok $? "idle again, A is reclaimed a second time"
S2=$(ev 2 suspend)
[ -n "$S2" ] && [ $((S2 - R1)) -ge 4000 ]
ok $? "not before it was back for its idle time: $((S2 - R1)) ms from the resume to the second reclamation (at least 4000)"
is "$(nev resume)" 1 "no other reclamation and restore between"

touch "$G/a2"
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "its next call restores it again, and it ends"
logs "$A" | grep -q '^check ok'; ok $? "every byte of its pattern is back"
is "$(nev suspend) $(nev resume)" "2 2" "two reclamations, two restores"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
done_testing
