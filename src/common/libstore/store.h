/* store.h - tesseld's embedded store: users, tokens, queues and jobs in SQLite.
 *
 * One tstore_t owns one SQLite connection in WAL mode with synchronous=NORMAL: a committed
 * transaction survives a crash of the process (kill -9) because it is in the WAL file the moment
 * the commit returns; only a power loss can take back the last commits.  Every statement is named
 * at the top of store.c and prepared once in tstore_open.
 *
 * Threads: a tstore_t is not locked; tesseld calls it under its one big lock (single writer);
 * with group commit (tstore_group_init) the store waits on that lock's condition itself.
 * The maintenance thread (tstore_maint_start) has a connection of its own and touches nothing
 * of the tstore_t but its own counters.
 *
 * Errors: calls return -1 (or NULL) with errno set and one line in err when err is non-NULL.
 * errno ENOENT: no such row; EEXIST: unique key taken; EIO: SQLite failed.
 *
 * Strings in the structs below are owned by the struct; free a job with tstore_job_clear.
 */
#ifndef TESSEL_STORE_H
#define TESSEL_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libutil/error.h"

typedef struct tstore tstore_t;

/* Job states, stored as these integers: the order matters (active ones first). */
typedef enum {
    TSTORE_PENDING = 0,
    TSTORE_RUNNING = 1,
    TSTORE_SUCCEEDED = 2,
    TSTORE_FAILED = 3,
    TSTORE_CANCELLED = 4,
    TSTORE_PREEMPTED = 5,
    TSTORE_NSTATES = 6,
} tstore_state_t;

typedef enum {
    TSTORE_CLASS_INTERACTIVE = 0,
    TSTORE_CLASS_TRAINING = 1,
    TSTORE_CLASS_INFERENCE = 2,
} tstore_class_t;

/* What a preemption does to a job (jobs.preemptible, migration 20; docs/suspend.md,
 * "Preemption by suspension").  DEFAULT: its class's (stored NULL). */
typedef enum {
    TSTORE_PREEMPT_DEFAULT = 0,
    TSTORE_PREEMPT_NEVER = 1,   /* never a victim */
    TSTORE_PREEMPT_REQUEUE = 2, /* killed and requeued (or ended, with "requeue": false) */
    TSTORE_PREEMPT_SUSPEND = 3, /* checkpointed, its GPU given back, resumed after */
} tstore_preempt_t;

/* "never", "requeue", "suspend" ("unknown" for DEFAULT or another value). */
const char *tstore_preempt_name(tstore_preempt_t p);
/* The value of one of those names, or -1. */
int tstore_preempt_parse(const char *name);

const char *tstore_state_name(tstore_state_t s);
/* Returns the state, or -1 for an unknown name. */
int tstore_state_parse(const char *name);
const char *tstore_class_name(tstore_class_t c);
int tstore_class_parse(const char *name);

/* Name of users and queues: [a-z][a-z0-9_-]{0,31}. */
#define TSTORE_NAME_MAX 32
bool tstore_name_valid(const char *name);

typedef struct {
    int64_t id;
    char *user;
    char *name;      /* NULL when unset */
    char *argv_json; /* JSON array of strings */
    bool shell;
    char *cwd;      /* NULL: the job's own directory */
    char *env_json; /* JSON object of strings */
    tstore_state_t state;
    char *reason; /* NULL when none */
    char *queue;
    tstore_class_t klass;
    int priority;
    int gpus;             /* whole GPUs asked with "gpus"/"gpu" >= 1, else 0 */
    int gpu_milli;        /* per placed GPU; 0 = no GPU */
    int gpu_count;        /* number of GPUs to place (0 or 1 for fractions, N for whole) */
    uint64_t gpu_mem;     /* per placed GPU, bytes */
    int cpu_milli;        /* 0 = no limit */
    uint64_t mem;         /* 0 = no limit */
    char *placement_json; /* JSON array, NULL until placed */
    bool simulated;
    int64_t submitted_ms, started_ms, finished_ms; /* 0 = not yet */
    bool has_exit_code;
    int exit_code;
    int signal; /* 0 = none */
    int shim_pid, job_pid;
    uint64_t shim_start;  /* /proc/PID/stat starttime of the shim, 0 = unknown */
    int64_t cancel_ms;    /* when a cancel of the running job was asked, 0 = never */
    int preemptions;      /* times it was preempted and requeued (or ended preempted) */
    bool no_requeue;      /* submitted with "requeue": false: a preemption ends it */
    int64_t suspended_ms; /* running with its GPU slice suspended since then; 0 = not */
    int end_cause;        /* why it ended (tjm_cause_t of src/daemon/jobmodel.h); 0 = not ended */
    char *cancel_by;      /* who asked the cancel of the running job; NULL = none */
    int64_t preempt_for;  /* a preemption under way: the job it makes room for; 0 = none */
    char *preempt_queue;  /* that job's queue; NULL when unknown */
    int64_t preempt_ms;   /* when the preemption was asked; 0 = none */
    char *reason_code;    /* pending: why it waits, as a code ("Resources"); NULL = none */
    /* Batch options (migration 9). */
    int64_t time_limit_s;       /* --time, seconds; 0 = no limit */
    int64_t suspended_total_ms; /* this attempt's time suspended before the current one */
    int64_t array_id; /* 0: not in an array; job_add: -1 = a new array whose id is this job's */
    int array_index;  /* with array_id */
    int array_max_running; /* %N of the array, 0 = no limit */
    bool held;             /* pending, kept from the scheduler: waits on dependencies or %N */
    /* Its project (migration 12): id and name at submission; job_add: 0 / NULL = 'default'. */
    int64_t project_id;
    char *project;
    char *image; /* migration 13: "NAME[:TAG]" of a container job (docs/containers.md); NULL = a
                  * process job */
    bool tty;    /* migration 14: the job runs on a terminal (docs/terminal.md) */
    /* Migration 15: the virtual folders the job mounts, a JSON array of "NAME" and
     * "NAME:ro" (docs/folders.md); NULL = none. */
    char *folders_json;
    /* Migration 17: the bytes of GPU memory a suspended job gave back (its GPU state
     * checkpointed by the driver, docs/suspend.md); 0 = none (a suspend that kept them). */
    uint64_t gpu_released;
    /* Migration 20: bytes per placed GPU the job's slice may spill into host memory
     * (oversubscription, docs/interposer.md); 0 = none. */
    uint64_t gpu_oversub;
    /* Migration 21 (docs/suspend.md, "Preemption by suspension"): what a preemption does to
     * the job (TSTORE_PREEMPT_DEFAULT: its class's default, a job stored before); and, while
     * it is suspended by a preemption, the job that preemption made room for (0: none). */
    tstore_preempt_t preemptible;
    int64_t suspended_for;
    /* Migration 22: the web services the job serves through tesseld, a JSON array of
     * {"name": NAME, "port": PORT} (docs/job-services.md); NULL = none. */
    char *services_json;
    /* Migration 23 (docs/suspend.md, "Idle reclamation"): the job's own idle time before its
     * GPU memory is given back, in seconds (0: its queue's; -1: never); and whether it is
     * suspended by an idle reclamation now (kept until the resume or the end, as
     * suspended_for). */
    int64_t idle_reclaim_s;
    bool suspended_idle;
} tstore_job_t;

