/* oversub.c - a queue's GPU memory oversubscription (oversub.h; docs/interposer.md,
 * "Oversubscription"). */
#include <string.h>

#include "daemon/oversub.h"

/* Deeper than any queue tree libsched accepts (TSCHED_MAX_QUEUE_DEPTH is 8): a walk that goes
 * on past it is a loop. */
#define OVERSUB_WALK_MAX 64

uint64_t tessd_oversub_queue(const tstore_queue_t *qs, size_t nq, const char *name,
                             const char **from)
{
    if (from)
        *from = "";
    const char *at = name;
    for (int depth = 0; at && *at && depth < OVERSUB_WALK_MAX; depth++) {
        const tstore_queue_t *q = NULL;
        for (size_t i = 0; i < nq && !q; i++)
            if (strcmp(qs[i].name, at) == 0)
                q = &qs[i];
        if (!q)
            return 0;
        if (q->gpu_oversub >= 0) {
            if (from)
                *from = q->name;
            return (uint64_t)q->gpu_oversub;
        }
        at = q->parent;
    }
    return 0;
}

uint64_t tessd_oversub_total(uint64_t per_gpu, int gpu_count)
{
    if (gpu_count <= 0)
        return 0;
    uint64_t n = (uint64_t)gpu_count;
    return per_gpu > UINT64_MAX / n ? UINT64_MAX : per_gpu * n;
}

bool tessd_oversub_default_fits(uint64_t per_gpu, int gpu_count, uint64_t mem, bool cgroups,
                                uint64_t mem_total)
{
    if (per_gpu == 0 || gpu_count <= 0)
        return false;
    uint64_t total = tessd_oversub_total(per_gpu, gpu_count);
    if (mem > 0 && total > mem)
        return false;
    if (mem == 0 && cgroups)
        return false;
    return total <= mem_total;
}

bool tessd_oversub_within_queue(uint64_t own, uint64_t queue)
{
    return queue == 0 || own <= queue;
}
