/* test_place.c - each policy's arithmetic on small, hand-checked clusters,
 * and the contracts of commit / release / fits_without. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "place_fixture.h"
#include "tessel/sched.h"


/* A node of n GPUs of one model, no topology. */
static int add(tsched_cluster_t *c, const char *name, uint64_t cpu, unsigned n, const char *model)
{
    tsched_gpu_spec_t g[TSCHED_MAX_NODE_GPUS];
    memset(g, 0, sizeof g);
    for (unsigned j = 0; j < n; j++) {
        g[j].model = model;
        g[j].mem_bytes = 16 * GiB;
        g[j].nvlink_island = -1;
        g[j].pcie_switch = -1;
    }
    tsched_node_spec_t ns = {
        .name = name, .cpu_milli = cpu, .mem_bytes = 64 * GiB, .ngpus = n, .gpus = g};
    return tsched_cluster_add_node(c, &ns, NULL);
}

/* Allocates j under policy name; returns the node (or -1), GPU in *gpu. */
static int alloc(tsched_cluster_t *c, const char *name, tsched_job_t j, int *gpu)
{
    tsched_policy_t *p = tsched_policy_create(name, NULL);
    assert_non_null(p);
    tsched_member_t m;
    tsched_reason_t why;
    int rc = tsched_allocate(c, p, &j, &m, &why);
    tsched_policy_destroy(p);
    if (rc != 0)
        return -1;
    if (gpu)
        *gpu = m.ngpus ? m.gpu[0] : -1;
    return (int)m.node;
}

/* Node 0: 8 GPUs, 96 cores; node 1: 2 GPUs, 16 cores. */
static tsched_cluster_t *two_nodes(void)
{
    tsched_cluster_t *c = tsched_cluster_create();
    assert_non_null(c);
    assert_int_equal(add(c, "n0", 96000, 8, "G2"), 0);
    assert_int_equal(add(c, "n1", 16000, 2, "T4"), 1);
    return c;
}

static void test_bestfit(void **state)
{
    /* bestfit score = 100 (1 - ((cpu left)/128000 + (gpu left)/8000) / 2):
     * n0 after a 1-GPU 4-core job: (92000/128000 + 7000/8000)/2 = 0.797 -> 20;
     * n1: (12000/128000 + 1000/8000)/2 = 0.109 -> 89.  n1 wins. */
    tsched_cluster_t *c = two_nodes();
    assert_int_equal(alloc(c, "bestfit", job(4000, 1, 1000), NULL), 1);
    /* the GPU that fits tightest: after 300 on n1's GPU 1... */
    int g;
    assert_int_equal(alloc(c, "bestfit", job(1000, 1, 300), &g), 1);
    assert_int_equal(g, 1); /* n1 GPU 0 is taken, GPU 1 is the only fit */
    assert_int_equal(alloc(c, "bestfit", job(1000, 1, 600), &g), 1);
    assert_int_equal(g, 1); /* GPU 1 has 700 left: 600 fits there */
    tsched_cluster_destroy(c);
}

static void test_dotprod(void **state)
{
    /* dot(free, request) / (128000^2, 8000^2): a 0-CPU 2-GPU job sees only
     * the GPU term: n0 8000 free vs n1 2000 free -> n1 (smaller product). */
    tsched_cluster_t *c = two_nodes();
    assert_int_equal(alloc(c, "dotprod", job(0, 2, 1000), NULL), 1);
    /* now only n0 has GPUs */
    assert_int_equal(alloc(c, "dotprod", job(0, 1, 1000), NULL), 0);
    tsched_cluster_destroy(c);
}

