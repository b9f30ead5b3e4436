/* cluster.c - the cluster model: nodes, GPUs, allocations, fragmentation.
 *
 * Owns every resource count.  tsched__apply() is the only code that changes
 * free resources, and it refuses anything that would over-allocate; after a
 * change, tsched__node_changed() refreshes the node's derived state (totals,
 * the per-class usable GPUs K/U and its fragmentation, see internal.h) and
 * gives it a new version, which invalidates its cached scores (place.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "internal.h"

static void class_sums(const tsched_cluster_t *c, const struct node *nd, uint16_t *S);
static double capfrag_of(const tsched_cluster_t *c, const uint16_t *S, uint32_t total, uint64_t L);

const char *tsched_reason_str(tsched_reason_t why)
{
    switch (why) {
    case TSCHED_FIT:
        return "fits";
    case TSCHED_NO_NODES:
        return "the cluster has no nodes";
    case TSCHED_NO_MODEL:
        return "no node has an accepted GPU model or the selected labels";
    case TSCHED_NO_CPU:
        return "not enough free CPU";
    case TSCHED_NO_MEM:
        return "not enough free memory";
    case TSCHED_NO_GPU:
        return "not enough free GPUs";
    case TSCHED_NO_GPU_MEM:
        return "not enough free GPU memory";
    case TSCHED_NO_GANG:
        return "the gang's members do not all fit at once";
    case TSCHED_BAD_REQUEST:
        return "invalid request";
    }
    return "unknown reason";
}

static void copy_name(char *dst, const char *src)
{
    size_t len = src ? strlen(src) : 0;
    if (len >= TSCHED_NAME_MAX)
        len = TSCHED_NAME_MAX - 1;
    if (len)
        memcpy(dst, src, len);
    dst[len] = '\0';
}

/* Index of a model name, adding it when add is set; -1 when absent/full. */
static int model_index(tsched_cluster_t *c, const char *name, size_t len, int add)
{
    if (len >= TSCHED_NAME_MAX)
        len = TSCHED_NAME_MAX - 1;
    for (unsigned i = 0; i < c->nmodels; i++)
        if (strlen(c->models[i]) == len && memcmp(c->models[i], name, len) == 0)
            return (int)i;
    if (!add || c->nmodels >= MAX_MODELS)
        return -1;
    memcpy(c->models[c->nmodels], name, len);
    c->models[c->nmodels][len] = '\0';
    return (int)c->nmodels++;
}

uint64_t tsched__models_mask(tsched_cluster_t *c, const char *models, int add, int *any)
{
    *any = 1;
    if (!models || !*models)
        return ~(uint64_t)0;
    uint64_t mask = 0;
    const char *p = models;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len) {
            *any = 0;
            int i = model_index(c, p, len, add);
            if (i >= 0)
                mask |= (uint64_t)1 << i;
        }
        p += len;
        if (*p == '|')
            p++;
    }
    return *any ? ~(uint64_t)0 : mask;
}

int tsched__labels_match(const struct node *nd, const char *selector)
{
    if (!selector || !*selector)
        return 1;
    if (!nd->labels)
        return 0;
    const char *p = selector;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len) {
            /* look for ",item," in ",k=v,k=v," */
            const char *h = nd->labels;
            int found = 0;
            while ((h = strstr(h, ",")) != NULL && h[1]) {
                if (strncmp(h + 1, p, len) == 0 && h[1 + len] == ',') {
                    found = 1;
                    break;
                }
                h++;
            }
            if (!found)
                return 0;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return 1;
}

static inline int usable(const tsched_cluster_t *c, const struct node *nd, unsigned j, unsigned g,
                         uint32_t free_milli, uint64_t gmem_free)
{
    const struct fclass *k = &c->cls[g];
    if (!(k->models >> nd->model[j] & 1))
        return 0;
    if (free_milli < k->milli)
        return 0;
    if (gmem_free < k->gmem)
        return 0;
    return 1;
}

