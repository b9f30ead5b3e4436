/* wait.c - why a job waits (tessel/sched_wait.h): reason names and text, the best candidate a
 * job that does not fit could use, the reasons of the last cycle, and the submission check
 * "can this job ever run?".  The cycle (cycle.c) decides the reasons; this file only reads
 * the cluster and formats.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "libutil/size.h"
#include "queue_internal.h"
#include "tessel/sched_wait.h"
#include "wait_internal.h"

static const char *const code_names[TSCHED_WAIT_NCODES] = {
    [TSCHED_WAIT_NONE] = "None",
    [TSCHED_WAIT_RESOURCES] = "Resources",
    [TSCHED_WAIT_PRIORITY] = "Priority",
    [TSCHED_WAIT_QUEUE_LIMIT] = "QueueLimit",
    [TSCHED_WAIT_GUARANTEE] = "Guarantee",
    [TSCHED_WAIT_GUARANTEE_LIMIT] = "GuaranteeLimit",
    [TSCHED_WAIT_PREEMPTING] = "Preempting",
    [TSCHED_WAIT_RESERVATION] = "Reservation",
    [TSCHED_WAIT_DEPENDENCY] = "Dependency",
};

const char *tsched_wait_code_name(tsched_wait_code_t code)
{
    return (unsigned)code < TSCHED_WAIT_NCODES ? code_names[code] : "Unknown";
}

int tsched_wait_code_parse(const char *name)
{
    for (int i = 0; name && i < TSCHED_WAIT_NCODES; i++)
        if (strcmp(name, code_names[i]) == 0)
            return i;
    return -1;
}

void tsched__wait_reset(tsched_wait_t *w, tsched_wait_code_t code, const tsched_job_t *req)
{
    memset(w, 0, sizeof *w);
    w->code = code;
    w->gpu = -1;
    /* field by field: the padding stays zero, so that equal reasons compare equal */
    w->req.cpu_milli = req->cpu_milli;
    w->req.mem_bytes = req->mem_bytes;
    w->req.ngpus = req->ngpus;
    w->req.milli_gpu =
        req->ngpus > 1 || (req->ngpus && !req->milli_gpu) ? TSCHED_MILLI : req->milli_gpu;
    w->req.gpu_mem_bytes = req->ngpus ? req->gpu_mem_bytes : 0;
    w->req.gang = req->gang ? req->gang : 1;
}

void tsched__wait_add_job(tsched_wait_t *w, uint64_t id)
{
    for (uint32_t i = 0; i < w->njobs; i++)
        if (w->jobs[i] == id)
            return;
    if (w->njobs < TSCHED_WAIT_JOBS)
        w->jobs[w->njobs++] = id;
    else
        w->more++;
}

/* How well a GPU with fm milli and fg bytes free suits a member asking milli and gmem: the
 * smaller of the two ratios (above 1 = it fits). */
static double gpu_score(uint32_t fm, uint64_t fg, uint32_t milli, uint64_t gmem)
{
    double a = milli ? (double)fm / milli : 1e9;
    double b = gmem ? (double)fg / (double)gmem : 1e9;
    return a < b ? a : b;
}

void tsched__wait_best(const tsched_cluster_t *c, const tsched_job_t *req, tsched_wait_t *w)
{
    size_t n = tsched_cluster_nodes(c);
    double best = -1;
    uint32_t milli = req->ngpus > 1 || !req->milli_gpu ? TSCHED_MILLI : req->milli_gpu;
    for (size_t i = 0; i < n; i++) {
        if (req->ngpus == 0 || req->gpu_mem_bytes == 0) {
            /* the same score from the node's summary (one cache line): the
             * node's arrays are read only for a node that beats the best */
            const struct room *rm = &c->room[i];
            double quick;
            if (req->ngpus == 0) {
                double a = req->cpu_milli ? (double)rm->cpu / (double)req->cpu_milli : 1e9;
                double b = req->mem_bytes ? (double)rm->mem / (double)req->mem_bytes : 1e9;
                quick = a < b ? a : b;
            } else {
                uint32_t whole = 0;
                while (whole < rm->ngpus && rm->milli[whole] >= milli)
                    whole++;
                double gb = rm->ngpus ? gpu_score(rm->milli[0], 0, milli, 0) : -1;
                quick = req->ngpus > 1 ? whole + (gb > 1 ? 0 : gb) : gb;
            }
            if (quick <= best)
                continue;
        }
        uint64_t cpu, mem, fg[TSCHED_MAX_NODE_GPUS];
        uint32_t ng, fm[TSCHED_MAX_NODE_GPUS];
        if (tsched_node_free(c, (uint32_t)i, &cpu, &mem, &ng, fm, fg) < 0)
            continue;
        double score;
        int32_t bg = -1;
        uint32_t whole = 0;
        if (req->ngpus == 0) {
            double a = req->cpu_milli ? (double)cpu / (double)req->cpu_milli : 1e9;
            double b = req->mem_bytes ? (double)mem / (double)req->mem_bytes : 1e9;
            score = a < b ? a : b;
        } else {
            double gb = -1;
            for (uint32_t g = 0; g < ng; g++) {
                double s = gpu_score(fm[g], fg[g], milli, req->gpu_mem_bytes);
                whole += fm[g] >= milli && fg[g] >= req->gpu_mem_bytes;
                if (s > gb) {
                    gb = s;
                    bg = (int32_t)g;
                }
            }
            score = req->ngpus > 1 ? whole + (gb > 1 ? 0 : gb) : gb;
        }
        if (score <= best)
            continue;
        best = score;
        w->gpu = bg;
        w->free_gpus = whole;
        w->free_milli = bg >= 0 ? fm[bg] : 0;
        w->free_gpu_mem = bg >= 0 ? fg[bg] : 0;
        w->free_cpu = cpu;
        w->free_mem = mem;
        memset(w->node, 0, sizeof w->node);
        if (n > 1)
            snprintf(w->node, sizeof w->node, "%s", c->nodes[i].name);
    }
}

