/* shm.h - the slice accounting file shared by libtessel-cuda and tesseld.
 *
 * A slice is a set of processes that share one GPU memory limit per device.
 * Its state lives in one file (TESSEL_SLICE names it; tmpfs such as /dev/shm
 * or /run is the intended home) or, for a process that is a slice of its own,
 * in an anonymous memfd with the same layout.  Every process that attaches to
 * the same file shares the same limits and the same used counters.
 *
 * Layout (version TSHM_VERSION, all little-endian native integers):
 *
 *   offset 0                 struct tshm_header   (TSHM_HEADER_SIZE bytes)
 *   header.devices_offset    TSHM_MAX_DEVICES x struct tshm_device_rec
 *   header.procs_offset      header.proc_cap  x struct tshm_proc_rec
 *
 * The process table grows (the file is extended and proc_cap doubled under
 * the file lock), so there is no fixed cap on processes.  Version 2 added the
 * compute side (shares, priorities, the pacing bucket, busy time per device
 * and process, suspend/resume: docs/compute-shares.md); records keep reserved
 * space for later versions; readers must check magic, version and the record
 * sizes in the header.
 *
 * Concurrency.  Hot-path operations (tshm_reserve, tshm_release) are lock-free
 * atomics on the mapped file: a compare-and-swap loop on the device's used
 * counter admits an allocation only if used + bytes <= limit, so any number of
 * racing processes never pass the limit.  Slow-path operations are
 * lock-free between processes too, except growing the process table and
 * adding a device record, which take flock(2) on the file: a new file is
 * created complete and link()ed into place; process records are claimed and
 * reclaimed by compare-and-swap of their state.
 *
 * Dead processes.  Each process slot records pid and the process start time
 * (field 22 of /proc/PID/stat), so a reused pid is not mistaken for the dead
 * owner.  tshm_reclaim() returns the usage of dead owners to the devices; the
 * interposer calls it at attach and when an allocation would fail.  All
 * processes of a slice must share one PID namespace (tesseld starts them so).
 */
#ifndef TESSEL_SHM_H
#define TESSEL_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "libutil/error.h"

/* "TSLSLICE" read as a little-endian 64-bit integer. */
#define TSHM_MAGIC   0x4543494c534c5354ull
#define TSHM_VERSION 2u /* 2: compute shares, suspend, busy time (issue 6) */
/* 64 devices: one host holds at most 16 GPUs today, and 8 GPUs split into 7
 * MIG instances each is 56 CUDA devices.  A bigger host needs a new layout
 * version, which readers detect. */
#define TSHM_MAX_DEVICES 64
/* Unlimited device: the limit value that admits everything. */
#define TSHM_UNLIMITED UINT64_MAX
/* Initial process table capacity; it doubles whenever it is full. */
#define TSHM_INITIAL_PROCS 64

typedef struct tshm tshm_t;

/* One device of a slice, as tesseld or a test sees it. */
typedef struct {
    unsigned char uuid[16];    /* CUDA device UUID (all zero when unknown) */
    uint64_t limit;            /* bytes; TSHM_UNLIMITED when no limit */
    uint64_t used;             /* bytes charged by all live processes */
    uint64_t ctx_cost;         /* measured bytes per primary context (0: not measured) */
    uint64_t ctx_cost_created; /* measured bytes per cuCtxCreate context (0: not measured) */
    unsigned core_limit;       /* percent of the device's compute, 0 = no limit */
    unsigned core_mode;        /* enum tshm_core_mode */
    unsigned core_prio;        /* enum tshm_core_prio */
    unsigned rate_ppm;         /* share the pacing applies now (ppm of the device) */
    uint64_t busy_ns;          /* measured device time of the slice's work */
    uint64_t launches;         /* launches counted */
    uint64_t waited_ns;        /* time launches were held back by the pacing */
    uint64_t host_limit;       /* bytes the slice may spill into host memory (0: off) */
    uint64_t host_used;        /* bytes spilled into host memory (oversubscription) */
} tshm_device_info_t;

