#!/bin/sh
# t3026-daemon-cwd.t - with tesseld running as root, a job's cwd is checked as the job's user,
# not by root: nobody learns nothing about paths below a directory it cannot read (the answer
# for one that exists there and one that does not is the same 400, and no job is stored), a
# directory nobody may enter is refused, one it may enter is accepted and the job runs in it.
# A cwd removed between submission and start fails the job at its start, as nobody
# ("chdir: ..."), nothing else lost.  An admin's job (run as root) may use any directory.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
bail() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || bail "curl and jq are needed"
[ "$(id -u)" = 0 ] || bail "must run as root (tesseld switches users)"
getent passwd nobody >/dev/null || bail "no 'nobody' account"

td_setup
chmod 755 "$TD"
mkdir -p "$TD/private/exists" "$TD/public/work" "$TD/public/closed"
chmod 700 "$TD/private"
chmod 755 "$TD/public" "$TD/public/work"
chown nobody "$TD/public/work"
chmod 700 "$TD/public/closed"
touch "$TD/public/file"
td_start --fake-gpus 1xT4:16G --no-cgroups || bail "tesseld did not start"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
api GET "/v1/jobs?limit=1000"
BEFORE=$(jq '.jobs | length' "$TD/out")

submit() { api POST /v1/jobs "{\"argv\":[\"sh\",\"-c\",\"pwd >where\"],\"cwd\":\"$1\"}" "${2-$NB}"; }
submit "$TD/private/exists"
A="$CODE $(jget .error.code) $(jget .error.field) $(jget .error.message | sed "s|$TD/private/exists|P|")"
submit "$TD/private/missing"
B="$CODE $(jget .error.code) $(jget .error.field) $(jget .error.message | sed "s|$TD/private/missing|P|")"
is "$A" "400 invalid_value cwd cwd 'P' is not a directory user 'nobody' can enter" \
    "a directory that exists below one nobody cannot read: refused"
is "$B" "$A" "one that does not exist there: the same answer"
submit "$TD/public/closed"
is "$CODE $(jget .error.message)" "400 cwd '$TD/public/closed' is not a directory user 'nobody' can enter" \
    "a directory nobody may not enter: refused"
submit "$TD/public/file"
is "$CODE $(jget .error.message)" "400 cwd '$TD/public/file' is not a directory user 'nobody' can enter" \
    "a file: refused the same way"
api GET "/v1/jobs?limit=1000"
is "$(jq '.jobs | length' "$TD/out")" "$BEFORE" "no refused job was stored"

submit "$TD/public/work"
is "$CODE" 201 "a directory nobody may enter: accepted"
J=$(jget .id)
wait_for '[ "$(job_state '"$J"')" = succeeded ]'; ok $? "the job succeeds"
is "$(cat "$TD/public/work/where") $(stat -c %U "$TD/public/work/where")" "$TD/public/work nobody" \
    "it ran in that directory, as nobody"

# Removed between submission and start: the job fails at its start, as nobody.
api POST /v1/queues '{"name":"held","limit":{"gpu":0}}'
mkdir "$TD/public/gone"
chmod 755 "$TD/public/gone"
api POST /v1/jobs "{\"argv\":[\"true\"],\"cwd\":\"$TD/public/gone\",\"gpu\":0.5,\"queue\":\"held\"}" "$NB"
is "$CODE" 201 "a job whose cwd exists at submission"
G=$(jget .id)
rmdir "$TD/public/gone"
api PATCH /v1/queues/held '{"limit":{"gpu":1}}'
wait_for '[ "$(job_state '"$G"')" = failed ]'
api GET "/v1/jobs/$G" "" "$NB"
is "$(jget .state) $(jget .reason)" "failed chdir: No such file or directory" \
    "its cwd removed before its start: failed with the error nobody's chdir got"

# An admin's job runs as root: any directory.
submit "$TD/private/exists" "$TD_ADMIN"
is "$CODE" 201 "an admin's job (run as root) may use a directory only root may enter"
R=$(jget .id)
wait_for '[ "$(job_state '"$R"')" = succeeded ]'; ok $? "and succeeds"
submit "$TD/private/missing" "$TD_ADMIN"
is "$CODE $(jget .error.message)" "400 cwd '$TD/private/missing' is not a directory the job can enter" \
    "a missing one is refused for the admin too"
td_stop; ok $? "tesseld stops cleanly"
done_testing