void tsched__wait_node(const tsched_cluster_t *c, uint32_t n, tsched_wait_t *w)
{
    memset(w->node, 0, sizeof w->node);
    if (c->n > 1 && n < c->n)
        snprintf(w->node, sizeof w->node, "%s", c->nodes[n].name);
}

/* --- text --------------------------------------------------------------------------------- */

struct out {
    char *buf;
    size_t len, n;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k =
        vsnprintf(o->n < o->len ? o->buf + o->n : NULL, o->n < o->len ? o->len - o->n : 0, fmt, ap);
    va_end(ap);
    if (k > 0)
        o->n += (size_t)k;
}

/* "1.5", "0.25", "2" from milli-units. */
static const char *milli(uint64_t v, char *buf, size_t len)
{
    snprintf(buf, len, "%llu.%03llu", (unsigned long long)(v / 1000),
             (unsigned long long)(v % 1000));
    size_t l = strlen(buf);
    while (buf[l - 1] == '0')
        buf[--l] = '\0';
    if (buf[l - 1] == '.')
        buf[--l] = '\0';
    return buf;
}

/* An amount of resource k as the queue settings write it: "gpu=2", "mem=16.0 GiB". */
static const char *amount(int k, uint64_t v, char *buf, size_t len)
{
    char n[32];
    if (k == 1 || k == 3)
        tsl_format_size(v, n, sizeof n);
    else
        milli(v, n, sizeof n);
    snprintf(buf, len, "%s", n);
    return buf;
}

static const char *const res_key[NRES] = {"gpu", "gpu-mem", "cpu", "mem", "ngpu"};

static void put_jobs(struct out *o, const tsched_wait_t *w)
{
    put(o, "job%s ", w->njobs + w->more > 1 ? "s" : "");
    for (uint32_t i = 0; i < w->njobs; i++)
        put(o, "%s%llu", i ? ", " : "", (unsigned long long)w->jobs[i]);
    if (w->more)
        put(o, " and %u more", w->more);
}

static void put_gpu(struct out *o, const tsched_wait_t *w, int32_t g)
{
    put(o, "%s%sgpu%d", w->node, w->node[0] ? "/" : "", (int)g);
}

