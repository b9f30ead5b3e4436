#!/bin/sh
# t4007-cli-escape.t - terminal escape injection: a user names a job and writes its command
# with terminal control sequences (ESC ... to retitle the window, clear the screen, hide
# text; a C1 CSI; a newline to forge a table row; a right-to-left override).  The admin's
# `tessel ps` shows them escaped (\x1b, \n, \u009b, \u202e): no raw control byte reaches the
# terminal; `tessel ps --json` keeps the exact text.  Fails when tesseld cannot start.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
fail_all() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
command -v jq >/dev/null || fail_all "jq is needed"
td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs || fail_all "tesseld did not start"
cli_setup
export TESSEL_URL="$TD_URL"
admin users add mallory
MAL=$(out)
is "$RC" 0 "an unprivileged user mallory"

# A queue capped at 0 GPU holds the job pending: it stays in the list.
admin queues add held --limit gpu=0
is "$RC" 0 "a queue that holds jobs pending"
# The name and command as JSON escapes, so that the shell passes them byte for byte.
NAME='\u001b]0;pwned\u0007\u001b[2J\u001b[8mhidden\u001b[0m'
ARG='x\nFAKE  root  running\u009b31m\u202etxt.exe'
api POST /v1/jobs "{\"argv\":[\"echo\",\"$ARG\"],\"gpu\":0.5,\"queue\":\"held\",\"name\":\"$NAME\"}" "$MAL"
is "$CODE" 201 "mallory submits a job with escape sequences in its name and command"
[ "$CODE" = 201 ] || diag "$(cat "$TD/out")"
ID=$(jget .id)

admin ps -a
is "$RC" 0 "tessel ps -a (the admin) exits 0"
is "$(tr -d -c '\000-\010\013-\037\177' <"$TD/o" | wc -c)" 0 \
    "its output holds no raw control byte (C0 but tab and newline, DEL)"
is "$(grep -c -P '\xc2[\x80-\x9f]|\xe2\x80\xae' "$TD/o")" 0 "nor a raw C1 control or RTL override"
grep -q -F '\x1b]0;pwned\x07\x1b[2J\x1b[8mhidden\x1b[0m' "$TD/o"
ok $? "the name is shown escaped (\\x1b, \\x07)"
grep -q -F 'FAKE  root  running\u009b31m\u202etxt' "$TD/o"
ok $? "the command's C1 CSI and RTL override are shown escaped"
is "$(($(wc -l <"$TD/o") - 1))" 1 "one job, one row: the newline forged no row"

admin ps -a --json
is "$(jq -r ".jobs[] | select(.id == $ID) | .name" "$TD/o" | od -An -c | tr -s ' ' | head -1)" \
    "$(printf '\033]0;pwned\007\033[2J\033[8mhidden\033[0m\n' | od -An -c | tr -s ' ' | head -1)" \
    "--json keeps the exact name"
is "$(jq -r ".jobs[] | select(.id == $ID) | .argv[1]" "$TD/o" | od -An -tx1 | tr -d ' \n')" \
    "$(printf 'x\nFAKE  root  running\302\23331m\342\200\256txt.exe\n' | od -An -tx1 | tr -d ' \n')" \
    "--json keeps the exact command"

# An error message quoting user input is escaped too.
admin queues rm "$(printf 'q\033[2J')"
is "$RC" 1 "removing a queue named with ESC fails"
is "$(tr -d -c '\033' <"$TD/e" | wc -c)" 0 "and the error line holds no raw ESC"
td_stop; ok $? "tesseld stops cleanly"
done_testing
