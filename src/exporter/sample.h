/* sample.h - what tessel-node-exporter measures on a Slurm node (docs/slurm-backend.md, "The
 * cluster's GPUs"): the node's GPUs from NVML and the Slurm jobs' slices from the SPANK
 * plugin's state directory (docs/slurm.md, "Layout on a node").
 *
 * A job's slice on a GPU is made of two sources of different trust:
 *   STATEDIR/JOBID/STEP/gpus  root's (the plugin writes it): the GPUs of each step by NVML
 *                             index, the slice's memory limit and compute share on each;
 *   STATEDIR/JOBID/slice      the job user's own file (its processes' interposer charges it):
 *                             the memory they hold, per device UUID.
 * The limits come from root's files only; the used figure is the job's own count (as tesseld's
 * per-slice series on one box, docs/metrics.md).  The slice file is read the way tesseld reads
 * a job's slice (libshm's tshm_open_ro: opened O_NONBLOCK, a regular file only, copied with
 * pread, never mapped, no lock), because its owner may truncate it, lock it or fill it with
 * anything at any moment: a truncated or garbage file makes that job's used figure 0, never a
 * failure of the sample; nothing read from it but numbers is served. */
#ifndef TESSEL_EXPORTER_SAMPLE_H
#define TESSEL_EXPORTER_SAMPLE_H

#include "agent/gpu.h"
#include "libnodefig/nodefig.h"

/* Jobs' directories read per sample at most (a node runs far fewer jobs at once). */
#define TEX_MAX_JOBS 1024
/* Step directories of one job read at most (each srun of a job is one). */
#define TEX_MAX_STEPS 256
/* Largest STEP/gpus file read: a line is at most 26 bytes, 64 GPUs 1.7 KiB. */
#define TEX_GPUS_FILE_MAX 4096

/* The slices of the jobs in statedir onto the GPUs gpus[0..ngpus) (NVML's inventory), added to
 * out (out->gpus must already hold those GPUs: a slice on a GPU not listed is left out).
 * Entries that are not what the plugin writes (not a number, not root's, a symlink, a file
 * that is not a slice file) are skipped.  Returns the number of jobs read, or -1 with errno
 * when statedir itself cannot be read (ENOENT: no job has run here since boot: callers count
 * it as no job). */
int tex_read_slices(const char *statedir, const tagent_gpu_t *gpus, int ngpus, tnf_node_t *out);

#endif
