/* daemon.h - tesseld's state, shared by main.c, the tick, the launcher and the API handlers.
 *
 * Threads and the big lock.  libmicrohttpd runs one thread per connection; the main thread
 * runs the scheduling tick.  Every access to the store and the table of running jobs happens
 * under tessd_t.lock (one writer to SQLite at a time, as the store wants).  Handlers take the
 * lock for the whole request except while a log follower waits for output.  Nothing under
 * the lock blocks on a job or a client: the tick reads small files and /proc, and spawning a
 * shim is one posix_spawn.
 *
 * libsched (the cluster model and the scheduler) belongs to the main thread alone.  Handlers
 * never call it: they leave submissions and removals in the inbox (under the lock) and ask for
 * the tick to apply a queue edit.  So the scheduling cycle, whose cost grows with the number of
 * pending jobs (~1.5 us each: 25 ms for 20,000), runs without the lock and never delays an
 * API answer.
 *
 * Order of one tick, or scheduling pass (tessd_tick, main thread: at once after an event -- a
 * submission, a job's end (SIGCHLD), a cancel, a suspend or resume, a queue edit -- events
 * coalesced as pass.h says, and every TESSD_TICK_MS without events):
 *   1. (locked) reap exited shims (our children) so they do not linger as zombies;
 *   2. (locked) for each running job: DIR/exit present -> record the end, release its
 *      resources; cancel or preemption asked more than TESSD_CANCEL_GRACE_MS ago -> SIGKILL;
 *      shim gone without an exit file -> failed ("supervisor lost"); no shim ever started
 *      (tesseld stopped during the start: start lock free, no pid file) -> pending again;
 *      a store that refuses the end: said once, tried again at the next tick;
 *   3. (locked) apply queue edits to the scheduler (or rebuild it); hand the inbox to
 *      libsched, and write why new jobs wait;
 *   4. (unlocked) when something changed: tsched_sched_cycle, then a snapshot of each queue's
 *      "guarantee satisfied" for the API;
 *   5. (locked) carry out its decisions: preempt victims, start jobs (tick.c).  A preempted
 *      job that ends is requeued (pending again, same id) unless it was submitted with
 *      "requeue": false.
 *
 * Suspend (suspend.c) is not the scheduler's: a person suspends a running job's GPU slice
 * through the API; the job stays running in the store and in the table, holding its
 * allocation.
 */
#ifndef TESSEL_DAEMON_H
#define TESSEL_DAEMON_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/cgroup.h"
#include "agent/ckpt.h"
#include "agent/gpu.h"
#include "agent/runner.h"
#include "daemon/ckptslot.h"
#include "daemon/histagg.h"
#include "daemon/jobmodel.h"
#include "daemon/slurmnodes.h"
#include "libhttp/http.h"
#include "libshm/shm.h"
#include "libutil/prom.h"
#include "libstore/store.h"
#include "tessel/sched.h"
#include "tessel/sched_queue.h"
#include "tessel/sched_wait.h"

#define TESSD_VERSION "0.1.0"

/* Period of the tick when no event comes (pass.h): only rules of time need it (time limits,
 * the SIGKILL after a grace period, the GPU-memory watchdog's records, a new job's pid record,
 * reservations, fair-share decay), none finer than a second; a job's end, a submission, a
 * cancel run a pass at once.  Each tick costs one stat() per running job. */
#define TESSD_TICK_MS 250
/* Least time between the starts of two passes: a burst of events (200 submissions in 30 ms)
 * makes one pass per 5 ms, not one per event, and handlers get the lock between passes (a
 * pass with 200 running jobs holds it ~2 ms); an event on a quiet daemon waits at most this. */
#define TESSD_PASS_GAP_MS 5
/* Longest wait of GET /v1/jobs/{id}/wait: a client that waits longer asks again (a minute
 * bounds how long one request holds its connection, as --request-timeout does for a silent
 * one). */
#define TESSD_WAIT_MAX_MS 60000
/* Time between SIGTERM and SIGKILL when a running job is cancelled: long enough for a
 * training script to write a checkpoint, short enough that a person waiting sees it end. */
#define TESSD_CANCEL_GRACE_MS 10000
/* Longest time between two scheduling cycles when nothing happens: time alone changes
 * decisions (min_runtime of victims, reservations, fair-share decay, all in tens of seconds
 * or more), so once a second is prompt enough and costs ~1 ms per 1,000 pending jobs. */
#define TESSD_CYCLE_IDLE_MS 1000
/* Most jobs started per tick.  Starting one is a posix_spawn and two store writes (~1 ms);
 * 32 bounds the time the lock is held to a few tens of ms; the rest start at the next tick. */
#define TESSD_START_BURST 32
/* Request bodies above this get 413: a job spec with 256 arguments and 256 environment
 * entries of 100 bytes each is ~52 KiB. */
#define TESSD_MAX_BODY (64 * 1024)

/* One running job, as the tick tracks it. */
typedef struct {
    int64_t id;
    char user[TSTORE_NAME_MAX + 1];
    char queue[TSTORE_NAME_MAX + 1];
    tsched_member_t member; /* what it holds in the cluster */
    bool holds;             /* libsched knows it as running with member */
    tsched_qjob_t q;        /* as submitted to libsched (q.req.models/selector NULL) */
    pid_t shim_pid, job_pid;
    uint64_t shim_start;
    int64_t cancel_ms; /* 0 = not cancelled */
    char cancel_by[TSTORE_NAME_MAX + 1];
    int64_t preempt_ms;                      /* 0 = not a victim; else when libsched chose it */
    int64_t preempt_for;                     /* the job it makes room for */
    char preempt_queue[TSTORE_NAME_MAX + 1]; /* that job's queue ("" when unknown) */
    bool killed;                             /* SIGKILL sent after the grace period */
    bool no_requeue;      /* submitted with "requeue": false: a preemption ends it */
    int64_t suspended_ms; /* its GPU slice is suspended since then (suspend.c); 0 = not */
    bool end_unrecorded;  /* the store refused its end (logged once; retried each tick) */
    unsigned wd_episode;  /* the GPU-memory watchdog's last violation seen by the tick */
    /* Time limit (batch.h): this attempt's start, its limit (0 = none), its time suspended
     * before the current suspension, and when the limit's SIGTERM was sent (0 = not yet). */
    int64_t started_ms, time_limit_s, suspended_total_ms, timeout_ms;
    /* Suspended with its GPU state checkpointed (suspend.c, docs/suspend.md): the bytes of GPU
     * memory it gave back (0 = its suspend kept them), and a resume asked that the tick carries
     * out once its GPU has room (resume_by: who asked). */
    uint64_t gpu_released;
    /* Bytes per GPU its slice may spill into host memory (the job's gpu_mem_oversubscribe, 0 =
     * none): tesseld's own record, which bounds the figures read from the job-writable slice
     * file (api_slice_read). */
    uint64_t gpu_oversub;
    bool resume_wanted;
    char resume_by[TSTORE_NAME_MAX + 1];
    char resume_wait[320]; /* the reason last recorded while the resume waits */
    /* A step of the driver's checkpoint API under way for this job outside tesseld's lock
     * (suspend.c, a thread of its own): TESSD_CKPT_NONE, or which; and, set by a restore that
     * did not go on, that the tick must give its slice back to libsched (an API or worker
     * thread may not call libsched). */
    int ckpt_op;
    bool ckpt_unhold;
    /* Preemption by suspension (docs/suspend.md, "Preemption by suspension"): the job its
     * suspension makes room for (0: none), from libsched's TSCHED_SUSPEND victim until it is
     * resumed (its checkpoint under way, then suspended: jobs.suspended_for); that job's
     * queue; and when the checkpoint was asked (tessd_mono_ms: the bound TESSD_PSUSP_CKPT_MS). */
    int64_t susp_for;
    char susp_queue[TSTORE_NAME_MAX + 1];
    int64_t susp_asked_mono;
    /* Idle reclamation (docs/suspend.md, "Idle reclamation"): the job's own idle time
     * (jobs.idle_reclaim_s: seconds, 0 its queue's, -1 never), when its idleness began
     * (tessd_mono_ms; 0: not watched), and whether it is suspended by one now (its checkpoint
     * under way, then suspended: jobs.suspended_idle). */
    int64_t idle_reclaim_s;
    int64_t idle_since_ms;
    bool susp_idle;
} tessd_run_t;

