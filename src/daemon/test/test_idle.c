/* test_idle.c - idle reclamation's decisions (src/daemon/idle.c): the idle time in effect
 * (the job's own, never, its queue's), a queue's own or inherited down the tree, the queue's
 * time as a maximum for a job's own, the looks of the tick over a job's life (work seen,
 * idle too short, idle long enough, the setting turned off, a clock before the mark), and the
 * setting's words (durations, "off", bad values refused with nothing changed). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/idle.h"

static void test_effective(void **state)
{
    (void)state;
    assert_int_equal(tessd_idle_effective(600, 1800, 300), 600); /* the job's own wins */
    assert_int_equal(tessd_idle_effective(600, 0, 300), 600);
    assert_int_equal(tessd_idle_effective(-1, 1800, 300), 0);   /* never, whatever its queue says */
    assert_int_equal(tessd_idle_effective(0, 1800, 300), 1800); /* its queue's */
    assert_int_equal(tessd_idle_effective(0, 0, 300), 0);
    assert_int_equal(tessd_idle_effective(0, -1, 300), 0);
    /* the floor (--idle-reclaim-min): a job's own time below it counts as the floor; its
     * queue's (an admin's) is not raised; 0 is no floor */
    assert_int_equal(tessd_idle_effective(10, 1800, 300), 300);
    assert_int_equal(tessd_idle_effective(300, 1800, 300), 300);
    assert_int_equal(tessd_idle_effective(0, 3, 300), 3);
    assert_int_equal(tessd_idle_effective(10, 0, 0), 10);
    assert_int_equal(tessd_idle_effective(-1, 3, 300), 0);
}

/* A queue of the tree below: own idle time (-1 its parent's). */
static tstore_queue_t qu(const char *name, const char *parent, int64_t own)
{
    tstore_queue_t q;
    memset(&q, 0, sizeof q);
    snprintf(q.name, sizeof q.name, "%s", name);
    snprintf(q.parent, sizeof q.parent, "%s", parent);
    q.idle_reclaim_s = own;
    return q;
}

/* Inherited down the tree (migration 24): org 30m; lab inherits it, its child team too; ops
 * says never and its child inherits never; solo (top level) inherits nothing; a parent
 * missing and a loop end the walk. */
static void test_queue_tree(void **state)
{
    (void)state;
    tstore_queue_t qs[] = {
        qu("org", "", 1800),   qu("lab", "org", -1),     qu("team", "lab", -1),
        qu("fast", "lab", 60), qu("ops", "org", 0),      qu("opskid", "ops", -1),
        qu("solo", "", -1),    qu("orphan", "gone", -1), qu("l1", "l2", -1),
        qu("l2", "l1", -1),
    };
    size_t n = sizeof qs / sizeof qs[0];
    const char *from = "x";
    assert_int_equal(tessd_idle_queue(qs, n, "org", &from), 1800);
    assert_string_equal(from, "org");
    assert_int_equal(tessd_idle_queue(qs, n, "lab", &from), 1800);
    assert_string_equal(from, "org");
    assert_int_equal(tessd_idle_queue(qs, n, "team", &from), 1800);
    assert_string_equal(from, "org");
    assert_int_equal(tessd_idle_queue(qs, n, "fast", &from), 60); /* its own, shorter */
    assert_string_equal(from, "fast");
    assert_int_equal(tessd_idle_queue(qs, n, "ops", &from), 0); /* an explicit never */
    assert_string_equal(from, "ops");
    assert_int_equal(tessd_idle_queue(qs, n, "opskid", &from), 0); /* stays never */
    assert_string_equal(from, "ops");
    assert_int_equal(tessd_idle_queue(qs, n, "solo", &from), 0);
    assert_string_equal(from, "");
    assert_int_equal(tessd_idle_queue(qs, n, "orphan", &from), 0);
    assert_string_equal(from, "");
    assert_int_equal(tessd_idle_queue(qs, n, "l1", &from), 0);
    assert_string_equal(from, "");
    assert_int_equal(tessd_idle_queue(qs, n, "nosuch", NULL), 0);
    assert_int_equal(tessd_idle_queue(NULL, 0, "org", &from), 0);
}

