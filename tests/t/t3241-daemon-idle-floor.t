#!/bin/sh
# t3241-daemon-idle-floor.t - the floor of a job's own idle time (docs/suspend.md, "How often a
# job may be reclaimed"): with tesseld's default floor (--idle-reclaim-min 5m) a job that asks
# idle_reclaim below it (a duration or whole seconds, through the API and `tessel run`) is
# refused 422 naming the floor and nothing is stored; at the floor, above it, "off" and its
# queue's (null) are accepted; an admin's queue may be shorter.  The floor is an option of the
# configuration file, changed by a reload (SIGHUP), and refused when it is not a duration.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ "$(id -u)" -eq 0 ] || missing "root (the configuration file is root's)"
cli() { TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TOK" HOME="$TD" "$TESSEL_BUILD/bin/tessel" "$@"; }

td_setup
C="$TD/tesseld.conf"
printf 'submit-rate = 0\n' >"$C"
td_start --config "$C" --fake-gpus 1xT4:4G --no-cgroups --allow-root-jobs
api POST /v1/users '{"name":"alice"}'
api POST /v1/tokens '{"user":"alice"}'
TOK=$(jget .token)
njobs() { api GET /v1/jobs && jq '.jobs | length' "$TD/out"; }

api POST /v1/queues '{"name":"lab","idle_reclaim":"3s"}'
is "$CODE $(jget .idle_reclaim)" "201 3" "an admin's queue may be shorter than the floor (3 s)"

BEFORE=$(njobs)
api POST /v1/jobs '{"argv":["true"],"idle_reclaim":"10s"}' "$TOK"
is "$CODE $(jget .error.code) $(jget .error.field)" "422 unsatisfiable idle_reclaim" \
    "alice's job asking 10s is refused 422"
is "$(jget .error.message)" \
    "idle_reclaim 10s is below this tesseld's floor of 5m (--idle-reclaim-min): ask 5m or more, \"off\", or its queue's" \
    "the message names the floor"
api POST /v1/jobs '{"argv":["true"],"idle_reclaim":299}' "$TOK"
is "$CODE $(jget .error.field)" "422 idle_reclaim" "299 whole seconds is refused too"
api POST /v1/jobs '{"argv":["true"],"queue":"lab","idle_reclaim":"1s"}' "$TOK"
is "$CODE" 422 "in lab too: the floor is for a job's own time, whatever its queue's"
cli run -d --idle-reclaim=1m true >"$TD/run.out" 2>&1
RC=$?
[ "$RC" -ne 0 ] && grep -qF "floor of 5m" "$TD/run.out"
ok $? "tessel run --idle-reclaim=1m fails ($RC) naming the floor: $(cat "$TD/run.out")"
is "$(njobs)" "$BEFORE" "nothing was stored"

api POST /v1/jobs '{"argv":["true"],"idle_reclaim":"5m"}' "$TOK"
is "$CODE $(jget .idle_reclaim)" "201 300" "at the floor (5m) is accepted"
api POST /v1/jobs '{"argv":["true"],"idle_reclaim":3600}' "$TOK"
is "$CODE $(jget .idle_reclaim)" "201 3600" "above it (3600) is accepted"
api POST /v1/jobs '{"argv":["true"],"idle_reclaim":"off"}' "$TOK"
is "$CODE $(jget .idle_reclaim)" "201 0" "off is accepted"
api POST /v1/jobs '{"argv":["true"],"queue":"lab"}' "$TOK"
is "$CODE $(jget .idle_reclaim)" "201 null" "its queue's (lab's 3 s) is accepted"

# The floor lowered by a reload.
printf 'submit-rate = 0\nidle-reclaim-min = 10s\n' >"$C"
kill -HUP "$TD_PID"
wait_for 'grep -q "reload: idle-reclaim-min = 10s (was 5m)" "$TD/tesseld.log"'
ok $? "SIGHUP: the floor is now 10s (a live option)"
api POST /v1/jobs '{"argv":["true"],"idle_reclaim":"10s"}' "$TOK"
is "$CODE $(jget .idle_reclaim)" "201 10" "10s is accepted now"
api POST /v1/jobs '{"argv":["true"],"idle_reclaim":9}' "$TOK"
is "$CODE $(jget .error.message)" \
    "422 idle_reclaim 9s is below this tesseld's floor of 10s (--idle-reclaim-min): ask 10s or more, \"off\", or its queue's" \
    "9 s is refused, naming the new floor"
td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"

# A floor that is not a duration is refused at the start.
timeout 20 "$TESSEL_BUILD/bin/tesseld" --data-dir "$TD/data2" --idle-reclaim-min soon \
    >"$TD/o" 2>"$TD/e"
is "$?" 2 "tesseld --idle-reclaim-min soon exits 2"
grep -q -- "--idle-reclaim-min soon" "$TD/e"; ok $? "naming the option: $(head -1 "$TD/e")"
done_testing
