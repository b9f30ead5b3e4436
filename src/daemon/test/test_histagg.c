/* test_histagg.c - the usage history's pure part (histagg.h), no store: the tiers a plan
 * makes from an interval and a retention (bad ones refused); which tier answers a range;
 * ranges as people write them; the columns a client asks for (?fields=); the downsampling of 10 s
 * samples into 1-minute and 10-minute means (a row only once its interval has ended, one per
 * series, none made up for a series that had no sample); an idle GPU's samples never averaged in as
 * 0 % busy, while a job at 0 % is; the clock going back closes the open interval. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/histagg.h"

static thist_plan_t plan_default(void)
{
    thist_plan_t p;
    assert_int_equal(thist_plan(10, 8 * 86400, &p, NULL), 0);
    return p;
}

static void test_plan(void **state)
{
    thist_plan_t p = plan_default();
    assert_int_equal(p.tier[0].step, 10);
    assert_int_equal(p.tier[0].keep, 86400);
    assert_int_equal(p.tier[1].step, 60);
    assert_int_equal(p.tier[1].keep, 7 * 86400);
    assert_int_equal(p.tier[2].step, 600);
    assert_int_equal(p.tier[2].keep, 8 * 86400);
    /* A short retention bounds every tier. */
    assert_int_equal(thist_plan(5, 7200, &p, NULL), 0);
    assert_int_equal(p.tier[0].keep, 7200);
    assert_int_equal(p.tier[1].keep, 7200);
    assert_int_equal(p.tier[2].keep, 7200);
    /* Refused: an interval that does not divide a minute, 0, above a minute; a retention
     * below an hour or above the maximum. */
    static const struct {
        int interval;
        int64_t retention;
    } bad[] = {{7, 86400},
               {0, 86400},
               {120, 86400},
               {-10, 86400},
               {10, 3599},
               {10, 0},
               {10, (int64_t)THIST_RETENTION_MAX + 1}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsl_error_t err;
        errno = 0;
        assert_int_equal(thist_plan(bad[i].interval, bad[i].retention, &p, &err), -1);
        assert_int_equal(errno, EINVAL);
        assert_true(strlen(err.text) > 0);
    }
}

static void test_pick(void **state)
{
    thist_plan_t p = plan_default();
    assert_int_equal(thist_pick(&p, 3600), 0);       /* the hour at 10 s: 360 points */
    assert_int_equal(thist_pick(&p, 4 * 3600), 0);   /* 1,440 points */
    assert_int_equal(thist_pick(&p, 86400), 1);      /* the day in minutes */
    assert_int_equal(thist_pick(&p, 7 * 86400), 2);  /* the week in 10 minutes */
    assert_int_equal(thist_pick(&p, 30 * 86400), 2); /* beyond: the coarsest */
    /* A 1 s interval: the hour would be 3,600 points, so minutes answer it. */
    assert_int_equal(thist_plan(1, 86400, &p, NULL), 0);
    assert_int_equal(thist_pick(&p, 600), 0);
    assert_int_equal(thist_pick(&p, 3600), 1);
}

static void test_parse_range(void **state)
{
    static const struct {
        const char *s;
        int64_t v;
    } good[] = {{"1h", 3600},  {"1d", 86400},   {"1w", 604800}, {"2w", 1209600},
                {"90m", 5400}, {"1h30m", 5400}, {"10s", 10}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t v = -1;
        assert_int_equal(thist_parse_range(good[i].s, &v, NULL), 0);
        assert_int_equal(v, good[i].v);
    }
    static const char *const bad[] = {"", "0", "0w", "w", "1x", "-1h", "3600", "100w", "1ww"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 42;
        tsl_error_t err;
        assert_int_equal(thist_parse_range(bad[i], &v, &err), -1);
        assert_true(errno == EINVAL || errno == ERANGE);
        assert_int_equal(v, 42);
    }
}

