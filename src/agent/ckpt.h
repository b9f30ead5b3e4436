/* ckpt.h - suspend and resume the GPU state of a job's processes through the CUDA driver's own
 * checkpoint API (cuCheckpointProcess*, driver r570 and later; docs/suspend.md).
 *
 * A suspend locks every CUDA process of the list (its CUDA calls block; its CPU threads go
 * on), then checkpoints each (its device memory goes to host memory and the GPU memory and
 * contexts are released).  A resume restores each (the same devices, the same addresses) and
 * unlocks them all.  The process tree is the caller's to find (tessel-shim knows its job's
 * processes); a pid that is no CUDA process is skipped.
 *
 * Order of calls:
 *
 *     tagent_ckpt_open            once: dlopen the driver, cuInit, look the calls up
 *       tagent_ckpt_suspend       all or nothing
 *       tagent_ckpt_resume        may answer EAGAIN (no room yet): call again later
 *     tagent_ckpt_close
 *
 * Threads: the handle is read-only once tagent_ckpt_open returned it, so several threads may
 * use one handle at the same time on different processes (tesseld runs the steps of different
 * jobs at once: docs/suspend.md, "How tesseld drives it"); the driver's API is per process
 * (each call names its pid, and the calls of different pids do not wait for each other: the
 * fake driver models it so, fake_ckpt.c).  The steps of one process must not overlap: one
 * caller at a time per pid (the driver refuses a step in the wrong state, EBUSY, but two
 * callers interleaving lock and restore would undo each other).  Prefix tagent_ckpt_.
 */
#ifndef TESSEL_AGENT_CKPT_H
#define TESSEL_AGENT_CKPT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "libutil/error.h"

typedef struct tagent_ckpt tagent_ckpt_t;

/* Load the driver `lib` (a path tesseld resolved, or "libcuda.so.1"), call cuInit and look up
 * the checkpoint calls.  Returns a handle (tagent_ckpt_close frees it), or NULL with errno and
 * a line in err: ENOTSUP when the driver has no checkpoint API (a driver older than r570: the
 * symbols are missing, or they answer CUDA_ERROR_NOT_SUPPORTED), ENOENT when the library cannot
 * be loaded, EIO when cuInit fails. */
tagent_ckpt_t *tagent_ckpt_open(const char *lib, tsl_error_t *err);

/* NULL is fine.  The driver stays loaded (a driver is not safely unloadable). */
void tagent_ckpt_close(tagent_ckpt_t *c);

/* Suspend the GPU state of the CUDA processes among pids[0..n): lock each (waiting at most
 * timeout_ms, 0: no limit, for the calls it has in progress), then checkpoint each.  A pid the
 * driver does not know as a CUDA process (gone, or never used CUDA) is skipped.  Returns how
 * many processes were suspended (0: none uses CUDA), or -1 with errno and err (naming the pid
 * and the driver's error), having restored and unlocked every process it had locked or
 * checkpointed, so that a failure leaves the job as it was:
 *   ETIMEDOUT  a lock timed out (a call in progress did not return in time)
 *   ENOTSUP    the driver cannot checkpoint a process (managed memory with r570, ...)
 *   ENOMEM     no host memory for the copy
 *   EBUSY      a process was not RUNNING (locked or checkpointed by someone else)
 *   ECANCELED  the gate gave up (tagent_ckpt_suspend_gated below)
 *   EIO        any other error of the driver */
int tagent_ckpt_suspend(tagent_ckpt_t *c, const pid_t *pids, size_t n, unsigned timeout_ms,
                        tsl_error_t *err);

/* Resume what tagent_ckpt_suspend suspended among pids[0..n): restore each CHECKPOINTED process,
 * then, once none is left checkpointed, unlock each LOCKED one.  Returns how many processes were
 * unlocked, or -1 with errno and err:
 *   EAGAIN  a restore did not fit on its GPU (CUDA_ERROR_OUT_OF_MEMORY): the processes restored
 *           so far stay locked holding their memory, the rest stay checkpointed; call again
 *           when there is room
 *   EIO     any other error of the driver (a process left FAILED by the driver included) */
int tagent_ckpt_resume(tagent_ckpt_t *c, const pid_t *pids, size_t n, tsl_error_t *err);

/* The same two with each process's identity: starts[i] the start time of the process pids[i]
 * named when the pids were listed (field 22 of /proc/PID/stat; 0: it was gone already).  Right
 * before each call of the driver on pids[i] (its state, lock, checkpoint, restore, unlock) its
 * start time is read again; a pid whose process has exited or whose number now names another
 * process is left alone (a step can wait long on one process, a stopped one holding its lock,
 * while the job cycles pids until another account's CUDA process gets the number of one of its
 * own).  A start time that cannot be read for another reason fails the call (EIO).  Between
 * the check and the driver's call the window is a few microseconds. */
int tagent_ckpt_suspend_ids(tagent_ckpt_t *c, const pid_t *pids, const uint64_t *starts, size_t n,
                            unsigned timeout_ms, tsl_error_t *err);
int tagent_ckpt_resume_ids(tagent_ckpt_t *c, const pid_t *pids, const uint64_t *starts, size_t n,
                           tsl_error_t *err);

/* What a step's copy works on now, for a watcher in another thread (tesseld judges whether a
 * copy is stalled by that process alone, never by the job's other processes: RV16 H1): i + 1
 * while the driver's checkpoint or restore of pids[i] is under way, 0 otherwise.  Stored
 * atomically by the calls below (cur NULL: not published). */
typedef _Atomic size_t tagent_ckpt_cur_t;

/* tagent_ckpt_resume_ids publishing its restores in *cur. */
int tagent_ckpt_resume_watched(tagent_ckpt_t *c, const pid_t *pids, const uint64_t *starts,
                               size_t n, tagent_ckpt_cur_t *cur, tsl_error_t *err);

/* tagent_ckpt_suspend_ids with a gate between its two phases: once every CUDA process of the
 * list is locked (the phase a stopped process can hold for as long as it stays stopped) and
 * before the first checkpoint (the copy of the device memory), gate(arg) is called, when at
 * least one process was locked; it may wait (tesseld takes its GPUs' copy slots there:
 * docs/suspend.md, "Copies per GPU").  It returns 0 to go on, or -1 to give up: the processes
 * are then unlocked and the call fails with ECANCELED.  gate NULL: no gate.  Its checkpoints
 * are published in *cur (NULL: not). */
typedef int (*tagent_ckpt_gate_f)(void *arg);
int tagent_ckpt_suspend_gated(tagent_ckpt_t *c, const pid_t *pids, const uint64_t *starts, size_t n,
                              unsigned timeout_ms, tagent_ckpt_gate_f gate, void *arg,
                              tagent_ckpt_cur_t *cur, tsl_error_t *err);

#endif
