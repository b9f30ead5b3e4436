#!/bin/sh
# t7040-ctr-exec-unstoppable.t - a container job cannot freeze its shim through exec's look-up
# (security review of 2026-11-27, high): the shim forks a process that looks the program up
# in the container before crun exec (docs/terminal.md, "Container jobs").  With the user's real
# ids that process could be stopped (SIGSTOP) by the job's own processes, which see the shim's
# children (no pid namespace), and the shim, waiting for it, hung: no cancel, no time limit.
# Here a process of the job (tests/agent/ctrstop, as nobody) sends SIGSTOP to every child of
# the shim it meets while the owner runs exec after exec: every exec ends, no signal to a
# process of the shim's (named tessel-shim) is allowed (the exec'd programs are the user's
# own), the job is then cancelled and ends.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/container.sh"
. "$TESSEL_SRCDIR/tests/lib/ctrterm.sh"
STOP=$TESSEL_BUILD/tests/agent/ctrstop
[ -x "$STOP" ] || missing "tests/agent/ctrstop not built"
ctrterm_daemon
mkdir -p "$TD/data/images/stopimg"
chmod 755 "$TD/data/images/stopimg"
TESSEL_BUILD="$TESSEL_BUILD" sh "$TESSEL_SRCDIR/tests/lib/mkimage.sh" \
    "$TD/data/images/stopimg/1/rootfs" "$STOP" >"$TD/mkimage.log" 2>&1 ||
    { cat "$TD/mkimage.log"; missing "the image stopimg:1 could not be built"; }

J=$(nbjob '{"argv":["sh","-c","ctrstop $PPID >/tmp/stop.log 2>&1 & exec sleep 300"],"image":"stopimg:1"}')
is "$CODE" 201 "a container job running ctrstop is accepted"
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = running ]'; ok $? "it runs"
n=0 done_ok=0
while [ $n -lt 30 ]; do
    timeout 30 sh -c 'cd "$1" && TESSEL_TOKEN="$2" "$3" exec "$4" -- true' _ "$W" "$NB" "$TCLI" "$J" \
        </dev/null >/dev/null 2>&1 || break # a hung shim: the rest would hang too
    done_ok=$((done_ok + 1)) n=$((n + 1))
done
is "$done_ok" 30 "30 execs under a process that stops every child of the shim it meets: each ends (0)"
timeout 30 sh -c 'cd "$1" && TESSEL_TOKEN="$2" "$3" exec "$4" -- cat /tmp/stop.log' _ "$W" "$NB" "$TCLI" "$J" \
    </dev/null >"$TD/stop.log" 2>&1
saw=$(grep -c '^saw ' "$TD/stop.log")
[ "$saw" -ge 1 ]; ok $? "ctrstop met the shim's children ($saw)"
is "$(grep -c '^stopped [0-9]* tessel-shim$' "$TD/stop.log")" 0 \
    "no process of the shim's could be stopped by the job's user (its own exec'd ones: $(grep -c '^stopped ' "$TD/stop.log"))"
api POST "/v1/jobs/$J/cancel" "" "$NB"
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = cancelled ]'; ok $? "the job is cancelled and ends"
td_stop; ok $? "tesseld stops cleanly"
done_testing
