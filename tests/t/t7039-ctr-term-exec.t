#!/bin/sh
# t7039-ctr-term-exec.t - `tessel exec JOB -- CMD` and `tessel shell JOB` into a running
# container job of nobody's (docs/terminal.md, "Container jobs": crun exec with a process.json
# and --console-socket), under tesseld as root with crun and the job's cgroups:
#   - the process is in the same container: a file the job's first process wrote in the
#     container's /tmp (its own writable layer, seen nowhere else) is there, the image's file
#     too, in the first process's mount namespace;
#   - it runs as nobody (id -u, id -g: never root), with no capability and no_new_privs, with
#     the job's environment (a variable of the submission) and the slice's LD_PRELOAD, in the
#     container's cwd, in the job's cgroups, on a terminal of its own of 24x80; its exit status
#     (6) is tessel exec's; it holds no descriptor but its terminal;
#   - the argv is never a shell's words ('$(id)' and ';' reach the program as they are);
#   - a program that does not exist, is not in the container's PATH or is not executable: 125
#     and the reason (looked up in the container as the user before crun exec); one in the
#     PATH runs; a command that exits 255 gives 255;
#   - an admin: refused (only its owner), another user: no such job;
#   - tessel shell (expect): a shell in the container, its status;
#   - 8 at once, the 9th refused (125, the reason);
#   - the job ending while an exec'd process runs: that process is killed with the job (its
#     client told, status 137: crun's 128+N), none of it left; exec into the ended job: 1, "not running".
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/container.sh"
. "$TESSEL_SRCDIR/tests/lib/ctrterm.sh"
ctrterm_daemon
NBUID=$(id -u nobody)
NBGID=$(id -g nobody)
INTERPOSER=$(realpath "$TESSEL_BUILD/lib/libtessel-cuda.so")

J=$(nbjob "{\"argv\":[\"sh\",\"-c\",\"echo from-first >/tmp/mark; exec sleep 300\"],\"image\":\"ttyimg:1\",\"cwd\":\"$W\",\"env\":{\"MYVAR\":\"in-job\",\"SHELL\":\"/bin/sh\"}}")
is "$CODE" 201 "a container job without a terminal is accepted"
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = running ]'
wait_for '[ -s "$TD/data/jobs/$J/pid" ]'
read -r _ _ JOBPID <"$TD/data/jobs/$J/pid"
wait_for 'tr "\0" " " <"/proc/$JOBPID/cmdline" | grep -q "^sleep 300"'
JOBNS=$(readlink "/proc/$JOBPID/ns/mnt")

nbtessel exec "$J" -- sh -c 'cat /tmp/mark; cat /etc/tessel-test-image; id -u; id -g; echo "var=$MYVAR"; echo "preload=$LD_PRELOAD"; readlink /proc/self/ns/mnt; pwd; tty; stty size; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status; echo "cgroups=$(grep -c "/job-$TESSEL_JOB_ID\$" /proc/self/cgroup)"; exit 6' \
    </dev/null >"$TD/x" 2>"$TD/x.err"
is "$?" 6 "tessel exec exits with the command's status (6)"
X=$(tr -d '\r' <"$TD/x")
diag "$(printf '%s\n' "$X" | sed 's/^/  /'; sed 's/^/  err: /' "$TD/x.err")"
line() { printf '%s\n' "$X" | sed -n "$1p"; }
is "$(line 1)" "from-first" "the file the job's first process wrote in the container's /tmp is there"
is "$(line 2)" "tessel test image" "the image's files are there"
is "$(line 3) $(line 4)" "$NBUID $NBGID" "it runs as the job's account (nobody), not root"
is "$(line 5)" "var=in-job" "with the job's environment"
line 6 | grep -q "^preload=$INTERPOSER"
ok $? "with the slice's LD_PRELOAD (the interposer first)"
is "$(line 7)" "$JOBNS" "in the container's mount namespace (the job's first process's)"
is "$(line 8)" "$W" "in the container's cwd"
line 9 | grep -q '^/dev/pts/[0-9]'
ok $? "on a terminal of its own"
is "$(line 10)" "24 80" "of 24x80 (stdin not a terminal: no size from the client)"
is "$(line 11 | tr -s '\t ' ' ') $(line 12 | tr -s '\t ' ' ')" "CapEff: 0000000000000000 NoNewPrivs: 1" \
    "no capability, no_new_privs"
line 13 | grep -q '^cgroups=[1-9]$'
ok $? "in the job's cgroups"