/* What the placement lacked, with the best candidate ("no GPU has 0.5 free ..."). */
static void put_fit(struct out *o, const tsched_wait_t *w)
{
    const tsched_job_t *r = &w->req;
    char a[32], b[32], c[32], e[32];
    const char *has = w->never ? "can hold" : "has";
    const char *fr = w->never ? "" : " free";
    const char *best = w->never ? "largest" : "best";
    switch (w->fit) {
    case TSCHED_NO_NODES:
        put(o, "the cluster has no node");
        return;
    case TSCHED_NO_MODEL:
        put(o, "no node has the GPU model or the labels asked");
        return;
    case TSCHED_NO_GANG:
        put(o, "its %u members do not fit all at once", r->gang);
        return;
    case TSCHED_BAD_REQUEST:
        put(o, "the request is invalid");
        return;
    case TSCHED_NO_CPU:
        put(o, "no node %s %s CPU%s (%s: %s%s%s)", has, milli(r->cpu_milli, a, sizeof a), fr, best,
            w->node, w->node[0] ? " has " : "", milli(w->free_cpu, b, sizeof b));
        return;
    case TSCHED_NO_MEM:
        tsl_format_size(r->mem_bytes, a, sizeof a);
        tsl_format_size(w->free_mem, b, sizeof b);
        put(o, "no node %s %s of memory%s (%s: %s%s%s)", has, a, fr, best, w->node,
            w->node[0] ? " has " : "", b);
        return;
    default:
        break;
    }
    if (r->ngpus == 0) {
        put(o, "no room");
        return;
    }
    if (r->gpu_mem_bytes)
        tsl_format_size(r->gpu_mem_bytes, c, sizeof c);
    if (r->ngpus > 1) {
        put(o, "no node %s %u whole GPUs%s%s%s (%s: %s%s%u)", has, r->ngpus,
            r->gpu_mem_bytes ? " with " : "", r->gpu_mem_bytes ? c : "", fr, best, w->node,
            w->node[0] ? " has " : "", w->free_gpus);
        return;
    }
    put(o, "no GPU %s %s%s%s%s", has, milli(r->milli_gpu, a, sizeof a), fr,
        r->gpu_mem_bytes ? " with " : "", r->gpu_mem_bytes ? c : "");
    if (w->gpu < 0) {
        put(o, " (no GPU at all)");
        return;
    }
    if (!w->never && w->free_milli == 0) {
        put(o, " (every GPU is full)");
        return;
    }
    put(o, " (%s: ", best);
    put_gpu(o, w, w->gpu);
    tsl_format_size(w->free_gpu_mem, e, sizeof e);
    put(o, " %s %s and %s%s)", w->never ? "holds" : "has", milli(w->free_milli, b, sizeof b), e,
        fr);
}

int tsched_wait_format(const tsched_wait_t *w, char *buf, size_t len)
{
    struct out o = {buf, len, 0};
    char a[32], b[32], c[32];
    if (len)
        buf[0] = '\0';
    if (!w)
        return 0;
    put(&o, "%s: ", tsched_wait_code_name(w->code));
    switch (w->code) {
    case TSCHED_WAIT_RESOURCES:
        put_fit(&o, w);
        break;
    case TSCHED_WAIT_PRIORITY:
        put(&o, "behind ");
        put_jobs(&o, w);
        put(&o, " of queue '%s' (", w->queue);
        put_fit(&o, w);
        put(&o, ")");
        break;
    case TSCHED_WAIT_QUEUE_LIMIT:
        amount(w->res, w->bound, a, sizeof a);
        amount(w->res, w->want, c, sizeof c);
        if (w->bound == 0)
            put(&o, "queue '%s' is closed (limit %s=0): its jobs wait until an admin raises it",
                w->queue, res_key[w->res]);
        else if (w->never)
            put(&o, "the job asks %s=%s, above queue '%s''s limit %s=%s", res_key[w->res], c,
                w->queue, res_key[w->res], a);
        else
            put(&o, "queue '%s' would exceed its limit %s=%s (uses %s, job asks %s)", w->queue,
                res_key[w->res], a, amount(w->res, w->used, b, sizeof b), c);
        break;
    case TSCHED_WAIT_GUARANTEE_LIMIT:
        amount(w->res, w->bound, a, sizeof a);
        amount(w->res, w->want, c, sizeof c);
        if (w->never)
            put(&o,
                "interactive and inference jobs must fit within queue '%s''s guarantee %s=%s "
                "(the job asks %s)",
                w->queue, res_key[w->res], a, c);
        else
            put(&o,
                "interactive and inference jobs of queue '%s' must fit within its guarantee "
                "%s=%s (they use %s, job asks %s)",
                w->queue, res_key[w->res], a, amount(w->res, w->used, b, sizeof b), c);
        break;
    case TSCHED_WAIT_GUARANTEE:
        put(&o, "waiting for queue '%s' to get back its guarantee (reclaiming from ", w->queue);
        put_jobs(&o, w);
        put(&o, ")");
        break;
    case TSCHED_WAIT_PREEMPTING:
        put(&o, "waiting for lower-priority ");
        put_jobs(&o, w);
        put(&o, " of queue '%s' to stop", w->queue);
        break;
    case TSCHED_WAIT_RESERVATION:
        if (w->held_gpus) {
            int k = 0;
            for (int g = 0; g < TSCHED_MAX_NODE_GPUS; g++)
                k += (w->held_gpus >> g) & 1;
            put(&o, "GPU%s ", k > 1 ? "s" : "");
            for (int g = 0, i = 0; g < TSCHED_MAX_NODE_GPUS; g++)
                if ((w->held_gpus >> g) & 1) {
                    put(&o, "%s", i++ ? ", " : "");
                    put_gpu(&o, w, g);
                }
            put(&o, " %s reserved for ", k > 1 ? "are" : "is");
        } else {
            put(&o, "%s%s is reserved for ", w->node[0] ? "node " : "the node", w->node);
        }
        put_jobs(&o, w);
        put(&o, ", which has waited longest");
        break;
    case TSCHED_WAIT_DEPENDENCY:
        put(&o, "waiting for ");
        put_jobs(&o, w);
        put(&o, " to end");
        break;
    default:
        put(&o, "not examined yet");
        break;
    }
    return (int)o.n;
}

