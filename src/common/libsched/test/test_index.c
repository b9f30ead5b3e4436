/* test_index.c - the placement index (place.c): each decision through the
 * per-shape tournament trees and the node change log equals the decision of
 * a plain scan over every node (tsched__scan_best, the test oracle), through
 * node insertions, allocations, releases, weight changes and tie-breaks. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "libsched/internal.h"
#include "place_fixture.h"
#include "tessel/sched.h"

/* A node of n GPUs of one model; island: GPUs 0-3 and 4-7 share NVLink. */
static int add(tsched_cluster_t *c, const char *name, uint64_t cpu, unsigned n, const char *model,
               int island, const char *labels)
{
    tsched_gpu_spec_t g[TSCHED_MAX_NODE_GPUS];
    memset(g, 0, sizeof g);
    for (unsigned j = 0; j < n; j++) {
        g[j].model = model;
        g[j].mem_bytes = 16 * GiB;
        g[j].nvlink_island = island ? (int32_t)(j / 4) : -1;
        g[j].pcie_switch = -1;
    }
    tsched_node_spec_t ns = {.name = name,
                             .cpu_milli = cpu,
                             .mem_bytes = 64 * GiB,
                             .labels = labels,
                             .ngpus = n,
                             .gpus = g};
    return tsched_cluster_add_node(c, &ns, NULL);
}

/* tsched_place() for one member, checked against the oracle: the same node,
 * the same GPU for a one-GPU request, the same reason when nothing fits.
 * Returns the node or -1. */
static long place_checked(tsched_cluster_t *c, tsched_policy_t *p, const tsched_job_t *j)
{
    uint8_t ogpu = 0;
    tsched_reason_t owhy = TSCHED_FIT, why = TSCHED_FIT;
    tsched_job_t one = *j;
    one.gang = 1;
    long want = tsched__scan_best(c, p, &one, &ogpu, &owhy);
    assert_true(want >= -1);
    tsched_member_t m;
    int rc = tsched_place(c, p, &one, &m, &why);
    if (want < 0) {
        assert_int_equal(rc, 1);
        assert_int_equal(why, owhy);
        return -1;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(m.node, (uint32_t)want);
    if (one.ngpus == 1)
        assert_int_equal(m.gpu[0], ogpu);
    return want;
}

/* Identical empty nodes: Tessel's policy takes the lowest index, the FGD
 * paper's the node whose name sorts first (here the last one added). */
static void test_ties(void **state)
{
    (void)state;
    tsched_cluster_t *c = tsched_cluster_create();
    assert_non_null(c);
    const char *names[] = {"node-e", "node-d", "node-c", "node-b", "node-a"};
    for (int i = 0; i < 5; i++)
        assert_int_equal(add(c, names[i], 32000, 4, "A100", 0, NULL), i);
    tsched_policy_t *t = tsched_policy_create("tessel", NULL);
    tsched_policy_t *f = tsched_policy_create("fgd", NULL);
    tsched_policy_t *b = tsched_policy_create("bestfit", NULL);
    assert_non_null(t);
    assert_non_null(f);
    assert_non_null(b);
    tsched_job_t j = job(1000, 1, 1000);
    assert_int_equal(place_checked(c, t, &j), 0);
    assert_int_equal(place_checked(c, f, &j), 4);
    assert_int_equal(place_checked(c, b, &j), 4);

    /* fill node 0 (index) and node 4 (name) completely: the ties move on */
    tsched_member_t m, m0;
    tsched_job_t whole = job(1000, 4, 1000);
    assert_int_equal(tsched_allocate(c, t, &whole, &m0, NULL), 0);
    assert_int_equal(m0.node, 0);
    assert_int_equal(tsched_allocate(c, f, &whole, &m, NULL), 0);
    assert_int_equal(m.node, 4);
    assert_int_equal(place_checked(c, t, &whole), 1);
    assert_int_equal(place_checked(c, f, &whole), 3);

    /* releasing node 0 makes it the tie winner again */
    assert_int_equal(tsched_release(c, &m0, 1), 0);
    assert_int_equal(place_checked(c, t, &whole), 0);
    tsched_policy_destroy(t);
    tsched_policy_destroy(f);
    tsched_policy_destroy(b);
    tsched_cluster_destroy(c);
}

/* A request only one node can hold; nothing once that node is full (the
 * reason counted over the nodes); again after a release; a node added later
 * enters the index. */
static void test_fit_insert_remove(void **state)
{
    (void)state;
    tsched_cluster_t *c = tsched_cluster_create();
    assert_non_null(c);
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "small-%d", i);
        assert_true(add(c, name, 16000, 2, "T4", 0, NULL) >= 0);
    }
    assert_int_equal(add(c, "big", 128000, 8, "A100", 1, NULL), 6);
    tsched_policy_t *p = tsched_policy_create("tessel", NULL);
    assert_non_null(p);
    tsched_job_t eight = job(8000, 8, 1000);
    assert_int_equal(place_checked(c, p, &eight), 6);
    tsched_member_t m;
    assert_int_equal(tsched_allocate(c, p, &eight, &m, NULL), 0);
    assert_int_equal(m.node, 6);
    tsched_reason_t why;
    tsched_member_t m2;
    assert_int_equal(tsched_place(c, p, &eight, &m2, &why), 1);
    assert_int_equal(why, TSCHED_NO_GPU);
    assert_int_equal(place_checked(c, p, &eight), -1);

    /* a model no node has: every node says "model" */
    tsched_job_t h100 = job(1000, 1, 1000);
    h100.models = "H100";
    assert_int_equal(tsched_place(c, p, &h100, &m2, &why), 1);
    assert_int_equal(why, TSCHED_NO_MODEL);

    assert_int_equal(tsched_release(c, &m, 1), 0);
    assert_int_equal(place_checked(c, p, &eight), 6);

    /* a second big node, added after decisions of this shape */
    assert_int_equal(tsched_allocate(c, p, &eight, &m, NULL), 0);
    assert_int_equal(add(c, "big-2", 128000, 8, "A100", 1, NULL), 7);
    assert_int_equal(place_checked(c, p, &eight), 7);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

