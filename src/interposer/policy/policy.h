/* policy.h - the interposer's pure arithmetic: configuration from the
 * environment, what an allocation costs, and what a slice reports.
 *
 * Nothing here calls the driver, allocates, reads the clock or touches
 * global state, so every rule can be unit-tested with a table
 * (src/interposer/policy/test/test_policy.c).  Prefix tcu_ (Tessel CUDA).
 */
#ifndef TESSEL_INTERPOSER_POLICY_H
#define TESSEL_INTERPOSER_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "cudaabi/cuda_abi.h"
#include "libshm/shm.h"

/* CUDA ordinals the configuration can name: TESSEL_CUDA_MEM_LIMIT_<n> with
 * 0 <= n < TCU_MAX_DEVICES (the slice file's device capacity). */
#define TCU_MAX_DEVICES TSHM_MAX_DEVICES

/* The configuration a process reads once, at initialisation.
 *
 *   TESSEL_CUDA_MEM_LIMIT      bytes or K/M/G/T (binary); every device
 *   TESSEL_CUDA_MEM_LIMIT_<n>  the same for CUDA ordinal n (overrides)
 *   TESSEL_SLICE               absolute path of the slice file; unset: the
 *                              process is a slice of its own
 *   CUDA_VISIBLE_DEVICES       checked only: indexes, GPU-/MIG- UUIDs
 *   TESSEL_CUDA_CORE_LIMIT     percent of each device's compute, 1..100
 *                              (docs/compute-shares.md); unset: no cap
 *   TESSEL_CUDA_CORE_MODE      strict (default) or shared
 *   TESSEL_CUDA_CORE_PRIORITY  low, normal (default) or high
 *   TESSEL_DEVICE_REGISTRY     directory of the per-GPU registry files
 *                              (default /dev/shm)
 *   TESSEL_CUDA_MEM_OVERSUBSCRIBE  bytes or K/M/G/T: what each device of the
 *                              slice may spill past its limit into managed
 *                              memory kept in host RAM (issue 21,
 *                              docs/interposer.md); unset or 0: no spill
 *
 * A malformed value makes ok = 0 and error one line of text; the interposer
 * then fails closed (every limit 0: all counted allocations refused). */
typedef struct {
    int ok;
    char error[256];
    uint64_t limit[TCU_MAX_DEVICES]; /* TSHM_UNLIMITED where unset */
    int limited;                     /* any limit set at all */
    char slice[4096];                /* "" = private slice */
    unsigned core_limit;             /* percent, 0 = none */
    unsigned core_mode;              /* enum tshm_core_mode */
    unsigned core_prio;              /* enum tshm_core_prio */
    int core_set;                    /* any TESSEL_CUDA_CORE_* given */
    int mode_set, prio_set;          /* TESSEL_CUDA_CORE_MODE / _PRIORITY given */
    char registry[1024];             /* registry directory */
    int from_file;                   /* the limits came from TCU_LIMITS_PATH (tesseld) */
    uint64_t host_limit;             /* TESSEL_CUDA_MEM_OVERSUBSCRIBE, 0 = no spill */
    int host_set;                    /* TESSEL_CUDA_MEM_OVERSUBSCRIBE given */
} tcu_config_t;

/* Where a job started by tesseld finds its limits: tesseld writes the file
 * (root-owned, 0644, in a root-owned directory) and tessel-shim bind-mounts
 * that directory here in the job's own mount namespace (src/agent/jobns.c).
 * A process without the file (by hand, LD_PRELOAD) reads the environment. */
#define TCU_LIMITS_DIR  "/run/tessel/job"
#define TCU_LIMITS_PATH TCU_LIMITS_DIR "/limits"
/* Largest limits file read: a few dozen NAME=value lines. */
#define TCU_LIMITS_MAX 8192

/* Fill c from the text of a limits file: the same NAME=value pairs as the
 * environment (tcu_config_parse), one a line; empty lines and lines starting
 * with '#' are skipped.  At most 128 lines.  Returns as tcu_config_parse;
 * c->from_file is set either way. */
int tcu_config_parse_file(tcu_config_t *c, const char *text);

/* Combine the limits file's configuration (file, authoritative) with the
 * environment's (env): the environment may only lower what the file allows.
 * Per device the lower memory limit; the lower oversubscription (0, off, is the lowest); the
 * lower core limit (0 = none is the
 * highest); the lower priority and strict mode when the environment names
 * them.  The
 * slice and the registry come from the file only.  A malformed file or
 * environment makes the result fail closed (ok = 0, every limit 0, the error
 * of the malformed one).  Returns 0, or -1 when the result is not ok. */
int tcu_config_lower(tcu_config_t *out, const tcu_config_t *file, const tcu_config_t *env);

/* Fill c from an environment vector (environ layout: "NAME=value", NULL
 * terminated).  Always fills c; returns 0 when ok, -1 when the configuration
 * is malformed (c->ok = 0, c->error set, every limit 0). */
int tcu_config_parse(tcu_config_t *c, char *const *envp);

/* What cuMemGetInfo / cuDeviceTotalMem / NVML report for a slice device:
 * total = min(limit, real_total), free = min(total - used, real_free),
 * without underflow.  An unlimited device reports the real figures. */
void tcu_view(uint64_t limit, uint64_t used, uint64_t real_free, uint64_t real_total,
              uint64_t *free_out, uint64_t *total_out);

