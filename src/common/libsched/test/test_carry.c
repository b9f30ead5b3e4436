/* test_carry.c - what a cycle carries over from the one before it (issue 15: a reason that a
 * queue's unchanged limit gives again is neither rewritten nor digested again; a turn held by
 * a limit is remembered for the next job of the same kind; the leaf of the fair-share descent
 * is kept while no usage changes; the shape tables are emptied entry by entry; bookkeeping in
 * one pass) decides exactly what a cycle from scratch decides.
 *
 * One handle lives through a sequence of changes (jobs held by a queue's limit, more of them
 * of another shape, removals, the limit raised, closed, a running job gone, room for a job
 * that found none before), with a cycle after each.  After every change a fresh handle is
 * built from the same state (the same queues, the running jobs started on the same GPUs, the
 * pending jobs submitted) and runs one cycle: the starts, victims, reservations and every
 * pending job's reason (code, figures and the line a person reads) must be the same in both.
 * And the list of changed reasons must name exactly the jobs whose reason differs from the
 * one before.
 *
 * Two nodes of 4 A100s; queue "train" (guarantee 4 GPUs) and "held" (no guarantee, a limit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "queue_fixture.h"
#include "tessel/sched_wait.h"

#define MAXJ 128

enum { GONE = 0, PENDING, RUNNING };

/* The state both handles are built to, as the test knows it. */
struct world {
    uint64_t held_limit; /* milli-GPU; may be 0 (closed) */
    struct {
        int state;
        int q; /* 0 train, 1 held */
        uint32_t ngpus, milli;
        tsched_member_t m; /* RUNNING: where it runs */
    } job[MAXJ];
    char why[MAXJ][512]; /* the reasons after the carried handle's last cycle */
};

static tsched_sched_config_t config(void)
{
    tsched_sched_config_t cfg;
    tsched_sched_config_default(&cfg);
    cfg.history_weight = 0; /* fair share from usage now: no history to rebuild */
    cfg.reserve_after = 1e9;
    return cfg;
}

/* A queue governed on GPUs only, with the limit as given (0 closes it). */
static int queue(struct fx *f, const char *name, uint64_t g, uint64_t lim)
{
    tsched_queue_spec_t q;
    memset(&q, 0, sizeof q);
    q.name = name;
    q.guarantee.milli_gpu = g;
    q.guarantee.gpu_mem_bytes = q.guarantee.cpu_milli = q.guarantee.mem_bytes = TSCHED_UNLIMITED;
    q.limit.milli_gpu = lim;
    q.limit.gpu_mem_bytes = q.limit.cpu_milli = q.limit.mem_bytes = TSCHED_UNLIMITED;
    q.weight = 1;
    int i = tsched_queue_add(f->s, &q, NULL);
    assert_true(i >= 0);
    return i;
}

