/* internal.h - libsched's private structures, shared by cluster.c and place.c.
 *
 * Not installed; nothing outside src/common/libsched includes it.
 *
 * Fragmentation (the FGD paper's measure) of a node with T milli-GPU idle:
 * for each typical task t of the mix, with share w_t, the idle capacity that
 * t cannot use: all of T when t does not fit the node (CPU, model, GPU
 * count), else the idle milli-GPU of the GPUs too small for t.  Summed:
 *
 *     frag(node) = T - sum_g A_g(cpu_free) * [K_g >= n_g] * U_g
 *
 * where g runs over the GPU classes of the mix (tasks that ask for the same
 * GPUs, whatever their CPU), A_g(L) is the share of class g's tasks that need
 * at most L milli-CPU, K_g the number of GPUs of the node usable by g (model
 * accepted, enough milli-GPU and GPU memory free), U_g their idle milli-GPU
 * and n_g the GPUs a task of g needs.  CPU-only tasks never use GPUs: they
 * count all of T, which is the "T -" above.  A_g is tabulated against the
 * sorted distinct CPU requests of the mix (theta), so that a node only keeps
 * the index of its free CPU in that list.
 */
#ifndef TESSEL_LIBSCHED_INTERNAL_H
#define TESSEL_LIBSCHED_INTERNAL_H

#include <stdint.h>

#include "tessel/sched.h"

/* Distinct GPU models in one cluster: a model set is a 64-bit mask. */
#define MAX_MODELS 64

/* Kinds of GPU request (GPUs, milli-GPU, GPU memory, models) in a task mix.
 * The Alibaba traces have 21 to 25; the capacity measure keeps a count per
 * kind on the stack. */
#define MAX_GPU_CLASSES 256

/* The per-shape score cache (place.c) holds as many request shapes as fit
 * in CACHE_BYTES, between SHAPE_MIN and SHAPE_MAX.  The Alibaba trace has 91
 * distinct requests, several hundred once jobs name GPU models; a shape
 * costs 24 bytes per node slot (16 for its score, 8 for its index, a
 * tournament tree): 1,024 shapes at 1,213 nodes is 48 MiB, and at 12,130
 * nodes the 64 MiB keep 170 shapes.  Too few slots thrash (every
 * decision rescored every node: 8,000 instead of 60,000 decisions/s at 1,213
 * nodes with model-restricted jobs); the scan over the slots is cheap. */
#define CACHE_BYTES (64u << 20)
#define SHAPE_MIN   16
#define SHAPE_MAX   1024

/* Demand factors of multi-GPU tasks (cluster.c, tsched__refresh): recomputed
 * each time the allocated GPU moves by 1/DEMAND_STEP_DIV of the capacity, and
 * rounded to a power of DEMAND_QUANTUM, so that they change a handful of times
 * in a run: every change rescores, once per request shape, the nodes that can
 * still take a task of the kind that changed (with every node: at 1,213
 * nodes and 0.5 % steps the decisions/s fell from ~85,000 to ~16,000; at 5 %
 * steps and powers of 4, about 9 changes a run, ~30,000/s, and the same
 * allocation within 0.05 point).  The step is also the factors' look-ahead:
 * they count a kind's room less one step, what is sure to be left at the
 * next recomputation (demand_factors()). */
#define DEMAND_STEP_DIV 20
#define DEMAND_QUANTUM  4.0

/* CPU stranding in the capacity term (cluster.c, capfrag_of): the idle
 * milli-GPU that a node's free CPU cannot feed, at the CPU per milli-GPU of
 * the mix's GPU tasks that still fit there, weighs STRAND_WEIGHT times an
 * idle milli-GPU.  Measured on the nine traces and four variants (seeds
 * 42-51, docs/scheduler-placement.md): 3 to 8 give default +0.49 to +0.50
 * over the published FGD mean and the other traces within 0.06 point of
 * each other (cpu250 within 0.14); 1 and 2 lose 0.08 to 0.11 on default,
 * cpu050 and cpu100. */
#define STRAND_WEIGHT 4.0