/* Number of theta entries <= v. */
static uint32_t theta_idx(const tsched_cluster_t *c, uint64_t v)
{
    uint32_t lo = 0, hi = c->ntheta;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (c->theta[mid] <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void tsched__node_changed(tsched_cluster_t *c, size_t ni)
{
    struct node *nd = &c->nodes[ni];
    uint32_t total = 0, nfull = 0;
    for (unsigned j = 0; j < nd->ngpus; j++) {
        total += nd->free[j];
        if (nd->free[j] == TSCHED_MILLI && nd->gmem_free[j] == nd->gmem_cap[j])
            nfull++;
    }
    nd->total_free = total;
    nd->nfull = nfull;
    nd->cpu_idx = theta_idx(c, nd->cpu_free);
    uint16_t *K = c->K + ni * c->G;
    uint32_t *U = c->U + ni * c->G;
    const double *A = c->atab + (size_t)nd->cpu_idx * c->G;
    double used = 0;
    for (unsigned g = 0; g < c->G; g++) {
        uint16_t k = 0;
        uint32_t u = 0;
        for (unsigned j = 0; j < nd->ngpus; j++)
            if (usable(c, nd, j, g, nd->free[j], nd->gmem_free[j])) {
                k++;
                u += nd->free[j];
            }
        K[g] = k;
        U[g] = u;
        if (k >= c->cls[g].ngpus)
            used += A[g] * u;
    }
    nd->frag = total - used;
    if (nd->frag < 0)
        nd->frag = 0;
    uint16_t *S = c->S + ni * c->G;
    class_sums(c, nd, S);
    nd->capfrag = capfrag_of(c, S, total, nd->cpu_free);
    struct room *rm = &c->room[ni];
    rm->cpu = nd->cpu_free;
    rm->mem = nd->mem_free;
    rm->ngpus = nd->ngpus;
    for (unsigned j = 0; j < nd->ngpus; j++) { /* insertion: largest first */
        unsigned k = j;
        for (; k > 0 && rm->milli[k - 1] < nd->free[j]; k--)
            rm->milli[k] = rm->milli[k - 1];
        rm->milli[k] = (uint16_t)nd->free[j];
    }
    nd->version = ++c->next_version;
    rm->version = nd->version;
    rm->models = nd->models;
    c->chg[c->nchg++ & (c->chg_cap - 1)] = (uint32_t)ni;
}

double tsched__frag_after(const tsched_cluster_t *c, size_t ni, uint64_t cpu_take,
                          const uint8_t *gj, unsigned nj, uint32_t milli, uint64_t gmem)
{
    const struct node *nd = &c->nodes[ni];
    uint32_t idx = theta_idx(c, nd->cpu_free - cpu_take);
    const double *A = c->atab + (size_t)idx * c->G;
    const uint16_t *K = c->K + ni * c->G;
    const uint32_t *U = c->U + ni * c->G;
    double used = 0;
    for (unsigned g = 0; g < c->G; g++) {
        if (A[g] == 0)
            continue;
        int k = K[g];
        int64_t u = U[g];
        for (unsigned i = 0; i < nj; i++) {
            unsigned j = gj[i];
            if (usable(c, nd, j, g, nd->free[j], nd->gmem_free[j])) {
                k--;
                u -= nd->free[j];
            }
            if (usable(c, nd, j, g, nd->free[j] - milli, nd->gmem_free[j] - gmem)) {
                k++;
                u += nd->free[j] - milli;
            }
        }
        if (k >= (int)c->cls[g].ngpus)
            used += A[g] * (double)u;
    }
    double f = (double)(nd->total_free - nj * milli) - used;
    return f < 0 ? 0 : f;
}

/* Tasks of class g one GPU with f milli-GPU and gf bytes free could take. */
static inline uint32_t gpu_tasks(const tsched_cluster_t *c, unsigned g, uint32_t f, uint64_t gf)
{
    uint32_t t = c->per_gpu[(size_t)g * (TSCHED_MILLI + 1) + f];
    uint64_t gm = c->cls[g].gmem;
    if (gm && gf / gm < t)
        t = (uint32_t)(gf / gm);
    return t;
}

/* S[g]: tasks of class g the node's GPUs could take one by one. */
static void class_sums(const tsched_cluster_t *c, const struct node *nd, uint16_t *S)
{
    for (unsigned g = 0; g < c->G; g++) {
        const struct fclass *k = &c->cls[g];
        uint32_t n = 0;
        if (k->models & nd->models)
            for (unsigned j = 0; j < nd->ngpus; j++)
                if (k->models >> nd->model[j] & 1)
                    n += gpu_tasks(c, g, nd->free[j], nd->gmem_free[j]);
        S[g] = (uint16_t)(n > UINT16_MAX ? UINT16_MAX : n);
    }
}

/* Capacity-aware fragmentation of a node with S (class_sums), total
 * milli-GPU idle and L milli-CPU free:
 *
 *     total - usable + STRAND_WEIGHT * max(0, total - L / cpu_per_gpu)
 *
 * usable: what the mix could still run there, each task kind as often as
 * the GPUs (S) and the CPU (L) allow, weighted by its share (wcap).  That
 * takes each kind alone, so it misses that the kinds will share the CPU:
 * with a mix of 20-core and 1-core one-GPU tasks, a 20-core CPU-only job
 * costs one 20-core task on a 4-GPU node with 60 cores and one on a node
 * with 40 alike, but on the latter it leaves 20 cores, with which a stream
 * of both kinds (10.5 cores per GPU) keeps about 2 of the 4 GPUs busy
 * (test_tessel_cpu_stranding).  The second term is that fluid view: the
 * idle GPU the free CPU cannot feed at the CPU per milli-GPU of the mix's
 * GPU tasks that still fit the node, plus the part of the CPU-only tasks'
 * demand the cluster's CPU surplus will not absorb (co_share, see
 * cpu_only_share()).  At 130 % load it took the idle GPU stranded beside
 * too little CPU from 35-53 GPUs' worth to under 8 on default, cpu050,
 * cpu100, gpushare40 and gpushare60 (seeds 42, 43; docs). */
static double capfrag_of(const tsched_cluster_t *c, const uint16_t *S, uint32_t total, uint64_t L)
{
    if (total == 0)
        return 0;
    double usable = 0, cpu = 0, gpu = 0;
    for (unsigned m = 0; m < c->nmix; m++) {
        const struct member_w *mw = &c->mix[m];
        const struct fclass *k = &c->cls[mw->g];
        uint64_t t = k->ngpus > 1 ? S[mw->g] / k->ngpus : S[mw->g];
        if (t == 0)
            continue;
        cpu += mw->w * (double)mw->cpu; /* what the tasks that fit ask, per GPU */
        gpu += mw->w * k->ngpus * k->milli;
        if (mw->cpu && t * mw->cpu > L) /* CPU binds: divide only then */
            t = L / mw->cpu;
        usable += mw->wcap * (double)t * k->ngpus * k->milli;
    }
    double f = (double)total - usable;
    cpu += c->co_share * c->cpu_only;
    if (gpu > 0 && cpu > 0) {
        double feed = (double)L * gpu / cpu;
        if (total > feed)
            f += STRAND_WEIGHT * ((double)total - feed);
    }
    return f < 0 ? 0 : f;
}

/* GPUs of the nodes that could hold one task of mix member m if they were
 * empty: accepted models, enough such GPUs with the GPU memory it asks for,
 * and the CPU it asks for. */
static uint64_t eligible_gpus(const tsched_cluster_t *c, const struct member_w *mw)
{
    const struct fclass *k = &c->cls[mw->g];
    uint64_t e = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct node *nd = &c->nodes[i];
        if (!(k->models & nd->models) || nd->cpu_cap < mw->cpu)
            continue;
        unsigned acc = 0;
        for (unsigned j = 0; j < nd->ngpus; j++)
            acc += (k->models >> nd->model[j] & 1) && nd->gmem_cap[j] >= k->gmem;
        if (acc >= k->ngpus)
            e += acc;
    }
    return e;
}

/* Capacity node ni offers to one multi-GPU mix member: the GPU-milli of as
 * many of its tasks as the node's free GPUs and CPU allow. */
static double member_room(const tsched_cluster_t *c, size_t ni, const struct member_w *mw)
{
    const struct fclass *k = &c->cls[mw->g];
    uint64_t t = c->S[ni * c->G + mw->g] / k->ngpus;
    uint64_t L = c->nodes[ni].cpu_free;
    if (mw->cpu && t * mw->cpu > L)
        t = L / mw->cpu;
    return (double)t * k->ngpus * k->milli;
}

/* Demand factor of each multi-GPU member: its share of the mix's GPU demand
 * against the share of the idle GPU that its tasks could use now (whole free
 * GPUs together on one node, with the CPU), capped at 1:
 *
 *     factor = min(1, demand share / room share)
 *
 * When empty 8-GPU nodes are plentiful against the 8-GPU jobs of the mix,
 * keeping yet another one whole is worth little, and charging every CPU-only
 * or one-GPU task that breaks one strands CPU elsewhere; as they run out,
 * the factor climbs back to 1.  The room is counted as it will be at the
 * next recomputation at the worst, one DEMAND_STEP_DIV-th of the capacity
 * less: with the room as it is now, the factors of the default trace's
 * 8-GPU kinds stayed at 1/64 to 1/4 up to 75 % allocated and came back to 1
 * only at 80 % (seed 42), too late: 120 8-GPU jobs failed before 100 % load
 * (seeds 42-51), now 22; docs.  Returns 1 when a weight changed. */
static int demand_factors(tsched_cluster_t *c)
{
    double idle = (double)(c->capacity - c->allocated), wg = 0;
    for (unsigned m = 0; m < c->nmix; m++) {
        const struct fclass *k = &c->cls[c->mix[m].g];
        wg += c->mix[m].w * k->ngpus * k->milli;
    }
    int changed = 0;
    for (unsigned m = 0; m < c->nmix; m++) {
        struct member_w *mw = &c->mix[m];
        const struct fclass *k = &c->cls[mw->g];
        double f = 1;
        if (k->ngpus > 1 && idle > 0 && wg > 0) {
            double room = 0;
            for (size_t i = 0; i < c->n; i++)
                room += member_room(c, i, mw);
            double want = mw->w * k->ngpus * k->milli / wg; /* demand share */
            /* The factor holds until the allocated GPU has moved by another
             * step; in the worst case all of that step comes out of this
             * room, so count only the room that is sure to be left then. */
            room -= (double)(c->capacity / DEMAND_STEP_DIV);
            if (room > 0 && want * idle < room) {
                f = pow(DEMAND_QUANTUM, floor(log(want * idle / room) / log(DEMAND_QUANTUM) + 0.5));
                if (f > 1)
                    f = 1;
            }
        }
        double w = mw->wbase * f;
        mw->moved = w != mw->wcap;
        if (mw->moved) {
            mw->wcap = w;
            changed = 1;
        }
    }
    return changed;
}

/* Share of the CPU-only tasks' demand still to come that the CPU surplus
 * cannot absorb.  The surplus of a node is the CPU its idle GPUs do not
 * need at the CPU per milli-GPU of the mix's GPU tasks; the CPU-only tasks
 * that will come while the idle GPU fills ask cpu_only per unit of the
 * mix's GPU demand.  CPU-only tasks can go anywhere, so while the surplus
 * covers them they strand no GPU and count for nothing in capfrag_of();
 * beyond it (cpu250: CPU-only tasks ask 38 % of the cluster's CPU) every
 * milli-CPU they take is one a GPU task will miss, and the missing part
 * joins the CPU per milli-GPU there.  Without it the stranding term cost
 * cpu250 1.4 points (docs).  Rounded to multiples of 1/CO_QUANTUM. */
static double cpu_only_share(const tsched_cluster_t *c)
{
    double cpu = 0, gpu = 0;
    for (unsigned m = 0; m < c->nmix; m++) {
        const struct fclass *k = &c->cls[c->mix[m].g];
        cpu += c->mix[m].w * (double)c->mix[m].cpu;
        gpu += c->mix[m].w * k->ngpus * k->milli;
    }
    if (gpu <= 0 || c->cpu_only <= 0)
        return 0;
    double surplus = 0;
    for (size_t i = 0; i < c->n; i++) {
        double x = (double)c->nodes[i].cpu_free - cpu / gpu * c->nodes[i].total_free;
        if (x > 0)
            surplus += x;
    }
    double want = c->cpu_only / gpu * (double)(c->capacity - c->allocated);
    double share = want > surplus ? 1 - surplus / want : 0;
    return floor(share * CO_QUANTUM + 0.5) / CO_QUANTUM;
}

void tsched__refresh(tsched_cluster_t *c)
{
    int changed = 0;
    if (c->scarcity_n != c->n) {
        /* each task of the mix weighs its share times all GPUs / the GPUs
         * of the nodes that could hold it: a task that only a few nodes can
         * take (its models, its GPU count, its CPU) counts as much as those
         * nodes are scarce.  Once per change of the node set: nmix x nodes. */
        uint64_t all = 0;
        for (size_t i = 0; i < c->n; i++)
            all += c->nodes[i].ngpus;
        for (unsigned m = 0; m < c->nmix; m++) {
            uint64_t e = eligible_gpus(c, &c->mix[m]);
            c->mix[m].wbase = c->mix[m].wcap = c->mix[m].w * (e ? (double)all / (double)e : 1.0);
        }
        c->scarcity_n = c->n;
        c->demand_valid = 0;
        changed = 1;
    }
    uint64_t step = c->capacity / DEMAND_STEP_DIV;
    uint64_t moved =
        c->allocated > c->demand_at ? c->allocated - c->demand_at : c->demand_at - c->allocated;
    if (c->demand_valid && moved < step) {
        if (changed)
            for (size_t i = 0; i < c->n; i++)
                tsched__node_changed(c, i);
        return;
    }
    if (changed) /* the node state the factors read must be current */
        for (size_t i = 0; i < c->n; i++)
            tsched__node_changed(c, i);
    int factors = demand_factors(c);
    c->demand_at = c->allocated;
    c->demand_valid = 1;
    double co = cpu_only_share(c);
    if (co != c->co_share) {
        /* it weighs on every node with idle GPU; a node without any keeps
         * capfrag 0 whatever is placed there, so its cached scores hold */
        c->co_share = co;
        for (size_t i = 0; i < c->n; i++)
            if (c->nodes[i].total_free)
                tsched__node_changed(c, i);
        return;
    }
    if (!factors)
        return;
    /* A factor weighs only the tasks of its kind a node can still take:
     * where none fits now, none fits after any placement either, so the
     * node's scores do not change and its cached ones stay valid. */
    for (size_t i = 0; i < c->n; i++)
        for (unsigned m = 0; m < c->nmix; m++)
            if (c->mix[m].moved && member_room(c, i, &c->mix[m]) > 0) {
                tsched__node_changed(c, i);
                break;
            }
}

double tsched__capfrag(const tsched_cluster_t *c, size_t ni, uint64_t cpu_take, const uint8_t *gj,
                       unsigned nj, uint32_t milli, uint64_t gmem)
{
    const struct node *nd = &c->nodes[ni];
    uint32_t total = nd->total_free - nj * milli;
    if (total == 0)
        return 0;
    uint16_t S[MAX_GPU_CLASSES];
    memcpy(S, c->S + ni * c->G, c->G * sizeof *S);
    for (unsigned i = 0; i < nj; i++) {
        unsigned j = gj[i];
        for (unsigned g = 0; g < c->G; g++)
            if (c->cls[g].models >> nd->model[j] & 1)
                S[g] = (uint16_t)(S[g] - gpu_tasks(c, g, nd->free[j], nd->gmem_free[j]) +
                                  gpu_tasks(c, g, nd->free[j] - milli, nd->gmem_free[j] - gmem));
    }
    return capfrag_of(c, S, total, nd->cpu_free - cpu_take);
}

/* The generic mix used until tsched_cluster_set_workload(): fractional
 * GPUs of a quarter, half and three quarters, and 1, 2, 4, 8 whole GPUs,
 * equally likely, asking for no CPU. */
static int set_default_workload(tsched_cluster_t *c)
{
    static const uint32_t milli[] = {250, 500, 750, 1000, 1000, 1000, 1000};
    static const uint32_t ngpus[] = {1, 1, 1, 1, 2, 4, 8};
    tsched_job_t jobs[7];
    double w[7];
    for (int i = 0; i < 7; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].ngpus = ngpus[i];
        jobs[i].milli_gpu = milli[i];
        w[i] = 1;
    }
    return tsched_cluster_set_workload(c, jobs, w, 7, NULL);
}

