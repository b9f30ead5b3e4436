/* ckptslot.h - the copy slots of the GPUs (docs/suspend.md, "Copies per GPU"): how many
 * checkpoint steps may copy a job's device memory over one GPU's bus at a time, and which
 * waiting step goes next.  Pure: no lock, no clock, no I/O, no threads (suspend.c holds its own
 * mutex around every call and does the waiting); unit-tested in src/daemon/test/test_ckptslot.c.
 *
 * A step asks for the slots of all its GPUs at once (tessd_cslots_queue) and then tries to take
 * them (tessd_cslots_try) each time something changed: all of them or none, so a gang job's step
 * never holds one GPU's slot while it waits for another's (no deadlock, whatever order the
 * steps ask in).  A waiter may take its slots when, on each of its GPUs,
 *   - fewer than per_gpu counted holders copy there (a passed holder is not counted: the
 *     process its copy works on is stopped, or it held its slots too long, so it must not hold
 *     the GPU against others: tessd_cslots_pass; passing is for good, a passed holder never
 *     counts or blocks again, and a GPU has at most one passed holder at a time, passed for a
 *     stop or for its hold alike (RV16b M2: a further stopped or overdue holder keeps counting
 *     until that one ends), so stops, continues and long holds make at most per_gpu + 1
 *     copies run on a GPU at any time);
 *   - for a restore, no counted restore is under way there (each restore reads the device's free
 *     memory afresh once it holds its slots, less what a passed restore still holding there
 *     may yet take: suspend.c; two restores never count the same free memory);
 *   - no waiter that ranks before it wants that GPU.
 * Rank: class first (TESSD_CSLOT_PREEMPT before TESSD_CSLOT_PERSON before TESSD_CSLOT_RECLAIM),
 * a waiter that waited long ranking up (tessd_cslots_age: a RECLAIM waiter as a PERSON one,
 * then a PERSON one before every PERSON waiter not aged, never as a PREEMPT one); within a
 * rank the owners take turns, per GPU (a step's turn on a GPU is the one after its owner's
 * last step there, or the turn served there now if that is later: an owner's k-th queued step
 * on a GPU goes after the other owners' (k-1)-th there, and one who queues a step at a time
 * gets no earlier turn for it; a step on several GPUs takes the highest over them, and taking
 * slots moves on only the turns of the GPUs taken, so steps on one GPU never push an owner's
 * turn on another: RV16b M1), then the order of asking; so a preemption's step is served
 * first, one user's many steps do not keep another's waiting (RV16 M1), and a step that wants
 * several GPUs is not passed for ever by steps that want one of them.
 *
 * Tickets are never 0 and never reused.  Prefix tessd_cslots_.
 */
#ifndef TESSEL_DAEMON_CKPTSLOT_H
#define TESSEL_DAEMON_CKPTSLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most GPUs one step asks for: a node's (TSCHED_MAX_NODE_GPUS is 16). */
#define TESSD_CSLOT_MAX_GPUS 16
/* Most copies per GPU --ckpt-copies-per-gpu accepts: more than a handful at once only shares
 * one bus among more copies. */
#define TESSD_CSLOT_MAX_PER_GPU 16

typedef enum {
    TESSD_CSLOT_PREEMPT = 0, /* a preemption's checkpoint: its preemptor waits on it */
    TESSD_CSLOT_PERSON = 1,  /* a person's suspend or resume, tesseld's own restore */
    TESSD_CSLOT_RECLAIM = 2, /* an idle reclamation's checkpoint or restore */
} tessd_cslot_class_t;

typedef struct tessd_cslots tessd_cslots_t;

/* A set of slots, per_gpu (1..TESSD_CSLOT_MAX_PER_GPU) per GPU.  NULL with errno (EINVAL,
 * ENOMEM).  tessd_cslots_free frees it (NULL is fine). */
tessd_cslots_t *tessd_cslots_new(unsigned per_gpu);
void tessd_cslots_free(tessd_cslots_t *s);

/* Most bytes of an owner's name that tell owners apart (a user name: TSTORE_NAME_MAX). */
#define TESSD_CSLOT_OWNER_MAX 32

/* Queue a step that wants the slots of gpus[0..n) (1..TESSD_CSLOT_MAX_GPUS of them, each a
 * node's GPU index below TESSD_CSLOT_MAX_GPUS; duplicates count once), of class cls, a restore or
 * not, of owner (its job's user; NULL: ""; the first TESSD_CSLOT_OWNER_MAX bytes).  arg is the
 * caller's, handed back by tessd_cslots_blockers. Its ticket (> 0), or 0 with errno (EINVAL,
 * ENOMEM). */
uint64_t tessd_cslots_queue(tessd_cslots_t *s, const unsigned *gpus, size_t n,
                            tessd_cslot_class_t cls, bool restore, const char *owner, void *arg);

/* Rank waiter t up one step (it has waited long: suspend.c's CSLOT_AGE_MS): a RECLAIM waiter
 * ranks as a PERSON one, a PERSON one (or a RECLAIM one aged twice) before every PERSON
 * waiter not aged; never as a PREEMPT one.  1 moved, 0 as high as aging goes, -1 EINVAL (no
 * such waiter: unknown, or a holder). */
int tessd_cslots_age(tessd_cslots_t *s, uint64_t t);

/* Take the slots of waiter t if the rules above let it now: 1 taken (t holds them until
 * tessd_cslots_done), 0 not yet; 1 also for a t that holds them already; -1 EINVAL for no such
 * ticket. */
int tessd_cslots_try(tessd_cslots_t *s, uint64_t t);

/* Pass holder t (its copy's process is stopped, or it held its slots too long): its slots no
 * longer count, for good (it never blocks a waiter again, and a later verdict cannot make it
 * count again: RV16 H1's toggling).  Only when no other passed holder holds one of its GPUs
 * (at most one per GPU, whatever each was passed for: RV16b M2), else 0 and it still counts.
 * 1 passed (now or before), 0 not now, -1 EINVAL (no such holder). */
int tessd_cslots_pass(tessd_cslots_t *s, uint64_t t);

/* Whether holder t was passed. */
bool tessd_cslots_passed(const tessd_cslots_t *s, uint64_t t);

/* The holders on the GPUs of t (a waiter or a holder; passed or not): up to max of their
 * tickets in ts and args in args; their number. */
size_t tessd_cslots_blockers(const tessd_cslots_t *s, uint64_t t, uint64_t *ts, void **args,
                             size_t max);

/* End t: its slots are given back, or it stops waiting.  An unknown ticket is ignored. */
void tessd_cslots_done(tessd_cslots_t *s, uint64_t t);

/* How many counted holders copy on gpu now (for tests and the log). */
unsigned tessd_cslots_copying(const tessd_cslots_t *s, unsigned gpu);

#endif