/* Bytes charged for a CUDA array (cuArrayCreate / cuArray3DCreate): width x
 * max(height,1) x max(depth,1) elements, each the size that format and
 * channel count give; block-compressed and NV12 formats by their bits per
 * pixel.  Saturates at UINT64_MAX instead of wrapping. */
uint64_t tcu_array_bytes(CUarray_format fmt, unsigned channels, size_t w, size_t h, size_t d,
                         unsigned flags);

/* Bytes for a mipmapped array: the sum over levels, each level halving
 * width, height and (unless layered or cubemap) depth, never below 1. */
uint64_t tcu_mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels);

/* ---- compute shares (docs/compute-shares.md) ---- */

/* Parts per million of a device. */
#define TCU_PPM 1000000u
/* Lowest rate a slice is paced at: a low-priority slice under a busy
 * high-priority one still makes progress (1 % of the device). */
#define TCU_RATE_FLOOR_PPM 10000u
/* Room left above a higher-priority slice's measured use, so that its
 * demand can grow: it gains up to 5 points per window and so reaches what
 * it asks within a few windows, while lower slices keep the rest. */
#define TCU_PRIO_HEADROOM_PPM 50000u

/* Another slice on the same GPU, as the device registry shows it. */
typedef struct {
    unsigned limit;    /* percent, 0 = none */
    unsigned mode;     /* enum tshm_core_mode */
    unsigned prio;     /* enum tshm_core_prio */
    uint32_t used_ppm; /* its measured use over the last window */
} tcu_peer_t;

/* The rate (ppm of the device) a slice is paced at, given its own share and
 * the active other slices on the device:
 *   base   = limit x 10^4 (10^6 without a limit);
 *   strict: rate = base;
 *   shared: rate = base + spare x base / sum(bases of active shared slices,
 *           itself included), spare = 10^6 - base - sum(peer claims) when
 *           positive (a peer's claim: its limit, or its use without one);
 *   priority: rate <= 10^6 - sum(use of active higher-priority peers)
 *           - TCU_PRIO_HEADROOM_PPM when there is any;
 *   never below TCU_RATE_FLOOR_PPM nor above 10^6. */
uint32_t tcu_core_rate(unsigned limit, unsigned mode, unsigned prio, const tcu_peer_t *peers,
                       int npeers);

/* Credit a slice may bank while it uses less than its share: rate x 20 ms
 * (so that a slice idle for a while can exceed its share by at most 2
 * points in the next 1 s window), at least 1 ms of device time. */
int64_t tcu_core_cap(uint32_t rate_ppm);

/* How long a launch waits for the bucket to climb back from credit (< 0)
 * at rate_ppm: -credit x 10^6 / rate, in ns. */
uint64_t tcu_core_wait_ns(int64_t credit, uint32_t rate_ppm);

/* ---- NVML devices without the CUDA driver (docs/interposer.md) ---- */

/* The limit of NVML device `uuid` ("GPU-..."; NVML index `index` of `count`
 * devices) for a process whose CUDA ordinals have the limits limit[0..63],
 * found without asking the CUDA driver which ordinal it is: asking would
 * initialise CUDA, and a process that initialised CUDA leaves fork children
 * that cannot use it.
 *   visible    CUDA_VISIBLE_DEVICES, NULL when unset
 *   pci_order  1 when CUDA_DEVICE_ORDER=PCI_BUS_ID: CUDA numbers devices in
 *              NVML's order (by PCI bus id), else fastest first (unknown)
 * Returns 1 and *out when the device may be one the process sees: the
 * limit of its ordinal when that is known (a UUID entry of visible that the
 * device's UUID starts with; or PCI order, by index), else the lowest limit
 * of the ordinals the process can have (the conservative view: a device of
 * unknown ordinal is shown no more than any ordinal may use).  Returns 0
 * when the device cannot be one of the process's (visible names UUIDs or,
 * in PCI order, indexes, and none is this device; or visible is empty or
 * starts with a negative index). */
int tcu_nvml_limit(const uint64_t *limit, const char *visible, int pci_order, const char *uuid,
                   unsigned index, unsigned count, uint64_t *out);

/* Saturating multiply, used for pitch x height. */
uint64_t tcu_mul_sat(uint64_t a, uint64_t b);

/* ---- oversubscription: what may touch a spill (docs/interposer.md) ---- */

/* Whether a process that has spilled `own` bytes on a device may spill `bytes` more under its
 * host limit `limit` (own + bytes <= limit, without wrapping). */
int tcu_host_admit(uint64_t own, uint64_t bytes, uint64_t limit);

/* Whether location l is host memory (HOST, HOST_NUMA, HOST_NUMA_CURRENT). */
int tcu_loc_is_host(CUmemLocation l);

/* The location cuMemAdvise / cuMemPrefetchAsync (v1) mean by device d (CU_DEVICE_CPU: the
 * host). */
CUmemLocation tcu_loc_of_device(CUdevice d);

/* Whether advice a toward l could bring a spilled allocation's pages onto a device: a
 * preferred location that is not the host, unsetting the preferred location or accessed-by
 * (the hints a spill is given), read-mostly (copies on the devices that read), and any
 * advice this table does not know.  0 for SET_ACCESSED_BY and UNSET_READ_MOSTLY. */
int tcu_advice_to_device(CUmem_advise a, CUmemLocation l);

/* Whether any of locs[0..n) is not the host (a batch of prefetches that may reach a device). */
int tcu_locs_reach_device(const CUmemLocation *locs, size_t n);

#endif
