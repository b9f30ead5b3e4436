/* test_batch.c - the pure parts of tesseld's batch features (batch.h): the verdict on a job's
 * dependencies in every state of the job it names, the time that counts against a limit
 * (suspended time left out), and the reason of an array's %N. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/batch.h"
#include "libutil/batchspec.h"

static tstore_dep_t dep(int64_t id, int kind, tstore_state_t st)
{
    tstore_dep_t d = {.dep = id, .kind = kind, .exists = true, .state = st};
    return d;
}

static void test_deps_table(void **state)
{
    /* kind x state of the job named -> verdict */
    static const struct {
        int kind;
        tstore_state_t st;
        tessd_deps_t want;
        const char *why;
    } t[] = {
        {TSL_DEP_OK, TSTORE_PENDING, TESSD_DEPS_WAIT, "waiting for job 12 to succeed"},
        {TSL_DEP_OK, TSTORE_RUNNING, TESSD_DEPS_WAIT, "waiting for job 12 to succeed"},
        {TSL_DEP_OK, TSTORE_SUCCEEDED, TESSD_DEPS_MET, ""},
        {TSL_DEP_OK, TSTORE_FAILED, TESSD_DEPS_NEVER, "job 12 failed (it had to succeed)"},
        {TSL_DEP_OK, TSTORE_CANCELLED, TESSD_DEPS_NEVER, "job 12 cancelled (it had to succeed)"},
        {TSL_DEP_OK, TSTORE_PREEMPTED, TESSD_DEPS_NEVER, "job 12 preempted (it had to succeed)"},
        {TSL_DEP_ANY, TSTORE_PENDING, TESSD_DEPS_WAIT, "waiting for job 12 to end"},
        {TSL_DEP_ANY, TSTORE_RUNNING, TESSD_DEPS_WAIT, "waiting for job 12 to end"},
        {TSL_DEP_ANY, TSTORE_SUCCEEDED, TESSD_DEPS_MET, ""},
        {TSL_DEP_ANY, TSTORE_FAILED, TESSD_DEPS_MET, ""},
        {TSL_DEP_ANY, TSTORE_CANCELLED, TESSD_DEPS_MET, ""},
        {TSL_DEP_ANY, TSTORE_PREEMPTED, TESSD_DEPS_MET, ""},
        {TSL_DEP_NOTOK, TSTORE_RUNNING, TESSD_DEPS_WAIT, "waiting for job 12 to fail"},
        {TSL_DEP_NOTOK, TSTORE_SUCCEEDED, TESSD_DEPS_NEVER, "job 12 succeeded (it had to fail)"},
        {TSL_DEP_NOTOK, TSTORE_FAILED, TESSD_DEPS_MET, ""},
        {TSL_DEP_NOTOK, TSTORE_CANCELLED, TESSD_DEPS_MET, ""},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        tstore_dep_t d = dep(12, t[i].kind, t[i].st);
        char why[128];
        tessd_deps_t v = tessd_deps_eval(&d, 1, why, sizeof why);
        if (v != t[i].want || strcmp(why, t[i].why) != 0)
            fail_msg("row %zu: verdict %d '%s', want %d '%s'", i, v, why, t[i].want, t[i].why);
    }
}

static void test_deps_several(void **state)
{
    char why[128];
    assert_int_equal(tessd_deps_eval(NULL, 0, why, sizeof why), TESSD_DEPS_MET);
    assert_string_equal(why, "");
    /* The first that waits is named; one that never holds wins over any wait. */
    tstore_dep_t d[3] = {dep(5, TSL_DEP_OK, TSTORE_SUCCEEDED), dep(6, TSL_DEP_ANY, TSTORE_RUNNING),
                         dep(7, TSL_DEP_OK, TSTORE_PENDING)};
    assert_int_equal(tessd_deps_eval(d, 3, why, sizeof why), TESSD_DEPS_WAIT);
    assert_string_equal(why, "waiting for job 6 to end");
    d[2].state = TSTORE_FAILED;
    assert_int_equal(tessd_deps_eval(d, 3, why, sizeof why), TESSD_DEPS_NEVER);
    assert_string_equal(why, "job 7 failed (it had to succeed)");
    d[1].state = TSTORE_CANCELLED;
    d[2].state = TSTORE_SUCCEEDED;
    assert_int_equal(tessd_deps_eval(d, 3, why, sizeof why), TESSD_DEPS_MET);
    /* A job that no longer exists can never be waited for. */
    d[0].exists = false;
    assert_int_equal(tessd_deps_eval(d, 3, why, sizeof why), TESSD_DEPS_NEVER);
    assert_string_equal(why, "job 5 does not exist");
    /* A short buffer is cut, never overrun. */
    char small[8];
    d[0].exists = true;
    d[1].state = TSTORE_RUNNING;
    assert_int_equal(tessd_deps_eval(d, 3, small, sizeof small), TESSD_DEPS_WAIT);
    assert_int_equal(strlen(small), 7);
}

static void test_time_used(void **state)
{
    /* not started */
    assert_int_equal(tessd_time_used_ms(0, 0, 0, 5000), 0);
    /* 10 s of running */
    assert_int_equal(tessd_time_used_ms(1000, 0, 0, 11000), 10000);
    /* 3 s suspended earlier are not counted */
    assert_int_equal(tessd_time_used_ms(1000, 3000, 0, 11000), 7000);
    /* suspended since 8 s: the last 3 s do not count either */
    assert_int_equal(tessd_time_used_ms(1000, 3000, 8000, 11000), 4000);
    /* a clock that went back counts nothing, never a negative time */
    assert_int_equal(tessd_time_used_ms(5000, 0, 0, 4000), 0);
    assert_int_equal(tessd_time_used_ms(1000, 20000, 0, 11000), 0);
}

static void test_array_reason(void **state)
{
    char why[128];
    tessd_array_wait_reason(40, 2, why, sizeof why);
    assert_string_equal(why, "waiting: array 40 runs at most 2 elements at once (%2)");
    tessd_array_wait_reason(41, 1, why, sizeof why);
    assert_string_equal(why, "waiting: array 41 runs at most 1 element at once (%1)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deps_table),
        cmocka_unit_test(test_deps_several),
        cmocka_unit_test(test_time_used),
        cmocka_unit_test(test_array_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
