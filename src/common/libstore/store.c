/* store.c - SQLite store of tesseld (see store.h).
 *
 * Layout of this file: the schema migrations, then every SQL statement as a named constant, then
 * the calls.  A statement is prepared once in tstore_open and reset after each use.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "libstore/store.h"

/* Schema migrations, applied in order; PRAGMA user_version counts those applied.  Never edit
 * one that has shipped: append a new one. */
static const char *const migrations[] = {
    /* 1: first schema. */
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE users(name TEXT PRIMARY KEY, role TEXT NOT NULL, created_ms INTEGER NOT NULL);"
    "CREATE TABLE tokens(id INTEGER PRIMARY KEY, user TEXT NOT NULL, name TEXT NOT NULL,"
    "  hash BLOB NOT NULL UNIQUE, created_ms INTEGER NOT NULL);"
    "CREATE INDEX tokens_user ON tokens(user);"
    "CREATE TABLE queues(name TEXT PRIMARY KEY, priority INTEGER NOT NULL,"
    "  max_gpu_milli INTEGER, created_ms INTEGER NOT NULL);"
    "CREATE TABLE jobs(id INTEGER PRIMARY KEY, user TEXT NOT NULL, name TEXT,"
    "  argv TEXT NOT NULL, shell INTEGER NOT NULL, cwd TEXT, env TEXT NOT NULL,"
    "  state INTEGER NOT NULL, reason TEXT, queue TEXT NOT NULL, class INTEGER NOT NULL,"
    "  priority INTEGER NOT NULL, gpus INTEGER NOT NULL, gpu_milli INTEGER NOT NULL,"
    "  gpu_count INTEGER NOT NULL, gpu_mem INTEGER NOT NULL, cpu_milli INTEGER NOT NULL,"
    "  mem INTEGER NOT NULL, placement TEXT, simulated INTEGER NOT NULL,"
    "  submitted_ms INTEGER NOT NULL, started_ms INTEGER, finished_ms INTEGER,"
    "  exit_code INTEGER, signal INTEGER, shim_pid INTEGER, shim_start INTEGER,"
    "  job_pid INTEGER, cancel_ms INTEGER);"
    "CREATE INDEX jobs_active ON jobs(state) WHERE state < 2;"
    "CREATE INDEX jobs_user ON jobs(user, id);",
    /* 2: queues get a fair-share weight and a guaranteed share (libsched's queue layer). */
    "ALTER TABLE queues ADD COLUMN weight INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE queues ADD COLUMN guarantee_gpu_milli INTEGER;",
    /* 3: nested queues with a guarantee and a limit per resource (max_gpu_milli is the GPU
     * limit, guarantee_gpu_milli the GPU guarantee; NULL = none / unlimited); jobs count their
     * preemptions and say whether a preemption requeues them. */
    "ALTER TABLE queues ADD COLUMN parent TEXT;"
    "ALTER TABLE queues ADD COLUMN guarantee_gpu_mem INTEGER;"
    "ALTER TABLE queues ADD COLUMN guarantee_cpu_milli INTEGER;"
    "ALTER TABLE queues ADD COLUMN guarantee_mem INTEGER;"
    "ALTER TABLE queues ADD COLUMN max_gpu_mem INTEGER;"
    "ALTER TABLE queues ADD COLUMN max_cpu_milli INTEGER;"
    "ALTER TABLE queues ADD COLUMN max_mem INTEGER;"
    "ALTER TABLE jobs ADD COLUMN preemptions INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN requeue INTEGER NOT NULL DEFAULT 1;",
    /* 4: a running job's GPU slice may be suspended (POST /v1/jobs/{id}/suspend): when, NULL
     * when it is not.  The state stays running (1): a suspended job keeps its process and
     * its allocation, so every query of active or running jobs counts it as before. */
    "ALTER TABLE jobs ADD COLUMN suspended_ms INTEGER;",
    /* 5: who may submit to a queue: comma-separated user names, Unix group names and roles;
     * NULL = no such list.  A queue with none of the three is open to everyone, as before. */
    "ALTER TABLE queues ADD COLUMN allow_users TEXT;"
    "ALTER TABLE queues ADD COLUMN allow_groups TEXT;"
    "ALTER TABLE queues ADD COLUMN allow_roles TEXT;",
    /* 6: the job model (src/daemon/jobmodel.h): why a job ended (end_cause, a tjm_cause_t),
     * who asked its cancel, the preemption under way (for which job, of which queue, since
     * when), and the event log of every state change. */
    "ALTER TABLE jobs ADD COLUMN end_cause INTEGER;"
    "ALTER TABLE jobs ADD COLUMN cancel_by TEXT;"
    "ALTER TABLE jobs ADD COLUMN preempt_for INTEGER;"
    "ALTER TABLE jobs ADD COLUMN preempt_queue TEXT;"
    "ALTER TABLE jobs ADD COLUMN preempt_ms INTEGER;"
    "CREATE TABLE job_events(id INTEGER PRIMARY KEY, job INTEGER NOT NULL,"
    "  time_ms INTEGER NOT NULL, who TEXT NOT NULL, event TEXT NOT NULL, from_state TEXT,"
    "  to_state TEXT NOT NULL, why TEXT, detail TEXT);"
    "CREATE INDEX job_events_job ON job_events(job, id);",
    /* 7: per-queue scheduling options, NULL = inherited from the parent (top level: tesseld's
     * settings): seconds a big job waits before it gets a reservation, and where fractional
     * jobs go ('spread': idle GPUs first; 'pack').  The default queue spreads (a small lab's
     * expectation, docs/scheduler-queues.md). */
    "ALTER TABLE queues ADD COLUMN reserve_after_s INTEGER;"
    "ALTER TABLE queues ADD COLUMN placement TEXT;"
    "UPDATE queues SET placement = 'spread' WHERE name = 'default';",
    /* 8: why a pending job waits, as a code beside the sentence in reason ("Resources",
     * "QueueLimit", ...: tsched_wait_code_name); NULL when it does not wait or was not
     * examined yet. */
    "ALTER TABLE jobs ADD COLUMN reason_code TEXT;",
    /* 9: batch options.  time_limit_s: the job's --time in seconds (0 = none);
     * suspended_total_ms: the time this attempt spent with its slice suspended, which does not
     * count against the limit.  An array's elements are jobs with array_id (the id of its
     * first element, as Slurm's ArrayJobId), array_index and array_max_running (%N, 0 = no
     * limit).  held = 1: a pending job that waits for its dependencies (job_deps: kind 0 ok,
     * 1 any, 2 notok, as tsl_dep_kind_t) or its array's limit: tesseld does not hand it to the
     * scheduler until it is released (held = 0). */
    "ALTER TABLE jobs ADD COLUMN time_limit_s INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN suspended_total_ms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN array_id INTEGER;"
    "ALTER TABLE jobs ADD COLUMN array_index INTEGER;"
    "ALTER TABLE jobs ADD COLUMN array_max_running INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX jobs_array ON jobs(array_id, array_index) WHERE array_id IS NOT NULL;"
    "CREATE INDEX jobs_held ON jobs(id) WHERE held = 1 AND state = 0;"
    "CREATE TABLE job_deps(job INTEGER NOT NULL, dep INTEGER NOT NULL, kind INTEGER NOT NULL,"
    "  PRIMARY KEY(job, dep)) WITHOUT ROWID;",
    /* 10: usage history (tstore_hist_t, docs/tesseld.md "Usage history"): one row per series
     * (scope 0 GPU by UUID, 1 queue, 2 user) and interval of step seconds from t (Unix
     * seconds).  n samples, idle of them idle; the other columns are means over the samples
     * (busy over the samples with a job and a measured figure, NULL when none).  The key
     * leads with step, scope and t so that a range read and the pruning of a tier are range
     * scans; WITHOUT ROWID keeps one copy of the row (no separate index). */
    "CREATE TABLE usage_history(step INTEGER NOT NULL, scope INTEGER NOT NULL,"
    "  t INTEGER NOT NULL, name TEXT NOT NULL, n INTEGER NOT NULL, idle INTEGER NOT NULL,"
    "  busy REAL, busy_max REAL, mem_used REAL NOT NULL, mem_alloc REAL NOT NULL,"
    "  milli REAL NOT NULL, running REAL NOT NULL, pending REAL NOT NULL,"
    "  PRIMARY KEY(step, scope, t, name)) WITHOUT ROWID;",
    /* 11: tesseld --slurm (docs/slurm-backend.md): the Slurm job id of a job tesseld submitted
     * to Slurm, written in the transaction of the job's submission. */
    "CREATE TABLE slurm_jobs(job INTEGER PRIMARY KEY, slurm_id INTEGER NOT NULL);",
    /* 12: projects (docs/projects.md).  A project names the leaf queue its jobs go to (its
     * quota is that queue's) and has members with a role ('owner', 'member', 'viewer').
     * Project 1 is 'default', bound to queue 'default', every user a member, share_jobs 0
     * (its members do not see each other's jobs): jobs submitted without a project belong
     * to it and behave as before projects.  A job keeps the id and the name of its project
     * (the id decides rights: a project deleted and created again under the same name is
     * another project); rows older than the migration get project 1 without a rewrite of
     * the table (ADD COLUMN with a constant default); AUTOINCREMENT: an id is never given twice,
     * even after the project with the highest id was deleted.  users.default_project: NULL = 1.
     * project_events: the audit record of every change of a project or its members. */
    "CREATE TABLE projects(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,"
    "  queue TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',"
    "  share_jobs INTEGER NOT NULL DEFAULT 1, created_ms INTEGER NOT NULL,"
    "  created_by TEXT NOT NULL);"
    "CREATE TABLE project_members(project INTEGER NOT NULL, user TEXT NOT NULL,"
    "  role TEXT NOT NULL, added_ms INTEGER NOT NULL, PRIMARY KEY(project, user)) WITHOUT ROWID;"
    "CREATE INDEX project_members_user ON project_members(user, project);"
    "CREATE TABLE project_events(id INTEGER PRIMARY KEY, project INTEGER NOT NULL,"
    "  name TEXT NOT NULL, time_ms INTEGER NOT NULL, who TEXT NOT NULL, event TEXT NOT NULL,"
    "  detail TEXT);"
    "CREATE INDEX project_events_project ON project_events(project, id);"
    "ALTER TABLE users ADD COLUMN default_project INTEGER;"
    "ALTER TABLE jobs ADD COLUMN project INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE jobs ADD COLUMN project_name TEXT NOT NULL DEFAULT 'default';"
    "CREATE INDEX jobs_project ON jobs(project, id);"
    "INSERT INTO projects(id, name, queue, share_jobs, created_ms, created_by)"
    "  VALUES (1, 'default', 'default', 0, 0, 'tesseld');"
    "INSERT INTO project_members(project, user, role, added_ms)"
    "  SELECT 1, name, 'member', created_ms FROM users;",
    /* 13: a job run in a container (docs/containers.md): the image's reference as submitted
     * ("NAME[:TAG]", checked by tctr_image_valid), NULL for a process job. */
    "ALTER TABLE jobs ADD COLUMN image TEXT;",
    /* 14: a job that runs on a terminal (tessel run -it, docs/terminal.md): 1, else 0. */
    "ALTER TABLE jobs ADD COLUMN tty INTEGER NOT NULL DEFAULT 0;",
    /* 15: virtual folders
     * (docs/folders.md).  A folder is a directory <folder-root>/<name> that tesseld makes and
     * whose POSIX ACLs it writes from these rows.  owner: the user who created it; project: the
     * project it belongs to (0: none; its members reach it by role).  folder_shares: one row
     * per user (project 0) or project (user '') it is shared with, rw 0 read-only, 1
     * read-write.  AUTOINCREMENT: a folder deleted and made again under its name is another.
     * quota: its size limit in bytes (NULL: none); used, used_ms: its last measured use and
     * when (NULL: not measured yet).  jobs.folders: the folders a job mounts (JSON). */
    "CREATE TABLE folders(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,"
    "  owner TEXT NOT NULL, project INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL,"
    "  quota INTEGER, used INTEGER, used_ms INTEGER);"
    "CREATE INDEX folders_project ON folders(project) WHERE project <> 0;"
    "CREATE TABLE folder_shares(folder INTEGER NOT NULL, user TEXT NOT NULL DEFAULT '',"
    "  project INTEGER NOT NULL DEFAULT 0, rw INTEGER NOT NULL, added_ms INTEGER NOT NULL,"
    "  PRIMARY KEY(folder, user, project)) WITHOUT ROWID;"
    "CREATE INDEX folder_shares_user ON folder_shares(user) WHERE user <> '';"
    "CREATE INDEX folder_shares_project ON folder_shares(project) WHERE project <> 0;"
    "ALTER TABLE jobs ADD COLUMN folders TEXT;",
    /* 16 (issue 22, docs/serving.md): inference services.  A service keeps `replicas` jobs of
     * its template (spec: the JSON of a job's fields, checked at its creation) running behind
     * the proxy's port on 127.0.0.1.  service_replicas: the jobs tesseld submitted for it, with
     * the port each listens on (a replica is an ordinary job; the row says whose it is).
     * split: 'capacity' (weights from the measured rates) or 'even' (equal weights).
     * service_tokens: SHA-256 of the tokens that may call the service besides its owner's API
     * tokens (the token itself is shown once, never kept).  Deleting a service deletes its
     * rows of both (tstore_service_del); its jobs stay, as any finished job. */
    "CREATE TABLE services(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,"
    "  owner TEXT NOT NULL, replicas INTEGER NOT NULL, port INTEGER NOT NULL UNIQUE,"
    "  health TEXT NOT NULL, concurrency INTEGER NOT NULL, split TEXT NOT NULL,"
    "  spec TEXT NOT NULL, created_ms INTEGER NOT NULL);"
    "CREATE TABLE service_replicas(job INTEGER PRIMARY KEY, service INTEGER NOT NULL,"
    "  port INTEGER NOT NULL);"
    "CREATE INDEX service_replicas_service ON service_replicas(service, job);"
    "CREATE TABLE service_tokens(id INTEGER PRIMARY KEY, service INTEGER NOT NULL,"
    "  name TEXT NOT NULL, hash BLOB NOT NULL UNIQUE, created_ms INTEGER NOT NULL);"
    "CREATE INDEX service_tokens_service ON service_tokens(service);",
    /* 17 (issue 22): normal GPU
     * units (docs/scheduler-queues.md, "Normalised GPUs").  gpu_speeds: a GPU model's relative
     * speed as an admin set it (milli: 1000 = the reference; a model without a row is 1000,
     * or tesseld.conf's gpu-speed), who set it and when.  queues.max_ngpu_milli: the queue's
     * limit in normalised milli-GPU (NULL: none). */
    "CREATE TABLE gpu_speeds(model TEXT PRIMARY KEY, speed_milli INTEGER NOT NULL,"
    "  set_by TEXT NOT NULL, set_ms INTEGER NOT NULL);"
    "ALTER TABLE queues ADD COLUMN max_ngpu_milli INTEGER;",
    /* 18 (issue 21, docs/suspend.md): a suspended job whose GPU state the driver checkpointed
     * (its device memory given back): the bytes given back as NVML measured them, NULL when
     * its suspend kept the memory (or it is not suspended). */
    "ALTER TABLE jobs ADD COLUMN gpu_released INTEGER;",
    /* 19 (issue 20 item 3): a quota per project on its folders (docs/folders.md, "Quotas"):
     * the most bytes the folders of the project may use together (NULL: none). */
    "ALTER TABLE projects ADD COLUMN folder_quota INTEGER;",
    /* 20 (issue 21 item 4, docs/interposer.md "Oversubscription"): the bytes per GPU a job's
     * slice may spill past its GPU memory into host memory (--gpu-mem-oversubscribe); NULL
     * or 0: none. */
    "ALTER TABLE jobs ADD COLUMN gpu_oversub INTEGER;",
    /* 21 (issue 21 item 2, docs/suspend.md "Preemption by suspension"): preemptible, what a
     * preemption does to the job (tstore_preempt_t: 1 never, 2 requeue, 3 suspend; NULL, a job from
     * before: its class's default); suspended_for, the job a preemption by suspension made room for
     * while the job is suspended so (NULL: not suspended by a preemption). */
    "ALTER TABLE jobs ADD COLUMN preemptible INTEGER;"
    "ALTER TABLE jobs ADD COLUMN suspended_for INTEGER;",
    /* 22 (issue 19, item 3, docs/job-services.md): the web services a job serves (Jupyter, or
     * NAME=PORT), a JSON array of {"name", "port"} checked at submission (tsd_svc_name_valid),
     * NULL for a job without any. */
    "ALTER TABLE jobs ADD COLUMN services TEXT;",
    /* 23 (issue 21 item 3, docs/suspend.md "Idle reclamation"): queues.idle_reclaim_s, the
     * seconds without GPU work after which a running job of the queue gives its GPU memory back
     * (NULL or 0: never); jobs.idle_reclaim_s, the job's own (NULL: its queue's, 0: never);
     * jobs.suspended_idle, 1 while the job is suspended by an idle reclamation (NULL: not). */
    "ALTER TABLE queues ADD COLUMN idle_reclaim_s INTEGER;"
    "ALTER TABLE jobs ADD COLUMN idle_reclaim_s INTEGER;"
    "ALTER TABLE jobs ADD COLUMN suspended_idle INTEGER;",
    /* 24 (issue 21, docs/suspend.md "Idle reclamation"): queues.idle_reclaim_s is inherited
     * down the queue tree: NULL now means "its parent's" (a top-level queue: never), 0 never,
     * N seconds.  Every queue made before said never with NULL or 0 and took nothing from its
     * parent: each is set to 0, so that it behaves as it did. */
    "UPDATE queues SET idle_reclaim_s = 0 WHERE idle_reclaim_s IS NULL OR idle_reclaim_s < 0;",
    /* 25 (issue 21 item 4, docs/interposer.md "Oversubscription"): queues.gpu_oversub, the
     * bytes per GPU a job of the queue may spill into host memory when it does not say (its
     * default) and the most a job that is not an admin's may ask; NULL: its parent's (a
     * top-level queue: none), 0: none.  Every queue made before is left NULL: a top-level one
     * has none, as before, and a child takes what an admin later sets on its parent (an
     * explicit 0 would say none and bound nothing below a parent's maximum; RV16b M3). */
    "ALTER TABLE queues ADD COLUMN gpu_oversub INTEGER;",
    /* 26 (issue 15): held jobs found by what may release them (tstore_held_list): the jobs that
     * name a job as a dependency, by it; an array's elements by held and state, so that its
     * held ones and the count of its active released ones read only those rows. */
    "CREATE INDEX job_deps_dep ON job_deps(dep, job);"
    "CREATE INDEX jobs_array_state ON jobs(array_id, held, state) WHERE array_id IS NOT NULL;",
};
#define NMIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