/* tessd_run_t.ckpt_op: the driver's step a job's checkpoint thread is carrying out. */
enum {
    TESSD_CKPT_NONE = 0,
    TESSD_CKPT_SUSPEND, /* lock and checkpoint (a person's suspend) */
    TESSD_CKPT_RESTORE, /* restore and unlock (a resume, once its GPU has room) */
    TESSD_CKPT_UNDO,    /* restore and unlock a checkpoint tesseld did not finish (recovery) */
};

/* What a handler leaves for the tick to tell libsched. */
typedef struct {
    bool remove;     /* false: submit q; true: forget q.id */
    tsched_qjob_t q; /* q.queue is resolved by the tick */
    char queue[TSTORE_NAME_MAX + 1];
} tessd_inbox_t;

/* Jobs noted between two checks of the held jobs (batch.h, tessd_holds_note); more make the
 * next check read every held job. */
#define TESSD_HOLDS_EV 256

/* A queue's state as libsched saw it after the last cycle (for the API). */
typedef struct {
    char name[TSTORE_NAME_MAX + 1];
    bool satisfied; /* tsched_queue_satisfied: no pending job of its subtree is owed capacity */
    double reserve_after;         /* in effect (own or inherited), s */
    tsched_placement_t placement; /* in effect */
    size_t pending, running;      /* its jobs in libsched (tsched_queue_stat), for /metrics */
} tessd_qsnap_t;

/* Longest reservation delay a queue or --reserve-after may ask for: a week (a big job that
 * waits longer than that for a reservation is one that never gets one). */
#define TESSD_RESERVE_AFTER_MAX (7 * 86400)

