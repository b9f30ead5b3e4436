/* test_prom.c - histograms and the Prometheus text (prom.h): bucketing at and around the bounds,
 * cumulative buckets with +Inf last and _count equal to it, the sum, bad bounds refused, a
 * zeroed histogram, the bundled bucket sets, label and help escaping, number formats, text far
 * beyond the first buffer, concurrent observers. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "libutil/prom.h"

static char *text(tsl_prom_t *p)
{
    size_t len = 0;
    char *t = tsl_prom_take(p, &len);
    assert_non_null(t);
    assert_int_equal(strlen(t), len);
    return t;
}

static void test_buckets(void **state)
{
    static const double le[] = {1, 5, 60};
    tsl_hist_t h;
    assert_int_equal(tsl_hist_init(&h, le, 3), 0);
    /* A value equal to a bound counts in that bound's bucket (le: less or equal). */
    const double v[] = {0, 0.5, 1, 1.000001, 5, 59.9, 60, 61, 86400, -3, NAN};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        tsl_hist_observe(&h, v[i]);
    tsl_prom_t p = {0};
    const tsl_label_t l[] = {{"queue", "gpu"}};
    tsl_prom_family(&p, "x_seconds", "histogram", "Time.");
    tsl_prom_hist(&p, "x_seconds", l, 1, &h);
    char *t = text(&p);
    assert_string_equal(t, "# HELP x_seconds Time.\n"
                           "# TYPE x_seconds histogram\n"
                           "x_seconds_bucket{queue=\"gpu\",le=\"1\"} 5\n"
                           "x_seconds_bucket{queue=\"gpu\",le=\"5\"} 7\n"
                           "x_seconds_bucket{queue=\"gpu\",le=\"60\"} 9\n"
                           "x_seconds_bucket{queue=\"gpu\",le=\"+Inf\"} 11\n"
                           "x_seconds_sum{queue=\"gpu\"} 86588.400001\n"
                           "x_seconds_count{queue=\"gpu\"} 11\n");
    free(t);
}

static void test_bad_bounds(void **state)
{
    tsl_hist_t h;
    static const double dec[] = {1, 1};
    static const double inf[] = {1, INFINITY};
    double many[TSL_HIST_MAX + 1];
    for (size_t i = 0; i <= TSL_HIST_MAX; i++)
        many[i] = (double)i + 1;
    errno = 0;
    assert_int_equal(tsl_hist_init(&h, dec, 2), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tsl_hist_init(&h, inf, 2), -1);
    assert_int_equal(tsl_hist_init(&h, many, TSL_HIST_MAX + 1), -1);
    assert_int_equal(tsl_hist_init(&h, many, TSL_HIST_MAX), 0);
    assert_int_equal(tsl_hist_init(&h, NULL, 0), 0);
}

/* A zeroed histogram (a struct nobody initialised) is +Inf alone, and still well formed. */
static void test_zeroed(void **state)
{
    tsl_hist_t h;
    memset(&h, 0, sizeof h);
    tsl_hist_observe(&h, 2.5);
    tsl_prom_t p = {0};
    tsl_prom_hist(&p, "y", NULL, 0, &h);
    char *t = text(&p);
    assert_string_equal(t, "y_bucket{le=\"+Inf\"} 1\ny_sum 2.500000\ny_count 1\n");
    free(t);
}

/* The bundled sets: valid, increasing, seconds to a week and 100 us to 2.5 s, bounds written
 * in their shortest form. */
static void test_bundled(void **state)
{
    tsl_hist_t h;
    assert_int_equal(tsl_hist_init(&h, tsl_hist_seconds_to_days, tsl_hist_seconds_to_days_n), 0);
    assert_true(tsl_hist_seconds_to_days[0] == 1);
    assert_true(tsl_hist_seconds_to_days[tsl_hist_seconds_to_days_n - 1] == 7 * 86400);
    assert_int_equal(tsl_hist_init(&h, tsl_hist_sub_second, tsl_hist_sub_second_n), 0);
    assert_true(tsl_hist_sub_second[0] == 0.0001);
    tsl_hist_observe(&h, 0.0003);
    tsl_prom_t p = {0};
    tsl_prom_hist(&p, "z", NULL, 0, &h);
    char *t = text(&p);
    assert_non_null(strstr(t, "z_bucket{le=\"0.0001\"} 0\nz_bucket{le=\"0.00025\"} 0\n"
                              "z_bucket{le=\"0.0005\"} 1\n"));
    assert_non_null(strstr(t, "z_bucket{le=\"2.5\"} 1\nz_bucket{le=\"+Inf\"} 1\n"));
    assert_non_null(strstr(t, "z_sum 0.000300\n"));
    free(t);
}

