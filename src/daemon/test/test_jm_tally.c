/* test_jm_tally.c - the job model's tallies (jobmodel.h, TJM_TALLY_*: what /metrics serves):
 * after a mixed random workload of every event, legal and illegal, with submissions in outer
 * transactions that commit or roll back, each tally equals a fresh count of the store; after a
 * reopen of the store (a restart) tjm_tally_load counts the same, and goes on counting right. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/jobmodel.h"

static char dir[64];
static char path[128];
static tstore_t *st;
static int64_t ids[4096];
static size_t nids;

static tjm_t model(void)
{
    return (tjm_t){.store = st};
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tessel-jmt-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/tessel.db", dir);
    st = tstore_open(path, NULL);
    nids = 0;
    return st ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tstore_close(st);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A small deterministic generator (the same workload at every run). */
static uint64_t rng = 0x9e3779b97f4a7c15u;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static int submit_one(tsl_error_t *err)
{
    tstore_job_t j = {0};
    j.user = (char *)"alice";
    j.argv_json = (char *)"[\"true\"]";
    j.env_json = (char *)"{}";
    j.queue = (char *)"default";
    j.gpu_milli = 500;
    j.gpu_count = 1;
    j.no_requeue = rnd(4) == 0;
    tjm_t m = model();
    if (tjm_submit(&m, &j, "alice", NULL, err) < 0)
        return -1;
    assert_true(nids < sizeof ids / sizeof ids[0]);
    ids[nids++] = j.id;
    return 0;
}

/* Submissions: alone, or several in a transaction that commits or rolls back (an array). */
static void submit_some(void)
{
    tsl_error_t err;
    unsigned how = rnd(4);
    if (how < 2) {
        assert_int_equal(submit_one(&err), 0);
        return;
    }
    size_t before = nids;
    assert_int_equal(tstore_begin(st, &err), 0);
    for (int k = 0; k < 3; k++)
        assert_int_equal(submit_one(&err), 0);
    if (how == 2) {
        assert_int_equal(tstore_commit(st, &err), 0);
    } else {
        tstore_rollback(st);
        nids = before; /* those jobs are not in the store */
    }
}

/* One random event on one random job; illegal ones fail and must count nothing. */
static void random_event(void)
{
    int64_t id = ids[rnd((unsigned)nids)];
    tjm_event_t ev = (tjm_event_t)(1 + rnd(TJM_NEVENTS - 1));
    tjm_change_t chg = {0};
    switch (ev) {
    case TJM_EV_START:
        chg.placement_json = "[{\"gpu\":0,\"milli\":500}]";
        break;
    case TJM_EV_SPAWNED:
        if (rnd(2)) {
            chg.shim_pid = 100 + (int)rnd(1000);
            chg.job_pid = chg.shim_pid + 1;
        }
        break;
    case TJM_EV_EXIT:
        chg.has_exit_code = true;
        break;
    case TJM_EV_FAIL: {
        static const tjm_cause_t causes[] = {TJM_CAUSE_NONE, TJM_CAUSE_HOST_OOM,
                                             TJM_CAUSE_GPU_MEM_LIMIT, TJM_CAUSE_LOST};
        chg.cause = causes[rnd(4)];
        if (chg.cause == TJM_CAUSE_NONE && rnd(2))
            chg.signal = 9;
        else {
            chg.has_exit_code = true;
            chg.exit_code = 1;
        }
        break;
    }
    case TJM_EV_KILL:
        chg.cause = rnd(3) == 0 ? TJM_CAUSE_TIME_LIMIT : TJM_CAUSE_NONE;
        break;
    case TJM_EV_PREEMPT:
        chg.preempt_for = ids[0];
        chg.preempt_queue = "default";
        break;
    default:
        break;
    }
    tjm_t m = model();
    tsl_error_t err;
    if (tjm_apply(&m, id, ev, &chg, "tesseld", NULL, &err) < 0)
        assert_true(errno == EINVAL || errno == EBUSY);
}

typedef struct {
    int64_t v[TJM_TALLY_NSLOTS];
} counts_t;

static int count_job(const tstore_job_t *j, void *arg)
{
    counts_t *c = arg;
    tjm_state_t s = tjm_job_state(j);
    c->v[TJM_TALLY_STATE + s]++;
    c->v[TJM_TALLY_SUBMITTED]++;
    if (s != TJM_PENDING && s != TJM_RUNNING && s != TJM_SUSPENDED)
        c->v[TJM_TALLY_ENDED + j->end_cause]++;
    return 0;
}