/* What a preemption does to job j in effect: its own preemptible, else its class's default
 * (training: suspend, which falls back to a requeue where the job's GPU memory cannot be
 * given back; interactive and inference: never). */
tstore_preempt_t tstore_job_preemptible(const tstore_job_t *j);

/* One record of a job's event log (the job model's, src/daemon/jobmodel.h).  Strings are
 * borrowed: valid during the callback of tstore_event_list, the caller's for tstore_event_add. */
typedef struct {
    int64_t id; /* order of the records (set by the store) */
    int64_t job;
    int64_t time_ms;
    const char *who;         /* a user's name, or "tesseld" */
    const char *event;       /* the event's name (tjm_event_name) */
    const char *from_state;  /* NULL for the submission */
    const char *to_state;    /* model state names (tjm_state_name): "suspended" included */
    const char *why;         /* NULL when none */
    const char *detail_json; /* JSON object of structured detail; NULL when none */
} tstore_event_t;

typedef int (*tstore_event_f)(const tstore_event_t *ev, void *arg);

typedef struct {
    char name[TSTORE_NAME_MAX + 1];
    char role[8]; /* "admin" or "user" */
    int64_t created_ms;
} tstore_user_t;

typedef struct {
    int64_t id;
    char user[TSTORE_NAME_MAX + 1];
    char name[65];
    int64_t created_ms;
} tstore_token_t;

/* An amount per resource of a queue; -1 = none (a guarantee: not governed; a limit: no cap). */
typedef struct {
    int64_t gpu_milli; /* sum over GPUs: 2 whole GPUs = 2000 */
    int64_t gpu_mem;   /* bytes, sum over GPUs */
    int64_t cpu_milli;
    int64_t mem; /* bytes */
} tstore_res_t;

/* A queue's list of who may submit: at most TSTORE_ACL_NAMES names of at most TSTORE_NAME_MAX
 * bytes, comma-separated, NUL-terminated. */
#define TSTORE_ACL_NAMES 32
#define TSTORE_ACL_LEN   (TSTORE_ACL_NAMES * (TSTORE_NAME_MAX + 1))

typedef struct {
    char name[TSTORE_NAME_MAX + 1];
    char parent[TSTORE_NAME_MAX + 1]; /* "" = top level */
    int priority;                     /* orders the list only */
    int64_t created_ms;
    int weight;             /* fair share among sibling queues, >= 1 (0 is stored as 1) */
    tstore_res_t guarantee; /* -1: not governed (no reclaim) */
    tstore_res_t limit;     /* -1: no cap */
    /* Who may submit (comma-separated; "" = no such list).  With all three empty the queue is
     * open to everyone; else a user may submit when named, in a named Unix group, or of a
     * named role (admin, user).  The store keeps them as given; tesseld checks them. */
    char allow_users[TSTORE_ACL_LEN];
    char allow_groups[TSTORE_ACL_LEN];
    char allow_roles[TSTORE_ACL_LEN];
    /* Scheduling options; "not set" = inherited from the parent (top level: tesseld's). */
    int64_t reserve_after_s; /* s a big job waits before its reservation; -1: not set */
    char placement[8];       /* "spread" or "pack"; "": not set */
    int64_t limit_ngpu;      /* limit in normalised milli-GPU (docs/scheduler-queues.md); 0: none */
    /* Migration 23: seconds without GPU work after which a running job of the queue gives its
     * GPU memory back (docs/suspend.md, "Idle reclamation"); 0: never; -1 (NULL, migration
     * 24): its parent's (a top-level queue: never; tessd_idle_queue resolves it).  A struct
     * zeroed says never: set -1 for a queue that inherits. */
    int64_t idle_reclaim_s;
    /* Migration 25: bytes per GPU a job of the queue may spill into host memory
     * (docs/interposer.md, "Oversubscription"): the default of a job that does not say and
     * the most a job that is not an admin's may ask; 0: none (no default, no maximum); -1
     * (NULL): its parent's (a top-level queue: none; tessd_oversub_queue resolves it).  A
     * struct zeroed says none: set -1 for a queue that inherits. */
    int64_t gpu_oversub;
} tstore_queue_t;

/* A GPU model's relative speed as an admin set it (docs/scheduler-queues.md, "Normalised
 * GPUs"). */
typedef struct {
    char model[64];      /* as the GPU reports it (tsched_gpu_spec_t.model), at most 63 bytes */
    int64_t speed_milli; /* 1000 = the reference */
    char set_by[TSTORE_NAME_MAX + 1];
    int64_t set_ms;
} tstore_gpu_speed_t;

/* Filter for tstore_jobs_list. */
typedef struct {
    const char *user;    /* NULL = any */
    const char *queue;   /* NULL = any */
    unsigned state_mask; /* bit (1 << state); 0 = all */
    int64_t after;       /* id > after */
    int64_t before;      /* with desc: id < before; 0 = no bound */
    bool desc;           /* newest (highest id) first */
    int limit;           /* > 0 */
    bool suspended_only; /* of the running jobs, only those with suspended_ms set */
    int64_t project_id;  /* only the jobs of this project; 0 = any */
} tstore_job_filter_t;

/* Called once per row; the job is valid only during the call.  Return non-zero to stop. */
typedef int (*tstore_job_f)(const tstore_job_t *job, void *arg);

/* Open (create, migrate) the store at path.  Returns NULL with errno and err on failure. */
tstore_t *tstore_open(const char *path, tsl_error_t *err);
void tstore_close(tstore_t *st);
/* Durability of commits: false (the default of tstore_open) = SQLite synchronous=NORMAL in WAL
 * mode: a commit survives a crash of the process but the last ones may be lost on power loss or
 * an OS crash; true = synchronous=FULL: the WAL is fsync'ed at every commit, so a commit also
 * survives those (one fsync more per transaction).  0, or -1 with err. */
