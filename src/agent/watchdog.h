/* watchdog.h - the GPU-memory watchdog of tessel-shim: the wall behind the interposer.
 *
 * The interposer (libtessel-cuda) counts what a job allocates, but only in processes that load
 * it and play along.  The watchdog needs no cooperation from the job: a thread of the job's
 * supervisor (tessel-shim, root) asks the driver itself, through NVML
 * (nvmlDeviceGetComputeRunningProcesses: the memory each process holds on each GPU, its
 * contexts included), sums what the job's processes hold on each GPU, and when a sum passes the
 * slice's limit on that GPU (0 on a GPU the job was not given) it stops the job:
 *
 *   kill     every process of the job gets SIGKILL (the job ends, failed);
 *   suspend  every process of the job gets SIGSTOP (it keeps its memory; tesseld marks the job
 *            suspended; a resume continues it, and it is stopped again if still over).
 *
 * The job's processes are those below the shim (tessel-shim is their subreaper, so a process
 * that daemonises stays below it): a pid whose parent chain reaches the shim, at any depth (a
 * chain deeper than a few dozen levels is decided from one pass over the whole process table,
 * not by walking it per pid), and a process whose place cannot be read counts as the job's.
 * The Slurm plugin's watchdog (one per step, in its slurmstepd) is job-wide (tsw_config_t
 * job_root): on the step's GPUs it sums the processes below every slurmstepd of the job on the
 * node, found in the same pass over /proc, and stops only its own step's.
 *
 * The pure part (limits, sums, the decision, the reason's words) is apart from the thread so
 * that it is unit-tested at its own layer (src/agent/test/test_watchdog.c).  Prefix tsw_.
 */
#ifndef TESSEL_AGENT_WATCHDOG_H
#define TESSEL_AGENT_WATCHDOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "libutil/error.h"

/* NVML indexes the watchdog looks at (a node has at most 64 GPUs, as TAGENT_MAX_GPUS). */
#define TSW_MAX_GPUS 64

/* How often the driver is asked: 5 times a second, so an over-limit job is stopped within
 * about 0.2 s plus the time to signal it (the target is 1 s). */
#define TSW_PERIOD_MS 200

/* Consecutive samples over the limit before the watchdog acts: 2, so that the moment in which
 * the driver holds a context or a pool chunk that the interposer is about to refuse and give
 * back (the job then sees CUDA_ERROR_OUT_OF_MEMORY, as it should) does not kill the job; a job
 * that stays over is stopped within 2 periods (0.4 s) plus the time to signal it. */
#define TSW_CONFIRM 2

typedef enum { TSW_KILL = 0, TSW_SUSPEND = 1 } tsw_action_t;

/* Bytes the job may hold on each NVML index; 0 on the GPUs it was not given. */
typedef struct {
    uint64_t limit[TSW_MAX_GPUS];
} tsw_limits_t;

/* "IDX=SIZE[,IDX=SIZE]..." (SIZE as tsl_parse_size: bytes or binary K/M/G/T; "" = no GPU).
 * Every index not named gets 0.  0, or -1 with err on a malformed list. */
int tsw_limits_parse(const char *spec, tsw_limits_t *l, tsl_error_t *err);

/* "kill" or "suspend".  0, or -1 with err. */
int tsw_action_parse(const char *text, tsw_action_t *a, tsl_error_t *err);

/* One NVML process entry. */
typedef struct {
    unsigned pid;
    unsigned long long used; /* usedGpuMemory; NVML's "not available" (all ones) counts 0 */
} tsw_proc_t;

/* Whether pid is one of the job's processes. */
typedef bool (*tsw_member_fn)(unsigned pid, void *arg);

/* The bytes the job's processes hold among procs (n entries): the sum of `used` of the members,
 * saturating at UINT64_MAX. */
uint64_t tsw_job_sum(const tsw_proc_t *procs, size_t n, tsw_member_fn member, void *arg);

/* Whether a sum breaks a limit: strictly more than it. */
bool tsw_over(uint64_t sum, uint64_t limit);

/* Whether a fail_closed watchdog stops the job when NVML cannot list the processes of GPU
 * index gpu: only on a GPU the job was given (limit above 0).  A GPU it was not given that
 * stops answering (lost, another job's fault) is taken as holding none of its processes. */
bool tsw_must_answer(const tsw_limits_t *l, unsigned gpu);

/* The line a person reads (the job's reason, its stderr log): "GPU 1: the job's processes hold
 * 6.0 GiB, its slice allows 4.0 GiB: killed by the GPU-memory watchdog". */
