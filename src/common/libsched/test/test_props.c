/* test_props.c - properties over random clusters and random jobs, for every
 * policy: nothing is ever over-allocated (CPU, memory, milli-GPU, GPU
 * memory), gangs are all or nothing, model / label / GPU-memory constraints
 * hold, tsched_place() changes nothing, releases give everything back, and
 * the cached fragmentation equals a recomputation from first principles. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tessel/sched.h"

#define GiB    (1ull << 30)
#define NODES  24
#define ROUNDS 400

static uint64_t rng = 7;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static unsigned below(unsigned n)
{
    return (unsigned)(rnd() % n);
}

static const char *models[] = {"A100", "H100", "T4"};

/* The test's own ledger of what the cluster should have free. */
struct shadow {
    uint64_t cpu, mem;
    unsigned ngpus;
    int model;
    int island[TSCHED_MAX_NODE_GPUS];
    uint32_t free[TSCHED_MAX_NODE_GPUS];
    uint64_t gmem_cap, gmem[TSCHED_MAX_NODE_GPUS];
    int ssd;
};

struct held {
    tsched_member_t m[4];
    unsigned n;
};

static void build(tsched_cluster_t *c, struct shadow *sh)
{
    for (unsigned i = 0; i < NODES; i++) {
        struct shadow *s = &sh[i];
        memset(s, 0, sizeof *s);
        s->ngpus = below(9); /* 0..8, some CPU-only nodes */
        s->model = (int)below(3);
        s->cpu = 8000 + 4000 * below(16);
        s->mem = (16 + 16 * below(8)) * GiB;
        s->gmem_cap = (s->model == 2 ? 16 : 80) * GiB;
        s->ssd = (int)below(2);
        tsched_gpu_spec_t g[TSCHED_MAX_NODE_GPUS];
        memset(g, 0, sizeof g);
        for (unsigned j = 0; j < s->ngpus; j++) {
            g[j].model = models[s->model];
            g[j].mem_bytes = s->gmem_cap;
            g[j].nvlink_island = s->island[j] = s->ngpus >= 4 ? (int)(j / 4) : -1;
            g[j].pcie_switch = -1;
            s->free[j] = TSCHED_MILLI;
            s->gmem[j] = s->gmem_cap;
        }
        char name[16];
        snprintf(name, sizeof name, "node-%02u", i);
        tsched_node_spec_t ns = {.name = name,
                                 .cpu_milli = s->cpu,
                                 .mem_bytes = s->mem,
                                 .labels = s->ssd ? "disk=ssd,zone=a" : "zone=a",
                                 .ngpus = s->ngpus,
                                 .gpus = g};
        assert_int_equal(tsched_cluster_add_node(c, &ns, NULL), (int)i);
    }
}

static void check_same(const tsched_cluster_t *c, const struct shadow *sh)
{
    for (unsigned i = 0; i < NODES; i++) {
        uint64_t cpu, mem, gm[TSCHED_MAX_NODE_GPUS];
        uint32_t ng, fm[TSCHED_MAX_NODE_GPUS];
        assert_int_equal(tsched_node_free(c, i, &cpu, &mem, &ng, fm, gm), 0);
        assert_true(cpu == sh[i].cpu);
        assert_true(mem == sh[i].mem);
        assert_int_equal(ng, sh[i].ngpus);
        for (unsigned j = 0; j < ng; j++) {
            assert_int_equal(fm[j], sh[i].free[j]);
            assert_true(gm[j] == sh[i].gmem[j]);
        }
    }
}

