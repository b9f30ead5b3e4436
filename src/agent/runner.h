/* runner.h - start a job under its supervisor (tessel-shim) and read what the shim records.
 *
 * Why a shim: a job must outlive tesseld (restart, kill -9).  tesseld does not fork the job
 * itself; it posix_spawns tessel-shim in a new session, and the shim starts the job, waits for
 * it and writes its end into the job directory.  tesseld's state about a running job is thus
 * rebuilt from files that do not depend on tesseld being alive:
 *
 *   tesseld                         tessel-shim (session leader)       job
 *   -------                         ---------------------------        ---
 *   store: pending -> running
 *   cgroup created, limits set
 *   tagent_spawn() ------------->   read the job's env (fd), close fds > 2
 *                                   clone(VM|VFORK) ---------------->  setpgid, join cgroups,
 *                                                                      drop to the user, open
 *                                   <- log descriptors (SCM_RIGHTS) -  DIR/stdout+stderr, chdir,
 *                                   DIR/pid "SHIM START JOB" <------   execvp (error -> pipe)
 *                                   main loop: job's stdout/stderr     ... runs, writing to
 *                                   pipes -> logs (head + tail up to   two pipes ...
 *                                   the limit, logcap.h); reap ...
 *                                   EXIT "exit N" | "signal N" | (+ " oom") |
 *                                        "error STAGE ERRNO"  (written to EXIT.tmp, renamed:
 *                                                              atomic)
 *   tick: tagent_read_exit_file(EXIT) -> store: final state; cgroup removed
 *
 * tesseld starts the shim with --lock-records (tagent_spawn_t.lock_records, from 2026-11-28):
 * PID and EXIT below are then not files but two slots of the start lock, <data>/starts/<id>.lock
 * (TAGENT_LOCK_*, below), written with pwrite; the files are what a shim started by an earlier
 * tesseld writes, and what the tests' shims without a lock write.
 *
 * PID is the pid record tesseld trusts: --pid-file, beside EXIT (<data>/starts/<id>.pid),
 * written atomically like EXIT once the job has started ("SHIM START JOB"); the shim writes the
 * same line to DIR/pid for the job's user to read, which tesseld never reads for a shim started
 * with --pid-file.
 *
 * EXIT is the exit record: --exit-file, which tesseld puts in a directory of its own beside the
 * job's start lock (<data>/starts/<id>.exit, 0700 directory), never in DIR; a shim started
 * without one (tests) writes DIR/exit.  On restart, tesseld reads EXIT for every job the store
 * says is running; when absent, it checks that the shim is alive (pid and /proc start time, so
 * a reused pid is not taken for it).
 *
 * DIR belongs to the job's user (it is the job's default cwd), who may replace any file in it,
 * and, where users may mount FUSE, mount a file system of theirs over it: the exit record is
 * therefore not there (a process the job left behind could rewrite it before tesseld read it);
 * tesseld takes the job's pid from DIR/pid only when that process is the shim's child, and
 * reads nothing there through a symlink or a mount point (nomount.h) or from a file that is not
 * a regular one.
 */
#ifndef TESSEL_AGENT_RUNNER_H
#define TESSEL_AGENT_RUNNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "libutil/error.h"

#define TAGENT_MAX_CGROUPS  3
#define TAGENT_NVML_ENV_MAX 4
/* Most virtual folders one job mounts (docs/folders.md; tesseld's TESSD_JOB_FOLDERS_MAX). */
#define TAGENT_FOLDERS_MAX 16
/* Web services of one job (tessel-shim --svc, docs/job-services.md): Jupyter and a few tools
 * beside it (TensorBoard, a model's endpoint); each holds a forwarder process. */
#define TAGENT_SVC_MAX 4

/* The environment tessel-shim itself runs with (it runs as root when tesseld does): fixed,
 * never the job's.  The dynamic loader honours LD_AUDIT, LD_LIBRARY_PATH, GCONV_PATH, MALLOC_*
 * and the like for a root process started by root (it ignores them only for set-uid
 * binaries), so a job's environment in the shim would make root load the user's library.
 * The job's environment travels to the shim in a sealed memfd (--env-fd) and is applied only
 * in the job's process, after the uid change. */
#define TAGENT_SHIM_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/* Largest environment the shim accepts (bytes, all "K=V\0" together): tesseld's request
 * bodies are at most 64 KiB, so 1 MiB is far above any real job and bounds the shim's memory. */
#define TAGENT_ENV_MAX (1u << 20)

