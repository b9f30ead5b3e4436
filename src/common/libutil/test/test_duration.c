/* test_duration.c - tsl_parse_seconds and tsl_format_seconds: a table of inputs, failures
 * with their errno. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "libutil/duration.h"

static void test_parse(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int64_t want; /* -1: EINVAL, -2: ERANGE */
    } cases[] = {
        {"0", 0},
        {"45s", 45},
        {"15m", 900},
        {"2h", 7200},
        {"1d", 86400},
        {"1h30m", 5400},
        {"1d2h3m4s", 93784},
        {"0s", 0},
        {"30", -1},
        {"", -1},
        {"m", -1},
        {"5x", -1},
        {"30m1h", -1},
        {"1h1h", -1},
        {"-5s", -1},
        {"1.5h", -1},
        {"30s ", -1},
        {"2d", -2},
        {"99999999999999999999s", -2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = 77;
        tsl_error_t err;
        int rc = tsl_parse_seconds(cases[i].in, 100000, &v, &err);
        if (cases[i].want >= 0) {
            assert_int_equal(rc, 0);
            assert_int_equal(v, cases[i].want);
        } else {
            assert_int_equal(rc, -1);
            assert_int_equal(errno, cases[i].want == -1 ? EINVAL : ERANGE);
            assert_int_equal(v, 77); /* untouched */
            assert_true(strlen(err.text) > 0);
        }
    }
}

static void test_format(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(tsl_format_seconds(0, b, sizeof b), "0");
    assert_string_equal(tsl_format_seconds(45, b, sizeof b), "45s");
    assert_string_equal(tsl_format_seconds(900, b, sizeof b), "15m");
    assert_string_equal(tsl_format_seconds(5400, b, sizeof b), "1h30m");
    assert_string_equal(tsl_format_seconds(93784, b, sizeof b), "1d2h3m4s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
