/* test_ngpu.c - queue limits in normalised GPUs (issue 22, item 4; docs/scheduler-queues.md,
 * "Normalised GPUs"): each GPU counts its relative speed, a running job what it holds at its
 * GPUs' speeds, a pending job what it would hold on the fastest GPU it may use.
 *
 * One node with 2 "A100" (speed 3000: one counts as three T4s) and 4 "T4" (speed 1000, the
 * reference); figures worked out by hand in the comments.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tessel/sched.h"
#include "tessel/sched_queue.h"
#include "tessel/sched_wait.h"

#define GIB (1024ull * 1024 * 1024)

struct nx {
    tsched_cluster_t *c;
    tsched_policy_t *p;
    tsched_sched_t *s;
    tsched_decisions_t d;
};

static void nx_init(struct nx *f)
{
    memset(f, 0, sizeof *f);
    f->c = tsched_cluster_create();
    assert_non_null(f->c);
    tsched_gpu_spec_t g[6];
    memset(g, 0, sizeof g);
    for (int i = 0; i < 6; i++) {
        g[i].model = i < 2 ? "A100" : "T4";
        g[i].speed_milli = i < 2 ? 3000 : 1000;
        g[i].mem_bytes = (i < 2 ? 80 : 16) * GIB;
        g[i].nvlink_island = -1;
        g[i].pcie_switch = -1;
    }
    tsched_node_spec_t ns = {"n0", 64000, 512 * GIB, NULL, 6, g};
    assert_int_equal(tsched_cluster_add_node(f->c, &ns, NULL), 0);
    f->p = tsched_policy_create("binpack", NULL);
    assert_non_null(f->p);
    f->s = tsched_sched_create(f->c, f->p, NULL, NULL);
    assert_non_null(f->s);
}

static void nx_fini(struct nx *f)
{
    tsched_sched_destroy(f->s);
    tsched_policy_destroy(f->p);
    tsched_cluster_destroy(f->c);
}

/* A queue that governs nothing, limited to ngpu (normalised milli-GPU) only. */
static tsched_queue_spec_t spec_of(const char *name, uint64_t ngpu)
{
    tsched_queue_spec_t q;
    memset(&q, 0, sizeof q);
    q.name = name;
    q.guarantee =
        (tsched_res_t){TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    q.limit = q.guarantee;
    q.own = TSCHED_OWN_NGPU_LIMIT;
    q.ngpu_limit = ngpu;
    return q;
}

static int submit(struct nx *f, uint64_t id, int q, double t, uint32_t milli, const char *models)
{
    tsched_qjob_t j;
    memset(&j, 0, sizeof j);
    j.id = id;
    j.queue = q;
    j.cls = TSCHED_CLASS_TRAINING;
    j.arrival = t;
    j.req.ngpus = 1;
    j.req.milli_gpu = milli;
    j.req.cpu_milli = 1000;
    j.req.mem_bytes = GIB;
    j.req.gang = 1;
    j.req.models = models;
    return tsched_job_submit(f->s, &j, NULL);
}

static size_t cycle(struct nx *f, double now)
{
    assert_int_equal(tsched_sched_cycle(f->s, now, &f->d, NULL), 0);
    for (size_t i = 0; i < f->d.nstarts; i++)
        assert_int_equal(tsched_job_started(f->s, f->d.starts[i].job, f->d.starts[i].members,
                                            f->d.starts[i].nmembers, now),
                         0);
    return f->d.nstarts;
}

static tsched_queue_stat_t stat_of(struct nx *f, int q, double now)
{
    tsched_queue_stat_t st;
    assert_int_equal(tsched_queue_stat(f->s, q, now, &st), 0);
    return st;
}

static void test_speeds(void **state)
{
    (void)state;
    struct nx f;
    nx_init(&f);
    assert_int_equal(tsched_gpu_speed(f.c, 0, 0), 3000);
    assert_int_equal(tsched_gpu_speed(f.c, 0, 5), 1000);
    assert_int_equal(tsched_gpu_speed(f.c, 0, 6), 0);
    assert_int_equal(tsched_gpu_speed(f.c, 1, 0), 0);
    tsched_job_t any = {.ngpus = 1, .milli_gpu = 1000, .gang = 1};
    assert_int_equal(tsched_job_top_speed(f.c, &any), 3000);
    tsched_job_t t4 = any;
    t4.models = "T4";
    assert_int_equal(tsched_job_top_speed(f.c, &t4), 1000);
    tsched_job_t none = any;
    none.models = "H100";
    assert_int_equal(tsched_job_top_speed(f.c, &none), 1000);
    tsched_job_t big = any; /* 40 GiB: only the A100s (80) have it, not the T4s (16) */
    big.gpu_mem_bytes = 40 * GIB;
    assert_int_equal(tsched_job_top_speed(f.c, &big), 3000);
    tsched_job_t small = any; /* what every GPU has: still the fastest */
    small.gpu_mem_bytes = 8 * GIB;
    assert_int_equal(tsched_job_top_speed(f.c, &small), 3000);
    tsched_job_t huge = any; /* more than any GPU: no GPU, the reference */
    huge.gpu_mem_bytes = 100 * GIB;
    assert_int_equal(tsched_job_top_speed(f.c, &huge), 1000);
    nx_fini(&f);
}

/* Limit ngpu=3 (3000).  Three one-T4 jobs count 1000 each: all start, 3000 used.  A fourth T4
 * job would make 4000: it waits, QueueLimit on ngpu (res 4) with used 3000, want 1000. */
static void test_limit_counts_t4s(void **state)
{
    (void)state;
    struct nx f;
    nx_init(&f);
    tsched_queue_spec_t qs = spec_of("mixed", 3000);
    int q = tsched_queue_add(f.s, &qs, NULL);
    assert_true(q >= 0);
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(submit(&f, i, q, (double)i, 1000, "T4"), 0);
    assert_int_equal(cycle(&f, 10), 3);
    tsched_queue_stat_t st = stat_of(&f, q, 10);
    assert_int_equal(st.ngpu_used, 3000);
    assert_int_equal(st.ngpu_limit, 3000);
    assert_int_equal(st.used.milli_gpu, 3000);
    tsched_wait_t w;
    assert_int_equal(tsched_job_wait(f.s, 3, &w), 0);
    assert_int_equal(w.code, TSCHED_WAIT_QUEUE_LIMIT);
    assert_int_equal(w.res, 4);
    assert_int_equal(w.bound, 3000);
    assert_int_equal(w.used, 3000);
    assert_int_equal(w.want, 1000);
    char buf[256];
    assert_true(tsched_wait_format(&w, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "ngpu=3"));
    /* one T4 job ends: the fourth starts */
    assert_int_equal(tsched_job_remove(f.s, 0, 11), 0);
    assert_int_equal(cycle(&f, 11), 1);
    assert_int_equal(stat_of(&f, q, 11).ngpu_used, 3000);
    nx_fini(&f);
}

/* One A100 is three T4s: under ngpu=3 an A100 job takes the whole limit (3000), and a T4 job
 * then waits; half an A100 counts 1500. */
static void test_a100_counts_three(void **state)
{
    (void)state;
    struct nx f;
    nx_init(&f);
    tsched_queue_spec_t qs = spec_of("mixed", 3000);
    int q = tsched_queue_add(f.s, &qs, NULL);
    assert_int_equal(submit(&f, 1, q, 0, 1000, "A100"), 0);
    assert_int_equal(cycle(&f, 1), 1);
    assert_int_equal(stat_of(&f, q, 1).ngpu_used, 3000);
    assert_int_equal(submit(&f, 2, q, 2, 1000, "T4"), 0);
    assert_int_equal(cycle(&f, 3), 0);
    assert_int_equal(tsched_job_remove(f.s, 1, 4), 0);
    assert_int_equal(stat_of(&f, q, 4).ngpu_used, 0);
    assert_int_equal(submit(&f, 3, q, 5, 500, "A100"), 0);
    assert_int_equal(cycle(&f, 6), 2); /* 1000 (T4) + 1500 (half an A100) = 2500 */
    assert_int_equal(stat_of(&f, q, 6).ngpu_used, 2500);
    nx_fini(&f);
}

/* A job that accepts any model counts at the fastest (3000) while pending: under ngpu=2 it
 * never starts, even though a T4 would hold only 1000 (the limit must hold wherever it lands),
 * and tsched_job_feasible says never.  Named to the T4s it starts. */
static void test_pending_counts_fastest(void **state)
{
    (void)state;
    struct nx f;
    nx_init(&f);
    tsched_queue_spec_t qs = spec_of("small", 2000);
    int q = tsched_queue_add(f.s, &qs, NULL);
    assert_int_equal(submit(&f, 1, q, 0, 1000, NULL), 0);
    assert_int_equal(cycle(&f, 1), 0);
    tsched_wait_t w;
    assert_int_equal(tsched_job_wait(f.s, 1, &w), 0);
    assert_int_equal(w.code, TSCHED_WAIT_QUEUE_LIMIT);
    assert_int_equal(w.res, 4);
    assert_int_equal(w.want, 3000);
    assert_int_equal(
        tsched_job_feasible(
            f.c, f.p, &qs, 1, TSCHED_CLASS_TRAINING,
            &(tsched_job_t){
                .ngpus = 1, .milli_gpu = 1000, .gang = 1, .cpu_milli = 1000, .mem_bytes = GIB},
            &w),
        0);
    assert_int_equal(w.never, 1);
    assert_int_equal(w.res, 4);
    assert_int_equal(tsched_job_feasible(f.c, f.p, &qs, 1, TSCHED_CLASS_TRAINING,
                                         &(tsched_job_t){.ngpus = 1,
                                                         .milli_gpu = 1000,
                                                         .gang = 1,
                                                         .cpu_milli = 1000,
                                                         .mem_bytes = GIB,
                                                         .models = "T4"},
                                         &w),
                     1);
    assert_int_equal(tsched_job_remove(f.s, 1, 2), 0);
    assert_int_equal(submit(&f, 2, q, 3, 1000, "T4"), 0);
    assert_int_equal(cycle(&f, 4), 1);
    assert_int_equal(stat_of(&f, q, 4).ngpu_used, 1000);
    nx_fini(&f);
}

/* The limit is kept by tsched_queue_update (which knows only the four resources), changed and
 * cleared by tsched_queue_set_ngpu_limit; a parent's ngpu limit bounds its children's jobs. */
static void test_update_and_parent(void **state)
{
    (void)state;
    struct nx f;
    nx_init(&f);
    tsched_queue_spec_t ps = spec_of("dept", 3000);
    int parent = tsched_queue_add(f.s, &ps, NULL);
    tsched_queue_spec_t cs = spec_of("proj", 0);
    cs.parent = "dept";
    cs.own = 0; /* no limit of its own */
    int child = tsched_queue_add(f.s, &cs, NULL);
    assert_true(child >= 0);
    assert_int_equal(stat_of(&f, child, 0).ngpu_limit, TSCHED_UNLIMITED);
    tsched_res_t un = {TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    assert_int_equal(tsched_queue_update(f.s, parent, &un, &un, 2, NULL), 0);
    assert_int_equal(stat_of(&f, parent, 0).ngpu_limit, 3000);
    for (uint64_t i = 0; i < 4; i++)
        assert_int_equal(submit(&f, i, child, (double)i, 1000, "T4"), 0);
    assert_int_equal(cycle(&f, 5), 3);
    assert_int_equal(stat_of(&f, parent, 5).ngpu_used, 3000);
    assert_int_equal(stat_of(&f, child, 5).ngpu_used, 3000);
    assert_int_equal(tsched_queue_set_ngpu_limit(f.s, parent, TSCHED_UNLIMITED, NULL), 0);
    assert_int_equal(cycle(&f, 6), 1);
    assert_int_equal(tsched_queue_set_ngpu_limit(f.s, 7, 1000, NULL), -1);
    assert_int_equal(errno, EINVAL);
    nx_fini(&f);
}

/* A job stopped (preempted, requeued) counts its pending bound again, and its usage leaves. */
static void test_stop_restores(void **state)
{
    (void)state;
    struct nx f;
    nx_init(&f);
    tsched_queue_spec_t qs = spec_of("q", 6000);
    int q = tsched_queue_add(f.s, &qs, NULL);
    assert_int_equal(submit(&f, 1, q, 0, 1000, "T4"), 0);
    assert_int_equal(cycle(&f, 1), 1);
    assert_int_equal(tsched_job_stopped(f.s, 1, 2), 0);
    tsched_queue_stat_t st = stat_of(&f, q, 2);
    assert_int_equal(st.ngpu_used, 0);
    assert_int_equal(st.pending, 1);
    assert_int_equal(cycle(&f, 3), 1);
    assert_int_equal(stat_of(&f, q, 3).ngpu_used, 1000);
    nx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_speeds),
        cmocka_unit_test(test_limit_counts_t4s),
        cmocka_unit_test(test_a100_counts_three),
        cmocka_unit_test(test_pending_counts_fastest),
        cmocka_unit_test(test_update_and_parent),
        cmocka_unit_test(test_stop_restores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
