/* test_histwrite.c - the usage history's write path (histwrite.c) against a real store: the
 * generation of a tier (thist_writer_t.gen, which GET /v1/history's cache of answers checks)
 * moves exactly when that tier's rows may have changed: every write for tier 0 (its rows are
 * the samples), at the end of a minute for the 1-minute tier, at the end of ten minutes for
 * the 10-minute tier, and when pruning deleted rows; never otherwise, so that a kept answer
 * is neither stale nor thrown away for nothing. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/histagg.h"
#include "daemon/test/tmpdir.h"

typedef struct {
    char dir[96];
    tstore_t *st;
    thist_writer_t *w;
} fix_t;

static int setup(void **state)
{
    static fix_t f;
    memset(&f, 0, sizeof f);
    assert_int_equal(test_tmpdir(f.dir, sizeof f.dir, "histwrite"), 0);
    char path[160];
    snprintf(path, sizeof path, "%s/tessel.db", f.dir);
    tsl_error_t err;
    f.st = tstore_open(path, &err);
    assert_non_null(f.st);
    thist_plan_t p;
    /* 10 s samples kept a day, 1-minute means a week, 10-minute means 8 days. */
    assert_int_equal(thist_plan(10, 8 * 86400, &p, NULL), 0);
    assert_int_equal(p.tier[0].step, 10);
    assert_int_equal(p.tier[1].step, 60);
    assert_int_equal(p.tier[2].step, 600);
    f.w = thist_writer_new(&p);
    assert_non_null(f.w);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fix_t *f = *state;
    thist_writer_free(f->w);
    tstore_close(f->st);
    assert_int_equal(test_tmpdir_remove(f->dir), 0);
    return 0;
}

static void write_at(fix_t *f, int64_t t)
{
    tstore_hist_t s;
    thist_sample_init(&s, TSTORE_HIST_GPU, "GPU-a", t, 10);
    s.busy = s.busy_max = 50;
    s.running = 1;
    tsl_error_t err;
    assert_int_equal(thist_write(f->w, f->st, t, &s, 1, &err), 0);
}

static void test_generations(void **state)
{
    fix_t *f = *state;
    const int64_t t0 = 1000000200; /* a multiple of 600: a 10-minute interval starts */
    uint64_t g[THIST_NTIERS] = {0};
    /* The first write also prunes (nothing to delete: no generation moves for it). */
    write_at(f, t0);
    assert_int_equal(f->w->gen[0], 1);
    assert_int_equal(f->w->gen[1], 0);
    assert_int_equal(f->w->gen[2], 0);
    /* The rest of the first minute: tier 0 only. */
    for (int i = 1; i < 6; i++) {
        write_at(f, t0 + 10 * i);
        assert_int_equal(f->w->gen[0], (uint64_t)i + 1);
        assert_int_equal(f->w->gen[1], 0);
        assert_int_equal(f->w->gen[2], 0);
    }
    /* The next minute's first sample closes the first minute: tier 1 moves, tier 2 not. */
    write_at(f, t0 + 60);
    assert_int_equal(f->w->gen[1], 1);
    assert_int_equal(f->w->gen[2], 0);
    memcpy(g, f->w->gen, sizeof g);
    /* Up to the end of the ten minutes: one tier-1 move per minute, tier 2 still. */
    for (int64_t t = t0 + 70; t < t0 + 600; t += 10)
        write_at(f, t);
    assert_int_equal(f->w->gen[1], g[1] + 8);
    assert_int_equal(f->w->gen[2], 0);
    /* The 10-minute interval ends: its mean is written, tier 2 moves once. */
    write_at(f, t0 + 600);
    assert_int_equal(f->w->gen[2], 1);
    /* Two days later the 10 s rows (kept a day) are pruned: tier 0 moves for the prune as
     * well as for the sample's own row. */
    memcpy(g, f->w->gen, sizeof g);
    write_at(f, t0 + 2 * 86400);
    assert_true(f->w->gen[0] >= g[0] + 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_generations, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
