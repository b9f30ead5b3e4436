/* queue_fixture.h - helpers shared by the queue scheduler's tests
 * (test_queue_scenarios.c, test_queue_props.c): a small cluster, queues
 * governed on GPUs only, jobs, and a caller that carries out decisions the
 * way tesseld does (confirm every start, stop every victim).
 */
#ifndef TESSEL_QUEUE_FIXTURE_H
#define TESSEL_QUEUE_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "tessel/sched.h"
#include "tessel/sched_queue.h"

#define GIB (1024ull * 1024 * 1024)

struct fx {
    tsched_cluster_t *c;
    tsched_policy_t *p;
    tsched_sched_t *s;
    tsched_decisions_t d;
};

/* nodes nodes of ngpus GPUs (80 GiB each), 64 cores, 512 GiB. */
static inline void fx_init(struct fx *f, unsigned nodes, unsigned ngpus,
                           const tsched_sched_config_t *cfg)
{
    memset(f, 0, sizeof *f);
    f->c = tsched_cluster_create();
    assert_non_null(f->c);
    tsched_gpu_spec_t g[TSCHED_MAX_NODE_GPUS];
    for (unsigned i = 0; i < ngpus; i++) {
        memset(&g[i], 0, sizeof g[i]);
        g[i].model = "A100";
        g[i].mem_bytes = 80 * GIB;
        g[i].nvlink_island = -1;
        g[i].pcie_switch = -1;
    }
    for (unsigned n = 0; n < nodes; n++) {
        char name[32];
        snprintf(name, sizeof name, "node%02u", n);
        tsched_node_spec_t ns = {name, 64000, 512 * GIB, NULL, ngpus, g};
        assert_int_equal(tsched_cluster_add_node(f->c, &ns, NULL), (int)n);
    }
    f->p = tsched_policy_create("binpack", NULL);
    assert_non_null(f->p);
    f->s = tsched_sched_create(f->c, f->p, cfg, NULL);
    assert_non_null(f->s);
}

static inline void fx_fini(struct fx *f)
{
    tsched_sched_destroy(f->s);
    tsched_policy_destroy(f->p);
    tsched_cluster_destroy(f->c);
}

/* A queue governed on GPUs only: guarantee and limit in milli-GPU
 * (limit 0 = unlimited). */
static inline int fx_queue(struct fx *f, const char *name, const char *parent, uint64_t g,
                           uint64_t lim, uint32_t weight)
{
    tsched_queue_spec_t q;
    memset(&q, 0, sizeof q);
    q.name = name;
    q.parent = parent;
    q.guarantee.milli_gpu = g;
    q.guarantee.gpu_mem_bytes = TSCHED_UNLIMITED;
    q.guarantee.cpu_milli = TSCHED_UNLIMITED;
    q.guarantee.mem_bytes = TSCHED_UNLIMITED;
    q.limit.milli_gpu = lim ? lim : TSCHED_UNLIMITED;
    q.limit.gpu_mem_bytes = TSCHED_UNLIMITED;
    q.limit.cpu_milli = TSCHED_UNLIMITED;
    q.limit.mem_bytes = TSCHED_UNLIMITED;
    q.weight = weight;
    int i = tsched_queue_add(f->s, &q, NULL);
    assert_true(i >= 0);
    return i;
}

static inline int fx_submit(struct fx *f, uint64_t id, int q, tsched_class_t cls, int32_t prio,
                            double arrival, uint32_t ngpus, uint32_t milli)
{
    tsched_qjob_t j;
    memset(&j, 0, sizeof j);
    j.id = id;
    j.queue = q;
    j.cls = cls;
    j.priority = prio;
    j.arrival = arrival;
    j.req.ngpus = ngpus;
    j.req.milli_gpu = milli;
    j.req.cpu_milli = 1000;
    j.req.mem_bytes = GIB;
    j.req.gang = 1;
    return tsched_job_submit(f->s, &j, NULL);
}

/* Runs a cycle at now and confirms every start at now. */
static inline void fx_cycle(struct fx *f, double now)
{
    assert_int_equal(tsched_sched_cycle(f->s, now, &f->d, NULL), 0);
    for (size_t i = 0; i < f->d.nstarts; i++)
        assert_int_equal(tsched_job_started(f->s, f->d.starts[i].job, f->d.starts[i].members,
                                            f->d.starts[i].nmembers, now),
                         0);
}

/* Stops every victim of the last cycle at now. */
static inline void fx_stop_victims(struct fx *f, double now)
{
    for (size_t i = 0; i < f->d.nvictims; i++)
        assert_int_equal(tsched_job_stopped(f->s, f->d.victims[i].job, now), 0);
}

static inline int fx_started(const struct fx *f, uint64_t id)
{
    for (size_t i = 0; i < f->d.nstarts; i++)
        if (f->d.starts[i].job == id)
            return 1;
    return 0;
}

static inline uint64_t fx_used(struct fx *f, int q, double now)
{
    tsched_queue_stat_t st;
    assert_int_equal(tsched_queue_stat(f->s, q, now, &st), 0);
    return st.used.milli_gpu;
}

#endif
