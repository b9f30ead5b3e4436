/* test_may_start.c - tsched_job_may_start (tessel/sched_wait.h): may a job given back the GPUs
 * it held before (tesseld's restore of a job whose GPU memory was given back) start now?  Its
 * queues' limits and guarantees, as a cycle applies them to a pending job; the pending jobs it
 * would take the room from (owed a guarantee, or of higher rank in its own queue); the
 * refusals; the cluster left as it was.
 *
 * Clusters of A100s (80 GiB), 64 CPUs, 512 GiB; "binpack" placement.  Job R is the one that
 * comes back: started on GPU 0, then removed (its memory given back), then submitted again.
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
#include "tessel/sched_wait.h"

#define R 1

/* What R holds on GPU 0 of node 0: milli of it. */
static tsched_member_t on_gpu0(uint32_t milli)
{
    tsched_member_t m;
    memset(&m, 0, sizeof m);
    m.node = 0;
    m.ngpus = 1;
    m.gpu[0] = 0;
    m.milli_gpu = milli;
    m.cpu_milli = 1000;
    m.mem_bytes = GIB;
    return m;
}

/* Job id of queue q started on m now. */
static void run_on(struct fx *f, uint64_t id, int q, tsched_class_t cls, int32_t prio,
                   uint32_t milli, const tsched_member_t *m)
{
    assert_int_equal(fx_submit(f, id, q, cls, prio, 0, 1, milli), 0);
    assert_int_equal(tsched_job_started(f->s, id, m, 1, 1), 0);
}

/* R submitted again (pending), asked with its members; the verdict, the reason in *w and its
 * line in buf. */
static int ask(struct fx *f, int q, tsched_class_t cls, int32_t prio, const tsched_member_t *m,
               tsched_wait_t *w, char *buf, size_t len)
{
    assert_int_equal(fx_submit(f, R, q, cls, prio, 0, 1, m->milli_gpu), 0);
    int v = tsched_job_may_start(f->s, R, m, 1, w);
    tsched_wait_format(w, buf, len);
    assert_int_equal(tsched_job_remove(f->s, R, 2), 0);
    return v;
}

/* R's queue a (limit 1 GPU) took job 2 (a whole GPU) while R was away: R waits with a
 * QueueLimit reason naming a, its limit, its use and R's half; once 2 ends R may start. */
static void test_queue_limit(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int a = fx_queue(&f, "a", NULL, 0, 1000, 1);
    tsched_member_t m = on_gpu0(500), m2 = on_gpu0(1000);
    m2.gpu[0] = 1;
    run_on(&f, 2, a, TSCHED_CLASS_TRAINING, 0, 1000, &m2);
    tsched_wait_t w;
    char buf[256];
    assert_int_equal(ask(&f, a, TSCHED_CLASS_TRAINING, 0, &m, &w, buf, sizeof buf), 0);
    assert_int_equal(w.code, TSCHED_WAIT_QUEUE_LIMIT);
    assert_string_equal(w.queue, "a");
    assert_int_equal(w.res, 0);
    assert_int_equal(w.bound, 1000);
    assert_int_equal(w.used, 1000);
    assert_int_equal(w.want, 500);
    assert_int_equal(w.never, 0);
    assert_non_null(strstr(buf, "queue 'a'"));
    assert_int_equal(tsched_job_remove(f.s, 2, 2), 0);
    assert_int_equal(ask(&f, a, TSCHED_CLASS_TRAINING, 0, &m, &w, buf, sizeof buf), 1);
    assert_int_equal(w.code, TSCHED_WAIT_NONE);
    fx_fini(&f);
}

/* The limit of an ancestor (org, 1 GPU) counts: job 2 runs in sibling b. */
static void test_ancestor_limit(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    fx_queue(&f, "org", NULL, 0, 1000, 1);
    int a = fx_queue(&f, "a", "org", 0, 0, 1);
    int b = fx_queue(&f, "b", "org", 0, 0, 1);
    tsched_member_t m = on_gpu0(500), m2 = on_gpu0(1000);
    m2.gpu[0] = 1;
    run_on(&f, 2, b, TSCHED_CLASS_TRAINING, 0, 1000, &m2);
    tsched_wait_t w;
    char buf[256];
    assert_int_equal(ask(&f, a, TSCHED_CLASS_TRAINING, 0, &m, &w, buf, sizeof buf), 0);
    assert_int_equal(w.code, TSCHED_WAIT_QUEUE_LIMIT);
    assert_string_equal(w.queue, "org");
    /* org is full: any share waits */
    tsched_member_t q = on_gpu0(250);
    assert_int_equal(ask(&f, a, TSCHED_CLASS_TRAINING, 0, &q, &w, buf, sizeof buf), 0);
    assert_int_equal(tsched_job_remove(f.s, 2, 2), 0);
    assert_int_equal(ask(&f, a, TSCHED_CLASS_TRAINING, 0, &m, &w, buf, sizeof buf), 1);
    fx_fini(&f);
}

