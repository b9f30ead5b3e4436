/* tessel-sim - replay a GPU-sharing trace against placement policies.
 *
 * Implements the FGD paper's protocol (Weng et al., ATC '23; see
 * ../shared/traces/alibaba-gpu-2023/README.md): the pod list is topped up by
 * appending pods sampled from it with replacement until the GPU request
 * reaches --load % of the cluster's GPUs, the list itself shuffled with the
 * seed and the sampled pods after it, and placed one at a time, with no
 * departures and no retry.  Node names get a per-seed random prefix, as in
 * the FGD simulator, which breaks score ties by name.  The task mix used by the
 * fragmentation-aware policies is the FGD simulator's "typical pods": the
 * distinct (CPU, GPUs, milli-GPU, models) requests of the original list,
 * most common first, until they cover --typical-pct % of its pods (all of
 * them by default, see TYPICAL_PCT).
 *
 * Usage: tessel-sim --nodes FILE --pods FILE [--policy NAME[,NAME...]]
 *                   [--seeds 42-51] [--load 130] [--csv] [--node-copies N]
 *                   [--typical-pct P]
 *
 * --node-copies N replicates the node list N times (scale tests: the GPU
 * request is topped up to --load % of the larger cluster).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessel/sched.h"
#include "sim_events.h"

/* Share of the original pods the typical-pod mix covers.  The FGD
 * simulator's experiments configure 95 (podPopularityThreshold), which
 * with its key (CPU, GPUs, milli-GPU, models) leaves out every multi-GPU
 * request of the default trace; our fgd then spreads whole-GPU jobs and
 * loses 8-GPU jobs early (95.18 % at 130 % load against the published
 * 95.39 %, and 1 to 2 points low on cpu200/cpu250).  The whole mix (100)
 * reproduces the published means within 0.5 point on 8 of the 9 traces;
 * see docs/scheduler-placement.md.  --typical-pct 95 gives the other. */
#define TYPICAL_PCT 100

struct pod {
    uint64_t cpu, mem_mib;
    uint32_t ngpus, milli;
    char spec[TSCHED_NAME_MAX];
};

struct gnode {
    char name[TSCHED_NAME_MAX];
    uint64_t cpu, mem_mib;
    uint32_t ngpus;
    char model[TSCHED_NAME_MAX];
};

static const char *prog = "tessel-sim";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* --- CSV ------------------------------------------------------------------ */

struct csv {
    const char *path;
    char *buf;
    char *p;
    unsigned line;
    char *f[32];
    unsigned nf;
};

static void csv_open(struct csv *c, const char *path)
{
    memset(c, 0, sizeof *c);
    c->path = path;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        die("%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, fp)) > 0) {
        len += got;
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int bad = ferror(fp);
    fclose(fp);
    if (!buf)
        die("%s: out of memory", path);
    if (bad)
        die("%s: read error", path);
    buf[len] = '\0';
    c->buf = c->p = buf;
}

/* Next non-empty line split at commas; 0 at the end. */
static int csv_next(struct csv *c)
{
    for (;;) {
        if (!*c->p)
            return 0;
        char *s = c->p;
        char *e = strchr(s, '\n');
        if (e) {
            *e = '\0';
            c->p = e + 1;
        } else {
            c->p = s + strlen(s);
        }
        c->line++;
        size_t len = strlen(s);
        if (len && s[len - 1] == '\r')
            s[--len] = '\0';
        if (!len)
            continue;
        c->nf = 0;
        for (;;) {
            if (c->nf == 32)
                die("%s:%u: more than 32 columns", c->path, c->line);
            c->f[c->nf++] = s;
            char *comma = strchr(s, ',');
            if (!comma)
                break;
            *comma = '\0';
            s = comma + 1;
        }
        return 1;
    }
}

static int csv_col(const struct csv *c, const char *name)
{
    for (unsigned i = 0; i < c->nf; i++)
        if (strcmp(c->f[i], name) == 0)
            return (int)i;
    return -1;
}

static uint64_t csv_u64(const struct csv *c, int col, const char *what, uint64_t max)
{
    if (col < 0)
        return 0;
    if ((unsigned)col >= c->nf)
        die("%s:%u: %u columns, expected at least %d", c->path, c->line, c->nf, col + 1);
    const char *s = c->f[col];
    if (!*s)
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || s[0] == '-' || v > max)
        die("%s:%u: %s: '%.40s' is not an integer in 0..%" PRIu64, c->path, c->line, what, s, max);
    return v;
}