/* One live (or not yet reclaimed) process of a slice. */
typedef struct {
    pid_t pid;
    uint64_t start_time;                  /* clock ticks since boot, /proc/PID/stat field 22 */
    char comm[16];                        /* process name, NUL-terminated */
    uint64_t used[TSHM_MAX_DEVICES];      /* bytes charged per device index */
    uint64_t busy_ns[TSHM_MAX_DEVICES];   /* measured device time per device index */
    uint64_t host_used[TSHM_MAX_DEVICES]; /* bytes spilled into host memory per device */
    unsigned inflight;                    /* measured launches not yet seen complete */
    unsigned waiting;                     /* threads held by a suspend */
} tshm_proc_info_t;

/* Compute share of a slice device (docs/compute-shares.md). */
enum tshm_core_mode {
    TSHM_CORE_STRICT = 0, /* the share is a cap, even on an idle GPU */
    TSHM_CORE_SHARED = 1  /* work-conserving: idle capacity may be used */
};
enum tshm_core_prio { TSHM_PRIO_LOW = 0, TSHM_PRIO_NORMAL = 1, TSHM_PRIO_HIGH = 2 };

/* Run state of a slice (tshm_suspend / tshm_resume). */
enum tshm_run { TSHM_RUNNING = 0, TSHM_SUSPENDED = 1 };

/* ---- attach (interposer) ------------------------------------------------ */

/* Open or create the slice file at path, or create a private anonymous slice
 * when path is NULL.  A new file is created with mode 0666 & ~umask,
 * initialised under a temporary name (PATH.XXXXXX, same directory) and
 * link()ed into place; an existing empty file is initialised under flock;
 * an existing one must carry the right magic and version.  Returns a handle
 * (free with tshm_close), or NULL with errno set (EINVAL bad file, EPROTO
 * wrong version, or the open/mmap errno) and one line in err.  Does not
 * register the calling process: see tshm_register. */
tshm_t *tshm_attach(const char *path, tsl_error_t *err);

/* Create a complete slice file at path, owned by uid:gid with mode (root making a job's slice:
 * the SPANK plugin), without mapping it: header written with pwrite under a temporary name
 * beside it (PATH.XXXXXX), then link()ed into place, so that no process ever sees a half-made
 * file.  0, or -1 with errno (EEXIST: path exists, left as it is) and one line in err. */
int tshm_create(const char *path, uid_t uid, gid_t gid, mode_t mode, tsl_error_t *err);

/* Claim a process slot for the calling process (getpid, start time, comm),
 * growing the table when it is full.  Reclaims first the slots whose pid no
 * longer exists (kill(pid, 0): cheap enough for hundreds of processes
 * starting at once; tshm_reclaim also catches reused pids), and the slots
 * of the calling pid that another handle holds: those of the process's
 * earlier images (it exec'd; the driver freed their memory), so that an
 * exec'd image shares its parent's slice without being charged twice.  One
 * handle per slice per process, then.  Idempotent for the same pid.  Must be called again in a
 * forked child (tshm_atfork_child arranges that); returns 0 or -1 with errno and err. */
int tshm_register(tshm_t *s, tsl_error_t *err);

/* Call in a fork child (from a pthread_atfork handler): forgets the parent's
 * slot without touching it, and makes the next slow-path call reopen the file
 * so that the child's flock is its own.  Makes no syscall. */
void tshm_atfork_child(tshm_t *s);

/* Whether the calling process currently owns a slot (0/1).  No syscall. */
int tshm_registered(const tshm_t *s);

/* Find the device record with this uuid, or claim a free one, and return its
 * index.  A new record gets limit; an existing record keeps the lower of its
 * limit and limit (a slice never silently grows because one process asked).
 * Returns the index, or -1 with errno = ENOSPC when all TSHM_MAX_DEVICES
 * records are taken. */
int tshm_device(tshm_t *s, const unsigned char uuid[16], uint64_t limit, tsl_error_t *err);

/* Set a device's limit unconditionally (tesseld resizing a slice). 0 or -1. */
int tshm_set_limit(tshm_t *s, int dev, uint64_t limit);

/* ---- hot path: atomics only, no syscall, no lock ------------------------- */