tsched_cluster_t *tsched_cluster_create(void)
{
    tsched_cluster_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;

    if (set_default_workload(c) < 0) {
        tsched_cluster_destroy(c);
        errno = ENOMEM;
        return NULL;
    }
    return c;
}

void tsched_cluster_destroy(tsched_cluster_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        free(c->nodes[i].labels);
    free(c->nodes);
    free(c->room);
    free(c->cls);
    free(c->theta);
    free(c->atab);
    free(c->K);
    free(c->U);
    free(c->S);
    free(c->cache);
    free(c->tree);
    free(c->chg);
    free(c->shapes);
    free(c->per_gpu);
    free(c->mix);
    free(c);
}

size_t tsched_cluster_nodes(const tsched_cluster_t *c)
{
    return c->n;
}

static int grow(tsched_cluster_t *c, size_t want)
{
    if (want <= c->cap)
        return 0;
    size_t cap = c->cap ? c->cap * 2 : 16;
    while (cap < want)
        cap *= 2;
    struct node *nodes = realloc(c->nodes, cap * sizeof *nodes);
    if (!nodes)
        return -1;
    c->nodes = nodes;
    struct room *room = realloc(c->room, cap * sizeof *room);
    if (!room)
        return -1;
    c->room = room;
    size_t G = c->G ? c->G : 1;
    uint16_t *K = realloc(c->K, cap * G * sizeof *K);
    if (!K)
        return -1;
    c->K = K;
    uint32_t *U = realloc(c->U, cap * G * sizeof *U);
    if (!U)
        return -1;
    c->U = U;
    uint16_t *S = realloc(c->S, cap * G * sizeof *S);
    if (!S)
        return -1;
    c->S = S;
    /* the score cache and its index are laid out by shape, then node: start
     * them afresh, and the change log (4 entries per node slot) with them */
    size_t slots = CACHE_BYTES / (cap * (sizeof(struct cache_ent) + 2 * sizeof(uint32_t)));
    slots = slots < SHAPE_MIN ? SHAPE_MIN : slots > SHAPE_MAX ? SHAPE_MAX : slots;
    struct cache_ent *ce = calloc(cap * slots, sizeof *ce);
    uint32_t *tree = calloc(2 * cap * slots, sizeof *tree);
    uint32_t *chg = calloc(4 * cap, sizeof *chg);
    struct shape *sh = calloc(slots, sizeof *sh);
    if (!ce || !tree || !chg || !sh) {
        free(ce);
        free(tree);
        free(chg);
        free(sh);
        return -1;
    }
    free(c->cache);
    free(c->tree);
    free(c->chg);
    free(c->shapes);
    c->cache = ce;
    c->tree = tree;
    c->chg = chg;
    c->chg_cap = 4 * cap;
    c->nchg = 0;
    c->shapes = sh;
    c->nslots = (unsigned)slots;
    c->cap = cap;
    return 0;
}

