/* test_queue_scenarios.c - the queue scheduler on small cases whose
 * outcome is worked out by hand (figures in the comments).
 *
 * Clusters of A100s, queues governed on GPUs only, "binpack" placement (it
 * fills the fullest node first, so which job sits where is known).
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

/* The scenario.  3 nodes x 4 GPUs = 12 GPUs.  A is guaranteed 4,
 * B 8.  A starts 12 one-GPU training jobs, one per second (job i at t = i),
 * while B is idle: jobs 0-3 are within A's guarantee, 4-11 borrowed.  At
 * t = 1000 B submits 4 one-GPU jobs (owed: 0 + 4 <= 8).  Expected: exactly
 * 4 victims, A's youngest, 11, 10, 9, 8 in that order, requeued (not
 * suspendable); none of 0-3.  Once they stop, B's 4 jobs start and A's 4
 * requeued jobs wait (A holds 8 >= its guarantee of 4). */
static void test_reclaim_youngest_borrowed(void **state)
{
    struct fx f;
    fx_init(&f, 3, 4, NULL);
    int a = fx_queue(&f, "A", NULL, 4000, 0, 1);
    int b = fx_queue(&f, "B", NULL, 8000, 0, 1);
    for (int i = 0; i < 12; i++) {
        assert_int_equal(fx_submit(&f, (uint64_t)i, a, TSCHED_CLASS_TRAINING, 0, i, 1, 1000), 0);
        fx_cycle(&f, i);
        assert_int_equal(f.d.nstarts, 1);
    }
    assert_int_equal(fx_used(&f, a, 12), 12000);
    for (int i = 0; i < 4; i++)
        assert_int_equal(
            fx_submit(&f, 100 + (uint64_t)i, b, TSCHED_CLASS_TRAINING, 0, 1000, 1, 1000), 0);
    fx_cycle(&f, 1000);
    assert_int_equal(f.d.nstarts, 0);
    assert_int_equal(f.d.nvictims, 4);
    assert_int_equal(f.d.plans, 4);
    static const uint64_t want[4] = {11, 10, 9, 8};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(f.d.victims[i].job, want[i]);
        assert_int_equal(f.d.victims[i].for_job, 100 + (uint64_t)i);
        assert_int_equal(f.d.victims[i].action, TSCHED_REQUEUE);
        assert_int_equal(tsched_job_state(f.s, want[i]), 2);
    }
    for (uint64_t i = 0; i < 4; i++)
        assert_false(has_victim(&f, i));
    /* a second cycle before they stop asks for nothing more */
    fx_cycle(&f, 1000.5);
    assert_int_equal(f.d.nstarts, 0);
    assert_int_equal(f.d.nvictims, 0);
    fx_stop_victims(&f, 1001);
    /* the previous decisions were the empty ones: stop the four by id */
    for (int i = 0; i < 4; i++)
        assert_int_equal(tsched_job_stopped(f.s, want[i], 1001), 0);
    fx_cycle(&f, 1001);
    assert_int_equal(f.d.nstarts, 4);
    for (uint64_t i = 0; i < 4; i++)
        assert_true(fx_started(&f, 100 + i));
    assert_int_equal(f.d.nvictims, 0);
    assert_int_equal(fx_used(&f, a, 1001), 8000);
    assert_int_equal(fx_used(&f, b, 1001), 4000);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tsched_job_state(f.s, want[i]), 0);
    assert_int_equal(tsched_queue_satisfied(f.s, a), 1);
    assert_int_equal(tsched_queue_satisfied(f.s, b), 1);
    fx_fini(&f);
}

/* Minimum run time: the same borrowing, but B asks at t = 40, when A's
 * borrowed jobs have run 29 to 36 s (< 60): no victim.  At t = 71 jobs 4-11
 * have run 60 to 67 s; job 11 (started at 11) is still the youngest. */
