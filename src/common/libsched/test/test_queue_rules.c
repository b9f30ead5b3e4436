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

/* One node of 4 GPUs; job 1 (queue "q", 1 GPU) holds GPU 0.  Job 10 asks for 4 GPUs at t = 0
 * and cannot fit; job 11 (1 GPU) would.  Whether 11 passes 10 depends on 10's reservation,
 * which it gets after the reserve_after in effect for its queue. */
static void reserve_case(struct fx *f, int q)
{
    assert_int_equal(fx_submit(f, 1, q, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), 0);
    fx_cycle(f, 0);
    assert_int_equal(f->d.nstarts, 1);
    assert_int_equal(fx_submit(f, 10, q, TSCHED_CLASS_TRAINING, 0, 0, 4, 1000), 0);
}

static void set_reserve(struct fx *f, int q, double after)
{
    assert_int_equal(
        tsched_queue_set_options(f->s, q, TSCHED_OWN_RESERVE_AFTER, after, TSCHED_PACK, NULL), 0);
}

/* reserve_after per queue, inherited down the tree: parent "dept" says 30 s, child "proj"
 * inherits it (t = 29: no reservation, job 11 passes; t = 30: reserved, job 12 waits); a child
 * with its own 0 reserves at once; the scheduler-wide default (900 s) applies to a queue
 * with none on its path. */
static void test_reserve_after_per_queue(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int dept = fx_queue(&f, "dept", NULL, 0, 0, 1);
    int proj = fx_queue(&f, "proj", "dept", 0, 0, 1);
    set_reserve(&f, dept, 30);
    tsched_queue_stat_t st;
    assert_int_equal(tsched_queue_stat(f.s, proj, 0, &st), 0);
    assert_true(st.reserve_after == 30.0);
    assert_int_equal(st.own, 0);
    reserve_case(&f, proj);
    assert_int_equal(fx_submit(&f, 11, proj, TSCHED_CLASS_TRAINING, 0, 1, 1, 1000), 0);
    fx_cycle(&f, 29);
    assert_int_equal(f.d.reserved, 0);
    assert_true(fx_started(&f, 11));
    assert_int_equal(fx_submit(&f, 12, proj, TSCHED_CLASS_TRAINING, 0, 29, 1, 1000), 0);
    fx_cycle(&f, 30);
    assert_int_equal(f.d.reserved, 1);
    assert_int_equal(f.d.nstarts, 0); /* 12 would fit, but the node is held for 10 */
    fx_fini(&f);

    /* its own 0: reserved at the first cycle */
    fx_init(&f, 1, 4, NULL);
    dept = fx_queue(&f, "dept", NULL, 0, 0, 1);
    proj = fx_queue(&f, "proj", "dept", 0, 0, 1);
    set_reserve(&f, dept, 30);
    set_reserve(&f, proj, 0);
    reserve_case(&f, proj);
    assert_int_equal(fx_submit(&f, 11, proj, TSCHED_CLASS_TRAINING, 0, 0, 1, 1000), 0);
    fx_cycle(&f, 0);
    /* 10 reserves the node; 11 then cannot start there and, pending >= 0 s, reserves too */
    assert_int_equal(f.d.reserved, 2);
    assert_int_equal(f.d.nstarts, 0);
    /* back to inheriting: dept's 30 s again, so at t = 1 nothing is held... */
    assert_int_equal(tsched_queue_set_options(f.s, proj, 0, 0, TSCHED_PACK, NULL), 0);
    assert_int_equal(tsched_queue_stat(f.s, proj, 1, &st), 0);
    assert_true(st.reserve_after == 30.0);
    fx_fini(&f);

    /* nothing on the path: the scheduler's setting (default 900 s) */
    fx_init(&f, 1, 4, NULL);
    int solo = fx_queue(&f, "solo", NULL, 0, 0, 1);
    reserve_case(&f, solo);
    fx_cycle(&f, 899);
    assert_int_equal(f.d.reserved, 0);
    fx_cycle(&f, 900);
    assert_int_equal(f.d.reserved, 1);
    fx_fini(&f);
}