/* The queue's time is a maximum for a job that is not an admin's (L4). */
static void test_within_queue(void **state)
{
    (void)state;
    assert_true(tessd_idle_within_queue(0, 1800));     /* its queue's */
    assert_true(tessd_idle_within_queue(600, 1800));   /* shorter */
    assert_true(tessd_idle_within_queue(1800, 1800));  /* the same */
    assert_false(tessd_idle_within_queue(1801, 1800)); /* longer */
    assert_false(tessd_idle_within_queue(-1, 1800));   /* never */
    assert_true(tessd_idle_within_queue(-1, 0));       /* the queue sets none */
    assert_true(tessd_idle_within_queue(86400, 0));
    assert_true(tessd_idle_within_queue(0, 0));
}

static void test_look(void **state)
{
    (void)state;
    int64_t since = 0;
    /* first look: the count starts, whatever the job did before */
    assert_int_equal(tessd_idle_look(60, false, &since, 1000), TESSD_IDLE_ACTIVE);
    assert_int_equal(since, 1000);
    assert_int_equal(tessd_idle_look(60, false, &since, 30000), TESSD_IDLE_WAIT);
    /* a launch seen: a whole idle time again from now */
    assert_int_equal(tessd_idle_look(60, true, &since, 59000), TESSD_IDLE_ACTIVE);
    assert_int_equal(since, 59000);
    assert_int_equal(tessd_idle_look(60, false, &since, 61000), TESSD_IDLE_WAIT);
    assert_int_equal(tessd_idle_look(60, false, &since, 118999), TESSD_IDLE_WAIT);
    assert_int_equal(tessd_idle_look(60, false, &since, 119000), TESSD_IDLE_RECLAIM);
    assert_int_equal(since, 59000); /* the verdict leaves the mark to the caller */
    /* work at the very look that would reclaim: not reclaimed */
    assert_int_equal(tessd_idle_look(60, true, &since, 200000), TESSD_IDLE_ACTIVE);
    /* the setting turned off: not watched, and a later one starts afresh */
    assert_int_equal(tessd_idle_look(0, false, &since, 300000), TESSD_IDLE_OFF);
    assert_int_equal(since, 0);
    assert_int_equal(tessd_idle_look(60, false, &since, 400000), TESSD_IDLE_ACTIVE);
    assert_int_equal(since, 400000);
    /* a mark in the future (never from the monotonic clock; a bad value): starts again */
    since = 999999;
    assert_int_equal(tessd_idle_look(60, false, &since, 500000), TESSD_IDLE_ACTIVE);
    assert_int_equal(since, 500000);
}

static void test_parse(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int64_t secs;
    } good[] = {{"off", 0},    {"0", 0},        {"45s", 45},
                {"30m", 1800}, {"1h30m", 5400}, {"30d", 2592000}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t v = -7;
        tsl_error_t e;
        assert_int_equal(tessd_idle_parse(good[i].in, &v, &e), 0);
        assert_int_equal(v, good[i].secs);
    }
    static const char *const bad[] = {"", "30", "-5m", "soon", "31d", "1h30", "on", "Off"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = -7;
        tsl_error_t e = {{0}};
        errno = 0;
        assert_int_equal(tessd_idle_parse(bad[i], &v, &e), -1);
        assert_true(errno == EINVAL || errno == ERANGE);
        assert_int_equal(v, -7);
        assert_non_null(strstr(e.text, "idle reclaim"));
    }
    int64_t v = -7;
    assert_int_equal(tessd_idle_parse(NULL, &v, NULL), -1);
    assert_int_equal(v, -7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_effective),    cmocka_unit_test(test_queue_tree),
        cmocka_unit_test(test_within_queue), cmocka_unit_test(test_look),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
