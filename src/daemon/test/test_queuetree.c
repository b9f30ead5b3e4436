/* test_queuetree.c - a queue's setting inherited down the queue tree (src/daemon/queuetree.c):
 * the queue whose value is in effect (its own, the nearest ancestor's, a setting of 0 that
 * counts, none on the path, no such queue, a parent missing, a loop, a tree deeper than the
 * walk), for two settings read from the same tree that do not see each other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/queuetree.h"

static int64_t own_idle(const tstore_queue_t *q)
{
    return q->idle_reclaim_s;
}

static int64_t own_oversub(const tstore_queue_t *q)
{
    return q->gpu_oversub;
}

/* A queue of the tree below: its own idle time and oversubscription (-1: its parent's). */
static tstore_queue_t qu(const char *name, const char *parent, int64_t idle, int64_t oversub)
{
    tstore_queue_t q;
    memset(&q, 0, sizeof q);
    snprintf(q.name, sizeof q.name, "%s", name);
    snprintf(q.parent, sizeof q.parent, "%s", parent);
    q.idle_reclaim_s = idle;
    q.gpu_oversub = oversub;
    return q;
}

/* The name of the queue in effect, or "-" for none. */
static const char *in_effect(const tstore_queue_t *qs, size_t n, const char *name,
                             tessd_queue_own_fn own)
{
    const tstore_queue_t *q = tessd_queue_inherited(qs, n, name, own);
    if (q) {
        assert_true(q >= qs && q < qs + n); /* one of qs, not a copy */
        return q->name;
    }
    return "-";
}

/* org sets an idle time, lab an oversubscription; team under lab inherits both, from two
 * places; ops sets 0 of each (a setting that counts); solo (top level) sets none; orphan's
 * parent is missing; l1 and l2 are a loop. */
static void test_inherited(void **state)
{
    (void)state;
    tstore_queue_t qs[] = {
        qu("org", "", 1800, -1), qu("lab", "org", -1, 1 << 20), qu("team", "lab", -1, -1),
        qu("own", "lab", 60, 5), qu("ops", "org", 0, 0),        qu("opskid", "ops", -1, -1),
        qu("solo", "", -1, -1),  qu("orphan", "gone", -1, -1),  qu("l1", "l2", -1, -1),
        qu("l2", "l1", -1, -1),
    };
    size_t n = sizeof qs / sizeof qs[0];
    assert_string_equal(in_effect(qs, n, "org", own_idle), "org");
    assert_string_equal(in_effect(qs, n, "org", own_oversub), "-");
    assert_string_equal(in_effect(qs, n, "lab", own_idle), "org");
    assert_string_equal(in_effect(qs, n, "lab", own_oversub), "lab");
    assert_string_equal(in_effect(qs, n, "team", own_idle), "org");
    assert_string_equal(in_effect(qs, n, "team", own_oversub), "lab");
    assert_string_equal(in_effect(qs, n, "own", own_idle), "own");
    assert_string_equal(in_effect(qs, n, "own", own_oversub), "own");
    assert_string_equal(in_effect(qs, n, "ops", own_idle), "ops");
    assert_string_equal(in_effect(qs, n, "opskid", own_oversub), "ops");
    assert_string_equal(in_effect(qs, n, "solo", own_idle), "-");
    assert_string_equal(in_effect(qs, n, "orphan", own_idle), "-");
    assert_string_equal(in_effect(qs, n, "l1", own_oversub), "-");
    assert_string_equal(in_effect(qs, n, "nosuch", own_idle), "-");
    assert_string_equal(in_effect(qs, n, "", own_idle), "-");
    assert_null(tessd_queue_inherited(qs, n, NULL, own_idle));
    assert_null(tessd_queue_inherited(NULL, 0, "org", own_idle));
}

/* Only the path from the queue up is read: a queue sorted anywhere in qs is found, and a
 * sibling's or a child's setting is never taken. */
static void test_path_only(void **state)
{
    (void)state;
    tstore_queue_t qs[] = {
        qu("kid", "mid", -1, -1), qu("sib", "top", 7, 7), qu("grandkid", "kid", 9, 9),
        qu("mid", "top", -1, -1), qu("top", "", 3, -1),
    };
    size_t n = sizeof qs / sizeof qs[0];
    assert_string_equal(in_effect(qs, n, "kid", own_idle), "top");
    assert_string_equal(in_effect(qs, n, "kid", own_oversub), "-");
    assert_string_equal(in_effect(qs, n, "mid", own_idle), "top");
    assert_string_equal(in_effect(qs, n, "grandkid", own_idle), "grandkid");
}

/* A chain longer than the walk goes (64 queues: deeper than any tree libsched accepts) ends
 * as a loop would: none; a shorter one reaches its top. */
static void test_deep(void **state)
{
    (void)state;
    enum { N = 70 };
    static tstore_queue_t qs[N];
    char name[16], parent[16];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "q%d", i);
        if (i)
            snprintf(parent, sizeof parent, "q%d", i - 1);
        else
            parent[0] = '\0';
        qs[i] = qu(name, parent, i ? -1 : 42, -1);
    }
    assert_string_equal(in_effect(qs, N, "q10", own_idle), "q0");
    assert_string_equal(in_effect(qs, N, "q63", own_idle), "q0");
    assert_string_equal(in_effect(qs, N, "q69", own_idle), "-");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inherited),
        cmocka_unit_test(test_path_only),
        cmocka_unit_test(test_deep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
