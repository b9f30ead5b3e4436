/* cycle.c - bench-sched-cycle: how long one full scheduling cycle of the
 * queue scheduler (sched_queue.h) takes with 10,000 pending jobs on the
 * Alibaba trace's 1,213 GPU nodes.
 *
 * Set-up (not timed): the trace's nodes; 4 departments of 4 projects each,
 * every department guaranteed a quarter of the GPUs (limit: half), every
 * project a quarter of its department's; the trace's pods submitted as
 * training jobs, 60 % of them to department 0 (so that it borrows), and
 * started by a first cycle at t = 0 (the cluster ends ~95 % allocated).
 * Then, waiting since t = 600 - --waited, --pending jobs drawn from the trace's pods (with
 * replacement, seeded) into random projects, with the class mix 80 %
 * training, 10 % interactive, 5 % build, 5 % inference and priorities 0-3.
 *
 * Timed: tsched_sched_cycle() at t = 600, on one thread; wall clock and
 * the thread's CPU time.  Repeated --reps times from a fresh set-up; prints
 * every run and the median.
 *
 *   bench-sched-cycle [--nodes FILE] [--pods FILE] [--pending 10000]
 *                     [--reps 5] [--policy tessel] [--seed 42]
 *                     [--max-plans 64] [--waited 300] [--held 0] [--stream 0]
 *
 * --max-plans: the scheduler's max_plans; --waited: how long the pending
 * jobs have waited at the timed cycle (>= 900 s: the oldest get
 * reservations, up to max_reservations).
 *
 * --held N: N more pending jobs (one GPU each) in a queue "held" whose GPU limit is 0, so
 * that none can start: what tesseld's scheduler carries while bench/submit submits into its
 * holding queue (issue 15).  Each run then also times a second cycle right after the first
 * with nothing changed (the steady state of a daemon that runs a cycle every pass).
 *
 * --stream N (with --held): then N more cycles, 5 ms apart, each after one more held job is
 * submitted (tesseld under a stream of submissions into its holding queue: a pass per
 * submission or so); prints their mean CPU time.
 *
 * Default files: $TESSEL_SHARED/traces/alibaba-gpu-2023/ (TESSEL_SHARED
 * defaults to ../shared).  Target: under 100 ms (issue 4).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessel/sched.h"
#include "tessel/sched_queue.h"

#define MIB (1024ull * 1024)

struct pod {
    uint64_t cpu, mem;
    uint32_t ngpus, milli;
    char models[64];
};

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

/* Splits line at commas in place; returns the field count. */
static int split(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        f[n++] = p;
        p = strchr(p, ',');
        if (!p)
            break;
        *p++ = '\0';
    }
    char *nl = strpbrk(f[n - 1], "\r\n");
    if (nl)
        *nl = '\0';
    return n;
}

static void die(const char *what)
{
    fprintf(stderr, "bench-sched-cycle: %s\n", what);
    exit(1);
}

static tsched_cluster_t *load_nodes(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "bench-sched-cycle: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    tsched_cluster_t *c = tsched_cluster_create();
    if (!c)
        die("out of memory");
    char line[512];
    char *f[8];
    int first = 1;
    while (fgets(line, sizeof line, fp)) {
        if (first) {
            first = 0;
            continue;
        }
        if (split(line, f, 8) < 5)
            continue;
        tsched_gpu_spec_t g[TSCHED_MAX_NODE_GPUS];
        uint32_t ng = (uint32_t)strtoul(f[3], NULL, 10);
        if (ng > TSCHED_MAX_NODE_GPUS)
            die("node with too many GPUs");
        for (uint32_t i = 0; i < ng; i++) {
            memset(&g[i], 0, sizeof g[i]);
            g[i].model = f[4];
            g[i].nvlink_island = -1;
            g[i].pcie_switch = -1;
        }
        tsched_node_spec_t ns = {
            f[0], strtoull(f[1], NULL, 10), strtoull(f[2], NULL, 10) * MIB, NULL, ng, g};
        if (tsched_cluster_add_node(c, &ns, NULL) < 0)
            die("bad node");
    }
    fclose(fp);
    return c;
}