/* Every tally against a count made now from the store's rows. */
static void check_fresh(void)
{
    counts_t c = {0};
    tstore_job_filter_t f = {.limit = 1000000};
    assert_int_equal(tstore_job_list(st, &f, count_job, &c, NULL), 0);
    assert_int_equal(tstore_event_count(st, "start", &c.v[TJM_TALLY_STARTED], NULL), 0);
    for (unsigned i = 0; i < TJM_TALLY_NSLOTS; i++) {
        if (tstore_tally_get(st, i) != c.v[i])
            fail_msg("tally %u: kept %lld, counted %lld", i, (long long)tstore_tally_get(st, i),
                     (long long)c.v[i]);
    }
}

static void workload(int steps)
{
    for (int k = 0; k < steps; k++) {
        if (nids == 0 || rnd(5) == 0)
            submit_some();
        else
            random_event();
    }
}

static void test_tally_equals_store(void **state)
{
    (void)state;
    tjm_t m = model();
    assert_int_equal(tjm_tally_load(&m, NULL), 0); /* an empty store: all 0 */
    check_fresh();
    workload(3000);
    check_fresh();
    /* The workload reached every kind of count. */
    assert_true(tstore_tally_get(st, TJM_TALLY_STATE + TJM_PENDING) > 0);
    assert_true(tstore_tally_get(st, TJM_TALLY_STATE + TJM_SUSPENDED) +
                    tstore_tally_get(st, TJM_TALLY_STATE + TJM_RUNNING) >
                0);
    assert_true(tstore_tally_get(st, TJM_TALLY_STARTED) > 0);
    for (int c = TJM_CAUSE_EXIT; c <= TJM_CAUSE_LOST; c++) {
        if (c == TJM_CAUSE_LAUNCH_FAILURE || c == TJM_CAUSE_DEPENDENCY)
            continue;
        if (tstore_tally_get(st, TJM_TALLY_ENDED + (unsigned)c) == 0)
            fail_msg("no job ended with cause %s", tjm_cause_name((tjm_cause_t)c));
    }
    int64_t kept[TJM_TALLY_NSLOTS];
    for (unsigned i = 0; i < TJM_TALLY_NSLOTS; i++)
        kept[i] = tstore_tally_get(st, i);
    /* A restart: a new store handle counts the same from the rows. */
    tstore_close(st);
    st = tstore_open(path, NULL);
    assert_non_null(st);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_SUBMITTED), 0);
    m = model();
    assert_int_equal(tjm_tally_load(&m, NULL), 0);
    for (unsigned i = 0; i < TJM_TALLY_NSLOTS; i++)
        assert_int_equal(tstore_tally_get(st, i), kept[i]);
    /* And counts on from there. */
    workload(1000);
    check_fresh();
}

/* A change the store refuses counts nothing (the tallies follow its transaction). */
static void test_failed_change_counts_nothing(void **state)
{
    (void)state;
    tjm_t m = model();
    assert_int_equal(tjm_tally_load(&m, NULL), 0);
    assert_int_equal(submit_one(NULL), 0);
    /* An outer transaction that rolls back takes a start back with it. */
    assert_int_equal(tstore_begin(st, NULL), 0);
    tjm_change_t chg = {.placement_json = "[]"};
    assert_int_equal(tjm_apply(&m, ids[0], TJM_EV_START, &chg, "tesseld", NULL, NULL), 0);
    tstore_rollback(st);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_STARTED), 0);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_STATE + TJM_PENDING), 1);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_STATE + TJM_RUNNING), 0);
    /* A job that does not exist: nothing. */
    assert_int_equal(tjm_apply(&m, 999999, TJM_EV_CANCEL, NULL, "tesseld", NULL, NULL), -1);
    assert_int_equal(errno, ENOENT);
    check_fresh();
    /* Loading inside a transaction is refused. */
    assert_int_equal(tstore_begin(st, NULL), 0);
    assert_int_equal(tjm_tally_load(&m, NULL), -1);
    assert_int_equal(errno, EBUSY);
    tstore_rollback(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tally_equals_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_change_counts_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
