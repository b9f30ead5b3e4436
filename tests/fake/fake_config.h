/* fake_config.h - configuration of the fake GPUs (TEST DOUBLES ONLY).
 *
 * Shared by the fake libcuda.so.1 and the fake libnvidia-ml.so.1 so that both
 * describe the same simulated devices.  Read from the environment once, at
 * cuInit / nvmlInit (see tests/fake/README.md for every variable).
 *
 * Pure: parsing only, no global state, unit-tested in test/test_config.c.
 */
#ifndef TESSEL_FAKE_CONFIG_H
#define TESSEL_FAKE_CONFIG_H

#include <stdint.h>

#include "libutil/error.h"

/* Most simulated devices in one configuration.  A real node has at most 16
 * GPUs; the shared state file reserves room for exactly this many. */
#define TFAKE_MAX_DEVICES 16

/* What TESSEL_FAKE_GPUS means when unset. */
#define TFAKE_DEFAULT_GPUS "1xFakeGPU:16G:80"

/* SM count when a spec entry omits it (an A100-class figure). */
#define TFAKE_DEFAULT_SMS 80

/* Device memory charged per context when TESSEL_FAKE_CTX_MEM is unset:
 * 300 MiB is what a CUDA 12/13 context costs on an Ampere/Ada card
 * (cuMemGetInfo before and after cuCtxCreate, within ~20%). */
#define TFAKE_DEFAULT_CTX_MEM (300ull << 20)

/* Granule device allocations are charged in when TESSEL_FAKE_ALLOC_GRANULE is
 * unset.  The driver aligns cuMemAlloc to at least 256 B and sub-allocates
 * small requests; 512 B keeps "allocate N MiB, free drops by N MiB" exact. */
#define TFAKE_DEFAULT_ALLOC_GRANULE 512ull

typedef struct {
    char name[64];    /* as written in the spec, e.g. "RTX4090" */
    uint64_t mem;     /* bytes of device memory */
    unsigned sms;     /* multiprocessor count */
    unsigned group;   /* index of the spec entry it came from (NVLink peers) */
    uint8_t uuid[16]; /* raw UUID bytes */
} tfake_device_t;

typedef struct {
    int ndev;
    tfake_device_t dev[TFAKE_MAX_DEVICES];
    uint64_t kernel_ns; /* TESSEL_FAKE_KERNEL_US, in ns */
    uint64_t ctx_mem;   /* TESSEL_FAKE_CTX_MEM (its first value) */
    /* Per device: a primary context's cost (TESSEL_FAKE_CTX_MEM) and a
     * cuCtxCreate context's (TESSEL_FAKE_CTX_MEM_CREATED). */
    uint64_t ctx_mem_primary[TFAKE_MAX_DEVICES];
    uint64_t ctx_mem_created[TFAKE_MAX_DEVICES];
    uint64_t alloc_granule; /* TESSEL_FAKE_ALLOC_GRANULE (>= 1) */
    uint64_t module_mem;    /* TESSEL_FAKE_MODULE_MEM: device memory per loaded module */
    uint64_t func_mem;      /* TESSEL_FAKE_FUNC_MEM: per function, at its first use (lazy) */
    uint64_t launch_mem;    /* TESSEL_FAKE_LAUNCH_MEM: per function, at its first launch */
    int event_device_order; /* TESSEL_FAKE_EVENT_ORDER=device */
    int no_checkpoint;      /* TESSEL_FAKE_CHECKPOINT=0: a driver without cuCheckpointProcess* */
    char state_path[4096];  /* TESSEL_FAKE_STATE, "" when unset */
    char calls_path[4096];  /* TESSEL_FAKE_CALLS_FILE, "" when unset */
} tfake_config_t;

/* Parse a device list "[Nx]NAME:MEM[:SMS],..." into cfg->ndev / cfg->dev
 * (UUIDs derived with tfake_uuid_default).  NAME: 1..63 characters of
 * [A-Za-z0-9_.+-]; MEM: tsl_parse_size syntax, > 0; SMS: 1..100000; N: 1..16.
 * Returns 0, or -1 with errno = EINVAL and one line in err; cfg untouched on
 * failure. */
int tfake_parse_gpus(const char *spec, tfake_config_t *cfg, tsl_error_t *err);

/* Parse "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx,..." (the "GPU-" prefix is
 * optional) and override the UUIDs of the first entries of cfg->dev.  More
 * UUIDs than devices, a malformed UUID or a duplicate is an error (-1, EINVAL,
 * err); cfg untouched on failure. */
int tfake_parse_uuids(const char *list, tfake_config_t *cfg, tsl_error_t *err);

/* Fill cfg from the environment (TESSEL_FAKE_GPUS, TESSEL_FAKE_GPU_UUIDS,
 * TESSEL_FAKE_KERNEL_US, TESSEL_FAKE_CTX_MEM, TESSEL_FAKE_CTX_MEM_CREATED (each a size or
 * a comma list of sizes per device, the last one repeating), TESSEL_FAKE_ALLOC_GRANULE,
 * TESSEL_FAKE_MODULE_MEM, TESSEL_FAKE_FUNC_MEM, TESSEL_FAKE_LAUNCH_MEM,
 * TESSEL_FAKE_STATE, TESSEL_FAKE_CALLS_FILE, TESSEL_FAKE_EVENT_ORDER, TESSEL_FAKE_CHECKPOINT).
 * Returns 0 or -1 with errno EINVAL and the offending variable named in err. */
int tfake_config_from_env(tfake_config_t *cfg, tsl_error_t *err);

/* Deterministic UUID of device `index` named `name` (FNV-1a of both, shaped
 * as an RFC 4122 version-4 UUID so that tools accept it). */
void tfake_uuid_default(int index, const char *name, uint8_t uuid[16]);

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (41 bytes with the NUL). */
void tfake_uuid_format(const uint8_t uuid[16], char out[41]);

/* The devices CUDA_VISIBLE_DEVICES (`visible`) leaves to a process, as the driver reads it at
 * cuInit: phys[k] is the device (index in cfg->dev, as NVML numbers it) of CUDA ordinal k.
 * NULL (unset): every device in order.  Otherwise a comma list of entries, each a decimal index
 * or "GPU-" and a prefix of a device's UUID naming exactly one device; the first entry that is
 * none of these (out of range, "-1", an unknown or ambiguous UUID, "MIG-...", a blank, spaces)
 * or names a device already listed ends the list: the devices before it are visible.  The empty
 * string leaves none.  Returns how many are visible (0..cfg->ndev). */
int tfake_visible(const char *visible, const tfake_config_t *cfg, int phys[TFAKE_MAX_DEVICES]);

/* Name a device reports: "Fake " + spec name, unless the spec name already
 * starts with "fake" (any case).  Test doubles never pose as real GPUs. */
void tfake_display_name(const tfake_device_t *d, char *out, unsigned len);

#endif