typedef struct {
    pthread_mutex_t lock;
    tstore_t *store;
    thttp_server_t *http;      /* TCP listener; NULL with --no-listen */
    thttp_server_t *http_unix; /* the local socket's listener; NULL with --no-socket */
    atomic_bool stopping;
    int wake_fd; /* eventfd: a handler asks for a tick */
    /* A wake is in wake_fd that the main loop has not read yet: further handlers' events are
     * taken by the pass that wake leads to, and write nothing (tessd_wake). */
    atomic_bool wake_sent;
    struct tessd_waiter *waiters;      /* threads waiting for a job's change (wait.c); lock held */
    atomic_uint_fast64_t sched_passes; /* ticks run (pass.h), for /metrics */
    atomic_uint_fast64_t sched_cycles; /* tsched_sched_cycle calls, for /metrics */
    /* /metrics' histograms (docs/metrics.md): time from submission to start and from start
     * to end (observed by the job model, tjm_t), and each pass's duration (main loop). */
    tsl_hist_t job_pending_hist, job_run_hist, pass_hist;
    int64_t test_tick_ms, test_pass_gap_ms; /* --test-tick-ms, --test-pass-gap-ms (0: default) */
    int64_t psusp_ckpt_ms;                  /* TESSD_PSUSP_CKPT_MS, or --test-psusp-ckpt-ms */
    int64_t idle_last_ms;                   /* tessd_idle_tick's last pass (main thread) */
    bool sched_dirty;
    bool holds_dirty; /* every held job to check (batch.h); lock held */
    /* The jobs that may release held jobs since the last check (batch.h: one that arrived
     * held, the first element of an array that did, one that ended), each once; on overflow
     * holds_dirty.  Lock held. */
    int64_t holds_ev[TESSD_HOLDS_EV];
    size_t nholds_ev;
    int64_t kill_wait_ms;  /* --kill-wait: SIGTERM to SIGKILL at a time limit (batch.h) */
    int64_t last_cycle_ms; /* main thread only */

    int64_t job_log_retention_s;       /* --job-log-retention: 0 = keep (main thread, lock held) */
    struct tessd_retention *retention; /* its sweep under way (retention.h; main thread) */
    long test_retention_step; /* --test-retention-step: entries per step (0: the default) */

    /* configuration */
    char data_dir[PATH_MAX];
    char jobs_dir[PATH_MAX];
    char shim[PATH_MAX];
    char interposer[PATH_MAX]; /* "" when absent: jobs run without the interposer */
    char fake_lib_dir[PATH_MAX];
    char fake_spec[256]; /* "" without --fake-gpus */
    bool simulated;
    bool system_mode; /* --system (default as root): a lab's tesseld; else personal */
    char socket_path[108];
    /* --local-users create (the default): a local account calling through the socket with no
     * Tessel user of its name gets one, role user, at its first call; existing: refused. */
    bool local_users_create;
    bool user_projects; /* --user-projects: users may create projects, of queue 'default' */
    /* Virtual folders (folderfs.h, docs/folders.md), as root only: the root's path and an
     * O_PATH descriptor of it (-1: folders are off, tesseld is not root). */
    char folder_root[PATH_MAX];
    int folder_rootfd;
    bool allow_root_jobs;      /* --allow-root-jobs: as root, a non-admin's job may run as root */
    int max_services_per_user; /* --max-services-per-user (admins too; serving.md) */
    uint64_t log_limit;        /* --log-limit: bytes kept per stream of a job's log, 0 = no limit */
    char test_kill_at[16];     /* --test-kill-at: "" or the start step where tesseld kills itself */
    bool test_start_files;     /* --test-start-files: start lock and records as 7fa4294 made them */
    /* Enforcement (docs/security.md), as root only: */
    char run_dir[PATH_MAX];      /* <data>/run: root's per-job directories; "" when not root */
    char registry_dir[PATH_MAX]; /* <data>/registry: the per-GPU compute registry files */
    char nvml_path[PATH_MAX];    /* absolute NVML library for the watchdog; "" = no watchdog */
    bool gpu_mem_suspend;        /* --gpu-mem-violation suspend (default kill) */
    bool allow_userns;           /* --allow-user-namespaces: jobs may create user namespaces */
    char node_name[64];
    long ncpus;
    uint64_t mem_total;
    tagent_cg_mode_t cg_mode;
    char cg_root[PATH_MAX];
    char cg_base[96]; /* "tessel/<instance>" */
    char instance[24];

    /* What one client may use (main.c options; checked by api/jobs.c on submission). */
    thttp_limiter_t *submit_limit;       /* per user; NULL: --submit-rate 0, unlimited */
    thttp_limiter_t *share_limit;        /* folder share changes, per user (api/folders.c) */
    thttp_limiter_t *admin_submit_limit; /* per admin; NULL: admins are exempt */
    /* Suspends and resumes (each an event record and a write of the slice file): the same
     * rate and burst as submissions, buckets of their own. */
    thttp_limiter_t *control_limit, *admin_control_limit;
    double submit_rate, admin_submit_rate, submit_burst; /* their settings, for messages */
    uint64_t disk_reserve;   /* --disk-reserve in bytes (0 when a percentage) */
    double disk_reserve_pct; /* --disk-reserve N%: of the data dir's file system */
    /* Terminal WebSockets (api/term.c, termconn.h): --term-idle-timeout in ms,
     * --term-per-user, and the total (half of --max-connections). */
    long long term_idle_ms;
    unsigned term_per_user, term_max;
    /* A job's web services (api/svcproxy.c, docs/job-services.md): the listener of
     * --services-listen (NULL: off, jobs with services refused), its address for URLs
     * ("http://HOST:PORT"), the key of the session cookies, and --interactive-idle in ms (0:
     * off).  Set before the threads start. */
    thttp_server_t *http_svc;
    thttp_server_t *http_svc6; /* the same on [::1] (a domain under localhost), else NULL */
    char svc_base[96];
    /* --services-domain: each service at http://j<ID>-<NAME>.<svc_domain>:<svc_port>/ */
    char svc_domain[104];
    uint16_t svc_port;
    uint8_t svc_key[32];
    long long interactive_idle_ms;
    /* --idle-reclaim-min, s: the shortest idle time a job may give itself (its queue's, an
     * admin's, may be shorter); read by the API without the lock, set at a reload. */
    atomic_llong idle_reclaim_min_s;

    /* GPUs */
    tagent_nvml_t *nvml;
    tagent_ckpt_t *ckpt; /* the driver's checkpoint API, opened at the first suspend */
    /* The checkpoint threads (suspend.c), one per step, several jobs' at once: ckpt_mu guards
     * only the first open of ckpt above (read-only after it); ckpt_inflight counts the threads
     * and ckpt_cv (with lock) is broadcast when one ends or tesseld stops. */
    pthread_mutex_t ckpt_mu;
    pthread_cond_t ckpt_cv;
    int ckpt_inflight;
    bool ckpt_abandoned; /* tesseld exits without those still running (tessd_ckpt_drain) */
    /* The GPUs' copy slots (ckptslot.h, --ckpt-copies-per-gpu), guarded by cslot_mu, never
     * taken with lock held; cslot_cv is broadcast when a step gives its slots back. */
    tessd_cslots_t *cslots;
    pthread_mutex_t cslot_mu;
    pthread_cond_t cslot_cv;
    tagent_gpu_t gpus[TAGENT_MAX_GPUS];
    int ngpus;
    uint64_t min_gpu_mem, max_gpu_mem;
    tsched_gpu_spec_t gpu_specs[TAGENT_MAX_GPUS];
    char gpu_speeds_conf[1024]; /* tesseld.conf's gpu-speeds (gpuspeed.h), checked */
    tsched_node_spec_t node;    /* this node as libsched sees it */
    tsched_cluster_t *cluster;  /* live allocations, owned through sched */
    tsched_cluster_t *empty;    /* the same node, nothing allocated: "could it ever fit?" */
    tsched_policy_t *policy;
    tsched_sched_t *sched; /* libsched's queue layer: ordering, quotas, preemption */
    tsched_sched_config_t sched_cfg;
    tsched_policy_t *check_policy; /* for d->empty, used by handlers under the lock */
    tessd_inbox_t *inbox;          /* under the lock */
    size_t ninbox, capinbox;
    bool rebuild;         /* rebuild the scheduler from the store (under the lock) */
    bool queues_dirty;    /* queues created or edited: apply them to the scheduler (lock) */
    bool waits_unstored;  /* the store refused the last reasons to wait (sched.c; lock) */
    tessd_qsnap_t *qsnap; /* under the lock; written by the main thread after a cycle */
    size_t nqsnap;

    /* running jobs */
    tessd_run_t *runs;
    size_t nruns, caprun;

    /* --slurm (slurm.c, docs/slurm-backend.md): jobs are Slurm jobs; no local scheduling. */
    bool slurm;
    char slurm_conf[PATH_MAX]; /* SLURM_CONF for the commands; "" = Slurm's default */
    char slurm_bin[PATH_MAX];  /* where sbatch, squeue, scancel are */
    char slurm_out[PATH_MAX];  /* the users' log directories (<out>/<user>) */
    /* tessel-slurm-submit (slurmsub.c), "" = sbatch per job (slurm-submit = sbatch, or auto
     * without the program installed). */
    char slurm_submitter[PATH_MAX];
    unsigned long slurm_shards, slurm_poll_s, slurm_timeout_s;
    int64_t slurm_next_poll;    /* main thread: the next poll (tessd_mono_ms) */
    atomic_bool slurm_poll_now; /* a handler asks for a poll at the next pass */
    bool slurm_failing;         /* main thread: the last poll failed (logged once) */
    bool slurm_acct_failing;    /* main thread: the last sacct failed (logged once) */
    bool slurm_reader_failing;  /* main thread: the reader (tessel-slurm-submit --read) failed:
                                   squeue read instead (logged once) */
    /* The jobs submitted to Slurm directly (not through tesseld), as the last poll read them
     * (slurm.c, read-only: GET /v1/jobs?origin=slurm), lock held for all of these. */
    struct tsj_seen *slurm_view; /* malloc'd, by Slurm id; NULL when none */
    size_t slurm_view_n;
    uint64_t slurm_view_gen;    /* polls that answered (0: never read) */
    int64_t slurm_view_at;      /* tessd_now_ms of the squeue the view comes from */
    int64_t slurm_view_wanted;  /* tessd_mono_ms of the last read of the view */
    char slurm_view_error[256]; /* why the last poll failed, "" when it did not */
    int64_t slurm_view_failed;  /* tessd_now_ms of the last failed poll's start, 0 = none */
    int64_t *slurm_mine;        /* Slurm ids of tesseld's own jobs, sorted (malloc'd) */
    size_t slurm_mine_n, slurm_mine_cap;
    int64_t slurm_mine_after;    /* the largest Tessel job id read into slurm_mine */
    int slurm_inflight;          /* submissions between sbatch and their commit */
    int64_t slurm_toggled;       /* tessd_now_ms of tesseld's last scontrol suspend/resume */
    struct tsj_qmap *slurm_qmap; /* slurm-queues: Tessel's queues onto partitions (malloc'd) */
    size_t slurm_nqmap;
    /* The cluster's nodes and GPUs (slurmnodes.h): the nodes' exporters' port (0: not asked),
     * the seconds between polls, the poll's state (NULL when not started). */
    unsigned long slurm_node_port, slurm_node_poll_s;
    tsn_state_t *nodes;

    /* Usage history (history.c): --history-interval (s), --history-retention (s); the writer
     * (its plan is read by GET /v1/history under the lock, the rest is the main thread's). */
    int hist_interval;
    int64_t hist_retention;
    thist_writer_t *hist;
    int64_t hist_last;              /* the last sample's time (s) */
    bool hist_failing;              /* the last sample was not kept (logged once) */
    struct thist_cache *hist_cache; /* GET /v1/history's kept answers (histcache.h; lock) */

    /* Inference services (serve_run.h, docs/serving.md): the proxy's program (--haproxy) and
     * the state of the supervision and of the proxy (lock held). */
    char haproxy[PATH_MAX];
    struct tessd_serve *serve;
} tessd_t;

