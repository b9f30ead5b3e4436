/* queuetree.h - a queue's setting inherited down the queue tree (docs/suspend.md, "The
 * setting"; docs/interposer.md, "A queue's setting"): its own value, else the nearest
 * ancestor's.  Shared by idle reclamation (idle.c) and GPU memory oversubscription
 * (oversub.c), whose settings inherit alike.  Pure: no I/O, no tesseld state.
 */
#ifndef TESSEL_DAEMON_QUEUETREE_H
#define TESSEL_DAEMON_QUEUETREE_H

#include <stddef.h>
#include <stdint.h>

#include "libstore/store.h"

/* A queue's own value of one inherited setting: >= 0 set (0 included), < 0 its parent's. */
typedef int64_t (*tessd_queue_own_fn)(const tstore_queue_t *q);

/* The queue whose own value of the setting own reads is in effect for queue name, among the
 * nq queues qs: name itself when it sets one (own >= 0), else its parent's in effect, up the
 * tree.  NULL when none on the path sets one: a top-level queue that inherits, no such queue,
 * a parent missing from qs, or a loop (a store edited by hand; the walk ends as a top-level
 * queue's would).  Pure. */
const tstore_queue_t *tessd_queue_inherited(const tstore_queue_t *qs, size_t nq, const char *name,
                                            tessd_queue_own_fn own);

#endif