static void csv_str(const struct csv *c, int col, char *out)
{
    out[0] = '\0';
    if (col < 0)
        return;
    if ((unsigned)col >= c->nf)
        die("%s:%u: %u columns, expected at least %d", c->path, c->line, c->nf, col + 1);
    snprintf(out, TSCHED_NAME_MAX, "%s", c->f[col]);
}

static int need_col(const struct csv *c, const char *name)
{
    int i = csv_col(c, name);
    if (i < 0)
        die("%s:%u: no '%s' column in the header", c->path, c->line, name);
    return i;
}

static struct gnode *read_nodes(const char *path, size_t *n)
{
    struct csv c;
    csv_open(&c, path);
    if (!csv_next(&c))
        die("%s:1: empty file", path);
    int csn = csv_col(&c, "sn"), ccpu = need_col(&c, "cpu_milli");
    int cmem = need_col(&c, "memory_mib"), cgpu = need_col(&c, "gpu");
    int cmodel = need_col(&c, "model");
    unsigned width = c.nf;
    size_t cap = 1024, len = 0;
    struct gnode *v = malloc(cap * sizeof *v);
    while (v && csv_next(&c)) {
        if (c.nf != width)
            die("%s:%u: %u columns, the header has %u", path, c.line, c.nf, width);
        if (len == cap) {
            struct gnode *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
            cap *= 2;
        }
        struct gnode *g = &v[len++];
        csv_str(&c, csn, g->name);
        g->cpu = csv_u64(&c, ccpu, "cpu_milli", UINT32_MAX);
        g->mem_mib = csv_u64(&c, cmem, "memory_mib", UINT32_MAX);
        g->ngpus = (uint32_t)csv_u64(&c, cgpu, "gpu", TSCHED_MAX_NODE_GPUS);
        csv_str(&c, cmodel, g->model);
    }
    if (!v)
        die("%s: out of memory", path);
    if (!len)
        die("%s:%u: no nodes", path, c.line);
    free(c.buf);
    *n = len;
    return v;
}

static struct pod *read_pods(const char *path, size_t *n)
{
    struct csv c;
    csv_open(&c, path);
    if (!csv_next(&c))
        die("%s:1: empty file", path);
    int ccpu = need_col(&c, "cpu_milli"), cmem = need_col(&c, "memory_mib");
    int cng = need_col(&c, "num_gpu"), cgm = need_col(&c, "gpu_milli");
    int cspec = csv_col(&c, "gpu_spec");
    unsigned width = c.nf;
    size_t cap = 1024, len = 0;
    struct pod *v = malloc(cap * sizeof *v);
    while (v && csv_next(&c)) {
        if (c.nf != width)
            die("%s:%u: %u columns, the header has %u", path, c.line, c.nf, width);
        if (len == cap) {
            struct pod *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
            cap *= 2;
        }
        struct pod *p = &v[len++];
        p->cpu = csv_u64(&c, ccpu, "cpu_milli", UINT32_MAX);
        p->mem_mib = csv_u64(&c, cmem, "memory_mib", UINT32_MAX);
        p->ngpus = (uint32_t)csv_u64(&c, cng, "num_gpu", TSCHED_MAX_NODE_GPUS);
        p->milli = (uint32_t)csv_u64(&c, cgm, "gpu_milli", TSCHED_MILLI);
        csv_str(&c, cspec, p->spec);
        if (p->ngpus == 0)
            p->milli = 0;
        else if (p->milli == 0)
            die("%s:%u: num_gpu %u with gpu_milli 0", path, c.line, p->ngpus);
        else if (p->ngpus > 1 && p->milli != TSCHED_MILLI)
            die("%s:%u: gpu_milli %u below 1000 with num_gpu %u", path, c.line, p->milli, p->ngpus);
    }
    if (!v)
        die("%s: out of memory", path);
    if (!len)
        die("%s:%u: no pods", path, c.line);
    free(c.buf);
    *n = len;
    return v;
}

/* --- the mix of typical pods ------------------------------------------------ */

struct klass {
    struct pod key;
    size_t count;
};

static int same_class(const struct pod *a, const struct pod *b)
{
    return a->cpu == b->cpu && a->ngpus == b->ngpus && a->milli == b->milli &&
           strcmp(a->spec, b->spec) == 0;
}

