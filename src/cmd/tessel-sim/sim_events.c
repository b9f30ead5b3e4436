/* sim_events.c - `tessel-sim events`: replays arrivals and departures
 * against the queue scheduler (sched_queue.h) and reports, per queue, time
 * to admission, GPU use, guarantee satisfaction, preemptions and job
 * completion time.
 *
 *   tessel-sim events --nodes FILE --pods FILE --queues FILE
 *                     [--policy NAME] [--time-scale F] [--max-nodes N]
 *                     [--synthetic N] [--interarrival S] [--seed S]
 *                     [--tick S] [--half-life S] [--min-runtime S]
 *                     [--preempt class|suspend|requeue] [--ckpt-mem SIZE]
 *                     [--ckpt-save-bw GIB_S] [--ckpt-restore-bw GIB_S]
 *
 * Jobs: one per pod of --pods.  Arrival = creation_time / F; run time =
 * deletion_time - creation_time (the pod's lifetime in the trace), kept
 * when a job is suspended, restarted when it is requeued.  --synthetic N
 * draws N pods with replacement instead, arriving as a Poisson process
 * with mean gap --interarrival (s).  A pod goes to a leaf queue drawn by
 * the queues' share= weights (seeded); its class and priority follow its
 * QoS (class lines of the queue file).
 *
 * The loop: at each event time, arrivals and completions are applied, then
 * a cycle runs; its victims are stopped (suspended or requeued) and its
 * starts confirmed, and, if there were victims, the cycle runs again at the
 * same time so that the preemptors start.  While jobs wait, a cycle also
 * runs every --tick seconds (minimum run times and reservations depend on
 * time alone).
 *
 * Preemption (docs/suspend.md, "Preemption by suspension"): --preempt
 * class (the default) takes suspendable= from the queue file's class lines;
 * suspend makes every training job suspendable (tesseld's default), requeue
 * none, so that one trace runs both ways.  The report counts the GPU-hours
 * lost to preemption: a requeued victim throws away the work of its attempt
 * (its run time so far, less the checkpoint time counted already), times the
 * GPUs it held; a suspended victim costs its checkpoint and its restore,
 * each its GPU memory (--ckpt-mem per whole GPU, times its share) over the
 * measured bandwidth (--ckpt-save-bw, --ckpt-restore-bw), times the GPUs it
 * held, and runs that much longer.  A suspended victim may resume on other
 * GPUs here (tesseld restores it on the same ones).
 *
 * Queue file (examples/queues.conf), one directive a line, # comments:
 *   queue NAME [parent=P] [gpu=G] [gpu-limit=G] [cpu=C] [cpu-limit=C]
 *              [mem=SIZE] [mem-limit=SIZE] [gpu-mem=SIZE] [gpu-mem-limit=SIZE]
 *              [weight=W] [share=S]
 *   class QOS training|interactive|build|inference [priority=P] [suspendable=0|1]
 * GPUs and cores are numbers ("2.5") or a share of the cluster ("25%");
 * sizes as tsl_parse_size reads them or a share.  A guarantee left out is 0
 * for GPUs and "not governed" for the rest; a limit left out is none.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libutil/size.h"
#include "sim_events.h"
#include "tessel/sched.h"
#include "tessel/sched_queue.h"

#define MIB (1024ull * 1024)

/* Leaf queues and QoS classes one queue file may name. */
#define MAX_QUEUES 256
#define MAX_QOS    16

struct epod {
    char name[TSCHED_NAME_MAX];
    uint64_t cpu, mem;
    uint32_t ngpus, milli;
    char spec[TSCHED_NAME_MAX];
    char qos[16];
    double create, life;
};

struct qos_rule {
    char qos[16];
    tsched_class_t cls;
    int32_t prio;
    int suspendable;
};

struct ejob {
    uint32_t pod;
    int queue;
    double arrival, remaining, started_at, first_start;
    double att, att_ckpt; /* this attempt's run time so far, and its checkpoints' share */
    uint32_t version;
    int running, done, rejected;
};

struct qmetric {
    double *adm, *jct;
    size_t nadm, njct, cap_adm, cap_jct;
    double gpu_time;    /* integral of milli-GPU used, milli-GPU s */
    double demand_time; /* time with pending jobs */
    double sat_time;    /* ... and nothing owed missing */
    size_t preempted, jobs, rejected;
    /* state since the last event */
    uint64_t used;
    int demand, sat;
    double share;
};

enum { EV_FINISH = 0, EV_ARRIVE = 1, EV_TICK = 2 };

struct ev {
    double t;
    uint64_t seq;
    uint32_t job, ver;
    int type;
};

struct heap {
    struct ev *v;
    size_t n, cap;
    uint64_t seq;
};

static const char *prog = "tessel-sim events";

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

/* --- heap of events ----------------------------------------------------------- */

static int ev_less(const struct ev *a, const struct ev *b)
{
    if (a->t != b->t)
        return a->t < b->t;
    return a->seq < b->seq;
}

