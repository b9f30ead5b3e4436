#!/bin/sh
# t3102-config-retention.t - --job-log-retention: the directory (logs) of a job that ended
# longer ago than the retention is removed, those of newer jobs are kept; 0 keeps them all;
# the removal is logged; the store keeps the jobs.  A job's age is set in the store while
# tesseld is stopped (no waiting for days); the new retention comes with a SIGHUP.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
command -v curl >/dev/null && command -v jq >/dev/null || missing "curl and jq are needed"
command -v sqlite3 >/dev/null || missing "sqlite3 is needed"
[ "$(id -u)" -eq 0 ] || missing "root (the configuration file is root's)"

td_setup
C="$TD/tesseld.conf"
printf 'job-log-retention = 0\n' >"$C"
ARGS="--config $C --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs"
td_start $ARGS
run_job() { # run_job TEXT: a job that prints TEXT, run to its end; its id in $J
    api POST /v1/jobs "{\"argv\":[\"echo\",\"$1\"]}"
    J=$(jget .id)
    wait_for '[ "$(job_state '"$J"')" = succeeded ]'
}
run_job old
OLD=$J
run_job new
NEW=$J
td_stop
# The first job ended 40 days ago.
sqlite3 "$TD/data/tessel.db" \
    "UPDATE jobs SET finished_ms = finished_ms - 40 * 86400000 WHERE id = $OLD" ||
    missing "cannot age job $OLD"
td_start $ARGS
run_job later # some passes of the main loop, each of which could sweep
[ -d "$TD/data/jobs/$OLD" ]
ok $? "job-log-retention = 0: the 40-day-old job's directory is kept"

printf 'job-log-retention = 30d\n' >"$C"
kill -HUP "$TD_PID"
wait_for '[ ! -e "'"$TD/data/jobs/$OLD"'" ]'
ok $? "job-log-retention = 30d (SIGHUP): the 40-day-old job's directory is removed"
[ -d "$TD/data/jobs/$NEW" ] && [ -d "$TD/data/jobs/$J" ]
ok $? "the directories of the newer jobs are kept"
api GET "/v1/jobs/$NEW/logs?stream=stdout"
is "$CODE $(cat "$TD/out")" "200 new" "a newer job's log still reads"
grep -q "job-log retention: removed the directories (logs) of 1 job(s) that ended more than 30d ago" \
    "$TD/tesseld.log"
ok $? "the removal is logged"
is "$(job_state "$OLD")" succeeded "the store keeps the old job"
td_stop
ok $? "tesseld stops cleanly"
done_testing