static void test_min_runtime(void **state)
{
    struct fx f;
    fx_init(&f, 3, 4, NULL);
    int a = fx_queue(&f, "A", NULL, 4000, 0, 1);
    int b = fx_queue(&f, "B", NULL, 8000, 0, 1);
    for (int i = 0; i < 12; i++) {
        assert_int_equal(fx_submit(&f, (uint64_t)i, a, TSCHED_CLASS_TRAINING, 0, i, 1, 1000), 0);
        fx_cycle(&f, i);
    }
    assert_int_equal(fx_submit(&f, 100, b, TSCHED_CLASS_TRAINING, 0, 40, 1, 1000), 0);
    fx_cycle(&f, 40);
    assert_int_equal(f.d.nvictims, 0);
    assert_int_equal(tsched_queue_satisfied(f.s, b), 0); /* owed, waiting */
    fx_cycle(&f, 71);
    assert_int_equal(f.d.nvictims, 1);
    assert_int_equal(f.d.victims[0].job, 11);
    fx_fini(&f);
}

/* Priorities within a queue.  1 node x 4 GPUs, queue A guaranteed 4, full
 * with 4 training jobs of priority 0 started at t = 0..3.  At t = 100:
 *  - a training job of priority 0 preempts nothing (equal priority, and A
 *    is not owed: 4 + 1 > 4);
 *  - an inference job (band above training) preempts the youngest, job 3;
 *  - a training job of priority 5 preempts the next youngest, job 2.
 * Inference and priority-5 jobs come before the priority-0 job in A's
 * order, so the plans are for 12 then 11. */
static void test_priority_within_queue(void **state)
{
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int a = fx_queue(&f, "A", NULL, 4000, 0, 1);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(fx_submit(&f, (uint64_t)i, a, TSCHED_CLASS_TRAINING, 0, i, 1, 1000), 0);
        fx_cycle(&f, i);
    }
    assert_int_equal(fx_submit(&f, 10, a, TSCHED_CLASS_TRAINING, 0, 100, 1, 1000), 0);
    assert_int_equal(fx_submit(&f, 11, a, TSCHED_CLASS_TRAINING, 5, 100, 1, 1000), 0);
    assert_int_equal(fx_submit(&f, 12, a, TSCHED_CLASS_INFERENCE, 0, 100, 1, 1000), 0);
    fx_cycle(&f, 100);
    assert_int_equal(f.d.nvictims, 2);
    assert_int_equal(f.d.victims[0].job, 3);
    assert_int_equal(f.d.victims[0].for_job, 12);
    assert_int_equal(f.d.victims[1].job, 2);
    assert_int_equal(f.d.victims[1].for_job, 11);
    fx_stop_victims(&f, 101);
    fx_cycle(&f, 101);
    assert_int_equal(f.d.nstarts, 2);
    assert_true(fx_started(&f, 12));
    assert_true(fx_started(&f, 11));
    assert_int_equal(tsched_job_state(f.s, 10), 0);
    fx_fini(&f);
}

/* Least work lost, and suspension.  1 node x 2 GPUs; B (guarantee 0) runs
 * X (started t = 0) and Y (started t = 500), both borrowed; A (guarantee
 * 2) asks for one GPU at t = 1000.  Neither suspendable: killing X loses
 * 1000 s of work, Y 500 s: Y goes, requeued.  X suspendable: suspending it
 * costs 30 s (suspend_cost): X goes, suspended. */
static void test_suspend_and_least_work(void **state)
{
    for (int susp = 0; susp < 2; susp++) {
        struct fx f;
        fx_init(&f, 1, 2, NULL);
        int a = fx_queue(&f, "A", NULL, 2000, 0, 1);
        int b = fx_queue(&f, "B", NULL, 0, 0, 1);
        tsched_qjob_t j;
        memset(&j, 0, sizeof j);
        j.queue = b;
        j.cls = TSCHED_CLASS_TRAINING;
        j.req.ngpus = 1;
        j.req.milli_gpu = 1000;
        j.id = 1;
        j.flags = susp ? TSCHED_JOB_SUSPENDABLE : 0;
        assert_int_equal(tsched_job_submit(f.s, &j, NULL), 0);
        fx_cycle(&f, 0);
        j.id = 2;
        j.flags = 0;
        j.arrival = 500;
        assert_int_equal(tsched_job_submit(f.s, &j, NULL), 0);
        fx_cycle(&f, 500);
        assert_int_equal(fx_submit(&f, 3, a, TSCHED_CLASS_TRAINING, 0, 1000, 1, 1000), 0);
        fx_cycle(&f, 1000);
        assert_int_equal(f.d.nvictims, 1);
        /* not suspendable: X lost 1000 s, Y 500 s -> Y; suspendable: X 30 s */
        assert_int_equal(f.d.victims[0].job, susp ? 1 : 2);
        assert_int_equal(f.d.victims[0].action, susp ? TSCHED_SUSPEND : TSCHED_REQUEUE);
        fx_fini(&f);
    }
}