static struct pod *load_pods(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "bench-sched-cycle: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    size_t cap = 1024;
    struct pod *p = malloc(cap * sizeof *p);
    char line[1024];
    char *f[16];
    int first = 1;
    *n = 0;
    while (p && fgets(line, sizeof line, fp)) {
        if (first) {
            first = 0;
            continue;
        }
        if (split(line, f, 16) < 6)
            continue;
        if (*n == cap) {
            cap *= 2;
            struct pod *np = realloc(p, cap * sizeof *p);
            if (!np)
                die("out of memory");
            p = np;
        }
        struct pod *d = &p[(*n)++];
        d->cpu = strtoull(f[1], NULL, 10);
        d->mem = strtoull(f[2], NULL, 10) * MIB;
        d->ngpus = (uint32_t)strtoul(f[3], NULL, 10);
        d->milli = (uint32_t)strtoul(f[4], NULL, 10);
        snprintf(d->models, sizeof d->models, "%s", f[5]);
    }
    fclose(fp);
    if (!p)
        die("out of memory");
    return p;
}

static tsched_job_t pod_req(const struct pod *p)
{
    tsched_job_t r;
    memset(&r, 0, sizeof r);
    r.cpu_milli = p->cpu;
    r.mem_bytes = p->mem;
    r.ngpus = p->ngpus;
    r.milli_gpu = p->ngpus ? (p->milli ? p->milli : 1000) : 0;
    r.models = p->models[0] ? p->models : NULL;
    r.gang = 1;
    return r;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static tsched_res_t gpus(uint64_t milli)
{
    tsched_res_t r = {milli, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    return r;
}

int main(int argc, char **argv)
{
    const char *shared = getenv("TESSEL_SHARED") ? getenv("TESSEL_SHARED") : "../shared";
    char nodes_path[1024], pods_path[1024];
    snprintf(nodes_path, sizeof nodes_path,
             "%s/traces/alibaba-gpu-2023/openb_node_list_gpu_node.csv", shared);
    snprintf(pods_path, sizeof pods_path, "%s/traces/alibaba-gpu-2023/openb_pod_list_default.csv",
             shared);
    const char *nodes = nodes_path, *pods_file = pods_path, *policy = "tessel";
    unsigned pending = 10000, reps = 5, max_plans = 64;
    double waited = 300;
    unsigned held = 0, stream = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            die("usage: bench-sched-cycle [--nodes F] [--pods F] [--pending N] [--reps N] "
                "[--policy P] [--seed S]");
        if (!strcmp(a, "--nodes"))
            nodes = v;
        else if (!strcmp(a, "--pods"))
            pods_file = v;
        else if (!strcmp(a, "--pending"))
            pending = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--reps"))
            reps = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--policy"))
            policy = v;
        else if (!strcmp(a, "--max-plans"))
            max_plans = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--waited"))
            waited = strtod(v, NULL);
        else if (!strcmp(a, "--held"))
            held = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--stream"))
            stream = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--seed"))
            rng = strtoull(v, NULL, 10);
        else
            die("unknown option (see the file header)");
        i++;
    }
    if (reps == 0 || reps > 100)
        die("--reps: 1..100");
    size_t npods;
    struct pod *pods = load_pods(pods_file, &npods);
    if (npods == 0)
        die("no pods");
    double *wall = calloc(reps, sizeof *wall), *cpu = calloc(reps, sizeof *cpu);
    double *again = calloc(reps, sizeof *again);
    double *streamed = calloc(reps, sizeof *streamed);
    if (!wall || !cpu || !again || !streamed)
        die("out of memory");
    uint64_t seed0 = rng;
    printf("bench-sched-cycle: %s, %zu pods, %u pending (waited %.0f s), policy %s, "
           "max_plans %u\n",
           nodes, npods, pending, waited, policy, max_plans);
    for (unsigned r = 0; r < reps; r++) {
        rng = seed0 + r;
        tsched_cluster_t *c = load_nodes(nodes);
        tsched_policy_t *p = tsched_policy_create(policy, NULL);
        if (!p)
            die("unknown policy");
        tsched_sched_config_t cfg;
        tsched_sched_config_default(&cfg);
        cfg.max_plans = max_plans;
        tsched_sched_t *s = tsched_sched_create(c, p, &cfg, NULL);
        if (!s)
            die("sched_create failed");
        uint64_t cap;
        tsched_cluster_gpu_stats(c, &cap, NULL, NULL);
        int leaf[16];
        for (int d = 0; d < 4; d++) {
            char name[32];
            snprintf(name, sizeof name, "dept%d", d);
            tsched_queue_spec_t q = {
                .name = name, .guarantee = gpus(cap / 4), .limit = gpus(cap / 2), .weight = 1};
            if (tsched_queue_add(s, &q, NULL) < 0)
                die("queue");
            for (int k = 0; k < 4; k++) {
                char pn[32];
                snprintf(pn, sizeof pn, "dept%d-proj%d", d, k);
                tsched_queue_spec_t pq = {.name = pn,
                                          .parent = name,
                                          .guarantee = gpus(cap / 16),
                                          .limit = gpus(TSCHED_UNLIMITED),
                                          .weight = 1};
                leaf[d * 4 + k] = tsched_queue_add(s, &pq, NULL);
                if (leaf[d * 4 + k] < 0)
                    die("queue");
            }
        }
        /* the running set: the trace's pods, department 0 borrowing */
        uint64_t id = 1;
        for (size_t i = 0; i < npods; i++) {
            int d = rnd() % 10 < 6 ? 0 : 1 + (int)(rnd() % 3);
            tsched_qjob_t j;
            memset(&j, 0, sizeof j);
            j.id = id++;
            j.queue = leaf[d * 4 + (int)(rnd() % 4)];
            j.cls = TSCHED_CLASS_TRAINING;
            j.arrival = (double)i * 0.01;
            j.req = pod_req(&pods[i]);
            if (tsched_job_submit(s, &j, NULL) < 0)
                die("submit");
        }
        tsched_decisions_t dec;
        if (tsched_sched_cycle(s, 0, &dec, NULL) < 0)
            die("cycle");
        for (size_t i = 0; i < dec.nstarts; i++)
            if (tsched_job_started(s, dec.starts[i].job, dec.starts[i].members,
                                   dec.starts[i].nmembers, 0) < 0)
                die("start");
        size_t running = dec.nstarts;
        /* what did not fit leaves: the pending set is the new jobs only */
        for (uint64_t k = 1; k < id; k++)
            if (tsched_job_state(s, k) == 0)
                (void)tsched_job_remove(s, k, 0);
        uint64_t alloc;
        tsched_cluster_gpu_stats(c, NULL, &alloc, NULL);
        for (unsigned i = 0; i < pending; i++) {
            const struct pod *pd = &pods[rnd() % npods];
            tsched_qjob_t j;
            memset(&j, 0, sizeof j);
            j.id = id++;
            j.queue = leaf[rnd() % 16];
            unsigned k = (unsigned)(rnd() % 20);
            j.cls = k < 16   ? TSCHED_CLASS_TRAINING
                    : k < 18 ? TSCHED_CLASS_INTERACTIVE
                    : k < 19 ? TSCHED_CLASS_BUILD
                             : TSCHED_CLASS_INFERENCE;
            j.priority = (int32_t)(rnd() % 4);
            j.arrival = 600 - waited + (double)i * 1e-4;
            j.req = pod_req(pd);
            if (tsched_job_submit(s, &j, NULL) < 0)
                die("submit");
        }
        int hqi = -1;
        if (held) {
            tsched_queue_spec_t hq = {
                .name = "held", .guarantee = gpus(TSCHED_UNLIMITED), .limit = gpus(0), .weight = 1};
            hqi = tsched_queue_add(s, &hq, NULL);
            if (hqi < 0)
                die("queue");
            for (unsigned i = 0; i < held; i++) {
                tsched_qjob_t j;
                memset(&j, 0, sizeof j);
                j.id = id++;
                j.queue = hqi;
                j.cls = TSCHED_CLASS_TRAINING;
                j.arrival = 600 - waited + (double)i * 1e-4;
                j.req.cpu_milli = 1000;
                j.req.mem_bytes = 1024 * MIB;
                j.req.ngpus = 1;
                j.req.milli_gpu = 500;
                j.req.gang = 1;
                if (tsched_job_submit(s, &j, NULL) < 0)
                    die("submit");
            }
        }
        double w0 = secs(CLOCK_MONOTONIC), c0 = secs(CLOCK_THREAD_CPUTIME_ID);
        if (tsched_sched_cycle(s, 600, &dec, NULL) < 0)
            die("cycle");
        double c1 = secs(CLOCK_THREAD_CPUTIME_ID), w1 = secs(CLOCK_MONOTONIC);
        wall[r] = (w1 - w0) * 1e3;
        cpu[r] = (c1 - c0) * 1e3;
        printf("run %u: %zu running (%.1f %% of %llu milli-GPU), %u pending -> %zu starts, "
               "%zu plans, %zu victims, %zu reserved: %.1f ms wall, %.1f ms CPU\n",
               r + 1, running, 100.0 * (double)alloc / (double)cap, (unsigned long long)cap,
               pending, dec.nstarts, dec.plans, dec.nvictims, dec.reserved, wall[r], cpu[r]);
        if (held) {
            /* the next cycle, nothing changed (the starts not confirmed: they are decided
             * again) */
            double a0 = secs(CLOCK_THREAD_CPUTIME_ID);
            if (tsched_sched_cycle(s, 600, &dec, NULL) < 0)
                die("cycle");
            again[r] = (secs(CLOCK_THREAD_CPUTIME_ID) - a0) * 1e3;
            printf("held %u: %u held jobs; the next cycle: %.1f ms CPU\n", r + 1, held, again[r]);
            double t0 = secs(CLOCK_THREAD_CPUTIME_ID);
            for (unsigned k = 0; k < stream; k++) {
                tsched_qjob_t j;
                memset(&j, 0, sizeof j);
                j.id = id++;
                j.queue = hqi;
                j.cls = TSCHED_CLASS_TRAINING;
                j.arrival = 600 + (double)(k + 1) * 0.005;
                j.req.cpu_milli = 1000;
                j.req.mem_bytes = 1024 * MIB;
                j.req.ngpus = 1;
                j.req.milli_gpu = 500;
                j.req.gang = 1;
                if (tsched_job_submit(s, &j, NULL) < 0 ||
                    tsched_sched_cycle(s, j.arrival, &dec, NULL) < 0)
                    die("stream");
            }
            if (stream) {
                streamed[r] = (secs(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e3 / stream;
                printf("stream %u: %u cycles, one held job submitted before each: %.3f ms CPU "
                       "a cycle (submission included)\n",
                       r + 1, stream, streamed[r]);
            }
        }
        tsched_sched_destroy(s);
        tsched_policy_destroy(p);
        tsched_cluster_destroy(c);
    }
    qsort(wall, reps, sizeof *wall, cmp_d);
    qsort(cpu, reps, sizeof *cpu, cmp_d);
    printf("cycle: median %.1f ms wall, %.1f ms CPU (min %.1f, max %.1f wall) over %u runs; "
           "target < 100 ms\n",
           wall[reps / 2], cpu[reps / 2], wall[0], wall[reps - 1], reps);
    if (held) {
        qsort(again, reps, sizeof *again, cmp_d);
        printf("next cycle: median %.1f ms CPU\n", again[reps / 2]);
    }
    if (held && stream) {
        qsort(streamed, reps, sizeof *streamed, cmp_d);
        printf("stream: median %.3f ms CPU a cycle\n", streamed[reps / 2]);
    }
    free(streamed);
    free(again);
    free(wall);
    free(cpu);
    free(pods);
    return 0;
}