#define JOB_COLS                                                                                   \
    "id, user, name, argv, shell, cwd, env, state, reason, queue, class, priority, gpus,"          \
    " gpu_milli, gpu_count, gpu_mem, cpu_milli, mem, placement, simulated, submitted_ms,"          \
    " started_ms, finished_ms, exit_code, signal, shim_pid, shim_start, job_pid, cancel_ms,"       \
    " preemptions, requeue, suspended_ms, end_cause, cancel_by, preempt_for, preempt_queue,"       \
    " preempt_ms, reason_code, time_limit_s, suspended_total_ms, array_id, array_index,"           \
    " array_max_running, held, project, project_name, image, tty, folders, gpu_released,"          \
    " gpu_oversub, preemptible, suspended_for, services, idle_reclaim_s, suspended_idle"

/* A held job (tstore_held_t), as w. */
#define HELD_COLS                                                                                  \
    "SELECT w.id, w.array_id, w.array_max_running,"                                                \
    " (SELECT count(*) FROM jobs e WHERE w.array_id IS NOT NULL"                                   \
    "  AND e.array_id = w.array_id AND e.state < 2 AND e.held = 0), w.reason FROM jobs w"

/* The filters of the job lists after the id bounds: ?2 user, ?3 queue, ?4 state mask. */
/* ?7 = 1: of the running jobs, only the suspended ones (NULL: all of them).  ?8: only the jobs
 * of this project (its id; NULL: any). */
#define JOB_LIST_WHERE                                                                             \
    " AND (?2 IS NULL OR user = ?2) AND (?3 IS NULL OR queue = ?3) AND ((?4 >> state) & 1)"        \
    " AND (?7 IS NULL OR state <> 1 OR suspended_ms IS NOT NULL)"                                  \
    " AND (?8 IS NULL OR project = ?8)"

#define QUEUE_COLS                                                                                 \
    "name, priority, max_gpu_milli, created_ms, weight, guarantee_gpu_milli, parent,"              \
    " guarantee_gpu_mem, guarantee_cpu_milli, guarantee_mem, max_gpu_mem, max_cpu_milli, max_mem," \
    " allow_users, allow_groups, allow_roles, reserve_after_s, placement, max_ngpu_milli,"         \
    " idle_reclaim_s, gpu_oversub"

#define PROJECT_COLS                                                                               \
    "id, name, queue, description, share_jobs, created_ms, created_by, coalesce(folder_quota, 0)"
#define FOLDER_COLS                                                                                \
    "f.id, f.name, f.owner, f.project, coalesce(p.name, ''), f.created_ms, coalesce(f.quota, 0),"  \
    " coalesce(f.used, -1), coalesce(f.used_ms, 0) FROM folders f"                                 \
    " LEFT JOIN projects p ON p.id = f.project"

/* The statements.  The enum and the table must stay in the same order. */
enum {
    S_META_GET,
    S_META_SET,
    S_USER_ADD,
    S_USER_GET,
    S_USER_LIST,
    S_USER_DEL,
    S_USER_DEL_TOKENS,
    S_USER_COUNT,
    S_USER_ACTIVE,
    S_TOKEN_ADD,
    S_TOKEN_AUTH,
    S_TOKEN_GET,
    S_TOKEN_LIST,
    S_TOKEN_LIST_ALL,
    S_TOKEN_DEL,
    S_QUEUE_ADD,
    S_QUEUE_GET,
    S_QUEUE_UPDATE,
    S_QUEUE_LIST,
    S_QUEUE_DEL,
    S_QUEUE_USAGE,
    S_QUEUE_CHILDREN,
    S_JOB_ADD,
    S_JOB_GET,
    S_JOB_LIST,
    S_JOB_LIST_ACTIVE,
    S_JOB_LIST_DESC,
    S_JOB_LIST_ACTIVE_DESC,
    S_JOB_WRITE,
    S_JOB_SET_REASON,
    S_JOB_SET_GPU_RELEASED,
    S_JOB_SET_WAIT,
    S_JOB_CENSUS,
    S_EVENT_COUNT,
    S_SUSPEND_COUNTS,
    S_EVENT_ADD,
    S_EVENT_LIST,
    S_EVENT_NTH_REPEAT,
    S_EVENT_DROP_COUNT,
    S_EVENT_DROP,
    S_EVENT_MARK,
    S_JOB_SET_BATCH,
    S_DEP_ADD,
    S_DEP_LIST,
    S_HELD_LIST,
    S_HELD_ABOUT,
    S_JOB_RELEASE,
    S_ARRAY_FIND,
    S_ARRAY_STAT,
    S_HIST_PUT,
    S_HIST_PRUNE,
    S_HIST_READ,
    S_HIST_PENDING,
    S_SLURM_SET,
    S_SLURM_GET,
    S_SLURM_ACTIVE,
    S_SLURM_SINCE,
    /* Projects (migration 12). */
    S_USER_ADD_DEFAULT_MEMBER,
    S_USER_DEL_MEMBERS,
    S_PROJECT_ADD,
    S_PROJECT_GET,
    S_PROJECT_GET_ID,
    S_PROJECT_UPDATE,
    S_PROJECT_DEL,
    S_PROJECT_DEL_MEMBERS,
    S_PROJECT_RESET_DEFAULTS,
    S_PROJECT_LIST,
    S_PROJECT_LIST_USER,
    S_PROJECT_ACTIVE,
    S_PROJECT_BY_QUEUE,
    S_MEMBER_ADD,
    S_MEMBER_SET,
    S_MEMBER_GET,
    S_MEMBER_DEL,
    S_MEMBER_RESET_DEFAULT,
    S_MEMBER_LIST,
    S_MEMBER_COUNT,
    S_USER_DEFAULT_GET,
    S_USER_DEFAULT_SET,
    S_PEVENT_ADD,
    S_PEVENT_LIST,
    /* Folders (docs/folders.md). */
    S_USER_DEL_FSHARES,
    S_PROJECT_DEL_FSHARES,
    S_PROJECT_DEL_FOLDERS,
    S_FOLDER_ADD,
    S_FOLDER_SET_QUOTA,
    S_PROJECT_SET_FQUOTA,
    S_PROJECT_FOLDER_USE,
    S_FOLDER_SET_USED,
    S_FOLDER_ADD_USED,
    S_FOLDER_LIST_PROJECT,
    S_FOLDER_GET,
    S_FOLDER_LIST,
    S_FOLDER_DEL_SHARES,
    S_FOLDER_DEL,
    S_FOLDER_BY_PROJECT,
    S_FOLDER_COUNT_OWNER,
    S_FOLDER_ACTIVE_JOBS,
    S_FSHARE_SET,
    S_FSHARE_DEL,
    S_FSHARE_LIST,
    S_BEGIN,
    S_COMMIT,
    S_ROLLBACK,
    S_SVC_ADD,
    S_SVC_GET,
    S_SVC_LIST,
    S_SVC_SET_REPLICAS,
    S_SVC_DEL,
    S_SVC_DEL_REPLICAS,
    S_SVC_DEL_TOKENS,
    S_SVC_PORT_USED,
    S_SVC_COUNT_OWNER,
    S_REPLICA_ADD,
    S_REPLICA_LIST,
    S_REPLICA_PORT,
    S_SVC_TOKEN_ADD,
    S_SVC_HASHES,
    S_SVC_TOKEN_LIST,
    S_SVC_TOKEN_DEL,
    S_GPU_SPEED_SET,
    S_GPU_SPEED_DEL,
    S_GPU_SPEED_LIST,
    S_SAVEPOINT,
    S_RELEASE,
    S_ROLLBACK_TO,
    S_COUNT
};

#define SVC_COLS "id, name, owner, replicas, port, health, concurrency, spec, created_ms, split"