static void test_parse_fields(void **state)
{
    unsigned m = 0;
    /* "t" always comes; a name twice is once; every name alone. */
    assert_int_equal(thist_parse_fields("busy,milli", &m, NULL), 0);
    assert_int_equal(m, 1u << THIST_F_T | 1u << THIST_F_BUSY | 1u << THIST_F_MILLI);
    assert_int_equal(thist_parse_fields("milli,t,milli", &m, NULL), 0);
    assert_int_equal(m, 1u << THIST_F_T | 1u << THIST_F_MILLI);
    for (int i = 0; i < THIST_NFIELDS; i++) {
        assert_int_equal(thist_parse_fields(thist_field_names[i], &m, NULL), 0);
        assert_int_equal(m, 1u << THIST_F_T | 1u << i);
    }
    assert_int_equal(thist_parse_fields("t,samples,idle,busy,busy_max,mem_used,mem_alloc,milli,"
                                        "running,pending",
                                        &m, NULL),
                     0);
    assert_int_equal(m, THIST_FIELDS_ALL);
    /* Refused, the set untouched: empty lists and names, unknown names, another case, spaces,
     * a prefix of a name. */
    static const char *const bad[] = {"",     ",",           "t,",     ",t",  "t,,busy",
                                      "Busy", "busy ,milli", " busy",  "bus", "busyx",
                                      "gpu",  "name",        "t;busy", "mem", "milli,nope"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsl_error_t err;
        m = 42;
        assert_int_equal(thist_parse_fields(bad[i], &m, &err), -1);
        assert_int_equal(errno, EINVAL);
        assert_int_equal(m, 42);
        /* One line that lists the columns there are. */
        assert_null(strchr(err.text, '\n'));
        assert_non_null(strstr(err.text, "mem_used"));
    }
    /* The unknown name is in the line, as printable ASCII, and cut at 32 bytes. */
    tsl_error_t err;
    assert_int_equal(thist_parse_fields("t,nope", &m, &err), -1);
    assert_non_null(strstr(err.text, "unknown column 'nope'"));
    assert_int_equal(thist_parse_fields("t,a\x01\xc3\xa9"
                                        "b",
                                        &m, &err),
                     -1);
    assert_non_null(strstr(err.text, "'a???b'"));
    assert_int_equal(thist_parse_fields("0123456789012345678901234567890123456789", &m, &err), -1);
    assert_non_null(strstr(err.text, "'01234567890123456789012345678901'"));
}

/* Sample of GPU name at t: busy (NAN: none), idle, memory used. */
static tstore_hist_t gpu(const char *name, int64_t t, double busy, int idle, double used)
{
    tstore_hist_t s;
    thist_sample_init(&s, TSTORE_HIST_GPU, name, t, 10);
    s.busy = s.busy_max = busy;
    s.idle = (uint32_t)idle;
    s.mem_used = used;
    s.running = idle ? 0 : 1;
    return s;
}

static const tstore_hist_t *find(const thist_rows_t *r, int step, const char *name, int64_t t)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].step == step && r->v[i].t == t && strcmp(r->v[i].name, name) == 0)
            return &r->v[i];
    return NULL;
}

static size_t count_step(const thist_rows_t *r, int step)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->v[i].step == step;
    return n;
}

static void test_downsample_minute(void **state)
{
    thist_plan_t p = plan_default();
    thist_agg_t *a = thist_agg_new(&p);
    assert_non_null(a);
    thist_rows_t out = {0};
    /* Minute 600..660: GPU "a" busy 10, 20, ..., 60 (mean 35, max 60), memory 100..600;
     * GPU "b" idle the first three samples, then a job at 0 %. */
    for (int i = 0; i < 6; i++) {
        int64_t t = 600 + 10 * i;
        tstore_hist_t s[2] = {gpu("a", t, 10.0 * (i + 1), 0, 100.0 * (i + 1)),
                              gpu("b", t, i < 3 ? NAN : 0.0, i < 3, 0)};
        out.n = 0;
        assert_int_equal(thist_agg_feed(a, t, s, 2, &out), 0);
        /* The raw samples come back as tier 0 rows; no minute has ended yet. */
        assert_int_equal(out.n, 2);
        assert_int_equal(count_step(&out, 10), 2);
    }
    assert_int_equal(thist_agg_open(a), 4); /* two series, two coarse tiers */
    /* The next minute's first sample closes the minute 600 (not the 10-minute one). */
    out.n = 0;
    tstore_hist_t s[2] = {gpu("a", 660, 50, 0, 0), gpu("b", 660, NAN, 1, 0)};
    assert_int_equal(thist_agg_feed(a, 660, s, 2, &out), 0);
    assert_int_equal(count_step(&out, 60), 2);
    assert_int_equal(count_step(&out, 600), 0);
    const tstore_hist_t *ra = find(&out, 60, "a", 600);
    assert_non_null(ra);
    assert_int_equal(ra->n, 6);
    assert_int_equal(ra->idle, 0);
    assert_true(fabs(ra->busy - 35.0) < 1e-9);
    assert_true(fabs(ra->busy_max - 60.0) < 1e-9);
    assert_true(fabs(ra->mem_used - 350.0) < 1e-9);
    assert_true(fabs(ra->running - 1.0) < 1e-9);
    /* b: three idle samples and three at 0 %: busy is the mean over the three with a job
     * (0, a measured figure), and half the minute was idle. */
    const tstore_hist_t *rb = find(&out, 60, "b", 600);
    assert_non_null(rb);
    assert_int_equal(rb->n, 6);
    assert_int_equal(rb->idle, 3);
    assert_false(isnan(rb->busy));
    assert_true(fabs(rb->busy) < 1e-9);
    assert_true(fabs(rb->running - 0.5) < 1e-9);
    thist_rows_free(&out);
    thist_agg_free(a);
}

