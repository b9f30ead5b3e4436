/* sched.h - Tessel's scheduling core: cluster model, job requests, placement.
 *
 * Pure C: no I/O, no clock, no threads, no global state.  Data in, decisions
 * out.  Every object is reached through an opaque handle and is not
 * thread-safe: one thread at a time per cluster (the daemon's scheduling tick,
 * the simulator's loop).
 *
 * Life of a cluster:
 *
 *   c = tsched_cluster_create()
 *   tsched_cluster_add_node(c, &node)        ... once per node, indices 0, 1, ...
 *   tsched_cluster_set_workload(c, ...)      optional: the task mix (see below)
 *   p = tsched_policy_create("tessel")       or "fgd", "bestfit", ...
 *   loop:
 *     tsched_place(c, p, &job, members, &why)      decide, cluster unchanged
 *     tsched_commit(c, &job, members)              make it so
 *     ...
 *     tsched_release(c, members, job.gang)         job ended or was preempted
 *   tsched_policy_destroy(p); tsched_cluster_destroy(c)
 *
 * tsched_allocate() is place + commit in one call.  tsched_fits_without()
 * answers "would this job fit if these allocations were gone?" (preemption).
 *
 * Units: CPU in milli-cores, memory and GPU memory in bytes, GPU share in
 * milli-GPU (1000 = one whole GPU).
 *
 * Errors follow Tessel's convention: -1 (or NULL) with errno set, and one line
 * of text in an optional tsl_error_t.  A call that fails changes nothing.
 */
#ifndef TESSEL_SCHED_H
#define TESSEL_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "tessel/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most GPUs one node may carry.  16 covers every server shipped today
 * (HGX boards carry 8; the largest PCIe chassis 10 to 16). */
#define TSCHED_MAX_NODE_GPUS 16

/* One whole GPU in milli-GPU. */
#define TSCHED_MILLI 1000

/* Longest GPU model name, node name or label string kept (bytes, with NUL). */
#define TSCHED_NAME_MAX 64

typedef struct tsched_cluster tsched_cluster_t;
typedef struct tsched_policy tsched_policy_t;

/* One GPU of a node, as declared by the caller. */
typedef struct {
    const char *model;     /* "A100-80G", "T4", ...; NULL or "" = unnamed */
    uint64_t mem_bytes;    /* GPU memory; 0 = unknown: jobs asking for GPU memory
                              do not go there */
    uint32_t sm_count;     /* informational; 0 = unknown */
    uint32_t speed_milli;  /* relative speed, 1000 = reference; 0 = 1000 */
    int32_t nvlink_island; /* GPUs of a node with the same id >= 0 share an
                              NVLink island; -1 = none */
    int32_t pcie_switch;   /* same, for a PCIe switch; -1 = none */
} tsched_gpu_spec_t;

/* One node. */
typedef struct {
    const char *name; /* copied (first TSCHED_NAME_MAX-1 bytes) */
    uint64_t cpu_milli;
    uint64_t mem_bytes;
    const char *labels;            /* "key=value,key=value" or NULL; copied */
    uint32_t ngpus;                /* 0..TSCHED_MAX_NODE_GPUS */
    const tsched_gpu_spec_t *gpus; /* ngpus entries; copied */
} tsched_node_spec_t;

/* A job request: `gang` members, each asking for the same resources, placed
 * all or nothing (members may land on different nodes). */
typedef struct {
    uint64_t cpu_milli;     /* per member */
    uint64_t mem_bytes;     /* per member */
    uint32_t ngpus;         /* GPUs per member, 0..TSCHED_MAX_NODE_GPUS */
    uint32_t milli_gpu;     /* per GPU, 1..1000; below 1000 only if ngpus == 1;
                               ignored (taken as 1000) when ngpus > 1 */
    uint64_t gpu_mem_bytes; /* per GPU; 0 = no GPU memory requirement */
    const char *models;     /* accepted GPU models, "A|B|C"; NULL/"" = any */
    const char *selector;   /* labels the node must carry, "k=v,k=v"; NULL = any */
    uint32_t gang;          /* members, >= 1 (0 is taken as 1) */
} tsched_job_t;