static const char *const sql[S_COUNT] = {
    [S_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [S_META_SET] = "INSERT INTO meta(key, value) VALUES (?1, ?2)"
                   " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    [S_USER_ADD] = "INSERT INTO users(name, role, created_ms) VALUES (?1, ?2, ?3)",
    [S_USER_GET] = "SELECT name, role, created_ms FROM users WHERE name = ?1",
    [S_USER_LIST] = "SELECT name, role, created_ms FROM users ORDER BY name",
    [S_USER_DEL] = "DELETE FROM users WHERE name = ?1",
    [S_USER_DEL_TOKENS] = "DELETE FROM tokens WHERE user = ?1",
    [S_USER_COUNT] = "SELECT count(*) FROM users",
    [S_USER_ACTIVE] = "SELECT count(*) FROM jobs WHERE state < 2 AND user = ?1",
    [S_TOKEN_ADD] = "INSERT INTO tokens(user, name, hash, created_ms) VALUES (?1, ?2, ?3, ?4)",
    [S_TOKEN_AUTH] = "SELECT t.id, t.user, t.name, t.created_ms, u.role, u.created_ms"
                     " FROM tokens t JOIN users u ON u.name = t.user WHERE t.hash = ?1",
    [S_TOKEN_GET] = "SELECT id, user, name, created_ms FROM tokens WHERE id = ?1",
    [S_TOKEN_LIST] = "SELECT id, user, name, created_ms FROM tokens WHERE user = ?1 ORDER BY id",
    [S_TOKEN_LIST_ALL] = "SELECT id, user, name, created_ms FROM tokens ORDER BY id",
    [S_TOKEN_DEL] = "DELETE FROM tokens WHERE id = ?1",
    [S_QUEUE_ADD] = "INSERT INTO queues(" QUEUE_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
                    " ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
    [S_QUEUE_GET] = "SELECT " QUEUE_COLS " FROM queues WHERE name = ?1",
    [S_QUEUE_UPDATE] = "UPDATE queues SET priority = ?2, max_gpu_milli = ?3, weight = ?5,"
                       " guarantee_gpu_milli = ?6, guarantee_gpu_mem = ?8,"
                       " guarantee_cpu_milli = ?9, guarantee_mem = ?10, max_gpu_mem = ?11,"
                       " max_cpu_milli = ?12, max_mem = ?13, allow_users = ?14,"
                       " allow_groups = ?15, allow_roles = ?16, reserve_after_s = ?17,"
                       " placement = ?18, max_ngpu_milli = ?19, idle_reclaim_s = ?20,"
                       " gpu_oversub = ?21 WHERE name = ?1",
    [S_GPU_SPEED_SET] = "INSERT INTO gpu_speeds(model, speed_milli, set_by, set_ms)"
                        " VALUES (?1, ?2, ?3, ?4) ON CONFLICT(model) DO UPDATE SET"
                        " speed_milli = ?2, set_by = ?3, set_ms = ?4",
    [S_GPU_SPEED_DEL] = "DELETE FROM gpu_speeds WHERE model = ?1",
    [S_GPU_SPEED_LIST] = "SELECT model, speed_milli, set_by, set_ms FROM gpu_speeds ORDER BY model",
    [S_QUEUE_LIST] = "SELECT " QUEUE_COLS " FROM queues ORDER BY priority DESC, name",
    [S_QUEUE_DEL] = "DELETE FROM queues WHERE name = ?1",
    [S_QUEUE_USAGE] = "SELECT coalesce(sum(state = 0), 0), coalesce(sum(state = 1), 0),"
                      " coalesce(sum(CASE WHEN state = 1 THEN gpu_milli * gpu_count END), 0)"
                      " FROM jobs WHERE state < 2 AND queue = ?1",
    [S_QUEUE_CHILDREN] = "SELECT count(*) FROM queues WHERE parent = ?1",
    [S_JOB_ADD] =
        "INSERT INTO jobs(user, name, argv, shell, cwd, env, state, queue, class,"
        " priority, gpus, gpu_milli, gpu_count, gpu_mem, cpu_milli, mem, simulated,"
        " submitted_ms, reason, requeue, project, project_name, image, tty, folders,"
        " gpu_oversub, preemptible, services, idle_reclaim_s) VALUES"
        " (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
        " ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)",
    [S_JOB_GET] = "SELECT " JOB_COLS " FROM jobs WHERE id = ?1",
    [S_JOB_LIST] =
        "SELECT " JOB_COLS " FROM jobs WHERE id > ?1" JOB_LIST_WHERE " ORDER BY id LIMIT ?5",
    /* The same for active states only: "state < 2" lets SQLite use the partial index
     * jobs_active, so listing the active jobs does not scan the finished ones. */
    [S_JOB_LIST_ACTIVE] = "SELECT " JOB_COLS " FROM jobs WHERE state < 2 AND id > ?1" JOB_LIST_WHERE
                          " ORDER BY id LIMIT ?5",
    /* Newest first (?order=desc): the primary key read backwards, so the newest N jobs cost N
     * rows whatever the history; ?6 = before (id < before), 0 = no bound. */
    [S_JOB_LIST_DESC] =
        "SELECT " JOB_COLS " FROM jobs WHERE id > ?1 AND (?6 = 0 OR id < ?6)" JOB_LIST_WHERE
        " ORDER BY id DESC LIMIT ?5",
    [S_JOB_LIST_ACTIVE_DESC] =
        "SELECT " JOB_COLS " FROM jobs WHERE state < 2 AND id > ?1"
        " AND (?6 = 0 OR id < ?6)" JOB_LIST_WHERE " ORDER BY id DESC LIMIT ?5",
    /* Every column a state change may write (the job model's, jobmodel.c). */
    [S_JOB_WRITE] =
        "UPDATE jobs SET state = ?2, reason = ?3, placement = ?4, started_ms = ?5,"
        " finished_ms = ?6, exit_code = ?7, signal = ?8, shim_pid = ?9,"
        " shim_start = ?10, job_pid = ?11, cancel_ms = ?12, preemptions = ?13,"
        " suspended_ms = ?14, end_cause = ?15, cancel_by = ?16, preempt_for = ?17,"
        " preempt_queue = ?18, preempt_ms = ?19, suspended_total_ms = ?20, suspended_for = ?21,"
        " suspended_idle = ?22,"
        " reason_code = CASE WHEN ?2 = 0 THEN reason_code END WHERE id = ?1",
    [S_JOB_SET_REASON] = "UPDATE jobs SET reason = ?2 WHERE id = ?1",
    [S_JOB_SET_GPU_RELEASED] = "UPDATE jobs SET gpu_released = ?2 WHERE id = ?1",
    [S_JOB_SET_WAIT] = "UPDATE jobs SET reason = ?2, reason_code = ?3 WHERE id = ?1 AND state = 0",
    /* Jobs by state, suspension and end cause (tstore_job_census: one scan, at start). */
    [S_JOB_CENSUS] = "SELECT state, coalesce(suspended_ms, 0) > 0, coalesce(end_cause, 0),"
                     " count(*) FROM jobs GROUP BY 1, 2, 3",
    [S_EVENT_COUNT] = "SELECT count(*) FROM job_events WHERE event = ?1",
    /* Suspend records of every job, all, with "idle", with "suspended_for" (the job model's
     * detail), those kept and those the bound dropped (counted in the markers). */
    [S_SUSPEND_COUNTS] =
        "SELECT coalesce(sum(CASE WHEN event = 'suspend' THEN 1 ELSE coalesce(json_extract(detail,"
        " '$.suspends'), 0) END), 0), coalesce(sum(CASE WHEN event = 'suspend' THEN"
        " json_extract(detail, '$.idle') IS NOT NULL ELSE coalesce(json_extract(detail,"
        " '$.suspend_idle'), 0) END), 0), coalesce(sum(CASE WHEN event = 'suspend' THEN"
        " json_extract(detail, '$.suspended_for') IS NOT NULL ELSE coalesce(json_extract(detail,"
        " '$.suspend_preemption'), 0) END), 0) FROM job_events WHERE event IN ('suspend',"
        " 'dropped')",
    [S_EVENT_ADD] = "INSERT INTO job_events(job, time_ms, who, event, from_state, to_state, why,"
                    " detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_EVENT_LIST] = "SELECT id, job, time_ms, who, event, from_state, to_state, why, detail"
                     " FROM job_events WHERE job = ?1 ORDER BY id",
    /* The bound on a job's suspend and resume records (TSTORE_EVENTS_KEEP, tstore_event_add):
     * the id of the (?2 + 1)th newest; how many there are up to id ?2 and how many earlier
     * markers counted; the older ones and the markers go; the newest dropped becomes the
     * marker. */
    [S_EVENT_NTH_REPEAT] = "SELECT id FROM job_events WHERE job = ?1 AND event IN ('suspend',"
                           " 'resume') ORDER BY id DESC LIMIT 1 OFFSET ?2",
    [S_EVENT_DROP_COUNT] =
        "SELECT (SELECT count(*) FROM job_events WHERE job = ?1 AND event IN ('suspend', 'resume')"
        " AND id <= ?2), (SELECT coalesce(sum(json_extract(detail, '$.count')), 0) FROM job_events"
        " WHERE job = ?1 AND event = 'dropped'), (SELECT coalesce(sum(CASE WHEN event = 'suspend'"
        " THEN 1 ELSE coalesce(json_extract(detail, '$.suspends'), 0) END), 0) FROM job_events"
        " WHERE job = ?1 AND ((event = 'suspend' AND id <= ?2) OR event = 'dropped')),"
        " (SELECT coalesce(sum(CASE WHEN event = 'suspend' THEN json_extract(detail, '$.idle') IS"
        " NOT NULL ELSE coalesce(json_extract(detail, '$.suspend_idle'), 0) END), 0) FROM"
        " job_events WHERE job = ?1 AND ((event = 'suspend' AND id <= ?2) OR event = 'dropped')),"
        " (SELECT coalesce(sum(CASE WHEN event = 'suspend' THEN json_extract(detail,"
        " '$.suspended_for') IS NOT NULL ELSE coalesce(json_extract(detail,"
        " '$.suspend_preemption'), 0) END), 0) FROM job_events WHERE job = ?1 AND ((event ="
        " 'suspend' AND id <= ?2) OR event = 'dropped'))",
    [S_EVENT_DROP] = "DELETE FROM job_events WHERE job = ?1 AND id < ?2 AND event IN ('suspend',"
                     " 'resume', 'dropped')",
    /* The marker keeps, beside the records it counts, how many were suspends and of those how
     * many an idle reclamation's and a preemption's (/metrics counts them at start). */
    [S_EVENT_MARK] = "UPDATE job_events SET event = 'dropped', who = 'tesseld', from_state = NULL,"
                     " why = ?2, detail = json_object('count', ?3, 'suspends', ?4, 'suspend_idle',"
                     " ?5, 'suspend_preemption', ?6) WHERE id = ?1",
    [S_JOB_SET_BATCH] = "UPDATE jobs SET time_limit_s = ?2, array_id = ?3, array_index = ?4,"
                        " array_max_running = ?5, held = ?6 WHERE id = ?1",
    [S_DEP_ADD] = "INSERT OR REPLACE INTO job_deps(job, dep, kind) VALUES (?1, ?2, ?3)",
    /* A job's dependencies with the state and exit code of each (state NULL: no such job). */
    [S_DEP_LIST] = "SELECT d.dep, d.kind, j.state, j.exit_code FROM job_deps d"
                   " LEFT JOIN jobs j ON j.id = d.dep WHERE d.job = ?1 ORDER BY d.dep",
    /* Held pending jobs with the number of active released elements of their array: all of
     * them, or those about the jobs of the JSON array ?1 (tstore_held_list). */
    [S_HELD_LIST] = HELD_COLS " WHERE w.held = 1 AND w.state = 0 ORDER BY w.id",
    [S_HELD_ABOUT] =
        HELD_COLS " WHERE w.held = 1 AND w.state = 0 AND w.id IN ("
                  "SELECT value FROM json_each(?1)"
                  " UNION SELECT d.job FROM json_each(?1) v JOIN job_deps d ON d.dep = v.value"
                  " UNION SELECT e.id FROM json_each(?1) v JOIN jobs x ON x.id = v.value"
                  " JOIN jobs e ON e.array_id = x.array_id AND e.held = 1 AND e.state = 0)"
                  " ORDER BY w.id",
    [S_JOB_RELEASE] = "UPDATE jobs SET held = 0, reason = NULL WHERE id = ?1 AND state = 0"
                      " AND held = 1",
    [S_ARRAY_FIND] = "SELECT id FROM jobs WHERE array_id = ?1 AND array_index = ?2",
    [S_ARRAY_STAT] = "SELECT count(*), min(array_index), max(array_index) FROM jobs"
                     " WHERE array_id = ?1",
    /* Usage history (tstore_hist_put, _prune, _read). */
    [S_HIST_PUT] = "INSERT OR REPLACE INTO usage_history(step, scope, t, name, n, idle, busy,"
                   " busy_max, mem_used, mem_alloc, milli, running, pending)"
                   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [S_HIST_PRUNE] = "DELETE FROM usage_history WHERE step = ?1 AND scope = ?2 AND t < ?3",
    [S_HIST_READ] = "SELECT step, scope, t, name, n, idle, busy, busy_max, mem_used, mem_alloc,"
                    " milli, running, pending FROM usage_history WHERE step = ?1 AND scope = ?2"
                    " AND t >= ?3 AND t < ?4 AND (?5 IS NULL OR name = ?5) ORDER BY t, name",
    /* Pending jobs by queue and user ("state < 2" for the partial index jobs_active). */
    [S_HIST_PENDING] = "SELECT queue, user, count(*) FROM jobs WHERE state < 2 AND state = 0"
                       " GROUP BY queue, user",
    [S_SLURM_SET] = "INSERT INTO slurm_jobs(job, slurm_id) VALUES(?1, ?2)",
    [S_SLURM_GET] = "SELECT slurm_id FROM slurm_jobs WHERE job = ?1",
    /* Range of the primary key: the rows added since the last read (tesseld --slurm's poll). */
    [S_SLURM_SINCE] = "SELECT job, slurm_id FROM slurm_jobs WHERE job > ?1 ORDER BY job",
    /* The active jobs with a Slurm id, oldest first (the poll's list). */
    [S_SLURM_ACTIVE] = "SELECT s.job, s.slurm_id FROM slurm_jobs s JOIN jobs j ON j.id = s.job"
                       " WHERE j.state < 2 ORDER BY s.job",
    /* Projects (migration 12).  A new user is a member of project 1 ('default'). */
    [S_USER_ADD_DEFAULT_MEMBER] = "INSERT OR IGNORE INTO project_members(project, user, role,"
                                  " added_ms) SELECT 1, ?1, 'member', ?2"
                                  " WHERE EXISTS (SELECT 1 FROM projects WHERE id = 1)",
    [S_USER_DEL_MEMBERS] = "DELETE FROM project_members WHERE user = ?1",
    [S_PROJECT_ADD] = "INSERT INTO projects(name, queue, description, share_jobs, created_ms,"
                      " created_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [S_PROJECT_GET] = "SELECT " PROJECT_COLS " FROM projects WHERE name = ?1",
    [S_PROJECT_GET_ID] = "SELECT " PROJECT_COLS " FROM projects WHERE id = ?1",
    [S_PROJECT_UPDATE] = "UPDATE projects SET queue = ?2, description = ?3, share_jobs = ?4"
                         " WHERE id = ?1",
    [S_PROJECT_DEL] = "DELETE FROM projects WHERE id = ?1",
    [S_PROJECT_DEL_MEMBERS] = "DELETE FROM project_members WHERE project = ?1",
    [S_PROJECT_RESET_DEFAULTS] = "UPDATE users SET default_project = NULL"
                                 " WHERE default_project = ?1",
    /* Every project with the number of its members; ?1 user: that user's role ('' none). */
    [S_PROJECT_LIST] = "SELECT " PROJECT_COLS ", coalesce((SELECT role FROM project_members m"
                       " WHERE m.project = p.id AND m.user = ?1), ''),"
                       " (SELECT count(*) FROM project_members m WHERE m.project = p.id)"
                       " FROM projects p ORDER BY name",
    /* The projects where ?1 has a role. */
    [S_PROJECT_LIST_USER] = "SELECT " PROJECT_COLS ", m.role,"
                            " (SELECT count(*) FROM project_members c WHERE c.project = p.id)"
                            " FROM projects p JOIN project_members m ON m.project = p.id"
                            " WHERE m.user = ?1 ORDER BY p.name",
    /* Active jobs of a project ("state < 2" for the partial index jobs_active). */
    [S_PROJECT_ACTIVE] = "SELECT count(*) FROM jobs WHERE state < 2 AND project = ?1",
    [S_PROJECT_BY_QUEUE] = "SELECT name FROM projects WHERE queue = ?1 ORDER BY id LIMIT 1",
    [S_MEMBER_ADD] = "INSERT INTO project_members(project, user, role, added_ms)"
                     " SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM users WHERE name = ?2)",
    [S_MEMBER_SET] = "UPDATE project_members SET role = ?3 WHERE project = ?1 AND user = ?2",
    [S_MEMBER_GET] = "SELECT user, role, added_ms FROM project_members"
                     " WHERE project = ?1 AND user = ?2",
    [S_MEMBER_DEL] = "DELETE FROM project_members WHERE project = ?1 AND user = ?2",
    [S_MEMBER_RESET_DEFAULT] = "UPDATE users SET default_project = NULL WHERE name = ?2"
                               " AND default_project = ?1",
    /* Owners first, then members, then viewers; by name within a role. */
    [S_MEMBER_LIST] = "SELECT user, role, added_ms FROM project_members WHERE project = ?1"
                      " ORDER BY CASE role WHEN 'owner' THEN 0 WHEN 'member' THEN 1 ELSE 2 END,"
                      " user",
    [S_MEMBER_COUNT] = "SELECT count(*) FROM project_members WHERE project = ?1 AND role = ?2",
    [S_USER_DEFAULT_GET] = "SELECT coalesce(default_project, 1) FROM users WHERE name = ?1",
    [S_USER_DEFAULT_SET] = "UPDATE users SET default_project = ?2 WHERE name = ?1",
    [S_PEVENT_ADD] = "INSERT INTO project_events(project, name, time_ms, who, event, detail)"
                     " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [S_PEVENT_LIST] = "SELECT id, project, name, time_ms, who, event, detail FROM project_events"
                      " WHERE project = ?1 ORDER BY id",
    /* Folders (docs/folders.md).  A deleted user's or project's shares go with it; a
     * project's folders become their owners' own (project 0). */
    [S_USER_DEL_FSHARES] = "DELETE FROM folder_shares WHERE user = ?1 AND user <> ''",
    [S_PROJECT_DEL_FSHARES] = "DELETE FROM folder_shares WHERE project = ?1 AND project <> 0",
    [S_PROJECT_DEL_FOLDERS] = "UPDATE folders SET project = 0 WHERE project = ?1 AND project <> 0",
    [S_FOLDER_ADD] = "INSERT INTO folders(name, owner, project, created_ms, quota)"
                     " VALUES (?1, ?2, ?3, ?4, ?5)",
    [S_FOLDER_SET_QUOTA] = "UPDATE folders SET quota = ?2 WHERE id = ?1",
    [S_PROJECT_SET_FQUOTA] = "UPDATE projects SET folder_quota = ?2 WHERE id = ?1",
    /* The measured use of the folders of project ?1 (those measured: count, sum) and how many
     * it has. */
    /* total(), not sum(): figures near INT64_MAX saturate instead of failing the query. */
    [S_PROJECT_FOLDER_USE] = "SELECT CAST(min(total(used), 9223372036854775807) AS INTEGER),"
                             " count(used), count(*) FROM folders"
                             " WHERE project = ?1 AND project <> 0",
    [S_FOLDER_SET_USED] = "UPDATE folders SET used = ?2, used_ms = ?3 WHERE id = ?1",
    /* An upload's bytes added (saturating), the time of the last walk kept. */
    [S_FOLDER_ADD_USED] = "UPDATE folders SET used = CASE WHEN used > 9223372036854775807 - ?2"
                          " THEN 9223372036854775807 ELSE used + ?2 END"
                          " WHERE id = ?1 AND used IS NOT NULL",
    /* folders_project (migration 15) is the index: no scan of the other folders. */
    [S_FOLDER_LIST_PROJECT] = "SELECT " FOLDER_COLS " WHERE f.project = ?1 AND f.project <> 0"
                              " ORDER BY f.name",
    [S_FOLDER_GET] = "SELECT " FOLDER_COLS " WHERE f.name = ?1",
    [S_FOLDER_LIST] = "SELECT " FOLDER_COLS " ORDER BY f.name",
    [S_FOLDER_DEL_SHARES] = "DELETE FROM folder_shares WHERE folder = ?1",
    [S_FOLDER_DEL] = "DELETE FROM folders WHERE id = ?1",
    /* The folders of project ?1 and those shared with it. */
    [S_FOLDER_BY_PROJECT] = "SELECT name FROM folders WHERE project = ?1 UNION"
                            " SELECT f.name FROM folders f JOIN folder_shares s"
                            " ON s.folder = f.id WHERE s.project = ?1 ORDER BY 1",
    [S_FOLDER_COUNT_OWNER] = "SELECT count(*) FROM folders WHERE owner = ?1",
    /* The active jobs that mount folder ?1 (by name: "NAME" or "NAME:ro" in jobs.folders). */
    [S_FOLDER_ACTIVE_JOBS] = "SELECT count(*) FROM jobs WHERE state < 2 AND folders IS NOT NULL"
                             " AND EXISTS (SELECT 1 FROM json_each(jobs.folders)"
                             " WHERE value = ?1 OR value = ?1 || ':ro')",
    [S_FSHARE_SET] = "INSERT INTO folder_shares(folder, user, project, rw, added_ms)"
                     " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(folder, user, project)"
                     " DO UPDATE SET rw = excluded.rw",
    [S_FSHARE_DEL] = "DELETE FROM folder_shares WHERE folder = ?1 AND user = ?2 AND project = ?3",
    [S_FSHARE_LIST] = "SELECT s.user, s.project, coalesce(p.name, ''), s.rw, s.added_ms"
                      " FROM folder_shares s LEFT JOIN projects p ON p.id = s.project"
                      " WHERE s.folder = ?1 ORDER BY s.project <> 0, s.user, p.name",
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    /* Services (migration 17). */
    [S_SVC_ADD] = "INSERT INTO services(name, owner, replicas, port, health, concurrency, spec,"
                  " created_ms, split) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [S_SVC_GET] = "SELECT " SVC_COLS " FROM services WHERE name = ?1",
    [S_SVC_LIST] = "SELECT " SVC_COLS " FROM services ORDER BY name",
    [S_SVC_SET_REPLICAS] = "UPDATE services SET replicas = ?2 WHERE id = ?1",
    [S_SVC_DEL] = "DELETE FROM services WHERE id = ?1",
    [S_SVC_DEL_REPLICAS] = "DELETE FROM service_replicas WHERE service = ?1",
    [S_SVC_DEL_TOKENS] = "DELETE FROM service_tokens WHERE service = ?1",
    /* A port taken by a service's proxy or by an active replica. */
    [S_SVC_PORT_USED] = "SELECT (SELECT count(*) FROM services WHERE port = ?1) +"
                        " (SELECT count(*) FROM service_replicas r JOIN jobs j ON j.id = r.job"
                        " WHERE r.port = ?1 AND j.state < 2)",
    /* ?1 NULL: every service. */
    [S_SVC_COUNT_OWNER] = "SELECT count(*) FROM services WHERE ?1 IS NULL OR owner = ?1",
    [S_REPLICA_ADD] = "INSERT INTO service_replicas(job, service, port) VALUES (?1, ?2, ?3)",
    /* A service's replicas, oldest first; ?2 = 1: active ones only ("state < 2" for the
     * partial index jobs_active). */
    [S_REPLICA_LIST] = "SELECT r.job, r.port, j.state, j.suspended_ms, j.placement, j.started_ms,"
                       " j.finished_ms, j.cancel_ms, j.job_pid FROM service_replicas r"
                       " JOIN jobs j ON j.id = r.job"
                       " WHERE r.service = ?1 AND (?2 = 0 OR j.state < 2) ORDER BY r.job",
    [S_REPLICA_PORT] = "SELECT port FROM service_replicas WHERE job = ?1",
    [S_SVC_TOKEN_ADD] = "INSERT INTO service_tokens(service, name, hash, created_ms)"
                        " VALUES (?1, ?2, ?3, ?4)",
    /* Who may call a service: its own tokens and its owner's API tokens. */
    [S_SVC_HASHES] = "SELECT hash FROM service_tokens WHERE service = ?1"
                     " UNION ALL SELECT hash FROM tokens WHERE user = ?2",
    [S_SVC_TOKEN_LIST] = "SELECT id, name, created_ms FROM service_tokens WHERE service = ?1"
                         " ORDER BY id",
    [S_SVC_TOKEN_DEL] = "DELETE FROM service_tokens WHERE service = ?1 AND id = ?2",
    /* A transaction begun inside another one (tstore_begin): a savepoint of the outer one. */
    [S_SAVEPOINT] = "SAVEPOINT tstore_nested",
    [S_RELEASE] = "RELEASE tstore_nested",
    [S_ROLLBACK_TO] = "ROLLBACK TO tstore_nested",
};

/* One change of a tally inside a transaction, kept until the outer transaction ends. */
typedef struct {
    unsigned slot;
    int64_t delta;
} tally_change_t;

/* The maintenance thread (tstore_maint_start). */
typedef struct {
    pthread_t thread;
    sqlite3 *db; /* its own connection */
    int wal_pages;
    /* The WAL hook's own (the writer's thread, under the caller's lock): the size in pages at
     * which the next catch-up is due (maint_wal_hook), and the size after the last commit. */
    int restart_pages, catchup_at, last_pages;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool want, stop; /* under lock */
    atomic_uint_fast64_t checkpoints, frames, errors, catchups, restarts;
} maint_t;

/* Group commit (tstore_group_init, store.h).  A member that waits for its group's commit. */
typedef struct group_wait {
    bool done; /* the commit (or failure) of its group happened: rc, errnum, full, err */
    int rc, errnum;
    bool full;
    tsl_error_t err;
    pthread_cond_t cond; /* its own: signalled when it is done and first in line */
    struct group_wait *next;
} group_wait_t;

typedef struct {
    pthread_mutex_t *lock; /* the caller's; NULL: no group commit */
    pthread_condattr_t ca; /* of the members' conditions: CLOCK_MONOTONIC */
    int max;
    int wait_ms; /* the guard: a member commits its group itself after this */
    bool open;   /* the outer transaction is the group's */
    bool member; /* a member's turn is under way (tstore_group_enter) */
    bool wrote;  /* ... and its writes are in the group */
    bool lost;   /* ... and SQLite rolled the group back since (lost_err) */
    tsl_error_t lost_err;
    int members;       /* members whose writes the open group holds */
    atomic_int coming; /* announced and not yet left (tstore_group_announce) */
    /* Members with writes in their leave, in the order of their turns: first those of groups
     * done (waiting to take the lock back), then those of the open group.  Each returns when
     * it is done and first in line, then signals the next one: the order of the turns is kept
     * and each wakes once (no herd on a shared condition). */
    group_wait_t *head, *tail;
    tstore_group_stats_t stats;
} group_t;

struct tstore {
    sqlite3 *db;
    sqlite3_stmt *st[S_COUNT];
    bool last_full; /* the last error was SQLITE_FULL */
    int nested;     /* savepoints open inside the outer transaction (tstore_begin) */
    /* Tallies (tstore_tally_add): committed values, and the changes of the open transaction
     * with, per open savepoint, where its changes begin (marks[0..nested-1]). */
    int64_t tally[TSTORE_TALLY_MAX];
    tally_change_t *tchg;
    size_t ntchg, captchg;
    size_t *marks;
    size_t capmarks;
    maint_t *maint; /* NULL: none (SQLite's automatic checkpoints) */
    /* The reserve file (tstore_reserve_init); path "" when none. */
    char reserve_path[PATH_MAX];
    uint64_t reserve_bytes;
    bool reserve_held;
    uint64_t reserve_releases;
    group_t group;
};

static const char *const state_names[TSTORE_NSTATES] = {
    "pending", "running", "succeeded", "failed", "cancelled", "preempted",
};
static const char *const class_names[] = {"interactive", "training", "inference"};

const char *tstore_state_name(tstore_state_t s)
{
    return (unsigned)s < TSTORE_NSTATES ? state_names[s] : "unknown";
}

int tstore_state_parse(const char *name)
{
    for (int i = 0; i < TSTORE_NSTATES; i++)
        if (strcmp(name, state_names[i]) == 0)
            return i;
    return -1;
}

const char *tstore_class_name(tstore_class_t c)
{
    return (unsigned)c < 3 ? class_names[c] : "unknown";
}

int tstore_class_parse(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(name, class_names[i]) == 0)
            return i;
    return -1;
}

static const char *const preempt_names[] = {[TSTORE_PREEMPT_NEVER] = "never",
                                            [TSTORE_PREEMPT_REQUEUE] = "requeue",
                                            [TSTORE_PREEMPT_SUSPEND] = "suspend"};

const char *tstore_preempt_name(tstore_preempt_t p)
{
    return p >= TSTORE_PREEMPT_NEVER && p <= TSTORE_PREEMPT_SUSPEND ? preempt_names[p] : "unknown";
}

int tstore_preempt_parse(const char *name)
{
    for (int i = TSTORE_PREEMPT_NEVER; i <= TSTORE_PREEMPT_SUSPEND; i++)
        if (strcmp(name, preempt_names[i]) == 0)
            return i;
    return -1;
}

tstore_preempt_t tstore_job_preemptible(const tstore_job_t *j)
{
    if (j->preemptible >= TSTORE_PREEMPT_NEVER && j->preemptible <= TSTORE_PREEMPT_SUSPEND)
        return j->preemptible;
    return j->klass == TSTORE_CLASS_TRAINING ? TSTORE_PREEMPT_SUSPEND : TSTORE_PREEMPT_NEVER;
}