static tsched_job_t random_job(void)
{
    tsched_job_t j;
    memset(&j, 0, sizeof j);
    j.cpu_milli = 1000 * below(24);
    j.mem_bytes = GiB * below(32);
    unsigned kind = below(10);
    if (kind < 2) {
        j.ngpus = 0;
    } else if (kind < 6) {
        j.ngpus = 1;
        j.milli_gpu = 50 + 50 * below(20); /* 50..1000 */
    } else {
        static const uint32_t n[] = {1, 2, 4, 8};
        j.ngpus = n[below(4)];
        j.milli_gpu = 1000;
    }
    if (j.ngpus && below(4) == 0)
        j.gpu_mem_bytes = GiB * (4 + below(40));
    if (j.ngpus && below(5) == 0)
        j.models = below(2) ? "A100|H100" : "T4";
    if (below(6) == 0)
        j.selector = "disk=ssd";
    j.gang = below(8) == 0 ? 1 + below(4) : 1;
    return j;
}

/* Checks the members against the job's constraints and applies them to
 * the ledger, asserting that nothing goes below zero. */
static void take(struct shadow *sh, const tsched_job_t *j, const tsched_member_t *m, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        struct shadow *s = &sh[m[i].node];
        assert_true(m[i].node < NODES);
        assert_int_equal(m[i].ngpus, j->ngpus);
        assert_true(m[i].cpu_milli == j->cpu_milli && m[i].mem_bytes == j->mem_bytes);
        assert_true(s->cpu >= m[i].cpu_milli);
        assert_true(s->mem >= m[i].mem_bytes);
        s->cpu -= m[i].cpu_milli;
        s->mem -= m[i].mem_bytes;
        if (j->selector)
            assert_true(s->ssd);
        if (j->models) {
            assert_non_null(strstr(j->models, models[s->model]));
        }
        /* a multi-GPU member gets one NVLink island when one can hold it
         * (islands of 4 here); decided on the ledger before charging */
        int one_island_possible = 0;
        uint32_t want = j->ngpus > 1 || j->milli_gpu == 0 ? 1000 : j->milli_gpu;
        if (m[i].ngpus >= 2) {
            unsigned cnt[4] = {0, 0, 0, 0};
            for (unsigned g = 0; g < s->ngpus; g++)
                if (s->island[g] >= 0 && s->free[g] >= want && s->gmem[g] >= j->gpu_mem_bytes)
                    cnt[s->island[g]]++;
            for (int k = 0; k < 4; k++)
                if (cnt[k] >= m[i].ngpus)
                    one_island_possible = 1;
        }
        int island = -2;
        for (unsigned k = 0; k < m[i].ngpus; k++) {
            unsigned g = m[i].gpu[k];
            assert_true(g < s->ngpus);
            for (unsigned l = 0; l < k; l++)
                assert_int_not_equal(m[i].gpu[l], g);
            assert_int_equal(m[i].milli_gpu, want);
            assert_true(s->free[g] >= want);
            assert_true(s->gmem[g] >= j->gpu_mem_bytes);
            s->free[g] -= want;
            s->gmem[g] -= j->gpu_mem_bytes;
            if (island == -2)
                island = s->island[g];
            else if (island != s->island[g])
                island = -3;
        }
        if (one_island_possible)
            assert_true(island >= 0);
    }
}

static void give(struct shadow *sh, const tsched_member_t *m, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        struct shadow *s = &sh[m[i].node];
        s->cpu += m[i].cpu_milli;
        s->mem += m[i].mem_bytes;
        for (unsigned k = 0; k < m[i].ngpus; k++) {
            s->free[m[i].gpu[k]] += m[i].milli_gpu;
            s->gmem[m[i].gpu[k]] += m[i].gpu_mem_bytes;
        }
    }
}