/* Interactive work within the guarantee: queue g guarantees 1 GPU, interactive job 2 holds it
 * all; interactive R waits with GuaranteeLimit; a training R (preemptible) does not. */
static void test_guarantee_limit(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int g = fx_queue(&f, "g", NULL, 1000, 0, 1);
    tsched_member_t m = on_gpu0(500), m2 = on_gpu0(1000);
    m2.gpu[0] = 1;
    run_on(&f, 2, g, TSCHED_CLASS_INTERACTIVE, 0, 1000, &m2);
    tsched_wait_t w;
    char buf[256];
    assert_int_equal(ask(&f, g, TSCHED_CLASS_INTERACTIVE, 0, &m, &w, buf, sizeof buf), 0);
    assert_int_equal(w.code, TSCHED_WAIT_GUARANTEE_LIMIT);
    assert_string_equal(w.queue, "g");
    assert_int_equal(w.bound, 1000);
    assert_int_equal(w.used, 1000);
    assert_int_equal(ask(&f, g, TSCHED_CLASS_TRAINING, 0, &m, &w, buf, sizeof buf), 1);
    fx_fini(&f);
}

/* One GPU.  R of queue a (no guarantee: it runs on borrowed capacity) would take the GPU that
 * pending job 3 of queue b (guarantee 1 GPU) is owed: R waits (Guarantee, b, job 3).  Not when
 * R is within its own queue's guarantee, nor when 3 fits elsewhere (two GPUs), nor when 3 does
 * not fit even with R's GPU free. */
static void test_owed(void **state)
{
    (void)state;
    tsched_wait_t w;
    char buf[256];
    tsched_member_t m = on_gpu0(1000);
    for (int k = 0; k < 4; k++) {
        struct fx f;
        fx_init(&f, 1, k == 2 ? 2 : 1, NULL);
        int a = fx_queue(&f, "a", NULL, k == 1 ? 1000 : 0, 0, 1);
        int b = fx_queue(&f, "b", NULL, 2000, 0, 1);
        /* k 3: job 3 asks two GPUs of the one-GPU node, room R's GPU alone cannot give */
        assert_int_equal(fx_submit(&f, 3, b, TSCHED_CLASS_TRAINING, 0, 0, k == 3 ? 2 : 1, 1000), 0);
        int v = ask(&f, a, TSCHED_CLASS_TRAINING, 0, &m, &w, buf, sizeof buf);
        if (k == 0) {
            assert_int_equal(v, 0);
            assert_int_equal(w.code, TSCHED_WAIT_GUARANTEE);
            assert_string_equal(w.queue, "b");
            assert_int_equal(w.njobs, 1);
            assert_int_equal(w.jobs[0], 3);
            assert_non_null(strstr(buf, "queue 'b'"));
        } else {
            assert_int_equal(v, 1);
        }
        fx_fini(&f);
    }
}

/* One GPU, one queue: pending job 3 of a higher priority than R (or of a higher band) comes
 * first (Priority); of the same rank or lower, R goes (it was placed before). */
