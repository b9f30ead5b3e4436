#!/bin/sh
# t3165-daemon-jobdir-reused-id.t - job ids are the store's (the next is the highest + 1), so a
# store restored from an older backup hands out again the ids of the jobs that ran after the
# backup; their directories (jobs/ID: logs, files, owned by their users) are still there.  A
# job that gets such an id must not be given that directory:
#   - the store is backed up; nobody's job then runs and leaves a file in its directory;
#   - the backup is restored, and user daemon's job gets the same id: it runs in a new, empty
#     directory of its own (daemon's), and cannot read nobody's file;
#   - nobody's directory is kept whole for the admin at jobs/.stale-ID-TIME, root's, 0700, and
#     tesseld's log says so.
# Before 2026-11-27 tesseld took the existing directory (mkdir's EEXIST as success) and chowned
# it to the new job's user, files and all.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
command -v sqlite3 >/dev/null || missing "sqlite3 is needed (the backup)"
[ "$(id -u)" = 0 ] || missing "must run as root (the jobs run as nobody and daemon)"
getent passwd nobody >/dev/null || missing "no 'nobody' account"
getent passwd daemon >/dev/null || missing "no 'daemon' account"

td_setup
chmod 755 "$TD"
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not start"
for u in nobody daemon; do api POST /v1/users "{\"name\":\"$u\"}"; done
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
api POST /v1/tokens '{"user":"daemon"}'
DM=$(jget .token)
sqlite3 "$TD/data/tessel.db" ".backup '$TD/backup.db'"
ok $? "the store is backed up"

api POST /v1/jobs '{"argv":["sh","-c","echo nobodys-secret > mine"]}' "$NB"
J1=$(jget .id)
wait_for "[ \"\$(job_state $J1)\" = succeeded ]"
ok $? "nobody's job $J1 runs and leaves a file in its directory"
is "$(stat -c %U "$TD/data/jobs/$J1/mine")" nobody "jobs/$J1/mine is nobody's"
td_stop
ok $? "tesseld stops"

rm -f "$TD/data/tessel.db-wal" "$TD/data/tessel.db-shm"
cp "$TD/backup.db" "$TD/data/tessel.db"
ok $? "the backup is restored"
td_start --fake-gpus 1xT4:16G --no-cgroups || missing "tesseld did not restart"
api POST /v1/jobs '{"argv":["sh","-c","cat mine; ls -A; id -un"]}' "$DM"
J2=$(jget .id)
is "$J2" "$J1" "daemon's job gets the same id"
wait_for "[ \"\$(job_state $J2 $DM)\" = failed ] || [ \"\$(job_state $J2 $DM)\" = succeeded ]"
ok $? "it runs"
api GET "/v1/jobs/$J2/logs" "" "$DM"
grep -q nobodys-secret "$TD/out"
ok "$([ $? != 0 ]; echo $?)" "it cannot read nobody's file"
is "$(tail -n 1 "$TD/out")" daemon "it ran as daemon"
is "$(stat -c '%U %a' "$TD/data/jobs/$J2")" "daemon 700" "jobs/$J2 is a new directory, daemon's, 0700"
ok "$([ ! -e "$TD/data/jobs/$J2/mine" ]; echo $?)" "without nobody's file"
STALE=$(ls -d "$TD/data/jobs/.stale-$J1-"* 2>/dev/null | head -n 1)
ok "$([ -n "$STALE" ]; echo $?)" "nobody's directory is moved aside ($(basename "${STALE:-none}"))"
is "$(stat -c '%U %G %a' "$STALE" 2>/dev/null)" "root root 700" "... root's, 0700"
is "$(cat "$STALE/mine" 2>/dev/null)" nobodys-secret "... whole"
grep -q "job $J2: .* was there already and is not this job's .*moved aside" "$TD/tesseld.log"
ok $? "tesseld's log says so"
td_stop
ok $? "tesseld stops cleanly"
done_testing