int tsched_cluster_add_node(tsched_cluster_t *c, const tsched_node_spec_t *spec, tsl_error_t *err)
{
    if (!c || !spec) {
        errno = EINVAL;
        return tsl_errprintf(err, "add_node: NULL argument");
    }
    if (spec->ngpus > TSCHED_MAX_NODE_GPUS || (spec->ngpus && !spec->gpus)) {
        errno = EINVAL;
        return tsl_errprintf(err, "node %s: %u GPUs (at most %d)", spec->name ? spec->name : "?",
                             spec->ngpus, TSCHED_MAX_NODE_GPUS);
    }
    if (c->n >= INT32_MAX) {
        errno = EINVAL;
        return tsl_errprintf(err, "add_node: too many nodes");
    }
    /* models first, so that failing leaves nothing half done */
    unsigned nmodels = c->nmodels;
    int idx[TSCHED_MAX_NODE_GPUS];
    for (unsigned j = 0; j < spec->ngpus; j++) {
        const char *m = spec->gpus[j].model ? spec->gpus[j].model : "";
        idx[j] = model_index(c, m, strlen(m), 1);
        if (idx[j] < 0) {
            c->nmodels = nmodels;
            errno = EINVAL;
            return tsl_errprintf(err, "node %s: more than %d GPU models in one cluster",
                                 spec->name ? spec->name : "?", MAX_MODELS);
        }
    }
    char *labels = NULL;
    if (spec->labels && *spec->labels) {
        size_t len = strlen(spec->labels);
        labels = malloc(len + 3);
        if (!labels) {
            c->nmodels = nmodels;
            errno = ENOMEM;
            return tsl_errprintf(err, "add_node: out of memory");
        }
        labels[0] = ',';
        memcpy(labels + 1, spec->labels, len);
        labels[len + 1] = ',';
        labels[len + 2] = '\0';
    }
    if (grow(c, c->n + 1) < 0) {
        free(labels);
        c->nmodels = nmodels;
        errno = ENOMEM;
        return tsl_errprintf(err, "add_node: out of memory");
    }
    struct node *nd = &c->nodes[c->n];
    memset(nd, 0, sizeof *nd);
    copy_name(nd->name, spec->name);
    nd->labels = labels;
    nd->cpu_cap = nd->cpu_free = spec->cpu_milli;
    nd->mem_cap = nd->mem_free = spec->mem_bytes;
    nd->ngpus = spec->ngpus;
    for (unsigned j = 0; j < spec->ngpus; j++) {
        const tsched_gpu_spec_t *g = &spec->gpus[j];
        nd->model[j] = (uint8_t)idx[j];
        nd->models |= (uint64_t)1 << idx[j];
        nd->island[j] = g->nvlink_island < 0 ? -1 : g->nvlink_island;
        nd->pswitch[j] = g->pcie_switch < 0 ? -1 : g->pcie_switch;
        if (nd->island[j] >= 0 || nd->pswitch[j] >= 0)
            nd->has_topo = 1;
        nd->speed[j] = g->speed_milli ? g->speed_milli : TSCHED_MILLI;
        nd->free[j] = TSCHED_MILLI;
        nd->gmem_cap[j] = nd->gmem_free[j] = g->mem_bytes;
    }
    size_t ni = c->n++;
    c->capacity += (uint64_t)spec->ngpus * TSCHED_MILLI;
    c->gen++;
    tsched__node_changed(c, ni);
    return (int)ni;
}

