/* slurmjob.h - the pure logic of tesseld --slurm (docs/slurm-backend.md): what tesseld asks of
 * Slurm and how it reads Slurm's answers.  No processes, no store, no clock: the daemon's side
 * (slurm.c) runs the commands and applies the plans; src/daemon/test/test_slurmjob.c tests
 * this file alone.
 *
 *   tsj_sbatch_argv   a job  -> sbatch's argument vector (each option one argument)
 *   tsj_script        a job  -> the batch script sbatch reads on its standard input
 *   tsj_parse_squeue  `squeue --json` (Slurm 22.05, openapi/v0.0.38) -> what Slurm says of each job
 *   tsj_parse_sacct   `sacct --parsable2` (slurmdbd's record) -> the same, for jobs squeue forgot
 *   tsj_plan          a stored job + what Slurm says -> the job model's events to apply
 *   tsj_view_state    a job submitted to Slurm directly (not tesseld's) -> how Tessel shows it
 *   tsj_parse_qmap    slurm-queues ("QUEUE=PARTITION[,QOS] ...") -> Tessel's queues onto Slurm's
 *   tsj_parse_sinfo   `sinfo --json` (Slurm 22.05) -> the partitions with their nodes
 */
#ifndef TESSEL_DAEMON_SLURMJOB_H
#define TESSEL_DAEMON_SLURMJOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/jobmodel.h"
#include "libstore/store.h"
#include "libutil/error.h"

/* Slurm's job states as tesseld tells them apart (job_state of squeue --json). */
typedef enum {
    TSJ_PENDING = 0, /* not started: PENDING, REQUEUED, REQUEUE_HOLD, SPECIAL_EXIT, ... */
    TSJ_RUNNING,     /* started, not ended: RUNNING, COMPLETING, SIGNALING, ... */
    TSJ_SUSPENDED,   /* started, held by an operator's `scontrol suspend` (SUSPENDED) */
    TSJ_COMPLETED,   /* exit status 0 */
    TSJ_FAILED,      /* a non-zero exit status or a signal */
    TSJ_CANCELLED,   /* scancel */
    TSJ_TIMEOUT,     /* its time limit (TIMEOUT, DEADLINE) */
    TSJ_OOM,         /* OUT_OF_MEMORY */
    TSJ_NODE_FAIL,   /* its node failed */
    TSJ_LAUNCH_FAIL, /* BOOT_FAIL, LAUNCH_FAILED */
    TSJ_PREEMPTED,   /* Slurm preempted it */
    TSJ_NSTATES,
} tsj_state_t;

/* The state of a job_state name; CONFIGURING counts as started only when started is true.
 * -1 for a name tesseld does not know (the job is then left as it is). */
int tsj_state_parse(const char *name, bool started);
const char *tsj_state_name(tsj_state_t s);

/* What squeue says of one job. */
typedef struct tsj_seen {
    int64_t slurm_id;
    tsj_state_t state;
    int wait_status;    /* exit_code: a wait status (768 = exit 3, 9 = SIGKILL) */
    int64_t start_time; /* Unix seconds, 0 = not started */
    char nodes[256];    /* "n1" or "n[1-2]"; "" before it starts */
    char reason[64];    /* state_reason ("Resources", "None") */
    char user[64];      /* user_name ("" when squeue could not name the uid) */
    int64_t uid;        /* user_id; -1 when not given (tsj_applies then refuses) */
    /* Read for the jobs submitted to Slurm directly (the view of tsj_view_json). */
    char name[128];      /* name */
    char partition[64];  /* partition */
    int64_t submit_time; /* Unix seconds, 0 = unknown */
    int64_t end_time;    /* Unix seconds, 0 = not ended (or unknown) */
    int cpus;            /* cpus */
    bool known;          /* state parsed; false: a state this build does not know (a newer
                          * Slurm's), the job to be left as it is, never taken for gone */
} tsj_seen_t;

/* Parse squeue --json's output (text, len bytes).  A job of a state this build does not know
 * is listed with known false.  0
 * with *out (malloc'd, the caller frees it; NULL when *n is 0) and *n, or -1 with err: not
 * JSON of that shape, or squeue's "errors" array is not empty (slurmctld down: squeue exits 0
 * then, with the error there and no jobs). */
int tsj_parse_squeue(const char *text, size_t len, tsj_seen_t **out, size_t *n, tsl_error_t *err);

/* The jobs of root's "jobs" array, each with squeue --json's keys (squeue's answer, or
 * tessel-slurm-submit --read's: src/slurmsub/read.h), as tsj_parse_squeue; what names the
 * source in err.  root stays the caller's. */
int tsj_parse_jobs(json_t *root, const char *what, tsj_seen_t **out, size_t *n, tsl_error_t *err);