/* Who made a request (after tessd_auth). */
typedef struct {
    char user[TSTORE_NAME_MAX + 1];
    bool admin;
    int64_t token_id; /* 0 when no token was presented (the local socket) */
    bool local;       /* came through the local socket: identified by the kernel (uid) */
    uid_t uid;        /* with local: the peer's uid */
} tessd_caller_t;

int64_t tessd_now_ms(void);
void tessd_wake(tessd_t *d);

/* wait.c */
/* CLOCK_MONOTONIC in milliseconds. */
int64_t tessd_mono_ms(void);
/* Lock held (released while asleep, held again on return): sleep until job id changes state
 * (the job model's notify), until deadline_ms (tessd_mono_ms's clock), or until tesseld stops.
 * 1: it changed; 0: the deadline passed or tesseld stops; -1 with errno. */
int tessd_wait_job(tessd_t *d, int64_t id, int64_t deadline_ms);
/* Lock held: wake the waiters of job id (id < 0: every waiter, as tesseld stops). */
void tessd_wake_waiters(tessd_t *d, int64_t id);
void tessd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* snprintf for paths: 0, or -1 with errno ENAMETOOLONG when it did not fit. */
int tessd_pathf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* main.c: the data directory's file system.  *avail: bytes free for tesseld (statvfs
 * f_bavail), *reserve: what --disk-reserve keeps free there.  0, or -1 with errno. */
int tessd_disk_space(tessd_t *d, uint64_t *avail, uint64_t *reserve);
/* api/folders.c: the per-user limiter of folder share changes (d->share_limit), or NULL. */
thttp_limiter_t *api_folders_share_limiter(void);

/* auth.c */
#define TESSD_TOKEN_PREFIX "tsl_"
#define TESSD_TOKEN_LEN    (4 + 64)
/* New random token into out (TESSD_TOKEN_LEN + 1 bytes) and its hash.  0 or -1. */
int tessd_token_new(char *out, unsigned char hash[32]);
void tessd_token_hash(const char *token, unsigned char hash[32]);
/* Who is calling (lock held).  Over TCP: the bearer token's user.  Over the local socket: the
 * peer's uid as the kernel gives it (SO_PEERCRED): uid 0 and tesseld's own uid are the user
 * "admin" (role admin), any other uid the Tessel user of its account's name (created with
 * role user on first use with --local-users create); a token sent there must be that same
 * user's.  0 and *who, or -1 with rep = 401 (no or bad token), 403 (no such user, a token of
 * another user on the socket) or 500. */
int tessd_auth(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, tessd_caller_t *who);
/* Create the admin user and <data-dir>/admin.token when the store has no user.  0 or -1. */
int tessd_bootstrap_admin(tessd_t *d, tsl_error_t *err);

/* api/svcproxy.c: a job's web services (docs/job-services.md). */
/* Make <data>/jobsvc and the cookie key, and serve the services on listen ("HOST:PORT", checked
 * by the options) with these bounds (a local account's connections: SVC_CONN_PER_UID);
 * d->http_svc, d->http_svc6 and d->svc_base set.  Before the threads start.  0, or -1 with
 * err. */
int tessd_jobsvc_start(tessd_t *d, const char *listen, unsigned max_conn, unsigned timeout_s,
                       tsl_error_t *err);
/* The URL of job's service name into buf ("http://HOST:PORT/jobs/ID/NAME/").  0, or -1 when
 * there is no services listener (or buf is short). */
int tessd_jobsvc_url(tessd_t *d, int64_t job, const char *name, char *buf, size_t len);
/* --interactive-idle: cancel the running jobs with services or a terminal that had no request
 * to their services, no open WebSocket to them and no terminal connection (attach, exec) for
 * that long (since their start or tesseld's).  Lock held; main thread. */
void tessd_jobsvc_idle_pass(tessd_t *d);
/* Activity of job for that rule: now, and open connections +1 (one opened), -1 (one closed)
 * or 0.  Any thread, lock not needed (a table of its own). */
void tessd_jobsvc_touch(int64_t job, int open_delta);

/* tick.c */
/* One tick; takes and drops the lock itself (the cycle runs unlocked).  Main thread. */
void tessd_tick(tessd_t *d);
/* Rebuild the running-job table and the cluster's allocations from the store (at start). */
int tessd_recover(tessd_t *d, tsl_error_t *err);
tessd_run_t *tessd_run_find(tessd_t *d, int64_t id);
/* Ask a running job to stop (SIGTERM now, SIGKILL after the grace period). */
int tessd_cancel_running(tessd_t *d, int64_t id, const char *by, tsl_error_t *err);
/* The job model (jobmodel.h) over tesseld's store: every change of a job's state goes through
 * it.  A change of state wakes the tick (scheduler, and what waits for the job).  Lock held.
 * 0, or -1 with errno and err as tjm_apply. */
