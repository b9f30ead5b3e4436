/* test_size.c - tsl_parse_size / tsl_format_size against a table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "libutil/size.h"

static void test_valid(void **state)
{
    static const struct {
        const char *in;
        uint64_t want;
    } t[] = {
        {"0", 0},
        {"1", 1},
        {"1073741824", 1073741824ull},
        {"1K", 1024},
        {"1k", 1024},
        {"6G", 6ull << 30},
        {"6GiB", 6ull << 30},
        {"6GB", 6ull << 30},
        {"512M", 512ull << 20},
        {"1.5G", 3ull << 29},
        {"0.25K", 256},
        {"2T", 2ull << 40},
        {"100B", 100},
        {"18446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint64_t v = 7;
        tsl_error_t e = {{0}};
        assert_int_equal(tsl_parse_size(t[i].in, &v, &e), 0);
        assert_true(v == t[i].want);
    }
}

static void test_invalid(void **state)
{
    static const struct {
        const char *in;
        int err;
    } t[] = {
        {"", EINVAL},          {"G", EINVAL},   {"-1G", EINVAL},   {"12Q", EINVAL},
        {"1G2", EINVAL},       {" 1G", EINVAL}, {"1 G", EINVAL},   {"1.", EINVAL},
        {"1.5", EINVAL},       {"abc", EINVAL}, {"1GiBs", EINVAL}, {"18446744073709551616", ERANGE},
        {"16777216T", ERANGE},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        uint64_t v = 7;
        tsl_error_t e = {{0}};
        errno = 0;
        assert_int_equal(tsl_parse_size(t[i].in, &v, &e), -1);
        assert_int_equal(errno, t[i].err);
        assert_true(v == 7);
        assert_true(strlen(e.text) > 0);
    }
    assert_int_equal(tsl_parse_size(NULL, NULL, NULL), -1);
}

/* Sizes people type need a unit: a bare number is refused with the unit it probably meant. */
static void test_unit_required(void **state)
{
    static const char *const bare[] = {"8", "1073741824", "1.5", "00.5"};
    for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++) {
        uint64_t v = 7;
        tsl_error_t e = {{0}};
        errno = 0;
        assert_int_equal(tsl_parse_size_unit(bare[i], &v, &e), -1);
        assert_int_equal(errno, EINVAL);
        assert_true(v == 7);
        char want[64];
        snprintf(want, sizeof want, "e.g. %sG", bare[i]);
        assert_non_null(strstr(e.text, want));
    }
    static const struct {
        const char *in;
        uint64_t want;
    } ok[] = {
        {"8G", 8ull << 30}, {"8B", 8}, {"0", 0}, {"512M", 512ull << 20}, {"1.5g", 3ull << 29}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 7;
        assert_int_equal(tsl_parse_size_unit(ok[i].in, &v, NULL), 0);
        assert_true(v == ok[i].want);
    }
    /* Other errors are tsl_parse_size's. */
    uint64_t v = 7;
    tsl_error_t e = {{0}};
    assert_int_equal(tsl_parse_size_unit("12Q", &v, &e), -1);
    assert_non_null(strstr(e.text, "unknown unit"));
    assert_int_equal(tsl_parse_size_unit("", &v, &e), -1);
    assert_int_equal(tsl_parse_size_unit(NULL, &v, NULL), -1);
    assert_true(v == 7);
}

static void test_format(void **state)
{
    char b[32];
    assert_string_equal(tsl_format_size(100, b, sizeof b), "100 B");
    assert_string_equal(tsl_format_size(6ull << 30, b, sizeof b), "6.00 GiB");
    assert_string_equal(tsl_format_size(512ull << 20, b, sizeof b), "512 MiB");
    assert_string_equal(tsl_format_size(24ull << 30, b, sizeof b), "24.0 GiB");
}

static void test_format_amount(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(tsl_format_amount(TSL_RES_GPU, 1500, b, sizeof b), "1.5 GPU");
    assert_string_equal(tsl_format_amount(TSL_RES_GPU, 2000, b, sizeof b), "2 GPU");
    assert_string_equal(tsl_format_amount(TSL_RES_GPU, 125, b, sizeof b), "0.125 GPU");
    assert_string_equal(tsl_format_amount(TSL_RES_GPU, 0, b, sizeof b), "0 GPU");
    assert_string_equal(tsl_format_amount(TSL_RES_CPU, 8000, b, sizeof b), "8 CPU");
    assert_string_equal(tsl_format_amount(TSL_RES_GPU_MEM, 40ull << 30, b, sizeof b), "40.0 GiB");
    assert_string_equal(tsl_format_amount(TSL_RES_MEM, 512, b, sizeof b), "512 B");
    assert_string_equal(tsl_format_amount(TSL_RES_MEM, UINT64_MAX, b, sizeof b), "none");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_amount), cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),       cmocka_unit_test(test_unit_required),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests_name("libutil/size", tests, NULL, NULL);
}
