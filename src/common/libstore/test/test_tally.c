/* test_tally.c - libstore: tallies that follow transactions and savepoints, the census of the
 * jobs table, and the maintenance thread that checkpoints the WAL off the request path. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "libstore/store.h"

static char dir[64];
static char path[128];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/tessel-tally-XXXXXX");
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

/* A pending job; env of env_bytes bytes (to fill WAL pages). */
static int64_t add_job(tstore_t *st, size_t env_bytes)
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
        id[i] = add_job(st, 10);
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
        add_job(st, 64 * 1024);
}

static void test_maint(void **state)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    tstore_maint_stats_t ms;
    tstore_maint_stats(st, &ms);
    assert_false(ms.running);
    assert_int_equal(tstore_maint_start(st, 0, &err), -1);
    assert_int_equal(errno, EINVAL);
    /* A threshold never reached: the commits themselves no longer checkpoint (SQLite would at
     * 1,000 pages, and the WAL would start over instead of growing past 4 MiB). */
    assert_int_equal(tstore_maint_start(st, 1000000, &err), 0);
    assert_int_equal(tstore_maint_start(st, 10, &err), -1);
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
    assert_int_equal(tstore_maint_start(st, 16, &err), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tally_transactions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_census, setup, teardown),
        cmocka_unit_test_setup_teardown(test_maint, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
