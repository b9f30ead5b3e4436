/* wait_internal.h - helpers of wait.c that the cycle (cycle.c) uses to record why a job waits
 * (tessel/sched_wait.h).  Not installed. */
#ifndef TESSEL_LIBSCHED_WAIT_INTERNAL_H
#define TESSEL_LIBSCHED_WAIT_INTERNAL_H

#include "tessel/sched.h"
#include "tessel/sched_wait.h"

/* Clears *w to a reason of this code for a job asking req (every unused field zero, gpu -1). */
void tsched__wait_reset(tsched_wait_t *w, tsched_wait_code_t code, const tsched_job_t *req);

/* Adds id to w->jobs (once), or counts it in w->more when jobs[] is full. */
void tsched__wait_add_job(tsched_wait_t *w, uint64_t id);

/* Fills the best candidate fields of w (node, gpu, free_*) from cluster c as it is now, for a
 * member asking req: the GPU (or node) that comes closest to holding it. */
void tsched__wait_best(const tsched_cluster_t *c, const tsched_job_t *req, tsched_wait_t *w);

/* Names node n in w->node when the cluster has more than one node (else ""). */
void tsched__wait_node(const tsched_cluster_t *c, uint32_t n, tsched_wait_t *w);

#endif