void tsw_reason(char *buf, size_t len, int gpu, uint64_t sum, uint64_t limit, tsw_action_t a);

/* A hold (docs/suspend.md, "What holds a victim off the GPU"): while the job is suspended by a
 * preemption with its GPU memory given back, tesseld puts a root-owned file TSW_HOLD_FILE in
 * the job's state directory (tsw_config_t state) and removes it just before it restores the
 * job.  While it is there, each sample holds the job to TSW_HOLD_ALLOW bytes on every GPU
 * (what a checkpointed process may still show) and a job past it is killed, whatever the
 * action: its memory is the preemptor's now. */
#define TSW_HOLD_FILE  "gpuhold"
#define TSW_HOLD_ALLOW (16ull << 20)

/* The limit a sample applies on a GPU whose own limit is limit: limit, or under a hold the
 * smaller of limit and TSW_HOLD_ALLOW. */
uint64_t tsw_hold_limit(uint64_t limit, bool hold);

/* The line of a kill under a hold: "GPU 0: the job's processes hold 2.5 GiB while it is
 * suspended by a preemption (its GPU memory given back; 16.0 MiB allowed): killed by the
 * GPU-memory watchdog". */
void tsw_hold_reason(char *buf, size_t len, int gpu, uint64_t sum);

/* Whether directory state (NULL: none) holds TSW_HOLD_FILE as a regular file owned by root. */
bool tsw_hold_on(const char *state);

/* Whether pid is the job's: it descends from ancestor (its /proc parent chain reaches it, at
 * any depth: a few dozen steps are walked, beyond that tsw_snapshot decides), or its place
 * cannot be decided (its /proc entry cannot be read, no memory for the table): counted as the
 * job's rather than ignored.  A pid that does not exist is not. */
bool tsw_descends(pid_t pid, pid_t ancestor);

/* How a process stands to the job (tsw_members). */
typedef enum {
    TSW_OTHER = 0,     /* not below the job's root */
    TSW_MEMBER = 1,    /* below it, at any depth */
    TSW_UNDECIDED = 2, /* its parent could not be read: counted as the job's, never signalled */
} tsw_kin_t;

/* One process of the table: pid, its parent (-1 = could not be read), and its standing. */
typedef struct {
    pid_t pid;
    pid_t ppid;
    tsw_kin_t kin;
} tsw_pstat_t;

/* Set kin of each of procs (n entries, reordered) from the parent links: TSW_MEMBER for every
 * descendant of root at any depth (root itself is not), TSW_UNDECIDED where ppid is -1 and it
 * is no descendant, TSW_OTHER otherwise.  No I/O; O(n log n). */
void tsw_members(tsw_pstat_t *procs, size_t n, pid_t root);

/* tsw_members for several roots (nroots entries): TSW_MEMBER for every descendant of any of
 * them at any depth (no root itself is), the rest as tsw_members. */
void tsw_members_of(tsw_pstat_t *procs, size_t n, const pid_t *roots, size_t nroots);

/* The process table from one pass over /proc (malloc'd into *out, *n entries), with
 * tsw_members applied for root.  0, or -1 (nothing to free). */
int tsw_snapshot(pid_t root, tsw_pstat_t **out, size_t *n);

/* Whether process pid, whose command name (/proc/PID/stat's field 2) is comm, is a root of
 * the job (a job-wide watchdog: the Slurm plugin's slurmstepd of each step of the job). */
typedef bool (*tsw_root_fn)(pid_t pid, const char *comm, void *arg);

/* tsw_snapshot whose roots are root and every process of the same pass over /proc for which
 * is_root(pid, comm, arg) is true (is_root NULL: root alone).  0, or -1 (nothing to free). */
int tsw_snapshot_roots(pid_t root, tsw_root_fn is_root, void *arg, tsw_pstat_t **out, size_t *n);

/* A process table to ask about pids: procs (n entries) sorted by pid (tsw_table_index). */
typedef struct {
    tsw_pstat_t *procs;
    size_t n;
} tsw_table_t;

/* Sort t's entries by pid, for tsw_in_table. */
void tsw_table_index(tsw_table_t *t);

/* A tsw_member_fn over an indexed table (arg: the tsw_table_t): whether pid counts as the
 * job's (TSW_MEMBER or TSW_UNDECIDED).  A pid not in the table is not (the watchdog takes the
 * table after it asked the driver: such a process has ended; one started later is in the next
 * sample's table). */
bool tsw_in_table(unsigned pid, void *arg);