int tessd_job_apply(tessd_t *d, int64_t id, tjm_event_t ev, const tjm_change_t *chg,
                    const char *who, const char *why, tsl_error_t *err);
void tessd_jobmodel(tessd_t *d, tjm_t *m);
/* Fill a libsched request from a stored job. */
void tessd_job_request(const tstore_job_t *j, tsched_job_t *req);

/* sched.c: the glue to libsched's queue layer. */
double tessd_sched_now(void);
/* The job as libsched's queue layer takes it (queue index filled from d->sched). */
void tessd_qjob(tessd_t *d, const tstore_job_t *j, tsched_qjob_t *q);
/* libsched's TSCHED_JOB_* flags of job j, from its preemptible (sched.c's header). */
unsigned tessd_qjob_flags(const tessd_t *d, const tstore_job_t *j);
/* (Re)build cluster and scheduler from the store's queues and pending jobs and the table of
 * running jobs; the old ones are replaced only on success.  0 or -1 with err. */
int tessd_sched_build(tessd_t *d, tsl_error_t *err);
/* Each GPU's relative speed into d->gpu_specs: the store's (an admin's, /v1/gpu-models), else
 * tesseld.conf's gpu-speeds, else 1.0.  When one changed and the node is built, d->empty is
 * made again and the scheduler rebuilt at the next tick (libsched reads speeds from its
 * cluster).  Under the lock.  0, or -1 with err (store). */
int tessd_gpu_speeds_apply(tessd_t *d, tsl_error_t *err);

/* Longest reason to wait kept (bytes, with NUL): the longest tsched_wait_format writes, with
 * four job ids and names of 32 bytes, is about 250. */
#define TESSD_WAIT_TEXT 320

/* A pending job's reason to wait, as tesseld stores it. */
typedef struct {
    int64_t id;
    tsched_wait_code_t code;
    char text[TESSD_WAIT_TEXT];
} tessd_wait_t;

/* After a cycle (main thread, lock not needed): the reasons that changed in it, in *out
 * (malloc'd, the caller frees it; NULL when none).  Returns the count.  Out of memory: 0, and
 * the next cycle reports every reason again. */
size_t tessd_sched_waits(tessd_t *d, tessd_wait_t **out);
/* Lock held, main thread: writes n reasons in one transaction (only pending jobs change).  A
 * store error is logged (once until a write succeeds again) and every reason is written again
 * after the next cycle. */
void tessd_sched_store_waits(tessd_t *d, const tessd_wait_t *w, size_t n);
/* Lock held: can job j ever run in queue leaf (with its ancestors, read from the store) on
 * this node with nothing else running (tsched_job_feasible)?  1 yes; 0 never, with one line
 * in why; -1 with err (store error). */
int tessd_job_feasible(tessd_t *d, const tstore_job_t *j, const tstore_queue_t *leaf, char *why,
                       size_t len, tsl_error_t *err);
/* Lock held: stores one reason the caller decided (a Dependency, tsched_wait_dependency).
 * 0, or -1 with err. */
int tessd_set_wait(tessd_t *d, int64_t id, const tsched_wait_t *w, tsl_error_t *err);
/* Forget a job (finished, cancelled); no-op when libsched does not know it.  Main thread. */
void tessd_sched_remove(tessd_t *d, int64_t id);
/* Apply the store's queues to the live scheduler: add new ones, update edited ones
 * (tsched_queue_update); rebuild when one was deleted or libsched refuses an edit.  Main
 * thread, lock held.  0 or -1 with err (the old scheduler stays). */
int tessd_sched_sync_queues(tessd_t *d, tsl_error_t *err);
/* The one conversion of a stored queue to libsched's spec: a stored -1 (NULL) amount is
 * TSCHED_UNLIMITED, a NULL option is inherited.  spec points into q (name, parent). */
void tessd_queue_spec(const tstore_queue_t *q, tsched_queue_spec_t *spec);
/* All queues of the store, parents before their children (malloc'd array, caller frees).
 * Lock held.  0 or -1 with err. */
int tessd_queues_load(tessd_t *d, tstore_queue_t **out, size_t *n, tsl_error_t *err);
/* Handlers (lock held): leave a new pending job, or a removal, for the tick.  0, or -1 with
 * errno ENOMEM (then a rebuild is asked for, which reads the store). */
int tessd_inbox_submit(tessd_t *d, const tstore_job_t *j);
int tessd_inbox_remove(tessd_t *d, int64_t id);

/* Default of --log-limit: 64 MiB per stream keeps a day of a chatty training loop's output
 * (~700 bytes/s) and bounds a runaway job's logs to 128 MiB of the store's file system. */
#define TESSD_LOG_LIMIT_DEFAULT (64ull << 20)

/* --test-kill-at (tests only): the named steps of a job's start, in order.  At the step named,
 * tesseld SIGKILLs itself (tessd_test_kill_point), so a test can check that a restart finds
 * the job requeued or running, never failed. */
bool tessd_test_kill_step_valid(const char *step);
void tessd_test_kill_point(const tessd_t *d, const char *step);

/* The start lock of job id, <data-dir>/starts/<id>.lock: tesseld takes it (flock) before it
 * spawns the shim, the shim holds it for its whole life.  1 when held (a shim of the job
 * lives, or is being started), 0 when free or absent (none lives), -1 with errno. */
int tessd_start_lock_held(const tessd_t *d, int64_t id);
/* Remove it, and the exit and pid records beside it, once the job has left the table (the
 * shim has ended). */
void tessd_start_lock_remove(const tessd_t *d, int64_t id);

/* Whether the job of user could enter path as its cwd, checked as the account the job runs
 * as (a short-lived child that takes its ids): root never stats a user's path for them.
 * Called without the lock (the child is one the tick's waitpid(-1) does not reap), as it may
 * take TESSD_CWD_TIMEOUT_MS: a child still in chdir then (a file system that does not answer)
 * is killed and the path refused.  0, or -1 with a one-line reason in why that is the same for
 * a path that does not exist, is not a directory, or may not be entered. */
int tessd_cwd_check(const tessd_t *d, const char *user, const char *path, char *why, size_t len);
/* How long the cwd check waits for its child: an answering file system, even a slow NFS
 * server, answers a chdir in far less; a FUSE server that never answers holds it for ever. */
