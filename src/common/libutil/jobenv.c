/* jobenv.c - the names a job's submitted environment may not hold (see jobenv.h). */
#include <string.h>

#include "libutil/jobenv.h"

const char *tsl_env_reserved(const char *name)
{
    /* Set by tesseld for every job (launch.c); a submitted value would be overwritten, or, for
     * a per-device limit of a device the job does not have, would linger beside the real ones. */
    static const char *const tessel_set[] = {
        "TESSEL_JOB_ID",          "TESSEL_SLICE",     "TESSEL_CUDA_MEM_LIMIT",
        "TESSEL_DEVICE_REGISTRY", "TESSEL_FAKE_GPUS", "TESSEL_CUDA_MEM_OVERSUBSCRIBE",
    };
    if (strcmp(name, "CUDA_VISIBLE_DEVICES") == 0 || strcmp(name, "NVIDIA_VISIBLE_DEVICES") == 0)
        return "set by Tessel inside the job (the GPUs it was placed on)";
    for (size_t i = 0; i < sizeof tessel_set / sizeof tessel_set[0]; i++)
        if (strcmp(name, tessel_set[i]) == 0)
            return "set by Tessel inside the job";
    if (strncmp(name, "TESSEL_CUDA_MEM_LIMIT_", 22) == 0)
        return "set by Tessel inside the job (the GPU-memory limit of each device)";
    return NULL;
}
