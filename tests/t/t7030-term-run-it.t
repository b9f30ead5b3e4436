#!/bin/sh
# t7030-term-run-it.t - `tessel run -it` and `tessel attach` on a real terminal (expect drives a
# PTY; docs/terminal.md), a job of nobody's under tesseld as root:
#   - the job's stdin, stdout and stderr are a terminal (tty names /dev/pts/N), of the size of
#     ours (stty size), as nobody;
#   - colours (escape sequences) come through untouched;
#   - a change of our window's size reaches the job (SIGWINCH, stty size); absurd sizes
#     (5000 x 9999) arrive clamped to 1000 x 1000;
#   - Ctrl-C reaches the job's foreground process (sleep ends with 130), not tessel;
#   - Ctrl-P Ctrl-Q detaches (exit 0, the job running); what the job writes meanwhile is shown
#     at `tessel attach` (the ring), typing goes on there, the job's exit status (5) is
#     tessel attach's; the job's record says tty, and its stdout log has the terminal's output.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
term_daemon
NBUID=$(id -u nobody)

# Each step prints "STEP NAME ok" when its pattern came, else "STEP NAME failed" and stops.
cat >"$TD/common.exp" <<'EXP'
set timeout 20
proc step {name pattern} {
    expect {
        -re $pattern { send_user "\nSTEP $name ok\n" }
        timeout { send_user "\nSTEP $name failed (timeout)\n"; exit 1 }
        eof { send_user "\nSTEP $name failed (eof)\n"; exit 1 }
    }
}
proc finish {name} {
    expect {
        eof {}
        timeout { send_user "\nSTEP $name failed (no end)\n"; exit 1 }
    }
    set r [wait]
    send_user "\nSTEP $name status [lindex $r 3]\n"
}
EXP

cat >"$TD/run.exp" <<EXP
source $TD/common.exp
cd $W
set env(TESSEL_TOKEN) $NB
spawn -noecho $TCLI run -it -- sh
stty rows 33 columns 101 < \$spawn_out(slave,name)
step start {\\\$ \$}
send "PS1='rdy> '\r"
step prompt {rdy> \$}
send "tty; stty size; id -u\r"
step tty {/dev/pts/[0-9]+\r\n33 101\r\n$NBUID\r\n}
send "printf '\\\\033\[32mgreen\\\\033\[0m\\\\n'\r"
expect {
    -ex "\033\[32mgreen\033\[0m" { send_user "\nSTEP colour ok\n" }
    timeout { send_user "\nSTEP colour failed\n"; exit 1 }
}
stty rows 40 columns 120 < \$spawn_out(slave,name)
sleep 0.5
send "stty size\r"
step resize {\r\n40 120\r\n}
stty rows 5000 columns 9999 < \$spawn_out(slave,name)
sleep 0.5
send "stty size\r"
step clamp {\r\n1000 1000\r\n}
send "sleep 50\r"
sleep 0.5
send "\003"
send "echo rc=\\\$?\r"
step ctrlc {rc=130}
send "(sleep 2; echo while-away) &\r"
step bg {rdy> \$}
send "\020\021"
step detach {detached from job ([0-9]+)}
finish detach
EXP
texpect "$TD/run.exp"
diag "$(sed 's/^/  /' "$TD/expect.log" | tr -d '\r' | tail -n 30)"
L=$(cat "$TD/expect.log")
for s in start prompt tty colour resize clamp ctrlc bg detach; do
    printf '%s\n' "$L" | grep -q "STEP $s ok"
    ok $? "run -it: step $s"
done
is "$(printf '%s\n' "$L" | grep -c "STEP detach status 0")" 1 "after Ctrl-P Ctrl-Q tessel exits 0"
J=$(printf '%s\n' "$L" | sed -n 's/.*job \([0-9][0-9]*\) submitted.*/\1/p' | head -n 1)
[ -n "$J" ] || J=1
api GET "/v1/jobs/$J" "" "$NB"
is "$(jget .state) $(jget .tty)" "running true" "the job runs on after the detach; its record says tty"

sleep 2.5 # the job writes while-away meanwhile
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
ok $? "tessel attach shows what the job wrote while detached"
printf '%s\n' "$L" | grep -q "STEP typed ok"
ok $? "typing reaches the job again"
is "$(printf '%s\n' "$L" | grep -c "STEP attach status 5")" 1 "tessel attach exits with the job's status (5)"
wait_for '[ "$(api GET "/v1/jobs/$J" "" "$NB"; jget .state)" = failed ]'
is "$(jget .exit_code)" 5 "the job ended with exit 5"
api GET "/v1/jobs/$J/logs" "" "$NB"
grep -q while-away "$TD/out"
ok $? "its stdout log has the terminal's output"
td_stop
ok $? "tesseld stops cleanly"
done_testing
