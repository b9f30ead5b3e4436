/* fake_state.h - device state of the fake GPUs, optionally shared between processes.
 *
 * TEST DOUBLES ONLY.  What several processes must agree on lives here: each
 * device's used memory, its simulated timeline (kernels serialise on a device)
 * and busy time, and a table of the processes using the devices.  With
 * TESSEL_FAKE_STATE=PATH the state is a file mapped MAP_SHARED by every
 * process (fake libcuda and fake NVML alike), guarded by a robust
 * process-shared mutex; without it, an anonymous mapping private to the
 * process.  A process that dies without giving its memory back (crash,
 * _exit) is noticed by tfake_state_reap, which returns its memory.
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

typedef struct {
    uint64_t start_ns, end_ns;
} tfake_interval_t;

typedef struct {
    uint64_t total;     /* bytes */
    uint64_t used;      /* bytes charged by all processes */
    uint64_t tail_ns;   /* CLOCK_MONOTONIC end of the last scheduled kernel */
    uint64_t busy_ns;   /* simulated kernel time scheduled so far */
    uint64_t kernels;   /* kernels scheduled so far */
    uint32_t ring_next; /* next slot of ring */
    uint32_t pad_;
    tfake_interval_t ring[TFAKE_RING];
} tfake_devstate_t;

typedef struct {
    pid_t pid; /* 0: free slot */
    uint32_t pad_;
    uint64_t used[TFAKE_MAX_DEVICES];    /* bytes this process has charged */
    uint64_t busy_ns[TFAKE_MAX_DEVICES]; /* simulated kernel time it scheduled */
    uint32_t ctxs[TFAKE_MAX_DEVICES];    /* live contexts it holds */
    /* Checkpoint control (fake_ckpt.c): a controlling process posts a request here under the
     * lock and wakes ck_req; the process's service thread answers and wakes ck_done (both are
     * futex words, so the two sleep between requests). */
    uint32_t ck_state; /* CUprocessState of the process */
    int32_t ck_tid;    /* its service ("restore") thread; 0: it serves no requests */
    uint32_t ck_req;   /* sequence number of the last request posted */
    uint32_t ck_done;  /* sequence number of the last request answered */
    uint32_t ck_op;    /* what request ck_req asks (TFAKE_CK_*) */
    uint32_t ck_arg;   /* its argument: the lock's timeout in ms */
    int32_t ck_result; /* CUresult of the answer to ck_done */
    int32_t ck_owner;  /* pid of the controller holding the request fields, 0: none */
    uint64_t ck_released[TFAKE_MAX_DEVICES]; /* bytes the last checkpoint gave back */
    /* Of used[]: managed memory resident on the device, which NVML's per-process figure leaves
     * out as the real driver's does (README "Managed memory"). */
    uint64_t managed[TFAKE_MAX_DEVICES];
} tfake_procstate_t;

/* Requests of the checkpoint protocol (tfake_procstate_t.ck_op). */
enum { TFAKE_CK_LOCK = 1, TFAKE_CK_CHECKPOINT, TFAKE_CK_RESTORE, TFAKE_CK_UNLOCK };

typedef struct {
    uint64_t magic;   /* TFAKE_STATE_MAGIC once initialised */
    uint32_t version; /* TFAKE_STATE_VERSION */
    int32_t ndev;
    pthread_mutex_t lock; /* robust, process-shared */
    tfake_devstate_t dev[TFAKE_MAX_DEVICES];
    tfake_procstate_t proc[TFAKE_MAX_PROCS];
} tfake_shared_t;

#define TFAKE_STATE_MAGIC   0x54464b4553544154ull /* "TFKESTAT" */
#define TFAKE_STATE_VERSION 2                     /* 2: checkpoint control */

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

/* Under the lock: the slot of process pid, or NULL (never claims one). */
tfake_procstate_t *tfake_state_find(tfake_shared_t *s, pid_t pid);

/* Under the lock: free the slots of processes that no longer exist,
 * returning what they had charged. */
void tfake_state_reap(tfake_shared_t *s);

/* Under the lock: drop this process's slot, returning what it still has
 * charged (used at exit and by tests' reset). */
void tfake_state_release_proc(tfake_shared_t *s);

/* Under the lock: charge `bytes` on device `dev` to this process; fails
 * (returns -1) without side effects when used + bytes > total. */
int tfake_state_charge(tfake_shared_t *s, int dev, uint64_t bytes);
/* Gives back at most what this process has charged on dev (a checkpointed process has
 * given its memory back already: what it frees afterwards is no one else's). */
void tfake_state_uncharge(tfake_shared_t *s, int dev, uint64_t bytes);

/* Under the lock: schedule a kernel of `dur_ns` on device `dev` after
 * `after_ns` (the stream's tail): start = max(now, after, device tail).
 * Records busy time for the device and this process.  Returns its end. */
uint64_t tfake_state_schedule(tfake_shared_t *s, int dev, uint64_t after_ns, uint64_t dur_ns);

/* Under the lock: percent of the last TFAKE_UTIL_WINDOW_NS the device was
 * busy (simulated), 0..100. */
unsigned tfake_state_util(tfake_shared_t *s, int dev);

/* CLOCK_MONOTONIC in ns. */
uint64_t tfake_now_ns(void);

/* Sleep until CLOCK_MONOTONIC reaches t_ns (returns at once if past). */
void tfake_sleep_until(uint64_t t_ns);

#endif