static void test_rank(void **state)
{
    (void)state;
    tsched_wait_t w;
    char buf[256];
    tsched_member_t m = on_gpu0(1000);
    struct {
        tsched_class_t cls;
        int32_t prio;
        int wait;
    } cases[] = {
        {TSCHED_CLASS_TRAINING, 5, 1},
        {TSCHED_CLASS_TRAINING, 0, 0},
        {TSCHED_CLASS_TRAINING, -5, 0},
        {TSCHED_CLASS_INTERACTIVE, -5, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct fx f;
        fx_init(&f, 1, 1, NULL);
        int a = fx_queue(&f, "a", NULL, 1000, 0, 1);
        assert_int_equal(fx_submit(&f, 3, a, cases[k].cls, cases[k].prio, 0, 1, 1000), 0);
        int v = ask(&f, a, TSCHED_CLASS_TRAINING, 0, &m, &w, buf, sizeof buf);
        assert_int_equal(v, !cases[k].wait);
        if (cases[k].wait) {
            assert_int_equal(w.code, TSCHED_WAIT_PRIORITY);
            assert_string_equal(w.queue, "a");
            assert_int_equal(w.jobs[0], 3);
        }
        fx_fini(&f);
    }
}

/* Two GPUs, queue a limited to one: job 4 of a holds half of GPU 1; R (half of GPU 0) fits
 * within the limit.  Pending job 3 of a, of a higher priority, would take GPU 0 whole but its
 * own limit holds it (half + one > one): R goes. */
static void test_rank_held_by_limit(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int a = fx_queue(&f, "a", NULL, 0, 1000, 1);
    tsched_member_t m = on_gpu0(500), m4 = on_gpu0(500);
    m4.gpu[0] = 1;
    run_on(&f, 4, a, TSCHED_CLASS_TRAINING, 0, 500, &m4);
    assert_int_equal(fx_submit(&f, 3, a, TSCHED_CLASS_TRAINING, 9, 0, 1, 1000), 0);
    tsched_wait_t w;
    char buf[256];
    assert_int_equal(ask(&f, a, TSCHED_CLASS_TRAINING, 0, &m, &w, buf, sizeof buf), 1);
    /* without the limit, 3 would come first */
    tsched_res_t g = {0, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    tsched_res_t lim = {TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    assert_int_equal(tsched_queue_update(f.s, a, &g, &lim, 1, NULL), 0);
    assert_int_equal(ask(&f, a, TSCHED_CLASS_TRAINING, 0, &m, &w, buf, sizeof buf), 0);
    assert_int_equal(w.code, TSCHED_WAIT_PRIORITY);
    fx_fini(&f);
}

/* Refusals, and the cluster as it was after every answer. */
static void test_refusals_and_unchanged(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 1, NULL);
    int a = fx_queue(&f, "a", NULL, 0, 0, 1);
    int b = fx_queue(&f, "b", NULL, 1000, 0, 1);
    tsched_member_t m = on_gpu0(1000);
    tsched_wait_t w;
    assert_int_equal(tsched_job_may_start(f.s, 9, &m, 1, &w), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(tsched_job_may_start(NULL, 9, &m, 1, &w), -1);
    assert_int_equal(errno, ENOENT);
    run_on(&f, 2, a, TSCHED_CLASS_TRAINING, 0, 500, &(tsched_member_t){0});
    errno = 0;
    assert_int_equal(tsched_job_may_start(f.s, 2, &m, 1, &w), -1);
    assert_int_equal(errno, EBUSY);
    assert_int_equal(tsched_job_remove(f.s, 2, 1), 0);
    assert_int_equal(fx_submit(&f, R, a, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), 0);
    assert_int_equal(tsched_job_may_start(f.s, R, &m, 2, &w), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tsched_job_may_start(f.s, R, NULL, 1, &w), -1);
    assert_int_equal(errno, EINVAL);
    tsched_member_t bad = m;
    bad.node = 7;
    assert_int_equal(tsched_job_may_start(f.s, R, &bad, 1, &w), -1);
    assert_int_equal(errno, EINVAL);
    /* owed job 3 pending: the answer (0) leaves the GPU free, as does a yes */
    assert_int_equal(fx_submit(&f, 3, b, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), 0);
    uint32_t ng, milli[TSCHED_MAX_NODE_GPUS];
    uint64_t cpu, mem, gmem[TSCHED_MAX_NODE_GPUS];
    assert_int_equal(tsched_job_may_start(f.s, R, &m, 1, NULL), 0);
    assert_int_equal(tsched_node_free(f.c, 0, &cpu, &mem, &ng, milli, gmem), 0);
    assert_int_equal(milli[0], 1000);
    assert_int_equal(cpu, 64000);
    assert_int_equal(tsched_job_remove(f.s, 3, 1), 0);
    assert_int_equal(tsched_job_may_start(f.s, R, &m, 1, NULL), 1);
    assert_int_equal(tsched_node_free(f.c, 0, &cpu, &mem, &ng, milli, gmem), 0);
    assert_int_equal(milli[0], 1000);
    /* and it may start as asked */
    assert_int_equal(tsched_job_started(f.s, R, &m, 1, 2), 0);
    fx_fini(&f);
}

/* --- the answers kept per waiting job (the generations) ----------------------------------- */

/* As tesseld's tick: job id (half of GPU 0 of node 0, queue q) submitted again, asked, asked
 * afresh with the cache off, removed.  The two answers must be the same, reason included; the
 * kept one's verdict is returned.  *fresh: whether the first answer was computed afresh. */
static int tick(struct fx *f, uint64_t id, int q, int32_t prio, tsched_wait_t *w, int *fresh)
{
    tsched_member_t m = on_gpu0(500);
    assert_int_equal(fx_submit(f, id, q, TSCHED_CLASS_TRAINING, prio, 0, 1, 500), 0);
    uint64_t before, after;
    tsched_may_start_stats(f->s, NULL, &before);
    int v = tsched_job_may_start(f->s, id, &m, 1, w);
    tsched_may_start_stats(f->s, NULL, &after);
    tsched_wait_t w2;
    memset(&w2, 0x5a, sizeof w2);
    tsched_may_start_cache(f->s, 0);
    int v2 = tsched_job_may_start(f->s, id, &m, 1, &w2);
    tsched_may_start_cache(f->s, 1);
    assert_int_equal(v, v2);
    assert_memory_equal(w, &w2, sizeof w2);
    assert_int_equal(tsched_job_remove(f->s, id, 2), 0);
    if (fresh)
        *fresh = after != before;
    return v;
}

/* The kept answer is given while nothing changed (ticks, a cycle that starts nothing, another
 * waiting job asked between), and each change makes it afresh, equal to a fresh answer: a
 * submission, a queue's limit, an end, a start, a node. */
static void test_cache_across_changes(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int a = fx_queue(&f, "a", NULL, 0, 1000, 1);
    tsched_member_t m2 = on_gpu0(1000);
    m2.gpu[0] = 1;
    run_on(&f, 2, a, TSCHED_CLASS_TRAINING, 0, 1000, &m2);
    tsched_wait_t w;
    int fresh;
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 0);
    assert_int_equal(w.code, TSCHED_WAIT_QUEUE_LIMIT);
    assert_true(fresh);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 0);
    assert_false(fresh);
    /* a pending job held by a's limit: a submission (afresh), then a cycle that starts nothing
     * changes nothing (kept) */
    assert_int_equal(fx_submit(&f, 6, a, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), 0);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 0);
    assert_true(fresh);
    fx_cycle(&f, 3);
    assert_int_equal(f.d.nstarts, 0);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 0);
    assert_false(fresh);
    /* another waiting job asked between: each keeps its own */
    assert_int_equal(tick(&f, 7, a, 0, &w, &fresh), 0);
    assert_true(fresh);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 0);
    assert_false(fresh);
    assert_int_equal(tick(&f, 7, a, 0, &w, &fresh), 0);
    assert_false(fresh);
    /* R asked again with other members: afresh */
    tsched_member_t other = on_gpu0(250);
    assert_int_equal(fx_submit(&f, R, a, TSCHED_CLASS_TRAINING, 0, 0, 1, 500), 0);
    uint64_t c0, c1;
    tsched_may_start_stats(f.s, NULL, &c0);
    assert_int_equal(tsched_job_may_start(f.s, R, &other, 1, &w), 0);
    tsched_may_start_stats(f.s, NULL, &c1);
    assert_int_equal(c1, c0 + 1);
    assert_int_equal(tsched_job_remove(f.s, R, 2), 0);
    /* a queue limit change: a unlimited; pending job 6 (priority 0, a whole GPU) then fits
     * only without R: equal rank, R goes; job 8 of priority 9 of the same shape outranks */
    tsched_res_t g = {0, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    tsched_res_t lim = {TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    assert_int_equal(tsched_queue_update(f.s, a, &g, &lim, 1, NULL), 0);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 1);
    assert_true(fresh);
    assert_int_equal(fx_submit(&f, 8, a, TSCHED_CLASS_TRAINING, 9, 0, 1, 1000), 0);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 0);
    assert_true(fresh);
    assert_int_equal(w.code, TSCHED_WAIT_PRIORITY);
    assert_int_equal(w.jobs[0], 8);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 0);
    assert_false(fresh);
    /* an end: job 2 leaves GPU 1, where 8 then fits beside R */
    assert_int_equal(tsched_job_remove(f.s, 2, 3), 0);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 1);
    assert_true(fresh);
    /* a start: 8 takes GPU 1; 6 then fits only without R, but does not outrank it */
    tsched_member_t m8 = m2;
    assert_int_equal(tsched_job_started(f.s, 8, &m8, 1, 3), 0);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 1);
    assert_true(fresh);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 1);
    assert_false(fresh);
    /* a node: afresh (the cluster's generation) */
    tsched_gpu_spec_t gs = {0};
    gs.model = "A100";
    gs.mem_bytes = 80 * GIB;
    gs.nvlink_island = gs.pcie_switch = -1;
    tsched_node_spec_t ns = {"node99", 64000, 512 * GIB, NULL, 1, &gs};
    assert_int_equal(tsched_cluster_add_node(f.c, &ns, NULL), 1);
    assert_int_equal(tick(&f, R, a, 0, &w, &fresh), 1);
    assert_true(fresh);
    fx_fini(&f);
}