/* A training job flagged TSCHED_JOB_NEVER_PREEMPT.  1 node x 2 GPUs; A guaranteed 2, B 1.
 * B's never-preempt job beyond B's guarantee is refused at submission (it counts as
 * non-preemptible work); within it, it runs and is passed over as a victim: A's job, owed
 * capacity, takes B's other (ordinary) training job instead.  With both of B's jobs
 * flagged (each within the guarantee of 1 GPU alone), A gets no plan at all. */
static void test_never_preempt(void **state)
{
    (void)state;
    for (int both = 0; both < 2; both++) {
        struct fx f;
        fx_init(&f, 1, 2, NULL);
        int a = fx_queue(&f, "A", NULL, 2000, 0, 1);
        int b = fx_queue(&f, "B", NULL, 1000, 0, 1);
        tsched_qjob_t j;
        memset(&j, 0, sizeof j);
        j.queue = b;
        j.cls = TSCHED_CLASS_TRAINING;
        j.req.ngpus = 2;
        j.req.milli_gpu = 1000;
        j.id = 9;
        j.flags = TSCHED_JOB_NEVER_PREEMPT;
        assert_int_equal(tsched_job_submit(f.s, &j, NULL), -1); /* 2 GPUs > B's guarantee */
        assert_int_equal(errno, EINVAL);
        j.req.ngpus = 1;
        j.id = 1;
        assert_int_equal(tsched_job_submit(f.s, &j, NULL), 0);
        fx_cycle(&f, 0);
        j.id = 2;
        j.flags = both ? TSCHED_JOB_NEVER_PREEMPT : 0;
        j.arrival = 10;
        assert_int_equal(tsched_job_submit(f.s, &j, NULL), 0);
        fx_cycle(&f, 10);
        if (both) {
            /* the second never-preempt job is held by B's guarantee (1 GPU of such work) */
            assert_int_equal(f.d.nstarts, 0);
            fx_fini(&f);
            continue;
        }
        assert_int_equal(f.d.nstarts, 1);
        assert_int_equal(fx_submit(&f, 3, a, TSCHED_CLASS_TRAINING, 0, 1000, 1, 1000), 0);
        fx_cycle(&f, 1000);
        assert_int_equal(f.d.nvictims, 1);
        assert_int_equal(f.d.victims[0].job, 2); /* never job 1, though it ran longer */
        assert_int_equal(f.d.victims[0].for_job, 3);
        fx_fini(&f);
    }
}

/* Fair share with history.  1 node x 4 GPUs; A and B guaranteed 2 each,
 * half-life 3600 s, history weight 0.5.  A ran 4 GPUs from t = 0 to 7200:
 * its history is 4000 * (1 - 2^-2) = 3000 milli-GPU, so its key is
 * 0.5 * 3000 / 2000 = 0.75 before it starts anything; B's is k / 4 after k
 * starts.  Both submit 4 jobs at t = 7200: B, B, B (0, 0.25, 0.5), then a
 * tie at 0.75 goes to A (lower index): B holds 3 GPUs, A 1. */
