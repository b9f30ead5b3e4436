/* test_store.c - libstore: migrations, users/tokens, queues, job lifecycle, reopen; tallies
 * that follow transactions and savepoints, the census of the jobs table, and the maintenance
 * thread that checkpoints the WAL off the request path; group commit (members in threads of
 * their own, a non-member that commits the group, a commit that fails). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "libstore/store.h"

static char dir[64];
static char path[128];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/tessel-store-XXXXXX");
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

/* A job of user in queue: half a GPU of 1 GiB, `true`. */
static void job_fill(tstore_job_t *j, const char *user, const char *queue, int prio)
{
    *j = (tstore_job_t){0};
    j->user = (char *)user;
    j->argv_json = (char *)"[\"true\"]";
    j->env_json = (char *)"{}";
    j->queue = (char *)queue;
    j->klass = TSTORE_CLASS_TRAINING;
    j->priority = prio;
    j->gpu_milli = 500;
    j->gpu_count = 1;
    j->gpu_mem = 1u << 30;
    j->submitted_ms = 1000;
}

static void add_job(tstore_t *st, const char *user, const char *queue, int prio, int64_t *id)
{
    tstore_job_t j;
    job_fill(&j, user, queue, prio);
    assert_int_equal(tstore_job_add(st, &j, NULL), 0);
    *id = j.id;
}

static int collect(const tstore_job_t *j, void *arg)
{
    int64_t *ids = arg;
    ids[++ids[0]] = j->id;
    return 0;
}

static void test_names(void **state)
{
    assert_true(tstore_name_valid("alice"));
    assert_true(tstore_name_valid("a-b_9"));
    assert_false(tstore_name_valid(""));
    assert_false(tstore_name_valid("Alice"));
    assert_false(tstore_name_valid("9a"));
    assert_false(tstore_name_valid("a b"));
    assert_false(tstore_name_valid("abcdefghijklmnopqrstuvwxyz0123456"));
    assert_int_equal(tstore_state_parse("preempted"), TSTORE_PREEMPTED);
    assert_int_equal(tstore_state_parse("nope"), -1);
    assert_string_equal(tstore_class_name(TSTORE_CLASS_INFERENCE), "inference");
    assert_int_equal(tstore_class_parse("interactive"), TSTORE_CLASS_INTERACTIVE);
}

static void test_users_tokens(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    assert_int_equal(tstore_user_add(st, "alice", "user", 5, NULL), 0);
    assert_int_equal(tstore_user_add(st, "alice", "user", 5, &err), -1);
    assert_int_equal(errno, EEXIST);
    assert_non_null(strstr(err.text, "already exists"));
    unsigned char h[32] = {1, 2, 3};
    int64_t tid = tstore_token_add(st, "alice", "laptop", h, 7, NULL);
    assert_true(tid > 0);
    tstore_token_t tok;
    tstore_user_t u;
    assert_int_equal(tstore_token_auth(st, h, &tok, &u, NULL), 0);
    assert_string_equal(u.name, "alice");
    assert_string_equal(u.role, "user");
    assert_int_equal(tok.id, tid);
    assert_string_equal(tok.name, "laptop");
    unsigned char other[32] = {9};
    assert_int_equal(tstore_token_auth(st, other, &tok, &u, NULL), -1);
    assert_int_equal(errno, ENOENT);
    /* Deleting the user revokes the token. */
    assert_int_equal(tstore_user_del(st, "alice", NULL), 0);
    assert_int_equal(tstore_token_auth(st, h, &tok, &u, NULL), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tstore_user_del(st, "alice", NULL), -1);
    assert_int_equal(errno, ENOENT);
    tstore_close(st);
}

static void test_jobs(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    tstore_queue_t q = {.name = "high",
                        .priority = 10,
                        .guarantee = {-1, -1, -1, -1},
                        .limit = {-1, -1, -1, -1},
                        .created_ms = 1};
    assert_int_equal(tstore_queue_add(st, &q, NULL), 0);
    int64_t a, b, c, d;
    add_job(st, "alice", "default", 0, &a);
    add_job(st, "bob", "default", 5, &b);
    add_job(st, "alice", "high", 0, &c);
    add_job(st, "bob", "default", 5, &d);
    /* Active jobs (the partial-index statement). */
    int64_t ids[8] = {0};
    tstore_job_filter_t af = {.state_mask = 1u << TSTORE_PENDING | 1u << TSTORE_RUNNING,
                              .limit = 100};
    assert_int_equal(tstore_job_list(st, &af, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 4);
    assert_int_equal(ids[1], a);
    assert_int_equal(ids[4], d);
    /* Filters. */
    memset(ids, 0, sizeof ids);
    tstore_job_filter_t f = {.user = "alice", .limit = 10};
    assert_int_equal(tstore_job_list(st, &f, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], a);
    assert_int_equal(ids[2], c);
    /* Lifecycle: the job model's writes (tstore_job_write stores every state column). */
    tstore_job_t w;
    assert_int_equal(tstore_job_get(st, b, &w, NULL), 0);
    w.state = TSTORE_RUNNING;
    w.placement_json = strdup("[{\"gpu\":0}]");
    w.started_ms = 2000;
    w.shim_pid = 100;
    w.shim_start = 12345;
    w.job_pid = 101;
    assert_int_equal(tstore_job_write(st, &w, NULL), 0);
    int64_t pend, run, milli;
    assert_int_equal(tstore_queue_usage(st, "default", &pend, &run, &milli, NULL), 0);
    assert_int_equal(pend, 2);
    assert_int_equal(run, 1);
    assert_int_equal(milli, 500);
    w.state = TSTORE_FAILED;
    w.reason = strdup("exited with status 3");
    w.has_exit_code = true;
    w.exit_code = 3;
    w.finished_ms = 3000;
    w.end_cause = 1;
    w.cancel_by = strdup("bob");
    w.preempt_for = 7;
    w.preempt_queue = strdup("high");
    w.preempt_ms = 2500;
    assert_int_equal(tstore_job_write(st, &w, NULL), 0);
    w.id = 999;
    assert_int_equal(tstore_job_write(st, &w, NULL), -1);
    assert_int_equal(errno, ENOENT);
    tstore_job_clear(&w);
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, b, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_FAILED);
    assert_true(j.has_exit_code);
    assert_int_equal(j.exit_code, 3);
    assert_int_equal(j.shim_pid, 100);
    assert_int_equal(j.shim_start, 12345);
    assert_string_equal(j.reason, "exited with status 3");
    assert_string_equal(j.placement_json, "[{\"gpu\":0}]");
    assert_int_equal(j.end_cause, 1);
    assert_string_equal(j.cancel_by, "bob");
    assert_int_equal(j.preempt_for, 7);
    assert_string_equal(j.preempt_queue, "high");
    assert_int_equal(j.preempt_ms, 2500);
    assert_int_equal(j.signal, 0);
    assert_int_equal(j.suspended_ms, 0);
    assert_null(j.image); /* a process job */
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, 999, &j, NULL), -1);
    assert_int_equal(errno, ENOENT);
    memset(ids, 0, sizeof ids);
    f = (tstore_job_filter_t){.state_mask = 1u << TSTORE_FAILED, .limit = 10};
    assert_int_equal(tstore_job_list(st, &f, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], b);
    int64_t counts[TSTORE_NSTATES];
    assert_int_equal(tstore_job_counts(st, counts, NULL), 0);
    assert_int_equal(counts[TSTORE_PENDING], 3);
    assert_int_equal(counts[TSTORE_FAILED], 1);
    memset(ids, 0, sizeof ids);
    assert_int_equal(tstore_job_list(st, &af, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 3); /* b has finished */
    memset(ids, 0, sizeof ids);
    af.state_mask = 1u << TSTORE_RUNNING;
    assert_int_equal(tstore_job_list(st, &af, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 0);
    /* Newest first (?order=desc), with the filters, and paging backwards with before. */
    memset(ids, 0, sizeof ids);
    f = (tstore_job_filter_t){.desc = true, .limit = 3};
    assert_int_equal(tstore_job_list(st, &f, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], d);
    assert_int_equal(ids[2], c);
    assert_int_equal(ids[3], b);
    memset(ids, 0, sizeof ids);
    f.before = b;
    assert_int_equal(tstore_job_list(st, &f, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], a);
    memset(ids, 0, sizeof ids);
    f = (tstore_job_filter_t){.desc = true, .user = "bob", .limit = 10};
    assert_int_equal(tstore_job_list(st, &f, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], d);
    assert_int_equal(ids[2], b);
    memset(ids, 0, sizeof ids);
    af = (tstore_job_filter_t){.state_mask = 1u << TSTORE_PENDING, .desc = true, .limit = 10};
    assert_int_equal(tstore_job_list(st, &af, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 3); /* the active-jobs statement, backwards */
    assert_int_equal(ids[1], d);
    assert_int_equal(ids[3], a);
    /* Durability: FULL and back; the store keeps working. */
    assert_int_equal(tstore_set_durable(st, true, NULL), 0);
    tstore_queue_t q2 = {.name = "durable",
                         .guarantee = {-1, -1, -1, -1},
                         .limit = {-1, -1, -1, -1},
                         .created_ms = 2};
    assert_int_equal(tstore_queue_add(st, &q2, NULL), 0);
    assert_int_equal(tstore_set_durable(st, false, NULL), 0);
    tstore_close(st);

    /* Reopen: everything committed is there, the schema is not re-applied. */
    st = tstore_open(path, &err);
    assert_non_null(st);
    assert_int_equal(tstore_schema_version(st), 26);
    tstore_queue_t hq;
    assert_int_equal(tstore_queue_get(st, "high", &hq, NULL), 0);
    assert_int_equal(hq.priority, 10);
    assert_int_equal(hq.weight, 1); /* 0 is stored as 1 */
    assert_int_equal(hq.guarantee.gpu_milli, -1);
    assert_int_equal(hq.limit.mem, -1);
    assert_string_equal(hq.parent, "");
    assert_string_equal(hq.allow_users, ""); /* no list: open to everyone */
    assert_string_equal(hq.allow_groups, "");
    assert_string_equal(hq.allow_roles, "");
    hq.weight = 3;
    snprintf(hq.allow_users, sizeof hq.allow_users, "alice,bob");
    snprintf(hq.allow_groups, sizeof hq.allow_groups, "ml-team");
    snprintf(hq.allow_roles, sizeof hq.allow_roles, "admin");
    hq.limit.gpu_milli = 2000;
    hq.guarantee.gpu_milli = 500;
    hq.guarantee.gpu_mem = 8LL << 30;
    hq.guarantee.cpu_milli = 4000;
    hq.limit.mem = 64LL << 30;
    assert_int_equal(tstore_queue_update(st, &hq, NULL), 0);
    assert_int_equal(tstore_queue_get(st, "high", &hq, NULL), 0);
    assert_int_equal(hq.weight, 3);
    assert_int_equal(hq.limit.gpu_milli, 2000);
    assert_int_equal(hq.guarantee.gpu_milli, 500);
    assert_int_equal(hq.guarantee.gpu_mem, 8LL << 30);
    assert_int_equal(hq.guarantee.cpu_milli, 4000);
    assert_int_equal(hq.guarantee.mem, -1);
    assert_int_equal(hq.limit.mem, 64LL << 30);
    assert_string_equal(hq.allow_users, "alice,bob");
    assert_string_equal(hq.allow_groups, "ml-team");
    assert_string_equal(hq.allow_roles, "admin");
    /* Emptied lists are stored as none (NULL) and read back empty. */
    hq.allow_users[0] = hq.allow_groups[0] = '\0';
    assert_int_equal(tstore_queue_update(st, &hq, NULL), 0);
    assert_int_equal(tstore_queue_get(st, "high", &hq, NULL), 0);
    assert_string_equal(hq.allow_users, "");
    assert_string_equal(hq.allow_groups, "");
    assert_string_equal(hq.allow_roles, "admin");
    tstore_queue_t sub = {.name = "sub",
                          .parent = "high",
                          .guarantee = {100, -1, -1, -1},
                          .limit = {-1, -1, -1, -1},
                          .created_ms = 2};
    assert_int_equal(tstore_queue_add(st, &sub, NULL), 0);
    assert_int_equal(tstore_queue_get(st, "sub", &sub, NULL), 0);
    assert_string_equal(sub.parent, "high");
    assert_int_equal(sub.guarantee.gpu_milli, 100);
    /* Suspended: still running (active, counted as running), listed by suspended_only. */
    int64_t r;
    add_job(st, "carol", "high", 0, &r);
    tstore_job_t sj;
    assert_int_equal(tstore_job_get(st, r, &sj, NULL), 0);
    sj.state = TSTORE_RUNNING;
    sj.placement_json = strdup("[{\"gpu\":0}]");
    sj.started_ms = 4000;
    sj.suspended_ms = 4500;
    sj.shim_pid = 100;
    assert_int_equal(tstore_job_write(st, &sj, NULL), 0);
    tstore_job_clear(&sj);
    assert_int_equal(tstore_job_get(st, r, &sj, NULL), 0);
    assert_int_equal(sj.state, TSTORE_RUNNING);
    assert_int_equal(sj.suspended_ms, 4500);
    int64_t sids[8] = {0};
    f = (tstore_job_filter_t){
        .state_mask = 1u << TSTORE_RUNNING, .suspended_only = true, .limit = 10};
    assert_int_equal(tstore_job_list(st, &f, collect, sids, NULL), 0);
    assert_int_equal(sids[0], 1);
    assert_int_equal(sids[1], r);
    /* Zeroes are stored as none: back to pending with nothing of the attempt left. */
    free(sj.placement_json);
    sj.placement_json = NULL;
    sj.state = TSTORE_PENDING;
    sj.started_ms = sj.suspended_ms = 0;
    sj.shim_pid = 0;
    sj.preemptions = 1;
    assert_int_equal(tstore_job_write(st, &sj, NULL), 0);
    tstore_job_clear(&sj);
    assert_int_equal(tstore_job_get(st, r, &sj, NULL), 0);
    assert_int_equal(sj.state, TSTORE_PENDING);
    assert_int_equal(sj.preemptions, 1);
    assert_int_equal(sj.shim_pid, 0);
    assert_int_equal(sj.started_ms, 0);
    assert_null(sj.placement_json);
    assert_int_equal(sj.suspended_ms, 0);
    assert_false(sj.has_exit_code);
    assert_null(sj.cancel_by);
    sj.state = TSTORE_CANCELLED;
    sj.finished_ms = 5000;
    assert_int_equal(tstore_job_write(st, &sj, NULL), 0);
    tstore_job_clear(&sj);
    memset(ids, 0, sizeof ids);
    f = (tstore_job_filter_t){.limit = 10};
    assert_int_equal(tstore_job_list(st, &f, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 5);
    memset(ids, 0, sizeof ids);
    f = (tstore_job_filter_t){.after = b, .limit = 1};
    assert_int_equal(tstore_job_list(st, &f, collect, ids, NULL), 0);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], c);
    tstore_close(st);
}

/* A data directory of schema 2 (the first tesseld with queue guarantees) upgrades: its queues
 * keep their GPU guarantee and cap, become top-level with no other resource governed, and its
 * jobs count no preemption and are requeued when preempted. */
/* Migration 15: a container job's image, stored and read back; NULL for a process job. */
static void test_job_image(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    tstore_job_t j;
    job_fill(&j, "alice", "default", 0);
    j.image = (char *)"lab/tools:2.4";
    assert_int_equal(tstore_job_add(st, &j, NULL), 0);
    int64_t id = j.id;
    int64_t plain;
    add_job(st, "alice", "default", 0, &plain);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_string_equal(j.image, "lab/tools:2.4");
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, plain, &j, NULL), 0);
    assert_null(j.image);
    tstore_job_clear(&j);
    tstore_close(st);
}