/* The share of the CPU-only demand to come that the CPU surplus cannot
 * absorb (tsched__refresh) is rounded to multiples of 1/CO_QUANTUM, so that
 * it changes a handful of times in a run: a change rescores every node with
 * idle GPU. */
#define CO_QUANTUM 16.0

struct node {
    char name[TSCHED_NAME_MAX];
    char *labels; /* ",k=v,k=v," for substring matching, or NULL */
    uint64_t cpu_cap, mem_cap;
    uint64_t cpu_free, mem_free;
    uint32_t ngpus;
    uint32_t total_free; /* sum of free[] */
    uint32_t nfull;      /* GPUs with nothing allocated */
    uint32_t version;    /* cluster-unique, bumped on every change */
    uint64_t models;     /* mask of the models present */
    uint8_t model[TSCHED_MAX_NODE_GPUS];
    int32_t island[TSCHED_MAX_NODE_GPUS];
    int32_t pswitch[TSCHED_MAX_NODE_GPUS];
    uint32_t speed[TSCHED_MAX_NODE_GPUS];
    uint32_t free[TSCHED_MAX_NODE_GPUS]; /* milli-GPU */
    uint64_t gmem_cap[TSCHED_MAX_NODE_GPUS];
    uint64_t gmem_free[TSCHED_MAX_NODE_GPUS];
    uint16_t tags[18];  /* jobs held, by kind: gpuclustering affinity */
    int has_topo;       /* some GPU has an island or switch id */
    uint32_t cpu_idx;   /* upper bound of cpu_free in theta */
    uint32_t name_rank; /* position in name order (valid below ranked) */
    double frag;        /* frag(node), see above */
    double capfrag;     /* tsched__capfrag() of the node as it is */
};

/* A GPU class of the task mix. */
struct fclass {
    uint32_t ngpus;
    uint32_t milli;
    uint64_t gmem;
    uint64_t models; /* accepted models; ~0 = any */
};

/* One task of the mix: its GPU class, CPU request and share. */
struct member_w {
    unsigned g;
    uint64_t cpu;
    double w;
    double wbase; /* w, times all GPUs / GPUs of the nodes that could hold it (refresh) */
    double wcap;  /* wbase, times the demand factor of a multi-GPU task (refresh) */
    int moved;    /* wcap changed at the last refresh */
};

/* A request shape's column of the score cache and its index (place.c): a
 * tournament tree over the node slots whose root is the node the plain scan
 * would choose (best score, then the policy's tie-break), and the count of
 * nodes per reason not to fit.  Both are brought up to date from the change
 * log (struct tsched_cluster, chg) when the shape is next asked for. */
struct shape {
    uint64_t hash;     /* of key, to skip most comparisons */
    uint64_t key[8];   /* request fields + policy identity */
    uint64_t last_use; /* for eviction */
    uint64_t synced;   /* nchg when the index was last brought up to date */
    size_t n_at;       /* nodes then */
    int used;
    int valid;   /* the index matches the column as of synced */
    int by_name; /* the tree breaks ties by name rank (else node index) */
    uint32_t count[TSCHED_BAD_REQUEST + 1]; /* nodes per node_fit() reason */
};

struct cache_ent {
    double score;
    uint32_t version; /* node version the entry was computed at; 0: never */
    uint8_t gpu;      /* chosen GPU for a one-GPU request */
    uint8_t why;      /* node_fit(): TSCHED_FIT or why not */
};

/* A node's free resources in brief, for bounds (cycle.c, preemption) and for the placement
 * index's first test (place.c: most nodes of a full cluster cannot hold a request, and this
 * says so without reading the node): one cache line a node, kept by tsched__node_changed(). */
struct room {
    uint64_t cpu, mem;
    uint16_t milli[TSCHED_MAX_NODE_GPUS]; /* free milli-GPU, largest first */
    uint32_t ngpus;
    uint32_t version; /* the node's version */
    uint64_t models;  /* the node's models */
};

/* A tree slot without a node that fits. */
#define TREE_NONE UINT32_MAX

