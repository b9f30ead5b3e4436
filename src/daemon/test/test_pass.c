/* test_pass.c - the coalescing of scheduling events into passes (pass.h), driven by a fake
 * clock: an event on a quiet daemon gets a pass at once; a burst gets a few passes, one per
 * gap; events during a pass, however many, get exactly one more; the period alone still makes
 * passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "daemon/pass.h"

#define GAP    5
#define PERIOD 250

/* The main loop's rule: run every pass that is due at now (at most one: a pass's begin resets
 * what is due).  Returns the passes run. */
static int run_due(tessd_pass_t *p, int64_t now)
{
    if (tessd_pass_timeout(p, now) != 0)
        return 0;
    tessd_pass_begin(p, now);
    tessd_pass_end(p);
    return 1;
}

static void test_first_pass_at_once(void **state)
{
    tessd_pass_t p;
    tessd_pass_init(&p, GAP, PERIOD, 1000);
    assert_int_equal(tessd_pass_timeout(&p, 1000), 0);
    assert_int_equal(run_due(&p, 1000), 1);
    /* Nothing happened: the next is the period's. */
    assert_int_equal(tessd_pass_timeout(&p, 1000), PERIOD);
    assert_int_equal(tessd_pass_timeout(&p, 1100), PERIOD - 100);
    assert_int_equal(run_due(&p, 1100), 0);
    assert_int_equal(run_due(&p, 1000 + PERIOD), 1);
    assert_int_equal(p.passes, 2);
}

static void test_event_when_quiet_is_at_once(void **state)
{
    tessd_pass_t p;
    tessd_pass_init(&p, GAP, PERIOD, 0);
    run_due(&p, 0);
    /* A job ends 40 ms later: its pass runs then, not at the period. */
    tessd_pass_event(&p);
    assert_int_equal(tessd_pass_timeout(&p, 40), 0);
    assert_int_equal(run_due(&p, 40), 1);
    /* An event right after a pass waits out the gap, no more. */
    tessd_pass_event(&p);
    assert_int_equal(tessd_pass_timeout(&p, 41), GAP - 1);
    assert_int_equal(run_due(&p, 41), 0);
    assert_int_equal(run_due(&p, 40 + GAP), 1);
    assert_int_equal(p.passes, 3);
}

static void test_burst_is_coalesced(void **state)
{
    tessd_pass_t p;
    tessd_pass_init(&p, GAP, PERIOD, 0);
    run_due(&p, 0);
    int64_t t = 1000;
    int passes = 0;
    /* 200 submissions, one every 0.15 ms (30 ms in all; the loop polls at each). */
    for (int i = 0; i < 200; i++) {
        tessd_pass_event(&p);
        int64_t now = t + i * 15 / 100;
        passes += run_due(&p, now);
    }
    /* Then the loop sleeps until the next pass is due, and runs it. */
    int64_t now = t + 30;
    int64_t wait = tessd_pass_timeout(&p, now);
    assert_true(wait >= 0 && wait <= GAP);
    passes += run_due(&p, now + wait);
    /* One pass at the first event, then one per gap of 5 ms over 30 ms, and the last one:
     * 7, not 200. */
    assert_int_equal(passes, 30 / GAP + 1);
    assert_int_equal(p.events, 200);
    /* All taken: nothing more is due before the period. */
    assert_int_equal(tessd_pass_timeout(&p, now + wait), PERIOD);
}

static void test_events_during_pass_make_one_more(void **state)
{
    tessd_pass_t p;
    tessd_pass_init(&p, GAP, PERIOD, 0);
    run_due(&p, 0);
    tessd_pass_event(&p);
    tessd_pass_begin(&p, 100);
    assert_int_equal(tessd_pass_timeout(&p, 100), -1);
    /* Fifty events while the pass runs (jobs end, a user submits). */
    for (int i = 0; i < 50; i++)
        tessd_pass_event(&p);
    tessd_pass_end(&p);
    /* The pass took 12 ms, more than the gap: the next one is due at once... */
    assert_int_equal(tessd_pass_timeout(&p, 112), 0);
    assert_int_equal(run_due(&p, 112), 1);
    /* ...and exactly one: after it, only the period. */
    assert_int_equal(tessd_pass_timeout(&p, 112), PERIOD);
    assert_int_equal(run_due(&p, 113), 0);
    assert_int_equal(run_due(&p, 112 + GAP), 0);
    assert_int_equal(p.passes, 3);
}

static void test_no_event_during_pass_no_extra(void **state)
{
    tessd_pass_t p;
    tessd_pass_init(&p, GAP, PERIOD, 0);
    run_due(&p, 0);
    tessd_pass_event(&p);
    tessd_pass_begin(&p, 10);
    tessd_pass_end(&p);
    assert_int_equal(tessd_pass_timeout(&p, 20), PERIOD - 10);
}

static void test_bad_settings_clamped(void **state)
{
    tessd_pass_t p;
    tessd_pass_init(&p, -3, -1, 0);
    assert_int_equal(p.gap_ms, 0);
    assert_int_equal(p.period_ms, 0);
    tessd_pass_init(&p, 50, 10, 0);
    assert_int_equal(p.period_ms, 50);
    /* A zero gap: every event is a pass at once. */
    tessd_pass_init(&p, 0, 1000, 0);
    run_due(&p, 0);
    tessd_pass_event(&p);
    assert_int_equal(tessd_pass_timeout(&p, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_pass_at_once),
        cmocka_unit_test(test_event_when_quiet_is_at_once),
        cmocka_unit_test(test_burst_is_coalesced),
        cmocka_unit_test(test_events_during_pass_make_one_more),
        cmocka_unit_test(test_no_event_during_pass_no_extra),
        cmocka_unit_test(test_bad_settings_clamped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
