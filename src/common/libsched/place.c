/* place.c - placement policies and the placement loop.
 *
 * A decision scores every node that can hold the request and takes the best
 * (ties: at random for the FGD paper's policies, as kube-scheduler does; in
 * node order for Tessel's own).  A node's score depends only on that node and
 * the request, so scores are cached per request shape (request fields +
 * policy): a decision recomputes only the nodes that changed since the last
 * request of the same shape, and otherwise reads one cache entry per node.
 * With the trace's 91 shapes that turns ~1,200 fragmentation evaluations per
 * decision into a few dozen.
 *
 * Policies (names in tsched_policy_names()).  The FGD paper's, as its
 * simulator (hkust-adsl/kubernetes-scheduler-simulator) computes them, with
 * its integer scores and its tie-break (the node whose name sorts first):
 *   fgd            sigmoid((frag before - frag after) / 1000) * 100, frag as
 *                  in internal.h; a fractional request takes the first GPU
 *                  with the best score, whole GPUs the first free ones.
 *   random         a feasible node at random, a GPU that fits at random.
 *   bestfit        100 * (1 - (CPU left / 128 cores + GPU left / 8 GPUs) / 2).
 *   dotprod        Tetris: 100 * (1 - dot(free, request) / 2), both vectors
 *                  (CPU, all GPUs) divided by (128 cores, 8 GPUs).
 *   gpupacking     shared GPUs first (100 - free % / 10), then free GPUs of
 *                  used nodes (50 - GPUs), then empty nodes (33 - GPUs).
 *   gpuclustering  nodes that hold the same kind of request (fraction,
 *                  n-GPU) first, the fuller first.
 * The three before fgd take the best-fitting GPU for a fraction.
 * Tessel's own:
 *   binpack/spread node level and GPU level, "NODE:GPU" (HAMi's model): the
 *                  node with the most (least) used GPU share after placement,
 *                  then CPU; the GPU with the least (most) free share.
 *   tessel         the default.  Minimises, exactly (no rounding), the sum of
 *                  FGD's fragmentation and CAP_WEIGHT times a capacity-aware
 *                  one (cluster.c, tsched__capfrag): idle GPU share minus
 *                  what the task mix could still run on the node, each task
 *                  kind packed as often as the node's GPUs *and* CPU allow.
 *                  FGD only asks whether one task still fits, so it does not
 *                  see a node whose CPU will run out long before its GPUs.
 *                  Each task kind weighs its share times the scarcity of the
 *                  nodes that could hold it (models, GPUs, CPU) times, for
 *                  multi-GPU kinds, a demand factor (cluster.c, refresh).
 *                  The capacity term also charges, STRAND_WEIGHT times, the
 *                  idle GPU the node's CPU cannot feed at the mix's CPU per
 *                  GPU, as the kinds will share that CPU (cluster.c,
 *                  capfrag_of).
 *                  Equal deltas: the fullest GPU, then the node left with
 *                  the least GPU and then CPU free; then node order.
 *                  Multi-GPU jobs take one NVLink island (else one PCIe
 *                  switch) when one can hold them, the tightest such.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum kind {
    P_TESSEL,
    P_FGD,
    P_RANDOM,
    P_BESTFIT,
    P_DOTPROD,
    P_GPUPACKING,
    P_GPUCLUSTERING,
    P_PACKSPREAD,
};

struct tsched_policy {
    enum kind kind;
    int node_spread, gpu_spread;
    int prefer_fast;
    uint64_t rng;
    char name[32];
};

/* Normalisation constants of the FGD simulator's scores: the largest node
 * of its traces, 128 cores and 8 GPUs. */
#define MAX_SPEC_CPU 128000.0
#define MAX_SPEC_GPU 8000.0

static const char *const policy_names[] = {
    "tessel",        "fgd",     "random", "bestfit",         "dotprod",        "gpupacking",
    "gpuclustering", "binpack", "spread", "binpack:binpack", "binpack:spread", "spread:binpack",
    "spread:spread", NULL,
};

const char *const *tsched_policy_names(void)
{
    return policy_names;
}

