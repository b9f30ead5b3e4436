/* slurm_logic.h - the pure part of spank_tessel.so (Tessel slices for Slurm jobs).
 *
 * What a job asked for (--gpu-mem, --gpu-share), what Slurm gave it on a node (the GPUs of
 * SLURM_STEP_GPUS / SLURM_JOB_GPUS, SLURM_SHARDS_ON_NODE), what the node's gres.conf says (the
 * shard Count of each GPU) and what NVML says (each GPU's memory) make the limits of the job's
 * slice on that node: bytes and percent of compute per CUDA ordinal, the limits file that
 * libtessel-cuda reads, and the watchdog's per-NVML-index limits.  No I/O, no Slurm calls: the
 * plugin (spank_tessel.c) feeds these from its callbacks, and src/slurm/test/test_slurm_logic.c
 * tests them with tables.  Prefix tslurm_.
 *
 * GPU identity.  Slurm names a job's GPUs by the digits of their gres.conf File= (nvidia1 -> 1,
 * the device minor) in SLURM_STEP_GPUS (srun) or SLURM_JOB_GPUS (batch); the job's CUDA
 * ordinal k is the k-th of them (CUDA_VISIBLE_DEVICES is that list, or 0..n-1 under cgroup
 * ConstrainDevices).  The plugin takes NVML index = minor (true where the device files are
 * numbered in PCI order, as the NVIDIA driver numbers them; docs/slurm.md).
 */
#ifndef TESSEL_SLURM_LOGIC_H
#define TESSEL_SLURM_LOGIC_H

#include <stddef.h>
#include <stdint.h>

#include "libutil/error.h"

/* GPU minors a node may have (as TSW_MAX_GPUS and the slice file's device records). */
#define TSLURM_MAX_GPUS 64
/* A share is kept in parts per million of a GPU. */
#define TSLURM_PPM 1000000u

/* The options as numbers in the job's SPANK environment, set where the job is submitted, for
 * slurmctld's job_submit plugin (contrib/slurm/job_submit.lua): bytes, and parts per million. */
#define TSLURM_ENV_MEM   "TESSEL_GPU_MEM_BYTES"
#define TSLURM_ENV_SHARE "TESSEL_GPU_SHARE_PPM"

/* --gpu-mem=SIZE: bytes or binary K/M/G/T (tsl_parse_size), more than 0.  0, or -1 with err. */
int tslurm_parse_mem(const char *text, uint64_t *bytes, tsl_error_t *err);

/* --gpu-share=FRACTION: "0.25" or "25%", above 0 and at most 1, into parts per million
 * (rounded down, at least 1).  0, or -1 with err. */
int tslurm_parse_share(const char *text, unsigned *ppm, tsl_error_t *err);

/* A list of GPU minors as Slurm writes it ("0", "0,1", "" = none; ranges "0-2" too), into
 * out (at most max).  Returns the count, or -1 with err (malformed, a minor >= 64, too many). */
int tslurm_gpu_list_parse(const char *text, int *out, int max, tsl_error_t *err);
/* The variable in which Slurm itself names the GPUs of a step with id step: SLURM_JOB_GPUS for
 * the batch script and the interactive step (slurmd writes it for them; SLURM_STEP_GPUS there
 * is whatever the submitter's environment held), SLURM_STEP_GPUS for a launched step (written
 * at its launch).  Never the other one: a value the job brought must not decide its slice. */
const char *tslurm_gpu_var(uint32_t step);

/* What a node's gres.conf says, for one node. */
typedef struct {
    unsigned gpu[TSLURM_MAX_GPUS];    /* 1 where a Name=gpu File= names the minor */
    unsigned shards[TSLURM_MAX_GPUS]; /* shards of each GPU (Name=shard Count=, split evenly
                                         over its File= list, the remainder to the first) */
} tslurm_gres_t;

