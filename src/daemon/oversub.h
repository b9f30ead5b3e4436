/* oversub.h - a queue's GPU memory oversubscription (issue 21 item 4; docs/interposer.md,
 * "Oversubscription", "A queue's setting"): the bytes per GPU in effect for a queue, inherited
 * down the tree; whether a queue's default can be given to a job that does not ask; whether a
 * job's own value is within its queue's.  Pure: no I/O, no tesseld state (the submission in
 * api/jobs.c gathers the facts and carries the answer out).
 */
#ifndef TESSEL_DAEMON_OVERSUB_H
#define TESSEL_DAEMON_OVERSUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libstore/store.h"

/* The bytes per GPU in effect for the jobs of queue name, among the nq queues qs: its own
 * (gpu_oversub >= 0: bytes, 0 none), else its parent's in effect, up the tree; a top-level
 * queue that inherits, or no such queue: 0 (none).  *from (may be NULL): the name of the queue
 * whose setting it is (name itself, an ancestor; a setting of none counts), or "" when none on
 * the path sets one.  A parent missing from qs, or a loop (a store edited by hand), ends the
 * walk as a top-level queue would. */
uint64_t tessd_oversub_queue(const tstore_queue_t *qs, size_t nq, const char *name,
                             const char **from);

/* A queue's own value as stored (gpu_oversub: >= 0 bytes per GPU, 0 none; < 0 its parent's):
 * the setting tessd_oversub_queue inherits down the tree (daemon/queuetree.h). */
int64_t tessd_oversub_own(const tstore_queue_t *q);

/* The host memory a job spills into at most: per_gpu on each of its gpu_count GPUs
 * (saturated, never wraps). */
uint64_t tessd_oversub_total(uint64_t per_gpu, int gpu_count);

/* May a queue's per_gpu (> 0) be given as the default of a job that did not ask, with the
 * same checks a job's own value gets (api/jobs.c parse_submit, check_satisfiable)?  It needs
 * GPUs (gpu_count > 0); the total within the job's mem when it has one (mem > 0); mem when
 * the job runs under memory cgroups (cgroups: the cgroup bounds what it spills); the total
 * within the node's memory (mem_total).  false: the job runs without oversubscription, as in
 * a queue that sets none (docs/interposer.md, "A queue's setting"). */
bool tessd_oversub_default_fits(uint64_t per_gpu, int gpu_count, uint64_t mem, bool cgroups,
                                uint64_t mem_total);

/* May a job whose own value is own (bytes per GPU, 0 none) be submitted to a queue whose value
 * in effect is queue (tessd_oversub_queue; 0: none) by a caller who is not an admin?  The
 * queue's value is the most its jobs may ask; a queue that sets none bounds nothing (as before
 * migration 25). */
bool tessd_oversub_within_queue(uint64_t own, uint64_t queue);

#endif
