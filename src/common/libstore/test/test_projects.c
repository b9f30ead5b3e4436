/* test_projects.c - libstore's projects (migration 12): the project 'default' and its members
 * made by the migration from an older store, new users made members of it, projects and
 * members added, changed, listed and removed with the errno of each refusal, jobs that carry
 * their project and are listed by it, a user's default project, the audit records. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "libstore/store.h"

static char dir[64];
static char path[128];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/tessel-proj-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/tessel.db", dir);
    *state = NULL;
    return 0;
}

static int teardown(void **state)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static tstore_job_t job_of(const char *user, const char *queue, int64_t project, const char *pname)
{
    return (tstore_job_t){.user = (char *)user,
                          .argv_json = (char *)"[\"true\"]",
                          .env_json = (char *)"{}",
                          .queue = (char *)queue,
                          .klass = TSTORE_CLASS_TRAINING,
                          .submitted_ms = 1000,
                          .project_id = project,
                          .project = (char *)pname};
}

/* A store of the schema before projects (11: migration 12 undone; a merge that renumbers
 * migration 12 changes both numbers here) with two users and a job: the migration makes the
 * project 'default' (queue 'default', members not sharing jobs), both users its members, the
 * old job one of its jobs, and nobody a default other than it. */
static void test_migrate(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    tstore_close(st);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    /* Migration 19 (projects.folder_quota) goes with the projects table. */
    static const char *const back =
        "DROP TABLE projects; DROP TABLE project_members; DROP TABLE project_events;"
        "DROP INDEX jobs_project; ALTER TABLE jobs DROP COLUMN project;"
        "ALTER TABLE jobs DROP COLUMN project_name; ALTER TABLE users DROP COLUMN default_project;"
        "ALTER TABLE jobs DROP COLUMN image;" /* migration 13, after projects: undone too */
        "ALTER TABLE jobs DROP COLUMN tty;"   /* and 14 */
        "DROP TABLE folder_shares; DROP TABLE folders;" /* and 15 */
        "ALTER TABLE jobs DROP COLUMN folders;"
        "DROP TABLE services; DROP TABLE service_replicas; DROP TABLE service_tokens;" /* and 16 */
        "DROP TABLE gpu_speeds; ALTER TABLE queues DROP COLUMN max_ngpu_milli;"        /* and 17 */
        "ALTER TABLE jobs DROP COLUMN gpu_released;"                                   /* and 18 */
        "ALTER TABLE jobs DROP COLUMN gpu_oversub;"                                    /* and 20 */
        "ALTER TABLE jobs DROP COLUMN preemptible;"                                    /* and 21 */
        "ALTER TABLE jobs DROP COLUMN suspended_for;"
        "ALTER TABLE jobs DROP COLUMN services;"         /* and 22 (jobs' web services) */
        "ALTER TABLE queues DROP COLUMN idle_reclaim_s;" /* and 23 */
        "ALTER TABLE jobs DROP COLUMN idle_reclaim_s; ALTER TABLE jobs DROP COLUMN suspended_idle;"
        "ALTER TABLE queues DROP COLUMN gpu_oversub;"           /* and 25 */
        "DROP INDEX job_deps_dep; DROP INDEX jobs_array_state;" /* and 26 */
        "PRAGMA user_version = 11;"
        "INSERT INTO users VALUES ('alice', 'user', 5), ('admin', 'admin', 4);"
        "INSERT INTO jobs(user, argv, shell, env, state, queue, class, priority, gpus, gpu_milli,"
        "  gpu_count, gpu_mem, cpu_milli, mem, simulated, submitted_ms)"
        "  VALUES ('alice', '[\"true\"]', 0, '{}', 0, 'default', 1, 0, 0, 0, 0, 0, 0, 0, 0, 5);";
    assert_int_equal(sqlite3_exec(db, back, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    st = tstore_open(path, &err);
    assert_non_null(st);
    assert_int_equal(tstore_schema_version(st), 26);
    tstore_project_t p;
    assert_int_equal(tstore_project_get(st, "default", &p, NULL), 0);
    assert_int_equal(p.id, TSTORE_PROJECT_DEFAULT);
    assert_string_equal(p.queue, "default");
    assert_false(p.share_jobs);
    tstore_role_t r;
    assert_int_equal(tstore_member_role(st, 1, "alice", &r, NULL), 0);
    assert_int_equal(r, TSTORE_ROLE_MEMBER);
    assert_int_equal(tstore_member_role(st, 1, "admin", &r, NULL), 0);
    assert_int_equal(r, TSTORE_ROLE_MEMBER);
    int64_t def = 0;
    assert_int_equal(tstore_user_default_project(st, "alice", &def, NULL), 0);
    assert_int_equal(def, TSTORE_PROJECT_DEFAULT);
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, 1, &j, NULL), 0);
    assert_int_equal(j.project_id, TSTORE_PROJECT_DEFAULT);
    assert_string_equal(j.project, "default");
    tstore_job_clear(&j);
    /* A user added later is a member of 'default' too; one removed leaves it. */
    assert_int_equal(tstore_user_add(st, "bob", "user", 9, NULL), 0);
    assert_int_equal(tstore_member_role(st, 1, "bob", &r, NULL), 0);
    assert_int_equal(r, TSTORE_ROLE_MEMBER);
    assert_int_equal(tstore_user_del(st, "bob", NULL), 0);
    assert_int_equal(tstore_member_role(st, 1, "bob", &r, NULL), 0);
    assert_int_equal(r, TSTORE_ROLE_NONE);
    tstore_close(st);
}