# Seen from the host: the exec'd process holds its terminal and nothing of the shim's or crun's.
nbtessel exec "$J" -- sleep 41 </dev/null >"$TD/x" 2>&1 &
EXS=$!
wait_for '[ -n "$(pgrep -f "^sleep 41$")" ]'
SP=$(pgrep -f "^sleep 41$" | head -n 1)
FDS=$(for f in /proc/$SP/fd/*; do readlink "$f"; done | sort -u | tr '\n' ' ')
diag "the exec'd process's descriptors: $FDS"
printf '%s\n' "$FDS" | grep -q -E '^(/dev/pts/[0-9]+ )+$'
ok $? "the exec'd process holds its terminal only"
is "$(stat -c %u "/proc/$SP")" "$NBUID" "... and runs as nobody"
kill "$EXS"
wait "$EXS"
wait_for '[ -z "$(pgrep -f "^sleep 41$")" ]'
is "$(pgrep -f "^sleep 41$" | wc -l)" 0 "its client gone, the process is hung up"

nbtessel exec "$J" -- sh -c 'printf "%s|" "$@"; echo' argv0 '$(id)' 'a;b' </dev/null >"$TD/x" 2>&1
is "$(tr -d '\r' <"$TD/x")" '$(id)|a;b|' "the argv reaches the program as it is, never a shell's words"

nbtessel exec "$J" -- /no/such/program </dev/null >"$TD/x" 2>&1
is "$?" 125 "a program that does not exist in the container: 125"
diag "$(tr -d '\r' <"$TD/x")"
grep -q "No such file" "$TD/x"
ok $? "... with the reason"
nbtessel exec "$J" -- no-such-program-in-path </dev/null >"$TD/x" 2>&1
is "$?" 125 "one not in the container's PATH: 125"
nbtessel exec "$J" -- cat /etc/tessel-test-image </dev/null >"$TD/x" 2>&1
is "$? $(tr -d '\r' <"$TD/x")" "0 tessel test image" "a program found in the container's PATH runs"
nbtessel exec "$J" -- /etc/tessel-test-image </dev/null >"$TD/x" 2>&1
is "$?" 125 "a file that is not executable: 125"
grep -q "Permission denied" "$TD/x"
ok $? "... with the reason"
nbtessel exec "$J" -- sh -c 'exit 255' </dev/null >"$TD/x" 2>&1
is "$?" 255 "a command that exits 255: 255 (not taken for a failure to start)"

TESSEL_TOKEN="$TD_ADMIN" tcli exec "$J" -- true
is "$RC" 1 "an admin's exec into nobody's container job: exit 1"
grep -q "only its owner" "$TD/e"
ok $? "... only its owner may"
TESSEL_TOKEN="$BOB" tcli exec "$J" -- true
is "$RC" 1 "another user's: exit 1"
grep -q "no job" "$TD/e"
ok $? "... no such job for them"

cat >"$TD/shell.exp" <<EXP
source $TD/common.exp
set env(TESSEL_TOKEN) $NB
spawn -noecho $TCLI shell $J
stty rows 31 columns 97 < \$spawn_out(slave,name)
send "echo in-shell-\\\$((2+3)) \\\$MYVAR \\\$(cat /tmp/mark) \\\$(stty size); exit 2\r"
step shell {in-shell-5 in-job from-first 31 97}
finish shell
EXP
texpect "$TD/shell.exp"
diag "$(tr -d '\r' <"$TD/expect.log" | sed 's/^/  /')"
grep -q "STEP shell ok" "$TD/expect.log"
ok $? "tessel shell: a shell in the container, with the job's environment, of our window's size"
grep -q "STEP shell status 2" "$TD/expect.log"
ok $? "... its exit status (2)"

# 8 at once (each ignoring SIGTERM: only the shim's SIGKILL at the job's end stops them); the
# 9th is refused.
for k in 1 2 3 4 5 6 7 8; do
    nbtessel exec "$J" -- sh -c 'trap "" TERM; sleep 100; echo not-killed' </dev/null >"$TD/k$k" 2>&1 &
    eval "EX$k=\$!"
done
wait_for '[ "$(pgrep -f "^sleep 100$" | wc -l)" -ge 8 ]'
nbtessel exec "$J" -- true </dev/null >"$TD/x" 2>&1
is "$?" 125 "a 9th process at once: 125"
grep -q "already run" "$TD/x"
ok $? "... with the reason"

api POST "/v1/jobs/$J/cancel" "" "$NB"
KILLED=0
TOLD=0
for k in 1 2 3 4 5 6 7 8; do
    eval "wait \$EX$k"
    _st=$?
    [ "$_st" = 137 ] && KILLED=$((KILLED + 1)) || diag "exec $k: status $_st"
    grep -q "the job has ended" "$TD/k$k" && TOLD=$((TOLD + 1))
done
is "$KILLED" 8 "the job ends while 8 exec'd processes run: each is killed with it (137)"
is "$TOLD" 8 "... and each client told"
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = cancelled ]'
wait_for '[ "$(pgrep -f "^sleep 100$" | wc -l)" -eq 0 ]'
is "$(pgrep -f "^sleep 100$" | wc -l)" 0 "none of them is left"
nbtessel exec "$J" -- true </dev/null >"$TD/x" 2>&1
is "$?" 1 "exec into an ended container job: exit 1"
grep -q "is not running" "$TD/x"
ok $? "... not running"
td_stop
ok $? "tesseld stops cleanly"
done_testing