#define TESSD_CWD_TIMEOUT_MS 2000
/* Wait at most timeout_ms for the child pid (of any kind: waitpid's __WALL) to end, polling
 * (WNOHANG, naps from 0.2 ms doubling to 20 ms).  1 when it ended (reaped, *status filled); 0
 * when it still runs at the deadline (not reaped: the caller kills it and waits again); -1
 * with errno when waitpid failed (ECHILD: no such child). */
int tessd_child_wait(pid_t pid, int timeout_ms, int *status);

/* launch.c: start one placed job (store already says running).  0, or -1 with err. */
int tessd_launch(tessd_t *d, const tstore_job_t *j, tessd_run_t *run, tsl_error_t *err);
/* The job's directory: <data-dir>/jobs/<id>. */
void tessd_job_dir(const tessd_t *d, int64_t id, char *buf, size_t len);
/* The job's directory is its user's, who may mount a file system of theirs (FUSE) over it or
 * over a file in it, whose server need not answer: root opens nothing there by name.  These
 * reach jobs/<id>/name, and jobs/<id> itself, without crossing a mount point or following a
 * link (libutil/nomount.h): what is mounted there is EXDEV at once, never asked.
 * tessd_job_open adds O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC to flags; the caller
 * checks what it opened (a regular file, whose owner).  A descriptor, or -1 with errno. */
int tessd_job_open(const tessd_t *d, int64_t id, const char *name, int flags, mode_t mode);
/* jobs/<id> as an O_PATH directory descriptor for the *at calls (the directory underneath any
 * later mount).  A descriptor, or -1 with errno (EXDEV: something is mounted on it). */
int tessd_job_dirfd(const tessd_t *d, int64_t id);
/* The job's directory, jobs/<id>: made (0700: the job's logs, cwd and slice are its user's
 * business, and tesseld's; other users neither list nor read them) and, with chown_it, given
 * to the account the job runs as.
 *
 * A directory that is there already is an earlier attempt's of this same job (a preemption
 * requeues a job with its id, and the next attempt appends to its logs) only when the job has
 * been preempted before and the directory is its account's.  Otherwise it is another job's:
 * job ids are the store's (the next is the highest + 1), so a store restored from an older
 * backup hands out again the ids of the jobs that ran after that backup, whose directories are
 * still here with their logs and files, owned by their users.  Such a directory is not reused
 * (it would hand those to the new job's user): it is taken from its user (tesseld's, 0700) and
 * moved aside to jobs/.stale-<id>-<time>, for the admin, and the job gets a new one.
 *
 * Nothing is opened there by name: a file system mounted over the directory (a FUSE one of its
 * user's, whose server need not answer) is refused (EXDEV), never entered.  0, or -1 with
 * err. */
int tessd_job_dir_prepare(tessd_t *d, const tstore_job_t *j, bool chown_it, uid_t uid, gid_t gid,
                          tsl_error_t *err);
/* <data-dir>/starts/<id>.exit: the job's exit record, written by its shim (--exit-file) in
 * tesseld's own directory, which no job's user can write.  0, or -1 with errno. */
int tessd_exit_record_path(const tessd_t *d, int64_t id, char *buf, size_t len);
/* Whether the job's start lock was taken by a tesseld whose shims write no exit record there
 * (before 2026-11-27: an empty lock file): its shim writes jobs/<id>/exit instead. */
bool tessd_start_lock_legacy(const tessd_t *d, int64_t id);
/* <data-dir>/starts/<id>.pid: the job's pid record ("SHIM START JOB"), written by its shim
 * (--pid-file) beside the exit record; the only one tesseld takes pids from for a shim it
 * started with it (jobs/<id>/pid, the job's user's, is informational).  0, or -1 with errno. */
int tessd_pid_record_path(const tessd_t *d, int64_t id, char *buf, size_t len);
/* Whether the job's start lock says its shim writes the pid record (a tesseld from before
 * 2026-11-27 started it without: its pids are in jobs/<id>/pid alone, taken under strict
 * checks, tick.c). */
bool tessd_start_lock_pid_record(const tessd_t *d, int64_t id);
/* The layout of job id's start lock, by who took it (launch.c, "What a start lock holds"). */
typedef enum {
    TESSD_LOCK_NONE,      /* no lock file (or unreadable) */
    TESSD_LOCK_EMPTY,     /* before 2026-11-27: jobs/<id>/exit and jobs/<id>/pid */
    TESSD_LOCK_EXIT_FILE, /* <id>.exit beside it, jobs/<id>/pid */
    TESSD_LOCK_FILES,     /* <id>.exit and <id>.pid beside it (up to 7fa4294) */
    TESSD_LOCK_RECORDS,   /* both records in the lock file (runner.h, TAGENT_LOCK_*) */
} tessd_lock_kind_t;
tessd_lock_kind_t tessd_start_lock_kind(const tessd_t *d, int64_t id);
/* For TESSD_LOCK_RECORDS: the exit record in the lock (1, 0 none yet or no lock, -1 with
 * errno: EPROTO malformed) and the pid record (0, or -1 with errno: ENOENT none yet). */
int tessd_start_lock_exit(const tessd_t *d, int64_t id, tagent_exit_t *ex);
int tessd_start_lock_pids(const tessd_t *d, int64_t id, pid_t *shim, uint64_t *start, pid_t *job);
/* For TESSD_LOCK_RECORDS: drop the records of an ended attempt (the lock keeps its header), so
 * that they are not taken for the next attempt's; nothing for another layout. */
void tessd_start_lock_clear(const tessd_t *d, int64_t id);
void tessd_cgroup_name(const tessd_t *d, int64_t id, char *buf, size_t len);
/* <data>/run/<id>: the job's root-owned directory (limits, ld.so.preload, the watchdog's
 * record); "" when tesseld is not root. */
void tessd_state_dir(const tessd_t *d, int64_t id, char *buf, size_t len);
/* <data>/run/ld.so.preload: every job's /etc/ld.so.preload (the interposer's path; root's,
 * 0644, written at start by tessd_enforce_init), its path in buf.  Checked at each call and
 * written again when it is not as tesseld wrote it.  0, or -1 with err (tesseld not root, the
 * path too long for buf, the file cannot be written). */
int tessd_preload_list(const tessd_t *d, char *buf, size_t len, tsl_error_t *err);
/* The watchdog's record of a job (watchdog.h, TSW_RECORD): 1 with the action ("kill" or
 * "suspend"), the episode (1, 2, ...) and the reason, 0 when there is none. */
int tessd_violation_read(const tessd_t *d, int64_t id, char *action, size_t alen, unsigned *episode,
                         char *reason, size_t rlen);
/* Remove a job's state directory (its end). */
void tessd_state_remove(const tessd_t *d, int64_t id);