tsched_policy_t *tsched_policy_create(const char *name, tsl_error_t *err)
{
    if (!name || !*name)
        name = "tessel";
    static const struct {
        const char *name;
        enum kind kind;
        int ns, gs;
    } tab[] = {
        {"tessel", P_TESSEL, 0, 0},
        {"fgd", P_FGD, 0, 0},
        {"random", P_RANDOM, 0, 0},
        {"bestfit", P_BESTFIT, 0, 0},
        {"dotprod", P_DOTPROD, 0, 0},
        {"gpupacking", P_GPUPACKING, 0, 0},
        {"gpuclustering", P_GPUCLUSTERING, 0, 0},
        {"binpack", P_PACKSPREAD, 0, 0},
        {"spread", P_PACKSPREAD, 1, 1},
        {"binpack:binpack", P_PACKSPREAD, 0, 0},
        {"binpack:spread", P_PACKSPREAD, 0, 1},
        {"spread:binpack", P_PACKSPREAD, 1, 0},
        {"spread:spread", P_PACKSPREAD, 1, 1},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        if (strcmp(name, tab[i].name) != 0)
            continue;
        tsched_policy_t *p = calloc(1, sizeof *p);
        if (!p) {
            errno = ENOMEM;
            tsl_errprintf(err, "policy: out of memory");
            return NULL;
        }
        p->kind = tab[i].kind;
        p->node_spread = tab[i].ns;
        p->gpu_spread = tab[i].gs;
        if (p->kind == P_PACKSPREAD)
            strcpy(p->name, p->node_spread
                                ? (p->gpu_spread ? "spread:spread" : "spread:binpack")
                                : (p->gpu_spread ? "binpack:spread" : "binpack:binpack"));
        else
            strcpy(p->name, tab[i].name);
        tsched_policy_seed(p, 42);
        return p;
    }
    errno = EINVAL;
    tsl_errprintf(err,
                  "unknown policy '%.40s' (known: tessel, fgd, random, bestfit, dotprod, "
                  "gpupacking, gpuclustering, binpack, spread, NODE:GPU)",
                  name);
    return NULL;
}

void tsched_policy_destroy(tsched_policy_t *p)
{
    free(p);
}

const char *tsched_policy_name(const tsched_policy_t *p)
{
    return p->name;
}

void tsched_policy_seed(tsched_policy_t *p, uint64_t seed)
{
    p->rng = seed;
}

void tsched_policy_prefer_fast(tsched_policy_t *p, int on)
{
    p->prefer_fast = on != 0;
}

/* splitmix64: small, fast, and good enough for tie-breaking. */
static uint64_t rnd(tsched_policy_t *p)
{
    uint64_t z = (p->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rnd_below(tsched_policy_t *p, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)rnd(p) * n) >> 64);
}

/* --- one member's request ------------------------------------------------ */

struct req {
    uint64_t cpu, mem, gmem;
    uint32_t ngpus, milli;
    uint64_t models;
    const char *selector;
    int share; /* one GPU, a fraction of it */
};

static int make_req(tsched_cluster_t *c, const tsched_job_t *job, struct req *r)
{
    if (!job || job->ngpus > TSCHED_MAX_NODE_GPUS)
        return -1;
    if (job->ngpus == 1 && job->milli_gpu > TSCHED_MILLI)
        return -1;
    memset(r, 0, sizeof *r);
    r->cpu = job->cpu_milli;
    r->mem = job->mem_bytes;
    r->ngpus = job->ngpus;
    r->gmem = job->ngpus ? job->gpu_mem_bytes : 0;
    r->milli = job->ngpus == 0                         ? 0
               : job->ngpus > 1 || job->milli_gpu == 0 ? TSCHED_MILLI
                                                       : job->milli_gpu;
    r->share = r->ngpus == 1 && r->milli < TSCHED_MILLI;
    int any;
    r->models = job->ngpus ? tsched__models_mask(c, job->models, 0, &any) : ~(uint64_t)0;
    r->selector = job->selector;
    return 0;
}

static int gpu_ok(const struct node *nd, unsigned j, const struct req *r)
{
    return (r->models >> nd->model[j] & 1) && nd->free[j] >= r->milli &&
           nd->gmem_free[j] >= r->gmem;
}

/* Why the request cannot go to this node (TSCHED_FIT if it can). */
static tsched_reason_t node_fit(const struct node *nd, const struct req *r)
{
    if (!tsched__labels_match(nd, r->selector))
        return TSCHED_NO_MODEL;
    if (r->ngpus && !(nd->models & r->models))
        return TSCHED_NO_MODEL;
    if (nd->cpu_free < r->cpu)
        return TSCHED_NO_CPU;
    if (nd->mem_free < r->mem)
        return TSCHED_NO_MEM;
    if (r->ngpus) {
        unsigned n = 0, nmilli = 0;
        for (unsigned j = 0; j < nd->ngpus; j++) {
            if (!(r->models >> nd->model[j] & 1) || nd->free[j] < r->milli)
                continue;
            nmilli++;
            if (nd->gmem_free[j] >= r->gmem)
                n++;
        }
        if (n < r->ngpus)
            return nmilli >= r->ngpus ? TSCHED_NO_GPU_MEM : TSCHED_NO_GPU;
    }
    return TSCHED_FIT;
}