/* Charge bytes to device dev for the calling process if the slice stays
 * within its limit.  Returns 0 (charged), or -1 (would exceed; nothing
 * charged).  The charge stays until tshm_release: the interposer reserves
 * before the driver call and releases if the driver fails, so the charge is
 * committed by simply keeping it. Requires tshm_registered(s). */
int tshm_reserve(tshm_t *s, int dev, uint64_t bytes);

/* Charge bytes without checking the limit (a driver that rounded an
 * allocation up beyond what was reserved).  Bounded by one allocation. */
void tshm_charge(tshm_t *s, int dev, uint64_t bytes);

/* Give back bytes charged by this process to dev (saturates at zero).  A
 * process without a slot (after tshm_unregister, or a fork child not yet
 * registered) gives back nothing: its charges left with its slot. */
void tshm_release(tshm_t *s, int dev, uint64_t bytes);

/* Current limit and used bytes of device dev (0 when dev is out of range). */
uint64_t tshm_limit(const tshm_t *s, int dev);
uint64_t tshm_used(const tshm_t *s, int dev);

/* Kinds of context, each with its own cost: a device's primary context
 * (what the CUDA runtime uses) and contexts made with cuCtxCreate, which
 * the driver sizes differently. */
enum tshm_ctx_kind { TSHM_CTX_PRIMARY = 0, TSHM_CTX_CREATED = 1 };

/* Record a measured context cost for dev and kind (first measurement
 * wins); tshm_set_ctx_cost / tshm_ctx_cost are the primary kind's.  0 when
 * not measured yet or out of range. */
void tshm_set_ctx_cost_of(tshm_t *s, int dev, enum tshm_ctx_kind kind, uint64_t bytes);
uint64_t tshm_ctx_cost_of(const tshm_t *s, int dev, enum tshm_ctx_kind kind);
void tshm_set_ctx_cost(tshm_t *s, int dev, uint64_t bytes);
uint64_t tshm_ctx_cost(const tshm_t *s, int dev);

/* Bytes the calling process has charged to dev (0 when unregistered). */
uint64_t tshm_self_used(const tshm_t *s, int dev);

/* ---- oversubscription (issue 21; docs/interposer.md) ------------------------------
 *
 * A slice device may spill allocations past its limit into managed memory that the
 * interposer keeps preferred on the host.  Those bytes are counted apart from the device's
 * (host_used, per device and per process), against a host limit of their own (0: no spill).
 * Dead processes give them back like device bytes (tshm_reclaim). */

/* Set dev's host limit when this one is lower, or when the record has none (0); a limit of
 * 0 changes nothing (a process that does not spill leaves the slice's setting alone).
 * 0, or -1 with errno (EROFS, ERANGE bad device). */
int tshm_host_config(tshm_t *s, int dev, uint64_t limit);

/* Set dev's host limit unconditionally (tesseld, tests).  0, or -1 with errno (EROFS, ERANGE). */
int tshm_set_host_limit(tshm_t *s, int dev, uint64_t limit);

/* Hot path, as tshm_reserve / tshm_release for the spilled bytes: 0 (charged) or -1 (the
 * host limit would be passed, or is 0, or the process is unregistered; nothing charged). */
int tshm_reserve_host(tshm_t *s, int dev, uint64_t bytes);
void tshm_release_host(tshm_t *s, int dev, uint64_t bytes);

/* dev's host limit and spilled bytes (0 when dev is out of range). */
uint64_t tshm_host_limit(const tshm_t *s, int dev);
uint64_t tshm_host_used(const tshm_t *s, int dev);

/* ---- compute (issue 6) ----------------------------------------------------- */

/* Set dev's compute share when the record has none yet: limit_pct 1..100
 * (0 = no limit), mode and priority as the enums.  A record that already
 * has a limit keeps the lower of the two (like tshm_device for memory);
 * mode and priority are the first setter's. */
void tshm_core_config(tshm_t *s, int dev, unsigned limit_pct, unsigned mode, unsigned prio);

/* Set dev's compute share unconditionally (tesseld).  0, or -1 with errno
 * (EROFS read-only handle, ERANGE bad device or limit above 100). */
int tshm_set_core(tshm_t *s, int dev, unsigned limit_pct, unsigned mode, unsigned prio);