static void run_policy(const char *name, uint64_t seed)
{
    rng = seed;
    tsched_cluster_t *c = tsched_cluster_create();
    assert_non_null(c);
    struct shadow sh[NODES];
    build(c, sh);
    /* a task mix with CPU, models and multi-GPU kinds */
    tsched_job_t mix[5];
    double w[5] = {4, 3, 2, 1, 1};
    for (int i = 0; i < 5; i++) {
        mix[i] = random_job();
        mix[i].selector = NULL;
    }
    assert_int_equal(tsched_cluster_set_workload(c, mix, w, 5, NULL), 0);
    tsched_policy_t *p = tsched_policy_create(name, NULL);
    assert_non_null(p);
    tsched_policy_seed(p, seed);
    struct held held[ROUNDS];
    unsigned nheld = 0, placed = 0, refused = 0;
    for (unsigned r = 0; r < ROUNDS; r++) {
        if (nheld && below(4) == 0) { /* a job ends */
            unsigned k = below(nheld);
            assert_int_equal(tsched_release(c, held[k].m, held[k].n), 0);
            give(sh, held[k].m, held[k].n);
            held[k] = held[--nheld];
            check_same(c, sh);
            continue;
        }
        tsched_job_t j = random_job();
        tsched_member_t m[4];
        tsched_reason_t why;
        /* place alone changes nothing */
        int rc = tsched_place(c, p, &j, m, &why);
        check_same(c, sh);
        rc = tsched_allocate(c, p, &j, m, &why);
        if (rc == 0) {
            take(sh, &j, m, j.gang ? j.gang : 1);
            held[nheld].n = j.gang ? j.gang : 1;
            memcpy(held[nheld].m, m, sizeof m);
            nheld++;
            placed++;
        } else {
            assert_int_equal(rc, 1);
            assert_true(why != TSCHED_FIT);
            refused++;
        }
        check_same(c, sh); /* all or nothing: the ledger matches either way */
        /* "would it fit without the first held job?" leaves no trace */
        if (nheld) {
            (void)tsched_fits_without(c, p, &j, held[0].m, held[0].n, m, &why);
            check_same(c, sh);
        }
    }
    /* the load is heavy enough for both outcomes to occur */
    assert_true(placed > 20);
    assert_true(refused > 5);
    while (nheld) {
        nheld--;
        assert_int_equal(tsched_release(c, held[nheld].m, held[nheld].n), 0);
        give(sh, held[nheld].m, held[nheld].n);
    }
    check_same(c, sh);
    uint64_t cap, al;
    double frag;
    tsched_cluster_gpu_stats(c, &cap, &al, &frag);
    assert_true(al == 0);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

static void test_all_policies(void **state)
{
    for (const char *const *n = tsched_policy_names(); *n; n++)
        for (uint64_t seed = 1; seed <= 3; seed++)
            run_policy(*n, seed);
}

/* Fragmentation from its definition (FGD paper), against the cache. */
static void test_frag_definition(void **state)
{
    rng = 99;
    tsched_cluster_t *c = tsched_cluster_create();
    struct shadow sh[NODES];
    build(c, sh);
    tsched_job_t mix[4];
    double w[4] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++) {
        memset(&mix[i], 0, sizeof mix[i]);
        mix[i].cpu_milli = 2000 * (unsigned)i;
    }
    mix[0].ngpus = 0;                         /* CPU-only: all idle GPU counts */
    mix[1].ngpus = 1, mix[1].milli_gpu = 300; /* a fraction */
    mix[2].ngpus = 2, mix[2].milli_gpu = 1000;
    mix[3].ngpus = 1, mix[3].milli_gpu = 700, mix[3].models = "T4";
    assert_int_equal(tsched_cluster_set_workload(c, mix, w, 4, NULL), 0);
    tsched_policy_t *p = tsched_policy_create("random", NULL);
    for (unsigned r = 0; r < 200; r++) {
        tsched_job_t j = random_job();
        tsched_member_t m[4];
        if (tsched_allocate(c, p, &j, m, NULL) == 0)
            take(sh, &j, m, j.gang ? j.gang : 1);
        double want = 0;
        for (unsigned i = 0; i < NODES; i++) {
            uint64_t idle = 0;
            for (unsigned g = 0; g < sh[i].ngpus; g++)
                idle += sh[i].free[g];
            for (int t = 0; t < 4; t++) {
                double share = w[t] / 10.0;
                int fits = sh[i].cpu >= mix[t].cpu_milli && mix[t].ngpus > 0 &&
                           (!mix[t].models || sh[i].model == 2);
                uint64_t usable = 0;
                unsigned n = 0;
                for (unsigned g = 0; fits && g < sh[i].ngpus; g++)
                    if (sh[i].free[g] >= mix[t].milli_gpu) {
                        usable += sh[i].free[g];
                        n++;
                    }
                if (!fits || n < mix[t].ngpus)
                    want += share * (double)idle;
                else
                    want += share * (double)(idle - usable);
            }
        }
        double got;
        tsched_cluster_gpu_stats(c, NULL, NULL, &got);
        assert_true(got > want - 1e-6 && got < want + 1e-6);
    }
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
}