static uint64_t prng = 7;

static uint32_t draw(uint32_t n)
{
    prng = prng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(prng >> 33) % n;
}

/* Random changes (submissions, ends, starts by a cycle, victims stopped, limits), and after
 * each two waiting jobs asked as tesseld asks, twice: every kept answer equals a fresh one
 * (tick()), and answers are kept when nothing changed. */
static void test_cache_random(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 2, 2, NULL);
    int a = fx_queue(&f, "a", NULL, 0, 2000, 1);
    int b = fx_queue(&f, "b", NULL, 2000, 0, 1);
    int qs[2] = {a, b};
    uint64_t next = 100, kept = 0, verdicts[2] = {0, 0};
    tsched_wait_t w;
    for (int step = 0; step < 400; step++) {
        switch (draw(5)) {
        case 0:
        case 1: {
            static const uint32_t milli[] = {250, 500, 1000};
            uint32_t ng = draw(4) == 0 ? 2 : 1;
            int q = qs[draw(2)];
            /* interactive only where a guarantee bounds it (b) */
            tsched_class_t cls =
                q == b && draw(3) == 0 ? TSCHED_CLASS_INTERACTIVE : TSCHED_CLASS_TRAINING;
            assert_int_equal(fx_submit(&f, next++, q, cls, (int32_t)draw(3), step, ng,
                                       ng > 1 ? 1000 : milli[draw(3)]),
                             0);
            break;
        }
        case 2:
            if (next > 100)
                (void)tsched_job_remove(f.s, 100 + draw((uint32_t)(next - 100)), step);
            break;
        case 3:
            fx_cycle(&f, step);
            fx_stop_victims(&f, step);
            break;
        default: {
            tsched_res_t g = {0, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
            tsched_res_t lim = {500 + 500 * draw(5), TSCHED_UNLIMITED, TSCHED_UNLIMITED,
                                TSCHED_UNLIMITED};
            assert_int_equal(tsched_queue_update(f.s, a, &g, &lim, 1, NULL), 0);
            break;
        }
        }
        for (int round = 0; round < 2; round++) {
            int fresh;
            verdicts[tick(&f, R, a, 1, &w, &fresh)]++;
            if (round)
                assert_false(fresh);
            else
                kept += !fresh;
            verdicts[tick(&f, 2, b, 0, &w, &fresh)]++;
            if (round)
                assert_false(fresh);
            else
                kept += !fresh;
        }
    }
    uint64_t asked, computed;
    tsched_may_start_stats(f.s, &asked, &computed);
    assert_int_equal(asked, 400 * 2 * 2 * 2);
    /* afresh: the questions with the cache off (half), and the first rounds not kept */
    assert_int_equal(computed, asked / 2 + 400 * 2 - kept);
    /* some steps change nothing a question reads (a removal of a job gone, a cycle that
     * starts nothing): their first round is kept too */
    assert_true(kept > 0);
    /* both answers, often */
    assert_true(verdicts[0] > 100 && verdicts[1] > 100);
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_limit),
        cmocka_unit_test(test_ancestor_limit),
        cmocka_unit_test(test_guarantee_limit),
        cmocka_unit_test(test_owed),
        cmocka_unit_test(test_rank),
        cmocka_unit_test(test_rank_held_by_limit),
        cmocka_unit_test(test_refusals_and_unchanged),
        cmocka_unit_test(test_cache_across_changes),
        cmocka_unit_test(test_cache_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