static int cmp_class(const void *x, const void *y)
{
    const struct klass *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    if (a->key.ngpus != b->key.ngpus)
        return a->key.ngpus < b->key.ngpus ? -1 : 1;
    if (a->key.milli != b->key.milli)
        return a->key.milli < b->key.milli ? -1 : 1;
    if (a->key.cpu != b->key.cpu)
        return a->key.cpu < b->key.cpu ? -1 : 1;
    return strcmp(a->key.spec, b->key.spec);
}

static void set_mix(tsched_cluster_t *cl, const struct pod *pods, size_t n, unsigned typical_pct)
{
    struct klass *k = calloc(n, sizeof *k);
    if (!k)
        die("out of memory");
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j;
        for (j = 0; j < nk; j++)
            if (same_class(&k[j].key, &pods[i]))
                break;
        if (j == nk)
            k[nk++].key = pods[i];
        k[j].count++;
    }
    qsort(k, nk, sizeof *k, cmp_class);
    tsched_job_t *jobs = calloc(nk, sizeof *jobs);
    double *w = calloc(nk, sizeof *w);
    if (!jobs || !w)
        die("out of memory");
    size_t cum = 0, m = 0;
    while (m < nk && cum * 100 < (size_t)typical_pct * n) {
        jobs[m].cpu_milli = k[m].key.cpu;
        jobs[m].ngpus = k[m].key.ngpus;
        jobs[m].milli_gpu = k[m].key.milli;
        jobs[m].models = k[m].key.spec;
        w[m] = (double)k[m].count;
        cum += k[m].count;
        m++;
    }
    tsl_error_t err;
    if (tsched_cluster_set_workload(cl, jobs, w, m, &err) < 0)
        die("%s", err.text);
    free(jobs);
    free(w);
    free(k);
}

/* --- the replay -------------------------------------------------------------- */

