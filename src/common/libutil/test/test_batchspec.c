/* test_batchspec.c - time limits, dependencies and arrays as Slurm users write them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "libutil/batchspec.h"

static void test_duration_valid(void **state)
{
    static const struct {
        const char *in;
        int64_t want;
    } t[] = {
        {"30", 1800},        {"90", 5400},     {"5:30", 330},      {"1:02:03", 3723},
        {"2-0", 172800},     {"1-02", 93600},  {"1-02:03", 93780}, {"1-02:03:04", 93784},
        {"30s", 30},         {"10m", 600},     {"2h", 7200},       {"1d", 86400},
        {"10M", 600},        {"unlimited", 0}, {"INFINITE", 0},    {"0", 0},
        {"365-0", 31536000}, {"0:1", 1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t v = -7;
        tsl_error_t e = {{0}};
        if (tsl_parse_duration(t[i].in, &v, &e) != 0)
            fail_msg("'%s': %s", t[i].in, e.text);
        if (v != t[i].want)
            fail_msg("'%s': %lld, want %lld", t[i].in, (long long)v, (long long)t[i].want);
    }
}

static void test_duration_invalid(void **state)
{
    static const struct {
        const char *in;
        int err;
    } t[] = {
        {"", EINVAL},        {"m", EINVAL},      {"-1", EINVAL},    {"1:60", EINVAL},
        {"1:2:3:4", EINVAL}, {"1-", EINVAL},     {"1h30m", EINVAL}, {"30 m", EINVAL},
        {"1:02:60", EINVAL}, {"1-2:60", EINVAL}, {"3x", EINVAL},    {"1234567890", EINVAL},
        {"366d", ERANGE},    {"366-0", ERANGE},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t v = -7;
        tsl_error_t e = {{0}};
        errno = 0;
        if (tsl_parse_duration(t[i].in, &v, &e) != -1)
            fail_msg("'%s' accepted as %lld", t[i].in, (long long)v);
        assert_int_equal(errno, t[i].err);
        assert_true(v == -7);
        assert_true(strlen(e.text) > 0);
    }
    assert_int_equal(tsl_parse_duration(NULL, &(int64_t){0}, NULL), -1);
}

static void test_duration_format(void **state)
{
    static const struct {
        int64_t in;
        const char *want;
    } t[] = {
        {0, "unlimited"}, {30, "30s"},         {1800, "30m"},    {5400, "1h30m"},
        {86400, "1d"},    {93784, "1d2h3m4s"}, {3601, "1h0m1s"}, {172800, "2d"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char buf[32];
        assert_string_equal(tsl_format_duration(t[i].in, buf, sizeof buf), t[i].want);
        /* What is printed parses back (as a unit form it must be a single unit). */
    }
    char small[4];
    tsl_format_duration(93784, small, sizeof small);
    assert_true(strlen(small) < sizeof small);
}

