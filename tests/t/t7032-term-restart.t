#!/bin/sh
# t7032-term-restart.t - a job's terminal belongs to its shim, not to tesseld or a client
# (docs/terminal.md):
#   - tesseld killed (kill -9) while a client is attached: the client says the connection is
#     lost and that the job goes on; the job runs on; after tesseld's restart `tessel attach`
#     reaches the same shell (its variable is still set) and gets its exit status;
#   - a second attach takes the terminal over: the first client is told ("attached from
#     elsewhere") and ends; the second types into the job.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
. "$TESSEL_SRCDIR/tests/lib/term.sh"
term_daemon

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
J=$(nbjob "{\"argv\":[\"sh\"],\"tty\":true,\"cwd\":\"$W\"}")
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = running ]'

# Attached while tesseld is killed.
cat >"$TD/lost.exp" <<EXP
source $TD/common.exp
set env(TESSEL_URL) $TD_URL
set env(TESSEL_TOKEN) $NB
spawn -noecho $TCLI attach $J
send "MARK=kept-\\\$((40+2)); echo set-\\\$MARK\r"
step set {set-kept-42}
exec kill -9 $TD_PID
step lost {lost the connection.*goes on}
finish lost
EXP
texpect "$TD/lost.exp"
diag "$(sed 's/^/  /' "$TD/expect.log" | tr -d '\r')"
L=$(cat "$TD/expect.log")
printf '%s\n' "$L" | grep -q "STEP set ok"
ok $? "attached: typing reaches the job"
printf '%s\n' "$L" | grep -q "STEP lost ok"
ok $? "tesseld killed: the client says the connection is lost and the job goes on"
is "$(printf '%s\n' "$L" | grep -c "STEP lost status 1")" 1 "... and exits 1"
wait "$TD_PID" 2>/dev/null
read -r SHIM _ JOBPID <"$TD/data/jobs/$J/pid"
kill -0 "$JOBPID" 2>/dev/null
ok $? "the job still runs without tesseld"
td_start --fake-gpus 1xT4:8G --no-cgroups

# Two clients: the second takes over; then the first's shell variable is still there.
cat >"$TD/two.exp" <<EXP
source $TD/common.exp
set env(TESSEL_URL) $TD_URL
set env(TESSEL_TOKEN) $NB
spawn -noecho $TCLI attach $J
set first \$spawn_id
send "echo one-\\\$MARK\r"
step first {one-kept-42}
spawn -noecho $TCLI attach $J
set second \$spawn_id
set spawn_id \$first
step told {attached from elsewhere}
finish first
set spawn_id \$second
send "echo two-\\\$MARK; exit 3\r"
step second {two-kept-42}
finish second
EXP
texpect "$TD/two.exp"
diag "$(sed 's/^/  /' "$TD/expect.log" | tr -d '\r')"
L=$(cat "$TD/expect.log")
printf '%s\n' "$L" | grep -q "STEP first ok"
ok $? "after tesseld's restart, tessel attach reaches the same shell (its variable is set)"
printf '%s\n' "$L" | grep -q "STEP told ok"
ok $? "a second attach: the first client is told the terminal was attached from elsewhere"
is "$(printf '%s\n' "$L" | grep -c "STEP first status 1")" 1 "... and ends (exit 1)"
printf '%s\n' "$L" | grep -q "STEP second ok"
ok $? "the second client types into the job"
is "$(printf '%s\n' "$L" | grep -c "STEP second status 3")" 1 "... and gets its exit status (3)"
wait_for '[ "$(api GET /v1/jobs/$J "" "$NB"; jget .state)" = failed ]'
is "$(jget .exit_code)" 3 "the job ended with exit 3"
td_stop
ok $? "tesseld stops cleanly"
done_testing