bool tstore_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > TSTORE_NAME_MAX || name[0] < 'a' || name[0] > 'z')
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* Turn the connection's last error into errno + text; always -1. */
static int db_error(tstore_t *s, tsl_error_t *err, const char *what)
{
    int code = sqlite3_extended_errcode(s->db);
    s->last_full = (code & 0xff) == SQLITE_FULL;
    errno = (code & 0xff) == SQLITE_CONSTRAINT ? EEXIST : EIO;
    return tsl_errprintf(err, "store: %s: %s", what, sqlite3_errmsg(s->db));
}

static void group_settle(tstore_t *s);
static void group_lost(tstore_t *s);
static int group_open(tstore_t *s, tsl_error_t *err);

static sqlite3_stmt *stmt(tstore_t *s, int id)
{
    group_settle(s); /* anyone but a member sees no open group */
    if (s->group.member && !s->group.open && id != S_BEGIN)
        group_open(s, NULL); /* when it fails, the statement runs on its own */
    sqlite3_stmt *q = s->st[id];
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return q;
}

static void bind_text(sqlite3_stmt *q, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(q, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, i);
}

/* Run a statement that returns no rows.  Returns the number of changed rows, or -1. */
static int exec_stmt(tstore_t *s, sqlite3_stmt *q, tsl_error_t *err, const char *what)
{
    bool in_tx = !sqlite3_get_autocommit(s->db);
    int rc = sqlite3_step(q);
    if ((rc & 0xff) == SQLITE_FULL && s->reserve_held) {
        /* Disk full: give the reserve back and run the statement again when SQLite undid only
         * this statement: outside a transaction, or inside one that is still open (COMMIT
         * included).  When SQLite rolled back the whole transaction, running this statement
         * alone would break its atomicity: the caller sees the error. */
        bool again = !in_tx || !sqlite3_get_autocommit(s->db);
        uint64_t n = tstore_reserve_release(s);
        fprintf(stderr, "tessel store: disk full during %s: gave back the %llu-byte reserve%s\n",
                what, (unsigned long long)n, again ? ", trying again" : "");
        if (again) {
            sqlite3_reset(q);
            rc = sqlite3_step(q);
        }
    }
    if (rc != SQLITE_DONE) {
        db_error(s, err, what);
        sqlite3_reset(q);
        return -1;
    }
    sqlite3_reset(q);
    return sqlite3_changes(s->db);
}

static int migrate(tstore_t *s, tsl_error_t *err)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &q, NULL) != SQLITE_OK)
        return db_error(s, err, "user_version");
    int version = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : 0;
    sqlite3_finalize(q);
    if (version > NMIGRATIONS) {
        errno = EPROTO;
        return tsl_errprintf(err, "store: schema version %d is newer than this tesseld (%d)",
                             version, NMIGRATIONS);
    }
    for (int v = version; v < NMIGRATIONS; v++) {
        char setv[64];
        snprintf(setv, sizeof setv, "PRAGMA user_version = %d", v + 1);
        if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
            return db_error(s, err, "migration");
        if (sqlite3_exec(s->db, migrations[v], NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_exec(s->db, setv, NULL, NULL, NULL) != SQLITE_OK) {
            db_error(s, err, "migration");
            int saved = errno;
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            errno = saved;
            return -1;
        }
        if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            return db_error(s, err, "migration commit");
    }
    return 0;
}

tstore_t *tstore_open(const char *path, tsl_error_t *err)
{
    tstore_t *s = calloc(1, sizeof *s);
    if (!s) {
        tsl_errprintf(err, "store: out of memory");
        return NULL;
    }
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        db_error(s, err, path);
        goto error;
    }
    /* WAL + NORMAL: commits are durable against a crash of the process (the pages are in the
     * WAL file, which the OS keeps), not against power loss or an OS crash (tstore_set_durable
     * for that); busy_timeout covers a second process reading the file
     * (sqlite3 CLI, tests). */
    if (sqlite3_exec(s->db,
                     "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                     " PRAGMA foreign_keys = OFF; PRAGMA busy_timeout = 5000;",
                     NULL, NULL, NULL) != SQLITE_OK) {
        db_error(s, err, "pragma");
        goto error;
    }
    if (migrate(s, err) < 0)
        goto error;
    for (int i = 0; i < S_COUNT; i++) {
        if (sqlite3_prepare_v3(s->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL) !=
            SQLITE_OK) {
            db_error(s, err, "prepare");
            goto error;
        }
    }
    return s;
error : {
    int saved = errno;
    tstore_close(s);
    errno = saved;
    return NULL;
}
}

static void maint_stop(tstore_t *s);

void tstore_close(tstore_t *s)
{
    if (!s)
        return;
    group_settle(s);
    maint_stop(s);
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    /* The last connection to close checkpoints the WAL into the database (SQLite). */
    sqlite3_close(s->db);
    if (s->group.lock)
        pthread_condattr_destroy(&s->group.ca);
    free(s->tchg);
    free(s->marks);
    free(s);
}

/* ---- maintenance off the request path ---- */

/* A checkpoint on the store's own connection, in its WAL hook (maint_wal_hook): copies what
 * the thread's checkpoints have not copied yet; counted like theirs. */
static void maint_catchup(maint_t *m, sqlite3 *db, const char *name)
{
    int log = 0, done = 0;
    int rc = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
        return; /* the thread checkpoints right now, or a statement of this connection still
                 * reads: the next commit tries again */
    /* Tried: not again before the WAL has grown by another sixteenth of the threshold (a
     * reader of another connection holding an old snapshot keeps the WAL from starting over;
     * the commits must not each pay a checkpoint meanwhile). */
    m->catchup_at = log + m->restart_pages / 16 + 1;
    if (rc == SQLITE_OK) {
        atomic_fetch_add(&m->catchups, 1);
        atomic_fetch_add(&m->frames, (uint_fast64_t)(done > 0 ? done : 0));
    } else {
        atomic_fetch_add(&m->errors, 1);
        fprintf(stderr, "tessel store: checkpoint: %s (tried again later)\n", sqlite3_errmsg(db));
    }
}

/* The WAL hook of the store's own connection, called after each commit (under the caller's
 * lock, on the request path), with the WAL's size in pages.  Below restart_pages it only wakes
 * the maintenance thread when the WAL has grown past wal_pages.  At restart_pages it runs one
 * checkpoint itself (maint_catchup), because under a steady stream of commits the thread's
 * PASSIVE checkpoints never catch up: the WAL starts over (SQLite writes from its beginning
 * again) only when a write transaction begins with every frame copied, so without this it
 * grew without bound (360 MB in 8 s at 2,000 submissions/s) and every read searched a larger
 * WAL index.  That checkpoint copies only the frames since the thread's last one, but it
 * makes this commit's caller wait for it (the WAL's and the database's fsyncs): once per
 * restart_pages pages of WAL, under a steady stream only. */
static int maint_wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    maint_t *m = arg;
    if (pages < m->last_pages) {
        atomic_fetch_add(&m->restarts, 1);
        m->catchup_at = m->restart_pages;
    }
    m->last_pages = pages;
    if (pages >= m->catchup_at) {
        maint_catchup(m, db, name);
    } else if (pages >= m->wal_pages) {
        pthread_mutex_lock(&m->lock);
        m->want = true;
        pthread_cond_signal(&m->cond);
        pthread_mutex_unlock(&m->lock);
    }
    return SQLITE_OK;
}

/* Least time between two checkpoints: a checkpoint that could not copy every frame (a reader
 * holds an older snapshot) is not tried again at every commit. */
#define MAINT_MIN_GAP_MS 20

static void *maint_main(void *arg)
{
    maint_t *m = arg;
    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (!m->want && !m->stop)
            pthread_cond_wait(&m->cond, &m->lock);
        if (m->stop)
            break;
        m->want = false;
        pthread_mutex_unlock(&m->lock);
        /* PASSIVE: copies what it can without waiting for readers or the writer, and never
         * makes them wait (SQLite takes no writer lock for it).  With synchronous NORMAL or
         * FULL it syncs the WAL before and the database after: those fsyncs are here now, in
         * this thread, not in a submission's commit. */
        int log = 0, done = 0;
        int rc = sqlite3_wal_checkpoint_v2(m->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        if (rc == SQLITE_OK) {
            atomic_fetch_add(&m->checkpoints, 1);
            atomic_fetch_add(&m->frames, (uint_fast64_t)(done > 0 ? done : 0));
        } else if (rc != SQLITE_BUSY) {
            /* Reported, not dropped: the next commit over the threshold tries again, and the
             * WAL keeps every commit meanwhile (only its file grows). */
            atomic_fetch_add(&m->errors, 1);
            fprintf(stderr, "tessel store: checkpoint: %s (tried again after the next commit)\n",
                    sqlite3_errmsg(m->db));
        }
        struct timespec ts = {0, MAINT_MIN_GAP_MS * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

int tstore_maint_start(tstore_t *s, int wal_pages, int restart_pages, tsl_error_t *err)
{
    if (s->maint || wal_pages < 1 || restart_pages < wal_pages) {
        errno = s->maint ? EBUSY : EINVAL;
        return tsl_errprintf(err, "store maintenance: %s",
                             s->maint        ? "started already"
                             : wal_pages < 1 ? "WAL threshold must be >= 1 page"
                                             : "restart threshold below the WAL threshold");
    }
    const char *path = sqlite3_db_filename(s->db, "main");
    if (!path || !*path) {
        errno = EINVAL;
        return tsl_errprintf(err, "store maintenance: the store has no file");
    }
    maint_t *m = calloc(1, sizeof *m);
    if (!m) {
        errno = ENOMEM;
        return tsl_errprintf(err, "store maintenance: out of memory");
    }
    m->wal_pages = wal_pages;
    m->restart_pages = m->catchup_at = restart_pages;
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cond, NULL);
    /* Its own connection (no shared cache): SQLite connections are not shared across threads
     * here, and the store's one stays the caller's alone.  synchronous NORMAL: a checkpoint
     * syncs the WAL before copying and the database after (never OFF). */
    int rc = sqlite3_open_v2(path, &m->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(m->db, "PRAGMA synchronous = NORMAL;", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        errno = EIO;
        tsl_errprintf(err, "store maintenance: %s: %s", path,
                      m->db ? sqlite3_errmsg(m->db) : "cannot open");
        goto fail;
    }
    /* The thread takes no signal (it inherits this mask): the process's handling of them
     * (tesseld's signalfd, blocked in its other threads) stays the caller's. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&m->thread, NULL, maint_main, m);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        tsl_errprintf(err, "store maintenance: thread: %s", strerror(rc));
        goto fail;
    }
    s->maint = m;
    /* Replaces SQLite's automatic checkpoint (itself a WAL hook): commits no longer run one. */
    sqlite3_wal_hook(s->db, maint_wal_hook, m);
    return 0;
fail : {
    int saved = errno;
    sqlite3_close(m->db);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock);
    free(m);
    errno = saved;
    return -1;
}
}

static void maint_stop(tstore_t *s)
{
    maint_t *m = s->maint;
    if (!m)
        return;
    sqlite3_wal_hook(s->db, NULL, NULL);
    pthread_mutex_lock(&m->lock);
    m->stop = true;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL);
    sqlite3_close(m->db);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock);
    free(m);
    s->maint = NULL;
}

void tstore_maint_stats(const tstore_t *s, tstore_maint_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (!s->maint)
        return;
    out->running = true;
    out->checkpoints = atomic_load(&s->maint->checkpoints);
    out->frames = atomic_load(&s->maint->frames);
    out->errors = atomic_load(&s->maint->errors);
    out->catchups = atomic_load(&s->maint->catchups);
    out->restarts = atomic_load(&s->maint->restarts);
}

int tstore_set_durable(tstore_t *s, bool full, tsl_error_t *err)
{
    group_settle(s);
    if (sqlite3_exec(s->db, full ? "PRAGMA synchronous = FULL;" : "PRAGMA synchronous = NORMAL;",
                     NULL, NULL, NULL) != SQLITE_OK) {
        db_error(s, err, "pragma synchronous");
        return -1;
    }
    return 0;
}

int tstore_reserve_init(tstore_t *s, const char *path, uint64_t bytes, tsl_error_t *err)
{
    if (strlen(path) >= sizeof s->reserve_path || bytes == 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "store reserve: bad path or size");
    }
    snprintf(s->reserve_path, sizeof s->reserve_path, "%s", path);
    s->reserve_bytes = bytes;
    s->reserve_held = false;
    return tstore_reserve_restore(s, err);
}

bool tstore_reserve_held(const tstore_t *s)
{
    return s->reserve_held;
}

uint64_t tstore_reserve_releases(const tstore_t *s)
{
    return s->reserve_releases;
}

bool tstore_last_full(const tstore_t *s)
{
    return s->last_full;
}

uint64_t tstore_reserve_release(tstore_t *s)
{
    if (!s->reserve_held)
        return 0;
    s->reserve_held = false;
    s->reserve_releases++;
    /* Unlinking frees the blocks at once: no one else keeps the file open. */
    if (unlink(s->reserve_path) < 0 && errno != ENOENT)
        return 0;
    return s->reserve_bytes;
}

int tstore_reserve_restore(tstore_t *s, tsl_error_t *err)
{
    if (!s->reserve_path[0] || s->reserve_held)
        return 0;
    /* O_NOFOLLOW, 0600: the file sits in tesseld's own directory, beside the store. */
    int fd = open(s->reserve_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return tsl_errprintf(err, "store reserve %s: %s", s->reserve_path, strerror(errno));
    /* Allocated blocks, not a sparse file: posix_fallocate (glibc writes zeros where the file
     * system cannot allocate). */
    int rc = posix_fallocate(fd, 0, (off_t)s->reserve_bytes);
    if (rc == 0 && fsync(fd) < 0)
        rc = errno;
    close(fd);
    if (rc != 0) {
        unlink(s->reserve_path);
        errno = rc;
        return tsl_errprintf(err, "store reserve %s (%llu bytes): %s", s->reserve_path,
                             (unsigned long long)s->reserve_bytes, strerror(rc));
    }
    s->reserve_held = true;
    return 0;
}

int tstore_schema_version(tstore_t *s)
{
    (void)s;
    return NMIGRATIONS;
}

int tstore_begin(tstore_t *s, tsl_error_t *err)
{
    group_settle(s);
    if (s->group.open && sqlite3_get_autocommit(s->db))
        group_lost(s); /* SQLite rolled the group's transaction back (an error) */
    if (s->group.member && !s->group.open && group_open(s, err) < 0)
        return -1;
    if (!sqlite3_get_autocommit(s->db)) {
        /* Room for the savepoint's mark first: nothing to undo when there is none. */
        if ((size_t)s->nested == s->capmarks) {
            size_t cap = s->capmarks ? s->capmarks * 2 : 4;
            size_t *m = realloc(s->marks, cap * sizeof *m);
            if (!m) {
                errno = ENOMEM;
                return tsl_errprintf(err, "store: savepoint: out of memory");
            }
            s->marks = m;
            s->capmarks = cap;
        }
        if (exec_stmt(s, stmt(s, S_SAVEPOINT), err, "savepoint") < 0)
            return -1;
        s->marks[s->nested++] = s->ntchg;
        return 0;
    }
    s->nested = 0;
    s->ntchg = 0;
    return exec_stmt(s, stmt(s, S_BEGIN), err, "begin") < 0 ? -1 : 0;
}

int tstore_commit(tstore_t *s, tsl_error_t *err)
{
    if (s->nested > 0) {
        if (exec_stmt(s, stmt(s, S_RELEASE), err, "release") < 0) {
            int saved = errno;
            tstore_rollback(s);
            errno = saved;
            return -1;
        }
        s->nested--; /* its tally changes now belong to the transaction around it */
        if (s->nested == 0 && s->group.member && s->group.open && !s->group.wrote) {
            s->group.wrote = true; /* the member's writes are in the group */
            s->group.members++;
        }
        return 0;
    }
    if (exec_stmt(s, stmt(s, S_COMMIT), err, "commit") < 0) {
        int saved = errno;
        tstore_rollback(s);
        errno = saved;
        return -1;
    }
    for (size_t i = 0; i < s->ntchg; i++)
        s->tally[s->tchg[i].slot] += s->tchg[i].delta;
    s->ntchg = 0;
    return 0;
}

void tstore_rollback(tstore_t *s)
{
    if (sqlite3_get_autocommit(s->db)) {
        s->nested = 0; /* SQLite ended the transaction itself (an error) */
        s->ntchg = 0;
        if (s->group.open)
            group_lost(s); /* ... and with it the group's */
        return;
    }
    if (s->nested > 0) {
        exec_stmt(s, stmt(s, S_ROLLBACK_TO), NULL, "rollback to");
        exec_stmt(s, stmt(s, S_RELEASE), NULL, "release");
        s->ntchg = s->marks[--s->nested];
        return;
    }
    exec_stmt(s, stmt(s, S_ROLLBACK), NULL, "rollback");
    s->ntchg = 0;
}

/* ---- group commit (store.h) ---- */

/* The open group ended (rc 0: committed; -1: failed or rolled back, errnum and err): every
 * waiting member gets the outcome, and the group is closed. */
static void group_done(tstore_t *s, int rc, int errnum, const tsl_error_t *err)
{
    group_t *g = &s->group;
    if (g->members > 0) {
        g->stats.commits++;
        g->stats.members += (uint64_t)g->members;
        if ((uint64_t)g->members > g->stats.largest)
            g->stats.largest = (uint64_t)g->members;
        if (rc < 0)
            g->stats.failed++;
    }
    if (g->member && g->wrote && rc < 0) {
        /* During a member's turn (SQLite rolled the group back): its leave fails too. */
        g->lost = true;
        g->wrote = false;
        g->lost_err = *err;
    }
    for (group_wait_t *w = g->head; w; w = w->next) {
        if (w->done)
            continue; /* of an earlier group */
        w->done = true;
        w->rc = rc;
        w->errnum = errnum;
        w->full = s->last_full;
        if (rc < 0)
            w->err = *err;
    }
    g->open = false;
    g->members = 0;
    if (g->head)
        pthread_cond_signal(&g->head->cond);
}

/* A member's first statement opens the group's transaction (BEGIN IMMEDIATE), its reads
 * included: one transaction's locks (a few fcntl calls) for the whole turn instead of one
 * set per statement.  Its writes are a savepoint inside it (tstore_begin). */
static int group_open(tstore_t *s, tsl_error_t *err)
{
    s->nested = 0;
    s->ntchg = 0;
    if (exec_stmt(s, stmt(s, S_BEGIN), err, "begin") < 0)
        return -1;
    s->group.open = true;
    return 0;
}

/* SQLite rolled back the open group's transaction on an error: its members' writes are gone,
 * and they fail. */
static void group_lost(tstore_t *s)
{
    tsl_error_t e;
    tsl_errprintf(&e, "store: the transaction of a group commit was rolled back: %s",
                  sqlite3_errmsg(s->db));
    group_done(s, -1, EIO, &e);
}

/* Commit the open group.  0, or -1 with errno and err (the group rolled back). */
static int group_commit(tstore_t *s, tsl_error_t *err)
{
    if (sqlite3_get_autocommit(s->db)) {
        group_lost(s);
        errno = EIO;
        return tsl_errprintf(err, "store: the transaction of a group commit was rolled back");
    }
    tsl_error_t e = {{0}};
    s->group.open = false; /* the COMMIT below is not a member's: no settling inside it */
    s->nested = 0;
    int rc = tstore_commit(s, &e);
    int errnum = errno;
    group_done(s, rc, errnum, &e);
    if (rc < 0 && err)
        *err = e;
    errno = errnum;
    return rc;
}

/* Called by every call that touches the connection: outside a member's turn, an open group is
 * committed first.  Its outcome is its members' (they hear it in tstore_group_leave). */
static void group_settle(tstore_t *s)
{
    if (s->group.open && !s->group.member)
        group_commit(s, NULL);
}

int tstore_group_init(tstore_t *s, pthread_mutex_t *lock, int max, int wait_ms, tsl_error_t *err)
{
    if (!lock || max < 1 || wait_ms < 1 || s->group.lock) {
        errno = s->group.lock ? EBUSY : EINVAL;
        return tsl_errprintf(err, "store group commit: %s",
                             s->group.lock ? "turned on already"
                                           : "needs a lock, max >= 1 and wait_ms >= 1");
    }
    if (!sqlite3_get_autocommit(s->db)) {
        errno = EBUSY;
        return tsl_errprintf(err, "store group commit: a transaction is open");
    }
    int rc = pthread_condattr_init(&s->group.ca);
    if (rc == 0)
        rc = pthread_condattr_setclock(&s->group.ca, CLOCK_MONOTONIC);
    if (rc != 0) {
        errno = rc;
        return tsl_errprintf(err, "store group commit: %s", strerror(rc));
    }
    s->group.lock = lock;
    s->group.max = max;
    s->group.wait_ms = wait_ms;
    return 0;
}

void tstore_group_announce(tstore_t *s)
{
    if (s->group.lock)
        atomic_fetch_add(&s->group.coming, 1);
}

void tstore_group_enter(tstore_t *s)
{
    if (s->group.lock)
        s->group.member = true;
}

/* Wait on w's condition (the caller's lock released) for at most wait_ms. */
static int group_wait(group_t *g, group_wait_t *w)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += g->wait_ms / 1000;
    until.tv_nsec += g->wait_ms % 1000 * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    return pthread_cond_timedwait(&w->cond, g->lock, &until);
}