/* The hold of a job suspended by a preemption with its GPU memory given back (docs/suspend.md,
 * "What holds a victim off the GPU"), on or off, in its root-owned state directory: on, its
 * limits file says GPU memory 0 (the one it was started with kept as limits.run: a process the
 * job starts meanwhile gets no device memory from the interposer) and the shim's watchdog finds
 * TSW_HOLD_FILE (the job's processes held to TSW_HOLD_ALLOW, killed past it); off, both undone.
 * A job without a state directory (tesseld not root): nothing to do.  0, or -1 with err. */
int tessd_gpu_hold(tessd_t *d, const tessd_run_t *r, bool on, tsl_error_t *err);
/* The watchdog's half of it alone (on; off is tessd_gpu_hold's): a job reclaimed while idle,
 * whose processes wait for the restore with their limits as they are.  0 or -1 with err. */
int tessd_gpu_hold_watch(tessd_t *d, const tessd_run_t *r, bool on, tsl_error_t *err);
/* At start, as root: <data>/run and <data>/registry with one registry file per GPU (root's,
 * mode 0666, made with O_EXCL|O_NOFOLLOW).  0, or -1 with err. */
int tessd_enforce_init(tessd_t *d, tsl_error_t *err);
/* As root without --allow-root-jobs, a job of a non-admin user runs only as the system account
 * of the same name, and never as uid 0.  Returns true when a job of user (admin: its role is
 * admin) would so be refused, with the one-line reason in why; false otherwise (tesseld not
 * root, --allow-root-jobs, an admin, or an account other than root exists). */
bool tessd_job_refused(const tessd_t *d, const char *user, bool admin, char *why, size_t len);
/* At start, before any job is launched: remove the cgroups left empty below "tessel/" by
 * earlier runs (a kill -9'd tesseld, jobs that ended while it was down), in every controller.
 * The groups of this instance's running jobs are kept; another instance's groups only once
 * older than TESSD_CG_STALE_S (its tesseld may be starting a job in a group just made). */
#define TESSD_CG_STALE_S 60
void tessd_cgroup_sweep(tessd_t *d);

/* suspend.c: suspend and resume a running job's GPU slice (lock held).  Whether the job has
 * a slice that a suspend can hold: GPUs, and tesseld runs jobs under the interposer. */
bool tessd_has_slice(const tessd_t *d, const tessd_run_t *r);
/* A read-only copy of job r's slice file (<job dir>/slice), opened safely (suspend.c's header:
 * no symlink, a regular file with one link, the job's account's when tesseld is root; read
 * with pread, never mapped).  NULL with err (may be NULL).  The caller tshm_close()s it. */
tshm_t *tessd_slice_open(tessd_t *d, const tessd_run_t *r, tsl_error_t *err);
/* Suspend the slice (creating the slice file if the job has none yet) and mark the job
 * suspended in the store (the model's suspend event, by who, why may be NULL); or resume it
 * and clear the mark.  0, or -1 with err and nothing changed; -2 (nothing changed) when the
 * job's slice file cannot be used (the user's file: not a slice file, not a regular file of its
 * own).  The model refuses what its table forbids. */
int tessd_suspend(tessd_t *d, tessd_run_t *r, const char *who, const char *why, tsl_error_t *err);
int tessd_resume(tessd_t *d, tessd_run_t *r, const char *who, const char *why, tsl_error_t *err);
/* A person's suspend (the API; lock held): sets the slice's suspend word and starts the job's
 * checkpoint thread (r->ckpt_op = TESSD_CKPT_SUSPEND), which asks the driver to checkpoint the
 * job's CUDA processes without tesseld's lock and then, under it, records the outcome
 * (docs/suspend.md): the job suspended with r->gpu_released set (kept in the store; the tick
 * releases its slice in libsched), or, when nothing was given back (no checkpoint API, a lock
 * that timed out, ...), suspended keeping its memory as tessd_suspend does, the reason in the
 * suspend's event; a job cancelled, preempted or past its time limit meanwhile is put back as
 * it was (restored, its slice resumed) and not suspended.  The job model's state changes only
 * then.  0 started (tessd_ckpt_wait waits for the end), -2 the slice file is unusable, -1
 * (err). */
int tessd_suspend_gpu(tessd_t *d, tessd_run_t *r, const char *who, tsl_error_t *err);
/* Wait (lock held; released while waiting) until job id's suspend step has ended or tesseld
 * stops: 0 ended (or none), -1 tesseld is stopping. */
int tessd_ckpt_wait(tessd_t *d, int64_t id);
/* At shutdown, before the API servers stop: wait at most wait_ms for the checkpoint threads
 * (a suspend's outcome is recorded); those still running are left (recovery undoes them). */
void tessd_ckpt_drain(tessd_t *d, int64_t wait_ms);
/* How long a stop waits for them: a checkpoint copies at host memory speed (8 GiB in about
 * 26 s on the fake, docs/suspend.md), so a minute covers the jobs of one host; a job that holds
 * its checkpoint longer (a process stopped with SIGSTOP) does not hold tesseld's stop. */
#define TESSD_CKPT_DRAIN_MS 60000
/* A person's resume (the API): tessd_resume, except for a job whose GPU memory was given back:
 * its resume is left to the tick (tessd_ckpt_tick), which restores it once its GPU has room;
 * 1 then (the job stays suspended, its reason says what it waits for). */
int tessd_resume_gpu(tessd_t *d, tessd_run_t *r, const char *who, tsl_error_t *err);
/* A preemption by suspension (the tick, lock held): the victim r's checkpoint for job for_job
 * (of queue, "" unknown) is started as a person's suspend's is (tessd_suspend_gpu, who
 * "tesseld"); its outcome, under the lock in the checkpoint thread: suspended with its GPU
 * memory given back and jobs.suspended_for set (the tick then gives its slice to libsched,
 * and resumes it once for_job has started or left and its GPUs have room), or, when nothing
 * was given back, killed and requeued (tessd_preempt_requeue, logged).  0 started; -1 (err)
 * when it cannot start (the caller requeues). */
int tessd_suspend_for(tessd_t *d, tessd_run_t *r, int64_t for_job, const char *queue,
                      tsl_error_t *err);
/* Idle reclamation (suspend.c; docs/suspend.md, "Idle reclamation"), the tick's, lock held,
 * at most once per TESSD_IDLE_POLL_MS: each running job with an idle time in effect (its own,
 * else its queue's) has the work word of its slice taken; one idle for that long is suspended
 * as a person's suspend is (who "tesseld"), marked idle: given its memory back it is
 * SUSPENDED with jobs.suspended_idle and its slice's reclaim word set; when nothing could be
 * given back it goes on running (logged) and is watched afresh.  A job so suspended whose
 * slice says wake (one of its processes made a CUDA call) has its resume asked as a person's
 * resume does (tessd_resume_gpu): the tick restores it when its GPUs have room. */