/* Where one member runs, and what it holds there.  Filled by tsched_place();
 * kept by the caller for tsched_commit() and tsched_release(). */
typedef struct {
    uint32_t node; /* node index */
    uint32_t ngpus;
    uint8_t gpu[TSCHED_MAX_NODE_GPUS]; /* GPU indices within the node */
    uint32_t milli_gpu;                /* share held on each of those GPUs */
    uint64_t gpu_mem_bytes;            /* GPU memory held on each of those GPUs */
    uint64_t cpu_milli;
    uint64_t mem_bytes;
} tsched_member_t;

/* Why a job does not fit: the most common reason over the nodes tried, for
 * the first member that found no node. */
typedef enum {
    TSCHED_FIT = 0,     /* it fits */
    TSCHED_NO_NODES,    /* the cluster has no node at all */
    TSCHED_NO_MODEL,    /* no node has an accepted GPU model / labels */
    TSCHED_NO_CPU,      /* not enough free CPU */
    TSCHED_NO_MEM,      /* not enough free memory */
    TSCHED_NO_GPU,      /* not enough free GPUs / milli-GPU */
    TSCHED_NO_GPU_MEM,  /* not enough free GPU memory */
    TSCHED_NO_GANG,     /* members fit alone, not all together */
    TSCHED_BAD_REQUEST, /* the request itself is invalid */
} tsched_reason_t;

/* Text for a reason ("not enough free CPU"); never NULL. */
const char *tsched_reason_str(tsched_reason_t why);

/* --- cluster ---------------------------------------------------------- */

/* New empty cluster.  NULL with errno ENOMEM on failure. */
tsched_cluster_t *tsched_cluster_create(void);

/* Frees c and everything it holds.  NULL is accepted. */
void tsched_cluster_destroy(tsched_cluster_t *c);

/* Adds a node; returns its index (0, 1, ...), or -1 with errno EINVAL (more
 * than TSCHED_MAX_NODE_GPUS GPUs, or a 65th distinct GPU model in the
 * cluster) or ENOMEM, and adds nothing.  A node may mix GPU models.  The
 * FGD paper's policies break ties by node name (first in strcmp order). */
int tsched_cluster_add_node(tsched_cluster_t *c, const tsched_node_spec_t *node, tsl_error_t *err);

size_t tsched_cluster_nodes(const tsched_cluster_t *c);

/* Free resources of a node, for reports and tests.  Returns 0, or -1 with
 * errno EINVAL for a bad index.  Any out pointer may be NULL.  free_milli
 * and free_gpu_mem receive one entry per GPU of the node. */
int tsched_node_free(const tsched_cluster_t *c, uint32_t node, uint64_t *cpu_milli,
                     uint64_t *mem_bytes, uint32_t *ngpus, uint32_t *free_milli,
                     uint64_t *free_gpu_mem);

/* Relative speed of GPU `gpu` of `node` (tsched_gpu_spec_t.speed_milli, 1000 =
 * reference), or 0 for a bad index. */
uint32_t tsched_gpu_speed(const tsched_cluster_t *c, uint32_t node, uint32_t gpu);

/* The highest relative speed among the GPUs that `job` may run on (its accepted
 * models, with the GPU memory it asks, on nodes its selector admits), 1000 =
 * reference; 1000 when no GPU of
 * the cluster fits those (the job cannot be placed anyway) or job has no GPU.
 * The queue layer counts a pending job's normalised GPUs with it, so that a
 * limit in normalised units holds wherever the job lands (docs/scheduler-queues.md). */
uint32_t tsched_job_top_speed(tsched_cluster_t *c, const tsched_job_t *job);

/* The task mix the fragmentation-aware policies ("fgd", "tessel") plan for:
 * n typical job requests (gang and selector ignored) with their shares of the
 * workload (weights >= 0, any scale; normalised here).  Copies everything.
 * Without a call, a generic mix is used (GPU shares of 0.25, 0.5, 0.75 and
 * 1, 2, 4, 8 whole GPUs).  At most 256 kinds of GPU request (GPUs, share,
 * GPU memory, models; CPU may vary freely).  Returns 0, or -1 with errno
 * EINVAL (bad weight, too many kinds) / ENOMEM, and changes nothing. */