/* Migration 21: a job's oversubscription (bytes per GPU it may spill into host memory), kept
 * from submission on; 0 (NULL in the table) when not asked. */
static void test_job_gpu_oversub(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    tstore_job_t j;
    job_fill(&j, "alice", "default", 0);
    j.gpu_oversub = 16ull << 30;
    assert_int_equal(tstore_job_add(st, &j, NULL), 0);
    int64_t id = j.id, other;
    add_job(st, "alice", "default", 0, &other);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_true(j.gpu_oversub == 16ull << 30);
    j.state = TSTORE_RUNNING;
    assert_int_equal(tstore_job_write(st, &j, NULL), 0); /* a state change keeps it */
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_true(j.gpu_oversub == 16ull << 30);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, other, &j, NULL), 0);
    assert_true(j.gpu_oversub == 0);
    tstore_job_clear(&j);
    tstore_close(st);
}

/* Migration 22: a job's web services, kept as submitted; NULL for a job without any, and a
 * state change keeps them. */
static void test_job_services(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    tstore_job_t j;
    job_fill(&j, "alice", "default", 0);
    char svc[] = "[{\"name\":\"jupyter\",\"port\":8888}]";
    j.services_json = svc;
    assert_int_equal(tstore_job_add(st, &j, NULL), 0);
    int64_t id = j.id, other;
    add_job(st, "alice", "default", 0, &other);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_string_equal(j.services_json, svc);
    j.state = TSTORE_RUNNING;
    assert_int_equal(tstore_job_write(st, &j, NULL), 0);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_string_equal(j.services_json, svc);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, other, &j, NULL), 0);
    assert_null(j.services_json);
    tstore_job_clear(&j);
    tstore_close(st);
}

/* Migration 23 (idle reclamation): a job's own idle time (seconds, never, or its queue's) kept
 * from submission on and by a state change; suspended_idle written by the model's write and
 * read back; a queue's idle time stored, changed and turned off. */
static void test_idle_reclaim(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    int64_t ids[3];
    const int64_t own[3] = {1800, -1, 0};
    for (int i = 0; i < 3; i++) {
        tstore_job_t j;
        job_fill(&j, "alice", "default", 0);
        j.idle_reclaim_s = own[i];
        assert_int_equal(tstore_job_add(st, &j, NULL), 0);
        ids[i] = j.id;
    }
    tstore_job_t j;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tstore_job_get(st, ids[i], &j, NULL), 0);
        assert_int_equal(j.idle_reclaim_s, own[i]);
        assert_false(j.suspended_idle);
        tstore_job_clear(&j);
    }
    assert_int_equal(tstore_job_get(st, ids[0], &j, NULL), 0);
    j.state = TSTORE_RUNNING;
    j.suspended_ms = 5;
    j.suspended_idle = true;
    assert_int_equal(tstore_job_write(st, &j, NULL), 0);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, ids[0], &j, NULL), 0);
    assert_true(j.suspended_idle);
    assert_int_equal(j.idle_reclaim_s, 1800); /* a state change keeps it */
    j.suspended_ms = 0;
    j.suspended_idle = false;
    assert_int_equal(tstore_job_write(st, &j, NULL), 0);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, ids[0], &j, NULL), 0);
    assert_false(j.suspended_idle);
    tstore_job_clear(&j);

    tstore_queue_t q = {.name = "lab",
                        .guarantee = {-1, -1, -1, -1},
                        .limit = {-1, -1, -1, -1},
                        .reserve_after_s = -1,
                        .idle_reclaim_s = 1800,
                        .created_ms = 2};
    assert_int_equal(tstore_queue_add(st, &q, NULL), 0);
    tstore_queue_t r;
    assert_int_equal(tstore_queue_get(st, "lab", &r, NULL), 0);
    assert_int_equal(r.idle_reclaim_s, 1800);
    q.idle_reclaim_s = 60;
    assert_int_equal(tstore_queue_update(st, &q, NULL), 0);
    assert_int_equal(tstore_queue_get(st, "lab", &r, NULL), 0);
    assert_int_equal(r.idle_reclaim_s, 60);
    q.idle_reclaim_s = 0;
    assert_int_equal(tstore_queue_update(st, &q, NULL), 0);
    assert_int_equal(tstore_queue_get(st, "lab", &r, NULL), 0);
    assert_int_equal(r.idle_reclaim_s, 0);
    /* migration 24: its parent's (NULL) kept apart from never (0) */
    q.idle_reclaim_s = -1;
    assert_int_equal(tstore_queue_update(st, &q, NULL), 0);
    assert_int_equal(tstore_queue_get(st, "lab", &r, NULL), 0);
    assert_int_equal(r.idle_reclaim_s, -1);
    tstore_close(st);
}