/* GPUs for a whole-GPU request (r->milli == 1000 or several GPUs): one NVLink
 * island if one can hold them all (the tightest such island, so that larger
 * islands stay whole), else one PCIe switch likewise, else the first ones in
 * index order (faster GPUs first when asked).  Returns the count chosen. */
static unsigned choose_whole(const struct node *nd, const struct req *r, int spread,
                             int prefer_fast, uint8_t *out)
{
    uint8_t ok[TSCHED_MAX_NODE_GPUS];
    unsigned n = 0;
    for (unsigned j = 0; j < nd->ngpus; j++)
        if (gpu_ok(nd, j, r))
            ok[n++] = (uint8_t)j;
    if (prefer_fast) /* stable insertion sort, fastest first */
        for (unsigned i = 1; i < n; i++)
            for (unsigned k = i; k > 0 && nd->speed[ok[k]] > nd->speed[ok[k - 1]]; k--) {
                uint8_t t = ok[k];
                ok[k] = ok[k - 1];
                ok[k - 1] = t;
            }
    if (n < r->ngpus)
        return 0;
    if (nd->has_topo) {
        for (int level = 0; level < 2; level++) {
            const int32_t *grp = level == 0 ? nd->island : nd->pswitch;
            int best = -1;
            unsigned bestn = 0;
            for (unsigned i = 0; i < n; i++) {
                int32_t id = grp[ok[i]];
                if (id < 0)
                    continue;
                unsigned cnt = 0;
                for (unsigned k = 0; k < n; k++)
                    cnt += grp[ok[k]] == id;
                if (cnt < r->ngpus)
                    continue;
                int better = best < 0 || (spread ? cnt > bestn : cnt < bestn);
                if (better) {
                    best = id;
                    bestn = cnt;
                }
            }
            if (best >= 0) {
                unsigned m = 0;
                for (unsigned i = 0; i < n && m < r->ngpus; i++)
                    if (grp[ok[i]] == best)
                        out[m++] = ok[i];
                return m;
            }
        }
    }
    for (unsigned i = 0; i < r->ngpus; i++)
        out[i] = ok[i];
    return r->ngpus;
}

/* --- scores ---------------------------------------------------------------- */

/* Weight of the capacity-aware fragmentation against FGD's in "tessel".
 * Measured on the Alibaba traces (docs/scheduler-placement.md): 1 and 2 are
 * within 0.1 point of each other on every trace, 2 slightly ahead on the
 * share-heavy ones; 0 (FGD's measure alone, exact) loses 0.3 to 1.3 points,
 * the capacity measure alone loses on the share-heavy traces. */
#define CAP_WEIGHT 2.0

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

static double bestfit_score(const struct node *nd, const struct req *r)
{
    double s = 0.5 * (double)(nd->cpu_free - r->cpu) / MAX_SPEC_CPU +
               0.5 * (double)(nd->total_free - r->ngpus * r->milli) / MAX_SPEC_GPU;
    return (double)(int64_t)((1.0 - s) * 100.0);
}

static double dot_score(const struct node *nd, const struct req *r, uint32_t gpu_left)
{
    double cpu = (double)nd->cpu_free / MAX_SPEC_CPU * (double)r->cpu / MAX_SPEC_CPU;
    double gpu = (double)gpu_left / MAX_SPEC_GPU * (double)(r->ngpus * r->milli) / MAX_SPEC_GPU;
    return (double)(int64_t)(100.0 * (1.0 - (cpu + gpu) / 2.0));
}

static double packing_score(const struct node *nd, const struct req *r, int best_gpu)
{
    if (r->ngpus == 0)
        return 0;
    unsigned nfree = 0;
    for (unsigned j = 0; j < nd->ngpus; j++)
        nfree += nd->free[j] == TSCHED_MILLI;
    if (nfree == nd->ngpus) {
        int64_t s = 100 / 3 - (int64_t)nfree;
        return (double)(s > (int64_t)nfree ? s : (int64_t)nfree);
    }
    if (r->share) {
        uint32_t left = nd->free[best_gpu];
        if (left == TSCHED_MILLI) {
            int64_t s = 100 / 2 - 1;
            return (double)(s > 100 / 3 ? s : 100 / 3);
        }
        int64_t s = 100 - (int64_t)(left * 100 / TSCHED_MILLI) / 10;
        return (double)(s > 50 ? s : 50);
    }
    int64_t s = 100 / 2 - (int64_t)r->ngpus;
    return (double)(s > 100 / 3 ? s : 100 / 3);
}