static void test_options_refused(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 1, NULL);
    int q = fx_queue(&f, "q", NULL, 0, 0, 1);
    assert_int_equal(tsched_queue_set_options(f.s, q, TSCHED_OWN_RESERVE_AFTER, -1, 0, NULL), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(
        tsched_queue_set_options(f.s, q, TSCHED_OWN_PLACEMENT, 0, (tsched_placement_t)7, NULL), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tsched_queue_set_options(f.s, 5, 0, 0, TSCHED_PACK, NULL), -1);
    assert_int_equal(errno, EINVAL);
    tsched_queue_spec_t spec = {.name = "r", .own = TSCHED_OWN_RESERVE_AFTER};
    spec.reserve_after = 1.0 / 0.0;
    spec.guarantee = (tsched_res_t){0, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    spec.limit =
        (tsched_res_t){TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    assert_int_equal(tsched_queue_add(f.s, &spec, NULL), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tsched_queue_count(f.s), 1);
    fx_fini(&f);
}

/* The GPU of each start of the last cycle, in order. */
static unsigned gpus_of_starts(const struct fx *f, uint8_t *gpu)
{
    for (size_t i = 0; i < f->d.nstarts; i++)
        gpu[i] = f->d.starts[i].members[0].gpu[0];
    return (unsigned)f->d.nstarts;
}

/* Placement per queue, one node of 4 GPUs, four 0.25-GPU jobs.  A spread queue puts them on
 * GPUs 0, 1, 2, 3 (an idle GPU each); a pack queue (the fixture's binpack policy) puts all
 * four on GPU 0; a child inherits spread from its parent; a whole-GPU job of a spread queue
 * is placed by the scheduler's policy. */
static void test_spread_placement(void **state)
{
    (void)state;
    static const struct {
        unsigned own_parent, own_child;
        tsched_placement_t parent, child;
        uint8_t want[4];
    } cases[] = {
        {TSCHED_OWN_PLACEMENT, 0, TSCHED_SPREAD, TSCHED_PACK, {0, 1, 2, 3}}, /* inherited */
        {TSCHED_OWN_PLACEMENT, TSCHED_OWN_PLACEMENT, TSCHED_SPREAD, TSCHED_PACK, {0, 0, 0, 0}},
        {0, 0, TSCHED_PACK, TSCHED_PACK, {0, 0, 0, 0}}, /* the settings' default: pack */
        {0, TSCHED_OWN_PLACEMENT, TSCHED_PACK, TSCHED_SPREAD, {0, 1, 2, 3}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct fx f;
        fx_init(&f, 1, 4, NULL);
        int dept = fx_queue(&f, "dept", NULL, 0, 0, 1);
        int proj = fx_queue(&f, "proj", "dept", 0, 0, 1);
        assert_int_equal(
            tsched_queue_set_options(f.s, dept, cases[c].own_parent, 0, cases[c].parent, NULL), 0);
        assert_int_equal(
            tsched_queue_set_options(f.s, proj, cases[c].own_child, 0, cases[c].child, NULL), 0);
        uint8_t got[4] = {9, 9, 9, 9};
        for (int i = 0; i < 4; i++) {
            assert_int_equal(fx_submit(&f, (uint64_t)i, proj, TSCHED_CLASS_TRAINING, 0, i, 1, 250),
                             0);
            fx_cycle(&f, i);
            assert_int_equal(gpus_of_starts(&f, &got[i]), 1);
        }
        assert_memory_equal(got, cases[c].want, 4);
        fx_fini(&f);
    }
    /* a whole GPU in a spread queue: binpack's choice, the first free GPU after job 0's */
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int q = fx_queue(&f, "q", NULL, 0, 0, 1);
    assert_int_equal(tsched_queue_set_options(f.s, q, TSCHED_OWN_PLACEMENT, 0, TSCHED_SPREAD, NULL),
                     0);
    tsched_queue_stat_t st;
    assert_int_equal(tsched_queue_stat(f.s, q, 0, &st), 0);
    assert_int_equal(st.placement, TSCHED_SPREAD);
    assert_int_equal(fx_submit(&f, 1, q, TSCHED_CLASS_TRAINING, 0, 0, 1, 500), 0);
    assert_int_equal(fx_submit(&f, 2, q, TSCHED_CLASS_TRAINING, 0, 1, 1, 500), 0);
    fx_cycle(&f, 1);
    uint8_t g[2];
    assert_int_equal(gpus_of_starts(&f, g), 2);
    assert_int_not_equal(g[0], g[1]); /* two halves: two idle GPUs */
    fx_fini(&f);
}

/* tsched_queue_check: each rule, the fault it reports, and that nothing changes.  Tree:
 * "org" (guarantee 4 GPUs) > "a" (3), "b" (1); "free" governs nothing. */
static void test_queue_check_rules(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int org = fx_queue(&f, "org", NULL, 4000, 0, 1);
    int a = fx_queue(&f, "a", "org", 3000, 0, 1);
    fx_queue(&f, "b", "org", 1000, 0, 1);
    int fr = ungoverned_queue(&f, "free");
    const uint64_t U = TSCHED_UNLIMITED;
    static const struct {
        const char *name, *parent;
        int self; /* -1 new, else index in the order above */
        uint64_t g, lim;
        tsched_qrule_t rule;
        uint64_t amount, bound;
        const char *other; /* the queue named in the fault */
    } cases[] = {
        {"c", "org", -1, 0, U, TSCHED_QF_OK, 0, 0, NULL},
        {"c", "org", -1, 500, U, TSCHED_QF_PARENT_SUM, 4500, 4000, "org"},
        {"c", "org", -1, U, U, TSCHED_QF_UNGOVERNED_CHILD, 0, 4000, "org"},
        {"c", NULL, -1, 2000, 1000, TSCHED_QF_ABOVE_LIMIT, 2000, 1000, NULL},
        {"c", "nope", -1, 0, U, TSCHED_QF_NO_PARENT, 0, 0, NULL},
        {"a", "org", -1, 0, U, TSCHED_QF_NAME, 0, 0, "a"},
        {"org", NULL, 0, 3500, U, TSCHED_QF_CHILDREN_SUM, 4000, 3500, NULL},
        {"org", NULL, 0, 4000, U, TSCHED_QF_OK, 0, 0, NULL},
        {"a", "org", 1, 3500, U, TSCHED_QF_PARENT_SUM, 4500, 4000, "org"},
        {"a", "org", 1, 2500, U, TSCHED_QF_OK, 0, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tsched_queue_spec_t q;
        memset(&q, 0, sizeof q);
        q.name = cases[i].name;
        q.parent = cases[i].parent;
        q.guarantee = (tsched_res_t){cases[i].g, U, U, U};
        q.limit = (tsched_res_t){cases[i].lim, U, U, U};
        tsched_qfault_t fault;
        tsl_error_t err;
        int rc = tsched_queue_check(f.s, &q, cases[i].self, &fault, &err);
        assert_int_equal(fault.rule, cases[i].rule);
        if (cases[i].rule == TSCHED_QF_OK) {
            assert_int_equal(rc, 0);
            continue;
        }
        assert_int_equal(rc, -1);
        assert_int_equal(errno, EINVAL);
        assert_true(err.text[0] != '\0');
        if (cases[i].amount || cases[i].bound) {
            assert_int_equal(fault.res, 0);
            assert_int_equal(fault.amount, cases[i].amount);
            assert_int_equal(fault.bound, cases[i].bound);
        }
        if (cases[i].other)
            assert_int_equal(fault.queue, tsched_queue_find(f.s, cases[i].other));
    }
    /* a child that governs nothing under a queue that now would govern GPUs */
    tsched_queue_spec_t q = {.name = "free"};
    q.guarantee = (tsched_res_t){2000, U, U, U};
    q.limit = (tsched_res_t){U, U, U, U};
    tsched_qfault_t fault;
    assert_int_equal(tsched_queue_check(f.s, &q, fr, &fault, NULL), 0); /* no children */
    ungoverned_queue(&f, "x");                                          /* top level: fine */
    q.name = "y";
    q.parent = "free";
    q.guarantee = (tsched_res_t){U, U, U, U};
    assert_int_equal(tsched_queue_check(f.s, &q, -1, &fault, NULL), 0);
    assert_true(tsched_queue_add(f.s, &q, NULL) >= 0);
    q.name = "free";
    q.parent = NULL;
    q.guarantee = (tsched_res_t){2000, U, U, U};
    assert_int_equal(tsched_queue_check(f.s, &q, fr, &fault, NULL), -1);
    assert_int_equal(fault.rule, TSCHED_QF_CHILD_UNGOVERNED);
    assert_int_equal(fault.queue, tsched_queue_find(f.s, "y"));
    /* depth: org > a > d2 > d3 is 4 levels; a fifth is refused */
    tsched_queue_spec_t d = {.guarantee = {0, U, U, U}, .limit = {U, U, U, U}};
    d.name = "d2";
    d.parent = "a";
    assert_true(tsched_queue_add(f.s, &d, NULL) >= 0);
    d.name = "d3";
    d.parent = "d2";
    assert_true(tsched_queue_add(f.s, &d, NULL) >= 0);
    d.name = "d4";
    d.parent = "d3";
    assert_int_equal(tsched_queue_check(f.s, &d, -1, &fault, NULL), -1);
    assert_int_equal(fault.rule, TSCHED_QF_DEPTH);
    /* a job in leaf b: no child may be added under it */
    assert_int_equal(
        fx_submit(&f, 1, tsched_queue_find(f.s, "b"), TSCHED_CLASS_TRAINING, 0, 0, 1, 500), 0);
    d.name = "bb";
    d.parent = "b";
    assert_int_equal(tsched_queue_check(f.s, &d, -1, &fault, NULL), -1);
    assert_int_equal(fault.rule, TSCHED_QF_PARENT_HAS_JOBS);
    /* nothing was changed by the checks */
    tsched_queue_stat_t st;
    assert_int_equal(tsched_queue_stat(f.s, org, 0, &st), 0);
    assert_int_equal(st.guarantee.milli_gpu, 4000);
    assert_int_equal(tsched_queue_stat(f.s, a, 0, &st), 0);
    assert_int_equal(st.guarantee.milli_gpu, 3000);
    fx_fini(&f);
}

/* tsched_job_adopt (tesseld's rebuild after a restart or a queue edit; the third review's
 * F3): 1 node x 2 GPUs, "lab" guaranteed 1 GPU.  An interactive job of 2 GPUs is refused at
 * submission (beyond the guarantee), but adopted as it runs on GPUs 0 and 1 (the guarantee was
 * lowered after it started): its GPUs are taken, so neither a pending training job of another
 * queue nor an interactive job of lab starts on them, and nothing is picked as a victim.  A
 * placement the cluster cannot take is refused (ENOSPC) with nothing changed; its id is then
 * free. */
static void test_adopt_running_beyond_guarantee(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int lab = fx_queue(&f, "lab", NULL, 1000, 0, 1);
    int other = fx_queue(&f, "other", NULL, 0, 0, 1);
    assert_int_equal(fx_submit(&f, 1, lab, TSCHED_CLASS_INTERACTIVE, 0, 0, 2, 1000), -1);
    assert_int_equal(errno, EINVAL);

    tsched_qjob_t j;
    memset(&j, 0, sizeof j);
    j.id = 1;
    j.queue = lab;
    j.cls = TSCHED_CLASS_INTERACTIVE;
    j.req.ngpus = 2;
    j.req.milli_gpu = 1000;
    j.req.cpu_milli = 1000;
    j.req.mem_bytes = GIB;
    j.req.gang = 1;
    tsched_member_t m;
    memset(&m, 0, sizeof m);
    m.node = 0;
    m.ngpus = 2;
    m.gpu[0] = 0;
    m.gpu[1] = 1;
    m.milli_gpu = 1000;
    m.cpu_milli = 1000;
    m.mem_bytes = GIB;
    assert_int_equal(tsched_job_adopt(f.s, &j, &m, 1, 0, NULL), 0);
    assert_int_equal(tsched_job_state(f.s, 1), 1);
    assert_int_equal(fx_used(&f, lab, 0), 2000);

    assert_int_equal(fx_submit(&f, 2, other, TSCHED_CLASS_TRAINING, 0, 1, 1, 1000), 0);
    assert_int_equal(fx_submit(&f, 3, lab, TSCHED_CLASS_INTERACTIVE, 0, 2, 1, 500), 0);
    fx_cycle(&f, 10);
    assert_false(fx_started(&f, 2));   /* both GPUs are job 1's */
    assert_false(fx_started(&f, 3));   /* no room either */
    assert_int_equal(f.d.nvictims, 0); /* an interactive job is never a victim */

    /* Its end frees both: the training job starts. */
    assert_int_equal(tsched_job_remove(f.s, 1, 20), 0);
    fx_cycle(&f, 20);
    assert_true(fx_started(&f, 2));

    /* A placement the cluster cannot take (GPU 1 is now job 2's or 3's, or both taken). */
    j.id = 4;
    j.cls = TSCHED_CLASS_TRAINING;
    assert_int_equal(tsched_job_adopt(f.s, &j, &m, 1, 30, NULL), -1);
    assert_int_equal(errno, ENOSPC);
    assert_int_equal(tsched_job_state(f.s, 4), -1);
    assert_int_equal(errno, ENOENT);
    fx_fini(&f);
}

/* tsched_job_readd (tesseld's rebuild: pending jobs accepted before): 1 node x 2 GPUs, "lab"
 * guaranteed 0.5 GPU.  An interactive job of 1 GPU is refused at submission but re-added; a
 * cycle does not start it (beyond the guarantee) although both GPUs are free; once lab's
 * guarantee is raised to 1 GPU (an edit in place) the next cycle starts it. */
static void test_readd_beyond_guarantee(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int lab = fx_queue(&f, "lab", NULL, 500, 0, 1);
    assert_int_equal(fx_submit(&f, 1, lab, TSCHED_CLASS_INTERACTIVE, 0, 0, 1, 1000), -1);
    tsched_qjob_t j;
    memset(&j, 0, sizeof j);
    j.id = 1;
    j.queue = lab;
    j.cls = TSCHED_CLASS_INTERACTIVE;
    j.req.ngpus = 1;
    j.req.milli_gpu = 1000;
    j.req.cpu_milli = 1000;
    j.req.mem_bytes = GIB;
    j.req.gang = 1;
    assert_int_equal(tsched_job_readd(f.s, &j, NULL), 0);
    assert_int_equal(tsched_job_state(f.s, 1), 0); /* pending */
    fx_cycle(&f, 10);
    assert_false(fx_started(&f, 1));
    tsched_res_t g = {1000, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    tsched_res_t lim = {TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    assert_int_equal(tsched_queue_update(f.s, lab, &g, &lim, 1, NULL), 0);
    fx_cycle(&f, 20);
    assert_true(fx_started(&f, 1));
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ungoverned_queue_is_reclaimed),
        cmocka_unit_test(test_default_queue_gets_its_guarantee_back),
        cmocka_unit_test(test_all_ungoverned_no_reclaim),
        cmocka_unit_test(test_reserve_after_per_queue),
        cmocka_unit_test(test_options_refused),
        cmocka_unit_test(test_spread_placement),
        cmocka_unit_test(test_queue_check_rules),
        cmocka_unit_test(test_adopt_running_beyond_guarantee),
        cmocka_unit_test(test_readd_beyond_guarantee),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
