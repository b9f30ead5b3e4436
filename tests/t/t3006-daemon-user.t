#!/bin/sh
# t3006-daemon-user.t - with tesseld running as root, a job runs as the submitting user when
# that name is a system account (here: nobody), with that account's HOME and USER, its logs
# readable by it; the job of a user without an account runs as tesseld's user, unless tesseld
# was started with --no-root-jobs: then it fails to start (an admin's job still runs as root).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || skip_all "curl and jq are needed"
[ "$(id -u)" = 0 ] || skip_all "not root: tesseld cannot switch users"
NOBODY_UID=$(getent passwd nobody | cut -d: -f3)
[ -n "$NOBODY_UID" ] || skip_all "no 'nobody' account"

td_setup
chmod 755 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups || skip_all "tesseld did not start"
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

api POST /v1/jobs '{"argv":["id","-u"]}' "$GH"
K=$(jget .id)
wait_for '[ "$(job_state $K)" = succeeded ]'
api GET "/v1/jobs/$K/logs" "" "$GH"
is "$(cat "$TD/out")" "0" "a user without a system account runs as tesseld's user (root)"

td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"

# --no-root-jobs: the job of a non-admin without a system account fails to start instead.
td_start --fake-gpus 1xT4:16G --no-cgroups --no-root-jobs || skip_all "tesseld did not restart"
api POST /v1/jobs '{"argv":["id","-u"]}' "$GH"
K=$(jget .id)
wait_for '[ "$(job_state $K)" = failed ]'; ok $? "with --no-root-jobs, ghost's job fails"
is "$(jget .reason)" "refused: user 'ghost' has no system account here and tesseld (root, --no-root-jobs) runs no non-admin's job as root" \
    "and says why"
ok "$([ ! -s "$TD/data/jobs/$K/stdout" ]; echo $?)" "it never ran"
api POST /v1/jobs '{"argv":["id","-u"]}' "$NB"
J=$(jget .id)
wait_for '[ "$(job_state $J)" = succeeded ]'; ok $? "nobody's job still runs (as nobody)"
api POST /v1/jobs '{"argv":["id","-u"]}'
A=$(jget .id)
wait_for '[ "$(job_state $A)" = succeeded ]'
api GET "/v1/jobs/$A/logs"
is "$(cat "$TD/out")" "0" "an admin's job still runs as root"
td_stop; ok $? "tesseld stops cleanly"
done_testing