static double clustering_score(const struct node *nd, const struct req *r)
{
    if (r->ngpus == 0)
        return 0;
    unsigned tag = r->share ? 1 : 1 + r->ngpus;
    unsigned kinds = 0;
    for (unsigned t = 1; t < 18; t++)
        kinds += nd->tags[t] > 0;
    int64_t base =
        (int64_t)(100 / 4) * ((int64_t)MAX_SPEC_GPU - nd->total_free) / (int64_t)MAX_SPEC_GPU;
    if (nd->tags[tag] > 0)
        return (double)(base + (kinds == 1 ? 75 : 50));
    return (double)(base + (kinds == 0 ? 25 : 0));
}

/* The GPU a one-GPU request takes under a best-fit rule: least free that
 * fits (most free when spreading); ties to the faster, then lower index. */
static int pick_fit_gpu(const struct node *nd, const struct req *r, int spread, int prefer_fast)
{
    int best = -1;
    for (unsigned j = 0; j < nd->ngpus; j++) {
        if (!gpu_ok(nd, j, r))
            continue;
        if (best < 0) {
            best = (int)j;
            continue;
        }
        uint32_t a = nd->free[j], b = nd->free[best];
        if (prefer_fast && nd->speed[j] != nd->speed[best]) {
            if (nd->speed[j] > nd->speed[best])
                best = (int)j;
            continue;
        }
        if (spread ? a > b : a < b)
            best = (int)j;
    }
    return best;
}

/* Score of node ni for r under p (higher is better); fills ent->gpu for
 * one-GPU requests.  ent->why: TSCHED_FIT, or why the node cannot hold r. */
static void score_node(tsched_cluster_t *c, tsched_policy_t *p, size_t ni, const struct req *r,
                       struct cache_ent *ent)
{
    const struct node *nd = &c->nodes[ni];
    ent->version = nd->version;
    ent->why = (uint8_t)node_fit(nd, r);
    ent->gpu = 0;
    ent->score = 0;
    if (ent->why != TSCHED_FIT)
        return;
    int one = r->ngpus == 1;
    switch (p->kind) {
    case P_RANDOM:
        return;
    case P_BESTFIT:
        ent->score = bestfit_score(nd, r);
        if (one)
            ent->gpu = (uint8_t)pick_fit_gpu(nd, r, 0, p->prefer_fast);
        return;
    case P_GPUPACKING: {
        int g = r->ngpus ? pick_fit_gpu(nd, r, 0, p->prefer_fast) : 0;
        ent->gpu = (uint8_t)(g < 0 ? 0 : g);
        ent->score = packing_score(nd, r, g);
        return;
    }
    case P_GPUCLUSTERING:
        ent->score = clustering_score(nd, r);
        if (one)
            ent->gpu = (uint8_t)pick_fit_gpu(nd, r, 0, p->prefer_fast);
        return;
    case P_DOTPROD:
        /* the paper's configuration: CPU and all GPUs merged into two
         * dimensions, the best-fitting GPU */
        ent->score = dot_score(nd, r, nd->total_free);
        if (one)
            ent->gpu = (uint8_t)pick_fit_gpu(nd, r, 0, p->prefer_fast);
        return;
    case P_PACKSPREAD: {
        /* HAMi-style: node usage after placement, GPU first, CPU second */
        double gcap = nd->ngpus ? (double)nd->ngpus * TSCHED_MILLI : 1;
        double ccap = nd->cpu_cap ? (double)nd->cpu_cap : 1;
        double used = (gcap - (double)nd->total_free + r->ngpus * r->milli) / gcap +
                      1e-3 * ((ccap - (double)nd->cpu_free + (double)r->cpu) / ccap);
        ent->score = p->node_spread ? -used : used;
        if (one)
            ent->gpu = (uint8_t)pick_fit_gpu(nd, r, p->gpu_spread, p->prefer_fast);
        return;
    }
    case P_FGD:
    case P_TESSEL:
        break;
    }