static void set_limit(struct fx *f, struct world *w, uint64_t lim)
{
    tsched_res_t g = {0, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    tsched_res_t l = {lim, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    assert_int_equal(tsched_queue_update(f->s, 1, &g, &l, 1, NULL), 0);
    w->held_limit = lim;
}

static void submit(struct fx *f, struct world *w, uint64_t id, int q, uint32_t ngpus,
                   uint32_t milli)
{
    assert_true(id < MAXJ);
    w->job[id].state = PENDING;
    w->job[id].q = q;
    w->job[id].ngpus = ngpus;
    w->job[id].milli = milli;
    assert_int_equal(fx_submit(f, id, q, TSCHED_CLASS_TRAINING, 0, (double)id, ngpus, milli), 0);
}

static void job_remove(struct fx *f, struct world *w, uint64_t id, double now)
{
    assert_int_equal(tsched_job_remove(f->s, id, now), 0);
    w->job[id].state = GONE;
}

/* The reason of job id as one line, with its code and figures in front. */
static void reason(const tsched_sched_t *s, uint64_t id, char *buf, size_t len)
{
    tsched_wait_t w;
    assert_int_equal(tsched_job_wait(s, id, &w), 0);
    int n = snprintf(buf, len, "%d %d %s %d %llu %llu %llu | ", (int)w.code, w.never, w.queue,
                     w.res, (unsigned long long)w.bound, (unsigned long long)w.used,
                     (unsigned long long)w.want);
    assert_true(n > 0 && (size_t)n < len);
    tsched_wait_format(&w, buf + n, len - (size_t)n);
}

static int named(const tsched_sched_t *s, uint64_t id)
{
    const uint64_t *ids;
    size_t n = tsched_waits_changed(s, &ids);
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* A cycle of the carried handle at now, checked against a fresh handle built from w; the
 * starts are confirmed in both and in w.  Returns the starts. */
static size_t cycle_both(struct fx *f, struct world *w, double now)
{
    tsched_sched_config_t cfg = config();
    struct fx g;
    fx_init(&g, 2, 4, &cfg);
    assert_int_equal(queue(&g, "train", 4000, TSCHED_UNLIMITED), 0);
    assert_int_equal(queue(&g, "held", 0, w->held_limit), 1);
    for (uint64_t id = 0; id < MAXJ; id++) {
        if (w->job[id].state == GONE)
            continue;
        assert_int_equal(fx_submit(&g, id, w->job[id].q, TSCHED_CLASS_TRAINING, 0, (double)id,
                                   w->job[id].ngpus, w->job[id].milli),
                         0);
        if (w->job[id].state == RUNNING)
            assert_int_equal(tsched_job_started(g.s, id, &w->job[id].m, 1, 0), 0);
    }

    fx_cycle(f, now);
    fx_cycle(&g, now);
    assert_int_equal(f->d.nstarts, g.d.nstarts);
    for (size_t i = 0; i < f->d.nstarts; i++) {
        assert_int_equal(f->d.starts[i].job, g.d.starts[i].job);
        assert_int_equal(f->d.starts[i].nmembers, 1);
        assert_memory_equal(f->d.starts[i].members, g.d.starts[i].members,
                            sizeof *f->d.starts[i].members);
    }
    assert_int_equal(f->d.nvictims, g.d.nvictims);
    assert_int_equal(f->d.plans, g.d.plans);
    assert_int_equal(f->d.reserved, g.d.reserved);
    for (size_t i = 0; i < f->d.nstarts; i++) {
        uint64_t id = f->d.starts[i].job;
        w->job[id].state = RUNNING;
        w->job[id].m = f->d.starts[i].members[0];
    }
    size_t nchanged = 0;
    for (uint64_t id = 0; id < MAXJ; id++) {
        if (w->job[id].state != PENDING)
            continue;
        char a[512], b[512];
        reason(f->s, id, a, sizeof a);
        reason(g.s, id, b, sizeof b);
        assert_string_equal(a, b);
        /* named as changed exactly when it differs from the reason before (a new job's first
         * reason is a change) */
        int differs = strcmp(a, w->why[id]) != 0;
        assert_int_equal(named(f->s, id), differs);
        nchanged += (size_t)differs;
        snprintf(w->why[id], sizeof w->why[id], "%s", a);
    }
    assert_int_equal(tsched_waits_changed(f->s, NULL), nchanged);
    /* "train" is owed nothing (it uses more than its guarantee), "held" has no guarantee */
    assert_int_equal(tsched_queue_satisfied(f->s, 0), tsched_queue_satisfied(g.s, 0));
    assert_int_equal(tsched_queue_satisfied(f->s, 1), 1);
    fx_fini(&g);
    return f->d.nstarts;
}

static void test_held_queue_carried_over(void **state)
{
    (void)state;
    static struct world w;
    memset(&w, 0, sizeof w);
    tsched_sched_config_t cfg = config();
    struct fx f;
    fx_init(&f, 2, 4, &cfg);
    assert_int_equal(queue(&f, "train", 4000, TSCHED_UNLIMITED), 0);
    assert_int_equal(queue(&f, "held", 0, 1000), 1);
    w.held_limit = 1000;

    /* held: job 40 (1 GPU) fills its limit, 41..70 wait on it; train: 1..9 of 1 GPU, 7 fit */
    for (uint64_t id = 1; id <= 9; id++)
        submit(&f, &w, id, 0, 1, 0);
    for (uint64_t id = 40; id <= 70; id++)
        submit(&f, &w, id, 1, 1, 0);
    assert_int_equal(cycle_both(&f, &w, 1), 8);
    assert_int_equal(w.job[40].state, RUNNING);
    assert_true(strstr(w.why[41], "QueueLimit: queue 'held'") != NULL);
    assert_true(strstr(w.why[8], "Resources") != NULL || strstr(w.why[9], "Resources") != NULL);

    /* nothing changed: the same reasons, none named */
    assert_int_equal(cycle_both(&f, &w, 2), 0);
    assert_int_equal(tsched_waits_changed(f.s, NULL), 0);

    /* more held jobs of another shape (half a GPU), two held jobs gone */
    for (uint64_t id = 71; id <= 80; id++)
        submit(&f, &w, id, 1, 1, 500);
    job_remove(&f, &w, 45, 3);
    job_remove(&f, &w, 60, 3);
    assert_int_equal(cycle_both(&f, &w, 3), 0);
    assert_true(tsched_waits_changed(f.s, NULL) == 10);

    /* the limit raised by half a GPU: the used figure stays, the bound changes for all; the
     * cluster is full, so a half-GPU job finds no room (Resources) */
    set_limit(&f, &w, 1500);
    assert_int_equal(cycle_both(&f, &w, 4), 0);
    assert_true(strstr(w.why[71], "Resources") != NULL);
    assert_true(strstr(w.why[41], "QueueLimit") != NULL);

    /* closed (limit 0) */
    set_limit(&f, &w, 0);
    assert_int_equal(cycle_both(&f, &w, 5), 0);
    assert_true(strstr(w.why[41], "closed") != NULL);
    assert_int_equal(cycle_both(&f, &w, 6), 0);
    assert_int_equal(tsched_waits_changed(f.s, NULL), 0);

    /* open again at 1.5 GPUs, and a train job ends: the half-GPU held job 71 takes half of
     * the freed GPU, train's next job does not fit beside it */
    set_limit(&f, &w, 1500);
    uint64_t gone = 0;
    for (uint64_t id = 1; id <= 9 && !gone; id++)
        if (w.job[id].state == RUNNING)
            gone = id;
    job_remove(&f, &w, gone, 7);
    assert_true(cycle_both(&f, &w, 7) >= 1);
    assert_int_equal(w.job[71].state, RUNNING);

    /* the next cycle: the held jobs that had their turn before job 71 started see its usage
     * now ("uses 1.5"), those after it saw it already */
    assert_int_equal(cycle_both(&f, &w, 8), 0);
    assert_true(strstr(w.why[41], "uses 1.5") != NULL);
    assert_true(tsched_waits_changed(f.s, NULL) > 0);
    /* and once more with nothing changed */
    assert_int_equal(cycle_both(&f, &w, 9), 0);
    assert_int_equal(tsched_waits_changed(f.s, NULL), 0);

    /* the held queue closed and job 71 gone: a whole GPU free.  Train's job 8, which found no
     * room in every cycle so far, starts: nothing of an earlier cycle's failed shapes remains */
    assert_int_equal(w.job[8].state, PENDING);
    set_limit(&f, &w, 0);
    job_remove(&f, &w, 71, 10);
    assert_int_equal(cycle_both(&f, &w, 10), 1);
    assert_int_equal(w.job[8].state, RUNNING);

    /* the reasons forgotten (tesseld after a failed store write): every one named again */
    tsched_waits_reset(f.s);
    memset(w.why, 0, sizeof w.why);
    assert_int_equal(cycle_both(&f, &w, 11), 0);
    assert_true(tsched_waits_changed(f.s, NULL) > 30);
    fx_fini(&f);
}

/* One queue, guarantee 1 GPU, no limit, 4 GPUs.  Interactive job 1 runs on its guarantee.
 * Interactive jobs 2 and 4 (1 GPU each) would take its non-preemptible work beyond the
 * guarantee: GuaranteeLimit, the second as the first (the turn remembered); training job 3
 * (the same GPU, after them in the queue's order) may borrow and starts; then a half-GPU
 * interactive job 5 still does not fit the guarantee, and a queue limit of 2.5 GPUs (used 2)
 * holds training job 6 (1 GPU) but not training job 7 (half a GPU). */
static void test_held_turn_kinds(void **state)
{
    (void)state;
    tsched_sched_config_t cfg = config();
    struct fx f;
    fx_init(&f, 1, 4, &cfg);
    int q = queue(&f, "mixed", 1000, TSCHED_UNLIMITED);
    assert_int_equal(fx_submit(&f, 1, q, TSCHED_CLASS_INTERACTIVE, 0, 1, 1, 0), 0);
    fx_cycle(&f, 1);
    assert_true(fx_started(&f, 1));
    assert_int_equal(fx_submit(&f, 2, q, TSCHED_CLASS_INTERACTIVE, 0, 2, 1, 0), 0);
    assert_int_equal(fx_submit(&f, 3, q, TSCHED_CLASS_TRAINING, 0, 3, 1, 0), 0);
    assert_int_equal(fx_submit(&f, 4, q, TSCHED_CLASS_INTERACTIVE, 0, 4, 1, 0), 0);
    fx_cycle(&f, 2);
    assert_int_equal(f.d.nstarts, 1);
    assert_true(fx_started(&f, 3));
    char buf[512];
    reason(f.s, 2, buf, sizeof buf);
    assert_non_null(strstr(buf, "GuaranteeLimit: "));
    char b4[512];
    reason(f.s, 4, b4, sizeof b4);
    assert_string_equal(buf, b4);

    tsched_res_t g = {1000, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    tsched_res_t l = {2500, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    assert_int_equal(tsched_queue_update(f.s, q, &g, &l, 1, NULL), 0);
    assert_int_equal(fx_submit(&f, 5, q, TSCHED_CLASS_INTERACTIVE, 0, 5, 1, 500), 0);
    assert_int_equal(fx_submit(&f, 6, q, TSCHED_CLASS_TRAINING, 0, 6, 1, 0), 0);
    assert_int_equal(fx_submit(&f, 7, q, TSCHED_CLASS_TRAINING, 0, 7, 1, 500), 0);
    fx_cycle(&f, 3);
    assert_int_equal(f.d.nstarts, 1);
    assert_true(fx_started(&f, 7));
    reason(f.s, 5, buf, sizeof buf);
    assert_non_null(strstr(buf, "GuaranteeLimit: "));
    reason(f.s, 6, buf, sizeof buf);
    assert_non_null(strstr(buf, "QueueLimit: queue 'mixed' would exceed its limit gpu=2.5"));
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_queue_carried_over),
        cmocka_unit_test(test_held_turn_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