/* The request shapes of the cross-check: shares, whole GPUs, multi-GPU,
 * models, GPU memory, a selector, CPU-only; gang 1 to 3. */
static tsched_job_t random_job(void)
{
    static const uint32_t milli[] = {100, 250, 500, 700, 1000};
    static const char *const models[] = {NULL, NULL, NULL, "A100", "T4|V100", "V100"};
    tsched_job_t j = job(1000u * (1 + below(12)), 0, 0);
    unsigned k = below(10);
    if (k < 5) {
        j.ngpus = 1;
        j.milli_gpu = milli[below(5)];
    } else if (k < 8) {
        j.ngpus = 1u << below(4);
        j.milli_gpu = 1000;
    }
    if (j.ngpus) {
        j.models = models[below(6)];
        if (below(8) == 0)
            j.gpu_mem_bytes = (1 + below(12)) * GiB;
    }
    if (below(12) == 0)
        j.selector = "zone=b";
    j.mem_bytes = (1 + below(16)) * GiB;
    j.gang = below(6) == 0 ? 2 + below(2) : 1;
    return j;
}

struct held {
    tsched_member_t m[4];
    uint32_t n;
};

static void crosscheck(const char *policy, uint64_t seed, unsigned nodes, unsigned ops)
{
    rng_state = seed;
    tsched_cluster_t *c = tsched_cluster_create();
    assert_non_null(c);
    static const char *const models[] = {"A100", "T4", "V100"};
    static const unsigned gpus[] = {1, 2, 4, 8};
    char name[32];
    unsigned added = 0;
    for (; added < nodes; added++) {
        snprintf(name, sizeof name, "n%03u", (added * 7919u) % 1000u); /* name order != index */
        assert_true(add(c, name, 8000u * (1 + below(12)), gpus[below(4)], models[below(3)],
                        (int)below(2), below(3) == 0 ? "zone=b" : "zone=a") >= 0);
    }
    tsched_policy_t *p = tsched_policy_create(policy, NULL);
    assert_non_null(p);
    struct held *h = calloc(ops, sizeof *h);
    assert_non_null(h);
    size_t nh = 0;
    unsigned placed = 0, refused = 0, released = 0;
    for (unsigned op = 0; op < ops; op++) {
        unsigned k = below(100);
        if (k < 55) { /* allocate */
            tsched_job_t j = random_job();
            long want = place_checked(c, p, &j);
            tsched_member_t m[4];
            tsched_reason_t why;
            int rc = tsched_allocate(c, p, &j, m, &why);
            assert_true(rc == 0 || rc == 1);
            if (rc == 0) {
                assert_int_equal(m[0].node, (uint32_t)want);
                memcpy(h[nh].m, m, j.gang * sizeof m[0]);
                h[nh++].n = j.gang;
                placed++;
            } else {
                refused++;
            }
        } else if (k < 90 && nh) { /* release a random job */
            size_t i = below((unsigned)nh);
            assert_int_equal(tsched_release(c, h[i].m, h[i].n), 0);
            h[i] = h[--nh];
            released++;
        } else if (k < 95 && nh) { /* would it fit without a random job? */
            tsched_job_t j = random_job();
            size_t i = below((unsigned)nh);
            tsched_member_t m[4];
            tsched_reason_t why;
            int rc = tsched_fits_without(c, p, &j, h[i].m, h[i].n, m, &why);
            assert_true(rc == 0 || rc == 1);
            (void)place_checked(c, p, &j); /* the cluster is as it was */
        } else if (k < 97) {               /* a node more */
            snprintf(name, sizeof name, "n%03u", (added++ * 7919u) % 1000u);
            assert_true(add(c, name, 64000, gpus[below(4)], models[below(3)], 1, "zone=b") >= 0);
        } else { /* another task mix: the weights of every node change */
            tsched_job_t mix[3] = {job(2000, 1, 500), job(4000, 1, 1000), job(8000, 2, 1000)};
            double w[3] = {1 + below(4), 1 + below(4), 1 + below(4)};
            assert_int_equal(tsched_cluster_set_workload(c, mix, w, 3, NULL), 0);
        }
    }
    /* the run exercised what it claims to */
    assert_true(placed > ops / 10);
    assert_true(refused > 0);
    assert_true(released > ops / 10);
    free(h);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

static void test_crosscheck_tessel(void **state)
{
    (void)state;
    crosscheck("tessel", 1, 150, 3000);
    crosscheck("tessel", 2, 40, 3000);
}

static void test_crosscheck_fgd(void **state)
{
    (void)state;
    crosscheck("fgd", 3, 150, 3000);
    crosscheck("fgd", 4, 40, 3000);
}

static void test_crosscheck_others(void **state)
{
    (void)state;
    const char *const pol[] = {"bestfit",       "dotprod",        "gpupacking",
                               "gpuclustering", "binpack:spread", "spread:binpack"};
    for (unsigned i = 0; i < sizeof pol / sizeof pol[0]; i++)
        crosscheck(pol[i], 10 + i, 80, 1500);
}

/* A thousand nodes, one shape left unused while everything else changes:
 * it falls behind the change log and rebuilds from the nodes' versions. */
static void test_stale_shape(void **state)
{
    (void)state;
    tsched_cluster_t *c = tsched_cluster_create();
    assert_non_null(c);
    char name[32];
    for (unsigned i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "n%04u", i);
        assert_true(add(c, name, 32000, 4, "A100", 0, NULL) >= 0);
    }
    tsched_policy_t *p = tsched_policy_create("tessel", NULL);
    assert_non_null(p);
    tsched_job_t rare = job(3000, 2, 1000), busy = job(1000, 1, 250);
    assert_int_equal(place_checked(c, p, &rare), 0);
    tsched_member_t m;
    for (unsigned i = 0; i < 5000; i++) /* 5,000 changes: past the end of the log */
        assert_int_equal(tsched_allocate(c, p, &busy, &m, NULL), 0);
    assert_true(place_checked(c, p, &rare) >= 0);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

/* One node (so that the reason counted over the nodes is that node's reason), each reason in
 * turn: the index's first test reads the node's room (models, CPU, memory, GPUs free, in one
 * cache line), which must say what node_fit() says, also after allocations and releases have
 * changed the room; labels, GPU memory and GPU models go on to node_fit(). */
static void test_room_reasons(void **state)
{
    (void)state;
    tsched_cluster_t *c = tsched_cluster_create();
    assert_non_null(c);
    assert_int_equal(add(c, "only", 16000, 4, "A100", 0, "zone=a"), 0);
    tsched_policy_t *p = tsched_policy_create("tessel", NULL);
    assert_non_null(p);
    tsched_job_t cpu = job(32000, 1, 1000), mem = job(1000, 1, 1000), five = job(1000, 5, 1000);
    tsched_job_t t4 = job(1000, 1, 1000), gmem = job(1000, 1, 1000), zone = job(1000, 1, 1000);
    tsched_job_t two = job(1000, 2, 1000), share = job(1000, 1, 600), none = job(1000, 0, 0);
    mem.mem_bytes = 128 * GiB;
    t4.models = "T4";
    gmem.gpu_mem_bytes = 32 * GiB;
    zone.selector = "zone=b";
    const struct {
        tsched_job_t *j;
        long node; /* -1: nothing fits */
        tsched_reason_t why;
    } before[] = {
        {&cpu, -1, TSCHED_NO_CPU},  {&mem, -1, TSCHED_NO_MEM},      {&five, -1, TSCHED_NO_GPU},
        {&t4, -1, TSCHED_NO_MODEL}, {&gmem, -1, TSCHED_NO_GPU_MEM}, {&zone, -1, TSCHED_NO_MODEL},
        {&two, 0, TSCHED_FIT},      {&share, 0, TSCHED_FIT},        {&none, 0, TSCHED_FIT}};
    for (size_t i = 0; i < sizeof before / sizeof *before; i++) {
        assert_int_equal(place_checked(c, p, before[i].j), before[i].node);
        tsched_reason_t why = TSCHED_FIT;
        tsched_member_t m;
        assert_int_equal(tsched_place(c, p, before[i].j, &m, &why), before[i].node < 0);
        if (before[i].node < 0)
            assert_int_equal(why, before[i].why);
    }
    /* three whole GPUs and half of the fourth taken: two GPUs, or 600 milli, no longer fit */
    tsched_job_t three = job(1000, 3, 1000), half = job(1000, 1, 500);
    tsched_member_t m3, mh;
    assert_int_equal(tsched_allocate(c, p, &three, &m3, NULL), 0);
    assert_int_equal(tsched_allocate(c, p, &half, &mh, NULL), 0);
    assert_int_equal(place_checked(c, p, &two), -1);
    assert_int_equal(place_checked(c, p, &share), -1);
    assert_int_equal(place_checked(c, p, &half), 0);
    tsched_reason_t why = TSCHED_FIT;
    tsched_member_t m;
    assert_int_equal(tsched_place(c, p, &share, &m, &why), 1);
    assert_int_equal(why, TSCHED_NO_GPU);
    /* released: they fit again */
    assert_int_equal(tsched_release(c, &m3, 1), 0);
    assert_int_equal(place_checked(c, p, &two), 0);
    assert_int_equal(place_checked(c, p, &share), 0);

    /* a node without GPUs: a GPU request finds no model there, a CPU-only one fits */
    tsched_cluster_t *cpuonly = tsched_cluster_create();
    assert_non_null(cpuonly);
    assert_int_equal(add(cpuonly, "cpu", 16000, 0, NULL, 0, NULL), 0);
    assert_int_equal(place_checked(cpuonly, p, &share), -1);
    assert_int_equal(tsched_place(cpuonly, p, &share, &m, &why), 1);
    assert_int_equal(why, TSCHED_NO_MODEL);
    assert_int_equal(place_checked(cpuonly, p, &none), 0);
    tsched_cluster_destroy(cpuonly);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties),
        cmocka_unit_test(test_fit_insert_remove),
        cmocka_unit_test(test_crosscheck_tessel),
        cmocka_unit_test(test_crosscheck_fgd),
        cmocka_unit_test(test_crosscheck_others),
        cmocka_unit_test(test_stale_shape),
        cmocka_unit_test(test_room_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
