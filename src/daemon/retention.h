/* retention.h - --job-log-retention: the directories jobs/<id> (a job's stdout, stderr,
 * their time index, whatever the job left there) of jobs that ended longer ago than the
 * retention are removed, so that the data directory cannot grow without bound.
 *
 * A sweep runs on the main thread, never in a request's thread, in steps between the
 * scheduling passes (main.c calls tessd_retention_run at each turn of its loop):
 *   1. begin (at the first pass, after a reload, then hourly): list jobs/ without the lock, ask
 *      the store which of those jobs ended before the cutoff under the lock (a few hundred at a
 *      time), keep at most TESSD_RETENTION_BATCH of them;
 *   2. steps, TESSD_RETENTION_STEP_GAP_MS apart: each removes at most TESSD_RETENTION_STEP
 *      entries (files, links, directories) of those trees, without the lock, and goes on from
 *      there at the next step (a removal is resumable: what was removed is gone, what is left
 *      is read again).  A job may leave millions of files in its directory: their removal is
 *      spread over as many steps as it takes, and the passes (job starts and ends, time limits,
 *      cancels) run between them as usual;
 *   3. the end of the sweep is logged; when the batch was full, the next begins at once.
 * The store keeps the jobs themselves; their logs answer as empty.
 *
 * Nothing is followed or crossed: a job's user owns its directory and may have left links to
 * files of others in it, or mounted a file system of theirs over it or below it (FUSE, whose
 * server need not answer): links are removed themselves, and a mount point anywhere (the job's
 * directory itself included) is left with what is above it, never entered (nomount.h). */
#ifndef TESSEL_DAEMON_RETENTION_H
#define TESSEL_DAEMON_RETENTION_H

#include <stdint.h>

#include "daemon/daemon.h"

/* Most directories one sweep takes; a sweep that reaches it is followed by another at once. */
#define TESSD_RETENTION_BATCH 1000
/* Most entries one step removes (or tries to).  What it bounds is how long a step holds the
 * main thread, and so how late a pass can be: an unlink of an empty file takes 3-10 us on
 * ext4 and tmpfs (here: 200,000 in 1.3 s, rm -rf on tmpfs, the development VM), so 2,000 are
 * 5-20 ms, about the cost of a pass with a few hundred running jobs. */
#define TESSD_RETENTION_STEP 2000
/* Time between two steps: at most one step per 10 ms leaves the main thread half of its time
 * or more for passes and signals; 200,000 files take 1.5-3 s of steps. */
#define TESSD_RETENTION_STEP_GAP_MS 10
/* How often a sweep begins when none is due sooner (milliseconds). */
#define TESSD_RETENTION_PERIOD_MS (3600 * 1000)

/* One turn of the retention, main thread, lock not held: begins a sweep when one is due (mono
 * is tessd_mono_ms's clock), else takes one step of the sweep under way.  Returns how many ms
 * may pass before the next call is useful (the main loop polls no longer than that). */
int64_t tessd_retention_run(tessd_t *d, int64_t mono);
/* A sweep begins at the next call (a reload: the retention may have changed). */
void tessd_retention_due(tessd_t *d);
/* Whether a sweep is under way (steps left), for tests and logs. */
bool tessd_retention_busy(const tessd_t *d);
/* Forget the sweep's state (tesseld stops). */
void tessd_retention_free(tessd_t *d);

/* One step of the removal of dirfd/name and everything below it: removes (or tries) at most
 * *budget entries, lowering *budget by each, and adds those removed to *removed.  Follows no
 * symbolic link and crosses no mount point (a mounted file system and what is above it are
 * left: EXDEV, EBUSY).  Directories deeper than 64 levels are left.  1: gone (or was not
 * there); 0: *budget ran out first (call again: it goes on from what is left); -1 with errno:
 * an entry could not be removed (the others were, as far as the budget went). */
int tessd_remove_tree_step(int dirfd, const char *name, long *budget, long *removed);

/* The whole of it at once (no budget): 0, or -1 with errno. */
int tessd_remove_tree(int dirfd, const char *name);

#endif