int tstore_group_leave(tstore_t *s, tsl_error_t *err)
{
    group_t *g = &s->group;
    if (!g->lock || !g->member)
        return 0;
    /* A turn ends with its savepoints closed: what it left open is undone, not committed. */
    while (s->nested > 0 && g->open)
        tstore_rollback(s);
    bool mine = g->wrote || g->lost;
    group_wait_t w = {.done = g->lost, .rc = -1, .errnum = EIO, .err = g->lost_err};
    g->member = g->wrote = g->lost = false;
    bool others = atomic_fetch_sub(&g->coming, 1) > 1;
    if (!mine) {
        if (g->open && !others)
            group_commit(s, NULL); /* the others' group: they hear its outcome */
        return 0;
    }
    /* In line: members with writes return in the order of their turns, so that what the
     * caller does next under the lock (tesseld hands the jobs to its scheduler) keeps it. */
    int rc = pthread_cond_init(&w.cond, &g->ca);
    if (rc != 0) {
        /* No condition to wait on: commit the group now (the others hear it) and return out
         * of line (only the order of what the caller does next can suffer). */
        if (!w.done && g->open)
            return group_commit(s, err);
        if (w.done && err)
            *err = w.err;
        errno = w.errnum;
        return w.done ? -1 : 0;
    }
    if (g->tail)
        g->tail->next = &w;
    else
        g->head = &w;
    g->tail = &w;
    if (!w.done && (!others || g->members >= g->max))
        group_commit(s, NULL); /* done: w, and every member waiting in the group */
    while (!w.done || g->head != &w)
        if (group_wait(g, &w) == ETIMEDOUT && !w.done && g->open && !g->member)
            group_commit(s, NULL); /* nobody came to commit it: the guard (wait_ms) */
    g->head = w.next;
    if (!g->head)
        g->tail = NULL;
    else if (g->head->done)
        pthread_cond_signal(&g->head->cond); /* the next in line */
    pthread_cond_destroy(&w.cond);
    if (w.rc < 0) {
        s->last_full = w.full;
        if (err)
            *err = w.err;
        errno = w.errnum;
        return -1;
    }
    return 0;
}

void tstore_group_stats(const tstore_t *s, tstore_group_stats_t *out)
{
    *out = s->group.stats;
}

int tstore_tally_add(tstore_t *s, unsigned slot, int64_t delta, tsl_error_t *err)
{
    if (slot >= TSTORE_TALLY_MAX) {
        errno = EINVAL;
        return tsl_errprintf(err, "store: tally %u out of range", slot);
    }
    if (sqlite3_get_autocommit(s->db)) {
        s->tally[slot] += delta;
        return 0;
    }
    if (s->ntchg == s->captchg) {
        size_t cap = s->captchg ? s->captchg * 2 : 64;
        tally_change_t *c = realloc(s->tchg, cap * sizeof *c);
        if (!c) {
            errno = ENOMEM;
            return tsl_errprintf(err, "store: tally: out of memory");
        }
        s->tchg = c;
        s->captchg = cap;
    }
    s->tchg[s->ntchg++] = (tally_change_t){slot, delta};
    return 0;
}

int64_t tstore_tally_get(const tstore_t *s, unsigned slot)
{
    return slot < TSTORE_TALLY_MAX ? s->tally[slot] : 0;
}

int tstore_tally_reset(tstore_t *s, const int64_t *values, size_t n, tsl_error_t *err)
{
    if (n > TSTORE_TALLY_MAX || !sqlite3_get_autocommit(s->db)) {
        errno = n > TSTORE_TALLY_MAX ? EINVAL : EBUSY;
        return tsl_errprintf(err, "store: tallies reset %s",
                             n > TSTORE_TALLY_MAX ? "with too many values"
                                                  : "inside a transaction");
    }
    memset(s->tally, 0, sizeof s->tally);
    memcpy(s->tally, values, n * sizeof *values);
    return 0;
}

static int not_found(tsl_error_t *err, const char *what)
{
    errno = ENOENT;
    return tsl_errprintf(err, "%s not found", what);
}

int tstore_meta_get(tstore_t *s, const char *key, char *buf, size_t len, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_META_GET);
    bind_text(q, 1, key);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        snprintf(buf, len, "%s", (const char *)sqlite3_column_text(q, 0));
        sqlite3_reset(q);
        return 0;
    }
    sqlite3_reset(q);
    if (rc == SQLITE_DONE)
        return not_found(err, key);
    return db_error(s, err, "meta");
}

int tstore_meta_set(tstore_t *s, const char *key, const char *value, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_META_SET);
    bind_text(q, 1, key);
    bind_text(q, 2, value);
    return exec_stmt(s, q, err, "meta") < 0 ? -1 : 0;
}

int tstore_user_add(tstore_t *s, const char *name, const char *role, int64_t now_ms,
                    tsl_error_t *err)
{
    if (tstore_begin(s, err) < 0)
        return -1;
    sqlite3_stmt *q = stmt(s, S_USER_ADD);
    bind_text(q, 1, name);
    bind_text(q, 2, role);
    sqlite3_bind_int64(q, 3, now_ms);
    if (exec_stmt(s, q, err, "add user") < 0) {
        if (errno == EEXIST)
            tsl_errprintf(err, "user '%s' already exists", name);
        goto error;
    }
    /* Every user is a member of the project 'default' (migration 12). */
    q = stmt(s, S_USER_ADD_DEFAULT_MEMBER);
    bind_text(q, 1, name);
    sqlite3_bind_int64(q, 2, now_ms);
    if (exec_stmt(s, q, err, "add user to project 'default'") < 0)
        goto error;
    return tstore_commit(s, err);
error : {
    int saved = errno;
    tstore_rollback(s);
    errno = saved;
    return -1;
}
}

static void row_user(sqlite3_stmt *q, int c, tstore_user_t *u)
{
    snprintf(u->name, sizeof u->name, "%s", (const char *)sqlite3_column_text(q, c));
    snprintf(u->role, sizeof u->role, "%s", (const char *)sqlite3_column_text(q, c + 1));
    u->created_ms = sqlite3_column_int64(q, c + 2);
}

int tstore_user_get(tstore_t *s, const char *name, tstore_user_t *out, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_USER_GET);
    bind_text(q, 1, name);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        row_user(q, 0, out);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? not_found(err, "user") : db_error(s, err, "user");
}

int tstore_user_list(tstore_t *s, int (*cb)(const tstore_user_t *, void *), void *arg,
                     tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_USER_LIST);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_user_t u;
        row_user(q, 0, &u);
        if (cb(&u, arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "list users");
}

int tstore_user_del(tstore_t *s, const char *name, tsl_error_t *err)
{
    if (tstore_begin(s, err) < 0)
        return -1;
    sqlite3_stmt *q = stmt(s, S_USER_DEL_TOKENS);
    bind_text(q, 1, name);
    if (exec_stmt(s, q, err, "delete tokens") < 0)
        goto error;
    q = stmt(s, S_USER_DEL_MEMBERS);
    bind_text(q, 1, name);
    if (exec_stmt(s, q, err, "delete project memberships") < 0)
        goto error;
    q = stmt(s, S_USER_DEL_FSHARES);
    bind_text(q, 1, name);
    if (exec_stmt(s, q, err, "delete folder shares") < 0)
        goto error;
    q = stmt(s, S_USER_DEL);
    bind_text(q, 1, name);
    int n = exec_stmt(s, q, err, "delete user");
    if (n < 0)
        goto error;
    if (n == 0) {
        not_found(err, "user");
        goto error;
    }
    return tstore_commit(s, err);
error : {
    int saved = errno;
    tstore_rollback(s);
    errno = saved;
    return -1;
}
}

static int count_query(tstore_t *s, sqlite3_stmt *q, int64_t *n, tsl_error_t *err)
{
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *n = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "count");
}

int tstore_user_count(tstore_t *s, int64_t *n, tsl_error_t *err)
{
    return count_query(s, stmt(s, S_USER_COUNT), n, err);
}

int tstore_user_active_jobs(tstore_t *s, const char *user, int64_t *n, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_USER_ACTIVE);
    bind_text(q, 1, user);
    return count_query(s, q, n, err);
}

int64_t tstore_token_add(tstore_t *s, const char *user, const char *name,
                         const unsigned char hash[32], int64_t now_ms, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_TOKEN_ADD);
    bind_text(q, 1, user);
    bind_text(q, 2, name ? name : "");
    sqlite3_bind_blob(q, 3, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, now_ms);
    if (exec_stmt(s, q, err, "add token") < 0)
        return -1;
    return sqlite3_last_insert_rowid(s->db);
}

static void row_token(sqlite3_stmt *q, tstore_token_t *t)
{
    t->id = sqlite3_column_int64(q, 0);
    snprintf(t->user, sizeof t->user, "%s", (const char *)sqlite3_column_text(q, 1));
    snprintf(t->name, sizeof t->name, "%s", (const char *)sqlite3_column_text(q, 2));
    t->created_ms = sqlite3_column_int64(q, 3);
}

int tstore_token_auth(tstore_t *s, const unsigned char hash[32], tstore_token_t *tok,
                      tstore_user_t *user, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_TOKEN_AUTH);
    sqlite3_bind_blob(q, 1, hash, 32, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        row_token(q, tok);
        snprintf(user->name, sizeof user->name, "%s", tok->user);
        snprintf(user->role, sizeof user->role, "%s", (const char *)sqlite3_column_text(q, 4));
        user->created_ms = sqlite3_column_int64(q, 5);
    }
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? not_found(err, "token") : db_error(s, err, "token");
}

int tstore_token_get(tstore_t *s, int64_t id, tstore_token_t *out, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_TOKEN_GET);
    sqlite3_bind_int64(q, 1, id);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        row_token(q, out);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? not_found(err, "token") : db_error(s, err, "token");
}

int tstore_token_list(tstore_t *s, const char *user, int (*cb)(const tstore_token_t *, void *),
                      void *arg, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, user ? S_TOKEN_LIST : S_TOKEN_LIST_ALL);
    if (user)
        bind_text(q, 1, user);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_token_t t;
        row_token(q, &t);
        if (cb(&t, arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "list tokens");
}

int tstore_token_del(tstore_t *s, int64_t id, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_TOKEN_DEL);
    sqlite3_bind_int64(q, 1, id);
    int n = exec_stmt(s, q, err, "delete token");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "token") : 0;
}

static void bind_opt(sqlite3_stmt *q, int i, int64_t v)
{
    if (v >= 0)
        sqlite3_bind_int64(q, i, v);
    else
        sqlite3_bind_null(q, i);
}

static int64_t col_opt(sqlite3_stmt *q, int c)
{
    return sqlite3_column_type(q, c) == SQLITE_NULL ? -1 : sqlite3_column_int64(q, c);
}

/* Binds a queue in QUEUE_COLS order (created_ms too). */
static void bind_queue(sqlite3_stmt *q, const tstore_queue_t *qu)
{
    bind_text(q, 1, qu->name);
    sqlite3_bind_int(q, 2, qu->priority);
    bind_opt(q, 3, qu->limit.gpu_milli);
    sqlite3_bind_int64(q, 4, qu->created_ms);
    sqlite3_bind_int(q, 5, qu->weight > 0 ? qu->weight : 1);
    bind_opt(q, 6, qu->guarantee.gpu_milli);
    bind_text(q, 7, qu->parent[0] ? qu->parent : NULL);
    bind_opt(q, 8, qu->guarantee.gpu_mem);
    bind_opt(q, 9, qu->guarantee.cpu_milli);
    bind_opt(q, 10, qu->guarantee.mem);
    bind_opt(q, 11, qu->limit.gpu_mem);
    bind_opt(q, 12, qu->limit.cpu_milli);
    bind_opt(q, 13, qu->limit.mem);
    bind_text(q, 14, qu->allow_users[0] ? qu->allow_users : NULL);
    bind_text(q, 15, qu->allow_groups[0] ? qu->allow_groups : NULL);
    bind_text(q, 16, qu->allow_roles[0] ? qu->allow_roles : NULL);
    bind_opt(q, 17, qu->reserve_after_s);
    bind_text(q, 18, qu->placement[0] ? qu->placement : NULL);
    bind_opt(q, 19, qu->limit_ngpu > 0 ? qu->limit_ngpu : -1);
    bind_opt(q, 20, qu->idle_reclaim_s); /* -1: NULL, its parent's */
    bind_opt(q, 21, qu->gpu_oversub);    /* -1: NULL, its parent's */
}

int tstore_queue_add(tstore_t *s, const tstore_queue_t *qu, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_QUEUE_ADD);
    bind_queue(q, qu);
    if (exec_stmt(s, q, err, "add queue") < 0) {
        if (errno == EEXIST)
            tsl_errprintf(err, "queue '%s' already exists", qu->name);
        return -1;
    }
    return 0;
}

static void row_queue(sqlite3_stmt *q, tstore_queue_t *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", (const char *)sqlite3_column_text(q, 0));
    out->priority = sqlite3_column_int(q, 1);
    out->limit.gpu_milli = col_opt(q, 2);
    out->created_ms = sqlite3_column_int64(q, 3);
    out->weight = sqlite3_column_int(q, 4);
    out->guarantee.gpu_milli = col_opt(q, 5);
    if (sqlite3_column_type(q, 6) != SQLITE_NULL)
        snprintf(out->parent, sizeof out->parent, "%s", (const char *)sqlite3_column_text(q, 6));
    out->guarantee.gpu_mem = col_opt(q, 7);
    out->guarantee.cpu_milli = col_opt(q, 8);
    out->guarantee.mem = col_opt(q, 9);
    out->limit.gpu_mem = col_opt(q, 10);
    out->limit.cpu_milli = col_opt(q, 11);
    out->limit.mem = col_opt(q, 12);
    char *acl[3] = {out->allow_users, out->allow_groups, out->allow_roles};
    for (int i = 0; i < 3; i++)
        if (sqlite3_column_type(q, 13 + i) != SQLITE_NULL)
            snprintf(acl[i], TSTORE_ACL_LEN, "%s", (const char *)sqlite3_column_text(q, 13 + i));
    out->reserve_after_s = col_opt(q, 16);
    if (sqlite3_column_type(q, 17) != SQLITE_NULL)
        snprintf(out->placement, sizeof out->placement, "%s",
                 (const char *)sqlite3_column_text(q, 17));
    out->limit_ngpu = col_opt(q, 18) > 0 ? col_opt(q, 18) : 0;
    out->idle_reclaim_s = col_opt(q, 19); /* NULL: -1, its parent's */
    out->gpu_oversub = col_opt(q, 20);    /* NULL: -1, its parent's */
}

int tstore_gpu_speed_set(tstore_t *s, const tstore_gpu_speed_t *g, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_GPU_SPEED_SET);
    bind_text(q, 1, g->model);
    sqlite3_bind_int64(q, 2, g->speed_milli);
    bind_text(q, 3, g->set_by);
    sqlite3_bind_int64(q, 4, g->set_ms);
    return exec_stmt(s, q, err, "set GPU speed") < 0 ? -1 : 0;
}

int tstore_gpu_speed_del(tstore_t *s, const char *model, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_GPU_SPEED_DEL);
    bind_text(q, 1, model);
    if (exec_stmt(s, q, err, "delete GPU speed") < 0)
        return -1;
    if (sqlite3_changes(s->db) == 0) {
        errno = ENOENT;
        return tsl_errprintf(err, "no speed set for GPU model '%s'", model);
    }
    return 0;
}

int tstore_gpu_speed_list(tstore_t *s, int (*cb)(const tstore_gpu_speed_t *, void *), void *arg,
                          tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_GPU_SPEED_LIST);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_gpu_speed_t g;
        memset(&g, 0, sizeof g);
        snprintf(g.model, sizeof g.model, "%s", (const char *)sqlite3_column_text(q, 0));
        g.speed_milli = sqlite3_column_int64(q, 1);
        snprintf(g.set_by, sizeof g.set_by, "%s", (const char *)sqlite3_column_text(q, 2));
        g.set_ms = sqlite3_column_int64(q, 3);
        if (cb(&g, arg) != 0)
            break;
    }
    sqlite3_reset(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_error(s, err, "list GPU speeds");
    return 0;
}

int tstore_queue_get(tstore_t *s, const char *name, tstore_queue_t *out, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_QUEUE_GET);
    bind_text(q, 1, name);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        row_queue(q, out);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? not_found(err, "queue") : db_error(s, err, "queue");
}