static void test_deps_valid(void **state)
{
    tsl_dep_t d[TSL_DEPS_MAX];
    size_t n = 0;
    tsl_error_t e;
    assert_int_equal(tsl_parse_deps("12", d, TSL_DEPS_MAX, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_true(d[0].job == 12 && d[0].kind == TSL_DEP_OK);

    assert_int_equal(tsl_parse_deps("12:any,13,14:notok", d, TSL_DEPS_MAX, &n, &e), 0);
    assert_int_equal(n, 3);
    assert_true(d[0].job == 12 && d[0].kind == TSL_DEP_ANY);
    assert_true(d[1].job == 13 && d[1].kind == TSL_DEP_OK);
    assert_true(d[2].job == 14 && d[2].kind == TSL_DEP_NOTOK);

    assert_int_equal(tsl_parse_deps("afterok:12:13,afterany:14", d, TSL_DEPS_MAX, &n, &e), 0);
    assert_int_equal(n, 3);
    assert_true(d[0].job == 12 && d[0].kind == TSL_DEP_OK);
    assert_true(d[1].job == 13 && d[1].kind == TSL_DEP_OK);
    assert_true(d[2].job == 14 && d[2].kind == TSL_DEP_ANY);

    /* A job named twice keeps its last kind. */
    assert_int_equal(tsl_parse_deps("12,12:any", d, TSL_DEPS_MAX, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_true(d[0].kind == TSL_DEP_ANY);

    assert_int_equal(tsl_parse_deps("afternotok:7", d, TSL_DEPS_MAX, &n, &e), 0);
    assert_true(n == 1 && d[0].job == 7 && d[0].kind == TSL_DEP_NOTOK);
    assert_string_equal(tsl_dep_kind_name(TSL_DEP_NOTOK), "notok");
    assert_int_equal(tsl_dep_kind_parse("any"), TSL_DEP_ANY);
    assert_int_equal(tsl_dep_kind_parse("later"), -1);
}

static void test_deps_invalid(void **state)
{
    static const char *const bad[] = {
        "",          "x",         "0",    "-3", "12:maybe",  "afterok:",    "after:12",
        "afterx:12", "afterok:a", "12,,", ",",  "12:ok:any", "aftercorr:3",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsl_dep_t d[4];
        size_t n = 99;
        tsl_error_t e = {{0}};
        errno = 0;
        if (tsl_parse_deps(bad[i], d, 4, &n, &e) != -1)
            fail_msg("'%s' accepted", bad[i]);
        assert_int_equal(errno, EINVAL);
        assert_int_equal(n, 99);
        assert_true(strlen(e.text) > 0);
    }
    tsl_dep_t d[2];
    size_t n = 99;
    tsl_error_t e;
    errno = 0;
    assert_int_equal(tsl_parse_deps("1,2,3", d, 2, &n, &e), -1);
    assert_int_equal(errno, E2BIG);
}

static void test_array_valid(void **state)
{
    static tsl_array_t a;
    tsl_error_t e;
    assert_int_equal(tsl_parse_array("0-99", &a, &e), 0);
    assert_int_equal(a.n, 100);
    assert_int_equal(a.index[0], 0);
    assert_int_equal(a.index[99], 99);
    assert_int_equal(a.max_running, 0);

    assert_int_equal(tsl_parse_array("5,1,3", &a, &e), 0);
    assert_int_equal(a.n, 3);
    assert_true(a.index[0] == 1 && a.index[1] == 3 && a.index[2] == 5);

    assert_int_equal(tsl_parse_array("0-10:2%3", &a, &e), 0);
    assert_int_equal(a.n, 6);
    assert_int_equal(a.index[5], 10);
    assert_int_equal(a.max_running, 3);

    assert_int_equal(tsl_parse_array("1-3,2-4,7", &a, &e), 0);
    assert_int_equal(a.n, 5);
    assert_int_equal(a.index[4], 7);

    assert_int_equal(tsl_parse_array("0-1000", &a, &e), 0);
    assert_int_equal(a.n, TSL_ARRAY_ELEMENTS_MAX);

    assert_int_equal(tsl_parse_array("42", &a, &e), 0);
    assert_true(a.n == 1 && a.index[0] == 42);
}

static void test_array_invalid(void **state)
{
    static const struct {
        const char *in;
        int err;
    } t[] = {
        {"", EINVAL},     {"a", EINVAL},      {"5-1", EINVAL},   {"0-10:0", EINVAL},
        {"1,", EINVAL},   {"%2", EINVAL},     {"0-9%0", EINVAL}, {"0-9%", EINVAL},
        {"-1", EINVAL},   {"0-9%2x", EINVAL}, {"1 2", EINVAL},   {"0-1001", ERANGE},
        {"5000", ERANGE},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        static tsl_array_t a;
        a.n = 77;
        tsl_error_t e = {{0}};
        errno = 0;
        if (tsl_parse_array(t[i].in, &a, &e) != -1)
            fail_msg("'%s' accepted", t[i].in);
        assert_int_equal(errno, t[i].err);
        assert_int_equal(a.n, 77);
        assert_true(strlen(e.text) > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_valid),  cmocka_unit_test(test_duration_invalid),
        cmocka_unit_test(test_duration_format), cmocka_unit_test(test_deps_valid),
        cmocka_unit_test(test_deps_invalid),    cmocka_unit_test(test_array_valid),
        cmocka_unit_test(test_array_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