static void test_fair_share_history(void **state)
{
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int a = fx_queue(&f, "A", NULL, 2000, 0, 1);
    int b = fx_queue(&f, "B", NULL, 2000, 0, 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(fx_submit(&f, (uint64_t)i, a, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), 0);
    fx_cycle(&f, 0);
    assert_int_equal(f.d.nstarts, 4);
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(tsched_job_remove(f.s, i, 7200), 0);
    tsched_queue_stat_t st;
    assert_int_equal(tsched_queue_stat(f.s, a, 7200, &st), 0);
    assert_true(st.share > 0.7499 && st.share < 0.7501);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(
            fx_submit(&f, 10 + (uint64_t)i, a, TSCHED_CLASS_TRAINING, 0, 7200, 1, 1000), 0);
        assert_int_equal(
            fx_submit(&f, 20 + (uint64_t)i, b, TSCHED_CLASS_TRAINING, 0, 7200, 1, 1000), 0);
    }
    fx_cycle(&f, 7200);
    assert_int_equal(f.d.nstarts, 4);
    static const uint64_t order[4] = {20, 21, 22, 10};
    for (int i = 0; i < 4; i++)
        assert_int_equal(f.d.starts[i].job, order[i]);
    /* A is owed (1 + 1 <= 2) but B's borrowed jobs ran 0 s: no victim yet;
     * at t = 7260 B's youngest borrowed job (22: B's 3rd, first fit keeps
     * 20 and 21 within 2 GPUs) goes for A's job 11. */
    assert_int_equal(f.d.nvictims, 0);
    fx_cycle(&f, 7260);
    assert_int_equal(f.d.nvictims, 1);
    assert_int_equal(f.d.victims[0].job, 22);
    assert_int_equal(f.d.victims[0].for_job, 11);
    fx_fini(&f);
}

/* Backfill and reservation.  2 nodes x 4 GPUs, queue A guaranteed 8.
 * R1 runs on node 0, R2 on node 1 (one GPU each).  X asks for 4 GPUs at
 * t = 0: no node has 4 free, and nothing can be preempted (same priority,
 * one queue).  Y (1 GPU) passes it and starts (binpack: node 0, the
 * fuller).  At t = 1000 X has waited 1000 >= 900 s: it reserves node 1
 * (1 GPU to drain there against 2 on node 0), and Z (3 GPUs, would fit on
 * node 1) must not start.  When R2 leaves, X starts on node 1 first. */
static void test_backfill_and_reservation(void **state)
{
    struct fx f;
    fx_init(&f, 2, 4, NULL);
    int a = fx_queue(&f, "A", NULL, 8000, 0, 1);
    assert_int_equal(fx_submit(&f, 1, a, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), 0);
    assert_int_equal(fx_submit(&f, 2, a, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), 0);
    tsched_member_t m;
    memset(&m, 0, sizeof m);
    m.ngpus = 1;
    m.milli_gpu = 1000;
    m.cpu_milli = 1000;
    m.mem_bytes = GIB;
    m.node = 0;
    assert_int_equal(tsched_job_started(f.s, 1, &m, 1, 0), 0);
    m.node = 1;
    assert_int_equal(tsched_job_started(f.s, 2, &m, 1, 0), 0);
    assert_int_equal(tsched_job_started(f.s, 2, &m, 1, 0), -1);
    assert_int_equal(errno, EBUSY);
    assert_int_equal(fx_submit(&f, 10, a, TSCHED_CLASS_TRAINING, 0, 0, 4, 1000), 0);
    assert_int_equal(fx_submit(&f, 11, a, TSCHED_CLASS_TRAINING, 0, 1, 1, 1000), 0);
    fx_cycle(&f, 1);
    assert_int_equal(f.d.nstarts, 1);
    assert_int_equal(f.d.starts[0].job, 11);
    assert_int_equal(f.d.starts[0].members[0].node, 0);
    assert_int_equal(f.d.nvictims, 0);
    assert_int_equal(f.d.reserved, 0);
    assert_int_equal(fx_submit(&f, 12, a, TSCHED_CLASS_TRAINING, 0, 1000, 3, 1000), 0);
    fx_cycle(&f, 1000);
    assert_int_equal(f.d.reserved, 1);
    assert_int_equal(f.d.nstarts, 0);
    fx_cycle(&f, 1001); /* the reservation holds from cycle to cycle */
    assert_int_equal(f.d.nstarts, 0);
    assert_int_equal(tsched_job_remove(f.s, 2, 1002), 0);
    fx_cycle(&f, 1002);
    assert_int_equal(f.d.nstarts, 1);
    assert_int_equal(f.d.starts[0].job, 10);
    assert_int_equal(f.d.starts[0].members[0].node, 1);
    assert_int_equal(f.d.reserved, 0);
    fx_fini(&f);
}