int tstore_queue_update(tstore_t *s, const tstore_queue_t *qu, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_QUEUE_UPDATE);
    bind_queue(q, qu);
    int n = exec_stmt(s, q, err, "update queue");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "queue") : 0;
}

int tstore_queue_list(tstore_t *s, int (*cb)(const tstore_queue_t *, void *), void *arg,
                      tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_QUEUE_LIST);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_queue_t qu;
        row_queue(q, &qu);
        if (cb(&qu, arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "list queues");
}

int tstore_queue_del(tstore_t *s, const char *name, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_QUEUE_DEL);
    bind_text(q, 1, name);
    int n = exec_stmt(s, q, err, "delete queue");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "queue") : 0;
}

int tstore_queue_usage(tstore_t *s, const char *name, int64_t *pending, int64_t *running,
                       int64_t *gpu_milli, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_QUEUE_USAGE);
    bind_text(q, 1, name);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *pending = sqlite3_column_int64(q, 0);
        *running = sqlite3_column_int64(q, 1);
        *gpu_milli = sqlite3_column_int64(q, 2);
    }
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "queue usage");
}

int tstore_queue_children(tstore_t *s, const char *name, int64_t *n, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_QUEUE_CHILDREN);
    bind_text(q, 1, name);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *n = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "queue children");
}

int tstore_job_add(tstore_t *s, tstore_job_t *j, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_JOB_ADD);
    bind_text(q, 1, j->user);
    bind_text(q, 2, j->name);
    bind_text(q, 3, j->argv_json);
    sqlite3_bind_int(q, 4, j->shell);
    bind_text(q, 5, j->cwd);
    bind_text(q, 6, j->env_json ? j->env_json : "{}");
    bind_text(q, 7, j->queue);
    sqlite3_bind_int(q, 8, (int)j->klass);
    sqlite3_bind_int(q, 9, j->priority);
    sqlite3_bind_int(q, 10, j->gpus);
    sqlite3_bind_int(q, 11, j->gpu_milli);
    sqlite3_bind_int(q, 12, j->gpu_count);
    sqlite3_bind_int64(q, 13, (sqlite3_int64)j->gpu_mem);
    sqlite3_bind_int(q, 14, j->cpu_milli);
    sqlite3_bind_int64(q, 15, (sqlite3_int64)j->mem);
    sqlite3_bind_int(q, 16, j->simulated);
    sqlite3_bind_int64(q, 17, j->submitted_ms);
    bind_text(q, 18, j->reason);
    sqlite3_bind_int(q, 19, j->no_requeue ? 0 : 1);
    sqlite3_bind_int64(q, 20, j->project_id > 0 ? j->project_id : TSTORE_PROJECT_DEFAULT);
    bind_text(q, 21, j->project ? j->project : "default");
    bind_text(q, 22, j->image);
    sqlite3_bind_int(q, 23, j->tty);
    bind_text(q, 24, j->folders_json);
    if (j->gpu_oversub)
        sqlite3_bind_int64(q, 25, (sqlite3_int64)j->gpu_oversub);
    else
        sqlite3_bind_null(q, 25);
    if (j->preemptible != TSTORE_PREEMPT_DEFAULT)
        sqlite3_bind_int(q, 26, (int)j->preemptible);
    bind_text(q, 27, j->services_json);
    if (j->idle_reclaim_s) /* 0: NULL, its queue's; -1 (never): 0 */
        sqlite3_bind_int64(q, 28, j->idle_reclaim_s > 0 ? j->idle_reclaim_s : 0);
    else
        sqlite3_bind_null(q, 28);
    if (exec_stmt(s, q, err, "add job") < 0)
        return -1;
    j->id = sqlite3_last_insert_rowid(s->db);
    j->state = TSTORE_PENDING;
    if (j->time_limit_s || j->array_id || j->held) {
        /* An array's first element is the array's id (Slurm's ArrayJobId). */
        if (j->array_id < 0)
            j->array_id = j->id;
        q = stmt(s, S_JOB_SET_BATCH);
        sqlite3_bind_int64(q, 1, j->id);
        sqlite3_bind_int64(q, 2, j->time_limit_s);
        if (j->array_id)
            sqlite3_bind_int64(q, 3, j->array_id);
        if (j->array_id)
            sqlite3_bind_int(q, 4, j->array_index);
        sqlite3_bind_int(q, 5, j->array_max_running);
        sqlite3_bind_int(q, 6, j->held);
        if (exec_stmt(s, q, err, "add job") < 0)
            return -1;
    }
    return 0;
}

static char *col_dup(sqlite3_stmt *q, int c)
{
    if (sqlite3_column_type(q, c) == SQLITE_NULL)
        return NULL;
    const char *t = (const char *)sqlite3_column_text(q, c);
    return t ? strdup(t) : NULL;
}

static int row_job(sqlite3_stmt *q, tstore_job_t *j)
{
    memset(j, 0, sizeof *j);
    j->id = sqlite3_column_int64(q, 0);
    j->user = col_dup(q, 1);
    j->name = col_dup(q, 2);
    j->argv_json = col_dup(q, 3);
    j->shell = sqlite3_column_int(q, 4) != 0;
    j->cwd = col_dup(q, 5);
    j->env_json = col_dup(q, 6);
    j->state = (tstore_state_t)sqlite3_column_int(q, 7);
    j->reason = col_dup(q, 8);
    j->queue = col_dup(q, 9);
    j->klass = (tstore_class_t)sqlite3_column_int(q, 10);
    j->priority = sqlite3_column_int(q, 11);
    j->gpus = sqlite3_column_int(q, 12);
    j->gpu_milli = sqlite3_column_int(q, 13);
    j->gpu_count = sqlite3_column_int(q, 14);
    j->gpu_mem = (uint64_t)sqlite3_column_int64(q, 15);
    j->cpu_milli = sqlite3_column_int(q, 16);
    j->mem = (uint64_t)sqlite3_column_int64(q, 17);
    j->placement_json = col_dup(q, 18);
    j->simulated = sqlite3_column_int(q, 19) != 0;
    j->submitted_ms = sqlite3_column_int64(q, 20);
    j->started_ms = sqlite3_column_int64(q, 21);
    j->finished_ms = sqlite3_column_int64(q, 22);
    j->has_exit_code = sqlite3_column_type(q, 23) != SQLITE_NULL;
    j->exit_code = sqlite3_column_int(q, 23);
    j->signal = sqlite3_column_int(q, 24);
    j->shim_pid = sqlite3_column_int(q, 25);
    j->shim_start = (uint64_t)sqlite3_column_int64(q, 26);
    j->job_pid = sqlite3_column_int(q, 27);
    j->cancel_ms = sqlite3_column_int64(q, 28);
    j->preemptions = sqlite3_column_int(q, 29);
    j->no_requeue = sqlite3_column_int(q, 30) == 0;
    j->suspended_ms = sqlite3_column_int64(q, 31);
    j->end_cause = sqlite3_column_int(q, 32);
    j->cancel_by = col_dup(q, 33);
    j->preempt_for = sqlite3_column_int64(q, 34);
    j->preempt_queue = col_dup(q, 35);
    j->preempt_ms = sqlite3_column_int64(q, 36);
    j->reason_code = col_dup(q, 37);
    j->time_limit_s = sqlite3_column_int64(q, 38);
    j->suspended_total_ms = sqlite3_column_int64(q, 39);
    j->array_id = sqlite3_column_int64(q, 40);
    j->array_index = sqlite3_column_int(q, 41);
    j->array_max_running = sqlite3_column_int(q, 42);
    j->held = sqlite3_column_int(q, 43) != 0;
    j->project_id = sqlite3_column_int64(q, 44);
    j->project = col_dup(q, 45);
    j->image = col_dup(q, 46);
    j->tty = sqlite3_column_int(q, 47) != 0;
    j->folders_json = col_dup(q, 48);
    j->gpu_released = (uint64_t)sqlite3_column_int64(q, 49);
    j->gpu_oversub = (uint64_t)sqlite3_column_int64(q, 50);
    j->preemptible = (tstore_preempt_t)sqlite3_column_int(q, 51); /* NULL: 0, the default */
    j->suspended_for = sqlite3_column_int64(q, 52);
    j->services_json = col_dup(q, 53);
    /* NULL: its queue's (0); 0: never (-1); else the seconds */
    if (sqlite3_column_type(q, 54) == SQLITE_NULL)
        j->idle_reclaim_s = 0;
    else
        j->idle_reclaim_s = sqlite3_column_int64(q, 54) > 0 ? sqlite3_column_int64(q, 54) : -1;
    j->suspended_idle = sqlite3_column_int(q, 55) != 0;
    if (!j->user || !j->argv_json || !j->env_json || !j->queue || !j->project) {
        tstore_job_clear(j);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void tstore_job_clear(tstore_job_t *j)
{
    if (!j)
        return;
    free(j->user);
    free(j->name);
    free(j->argv_json);
    free(j->cwd);
    free(j->env_json);
    free(j->reason);
    free(j->reason_code);
    free(j->queue);
    free(j->placement_json);
    free(j->cancel_by);
    free(j->preempt_queue);
    free(j->project);
    free(j->image);
    free(j->folders_json);
    free(j->services_json);
    memset(j, 0, sizeof *j);
}

int tstore_job_get(tstore_t *s, int64_t id, tstore_job_t *out, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_JOB_GET);
    sqlite3_bind_int64(q, 1, id);
    int rc = sqlite3_step(q);
    int r = -1;
    if (rc == SQLITE_ROW) {
        r = row_job(q, out);
        if (r < 0)
            tsl_errprintf(err, "store: out of memory");
    }
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return r;
    return rc == SQLITE_DONE ? not_found(err, "job") : db_error(s, err, "job");
}

/* Step q, calling row(q, arg, err) for each row: 0 goes on, 1 stops, -1 fails (err set).
 * Returns 0 or -1. */
static int each_row(tstore_t *s, sqlite3_stmt *q, int (*row)(sqlite3_stmt *, void *, tsl_error_t *),
                    void *arg, tsl_error_t *err, const char *what)
{
    int rc, r = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if ((r = row(q, arg, err)) != 0) {
            rc = SQLITE_DONE;
            break;
        }
    }
    if (rc != SQLITE_DONE)
        db_error(s, err, what);
    sqlite3_reset(q);
    return rc == SQLITE_DONE && r >= 0 ? 0 : -1;
}

typedef struct {
    tstore_job_f cb;
    void *arg;
} job_cb_t;

static int job_row(sqlite3_stmt *q, void *arg, tsl_error_t *err)
{
    job_cb_t *c = arg;
    tstore_job_t j;
    if (row_job(q, &j) < 0)
        return tsl_errprintf(err, "store: out of memory");
    int stop = c->cb(&j, c->arg);
    tstore_job_clear(&j);
    return stop ? 1 : 0;
}

static int each_job(tstore_t *s, sqlite3_stmt *q, tstore_job_f cb, void *arg, tsl_error_t *err)
{
    job_cb_t c = {cb, arg};
    return each_row(s, q, job_row, &c, err, "list jobs");
}

int tstore_job_list(tstore_t *s, const tstore_job_filter_t *f, tstore_job_f cb, void *arg,
                    tsl_error_t *err)
{
    unsigned active = (1u << TSTORE_PENDING) | (1u << TSTORE_RUNNING);
    bool only_active = f->state_mask && (f->state_mask & ~active) == 0;
    sqlite3_stmt *q = stmt(s, f->desc ? (only_active ? S_JOB_LIST_ACTIVE_DESC : S_JOB_LIST_DESC)
                                      : (only_active ? S_JOB_LIST_ACTIVE : S_JOB_LIST));
    sqlite3_bind_int64(q, 1, f->after);
    if (f->desc)
        sqlite3_bind_int64(q, 6, f->before);
    bind_text(q, 2, f->user);
    bind_text(q, 3, f->queue);
    sqlite3_bind_int64(q, 4, f->state_mask ? f->state_mask : (1u << TSTORE_NSTATES) - 1);
    sqlite3_bind_int(q, 5, f->limit > 0 ? f->limit : 1000);
    if (f->suspended_only)
        sqlite3_bind_int(q, 7, 1);
    if (f->project_id > 0)
        sqlite3_bind_int64(q, 8, f->project_id);
    return each_job(s, q, cb, arg, err);
}

static int changed_one(int n, tsl_error_t *err)
{
    if (n < 0)
        return -1;
    if (n == 0) {
        errno = ENOENT;
        return tsl_errprintf(err, "job not found in the expected state");
    }
    return 0;
}

/* Bind v, or NULL when v is 0 (the columns where 0 means "none"). */
static void bind_int64_or_null(sqlite3_stmt *q, int i, int64_t v)
{
    if (v)
        sqlite3_bind_int64(q, i, v);
    else
        sqlite3_bind_null(q, i);
}

int tstore_job_write(tstore_t *s, const tstore_job_t *j, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_JOB_WRITE);
    sqlite3_bind_int64(q, 1, j->id);
    sqlite3_bind_int(q, 2, (int)j->state);
    bind_text(q, 3, j->reason);
    bind_text(q, 4, j->placement_json);
    bind_int64_or_null(q, 5, j->started_ms);
    bind_int64_or_null(q, 6, j->finished_ms);
    if (j->has_exit_code)
        sqlite3_bind_int(q, 7, j->exit_code);
    else
        sqlite3_bind_null(q, 7);
    bind_int64_or_null(q, 8, j->signal);
    bind_int64_or_null(q, 9, j->shim_pid);
    bind_int64_or_null(q, 10, (int64_t)j->shim_start);
    bind_int64_or_null(q, 11, j->job_pid);
    bind_int64_or_null(q, 12, j->cancel_ms);
    sqlite3_bind_int(q, 13, j->preemptions);
    bind_int64_or_null(q, 14, j->suspended_ms);
    bind_int64_or_null(q, 15, j->end_cause);
    bind_text(q, 16, j->cancel_by);
    bind_int64_or_null(q, 17, j->preempt_for);
    bind_text(q, 18, j->preempt_queue);
    bind_int64_or_null(q, 19, j->preempt_ms);
    sqlite3_bind_int64(q, 20, j->suspended_total_ms);
    bind_int64_or_null(q, 21, j->suspended_for);
    bind_int64_or_null(q, 22, j->suspended_idle ? 1 : 0);
    return changed_one(exec_stmt(s, q, err, "write job"), err);
}

int tstore_job_set_reason(tstore_t *s, int64_t id, const char *reason, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_JOB_SET_REASON);
    sqlite3_bind_int64(q, 1, id);
    bind_text(q, 2, reason);
    return exec_stmt(s, q, err, "job reason") < 0 ? -1 : 0;
}

int tstore_job_set_gpu_released(tstore_t *s, int64_t id, uint64_t bytes, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_JOB_SET_GPU_RELEASED);
    sqlite3_bind_int64(q, 1, id);
    bind_int64_or_null(q, 2, (int64_t)bytes);
    return exec_stmt(s, q, err, "job gpu released") < 0 ? -1 : 0;
}

int tstore_job_set_wait(tstore_t *s, int64_t id, const char *code, const char *reason,
                        tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_JOB_SET_WAIT);
    sqlite3_bind_int64(q, 1, id);
    bind_text(q, 2, reason);
    bind_text(q, 3, code);
    return exec_stmt(s, q, err, "job wait reason") < 0 ? -1 : 0;
}

int tstore_event_add(tstore_t *s, const tstore_event_t *e, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_EVENT_ADD);
    sqlite3_bind_int64(q, 1, e->job);
    sqlite3_bind_int64(q, 2, e->time_ms);
    bind_text(q, 3, e->who);
    bind_text(q, 4, e->event);
    bind_text(q, 5, e->from_state);
    bind_text(q, 6, e->to_state);
    bind_text(q, 7, e->why);
    bind_text(q, 8, e->detail_json);
    if (exec_stmt(s, q, err, "add job event") < 0)
        return -1;
    if (!e->event || (strcmp(e->event, "suspend") != 0 && strcmp(e->event, "resume") != 0))
        return 0;
    /* A job past TSTORE_EVENTS_KEEP + TSTORE_EVENTS_SLACK suspend and resume records: back to
     * the newest TSTORE_EVENTS_KEEP, the older ones counted in one "dropped" record. */
    q = stmt(s, S_EVENT_NTH_REPEAT);
    sqlite3_bind_int64(q, 1, e->job);
    sqlite3_bind_int(q, 2, TSTORE_EVENTS_KEEP + TSTORE_EVENTS_SLACK);
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        return db_error(s, err, "job event bound");
    q = stmt(s, S_EVENT_NTH_REPEAT);
    sqlite3_bind_int64(q, 1, e->job);
    sqlite3_bind_int(q, 2, TSTORE_EVENTS_KEEP);
    rc = sqlite3_step(q);
    int64_t cut = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    sqlite3_reset(q);
    if (rc != SQLITE_ROW)
        return db_error(s, err, "job event bound");
    q = stmt(s, S_EVENT_DROP_COUNT);
    sqlite3_bind_int64(q, 1, e->job);
    sqlite3_bind_int64(q, 2, cut);
    rc = sqlite3_step(q);
    int64_t n = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) + sqlite3_column_int64(q, 1) : 0;
    int64_t susp[3] = {0, 0, 0}; /* suspends, of them idle, preemption */
    for (int k = 0; rc == SQLITE_ROW && k < 3; k++)
        susp[k] = sqlite3_column_int64(q, 2 + k);
    sqlite3_reset(q);
    if (rc != SQLITE_ROW)
        return db_error(s, err, "job event bound");
    q = stmt(s, S_EVENT_DROP);
    sqlite3_bind_int64(q, 1, e->job);
    sqlite3_bind_int64(q, 2, cut);
    if (exec_stmt(s, q, err, "drop job events") < 0)
        return -1;
    char why[160];
    snprintf(why, sizeof why,
             "%lld earlier suspend and resume records not kept (a job keeps its newest %d)",
             (long long)n, TSTORE_EVENTS_KEEP);
    q = stmt(s, S_EVENT_MARK);
    sqlite3_bind_int64(q, 1, cut);
    bind_text(q, 2, why);
    sqlite3_bind_int64(q, 3, n);
    for (int k = 0; k < 3; k++)
        sqlite3_bind_int64(q, 4 + k, susp[k]);
    return exec_stmt(s, q, err, "drop job events") < 0 ? -1 : 0;
}

typedef struct {
    tstore_event_f cb;
    void *arg;
} event_cb_t;

static int event_row(sqlite3_stmt *q, void *arg, tsl_error_t *err)
{
    (void)err;
    event_cb_t *c = arg;
    tstore_event_t e = {
        .id = sqlite3_column_int64(q, 0),
        .job = sqlite3_column_int64(q, 1),
        .time_ms = sqlite3_column_int64(q, 2),
        .who = (const char *)sqlite3_column_text(q, 3),
        .event = (const char *)sqlite3_column_text(q, 4),
        .from_state = (const char *)sqlite3_column_text(q, 5),
        .to_state = (const char *)sqlite3_column_text(q, 6),
        .why = (const char *)sqlite3_column_text(q, 7),
        .detail_json = (const char *)sqlite3_column_text(q, 8),
    };
    return c->cb(&e, c->arg) ? 1 : 0;
}

