#!/bin/sh
# t7037-term-exec-ns.t - the security review's low finding on exec (docs/terminal.md, "Exec";
# docs/security.md): exec joins the mount namespace the shim made for the job, through a
# descriptor the job's first process passed to the shim before any of the job's code ran,
# never /proc/JOBPID/ns/mnt at exec time. Under --allow-user-namespaces a job whose first
# process moves itself to a namespace of its own (unshare -Urm, then sleep in the same
# process) does not take exec (a root process until its setuid) into that namespace.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
command -v unshare >/dev/null || missing "unshare (util-linux) is needed"
term_daemon --allow-user-namespaces

# A job that stays in the shim's namespace: exec is there (as before).
J=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"cwd\":\"$W\"}")
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = running ]'
wait_for '[ -s "$TD/data/jobs/$J/pid" ]'
read -r _ _ JOBPID <"$TD/data/jobs/$J/pid"
nbtessel exec "$J" -- readlink /proc/self/ns/mnt </dev/null >"$TD/x" 2>"$TD/x.err"
is "$?" 0 "exec into a plain job: 0"
is "$(tr -d '\r' <"$TD/x")" "$(readlink "/proc/$JOBPID/ns/mnt")" "... in the job's namespace"

# A job whose first process unshares: exec stays in the namespace the shim made.
U=$(nbjob "{\"argv\":[\"unshare\",\"-Urm\",\"sleep\",\"300\"],\"cwd\":\"$W\"}")
wait_for '[ "$(api GET /v1/jobs/$U "" "$NB"; jget .state)" = running ]'
wait_for '[ -s "$TD/data/jobs/$U/pid" ]'
read -r _ _ UPID <"$TD/data/jobs/$U/pid"
wait_for '[ "$(cat /proc/$UPID/comm 2>/dev/null)" = sleep ]'
NOW=$(readlink "/proc/$UPID/ns/mnt")
SHIMNS=$(readlink "/proc/$(ps -o ppid= -p "$UPID" | tr -d ' ')/ns/mnt")
[ -n "$NOW" ] && [ "$NOW" != "$(readlink /proc/self/ns/mnt)" ]
ok $? "the job's first process is now in a namespace of its own ($NOW)"
nbtessel exec "$U" -- readlink /proc/self/ns/mnt </dev/null >"$TD/x" 2>"$TD/x.err"
is "$?" 0 "exec into it: 0"
X=$(tr -d '\r' <"$TD/x")
diag "exec's namespace: $X; the job's now: $NOW; the shim's: $SHIMNS"
[ -n "$X" ] && [ "$X" != "$NOW" ]
ok $? "exec did not join the namespace the job made itself"
[ "$X" != "$(readlink /proc/self/ns/mnt)" ]
ok $? "... nor the host's: the one the shim made"
td_stop; ok $? "tesseld stops cleanly"
done_testing