int tstore_set_durable(tstore_t *st, bool full, tsl_error_t *err);

/* Maintenance off the request path.  By default SQLite copies the WAL back into the database
 * (a checkpoint, with its fsyncs) inside the commit that brings the WAL to 1,000 pages: that
 * commit, a submission's, waits for it.  tstore_maint_start turns that off on st's connection
 * and starts a thread with a connection of its own that runs a PASSIVE checkpoint (it never
 * waits for the writer or readers and never makes them wait) whenever a commit leaves at least
 * wal_pages pages in the WAL, at most one every 20 ms.  Under a steady stream of commits those
 * never catch up, and the WAL starts over from its beginning only when a write begins with
 * every frame copied: so the commit that leaves restart_pages (>= wal_pages) pages in the WAL
 * runs one PASSIVE checkpoint itself (the frames since the thread's last one, and the fsyncs:
 * that commit's caller waits for them), after which the next write starts the WAL over; when
 * that cannot happen (a reader of another connection holds an old snapshot), it tries again
 * after restart_pages / 16 more pages.  What a commit promises does not change: the WAL holds
 * it until a checkpoint copies it.  A failed checkpoint is counted and printed on stderr (one
 * line); the next commit over the threshold tries again.  tstore_close stops the thread.
 * 0, or -1 with errno and err (EBUSY: started already; EINVAL: a threshold out of range). */
int tstore_maint_start(tstore_t *st, int wal_pages, int restart_pages, tsl_error_t *err);
typedef struct {
    bool running;         /* tstore_maint_start succeeded */
    uint64_t checkpoints; /* checkpoints run by the thread */
    uint64_t frames;      /* WAL frames they (and the catch-ups) copied into the database */
    uint64_t errors;      /* checkpoints that failed (not counting "busy") */
    uint64_t catchups;    /* checkpoints run by a commit at restart_pages */
    uint64_t restarts;    /* times the WAL started over (a commit left fewer pages than the last) */
} tstore_maint_stats_t;
/* Safe to call from any thread that may call st (reads atomics only). */
void tstore_maint_stats(const tstore_t *st, tstore_maint_stats_t *out);

/* Tallies: TSTORE_TALLY_MAX counters kept in memory beside the store, that follow its
 * transactions: tstore_tally_add inside a transaction counts once the outer transaction
 * commits, and not at all when it (or the savepoint it was added in) rolls back; outside a
 * transaction it counts at once.  The store gives them no meaning: the job model keeps its
 * counts of jobs by state in them (src/daemon/jobmodel.h), so /metrics reads them instead of
 * scanning the jobs table.  Same threading as every other call. */
#define TSTORE_TALLY_MAX 32
/* 0, or -1 with errno EINVAL (slot out of range) or ENOMEM, and err; nothing counted. */
int tstore_tally_add(tstore_t *st, unsigned slot, int64_t delta, tsl_error_t *err);
/* The committed value of a slot (0 for a slot out of range). */
int64_t tstore_tally_get(const tstore_t *st, unsigned slot);
/* Set the first n slots to values and the others to 0 (loading them at start): outside a
 * transaction only.  0, or -1 (EINVAL n too large, EBUSY in a transaction). */
int tstore_tally_reset(tstore_t *st, const int64_t *values, size_t n, tsl_error_t *err);

/* Space kept for the store on a full disk.  A file of `bytes` (allocated, not sparse) is kept
 * at path, on the store's file system.  When SQLite reports the disk full (SQLITE_FULL) the
 * store gives the file back to the file system and runs the failed statement again, once, if
 * SQLite rolled back only that statement (outside a transaction) or the failed statement was
 * COMMIT (the transaction still open): so the store can still record, e.g., the end of jobs
 * after something else filled the disk.  tstore_reserve_release gives it back beforehand (the
 * daemon does when free space runs out, for other small writes); tstore_reserve_restore
 * allocates it again once there is room.  0, or -1 with errno and err (ENOSPC: not enough
 * free space; the store works on, with no reserve).  path is copied. */
int tstore_reserve_init(tstore_t *st, const char *path, uint64_t bytes, tsl_error_t *err);
/* Whether the reserve file is allocated now. */
bool tstore_reserve_held(const tstore_t *st);
/* Give the reserve back now (no-op without one).  Returns the bytes given back. */
uint64_t tstore_reserve_release(tstore_t *st);
/* Allocate the reserve again after it was given back; 0 (also when held already), or -1 with
 * errno (ENOSPC) and err; a partial file is removed. */
int tstore_reserve_restore(tstore_t *st, tsl_error_t *err);
/* Times the reserve was given back since tstore_open (for /metrics and tests). */
uint64_t tstore_reserve_releases(const tstore_t *st);
/* Whether the last failed call failed because the disk (or the store's page limit) is full
 * (SQLITE_FULL); its errno is EIO as for any other SQLite failure. */
bool tstore_last_full(const tstore_t *st);

/* Schema version after migrations. */
int tstore_schema_version(tstore_t *st);

/* Transactions, for changes that must happen together (BEGIN IMMEDIATE / COMMIT / ROLLBACK).
 * A tstore_begin inside an open transaction opens a savepoint instead: its commit releases
 * it, its rollback undoes only what was written since (the outer transaction stays open). */
int tstore_begin(tstore_t *st, tsl_error_t *err);
int tstore_commit(tstore_t *st, tsl_error_t *err);
void tstore_rollback(tstore_t *st);

