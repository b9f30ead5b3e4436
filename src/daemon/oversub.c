/* oversub.c - a queue's GPU memory oversubscription (oversub.h; docs/interposer.md,
 * "Oversubscription"). */
#include "daemon/oversub.h"
#include "daemon/queuetree.h"

int64_t tessd_oversub_own(const tstore_queue_t *q)
{
    return q->gpu_oversub;
}

uint64_t tessd_oversub_queue(const tstore_queue_t *qs, size_t nq, const char *name,
                             const char **from)
{
    const tstore_queue_t *q = tessd_queue_inherited(qs, nq, name, tessd_oversub_own);
    if (from)
        *from = q ? q->name : "";
    return q ? (uint64_t)q->gpu_oversub : 0;
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
