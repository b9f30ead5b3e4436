/* test_queue_rules.c - the queue rules that tesseld relies on libsched for: reclaim from a
 * queue that governs nothing (tesseld's default queue), the queue checks the API asks for
 * before it stores an edit, the amounts formatter, the per-queue reservation delay and the
 * per-queue placement (spread or pack).
 *
 * Clusters of A100s (queue_fixture.h); figures worked out by hand in the comments.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "queue_fixture.h"

static int has_victim(const struct fx *f, uint64_t id)
{
    for (size_t i = 0; i < f->d.nvictims; i++)
        if (f->d.victims[i].job == id)
            return 1;
    return 0;
}

/* A queue with every resource TSCHED_UNLIMITED (not governed), as tesseld's default queue. */
static int ungoverned_queue(struct fx *f, const char *name)
{
    tsched_queue_spec_t q;
    memset(&q, 0, sizeof q);
    q.name = name;
    q.guarantee =
        (tsched_res_t){TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    q.limit = q.guarantee;
    int i = tsched_queue_add(f->s, &q, NULL);
    assert_true(i >= 0);
    return i;
}

/* 1 node x 4 GPUs.  "default" governs nothing and starts 4 one-GPU training jobs (0-3, at
 * t = 0..3).  "team" is guaranteed 2 GPUs and asks for 2 at t = 1000: it is owed (0 + 2 <= 2),
 * and everything the default queue runs is borrowed, so its two youngest (3, 2) are the
 * victims.  Before the fix the default queue's jobs counted as guaranteed: no victim. */
static void test_ungoverned_queue_is_reclaimed(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int def = ungoverned_queue(&f, "default");
    int team = fx_queue(&f, "team", NULL, 2000, 0, 1);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(fx_submit(&f, (uint64_t)i, def, TSCHED_CLASS_TRAINING, 0, i, 1, 1000), 0);
        fx_cycle(&f, i);
        assert_int_equal(f.d.nstarts, 1);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(
            fx_submit(&f, 10 + (uint64_t)i, team, TSCHED_CLASS_TRAINING, 0, 1000, 1, 1000), 0);
    assert_int_equal(tsched_queue_satisfied(f.s, team), 0);
    fx_cycle(&f, 1000);
    assert_int_equal(f.d.nstarts, 0);
    assert_int_equal(f.d.nvictims, 2);
    assert_true(has_victim(&f, 3));
    assert_true(has_victim(&f, 2));
    fx_stop_victims(&f, 1001);
    fx_cycle(&f, 1001);
    assert_int_equal(f.d.nstarts, 2);
    assert_true(fx_started(&f, 10) && fx_started(&f, 11));
    assert_int_equal(fx_used(&f, team, 1001), 2000);
    assert_int_equal(fx_used(&f, def, 1001), 2000);
    assert_int_equal(tsched_queue_satisfied(f.s, team), 1);
    fx_fini(&f);
}

/* The other way round: the default queue is given a guarantee of 1 GPU (as `tessel queues set
 * default --guarantee gpu=1` does) while "research", which governs nothing, borrows all 4
 * GPUs.  A one-GPU job of the default queue is owed and gets its GPU back from research's
 * youngest job. */
static void test_default_queue_gets_its_guarantee_back(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int def = fx_queue(&f, "default", NULL, 1000, 0, 1);
    int res = ungoverned_queue(&f, "research");
    for (int i = 0; i < 4; i++) {
        assert_int_equal(fx_submit(&f, (uint64_t)i, res, TSCHED_CLASS_TRAINING, 0, i, 1, 1000), 0);
        fx_cycle(&f, i);
    }
    assert_int_equal(fx_used(&f, res, 4), 4000);
    assert_int_equal(fx_submit(&f, 20, def, TSCHED_CLASS_TRAINING, 0, 500, 1, 1000), 0);
    fx_cycle(&f, 500);
    assert_int_equal(f.d.nvictims, 1);
    assert_int_equal(f.d.victims[0].job, 3);
    assert_int_equal(f.d.victims[0].for_job, 20);
    fx_stop_victims(&f, 501);
    fx_cycle(&f, 501);
    assert_int_equal(f.d.nstarts, 1);
    assert_true(fx_started(&f, 20));
    assert_int_equal(tsched_queue_satisfied(f.s, def), 1);
    /* A second job of the default queue is beyond its guarantee: not owed, no victim. */
    assert_int_equal(fx_submit(&f, 21, def, TSCHED_CLASS_TRAINING, 0, 600, 1, 1000), 0);
    fx_cycle(&f, 600);
    assert_int_equal(f.d.nvictims, 0);
    assert_int_equal(tsched_queue_satisfied(f.s, def), 1);
    fx_fini(&f);
}

/* Queues that all govern nothing (tesseld out of the box): nobody is owed, nobody is a victim,
 * whatever the order of arrival. */
static void test_all_ungoverned_no_reclaim(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int a = ungoverned_queue(&f, "a");
    int b = ungoverned_queue(&f, "b");
    for (int i = 0; i < 2; i++) {
        assert_int_equal(fx_submit(&f, (uint64_t)i, a, TSCHED_CLASS_TRAINING, 0, i, 1, 1000), 0);
        fx_cycle(&f, i);
    }
    assert_int_equal(fx_submit(&f, 9, b, TSCHED_CLASS_TRAINING, 0, 1000, 1, 1000), 0);
    fx_cycle(&f, 1000);
    assert_int_equal(f.d.nvictims, 0);
    assert_int_equal(f.d.nstarts, 0);
    assert_int_equal(tsched_queue_satisfied(f.s, b), 1);
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ungoverned_queue_is_reclaimed),
        cmocka_unit_test(test_default_queue_gets_its_guarantee_back),
        cmocka_unit_test(test_all_ungoverned_no_reclaim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