void tsched_wait_dependency(tsched_wait_t *w, const uint64_t *ids, size_t n)
{
    static const tsched_job_t none;
    tsched__wait_reset(w, TSCHED_WAIT_DEPENDENCY, &none);
    for (size_t i = 0; i < n; i++)
        tsched__wait_add_job(w, ids[i]);
}

/* --- the last cycle's reasons ---------------------------------------------------------------- */

int tsched_job_wait(const tsched_sched_t *s, uint64_t id, tsched_wait_t *w)
{
    long slot = s ? tsched__job_slot(s, id) : -1;
    if (slot < 0 || !w) {
        errno = ENOENT;
        return -1;
    }
    const struct sjob *j = &s->jobs[slot];
    if (j->state != J_PENDING || j->wait_hash == 0)
        tsched__wait_reset(w, TSCHED_WAIT_NONE, &j->req);
    else
        *w = j->wait;
    return 0;
}

size_t tsched_waits_changed(const tsched_sched_t *s, const uint64_t **ids)
{
    if (ids)
        *ids = s ? s->wchanged : NULL;
    return s ? s->nwchanged : 0;
}

void tsched_waits_reset(tsched_sched_t *s)
{
    for (size_t i = 0; s && i < s->njobs; i++)
        s->jobs[i].wait_hash = 0;
    if (s)
        s->wait_rescan = 1; /* the next cycle digests every reason again (cycle.c) */
}

/* --- can it ever run? ------------------------------------------------------------------------ */

static void res_arr(const tsched_res_t *r, uint64_t a[NRES])
{
    a[0] = r->milli_gpu;
    a[1] = r->gpu_mem_bytes;
    a[2] = r->cpu_milli;
    a[3] = r->mem_bytes;
    a[R_NGPU] = TSCHED_UNLIMITED;
}

int tsched_job_feasible(tsched_cluster_t *c, tsched_policy_t *p, const tsched_queue_spec_t *path,
                        size_t npath, tsched_class_t cls, const tsched_job_t *req, tsched_wait_t *w)
{
    tsched_wait_t tmp;
    if (!w)
        w = &tmp;
    if (!c || !p || !req || (npath && !path)) {
        errno = EINVAL;
        return -1;
    }
    uint64_t want[NRES];
    tsched__job_res(req, want);
    want[R_NGPU] = tsched__ngpu_at(req, tsched_job_top_speed(c, req));
    for (size_t i = 0; i < npath; i++) {
        uint64_t lim[NRES], g[NRES];
        res_arr(&path[i].limit, lim);
        res_arr(&path[i].guarantee, g);
        if (path[i].own & TSCHED_OWN_NGPU_LIMIT)
            lim[R_NGPU] = path[i].ngpu_limit;
        for (int k = 0; k < NRES; k++) {
            /* a limit of 0 closes the queue for now (jobs wait until it is raised), as a
             * partition that is down in Slurm: no reason to refuse */
            int over_lim = lim[k] != TSCHED_UNLIMITED && lim[k] > 0 && want[k] > lim[k];
            int over_g = tsched__np(cls, 0) && g[k] != TSCHED_UNLIMITED && want[k] > g[k];
            if (!over_lim && !over_g)
                continue;
            tsched__wait_reset(w, over_lim ? TSCHED_WAIT_QUEUE_LIMIT : TSCHED_WAIT_GUARANTEE_LIMIT,
                               req);
            w->never = 1;
            snprintf(w->queue, sizeof w->queue, "%s", path[i].name ? path[i].name : "");
            w->res = k;
            w->bound = over_lim ? lim[k] : g[k];
            w->want = want[k];
            return 0;
        }
    }
    uint32_t gang = req->gang ? req->gang : 1;
    tsched_member_t m[8], *members = m;
    if (gang > sizeof m / sizeof m[0]) {
        members = calloc(gang, sizeof *members);
        if (!members) {
            errno = ENOMEM;
            return -1;
        }
    }
    tsched_reason_t why = TSCHED_FIT;
    int rc = tsched_place(c, p, req, members, &why);
    if (members != m)
        free(members);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return 1;
    tsched__wait_reset(w, TSCHED_WAIT_RESOURCES, req);
    w->never = 1;
    w->fit = why;
    tsched__wait_best(c, req, w);
    return 0;
}