int tsched_node_free(const tsched_cluster_t *c, uint32_t node, uint64_t *cpu_milli,
                     uint64_t *mem_bytes, uint32_t *ngpus, uint32_t *free_milli,
                     uint64_t *free_gpu_mem)
{
    if (!c || node >= c->n) {
        errno = EINVAL;
        return -1;
    }
    const struct node *nd = &c->nodes[node];
    if (cpu_milli)
        *cpu_milli = nd->cpu_free;
    if (mem_bytes)
        *mem_bytes = nd->mem_free;
    if (ngpus)
        *ngpus = nd->ngpus;
    for (unsigned j = 0; j < nd->ngpus; j++) {
        if (free_milli)
            free_milli[j] = nd->free[j];
        if (free_gpu_mem)
            free_gpu_mem[j] = nd->gmem_free[j];
    }
    return 0;
}

uint32_t tsched_gpu_speed(const tsched_cluster_t *c, uint32_t node, uint32_t gpu)
{
    if (!c || node >= c->n || gpu >= c->nodes[node].ngpus)
        return 0;
    return c->nodes[node].speed[gpu];
}

uint32_t tsched_job_top_speed(tsched_cluster_t *c, const tsched_job_t *job)
{
    if (!c || !job || job->ngpus == 0)
        return TSCHED_MILLI;
    int any;
    uint64_t mask = tsched__models_mask(c, job->models, 0, &any);
    uint32_t top = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct node *nd = &c->nodes[i];
        if (!tsched__labels_match(nd, job->selector))
            continue;
        for (unsigned j = 0; j < nd->ngpus; j++)
            if ((mask >> nd->model[j]) & 1 && nd->gmem_cap[j] >= job->gpu_mem_bytes &&
                nd->speed[j] > top)
                top = nd->speed[j];
    }
    return top ? top : TSCHED_MILLI;
}

