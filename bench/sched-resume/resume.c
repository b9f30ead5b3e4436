/* resume.c - bench-sched-resume: what tesseld's check of a waiting restore costs at each tick
 * (tsched_job_may_start, sched_wait.h; docs/suspend.md, "The cost of a waiting restore's
 * check"), against the pending jobs the scheduler holds.
 *
 * Set-up (not timed): --nodes nodes of 8 A100s (80 GiB), 128 CPUs, 1 TiB; one queue "lab";
 * every GPU taken by running jobs of lab (one whole GPU each) except GPU 0 of node 0, where
 * one job holds half and the restore R (half a GPU, priority 0) held the other half.  Then
 * --pending jobs pending in lab, each of a higher priority than R (so that each is looked at) and
 * asking more than the half GPU R would leave (so that each fits nowhere: two placements each, the
 * question's worst case), their requests drawn (seeded) from --shapes shapes (GPUs 1, 2, 4 or 8
 * whole, CPU and memory varied).  R is submitted again, asked and removed, as tesseld's
 * restore_start does at each tick; the answer is "may start" (no pending job fits even without R).
 *
 * Timed, on one thread (the thread's CPU time, and the wall clock), each over --ticks ticks:
 *   steady   nothing changes between ticks (a restore that waits for a limit, a pending
 *            job's end...): the common case;
 *   changing one more pending job submitted before each tick (the worst case for a kept
 *            answer: every tick asks afresh; the pending jobs grow by --ticks, the line
 *            names the count they started from).
 * Prints one line per mode with the microseconds per tick, and the answer, for
 * bench/sched-resume/compare.sh (which runs this against main's libsched side by side).
 * Uses only what sched_wait.h had before the kept answers, so that it builds against the
 * baseline's library too.
 *
 *   bench-sched-resume [--pending 1000] [--nodes 64] [--shapes 16] [--ticks 200] [--seed 42]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessel/sched.h"
#include "tessel/sched_queue.h"
#include "tessel/sched_wait.h"

#define GIB (1024ull * 1024 * 1024)
#define R   1ull

static uint64_t rng = 42;

static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double secs(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "bench-sched-resume: %s: %s\n", what, strerror(errno));
    exit(1);
}

static long arg(int argc, char **argv, const char *name, long def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) {
            char *end;
            long v = strtol(argv[i + 1], &end, 10);
            if (*end || v < 0) {
                fprintf(stderr, "bench-sched-resume: %s: not a count: %s\n", name, argv[i + 1]);
                exit(2);
            }
            return v;
        }
    return def;
}

/* The n-th of the shapes a pending job asks: GPUs 1, 2, 4 or 8, with CPU and memory varied. */
static tsched_job_t shape(unsigned n)
{
    static const uint32_t gpus[] = {1, 2, 4, 8};
    tsched_job_t r;
    memset(&r, 0, sizeof r);
    r.ngpus = gpus[n % 4];
    r.milli_gpu = 1000;
    r.cpu_milli = 1000 * (1 + n / 4);
    r.mem_bytes = GIB * (1 + n / 4);
    r.gang = 1;
    return r;
}