struct tsched_cluster {
    struct node *nodes;
    struct room *room; /* per node */
    size_t n, cap;
    char models[MAX_MODELS][TSCHED_NAME_MAX];
    unsigned nmodels;
    uint32_t next_version;
    size_t ranked;     /* nodes whose name_rank is valid */
    uint64_t capacity; /* milli-GPU */
    uint64_t allocated;
    /* Generation: bumped by every change of the cluster's counts or nodes (tsched__apply, a
     * node added, a workload set); a query that applies members and undoes them (tsched_place,
     * tsched_fits_without, tsched_job_may_start, a cycle that keeps no victim) puts it back.
     * Equal generations: the same cluster (tsched__cluster_gen, queue_internal.h). */
    uint64_t gen;

    /* task mix */
    unsigned G;
    struct fclass *cls;
    uint64_t *theta;
    unsigned ntheta;
    double *atab;         /* (ntheta + 1) x G */
    uint16_t *K;          /* n x G */
    uint32_t *U;          /* n x G */
    uint16_t *S;          /* n x G: tasks of class g the GPUs could take */
    uint16_t *per_gpu;    /* G x 1001: tasks of class g a GPU with f free takes */
    struct member_w *mix; /* the GPU tasks of the mix */
    unsigned nmix;
    double cpu_only;    /* sum over the mix's CPU-only tasks of share x CPU */
    double co_share;    /* part of cpu_only the CPU surplus cannot absorb (refresh) */
    size_t scarcity_n;  /* nodes when wbase was last computed */
    uint64_t demand_at; /* allocated milli-GPU when the demand factors were last computed */
    int demand_valid;   /* 0: compute them before the next decision */

    /* per-shape score cache: nslots columns of cap entries, and per shape
     * a tournament tree of 2 x cap node indices (tree[1] the root, leaves
     * at cap + node) */
    struct shape *shapes;
    unsigned nslots;
    struct cache_ent *cache;
    uint32_t *tree;
    uint64_t clock;

    /* change log: the nodes whose version changed, in order; entry k (of
     * nchg so far) at chg[k % chg_cap]; a shape further behind than chg_cap
     * rebuilds its index from every node's version */
    uint32_t *chg;
    size_t chg_cap; /* a power of two */
    uint64_t nchg;
};

/* cluster.c */
/* Mask of the models named in "A|B" (~0 for NULL/""); add: intern new names
 * (the task mix may name models before any node has them). */
uint64_t tsched__models_mask(tsched_cluster_t *c, const char *models, int add, int *any);
int tsched__labels_match(const struct node *nd, const char *selector);
double tsched__frag_after(const tsched_cluster_t *c, size_t ni, uint64_t cpu_take,
                          const uint8_t *gj, unsigned nj, uint32_t milli, uint64_t gmem);
/* Capacity-aware fragmentation of node ni after the change described (see
 * place.c, "tessel"): idle milli-GPU minus what the mix could still consume
 * there, each task class packed as many times as the node's GPUs and CPU
 * allow. */
double tsched__capfrag(const tsched_cluster_t *c, size_t ni, uint64_t cpu_take, const uint8_t *gj,
                       unsigned nj, uint32_t milli, uint64_t gmem);
/* Recomputes the mix's scarcity weights (wbase) when nodes were added since,
 * and the demand factors of multi-GPU tasks (wcap) when the allocated GPU has
 * moved by DEMAND_STEP since they were last computed; when a weight changes,
 * every node's derived state.  Called before each decision. */
void tsched__refresh(tsched_cluster_t *c);
void tsched__node_changed(tsched_cluster_t *c, size_t ni);
int tsched__apply(tsched_cluster_t *c, const tsched_member_t *m, int sign);

/* place.c */
/* The test oracle of the index (tests only, never on a decision's path):
 * the node one member of job would get by the plain scan the index replaces
 * (every node scored afresh; best score, ties to the lower name rank for
 * the FGD paper's policies, else the lower node index), and its GPU for a
 * one-GPU request; -1 and *why when none fits; -2 for a bad request or the
 * random policy. */
long tsched__scan_best(tsched_cluster_t *c, tsched_policy_t *p, const tsched_job_t *job,
                       uint8_t *gpu, tsched_reason_t *why);

#endif