int tsched_cluster_set_workload(tsched_cluster_t *c, const tsched_job_t *jobs,
                                const double *weights, size_t n, tsl_error_t *err);

/* Totals over the cluster, in milli-GPU: capacity, allocated, and the idle
 * GPU capacity that the task mix cannot use (the FGD paper's fragmentation,
 * weighted by the mix).  Any out pointer may be NULL. */
void tsched_cluster_gpu_stats(tsched_cluster_t *c, uint64_t *capacity, uint64_t *allocated,
                              double *fragmented);

/* --- policies --------------------------------------------------------- */

/* A placement policy by name:
 *   "tessel"          Tessel's default (fragmentation-aware, see docs)
 *   "fgd"             fragmentation gradient descent (Weng et al., ATC '23)
 *   "random", "bestfit", "dotprod", "gpupacking", "gpuclustering"
 *                     the FGD paper's baselines, as its simulator defines them
 *   "binpack", "spread"          at node and GPU level alike
 *   "NODE:GPU" with NODE, GPU in {binpack, spread}, e.g. "binpack:spread"
 *                     binpack nodes, spread over the GPUs of a node (HAMi)
 * NULL or "" means "tessel".  Returns NULL with errno EINVAL (and the list
 * of names in err) for an unknown name, or ENOMEM. */
tsched_policy_t *tsched_policy_create(const char *name, tsl_error_t *err);

void tsched_policy_destroy(tsched_policy_t *p);

/* The policy's canonical name ("binpack:spread", "fgd"). */
const char *tsched_policy_name(const tsched_policy_t *p);

/* Seeds the policy's random choices (random policy, ties).  Same seed, same
 * cluster, same calls: same decisions. */
void tsched_policy_seed(tsched_policy_t *p, uint64_t seed);

/* Weigh GPUs by relative speed: among otherwise equal choices prefer faster
 * GPUs (on: 1, off: 0, the default). */
void tsched_policy_prefer_fast(tsched_policy_t *p, int on);

/* Every name tsched_policy_create() accepts, NULL-terminated. */
const char *const *tsched_policy_names(void);

/* --- placement -------------------------------------------------------- */

/* Decides where job would run; the cluster is left as it was (the policy's
 * random state advances).  members must hold job->gang entries (at least 1).
 * Returns 0 and fills members when the job fits; returns 1 and sets *why
 * when it does not; returns -1 with errno EINVAL (and *why =
 * TSCHED_BAD_REQUEST) for an invalid request.  why may be NULL.
 * A multi-GPU member prefers GPUs of one NVLink island, then of one PCIe
 * switch. */
int tsched_place(tsched_cluster_t *c, tsched_policy_t *p, const tsched_job_t *job,
                 tsched_member_t *members, tsched_reason_t *why);

/* Takes the resources of n members (from tsched_place(), or recorded earlier)
 * out of the cluster.  All or nothing: returns 0, or -1 with errno ENOSPC
 * (something no longer free) or EINVAL (bad node/GPU index) and changes
 * nothing. */
int tsched_commit(tsched_cluster_t *c, const tsched_member_t *members, size_t n);

/* tsched_place() then tsched_commit(); same returns as tsched_place(). */
int tsched_allocate(tsched_cluster_t *c, tsched_policy_t *p, const tsched_job_t *job,
                    tsched_member_t *members, tsched_reason_t *why);

/* Gives back what n committed members hold.  Returns 0, or -1 with errno
 * EINVAL (index out of range, or more released than held) and changes
 * nothing. */
int tsched_release(tsched_cluster_t *c, const tsched_member_t *members, size_t n);

/* Would job fit if the ngone committed members in gone were released?
 * Same returns as tsched_place() (members filled as if they had been
 * released; they may overlap gone's resources).  The cluster is restored
 * exactly before returning; -1 with errno EINVAL if gone is not held. */
int tsched_fits_without(tsched_cluster_t *c, tsched_policy_t *p, const tsched_job_t *job,
                        const tsched_member_t *gone, size_t ngone, tsched_member_t *members,
                        tsched_reason_t *why);

#ifdef __cplusplus
}
#endif
#endif