/* Parse the lines of `sacct --noheader --parsable2 --allocations --format=JobIDRaw,State,
 * ExitCode,User,UID,NodeList,Start` (Slurm 22.05 with slurmdbd), e.g. "12|FAILED|3:0|alice|
 * 1001|n1|2026-11-27T11:15:11" (UID empty: uid -1), into what squeue would have said of the same
 * jobs, for the jobs slurmctld no longer holds: ExitCode "status:signal" as a wait status (the
 * signal when not 0, else status << 8), State's first word ("CANCELLED by 0"), started when Start
 * is a date. (Not --json: 22.05.8's gives return_code 0 for a job that ended with `exit 3`, checked
 * 2026-11-27 on the test cluster.)  A state this build does not know is listed with known
 * false.  0 with *out (malloc'd or NULL, the caller frees it) and *n, or -1 with err (EINVAL:
 * a line not of that shape). */
int tsj_parse_sacct(const char *text, size_t len, tsj_seen_t **out, size_t *n, tsl_error_t *err);

/* Whether what squeue says of a job (s; NULL: it does not list the job) is to be applied to the
 * job of the Unix account of uid owner_uid (-1: not known): not when its state is one this
 * build does not know (left as it is, never taken for gone), nor unless Slurm's uid of the job
 * is owner_uid (an id that names another account's Slurm job: one a submitter lied about,
 * slurmctld restarted without its state, ids wrapped round).  Compared by uid, never by name:
 * squeue names no user for a uid it cannot resolve (review of the submitter, 2026-11-28, M2);
 * no uid on either side refuses.  NULL s applies (the job is gone from Slurm). */
bool tsj_applies(const tsj_seen_t *s, int64_t owner_uid);

/* The events to apply to a stored job, in order (at most two: a start and an end). */
typedef struct {
    int n;
    tjm_event_t ev[2];
    tjm_change_t chg[2]; /* chg[i].placement_json points into placement */
    char placement[320]; /* START: [{"node": "n1"}] */
    char why[160];       /* the end's reason, "" = the job model's default */
    /* Pending (in Tessel and Slurm): Slurm's reason to wait, "" when none or unchanged. */
    char wait_code[64];
} tsj_plan_t;

/* The plan for job j (pending or running in the store) from what Slurm says of it (s; NULL:
 * Slurm does not know the job any more), at time now_ms.  Always succeeds; p->n = 0 when
 * nothing changes.  j->cancel_ms (a cancel asked through tesseld) makes Slurm's CANCELLED the
 * job model's "killed" (cancelled), else a failure by signal. */
void tsj_plan(const tstore_job_t *j, const tsj_seen_t *s, int64_t now_ms, tsj_plan_t *p);

/* How Tessel shows a job that was submitted to Slurm directly (sbatch, not through tesseld):
 * the job model's states and end causes, without a stored job or an event (read-only, the poll's
 * in-memory view).  Slurm's SUSPENDED is running with suspended set (the model's suspended). */
typedef struct {
    tstore_state_t state; /* pending, running, succeeded, failed, cancelled */
    bool suspended;
    tjm_cause_t cause; /* TJM_CAUSE_NONE while it has not ended */
    bool has_exit_code;
    int exit_code;
    int signal; /* 0 = none */
} tsj_view_t;

/* The view of s (s->known must be true).  CANCELLED is cancelled (its owner's or an operator's
 * scancel), the other ends as tsj_plan records them for tesseld's own jobs. */
void tsj_view_state(const tsj_seen_t *s, tsj_view_t *v);

/* Longest partition or QOS name kept (Slurm's names are short words). */
#define TSJ_NAME_MAX 64

/* One Tessel queue onto a Slurm partition and, optionally, a QOS (slurm-queues). */
typedef struct tsj_qmap {
    char queue[TSJ_NAME_MAX + 1];
    char partition[TSJ_NAME_MAX + 1];
    char qos[TSJ_NAME_MAX + 1]; /* "" = the partition's or account's default QOS */
} tsj_qmap_t;

/* Parse slurm-queues: space-separated QUEUE=PARTITION or QUEUE=PARTITION,QOS; QUEUE a Tessel
 * queue name ([a-z0-9][a-z0-9_-]*, as tstore_name_valid), PARTITION and QOS Slurm names
 * (letters, digits, '_', '-', '.'), at most TSJ_NAME_MAX bytes; a queue at most once.  "" is
 * no mapping.  0 with *out (malloc'd, NULL when *n is 0; the caller frees it) and *n, or -1
 * with err (EINVAL: the word at fault named). */
int tsj_parse_qmap(const char *text, tsj_qmap_t **out, size_t *n, tsl_error_t *err);
/* The mapping of queue, NULL when m[0..n) has none. */
const tsj_qmap_t *tsj_qmap_find(const tsj_qmap_t *m, size_t n, const char *queue);

/* A partition as `sinfo --json` shows it, summed over its nodes. */
typedef struct tsj_partition {
    char name[TSJ_NAME_MAX + 1];
    int nodes, cpus, alloc_cpus;
    char node_names[256]; /* "n1,n2" (cut with "..." past the size) */
    char states[128];     /* the nodes' states, each once: "idle", "mixed,down" */
    char gres[128];       /* the first node's GRES ("gpu:2,shard:8") */
} tsj_partition_t;

