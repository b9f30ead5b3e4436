#!/bin/sh
# t3014-daemon-slowloris.t - one client holding slow connections cannot lock the others out:
# an unprivileged user (nobody) opens slow connections from 127.0.0.2 (half a request, then a
# header line a second, never finished: slowloris) with bench-slowloris; tesseld keeps
# --max-connections-per-client of them and closes the next one unanswered, while every request
# from 127.0.0.1 is answered and a job submitted from there is accepted.  The default bound
# (256) holds too, and refused connections do not flood tesseld's log.  Asserts behaviour, not
# timing (the timing is bench/slowloris, docs/bench-slowloris.md).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
fail_all() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || fail_all "curl and jq are needed"
[ "$(id -u)" = 0 ] || fail_all "not root: the attack is run as the unprivileged user nobody"
command -v setpriv >/dev/null || fail_all "setpriv (util-linux) is needed"
SL="$TESSEL_BUILD/bench/bench-slowloris"
[ -x "$SL" ] || fail_all "$SL is not built"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# fig KEY: a figure of bench-slowloris's last line
fig() { tail -1 "$TD/sl" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups --max-connections-per-client 8 ||
    fail_all "tesseld did not start"
ADDR=$(cat "$TD/data/tesseld.addr")

# 9 slow connections from 127.0.0.2 (nobody), 20 probes from 127.0.0.1 while they are held.
as_nobody "$SL" --url "$ADDR" --connections 9 --probes 20 --probe-gap-ms 50 --drip-ms 200 \
    --no-baseline --max-seconds 60 >"$TD/sl" 2>&1
is "$?" 0 "bench-slowloris ran as nobody"
sed 's/^/# /' "$TD/sl"
is "$(fig attack_opened)" 9 "the attacker opened 9 connections"
is "$(fig attack_held)" 8 "tesseld held 8 of them (--max-connections-per-client 8) to the end"
is "$(fig attack_refused)" 1 "and closed the 9th (unanswered)"
is "$(fig probes_answered)/$(fig probes)" 20/20 "every probe from 127.0.0.1 was answered meanwhile"

# While another attack holds its 8, a submission from 127.0.0.1 is accepted.
as_nobody "$SL" --url "$ADDR" --connections 8 --probes 40 --probe-gap-ms 50 --no-baseline \
    --max-seconds 60 >"$TD/sl2" 2>&1 &
SLPID=$!
sleep 1.5 # the attacker's connections are open (it settles 1 s before probing)
api POST /v1/jobs '{"argv":["true"],"gpu":0.5}'
is "$CODE" 201 "a job submitted from 127.0.0.1 during the attack is accepted"
wait $SLPID
is "$(tail -1 "$TD/sl2" | tr ' ' '\n' | sed -n 's/^attack_held=//p')" 8 \
    "(that attack held its 8 connections throughout)"
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"

# The default bound: 256 per client.
td_start --fake-gpus 1xT4:16G --no-cgroups || fail_all "tesseld did not restart"
ADDR=$(cat "$TD/data/tesseld.addr")
LINES0=$(grep -c . "$TD/tesseld.log")
as_nobody "$SL" --url "$ADDR" --connections 300 --probes 10 --no-baseline --max-seconds 60 \
    >"$TD/sl" 2>&1
sed 's/^/# /' "$TD/sl"
is "$(fig attack_held)" 256 "by default one client keeps 256 connections"
is "$(fig attack_refused)" 44 "the other 44 are closed (unanswered)"
is "$(fig probes_answered)/$(fig probes)" 10/10 "and other clients are answered"
LINES=$(($(grep -c . "$TD/tesseld.log") - LINES0))
diag "tesseld wrote $LINES log lines during the attack"
ok "$([ "$LINES" -le 45 ]; echo $?)" "300 connections refused or broken: at most 45 log lines (20 a minute; the log is bounded)"
td_stop; ok $? "tesseld stops cleanly"
done_testing