/* Limits through the tree, and non-preemptible work within guarantees.
 * 3 nodes x 4 GPUs.  Department D (guarantee 4, limit 6) over projects P1
 * and P2 (guarantee 2 each, no limit of their own); E (guarantee 4).
 *  - P1 submits 8 training jobs: 6 start (D's limit), E being idle.
 *  - P2 submits 3 interactive jobs at t = 100.  Non-preemptible work must
 *    fit P2's guarantee (2) and D's (4): two may run, the third never
 *    with those two.  D is at its limit (6), so none can start now, but
 *    P2 is owed (0 + 1 <= 2) and P1 borrows 4 within D (jobs 2-5, beyond
 *    P1's 2; all started at t = 0, so the tie goes to the later
 *    submitted): victims 5 for job 20, then 4 for job 21; job 22 would
 *    take P2's non-preemptible work to 3 > 2: no plan.  Once 5 and 4 stop,
 *    20 and 21 start and D is back at 6.
 *  - an interactive job larger than its queue's guarantee is refused. */
static void test_tree_limits_and_guarantees(void **state)
{
    struct fx f;
    fx_init(&f, 3, 4, NULL);
    int d = fx_queue(&f, "D", NULL, 4000, 6000, 1);
    int p1 = fx_queue(&f, "P1", "D", 2000, 0, 1);
    int p2 = fx_queue(&f, "P2", "D", 2000, 0, 1);
    (void)fx_queue(&f, "E", NULL, 4000, 0, 1);
    /* a third project would take D's guarantees past 4 */
    tsched_queue_spec_t q;
    memset(&q, 0, sizeof q);
    q.name = "P3";
    q.parent = "D";
    q.guarantee.milli_gpu = 1000;
    q.limit.milli_gpu = TSCHED_UNLIMITED;
    tsl_error_t err = {{0}};
    assert_int_equal(tsched_queue_add(f.s, &q, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(err.text, "guarantees"));
    /* jobs only in leaves */
    assert_int_equal(fx_submit(&f, 99, d, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), -1);
    assert_int_equal(errno, EINVAL);
    for (int i = 0; i < 8; i++)
        assert_int_equal(fx_submit(&f, (uint64_t)i, p1, TSCHED_CLASS_TRAINING, 0, i, 1, 1000), 0);
    fx_cycle(&f, 0);
    assert_int_equal(f.d.nstarts, 6);
    assert_int_equal(fx_used(&f, d, 0), 6000);
    for (int i = 0; i < 3; i++)
        assert_int_equal(
            fx_submit(&f, 20 + (uint64_t)i, p2, TSCHED_CLASS_INTERACTIVE, 0, 100, 1, 1000), 0);
    assert_int_equal(fx_submit(&f, 30, p2, TSCHED_CLASS_INTERACTIVE, 0, 100, 3, 1000), -1);
    assert_int_equal(errno, EINVAL);
    fx_cycle(&f, 100);
    assert_int_equal(f.d.nstarts, 0);
    assert_int_equal(f.d.plans, 2);
    assert_int_equal(f.d.nvictims, 2);
    assert_int_equal(f.d.victims[0].job, 5);
    assert_int_equal(f.d.victims[0].for_job, 20);
    assert_int_equal(f.d.victims[1].job, 4);
    assert_int_equal(f.d.victims[1].for_job, 21);
    fx_stop_victims(&f, 101);
    fx_cycle(&f, 101);
    assert_int_equal(f.d.nstarts, 2);
    assert_true(fx_started(&f, 20));
    assert_true(fx_started(&f, 21));
    assert_int_equal(fx_used(&f, d, 101), 6000);
    assert_int_equal(fx_used(&f, p2, 101), 2000);
    assert_int_equal(tsched_queue_satisfied(f.s, p2), 1);
    fx_fini(&f);
}

/* Over-quota weight: A and B guaranteed 0 (everything is borrowed), weight
 * 3 against 1, on 1 node x 4 GPUs.  Keys at t = 0 (no history yet, history
 * weight 0.5): 1 + 0.5 * used / 4000 / weight, so A rises by 1/24 per GPU,
 * B by 1/8.  Order: A (tie at 1, lower index), B (1 < 1.0417), A (1.0417 <
 * 1.125), A (1.0833 < 1.125): A 3, B 1. */
static void test_over_quota_weight(void **state)
{
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int a = fx_queue(&f, "A", NULL, 0, 0, 3);
    int b = fx_queue(&f, "B", NULL, 0, 0, 1);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(fx_submit(&f, (uint64_t)i, a, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), 0);
        assert_int_equal(fx_submit(&f, 10 + (uint64_t)i, b, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000),
                         0);
    }
    fx_cycle(&f, 0);
    assert_int_equal(f.d.nstarts, 4);
    static const uint64_t order[4] = {0, 10, 1, 2};
    for (int i = 0; i < 4; i++)
        assert_int_equal(f.d.starts[i].job, order[i]);
    assert_int_equal(f.d.nvictims, 0); /* nobody is owed anything */
    fx_fini(&f);
}