static int heap_push(struct heap *h, double t, int type, uint32_t job, uint32_t ver)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        struct ev *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    struct ev e = {t, h->seq++, job, ver, type};
    size_t i = h->n++;
    while (i > 0 && ev_less(&e, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = e;
    return 0;
}

static struct ev heap_pop(struct heap *h)
{
    struct ev top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const struct ev *best = &last;
        if (l < h->n && ev_less(&h->v[l], best)) {
            m = l;
            best = &h->v[l];
        }
        if (l + 1 < h->n && ev_less(&h->v[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

/* --- input files ----------------------------------------------------------------- */

static char *read_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fail("%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
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
    fclose(fp);
    if (!buf) {
        fail("%s: out of memory", path);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

/* Splits s at sep in place into at most max fields; returns the count. */
static int split(char *s, char sep, char **f, int max)
{
    int n = 0;
    while (n < max) {
        f[n++] = s;
        char *p = strchr(s, sep);
        if (!p)
            break;
        *p = '\0';
        s = p + 1;
    }
    return n;
}

static int col(char **hdr, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(hdr[i], name) == 0)
            return i;
    return -1;
}

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\r' || s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
}

struct totals {
    uint64_t gpu_milli, cpu_milli, mem;
};

static int load_nodes(const char *path, tsched_cluster_t *c, size_t max, struct totals *tot)
{
    char *buf = read_file(path);
    if (!buf)
        return -1;
    size_t total = 0; /* data lines: non-empty lines after the header */
    for (const char *q = buf; *q; q++)
        total += (q == buf || q[-1] == '\n') && *q != '\n' && *q != '\r';
    if (total)
        total--;
    char *save = NULL, *line = strtok_r(buf, "\n", &save);
    char *hdr[16], *f[16];
    int nh = line ? split(line, ',', hdr, 16) : 0;
    for (int i = 0; i < nh; i++)
        chomp(hdr[i]);
    int csn = col(hdr, nh, "sn"), ccpu = col(hdr, nh, "cpu_milli"),
        cmem = col(hdr, nh, "memory_mib"), cgpu = col(hdr, nh, "gpu"), cmod = col(hdr, nh, "model");
    if (csn < 0 || ccpu < 0 || cmem < 0 || cgpu < 0 || cmod < 0) {
        free(buf);
        return fail("%s: want columns sn,cpu_milli,memory_mib,gpu,model", path);
    }
    memset(tot, 0, sizeof *tot);
    /* --max-nodes: an even sample over the file, so the model mix stays */
    size_t k = 0;
    while ((line = strtok_r(NULL, "\n", &save))) {
        size_t at = k++;
        if (max && max < total && at * max / total == (at + 1) * max / total)
            continue;
        chomp(line);
        int n = split(line, ',', f, 16);
        if (n < nh)
            continue;
        uint32_t ng = (uint32_t)strtoul(f[cgpu], NULL, 10);
        tsched_gpu_spec_t g[TSCHED_MAX_NODE_GPUS];
        if (ng > TSCHED_MAX_NODE_GPUS) {
            free(buf);
            return fail("%s: node %s has %u GPUs", path, f[csn], ng);
        }
        for (uint32_t i = 0; i < ng; i++) {
            memset(&g[i], 0, sizeof g[i]);
            g[i].model = f[cmod];
            g[i].nvlink_island = -1;
            g[i].pcie_switch = -1;
        }
        tsched_node_spec_t ns = {
            f[csn], strtoull(f[ccpu], NULL, 10), strtoull(f[cmem], NULL, 10) * MIB, NULL, ng, g};
        tsl_error_t err;
        if (tsched_cluster_add_node(c, &ns, &err) < 0) {
            free(buf);
            return fail("%s: %s", path, err.text);
        }
        tot->gpu_milli += (uint64_t)ng * TSCHED_MILLI;
        tot->cpu_milli += ns.cpu_milli;
        tot->mem += ns.mem_bytes;
    }
    free(buf);
    return 0;
}

static struct epod *load_pods(const char *path, size_t *np)
{
    char *buf = read_file(path);
    if (!buf)
        return NULL;
    char *save = NULL, *line = strtok_r(buf, "\n", &save);
    char *hdr[16], *f[16];
    int nh = line ? split(line, ',', hdr, 16) : 0;
    for (int i = 0; i < nh; i++)
        chomp(hdr[i]);
    int cname = col(hdr, nh, "name"), ccpu = col(hdr, nh, "cpu_milli"),
        cmem = col(hdr, nh, "memory_mib"), cng = col(hdr, nh, "num_gpu"),
        cmilli = col(hdr, nh, "gpu_milli"), cspec = col(hdr, nh, "gpu_spec"),
        cqos = col(hdr, nh, "qos"), ccre = col(hdr, nh, "creation_time"),
        cdel = col(hdr, nh, "deletion_time");
    if (cname < 0 || ccpu < 0 || cmem < 0 || cng < 0 || cmilli < 0 || cspec < 0 || cqos < 0 ||
        ccre < 0 || cdel < 0) {
        free(buf);
        fail("%s: want the trace's pod columns (name, ..., creation_time, deletion_time)", path);
        return NULL;
    }
    size_t cap = 1024, n = 0;
    struct epod *p = malloc(cap * sizeof *p);
    while (p && (line = strtok_r(NULL, "\n", &save))) {
        chomp(line);
        if (split(line, ',', f, 16) < nh)
            continue;
        if (n == cap) {
            struct epod *q = realloc(p, cap * 2 * sizeof *p);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
        struct epod *d = &p[n++];
        memset(d, 0, sizeof *d);
        snprintf(d->name, sizeof d->name, "%s", f[cname]);
        d->cpu = strtoull(f[ccpu], NULL, 10);
        d->mem = strtoull(f[cmem], NULL, 10) * MIB;
        d->ngpus = (uint32_t)strtoul(f[cng], NULL, 10);
        d->milli = (uint32_t)strtoul(f[cmilli], NULL, 10);
        if (d->ngpus > 1 || (d->ngpus == 1 && (d->milli == 0 || d->milli > TSCHED_MILLI)))
            d->milli = TSCHED_MILLI;
        snprintf(d->spec, sizeof d->spec, "%s", f[cspec]);
        snprintf(d->qos, sizeof d->qos, "%s", f[cqos]);
        d->create = strtod(f[ccre], NULL);
        double del = strtod(f[cdel], NULL);
        d->life = del > d->create ? del - d->create : 0;
    }
    free(buf);
    if (!p) {
        fail("%s: out of memory", path);
        return NULL;
    }
    *np = n;
    return p;
}

/* --- queue file --------------------------------------------------------------------- */

struct qconf {
    tsched_queue_spec_t spec;
    char name[TSCHED_NAME_MAX], parent[TSCHED_NAME_MAX];
    double share;
    int index;
};

/* "2.5" (units of one) or "25%" of total; scale: milli per unit. */
static int parse_amount(const char *v, double scale, uint64_t total, int size, uint64_t *out)
{
    char *end;
    size_t n = strlen(v);
    if (n && v[n - 1] == '%') {
        double pct = strtod(v, &end);
        if (end != v + n - 1 || !(pct >= 0) || pct > 100)
            return -1;
        *out = (uint64_t)floor((double)total * pct / 100.0);
        return 0;
    }
    if (size)
        return tsl_parse_size(v, out, NULL);
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0) || x > 1e15)
        return -1;
    *out = (uint64_t)llround(x * scale);
    return 0;
}

static int load_queues(const char *path, const struct totals *tot, struct qconf *qs, size_t *nq,
                       struct qos_rule *rules, size_t *nr)
{
    char *buf = read_file(path);
    if (!buf)
        return -1;
    *nq = *nr = 0;
    unsigned lineno = 0;
    char *save = NULL;
    int rc = 0;
    for (char *line = strtok_r(buf, "\n", &save); line && rc == 0;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *w[32];
        int nw = 0;
        for (char *sv = NULL, *t = strtok_r(line, " \t\r", &sv); t && nw < 32;
             t = strtok_r(NULL, " \t\r", &sv))
            w[nw++] = t;
        if (nw == 0)
            continue;
        if (strcmp(w[0], "class") == 0) {
            if (nw < 3 || *nr == MAX_QOS) {
                rc = fail("%s:%u: class QOS CLASS [priority=P] [suspendable=0|1]", path, lineno);
                break;
            }
            struct qos_rule *r = &rules[(*nr)++];
            memset(r, 0, sizeof *r);
            snprintf(r->qos, sizeof r->qos, "%s", w[1]);
            static const char *const names[] = {"training", "interactive", "build", "inference"};
            int k;
            for (k = 0; k < 4 && strcmp(w[2], names[k]) != 0; k++)
                ;
            if (k == 4) {
                rc = fail("%s:%u: class '%s': training, interactive, build or inference", path,
                          lineno, w[2]);
                break;
            }
            r->cls = (tsched_class_t)k;
            for (int i = 3; i < nw && rc == 0; i++) {
                if (!strncmp(w[i], "priority=", 9))
                    r->prio = (int32_t)strtol(w[i] + 9, NULL, 10);
                else if (!strncmp(w[i], "suspendable=", 12))
                    r->suspendable = atoi(w[i] + 12) != 0;
                else
                    rc = fail("%s:%u: unknown '%s'", path, lineno, w[i]);
            }
            continue;
        }
        if (strcmp(w[0], "queue") != 0 || nw < 2) {
            rc = fail("%s:%u: want 'queue NAME ...' or 'class QOS CLASS ...'", path, lineno);
            break;
        }
        if (*nq == MAX_QUEUES) {
            rc = fail("%s:%u: more than %d queues", path, lineno, MAX_QUEUES);
            break;
        }
        struct qconf *q = &qs[(*nq)++];
        memset(q, 0, sizeof *q);
        snprintf(q->name, sizeof q->name, "%s", w[1]);
        q->spec.name = q->name;
        q->spec.guarantee = (tsched_res_t){0, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
        q->spec.limit =
            (tsched_res_t){TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
        q->spec.weight = 1;
        q->index = -1;
        for (int i = 2; i < nw && rc == 0; i++) {
            char *eq = strchr(w[i], '=');
            if (!eq) {
                rc = fail("%s:%u: '%s': want key=value", path, lineno, w[i]);
                break;
            }
            *eq = '\0';
            const char *k = w[i], *v = eq + 1;
            int bad = 0;
            if (!strcmp(k, "parent")) {
                snprintf(q->parent, sizeof q->parent, "%s", v);
                q->spec.parent = q->parent;
            } else if (!strcmp(k, "gpu"))
                bad =
                    parse_amount(v, TSCHED_MILLI, tot->gpu_milli, 0, &q->spec.guarantee.milli_gpu);
            else if (!strcmp(k, "gpu-limit"))
                bad = parse_amount(v, TSCHED_MILLI, tot->gpu_milli, 0, &q->spec.limit.milli_gpu);
            else if (!strcmp(k, "cpu"))
                bad = parse_amount(v, 1000, tot->cpu_milli, 0, &q->spec.guarantee.cpu_milli);
            else if (!strcmp(k, "cpu-limit"))
                bad = parse_amount(v, 1000, tot->cpu_milli, 0, &q->spec.limit.cpu_milli);
            else if (!strcmp(k, "mem"))
                bad = parse_amount(v, 1, tot->mem, 1, &q->spec.guarantee.mem_bytes);
            else if (!strcmp(k, "mem-limit"))
                bad = parse_amount(v, 1, tot->mem, 1, &q->spec.limit.mem_bytes);
            else if (!strcmp(k, "gpu-mem"))
                bad = parse_amount(v, 1, 0, 1, &q->spec.guarantee.gpu_mem_bytes);
            else if (!strcmp(k, "gpu-mem-limit"))
                bad = parse_amount(v, 1, 0, 1, &q->spec.limit.gpu_mem_bytes);
            else if (!strcmp(k, "weight"))
                q->spec.weight = (uint32_t)strtoul(v, NULL, 10);
            else if (!strcmp(k, "share"))
                q->share = strtod(v, NULL);
            else
                bad = 1;
            if (bad)
                rc = fail("%s:%u: bad '%s=%s'", path, lineno, k, v);
        }
    }
    free(buf);
    if (rc == 0 && *nq == 0)
        rc = fail("%s: no queue", path);
    return rc ? -1 : 0;
}

/* --- the task mix for the fragmentation-aware policies -------------------------------- */

static int set_mix(tsched_cluster_t *c, const struct epod *p, size_t n)
{
    tsched_job_t *jobs = calloc(n ? n : 1, sizeof *jobs);
    double *w = calloc(n ? n : 1, sizeof *w);
    if (!jobs || !w) {
        free(jobs);
        free(w);
        return fail("out of memory");
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k;
        for (k = 0; k < m; k++)
            if (jobs[k].cpu_milli == p[i].cpu && jobs[k].ngpus == p[i].ngpus &&
                jobs[k].milli_gpu == p[i].milli && strcmp(jobs[k].models, p[i].spec) == 0)
                break;
        if (k == m) {
            jobs[m].cpu_milli = p[i].cpu;
            jobs[m].ngpus = p[i].ngpus;
            jobs[m].milli_gpu = p[i].milli;
            jobs[m].models = p[i].spec;
            m++;
        }
        w[k] += 1;
    }
    tsl_error_t err;
    int rc = tsched_cluster_set_workload(c, jobs, w, m, &err);
    free(jobs);
    free(w);
    return rc < 0 ? fail("task mix: %s", err.text) : 0;
}

/* --- metrics --------------------------------------------------------------------------- */

static int push_d(double **v, size_t *n, size_t *cap, double x)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        double *nv = realloc(*v, c * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = c;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v. */
static double pct(const double *v, size_t n, double p)
{
    if (n == 0)
        return NAN;
    size_t k = (size_t)ceil(p / 100.0 * (double)n);
    return v[k ? k - 1 : 0];
}

static void fmt_time(char *buf, size_t len, double s)
{
    if (isnan(s))
        snprintf(buf, len, "-");
    else if (s < 60)
        snprintf(buf, len, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, len, "%.1fm", s / 60);
    else if (s < 86400)
        snprintf(buf, len, "%.1fh", s / 3600);
    else
        snprintf(buf, len, "%.1fd", s / 86400);
}

static uint64_t rng_next(uint64_t *st)
{
    uint64_t z = (*st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *st)
{
    return (double)(rng_next(st) >> 11) * (1.0 / 9007199254740992.0);
}

/* --- the run ------------------------------------------------------------------------------ */

struct opts {
    const char *nodes, *pods, *queues, *policy;
    double scale, interarrival, tick, half_life, min_runtime;
    int preempt;                    /* 0 class, 1 suspend, 2 requeue (--preempt) */
    double ckpt_mem;                /* bytes per whole GPU a checkpoint copies */
    double ckpt_save, ckpt_restore; /* bytes/s */
    size_t max_nodes, synthetic;
    uint64_t seed;
};

static int usage(void)
{
    fprintf(stderr,
            "usage: tessel-sim events --nodes FILE --pods FILE --queues FILE [--policy NAME]\n"
            "           [--time-scale F] [--max-nodes N] [--synthetic N] [--interarrival S]\n"
            "           [--seed S] [--tick S] [--half-life S] [--min-runtime S]\n"
            "           [--preempt class|suspend|requeue] [--ckpt-mem SIZE]\n"
            "           [--ckpt-save-bw GIB_S] [--ckpt-restore-bw GIB_S]\n");
    return 2;
}

struct sim {
    struct opts o;
    tsched_cluster_t *c;
    tsched_policy_t *p;
    tsched_sched_t *s;
    struct totals tot;
    struct epod *pods;
    size_t npods;
    struct qconf qs[MAX_QUEUES];
    size_t nq;
    struct qos_rule rules[MAX_QOS];
    size_t nr;
    struct ejob *jobs;
    size_t njobs;
    struct qmetric *m; /* by scheduler queue index */
    struct heap h;
    double t0, last, t_end; /* first arrival, last event, last arrival */
    size_t cycles, preemptions, suspensions;
    double alloc_time; /* integral of cluster milli-GPU allocated */
    /* GPU-seconds lost to preemption: work requeues threw away, checkpoint + restore time */
    double lost_requeue, lost_suspend;
};

/* Time integrals from the last event to t.  GPU use is averaged over the
 * arrival window (first to last arrival: the long tail of the last jobs
 * would otherwise dilute it); guarantee satisfaction over the whole run. */
static void integrate(struct sim *sm, double t)
{
    double dt = t - sm->last;
    if (dt <= 0)
        return;
    double dtw = (t < sm->t_end ? t : sm->t_end) - sm->last;
    if (dtw < 0)
        dtw = 0;
    uint64_t alloc;
    tsched_cluster_gpu_stats(sm->c, NULL, &alloc, NULL);
    sm->alloc_time += (double)alloc * dtw;
    for (size_t q = 0; q < sm->nq; q++) {
        struct qmetric *m = &sm->m[q];
        m->gpu_time += (double)m->used * dtw;
        if (m->demand) {
            m->demand_time += dt;
            if (m->sat)
                m->sat_time += dt;
        }
    }
    sm->last = t;
}

static void snapshot(struct sim *sm, double t)
{
    for (size_t q = 0; q < sm->nq; q++) {
        tsched_queue_stat_t st;
        if (tsched_queue_stat(sm->s, (int)q, t, &st) < 0)
            continue;
        struct qmetric *m = &sm->m[q];
        m->used = st.used.milli_gpu;
        m->demand = st.pending > 0;
        m->sat = m->demand ? tsched_queue_satisfied(sm->s, (int)q) == 1 : 1;
    }
}

/* One cycle at t, carried out; returns the number of victims. */
static long cycle(struct sim *sm, double t)
{
    tsched_decisions_t d;
    tsl_error_t err;
    if (tsched_sched_cycle(sm->s, t, &d, &err) < 0)
        return fail("cycle: %s", err.text), -1;
    sm->cycles++;
    for (size_t i = 0; i < d.nvictims; i++) {
        struct ejob *j = &sm->jobs[d.victims[i].job];
        if (tsched_job_stopped(sm->s, d.victims[i].job, t) < 0)
            return fail("stop %" PRIu64 ": %s", d.victims[i].job, strerror(errno)), -1;
        const struct epod *p = &sm->pods[j->pod];
        double gpus = p->ngpus ? p->ngpus * p->milli / (double)TSCHED_MILLI : 0;
        j->att += t - j->started_at;
        if (d.victims[i].action == TSCHED_SUSPEND) {
            j->remaining -= t - j->started_at;
            if (j->remaining < 0)
                j->remaining = 0;
            /* its checkpoint and restore: its share of the GPUs' memory, each way */
            double bytes = gpus * sm->o.ckpt_mem;
            double cost = bytes / sm->o.ckpt_save + bytes / sm->o.ckpt_restore;
            j->remaining += cost;
            j->att_ckpt += cost;
            sm->lost_suspend += cost * gpus;
            sm->suspensions++;
        } else {
            double work = j->att - j->att_ckpt;
            /* its useful work (its checkpoints' time stays counted as theirs, whether it
             * was run yet or not: against suspension) */
            sm->lost_requeue += (work > 0 ? work : 0) * gpus;
            j->att = j->att_ckpt = 0;
            j->remaining = p->life;
        }
        j->running = 0;
        j->version++;
        sm->m[j->queue].preempted++;
        sm->preemptions++;
    }
    for (size_t i = 0; i < d.nstarts; i++) {
        uint64_t id = d.starts[i].job;
        struct ejob *j = &sm->jobs[id];
        if (tsched_job_started(sm->s, id, d.starts[i].members, d.starts[i].nmembers, t) < 0)
            return fail("start %" PRIu64 ": %s", id, strerror(errno)), -1;
        j->running = 1;
        j->started_at = t;
        if (j->first_start < 0) {
            j->first_start = t;
            struct qmetric *m = &sm->m[j->queue];
            if (push_d(&m->adm, &m->nadm, &m->cap_adm, t - j->arrival) < 0)
                return fail("out of memory"), -1;
        }
        if (heap_push(&sm->h, t + j->remaining, EV_FINISH, (uint32_t)id, j->version) < 0)
            return fail("out of memory"), -1;
    }
    return (long)d.nvictims;
}

static int build_jobs(struct sim *sm)
{
    size_t n = sm->o.synthetic ? sm->o.synthetic : sm->npods;
    sm->jobs = calloc(n, sizeof *sm->jobs);
    if (!sm->jobs)
        return fail("out of memory");
    sm->njobs = n;
    uint64_t st = sm->o.seed;
    double total = 0;
    int leaves[MAX_QUEUES];
    size_t nl = 0;
    for (size_t q = 0; q < sm->nq; q++) {
        int leaf = 1;
        for (size_t k = 0; k < sm->nq; k++)
            if (sm->qs[k].spec.parent && !strcmp(sm->qs[k].parent, sm->qs[q].name))
                leaf = 0;
        if (leaf && sm->qs[q].share > 0) {
            leaves[nl++] = (int)q;
            total += sm->qs[q].share;
        }
    }
    if (nl == 0)
        return fail("%s: no leaf queue with share > 0", sm->o.queues);
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        struct ejob *j = &sm->jobs[i];
        j->pod = sm->o.synthetic ? (uint32_t)(rng_next(&st) % sm->npods) : (uint32_t)i;
        if (sm->o.synthetic) {
            t += -log(1 - rng_unit(&st)) * sm->o.interarrival;
            j->arrival = t;
        } else {
            j->arrival = sm->pods[i].create / sm->o.scale;
        }
        double u = rng_unit(&st) * total, acc = 0;
        size_t k = 0;
        for (; k + 1 < nl; k++) {
            acc += sm->qs[leaves[k]].share;
            if (u < acc)
                break;
        }
        j->queue = sm->qs[leaves[k]].index;
        j->remaining = sm->pods[j->pod].life;
        j->first_start = -1;
        if (j->arrival > sm->t_end)
            sm->t_end = j->arrival;
        if (heap_push(&sm->h, j->arrival, EV_ARRIVE, (uint32_t)i, 0) < 0)
            return fail("out of memory");
    }
    return 0;
}

static int submit(struct sim *sm, uint32_t id, double t)
{
    struct ejob *j = &sm->jobs[id];
    const struct epod *p = &sm->pods[j->pod];
    tsched_qjob_t q;
    memset(&q, 0, sizeof q);
    q.id = id;
    q.queue = j->queue;
    q.cls = TSCHED_CLASS_TRAINING;
    q.arrival = t;
    for (size_t r = 0; r < sm->nr; r++)
        if (!strcmp(sm->rules[r].qos, p->qos)) {
            q.cls = sm->rules[r].cls;
            q.priority = sm->rules[r].prio;
            q.flags = sm->rules[r].suspendable ? TSCHED_JOB_SUSPENDABLE : 0;
            break;
        }
    if (sm->o.preempt)
        q.flags = sm->o.preempt == 1 && q.cls == TSCHED_CLASS_TRAINING ? TSCHED_JOB_SUSPENDABLE : 0;
    q.req.cpu_milli = p->cpu;
    q.req.mem_bytes = p->mem;
    q.req.ngpus = p->ngpus;
    q.req.milli_gpu = p->ngpus ? p->milli : 0;
    q.req.models = p->spec[0] ? p->spec : NULL;
    q.req.gang = 1;
    sm->m[j->queue].jobs++;
    tsl_error_t err;
    if (tsched_job_submit(sm->s, &q, &err) < 0) {
        if (errno != EINVAL)
            return fail("submit: %s", err.text);
        j->rejected = 1; /* a non-preemptible job larger than its guarantee */
        sm->m[j->queue].rejected++;
    }
    return 0;
}

static int run(struct sim *sm)
{
    int tick_set = 0;
    sm->t0 = sm->h.n ? sm->h.v[0].t : 0;
    sm->last = sm->t0;
    while (sm->h.n) {
        double t = sm->h.v[0].t;
        integrate(sm, t);
        while (sm->h.n && sm->h.v[0].t == t) {
            struct ev e = heap_pop(&sm->h);
            struct ejob *j = &sm->jobs[e.job];
            if (e.type == EV_ARRIVE) {
                if (submit(sm, e.job, t) < 0)
                    return -1;
            } else if (e.type == EV_FINISH) {
                if (e.ver != j->version || !j->running)
                    continue; /* preempted since */
                if (tsched_job_remove(sm->s, e.job, t) < 0)
                    return fail("remove %u: %s", e.job, strerror(errno));
                j->running = 0;
                j->done = 1;
                struct qmetric *m = &sm->m[j->queue];
                if (push_d(&m->jct, &m->njct, &m->cap_jct, t - j->arrival) < 0)
                    return fail("out of memory");
            } else {
                tick_set = 0;
            }
        }
        for (int round = 0; round < 4; round++) {
            long v = cycle(sm, t);
            if (v < 0)
                return -1;
            if (v == 0)
                break;
        }
        snapshot(sm, t);
        int waiting = 0;
        for (size_t q = 0; q < sm->nq && !waiting; q++)
            waiting = sm->m[q].demand;
        if (waiting && !tick_set) {
            if (heap_push(&sm->h, t + sm->o.tick, EV_TICK, 0, 0) < 0)
                return fail("out of memory");
            tick_set = 1;
        }
        /* the trace is over when only ticks remain and nothing can change */
        if (sm->h.n == 1 && sm->h.v[0].type == EV_TICK) {
            int running = 0;
            for (size_t i = 0; i < sm->njobs && !running; i++)
                running = sm->jobs[i].running;
            if (!running)
                break;
        }
    }
    return 0;
}

static void report(struct sim *sm, double wall)
{
    double span = sm->last - sm->t0, win = sm->t_end - sm->t0;
    char a[16], b[16], c[16], d[16];
    printf("tessel-sim events: %zu nodes, %.0f GPUs, policy %s, %zu jobs (%s), arrivals over "
           "%.2f days, run %.1f days\n",
           tsched_cluster_nodes(sm->c), (double)sm->tot.gpu_milli / TSCHED_MILLI,
           tsched_policy_name(sm->p), sm->njobs, sm->o.synthetic ? "synthetic" : "trace",
           win / 86400, span / 86400);
    printf("%-22s %6s %5s %8s %8s %9s %9s %8s %8s %8s %8s\n", "queue", "jobs", "rej", "adm-p50",
           "adm-p95", "gpu-used", "gpu-guar", "guar-sat", "preempt", "jct-p50", "jct-p95");
    for (size_t q = 0; q < sm->nq; q++) {
        struct qmetric *m = &sm->m[q];
        tsched_queue_stat_t st;
        (void)tsched_queue_stat(sm->s, (int)q, sm->last, &st);
        /* a department: its leaves' jobs */
        double *adm = m->adm, *jct = m->jct;
        size_t nadm = m->nadm, njct = m->njct, jobs = m->jobs, rej = m->rejected,
               pre = m->preempted;
        int own_adm = 0;
        if (st.parent >= 0 || nadm || jobs) {
            if (nadm) /* an idle leaf has no arrays: qsort(NULL, 0) is UB */
                qsort(adm, nadm, sizeof *adm, cmp_d);
            if (njct)
                qsort(jct, njct, sizeof *jct, cmp_d);
        } else {
            /* gather the subtree */
            size_t ca = 0, cj = 0;
            adm = jct = NULL;
            nadm = njct = jobs = rej = pre = 0;
            for (size_t k = 0; k < sm->nq; k++) {
                int in = 0;
                for (int x = (int)k; x >= 0 && !in;) {
                    in = x == (int)q;
                    tsched_queue_stat_t sx;
                    if (tsched_queue_stat(sm->s, x, sm->last, &sx) < 0)
                        break;
                    x = sx.parent;
                }
                if (!in || k == q)
                    continue;
                struct qmetric *mk = &sm->m[k];
                for (size_t i = 0; i < mk->nadm; i++)
                    (void)push_d(&adm, &nadm, &ca, mk->adm[i]);
                for (size_t i = 0; i < mk->njct; i++)
                    (void)push_d(&jct, &njct, &cj, mk->jct[i]);
                jobs += mk->jobs;
                rej += mk->rejected;
                pre += mk->preempted;
            }
            if (nadm) /* qsort's base must not be NULL, even for 0 items */
                qsort(adm, nadm, sizeof *adm, cmp_d);
            if (njct)
                qsort(jct, njct, sizeof *jct, cmp_d);
            own_adm = 1;
        }
        fmt_time(a, sizeof a, pct(adm, nadm, 50));
        fmt_time(b, sizeof b, pct(adm, nadm, 95));
        fmt_time(c, sizeof c, pct(jct, njct, 50));
        fmt_time(d, sizeof d, pct(jct, njct, 95));
        char name[40];
        snprintf(name, sizeof name, "%s%s", st.parent >= 0 ? "  " : "", st.name);
        char sat[16];
        if (m->demand_time > 0)
            snprintf(sat, sizeof sat, "%.1f%%", 100.0 * m->sat_time / m->demand_time);
        else
            snprintf(sat, sizeof sat, "-");
        printf("%-22s %6zu %5zu %8s %8s %9.1f %9.1f %8s %8zu %8s %8s\n", name, jobs, rej, a, b,
               win > 0 ? m->gpu_time / win / TSCHED_MILLI : 0,
               (double)st.guarantee.milli_gpu / TSCHED_MILLI, sat, pre, c, d);
        if (own_adm) {
            free(adm);
            free(jct);
        }
    }
    printf("cluster: GPU allocation %.1f %% (averaged over the arrivals), %zu preemptions "
           "(%zu suspensions), %zu cycles, %.1f s\n",
           win > 0 ? 100.0 * sm->alloc_time / win / (double)sm->tot.gpu_milli : 0, sm->preemptions,
           sm->suspensions, sm->cycles, wall);
    char sz[32];
    printf("preemption (%s): GPU-hours lost %.2f: requeued work %.2f, suspend+resume %.2f "
           "(%zu requeues, %zu suspensions; checkpoint of %s per GPU at %.2f GiB/s, restore "
           "at %.2f GiB/s)\n",
           sm->o.preempt == 1   ? "suspend"
           : sm->o.preempt == 2 ? "requeue"
                                : "by class",
           (sm->lost_requeue + sm->lost_suspend) / 3600, sm->lost_requeue / 3600,
           sm->lost_suspend / 3600, sm->preemptions - sm->suspensions, sm->suspensions,
           tsl_format_size((uint64_t)sm->o.ckpt_mem, sz, sizeof sz),
           sm->o.ckpt_save / (1024.0 * MIB), sm->o.ckpt_restore / (1024.0 * MIB));
    printf("columns: adm = time from arrival to first start; gpu-used = GPUs held on average\n"
           "while jobs arrive;\n"
           "guar-sat = share of the time with jobs waiting during which no waiting job was owed\n"
           "capacity within the guarantee; preempt = jobs of the queue stopped as victims;\n"
           "jct = arrival to completion.\n");
}

int tessel_sim_events(int argc, char **argv)
{
    struct sim *sm = calloc(1, sizeof *sm);
    if (!sm)
        return fail("out of memory");
    struct opts *o = &sm->o;
    o->policy = "tessel";
    o->scale = 1;
    o->interarrival = 10;
    o->tick = 60;
    o->seed = 42;
    tsched_sched_config_t cfg;
    tsched_sched_config_default(&cfg);
    o->half_life = cfg.half_life;
    o->min_runtime = cfg.min_runtime;
    /* The checkpoint's figures: the driver's own suspend of 8 GiB in 3.866 s and its resume
     * in 1.487 s on an H200 (docs/suspend.md, bench-ckpt 2026-11-27); 32 GiB per GPU, the
     * largest of the trace's GPUs (V100 32 GB), as if every job filled its share. */
    o->ckpt_mem = 32.0 * 1024 * MIB;
    o->ckpt_save = 8.0 * 1024 * MIB / 3.866;
    o->ckpt_restore = 8.0 * 1024 * MIB / 1.487;
    int rc = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            free(sm);
            return usage();
        }
        if (!v) {
            free(sm);
            return usage();
        }
        char *end = NULL;
        if (!strcmp(a, "--nodes"))
            o->nodes = v;
        else if (!strcmp(a, "--pods"))
            o->pods = v;
        else if (!strcmp(a, "--queues"))
            o->queues = v;
        else if (!strcmp(a, "--policy"))
            o->policy = v;
        else if (!strcmp(a, "--time-scale"))
            o->scale = strtod(v, &end);
        else if (!strcmp(a, "--interarrival"))
            o->interarrival = strtod(v, &end);
        else if (!strcmp(a, "--tick"))
            o->tick = strtod(v, &end);
        else if (!strcmp(a, "--half-life"))
            o->half_life = strtod(v, &end);
        else if (!strcmp(a, "--min-runtime"))
            o->min_runtime = strtod(v, &end);
        else if (!strcmp(a, "--max-nodes"))
            o->max_nodes = (size_t)strtoull(v, &end, 10);
        else if (!strcmp(a, "--synthetic"))
            o->synthetic = (size_t)strtoull(v, &end, 10);
        else if (!strcmp(a, "--seed"))
            o->seed = strtoull(v, &end, 10);
        else if (!strcmp(a, "--preempt")) {
            o->preempt = !strcmp(v, "class")     ? 0
                         : !strcmp(v, "suspend") ? 1
                         : !strcmp(v, "requeue") ? 2
                                                 : -1;
            if (o->preempt < 0) {
                fail("--preempt: class, suspend or requeue, not '%s'", v);
                free(sm);
                return 2;
            }
        } else if (!strcmp(a, "--ckpt-mem")) {
            uint64_t b = 0;
            tsl_error_t se;
            int bad = tsl_parse_size(v, &b, &se) < 0;
            if (bad || b == 0) {
                fail("--ckpt-mem: %s", bad ? se.text : "must be above 0");
                free(sm);
                return 2;
            }
            o->ckpt_mem = (double)b;
        } else if (!strcmp(a, "--ckpt-save-bw"))
            o->ckpt_save = strtod(v, &end) * 1024 * MIB;
        else if (!strcmp(a, "--ckpt-restore-bw"))
            o->ckpt_restore = strtod(v, &end) * 1024 * MIB;
        else {
            fail("unknown option %s", a);
            free(sm);
            return usage();
        }
        if (end && (*end || end == v)) {
            fail("%s: bad number '%s'", a, v);
            free(sm);
            return 2;
        }
        i++;
    }
    if (!o->nodes || !o->pods || !o->queues || !(o->scale > 0) || !(o->tick > 0) ||
        !(o->interarrival > 0) || !(o->ckpt_save > 0) || !(o->ckpt_restore > 0)) {
        free(sm);
        return usage();
    }
    tsl_error_t err;
    sm->c = tsched_cluster_create();
    sm->p = tsched_policy_create(o->policy, &err);
    if (!sm->c || !sm->p) {
        fail("%s", sm->p ? "out of memory" : err.text);
        goto out;
    }
    if (load_nodes(o->nodes, sm->c, o->max_nodes, &sm->tot) < 0)
        goto out;
    sm->pods = load_pods(o->pods, &sm->npods);
    if (!sm->pods)
        goto out;
    if (sm->npods == 0) {
        fail("%s: no pods", o->pods);
        goto out;
    }
    if (set_mix(sm->c, sm->pods, sm->npods) < 0)
        goto out;
    if (load_queues(o->queues, &sm->tot, sm->qs, &sm->nq, sm->rules, &sm->nr) < 0)
        goto out;
    cfg.half_life = o->half_life;
    cfg.min_runtime = o->min_runtime;
    sm->s = tsched_sched_create(sm->c, sm->p, &cfg, &err);
    if (!sm->s) {
        fail("%s", err.text);
        goto out;
    }
    for (size_t q = 0; q < sm->nq; q++) {
        sm->qs[q].index = tsched_queue_add(sm->s, &sm->qs[q].spec, &err);
        if (sm->qs[q].index < 0) {
            fail("%s: %s", o->queues, err.text);
            goto out;
        }
    }
    sm->m = calloc(sm->nq, sizeof *sm->m);
    if (!sm->m) {
        fail("out of memory");
        goto out;
    }
    if (build_jobs(sm) < 0)
        goto out;
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    if (run(sm) < 0)
        goto out;
    clock_gettime(CLOCK_MONOTONIC, &w1);
    report(sm, (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) * 1e-9);
    rc = 0;
out:
    for (size_t q = 0; sm->m && q < sm->nq; q++) {
        free(sm->m[q].adm);
        free(sm->m[q].jct);
    }
    free(sm->m);
    free(sm->jobs);
    free(sm->h.v);
    free(sm->pods);
    tsched_sched_destroy(sm->s);
    tsched_policy_destroy(sm->p);
    tsched_cluster_destroy(sm->c);
    free(sm);
    return rc;
}
