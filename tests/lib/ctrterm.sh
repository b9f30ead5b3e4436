# tests/lib/ctrterm.sh - the set-up of the container terminal tests (t7038-t7039,
# docs/terminal.md "Container jobs"); source after tap.sh, daemon.sh, cli.sh and container.sh.
#
#   ctrterm_daemon      ctr_daemon (tesseld as root with crun, the job's cgroups, testimg:1,
#                       nobody's token $NB, $W), and expect; the image ttyimg:1 (testimg's
#                       programs with tty and stty); bob a Tessel user with no job ($BOB: his
#                       token); $TD/common.exp: expect's step and finish (as t7030's)
#   ctrterm_restart     tesseld started again (after td_kill9) with the same options
#   nbtessel ARG...     the CLI as nobody, in $W
#   texpect SCRIPT      run expect on SCRIPT (a file), its output in $TD/expect.log, status $RC
ctrterm_daemon() {
    command -v expect >/dev/null || missing "expect is needed (scripts/install-deps.sh)"
    for p in /usr/bin/tty /usr/bin/stty; do
        [ -x "$p" ] || missing "$p is needed (coreutils)"
    done
    ctr_daemon
    mkdir -p "$TD/data/images/ttyimg"
    chmod 755 "$TD/data/images/ttyimg"
    TESSEL_BUILD="$TESSEL_BUILD" sh "$TESSEL_SRCDIR/tests/lib/mkimage.sh" \
        "$TD/data/images/ttyimg/1/rootfs" /usr/bin/tty /usr/bin/stty >"$TD/mkimage.log" 2>&1 ||
        { cat "$TD/mkimage.log"; missing "the image ttyimg:1 could not be built"; }
    api POST /v1/users '{"name":"bob"}'
    api POST /v1/tokens '{"user":"bob"}'
    BOB=$(jget .token)
    [ -n "$BOB" ] && [ "$BOB" != null ] || missing "no token for bob"
    cat >"$TD/common.exp" <<'EXP'
set timeout 30
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
}
ctrterm_restart() {
    td_start --fake-gpus 1xT4:8G
    TESSEL_URL="$TD_URL"
    export TESSEL_URL
}
nbtessel() {
    (cd "$W" && TESSEL_TOKEN="$NB" "$TCLI" "$@")
}
texpect() {
    expect -f "$1" >"$TD/expect.log" 2>&1
    RC=$?
}
