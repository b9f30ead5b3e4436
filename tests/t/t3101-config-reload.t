#!/bin/sh
# t3101-config-reload.t - SIGHUP reloads tesseld's configuration file: a live option changes
# at once (submit-rate: a user's second submission in a row gets 429 where it got 201), the
# reload and each change are logged, a restart-only option is logged as waiting for a
# restart; a bad file on SIGHUP is refused with a logged error and the running configuration
# kept (the limit still holds, not the file's other keys); tesseld keeps running throughout.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ "$(id -u)" -eq 0 ] || missing "root (the configuration file is root's)"

td_setup
C="$TD/tesseld.conf"
printf '# no limit on submissions\nsubmit-rate = 0\nmax-body = 64K\n' >"$C"
td_start --config "$C" --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
api POST /v1/queues '{"name":"held","limit":{"gpu":0}}'
api POST /v1/users '{"name":"alice"}'
api POST /v1/tokens '{"user":"alice"}'
TOK=$(jget .token)
JOB='{"argv":["true"],"gpu":0.5,"queue":"held"}'
codes() { # codes N: N submissions of alice in a row, their status codes
    _c=""
    for _i in $(seq "$1"); do
        api POST /v1/jobs "$JOB" "$TOK"
        _c="$_c$CODE "
    done
    echo "$_c"
}
is "$(codes 4)" "201 201 201 201 " "submit-rate = 0: alice's 4 submissions in a row are accepted"

# A live change: one submission per 1000 s, burst 1; and a restart-only one.
printf 'submit-rate = 0.001\nsubmit-burst = 1\nmax-body = 1M\n' >"$C"
kill -HUP "$TD_PID"
wait_for 'grep -q "reloaded $C: 2 option(s) changed, 1 more need a restart" "$TD/tesseld.log"'
ok $? "SIGHUP: the reload is logged with what changed"
grep -q "reload: submit-rate = 0.001 (was 0)" "$TD/tesseld.log"
ok $? "... each live change with its old value"
grep -q "reload: max-body = 1M needs a restart; still 64K" "$TD/tesseld.log"
ok $? "... a restart-only option is said to need a restart"
is "$(codes 2)" "201 429 " "the new limit holds at once: alice's second submission gets 429"

# A bad file: refused, nothing of it taken (its submit-rate = 0 would lift the limit).
printf 'submit-rate = 0\nsubmit-burst = 1\nmax-body = 1M\nkill-wait = soon\n' >"$C"
kill -HUP "$TD_PID"
wait_for 'grep -q "reload refused, the running configuration is kept: $C:4: kill-wait: " "$TD/tesseld.log"'
ok $? "a bad file on SIGHUP is refused with file, line and key"
is "$(codes 1)" "429 " "the running configuration is kept: the limit still holds"
printf 'submit-rate = 0\nsubmit-burst = 1\nmax-body = 1M\nbogus = 1\n' >"$C"
kill -HUP "$TD_PID"
wait_for 'grep -q "reload refused.*$C:4: bogus: unknown key" "$TD/tesseld.log"'
ok $? "an unknown key on SIGHUP is refused too"
is "$(codes 1)" "429 " "... and the limit still holds"
kill -0 "$TD_PID"
ok $? "tesseld runs on after three SIGHUPs"

# A good file again: the limit goes.
printf 'submit-rate = 0\nsubmit-burst = 1\nmax-body = 1M\n' >"$C"
kill -HUP "$TD_PID"
wait_for 'grep -q "reload: submit-rate = 0 (was 0.001)" "$TD/tesseld.log"'
ok $? "a fixed file is taken at the next SIGHUP"
is "$(codes 2)" "201 201 " "submit-rate = 0 again: no limit"
td_stop
ok $? "tesseld stops cleanly"
done_testing