void tessd_idle_tick(tessd_t *d);
/* How often: a second (the idle times are minutes; a wake waits at most this long plus the
 * restore). */
#define TESSD_IDLE_POLL_MS 1000
/* The preemption as a kill and requeue (tick.c): the model's preempt event, then SIGTERM, and
 * SIGKILL after the grace period; the end requeues it (or ends it "preempted").  how: for the
 * log ("requeue", or why a suspension could not be).  Lock held. */
void tessd_preempt_requeue(tessd_t *d, tessd_run_t *r, int64_t for_job, const char *queue,
                           const char *how);
/* How long a preemption by suspension may take its checkpoint before the victim is killed and
 * requeued instead: the preemptor waits for it.  The driver copied 8 GiB in 3.9 s on an H200
 * and in about 26 s on the fake (docs/suspend.md), so 120 s covers a GPU's 80 GiB on the
 * measured GPU with room; a job that stops its own process during the checkpoint (the driver
 * waits for a stopped process) holds the preemptor no longer than that. */
#define TESSD_PSUSP_CKPT_MS 120000
/* How long a job suspended by a preemption waits for its preemptor to start (it is resumed
 * once the preemptor has started, on the GPUs' room, or has left): the preemptor is normally
 * placed by the next cycle; one that another job overtook meanwhile does not keep the victim
 * suspended longer than this (two idle cycles, TESSD_CYCLE_IDLE_MS, and more). */
#define TESSD_PSUSP_PREEMPTOR_WAIT_MS 120000

/* The tick's part (main thread, lock held): release the slices of jobs that gave their memory
 * back in libsched, and start the resumes asked (tried again at each tick until the GPU has
 * room; the restore itself runs in the job's checkpoint thread). */
void tessd_ckpt_tick(tessd_t *d);
/* tshm_drained of the job's slice: 1 drained, 0 not (yet), -1 no slice file readable. */
int tessd_slice_drained(tessd_t *d, const tessd_run_t *r);
/* At recovery: set the slice file's suspend word to what the store says (r->suspended_ms);
 * a job the store has as running whose file said suspended had a suspend that tesseld did not
 * finish: its checkpoint is undone by a checkpoint thread (TESSD_CKPT_UNDO). */
void tessd_suspend_recover(tessd_t *d, tessd_run_t *r);

/* history.c: the usage history's writer for --history-interval and --history-retention.
 * 0, or -1 with err.  tessd_history_tick (main thread, takes the lock): a sample when a new
 * interval has begun since the last one. */
int tessd_history_init(tessd_t *d, tsl_error_t *err);
void tessd_history_tick(tessd_t *d);
/* api/history.c: frees GET /v1/history's cache of answers (at exit). */
void api_history_cache_free(tessd_t *d);

struct tsj_partition;
/* slurm.c (--slurm; docs/slurm-backend.md).  None takes the lock or needs it but
 * tessd_slurm_view and _view_find (lock held).
 * tessd_slurm_submit: sbatch as the account of j->user (never root), cwd NULL = the user's log
 * directory; 201 and *slurm_id, or an HTTP status (400, 422 refused, 500, 503 slurmctld
 * unreachable) with one line in why.  tessd_slurm_cancel: scancel as the account of user; 200,
 * or a status (409 Slurm refused, 503) with why.  tessd_slurm_tick (main thread): the poll when
 * due (every --slurm-poll s, or at once after tessd_slurm_poll_soon); it takes the lock to
 * read and to apply, never while squeue runs.  tessd_slurm_log_path: where Slurm writes a
 * job's stdout (err false) or stderr. */
int tessd_slurm_submit(tessd_t *d, const tstore_job_t *j, const char *cwd, int64_t *slurm_id,
                       char *why, size_t len);
int tessd_slurm_cancel(tessd_t *d, const char *user, int64_t slurm_id, char *why, size_t len);
void tessd_slurm_tick(tessd_t *d);
void tessd_slurm_poll_soon(tessd_t *d);
/* scontrol suspend (suspend true) or resume of Slurm job slurm_id, run as tesseld itself (root:
 * only an operator may; the caller checked Tessel's ACL).  200, or a status (409 Slurm refused,
 * 503 slurmctld unreachable, 500) with why.  No lock needed, none held. */
int tessd_slurm_suspend(tessd_t *d, int64_t slurm_id, bool suspend, char *why, size_t len);
/* Lock held: the view of the jobs submitted to Slurm directly, fresh (read by a poll that began
 * after this call, waiting for it at most the command's timeout) unless a poll at most
 * --slurm-poll seconds old is there.  The view stays refreshed by the poll for a minute after
 * each call.  0, or -1 when no poll answered (d->slurm_view_error says why; the view is the
 * last one read, possibly none). */
int tessd_slurm_view(tessd_t *d);
/* The view's entry of Slurm job id (lock held), NULL when it is not a direct job it holds. */
const struct tsj_seen *tessd_slurm_view_find(const tessd_t *d, int64_t slurm_id);
/* At exit: the view's memory. */
void tessd_slurm_free(tessd_t *d);
/* sinfo --json, run as tesseld: the cluster's partitions (*out malloc'd, the caller frees it).
 * 0, or -1 with why (Slurm cannot be read).  No lock needed, none held. */
int tessd_slurm_partitions(tessd_t *d, struct tsj_partition **out, size_t *n, char *why,
                           size_t len);
void tessd_slurm_log_path(const tessd_t *d, const char *user, int64_t slurm_id, bool err, char *buf,
                          size_t len);

/* slurm.c: run <slurm-bin>/cmd with args (NULL-terminated, at most 14) as tesseld itself,
 * for reading (sinfo): 0 with *out (malloc'd, the caller frees; NUL-terminated) and *outlen
 * when it exits 0, or -1 with one line in why (could not run, timed out, failed: its first
 * line of errors).  Without the lock. */
int tessd_slurm_read(tessd_t *d, const char *cmd, const char *const args[], char **out,
                     size_t *outlen, char *why, size_t len);
/* slurmnodes.c: start the poll of the nodes' figures (--slurm with --slurm-node-port not 0;
 * else nothing), before the HTTP servers start; 0, or -1 with err.  Stop it (accepts a
 * daemon whose poll never started) once they have stopped. */
int tessd_nodes_start(tessd_t *d, tsl_error_t *err);
void tessd_nodes_stop(tessd_t *d);

/* api/routes.c */
extern const thttp_route_t tessd_routes[];
extern const size_t tessd_nroutes;

#endif