typedef struct {
    const char *shim;      /* path of tessel-shim */
    const char *dir;       /* job directory (logs, pid) */
    const char *exit_file; /* where the shim writes the exit record: a path in a directory of
                              the caller's own that the job's user cannot write; NULL: DIR/exit
                              (tests) */
    const char *pid_file;  /* where the shim writes the pid record tesseld trusts ("SHIM START
                              JOB"), beside exit_file; DIR/pid is written too, for the job's
                              user to read only.  NULL: DIR/pid alone (tests) */
    bool lock_records;     /* instead of exit_file and pid_file: the shim writes both records
                              into the start lock (lock_fd) at TAGENT_LOCK_PID_OFF and
                              TAGENT_LOCK_EXIT_OFF, creating no file for them */
    const char *cwd;       /* working directory of the job */
    char *const *argv;     /* program and arguments (argv[0] searched in the job's PATH) */
    char *const *envp;     /* the job's environment, without LD_PRELOAD; handed to the shim in
                              a memfd, never as the shim's own environment */
    const char *preload;   /* LD_PRELOAD of the job (set in the job only), or NULL */
    const char *cgroup_procs[TAGENT_MAX_CGROUPS];
    int ncgroups;
    bool set_user;    /* switch to uid/gid (tesseld runs as root) */
    const char *user; /* with set_user: account name for initgroups (NULL: no supplementary
                         groups) */
    uid_t uid;
    gid_t gid;
    uint64_t log_limit; /* bytes kept of each of stdout and stderr (logcap.h), 0 = no limit */
    int lock_fd; /* > 2: a descriptor (flock'ed by the caller) the shim keeps open for its whole
             life, so that a restarted tesseld can tell whether a shim of the job still
             lives before the shim has recorded its pid; 0: none */
    /* Enforcement (shim.c, jobns.h, watchdog.h); NULL / false: none. */
    const char *state;          /* root-owned per-job directory: the job's mount namespace */
    const char *preload_list;   /* with state, a process job: the file bound at /etc/ld.so.preload
                                   (root's, see tagent_jobns_enter); NULL: state/ld.so.preload */
    bool block_userns;          /* with state: refuse the job new user namespaces */
    const char *nvml;           /* absolute NVML path: start the GPU-memory watchdog */
    const char *gpu_mem_limits; /* with nvml: "IDX=BYTES,..." */
    const char *gpu_mem_violation; /* with nvml: "kill" or "suspend" */
    /* With nvml and the fake GPUs only (a test double): "NAME=VALUE" settings of the fake NVML
     * (TESSEL_FAKE_*) that the shim sets for itself before loading it, NULL-terminated. */
    const char *nvml_env[TAGENT_NVML_ENV_MAX + 1];
    /* With state, a container job (docs/containers.md, ctrrun.h): crun's absolute path and the
     * image's root file system; state holds its config.json.  NULL: a process job. */
    const char *container;
    const char *image_rootfs;
    unsigned ctr_cwd_flags; /* TAGENT_CTR_CWD_*: how the config binds the cwd (ctrrun.h) */
    /* With state: give the job a terminal (tty.h, tessel-shim --tty; a container's is crun's,
     * ctrrun.h), served on STATE/tty.sock. */
    bool tty;
    /* With state, a process job: the virtual folders it mounts at TAGENT_FOLDERS_DIR/NAME
     * (jobns.h), each "NAME" or "NAME:ro", from folder_root (root's, checked by tesseld). */
    const char *folder_root;
    const char *folders[TAGENT_FOLDERS_MAX];
    int nfolders;
    /* With state, a process job that is a service's replica (fwd.h, docs/serving.md): it runs in
     * a network namespace of its own and listens there on 127.0.0.1:serve_port; the shim serves
     * it on the Unix socket serve_sock (in a root-owned directory), group serve_gid (HAProxy's),
     * mode 0660.  serve_sock NULL: the job shares the host's network. */
    int serve_port;
    const char *serve_sock;
    gid_t serve_gid;
    /* With state, a process job: its web services (docs/job-services.md).  The job runs in a
     * network namespace of its own where service k listens on 127.0.0.1:svc_port[k]; the shim
     * serves it on the Unix socket svc_sock[k] (in a root-owned directory), owned by the job's
     * account, mode 0600, admitting root and that account only.  Not with serve_sock. */
    int nsvc;
    int svc_port[TAGENT_SVC_MAX];
    const char *svc_sock[TAGENT_SVC_MAX];
} tagent_spawn_t;

/* Start the shim with the fixed environment above (PATH, and the caller's own sanitizer
 * options when set).  Returns its pid, or -1 with errno and err.  The shim is a child of the
 * caller: reap it with waitpid (tesseld does so in its tick). */
pid_t tagent_spawn(const tagent_spawn_t *s, tsl_error_t *err);

/* How a job ended, from its exit record. */
typedef struct {
    int exit_code;   /* -1 when killed or failed to start */
    int sig;         /* 0 = not killed */
    char error[160]; /* non-empty when the job could not start: "exec: No such file ..." */
    bool oom;        /* the kernel's out-of-memory killer ended a process of the job's cgroup */
} tagent_exit_t;

