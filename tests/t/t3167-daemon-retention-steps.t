#!/bin/sh
# t3167-daemon-retention-steps.t - --job-log-retention removes an old job's directory on the
# main thread, which also runs the scheduling passes.  A job may leave millions of files there:
# the removal goes in steps (at most 2,000 entries each, --test-retention-step here 10), with
# the passes between them.  A job whose directory holds 200,000 empty files ended 40 days ago
# (the data directory is a tmpfs);
# tesseld starts with --job-log-retention 30d:
#   - the sweep makes progress (fewer files at each look) and is still under way while a new
#     job is submitted, started, run and recorded succeeded, and tesseld's passes (its
#     /metrics counter) go on; tesseld stops at once meanwhile;
#   - with the default step the directory is gone in the end, the store keeps the job, and the
#     removal is logged.
# Nothing is timed: the order of things is what is asserted (the directory is still there, with
# fewer files, after the new job's end).  Before 2026-11-27 the whole tree went in one call
# between two passes, however many files it held.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
command -v sqlite3 >/dev/null || missing "sqlite3 is needed"
[ "$(id -u)" = 0 ] || missing "must run as root (the data directory is a tmpfs of its own)"

td_setup
# The data directory on a tmpfs: 200,000 files are made in 2-3 s there, a minute on the
# development VM's ext4 (the test's own setup, not tesseld's work).
mkdir -p "$TD/data"
mount -t tmpfs -o size=1g,mode=0700 tmpfs "$TD/data" || missing "cannot mount tmpfs"
trap 'for p in $TD_PIDS; do kill -9 "$p" 2>/dev/null; done; umount -l "$TD/data"; td_cleanup' EXIT
ARGS="--fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs --disk-reserve 1M"
td_start $ARGS
api POST /v1/jobs '{"argv":["echo","old"]}'
OLD=$(jget .id)
wait_for "[ \"\$(job_state $OLD)\" = succeeded ]"
ok $? "job $OLD runs"
td_stop
ok $? "tesseld stops"
sqlite3 "$TD/data/tessel.db" \
    "UPDATE jobs SET finished_ms = finished_ms - 40 * 86400000 WHERE id = $OLD" ||
    missing "cannot age job $OLD"
OD="$TD/data/jobs/$OLD"
(cd "$OD" && seq -f 'f%.0f' 200000 | xargs touch) || missing "cannot make 200,000 files"
count() { ls -f "$OD" 2>/dev/null | grep -vc '^\.\.\?$'; }
C0=$(count)
ok "$([ "$C0" -ge 200000 ]; echo $?)" "its directory holds $C0 entries, and it ended 40 days ago"
passes() {
    curl -s "$TD_URL/metrics" | sed -n 's/^tessel_sched_passes_total \([0-9]*\).*/\1/p'
}

td_start $ARGS --job-log-retention 30d --test-retention-step 10
wait_for "[ \"\$(count)\" -lt $C0 ]"
ok $? "the sweep begins (fewer files than $C0)"
C1=$(count)
P1=$(passes)
api POST /v1/jobs '{"argv":["echo","new"]}'
NEW=$(jget .id)
wait_for "[ \"\$(job_state $NEW)\" = succeeded ]"
ok $? "a new job is submitted, started and run to its end meanwhile"
C2=$(count)
P2=$(passes)
ok "$([ -d "$OD" ] && [ "$C2" -gt 0 ] && [ "$C2" -lt "$C1" ]; echo $?)" \
    "the sweep is still under way then, and getting on ($C1, then $C2 files left)"
ok "$([ "$P2" -gt "$P1" ]; echo $?)" "the passes go on between its steps ($P1, then $P2)"
td_stop
ok $? "tesseld stops cleanly in the middle of the sweep"

td_start $ARGS --job-log-retention 30d
wait_for "[ ! -e \"$OD\" ]"
ok $? "with the default step the directory is gone in the end"
# Logged at the end of the step that removed the directory: waited for, not raced.
wait_for 'grep -q "job-log retention: removed the directories (logs) of 1 job(s) that ended more than 30d ago" "$TD/tesseld.log"'
ok $? "the removal is logged"
is "$(job_state "$OLD") $(job_state "$NEW")" "succeeded succeeded" "the store keeps both jobs"
[ -d "$TD/data/jobs/$NEW" ]
ok $? "the new job's directory is kept"
td_stop
ok $? "tesseld stops cleanly"
done_testing