static void test_idle_all_interval(void **state)
{
    thist_plan_t p = plan_default();
    thist_agg_t *a = thist_agg_new(&p);
    thist_rows_t out = {0};
    for (int64_t t = 0; t <= 600; t += 10) {
        tstore_hist_t s = gpu("idle", t, NAN, 1, 0);
        out.n = 0;
        assert_int_equal(thist_agg_feed(a, t, &s, 1, &out), 0);
    }
    /* At 600 both the last minute and the 10-minute interval close: idle throughout, busy
     * none (not 0). */
    const tstore_hist_t *m = find(&out, 60, "idle", 540);
    const tstore_hist_t *ten = find(&out, 600, "idle", 0);
    assert_non_null(m);
    assert_non_null(ten);
    assert_int_equal(ten->n, 60);
    assert_int_equal(ten->idle, 60);
    assert_true(isnan(ten->busy));
    assert_true(isnan(ten->busy_max));
    assert_true(isnan(m->busy));
    thist_rows_free(&out);
    thist_agg_free(a);
}

static void test_gone_series_and_gaps(void **state)
{
    thist_plan_t p = plan_default();
    thist_agg_t *a = thist_agg_new(&p);
    thist_rows_t out = {0};
    /* A user with jobs for two samples, then none: their minute closes once, with 2 samples;
     * nothing is written for them after. */
    tstore_hist_t u;
    thist_sample_init(&u, TSTORE_HIST_USER, "alice", 0, 10);
    u.running = 2;
    for (int64_t t = 0; t <= 10; t += 10) {
        u.t = t;
        assert_int_equal(thist_agg_feed(a, t, &u, 1, &out), 0);
    }
    out.n = 0;
    /* tesseld was down from 20 to 3,000: the first sample after closes both intervals. */
    assert_int_equal(thist_agg_feed(a, 3000, NULL, 0, &out), 0);
    assert_int_equal(out.n, 2);
    const tstore_hist_t *m = find(&out, 60, "alice", 0);
    assert_non_null(m);
    assert_int_equal(m->n, 2);
    assert_true(fabs(m->running - 2.0) < 1e-9);
    assert_int_equal(m->scope, TSTORE_HIST_USER);
    assert_non_null(find(&out, 600, "alice", 0));
    assert_int_equal(thist_agg_open(a), 0);
    out.n = 0;
    assert_int_equal(thist_agg_feed(a, 3600, NULL, 0, &out), 0);
    assert_int_equal(out.n, 0);
    thist_rows_free(&out);
    thist_agg_free(a);
}

static void test_clock_back(void **state)
{
    thist_plan_t p = plan_default();
    thist_agg_t *a = thist_agg_new(&p);
    thist_rows_t out = {0};
    tstore_hist_t s = gpu("a", 1200, 40, 0, 0);
    assert_int_equal(thist_agg_feed(a, 1200, &s, 1, &out), 0);
    out.n = 0;
    /* The wall clock is set back an hour: the open intervals end (written as they are), new
     * ones begin at the earlier time. */
    s = gpu("a", 1200 - 3600 + 600, 80, 0, 0); /* t = -1800 */
    s.t = -1800;
    assert_int_equal(thist_agg_feed(a, -1800, &s, 1, &out), 0);
    const tstore_hist_t *m = find(&out, 60, "a", 1200);
    assert_non_null(m);
    assert_int_equal(m->n, 1);
    assert_true(fabs(m->busy - 40.0) < 1e-9);
    assert_non_null(find(&out, 600, "a", 1200));
    assert_int_equal(thist_agg_open(a), 2);
    thist_rows_free(&out);
    thist_agg_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_parse_range),
        cmocka_unit_test(test_parse_fields),
        cmocka_unit_test(test_downsample_minute),
        cmocka_unit_test(test_idle_all_interval),
        cmocka_unit_test(test_gone_series_and_gaps),
        cmocka_unit_test(test_clock_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