/* Group commit: several writers that take turns under the caller's lock (tesseld's big lock)
 * share one transaction and one commit, instead of one each (the WAL's frames and locks are
 * paid once per group).  A member's turn:
 *
 *     tstore_group_announce(st);          any thread, before the lock: "I am coming"
 *     lock(caller's lock)
 *     tstore_group_enter(st);             the turn begins: st's calls are the member's
 *     ... reads, and writes in tstore_begin/tstore_commit (savepoints of the group) ...
 *     rc = tstore_group_leave(st, err);   the turn ends (see below)
 *     unlock(caller's lock)
 *
 * The first member's tstore_begin opens the group's transaction (BEGIN IMMEDIATE); each
 * member's own begin/commit/rollback is a savepoint inside it, so a member that fails undoes
 * only its own writes.  tstore_group_leave, when the member's writes are in the group and
 * other members have announced themselves and not yet left, waits (the caller's lock released,
 * pthread_cond_wait) for the commit of the group; otherwise (nobody else coming, or the group
 * holds max members) it commits the group itself and wakes the others.  It returns 0 once a
 * commit holding the member's writes succeeded, or -1 with that commit's errno and err (and
 * tstore_last_full): a failed commit fails every member of the group and writes nothing of
 * any.  A member without writes gets 0 (it commits the others' group when it is the last
 * one coming).  Members with writes return from tstore_group_leave (the lock held again) in
 * the order of their turns, so what the caller does next under the lock keeps that order
 * (tesseld hands the new jobs to its scheduler in id order).
 *
 * Anyone else (not in a member's turn) never sees an open group: st's next call that reads or
 * writes the store commits the group first (the main loop's scheduler pass, the job model's
 * events: their own transactions stay theirs alone, and their commits mean what they meant).
 * A waiting member whose group nobody commits within wait_ms commits it itself: the
 * others' announcements are a promise (each announced member comes and leaves), this is the
 * guard should one be broken; a guard that fires early only makes a smaller group.
 *
 * tstore_group_init turns it on (lock: the caller's mutex, held around every call of st;
 * max: members a group holds at most, >= 1; wait_ms >= 1).  Without it the calls above do
 * nothing and tstore_begin/commit behave as they always did.  0, or -1 with errno EINVAL /
 * EBUSY (turned on already, or a transaction is open) and err. */
int tstore_group_init(tstore_t *st, pthread_mutex_t *lock, int max, int wait_ms, tsl_error_t *err);
void tstore_group_announce(tstore_t *st);
void tstore_group_enter(tstore_t *st);
int tstore_group_leave(tstore_t *st, tsl_error_t *err);
typedef struct {
    uint64_t commits; /* group commits that held at least one member's writes */
    uint64_t members; /* members' writes those commits held (members / commits: group size) */
    uint64_t failed;  /* of the commits, those that failed (every member failed with it) */
    uint64_t largest; /* members of the largest group */
} tstore_group_stats_t;
/* Under the caller's lock. */
void tstore_group_stats(const tstore_t *st, tstore_group_stats_t *out);

/* meta: small key/value pairs (instance id).  get copies at most len-1 bytes; ENOENT if absent. */
int tstore_meta_get(tstore_t *st, const char *key, char *buf, size_t len, tsl_error_t *err);
int tstore_meta_set(tstore_t *st, const char *key, const char *value, tsl_error_t *err);

/* Users. */
int tstore_user_add(tstore_t *st, const char *name, const char *role, int64_t now_ms,
                    tsl_error_t *err);
int tstore_user_get(tstore_t *st, const char *name, tstore_user_t *out, tsl_error_t *err);
/* Calls cb for each user by name; cb returns non-zero to stop.  Returns 0 or -1. */
int tstore_user_list(tstore_t *st, int (*cb)(const tstore_user_t *, void *), void *arg,
                     tsl_error_t *err);
/* Deletes the user and their tokens (jobs stay).  ENOENT if absent. */
int tstore_user_del(tstore_t *st, const char *name, tsl_error_t *err);
int tstore_user_count(tstore_t *st, int64_t *n, tsl_error_t *err);

/* Tokens: hash is the 32-byte SHA-256 of the secret.  add returns the new id or -1. */
int64_t tstore_token_add(tstore_t *st, const char *user, const char *name,
                         const unsigned char hash[32], int64_t now_ms, tsl_error_t *err);
/* Resolves a hash to its token and owner.  ENOENT if unknown. */
int tstore_token_auth(tstore_t *st, const unsigned char hash[32], tstore_token_t *tok,
                      tstore_user_t *user, tsl_error_t *err);
int tstore_token_get(tstore_t *st, int64_t id, tstore_token_t *out, tsl_error_t *err);
/* user NULL = all tokens. */
int tstore_token_list(tstore_t *st, const char *user, int (*cb)(const tstore_token_t *, void *),
                      void *arg, tsl_error_t *err);
int tstore_token_del(tstore_t *st, int64_t id, tsl_error_t *err);

/* Queues. */
int tstore_queue_add(tstore_t *st, const tstore_queue_t *q, tsl_error_t *err);
int tstore_queue_get(tstore_t *st, const char *name, tstore_queue_t *out, tsl_error_t *err);
int tstore_queue_update(tstore_t *st, const tstore_queue_t *q, tsl_error_t *err);
int tstore_queue_list(tstore_t *st, int (*cb)(const tstore_queue_t *, void *), void *arg,
                      tsl_error_t *err);
int tstore_queue_del(tstore_t *st, const char *name, tsl_error_t *err);

/* GPU speeds: set (insert or replace), delete (ENOENT when the model has no row), list (by
 * model; cb returns non-zero to stop).  0, or -1 with errno and err. */
int tstore_gpu_speed_set(tstore_t *st, const tstore_gpu_speed_t *g, tsl_error_t *err);
int tstore_gpu_speed_del(tstore_t *st, const char *model, tsl_error_t *err);
int tstore_gpu_speed_list(tstore_t *st, int (*cb)(const tstore_gpu_speed_t *, void *), void *arg,
                          tsl_error_t *err);
/* Active job counts of a queue (pending, running) and milli-GPUs its running jobs hold. */
int tstore_queue_usage(tstore_t *st, const char *name, int64_t *pending, int64_t *running,
                       int64_t *gpu_milli, tsl_error_t *err);

/* Number of queues whose parent is name. */
int tstore_queue_children(tstore_t *st, const char *name, int64_t *n, tsl_error_t *err);

/* Jobs.  job_add inserts *job as pending (with job->reason, may be NULL) and sets job->id
 * and job->state.  Returns 0 or -1. */
int tstore_job_add(tstore_t *st, tstore_job_t *job, tsl_error_t *err);
/* Loads a job into *out (caller clears it).  ENOENT if absent. */
int tstore_job_get(tstore_t *st, int64_t id, tstore_job_t *out, tsl_error_t *err);
int tstore_job_list(tstore_t *st, const tstore_job_filter_t *f, tstore_job_f cb, void *arg,
                    tsl_error_t *err);
/* State writes: only the job model (src/daemon/jobmodel.c) calls tstore_job_add and
 * tstore_job_write, inside its transaction with the event record (tests/t/t0011 checks it).
 * tstore_job_write stores every column a state change may touch (state, reason, placement,
 * times, exit code and signal, pids, cancel, preemption, suspension, end cause) as *job has
 * them; 0 is stored as NULL where 0 means none.  ENOENT when no such job. */