/* Hot path.  Pacing bucket of dev in device nanoseconds: refill it for the
 * wall time since its last refill at rate_ppm (parts per million of the
 * device), never above cap_ns, and return the credit now (negative: the
 * slice used more than its share and must wait -credit / rate).  Refills
 * closer than 20 us to the previous one only read.  Atomics, no syscall. */
int64_t tshm_core_refill(tshm_t *s, int dev, uint64_t now_ns, uint32_t rate_ppm, int64_t cap_ns);

/* Charge measured device time busy_ns of n launches to dev: the bucket
 * (debited by busy_ns less prov_ns, what tshm_core_debit already took for
 * them), the device's and the calling process's busy counters. */
void tshm_core_account(tshm_t *s, int dev, uint64_t busy_ns, uint64_t n, uint64_t prov_ns);
/* Provisional charge of a launch not yet measured (its expected device
 * time); a negative ns gives one back (a launch the driver refused). */
void tshm_core_debit(tshm_t *s, int dev, int64_t ns);
/* Start the bucket afresh at now_ns with no credit (pacing begins). */
void tshm_core_reset(tshm_t *s, int dev, uint64_t now_ns);
/* Add to dev's held-back time; publish the rate the pacing applies. */
void tshm_core_waited(tshm_t *s, int dev, uint64_t ns);
void tshm_core_set_rate(tshm_t *s, int dev, uint32_t rate_ppm);
unsigned tshm_core_limit(const tshm_t *s, int dev);
unsigned tshm_core_mode(const tshm_t *s, int dev);
unsigned tshm_core_prio(const tshm_t *s, int dev);
uint64_t tshm_core_busy(const tshm_t *s, int dev);

/* Suspend / resume (tesseld; needs a writable handle from tshm_attach).
 * While suspended, the interposer holds every new launch of the slice's
 * processes before it reaches the driver; work already queued runs on.
 * 0, or -1 with errno = EROFS. */
int tshm_suspend(tshm_t *s);
int tshm_resume(tshm_t *s);
/* enum tshm_run now. */
int tshm_run_state(const tshm_t *s);
/* 1 when the slice is suspended and drained: no process is between its
 * suspend check and the driver, and every launch the processes measured has
 * completed (as they last saw it: a process held by the suspend keeps
 * polling its work).  0 otherwise (not suspended, or still draining). */
int tshm_drained(tshm_t *s);

/* Interposer, around a launch: tshm_launch_enter returns 0 (go: call the
 * driver, then tshm_launch_exit) or 1 (suspended: nothing held, wait and
 * retry).  One atomic add and one load; sequentially consistent, so that
 * tesseld's suspend-then-tshm_drained cannot miss a launch in progress. */
int tshm_launch_enter(tshm_t *s);
void tshm_launch_exit(tshm_t *s);
/* In-flight (measured, not yet seen complete) launches and threads held by
 * a suspend, of the calling process: add delta. */
void tshm_inflight_add(tshm_t *s, int delta);
void tshm_waiting_add(tshm_t *s, int delta);

/* ---- idle reclamation (issue 21 item 3; docs/suspend.md, "Idle reclamation") ----------------
 *
 * Three words of the header.  work: the interposer sets it at every launch and copy (a relaxed
 * load, and a store only when it reads 0: the line stays shared while tesseld has not cleared it);
 * tesseld reads and clears it at each tick of a job with an idle time (tshm_fd_take_work),
 * so "no GPU work" is "work stayed 0".  reclaim: tesseld sets it when it has given the
 * slice's memory back for idleness (the slice is then suspended too) and clears it at the
 * restore; the interposer reads it before a call that needs the GPU.  wake: the interposer
 * sets it when such a call finds reclaim set (tshm_wake); tesseld reads it at its tick
 * (tshm_fd_idle) and asks the job's resume.  The file is the job's: any of its processes may
 * write any word, so tesseld believes them only for the job the file belongs to and only
 * while its own record says the job is reclaimed. */

/* Hot path (a launch, a copy, a memset): mark that the slice did GPU work.  No syscall. */
void tshm_note_work(tshm_t *s);
/* 1 while tesseld has the slice reclaimed (reclaim set), else 0.  One load. */
int tshm_reclaimed(const tshm_t *s);
/* Ask tesseld to restore the reclaimed slice (sets wake).  No syscall. */
void tshm_wake(tshm_t *s);

