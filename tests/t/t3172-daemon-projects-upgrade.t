#!/bin/sh
# t3172-daemon-projects-upgrade.t - an existing setup keeps working: a store of the schema before
# projects (BEFORE, the migration before 12: users, a queue, finished and pending jobs) is migrated at tesseld's start to the
# project 'default' (queue 'default', every user a member, jobs not shared), its jobs become
# jobs of 'default' and are seen as before (each user their own, an admin all), and jobs
# submitted without a project behave as before: queue 'default' or the queue named, the
# queue's own permissions, a user's job hidden from another.
. "$TESSEL_SRCDIR/tests/lib/tap.sh"
. "$TESSEL_SRCDIR/tests/lib/daemon.sh"
. "$TESSEL_SRCDIR/tests/lib/cli.sh"
command -v curl >/dev/null && command -v jq >/dev/null && command -v sqlite3 >/dev/null ||
    missing "curl, jq and sqlite3 are needed"

td_setup
td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
cli_setup
DB="$TD/data/tessel.db"
# The schema before projects (migration 12, src/common/libstore/store.c): its own changes are
# taken out below and the version set back to this.  At a merge that renumbers migration 12,
# BEFORE and PROJECTS follow.
BEFORE=11
PROJECTS=26 # the latest schema: projects (12), container images (13), terminals (14), folders (15), services (16), GPU speeds (17), released GPU memory (18), projects' folder quotas (19), GPU memory oversubscription (20), preemptible (21), jobs' web services (22), idle reclamation (23), its inheritance down the queue tree (24), queues' oversubscription (25) and the index of dependencies by the job they name (26) after them
api POST /v1/users '{"name":"amy"}'
api POST /v1/tokens '{"user":"amy"}'
AMY=$(jget .token)
api POST /v1/users '{"name":"bo"}'
api POST /v1/tokens '{"user":"bo"}'
BO=$(jget .token)
api POST /v1/queues '{"name":"gpu","allow":{"users":["amy"]},"limit":{"gpu":0}}'
api POST /v1/jobs '{"argv":["true"]}' "$AMY"
OLD1=$(jget .id)
wait_for '[ "$(job_state "$OLD1")" = succeeded ]'; ok $? "amy's first job ran"
api POST /v1/jobs '{"argv":["true"],"queue":"gpu","gpu":0.5}' "$AMY"
OLD2=$(jget .id)
is "$CODE $(job_state "$OLD2")" "201 pending" "amy's second job waits in queue gpu (limit 0)"
td_stop
# Back to the schema before projects, as a tesseld from before projects left it.
sqlite3 "$DB" "DROP TABLE projects; DROP TABLE project_members; DROP TABLE project_events;
    DROP INDEX jobs_project; ALTER TABLE jobs DROP COLUMN project;
    ALTER TABLE jobs DROP COLUMN project_name; ALTER TABLE users DROP COLUMN default_project;
    ALTER TABLE jobs DROP COLUMN image; ALTER TABLE jobs DROP COLUMN tty;
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
    PRAGMA user_version = $BEFORE;"
is "$(sqlite3 "$DB" 'PRAGMA user_version')" $BEFORE "the store is at schema $BEFORE (no projects)"

td_start --fake-gpus 1xT4:16G --no-cgroups --allow-root-jobs
is "$(sqlite3 "$DB" 'PRAGMA user_version')" $PROJECTS "tesseld migrates it to schema $PROJECTS"
api GET /v1/projects
is "$(jq -c '[.projects[] | [.name, .queue, .share_jobs, .members_count]]' "$TD/out")" \
    '[["default","default",false,3]]' "one project, 'default', queue 'default', jobs not shared, 3 members"
api GET /v1/projects/default
is "$(jq -c '[.members[] | .user + ":" + .role]' "$TD/out")" '["admin:member","amy:member","bo:member"]' \
    "every user is a member of it"
api GET "/v1/jobs/$OLD2" "" "$AMY"
is "$CODE $(jget .state) $(jget .queue) $(jget .project)" "200 pending gpu default" \
    "amy's pending job is there, in its queue, of the project 'default'"
api GET "/v1/jobs/$OLD1" "" "$BO"
is "$CODE" 404 "bo still cannot see amy's job"
api GET "/v1/jobs?project=default" "" "$BO"
is "$CODE $(jq -c '.jobs | length' "$TD/out")" "200 0" "... not even through the project 'default'"
api GET "/v1/jobs?project=default"
is "$(jq -c '[.jobs[].id]' "$TD/out")" "[$OLD1,$OLD2]" "an admin lists both through it"

# Submissions without a project: as before.
api POST /v1/jobs '{"argv":["true"]}' "$BO"
is "$CODE $(jget .queue) $(jget .project)" "201 default default" "bo's job: queue default, project default"
NEW=$(jget .id)
wait_for '[ "$(job_state "$NEW")" = succeeded ]'; ok $? "... and it runs"
api POST /v1/jobs '{"argv":["true"],"queue":"gpu"}' "$BO"
is "$CODE $(jget .error.field)" "403 queue" "the queue's own list still keeps bo out of gpu"
api POST /v1/jobs '{"argv":["true"],"queue":"gpu","gpu":0.5}' "$AMY"
is "$CODE $(jget .queue)" "201 gpu" "amy still names queue gpu without a project"
api POST "/v1/jobs/$OLD2/cancel" "" "$AMY"
is "$CODE $(jget .state)" "200 cancelled" "amy cancels her old job as before"
api POST /v1/users '{"name":"cy"}'
api GET /v1/projects/default
is "$(jq -c '[.members[] | select(.user == "cy") | .role]' "$TD/out")" '["member"]' \
    "a user added after the migration is a member of 'default' too"

# The single-user setup: the admin through the CLI, nothing to learn.
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" tcli run -- echo hello
is "$RC $(out)" "0 hello" "tessel run in the foreground works as before"
TESSEL_URL="$TD_URL" TESSEL_TOKEN="$TD_ADMIN" tcli projects default
is "$(out)" "default" "the admin's default project is 'default'"

td_stop; ok $? "tesseld stops cleanly"
done_testing
