/* retention.h - --job-log-retention: the directories jobs/<id> (a job's stdout, stderr,
 * their time index, its exit record, whatever the job left there) of jobs that ended longer
 * ago than the retention are removed, so that the data directory cannot grow without bound.
 *
 * tessd_retention_sweep runs on the main thread (main.c: at the first pass, after a reload,
 * then hourly; never in a request's thread): it lists jobs/ without the lock, asks the store
 * which of those jobs ended before the cutoff under the lock (a few hundred at a time), and
 * removes their directories without the lock.  The store keeps the jobs themselves; their
 * logs answer as empty. */
#ifndef TESSEL_DAEMON_RETENTION_H
#define TESSEL_DAEMON_RETENTION_H

#include <stdint.h>

#include "daemon/daemon.h"

/* Most directories one sweep removes; a sweep that reaches it asks for another soon. */
#define TESSD_RETENTION_BATCH 1000

/* Remove the job directories of jobs that ended before now_ms - d->job_log_retention_s.
 * Returns the number removed (its log line is written), TESSD_RETENTION_BATCH when more may
 * be left, or -1 after a logged error (the next sweep tries again). */
int tessd_retention_sweep(tessd_t *d, int64_t now_ms);

/* Remove dirfd/name and everything below it without following a symbolic link (a job's user
 * owns its directory and may have left links to files of others in it).  Directories deeper
 * than 64 levels are left.  0, or -1 with errno. */
int tessd_remove_tree(int dirfd, const char *name);

#endif
