/* gen.h - the cluster's generation, for the queue scheduler's code (resume.c, cycle.c), which
 * sees the cluster only through sched.h (queue_internal.h).  Not installed.
 *
 * A cluster's generation changes with every change of its counts or nodes (struct
 * tsched_cluster, internal.h): two equal readings mean the same cluster, as far as a placement
 * can tell.  Code that applies members and undoes every one of them (a query) sets it back to
 * its reading from before, so that a query does not look like a change. */
#ifndef TESSEL_LIBSCHED_GEN_H
#define TESSEL_LIBSCHED_GEN_H

#include <stdint.h>

#include "tessel/sched.h"

uint64_t tsched__cluster_gen(const tsched_cluster_t *c);
/* Only with a reading taken before applies that are all undone since. */
void tsched__cluster_gen_set(tsched_cluster_t *c, uint64_t gen);

#endif