/* Migration 25: a queue's oversubscription, bytes per GPU; its parent's (NULL, -1) kept apart
 * from none (0). */
static void test_queue_gpu_oversub(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    tstore_queue_t q = {.name = "lab",
                        .guarantee = {-1, -1, -1, -1},
                        .limit = {-1, -1, -1, -1},
                        .reserve_after_s = -1,
                        .idle_reclaim_s = -1,
                        .gpu_oversub = 8LL << 30,
                        .created_ms = 2};
    assert_int_equal(tstore_queue_add(st, &q, NULL), 0);
    tstore_queue_t r;
    assert_int_equal(tstore_queue_get(st, "lab", &r, NULL), 0);
    assert_int_equal(r.gpu_oversub, 8LL << 30);
    assert_int_equal(r.idle_reclaim_s, -1); /* the columns next to it untouched */
    int64_t vals[] = {0, -1, 1LL << 40, 1};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        q.gpu_oversub = vals[i];
        assert_int_equal(tstore_queue_update(st, &q, NULL), 0);
        assert_int_equal(tstore_queue_get(st, "lab", &r, NULL), 0);
        assert_int_equal(r.gpu_oversub, vals[i]);
    }
    tstore_close(st);
}

/* Migration 18: the GPU memory a suspended job gave back; not touched by tstore_job_write. */
static void test_job_gpu_released(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    int64_t id, other;
    add_job(st, "alice", "default", 0, &id);
    add_job(st, "alice", "default", 0, &other);
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.gpu_released, 0);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_set_gpu_released(st, id, 8ull << 30, NULL), 0);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_true(j.gpu_released == 8ull << 30);
    j.state = TSTORE_RUNNING;
    assert_int_equal(tstore_job_write(st, &j, NULL), 0); /* a state change keeps it */
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_true(j.gpu_released == 8ull << 30);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, other, &j, NULL), 0);
    assert_int_equal(j.gpu_released, 0);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_set_gpu_released(st, id, 0, NULL), 0);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.gpu_released, 0);
    tstore_job_clear(&j);
    tstore_close(st);
}

static void test_migrate_v2(void **state)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    const char *v2 =
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE users(name TEXT PRIMARY KEY, role TEXT NOT NULL, created_ms INTEGER NOT "
        "NULL);"
        "CREATE TABLE tokens(id INTEGER PRIMARY KEY, user TEXT NOT NULL, name TEXT NOT NULL,"
        "  hash BLOB NOT NULL UNIQUE, created_ms INTEGER NOT NULL);"
        "CREATE INDEX tokens_user ON tokens(user);"
        "CREATE TABLE queues(name TEXT PRIMARY KEY, priority INTEGER NOT NULL,"
        "  max_gpu_milli INTEGER, created_ms INTEGER NOT NULL);"
        "CREATE TABLE jobs(id INTEGER PRIMARY KEY, user TEXT NOT NULL, name TEXT,"
        "  argv TEXT NOT NULL, shell INTEGER NOT NULL, cwd TEXT, env TEXT NOT NULL,"
        "  state INTEGER NOT NULL, reason TEXT, queue TEXT NOT NULL, class INTEGER NOT NULL,"
        "  priority INTEGER NOT NULL, gpus INTEGER NOT NULL, gpu_milli INTEGER NOT NULL,"
        "  gpu_count INTEGER NOT NULL, gpu_mem INTEGER NOT NULL, cpu_milli INTEGER NOT NULL,"
        "  mem INTEGER NOT NULL, placement TEXT, simulated INTEGER NOT NULL,"
        "  submitted_ms INTEGER NOT NULL, started_ms INTEGER, finished_ms INTEGER,"
        "  exit_code INTEGER, signal INTEGER, shim_pid INTEGER, shim_start INTEGER,"
        "  job_pid INTEGER, cancel_ms INTEGER);"
        "CREATE INDEX jobs_active ON jobs(state) WHERE state < 2;"
        "CREATE INDEX jobs_user ON jobs(user, id);"
        "ALTER TABLE queues ADD COLUMN weight INTEGER NOT NULL DEFAULT 1;"
        "ALTER TABLE queues ADD COLUMN guarantee_gpu_milli INTEGER;"
        "PRAGMA user_version = 2;"
        "INSERT INTO queues VALUES ('prod', 3, 4000, 1, 2, 2000);"
        "INSERT INTO jobs(user, argv, shell, env, state, queue, class, priority, gpus, gpu_milli,"
        "  gpu_count, gpu_mem, cpu_milli, mem, simulated, submitted_ms)"
        "  VALUES ('alice', '[\"true\"]', 0, '{}', 0, 'prod', 1, 0, 1, 1000, 1, 1, 0, 0, 0, 5);";
    assert_int_equal(sqlite3_exec(db, v2, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    assert_int_equal(tstore_schema_version(st), 26);
    tstore_queue_t q;
    assert_int_equal(tstore_queue_get(st, "prod", &q, NULL), 0);
    assert_int_equal(q.priority, 3);
    assert_int_equal(q.weight, 2);
    assert_int_equal(q.guarantee.gpu_milli, 2000);
    assert_int_equal(q.limit.gpu_milli, 4000);
    assert_int_equal(q.guarantee.gpu_mem, -1);
    assert_int_equal(q.guarantee.cpu_milli, -1);
    assert_int_equal(q.limit.mem, -1);
    assert_string_equal(q.parent, "");
    assert_int_equal(q.reserve_after_s, -1); /* migration 6: inherited */
    assert_int_equal(q.idle_reclaim_s, 0);   /* migrations 23, 24: never, not its parent's */
    assert_int_equal(q.gpu_oversub, -1);     /* migration 25: its parent's (NULL, RV16b M3) */
    assert_string_equal(q.placement, "");
    q.reserve_after_s = 30;
    snprintf(q.placement, sizeof q.placement, "spread");
    assert_int_equal(tstore_queue_update(st, &q, NULL), 0);
    tstore_queue_t back;
    assert_int_equal(tstore_queue_get(st, "prod", &back, NULL), 0);
    assert_int_equal(back.reserve_after_s, 30);
    assert_string_equal(back.placement, "spread");
    assert_string_equal(q.allow_users, ""); /* an old queue stays open to everyone */
    assert_string_equal(q.allow_groups, "");
    assert_string_equal(q.allow_roles, "");
    int64_t kids = -1;
    assert_int_equal(tstore_queue_children(st, "prod", &kids, NULL), 0);
    assert_int_equal(kids, 0);
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, 1, &j, NULL), 0);
    assert_int_equal(j.preemptions, 0);
    assert_false(j.no_requeue);
    assert_string_equal(j.queue, "prod");
    tstore_job_clear(&j);
    tstore_close(st);
}

/* A pending job's reason to wait: code and sentence together; a job that has started is left
 * alone, and its start clears both. */
static void test_wait_reason(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    int64_t id;
    add_job(st, "alice", "default", 0, &id);
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_null(j.reason_code);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_set_wait(st, id, "QueueLimit", "QueueLimit: queue 'a' ...", NULL),
                     0);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_string_equal(j.reason_code, "QueueLimit");
    assert_string_equal(j.reason, "QueueLimit: queue 'a' ...");
    tstore_job_clear(&j);
    /* Starting the job (the job model's write) clears both. */
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    j.state = TSTORE_RUNNING;
    free(j.reason);
    j.reason = NULL;
    j.placement_json = strdup("[]");
    j.started_ms = 2000;
    assert_int_equal(tstore_job_write(st, &j, NULL), 0);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_null(j.reason_code);
    assert_null(j.reason);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_set_wait(st, id, "Resources", "Resources: late", NULL), 0);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_null(j.reason_code);
    assert_int_equal(j.state, TSTORE_RUNNING);
    tstore_job_clear(&j);
    tstore_close(st);
}

/* tesseld --slurm: Slurm ids of jobs, the active ones, and those added after a job id. */
static void test_slurm_ids(void **state)
{
    (void)state;
    tstore_t *st = tstore_open(path, NULL);
    assert_non_null(st);
    int64_t a, b, c;
    add_job(st, "alice", "default", 0, &a);
    add_job(st, "alice", "default", 0, &b);
    add_job(st, "bob", "default", 0, &c);
    assert_int_equal(tstore_slurm_set(st, a, 700, NULL), 0);
    assert_int_equal(tstore_slurm_set(st, c, 702, NULL), 0);
    int64_t sid;
    assert_int_equal(tstore_slurm_get(st, c, &sid, NULL), 0);
    assert_int_equal(sid, 702);
    assert_int_equal(tstore_slurm_get(st, b, &sid, NULL), -1);
    assert_int_equal(errno, ENOENT);
    tstore_slurm_pair_t *v;
    size_t n;
    assert_int_equal(tstore_slurm_since(st, 0, &v, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].job, a);
    assert_int_equal(v[0].slurm_id, 700);
    assert_int_equal(v[1].job, c);
    free(v);
    /* Only what came after the last read. */
    assert_int_equal(tstore_slurm_since(st, a, &v, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].slurm_id, 702);
    free(v);
    assert_int_equal(tstore_slurm_since(st, c, &v, &n, NULL), 0);
    assert_int_equal(n, 0);
    assert_null(v);
    /* Ended jobs leave _active, not _since. */
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, a, &j, NULL), 0);
    j.state = TSTORE_CANCELLED;
    j.finished_ms = 3000;
    assert_int_equal(tstore_job_write(st, &j, NULL), 0);
    tstore_job_clear(&j);
    assert_int_equal(tstore_slurm_active(st, &v, &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].job, c);
    free(v);
    assert_int_equal(tstore_slurm_since(st, 0, &v, &n, NULL), 0);
    assert_int_equal(n, 2);
    free(v);
    tstore_close(st);
}

