/* test_gpuspeed.c - the value formats of GPU speeds (gpuspeed.h): a speed, a model name,
 * tesseld.conf's gpu-speeds list; good and bad inputs as tables. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/gpuspeed.h"

static void test_speed_parse(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        uint32_t milli;
    } good[] = {{"1", 1000},  {"3", 3000},       {"0.33", 330},
                {"0.001", 1}, {"1000", 1000000}, {"2.5", 2500}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint32_t m = 0;
        assert_int_equal(tessd_speed_parse(good[i].in, &m, NULL), 0);
        assert_int_equal(m, good[i].milli);
    }
    static const char *const bad[] = {"",    "0",   "-1",     "+2", " 1",   "1 ", "abc",   "1e9",
                                      "nan", "inf", "0.0001", "0",  "1001", "3x", "0.0005"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t m = 77;
        tsl_error_t err;
        errno = 0;
        assert_int_equal(tessd_speed_parse(bad[i], &m, &err), -1);
        assert_int_equal(errno, EINVAL);
        assert_int_equal(m, 77);
        assert_non_null(strstr(err.text, "speed"));
    }
}

static void test_model_name(void **state)
{
    (void)state;
    assert_true(tessd_model_name_valid("T4"));
    assert_true(tessd_model_name_valid("NVIDIA A100-SXM4-80GB"));
    static const char *const bad[] = {
        "",          " T4",
        "T4 ",       "A,B",
        "A=B",       "a/b",
        "tab\there", "0123456789012345678901234567890123456789012345678901234567890123"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(tessd_model_name_valid(bad[i]));
    assert_false(tessd_model_name_valid(NULL));
}

static void test_speeds_lookup(void **state)
{
    (void)state;
    uint32_t m = 0;
    assert_int_equal(tessd_speeds_lookup("", "T4", &m, NULL), 0);
    assert_int_equal(tessd_speeds_lookup("A100=3,T4=1", "A100", &m, NULL), 1);
    assert_int_equal(m, 3000);
    assert_int_equal(tessd_speeds_lookup("A100=3,T4=0.5", "T4", &m, NULL), 1);
    assert_int_equal(m, 500);
    assert_int_equal(tessd_speeds_lookup("A100=3,T4=0.5", "H100", &m, NULL), 0);
    assert_int_equal(tessd_speeds_lookup("A100=3,T4=0.5", NULL, &m, NULL), 0);
    assert_int_equal(
        tessd_speeds_lookup("NVIDIA A100-SXM4-80GB=3", "NVIDIA A100-SXM4-80GB", &m, NULL), 1);
    static const char *const bad[] = {"A100",   "A100=",       "=3",           "A100=3,",
                                      "A100=0", "A100=x,T4=1", "T4=1,A100=-2", "A/B=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsl_error_t err;
        assert_int_equal(tessd_speeds_lookup(bad[i], "T4", &m, &err), -1);
        assert_non_null(strstr(err.text, "gpu-speeds"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_speed_parse),
        cmocka_unit_test(test_model_name),
        cmocka_unit_test(test_speeds_lookup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