static void submit(tsched_sched_t *s, uint64_t id, int q, int32_t prio, const tsched_job_t *r)
{
    tsched_qjob_t j;
    memset(&j, 0, sizeof j);
    j.id = id;
    j.queue = q;
    j.cls = TSCHED_CLASS_TRAINING;
    j.priority = prio;
    j.arrival = (double)id;
    j.req = *r;
    tsl_error_t e;
    if (tsched_job_submit(s, &j, &e) < 0) {
        fprintf(stderr, "bench-sched-resume: submit %llu: %s\n", (unsigned long long)id, e.text);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long pending = arg(argc, argv, "--pending", 1000);
    long nodes = arg(argc, argv, "--nodes", 64);
    long nshapes = arg(argc, argv, "--shapes", 16);
    long ticks = arg(argc, argv, "--ticks", 200);
    rng = (uint64_t)arg(argc, argv, "--seed", 42);
    if (nodes < 1 || nshapes < 1 || ticks < 1) {
        fprintf(stderr, "bench-sched-resume: --nodes, --shapes and --ticks must be >= 1\n");
        return 2;
    }
    tsched_cluster_t *c = tsched_cluster_create();
    tsched_policy_t *p = tsched_policy_create("tessel", NULL);
    if (!c || !p)
        die("create");
    tsched_gpu_spec_t g[8];
    for (int i = 0; i < 8; i++) {
        memset(&g[i], 0, sizeof g[i]);
        g[i].model = "A100";
        g[i].mem_bytes = 80 * GIB;
        g[i].nvlink_island = -1;
        g[i].pcie_switch = -1;
    }
    for (long n = 0; n < nodes; n++) {
        char name[32];
        snprintf(name, sizeof name, "node%04ld", n);
        tsched_node_spec_t ns = {name, 128000, 1024 * GIB, NULL, 8, g};
        if (tsched_cluster_add_node(c, &ns, NULL) < 0)
            die("add node");
    }
    tsched_sched_t *s = tsched_sched_create(c, p, NULL, NULL);
    if (!s)
        die("sched");
    tsched_res_t unl = {TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    tsched_res_t none = {0, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    tsched_queue_spec_t qs = {.name = "lab", .guarantee = none, .limit = unl, .weight = 1};
    int lab = tsched_queue_add(s, &qs, NULL);
    if (lab < 0)
        die("queue");
    /* every GPU but GPU 0 of node 0 taken, a whole GPU per job */
    uint64_t id = 1000;
    tsched_job_t whole = shape(0);
    tsched_job_t half = whole;
    half.milli_gpu = 500;
    for (long n = 0; n < nodes; n++)
        for (uint8_t k = 0; k < 8; k++) {
            /* GPU 0 of node 0: the other half, so that it never has a whole GPU free */
            int h = n == 0 && k == 0;
            tsched_member_t m;
            memset(&m, 0, sizeof m);
            m.node = (uint32_t)n;
            m.ngpus = 1;
            m.gpu[0] = k;
            m.milli_gpu = h ? 500 : 1000;
            m.cpu_milli = whole.cpu_milli;
            m.mem_bytes = whole.mem_bytes;
            submit(s, id, lab, 0, h ? &half : &whole);
            if (tsched_job_started(s, id++, &m, 1, 0) < 0)
                die("start");
        }
    for (long i = 0; i < pending; i++) {
        tsched_job_t r = shape((unsigned)(rnd() % (uint64_t)nshapes));
        submit(s, id++, lab, 1 + (int32_t)(rnd() % 3), &r);
    }
    /* R: half of GPU 0 of node 0 */
    tsched_job_t rr;
    memset(&rr, 0, sizeof rr);
    rr.ngpus = 1;
    rr.milli_gpu = 500;
    rr.cpu_milli = 1000;
    rr.mem_bytes = GIB;
    rr.gang = 1;
    tsched_member_t rm;
    memset(&rm, 0, sizeof rm);
    rm.ngpus = 1;
    rm.milli_gpu = 500;
    rm.cpu_milli = 1000;
    rm.mem_bytes = GIB;

    static const char *const modes[] = {"steady", "changing"};
    for (int mode = 0; mode < 2; mode++) {
        int verdict = -1;
        tsched_wait_t w;
        double c0 = secs(CLOCK_THREAD_CPUTIME_ID), w0 = secs(CLOCK_MONOTONIC);
        for (long t = 0; t < ticks; t++) {
            if (mode == 1) {
                tsched_job_t r = shape((unsigned)(rnd() % (uint64_t)nshapes));
                submit(s, id++, lab, 1 + (int32_t)(rnd() % 3), &r);
            }
            submit(s, R, lab, 0, &rr);
            verdict = tsched_job_may_start(s, R, &rm, 1, &w);
            if (verdict < 0)
                die("may_start");
            if (tsched_job_remove(s, R, 1) < 0)
                die("remove");
        }
        double c1 = secs(CLOCK_THREAD_CPUTIME_ID), w1 = secs(CLOCK_MONOTONIC);
        char why[256];
        tsched_wait_format(&w, why, sizeof why);
        printf("%s: %ld pending, %ld nodes, %ld shapes, %ld ticks: %.2f us CPU, %.2f us wall "
               "per tick; answer %d (%s)\n",
               modes[mode], pending, nodes, nshapes, ticks, (c1 - c0) * 1e6 / (double)ticks,
               (w1 - w0) * 1e6 / (double)ticks, verdict, verdict ? "may start" : why);
    }
    tsched_sched_destroy(s);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(c);
    return 0;
}
