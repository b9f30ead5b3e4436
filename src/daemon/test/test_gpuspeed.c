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

/* Two services: "a" with A100 and T4 replicas at 0.25 (A100 300/s and 280/s, T4 100/s), "b"
 * with both at 0.5 (A100 400/s, T4 100/s) and a lone H100 at 1.0 (nothing to compare it with).
 * A100 over T4: 290/100 = 2.9 in a, 4 in b; geometric mean sqrt(11.6) = 3.406 -> 3406. */
static void test_speeds_from_rates(void **state)
{
    (void)state;
    const tessd_rate_obs_t obs[] = {
        {1, "A100", 250, 300}, {1, "A100", 250, 280},  {1, "T4", 250, 100}, {2, "A100", 500, 400},
        {2, "T4", 500, 100},   {2, "H100", 1000, 900}, {2, "T4", 500, 0},   {1, NULL, 250, 50},
    };
    size_t n = sizeof obs / sizeof obs[0], m = 0;
    tessd_speed_est_t out[8];
    assert_int_equal(tessd_speeds_from_rates(obs, n, "T4", 1000, out, 8, &m, NULL), 0);
    assert_int_equal(m, 2);
    assert_string_equal(out[0].model, "T4");
    assert_int_equal(out[0].speed, 1000);
    assert_int_equal(out[0].cells, 2);
    assert_string_equal(out[1].model, "A100");
    assert_int_equal(out[1].speed, 3406);
    assert_int_equal(out[1].cells, 2);
    /* The reference's own speed scales the others; A100 as the reference gives T4 its inverse. */
    assert_int_equal(tessd_speeds_from_rates(obs, n, "T4", 500, out, 8, &m, NULL), 0);
    assert_int_equal(out[1].speed, 1703);
    assert_int_equal(tessd_speeds_from_rates(obs, n, "A100", 1000, out, 8, &m, NULL), 0);
    assert_string_equal(out[1].model, "T4");
    assert_int_equal(out[1].speed, 294); /* 1 / 3.406 */
    /* Nothing to compare with: an error that says so. */
    tsl_error_t err;
    assert_int_equal(tessd_speeds_from_rates(obs, n, "H100", 1000, out, 8, &m, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(m, 0);
    assert_non_null(strstr(err.text, "H100"));
    assert_int_equal(tessd_speeds_from_rates(obs, 0, "T4", 1000, out, 8, &m, &err), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_speed_parse),
        cmocka_unit_test(test_model_name),
        cmocka_unit_test(test_speeds_lookup),
        cmocka_unit_test(test_speeds_from_rates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