/* Fractional GPUs on one box, as tesseld sees it: 1 node x 2 GPUs, queues
 * A and B guaranteed 1 GPU each.  A's interactive work must fit its
 * guarantee: two 0.5-GPU notebooks start, a third does not.  A then
 * borrows B's GPU with two 0.5-GPU training jobs (started t = 3 and 4).  B
 * asks for 0.5 at t = 100: one victim, A's youngest borrowed job (5), not
 * the notebooks. */
static void test_fractional(void **state)
{
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int a = fx_queue(&f, "A", NULL, 1000, 0, 1);
    int b = fx_queue(&f, "B", NULL, 1000, 0, 1);
    assert_int_equal(fx_submit(&f, 1, a, TSCHED_CLASS_INTERACTIVE, 0, 0, 1, 500), 0);
    assert_int_equal(fx_submit(&f, 2, a, TSCHED_CLASS_INTERACTIVE, 0, 1, 1, 500), 0);
    assert_int_equal(fx_submit(&f, 3, a, TSCHED_CLASS_INTERACTIVE, 0, 2, 1, 500), 0);
    fx_cycle(&f, 0);
    assert_int_equal(f.d.nstarts, 2); /* the third interactive exceeds A's guarantee */
    assert_int_equal(tsched_job_remove(f.s, 3, 0), 0);
    assert_int_equal(fx_submit(&f, 4, a, TSCHED_CLASS_TRAINING, 0, 3, 1, 500), 0);
    fx_cycle(&f, 3);
    assert_int_equal(fx_submit(&f, 5, a, TSCHED_CLASS_TRAINING, 0, 4, 1, 500), 0);
    fx_cycle(&f, 4);
    assert_int_equal(fx_used(&f, a, 4), 2000);
    assert_int_equal(fx_submit(&f, 6, b, TSCHED_CLASS_TRAINING, 0, 100, 1, 500), 0);
    fx_cycle(&f, 100);
    assert_int_equal(f.d.nvictims, 1);
    assert_int_equal(f.d.victims[0].job, 5);
    fx_fini(&f);
}

/* A gang.  2 nodes x 2 GPUs; B (guarantee 0) runs four 1-GPU jobs; A
 * (guarantee 4) asks at t = 100 for a gang of 2 members of 2 GPUs each:
 * each node must be emptied, so all four are victims, in one plan.  Then
 * the gang starts with one member per node. */