int tstore_event_list(tstore_t *s, int64_t job, tstore_event_f cb, void *arg, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_EVENT_LIST);
    sqlite3_bind_int64(q, 1, job);
    event_cb_t c = {cb, arg};
    return each_row(s, q, event_row, &c, err, "list job events");
}

int tstore_job_census(tstore_t *s, tstore_census_f cb, void *arg, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_JOB_CENSUS);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        cb(sqlite3_column_int(q, 0), sqlite3_column_int(q, 1) != 0, sqlite3_column_int(q, 2),
           sqlite3_column_int64(q, 3), arg);
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "job census");
}

static void count_row(int state, bool suspended, int end_cause, int64_t n, void *arg)
{
    (void)suspended;
    (void)end_cause;
    int64_t *counts = arg;
    if (state >= 0 && state < TSTORE_NSTATES)
        counts[state] += n;
}

int tstore_job_counts(tstore_t *s, int64_t counts[TSTORE_NSTATES], tsl_error_t *err)
{
    memset(counts, 0, sizeof(int64_t) * TSTORE_NSTATES);
    return tstore_job_census(s, count_row, counts, err);
}

int tstore_event_count(tstore_t *s, const char *event, int64_t *n, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_EVENT_COUNT);
    bind_text(q, 1, event);
    int rc = sqlite3_step(q);
    *n = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "event count");
}

int tstore_suspend_counts(tstore_t *s, int64_t *all, int64_t *idle, int64_t *preemption,
                          tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SUSPEND_COUNTS);
    int rc = sqlite3_step(q);
    *all = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    *idle = rc == SQLITE_ROW ? sqlite3_column_int64(q, 1) : 0;
    *preemption = rc == SQLITE_ROW ? sqlite3_column_int64(q, 2) : 0;
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "suspend counts");
}

/* ---- batch: dependencies, held jobs, arrays ---- */

int tstore_dep_add(tstore_t *s, int64_t job, int64_t dep, int kind, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_DEP_ADD);
    sqlite3_bind_int64(q, 1, job);
    sqlite3_bind_int64(q, 2, dep);
    sqlite3_bind_int(q, 3, kind);
    return exec_stmt(s, q, err, "add dependency") < 0 ? -1 : 0;
}

int tstore_dep_list(tstore_t *s, int64_t job, tstore_dep_t **out, size_t *n, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_DEP_LIST);
    sqlite3_bind_int64(q, 1, job);
    int rc;
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t c = cap ? cap * 2 : 8;
            tstore_dep_t *v = realloc(*out, c * sizeof *v);
            if (!v) {
                sqlite3_reset(q);
                free(*out);
                *out = NULL;
                *n = 0;
                errno = ENOMEM;
                return tsl_errprintf(err, "store: out of memory");
            }
            *out = v;
            cap = c;
        }
        tstore_dep_t *d = &(*out)[(*n)++];
        d->dep = sqlite3_column_int64(q, 0);
        d->kind = sqlite3_column_int(q, 1);
        d->exists = sqlite3_column_type(q, 2) != SQLITE_NULL;
        d->state = (tstore_state_t)sqlite3_column_int(q, 2);
        d->has_exit_code = sqlite3_column_type(q, 3) != SQLITE_NULL;
        d->exit_code = sqlite3_column_int(q, 3);
    }
    sqlite3_reset(q);
    if (rc != SQLITE_DONE) {
        free(*out);
        *out = NULL;
        *n = 0;
        return db_error(s, err, "list dependencies");
    }
    return 0;
}

int tstore_held_list(tstore_t *s, const int64_t *ids, size_t nids, tstore_held_f cb, void *arg,
                     tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, ids ? S_HELD_ABOUT : S_HELD_LIST);
    if (ids) {
        if (nids == 0)
            return 0;
        if (nids > TSTORE_HELD_IDS_MAX) {
            errno = EINVAL;
            return tsl_errprintf(err, "store: %zu held-job ids (at most %d)", nids,
                                 TSTORE_HELD_IDS_MAX);
        }
        /* The ids as a JSON array ("[12,40]"): 21 bytes each at most. */
        char *js = malloc(nids * 21 + 2);
        if (!js) {
            errno = ENOMEM;
            return tsl_errprintf(err, "store: out of memory");
        }
        size_t o = 0;
        js[o++] = '[';
        for (size_t i = 0; i < nids; i++)
            o += (size_t)snprintf(js + o, 22, "%s%lld", i ? "," : "", (long long)ids[i]);
        js[o++] = ']';
        /* SQLite frees js, also when the bind fails. */
        if (sqlite3_bind_text(q, 1, js, (int)o, free) != SQLITE_OK)
            return db_error(s, err, "list held jobs");
    }
    /* Read whole first: the callback writes to the store (release, cancel). */
    tstore_held_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (n == cap) {
            size_t c = cap ? cap * 2 : 16;
            tstore_held_t *nv = realloc(v, c * sizeof *nv);
            if (!nv) {
                sqlite3_reset(q);
                free(v);
                errno = ENOMEM;
                return tsl_errprintf(err, "store: out of memory");
            }
            v = nv;
            cap = c;
        }
        v[n].id = sqlite3_column_int64(q, 0);
        v[n].array_id = sqlite3_column_int64(q, 1);
        v[n].array_max_running = sqlite3_column_int(q, 2);
        v[n].array_active = sqlite3_column_int64(q, 3);
        const char *r = (const char *)sqlite3_column_text(q, 4);
        snprintf(v[n].reason, sizeof v[n].reason, "%s", r ? r : "");
        n++;
    }
    sqlite3_reset(q);
    if (rc != SQLITE_DONE) {
        free(v);
        return db_error(s, err, "list held jobs");
    }
    for (size_t i = 0; i < n; i++)
        if (cb(&v[i], arg))
            break;
    free(v);
    return 0;
}

int tstore_job_release(tstore_t *s, int64_t id, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_JOB_RELEASE);
    sqlite3_bind_int64(q, 1, id);
    return changed_one(exec_stmt(s, q, err, "release job"), err);
}

/* ---- tesseld --slurm: a job's Slurm id ---- */

int tstore_slurm_set(tstore_t *s, int64_t job, int64_t slurm_id, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SLURM_SET);
    sqlite3_bind_int64(q, 1, job);
    sqlite3_bind_int64(q, 2, slurm_id);
    return exec_stmt(s, q, err, "record Slurm id") < 0 ? -1 : 0;
}

int tstore_slurm_get(tstore_t *s, int64_t job, int64_t *slurm_id, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SLURM_GET);
    sqlite3_bind_int64(q, 1, job);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *slurm_id = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? not_found(err, "Slurm job") : db_error(s, err, "Slurm id");
}

static int slurm_pairs(tstore_t *s, sqlite3_stmt *q, tstore_slurm_pair_t **out, size_t *n,
                       tsl_error_t *err)
{
    tstore_slurm_pair_t *v = NULL;
    size_t c = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (c == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            tstore_slurm_pair_t *nv = realloc(v, ncap * sizeof *nv);
            if (!nv) {
                sqlite3_reset(q);
                free(v);
                errno = ENOMEM;
                return tsl_errprintf(err, "store: Slurm jobs: out of memory");
            }
            v = nv;
            cap = ncap;
        }
        v[c].job = sqlite3_column_int64(q, 0);
        v[c].slurm_id = sqlite3_column_int64(q, 1);
        c++;
    }
    sqlite3_reset(q);
    if (rc != SQLITE_DONE) {
        free(v);
        return db_error(s, err, "list Slurm jobs");
    }
    *out = v;
    *n = c;
    return 0;
}

int tstore_slurm_active(tstore_t *s, tstore_slurm_pair_t **out, size_t *n, tsl_error_t *err)
{
    return slurm_pairs(s, stmt(s, S_SLURM_ACTIVE), out, n, err);
}

int tstore_slurm_since(tstore_t *s, int64_t after, tstore_slurm_pair_t **out, size_t *n,
                       tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SLURM_SINCE);
    sqlite3_bind_int64(q, 1, after);
    return slurm_pairs(s, q, out, n, err);
}

int tstore_array_find(tstore_t *s, int64_t array_id, int index, int64_t *id, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_ARRAY_FIND);
    sqlite3_bind_int64(q, 1, array_id);
    sqlite3_bind_int(q, 2, index);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? not_found(err, "array element") : db_error(s, err, "array");
}

int tstore_array_stat(tstore_t *s, int64_t array_id, int64_t *count, int *min, int *max,
                      tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_ARRAY_STAT);
    sqlite3_bind_int64(q, 1, array_id);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *count = sqlite3_column_int64(q, 0);
        *min = sqlite3_column_int(q, 1);
        *max = sqlite3_column_int(q, 2);
    }
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "array");
}

/* Usage history. */

static void bind_real_or_null(sqlite3_stmt *q, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(q, i);
    else
        sqlite3_bind_double(q, i, v);
}

int tstore_hist_put(tstore_t *s, const tstore_hist_t *rows, size_t n, tsl_error_t *err)
{
    if (n == 0)
        return 0;
    if (tstore_begin(s, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const tstore_hist_t *r = &rows[i];
        sqlite3_stmt *q = stmt(s, S_HIST_PUT);
        sqlite3_bind_int(q, 1, r->step);
        sqlite3_bind_int(q, 2, (int)r->scope);
        sqlite3_bind_int64(q, 3, r->t);
        sqlite3_bind_text(q, 4, r->name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 5, r->n);
        sqlite3_bind_int64(q, 6, r->idle);
        bind_real_or_null(q, 7, r->busy);
        bind_real_or_null(q, 8, r->busy_max);
        sqlite3_bind_double(q, 9, r->mem_used);
        sqlite3_bind_double(q, 10, r->mem_alloc);
        sqlite3_bind_double(q, 11, r->milli);
        sqlite3_bind_double(q, 12, r->running);
        sqlite3_bind_double(q, 13, r->pending);
        if (exec_stmt(s, q, err, "history") < 0) {
            int saved = errno;
            tstore_rollback(s);
            errno = saved;
            return -1;
        }
    }
    return tstore_commit(s, err);
}

int64_t tstore_hist_prune(tstore_t *s, int step, tstore_hist_scope_t scope, int64_t before,
                          tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_HIST_PRUNE);
    sqlite3_bind_int(q, 1, step);
    sqlite3_bind_int(q, 2, (int)scope);
    sqlite3_bind_int64(q, 3, before);
    return exec_stmt(s, q, err, "history prune");
}

static double column_real_or_nan(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

int tstore_hist_read(tstore_t *s, int step, tstore_hist_scope_t scope, int64_t from, int64_t to,
                     const char *name, tstore_hist_f cb, void *arg, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_HIST_READ);
    sqlite3_bind_int(q, 1, step);
    sqlite3_bind_int(q, 2, (int)scope);
    sqlite3_bind_int64(q, 3, from);
    sqlite3_bind_int64(q, 4, to);
    bind_text(q, 5, name);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_hist_t r = {
            .step = sqlite3_column_int(q, 0),
            .scope = (tstore_hist_scope_t)sqlite3_column_int(q, 1),
            .t = sqlite3_column_int64(q, 2),
            .n = (uint32_t)sqlite3_column_int64(q, 4),
            .idle = (uint32_t)sqlite3_column_int64(q, 5),
            .busy = column_real_or_nan(q, 6),
            .busy_max = column_real_or_nan(q, 7),
            .mem_used = sqlite3_column_double(q, 8),
            .mem_alloc = sqlite3_column_double(q, 9),
            .milli = sqlite3_column_double(q, 10),
            .running = sqlite3_column_double(q, 11),
            .pending = sqlite3_column_double(q, 12),
        };
        snprintf(r.name, sizeof r.name, "%s", (const char *)sqlite3_column_text(q, 3));
        if (cb(&r, arg) != 0) {
            sqlite3_reset(q);
            return 0;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "history read");
}

int tstore_hist_pending(tstore_t *s, tstore_pending_f cb, void *arg, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_HIST_PENDING);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (cb((const char *)sqlite3_column_text(q, 0), (const char *)sqlite3_column_text(q, 1),
               sqlite3_column_int64(q, 2), arg) != 0) {
            sqlite3_reset(q);
            return 0;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "pending jobs");
}

/* ---- Projects (migration 12) --------------------------------------------------------------- */

static const char *const role_names[] = {"", "viewer", "member", "owner"};

const char *tstore_role_name(tstore_role_t r)
{
    return (unsigned)r < sizeof role_names / sizeof role_names[0] ? role_names[r] : "";
}

int tstore_role_parse(const char *name)
{
    for (int r = TSTORE_ROLE_VIEWER; r <= TSTORE_ROLE_OWNER; r++)
        if (name && strcmp(name, role_names[r]) == 0)
            return r;
    return -1;
}

/* Undo the open transaction (or savepoint) keeping errno; always -1. */
static int fail_tx(tstore_t *s)
{
    int saved = errno;
    tstore_rollback(s);
    errno = saved;
    return -1;
}

static void col_copy(sqlite3_stmt *q, int c, char *buf, size_t len)
{
    const char *t = (const char *)sqlite3_column_text(q, c);
    snprintf(buf, len, "%s", t ? t : "");
}

static void row_project(sqlite3_stmt *q, tstore_project_t *p)
{
    memset(p, 0, sizeof *p);
    p->id = sqlite3_column_int64(q, 0);
    col_copy(q, 1, p->name, sizeof p->name);
    col_copy(q, 2, p->queue, sizeof p->queue);
    col_copy(q, 3, p->description, sizeof p->description);
    p->share_jobs = sqlite3_column_int(q, 4) != 0;
    p->created_ms = sqlite3_column_int64(q, 5);
    col_copy(q, 6, p->created_by, sizeof p->created_by);
    p->folder_quota = sqlite3_column_int64(q, 7);
}

int tstore_project_add(tstore_t *s, tstore_project_t *p, const char *owner, int64_t now_ms,
                       tsl_error_t *err)
{
    if (tstore_begin(s, err) < 0)
        return -1;
    sqlite3_stmt *q = stmt(s, S_PROJECT_ADD);
    bind_text(q, 1, p->name);
    bind_text(q, 2, p->queue);
    bind_text(q, 3, p->description);
    sqlite3_bind_int(q, 4, p->share_jobs);
    sqlite3_bind_int64(q, 5, p->created_ms);
    bind_text(q, 6, p->created_by);
    if (exec_stmt(s, q, err, "add project") < 0) {
        if (errno == EEXIST)
            tsl_errprintf(err, "project '%s' already exists", p->name);
        return fail_tx(s);
    }
    p->id = sqlite3_last_insert_rowid(s->db);
    if (owner && tstore_member_add(s, p->id, owner, TSTORE_ROLE_OWNER, now_ms, err) < 0)
        return fail_tx(s);
    return tstore_commit(s, err);
}

static int project_get(tstore_t *s, sqlite3_stmt *q, tstore_project_t *out, tsl_error_t *err)
{
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        row_project(q, out);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? not_found(err, "project") : db_error(s, err, "project");
}

int tstore_project_get(tstore_t *s, const char *name, tstore_project_t *out, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_PROJECT_GET);
    bind_text(q, 1, name);
    return project_get(s, q, out, err);
}

int tstore_project_get_id(tstore_t *s, int64_t id, tstore_project_t *out, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_PROJECT_GET_ID);
    sqlite3_bind_int64(q, 1, id);
    return project_get(s, q, out, err);
}

int tstore_project_update(tstore_t *s, const tstore_project_t *p, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_PROJECT_UPDATE);
    sqlite3_bind_int64(q, 1, p->id);
    bind_text(q, 2, p->queue);
    bind_text(q, 3, p->description);
    sqlite3_bind_int(q, 4, p->share_jobs);
    int n = exec_stmt(s, q, err, "update project");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "project") : 0;
}

int tstore_project_del(tstore_t *s, int64_t id, tsl_error_t *err)
{
    if (tstore_begin(s, err) < 0)
        return -1;
    static const int steps[] = {S_PROJECT_DEL_MEMBERS, S_PROJECT_RESET_DEFAULTS,
                                S_PROJECT_DEL_FSHARES, S_PROJECT_DEL_FOLDERS, S_PROJECT_DEL};
    int n = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        sqlite3_stmt *q = stmt(s, steps[i]);
        sqlite3_bind_int64(q, 1, id);
        if ((n = exec_stmt(s, q, err, "delete project")) < 0)
            return fail_tx(s);
    }
    if (n == 0) {
        not_found(err, "project");
        return fail_tx(s);
    }
    return tstore_commit(s, err);
}

int tstore_project_list(tstore_t *s, const char *user, bool every, tstore_project_f cb, void *arg,
                        tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, every ? S_PROJECT_LIST : S_PROJECT_LIST_USER);
    bind_text(q, 1, user ? user : "");
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_project_t p;
        row_project(q, &p);
        int role = tstore_role_parse((const char *)sqlite3_column_text(q, 8));
        if (cb(&p, role < 0 ? TSTORE_ROLE_NONE : (tstore_role_t)role, sqlite3_column_int64(q, 9),
               arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "list projects");
}

int tstore_project_active_jobs(tstore_t *s, int64_t id, int64_t *n, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_PROJECT_ACTIVE);
    sqlite3_bind_int64(q, 1, id);
    return count_query(s, q, n, err);
}

int tstore_project_by_queue(tstore_t *s, const char *queue, char *name, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_PROJECT_BY_QUEUE);
    bind_text(q, 1, queue);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        col_copy(q, 0, name, TSTORE_NAME_MAX + 1);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? 1 : db_error(s, err, "project of a queue");
}

int tstore_member_add(tstore_t *s, int64_t project, const char *user, tstore_role_t role,
                      int64_t now_ms, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_MEMBER_ADD);
    sqlite3_bind_int64(q, 1, project);
    bind_text(q, 2, user);
    bind_text(q, 3, tstore_role_name(role));
    sqlite3_bind_int64(q, 4, now_ms);
    int n = exec_stmt(s, q, err, "add member");
    if (n < 0) {
        if (errno == EEXIST)
            tsl_errprintf(err, "'%s' is a member already", user);
        return -1;
    }
    if (n == 0) {
        errno = ENOENT;
        return tsl_errprintf(err, "no user named '%s'", user);
    }
    return 0;
}

int tstore_member_set(tstore_t *s, int64_t project, const char *user, tstore_role_t role,
                      tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_MEMBER_SET);
    sqlite3_bind_int64(q, 1, project);
    bind_text(q, 2, user);
    bind_text(q, 3, tstore_role_name(role));
    int n = exec_stmt(s, q, err, "set member's role");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "member") : 0;
}

