/* test_when.c - tsl_parse_when: durations, RFC 3339 and local times, and what is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "libutil/when.h"

#define NOW 1795676400 /* 2026-11-26T07:00:00Z */

static void test_valid(void **state)
{
    static const struct {
        const char *in;
        int64_t want;
    } t[] = {
        {"10m", NOW - 600},
        {"2h", NOW - 7200},
        {"1h30m", NOW - 5400},
        {"90s", NOW - 90},
        {"1d", NOW - 86400},
        {"0s", NOW},
        {"2026-11-26T07:00:00Z", NOW},
        {"2026-11-26T06:59:59.75Z", NOW - 1},
        {"2026-11-26T09:00:00+02:00", NOW},
        {"2026-11-26T02:30:00-04:30", NOW},
        /* Local times, in the time zone the test sets (UTC). */
        {"2026-11-26 07:00:00", NOW},
        {"2026-11-26T07:00:00", NOW},
        {"2026-11-26", NOW - 7 * 3600},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t v = 7;
        tsl_error_t e = {{0}};
        if (tsl_parse_when(t[i].in, NOW, &v, &e) != 0)
            fail_msg("'%s': %s", t[i].in, e.text);
        if (v != t[i].want)
            fail_msg("'%s': %lld, not %lld", t[i].in, (long long)v, (long long)t[i].want);
    }
}

static void test_invalid(void **state)
{
    static const char *const bad[] = {
        "",
        "10",
        "10x",
        "m",
        "-10m",
        "10m5",
        "2026-13-01",
        "2026-11-26X",
        "2026-11-26 7:00:00",
        "2026-11-26T07:00:00+2",
        "2026-11-26T07:00:00+02:00x",
        "2026-11-26T25:00:00Z",
        "999999999999d",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 7;
        tsl_error_t e = {{0}};
        errno = 0;
        if (tsl_parse_when(bad[i], NOW, &v, &e) != -1)
            fail_msg("'%s' accepted", bad[i]);
        assert_true(errno == EINVAL || errno == ERANGE);
        assert_true(v == 7);
        assert_true(strlen(e.text) > 0);
    }
    /* A bare number suggests a unit. */
    tsl_error_t e;
    int64_t v;
    assert_int_equal(tsl_parse_when("10", NOW, &v, &e), -1);
    assert_non_null(strstr(e.text, "10m"));
    assert_int_equal(tsl_parse_when(NULL, NOW, &v, NULL), -1);
}

int main(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests_name("libutil/when", tests, NULL, NULL);
}
