/* test_oversub.c - a queue's GPU memory oversubscription (src/daemon/oversub.c): the value in
 * effect down the queue tree (own, inherited, none, a missing parent, a loop), the total over a
 * job's GPUs, when a queue's default can be given to a job (GPUs, mem, cgroups, the node's
 * memory), and the queue's value as the most a job may ask. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/oversub.h"

#define GIB (1ULL << 30)

/* A queue of the tree below: own value (-1 its parent's). */
static tstore_queue_t qu(const char *name, const char *parent, int64_t own)
{
    tstore_queue_t q;
    memset(&q, 0, sizeof q);
    snprintf(q.name, sizeof q.name, "%s", name);
    snprintf(q.parent, sizeof q.parent, "%s", parent);
    q.gpu_oversub = own;
    q.idle_reclaim_s = -1;
    return q;
}

/* org 8G; lab inherits it, its child team too; big says 16G; ops says none and its child
 * inherits none; solo (top level) inherits nothing; a parent missing and a loop end the walk. */
static void test_queue_tree(void **state)
{
    (void)state;
    tstore_queue_t qs[] = {
        qu("org", "", (int64_t)(8 * GIB)),
        qu("lab", "org", -1),
        qu("team", "lab", -1),
        qu("big", "lab", (int64_t)(16 * GIB)),
        qu("ops", "org", 0),
        qu("opskid", "ops", -1),
        qu("solo", "", -1),
        qu("orphan", "gone", -1),
        qu("l1", "l2", -1),
        qu("l2", "l1", -1),
    };
    size_t n = sizeof qs / sizeof qs[0];
    const char *from = "x";
    assert_true(tessd_oversub_queue(qs, n, "org", &from) == 8 * GIB);
    assert_string_equal(from, "org");
    assert_true(tessd_oversub_queue(qs, n, "lab", &from) == 8 * GIB);
    assert_string_equal(from, "org");
    assert_true(tessd_oversub_queue(qs, n, "team", &from) == 8 * GIB);
    assert_string_equal(from, "org");
    assert_true(tessd_oversub_queue(qs, n, "big", &from) == 16 * GIB);
    assert_string_equal(from, "big");
    assert_true(tessd_oversub_queue(qs, n, "ops", &from) == 0);
    assert_string_equal(from, "ops"); /* a setting of none counts */
    assert_true(tessd_oversub_queue(qs, n, "opskid", &from) == 0);
    assert_string_equal(from, "ops");
    assert_true(tessd_oversub_queue(qs, n, "solo", &from) == 0);
    assert_string_equal(from, "");
    assert_true(tessd_oversub_queue(qs, n, "orphan", &from) == 0);
    assert_string_equal(from, "");
    assert_true(tessd_oversub_queue(qs, n, "l1", &from) == 0);
    assert_string_equal(from, "");
    assert_true(tessd_oversub_queue(qs, n, "nosuch", NULL) == 0);
    assert_true(tessd_oversub_queue(qs, n, "", &from) == 0);
}

static void test_total(void **state)
{
    (void)state;
    assert_true(tessd_oversub_total(8 * GIB, 1) == 8 * GIB);
    assert_true(tessd_oversub_total(8 * GIB, 4) == 32 * GIB);
    assert_true(tessd_oversub_total(8 * GIB, 0) == 0);
    assert_true(tessd_oversub_total(UINT64_MAX / 2, 3) == UINT64_MAX); /* saturates */
}

/* The default is given only where the checks of a job's own value pass. */
static void test_default_fits(void **state)
{
    (void)state;
    const uint64_t node = 64 * GIB;
    assert_true(tessd_oversub_default_fits(8 * GIB, 1, 16 * GIB, true, node));
    assert_true(tessd_oversub_default_fits(8 * GIB, 2, 16 * GIB, true, node));  /* 16G: = mem */
    assert_false(tessd_oversub_default_fits(8 * GIB, 3, 16 * GIB, true, node)); /* past mem */
    assert_false(tessd_oversub_default_fits(8 * GIB, 0, 16 * GIB, true, node)); /* no GPU */
    assert_false(tessd_oversub_default_fits(8 * GIB, 1, 0, true, node));   /* no mem, cgroups */
    assert_true(tessd_oversub_default_fits(8 * GIB, 1, 0, false, node));   /* no cgroups */
    assert_false(tessd_oversub_default_fits(8 * GIB, 16, 0, false, node)); /* past the node */
    assert_false(tessd_oversub_default_fits(0, 1, 16 * GIB, true, node));  /* none */
    assert_false(tessd_oversub_default_fits(UINT64_MAX / 2, 3, 0, false, node));
}

static void test_within_queue(void **state)
{
    (void)state;
    assert_true(tessd_oversub_within_queue(4 * GIB, 8 * GIB));
    assert_true(tessd_oversub_within_queue(8 * GIB, 8 * GIB));
    assert_false(tessd_oversub_within_queue(8 * GIB + 1, 8 * GIB));
    assert_true(tessd_oversub_within_queue(0, 8 * GIB));   /* none: always */
    assert_true(tessd_oversub_within_queue(512 * GIB, 0)); /* the queue sets none */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_tree),
        cmocka_unit_test(test_total),
        cmocka_unit_test(test_default_fits),
        cmocka_unit_test(test_within_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