static void test_escaping(void **state)
{
    tsl_prom_t p = {0};
    tsl_prom_family(&p, "a_bytes", "gauge", "Back\\slash and\nnewline, \"quotes\" kept.");
    const tsl_label_t l[] = {{"user", "a\"b\\c\nd"}, {"queue", NULL}};
    tsl_prom_u64(&p, "a_bytes", l, 2, UINT64_MAX);
    tsl_prom_i64(&p, "a_bytes", NULL, 0, -7);
    tsl_prom_f64(&p, "a_bytes", l, 1, 0.1);
    tsl_prom_f64(&p, "a_bytes", NULL, 0, 1.0 / 3);
    tsl_prom_f64(&p, "a_bytes", NULL, 0, -INFINITY);
    tsl_prom_f64(&p, "a_bytes", NULL, 0, NAN);
    char *t = text(&p);
    assert_string_equal(t, "# HELP a_bytes Back\\\\slash and\\nnewline, \"quotes\" kept.\n"
                           "# TYPE a_bytes gauge\n"
                           "a_bytes{user=\"a\\\"b\\\\c\\nd\",queue=\"\"} 18446744073709551615\n"
                           "a_bytes -7\n"
                           "a_bytes{user=\"a\\\"b\\\\c\\nd\"} 0.1\n"
                           "a_bytes 0.33333333333333331\n"
                           "a_bytes -Inf\n"
                           "a_bytes NaN\n");
    free(t);
}

/* 10,000 samples: the text grows far past its first 4 KiB, every line intact. */
static void test_large(void **state)
{
    tsl_prom_t p = {0};
    for (int i = 0; i < 10000; i++) {
        char job[16];
        snprintf(job, sizeof job, "%d", i);
        const tsl_label_t l[] = {{"job", job}};
        tsl_prom_u64(&p, "s", l, 1, (uint64_t)i * 3);
    }
    char *t = text(&p);
    assert_non_null(strstr(t, "s{job=\"0\"} 0\ns{job=\"1\"} 3\n"));
    assert_non_null(strstr(t, "\ns{job=\"9999\"} 29997\n"));
    size_t lines = 0;
    for (const char *c = t; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 10000);
    free(t);
}

/* An empty builder gives NULL (nothing to serve), as does one whose allocation failed. */
static void test_take_empty(void **state)
{
    tsl_prom_t p = {0};
    assert_null(tsl_prom_take(&p, NULL));
    tsl_prom_printf(&p, "x\n");
    p.failed = true;
    assert_null(tsl_prom_take(&p, NULL));
    assert_null(p.buf);
}

static tsl_hist_t g_h;

static void *observer(void *arg)
{
    for (int i = 0; i < 100000; i++)
        tsl_hist_observe(&g_h, (i % 2) ? 2 : 0.5);
    return NULL;
}

/* Four threads observing at once lose no count and no part of the sum. */
static void test_threads(void **state)
{
    static const double le[] = {1};
    assert_int_equal(tsl_hist_init(&g_h, le, 1), 0);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, observer, NULL), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&g_h.bucket[0]), 200000);
    assert_int_equal(atomic_load(&g_h.bucket[1]), 200000);
    assert_int_equal(atomic_load(&g_h.sum_micro), 500000ull * 1000000u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buckets),    cmocka_unit_test(test_bad_bounds),
        cmocka_unit_test(test_zeroed),     cmocka_unit_test(test_bundled),
        cmocka_unit_test(test_escaping),   cmocka_unit_test(test_large),
        cmocka_unit_test(test_take_empty), cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