/* The three words as the file on fd says them (pread; the header checked first). */
typedef struct {
    int work, reclaim, wake; /* 0 or 1 (any other value read as 1) */
} tshm_idle_t;
int tshm_fd_idle(int fd, tshm_idle_t *out, tsl_error_t *err);
/* Whether work is set (0/1), clearing it: 0 or 1, or -1 with errno and err. */
int tshm_fd_take_work(int fd, tsl_error_t *err);
/* Set (on) or clear reclaim, and clear wake either way.  0, or -1 with errno and err. */
int tshm_fd_set_reclaim(int fd, int on, tsl_error_t *err);

/* ---- slow path ------------------------------------------------------------ */

/* Return the usage of every dead process (pid gone, or pid reused by a
 * process with another start time) to its devices and free its slot.  Takes
 * the file lock and reads /proc.  Returns the number of slots reclaimed, or
 * -1 with errno. */
int tshm_reclaim(tshm_t *s);

/* ---- read-only access (tesseld, tests) ------------------------------------- */

/* Open an existing slice file read-only (tesseld reading its jobs' slices).
 * The handle holds a copy of the file read with pread, never a mapping: the
 * file may be a job user's, who can truncate it at any moment, and a read
 * through a mapping past the end of a file is SIGBUS.  So the handle sees the
 * values of when it was opened or last refreshed: at open the header and the
 * device records (12 KiB); tshm_refresh also reads the process table, up to
 * TSHM_RO_MAX_PROCS slots (listing the processes and tshm_drained refresh
 * first).  NULL with errno (ENOENT, EINVAL: not a regular
 * file or not a slice file, EPROTO...) and err on failure. */
tshm_t *tshm_open_ro(const char *path, tsl_error_t *err);

/* Slots of a process table a read-only handle copies at most (16 MiB). */
#define TSHM_RO_MAX_PROCS 8192

/* A read-write handle: remap if the process table grew.  A read-only one:
 * read the file again (-1 with errno EINVAL if it is no longer a whole slice
 * file; the handle's values are then not to be used).  0 or -1 with errno. */
int tshm_refresh(tshm_t *s);

/* The run state (TSHM_RUNNING, TSHM_SUSPENDED) of the slice file open on fd,
 * and setting it, through pread and pwrite of the header's fields alone: no
 * mapping (see tshm_open_ro) and no lock (a process holding a flock on the
 * file cannot make the caller wait), for tesseld suspending a job's slice.
 * The header is checked first (magic, version, record sizes); -1 with errno
 * (EINVAL, EPROTO, or the I/O error) and err when it is not a slice file. */
int tshm_fd_run_state(int fd, tsl_error_t *err);
int tshm_fd_set_run(int fd, int state, tsl_error_t *err);

/* Number of device records in use, and a copy of record i (0 <= i < n).
 * tshm_device_info returns -1 with errno = ERANGE for a bad index. */
int tshm_ndevices(const tshm_t *s);
int tshm_device_info(const tshm_t *s, int i, tshm_device_info_t *out);

/* Call fn once per occupied process slot with a snapshot of it; stops early
 * and returns fn's value when fn returns non-zero; otherwise returns the
 * number of processes visited. */
typedef int (*tshm_proc_f)(const tshm_proc_info_t *p, void *arg);
int tshm_foreach_proc(tshm_t *s, tshm_proc_f fn, void *arg);

/* Unmap and close; accepts NULL.  Does not free the process slot: a process
 * that exits is reclaimed like a dead one (use tshm_unregister to give the
 * slot back at a clean exit). */
void tshm_close(tshm_t *s);

/* Give back this process's slot and all its charges now (clean exit). */
void tshm_unregister(tshm_t *s);

/* An identity of the slice file (device and inode mixed), the same in
 * every process attached to it; 0 on failure.  One fstat. */
uint64_t tshm_id(const tshm_t *s);

/* Start time (clock ticks since boot) of pid from /proc, or 0 if gone. */
uint64_t tshm_proc_start_time(pid_t pid);

#endif