static void test_gang_reclaim(void **state)
{
    struct fx f;
    fx_init(&f, 2, 2, NULL);
    int a = fx_queue(&f, "A", NULL, 4000, 0, 1);
    int b = fx_queue(&f, "B", NULL, 0, 0, 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(fx_submit(&f, (uint64_t)i, b, TSCHED_CLASS_TRAINING, 0, i, 1, 1000), 0);
    fx_cycle(&f, 0);
    assert_int_equal(f.d.nstarts, 4);
    tsched_qjob_t g;
    memset(&g, 0, sizeof g);
    g.id = 10;
    g.queue = a;
    g.cls = TSCHED_CLASS_TRAINING;
    g.arrival = 100;
    g.req.ngpus = 2;
    g.req.milli_gpu = 1000;
    g.req.gang = 2;
    assert_int_equal(tsched_job_submit(f.s, &g, NULL), 0);
    fx_cycle(&f, 100);
    assert_int_equal(f.d.plans, 1);
    assert_int_equal(f.d.nvictims, 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(f.d.victims[i].for_job, 10);
    fx_stop_victims(&f, 101);
    fx_cycle(&f, 101);
    assert_int_equal(f.d.nstarts, 1);
    assert_int_equal(f.d.starts[0].job, 10);
    assert_int_equal(f.d.starts[0].nmembers, 2);
    assert_true(f.d.starts[0].members[0].node != f.d.starts[0].members[1].node);
    assert_int_equal(fx_used(&f, a, 101), 4000);
    fx_fini(&f);
}

/* Quotas change at run time.  1 node x 4 GPUs; A guaranteed 4 runs 4 jobs
 * (started t = 0..3), B guaranteed 0 waits for one GPU: not owed.  The
 * administrator moves 2 GPUs of guarantee from A to B at t = 100: B is now
 * owed (0 + 1 <= 2) and A's jobs 2 and 3 are over quota; the youngest, 3,
 * makes room.  A department cannot drop below its projects' sum. */
static void test_queue_update(void **state)
{
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int a = fx_queue(&f, "A", NULL, 4000, 0, 1);
    int b = fx_queue(&f, "B", NULL, 0, 0, 1);
    int d = fx_queue(&f, "D", NULL, 0, 0, 1);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(fx_submit(&f, (uint64_t)i, a, TSCHED_CLASS_TRAINING, 0, i, 1, 1000), 0);
        fx_cycle(&f, i);
    }
    assert_int_equal(fx_submit(&f, 10, b, TSCHED_CLASS_TRAINING, 0, 90, 1, 1000), 0);
    fx_cycle(&f, 90);
    assert_int_equal(f.d.nvictims, 0);
    tsched_res_t g = {2000, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    tsched_res_t nolim = {TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    assert_int_equal(tsched_queue_update(f.s, a, &g, &nolim, 1, NULL), 0);
    assert_int_equal(tsched_queue_update(f.s, b, &g, &nolim, 1, NULL), 0);
    fx_cycle(&f, 100);
    assert_int_equal(f.d.nvictims, 1);
    assert_int_equal(f.d.victims[0].job, 3);
    assert_int_equal(f.d.victims[0].for_job, 10);
    /* D over a project guaranteed 1 GPU: D cannot go below 1 */
    tsched_res_t one = {1000, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    assert_int_equal(tsched_queue_update(f.s, d, &one, &nolim, 1, NULL), 0);
    (void)fx_queue(&f, "P", "D", 1000, 0, 1);
    tsched_res_t half = {500, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    tsl_error_t err = {{0}};
    assert_int_equal(tsched_queue_update(f.s, d, &half, &nolim, 1, &err), -1);
    assert_int_equal(errno, EINVAL);
    tsched_queue_stat_t st;
    assert_int_equal(tsched_queue_stat(f.s, d, 100, &st), 0);
    assert_int_equal(st.guarantee.milli_gpu, 1000); /* unchanged */
    fx_fini(&f);
}

/* A plan whose preemptor goes away: 1 node x 2 GPUs, B borrows both, A
 * (guarantee 2) asks for one at t = 100 and is cancelled before the victim
 * stops.  The victim runs on (state back to running at the next cycle) and
 * can be chosen again for A's next job. */
static void test_plan_withdrawn(void **state)
{
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int a = fx_queue(&f, "A", NULL, 2000, 0, 1);
    int b = fx_queue(&f, "B", NULL, 0, 0, 1);
    assert_int_equal(fx_submit(&f, 1, b, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), 0);
    assert_int_equal(fx_submit(&f, 2, b, TSCHED_CLASS_TRAINING, 0, 1, 1, 1000), 0);
    fx_cycle(&f, 1);
    assert_int_equal(fx_submit(&f, 10, a, TSCHED_CLASS_TRAINING, 0, 100, 1, 1000), 0);
    fx_cycle(&f, 100);
    assert_int_equal(f.d.nvictims, 1);
    uint64_t v = f.d.victims[0].job;
    assert_int_equal(tsched_job_state(f.s, v), 2);
    assert_int_equal(tsched_job_remove(f.s, 10, 101), 0);
    fx_cycle(&f, 102);
    assert_int_equal(f.d.nvictims, 0);
    assert_int_equal(tsched_job_state(f.s, v), 1);
    assert_int_equal(fx_submit(&f, 11, a, TSCHED_CLASS_TRAINING, 0, 103, 1, 1000), 0);
    fx_cycle(&f, 103);
    assert_int_equal(f.d.nvictims, 1);
    assert_int_equal(f.d.victims[0].for_job, 11);
    fx_fini(&f);
}

/* Bad calls fail with errno and change nothing. */
static void test_errors(void **state)
{
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int a = fx_queue(&f, "A", NULL, 1000, 0, 1);
    tsl_error_t err = {{0}};
    tsched_queue_spec_t q;
    memset(&q, 0, sizeof q);
    q.name = "A";
    assert_int_equal(tsched_queue_add(f.s, &q, &err), -1);
    assert_int_equal(errno, EINVAL);
    q.name = "X";
    q.parent = "nope";
    assert_int_equal(tsched_queue_add(f.s, &q, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tsched_queue_find(f.s, "A"), a);
    assert_int_equal(tsched_queue_find(f.s, "X"), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(fx_submit(&f, 1, a, TSCHED_CLASS_TRAINING, 0, 0, 1, 500), 0);
    assert_int_equal(fx_submit(&f, 1, a, TSCHED_CLASS_TRAINING, 0, 0, 1, 500), -1);
    assert_int_equal(errno, EEXIST);
    assert_int_equal(fx_submit(&f, 2, a, TSCHED_CLASS_TRAINING, 0, 0, 17, 1000), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(fx_submit(&f, 2, a, (tsched_class_t)9, 0, 0, 1, 1000), -1);
    assert_int_equal(errno, EINVAL);
    tsched_queue_stat_t st;
    assert_int_equal(tsched_queue_stat(f.s, a, 0, &st), 0);
    assert_int_equal(st.pending, 1); /* the refused submissions left nothing */
    assert_int_equal(st.demand.milli_gpu, 500);
    assert_int_equal(tsched_job_stopped(f.s, 1, 0), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tsched_job_remove(f.s, 77, 0), -1);
    assert_int_equal(errno, ENOENT);
    tsched_member_t m;
    memset(&m, 0, sizeof m);
    m.node = 5; /* no such node */
    assert_int_equal(tsched_job_started(f.s, 1, &m, 1, 0), -1);
    assert_int_equal(tsched_job_state(f.s, 1), 0);
    tsched_sched_config_t cfg;
    tsched_sched_config_default(&cfg);
    cfg.half_life = 0;
    assert_null(tsched_sched_create(f.c, f.p, &cfg, &err));
    assert_int_equal(errno, EINVAL);
    tsched_sched_destroy(NULL);
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reclaim_youngest_borrowed),
        cmocka_unit_test(test_min_runtime),
        cmocka_unit_test(test_priority_within_queue),
        cmocka_unit_test(test_suspend_and_least_work),
        cmocka_unit_test(test_never_preempt),
        cmocka_unit_test(test_fair_share_history),
        cmocka_unit_test(test_backfill_and_reservation),
        cmocka_unit_test(test_tree_limits_and_guarantees),
        cmocka_unit_test(test_over_quota_weight),
        cmocka_unit_test(test_fractional),
        cmocka_unit_test(test_gang_reclaim),
        cmocka_unit_test(test_queue_update),
        cmocka_unit_test(test_plan_withdrawn),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