typedef struct {
    char names[8][64];
    int n;
} seen_t;

static int see_project(const tstore_project_t *p, tstore_role_t role, int64_t members, void *arg)
{
    seen_t *s = arg;
    snprintf(s->names[s->n++], sizeof s->names[0], "%s:%s:%lld", p->name, tstore_role_name(role),
             (long long)members);
    return 0;
}

static int see_member(const tstore_member_t *m, void *arg)
{
    seen_t *s = arg;
    snprintf(s->names[s->n++], sizeof s->names[0], "%s:%s", m->user, tstore_role_name(m->role));
    return 0;
}

static int count_job(const tstore_job_t *j, void *arg)
{
    (*(int *)arg)++;
    return 0;
}

static void test_projects(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    assert_int_equal(tstore_user_add(st, "alice", "user", 1, NULL), 0);
    assert_int_equal(tstore_user_add(st, "bob", "user", 1, NULL), 0);
    assert_int_equal(tstore_user_add(st, "carol", "user", 1, NULL), 0);

    tstore_project_t p = {.name = "vision", .queue = "vq", .share_jobs = true, .created_ms = 7};
    snprintf(p.created_by, sizeof p.created_by, "admin");
    assert_int_equal(tstore_project_add(st, &p, "alice", 7, NULL), 0);
    assert_true(p.id > TSTORE_PROJECT_DEFAULT);
    /* Refusals change nothing: a name taken, an owner who is no user. */
    tstore_project_t dup = p;
    errno = 0;
    assert_int_equal(tstore_project_add(st, &dup, "alice", 7, &err), -1);
    assert_int_equal(errno, EEXIST);
    assert_string_equal(err.text, "project 'vision' already exists");
    tstore_project_t ghost = {.name = "ghost", .queue = "default", .created_by = "admin"};
    assert_int_equal(tstore_project_add(st, &ghost, "nobody", 7, &err), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tstore_project_get(st, "ghost", &ghost, NULL), -1);
    assert_int_equal(errno, ENOENT);

    /* Members: each role, a second add refused, a change of role, an unknown user. */
    assert_int_equal(tstore_member_add(st, p.id, "bob", TSTORE_ROLE_MEMBER, 8, NULL), 0);
    assert_int_equal(tstore_member_add(st, p.id, "carol", TSTORE_ROLE_VIEWER, 8, NULL), 0);
    assert_int_equal(tstore_member_add(st, p.id, "bob", TSTORE_ROLE_VIEWER, 8, NULL), -1);
    assert_int_equal(errno, EEXIST);
    assert_int_equal(tstore_member_add(st, p.id, "zed", TSTORE_ROLE_VIEWER, 8, &err), -1);
    assert_int_equal(errno, ENOENT);
    assert_string_equal(err.text, "no user named 'zed'");
    seen_t s = {0};
    assert_int_equal(tstore_member_list(st, p.id, see_member, &s, NULL), 0);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.names[0], "alice:owner");
    assert_string_equal(s.names[1], "bob:member");
    assert_string_equal(s.names[2], "carol:viewer");
    int64_t n;
    assert_int_equal(tstore_member_count(st, p.id, TSTORE_ROLE_OWNER, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(tstore_member_set(st, p.id, "carol", TSTORE_ROLE_OWNER, NULL), 0);
    assert_int_equal(tstore_member_count(st, p.id, TSTORE_ROLE_OWNER, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_int_equal(tstore_member_set(st, p.id, "zed", TSTORE_ROLE_OWNER, NULL), -1);
    assert_int_equal(errno, ENOENT);

    /* Lists: every project with the role of the user asked about, or only theirs. */
    s = (seen_t){0};
    assert_int_equal(tstore_project_list(st, "bob", true, see_project, &s, NULL), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.names[0], "default:member:3");
    assert_string_equal(s.names[1], "vision:member:3");
    assert_int_equal(tstore_member_del(st, TSTORE_PROJECT_DEFAULT, "bob", NULL), 0);
    s = (seen_t){0};
    assert_int_equal(tstore_project_list(st, "bob", false, see_project, &s, NULL), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.names[0], "vision:member:3");
    s = (seen_t){0};
    assert_int_equal(tstore_project_list(st, NULL, true, see_project, &s, NULL), 0);
    assert_string_equal(s.names[0], "default::2");

    /* Default project: set, and reset when the member leaves the project. */
    assert_int_equal(tstore_user_set_default_project(st, "bob", p.id, NULL), 0);
    int64_t def;
    assert_int_equal(tstore_user_default_project(st, "bob", &def, NULL), 0);
    assert_int_equal(def, p.id);
    assert_int_equal(tstore_user_set_default_project(st, "zed", p.id, NULL), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tstore_member_del(st, p.id, "bob", NULL), 0);
    assert_int_equal(tstore_user_default_project(st, "bob", &def, NULL), 0);
    assert_int_equal(def, TSTORE_PROJECT_DEFAULT);
    assert_int_equal(tstore_member_del(st, p.id, "bob", NULL), -1);
    assert_int_equal(errno, ENOENT);

    /* Jobs carry their project; lists filter by it; active jobs are counted. */
    tstore_job_t j1 = job_of("alice", "vq", p.id, "vision");
    tstore_job_t j2 = job_of("alice", "default", 0, NULL);
    assert_int_equal(tstore_job_add(st, &j1, NULL), 0);
    assert_int_equal(tstore_job_add(st, &j2, NULL), 0);
    tstore_job_t got;
    assert_int_equal(tstore_job_get(st, j2.id, &got, NULL), 0);
    assert_int_equal(got.project_id, TSTORE_PROJECT_DEFAULT);
    assert_string_equal(got.project, "default");
    tstore_job_clear(&got);
    int cnt = 0;
    tstore_job_filter_t f = {.project_id = p.id, .limit = 100};
    assert_int_equal(tstore_job_list(st, &f, count_job, &cnt, NULL), 0);
    assert_int_equal(cnt, 1);
    assert_int_equal(tstore_project_active_jobs(st, p.id, &n, NULL), 0);
    assert_int_equal(n, 1);
    char owner[TSTORE_NAME_MAX + 1];
    assert_int_equal(tstore_project_by_queue(st, "vq", owner, NULL), 0);
    assert_string_equal(owner, "vision");
    assert_int_equal(tstore_project_by_queue(st, "nope", owner, NULL), 1);

    /* Update, audit, delete: members and defaults go, the jobs keep id and name. */
    p.share_jobs = false;
    snprintf(p.description, sizeof p.description, "the vision team");
    assert_int_equal(tstore_project_update(st, &p, NULL), 0);
    tstore_project_t q;
    assert_int_equal(tstore_project_get_id(st, p.id, &q, NULL), 0);
    assert_false(q.share_jobs);
    assert_string_equal(q.description, "the vision team");
    tstore_pevent_t e = {.project = p.id,
                         .name = "vision",
                         .time_ms = 9,
                         .who = "admin",
                         .event = "update",
                         .detail_json = "{\"share_jobs\":false}"};
    assert_int_equal(tstore_pevent_add(st, &e, NULL), 0);
    assert_int_equal(tstore_user_set_default_project(st, "alice", p.id, NULL), 0);
    assert_int_equal(tstore_project_del(st, p.id, NULL), 0);
    assert_int_equal(tstore_project_get(st, "vision", &q, NULL), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tstore_member_role(st, p.id, "alice", &(tstore_role_t){0}, NULL), 0);
    assert_int_equal(tstore_user_default_project(st, "alice", &def, NULL), 0);
    assert_int_equal(def, TSTORE_PROJECT_DEFAULT);
    assert_int_equal(tstore_job_get(st, j1.id, &got, NULL), 0);
    assert_int_equal(got.project_id, p.id);
    assert_string_equal(got.project, "vision");
    tstore_job_clear(&got);
    assert_int_equal(tstore_project_del(st, p.id, NULL), -1);
    assert_int_equal(errno, ENOENT);
    /* The same name again is another project (a new id): the old jobs are not its. */
    tstore_project_t again = {.name = "vision", .queue = "vq", .created_by = "admin"};
    assert_int_equal(tstore_project_add(st, &again, NULL, 10, NULL), 0);
    assert_true(again.id != p.id);
    cnt = 0;
    f.project_id = again.id;
    assert_int_equal(tstore_job_list(st, &f, count_job, &cnt, NULL), 0);
    assert_int_equal(cnt, 0);
    tstore_close(st);
}

static void test_roles(void **state)
{
    assert_string_equal(tstore_role_name(TSTORE_ROLE_OWNER), "owner");
    assert_string_equal(tstore_role_name(TSTORE_ROLE_NONE), "");
    assert_int_equal(tstore_role_parse("viewer"), TSTORE_ROLE_VIEWER);
    assert_int_equal(tstore_role_parse("member"), TSTORE_ROLE_MEMBER);
    assert_int_equal(tstore_role_parse("owner"), TSTORE_ROLE_OWNER);
    assert_int_equal(tstore_role_parse(""), -1);
    assert_int_equal(tstore_role_parse("Owner"), -1);
    assert_int_equal(tstore_role_parse("admin"), -1);
    assert_int_equal(tstore_role_parse(NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_migrate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_projects, setup, teardown),
        cmocka_unit_test(test_roles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