static uint64_t sm_state;
static uint64_t sm_next(void)
{
    uint64_t z = (sm_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static size_t sm_below(size_t n)
{
    return (size_t)(((unsigned __int128)sm_next() * n) >> 64);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct run_out {
    double alloc[1001], frag[1001]; /* by whole percent of arrived load */
    double decisions, seconds;
};

static void run_one(const struct gnode *nodes, size_t nnodes, unsigned copies,
                    const struct pod *pods, size_t npods, unsigned typical_pct, const char *policy,
                    uint64_t seed, unsigned load, int csv, struct run_out *out)
{
    tsched_cluster_t *cl = tsched_cluster_create();
    if (!cl)
        die("out of memory");
    tsl_error_t err;
    /* The FGD simulator (pkg/simulator/simulator.go, syncClusterResourceList)
     * prefixes each node's name with its index in a random permutation
     * ("%04d-"), so its ties by name (selectHost) go to a random node order
     * drawn per run.  Own stream, so the pods' draws below are unchanged. */
    size_t ntot = (size_t)copies * nnodes;
    uint32_t *perm = malloc((ntot ? ntot : 1) * sizeof *perm);
    if (!perm)
        die("out of memory");
    for (size_t i = 0; i < ntot; i++)
        perm[i] = (uint32_t)i;
    sm_state = seed ^ 0x6e6f64657065726dull;
    for (size_t i = ntot; i > 1; i--) {
        size_t j = sm_below(i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    for (unsigned copy = 0; copy < copies; copy++)
        for (size_t i = 0; i < nnodes; i++) {
            char pname[TSCHED_NAME_MAX];
            /* A name cut at TSCHED_NAME_MAX is still unique by its numeric prefix. */
            int pn = snprintf(pname, sizeof pname, "%04u-%s", (unsigned)perm[copy * nnodes + i],
                              nodes[i].name);
            if (pn < 0)
                pname[0] = '\0';
            tsched_gpu_spec_t g[TSCHED_MAX_NODE_GPUS];
            memset(g, 0, sizeof g);
            for (unsigned j = 0; j < nodes[i].ngpus; j++) {
                g[j].model = nodes[i].model;
                g[j].nvlink_island = -1;
                g[j].pcie_switch = -1;
            }
            tsched_node_spec_t ns = {
                .name = pname,
                .cpu_milli = nodes[i].cpu,
                .mem_bytes = nodes[i].mem_mib << 20,
                .ngpus = nodes[i].ngpus,
                .gpus = g,
            };
            if (tsched_cluster_add_node(cl, &ns, &err) < 0)
                die("%s", err.text);
        }
    free(perm);
    set_mix(cl, pods, npods, typical_pct);
    tsched_policy_t *p = tsched_policy_create(policy, &err);
    if (!p)
        die("%s", err.text);
    tsched_policy_seed(p, seed);

    uint64_t capacity;
    tsched_cluster_gpu_stats(cl, &capacity, NULL, NULL);
    /* As the FGD simulator (pkg/simulator/core.go, Simulate): shuffle the
     * pod list, then append pods sampled with replacement (tuneUpPods in
     * pkg/simulator/utils.go) until one would take the GPU request past
     * load % of the GPUs; the sampled pods arrive after the whole list, in
     * the order drawn.  tuneUpPods tests the pod's milli-GPU per GPU, not
     * its total, against the target, so a multi-GPU pod can overshoot it. */
    sm_state = seed;
    uint64_t total = 0;
    for (size_t i = 0; i < npods; i++)
        total += (uint64_t)pods[i].ngpus * pods[i].milli;
    uint64_t target = capacity * load / 100;
    size_t cap = npods * 2 + 16, n = 0;
    uint32_t *order = malloc(cap * sizeof *order);
    if (!order)
        die("out of memory");
    for (size_t i = 0; i < npods; i++)
        order[n++] = (uint32_t)i;
    for (;;) {
        size_t k = sm_below(npods);
        uint64_t g = (uint64_t)pods[k].ngpus * pods[k].milli;
        if (total + (pods[k].ngpus ? pods[k].milli : 0) > target)
            break;
        if (n == cap) {
            uint32_t *no = realloc(order, 2 * cap * sizeof *order);
            if (!no)
                die("out of memory");
            order = no;
            cap *= 2;
        }
        order[n++] = (uint32_t)k;
        total += g;
    }
    for (size_t i = npods; i > 1; i--) {
        size_t j = sm_below(i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }

    uint64_t arrived = 0;
    unsigned next = 1;
    double t = 0;
    out->decisions = 0;
    for (size_t i = 0; i < n && next <= load; i++) {
        const struct pod *pd = &pods[order[i]];
        tsched_job_t job = {
            .cpu_milli = pd->cpu,
            .mem_bytes = pd->mem_mib << 20,
            .ngpus = pd->ngpus,
            .milli_gpu = pd->milli,
            .models = pd->spec,
            .gang = 1,
        };
        tsched_member_t m;
        tsched_reason_t why;
        double t0 = now();
        int rc = tsched_allocate(cl, p, &job, &m, &why);
        t += now() - t0;
        out->decisions++;
        if (rc < 0)
            die("%s: pod %zu: %s", policy, i, tsched_reason_str(why));
        arrived += (uint64_t)pd->ngpus * pd->milli;
        while (next <= load && arrived * 100 >= (uint64_t)next * capacity) {
            uint64_t alloc;
            double frag;
            tsched_cluster_gpu_stats(cl, NULL, &alloc, &frag);
            double idle = (double)(capacity - alloc);
            out->alloc[next] = 100.0 * (double)alloc / (double)capacity;
            out->frag[next] = idle > 0 ? 100.0 * frag / idle : 0;
            if (csv)
                printf("%s,%" PRIu64 ",%u,%.2f,%.2f\n", policy, seed, next, out->alloc[next],
                       out->frag[next]);
            next++;
        }
    }
    /* the list may run out a hair below the last percent */
    for (; next <= load; next++) {
        out->alloc[next] = out->alloc[next - 1];
        out->frag[next] = out->frag[next - 1];
        if (csv)
            printf("%s,%" PRIu64 ",%u,%.2f,%.2f\n", policy, seed, next, out->alloc[next],
                   out->frag[next]);
    }
    out->seconds = t;
    free(order);
    tsched_policy_destroy(p);
    tsched_cluster_destroy(cl);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: %s --nodes FILE --pods FILE [--policy NAME[,NAME...]] [--seeds 42-51]\n"
            "          [--load 130] [--csv] [--node-copies N] [--typical-pct P]\n",
            prog);
    exit(2);
}

static unsigned long parse_num(const char *opt, const char *s, unsigned long lo, unsigned long hi)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || errno || s[0] == '-' || v < lo || v > hi)
        die("%s: '%s' is not a number in %lu..%lu", opt, s, lo, hi);
    return v;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "events") == 0)
        return tessel_sim_events(argc - 1, argv + 1);
    const char *nodes_path = NULL, *pods_path = NULL, *policies = "tessel";
    const char *seeds = "42-51";
    unsigned load = 130, copies = 1, typical_pct = TYPICAL_PCT;
    int csv = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--csv") == 0) {
            csv = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            usage();
        if (!v)
            usage();
        if (strcmp(a, "--nodes") == 0)
            nodes_path = v;
        else if (strcmp(a, "--pods") == 0)
            pods_path = v;
        else if (strcmp(a, "--policy") == 0)
            policies = v;
        else if (strcmp(a, "--seeds") == 0)
            seeds = v;
        else if (strcmp(a, "--load") == 0)
            load = (unsigned)parse_num("--load", v, 1, 1000);
        else if (strcmp(a, "--typical-pct") == 0)
            typical_pct = (unsigned)parse_num("--typical-pct", v, 1, 100);
        else if (strcmp(a, "--node-copies") == 0)
            copies = (unsigned)parse_num("--node-copies", v, 1, 1000);
        else
            usage();
        i++;
    }
    if (!nodes_path || !pods_path)
        usage();

    /* seeds: A, A-B or A,B,C */
    uint64_t seedv[1024];
    size_t nseeds = 0;
    {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", seeds);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            char *dash = strchr(tok, '-');
            unsigned long a, b;
            if (dash) {
                *dash = '\0';
                a = parse_num("--seeds", tok, 0, 1ul << 40);
                b = parse_num("--seeds", dash + 1, a, a + 1023);
            } else {
                a = b = parse_num("--seeds", tok, 0, 1ul << 40);
            }
            for (unsigned long s = a; s <= b; s++) {
                if (nseeds == 1024)
                    die("--seeds: more than 1024 seeds");
                seedv[nseeds++] = s;
            }
        }
        if (!nseeds)
            die("--seeds: no seed in '%s'", seeds);
    }
    /* policies: check every name before running anything */
    char pbuf[512];
    snprintf(pbuf, sizeof pbuf, "%s", policies);
    const char *pol[32];
    size_t npol = 0;
    for (char *tok = strtok(pbuf, ","); tok; tok = strtok(NULL, ",")) {
        if (npol == 32)
            die("--policy: more than 32 policies");
        tsl_error_t err;
        tsched_policy_t *p = tsched_policy_create(tok, &err);
        if (!p)
            die("--policy: %s", err.text);
        tsched_policy_destroy(p);
        pol[npol++] = tok;
    }
    if (!npol)
        die("--policy: no policy named");

    size_t nnodes, npods;
    struct gnode *nodes = read_nodes(nodes_path, &nnodes);
    struct pod *pods = read_pods(pods_path, &npods);

    static const unsigned marks[] = {80, 90, 100, 130};
    if (csv)
        printf("policy,seed,arrived_pct,alloc_pct,frag_ratio_pct\n");
    else {
        printf("%-16s", "policy");
        for (size_t k = 0; k < 4; k++)
            if (marks[k] <= load)
                printf("  alloc@%-3u", marks[k]);
        for (size_t k = 0; k < 4; k++)
            if (marks[k] <= load)
                printf("  frag@%-3u", marks[k]);
        printf("  decisions/s\n");
    }
    struct run_out *ro = malloc(sizeof *ro);
    if (!ro)
        die("out of memory");
    for (size_t pi = 0; pi < npol; pi++) {
        double sa[4] = {0}, sf[4] = {0}, dec = 0, sec = 0;
        for (size_t si = 0; si < nseeds; si++) {
            run_one(nodes, nnodes, copies, pods, npods, typical_pct, pol[pi], seedv[si], load, csv,
                    ro);
            for (size_t k = 0; k < 4; k++)
                if (marks[k] <= load) {
                    sa[k] += ro->alloc[marks[k]];
                    sf[k] += ro->frag[marks[k]];
                }
            dec += ro->decisions;
            sec += ro->seconds;
        }
        if (csv)
            continue;
        printf("%-16s", pol[pi]);
        for (size_t k = 0; k < 4; k++)
            if (marks[k] <= load)
                printf("  %9.2f", sa[k] / (double)nseeds);
        for (size_t k = 0; k < 4; k++)
            if (marks[k] <= load)
                printf("  %8.2f", sf[k] / (double)nseeds);
        printf("  %11.0f\n", sec > 0 ? dec / sec : 0);
        fflush(stdout);
    }
    free(ro);
    free(nodes);
    free(pods);
    return 0;
}
