#!/bin/sh
# t3164-daemon-exit-record.t - how a job ended is what its supervisor (tessel-shim, root) saw,
# never what the job says.  With --no-cgroups nothing ends a process the job leaves behind when
# the job's first process exits: here nobody's job starts one that rewrites the job's
# directory's "exit" file ("exit 0") without pause, then exits 7.  The job is recorded failed
# with exit code 7: tesseld reads the record the shim wrote in tesseld's own directory
# (starts/ID.lock, in a 0700 directory: the exit record in the start lock itself since
# 2026-11-28, starts/ID.exit before), which the job's user cannot write, not the job's
# directory's file.
# Before 2026-11-27 the record was jobs/ID/exit, the user's: the job ended "succeeded, exit 0"
# as often as the forger replaced it between the shim's end and tesseld's read.
# A restart still learns a job's end from that record (t3002: a job that ends while tesseld is
# down).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
command -v perl >/dev/null || missing "perl is needed (the forger's loop)"
[ "$(id -u)" = 0 ] || missing "must run as root (the job's account is nobody)"
getent passwd nobody >/dev/null || missing "no 'nobody' account"

td_setup
chmod 755 "$TD"
FORGER=""
trap '[ -n "$FORGER" ] && kill "$FORGER" 2>/dev/null; td_cleanup' EXIT
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)

# The forger writes its pid first, then replaces "exit" for as long as it lives (a perl loop:
# a rename every few microseconds, no process started per round).
FORGE='open P, ">forger.pid"; print P "$$\n"; close P;
    while (1) { open F, ">e.tmp"; print F "exit 0\n"; close F; rename "e.tmp", "exit" }'
BODY=$(jq -cn --arg f "$FORGE" '{argv: ["sh", "-c",
    "perl -e \"$0\" >/dev/null 2>&1 & while [ ! -s forger.pid ]; do sleep 0.1; done; sleep 0.5; exit 7",
    $f]}')
api POST /v1/jobs "$BODY" "$NB"
is "$CODE" 201 "nobody's job is accepted"
J=$(jget .id)
wait_for "[ \"\$(job_state $J)\" != running ] && [ \"\$(job_state $J)\" != pending ]"
ok $? "the job ends"
FORGER=$(cat "$TD/data/jobs/$J/forger.pid" 2>/dev/null)
kill -0 "$FORGER" 2>/dev/null
ok $? "the process it left behind (pid $FORGER) is still rewriting jobs/$J/exit"
is "$(cat "$TD/data/jobs/$J/exit" 2>/dev/null)" "exit 0" "which says 'exit 0'"
api GET "/v1/jobs/$J" "" "$NB"
is "$(jget .state) $(jget .exit_code) $(jget .reason)" "failed 7 exited with status 7" \
    "the job is recorded failed with exit code 7, as its shim saw it"
api GET "/v1/jobs/$J/events" "" "$NB"
is "$(jq -r '.events[-1].event' "$TD/out")" fail "its last event is the failure"
ok "$([ ! -e "$TD/data/starts/$J.lock" ] && [ ! -e "$TD/data/starts/$J.exit" ]; echo $?)" \
    "the shim's record (its start lock) is gone with the job's end"
kill "$FORGER"
FORGER=""
td_stop
ok $? "tesseld stops cleanly"
done_testing