static void test_gpupacking(void **state)
{
    /* empty nodes score 33 - GPUs (n0 25, n1 31): the first share goes to n1;
     * the next share prefers the now-shared GPU on n1 (score >= 50). */
    tsched_cluster_t *c = two_nodes();
    int g;
    assert_int_equal(alloc(c, "gpupacking", job(1000, 1, 500), &g), 1);
    assert_int_equal(g, 0);
    assert_int_equal(alloc(c, "gpupacking", job(1000, 1, 300), &g), 1);
    assert_int_equal(g, 0);
    /* a whole GPU on a used node (50 - 1 = 49) beats an empty node (25) */
    assert_int_equal(alloc(c, "gpupacking", job(1000, 1, 1000), &g), 1);
    assert_int_equal(g, 1);
    tsched_cluster_destroy(c);
}

static void test_gpuclustering(void **state)
{
    /* same kind of request (share / n-gpu) attracts: after a share on n0,
     * another share goes to n0 (75+), a 1-GPU job to n1 (empty: 25+ vs n0
     * holding another kind: 0+). */
    tsched_cluster_t *c = two_nodes();
    tsched_job_t j = job(1000, 1, 500);
    tsched_member_t m;
    tsched_policy_t *p = tsched_policy_create("gpuclustering", NULL);
    /* force the first share onto n0 */
    memset(&m, 0, sizeof m);
    m.node = 0;
    m.ngpus = 1;
    m.gpu[0] = 3;
    m.milli_gpu = 500;
    m.cpu_milli = 1000;
    assert_int_equal(tsched_commit(c, &m, 1), 0);
    assert_int_equal(tsched_allocate(c, p, &j, &m, NULL), 0);
    assert_int_equal(m.node, 0);
    j = job(1000, 1, 1000);
    assert_int_equal(tsched_allocate(c, p, &j, &m, NULL), 0);
    assert_int_equal(m.node, 1);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

static void test_random_feasible(void **state)
{
    /* random only ever picks nodes that fit: a 4-GPU job fits n0 alone */
    tsched_cluster_t *c = two_nodes();
    tsched_policy_t *p = tsched_policy_create("random", NULL);
    for (int i = 0; i < 2; i++) {
        tsched_job_t j = job(1000, 4, 1000);
        tsched_member_t m;
        assert_int_equal(tsched_allocate(c, p, &j, &m, NULL), 0);
        assert_int_equal(m.node, 0);
    }
    tsched_job_t j = job(1000, 4, 1000);
    tsched_member_t m;
    tsched_reason_t why;
    assert_int_equal(tsched_allocate(c, p, &j, &m, &why), 1);
    assert_int_equal(why, TSCHED_NO_GPU);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

static void test_fgd_frag(void **state)
{
    /* Mix: one task kind, 0.6 GPU.  A 1-GPU node is fragmented when its free
     * share is below 600.  After a 0.5 job: 500 idle, all of it fragment. */
    tsched_cluster_t *c = tsched_cluster_create();
    add(c, "a", 8000, 1, "X");
    add(c, "b", 8000, 1, "X");
    tsched_job_t mix = job(0, 1, 600);
    double w = 1;
    assert_int_equal(tsched_cluster_set_workload(c, &mix, &w, 1, NULL), 0);
    uint64_t cap, al;
    double frag;
    tsched_cluster_gpu_stats(c, &cap, &al, &frag);
    assert_true(cap == 2000 && al == 0);
    assert_true(frag == 0);
    assert_int_equal(alloc(c, "fgd", job(0, 1, 500), NULL), 0);
    tsched_cluster_gpu_stats(c, &cap, &al, &frag);
    assert_true(al == 500);
    assert_true(frag == 500.0);
    /* a 0.4 job: on a (fills to 100, frag 500 -> 100) rather than b (frag
     * 0 -> 600): FGD takes the node whose fragmentation drops */
    assert_int_equal(alloc(c, "fgd", job(0, 1, 400), NULL), 0);
    tsched_cluster_gpu_stats(c, &cap, &al, &frag);
    assert_true(frag == 100.0);
    tsched_cluster_destroy(c);
}

static void test_fgd_cpu(void **state)
{
    /* A GPU task needing 6 cores: a node left with fewer cores strands its
     * GPUs.  Mix: 1 GPU + 6 cores.  Node a: 8 cores, b: 64 cores, 1 GPU each.
     * A 4-core CPU-only job on a leaves 4 cores: a's 1000 idle milli-GPU turn
     * into fragment; on b nothing changes.  FGD and tessel pick b. */
    const char *names[] = {"fgd", "tessel"};
    for (int k = 0; k < 2; k++) {
        tsched_cluster_t *c = tsched_cluster_create();
        add(c, "a", 8000, 1, "X");
        add(c, "b", 64000, 1, "X");
        tsched_job_t mix = job(6000, 1, 1000);
        double w = 1;
        assert_int_equal(tsched_cluster_set_workload(c, &mix, &w, 1, NULL), 0);
        assert_int_equal(alloc(c, names[k], job(4000, 0, 0), NULL), 1);
        double frag;
        tsched_cluster_gpu_stats(c, NULL, NULL, &frag);
        assert_true(frag == 0);
        tsched_cluster_destroy(c);
    }
}

static void test_binpack_spread(void **state)
{
    /* node level: binpack fills the fuller node, spread the emptier one;
     * GPU level: binpack the fullest GPU that fits, spread the emptiest. */
    tsched_cluster_t *c = tsched_cluster_create();
    add(c, "a", 64000, 2, "X");
    add(c, "b", 64000, 2, "X");
    tsched_member_t m = {.node = 0, .ngpus = 1, .milli_gpu = 500, .cpu_milli = 1000};
    m.gpu[0] = 1;
    assert_int_equal(tsched_commit(c, &m, 1), 0);
    int g;
    assert_int_equal(alloc(c, "binpack", job(1000, 1, 300), &g), 0);
    assert_int_equal(g, 1);
    assert_int_equal(alloc(c, "binpack:spread", job(1000, 1, 100), &g), 0);
    assert_int_equal(g, 0);
    assert_int_equal(alloc(c, "spread", job(1000, 1, 100), &g), 1);
    assert_int_equal(alloc(c, "spread:binpack", job(1000, 1, 100), &g), 1);
    assert_int_equal(g, 0); /* b's GPU 0 has 900 left after the last job */
    tsched_cluster_destroy(c);
}

static void test_models_and_labels(void **state)
{
    tsched_cluster_t *c = tsched_cluster_create();
    add(c, "t4", 64000, 2, "T4");
    tsched_gpu_spec_t g[2] = {
        {.model = "A100", .mem_bytes = 80 * GiB, .nvlink_island = -1, .pcie_switch = -1},
        {.model = "A100", .mem_bytes = 80 * GiB, .nvlink_island = -1, .pcie_switch = -1}};
    tsched_node_spec_t ns = {.name = "a100",
                             .cpu_milli = 64000,
                             .mem_bytes = 512 * GiB,
                             .labels = "zone=b,disk=ssd",
                             .ngpus = 2,
                             .gpus = g};
    assert_int_equal(tsched_cluster_add_node(c, &ns, NULL), 1);
    const char *pols[] = {"tessel", "fgd", "bestfit", "random", "binpack", "spread"};
    for (size_t i = 0; i < sizeof pols / sizeof pols[0]; i++) {
        tsched_job_t j = job(1000, 1, 100);
        j.models = "V100|A100";
        assert_int_equal(alloc(c, pols[i], j, NULL), 1);
        tsched_job_t k = job(1000, 1, 100);
        k.selector = "disk=ssd";
        assert_int_equal(alloc(c, pols[i], k, NULL), 1);
    }
    tsched_job_t j = job(1000, 1, 1000);
    j.models = "H100";
    tsched_policy_t *p = tsched_policy_create(NULL, NULL);
    tsched_member_t m;
    tsched_reason_t why;
    assert_int_equal(tsched_place(c, p, &j, &m, &why), 1);
    assert_int_equal(why, TSCHED_NO_MODEL);
    j = job(1000, 1, 500);
    j.gpu_mem_bytes = 40 * GiB; /* only the 80 GiB GPUs */
    assert_int_equal(tsched_place(c, p, &j, &m, &why), 0);
    assert_int_equal(m.node, 1);
    j.gpu_mem_bytes = 100 * GiB;
    assert_int_equal(tsched_place(c, p, &j, &m, &why), 1);
    assert_int_equal(why, TSCHED_NO_GPU_MEM);
    j = job(100000, 1, 500);
    assert_int_equal(tsched_place(c, p, &j, &m, &why), 1);
    assert_int_equal(why, TSCHED_NO_CPU);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

static void test_nvlink(void **state)
{
    /* 8 GPUs, islands {0-3} and {4-7}; GPUs 0 and 5 busy.  A 2-GPU job goes
     * to one island (the tighter one when both can hold it); a 4-GPU job
     * can only go to... neither island has 4 free: any 4. */
    tsched_cluster_t *c = tsched_cluster_create();
    tsched_gpu_spec_t g[8];
    memset(g, 0, sizeof g);
    for (int j = 0; j < 8; j++) {
        g[j].model = "H100";
        g[j].nvlink_island = j / 4;
        g[j].pcie_switch = -1;
    }
    tsched_node_spec_t ns = {
        .name = "h", .cpu_milli = 64000, .mem_bytes = 64 * GiB, .ngpus = 8, .gpus = g};
    assert_int_equal(tsched_cluster_add_node(c, &ns, NULL), 0);
    tsched_member_t busy[2] = {{.node = 0, .ngpus = 1, .milli_gpu = 1000},
                               {.node = 0, .ngpus = 1, .milli_gpu = 1000}};
    busy[0].gpu[0] = 0;
    busy[1].gpu[0] = 5;
    assert_int_equal(tsched_commit(c, busy, 2), 0);
    tsched_policy_t *p = tsched_policy_create("tessel", NULL);
    tsched_job_t j = job(1000, 3, 1000);
    tsched_member_t m;
    assert_int_equal(tsched_place(c, p, &j, &m, NULL), 0);
    int island = m.gpu[0] / 4;
    for (unsigned i = 0; i < m.ngpus; i++)
        assert_int_equal(m.gpu[i] / 4, island);
    j = job(1000, 4, 1000);
    assert_int_equal(tsched_place(c, p, &j, &m, NULL), 0);
    assert_int_equal(m.ngpus, 4);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

static void test_gang_and_release(void **state)
{
    tsched_cluster_t *c = two_nodes();
    tsched_policy_t *p = tsched_policy_create("tessel", NULL);
    tsched_job_t j = job(8000, 2, 1000);
    j.gang = 6; /* 5 fit (4 on n0, 1 on n1), the 6th does not */
    tsched_member_t m[6];
    tsched_reason_t why;
    assert_int_equal(tsched_allocate(c, p, &j, m, &why), 1);
    assert_int_equal(why, TSCHED_NO_GANG);
    uint64_t cap, al;
    tsched_cluster_gpu_stats(c, &cap, &al, NULL);
    assert_true(al == 0); /* all or nothing */
    j.gang = 5;
    assert_int_equal(tsched_allocate(c, p, &j, m, &why), 0);
    tsched_cluster_gpu_stats(c, &cap, &al, NULL);
    assert_true(al == 10000);
    /* would an 8-GPU job fit if the 4 members on n0 left? */
    tsched_member_t gone[5];
    size_t ngone = 0;
    for (int i = 0; i < 5; i++)
        if (m[i].node == 0)
            gone[ngone++] = m[i];
    assert_int_equal(ngone, 4);
    tsched_job_t big = job(1000, 8, 1000);
    tsched_member_t bm;
    assert_int_equal(tsched_place(c, p, &big, &bm, &why), 1);
    assert_int_equal(why, TSCHED_NO_GPU);
    assert_int_equal(tsched_fits_without(c, p, &big, gone, ngone, &bm, &why), 0);
    assert_int_equal(bm.node, 0);
    assert_int_equal(tsched_fits_without(c, p, &big, gone, 1, &bm, &why), 1);
    tsched_cluster_gpu_stats(c, &cap, &al, NULL);
    assert_true(al == 10000); /* restored */
    assert_int_equal(tsched_release(c, m, 5), 0);
    tsched_cluster_gpu_stats(c, &cap, &al, NULL);
    assert_true(al == 0);
    /* releasing twice is refused and changes nothing */
    errno = 0;
    assert_int_equal(tsched_release(c, m, 1), -1);
    assert_int_equal(errno, EINVAL);
    /* committing what is not free is refused, all or nothing */
    assert_int_equal(tsched_commit(c, m, 5), 0);
    errno = 0;
    assert_int_equal(tsched_commit(c, m, 5), -1);
    assert_int_equal(errno, ENOSPC);
    tsched_cluster_gpu_stats(c, &cap, &al, NULL);
    assert_true(al == 10000);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

static void test_bad_input(void **state)
{
    tsl_error_t e = {{0}};
    errno = 0;
    assert_null(tsched_policy_create("fastest", &e));
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(e.text, "fastest"));
    for (const char *const *n = tsched_policy_names(); *n; n++) {
        tsched_policy_t *p = tsched_policy_create(*n, NULL);
        assert_non_null(p);
        tsched_policy_destroy(p);
    }
    tsched_policy_t *bp = tsched_policy_create("binpack", NULL);
    assert_string_equal(tsched_policy_name(bp), "binpack:binpack");
    tsched_policy_destroy(bp);
    bp = tsched_policy_create("", NULL);
    assert_string_equal(tsched_policy_name(bp), "tessel");
    tsched_policy_destroy(bp);
    tsched_cluster_t *c = two_nodes();
    tsched_policy_t *p = tsched_policy_create(NULL, NULL);
    tsched_job_t j = job(0, 1, 1200); /* more than a GPU */
    tsched_member_t m;
    tsched_reason_t why;
    assert_int_equal(tsched_place(c, p, &j, &m, &why), -1);
    assert_int_equal(why, TSCHED_BAD_REQUEST);
    j = job(0, 17, 1000);
    assert_int_equal(tsched_place(c, p, &j, &m, &why), -1);
    tsched_gpu_spec_t g[17];
    memset(g, 0, sizeof g);
    tsched_node_spec_t ns = {.name = "big", .ngpus = 17, .gpus = g};
    assert_int_equal(tsched_cluster_add_node(c, &ns, &e), -1);
    assert_int_equal(tsched_cluster_nodes(c), 2);
    assert_int_equal(tsched_node_free(c, 9, NULL, NULL, NULL, NULL, NULL), -1);
    assert_string_equal(tsched_reason_str(TSCHED_NO_CPU), "not enough free CPU");
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
    tsched_cluster_destroy(NULL);
    tsched_policy_destroy(NULL);
    /* an empty cluster */
    c = tsched_cluster_create();
    p = tsched_policy_create("fgd", NULL);
    j = job(0, 1, 500);
    assert_int_equal(tsched_place(c, p, &j, &m, &why), 1);
    assert_int_equal(why, TSCHED_NO_NODES);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

/* Tessel weighs each task of the mix by how few GPUs could hold it: an
 * 8-GPU job asking for 120 cores fits only the 128-core node, so one-GPU jobs
 * keep off it (although it comes first in node order) while others have room. */
static void test_tessel_cpu_scarcity(void **state)
{
    tsched_cluster_t *c = tsched_cluster_create();
    assert_non_null(c);
    assert_int_equal(add(c, "big", 128000, 8, "G2"), 0);
    assert_int_equal(add(c, "s1", 96000, 8, "G2"), 1);
    assert_int_equal(add(c, "s2", 96000, 8, "G2"), 2);
    assert_int_equal(add(c, "s3", 96000, 8, "G2"), 3);
    tsched_job_t mix[2] = {job(120000, 8, 1000), job(8000, 1, 1000)};
    double w[2] = {1, 20};
    assert_int_equal(tsched_cluster_set_workload(c, mix, w, 2, NULL), 0);
    for (int i = 0; i < 24; i++)
        assert_true(alloc(c, "tessel", job(8000, 1, 1000), NULL) > 0);
    assert_int_equal(alloc(c, "tessel", job(120000, 8, 1000), NULL), 0);
    tsched_cluster_destroy(c);
}

/* Whole nodes for the multi-GPU share of the mix: one-GPU jobs and CPU-only
 * jobs fill two of three 8-GPU nodes and leave the third whole, GPUs and CPU,
 * for the 8-GPU job. */
static void test_tessel_keeps_whole_node(void **state)
{
    tsched_cluster_t *c = tsched_cluster_create();
    assert_non_null(c);
    for (int i = 0; i < 3; i++) {
        const char *name[3] = {"n0", "n1", "n2"};
        assert_int_equal(add(c, name[i], 96000, 8, "G2"), i);
    }
    tsched_job_t mix[3] = {job(80000, 8, 1000), job(8000, 1, 1000), job(16000, 0, 0)};
    double w[3] = {1, 8, 2};
    assert_int_equal(tsched_cluster_set_workload(c, mix, w, 3, NULL), 0);
    int used[3] = {0};
    for (int i = 0; i < 16; i++) {
        int n = alloc(c, "tessel", job(8000, 1, 1000), NULL);
        assert_true(n >= 0);
        used[n]++;
        if (i % 4 == 3) {
            n = alloc(c, "tessel", job(16000, 0, 0), NULL);
            assert_true(n >= 0);
            used[n]++;
        }
    }
    int whole = 0;
    for (int i = 0; i < 3; i++)
        whole += used[i] == 0;
    assert_int_equal(whole, 1);
    assert_true(alloc(c, "tessel", job(80000, 8, 1000), NULL) >= 0);
    tsched_cluster_destroy(c);
}

/* CPU stranding: the mix's GPU tasks ask 20 or 1 cores, 10.5 per GPU on
 * average.  A 20-core CPU-only job on the 40-core node would leave 20 cores
 * for its 4 idle GPUs, which feed about 2 of them; on the 60-core node it
 * leaves 40, enough for 4.  Each kind alone fits both nodes either way (the
 * per-kind capacity term is the same for both: the policy before the
 * stranding term took the 40-core node, and the mix's tasks then used 5 of
 * the 8 GPUs).  With the job on the 60-core node they use all 8. */
static void test_tessel_cpu_stranding(void **state)
{
    tsched_cluster_t *c = tsched_cluster_create();
    assert_non_null(c);
    assert_int_equal(add(c, "a", 60000, 4, "G2"), 0);
    assert_int_equal(add(c, "b", 40000, 4, "G2"), 1);
    tsched_job_t mix[2] = {job(20000, 1, 1000), job(1000, 1, 1000)};
    double w[2] = {1, 1};
    assert_int_equal(tsched_cluster_set_workload(c, mix, w, 2, NULL), 0);
    assert_int_equal(alloc(c, "tessel", job(20000, 0, 0), NULL), 0);
    int placed = 0;
    for (int i = 0; i < 16; i++)
        placed += alloc(c, "tessel", mix[i % 2], NULL) >= 0;
    assert_int_equal(placed, 8);
    tsched_cluster_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bestfit),
        cmocka_unit_test(test_dotprod),
        cmocka_unit_test(test_gpupacking),
        cmocka_unit_test(test_gpuclustering),
        cmocka_unit_test(test_random_feasible),
        cmocka_unit_test(test_fgd_frag),
        cmocka_unit_test(test_fgd_cpu),
        cmocka_unit_test(test_binpack_spread),
        cmocka_unit_test(test_models_and_labels),
        cmocka_unit_test(test_nvlink),
        cmocka_unit_test(test_gang_and_release),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_tessel_cpu_scarcity),
        cmocka_unit_test(test_tessel_keeps_whole_node),
        cmocka_unit_test(test_tessel_cpu_stranding),
    };
    return cmocka_run_group_tests_name("libsched/place", tests, NULL, NULL);
}