int tstore_job_write(tstore_t *st, const tstore_job_t *job, tsl_error_t *err);
/* The human reason alone (why a pending job waits, a watchdog's words): not a state. */
int tstore_job_set_reason(tstore_t *st, int64_t id, const char *reason, tsl_error_t *err);
/* The GPU memory a suspended job gave back (bytes; 0 = none, stored as NULL): set by a suspend
 * whose checkpoint succeeded, cleared by its resume.  Not a state (tstore_job_write leaves it). */
int tstore_job_set_gpu_released(tstore_t *st, int64_t id, uint64_t bytes, tsl_error_t *err);
/* A job keeps at most its newest TSTORE_EVENTS_KEEP suspend and resume records: a user may
 * suspend and resume their own job as often as the rate limit allows (api/jobs.c), a record each
 * time, so without a bound one job's log, and its GET .../events, grows for as long as it
 * runs.  When a job has TSTORE_EVENTS_SLACK more than that (so the trim runs once every
 * 100 such records, not at each), the older ones are dropped and counted in one record of
 * their own in their place, event "dropped", who "tesseld", detail {"count": N, "suspends": S,
 * "suspend_idle": I, "suspend_preemption": P} (N: all those dropped so far, the earlier
 * markers' included; S of them suspends, I and P of those with "idle" and "suspended_for" in
 * their detail; why says it in words).  The job's other
 * records (its submission, start, end, preemptions, ...) are all kept. */
#define TSTORE_EVENTS_KEEP  1000
#define TSTORE_EVENTS_SLACK 100

/* Append one record to the event log (ev->id is ignored), keeping a job's suspend and resume
 * records to the bound above (in the caller's transaction).  0 or -1. */
int tstore_event_add(tstore_t *st, const tstore_event_t *ev, tsl_error_t *err);
/* Calls cb for each record of job's log, oldest first; cb returns non-zero to stop. */
int tstore_event_list(tstore_t *st, int64_t job, tstore_event_f cb, void *arg, tsl_error_t *err);
/* A pending job's reason to wait: its code (tsched_wait_code_name) and its sentence.  A job
 * that is not pending (any more) is left alone, and that is no error.  Starting a job clears
 * both. */
int tstore_job_set_wait(tstore_t *st, int64_t id, const char *code, const char *reason,
                        tsl_error_t *err);
/* Number of jobs in each state; counts[TSTORE_NSTATES]. */
int tstore_job_counts(tstore_t *st, int64_t counts[TSTORE_NSTATES], tsl_error_t *err);
/* One scan of the jobs table, grouped: cb is called once per (state, suspended, end_cause)
 * with the number of jobs (suspended: running with suspended_ms set; end_cause 0 = none).
 * For counts kept elsewhere, loaded once at start.  0, or -1 with err. */
typedef void (*tstore_census_f)(int state, bool suspended, int end_cause, int64_t n, void *arg);
int tstore_job_census(tstore_t *st, tstore_census_f cb, void *arg, tsl_error_t *err);
/* Number of records named event (e.g. "start") in the event log of every job.  0 or -1. */
int tstore_event_count(tstore_t *st, const char *event, int64_t *n, tsl_error_t *err);
/* The "suspend" records of every job's log: all, those whose detail has "idle", those whose
 * detail has "suspended_for" (the job model's reclamations and preemptions), the ones the
 * bound below dropped included (each "dropped" marker keeps their counts).  One scan; 0 or -1. */
int tstore_suspend_counts(tstore_t *st, int64_t *all, int64_t *idle, int64_t *preemption,
                          tsl_error_t *err);
int tstore_user_active_jobs(tstore_t *st, const char *user, int64_t *n, tsl_error_t *err);

void tstore_job_clear(tstore_job_t *job);

/* Batch: dependencies, held jobs and arrays.  A dependency is (job, dep, kind) with kind a
 * tsl_dep_kind_t (libutil/batchspec.h); adding one again replaces its kind. */
int tstore_dep_add(tstore_t *st, int64_t job, int64_t dep, int kind, tsl_error_t *err);
/* One dependency of a job with what the store knows of the job it names. */
typedef struct {
    int64_t dep;
    int kind;
    bool exists; /* false: no such job */
    tstore_state_t state;
    bool has_exit_code;
    int exit_code;
} tstore_dep_t;
/* The dependencies of job, by dep id, into *out (malloc'd, the caller frees; NULL when
 * none) and *n.  0, or -1 with err. */
int tstore_dep_list(tstore_t *st, int64_t job, tstore_dep_t **out, size_t *n, tsl_error_t *err);
/* A held pending job and its array's active elements that are not held. */
typedef struct {
    int64_t id;
    int64_t array_id; /* 0: none */
    int array_max_running;
    int64_t array_active;
    char reason[256]; /* its reason now ("" = none) */
} tstore_held_t;
/* Called once per held pending job, by id; may write to the store.  Non-zero stops.  The
 * jobs: every held one (ids NULL), or those about the jobs ids[0..nids) (none when nids is 0):
 * any of them that is held, the held jobs with a dependency on one of them, and the held
 * elements of their arrays; each once.  At most TSTORE_HELD_IDS_MAX ids (EINVAL). */
#define TSTORE_HELD_IDS_MAX 4096
typedef int (*tstore_held_f)(const tstore_held_t *h, void *arg);
int tstore_held_list(tstore_t *st, const int64_t *ids, size_t nids, tstore_held_f cb, void *arg,
                     tsl_error_t *err);
/* held -> released (pending, handed to the scheduler), reason cleared.  ENOENT when the job
 * is not held and pending. */
int tstore_job_release(tstore_t *st, int64_t id, tsl_error_t *err);
/* The job id of element index of array array_id.  ENOENT when there is none. */
/* tesseld --slurm (docs/slurm-backend.md): a job's Slurm id, written once, in the transaction
 * of the job's submission (EEXIST: the job has one).  _get: 0, or -1 with ENOENT when the job
 * has none.  _active: the (job, Slurm id) pairs of every pending or running job that has one,
 * oldest first, in *out (malloc'd, the caller frees it; NULL when *n is 0). */