static void test_transaction(void **state)
{
    tstore_t *st = tstore_open(path, NULL);
    assert_non_null(st);
    assert_int_equal(tstore_begin(st, NULL), 0);
    assert_int_equal(tstore_user_add(st, "carol", "user", 1, NULL), 0);
    tstore_rollback(st);
    tstore_user_t u;
    assert_int_equal(tstore_user_get(st, "carol", &u, NULL), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tstore_meta_set(st, "instance", "abc", NULL), 0);
    char buf[16];
    assert_int_equal(tstore_meta_get(st, "instance", buf, sizeof buf, NULL), 0);
    assert_string_equal(buf, "abc");
    assert_int_equal(tstore_meta_get(st, "nope", buf, sizeof buf, NULL), -1);
    assert_int_equal(errno, ENOENT);
    /* A transaction inside another is a savepoint: its rollback undoes only its own writes,
     * the outer one commits the rest. */
    assert_int_equal(tstore_begin(st, NULL), 0);
    assert_int_equal(tstore_user_add(st, "dave", "user", 1, NULL), 0);
    assert_int_equal(tstore_begin(st, NULL), 0);
    assert_int_equal(tstore_user_add(st, "erin", "user", 1, NULL), 0);
    tstore_rollback(st);
    assert_int_equal(tstore_begin(st, NULL), 0);
    assert_int_equal(tstore_user_add(st, "fred", "user", 1, NULL), 0);
    assert_int_equal(tstore_commit(st, NULL), 0);
    assert_int_equal(tstore_commit(st, NULL), 0);
    assert_int_equal(tstore_user_get(st, "dave", &u, NULL), 0);
    assert_int_equal(tstore_user_get(st, "fred", &u, NULL), 0);
    assert_int_equal(tstore_user_get(st, "erin", &u, NULL), -1);
    assert_int_equal(errno, ENOENT);
    tstore_close(st);
}

static int collect_events(const tstore_event_t *e, void *arg)
{
    char *out = arg;
    size_t n = strlen(out);
    snprintf(out + n, 512 - n, "%lld %s %s %s>%s %s %s;", (long long)e->time_ms, e->who, e->event,
             e->from_state ? e->from_state : "-", e->to_state, e->why ? e->why : "-",
             e->detail_json ? e->detail_json : "-");
    return 0;
}

/* The event log: records kept per job, oldest first, strings and NULLs as written. */
static void test_events(void **state)
{
    tstore_t *st = tstore_open(path, NULL);
    assert_non_null(st);
    int64_t a, b;
    add_job(st, "alice", "default", 0, &a);
    add_job(st, "bob", "default", 0, &b);
    tstore_event_t e = {
        .job = a, .time_ms = 10, .who = "alice", .event = "submit", .to_state = "pending"};
    assert_int_equal(tstore_event_add(st, &e, NULL), 0);
    e = (tstore_event_t){
        .job = b, .time_ms = 11, .who = "bob", .event = "submit", .to_state = "pending"};
    assert_int_equal(tstore_event_add(st, &e, NULL), 0);
    e = (tstore_event_t){.job = a,
                         .time_ms = 12,
                         .who = "tesseld",
                         .event = "start",
                         .from_state = "pending",
                         .to_state = "running",
                         .why = "placed",
                         .detail_json = "{\"gpu\":0}"};
    assert_int_equal(tstore_event_add(st, &e, NULL), 0);
    char out[512] = "";
    assert_int_equal(tstore_event_list(st, a, collect_events, out, NULL), 0);
    assert_string_equal(out, "10 alice submit ->pending - -;"
                             "12 tesseld start pending>running placed {\"gpu\":0};");
    out[0] = '\0';
    assert_int_equal(tstore_event_list(st, 999, collect_events, out, NULL), 0);
    assert_string_equal(out, "");
    tstore_close(st);
}

typedef struct {
    int n, repeats, dropped_records;
    int64_t dropped, last_id;
    bool ordered;
    char first[32], second[32], last[32], marker_why[160];
    int marker_at; /* its place in the list */
} bound_t;

static int bound_cb(const tstore_event_t *e, void *arg)
{
    bound_t *b = arg;
    if (e->id <= b->last_id)
        b->ordered = false;
    b->last_id = e->id;
    if (b->n == 0)
        snprintf(b->first, sizeof b->first, "%s", e->event);
    if (b->n == 1)
        snprintf(b->second, sizeof b->second, "%s", e->event);
    snprintf(b->last, sizeof b->last, "%s", e->event);
    if (strcmp(e->event, "suspend") == 0 || strcmp(e->event, "resume") == 0)
        b->repeats++;
    if (strcmp(e->event, "dropped") == 0) {
        b->dropped_records++;
        b->marker_at = b->n;
        long long n = -1;
        assert_non_null(e->detail_json);
        assert_int_equal(sscanf(e->detail_json, "{\"count\":%lld}", &n), 1);
        b->dropped = n;
        assert_string_equal(e->who, "tesseld");
        snprintf(b->marker_why, sizeof b->marker_why, "%s", e->why ? e->why : "");
    }
    b->n++;
    return 0;
}

/* A job suspended and resumed without end keeps its newest TSTORE_EVENTS_KEEP suspend and resume
 * records (at most TSTORE_EVENTS_SLACK more), its other records all, and one "dropped" record
 * in place of the older ones, which counts them; another job's log is not touched. */
