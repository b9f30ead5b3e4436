#!/bin/sh
# t7038-ctr-term-run-it.t - `tessel run -it --image` and `tessel attach` for a container job
# (docs/terminal.md, "Container jobs"), driven by expect on a real PTY, a job of nobody's under
# tesseld as root with crun and the job's cgroups:
#   - the container's process has a terminal (crun's, its master passed to tessel-shim over
#     --console-socket): tty names /dev/pts/N (the container's own devpts), of our window's
#     size (stty size), as nobody, in the image (its file is there);
#   - a change of our window's size reaches it (TIOCSWINSZ on crun's master, SIGWINCH);
#   - Ctrl-C reaches its foreground process (sleep ends with 130), not tessel;
#   - Ctrl-P Ctrl-Q detaches (exit 0, the job running); tesseld killed with -9 and started
#     again meanwhile (the shim holds the terminal); what the job wrote meanwhile is shown at
#     `tessel attach`, typing goes on, the job's exit status (5) is tessel attach's; the job's
#     record says tty and image, its stdout log has the terminal's output;
#   - the console socket's directory in the state directory is root's, mode 0700, and empty
#     once the terminal came (the socket removed); the container's process holds no descriptor
#     but its terminal.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/container.sh"
. "$TESSEL_SRCDIR/tests/lib/ctrterm.sh"
ctrterm_daemon
NBUID=$(id -u nobody)

cat >"$TD/run.exp" <<EXP
source $TD/common.exp
cd $W
set env(TESSEL_TOKEN) $NB
spawn -noecho $TCLI run -it --image ttyimg:1 -- sh
stty rows 33 columns 101 < \$spawn_out(slave,name)
step start {\\\$ \$}
send "PS1='rdy> '\r"
step prompt {rdy> \$}
send "tty; stty size; id -u; cat /etc/tessel-test-image\r"
step tty {/dev/pts/[0-9]+\r\n33 101\r\n$NBUID\r\ntessel test image\r\n}
stty rows 40 columns 120 < \$spawn_out(slave,name)
sleep 0.5
send "stty size\r"
step resize {\r\n40 120\r\n}
send "sleep 50\r"
sleep 0.5
send "\003"
send "echo rc=\\\$?\r"
step ctrlc {rc=130}
send "(sleep 3; echo while-away) &\r"
step bg {rdy> \$}
send "\020\021"
step detach {detached from job ([0-9]+)}
finish detach
EXP
texpect "$TD/run.exp"
diag "$(sed 's/^/  /' "$TD/expect.log" | tr -d '\r' | tail -n 30)"
L=$(cat "$TD/expect.log")
for s in start prompt tty resize ctrlc bg detach; do
    printf '%s\n' "$L" | grep -q "STEP $s ok"
    ok $? "run -it --image: step $s"
done
is "$(printf '%s\n' "$L" | grep -c "STEP detach status 0")" 1 "after Ctrl-P Ctrl-Q tessel exits 0"
J=$(printf '%s\n' "$L" | sed -n 's/.*job \([0-9][0-9]*\) submitted.*/\1/p' | head -n 1)
[ -n "$J" ] || J=1
api GET "/v1/jobs/$J" "" "$NB"
is "$(jget .state) $(jget .tty) $(jget .image)" "running true ttyimg:1" \
    "the job runs on after the detach; its record says tty and its image"
C="$TD/data/run/$J/console"
is "$(stat -c '%U %a %F' "$C" 2>&1)" "root 700 directory" \
    "the console socket's directory is root's, 0700"
is "$(ls -A "$C" 2>&1 | wc -l)" 0 "... and empty once crun's terminal came"
# The container's process holds its terminal and nothing else of the shim's or crun's (no
# console socket, no pipe).
read -r _ _ JOBPID <"$TD/data/jobs/$J/pid"
FDS=$(for f in /proc/$JOBPID/fd/*; do readlink "$f"; done | sort -u | tr '\n' ' ')
diag "the container's process's descriptors: $FDS"
printf '%s\n' "$FDS" | grep -q -E '^((/dev/pts/[0-9]+|/dev/tty) )+$'
ok $? "the container's process holds its terminal only"

# tesseld dies meanwhile: the shim holds the container's terminal; the next tesseld reaches it.
td_kill9
ctrterm_restart
sleep 3 # the job writes while-away meanwhile
cat >"$TD/attach.exp" <<EXP
source $TD/common.exp
set env(TESSEL_TOKEN) $NB
spawn -noecho $TCLI attach $J
step replay {while-away}
send "echo typed-\\\$((6*7))\r"
step typed {typed-42}
send "exit 5\r"
finish attach
EXP
texpect "$TD/attach.exp"
diag "$(sed "s/^/  /" "$TD/expect.log" | tr -d "\r")"
L=$(cat "$TD/expect.log")
printf '%s\n' "$L" | grep -q "STEP replay ok"
ok $? "after tesseld's restart, tessel attach shows what the job wrote while detached"
printf '%s\n' "$L" | grep -q "STEP typed ok"
ok $? "typing reaches the container's process again"
is "$(printf '%s\n' "$L" | grep -c "STEP attach status 5")" 1 "tessel attach exits with the job's status (5)"
wait_for '[ "$(api GET "/v1/jobs/$J" "" "$NB"; jget .state)" = failed ]'
is "$(jget .exit_code)" 5 "the job ended with exit 5"
api GET "/v1/jobs/$J/logs" "" "$NB"
grep -q while-away "$TD/out"
ok $? "its stdout log has the terminal's output"
td_stop
ok $? "tesseld stops cleanly"
done_testing
