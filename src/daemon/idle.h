/* idle.h - idle reclamation's decisions (issue 21 item 3; docs/suspend.md, "Idle
 * reclamation"): which idle time applies to a job, whether a job has been idle long enough
 * to give its GPU memory back, and the setting's words.  Pure: no I/O, no clock, no tesseld
 * state (the tick in suspend.c gathers the facts and carries the verdict out).
 *
 * What counts as GPU work: a kernel launch, a copy or a memset of any process of the job
 * through the interposer (the slice header's work word, libshm/shm.h).  A process that merely holds
 * device memory, or waits in the CPU, does no GPU work.
 */
#ifndef TESSEL_DAEMON_IDLE_H
#define TESSEL_DAEMON_IDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "libstore/store.h"
#include "libutil/error.h"

/* Longest idle time a queue or a job may ask for: 30 days (a job idle that long is one that
 * holds its memory for ever, which the setting exists to end). */
#define TESSD_IDLE_RECLAIM_MAX (30 * 86400)

/* The idle time in effect, in seconds (0: never): the job's own (own_s > 0), at least own_min_s
 * (tesseld's --idle-reclaim-min: a job's own time below it, stored before the floor was raised,
 * counts as the floor), never (own_s -1), or its queue's (own_s 0: queue_s, 0 or less: never;
 * an admin's setting, not raised to the floor). */
int64_t tessd_idle_effective(int64_t own_s, int64_t queue_s, int64_t own_min_s);

typedef enum {
    TESSD_IDLE_OFF = 0, /* no idle time applies: not watched (*since reset to 0) */
    TESSD_IDLE_ACTIVE,  /* work seen (or the first look): the idle time starts again now */
    TESSD_IDLE_WAIT,    /* idle, not long enough yet */
    TESSD_IDLE_RECLAIM, /* idle for idle_s or more: give its GPU memory back */
} tessd_idle_verdict_t;

/* One look at a running job: idle_s the time in effect (tessd_idle_effective), work whether
 * it did GPU work since the last look, *since_ms when its idleness began (0: not watched
 * yet; updated), now_ms the monotonic clock.  Whatever the verdict, a job is reclaimed only
 * after a whole idle_s without work seen since the first look. */
tessd_idle_verdict_t tessd_idle_look(int64_t idle_s, bool work, int64_t *since_ms, int64_t now_ms);

/* The idle time in effect for the jobs of queue name, among the nq queues qs (docs/suspend.md,
 * "The setting"): its own (idle_reclaim_s >= 0: seconds, 0 never), else its parent's in
 * effect, up the tree; a top-level queue that inherits, or no such queue: 0 (never).  *from
 * (may be NULL): the name of the queue whose setting it is (name itself, an ancestor; a
 * setting of never counts), or "" when none on the path sets one.  A parent missing from qs, or a
 * loop (a store edited by hand), ends the walk as a top-level queue would.  Pure. */
int64_t tessd_idle_queue(const tstore_queue_t *qs, size_t nq, const char *name, const char **from);

/* A queue's own idle time as stored (idle_reclaim_s: >= 0 set, 0 never; < 0 its parent's): the
 * setting tessd_idle_queue inherits down the tree (daemon/queuetree.h). */
int64_t tessd_idle_own(const tstore_queue_t *q);

/* May a job whose own idle time is own_s (as stored: > 0 seconds, -1 never, 0 its queue's) be
 * submitted to a queue whose idle time in effect is queue_s (tessd_idle_queue; 0: none) by a
 * caller who is not an admin?  The queue's time is a maximum for its jobs (the review RV15b's
 * L4): a job may ask a shorter one (the floor is checked apart), its queue's, or anything when
 * the queue sets none; not a longer one nor never. */
bool tessd_idle_within_queue(int64_t own_s, int64_t queue_s);

/* A setting as people write it (--idle-reclaim, the API's strings): "off" or "0" (never), a
 * duration such as "30m", "1h30m" or "45s" (libutil/duration.h), at most
 * TESSD_IDLE_RECLAIM_MAX.  *secs: 0 for never, else the seconds.  0, or -1 with errno EINVAL or
 * ERANGE and one line in err (naming the value), *secs untouched. */
int tessd_idle_parse(const char *s, int64_t *secs, tsl_error_t *err);

#endif