/* 1 and *out filled when DIR/exit exists, 0 when it does not (yet), -1 with errno on a read
 * error or a malformed file (EPROTO), EXDEV when something is mounted over DIR or the file.
 * For a shim started without exit_file only: DIR is the job's user's, who may rewrite it. */
int tagent_read_exit(const char *dir, tagent_exit_t *out);
/* The same from the exit record at path (tagent_spawn_t.exit_file), which must be a regular
 * file (no symlink followed). */
int tagent_read_exit_file(const char *path, tagent_exit_t *out);

/* DIR/pid: the shim's pid and start time, and the job's pid.  0, or -1 with errno (ENOENT:
 * the shim has not got that far; EPROTO: not a regular file, malformed, or a pid <= 1; EXDEV:
 * something is mounted over DIR or the file).
 * DIR belongs to the job's user, who may rewrite it at will: check the job pid with
 * tagent_child_of before using it, and take it only for a shim started without pid_file. */
int tagent_read_pids(const char *dir, pid_t *shim, uint64_t *shim_start, pid_t *job);
/* The same from the pid record at path (tagent_spawn_t.pid_file), which must be a regular file
 * (no symlink followed). */
int tagent_read_pids_file(const char *path, pid_t *shim, uint64_t *shim_start, pid_t *job);

/* The records in a start lock (tagent_spawn_t.lock_records, tessel-shim --lock-records): the
 * file (root's, 0600, in a 0700 directory of root's) begins with TAGENT_LOCK_HEADER, written by
 * tesseld before the spawn; the shim writes the pid record ("SHIM START JOB\n") with one
 * pwrite at TAGENT_LOCK_PID_OFF and the exit record (as EXIT above) at TAGENT_LOCK_EXIT_OFF,
 * each once, into bytes that are zero (past the end of the file) until then.  A record is
 * there when its first byte is not NUL and a newline ends it before any NUL and within its
 * slot: a read that overlaps the write (both copy bytes in ascending order) sees either no
 * record or the whole one.  Three files (the lock, <id>.pid, <id>.exit) became one
 * (2026-11-28): each inode made and freed costs a scan on a file system without a journal
 * (docs/tesseld.md). */
#define TAGENT_LOCK_HEADER   "tessel start lock 3: pid record at 128, exit record at 256\n"
#define TAGENT_LOCK_PID_OFF  128
#define TAGENT_LOCK_EXIT_OFF 256
#define TAGENT_LOCK_SIZE     512

/* The record of the slot [off, end) of the first n bytes of a start lock buf, copied to out
 * (outlen bytes with its NUL, newline included): 1, or 0 when the slot holds none (yet). */
int tagent_lock_record(const char *buf, size_t n, size_t off, size_t end, char *out, size_t outlen);
/* From a start lock open for reading: 1 when it begins with TAGENT_LOCK_HEADER, else 0; -1
 * with errno on a read error. */
int tagent_lock_has_records(int fd);
/* The exit record in the start lock fd: as tagent_read_exit_file (1, 0 none yet, -1 EPROTO). */
int tagent_read_lock_exit(int fd, tagent_exit_t *out);
/* The pid record in the start lock fd: as tagent_read_pids_file (0, or -1 with errno: ENOENT
 * none yet, EPROTO malformed). */
int tagent_read_lock_pids(int fd, pid_t *shim, uint64_t *shim_start, pid_t *job);

/* Whether pid is alive (or a zombie) and a child of parent.  tesseld takes the job's pid from
 * DIR/pid, which the job's user can rewrite: only a pid whose parent is the shim is the job
 * (and may have its process group signalled). */
bool tagent_child_of(pid_t pid, pid_t parent);

/* Start time of pid (clock ticks since boot, /proc/PID/stat field 22), 0 if gone
 * (a zombie still has its start time). */
uint64_t tagent_proc_start_time(pid_t pid);

/* Whether pid is alive (not a zombie) and is the same process (start time matches;
 * start 0 = any). */
bool tagent_alive(pid_t pid, uint64_t start);

/* A signal mask of /proc/PID/status, the line KEY ("SigIgn", "SigCgt": a colon and 16 hex
 * digits; bit n-1 is signal n).  0 and *mask set, or -1 with errno = EINVAL when the line is
 * missing or malformed (*mask untouched). */
int tagent_sigmask_parse(const char *status, const char *key, uint64_t *mask);

/* The signals this process ignores or catches now (/proc/self/status), for tessel-shim: the
 * job's process resets those to their default before its exec, instead of all 64.  Every bit
 * set when they cannot be read: then all are reset. */
uint64_t tagent_sig_not_default(void);

#endif