void tsched_cluster_gpu_stats(tsched_cluster_t *c, uint64_t *capacity, uint64_t *allocated,
                              double *fragmented)
{
    if (capacity)
        *capacity = c->capacity;
    if (allocated)
        *allocated = c->allocated;
    if (fragmented) {
        double f = 0;
        for (size_t i = 0; i < c->n; i++)
            f += c->nodes[i].frag;
        *fragmented = f;
    }
}

/* --- the task mix ------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int tsched_cluster_set_workload(tsched_cluster_t *c, const tsched_job_t *jobs,
                                const double *weights, size_t n, tsl_error_t *err)
{
    if (!c || (n && (!jobs || !weights))) {
        errno = EINVAL;
        return tsl_errprintf(err, "set_workload: NULL argument");
    }
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(weights[i] >= 0) || !isfinite(weights[i])) {
            errno = EINVAL;
            return tsl_errprintf(err, "set_workload: weight %zu is %g", i, weights[i]);
        }
        if (jobs[i].ngpus > TSCHED_MAX_NODE_GPUS) {
            errno = EINVAL;
            return tsl_errprintf(err, "set_workload: job %zu asks for %u GPUs", i, jobs[i].ngpus);
        }
        total += weights[i];
    }
    if (n && total <= 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "set_workload: weights sum to 0");
    }
    struct fclass *cls = calloc(n ? n : 1, sizeof *cls);
    struct member_w *mw = calloc(n ? n : 1, sizeof *mw);
    uint64_t *theta = calloc(n ? n : 1, sizeof *theta);
    if (!cls || !mw || !theta)
        goto nomem;
    unsigned G = 0, nm = 0, nt = 0;
    double cpu_only = 0;
    for (size_t i = 0; i < n; i++) {
        const tsched_job_t *j = &jobs[i];
        if (j->ngpus == 0)
            cpu_only += weights[i] / total * (double)j->cpu_milli;
        if (j->ngpus == 0 || weights[i] == 0)
            continue; /* CPU-only tasks count all idle GPUs: the "T -" */
        struct fclass k = {0};
        k.ngpus = j->ngpus;
        k.milli = j->ngpus > 1 || j->milli_gpu == 0 || j->milli_gpu > TSCHED_MILLI ? TSCHED_MILLI
                                                                                   : j->milli_gpu;
        k.gmem = j->gpu_mem_bytes;
        int any;
        k.models = tsched__models_mask(c, j->models, 1, &any);
        unsigned g;
        for (g = 0; g < G; g++)
            if (cls[g].ngpus == k.ngpus && cls[g].milli == k.milli && cls[g].gmem == k.gmem &&
                cls[g].models == k.models)
                break;
        if (g == G) {
            if (G == MAX_GPU_CLASSES) {
                free(cls);
                free(mw);
                free(theta);
                errno = EINVAL;
                return tsl_errprintf(err, "set_workload: more than %d kinds of GPU request",
                                     MAX_GPU_CLASSES);
            }
            cls[G++] = k;
        }
        mw[nm].g = g;
        mw[nm].cpu = j->cpu_milli;
        mw[nm].w = mw[nm].wbase = mw[nm].wcap = weights[i] / total;
        nm++;
        theta[nt++] = j->cpu_milli;
    }
    qsort(theta, nt, sizeof *theta, cmp_u64);
    unsigned ut = 0;
    for (unsigned i = 0; i < nt; i++)
        if (ut == 0 || theta[ut - 1] != theta[i])
            theta[ut++] = theta[i];
    size_t Gs = G ? G : 1;
    double *atab = calloc((size_t)(ut + 1) * Gs, sizeof *atab);
    uint16_t *K = malloc((c->cap ? c->cap : 1) * Gs * sizeof *K);
    uint32_t *U = malloc((c->cap ? c->cap : 1) * Gs * sizeof *U);
    uint16_t *S = malloc((c->cap ? c->cap : 1) * Gs * sizeof *S);
    if (!atab || !K || !U || !S) {
        free(atab);
        free(K);
        free(U);
        free(S);
        goto nomem;
    }
    /* atab[i][g]: share of class g's tasks asking for <= theta[i-1] CPU */
    for (unsigned m = 0; m < nm; m++) {
        /* first index i whose bound theta[i-1] >= cpu */
        unsigned lo = 0, hi = ut;
        while (lo < hi) {
            unsigned mid = (lo + hi) / 2;
            if (theta[mid] < mw[m].cpu)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (unsigned i = lo + 1; i <= ut; i++)
            atab[(size_t)i * Gs + mw[m].g] += mw[m].w;
    }
    uint16_t *per = malloc((size_t)Gs * (TSCHED_MILLI + 1) * sizeof *per);
    if (!per) {
        free(atab);
        free(K);
        free(U);
        free(S);
        goto nomem;
    }
    for (unsigned g = 0; g < G; g++)
        for (unsigned f = 0; f <= TSCHED_MILLI; f++)
            per[(size_t)g * (TSCHED_MILLI + 1) + f] = (uint16_t)(f / cls[g].milli);
    free(c->per_gpu);
    c->per_gpu = per;
    free(c->mix);
    c->mix = mw;
    c->nmix = nm;
    c->cpu_only = cpu_only;
    c->co_share = 0;
    c->scarcity_n = (size_t)-1; /* tsched__refresh() before the next decision */
    free(c->cls);
    free(c->theta);
    free(c->atab);
    free(c->K);
    free(c->U);
    free(c->S);
    c->cls = cls;
    c->G = G;
    c->theta = theta;
    c->ntheta = ut;
    c->atab = atab;
    c->K = K;
    c->U = U;
    c->S = S;
    for (size_t i = 0; i < c->n; i++)
        tsched__node_changed(c, i);
    c->gen++;
    return 0;
nomem:
    free(cls);
    free(mw);
    free(theta);
    errno = ENOMEM;
    return tsl_errprintf(err, "set_workload: out of memory");
}