    /* fragmentation-aware */
    double before = nd->frag;
    if (p->kind == P_TESSEL)
        before += CAP_WEIGHT * nd->capfrag;
    if (r->share) {
        double best = 0;
        int bestg = -1;
        uint8_t seen_j[TSCHED_MAX_NODE_GPUS];
        double seen_score[TSCHED_MAX_NODE_GPUS];
        unsigned nseen = 0;
        for (unsigned j = 0; j < nd->ngpus; j++) {
            if (!gpu_ok(nd, j, r))
                continue;
            double s = 0;
            unsigned k;
            /* GPUs alike (free, model, memory) give the same result */
            for (k = 0; k < nseen; k++) {
                unsigned o = seen_j[k];
                if (nd->free[o] == nd->free[j] && nd->gmem_free[o] == nd->gmem_free[j] &&
                    nd->model[o] == nd->model[j])
                    break;
            }
            if (k < nseen) {
                s = seen_score[k];
            } else {
                uint8_t gj = (uint8_t)j;
                double after = tsched__frag_after(c, ni, r->cpu, &gj, 1, r->milli, r->gmem);
                if (p->kind == P_FGD) {
                    s = (double)(int64_t)(sigmoid((before - after) / 1000.0) * 100.0);
                } else {
                    after += CAP_WEIGHT * tsched__capfrag(c, ni, r->cpu, &gj, 1, r->milli, r->gmem);
                    s = before - after;
                    /* among equal deltas: the fullest GPU, then the faster */
                    s -= 1e-6 * (double)(nd->free[j] - r->milli);
                    if (p->prefer_fast)
                        s += 1e-9 * nd->speed[j];
                }
                seen_j[nseen] = (uint8_t)j;
                seen_score[nseen++] = s;
            }
            if (bestg < 0 || s > best) {
                best = s;
                bestg = (int)j;
            }
        }
        ent->gpu = (uint8_t)bestg;
        ent->score = best;
    } else {
        uint8_t gj[TSCHED_MAX_NODE_GPUS];
        unsigned nj = r->ngpus ? choose_whole(nd, r, 0, p->prefer_fast, gj) : 0;
        double after = tsched__frag_after(c, ni, r->cpu, gj, nj, r->milli, r->gmem);
        if (p->kind == P_FGD) {
            ent->score = (double)(int64_t)(sigmoid((before - after) / 1000.0) * 100.0);
        } else {
            after += CAP_WEIGHT * tsched__capfrag(c, ni, r->cpu, gj, nj, r->milli, r->gmem);
            ent->score = before - after;
        }
        if (one)
            ent->gpu = gj[0];
    }
    if (p->kind == P_TESSEL) {
        /* among equal deltas, pack: least GPU then CPU left on the node */
        double gl = (double)(nd->total_free - r->ngpus * r->milli) / MAX_SPEC_GPU;
        double cl = (double)(nd->cpu_free - r->cpu) / MAX_SPEC_CPU;
        ent->score -= 1e-3 * gl + 1e-4 * cl;
    }
}

/* --- the shape cache ------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    if (s)
        for (; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot of r's shape under p, taken (and its index marked stale) if the
 * shape is new; -1 when the cluster has no node yet. */
static long shape_slot(tsched_cluster_t *c, const tsched_policy_t *p, const struct req *r)
{
    uint64_t key[8] = {r->cpu,
                       r->mem,
                       r->gmem,
                       (uint64_t)r->ngpus << 32 | r->milli,
                       r->models,
                       hash_str(r->selector),
                       (uint64_t)p->kind << 8 | (uint64_t)p->node_spread << 4 |
                           (uint64_t)p->gpu_spread << 2 | (uint64_t)p->prefer_fast,
                       1};
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h = (h ^ key[i]) * 0x9e3779b97f4a7c15ull;
    c->clock++;
    unsigned victim = 0;
    for (unsigned s = 0; s < c->nslots; s++) {
        struct shape *sh = &c->shapes[s];
        if (sh->used && sh->hash == h && memcmp(sh->key, key, sizeof key) == 0) {
            sh->last_use = c->clock;
            return (long)s;
        }
        if (!sh->used || (c->shapes[victim].used && sh->last_use < c->shapes[victim].last_use))
            victim = s;
    }
    if (!c->cache) /* no node yet */
        return -1;
    struct shape *sh = &c->shapes[victim];
    memcpy(sh->key, key, sizeof key);
    sh->hash = h;
    sh->used = 1;
    sh->last_use = c->clock;
    sh->valid = 0;
    memset(c->cache + (size_t)victim * c->cap, 0, c->cap * sizeof *c->cache);
    return (long)victim;
}

/* --- placement --------------------------------------------------------------- */

