/* gpu.h - GPU discovery through NVML, loaded with dlopen (no link-time dependency).
 *
 * tesseld opens NVML once at start (tagent_nvml_open), reads the inventory (name, UUID,
 * memory, SM count, NVLink peers) and keeps the handle for live figures (utilisation).
 * With --fake-gpus, the library opened is the test double tests/fake/libnvidia-ml.so.1,
 * which reads TESSEL_FAKE_GPUS; every GPU is then marked simulated.
 *
 * The fake spec "[Nx]NAME:MEM[,...]" is parsed by tagent_fake_spec_parse (tesseld validates
 * --fake-gpus with it, and builds the inventory from it when the fake NVML is absent).
 */
#ifndef TESSEL_AGENT_GPU_H
#define TESSEL_AGENT_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "libutil/error.h"

/* Most GPUs tesseld manages on one node: libsched's per-node limit. */
#define TAGENT_MAX_GPUS 16

typedef struct {
    int index;
    char name[96];
    char uuid[96];              /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    unsigned char uuid_bin[16]; /* the UUID's 16 bytes (all zero if it did not parse) */
    char bus_id[32];
    uint64_t mem_total;    /* bytes */
    unsigned sm_count;     /* 0 = unknown */
    uint32_t nvlink_peers; /* bit i: an active NVLink to GPU i */
    bool simulated;
} tagent_gpu_t;

typedef struct tagent_nvml tagent_nvml_t;

/* dlopen path (a file name searched by the dynamic loader, or a path), nvmlInit.
 * Returns NULL with errno and err when the library or nvmlInit fails. */
tagent_nvml_t *tagent_nvml_open(const char *lib, tsl_error_t *err);
void tagent_nvml_close(tagent_nvml_t *n);

/* Fill up to max GPUs; returns how many, or -1 with errno and err. */
int tagent_nvml_inventory(tagent_nvml_t *n, tagent_gpu_t *gpus, int max, bool simulated,
                          tsl_error_t *err);
/* GPU utilisation in percent, or -1 when NVML cannot say. */
int tagent_nvml_utilization(tagent_nvml_t *n, int index);
/* The device's memory as the driver counts it (every process's): 0, or -1 when NVML cannot
 * say. */
int tagent_nvml_memory(tagent_nvml_t *n, int index, uint64_t *total, uint64_t *used,
                       uint64_t *free_bytes);

/* Most compute processes listed on one GPU by tagent_nvml_job_used: a GPU with more makes it
 * answer -1 (4096: far above what a node runs; each process holds a context of its own). */
#define TAGENT_NVML_MAX_PROCS 4096

/* What the processes pids[0..npids) hold on the GPUs gpus[0..ngpus) (NVML indexes), as the
 * driver counts each process (nvmlDeviceGetComputeRunningProcesses: its allocations and its
 * contexts), summed into *sum: what other processes hold or free does not count.  A pid that
 * NVML does not list holds nothing (no context on that GPU, ended, or checkpointed: the driver
 * lists a checkpointed process with 0 or not at all).  0, or -1 with errno (and *sum 0) when
 * NVML cannot say: no handle or no GPU (ENODEV), the list cannot be read, has more than
 * TAGENT_NVML_MAX_PROCS entries, or gives one of pids "not available" (EIO).  Safe to call
 * from several threads (NVML is thread-safe; the handle is read-only after open). */
int tagent_nvml_job_used(tagent_nvml_t *n, const unsigned *gpus, size_t ngpus, const pid_t *pids,
                         size_t npids, uint64_t *sum);

/* The pure part of tagent_nvml_job_used for one GPU: the sum of used[i] over the entries
 * (pids[i], used[i]), i < n, whose pid is among of[0..nof) (pids <= 0 there match nothing),
 * saturating at UINT64_MAX; an entry of those whose figure is NVML's "not available" (all
 * ones) is left out and sets *unknown (may be NULL). */
uint64_t tagent_procs_sum(const unsigned *pids, const uint64_t *used, size_t n, const pid_t *of,
                          size_t nof, bool *unknown);

/* Parse "[Nx]NAME:MEM[,...]" into gpus (index, name, mem_total, simulated, a made-up UUID).
 * Returns the count, or -1 with errno EINVAL (or E2BIG above max) and err. */
int tagent_fake_spec_parse(const char *spec, tagent_gpu_t *gpus, int max, tsl_error_t *err);

/* "GPU-5b2c1d3e-..." -> 16 bytes.  0, or -1 when it is not a UUID. */
int tagent_uuid_parse(const char *text, unsigned char out[16]);

#endif
