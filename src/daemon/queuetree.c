/* queuetree.c - a queue's setting inherited down the queue tree (queuetree.h). */
#include <string.h>

#include "daemon/queuetree.h"

/* Deeper than any queue tree libsched accepts (TSCHED_MAX_QUEUE_DEPTH is 8): a walk that goes
 * on past it is a loop. */
#define QUEUE_WALK_MAX 64

const tstore_queue_t *tessd_queue_inherited(const tstore_queue_t *qs, size_t nq, const char *name,
                                            tessd_queue_own_fn own)
{
    const char *at = name;
    for (int depth = 0; at && *at && depth < QUEUE_WALK_MAX; depth++) {
        const tstore_queue_t *q = NULL;
        for (size_t i = 0; i < nq && !q; i++)
            if (strcmp(qs[i].name, at) == 0)
                q = &qs[i];
        if (!q)
            return NULL;
        if (own(q) >= 0)
            return q;
        at = q->parent;
    }
    return NULL;
}