/* Parse gres.conf text for node (lines with a NodeName= that does not name it are skipped;
 * NodeName and File take Slurm's bracket ranges: n[1-3], nvidia[0-1]).  Unknown keys and
 * lines of other GRES are ignored, as Slurm's own other plugins would read them.  0, or -1
 * with err and the line number on a malformed line this plugin needs. */
int tslurm_gres_parse(const char *text, const char *node, tslurm_gres_t *g, tsl_error_t *err);

/* Whether a Slurm host expression ("n1", "n[1-3],gpu7") names host: 1 or 0; -1 malformed. */
int tslurm_hostlist_match(const char *expr, const char *host);

/* What a job asked for and what Slurm gave it on this node. */
typedef struct {
    uint64_t mem;       /* --gpu-mem, 0 = not given */
    unsigned share_ppm; /* --gpu-share, 0 = not given */
    int ngpus;          /* GPUs given, in CUDA ordinal order */
    int minor[TSLURM_MAX_GPUS];
    unsigned shards; /* SLURM_SHARDS_ON_NODE, 0 = none (whole GPUs) */
} tslurm_request_t;

/* The slice's limits, per CUDA ordinal. */
typedef struct {
    int n;
    int minor[TSLURM_MAX_GPUS];
    uint64_t mem[TSLURM_MAX_GPUS];  /* bytes */
    unsigned core[TSLURM_MAX_GPUS]; /* percent of the GPU's compute, 100 = all */
} tslurm_limits_t;

/* Work out the limits.  gpu_mem[minor] is each GPU's memory from NVML (0 = unknown).
 *   shards S of a GPU with Count C: memory M*S/C and compute 100*S/C percent by default;
 *     --gpu-share may ask for at most S/C, --gpu-mem for at most M*S/C (Slurm 22.05 gives a
 *     job's shards on a node from one GPU: more than one GPU is refused);
 *   whole GPUs: M and 100 % each; --gpu-share F: F*M and 100*F %; --gpu-mem at most M;
 *     refused on a GPU that gres.conf gives shards (shard jobs may hold parts of it);
 *   no GPU: n = 0; --gpu-mem or --gpu-share is then an error.
 * 0, or -1 with err (one line a user reads in the job's output). */
int tslurm_limits(const tslurm_request_t *r, const tslurm_gres_t *g, const uint64_t *gpu_mem,
                  tslurm_limits_t *out, tsl_error_t *err);

/* The limits file libtessel-cuda reads (TCU_LIMITS_PATH: NAME=value lines): TESSEL_SLICE,
 * TESSEL_CUDA_MEM_LIMIT=0 for any other ordinal, TESSEL_CUDA_MEM_LIMIT_<k>, and
 * TESSEL_CUDA_CORE_LIMIT when below 100 (the interposer takes one compute share for all the
 * slice's devices: the lowest).  Returns the length, or -1 when it does not fit. */
int tslurm_limits_text(const tslurm_limits_t *l, const char *slice, const char *what, char *buf,
                       size_t len);

/* The watchdog's limits ("MINOR=BYTES,...", watchdog.h's tsw_limits_parse syntax; every other
 * GPU of the node gets 0).  Returns the length, or -1 when it does not fit. */
int tslurm_watchdog_spec(const tslurm_limits_t *l, char *buf, size_t len);

/* The step's GPUs for tessel-node-exporter (STEP/gpus, root's, 0644): one line per GPU,
 * "MINOR BYTES PERCENT\n" (NVML index, the slice's memory limit on it, its compute share).  The
 * exporter reports these limits, which the job cannot change, next to the used memory of the
 * job's own slice file.  Returns the length, or -1 when it does not fit. */
int tslurm_gpus_text(const tslurm_limits_t *l, char *buf, size_t len);

/* Read that text back (the exporter): up to max lines into minor, mem and core.  Returns the
 * count, or -1 on a malformed line (a minor >= TSLURM_MAX_GPUS, a percent outside 1..100, a
 * number that does not fit, anything else on the line). */
int tslurm_gpus_parse(const char *text, int *minor, uint64_t *mem, unsigned *core, int max);

#endif
