#!/bin/sh
# t3010-daemon-diskfull.t - the data directory's file system fills up: submissions get 500
# `internal` (none half-written), reads keep working, tesseld keeps running; once space is
# freed, submissions succeed again, every acknowledged job is in the store exactly once and
# SQLite's integrity check passes.  Needs root (a small tmpfs is mounted for the data dir).
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || skip_all "curl and jq are needed"
command -v sqlite3 >/dev/null || skip_all "sqlite3 is needed"
[ "$(id -u)" = 0 ] || skip_all "not root: cannot mount a small file system"

td_setup
mkdir -p "$TD/data"
mount -t tmpfs -o size=8m,mode=0700 tmpfs "$TD/data" 2>/dev/null || skip_all "cannot mount tmpfs"
umount_data() { umount -l "$TD/data" 2>/dev/null; }
trap 'td_cleanup_fs' EXIT
td_cleanup_fs() {
    for p in $TD_PIDS; do kill -9 "$p" 2>/dev/null; done
    sleep 0.2
    umount_data
    td_cleanup
}
td_start --fake-gpus 1xT4:16G --no-cgroups || skip_all "tesseld did not start"
# Jobs that never start (their queue may hold no GPU), so that only the store writes.
api POST /v1/queues '{"name":"capped","limit":{"gpu":0}}'
is "$CODE" 201 "a queue capped at 0 GPU"
BODY='{"argv":["true"],"gpu":0.5,"queue":"capped","name":"'$(printf 'x%.0s' $(seq 1 60))'"}'
ACKED=0
for i in $(seq 1 20); do
    api POST /v1/jobs "$BODY"
    [ "$CODE" = 201 ] && ACKED=$((ACKED + 1))
done
is "$ACKED" 20 "20 submissions acknowledged with space left"

# Fill the file system.
dd if=/dev/zero of="$TD/data/filler" bs=64k 2>/dev/null
FULL500=0 OTHER=0 N=0
for i in $(seq 1 300); do
    api POST /v1/jobs "$BODY"
    N=$((N + 1))
    case "$CODE" in
    201) ACKED=$((ACKED + 1)) ;;
    500) [ "$(jget .error.code)" = internal ] && FULL500=$((FULL500 + 1)) || OTHER=$((OTHER + 1)) ;;
    *) OTHER=$((OTHER + 1)); diag "unexpected $CODE: $(cat "$TD/out")" ;;
    esac
    [ $FULL500 -ge 5 ] && break
done
diag "disk full: $N submissions, $FULL500 answered 500, $((N - FULL500 - OTHER)) accepted"
ok "$([ $FULL500 -ge 5 ]; echo $?)" "with the disk full, submissions get 500 internal"
is "$OTHER" 0 "and no other answer"
api GET /v1/jobs?limit=10000
is "$CODE" 200 "reads still work"
api GET /healthz "" ""
is "$CODE" 200 "tesseld still answers /healthz"

rm -f "$TD/data/filler"
sleep 1.5
api POST /v1/jobs "$BODY"
is "$CODE" 201 "once space is freed, a submission succeeds again"
[ "$CODE" = 201 ] && ACKED=$((ACKED + 1))
api GET "/v1/jobs?limit=10000"
is "$(jq '.jobs | length' "$TD/out")" "$ACKED" "exactly the $ACKED acknowledged jobs are in the store"
is "$(jq '[.jobs[] | select(.argv != ["true"])] | length' "$TD/out")" 0 "none half-written"
td_stop; ok $? "tesseld stops cleanly on SIGTERM (exit 0, no sanitizer report)"
is "$(sqlite3 "$TD/data/tessel.db" 'pragma integrity_check')" ok "integrity_check: ok"
td_start --fake-gpus 1xT4:16G --no-cgroups
api GET "/v1/jobs?limit=10000"
is "$(jq '.jobs | length' "$TD/out")" "$ACKED" "after a restart, still the $ACKED acknowledged jobs"
td_stop
done_testing