typedef struct {
    int64_t job, slurm_id;
} tstore_slurm_pair_t;
int tstore_slurm_set(tstore_t *st, int64_t job, int64_t slurm_id, tsl_error_t *err);
int tstore_slurm_get(tstore_t *st, int64_t job, int64_t *slurm_id, tsl_error_t *err);
int tstore_slurm_active(tstore_t *st, tstore_slurm_pair_t **out, size_t *n, tsl_error_t *err);
/* The pairs of the jobs whose id is above after, by job id (what was added since a read that
 * ended at job after), as _active's. */
int tstore_slurm_since(tstore_t *st, int64_t after, tstore_slurm_pair_t **out, size_t *n,
                       tsl_error_t *err);
int tstore_array_find(tstore_t *st, int64_t array_id, int index, int64_t *id, tsl_error_t *err);
/* Elements of an array and their smallest and largest index (count 0 when none). */
int tstore_array_stat(tstore_t *st, int64_t array_id, int64_t *count, int *min, int *max,
                      tsl_error_t *err);

/* Usage history (docs/tesseld.md "Usage history"): one row per series and interval.  The
 * store gives the figures no meaning beyond their names; src/daemon/histagg.h makes them. */
typedef enum {
    TSTORE_HIST_GPU = 0,   /* name: the GPU's UUID */
    TSTORE_HIST_QUEUE = 1, /* name: a queue */
    TSTORE_HIST_USER = 2,  /* name: a user */
    TSTORE_HIST_NSCOPES = 3,
} tstore_hist_scope_t;
/* Longest series name kept, with NUL: an NVML UUID is "GPU-" and 36 characters. */
#define TSTORE_HIST_NAME_MAX 96
typedef struct {
    tstore_hist_scope_t scope;
    char name[TSTORE_HIST_NAME_MAX];
    int64_t t;        /* start of the interval, Unix seconds */
    int step;         /* its length, seconds */
    uint32_t n;       /* samples taken in it */
    uint32_t idle;    /* of them: idle (a GPU with no job on it) */
    double busy;      /* mean busy %, over the samples with a job and a figure; NAN: none */
    double busy_max;  /* highest of those; NAN: none */
    double mem_used;  /* means over the n samples: GPU memory in use, bytes */
    double mem_alloc; /* GPU memory allocated to jobs, bytes */
    double milli;     /* GPU share allocated, milli-GPU */
    double running;   /* jobs running */
    double pending;   /* jobs pending */
} tstore_hist_t;
/* Write n rows in one transaction (a row of the same step, scope, t and name is replaced).
 * 0, or -1 with err and nothing written. */
int tstore_hist_put(tstore_t *st, const tstore_hist_t *rows, size_t n, tsl_error_t *err);
/* Delete the rows of step and scope that begin before before.  The number deleted, or -1. */
int64_t tstore_hist_prune(tstore_t *st, int step, tstore_hist_scope_t scope, int64_t before,
                          tsl_error_t *err);
/* Called once per row, by t then name; the row is valid only during the call.  Non-zero
 * stops. */
typedef int (*tstore_hist_f)(const tstore_hist_t *row, void *arg);
/* The rows of step and scope with from <= t < to (of the series name alone unless NULL).
 * 0, or -1 with err. */
int tstore_hist_read(tstore_t *st, int step, tstore_hist_scope_t scope, int64_t from, int64_t to,
                     const char *name, tstore_hist_f cb, void *arg, tsl_error_t *err);
/* Pending jobs counted by queue and user: cb once per pair.  Non-zero stops.  0, or -1. */
typedef int (*tstore_pending_f)(const char *queue, const char *user, int64_t n, void *arg);
int tstore_hist_pending(tstore_t *st, tstore_pending_f cb, void *arg, tsl_error_t *err);

/* ---- Projects (migration 12, docs/projects.md) -------------------------------------------
 * A project names the leaf queue its jobs go to and has members, each with one role.  The
 * store keeps what it is given; who may do what is tesseld's (src/daemon/projects.h).  Project
 * TSTORE_PROJECT_DEFAULT is 'default' (queue 'default'), made by the migration with every
 * user a member; tstore_user_add makes each new user a member, tstore_user_del removes the
 * user's memberships. */
#define TSTORE_PROJECT_DEFAULT  1
#define TSTORE_PROJECT_DESC_MAX 256 /* bytes of a description */

typedef enum {
    TSTORE_ROLE_NONE = 0, /* not a member */
    TSTORE_ROLE_VIEWER,
    TSTORE_ROLE_MEMBER,
    TSTORE_ROLE_OWNER,
} tstore_role_t;
/* "viewer", "member", "owner" ("" for NONE); parse: -1 for anything else ("" included). */
const char *tstore_role_name(tstore_role_t r);
int tstore_role_parse(const char *name);

typedef struct {
    int64_t id;
    char name[TSTORE_NAME_MAX + 1];
    char queue[TSTORE_NAME_MAX + 1];
    char description[TSTORE_PROJECT_DESC_MAX + 1];
    bool share_jobs; /* members and viewers see each other's jobs of the project */
    int64_t created_ms;
    char created_by[TSTORE_NAME_MAX + 1];
    int64_t folder_quota; /* migration 19: its folders' size limit together, bytes; 0: none */
} tstore_project_t;

typedef struct {
    char user[TSTORE_NAME_MAX + 1];
    tstore_role_t role;
    int64_t added_ms;
} tstore_member_t;

/* Add *p (its id is set) and, when owner is not NULL, owner as its owner, in one transaction.
 * EEXIST (name taken), ENOENT (owner is no user): nothing added.  0 or -1. */
int tstore_project_add(tstore_t *st, tstore_project_t *p, const char *owner, int64_t now_ms,
                       tsl_error_t *err);
/* By name or id into *out.  ENOENT when absent.  0 or -1. */
int tstore_project_get(tstore_t *st, const char *name, tstore_project_t *out, tsl_error_t *err);
int tstore_project_get_id(tstore_t *st, int64_t id, tstore_project_t *out, tsl_error_t *err);
/* Store queue, description and share_jobs of project p->id.  ENOENT when absent. */
int tstore_project_update(tstore_t *st, const tstore_project_t *p, tsl_error_t *err);
/* Delete the project, its members, and make it nobody's default any more (its jobs keep their
 * project's id and name), in one transaction.  ENOENT when absent.  0 or -1. */
int tstore_project_del(tstore_t *st, int64_t id, tsl_error_t *err);
/* Called once per project by name with the role of the user asked about (NONE when not a
 * member) and its number of members; the project is valid during the call.  Non-zero stops. */