/* Parse sinfo --json (openapi/v0.0.38: an array "nodes", each with its "partitions"): the
 * partitions in the order first met.  0 with *out (malloc'd or NULL) and *n, or -1 with err
 * (not JSON of that shape; its "errors" not empty). */
int tsj_parse_sinfo(const char *text, size_t len, tsj_partition_t **out, size_t *n,
                    tsl_error_t *err);

/* A submission as sbatch gets it. */
typedef struct {
    const char *name;      /* --job-name; NULL: "tessel" */
    const char *cwd;       /* --chdir */
    const char *out_dir;   /* --output DIR/%j.out, --error DIR/%j.err; no '%' */
    int gpus;              /* whole GPUs (tstore_job_t.gpus) */
    int gpu_milli;         /* per GPU; 0 = no GPU */
    uint64_t gpu_mem;      /* --gpu-mem, bytes; 0 = the slice's default */
    int cpu_milli;         /* --cpus-per-task (rounded up); 0 = Slurm's default */
    uint64_t mem;          /* --mem (MiB, rounded up); 0 = Slurm's default */
    int64_t time_limit_s;  /* --time (minutes, rounded up); 0 = the partition's */
    unsigned shards;       /* the cluster's shards per GPU; 0 = --gpu-share alone */
    bool no_requeue;       /* --no-requeue ("requeue": false) */
    const char *partition; /* --partition; NULL or "": the cluster's default */
    const char *qos;       /* --qos; NULL or "": the default */
} tsj_submit_t;

/* The values of sbatch's options for a submission, shared by both paths (tsj_sbatch_argv, the
 * submitter's request): "" or 0 when the option is not given. */
typedef struct {
    char gres[32];      /* --gres: "shard:S", "gpu:N" */
    char gpu_share[16]; /* --gpu-share: "0.500" */
    char gpu_mem[32];   /* --gpu-mem: "3145728K" (KiB, rounded up) */
    int cpus;           /* --cpus-per-task */
    uint64_t mem_mb;    /* --mem, MiB rounded up */
    int64_t time_min;   /* --time, minutes rounded up */
} tsj_opts_t;
void tsj_opts(const tsj_submit_t *s, tsj_opts_t *o);

/* The request tesseld sends to tessel-slurm-submit for s (src/slurmsub/, docs/slurm-backend.md
 * "The submitter"): a JSON object {name, cwd, stdout, stderr, script, and gres, gpu_share,
 * gpu_mem, cpus_per_task, mem_mb, time_min, requeue (false), partition, qos when given},
 * after the same checks as tsj_sbatch_argv.  malloc'd text, or NULL with err (EINVAL: what
 * tsj_sbatch_argv refuses, or text that is not UTF-8; ENOMEM). */
char *tsj_submit_request(const tsj_submit_t *s, const char *script, tsl_error_t *err);

/* sbatch's argument vector, argv[0] = sbatch (the path), NULL-terminated, every string its
 * own malloc'd copy; free it with tsj_argv_free.  NULL with err (errno EINVAL: a value sbatch
 * could misread: a name with a control character, an output directory with '%', a relative
 * cwd; ENOMEM). */
char **tsj_sbatch_argv(const char *sbatch, const tsj_submit_t *s, tsl_error_t *err);
void tsj_argv_free(char **argv);

/* The batch script of a job of user: its environment (env_json, an object of strings: the
 * job's, less the names Slurm sets for a job, plus TESSEL_FAKE_GPUS when fake_gpus is not
 * NULL; the job's id is Slurm's SLURM_JOB_ID, the Tessel id is not known before sbatch
 * answers) and its command (argv_json, an array of strings; shell: one command
 * line for /bin/sh -c), every value single-quoted.  Nothing a user sends comes before the
 * script's first command, so sbatch reads no #SBATCH line from it.  malloc'd text, or NULL
 * with err (EINVAL: not such JSON; ENOMEM). */
char *tsj_script(const char *user, const char *argv_json, bool shell, const char *env_json,
                 const char *fake_gpus, tsl_error_t *err);

/* Whether an environment name is one Slurm sets for a job (SLURM_*, SBATCH_*, SRUN_*,
 * SALLOC_*): the job gets Slurm's own, not the submitter's. */
bool tsj_env_slurms(const char *name);

/* The Slurm job id sbatch --parsable printed ("123" or "123;cluster", a newline after it):
 * 0 and *id, or -1 (not such a line). */
int tsj_parse_jobid(const char *text, int64_t *id);

/* What a failed sbatch's output (stderr, then stdout; text) means for the client: 503 when
 * Slurm's controller cannot be reached (or the command ran past its time: timed_out), 422 when
 * Slurm refused the job, 500 when sbatch said nothing; msg gets one line (sbatch's non-empty
 * lines joined by "; ", cut at 400 bytes with "...").  Returns the HTTP status. */
int tsj_sbatch_error(const char *text, bool timed_out, char *msg, size_t len);

#endif