static void test_events_bound(void **state)
{
    tstore_t *st = tstore_open(path, NULL);
    assert_non_null(st);
    int64_t a, b;
    add_job(st, "alice", "default", 0, &a);
    add_job(st, "bob", "default", 0, &b);
    tstore_event_t e = {
        .job = a, .time_ms = 1, .who = "alice", .event = "submit", .to_state = "pending"};
    assert_int_equal(tstore_event_add(st, &e, NULL), 0);
    e.event = "start";
    e.to_state = "running";
    assert_int_equal(tstore_event_add(st, &e, NULL), 0);
    tstore_event_t o = {
        .job = b, .time_ms = 1, .who = "bob", .event = "suspend", .to_state = "suspended"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(tstore_event_add(st, &o, NULL), 0);
    const int cycles = 1234; /* 2,468 records */
    tsl_error_t err;
    assert_int_equal(tstore_begin(st, &err), 0);
    for (int i = 0; i < cycles; i++) {
        e = (tstore_event_t){.job = a,
                             .time_ms = 2 + i,
                             .who = "alice",
                             .event = "suspend",
                             .from_state = "running",
                             .to_state = "suspended"};
        assert_int_equal(tstore_event_add(st, &e, &err), 0);
        e.event = "resume";
        e.from_state = "suspended";
        e.to_state = "running";
        assert_int_equal(tstore_event_add(st, &e, &err), 0);
    }
    assert_int_equal(tstore_commit(st, &err), 0);
    e = (tstore_event_t){.job = a,
                         .time_ms = 9999,
                         .who = "tesseld",
                         .event = "exit",
                         .from_state = "running",
                         .to_state = "succeeded"};
    assert_int_equal(tstore_event_add(st, &e, NULL), 0);

    bound_t r = {.ordered = true};
    assert_int_equal(tstore_event_list(st, a, bound_cb, &r, NULL), 0);
    assert_true(r.ordered);
    assert_string_equal(r.first, "submit"); /* the first records are kept */
    assert_string_equal(r.second, "start");
    assert_string_equal(r.last, "exit");
    assert_int_equal(r.dropped_records, 1);
    assert_int_equal(r.marker_at, 2); /* in the place of those it counts */
    assert_true(r.repeats >= TSTORE_EVENTS_KEEP &&
                r.repeats <= TSTORE_EVENTS_KEEP + TSTORE_EVENTS_SLACK);
    assert_int_equal(r.dropped + r.repeats, 2 * cycles); /* every record kept or counted */
    char why[160];
    snprintf(why, sizeof why,
             "%lld earlier suspend and resume records not kept (a job keeps its newest %d)",
             (long long)r.dropped, TSTORE_EVENTS_KEEP);
    assert_string_equal(r.marker_why, why);
    assert_int_equal(r.n, 2 + 1 + r.repeats + 1);

    bound_t rb = {.ordered = true};
    assert_int_equal(tstore_event_list(st, b, bound_cb, &rb, NULL), 0);
    assert_int_equal(rb.n, 3);
    assert_int_equal(rb.dropped_records, 0);
    tstore_close(st);
}

static void test_reserve(void **state)
{
    tstore_t *st = tstore_open(path, NULL);
    assert_non_null(st);
    assert_false(tstore_reserve_held(st));
    assert_int_equal(tstore_reserve_release(st), 0); /* none: no-op */
    char rpath[160];
    snprintf(rpath, sizeof rpath, "%s/store.reserve", dir);
    tsl_error_t err;
    assert_int_equal(tstore_reserve_init(st, rpath, 1u << 20, &err), 0);
    assert_true(tstore_reserve_held(st));
    struct stat sb;
    assert_int_equal(stat(rpath, &sb), 0);
    assert_int_equal(sb.st_size, 1 << 20);
    assert_true((uint64_t)sb.st_blocks * 512 >= 1u << 20); /* allocated, not sparse */
    assert_int_equal(sb.st_mode & 0777, 0600);
    /* Given back: the file is gone, once. */
    assert_int_equal(tstore_reserve_release(st), 1u << 20);
    assert_false(tstore_reserve_held(st));
    assert_int_equal(stat(rpath, &sb), -1);
    assert_int_equal(tstore_reserve_release(st), 0);
    assert_int_equal(tstore_reserve_releases(st), 1);
    /* The store works on without it, and the reserve comes back. */
    int64_t id;
    add_job(st, "alice", "default", 0, &id);
    assert_int_equal(tstore_reserve_restore(st, &err), 0);
    assert_true(tstore_reserve_held(st));
    assert_int_equal(stat(rpath, &sb), 0);
    assert_int_equal(sb.st_size, 1 << 20);
    assert_int_equal(tstore_reserve_restore(st, &err), 0); /* held already: nothing to do */
    tstore_close(st);
    /* Where it cannot be made: a clear error, and the store is still usable. */
    st = tstore_open(path, NULL);
    assert_non_null(st);
    snprintf(rpath, sizeof rpath, "%s/no-such-dir/store.reserve", dir);
    assert_int_equal(tstore_reserve_init(st, rpath, 4096, &err), -1);
    assert_int_equal(errno, ENOENT);
    assert_non_null(strstr(err.text, "store reserve"));
    assert_false(tstore_reserve_held(st));
    add_job(st, "alice", "default", 0, &id);
    assert_false(tstore_last_full(st));
    tstore_close(st);
}

static int held_collect(const tstore_held_t *h, void *arg)
{
    tstore_held_t *v = arg;
    v[v[0].id + 1] = *h;
    v[0].id++;
    return 0;
}

/* Batch columns (migration 6): time limit, arrays, held jobs, dependencies. */
static void test_batch(void **state)
{
    tstore_t *st = tstore_open(path, NULL);
    assert_non_null(st);
    tstore_job_t j = {0};
    j.user = (char *)"alice";
    j.argv_json = (char *)"[\"true\"]";
    j.env_json = (char *)"{}";
    j.queue = (char *)"default";
    j.time_limit_s = 1800;
    j.array_id = -1; /* a new array: its id is the first element's */
    j.array_index = 3;
    j.array_max_running = 1;
    assert_int_equal(tstore_job_add(st, &j, NULL), 0);
    int64_t a = j.id;
    assert_true(j.array_id == a);
    tstore_job_t e = j;
    e.array_id = a;
    e.array_index = 7;
    e.held = true;
    assert_int_equal(tstore_job_add(st, &e, NULL), 0);
    int64_t b = e.id;
    tstore_job_t g;
    assert_int_equal(tstore_job_get(st, b, &g, NULL), 0);
    assert_true(g.time_limit_s == 1800 && g.array_id == a && g.array_index == 7 &&
                g.array_max_running == 1 && g.held);
    tstore_job_clear(&g);
    int64_t id = 0, count = 0;
    int lo = -1, hi = -1;
    assert_int_equal(tstore_array_find(st, a, 7, &id, NULL), 0);
    assert_true(id == b);
    errno = 0;
    assert_int_equal(tstore_array_find(st, a, 4, &id, NULL), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tstore_array_stat(st, a, &count, &lo, &hi, NULL), 0);
    assert_true(count == 2 && lo == 3 && hi == 7);

    /* Held jobs, with the active released elements of their array. */
    tstore_held_t v[4] = {{0}};
    assert_int_equal(tstore_held_list(st, NULL, 0, held_collect, v, NULL), 0);
    assert_true(v[0].id == 1 && v[1].id == b && v[1].array_id == a && v[1].array_active == 1 &&
                v[1].array_max_running == 1 && v[1].reason[0] == '\0');

    /* Dependencies with the state of the job each names. */
    assert_int_equal(tstore_dep_add(st, b, a, 1, NULL), 0);
    assert_int_equal(tstore_dep_add(st, b, 999, 0, NULL), 0);
    assert_int_equal(tstore_dep_add(st, b, a, 0, NULL), 0); /* again: its kind replaced */
    tstore_dep_t *d = NULL;
    size_t n = 0;
    assert_int_equal(tstore_dep_list(st, b, &d, &n, NULL), 0);
    assert_int_equal(n, 2);
    assert_true(d[0].dep == a && d[0].kind == 0 && d[0].exists && d[0].state == TSTORE_PENDING);
    assert_true(d[1].dep == 999 && !d[1].exists);
    free(d);
    assert_int_equal(tstore_dep_list(st, a, &d, &n, NULL), 0);
    assert_true(n == 0 && d == NULL);

    /* The held jobs a check reads about some jobs: those of them that are held, those with a
     * dependency on one of them, the held elements of their arrays; not the others. */
    tstore_job_t k = j;
    k.array_id = 0;
    k.array_index = 0;
    k.array_max_running = 0;
    k.held = true;
    assert_int_equal(tstore_job_add(st, &k, NULL), 0); /* c: waits for a */
    int64_t c = k.id;
    assert_int_equal(tstore_dep_add(st, c, a, 0, NULL), 0);
    assert_int_equal(tstore_job_add(st, &k, NULL), 0); /* h: waits for c */
    int64_t h = k.id;
    assert_int_equal(tstore_dep_add(st, h, c, 0, NULL), 0);
    e.array_index = 9;
    e.held = false;
    assert_int_equal(tstore_job_add(st, &e, NULL), 0); /* x: an element of a's array, released */
    int64_t x = e.id;
    struct {
        size_t nids;
        int64_t ids[2];
        int n;
        int64_t want[3];
    } sel[] = {
        {1, {b}, 1, {b}},      {1, {a}, 2, {b, c}}, {1, {c}, 2, {c, h}}, {1, {h}, 1, {h}},
        {1, {999}, 1, {b}},    {1, {x}, 1, {b}},    {1, {4242}, 0, {0}}, {2, {a, c}, 3, {b, c, h}},
        {2, {x, 999}, 1, {b}}, {0, {a}, 0, {0}},
    };
    memset(v, 0, sizeof v);
    assert_int_equal(tstore_held_list(st, NULL, 0, held_collect, v, NULL), 0);
    assert_true(v[0].id == 3 && v[1].id == b && v[2].id == c && v[3].id == h);
    for (size_t i = 0; i < sizeof sel / sizeof sel[0]; i++) {
        memset(v, 0, sizeof v);
        assert_int_equal(tstore_held_list(st, sel[i].ids, sel[i].nids, held_collect, v, NULL), 0);
        assert_int_equal(v[0].id, sel[i].n);
        for (int m = 0; m < sel[i].n; m++)
            assert_int_equal(v[m + 1].id, sel[i].want[m]);
    }
    /* More ids than one read takes: refused, nothing read. */
    static int64_t many[TSTORE_HELD_IDS_MAX + 1];
    memset(v, 0, sizeof v);
    errno = 0;
    assert_int_equal(tstore_held_list(st, many, TSTORE_HELD_IDS_MAX + 1, held_collect, v, NULL),
                     -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(v[0].id, 0);
    /* b's array: a and x active (x released), as every selection reads it. */
    memset(v, 0, sizeof v);
    assert_int_equal(tstore_held_list(st, &x, 1, held_collect, v, NULL), 0);
    assert_int_equal(v[1].array_active, 2);

    /* Release: held -> not held, reason cleared; only once. */
    assert_int_equal(tstore_job_set_reason(st, b, "dependency: waiting", NULL), 0);
    assert_int_equal(tstore_job_release(st, b, NULL), 0);
    errno = 0;
    assert_int_equal(tstore_job_release(st, b, NULL), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tstore_job_get(st, b, &g, NULL), 0);
    assert_true(!g.held && g.reason == NULL);
    tstore_job_clear(&g);

    /* suspended_total_ms is one of the columns a state change writes. */
    assert_int_equal(tstore_job_get(st, a, &g, NULL), 0);
    g.state = TSTORE_RUNNING;
    g.started_ms = 1000;
    g.suspended_total_ms = 4321;
    assert_int_equal(tstore_job_write(st, &g, NULL), 0);
    tstore_job_clear(&g);
    assert_int_equal(tstore_job_get(st, a, &g, NULL), 0);
    assert_true(g.state == TSTORE_RUNNING && g.suspended_total_ms == 4321);
    tstore_job_clear(&g);
    tstore_close(st);
}

/* --- tallies, census, maintenance thread -------------------------------------------------- */

/* A pending job; env of env_bytes bytes (to fill WAL pages). */
static int64_t add_big_job(tstore_t *st, size_t env_bytes)
{
    char *env = malloc(env_bytes + 16);
    assert_non_null(env);
    size_t n = (size_t)snprintf(env, 16, "{\"X\":\"");
    memset(env + n, 'x', env_bytes);
    strcpy(env + n + env_bytes, "\"}");
    tstore_job_t j = {0};
    j.user = (char *)"alice";
    j.argv_json = (char *)"[\"true\"]";
    j.env_json = env;
    j.queue = (char *)"default";
    j.submitted_ms = 1000;
    assert_int_equal(tstore_job_add(st, &j, NULL), 0);
    free(env);
    return j.id;
}

static void test_tally_transactions(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    /* Outside a transaction: at once. */
    assert_int_equal(tstore_tally_add(st, 3, 5, &err), 0);
    assert_int_equal(tstore_tally_get(st, 3), 5);
    /* Committed: counted at the commit, not before. */
    assert_int_equal(tstore_begin(st, &err), 0);
    assert_int_equal(tstore_tally_add(st, 3, 2, &err), 0);
    assert_int_equal(tstore_tally_get(st, 3), 5);
    assert_int_equal(tstore_commit(st, &err), 0);
    assert_int_equal(tstore_tally_get(st, 3), 7);
    /* Rolled back: not counted. */
    assert_int_equal(tstore_begin(st, &err), 0);
    assert_int_equal(tstore_tally_add(st, 3, 100, &err), 0);
    tstore_rollback(st);
    assert_int_equal(tstore_tally_get(st, 3), 7);
    /* A savepoint rolled back takes back its own changes only. */
    assert_int_equal(tstore_begin(st, &err), 0);
    assert_int_equal(tstore_tally_add(st, 0, 1, &err), 0);
    assert_int_equal(tstore_begin(st, &err), 0);
    assert_int_equal(tstore_tally_add(st, 0, 10, &err), 0);
    assert_int_equal(tstore_begin(st, &err), 0); /* two deep */
    assert_int_equal(tstore_tally_add(st, 1, 1000, &err), 0);
    assert_int_equal(tstore_commit(st, &err), 0);
    tstore_rollback(st); /* the first savepoint: its 10 and the inner 1000 go */
    assert_int_equal(tstore_tally_add(st, 0, 100, &err), 0);
    assert_int_equal(tstore_commit(st, &err), 0);
    assert_int_equal(tstore_tally_get(st, 0), 101);
    assert_int_equal(tstore_tally_get(st, 1), 0);
    /* A savepoint released, then the outer transaction rolled back: nothing. */
    assert_int_equal(tstore_begin(st, &err), 0);
    assert_int_equal(tstore_begin(st, &err), 0);
    assert_int_equal(tstore_tally_add(st, 2, 9, &err), 0);
    assert_int_equal(tstore_commit(st, &err), 0);
    tstore_rollback(st);
    assert_int_equal(tstore_tally_get(st, 2), 0);
    /* Many changes in one transaction (the change log grows). */
    assert_int_equal(tstore_begin(st, &err), 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(tstore_tally_add(st, 4, 1, &err), 0);
    assert_int_equal(tstore_commit(st, &err), 0);
    assert_int_equal(tstore_tally_get(st, 4), 1000);
    /* Bad input. */
    assert_int_equal(tstore_tally_add(st, TSTORE_TALLY_MAX, 1, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tstore_tally_get(st, TSTORE_TALLY_MAX), 0);
    int64_t v[2] = {42, 43};
    assert_int_equal(tstore_begin(st, &err), 0);
    assert_int_equal(tstore_tally_reset(st, v, 2, &err), -1);
    assert_int_equal(errno, EBUSY);
    tstore_rollback(st);
    assert_int_equal(tstore_tally_reset(st, v, TSTORE_TALLY_MAX + 1, &err), -1);
    assert_int_equal(errno, EINVAL);
    /* Reset: the first n, the rest 0. */
    assert_int_equal(tstore_tally_reset(st, v, 2, &err), 0);
    assert_int_equal(tstore_tally_get(st, 0), 42);
    assert_int_equal(tstore_tally_get(st, 1), 43);
    assert_int_equal(tstore_tally_get(st, 3), 0);
    assert_int_equal(tstore_tally_get(st, 4), 0);
    tstore_close(st);
}

typedef struct {
    int64_t n[TSTORE_NSTATES][2][4];
    int rows;
} census_t;

static void census_cb(int state, bool suspended, int end_cause, int64_t n, void *arg)
{
    census_t *c = arg;
    assert_in_range(state, 0, TSTORE_NSTATES - 1);
    assert_in_range(end_cause, 0, 3);
    c->n[state][suspended][end_cause] += n;
    c->rows++;
}

static void write_state(tstore_t *st, int64_t id, tstore_state_t s, int64_t susp, int cause)
{
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    j.state = s;
    j.suspended_ms = susp;
    j.end_cause = cause;
    assert_int_equal(tstore_job_write(st, &j, NULL), 0);
    tstore_job_clear(&j);
}

static void test_census(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    int64_t id[6];
    for (int i = 0; i < 6; i++)
        id[i] = add_big_job(st, 10);
    write_state(st, id[1], TSTORE_RUNNING, 0, 0);
    write_state(st, id[2], TSTORE_RUNNING, 5000, 0);
    write_state(st, id[3], TSTORE_FAILED, 0, 2);
    write_state(st, id[4], TSTORE_FAILED, 0, 2);
    write_state(st, id[5], TSTORE_CANCELLED, 0, 3);
    census_t c = {0};
    assert_int_equal(tstore_job_census(st, census_cb, &c, &err), 0);
    assert_int_equal(c.rows, 5); /* grouped */
    assert_int_equal(c.n[TSTORE_PENDING][0][0], 1);
    assert_int_equal(c.n[TSTORE_RUNNING][0][0], 1);
    assert_int_equal(c.n[TSTORE_RUNNING][1][0], 1);
    assert_int_equal(c.n[TSTORE_FAILED][0][2], 2);
    assert_int_equal(c.n[TSTORE_CANCELLED][0][3], 1);
    tstore_event_t ev = {
        .job = id[1], .time_ms = 1, .who = "tesseld", .event = "start", .to_state = "running"};
    assert_int_equal(tstore_event_add(st, &ev, &err), 0);
    assert_int_equal(tstore_event_add(st, &ev, &err), 0);
    ev.event = "submit";
    assert_int_equal(tstore_event_add(st, &ev, &err), 0);
    int64_t n = -1;
    assert_int_equal(tstore_event_count(st, "start", &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(tstore_event_count(st, "nothing", &n, &err), 0);
    assert_int_equal(n, 0);
    tstore_close(st);
}

static off_t wal_size(void)
{
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", path);
    struct stat sb;
    return stat(wal, &sb) == 0 ? sb.st_size : 0;
}

/* Commits that fill 1 MiB of WAL each time (256 pages of 4 KiB) */
static void fill(tstore_t *st, int jobs)
{
    for (int i = 0; i < jobs; i++)
        add_big_job(st, 64 * 1024);
}

static void test_maint(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    tstore_maint_stats_t ms;
    tstore_maint_stats(st, &ms);
    assert_false(ms.running);
    assert_int_equal(tstore_maint_start(st, 0, 0, &err), -1);
    assert_int_equal(errno, EINVAL);
    /* A threshold never reached: the commits themselves no longer checkpoint (SQLite would at
     * 1,000 pages, and the WAL would start over instead of growing past 4 MiB). */
    assert_int_equal(tstore_maint_start(st, 1000000, 1000000, &err), 0);
    assert_int_equal(tstore_maint_start(st, 10, 10, &err), -1);
    assert_int_equal(errno, EBUSY);
    fill(st, 100); /* ~6.4 MiB of rows */
    assert_true(wal_size() > 1500 * 4096);
    tstore_maint_stats(st, &ms);
    assert_true(ms.running);
    assert_int_equal(ms.checkpoints, 0);
    tstore_close(st);
    /* The last connection closed copied the WAL back: every job is there. */
    st = tstore_open(path, &err);
    assert_non_null(st);
    int64_t counts[TSTORE_NSTATES];
    assert_int_equal(tstore_job_counts(st, counts, &err), 0);
    assert_int_equal(counts[TSTORE_PENDING], 100);
    /* A low threshold: the thread checkpoints; wait for it (bounded: 30 s). */
    assert_int_equal(tstore_maint_start(st, 16, 1000000, &err), 0);
    for (int tries = 0; tries < 3000; tries++) {
        fill(st, 1);
        tstore_maint_stats(st, &ms);
        if (ms.checkpoints > 0 && ms.frames > 0)
            break;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(ms.checkpoints > 0);
    assert_true(ms.frames > 0);
    assert_int_equal(ms.errors, 0);
    tstore_close(st);
}

/* Under a steady stream of commits the WAL starts over at the restart threshold instead of
 * growing without bound (the thread's checkpoints never catching up). */
static void test_maint_restart(void **state)
{
    (void)state;
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    assert_int_equal(tstore_maint_start(st, 16, 8, &err), -1); /* restart below the threshold */
    assert_int_equal(errno, EINVAL);
    /* The thread never wakes (its threshold is above the restart's): the commits' own
     * catch-up is what lets the WAL start over, each time it reaches 512 pages (2 MiB). */
    assert_int_equal(tstore_maint_start(st, 512, 512, &err), 0);
    tstore_maint_stats_t ms;
    off_t most = 0;
    for (int i = 0; i < 600; i++) { /* 600 commits of about 17 pages (64 KiB of row) */
        fill(st, 1);
        off_t w = wal_size();
        most = w > most ? w : most;
    }
    tstore_maint_stats(st, &ms);
    assert_int_equal(ms.checkpoints, 0);
    assert_int_equal(ms.errors, 0);
    /* At 512 pages a catch-up, and the next commit starts the WAL over: about 10,000 pages
     * written make more than 15 restarts (each one a catch-up before). */
    assert_true(ms.restarts >= 15);
    assert_true(ms.catchups >= ms.restarts);
    /* The file never held more than 512 pages and one commit's (frames of 4 KiB + 24 bytes,
     * a header of 32): without the catch-ups it would hold all 10,000. */
    assert_true(most <= (512 + 64) * (4096 + 24) + 32);
    tstore_close(st);
    st = tstore_open(path, &err);
    assert_non_null(st);
    int64_t counts[TSTORE_NSTATES];
    assert_int_equal(tstore_job_counts(st, counts, &err), 0);
    assert_int_equal(counts[TSTORE_PENDING], 600); /* nothing lost to the restarts */
    /* With the thread checkpointing too (and maybe busy when a catch-up is due, which is then
     * tried at the next commit), the WAL still starts over. */
    assert_int_equal(tstore_maint_start(st, 16, 512, &err), 0);
    for (int i = 0; i < 2000; i++) {
        fill(st, 1);
        tstore_maint_stats(st, &ms);
        if (ms.restarts >= 3)
            break;
    }
    assert_true(ms.restarts >= 3);
    assert_int_equal(ms.errors, 0);
    tstore_close(st);
}

/* ---- group commit ---- */

#define GROUP_N 6
/* The guard, far above any stall of a loaded machine: these tests decide who commits. */
#define LONG_WAIT_MS 600000

static pthread_mutex_t group_lock = PTHREAD_MUTEX_INITIALIZER;
static int returned; /* members returned from their leave (under group_lock) */

/* One member's turn, in a thread of its own (no cmocka asserts here: they belong to the main
 * thread; the results are checked there). */
typedef struct {
    tstore_t *st;
    pthread_barrier_t *all_announced; /* NULL: none */
    bool *waiting;                    /* set under the lock just before leaving; NULL: none */
    int rc, add_rc, errnum;
    int64_t id;
    int order; /* how many members returned from their leave before this one */
    tsl_error_t err;
} member_t;

static void *member_main(void *arg)
{
    member_t *m = arg;
    tstore_group_announce(m->st);
    if (m->all_announced)
        pthread_barrier_wait(m->all_announced);
    pthread_mutex_lock(&group_lock);
    tstore_group_enter(m->st);
    tstore_user_t u;
    tstore_user_get(m->st, "nobody", &u, NULL); /* a read in the turn commits nothing */
    tstore_job_t j;
    job_fill(&j, "alice", "default", 0);
    m->add_rc = tstore_begin(m->st, &m->err);
    if (m->add_rc == 0) {
        m->add_rc = tstore_job_add(m->st, &j, &m->err);
        if (m->add_rc == 0)
            m->add_rc = tstore_tally_add(m->st, 2, 1, &m->err);
        if (m->add_rc == 0)
            m->add_rc = tstore_commit(m->st, &m->err);
        else
            tstore_rollback(m->st);
    }
    m->id = j.id;
    if (m->waiting)
        *m->waiting = true;
    errno = 0;
    m->rc = tstore_group_leave(m->st, &m->err);
    m->errnum = errno;
    m->order = returned++;
    pthread_mutex_unlock(&group_lock);
    return NULL;
}

/* Rows of jobs as another connection sees them: only what is committed. */
static int committed_jobs(void)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    int n = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs", -1, &q, NULL) == SQLITE_OK) {
        if (sqlite3_step(q) == SQLITE_ROW)
            n = sqlite3_column_int(q, 0);
        sqlite3_finalize(q);
    }
    sqlite3_close(db);
    return n;
}

/* A store at path with group commit on (max members, guard wait_ms). */
static tstore_t *open_grouped(int max, int wait_ms)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    assert_int_equal(tstore_group_init(st, &group_lock, max, wait_ms, &err), 0);
    return st;
}

/* GROUP_N members announced before any takes the lock: one transaction holds them all, each
 * leave returns once it is committed, ids distinct, tallies counted once each. */
static void run_members(tstore_t *st, member_t *m, int n)
{
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, (unsigned)n);
    pthread_t t[GROUP_N];
    for (int i = 0; i < n; i++) {
        m[i] = (member_t){.st = st, .all_announced = &b};
        assert_int_equal(pthread_create(&t[i], NULL, member_main, &m[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&b);
}

static void test_group_commit(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    assert_int_equal(tstore_group_init(st, NULL, 4, LONG_WAIT_MS, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tstore_group_init(st, &group_lock, GROUP_N, LONG_WAIT_MS, &err), 0);
    assert_int_equal(tstore_group_init(st, &group_lock, GROUP_N, LONG_WAIT_MS, &err), -1);
    assert_int_equal(errno, EBUSY);
    member_t m[GROUP_N];
    run_members(st, m, GROUP_N);
    for (int i = 0; i < GROUP_N; i++) {
        assert_int_equal(m[i].add_rc, 0);
        assert_int_equal(m[i].rc, 0);
        assert_true(m[i].id > 0);
        for (int k = 0; k < i; k++) {
            assert_true(m[i].id != m[k].id);
            /* They return in the order of their turns (ids are given in that order). */
            assert_true((m[i].id < m[k].id) == (m[i].order < m[k].order));
        }
    }
    tstore_group_stats_t gs;
    tstore_group_stats(st, &gs);
    assert_int_equal(gs.commits, 1);
    assert_int_equal(gs.members, GROUP_N);
    assert_int_equal(gs.largest, GROUP_N);
    assert_int_equal(gs.failed, 0);
    assert_int_equal(committed_jobs(), GROUP_N);
    assert_int_equal(tstore_tally_get(st, 2), GROUP_N);
    /* A group holds at most max members (a store is turned on once: a new one, max 2). */
    tstore_close(st);
    st = open_grouped(2, LONG_WAIT_MS);
    run_members(st, m, GROUP_N);
    for (int i = 0; i < GROUP_N; i++)
        assert_int_equal(m[i].rc, 0);
    tstore_group_stats(st, &gs);
    assert_int_equal(gs.members, GROUP_N);
    assert_int_equal(gs.largest, 2);
    assert_int_equal(gs.commits, GROUP_N / 2);
    assert_int_equal(committed_jobs(), 2 * GROUP_N);
    tstore_close(st);
}

/* A member waits for the group while another is announced; someone who is no member (the
 * daemon's main loop) and touches the store commits the group first, and the member's leave
 * returns 0.  The announced one then comes without writes: nothing more to commit. */
static void test_group_other_commits(void **state)
{
    tsl_error_t err;
    tstore_t *st = open_grouped(GROUP_N, LONG_WAIT_MS);
    tstore_group_announce(st); /* "B", this thread, comes later */
    bool waiting = false;
    member_t a = {.st = st, .waiting = &waiting};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, member_main, &a), 0);
    for (;;) {
        pthread_mutex_lock(&group_lock);
        if (waiting)
            break; /* A set it under the lock and left it only in its wait */
        pthread_mutex_unlock(&group_lock);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(committed_jobs(), 0); /* A's row waits in the open group */
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, a.id, &j, &err), 0); /* not a member: commits first */
    tstore_job_clear(&j);
    assert_int_equal(committed_jobs(), 1);
    tstore_group_stats_t gs;
    tstore_group_stats(st, &gs);
    assert_int_equal(gs.commits, 1);
    /* B: a turn that writes nothing (a refused submission) leaves nothing open. */
    tstore_group_enter(st);
    tstore_user_t u;
    assert_int_equal(tstore_user_get(st, "nobody", &u, NULL), -1);
    assert_int_equal(tstore_group_leave(st, &err), 0);
    pthread_mutex_unlock(&group_lock);
    pthread_join(t, NULL);
    assert_int_equal(a.add_rc, 0);
    assert_int_equal(a.rc, 0);
    tstore_group_stats(st, &gs);
    assert_int_equal(gs.commits, 1);
    assert_int_equal(gs.members, 1);
    /* A member's own rollback undoes its writes only; a transaction of a non-member after the
     * group is its own. */
    pthread_mutex_lock(&group_lock);
    tstore_group_announce(st);
    tstore_group_enter(st);
    assert_int_equal(tstore_begin(st, &err), 0);
    assert_int_equal(tstore_user_add(st, "gone", "user", 1, &err), 0);
    tstore_rollback(st);
    assert_int_equal(tstore_group_leave(st, &err), 0);
    assert_int_equal(tstore_user_get(st, "gone", &u, NULL), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tstore_begin(st, &err), 0);
    assert_int_equal(tstore_user_add(st, "kept", "user", 1, &err), 0);
    assert_int_equal(tstore_commit(st, &err), 0);
    assert_int_equal(tstore_user_get(st, "kept", &u, NULL), 0);
    pthread_mutex_unlock(&group_lock);
    tstore_close(st);
}

/* The group's commit fails (the WAL cannot grow: RLIMIT_FSIZE at its size): every member's
 * leave fails with the store's error, none of their rows and tallies are there; then the store
 * works on. */
static void test_group_commit_fails(void **state)
{
    tsl_error_t err;
    tstore_t *st = open_grouped(GROUP_N, LONG_WAIT_MS);
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", path);
    struct stat sb;
    assert_int_equal(stat(wal, &sb), 0);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)sb.st_size;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    member_t m[GROUP_N];
    run_members(st, m, GROUP_N);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_DFL);
    for (int i = 0; i < GROUP_N; i++) {
        assert_int_equal(m[i].add_rc, 0);
        assert_int_equal(m[i].rc, -1);
        assert_int_equal(m[i].errnum, EIO);
        assert_non_null(strstr(m[i].err.text, "store:"));
    }
    tstore_group_stats_t gs;
    tstore_group_stats(st, &gs);
    assert_int_equal(gs.commits, 1);
    assert_int_equal(gs.failed, 1);
    assert_int_equal(committed_jobs(), 0);
    assert_int_equal(tstore_tally_get(st, 2), 0);
    pthread_mutex_lock(&group_lock);
    int64_t n = -1;
    assert_int_equal(tstore_user_count(st, &n, &err), 0); /* no group left open */
    pthread_mutex_unlock(&group_lock);
    /* The store works on. */
    run_members(st, m, 1);
    assert_int_equal(m[0].rc, 0);
    assert_int_equal(committed_jobs(), 1);
    assert_int_equal(tstore_tally_get(st, 2), 1);
    tstore_close(st);
}

/* The guard: a member announced that never comes (a broken promise) does not hold the group
 * open for ever: the waiting member commits it itself after wait_ms. */
static void test_group_guard(void **state)
{
    tstore_t *st = open_grouped(GROUP_N, 10);
    tstore_group_announce(st); /* and never enters */
    member_t m[1];
    run_members(st, m, 1);
    assert_int_equal(m[0].add_rc, 0);
    assert_int_equal(m[0].rc, 0);
    assert_int_equal(committed_jobs(), 1);
    tstore_group_stats_t gs;
    tstore_group_stats(st, &gs);
    assert_int_equal(gs.commits, 1);
    assert_int_equal(gs.members, 1);
    tstore_close(st);
}

/* Services (migration 17): add, the unique name and port, get, list, scale, replicas (active
 * ones and all), the ports in use, the callers' hashes (the service's tokens and the owner's),
 * and the deletion of a service with its rows. */
static int count_svc(const tstore_service_t *sv, void *arg)
{
    (void)sv;
    (*(int *)arg)++;
    return 0;
}

static int collect_rep(const tstore_replica_t *r, void *arg)
{
    int64_t *ids = arg;
    for (int i = 0; i < 4; i++)
        if (!ids[i]) {
            ids[i] = r->job;
            break;
        }
    return 0;
}

static int count_hash(const unsigned char hash[32], void *arg)
{
    (*(int *)arg) += hash[0];
    return 0;
}

/* Normal GPU units (migration 17): GPU speeds set, replaced,
 * listed by model, deleted (ENOENT when absent); a queue's ngpu limit kept, 0 = none. */
static int speed_cat(const tstore_gpu_speed_t *g, void *arg)
{
    char *out = arg;
    char line[160];
    snprintf(line, sizeof line, "%s=%lld/%s ", g->model, (long long)g->speed_milli, g->set_by);
    strcat(out, line);
    return 0;
}

static void test_gpu_speeds(void **state)
{
    (void)state;
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    tstore_gpu_speed_t g = {.model = "T4", .speed_milli = 1000, .set_by = "root", .set_ms = 1};
    assert_int_equal(tstore_gpu_speed_set(st, &g, NULL), 0);
    tstore_gpu_speed_t a = {.model = "NVIDIA A100", .speed_milli = 3000, .set_by = "amy"};
    assert_int_equal(tstore_gpu_speed_set(st, &a, NULL), 0);
    g.speed_milli = 500; /* replaces */
    assert_int_equal(tstore_gpu_speed_set(st, &g, NULL), 0);
    char out[512] = "";
    assert_int_equal(tstore_gpu_speed_list(st, speed_cat, out, NULL), 0);
    assert_string_equal(out, "NVIDIA A100=3000/amy T4=500/root ");
    assert_int_equal(tstore_gpu_speed_del(st, "T4", NULL), 0);
    errno = 0;
    assert_int_equal(tstore_gpu_speed_del(st, "T4", &err), -1);
    assert_int_equal(errno, ENOENT);
    out[0] = '\0';
    assert_int_equal(tstore_gpu_speed_list(st, speed_cat, out, NULL), 0);
    assert_string_equal(out, "NVIDIA A100=3000/amy ");

    tstore_queue_t q = {.name = "mixed",
                        .guarantee = {-1, -1, -1, -1},
                        .limit = {-1, -1, -1, -1},
                        .limit_ngpu = 4500,
                        .created_ms = 2};
    assert_int_equal(tstore_queue_add(st, &q, NULL), 0);
    tstore_queue_t r;
    assert_int_equal(tstore_queue_get(st, "mixed", &r, NULL), 0);
    assert_int_equal(r.limit_ngpu, 4500);
    q.limit_ngpu = 0;
    assert_int_equal(tstore_queue_update(st, &q, NULL), 0);
    assert_int_equal(tstore_queue_get(st, "mixed", &r, NULL), 0);
    assert_int_equal(r.limit_ngpu, 0);
    tstore_close(st);
}

static void test_services(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    tstore_service_t sv = {.replicas = 2,
                           .port = 9000,
                           .concurrency = 1,
                           .split_even = true,
                           .spec_json = (char *)"{\"argv\":[\"srv\"]}",
                           .created_ms = 7};
    snprintf(sv.name, sizeof sv.name, "llm");
    snprintf(sv.owner, sizeof sv.owner, "ann");
    snprintf(sv.health, sizeof sv.health, "/health");
    int64_t id = tstore_service_add(st, &sv, &err);
    assert_true(id > 0);
    assert_int_equal(tstore_service_add(st, &sv, &err), -1);
    assert_int_equal(errno, EEXIST); /* the name */
    snprintf(sv.name, sizeof sv.name, "other");
    assert_int_equal(tstore_service_add(st, &sv, &err), -1);
    assert_int_equal(errno, EEXIST); /* the port */
    tstore_service_t got;
    assert_int_equal(tstore_service_get(st, "llm", &got, &err), 0);
    assert_int_equal(got.id, id);
    assert_string_equal(got.owner, "ann");
    assert_int_equal(got.port, 9000);
    assert_true(got.split_even);
    assert_string_equal(got.spec_json, "{\"argv\":[\"srv\"]}");
    tstore_service_clear(&got);
    assert_int_equal(tstore_service_get(st, "nope", &got, &err), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tstore_service_set_replicas(st, id, 5, &err), 0);
    assert_int_equal(tstore_service_get(st, "llm", &got, &err), 0);
    assert_int_equal(got.replicas, 5);
    tstore_service_clear(&got);
    int n = 0;
    assert_int_equal(tstore_service_list(st, count_svc, &n, &err), 0);
    assert_int_equal(n, 1);
    /* Counted by owner (user deletion, the per-user limit) and in all (the global one). */
    int64_t owned = -1;
    assert_int_equal(tstore_service_count_owner(st, "ann", &owned, &err), 0);
    assert_int_equal(owned, 1);
    assert_int_equal(tstore_service_count_owner(st, "bob", &owned, &err), 0);
    assert_int_equal(owned, 0);
    assert_int_equal(tstore_service_count_owner(st, NULL, &owned, &err), 0);
    assert_int_equal(owned, 1);

    /* Two replicas; one ends: the active list has one, the full list two. */
    int64_t j1, j2;
    add_job(st, "ann", "default", 0, &j1);
    add_job(st, "ann", "default", 0, &j2);
    assert_int_equal(tstore_replica_add(st, j1, id, 40001, &err), 0);
    assert_int_equal(tstore_replica_add(st, j2, id, 40002, &err), 0);
    /* A job's replica port: the one given; a job that is no replica has none. */
    int rport = 0;
    assert_int_equal(tstore_replica_port(st, j2, &rport, &err), 1);
    assert_int_equal(rport, 40002);
    assert_int_equal(tstore_replica_port(st, j2 + 100, &rport, &err), 0);
    bool used;
    assert_int_equal(tstore_service_port_used(st, 40002, &used, &err), 0);
    assert_true(used);
    assert_int_equal(tstore_service_port_used(st, 9000, &used, &err), 0);
    assert_true(used);
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, j2, &j, &err), 0);
    j.state = TSTORE_FAILED;
    assert_int_equal(tstore_job_write(st, &j, &err), 0);
    tstore_job_clear(&j);
    assert_int_equal(tstore_service_port_used(st, 40002, &used, &err), 0);
    assert_false(used); /* an ended replica's port is free again */
    int64_t ids[4] = {0};
    assert_int_equal(tstore_replica_list(st, id, true, collect_rep, ids, &err), 0);
    assert_int_equal(ids[0], j1);
    assert_int_equal(ids[1], 0);
    int64_t all[4] = {0};
    assert_int_equal(tstore_replica_list(st, id, false, collect_rep, all, &err), 0);
    assert_int_equal(all[0], j1);
    assert_int_equal(all[1], j2);

    /* Callers: a service token (first byte 1) and the owner's API token (first byte 2); not
     * another user's (first byte 4). */
    unsigned char h1[32] = {1}, h2[32] = {2}, h3[32] = {4};
    assert_true(tstore_service_token_add(st, id, "fe", h1, 1, &err) > 0);
    assert_true(tstore_token_add(st, "ann", "laptop", h2, 1, &err) > 0);
    assert_true(tstore_token_add(st, "bob", "laptop", h3, 1, &err) > 0);
    int sum = 0;
    assert_int_equal(tstore_service_hashes(st, id, "ann", count_hash, &sum, &err), 0);
    assert_int_equal(sum, 3);
    /* A second service token, revoked: it is no longer a caller; revoking it again: ENOENT. */
    unsigned char h4[32] = {8};
    int64_t tid = tstore_service_token_add(st, id, "old", h4, 2, &err);
    assert_true(tid > 0);
    sum = 0;
    assert_int_equal(tstore_service_hashes(st, id, "ann", count_hash, &sum, &err), 0);
    assert_int_equal(sum, 11);
    assert_int_equal(tstore_service_token_del(st, id + 1, tid, &err), -1); /* another service's */
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tstore_service_token_del(st, id, tid, &err), 0);
    assert_int_equal(tstore_service_token_del(st, id, tid, &err), -1);
    assert_int_equal(errno, ENOENT);
    sum = 0;
    assert_int_equal(tstore_service_hashes(st, id, "ann", count_hash, &sum, &err), 0);
    assert_int_equal(sum, 3);

    /* Deleted: the service, its tokens and its replica rows; the jobs stay. */
    assert_int_equal(tstore_service_del(st, id, &err), 0);
    assert_int_equal(tstore_service_get(st, "llm", &got, &err), -1);
    sum = 0;
    assert_int_equal(tstore_service_hashes(st, id, "nobody", count_hash, &sum, &err), 0);
    assert_int_equal(sum, 0);
    int64_t none[4] = {0};
    assert_int_equal(tstore_replica_list(st, id, false, collect_rep, none, &err), 0);
    assert_int_equal(none[0], 0);
    assert_int_equal(tstore_job_get(st, j1, &j, &err), 0);
    tstore_job_clear(&j);
    assert_int_equal(tstore_service_del(st, id, &err), -1);
    assert_int_equal(errno, ENOENT);
    tstore_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test_setup_teardown(test_users_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_image, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_gpu_released, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_gpu_oversub, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_services, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_reclaim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_gpu_oversub, setup, teardown),
        cmocka_unit_test_setup_teardown(test_services, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_speeds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_reason, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tally_transactions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_census, setup, teardown),
        cmocka_unit_test_setup_teardown(test_maint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_maint_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_other_commits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_guard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slurm_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_events_bound, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
