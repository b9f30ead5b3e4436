/* fake_state.h - device state of the fake GPUs, optionally shared between processes.
 *
 * TEST DOUBLES ONLY.  What several processes must agree on lives here: each
 * device's used memory, its simulated timeline (time-sliced between
 * processes: tfake_state_advance) and busy time, and a table of the processes using the devices.
 * With TESSEL_FAKE_STATE=PATH the state is a file mapped MAP_SHARED by every process (fake libcuda
 * and fake NVML alike), guarded by a robust process-shared mutex; without it, an anonymous mapping
 * private to the process.  A process that dies without giving its memory back (crash, _exit) is
 * noticed by tfake_state_reap, which returns its memory.
 *
 * Lock order: a library's own lock first, then tfake_state_lock.  Never sleep
 * while holding it.
 */
#ifndef TESSEL_FAKE_STATE_H
#define TESSEL_FAKE_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "fake_config.h"

/* Processes that can hold the devices at once (the interposer tests race 8;
 * a slot of a dead process is reclaimed when a new one attaches). */
#define TFAKE_MAX_PROCS 64
/* Busy intervals remembered per device for NVML utilisation (adjacent kernels
 * merge into one interval, so this covers far more than 256 kernels). */
#define TFAKE_RING 256
/* NVML utilisation is the busy fraction of this trailing window. */
#define TFAKE_UTIL_WINDOW_NS 1000000000ull
/* Run segments remembered per device (who ran when, from which position of
 * its queue), to timestamp events after the fact.  A segment is at least a
 * timeslice or a whole busy period of one process, so 8192 cover several
 * seconds of contention: far longer than any event stays unread in tests. */
#define TFAKE_SEGS 8192

typedef struct {
    uint64_t start_ns, end_ns;
} tfake_interval_t;

/* One process's run on a device: from start_ns to end_ns it executed its
 * queue from position pos0 (ns of its kernel time done before) on. */
typedef struct {
    uint64_t start_ns, end_ns, pos0;
    int32_t pid;
    uint32_t pad_;
} tfake_seg_t;

typedef struct {
    uint64_t total;     /* bytes */
    uint64_t used;      /* bytes charged by all processes */
    uint64_t tail_ns;   /* CLOCK_MONOTONIC end of the last scheduled kernel */
    uint64_t busy_ns;   /* simulated kernel time scheduled so far */
    uint64_t kernels;   /* kernels scheduled so far */
    uint32_t ring_next; /* next slot of ring */
    uint32_t pad_;
    tfake_interval_t ring[TFAKE_RING];
    /* The time-sliced timeline (tfake_state_advance). */
    uint64_t sim_ns;         /* computed up to this CLOCK_MONOTONIC time */
    int32_t owner;           /* slot that runs (or ran last), -1: none yet */
    uint32_t seg_next;       /* next slot of seg */
    uint64_t slice_used_ns;  /* the owner's run time in its current slice */
    uint64_t switch_left_ns; /* rest of the context switch in progress */
    uint64_t switches;       /* context switches so far */
    uint64_t switch_ns;      /* device time they took */
    tfake_seg_t seg[TFAKE_SEGS];
} tfake_devstate_t;

typedef struct {
    pid_t pid; /* 0: free slot */
    uint32_t pad_;
    uint64_t used[TFAKE_MAX_DEVICES];    /* bytes this process has charged */
    uint64_t busy_ns[TFAKE_MAX_DEVICES]; /* simulated kernel time it scheduled */
    uint32_t ctxs[TFAKE_MAX_DEVICES];    /* live contexts it holds */
    /* Its queue on each device, in ns of kernel time: work submitted up to
     * position queued, executed up to run (queued - run is its backlog). */
    uint64_t queued_ns[TFAKE_MAX_DEVICES];
    uint64_t run_ns[TFAKE_MAX_DEVICES];
} tfake_procstate_t;