int tstore_member_role(tstore_t *s, int64_t project, const char *user, tstore_role_t *role,
                       tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_MEMBER_GET);
    sqlite3_bind_int64(q, 1, project);
    bind_text(q, 2, user);
    int rc = sqlite3_step(q);
    *role = TSTORE_ROLE_NONE;
    if (rc == SQLITE_ROW) {
        int r = tstore_role_parse((const char *)sqlite3_column_text(q, 1));
        *role = r < 0 ? TSTORE_ROLE_NONE : (tstore_role_t)r;
    }
    sqlite3_reset(q);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_error(s, err, "member");
}

int tstore_member_del(tstore_t *s, int64_t project, const char *user, tsl_error_t *err)
{
    if (tstore_begin(s, err) < 0)
        return -1;
    sqlite3_stmt *q = stmt(s, S_MEMBER_DEL);
    sqlite3_bind_int64(q, 1, project);
    bind_text(q, 2, user);
    int n = exec_stmt(s, q, err, "remove member");
    if (n < 0)
        return fail_tx(s);
    if (n == 0) {
        not_found(err, "member");
        return fail_tx(s);
    }
    q = stmt(s, S_MEMBER_RESET_DEFAULT);
    sqlite3_bind_int64(q, 1, project);
    bind_text(q, 2, user);
    if (exec_stmt(s, q, err, "reset default project") < 0)
        return fail_tx(s);
    return tstore_commit(s, err);
}

int tstore_member_list(tstore_t *s, int64_t project, tstore_member_f cb, void *arg,
                       tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_MEMBER_LIST);
    sqlite3_bind_int64(q, 1, project);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_member_t m = {0};
        col_copy(q, 0, m.user, sizeof m.user);
        int r = tstore_role_parse((const char *)sqlite3_column_text(q, 1));
        m.role = r < 0 ? TSTORE_ROLE_NONE : (tstore_role_t)r;
        m.added_ms = sqlite3_column_int64(q, 2);
        if (cb(&m, arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "list members");
}

int tstore_member_count(tstore_t *s, int64_t project, tstore_role_t role, int64_t *n,
                        tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_MEMBER_COUNT);
    sqlite3_bind_int64(q, 1, project);
    bind_text(q, 2, tstore_role_name(role));
    return count_query(s, q, n, err);
}

int tstore_user_default_project(tstore_t *s, const char *user, int64_t *id, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_USER_DEFAULT_GET);
    bind_text(q, 1, user);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? not_found(err, "user") : db_error(s, err, "default project");
}

int tstore_user_set_default_project(tstore_t *s, const char *user, int64_t id, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_USER_DEFAULT_SET);
    bind_text(q, 1, user);
    if (id > 0 && id != TSTORE_PROJECT_DEFAULT)
        sqlite3_bind_int64(q, 2, id);
    int n = exec_stmt(s, q, err, "set default project");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "user") : 0;
}

int tstore_pevent_add(tstore_t *s, const tstore_pevent_t *e, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_PEVENT_ADD);
    sqlite3_bind_int64(q, 1, e->project);
    bind_text(q, 2, e->name);
    sqlite3_bind_int64(q, 3, e->time_ms);
    bind_text(q, 4, e->who);
    bind_text(q, 5, e->event);
    bind_text(q, 6, e->detail_json);
    return exec_stmt(s, q, err, "project event") < 0 ? -1 : 0;
}

int tstore_pevent_list(tstore_t *s, int64_t project, tstore_pevent_f cb, void *arg,
                       tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_PEVENT_LIST);
    sqlite3_bind_int64(q, 1, project);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_pevent_t e = {
            .id = sqlite3_column_int64(q, 0),
            .project = sqlite3_column_int64(q, 1),
            .name = (const char *)sqlite3_column_text(q, 2),
            .time_ms = sqlite3_column_int64(q, 3),
            .who = (const char *)sqlite3_column_text(q, 4),
            .event = (const char *)sqlite3_column_text(q, 5),
            .detail_json = (const char *)sqlite3_column_text(q, 6),
        };
        if (cb(&e, arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "project events");
}

/* ---- Folders (docs/folders.md) ------------------------------------------------------------ */

static void row_folder(sqlite3_stmt *q, tstore_folder_t *f)
{
    memset(f, 0, sizeof *f);
    f->id = sqlite3_column_int64(q, 0);
    col_copy(q, 1, f->name, sizeof f->name);
    col_copy(q, 2, f->owner, sizeof f->owner);
    f->project = sqlite3_column_int64(q, 3);
    col_copy(q, 4, f->project_name, sizeof f->project_name);
    f->created_ms = sqlite3_column_int64(q, 5);
    f->quota = sqlite3_column_int64(q, 6);
    f->used = sqlite3_column_int64(q, 7);
    f->used_ms = sqlite3_column_int64(q, 8);
}

int tstore_folder_add(tstore_t *s, tstore_folder_t *f, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FOLDER_ADD);
    bind_text(q, 1, f->name);
    bind_text(q, 2, f->owner);
    sqlite3_bind_int64(q, 3, f->project);
    sqlite3_bind_int64(q, 4, f->created_ms);
    if (f->quota > 0)
        sqlite3_bind_int64(q, 5, f->quota);
    if (exec_stmt(s, q, err, "add folder") < 0) {
        if (errno == EEXIST)
            tsl_errprintf(err, "folder '%s' already exists", f->name);
        return -1;
    }
    f->id = sqlite3_last_insert_rowid(s->db);
    return 0;
}

int tstore_folder_get(tstore_t *s, const char *name, tstore_folder_t *out, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FOLDER_GET);
    bind_text(q, 1, name);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        row_folder(q, out);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? not_found(err, "folder") : db_error(s, err, "folder");
}

int tstore_folder_list(tstore_t *s, tstore_folder_f cb, void *arg, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FOLDER_LIST);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_folder_t f;
        row_folder(q, &f);
        if (cb(&f, arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "list folders");
}

int tstore_folder_list_project(tstore_t *s, int64_t project, tstore_folder_f cb, void *arg,
                               tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FOLDER_LIST_PROJECT);
    sqlite3_bind_int64(q, 1, project);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_folder_t f;
        row_folder(q, &f);
        if (cb(&f, arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "list project folders");
}

int tstore_folder_del(tstore_t *s, int64_t id, tsl_error_t *err)
{
    if (tstore_begin(s, err) < 0)
        return -1;
    static const int steps[] = {S_FOLDER_DEL_SHARES, S_FOLDER_DEL};
    int n = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        sqlite3_stmt *q = stmt(s, steps[i]);
        sqlite3_bind_int64(q, 1, id);
        if ((n = exec_stmt(s, q, err, "delete folder")) < 0)
            return fail_tx(s);
    }
    if (n == 0) {
        not_found(err, "folder");
        return fail_tx(s);
    }
    return tstore_commit(s, err);
}

int tstore_folder_by_project(tstore_t *s, int64_t project, tstore_name_f cb, void *arg,
                             tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FOLDER_BY_PROJECT);
    sqlite3_bind_int64(q, 1, project);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (cb((const char *)sqlite3_column_text(q, 0), arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "folders of a project");
}

int tstore_fshare_set(tstore_t *s, int64_t folder, const char *user, int64_t project, bool rw,
                      int64_t now_ms, tsl_error_t *err)
{
    if (!user == !project) {
        errno = EINVAL;
        return tsl_errprintf(err, "a share names a user or a project");
    }
    sqlite3_stmt *q = stmt(s, S_FSHARE_SET);
    sqlite3_bind_int64(q, 1, folder);
    bind_text(q, 2, user ? user : "");
    sqlite3_bind_int64(q, 3, project);
    sqlite3_bind_int(q, 4, rw);
    sqlite3_bind_int64(q, 5, now_ms);
    return exec_stmt(s, q, err, "share folder") < 0 ? -1 : 0;
}

int tstore_fshare_del(tstore_t *s, int64_t folder, const char *user, int64_t project,
                      tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FSHARE_DEL);
    sqlite3_bind_int64(q, 1, folder);
    bind_text(q, 2, user ? user : "");
    sqlite3_bind_int64(q, 3, user ? 0 : project);
    int n = exec_stmt(s, q, err, "unshare folder");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "share") : 0;
}

int tstore_fshare_list(tstore_t *s, int64_t folder, tstore_fshare_f cb, void *arg, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FSHARE_LIST);
    sqlite3_bind_int64(q, 1, folder);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_fshare_t sh = {0};
        col_copy(q, 0, sh.user, sizeof sh.user);
        sh.project = sqlite3_column_int64(q, 1);
        col_copy(q, 2, sh.project_name, sizeof sh.project_name);
        sh.rw = sqlite3_column_int(q, 3) != 0;
        sh.added_ms = sqlite3_column_int64(q, 4);
        if (cb(&sh, arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "list folder shares");
}

int tstore_folder_count_owner(tstore_t *s, const char *owner, int64_t *n, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FOLDER_COUNT_OWNER);
    bind_text(q, 1, owner);
    return count_query(s, q, n, err);
}

int tstore_folder_active_jobs(tstore_t *s, const char *name, int64_t *n, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FOLDER_ACTIVE_JOBS);
    bind_text(q, 1, name);
    return count_query(s, q, n, err);
}

int tstore_folder_set_quota(tstore_t *s, int64_t id, int64_t quota, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FOLDER_SET_QUOTA);
    sqlite3_bind_int64(q, 1, id);
    if (quota > 0)
        sqlite3_bind_int64(q, 2, quota);
    int n = exec_stmt(s, q, err, "folder quota");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "folder") : 0;
}

int tstore_folder_set_used(tstore_t *s, int64_t id, int64_t used, int64_t now_ms, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_FOLDER_SET_USED);
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, used);
    sqlite3_bind_int64(q, 3, now_ms);
    int n = exec_stmt(s, q, err, "folder use");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "folder") : 0;
}

int tstore_folder_add_used(tstore_t *s, int64_t id, int64_t bytes, tsl_error_t *err)
{
    if (bytes < 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "folder use: a negative addition");
    }
    sqlite3_stmt *q = stmt(s, S_FOLDER_ADD_USED);
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, bytes);
    return exec_stmt(s, q, err, "folder use") < 0 ? -1 : 0;
}

int tstore_project_set_folder_quota(tstore_t *s, int64_t id, int64_t quota, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_PROJECT_SET_FQUOTA);
    sqlite3_bind_int64(q, 1, id);
    if (quota > 0)
        sqlite3_bind_int64(q, 2, quota);
    int n = exec_stmt(s, q, err, "project folder quota");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "project") : 0;
}

int tstore_project_folder_use(tstore_t *s, int64_t id, int64_t *used, int64_t *measured,
                              int64_t *folders, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_PROJECT_FOLDER_USE);
    sqlite3_bind_int64(q, 1, id);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *used = sqlite3_column_int64(q, 0);
        *measured = sqlite3_column_int64(q, 1);
        *folders = sqlite3_column_int64(q, 2);
    }
    sqlite3_reset(q);
    return rc == SQLITE_ROW ? 0 : db_error(s, err, "project folder use");
}

/* ---- Services (migration 16) --------------------------------------------------------------- */

int tstore_service_count_owner(tstore_t *s, const char *owner, int64_t *n, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SVC_COUNT_OWNER);
    if (owner)
        bind_text(q, 1, owner);
    return count_query(s, q, n, err);
}

int64_t tstore_service_add(tstore_t *s, const tstore_service_t *sv, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SVC_ADD);
    bind_text(q, 1, sv->name);
    bind_text(q, 2, sv->owner);
    sqlite3_bind_int(q, 3, sv->replicas);
    sqlite3_bind_int(q, 4, sv->port);
    bind_text(q, 5, sv->health);
    sqlite3_bind_int(q, 6, sv->concurrency);
    bind_text(q, 7, sv->spec_json);
    sqlite3_bind_int64(q, 8, sv->created_ms);
    bind_text(q, 9, sv->split_even ? "even" : "capacity");
    if (exec_stmt(s, q, err, "add service") < 0)
        return -1;
    return sqlite3_last_insert_rowid(s->db);
}

static int row_service(sqlite3_stmt *q, tstore_service_t *sv)
{
    memset(sv, 0, sizeof *sv);
    sv->id = sqlite3_column_int64(q, 0);
    snprintf(sv->name, sizeof sv->name, "%s", (const char *)sqlite3_column_text(q, 1));
    snprintf(sv->owner, sizeof sv->owner, "%s", (const char *)sqlite3_column_text(q, 2));
    sv->replicas = sqlite3_column_int(q, 3);
    sv->port = sqlite3_column_int(q, 4);
    snprintf(sv->health, sizeof sv->health, "%s", (const char *)sqlite3_column_text(q, 5));
    sv->concurrency = sqlite3_column_int(q, 6);
    sv->spec_json = col_dup(q, 7);
    sv->created_ms = sqlite3_column_int64(q, 8);
    const char *split = (const char *)sqlite3_column_text(q, 9);
    sv->split_even = split && strcmp(split, "even") == 0;
    if (!sv->spec_json) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void tstore_service_clear(tstore_service_t *sv)
{
    if (!sv)
        return;
    free(sv->spec_json);
    sv->spec_json = NULL;
}

int tstore_service_get(tstore_t *s, const char *name, tstore_service_t *out, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SVC_GET);
    bind_text(q, 1, name);
    int rc = sqlite3_step(q);
    int r = 0;
    if (rc == SQLITE_ROW)
        r = row_service(q, out);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return r < 0 ? tsl_errprintf(err, "store: service: out of memory") : 0;
    return rc == SQLITE_DONE ? not_found(err, "service") : db_error(s, err, "service");
}

int tstore_service_list(tstore_t *s, tstore_service_f cb, void *arg, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SVC_LIST);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_service_t sv;
        if (row_service(q, &sv) < 0) {
            sqlite3_reset(q);
            return tsl_errprintf(err, "store: list services: out of memory");
        }
        int stop = cb(&sv, arg);
        tstore_service_clear(&sv);
        if (stop) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "list services");
}

int tstore_service_set_replicas(tstore_t *s, int64_t id, int replicas, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SVC_SET_REPLICAS);
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int(q, 2, replicas);
    int n = exec_stmt(s, q, err, "scale service");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "service") : 0;
}

int tstore_service_del(tstore_t *s, int64_t id, tsl_error_t *err)
{
    if (tstore_begin(s, err) < 0)
        return -1;
    sqlite3_stmt *q = stmt(s, S_SVC_DEL_REPLICAS);
    sqlite3_bind_int64(q, 1, id);
    if (exec_stmt(s, q, err, "delete service") < 0)
        goto fail;
    q = stmt(s, S_SVC_DEL_TOKENS);
    sqlite3_bind_int64(q, 1, id);
    if (exec_stmt(s, q, err, "delete service") < 0)
        goto fail;
    q = stmt(s, S_SVC_DEL);
    sqlite3_bind_int64(q, 1, id);
    int n = exec_stmt(s, q, err, "delete service");
    if (n < 0)
        goto fail;
    if (n == 0) {
        not_found(err, "service");
        goto fail;
    }
    return tstore_commit(s, err);
fail:;
    int e = errno;
    tstore_rollback(s);
    errno = e;
    return -1;
}

int tstore_service_port_used(tstore_t *s, int port, bool *used, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SVC_PORT_USED);
    sqlite3_bind_int(q, 1, port);
    int64_t n = 0;
    if (count_query(s, q, &n, err) < 0)
        return -1;
    *used = n > 0;
    return 0;
}

int tstore_replica_add(tstore_t *s, int64_t job, int64_t service, int port, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_REPLICA_ADD);
    sqlite3_bind_int64(q, 1, job);
    sqlite3_bind_int64(q, 2, service);
    sqlite3_bind_int(q, 3, port);
    return exec_stmt(s, q, err, "add replica") < 0 ? -1 : 0;
}

int tstore_replica_list(tstore_t *s, int64_t service, bool active, tstore_replica_f cb, void *arg,
                        tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_REPLICA_LIST);
    sqlite3_bind_int64(q, 1, service);
    sqlite3_bind_int(q, 2, active ? 1 : 0);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        tstore_replica_t r = {
            .job = sqlite3_column_int64(q, 0),
            .port = sqlite3_column_int(q, 1),
            .state = (tstore_state_t)sqlite3_column_int(q, 2),
            .suspended = sqlite3_column_type(q, 3) != SQLITE_NULL,
            .placement_json = (const char *)sqlite3_column_text(q, 4),
            .started_ms = sqlite3_column_int64(q, 5),
            .finished_ms = sqlite3_column_int64(q, 6),
            .stopping = sqlite3_column_type(q, 7) != SQLITE_NULL,
            .job_pid = sqlite3_column_int(q, 8),
        };
        if (cb(&r, arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "list replicas");
}

int tstore_replica_port(tstore_t *s, int64_t job, int *port, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_REPLICA_PORT);
    sqlite3_bind_int64(q, 1, job);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        *port = sqlite3_column_int(q, 0);
    sqlite3_reset(q);
    if (rc == SQLITE_ROW)
        return 1;
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "replica port");
}

int64_t tstore_service_token_add(tstore_t *s, int64_t service, const char *name,
                                 const unsigned char hash[32], int64_t now_ms, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SVC_TOKEN_ADD);
    sqlite3_bind_int64(q, 1, service);
    bind_text(q, 2, name ? name : "");
    sqlite3_bind_blob(q, 3, hash, 32, SQLITE_STATIC);
    sqlite3_bind_int64(q, 4, now_ms);
    if (exec_stmt(s, q, err, "add service token") < 0)
        return -1;
    return sqlite3_last_insert_rowid(s->db);
}

int tstore_service_hashes(tstore_t *s, int64_t service, const char *owner,
                          int (*cb)(const unsigned char hash[32], void *), void *arg,
                          tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SVC_HASHES);
    sqlite3_bind_int64(q, 1, service);
    bind_text(q, 2, owner);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (sqlite3_column_bytes(q, 0) != 32)
            continue;
        if (cb(sqlite3_column_blob(q, 0), arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "service tokens");
}

int tstore_service_token_list(tstore_t *s, int64_t service,
                              int (*cb)(int64_t id, const char *name, int64_t created_ms, void *),
                              void *arg, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SVC_TOKEN_LIST);
    sqlite3_bind_int64(q, 1, service);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (cb(sqlite3_column_int64(q, 0), (const char *)sqlite3_column_text(q, 1),
               sqlite3_column_int64(q, 2), arg)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? 0 : db_error(s, err, "service tokens");
}

int tstore_service_token_del(tstore_t *s, int64_t service, int64_t id, tsl_error_t *err)
{
    sqlite3_stmt *q = stmt(s, S_SVC_TOKEN_DEL);
    sqlite3_bind_int64(q, 1, service);
    sqlite3_bind_int64(q, 2, id);
    int n = exec_stmt(s, q, err, "delete service token");
    if (n < 0)
        return -1;
    return n == 0 ? not_found(err, "service token") : 0;
}
