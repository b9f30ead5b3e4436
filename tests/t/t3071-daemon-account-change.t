#!/bin/sh
# t3071-daemon-account-change.t - tesseld keeps the account lookups of the launch path a few
# seconds (src/daemon/pwcache.c), but a change of /etc/passwd is seen at once: an account
# deleted and created again with another uid and home runs its next job (submitted at once)
# with the new ones; an account deleted is refused at once ("no system account"); created
# again, accepted at once.  Needs root (accounts, jobs run as them).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/local.sh"
command -v curl >/dev/null && command -v jq >/dev/null
need $? "curl and jq"
[ "$(id -u)" = 0 ]
need $? "root (tesseld runs jobs as local accounts)"
command -v useradd >/dev/null && command -v userdel >/dev/null
need $? "useradd and userdel"
ACC=tslac
# Two uids no account has.
free_uid() {
    _u=$1
    while getent passwd "$_u" >/dev/null || getent group "$_u" >/dev/null; do _u=$((_u + 1)); done
    echo "$_u"
}
U1=$(free_uid 61170)
U2=$(free_uid $((U1 + 1)))
mkacc() { useradd -M -u "$1" -U -d "$2" -s /usr/sbin/nologin "$ACC"; }
rmacc() { userdel "$ACC" 2>/dev/null; getent group "$ACC" >/dev/null && groupdel "$ACC"; true; }
rmacc
mkacc "$U1" /nonexistent-a
need $? "useradd to create the account $ACC"

td_setup
# The account goes with the daemon's files, however the test ends.
trap 'rmacc; td_cleanup' EXIT
chmod 755 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"
api POST /v1/users "{\"name\":\"$ACC\"}"
api POST /v1/tokens "{\"user\":\"$ACC\"}"
TOK=$(jget .token)
PROBE='{"argv":["sh","-c","echo $(id -u) $HOME"]}'

# run_probe: submit PROBE as ACC, wait for its end, its output in $TD/out.
run_probe() {
    api POST /v1/jobs "$PROBE" "$TOK"
    [ "$CODE" = 201 ] || return 1
    _j=$(jget .id)
    wait_for '[ "$(job_state $_j)" = succeeded ]' || return 1
    api GET "/v1/jobs/$_j/logs" "" "$TOK"
}
run_probe; ok $? "$ACC's job runs"
is "$(cat "$TD/out")" "$U1 /nonexistent-a" "as uid $U1 with its home"
run_probe; ok $? "a second job (its account looked up again, or kept)"
is "$(cat "$TD/out")" "$U1 /nonexistent-a" "the same"

rmacc
mkacc "$U2" /nonexistent-b
ok $? "$ACC deleted and created again as uid $U2"
run_probe; ok $? "the next job, submitted at once, runs"
is "$(cat "$TD/out")" "$U2 /nonexistent-b" "as the new uid $U2 with the new home (not a kept answer)"

rmacc
api POST /v1/jobs "$PROBE" "$TOK"
is "$CODE $(jget .error.message)" \
    "422 refused: no system account '$ACC' on this machine; ask an admin to create one or start tesseld with --allow-root-jobs" \
    "$ACC deleted: its next job is refused at once"
mkacc "$U1" /nonexistent-a
run_probe; ok $? "created again: its next job is accepted at once and runs"
is "$(cat "$TD/out")" "$U1 /nonexistent-a" "as uid $U1"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
rmacc
done_testing