typedef int (*tstore_project_f)(const tstore_project_t *p, tstore_role_t role, int64_t members,
                                void *arg);
/* every: all projects (role: user's in each; NONE for all when user is NULL); else only those
 * where user has a role.  0, or -1 with err. */
int tstore_project_list(tstore_t *st, const char *user, bool every, tstore_project_f cb, void *arg,
                        tsl_error_t *err);
/* Active (pending, running) jobs of the project into *n. */
int tstore_project_active_jobs(tstore_t *st, int64_t id, int64_t *n, tsl_error_t *err);
/* The name of a project bound to queue into name (TSTORE_NAME_MAX + 1 bytes): 0; 1 when none
 * is; -1 on a store error. */
int tstore_project_by_queue(tstore_t *st, const char *queue, char *name, tsl_error_t *err);

/* Add user to project with role: EEXIST when a member already, ENOENT when no such user. */
int tstore_member_add(tstore_t *st, int64_t project, const char *user, tstore_role_t role,
                      int64_t now_ms, tsl_error_t *err);
/* Change the role of a member: ENOENT when not a member. */
int tstore_member_set(tstore_t *st, int64_t project, const char *user, tstore_role_t role,
                      tsl_error_t *err);
/* The role of user in project into *role: TSTORE_ROLE_NONE when not a member (returns 0). */
int tstore_member_role(tstore_t *st, int64_t project, const char *user, tstore_role_t *role,
                       tsl_error_t *err);
/* Remove a member (and the project as their default, if it was), in one transaction: ENOENT
 * when not one. */
int tstore_member_del(tstore_t *st, int64_t project, const char *user, tsl_error_t *err);
/* Members by role (owners first), then name; the member is valid during the call. */
typedef int (*tstore_member_f)(const tstore_member_t *m, void *arg);
int tstore_member_list(tstore_t *st, int64_t project, tstore_member_f cb, void *arg,
                       tsl_error_t *err);
/* Members of project with role into *n. */
int tstore_member_count(tstore_t *st, int64_t project, tstore_role_t role, int64_t *n,
                        tsl_error_t *err);

/* A user's default project's id (TSTORE_PROJECT_DEFAULT when they chose none): ENOENT when no
 * such user. */
int tstore_user_default_project(tstore_t *st, const char *user, int64_t *id, tsl_error_t *err);
/* Set it (0 or TSTORE_PROJECT_DEFAULT: back to 'default'): ENOENT when no such user. */
int tstore_user_set_default_project(tstore_t *st, const char *user, int64_t id, tsl_error_t *err);

/* The audit record of projects: one row per change, written by tesseld in the transaction of
 * the change (strings borrowed as for tstore_event_t). */
typedef struct {
    int64_t id;
    int64_t project;
    const char *name; /* the project's name then */
    int64_t time_ms;
    const char *who;         /* the user who asked */
    const char *event;       /* "create", "update", "delete", "member_add", ... */
    const char *detail_json; /* JSON object; NULL when none */
} tstore_pevent_t;
typedef int (*tstore_pevent_f)(const tstore_pevent_t *e, void *arg);
int tstore_pevent_add(tstore_t *st, const tstore_pevent_t *e, tsl_error_t *err);
/* The records of project id, oldest first.  0, or -1 with err. */
int tstore_pevent_list(tstore_t *st, int64_t project, tstore_pevent_f cb, void *arg,
                       tsl_error_t *err);

/* ---- Folders (docs/folders.md) ----------------------------------------------------------
 * A folder is a directory that tesseld makes under its folder root; the store keeps its name,
 * owner, project and the users and projects it is shared with.  Who may do what, and the
 * ACLs written on disk, are tesseld's (src/daemon/folders.h).  Deleting a user deletes the
 * shares with them; deleting a project deletes the shares with it and makes its folders their
 * owners' own (project 0). */
typedef struct {
    int64_t id;
    char name[TSTORE_NAME_MAX + 1];
    char owner[TSTORE_NAME_MAX + 1];
    int64_t project;                        /* 0: none */
    char project_name[TSTORE_NAME_MAX + 1]; /* "" when none */
    int64_t created_ms;
    int64_t quota;   /* its size limit in bytes; 0: none */
    int64_t used;    /* its last measured use in bytes; -1: not measured yet */
    int64_t used_ms; /* when it was measured */
} tstore_folder_t;

/* Store f (name, owner, project, created_ms, quota) and set f->id: EEXIST (err says so) when the
 * name is taken.  0 or -1. */
int tstore_folder_add(tstore_t *st, tstore_folder_t *f, tsl_error_t *err);
/* ENOENT when absent. */
int tstore_folder_get(tstore_t *st, const char *name, tstore_folder_t *out, tsl_error_t *err);
typedef int (*tstore_folder_f)(const tstore_folder_t *f, void *arg);
/* Every folder by name; the folder is valid during the call.  Non-zero stops.  0 or -1. */
int tstore_folder_list(tstore_t *st, tstore_folder_f cb, void *arg, tsl_error_t *err);
/* The folders of project (not those shared with it) by name, as tstore_folder_list (an index:
 * no scan of the other folders).  0 or -1. */
int tstore_folder_list_project(tstore_t *st, int64_t project, tstore_folder_f cb, void *arg,
                               tsl_error_t *err);
/* Delete the folder and its shares in one transaction.  ENOENT when absent.  0 or -1. */
int tstore_folder_del(tstore_t *st, int64_t id, tsl_error_t *err);
/* Set folder id's quota (bytes; 0: none), or its measured use at now_ms.  ENOENT when absent.
 * 0 or -1. */
int tstore_folder_set_quota(tstore_t *st, int64_t id, int64_t quota, tsl_error_t *err);
int tstore_folder_set_used(tstore_t *st, int64_t id, int64_t used, int64_t now_ms,
                           tsl_error_t *err);
/* Add bytes (>= 0) to folder id's measured use, saturating at INT64_MAX; the time of the
 * measurement is kept (an upload is not a walk); a folder never measured keeps none.  0 or -1. */
int tstore_folder_add_used(tstore_t *st, int64_t id, int64_t bytes, tsl_error_t *err);
/* Set project id's folder quota (bytes, the sum of its folders; 0: none).  ENOENT when
 * absent.  0 or -1.  (tstore_project_update leaves it as it is.) */
int tstore_project_set_folder_quota(tstore_t *st, int64_t id, int64_t quota, tsl_error_t *err);
/* The folders of project id: *used the sum of their last measured use, *measured how many of
 * them have one, *folders how many there are.  0 or -1. */