typedef struct {
    uint64_t magic;   /* TFAKE_STATE_MAGIC once initialised */
    uint32_t version; /* TFAKE_STATE_VERSION */
    int32_t ndev;
    pthread_mutex_t lock;  /* robust, process-shared */
    uint64_t timeslice_ns; /* the creator's TESSEL_FAKE_TIMESLICE_US, for all */
    uint64_t ctxswitch_ns; /* the creator's TESSEL_FAKE_SWITCH_US, for all */
    tfake_devstate_t dev[TFAKE_MAX_DEVICES];
    tfake_procstate_t proc[TFAKE_MAX_PROCS];
} tfake_shared_t;

#define TFAKE_STATE_MAGIC   0x54464b4553544154ull /* "TFKESTAT" */
#define TFAKE_STATE_VERSION 2

/* Map the state (cfg->state_path, or anonymous when empty).  An existing file
 * must describe the same devices (count and memory sizes) or this fails.
 * Returns the mapping, or NULL with errno and a line in err. */
tfake_shared_t *tfake_state_open(const tfake_config_t *cfg, tsl_error_t *err);

/* Unmap (NULL is fine).  Does not release the caller's process slot. */
void tfake_state_close(tfake_shared_t *s);

void tfake_state_lock(tfake_shared_t *s);
void tfake_state_unlock(tfake_shared_t *s);

/* Under the lock: this process's slot (claimed on first call; slots of dead
 * processes are reclaimed first, their memory returned to the devices).
 * NULL when the table is full. */
tfake_procstate_t *tfake_state_proc(tfake_shared_t *s);

/* Under the lock: free the slots of processes that no longer exist,
 * returning what they had charged. */
void tfake_state_reap(tfake_shared_t *s);

/* Under the lock: drop this process's slot, returning what it still has
 * charged (used at exit and by tests' reset). */
void tfake_state_release_proc(tfake_shared_t *s);

/* Under the lock: charge `bytes` on device `dev` to this process; fails
 * (returns -1) without side effects when used + bytes > total. */
int tfake_state_charge(tfake_shared_t *s, int dev, uint64_t bytes);
void tfake_state_uncharge(tfake_shared_t *s, int dev, uint64_t bytes);

/* Under the lock: compute device dev's timeline up to now.  The device
 * time-slices between processes as a real GPU does between contexts: each
 * process has one queue per device (its kernels run in submission order);
 * the process that owns the device runs its queue for up to a timeslice
 * (timeslice_ns of its own run time), then, if another process has work, the
 * device switches to the next one round-robin (by slot), which costs
 * ctxswitch_ns during which nothing runs; a process whose queue empties
 * gives the device to the next one at once.  A process alone runs without
 * switches, so single-process timing is exactly the serial timeline.
 * Arrivals are the host's calls: work submitted at time t counts from t. */
void tfake_state_advance(tfake_shared_t *s, int dev);

/* Under the lock: queue a kernel of dur_ns for this process on device dev
 * (after advancing the timeline to now).  Records busy time (scheduled) for
 * the device and this process.  Returns the kernel's end as a position in
 * this process's queue on the device (compare with tfake_state_done), or 0
 * when the process table is full (the kernel then takes no time). */
uint64_t tfake_state_submit(tfake_shared_t *s, int dev, uint64_t dur_ns);

/* Under the lock, after tfake_state_advance: this process's executed
 * position on device dev (its queue is done up to there). */
uint64_t tfake_state_done(tfake_shared_t *s, int dev);

/* Under the lock, after tfake_state_advance: when this process's queue on
 * dev reached position pos (pos <= tfake_state_done), CLOCK_MONOTONIC ns.
 * Older than the segment history (TFAKE_SEGS): the oldest time known. */
uint64_t tfake_state_when(tfake_shared_t *s, int dev, uint64_t pos);

/* Under the lock: percent of the last TFAKE_UTIL_WINDOW_NS the device was
 * busy (simulated), 0..100. */
unsigned tfake_state_util(tfake_shared_t *s, int dev);

/* CLOCK_MONOTONIC in ns. */
uint64_t tfake_now_ns(void);

/* Sleep until CLOCK_MONOTONIC reaches t_ns (returns at once if past). */
void tfake_sleep_until(uint64_t t_ns);

#endif