/* The score cache is exact: a cluster whose every node is touched before
 * each decision (which throws its cached scores away) decides exactly as one
 * that keeps them, through commits, releases and the changes of Tessel's
 * demand factors. */
static void test_cache_exact(void **state)
{
    const char *names[] = {"tessel", "fgd"};
    for (int pi = 0; pi < 2; pi++)
        for (uint64_t seed = 11; seed <= 13; seed++) {
            tsched_cluster_t *c[2];
            struct shadow sh[2][NODES];
            tsched_job_t mix[2][6];
            double w[6] = {4, 3, 2, 2, 1, 3};
            for (int k = 0; k < 2; k++) {
                rng = seed;
                c[k] = tsched_cluster_create();
                assert_non_null(c[k]);
                build(c[k], sh[k]);
                for (int i = 0; i < 5; i++) {
                    mix[k][i] = random_job();
                    mix[k][i].selector = NULL;
                }
                mix[k][3].ngpus = 4, mix[k][3].milli_gpu = 1000; /* multi-GPU kinds */
                mix[k][4].ngpus = 8, mix[k][4].milli_gpu = 1000;
                /* CPU-only jobs of 48 cores, more than the CPU the GPUs leave
                 * spare: tessel's co_share moves (cluster.c) */
                memset(&mix[k][5], 0, sizeof mix[k][5]);
                mix[k][5].cpu_milli = 48000;
                assert_int_equal(tsched_cluster_set_workload(c[k], mix[k], w, 6, NULL), 0);
            }
            tsched_policy_t *p = tsched_policy_create(names[pi], NULL);
            assert_non_null(p);
            struct held held[ROUNDS];
            unsigned nheld = 0;
            for (unsigned r = 0; r < ROUNDS; r++) {
                if (nheld && below(5) == 0) {
                    unsigned k = below(nheld);
                    for (int x = 0; x < 2; x++)
                        assert_int_equal(tsched_release(c[x], held[k].m, held[k].n), 0);
                    held[k] = held[--nheld];
                    continue;
                }
                for (uint32_t i = 0; i < NODES; i++) { /* touch every node of c[1] */
                    tsched_member_t t = {.node = i};
                    assert_int_equal(tsched_commit(c[1], &t, 1), 0);
                    assert_int_equal(tsched_release(c[1], &t, 1), 0);
                }
                tsched_job_t j = random_job();
                tsched_member_t m[2][4];
                memset(m, 0, sizeof m);
                int rc0 = tsched_allocate(c[0], p, &j, m[0], NULL);
                int rc1 = tsched_allocate(c[1], p, &j, m[1], NULL);
                assert_int_equal(rc0, rc1);
                assert_memory_equal(m[0], m[1], sizeof m[0]);
                if (rc0 == 0) {
                    held[nheld].n = j.gang ? j.gang : 1;
                    memcpy(held[nheld].m, m[0], sizeof m[0]);
                    nheld++;
                }
            }
            tsched_policy_destroy(p);
            tsched_cluster_destroy(c[0]);
            tsched_cluster_destroy(c[1]);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_policies),
        cmocka_unit_test(test_frag_definition),
        cmocka_unit_test(test_cache_exact),
    };
    return cmocka_run_group_tests_name("libsched/props", tests, NULL, NULL);
}