int tstore_project_folder_use(tstore_t *st, int64_t id, int64_t *used, int64_t *measured,
                              int64_t *folders, tsl_error_t *err);
/* The number of active (pending, running) jobs that mount the folder named name into *n.
 * 0 or -1. */
int tstore_folder_active_jobs(tstore_t *st, const char *name, int64_t *n, tsl_error_t *err);
/* The number of folders owner owns into *n.  0 or -1. */
int tstore_folder_count_owner(tstore_t *st, const char *owner, int64_t *n, tsl_error_t *err);
typedef int (*tstore_name_f)(const char *name, void *arg);
/* The names of the folders of project and of those shared with it.  0 or -1. */
int tstore_folder_by_project(tstore_t *st, int64_t project, tstore_name_f cb, void *arg,
                             tsl_error_t *err);

typedef struct {
    char user[TSTORE_NAME_MAX + 1]; /* "" for a project's share */
    int64_t project;                /* 0 for a user's share */
    char project_name[TSTORE_NAME_MAX + 1];
    bool rw;
    int64_t added_ms;
} tstore_fshare_t;
/* Share folder with user (project 0) or project (user NULL), read-write or read-only; a share
 * that exists gets the new mode.  EINVAL when both or neither are given.  0 or -1. */
int tstore_fshare_set(tstore_t *st, int64_t folder, const char *user, int64_t project, bool rw,
                      int64_t now_ms, tsl_error_t *err);
/* ENOENT when there is no such share. */
int tstore_fshare_del(tstore_t *st, int64_t folder, const char *user, int64_t project,
                      tsl_error_t *err);
typedef int (*tstore_fshare_f)(const tstore_fshare_t *s, void *arg);
/* The shares of folder: users first, by name, then projects.  0 or -1. */
int tstore_fshare_list(tstore_t *st, int64_t folder, tstore_fshare_f cb, void *arg,
                       tsl_error_t *err);

/* ---- Services (migration 16; docs/serving.md) ----------------------------------------------
 * An inference service: `replicas` jobs of its template kept running by tesseld (serve.h),
 * behind a proxy listening on 127.0.0.1:port.  tstore_service_t's spec_json is malloc'd by
 * get and list (tstore_service_clear frees it); name and owner are checked by the caller. */
#define TSTORE_HEALTH_MAX 128
typedef struct {
    int64_t id;
    char name[TSTORE_NAME_MAX + 1];
    char owner[TSTORE_NAME_MAX + 1];
    int replicas;                   /* wanted */
    int port;                       /* the proxy's, on 127.0.0.1 */
    char health[TSTORE_HEALTH_MAX]; /* the replicas' health-check path ("/health") */
    int concurrency; /* requests one replica serves at once (the proxy's maxconn per server);
                      * 0: no limit at the proxy (the replica queues what it gets) */
    bool split_even; /* equal weights; false: weights from the measured rates (the default) */
    char *spec_json; /* the replicas' job: JSON object (serve.h's fields) */
    int64_t created_ms;
} tstore_service_t;
typedef int (*tstore_service_f)(const tstore_service_t *sv, void *arg);
/* The new service's id, or -1 with err (EEXIST: its name or port is taken). */
int64_t tstore_service_add(tstore_t *st, const tstore_service_t *sv, tsl_error_t *err);
/* 0, or -1 with err (ENOENT: no such service). */
int tstore_service_get(tstore_t *st, const char *name, tstore_service_t *out, tsl_error_t *err);
/* Every service by name; sv is valid during the call only; cb returns non-zero to stop. */
int tstore_service_list(tstore_t *st, tstore_service_f cb, void *arg, tsl_error_t *err);
void tstore_service_clear(tstore_service_t *sv);
int tstore_service_set_replicas(tstore_t *st, int64_t id, int replicas, tsl_error_t *err);
/* The service, its tokens and its rows of replicas, in one transaction (the jobs stay). */
int tstore_service_del(tstore_t *st, int64_t id, tsl_error_t *err);
/* *n: the services owner owns (owner NULL: every service). */
int tstore_service_count_owner(tstore_t *st, const char *owner, int64_t *n, tsl_error_t *err);
/* *used: port is a service's proxy port or an active replica's. */
int tstore_service_port_used(tstore_t *st, int port, bool *used, tsl_error_t *err);

/* A service's replica: its job, the port it was given, and the job's state. */
typedef struct {
    int64_t job;
    int port;
    tstore_state_t state;
    bool suspended;
    const char *placement_json; /* NULL until placed; valid during the callback only */
    int64_t started_ms, finished_ms;
    bool stopping; /* its cancel was asked */
    int job_pid;   /* its process, 0 until known */
} tstore_replica_t;
typedef int (*tstore_replica_f)(const tstore_replica_t *r, void *arg);
/* Record job as a replica of service, listening on port (in the caller's transaction with the
 * job's submission).  0, or -1 with err. */
int tstore_replica_add(tstore_t *st, int64_t job, int64_t service, int port, tsl_error_t *err);
/* Whether job is a service's replica: 1 and *port (the one it was given), 0 when it is not,
 * -1 with err. */
int tstore_replica_port(tstore_t *st, int64_t job, int *port, tsl_error_t *err);
/* The service's replicas, oldest first: active (pending or running) ones only, or all. */
int tstore_replica_list(tstore_t *st, int64_t service, bool active, tstore_replica_f cb, void *arg,
                        tsl_error_t *err);
/* A token of the service (its SHA-256); its id, or -1 with err. */
int64_t tstore_service_token_add(tstore_t *st, int64_t service, const char *name,
                                 const unsigned char hash[32], int64_t now_ms, tsl_error_t *err);
/* The service's tokens (never their secrets), oldest first; cb returns non-zero to stop. */
int tstore_service_token_list(tstore_t *st, int64_t service,
                              int (*cb)(int64_t id, const char *name, int64_t created_ms, void *),
                              void *arg, tsl_error_t *err);
/* Revoke token id of service: 0, or -1 with err (ENOENT: no such token of that service). */
int tstore_service_token_del(tstore_t *st, int64_t service, int64_t id, tsl_error_t *err);
/* The SHA-256 of every token that may call the service: its own, and owner's API tokens. */
int tstore_service_hashes(tstore_t *st, int64_t service, const char *owner,
                          int (*cb)(const unsigned char hash[32], void *), void *arg,
                          tsl_error_t *err);

#endif
