/* test_running_tables.c - the tables of running jobs that the queue scheduler keeps as jobs
 * start and stop (issue 15), against the scan of the job table they replace:
 *
 *   - per node, the running members (jobs running or victims), sorted by job slot then member,
 *     each with a copy of the member and of the job's queue, priority, band, class and start
 *     (s->nrun, read by the victim search);
 *   - per queue, its running jobs in the order in which they fill its guarantee
 *     (tsched__run_cmp; q->run, read by the cycle's guarantee marking).
 *
 * Random workloads (fixed seeds): submissions of several classes, priorities and gang sizes,
 * cycles whose starts are confirmed, victims stopped, running and pending jobs removed or
 * stopped at random; after every step both tables must equal the oracle computed from the job
 * table.  And a gang of two members on one node, entered and taken out by hand.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "libsched/queue_internal.h"
#include "place_fixture.h"
#include "queue_fixture.h"

static const tsched_sched_t *cmp_s;

static int slot_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return tsched__run_cmp(&cmp_s->jobs[x], &cmp_s->jobs[y]);
}

/* Both tables equal what a scan of the job table gives; returns the running members seen. */
static size_t check_tables(const tsched_sched_t *s, size_t nodes)
{
    size_t members = 0;
    for (uint32_t n = 0; n < nodes; n++) {
        uint32_t k = 0;
        for (size_t i = 0; i < s->njobs; i++) {
            const struct sjob *j = &s->jobs[i];
            if (!j->live || j->state == J_PENDING)
                continue;
            for (uint32_t m = 0; m < j->gang; m++) {
                if (j->members[m].node != n)
                    continue;
                assert_true(k < tsched__nrun_count(s, n));
                const struct nrun_ent *e = &s->nrun[n].e[k++];
                assert_int_equal(e->slot, i);
                assert_int_equal(e->m, m);
                assert_memory_equal(&s->nrun[n].mem[k - 1], &j->members[m], sizeof *j->members);
                assert_int_equal(e->queue, j->queue);
                assert_int_equal(e->prio, j->prio);
                assert_int_equal(e->band, tsched__band(j->cls));
                assert_int_equal(e->training, j->cls == TSCHED_CLASS_TRAINING);
                assert_true(e->start == j->start);
                members++;
            }
        }
        assert_int_equal(k, tsched__nrun_count(s, n));
    }
    uint32_t *want = malloc((s->njobs + 1) * sizeof *want);
    assert_non_null(want);
    cmp_s = s;
    for (size_t q = 0; q < s->nq; q++) {
        size_t nw = 0;
        for (size_t i = 0; i < s->njobs; i++)
            if (s->jobs[i].live && s->jobs[i].state != J_PENDING && s->jobs[i].queue == (int)q)
                want[nw++] = (uint32_t)i;
        qsort(want, nw, sizeof *want, slot_cmp);
        assert_int_equal(s->q[q].nrun, nw);
        if (nw)
            assert_memory_equal(s->q[q].run, want, nw * sizeof *want);
    }
    free(want);
    return members;
}

#define NODES 6
#define MAXJ  3000

static void run_random(uint64_t seed)
{
    rng_state = seed;
    tsched_sched_config_t cfg;
    tsched_sched_config_default(&cfg);
    cfg.min_runtime = 0;
    cfg.max_plans = 100;
    struct fx f;
    fx_init(&f, NODES, 4, &cfg);
    int q[4];
    q[0] = fx_queue(&f, "A", NULL, 8000, 0, 1);
    int b = fx_queue(&f, "B", NULL, 8000, 16000, 1);
    q[1] = fx_queue(&f, "B1", "B", 4000, 0, 1);
    q[2] = fx_queue(&f, "B2", "B", 4000, 0, 2);
    q[3] = b; /* not a leaf: no jobs; its running list stays empty */
    static const tsched_class_t cls[] = {TSCHED_CLASS_TRAINING, TSCHED_CLASS_TRAINING,
                                         TSCHED_CLASS_INTERACTIVE, TSCHED_CLASS_BUILD,
                                         TSCHED_CLASS_INFERENCE};
    uint64_t nj = 0;
    size_t most = 0, stopped = 0, removed = 0, victims = 0;
    for (int step = 0; step < 250; step++) {
        double now = step * 10.0;
        unsigned arrive = below(6);
        for (unsigned a = 0; a < arrive && nj < MAXJ; a++) {
            tsched_qjob_t j;
            memset(&j, 0, sizeof j);
            j.id = ++nj;
            j.queue = q[below(3)];
            j.cls = cls[below(5)];
            j.priority = (int32_t)below(3);
            j.arrival = now;
            unsigned kind = below(4);
            j.req.ngpus = kind == 3 ? 2 : 1;
            j.req.milli_gpu = kind == 0 ? 500 : 1000;
            j.req.cpu_milli = 1000;
            j.req.mem_bytes = GIB;
            j.req.gang = below(5) == 0 ? 2 : 1;
            assert_int_equal(tsched_job_submit(f.s, &j, NULL), 0);
        }
        for (uint64_t id = 1; id <= nj; id++) {
            int st = tsched_job_state(f.s, id);
            if (st < 0 || below(12))
                continue;
            if (st >= 1 && below(2)) {
                assert_int_equal(tsched_job_stopped(f.s, id, now), 0); /* requeued */
                stopped++;
            } else {
                assert_int_equal(tsched_job_remove(f.s, id, now), 0);
                removed++;
            }
        }
        check_tables(f.s, NODES);
        fx_cycle(&f, now);
        victims += f.d.nvictims;
        size_t m = check_tables(f.s, NODES);
        if (m > most)
            most = m;
        fx_stop_victims(&f, now + 1);
        check_tables(f.s, NODES);
    }
    /* the runs exercised what they claim: full nodes, stops, removals, preemption */
    assert_true(most >= NODES * 4);
    assert_true(stopped > 0);
    assert_true(removed > 0);
    assert_true(victims > 0);
    fx_fini(&f);
}

