#!/bin/sh
# t7033-term-exec.t - `tessel exec JOB -- CMD` and `tessel shell JOB` (docs/terminal.md): a new
# process in a running job of nobody's (one without a terminal of its own), under tesseld as
# root:
#   - it runs as nobody, with the job's environment (a variable of the submission) and
#     LD_PRELOAD, in the job's cwd, in the job's own mount namespace (the same namespace as
#     the job's first process), on a terminal of its own; its exit status (6) is tessel exec's;
#   - a program that does not exist: 125 and the reason;
#   - an admin: 403, another user: 404, a finished job: 1 "not running", a bad argv: 400;
#   - tessel shell (expect): a login shell in the job, its status;
#   - the job ending while an exec'd process runs: that process is killed with the job, its
#     client told, status 137.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
term_daemon
NBUID=$(id -u nobody)
INTERPOSER=$(realpath "$TESSEL_BUILD/lib/libtessel-cuda.so")

J=$(nbjob "{\"argv\":[\"sleep\",\"300\"],\"cwd\":\"$W\",\"env\":{\"MYVAR\":\"in-job\",\"SHELL\":\"/bin/sh\"}}")
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = running ]'
wait_for '[ -s "$TD/data/jobs/$J/pid" ]'
read -r _ _ JOBPID <"$TD/data/jobs/$J/pid"
JOBNS=$(readlink "/proc/$JOBPID/ns/mnt")

nbtessel exec "$J" -- sh -c 'id -u; echo "var=$MYVAR"; echo "preload=$LD_PRELOAD"; readlink /proc/self/ns/mnt; pwd; tty; exit 6' \
    </dev/null >"$TD/x" 2>"$TD/x.err"
is "$?" 6 "tessel exec exits with the command's status (6)"
X=$(tr -d '\r' <"$TD/x")
diag "$(printf '%s\n' "$X" | sed 's/^/  /')"
is "$(printf '%s\n' "$X" | sed -n 1p)" "$NBUID" "it runs as the job's account (nobody)"
is "$(printf '%s\n' "$X" | sed -n 2p)" "var=in-job" "with the job's environment"
printf '%s\n' "$X" | sed -n 3p | grep -q "^preload=$INTERPOSER"
ok $? "with the job's LD_PRELOAD (the interposer)"
is "$(printf '%s\n' "$X" | sed -n 4p)" "$JOBNS" "in the job's own mount namespace"
is "$(printf '%s\n' "$X" | sed -n 5p)" "$W" "in the job's cwd"
printf '%s\n' "$X" | sed -n 6p | grep -q '^/dev/pts/'
ok $? "on a terminal of its own"

nbtessel exec "$J" -- /no/such/program </dev/null >"$TD/x" 2>&1
is "$?" 125 "a program that does not exist: 125"
diag "$(cat "$TD/x")"
grep -q "No such file" "$TD/x"
ok $? "... with the reason"

TESSEL_TOKEN="$TD_ADMIN" tcli exec "$J" -- true
is "$RC" 1 "an admin's exec into nobody's job: exit 1"
grep -q "only its owner" "$TD/e"
ok $? "... only its owner may"
TESSEL_TOKEN="$BOB" tcli exec "$J" -- true
is "$RC" 1 "another user's: exit 1"
grep -q "no job" "$TD/e"
ok $? "... no such job for them"
KEY='dGhlIHNhbXBsZSBub25jZQ=='
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -H "Authorization: Bearer $NB" \
    -H 'Upgrade: websocket' -H 'Connection: Upgrade' -H 'Sec-WebSocket-Version: 13' \
    -H "Sec-WebSocket-Key: $KEY" "$TD_URL/v1/jobs/$J/exec?argv=%5B%22%22%5D")
is "$CODE $(jget .error.field)" "400 argv" "argv [\"\"]: 400"
CODE=$(curl -s -o "$TD/out" -w '%{http_code}' -H "Authorization: Bearer $NB" \
    "$TD_URL/v1/jobs/$J/exec")
is "$CODE $(jget .error.field)" "400 argv" "no argv: 400"

cat >"$TD/shell.exp" <<EXP
set timeout 20
set env(TESSEL_URL) $TD_URL
set env(TESSEL_TOKEN) $NB
spawn -noecho $TCLI shell $J
send "echo in-shell-\\\$((2+3)) \\\$MYVAR; exit 2\r"
expect {
    -re {in-shell-5 in-job} { send_user "\nSTEP shell ok\n" }
    timeout { send_user "\nSTEP shell failed\n"; exit 1 }
}
expect eof
set r [wait]
send_user "\nSTEP shell status [lindex \$r 3]\n"
EXP
texpect "$TD/shell.exp"
diag "$(tr -d '\r' <"$TD/expect.log" | sed 's/^/  /')"
grep -q "STEP shell ok" "$TD/expect.log"
ok $? "tessel shell: a shell in the job, with its environment"
grep -q "STEP shell status 2" "$TD/expect.log"
ok $? "... its exit status (2)"

nbtessel exec "$J" -- sleep 100 </dev/null >"$TD/k" 2>&1 &
EX=$!
sleep 1
api POST "/v1/jobs/$J/cancel" "" "$NB"
wait "$EX"
is "$?" 137 "the job ends while an exec'd process runs: it is killed with the job (137)"
grep -q "the job has ended" "$TD/k"
ok $? "... and its client told"
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = cancelled ]'
nbtessel exec "$J" -- true </dev/null >"$TD/x" 2>&1
is "$?" 1 "exec into a finished job: exit 1"
grep -q "is not running" "$TD/x"
ok $? "... not running"
td_stop
ok $? "tesseld stops cleanly"
done_testing