/* --- allocations -------------------------------------------------------- */

/* Applies (sign +1) or undoes (sign -1) one member; all checks first. */
int tsched__apply(tsched_cluster_t *c, const tsched_member_t *m, int sign)
{
    if (m->node >= c->n || m->ngpus > TSCHED_MAX_NODE_GPUS) {
        errno = EINVAL;
        return -1;
    }
    struct node *nd = &c->nodes[m->node];
    if (m->ngpus && (m->milli_gpu == 0 || m->milli_gpu > TSCHED_MILLI)) {
        errno = EINVAL;
        return -1;
    }
    for (unsigned i = 0; i < m->ngpus; i++) {
        if (m->gpu[i] >= nd->ngpus) {
            errno = EINVAL;
            return -1;
        }
        for (unsigned k = 0; k < i; k++)
            if (m->gpu[k] == m->gpu[i]) {
                errno = EINVAL;
                return -1;
            }
    }
    if (sign > 0) {
        if (nd->cpu_free < m->cpu_milli || nd->mem_free < m->mem_bytes)
            goto nospc;
        for (unsigned i = 0; i < m->ngpus; i++) {
            unsigned j = m->gpu[i];
            if (nd->free[j] < m->milli_gpu || nd->gmem_free[j] < m->gpu_mem_bytes)
                goto nospc;
        }
    } else {
        if (nd->cpu_cap - nd->cpu_free < m->cpu_milli || nd->mem_cap - nd->mem_free < m->mem_bytes)
            goto inval;
        for (unsigned i = 0; i < m->ngpus; i++) {
            unsigned j = m->gpu[i];
            if (TSCHED_MILLI - nd->free[j] < m->milli_gpu ||
                nd->gmem_cap[j] - nd->gmem_free[j] < m->gpu_mem_bytes)
                goto inval;
        }
    }
    unsigned tag = m->ngpus == 0                                    ? 0
                   : (m->ngpus == 1 && m->milli_gpu < TSCHED_MILLI) ? 1
                                                                    : 1 + m->ngpus;
    if (sign > 0) {
        nd->cpu_free -= m->cpu_milli;
        nd->mem_free -= m->mem_bytes;
        for (unsigned i = 0; i < m->ngpus; i++) {
            nd->free[m->gpu[i]] -= m->milli_gpu;
            nd->gmem_free[m->gpu[i]] -= m->gpu_mem_bytes;
        }
        c->allocated += (uint64_t)m->ngpus * m->milli_gpu;
        nd->tags[tag]++;
    } else {
        nd->cpu_free += m->cpu_milli;
        nd->mem_free += m->mem_bytes;
        for (unsigned i = 0; i < m->ngpus; i++) {
            nd->free[m->gpu[i]] += m->milli_gpu;
            nd->gmem_free[m->gpu[i]] += m->gpu_mem_bytes;
        }
        c->allocated -= (uint64_t)m->ngpus * m->milli_gpu;
        if (nd->tags[tag])
            nd->tags[tag]--;
    }
    c->gen++;
    tsched__node_changed(c, m->node);
    return 0;
nospc:
    errno = ENOSPC;
    return -1;
inval:
    errno = EINVAL;
    return -1;
}

static int apply_all(tsched_cluster_t *c, const tsched_member_t *members, size_t n, int sign)
{
    if (!c || (n && !members)) {
        errno = EINVAL;
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (tsched__apply(c, &members[i], sign) < 0) {
            int e = errno;
            while (i-- > 0)
                (void)tsched__apply(c, &members[i], -sign);
            errno = e;
            return -1;
        }
    }
    return 0;
}

int tsched_commit(tsched_cluster_t *c, const tsched_member_t *members, size_t n)
{
    return apply_all(c, members, n, 1);
}

int tsched_release(tsched_cluster_t *c, const tsched_member_t *members, size_t n)
{
    return apply_all(c, members, n, -1);
}

uint64_t tsched__cluster_gen(const tsched_cluster_t *c)
{
    return c->gen;
}

void tsched__cluster_gen_set(tsched_cluster_t *c, uint64_t gen)
{
    c->gen = gen;
}
