#!/bin/sh
# t3131-daemon-history-retention.t - --history-retention: a store holding two days of usage
# history (seeded through the real write path) loses, at tesseld's first sample, every row
# of every tier older than the retention (1h here) and keeps the last hour's; a range longer
# than the retention is refused with one line.  The history survives a restart, and a store
# at the previous schema (9) is migrated with its jobs kept.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
for t in curl jq sqlite3; do
    command -v $t >/dev/null || missing "$t is needed"
done
SEED=$TESSEL_BUILD/tests/daemon/tessel-hist-seed
[ -x "$TESSEL_BUILD/bin/tesseld" ] && [ -x "$SEED" ] || missing "tesseld or tessel-hist-seed not built"

td_setup
mkdir -p "$TD/data"
DB=$TD/data/tessel.db
# A store at schema 9 with a job in it, as the previous tesseld left it.
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
api POST /v1/jobs '{"argv":["true"]}'
JOB=$(jget .id)
wait_for '[ "$(job_state "$JOB")" = succeeded ]'; ok $? "a job ran to its end"
td_stop
sqlite3 "$DB" "DROP TABLE usage_history; DROP TABLE slurm_jobs; DROP TABLE projects;
    DROP TABLE project_members; DROP TABLE project_events; DROP INDEX jobs_project;
    ALTER TABLE jobs DROP COLUMN project; ALTER TABLE jobs DROP COLUMN project_name;
    ALTER TABLE users DROP COLUMN default_project; ALTER TABLE jobs DROP COLUMN image;
    ALTER TABLE jobs DROP COLUMN tty;
    DROP TABLE folder_shares; DROP TABLE folders; ALTER TABLE jobs DROP COLUMN folders;
    DROP TABLE services; DROP TABLE service_replicas; DROP TABLE service_tokens;
    DROP TABLE gpu_speeds; ALTER TABLE queues DROP COLUMN max_ngpu_milli;
    ALTER TABLE jobs DROP COLUMN gpu_released; ALTER TABLE jobs DROP COLUMN gpu_oversub;
    ALTER TABLE jobs DROP COLUMN preemptible; ALTER TABLE jobs DROP COLUMN suspended_for;
    ALTER TABLE jobs DROP COLUMN services;
    ALTER TABLE queues DROP COLUMN idle_reclaim_s; ALTER TABLE jobs DROP COLUMN idle_reclaim_s;
    ALTER TABLE jobs DROP COLUMN suspended_idle; ALTER TABLE queues DROP COLUMN gpu_oversub;
    DROP INDEX job_deps_dep; DROP INDEX jobs_array_state;
    DELETE FROM sqlite_sequence WHERE name IN ('projects', 'folders', 'services');
    PRAGMA user_version = 9;"
is "$(sqlite3 "$DB" 'PRAGMA user_version')" 9 "the store is put back at schema 9"

printf '%s\n' "gpu GPU-a 50 0 1 2 500 1 0" "queue default - 0 1 2 500 1 0" \
    "user alice - 0 1 2 500 1 0" >"$TD/series"
"$SEED" "$DB" 10s 8d 2d <"$TD/series"
ok $? "two days of 10 s samples seeded (the seeder migrates the store)"
is "$(sqlite3 "$DB" 'PRAGMA user_version')" 26 "schema 26 (the migrations after 9 applied)"
is "$(sqlite3 "$DB" "SELECT state FROM jobs WHERE id = $JOB")" 2 "the job of schema 9 is kept"
NOW=$(date +%s)
old=$(sqlite3 "$DB" "SELECT count(*) FROM usage_history WHERE t < $NOW - 3600 - 600")
[ "$old" -gt 1000 ]; ok $? "$old rows older than an hour before tesseld starts"

td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs --history-retention 1h
pruned() {
    [ "$(sqlite3 "$DB" "SELECT count(*) FROM usage_history WHERE t < $NOW - 3600 - 600")" = 0 ]
}
wait_for pruned; ok $? "at the first sample every tier loses what is older than the retention"
for step in 10 60 600; do
    n=$(sqlite3 "$DB" "SELECT count(*) FROM usage_history WHERE step = $step AND name = 'GPU-a'")
    [ "$n" -ge 1 ] && [ "$n" -le $((3600 / step + 2)) ]; ok $? "step $step: the last hour's rows are kept ($n)"
done
api GET "/v1/history?scope=gpu&range=1h"
is "$CODE" 200 "the last hour is served"
is "$(jget '.retention')" 3600 "retention as --history-retention"
n=$(jget '[.series[] | select(.name == "GPU-a") | .busy[] | select(. == 50)] | length')
[ "$n" -ge 300 ]; ok $? "with the seeded figures ($n points at 50 %)"
api GET "/v1/history?scope=gpu&range=1d"
is "$CODE/$(jget .error.field)" "400/range" "a day is longer than the history kept: 400"

# A restart keeps what was written.
before=$(sqlite3 "$DB" "SELECT count(*) FROM usage_history WHERE name = 'GPU-a'")
td_stop; ok $? "tesseld stops cleanly (no sanitizer report)"
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs --history-retention 1h
api GET "/v1/history?scope=queue&range=1h"
n=$(jget '[.series[] | select(.name == "default") | .t[]] | length')
[ "$n" -ge 300 ]; ok $? "after a restart the queue's hour is still served ($n points; $before GPU rows)"
td_stop; ok $? "tesseld stops cleanly again"
done_testing
