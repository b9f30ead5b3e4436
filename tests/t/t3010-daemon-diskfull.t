#!/bin/sh
# t3010-daemon-diskfull.t - a job of an unprivileged user (nobody) fills the data directory's
# file system (a 32 MiB tmpfs): submissions get 507 insufficient_storage (none half-written)
# once less than --disk-reserve is free; tesseld gives the store's reserve file back, so the
# running jobs still end and their ends (exit codes) are recorded; reads keep working and
# tesseld keeps running.  Once space is freed the reserve is allocated again and submissions
# succeed; every acknowledged job is in the store exactly once, SQLite's integrity check
# passes, and a restart finds them all.  Needs root (mounts a tmpfs, switches to nobody).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
fail_all() { echo "1..1"; echo "not ok 1 - $1"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || fail_all "curl and jq are needed"
command -v sqlite3 >/dev/null || fail_all "sqlite3 is needed"
[ "$(id -u)" = 0 ] || fail_all "not root: cannot mount a small file system"

td_setup
chmod 755 "$TD" # nobody's job reaches its directory under it
mkdir -p "$TD/data"
mount -t tmpfs -o size=32m,mode=0700 tmpfs "$TD/data" || fail_all "cannot mount tmpfs"
umount_data() { umount -l "$TD/data" 2>/dev/null; }
trap 'td_cleanup_fs' EXIT
td_cleanup_fs() {
    for p in $TD_PIDS; do kill -9 "$p" 2>/dev/null; done
    sleep 0.2
    umount_data
    td_cleanup
}
avail() { df -B1 --output=avail "$TD/data" | tail -1 | tr -d ' '; }
ARGS="--fake-gpus 1xT4:16G --no-cgroups --disk-reserve 8M"
td_start $ARGS || fail_all "tesseld did not start"
is "$(stat -c %s "$TD/data/store.reserve")" 4194304 "the store's 4 MiB reserve file is allocated"

api POST /v1/users '{"name":"nobody"}'
api POST /v1/tokens '{"user":"nobody"}'
NB=$(jget .token)
# Jobs that never start (their queue holds no GPU), so that only the store writes.
api POST /v1/queues '{"name":"capped","limit":{"gpu":0}}'
is "$CODE" 201 "a queue capped at 0 GPU"
BODY='{"argv":["true"],"gpu":0.5,"queue":"capped","name":"'$(printf 'x%.0s' $(seq 1 60))'"}'
ACKED=0
for i in $(seq 1 20); do
    api POST /v1/jobs "$BODY" "$NB"
    [ "$CODE" = 201 ] && ACKED=$((ACKED + 1))
done
is "$ACKED" 20 "20 submissions acknowledged with space left"

# Two running jobs that end when told (a file "go" in their directory) with status 7 and 9;
# nobody's fills the file system first.
api POST /v1/jobs '{"argv":["sh","-c","while [ ! -e go ]; do sleep 0.1; done; exit 9"],"gpu":0.25}'
SLEEPER=$(jget .id)
wait_for "[ \"\$(job_state $SLEEPER)\" = running ]"
api POST /v1/jobs '{"argv":["sh","-c","dd if=/dev/zero of=fill bs=64k 2>/dev/null; touch filled; while [ ! -e go ]; do sleep 0.1; done; exit 7"],"gpu":0.25}' "$NB"
FILLER=$(jget .id)
ACKED=$((ACKED + 2))
wait_for "[ -e '$TD/data/jobs/$FILLER/filled' ]"
ok $? "nobody's job filled the file system"
is "$(job_state $SLEEPER)" running "the other job is running"
wait_for '[ ! -e "$TD/data/store.reserve" ]'
ok $? "tesseld gave the store's reserve back ($(avail) bytes free now)"
# The line comes just after the file goes: wait for it too.  Either of the two paths may have
# given it back first: the main loop's watch of the free space, or the store itself when a
# write failed with SQLITE_FULL.
wait_for "grep -Eq \"gave back the (store's )?4194304-byte reserve\" '$TD/tesseld.log'"
ok $? "and says so in its log"

R507=0 OTHER=0
for i in $(seq 1 10); do
    api POST /v1/jobs "$BODY" "$NB"
    case "$CODE" in
    507) [ "$(jget .error.code)" = insufficient_storage ] && R507=$((R507 + 1)) ;;
    201) ACKED=$((ACKED + 1)); OTHER=$((OTHER + 1)) ;;
    *) OTHER=$((OTHER + 1)); diag "unexpected $CODE: $(cat "$TD/out")" ;;
    esac
done
is "$R507 $OTHER" "10 0" "with the disk full, 10 of 10 submissions get 507 insufficient_storage"
diag "$(jget .error.message)"
jget .error.message | grep -q "^insufficient storage: .* free on the data directory's file system, reserve 8.00 MiB"
ok $? "the message says what is free and the reserve"
api GET "/v1/jobs?limit=10000"
is "$CODE" 200 "reads still work"
api GET /healthz "" ""
is "$CODE" 200 "tesseld still answers /healthz"

# The running jobs end while the disk is (nearly) full: their ends are recorded.
touch "$TD/data/jobs/$FILLER/go" "$TD/data/jobs/$SLEEPER/go"
wait_for "[ \"\$(job_state $FILLER)\" = failed ] && [ \"\$(job_state $SLEEPER)\" = failed ]"
ok $? "both running jobs ended and were recorded"
api GET "/v1/jobs/$FILLER"
is "$(jget .exit_code)" 7 "nobody's job: exit status 7 recorded"
api GET "/v1/jobs/$SLEEPER"
is "$(jget .exit_code)" 9 "the other: exit status 9 recorded"
kill -0 "$TD_PID"; ok $? "tesseld is still running"

# Space comes back: the reserve is allocated again, submissions succeed.
rm -f "$TD/data/jobs/$FILLER/fill"
wait_for '[ -e "$TD/data/store.reserve" ]'
ok $? "with space back, the store's reserve is allocated again"
api POST /v1/jobs "$BODY" "$NB"
is "$CODE" 201 "and a submission succeeds again"
[ "$CODE" = 201 ] && ACKED=$((ACKED + 1))
api GET "/v1/jobs?limit=10000"
is "$(jq '.jobs | length' "$TD/out")" "$ACKED" "exactly the $ACKED acknowledged jobs are in the store"
is "$(jq '[.jobs[] | select(.argv[0] != "true" and .argv[0] != "sh")] | length' "$TD/out")" 0 \
    "none half-written"
td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
is "$(sqlite3 "$TD/data/tessel.db" 'pragma integrity_check')" ok "integrity_check: ok"
td_start $ARGS
api GET "/v1/jobs?limit=10000"
is "$(jq '.jobs | length' "$TD/out")" "$ACKED" "after a restart, still the $ACKED acknowledged jobs"
td_stop
done_testing
