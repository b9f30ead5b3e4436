/* spawnas.h - start a command as an account for tesseld --slurm (spawnas.c): sbatch, scancel,
 * squeue and the rest (slurm.c, run_cmd), tessel-slurm-submit (slurmsub.c). */
#ifndef TESSEL_DAEMON_SPAWNAS_H
#define TESSEL_DAEMON_SPAWNAS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/daemon.h"
#include "daemon/pwcache.h"

/* Tests only (test_slurmsub): when set, called in the child once its descriptors are 0-3 and
 * before it takes the account's ids (a child that stops there, as one stopped by its account
 * between its setuid and its execve would).  NULL in tesseld. */
extern void (*tessd_spawn_hook)(void);

/* Run argv (argv[0] an absolute path) as pw (NULL: as tesseld itself; its ids are taken only
 * when tesseld is root) with a clean environment (PATH, LC_ALL, the account's HOME, USER,
 * LOGNAME and SHELL, SLURM_CONF), fds[0..2] as its standard descriptors and no other
 * descriptor of tesseld's, not dumpable from its setuid on.  Waits for its execve until
 * deadline (tessd_mono_ms's clock).  0 with *pid (the caller waits for it); else -1 with
 * errno, a line in why and the child killed and waited for: ETIMEDOUT (neither exec'd nor
 * failed by the deadline: stopped, say), ENOENT (the exec failed), EPERM (the ids), E2BIG (too
 * many groups), else the set-up. */
int tessd_spawn_as(const tessd_t *d, const tessd_pw_t *pw, char *const argv[], const int fds[3],
                   int64_t deadline, pid_t *pid, char *why, size_t wlen);

#endif
