#!/bin/sh
# t3006-daemon-user.t - with tesseld running as root, a job runs as the submitting user when
# that name is a system account (here: nobody), with that account's HOME and USER, its logs
# readable by it.  The job of a user without an account: by default refused at submission
# (422 unsatisfiable naming the reason, one line from the CLI), and failed with that reason
# when it comes to start (submitted while allowed, started after a restart without it); an
# admin's job runs as root; with --allow-root-jobs a non-admin's job runs as root too.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ "$(id -u)" = 0 ] || missing "not root: tesseld cannot switch users"
NOBODY_UID=$(getent passwd nobody | cut -d: -f3)
[ -n "$NOBODY_UID" ] || missing "no 'nobody' account"

td_setup
chmod 755 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"
is "$(stat -c %a "$TD/data") $(stat -c %a "$TD/data/jobs") $(stat -c %a "$TD/data/tessel.db")" \
    "711 711 600" "data dir and jobs/ are traversable, the store is private"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
api POST /v1/users '{"name":"ghost"}'
api POST /v1/tokens '{"user":"ghost"}'
GH=$(jget .token)

api POST /v1/jobs '{"argv":["sh","-c","id -u; echo $USER; pwd"]}' "$NB"
J=$(jget .id)
wait_for '[ "$(job_state $J)" = succeeded ]'; ok $? "nobody's job succeeds"
api GET "/v1/jobs/$J/logs" "" "$NB"
is "$(sed -n 1p "$TD/out")" "$NOBODY_UID" "it runs as uid $NOBODY_UID (nobody)"
is "$(sed -n 2p "$TD/out")" "nobody" "with USER=nobody"
is "$(sed -n 3p "$TD/out")" "$TD/data/jobs/$J" "in its own job directory"
is "$(stat -c %u "$TD/data/jobs/$J/stdout")" "$NOBODY_UID" "its log belongs to nobody"

REASON="refused: no system account 'ghost' on this machine; ask an admin to create one or start tesseld with --allow-root-jobs"
api POST /v1/jobs '{"argv":["id","-u"]}' "$GH"
is "$CODE $(jget .error.code)" "422 unsatisfiable" "by default, ghost (no system account) is refused at submission"
is "$(jget .error.message)" "$REASON" "and told why"
api GET '/v1/jobs?limit=1000'
is "$(jq '[.jobs[] | select(.user == "ghost")] | length' "$TD/out")" 0 "no job of ghost was stored"
cli_setup
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$GH" tcli run --detach -- id -u
is "$RC" 1 "the CLI's run exits 1"
one_line_error; ok $? "with one line on stderr"
grep -qF "$REASON" "$TD/e"; ok $? "naming the reason"
api POST /v1/jobs '{"argv":["id","-u"]}'
A=$(jget .id)
wait_for '[ "$(job_state $A)" = succeeded ]'; ok $? "an admin's job runs"
api GET "/v1/jobs/$A/logs"
is "$(cat "$TD/out")" "0" "as root (the admin has no system account either)"
api POST /v1/users '{"name":"root"}'
api POST /v1/tokens '{"user":"root"}'
api POST /v1/jobs '{"argv":["id","-u"]}' "$(jget .token)"
is "$CODE $(jget .error.message)" "422 refused: system account 'root' is uid 0 and tesseld runs no non-admin's job as root; ask an admin to start tesseld with --allow-root-jobs" \
    "a non-admin named like a uid-0 account is refused too"
td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"

# --allow-root-jobs: ghost's job runs as root.  A second one waits for the GPU (held by an
# admin's job) while tesseld is restarted without the option: it then fails when it comes to start.
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs || missing "tesseld did not restart"
api POST /v1/jobs '{"argv":["id","-u"]}' "$GH"
K=$(jget .id)
wait_for '[ "$(job_state $K)" = succeeded ]'; ok $? "with --allow-root-jobs, ghost's job runs"
api GET "/v1/jobs/$K/logs" "" "$GH"
is "$(cat "$TD/out")" "0" "as tesseld's user (root)"
mkdir -p "$TD/go"
api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e $TD/go/a ]; do sleep 0.05; done\"],\"gpu\":1}"
H=$(jget .id)
wait_for '[ "$(job_state $H)" = running ]'; ok $? "an admin's job holds the GPU"
api POST /v1/jobs '{"argv":["id","-u"],"gpu":1}' "$GH"
K=$(jget .id)
is "$CODE $(job_state $K)" "201 pending" "ghost's next job is accepted and waits for the GPU"
td_stop; ok $? "tesseld stops cleanly"
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not restart"
touch "$TD/go/a"
wait_for '[ "$(job_state $H)" = succeeded ]'; ok $? "the admin's job ends"
wait_for '[ "$(job_state $K)" = failed ]'; ok $? "without --allow-root-jobs, ghost's waiting job fails when it comes to start"
is "$(jget .reason)" "$REASON" "with the same reason"
ok "$([ ! -s "$TD/data/jobs/$K/stdout" ]; echo $?)" "it never ran"
api POST /v1/jobs '{"argv":["id","-u"]}' "$NB"
J=$(jget .id)
wait_for '[ "$(job_state $J)" = succeeded ]'; ok $? "nobody's job still runs"
api GET "/v1/jobs/$J/logs" "" "$NB"
is "$(cat "$TD/out")" "$NOBODY_UID" "as nobody"
td_stop; ok $? "tesseld stops cleanly"
done_testing
