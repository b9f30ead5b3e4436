/* jobenv.h - what a job's submitted environment may hold: the one rule that `tessel run` (which
 * sends the caller's environment, as `sbatch --export=ALL` does) and tesseld (which refuses a
 * submission that breaks it) share.
 *
 * Tessel owns the variables that place the job on its GPUs and name its slice; a submitted
 * value for one of them would be overwritten anyway (or linger beside Tessel's, for a device
 * the job does not have), so tesseld refuses it and the CLI leaves it out of its copy of the
 * caller's environment.  HOME, USER, LOGNAME and SHELL may be submitted: tesseld replaces them
 * with the account's when it runs the job as a system account.  Everything else (LD_PRELOAD,
 * LD_LIBRARY_PATH, LD_AUDIT, the compute share's TESSEL_CUDA_CORE_*) is the job's: it is
 * applied only in the job's own process after the uid change, and the interposer takes its
 * limits from a root-owned file that the environment can only lower (docs/security.md).
 */
#ifndef TESSEL_UTIL_JOBENV_H
#define TESSEL_UTIL_JOBENV_H

#include <stddef.h>

/* Most variables a job's submitted environment may hold: a login shell with modules, conda and
 * CUDA set up has 100 to 300; four times that leaves room without letting one job's record
 * grow without bound. */
#define TSL_ENV_MAX_VARS 1024
/* Most bytes they may take together (each NAME=VALUE plus a NUL, as execve counts them): far
 * above a real environment (a few KiB), below tesseld's default request body limit (64 KiB) so
 * that the limit is met with this message rather than a bare 413 on the body. */
#define TSL_ENV_MAX_BYTES (48u << 10)

/* NULL when a job may set name in its submitted environment; else why not, as a phrase that
 * completes "env 'NAME': ..." ("set by Tessel inside the job"). */
const char *tsl_env_reserved(const char *name);

#endif
