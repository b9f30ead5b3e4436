#!/bin/sh
# t3162-daemon-cwd-stalled.t - a submission's cwd is tried by a child of tesseld that takes the
# job account's ids and calls chdir.  A user with a FUSE mount whose server never answers
# (fusermount3 is set-uid root where fuse3 is installed) can make that chdir wait for ever.
# Here the test, as root, mounts such a file system (a /dev/fuse descriptor nobody reads;
# allow_other so that nobody's lookups reach it), and nobody submits a job with a cwd below it:
#   - meanwhile GET /v1/jobs and an admin's submission are answered (within 5 s: "did not
#     hang"): the check runs without tesseld's lock and without a turn of the group commit;
#   - the submission is refused with 400 naming the cwd and the 2 s it was given (answered
#     within 60 s: "did not hang"), and no job is stored.
# Before 2026-11-27 tesseld waited for the child without a limit, with its lock held: every
# request stalled until the mount went away.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
[ "$(id -u)" = 0 ] || missing "must run as root (the job's account is nobody; the test mounts FUSE)"
getent passwd nobody >/dev/null || missing "no 'nobody' account"
[ -c /dev/fuse ] || missing "/dev/fuse is needed (the fuse module)"

td_setup
chmod 755 "$TD"
MNT="$TD/fuse"
mkdir "$MNT"
# Unmount before td_cleanup removes $TD: a walk into the stalled mount would wait for ever.
unstall() {
    exec 3>&- # the connection aborts: whatever waits on it fails
    umount -l "$MNT" 2>/dev/null
    return 0
}
trap 'unstall; td_cleanup' EXIT
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"
api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
api GET "/v1/jobs?limit=1000"
BEFORE=$(jq '.jobs | length' "$TD/out")

exec 3<>/dev/fuse || missing "cannot open /dev/fuse"
mount -i -t fuse -o fd=3,rootmode=40000,user_id=0,group_id=0,allow_other tessel-t3162 "$MNT" ||
    missing "cannot mount a FUSE file system"
ok 0 "a FUSE file system whose server never answers is mounted on $MNT"

curl -s -m 60 -o "$TD/sub.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $NB" \
    -H 'Content-Type: application/json' \
    --data-binary "{\"argv\":[\"true\"],\"cwd\":\"$MNT/sub\"}" "$TD_URL/v1/jobs" >"$TD/sub.code" &
SUB_PID=$!
sleep 0.3 # let the submission arrive first (ordering only: nothing is timed)
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TD_ADMIN" \
    "$TD_URL/v1/jobs")
is "$code" 200 "GET /v1/jobs (admin) answers within 5 s while nobody's cwd check waits"
code=$(curl -s -m 5 -o "$TD/adm.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $TD_ADMIN" \
    -H 'Content-Type: application/json' --data-binary '{"argv":["true"],"cwd":"/"}' \
    "$TD_URL/v1/jobs")
is "$code" 201 "an admin's submission is answered within 5 s meanwhile"
ADM=$(jq -r .id "$TD/adm.out")
wait "$SUB_PID"
is "$(cat "$TD/sub.code") $(jq -r '.error.code + " " + .error.field' "$TD/sub.out")" \
    "400 invalid_value cwd" "nobody's submission is refused, 400 on the cwd (within 60 s)"
is "$(jq -r .error.message "$TD/sub.out")" \
    "cwd '$MNT/sub' did not answer within 2 s when user 'nobody' tried to enter it (a file system that does not answer cannot be a job's cwd)" \
    "... with the reason"
unstall
ok 0 "the FUSE file system is unmounted"
api GET "/v1/jobs?limit=1000"
is "$(jq '.jobs | length' "$TD/out")" "$((BEFORE + 1))" "no job of nobody's was stored (only the admin's)"
wait_for "[ \"\$(job_state $ADM)\" = succeeded ]"
ok $? "the admin's job runs and succeeds"
api POST /v1/jobs '{"argv":["true"],"cwd":"/"}' "$NB"
is "$CODE" 201 "nobody's next submission with a good cwd is accepted"
kill -0 "$TD_PID"
ok $? "tesseld is up"
td_stop
ok $? "tesseld stops cleanly"
done_testing