/* Rank of every node by name, for the FGD simulator's tie-break. */
static int rank_nodes(tsched_cluster_t *c)
{
    if (c->ranked == c->n)
        return 0;
    uint32_t *order = malloc((c->n ? c->n : 1) * sizeof *order);
    if (!order)
        return -1;
    for (size_t i = 0; i < c->n; i++)
        order[i] = (uint32_t)i;
    /* insertion into sorted order, O(n log n) on average via binary search */
    for (size_t i = 1; i < c->n; i++) {
        uint32_t v = order[i];
        size_t lo = 0, hi = i;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (strcmp(c->nodes[order[mid]].name, c->nodes[v].name) <= 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        memmove(order + lo + 1, order + lo, (i - lo) * sizeof *order);
        order[lo] = v;
    }
    for (size_t i = 0; i < c->n; i++)
        c->nodes[order[i]].name_rank = (uint32_t)i;
    free(order);
    c->ranked = c->n;
    return 0;
}

/* --- the index --------------------------------------------------------------
 *
 * Per shape, a tournament tree over the node slots: leaf cap + i holds node i
 * if it can hold the request (else TREE_NONE), an inner node the better of
 * its two children, so the root is the node the plain scan over every node
 * picks: the best score, then (ties) the lower name rank for the FGD paper's
 * policies, the lower index for Tessel's.  It is kept exact incrementally:
 * every node change is logged (cluster.c, tsched__node_changed), and a shape
 * rescores the logged nodes whose version moved since it last looked and
 * replays each up its path, O(log N) a node.  A decision costs O(k log N)
 * for the k nodes changed since the shape's previous decision (one or two
 * for a busy shape) instead of a pass over all N.  A shape further behind
 * than a quarter of the nodes (a change of Tessel's weights touches most
 * nodes, and a rarely used shape falls behind) rebuilds: rescores what
 * changed, as the plain scan would, and rebuilds the tree in O(N). */

/* a is preferred to b (either may be TREE_NONE). */
static inline int beats(const tsched_cluster_t *c, const struct cache_ent *col, int by_name,
                        uint32_t a, uint32_t b)
{
    if (a == TREE_NONE || b == TREE_NONE)
        return b == TREE_NONE && a != TREE_NONE;
    if (col[a].score != col[b].score)
        return col[a].score > col[b].score;
    if (by_name)
        return c->nodes[a].name_rank < c->nodes[b].name_rank;
    return a < b;
}

static inline uint32_t better(const tsched_cluster_t *c, const struct cache_ent *col, int by_name,
                              uint32_t a, uint32_t b)
{
    return beats(c, col, by_name, b, a) ? b : a;
}

/* Why node ni cannot hold r, as node_fit() says, read from its room alone (one cache line, not
 * the node); TSCHED_FIT when the room cannot tell (labels, GPU memory or GPU models asked for):
 * then node_fit() decides. */
static tsched_reason_t room_fit(const struct room *rm, const struct req *r)
{
    if (r->selector && *r->selector)
        return TSCHED_FIT;
    if (r->ngpus && !(rm->models & r->models))
        return TSCHED_NO_MODEL;
    if (rm->cpu < r->cpu)
        return TSCHED_NO_CPU;
    if (rm->mem < r->mem)
        return TSCHED_NO_MEM;
    /* every GPU's model accepted, no GPU memory asked: the GPUs with r->milli free decide */
    if (r->ngpus && !r->gmem && !(rm->models & ~r->models) &&
        (r->ngpus > rm->ngpus || rm->milli[r->ngpus - 1] < r->milli))
        return TSCHED_NO_GPU;
    return TSCHED_FIT;
}

/* score_node(), but a node its room rules out is not read: the same entry. */
static void rescore(tsched_cluster_t *c, tsched_policy_t *p, size_t i, const struct req *r,
                    struct cache_ent *e)
{
    const struct room *rm = &c->room[i];
    tsched_reason_t why = room_fit(rm, r);
    if (why == TSCHED_FIT) {
        score_node(c, p, i, r, e);
        return;
    }
    e->version = rm->version;
    e->why = (uint8_t)why;
    e->gpu = 0;
    e->score = 0;
}

/* Rescores node i in col if it changed; replays its leaf up the tree. */
static void index_node(tsched_cluster_t *c, tsched_policy_t *p, const struct req *r,
                       struct shape *sh, struct cache_ent *col, uint32_t *tree, size_t i)
{
    struct cache_ent *e = &col[i];
    if (e->version == c->room[i].version)
        return;
    if (e->version)
        sh->count[e->why]--;
    rescore(c, p, i, r, e);
    sh->count[e->why]++;
    size_t k = c->cap + i;
    tree[k] = e->why == TSCHED_FIT ? (uint32_t)i : TREE_NONE;
    for (k /= 2; k >= 1; k /= 2) {
        uint32_t w = better(c, col, sh->by_name, tree[2 * k], tree[2 * k + 1]);
        if (tree[k] == w && w != (uint32_t)i)
            break; /* this subtree's winner stands: nothing above changes */
        tree[k] = w;
    }
}

/* Brings the shape's column and index up to date with every node. */
static void index_sync(tsched_cluster_t *c, tsched_policy_t *p, const struct req *r,
                       struct shape *sh, struct cache_ent *col, uint32_t *tree, int by_name)
{
    uint64_t behind = c->nchg - sh->synced;
    if (sh->valid && sh->n_at == c->n && sh->by_name == by_name && behind <= c->chg_cap &&
        behind <= c->n / 4 + 16) {
        for (uint64_t k = sh->synced; k < c->nchg; k++) {
            size_t i = c->chg[k & (c->chg_cap - 1)];
            index_node(c, p, r, sh, col, tree, i);
        }
    } else {
        memset(sh->count, 0, sizeof sh->count);
        for (size_t i = 0; i < c->n; i++) {
            struct cache_ent *e = &col[i];
            if (e->version != c->room[i].version)
                rescore(c, p, i, r, e);
            sh->count[e->why]++;
            tree[c->cap + i] = e->why == TSCHED_FIT ? (uint32_t)i : TREE_NONE;
        }
        for (size_t i = c->n; i < c->cap; i++)
            tree[c->cap + i] = TREE_NONE;
        sh->by_name = by_name;
        for (size_t k = c->cap; k-- > 1;)
            tree[k] = better(c, col, by_name, tree[2 * k], tree[2 * k + 1]);
    }
    sh->synced = c->nchg;
    sh->n_at = c->n;
    sh->valid = 1;
}

/* Best node for one member; -1 when none fits (*why then: the most common
 * reason over the nodes).  Ties: Tessel's own policies take the first node;
 * the FGD paper's take the node whose name sorts first, as its simulator
 * does ("for reproducibility"); random draws. */
static long best_node(tsched_cluster_t *c, tsched_policy_t *p, const struct req *r, uint8_t *gpu,
                      tsched_reason_t *why)
{
    long s = shape_slot(c, p, r);
    if (s < 0) {
        *why = TSCHED_NO_NODES;
        return -1;
    }
    struct shape *sh = &c->shapes[s];
    struct cache_ent *col = c->cache + (size_t)s * c->cap;
    uint32_t *tree = c->tree + (size_t)s * 2 * c->cap;
    int by_name = p->kind != P_TESSEL && p->kind != P_PACKSPREAD && p->kind != P_RANDOM;
    if (by_name && rank_nodes(c) < 0)
        by_name = 0; /* out of memory: fall back to node order */
    index_sync(c, p, r, sh, col, tree, by_name);
    long best = -1;
    if (p->kind == P_RANDOM) {
        /* a feasible node uniformly at random (reservoir), in node order as
         * ever, so that the same seed draws the same nodes */
        uint64_t nfit = 0;
        for (size_t i = 0; i < c->n; i++)
            if (col[i].why == TSCHED_FIT && rnd_below(p, ++nfit) == 0)
                best = (long)i;
    } else if (tree[1] != TREE_NONE) {
        best = (long)tree[1];
    }
    if (best >= 0) {
        *gpu = col[best].gpu;
        return best;
    }
    *why = c->n == 0 ? TSCHED_NO_NODES : TSCHED_NO_MODEL;
    uint32_t most = 0;
    for (int k = TSCHED_NO_MODEL; k <= TSCHED_NO_GPU_MEM; k++)
        if (sh->count[k] > most) {
            most = sh->count[k];
            *why = (tsched_reason_t)k;
        }
    return -1;
}

long tsched__scan_best(tsched_cluster_t *c, tsched_policy_t *p, const tsched_job_t *job,
                       uint8_t *gpu, tsched_reason_t *why)
{
    struct req r;
    if (!c || !p || make_req(c, job, &r) < 0 || p->kind == P_RANDOM) {
        errno = EINVAL;
        return -2;
    }
    tsched__refresh(c);
    int by_name = p->kind != P_TESSEL && p->kind != P_PACKSPREAD;
    if (by_name && rank_nodes(c) < 0)
        by_name = 0;
    long best = -1;
    double bests = 0;
    size_t count[TSCHED_BAD_REQUEST + 1] = {0};
    for (size_t i = 0; i < c->n; i++) {
        struct cache_ent e;
        score_node(c, p, i, &r, &e);
        count[e.why]++;
        if (e.why != TSCHED_FIT)
            continue;
        if (best < 0 || e.score > bests ||
            (by_name && e.score == bests && c->nodes[i].name_rank < c->nodes[best].name_rank)) {
            best = (long)i;
            bests = e.score;
            *gpu = e.gpu;
        }
    }
    *why = c->n == 0 ? TSCHED_NO_NODES : best >= 0 ? TSCHED_FIT : TSCHED_NO_MODEL;
    size_t most = 0;
    for (int k = TSCHED_NO_MODEL; best < 0 && k <= TSCHED_NO_GPU_MEM; k++)
        if (count[k] > most) {
            most = count[k];
            *why = (tsched_reason_t)k;
        }
    return best;
}

static void fill_member(const tsched_cluster_t *c, tsched_policy_t *p, long ni, const struct req *r,
                        uint8_t gpu, tsched_member_t *m)
{
    const struct node *nd = &c->nodes[ni];
    memset(m, 0, sizeof *m);
    m->node = (uint32_t)ni;
    m->cpu_milli = r->cpu;
    m->mem_bytes = r->mem;
    m->ngpus = r->ngpus;
    m->milli_gpu = r->milli;
    m->gpu_mem_bytes = r->gmem;
    if (r->ngpus == 1 && p->kind == P_RANDOM) {
        /* the FGD simulator's "random" GPU selection: any GPU that fits */
        unsigned n = 0;
        for (unsigned j = 0; j < nd->ngpus; j++)
            n += gpu_ok(nd, j, r);
        uint64_t k = rnd_below(p, n);
        for (unsigned j = 0; j < nd->ngpus; j++)
            if (gpu_ok(nd, j, r) && k-- == 0) {
                m->gpu[0] = (uint8_t)j;
                break;
            }
    } else if (r->ngpus == 1)
        m->gpu[0] = gpu;
    else if (r->ngpus > 1)
        (void)choose_whole(nd, r, p->kind == P_PACKSPREAD && p->gpu_spread, p->prefer_fast, m->gpu);
}

/* Places all members; keep: leave them committed.  0 fits, 1 not, -1 bad. */
static int place(tsched_cluster_t *c, tsched_policy_t *p, const tsched_job_t *job,
                 tsched_member_t *members, tsched_reason_t *why, int keep)
{
    tsched_reason_t dummy;
    if (!why)
        why = &dummy;
    struct req r;
    if (!c || !p || !members || make_req(c, job, &r) < 0) {
        *why = TSCHED_BAD_REQUEST;
        errno = EINVAL;
        return -1;
    }
    tsched__refresh(c);
    uint64_t gen = c->gen; /* a query (!keep) undoes what it applies: the same cluster */
    uint32_t gang = job->gang ? job->gang : 1;
    for (uint32_t i = 0; i < gang; i++) {
        uint8_t gpu = 0;
        tsched_reason_t no = TSCHED_NO_NODES;
        long ni = best_node(c, p, &r, &gpu, &no);
        if (ni < 0) {
            *why = i == 0 ? no : TSCHED_NO_GANG;
            while (i-- > 0)
                (void)tsched__apply(c, &members[i], -1);
            c->gen = gen;
            return 1;
        }
        fill_member(c, p, ni, &r, gpu, &members[i]);
        if ((gang > 1 || keep) && tsched__apply(c, &members[i], 1) < 0) {
            /* cannot happen: the node was checked; undo and report */
            while (i-- > 0)
                (void)tsched__apply(c, &members[i], -1);
            c->gen = gen;
            *why = TSCHED_BAD_REQUEST;
            errno = EINVAL;
            return -1;
        }
    }
    if (gang > 1 && !keep) {
        for (uint32_t i = gang; i-- > 0;)
            (void)tsched__apply(c, &members[i], -1);
        c->gen = gen;
    }
    *why = TSCHED_FIT;
    return 0;
}

int tsched_place(tsched_cluster_t *c, tsched_policy_t *p, const tsched_job_t *job,
                 tsched_member_t *members, tsched_reason_t *why)
{
    return place(c, p, job, members, why, 0);
}

int tsched_allocate(tsched_cluster_t *c, tsched_policy_t *p, const tsched_job_t *job,
                    tsched_member_t *members, tsched_reason_t *why)
{
    return place(c, p, job, members, why, 1);
}

int tsched_fits_without(tsched_cluster_t *c, tsched_policy_t *p, const tsched_job_t *job,
                        const tsched_member_t *gone, size_t ngone, tsched_member_t *members,
                        tsched_reason_t *why)
{
    if (!c || (ngone && !gone)) {
        errno = EINVAL;
        return -1;
    }
    uint64_t gen = c->gen;
    if (tsched_release(c, gone, ngone) < 0) {
        errno = EINVAL;
        return -1;
    }
    int rc = place(c, p, job, members, why, 0);
    int e = errno;
    (void)tsched_commit(c, gone, ngone); /* what was held fits back by construction */
    c->gen = gen;
    errno = e;
    return rc;
}