static void test_random_workloads(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 5; seed++)
        run_random(seed);
}

/* A gang of two members on one node: both entries, in member order, leave together. */
static void test_gang_on_one_node(void **state)
{
    (void)state;
    tsched_sched_config_t cfg;
    tsched_sched_config_default(&cfg);
    struct fx f;
    fx_init(&f, 2, 4, &cfg);
    int qa = fx_queue(&f, "A", NULL, 4000, 0, 1);
    tsched_qjob_t j;
    memset(&j, 0, sizeof j);
    j.queue = qa;
    j.cls = TSCHED_CLASS_TRAINING;
    j.req.ngpus = 1;
    j.req.milli_gpu = 1000;
    j.req.cpu_milli = 1000;
    j.req.mem_bytes = GIB;
    j.req.gang = 2;
    for (uint64_t id = 1; id <= 2; id++) {
        j.id = id;
        assert_int_equal(tsched_job_submit(f.s, &j, NULL), 0);
    }
    tsched_member_t m[2];
    memset(m, 0, sizeof m);
    for (int k = 0; k < 2; k++) {
        m[k].node = 1;
        m[k].ngpus = 1;
        m[k].milli_gpu = 1000;
        m[k].cpu_milli = 1000;
        m[k].mem_bytes = GIB;
    }
    m[0].gpu[0] = 3; /* job 2 on GPUs 3 and 2 first: its slot sorts after job 1's */
    m[1].gpu[0] = 2;
    assert_int_equal(tsched_job_started(f.s, 2, m, 2, 0), 0);
    m[0].gpu[0] = 0;
    m[1].gpu[0] = 1;
    assert_int_equal(tsched_job_started(f.s, 1, m, 2, 1), 0);
    assert_int_equal(check_tables(f.s, 2), 4);
    assert_int_equal(tsched__nrun_count(f.s, 0), 0);
    const struct nrun_ent *e = f.s->nrun[1].e;
    assert_true(e[0].slot == e[1].slot && e[2].slot == e[3].slot && e[0].slot < e[2].slot);
    assert_int_equal(e[0].m, 0);
    assert_int_equal(e[1].m, 1);
    assert_int_equal(f.s->q[qa].nrun, 2); /* job 2 started first: it is older */
    assert_int_equal(f.s->jobs[f.s->q[qa].run[0]].id, 2);
    /* a start that cannot commit changes neither table */
    j.id = 3;
    assert_int_equal(tsched_job_submit(f.s, &j, NULL), 0);
    assert_int_equal(tsched_job_started(f.s, 3, m, 2, 2), -1);
    assert_int_equal(check_tables(f.s, 2), 4);
    assert_int_equal(tsched_job_stopped(f.s, 1, 3), 0);
    assert_int_equal(check_tables(f.s, 2), 2);
    assert_int_equal(tsched_job_remove(f.s, 2, 4), 0);
    assert_int_equal(check_tables(f.s, 2), 0);
    assert_int_equal(tsched__nrun_count(f.s, 1), 0);
    assert_int_equal(f.s->q[qa].nrun, 0);
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_workloads),
        cmocka_unit_test(test_gang_on_one_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