/* The watchdog thread's settings. */
typedef struct {
    const char *nvml;    /* absolute path of libnvidia-ml.so.1, from tesseld */
    tsw_limits_t limits; /* per NVML index */
    tsw_action_t action; /* on a violation */
    const char *state;   /* root-owned directory where the violation is recorded, or NULL */
    const char *err_log; /* the job's stderr log, DIR/stderr (written as uid/gid, below DIR's
                            parent without crossing a mount point), or NULL */
    uid_t uid;           /* the job's account (for err_log), or -1 */
    gid_t gid;
    pid_t root; /* the shim: the job's processes descend from it */
    pid_t job;  /* the job's first process (its process group) */
    /* Fail closed (the Slurm plugin): when NVML cannot be loaded, or the driver cannot be asked
     * for TSW_FAIL_SAMPLES samples in a row (the GPU count, or the processes of one of the
     * job's own GPUs: tsw_must_answer), the job's processes are killed with the reason
     * (as a violation: tsw_violation, the record, stderr), and so is every process that comes
     * below root afterwards, for as long as the thread runs.  false (tessel-shim): the
     * watchdog ends with a line on stderr and the job runs on with the interposer alone. */
    bool fail_closed;
    /* Job-wide (the Slurm plugin; NULL for tessel-shim): on each GPU this step was given
     * (limit above 0), the sum counts every process below any of the job's roots, those that
     * job_root accepts in each sample's pass over /proc (the job's other steps), not only
     * those below root; a violation still stops only the processes below root (each step's
     * watchdog stops its own step).  On a GPU the step was not given, its own processes
     * alone count. */
    tsw_root_fn job_root;
    void *job_root_arg;
    /* Root-owned directory of the whole job (the Slurm plugin's STATEDIR/JOBID), or NULL: a
     * violation is recorded there too (TSW_RECORD), and a kill watchdog that finds a record
     * there (another step's) stops its own step with that reason, at each sample: the first
     * step stopped lowers the job's sum, so the others would not see it broken. */
    const char *job_state;
    /* Milliseconds from tsw_start to the first sample: 0 (tessel-shim, which starts the thread
     * once the job has run TSW_PERIOD_MS), or TSW_PERIOD_MS (the Slurm plugin, which starts it
     * with the step: a step that ends sooner, `srun true`, pays for no NVML load and no pass
     * over /proc, as a short job under tessel-shim). */
    unsigned first_after_ms;
    /* fail_closed only: a sample that has not ended after hang_ms (a driver call that hangs
     * rather than fails) stops the job as when the driver cannot be asked, from a second
     * thread; 0: not watched. */
    unsigned hang_ms;
} tsw_config_t;

/* The reason of a violation that a step's watchdog recorded in the job's directory job_state
 * (TSW_RECORD, a regular file owned by root; NULL: none), into buf: whether there is one. */
bool tsw_job_record(const char *job_state, char *buf, size_t len);

/* Samples in a row without an answer from the driver before a fail_closed watchdog stops the
 * job: 5 (one second), so that one slow or failed NVML call does not kill a job. */
#define TSW_FAIL_SAMPLES 5

/* Start the watchdog thread: the shim calls it once the job has run TSW_PERIOD_MS (a job
 * that ends sooner costs no thread and never loads NVML).  The thread loads and initialises
 * NVML, takes its first sample after first_after_ms and then one every TSW_PERIOD_MS, and when the
 * load fails writes "tessel-shim: GPU-memory watchdog not started: WHY" to stderr and ends.  The
 * config is copied; the strings must outlive the thread (argv does).  0, or -1 with err (no thread
 * runs then). */
int tsw_start(const tsw_config_t *c, tsl_error_t *err);

/* Before the process exits while the watchdog runs (the Slurm plugin, at the step's end): no
 * sample starts any more, and one under way is waited for, at most wait_ms, so that the exit
 * does not come while the thread is inside the driver's library (its locks, its dlopen).  The
 * threads stay, idle, until the exit. */
void tsw_quiesce(unsigned wait_ms);

/* The reason of the first violation ("" when none), for the shim's records. */
void tsw_violation(char *buf, size_t len);

/* The same reason, or NULL when none, without a lock: safe in a child forked while the
 * watchdog thread ran (the Slurm plugin's tasks).  The string does not change once set. */
const char *tsw_stopped(void);

/* Name of the record in the state directory: one line "ACTION EPISODE REASON" (ACTION kill or
 * suspend; EPISODE counts the violations from 1: a suspended job that is resumed and goes over
 * again makes a new one), written through an O_EXCL temporary and a rename. */
#define TSW_RECORD "violation"

#endif
