/* shim.c - tessel-shim: the per-job supervisor started by tesseld (see runner.h).
 *
 *   tessel-shim [--env-fd FD] [--lock-fd FD [--lock-records]] [--log-limit BYTES] --dir DIR
 *               [--exit-file EXIT] [--pid-file PID] --cwd CWD
 *               [--cgroup PROCS]... [--uid U --gid G [--user NAME]] [--preload LIBS]
 *               [--state STATE [--preload-list LIST] [--block-userns] [--tty]
 *                [--serve-port PORT --serve-sock PATH --serve-gid GID]]
 *               [--nvml LIB --gpu-mem-limit IDX=SIZE,... [--gpu-mem-violation kill|suspend]
 *                [--nvml-env TESSEL_FAKE_NAME=VALUE]...] [--test-fork]
 *               -- PROG ARG...
 *
 * The shim runs as root with a fixed environment (runner.h, TAGENT_SHIM_PATH); the job's
 * environment comes on descriptor FD ("K=V\0" strings, a sealed memfd from tagent_spawn),
 * read before anything else and applied only in the job's process, after the uid change:
 * LD_AUDIT, LD_LIBRARY_PATH, GCONV_PATH, MALLOC_* ... of a job never reach a root process.
 * --lock-fd names a descriptor (tesseld's flock'ed start lock) the shim keeps open, not
 * inherited by the job, until it ends: while it is held, a restarted tesseld knows that a
 * shim of the job lives even before DIR/pid exists.  With --lock-records (not with --exit-file
 * or --pid-file) the shim writes its pid and exit records into that lock file itself, with
 * pwrite at fixed offsets (runner.h, TAGENT_LOCK_*), instead of the files PID and EXIT.
 * LD_PRELOAD of the job comes as --preload and is set only in the job's process, so the shim
 * itself never runs with the interposer loaded.
 * Starts the job (own process group, in its cgroups, as the user, in CWD, stdin from /dev/null,
 * the environment from FD, stdout and stderr to two pipes) with clone(CLONE_VM | CLONE_VFORK):
 * no copy of the shim's memory, the shim waits until the job's exec (start_job; a fork with
 * --test-fork, for the tests that compare both, or where fs.suid_dumpable is 1), writes
 * DIR/pid = "SHIM_PID SHIM_START JOB_PID" (and the same atomically to PID, the record tesseld
 * trusts: DIR/pid is the job's user's to rewrite, informational only), copies the job's output into
 * DIR/stdout and DIR/stderr (at most BYTES each, 0 or absent = no limit: the head and the tail with
 * a marker between, logcap.h) while it waits, and writes its exit record atomically to EXIT
 * (DIR/exit without --exit-file; again every second while the file system is full).  Ignores
 * SIGHUP, SIGINT, SIGTERM and SIGPIPE: it ends when the job ends (or by SIGKILL, which tesseld
 * detects as a lost supervisor).  Exit status: 0 when the exit record was written, 1 otherwise.
 *
 * Hardening (the shim runs as root when tesseld does; DIR belongs to the job's user, who can
 * create anything in it while the job runs, and before a requeued job's next attempt):
 *   - every descriptor above 2 is closed at start, whatever the spawner leaked;
 *   - the job drops privileges in the order setgroups (the account's supplementary groups,
 *     NAME from --user, looked up by the shim; none without it) -> setgid -> setuid, then checks
 * that root cannot be regained, before it touches any path;
 *   - the job's process opens DIR/stdout and DIR/stderr as its user (mode 0600, regular files
 *     only) and hands the descriptors to the shim, which writes the output only through them:
 *     a symlink or hard link planted there cannot make root write where the user may not;
 *   - DIR/pid (and DIR/exit without --exit-file) are written by root through a temporary file
 *     created with O_EXCL (never through an existing name or a symlink) and renamed, in DIR as
 *     reached without crossing a mount point (a FUSE mount of the user's over DIR would make
 *     the write wait for its server: nomount.h); the exit record tesseld trusts is EXIT, in a
 *     directory of tesseld's own;
 *   - the job starts with default dispositions for every signal, an empty signal mask, in its
 *     own process group (the shim's session).
 *
 * Enforcement (docs/security.md): with --state (tesseld's root-owned per-job directory) the job
 * runs in its own mount namespace where /etc/ld.so.preload names the interposer (LIST, or
 * STATE/ld.so.preload without --preload-list) and its limits file is at
 * /run/tessel/job/limits (jobns.h); --block-userns refuses it new user namespaces.
 * With --nvml (an absolute path tesseld resolved, never the job's) a watchdog thread stops the
 * job when its processes hold more GPU memory than --gpu-mem-limit (watchdog.h); --nvml-env
 * (up to 4, TESSEL_FAKE_* only) configures the fake NVML of the tests, which reads its
 * environment, not the shim's.  With --state, a process job's --folder NAME[:ro] (up to 16)
 * are bind-mounted from --folder-root at /tessel/folders/NAME in its namespace (jobns.h,
 * docs/folders.md).
 *
 * Service replica (--serve-port, with --state, not for a container; fwd.h, docs/serving.md): the
 * job runs in a network namespace of its own (loopback only), where it listens on
 * 127.0.0.1:PORT; the shim binds the Unix socket PATH (owner the job's account, group GID:
 * HAProxy's, 0660) and forks a forwarder that joins the job's cgroups and namespace, drops
 * every privilege and copies each connection from PATH to that port.  The forwarder ends with
 * the job (SIGKILL, reaped), and PATH is removed.  exec (tty.h) joins the same namespace.
 *
 * Web services of a job (--svc PORT:PATH, up to TAGENT_SVC_MAX, with --state, not for a
 * container nor a replica; docs/job-services.md): the job runs in a network namespace of its
 * own, as a replica does; for each service the shim binds the Unix socket PATH (owner the job's
 * account, group root, 0600) and forks a forwarder (fwd.h) admitting root and the job's account
 * only, to 127.0.0.1:PORT in the namespace.  The forwarders end with the job, their sockets
 * with them.
 *
 * Terminal (--tty, with --state): the job gets a pseudo-terminal as its controlling terminal
 * and its stdin, stdout and stderr, in a session of its own (its process group is still its
 * pid); the shim holds the master side, copies what the job writes into DIR/stdout, and serves
 * the terminal to tesseld on STATE/tty.sock (tty.h, docs/terminal.md).  A container's terminal
 * is crun's (config.json's process.terminal): crun create passes its master to the shim over
 * STATE/console/run.sock (--console-socket, ctrrun.h), before the container's process runs.
 * exec into a container job is `crun exec` with a process.json and a console socket of its own
 * in STATE/console (ctr_exec_start).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sched.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "agent/ctrrun.h"
#include "agent/fwd.h"
#include "agent/jobns.h"
#include "agent/logcap.h"
#include "agent/tty.h"
#include "agent/runner.h"
#include "agent/watchdog.h"
#include "libutil/nomount.h"

#define MAX_CG 8

/* Mode of the job's logs: its user's only (they may hold secrets); tesseld reads them as root
 * (or as the same user) for the API. */
#define LOG_MODE 0600

extern char **environ;

static void usage(void)
{
    fprintf(stderr,
            "usage: tessel-shim [--env-fd FD] [--lock-fd FD [--lock-records]] [--log-limit BYTES] "
            "--dir DIR "
            "[--exit-file EXIT] [--pid-file PID] --cwd CWD [--cgroup PROCS]... "
            "[--uid U --gid G [--user NAME]] [--preload LIBS] [--state DIR [--preload-list LIST] "
            "[--block-userns] [--tty] [--serve-port PORT --serve-sock PATH "
            "--serve-gid GID] [--svc PORT:PATH]...] [--nvml LIB --gpu-mem-limit IDX=SIZE,... "
            "[--gpu-mem-violation kill|suspend] [--nvml-env TESSEL_FAKE_NAME=VALUE]...] "
            "[--folder-root DIR --folder NAME[:ro]...] [--test-fork] -- PROG [ARG...]\n");
    exit(2);
}

/* Close descriptors lo..hi (close_range, or one by one below 1024 on an old kernel). */
static void close_fds(unsigned lo, unsigned hi)
{
    if (close_range(lo, hi, 0) == 0)
        return;
    for (unsigned fd = lo; fd <= hi && fd < 1024; fd++)
        close((int)fd);
}

/* Read the job's environment from fd ("K=V\0"..., at most TAGENT_ENV_MAX bytes) into a
 * NULL-terminated array pointing into one buffer (*bufp; both malloc'd, the caller frees
 * both).  NULL with errno: EINVAL for an entry without '=' or a missing final NUL, E2BIG when
 * too large. */
static char **read_env(int fd, char **bufp)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        if (len == cap) {
            if (cap > TAGENT_ENV_MAX) {
                free(buf);
                errno = E2BIG;
                return NULL;
            }
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                return NULL;
            }
            buf = b;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (len > TAGENT_ENV_MAX || (len > 0 && buf[len - 1] != '\0')) {
        free(buf);
        errno = len > TAGENT_ENV_MAX ? E2BIG : EINVAL;
        return NULL;
    }
    size_t count = 0;
    for (size_t i = 0; i < len; i++)
        count += buf[i] == '\0';
    char **env = calloc(count + 1, sizeof *env);
    if (!env) {
        free(buf);
        return NULL;
    }
    size_t k = 0;
    for (size_t off = 0; off < len; off += strlen(buf + off) + 1) {
        const char *eq = strchr(buf + off, '=');
        if (!eq || eq == buf + off) {
            free(env);
            free(buf);
            errno = EINVAL;
            return NULL;
        }
        env[k++] = buf + off;
    }
    env[k] = NULL;
    *bufp = buf;
    return env;
}

/* Write name atomically below the directory dfd: name.tmp, then rename. */
static int write_atomic_at(int dfd, const char *name, const char *text)
{
    char tmp[256];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", name) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* DIR may hold anything the job's user put there: remove what has the temporary's name
     * and create it anew with O_EXCL, which never follows a symlink; rename replaces the
     * final name itself, not what it may point to.  dfd is the directory underneath any mount
     * the user may have made over it since (tsl_dir_nomount), so neither waits on a file
     * system of theirs; a mount point at either name is EBUSY. */
    if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
        return -1;
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    if (write(fd, text, len) != (ssize_t)len) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    if (close(fd) < 0)
        return -1;
    return renameat(dfd, tmp, dfd, name);
}

/* Write DIR/name atomically (DIR is the job's user's: reached without crossing a mount). */
static int write_job_file(const char *dir, const char *name, const char *text)
{
    int dfd = tsl_dir_nomount(dir);
    if (dfd < 0)
        return -1;
    int rc = write_atomic_at(dfd, name, text);
    int saved = errno;
    close(dfd);
    errno = saved;
    return rc;
}

/* The forwarder of a service replica (fwd.h), 0 when none or reaped. */
static pid_t fwd_pid;
/* The forwarders of the job's web services (--svc), 0 when none or reaped. */
static pid_t svc_pid[TAGENT_SVC_MAX];
static int nsvc;

/* Whether w was a web service's forwarder (then said and forgotten). */
static bool svc_reaped(pid_t w, int st)
{
    for (int k = 0; k < nsvc; k++)
        if (svc_pid[k] == w) {
            fprintf(stderr, "tessel-shim: the forwarder of service %d ended (status %d)\n", k, st);
            svc_pid[k] = 0;
            return true;
        }
    return false;
}

/* --exit-file, or NULL: DIR/exit. */
static const char *exit_file;
/* --pid-file, or NULL: DIR/pid alone. */
static const char *pid_file;
/* --lock-records: the descriptor of the start lock (--lock-fd) that holds both records
 * (runner.h, TAGENT_LOCK_*); -1: none. */
static int records_fd = -1;

/* Write text (one line) into the start lock's slot [off, end): one pwrite of the whole record
 * into bytes that are zero until then (runner.h).  0, or -1 with errno. */
static int write_lock_record(off_t off, off_t end, const char *text)
{
    size_t len = strlen(text);
    if (len == 0 || text[len - 1] != '\n' || (off_t)len > end - off) {
        errno = EINVAL;
        return -1;
    }
    ssize_t n;
    do
        n = pwrite(records_fd, text, len, off);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -1;
    if ((size_t)n != len) {
        errno = EIO;
        return -1;
    }
    return 0;
}

/* Write path atomically, in a directory of tesseld's own (which the job's user cannot write). */
static int write_root_file(const char *path, const char *text)
{
    const char *slash = strrchr(path, '/');
    char parent[4096];
    if (!slash || !slash[1] || (size_t)(slash - path) >= sizeof parent) {
        errno = EINVAL;
        return -1;
    }
    memcpy(parent, path, (size_t)(slash - path));
    parent[slash - path] = '\0';
    int dfd = open(slash == path ? "/" : parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    int rc = write_atomic_at(dfd, slash + 1, text);
    int saved = errno;
    close(dfd);
    errno = saved;
    return rc;
}

/* The exit record: at --exit-file (a directory of tesseld's own, which the job's user cannot
 * write: a process the job left behind cannot rewrite the record before tesseld reads it), or
 * DIR/exit without it. */
static int write_exit(const char *dir, const char *text)
{
    if (records_fd >= 0)
        return write_lock_record(TAGENT_LOCK_EXIT_OFF, TAGENT_LOCK_SIZE, text);
    if (!exit_file)
        return write_job_file(dir, "exit", text);
    return write_root_file(exit_file, text);
}

/* The pid record: at --pid-file (tesseld's own directory: the only one tesseld trusts, a job
 * rewriting it could otherwise name any process group for tesseld to signal), and DIR/pid for
 * the job's user to read (tesseld never reads it for a shim started with --pid-file). */
static void write_pids(const char *dir, const char *text)
{
    if (records_fd >= 0 && write_lock_record(TAGENT_LOCK_PID_OFF, TAGENT_LOCK_EXIT_OFF, text) < 0)
        perror("tessel-shim: pid record");
    if (pid_file && write_root_file(pid_file, text) < 0)
        perror("tessel-shim: pid record");
    if (write_job_file(dir, "pid", text) < 0)
        perror("tessel-shim: pid file");
}

/* Seconds between two tries to write the exit record on a full file system. */
#define EXIT_RETRY_S 1
/* Most bytes read from the job's pipes once it has ended (what a process it left behind may
 * still be writing is not waited for): the pipes hold 64 KiB each by default, 1 MiB at most
 * (/proc/sys/fs/pipe-max-size), so 2 MiB takes all that was written before the end. */
#define DRAIN_MAX (2u << 20)

/* The job's log file at path, opened as the caller (the job's user): appended to, created
 * LOG_MODE, never through a symlink, never blocking on a FIFO; a regular file only.  fd or -1
 * with errno (EINVAL: not a regular file). */
static int open_log(const char *path)
{
    int fd =
        open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
             LOG_MODE);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

/* The descriptors the job's first process passes to the shim: its two logs, their time
 * indexes, and its mount namespace (the one it made, before any code of the job's runs; or
 * /dev/null for none): exec joins that one (exec_start). */
#define JOB_FDS 5

/* Pass them over the socket (SCM_RIGHTS).  0 or -1 with errno. */
static int send_fds(int sock, const int fds[JOB_FDS])
{
    char byte = 'L';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(JOB_FDS * sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(JOB_FDS * sizeof(int));
    memcpy(CMSG_DATA(c), fds, JOB_FDS * sizeof(int));
    return sendmsg(sock, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* Receive them (close-on-exec).  0, or -1 with errno (ENODATA: the child ended or failed
 * before it sent them). */
static int recv_fds(int sock, int fds[JOB_FDS])
{
    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(JOB_FDS * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t n;
    do
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        if (n == 0)
            errno = ENODATA;
        return -1;
    }
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
        c->cmsg_len != CMSG_LEN(JOB_FDS * sizeof(int))) {
        errno = EPROTO;
        return -1;
    }
    memcpy(fds, CMSG_DATA(c), JOB_FDS * sizeof(int));
    return 0;
}

/* Read what fd holds now into lc (NULL: discard).  Returns false at end of file or on an
 * error (fd is then closed), true when the pipe is open and empty for now.  At most max bytes
 * (0: no bound). */
static bool take(int fd, tagent_logcap_t *lc, size_t max)
{
    static char buf[64 * 1024];
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r > 0) {
            tagent_logcap_write(lc, buf, (size_t)r);
            got += (size_t)r;
            if (max && got >= max)
                return true;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return true;
        close(fd);
        return false;
    }
}

/* Milliseconds from now until the CLOCK_MONOTONIC time at (0 once it has passed). */
static int ms_until(const struct timespec *at)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ms = (long long)(at->tv_sec - now.tv_sec) * 1000 +
                   (at->tv_nsec - now.tv_nsec + 999999) / 1000000;
    return ms <= 0 ? 0 : ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* Start the watchdog thread (the shim is single-threaded until then); a failure is said in
 * shim.log and the job runs on. */
static void watchdog_start(const tsw_config_t *wd)
{
    tsl_error_t werr;
    if (tsw_start(wd, &werr) < 0)
        fprintf(stderr, "tessel-shim: GPU-memory watchdog not started: %s\n", werr.text);
}

/* The shim's main loop: copy the job's stdout and stderr (pipes out and err, non-blocking)
 * into lc[0] and lc[1], reap every child that ends (SIGCHLD from sfd: the job's orphans are
 * re-parented to the shim), until the job (pid) has ended and what its pipes held then is
 * read.  Returns the job's wait status, or -1 when waitpid fails.
 *
 * wd (or NULL): the GPU-memory watchdog, started by this loop once the job has run
 * TSW_PERIOD_MS (its first sample is due then): a job that ends sooner costs the shim no
 * thread (its stack, its start, and the TLB shootdowns that every munmap and the exit of a
 * two-threaded process cost on a paravirtualised machine).
 *
 * Single-threaded: the loop owns the pipes, the log writers and waitpid.  The watchdog thread
 * must not wait for children, and keeps SIGCHLD blocked (it inherits the mask). */
static int pump(pid_t pid, int out, int err, int sfd, tagent_logcap_t *lc[2],
                const tsw_config_t *wd, tagent_tty_t *tty)
{
    fcntl(out, F_SETFL, O_NONBLOCK);
    fcntl(err, F_SETFL, O_NONBLOCK);
    struct pollfd p[3 + TAGENT_TTY_NFDS] = {{.fd = out, .events = POLLIN},
                                            {.fd = err, .events = POLLIN},
                                            {.fd = sfd, .events = POLLIN}};
    int status = 0;
    bool ended = false;
    struct timespec wd_at;
    clock_gettime(CLOCK_MONOTONIC, &wd_at);
    wd_at.tv_sec += TSW_PERIOD_MS / 1000;
    wd_at.tv_nsec += (TSW_PERIOD_MS % 1000) * 1000000L;
    if (wd_at.tv_nsec >= 1000000000L) {
        wd_at.tv_sec++;
        wd_at.tv_nsec -= 1000000000L;
    }
    while (!ended) {
        if (wd && ms_until(&wd_at) == 0) {
            watchdog_start(wd);
            wd = NULL;
        }
        /* The job's terminal (tty.h): its descriptors after the three. */
        int nt = tty ? tagent_tty_pollfds(tty, p + 3) : 0;
        int rc = poll(p, (nfds_t)(3 + nt), wd ? ms_until(&wd_at) : -1);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            perror("tessel-shim: poll");
            return -1;
        }
        for (int k = 0; k < 2; k++)
            if (p[k].fd >= 0 && p[k].revents && !take(p[k].fd, lc[k], 0))
                p[k].fd = -1;
        if (tty)
            tagent_tty_handle(tty, p + 3, nt, lc[0]);
        if (p[2].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            }
        }
        /* Reap every child that has ended: the job, and the orphans it left to the shim. */
        for (;;) {
            int st;
            pid_t w = waitpid(-1, &st, WNOHANG);
            if (w == pid) {
                status = st;
                ended = true;
            } else if (w > 0 && w == fwd_pid) {
                fprintf(stderr, "tessel-shim: the forwarder ended (status %d)\n", st);
                fwd_pid = 0;
            } else if (w > 0 && svc_reaped(w, st)) {
                /* A web service's forwarder: said on stderr. */
            } else if (w > 0 && tty && tagent_tty_reaped(tty, w, st)) {
                /* A process started by exec: its end went to its client. */
            } else if (w <= 0) {
                if (w < 0 && errno != ECHILD && errno != EINTR) {
                    perror("tessel-shim: waitpid");
                    return -1;
                }
                break;
            }
        }
    }
    /* The job has ended: its last output is in the pipes (or they are closed). */
    for (int k = 0; k < 2; k++)
        if (p[k].fd >= 0 && take(p[k].fd, lc[k], DRAIN_MAX))
            close(p[k].fd);
    close(sfd);
    return status;
}

/* A container job whose runtime failed: copy what the pipes hold (the runtime's message) into
 * the logs and close them.  Returns 0 (the exit record says the failure). */
static int drain(int out, int err, tagent_logcap_t *lc[2])
{
    int fds[2] = {out, err};
    for (int k = 0; k < 2; k++) {
        fcntl(fds[k], F_SETFL, O_NONBLOCK);
        if (take(fds[k], lc[k], DRAIN_MAX))
            close(fds[k]);
    }
    return 0;
}

/* What the child reports through the close-on-exec pipe when it cannot exec. */
struct child_error {
    char stage[16];
    int err;
};

static void child_fail(int fd, const char *stage)
{
    struct child_error ce = {.err = errno};
    snprintf(ce.stage, sizeof ce.stage, "%s", stage);
    if (write(fd, &ce, sizeof ce) < 0) {
        /* Nothing more to tell: the shim records an unknown failure. */
    }
    _exit(127);
}

/* What the job's process needs, all of it prepared by the shim before the job's process
 * exists: with CLONE_VM (start_job) that process shares the shim's memory until its exec, so
 * it computes nothing that allocates or reads the account database. */
struct job_args {
    int pfd, outp, errp, sock, devnull; /* the child's ends (pfd, outp, errp, sock: [1]) */
    int tty; /* --tty: the terminal's slave side (its stdin, stdout, stderr); -1: none */
    /* A process started by exec (tty.h) in the running job: no logs of its own, the job's
     * mount namespace joined through ns_fd (the one the job's first process made, passed to
     * the shim before the job's code ran; -1: none) instead of made. */
    bool exec_mode;
    int ns_fd;
    int net_fd; /* a service replica's network namespace (fwd.h), joined; -1: the shim's */
    const char *const *cg; /* cgroup.procs files to join */
    int ncg;
    const char *state;        /* the job's mount namespace (jobns.h), or NULL */
    const char *preload_list; /* --preload-list: the file bound at /etc/ld.so.preload, or NULL */
    bool block_userns;
    long uid, gid;       /* -1: no change */
    const gid_t *groups; /* with gid >= 0: the supplementary groups */
    size_t ngroups;
    int groups_err; /* errno of the groups' look-up in the shim, 0 when none */
    const char *out_path, *err_path, *out_idx, *err_idx, *cwd;
    char **argv, **envp; /* envp: the job's, LD_PRELOAD included */
    bool shared_vm;      /* started with CLONE_VM: see start_job */
    uint64_t sig_set;    /* the signals the shim ignores or catches (bit n-1: signal n) */
    /* A container job (ctrrun.h): crun's command line, the image's root file system; the
     * process stays root, takes the user's file-system ids only to open the logs and cwd. */
    char **ctr_argv;
    const char *image;
    unsigned ctr_cwd_flags; /* --ctr-cwd-flags: TAGENT_CTR_CWD_* the config binds the cwd with */
    /* A process job's virtual folders (jobns.h): --folder-root and the --folder specs. */
    const char *folder_root;
    const char *const *folders;
    int nfolders;
};

/* The job's process: join the cgroups, enter the job's namespace, drop to the user, open the
 * logs as the user, exec.  Never returns.  Only system calls and async-signal-safe functions,
 * and the raw set*id system calls, which change this process's credentials and nobody
 * else's (glibc's wrappers would signal the threads of a multi-threaded caller). */
static int job_main(void *arg)
{
    const struct job_args *a = arg;
    int pfd = a->pfd;
    /* A job with a terminal leads a session of its own, the terminal its controlling one (so
     * that Ctrl-C typed there signals its foreground process group); its process group is its
     * pid either way (tesseld signals the group). */
    if (a->tty >= 0) {
        if (setsid() < 0 || ioctl(a->tty, TIOCSCTTY, 0) < 0)
            child_fail(pfd, "tty");
    } else {
        setpgid(0, 0);
    }
    signal(SIGHUP, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int c = 0; c < a->ncg; c++) {
        int fd = open(a->cg[c], O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
            child_fail(pfd, "cgroup");
        close(fd);
    }
    if (a->net_fd >= 0 && setns(a->net_fd, CLONE_NEWNET) < 0)
        child_fail(pfd, "netns");
    if (a->exec_mode) {
        if (a->ns_fd >= 0 && setns(a->ns_fd, CLONE_NEWNS) < 0)
            child_fail(pfd, "setns");
    } else if (!a->ctr_argv && a->state && tagent_jobns_enter(a->state, a->preload_list) < 0) {
        child_fail(pfd, "jobns");
    }
    /* The namespace just made, for exec: held by the shim, so that exec never joins one the
     * job made itself later (unshare -Urm under --allow-userns). */
    int nsfd = -1;
    if (!a->exec_mode && !a->ctr_argv && a->state &&
        (nsfd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC)) < 0)
        child_fail(pfd, "jobns");
    /* A new process of tessel exec joined the job's namespace: its folders are there. */
    if (!a->exec_mode && !a->ctr_argv && a->state && a->nfolders > 0 &&
        tagent_jobns_folders(a->folder_root, a->folders, a->nfolders) < 0)
        child_fail(pfd, "folders");
    if (a->block_userns && tagent_jobns_block_userns() < 0)
        child_fail(pfd, "seccomp");
    if (a->ctr_argv && a->gid >= 0) {
        if (a->groups_err) {
            errno = a->groups_err;
            child_fail(pfd, "setgroups");
        }
        if (tagent_ctr_user_ids((uid_t)a->uid, (gid_t)a->gid, a->groups, a->ngroups) < 0)
            child_fail(pfd, "ctr-ids");
    }
    if (a->ctr_argv) {
        /* crun runs as root; the user is the container's (its config.json). */
    } else if (a->gid >= 0) {
        /* setgroups -> setgid -> setuid: groups and gid can only be changed while root. */
        if (a->groups_err) {
            errno = a->groups_err;
            child_fail(pfd, "setgroups");
        }
        if (syscall(SYS_setgroups, a->ngroups, a->groups) < 0)
            child_fail(pfd, "setgroups");
        if (syscall(SYS_setgid, (gid_t)a->gid) < 0)
            child_fail(pfd, "setgid");
    }
    if (!a->ctr_argv && a->uid >= 0) {
        uid_t u = (uid_t)a->uid;
        if (syscall(SYS_setuid, u) < 0)
            child_fail(pfd, "setuid");
        /* No way back: real, effective and saved ids are the user's. */
        if (u != 0 && (syscall(SYS_setuid, 0) == 0 || syscall(SYS_setresuid, -1, 0, -1) == 0 ||
                       getuid() != u || geteuid() != u)) {
            errno = EPERM;
            child_fail(pfd, "privdrop");
        }
        /* Sharing the shim's memory, this process must not be open to the user's ptrace or
         * /proc/PID/mem: the kernel made it non-dumpable at the uid change (fs.suid_dumpable
         * 0 or 2, checked by start_job); checked again here. */
        if (u != 0 && a->shared_vm && prctl(PR_GET_DUMPABLE) == 1) {
            errno = EPERM;
            child_fail(pfd, "dumpable");
        }
    }
    /* The logs are opened as the job's user (a symlink or a file the user left in DIR
     * leads only where the user may write anyway), must be regular files (O_NONBLOCK: a
     * FIFO there does not block the open), and go to the shim, which writes the job's
     * output into them through the limit (logcap.h). */
    int out = a->exec_mode ? -1 : open_log(a->out_path);
    if (out < 0 && !a->exec_mode)
        child_fail(pfd, "stdout");
    if (!a->exec_mode) {
        int err = open_log(a->err_path);
        if (err < 0)
            child_fail(pfd, "stderr");
        /* Their time indexes (logcap.h), the same way; without one (a directory or FIFO the
         * user left there) the job runs, its index goes to /dev/null. */
        int fds[JOB_FDS] = {out, err, open_log(a->out_idx), open_log(a->err_idx), nsfd};
        for (int k = 2; k < JOB_FDS; k++)
            if (fds[k] < 0)
                fds[k] = a->devnull;
        if (send_fds(a->sock, fds) < 0)
            child_fail(pfd, "logs");
        for (int k = 0; k < JOB_FDS; k++)
            if (fds[k] != a->devnull)
                close(fds[k]);
        close(a->sock);
    }
    if (a->ctr_argv) {
        /* The cwd, entered as the user (fchdir checks the search permission with the
         * file-system ids), then bound into the container by this descriptor. */
        int cwd = open(a->cwd, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cwd < 0 || fchdir(cwd) < 0)
            child_fail(pfd, "chdir");
        /* crun binds it with the config's options: a read-only or noexec mount that tesseld
         * did not see (the cwd moved since) would become writable or exec inside. */
        if (tagent_ctr_cwd_flags_ok(cwd, a->ctr_cwd_flags) < 0)
            child_fail(pfd, "ctr-cwd-mount");
        if (tagent_ctr_root_ids() < 0)
            child_fail(pfd, "ctr-ids");
        if (tagent_ctr_mount(a->state, a->image, cwd) < 0)
            child_fail(pfd, "ctr-mount");
        close(cwd);
        if (chdir("/") < 0)
            child_fail(pfd, "chdir");
    } else if (chdir(a->cwd) < 0)
        child_fail(pfd, "chdir");
    if (a->tty >= 0) {
        if (dup2(a->tty, 0) < 0 || dup2(a->tty, 1) < 0 || dup2(a->tty, 2) < 0)
            child_fail(pfd, "dup2");
    } else if (dup2(a->devnull, 0) < 0 || dup2(a->outp, 1) < 0 || dup2(a->errp, 2) < 0)
        child_fail(pfd, "dup2");
    /* Every signal at its default, including the two glibc keeps for itself (32, 33:
     * posix_spawn leaves them ignored in the shim, and an ignored signal stays ignored
     * across exec; a runtime other than glibc's would inherit that).  Only the signals that are
     * not at their default in the shim (sig_set: ignored or caught, read by the shim before
     * this process existed; all 64 when it could not be read) are reset here: none or a few
     * system calls instead of 62 (t3142).  The kernel's sigaction with every field zero is
     * SIG_DFL, no flags, empty mask, on every arch. */
    uint64_t reset = a->sig_set & ~(1ull << (SIGHUP - 1) | 1ull << (SIGINT - 1) |
                                    1ull << (SIGTERM - 1) | 1ull << (SIGPIPE - 1)); /* above */
    for (int sig = 1; sig <= 64; sig++) {
        unsigned long ksa[8] = {0};
        if (sig != SIGKILL && sig != SIGSTOP && (reset >> (sig - 1) & 1))
            syscall(SYS_rt_sigaction, sig, ksa, NULL, (size_t)8);
    }
    /* The job's environment, only now that the process is the user's; execvp searches the
     * job's PATH.  With CLONE_VM the shim puts its own environ back once this exec is done. */
    if (a->ctr_argv) {
        /* crun with the shim's own fixed environment: the job's is in config.json only. */
        execv(a->ctr_argv[0], a->ctr_argv);
        child_fail(pfd, "exec");
    }
    environ = a->envp;
    execvp(a->argv[0], a->argv);
    child_fail(pfd, "exec");
    return 127;
}

/* Bytes of stack for the job's process when it shares the shim's memory (above a guard
 * page): job_main needs a few KiB (execvp's path buffer is at most PATH_MAX + NAME_MAX);
 * 256 KiB leave room for the sanitizers' redzones, and pages never touched cost nothing. */
#define JOB_STACK (256u << 10)
/* Room for the guard page at a page boundary, pages up to 64 KiB (aarch64). */
#define JOB_STACK_PAGE_MAX (64u << 10)

/* That stack: static, in the shim's .bss, not an mmap and munmap for each start (on a
 * paravirtualised MMU the munmap of the touched pages, with its TLB flush, costs tens of
 * microseconds; a shim starts one job, and its exit frees the pages). */
static char job_stack[JOB_STACK + 2 * JOB_STACK_PAGE_MAX];

/* Whether the job's process may share the shim's memory until its exec: only when the kernel
 * makes a process that changes its uid non-dumpable (fs.suid_dumpable 0, or 2: dumpable by
 * root only).  With 1 ("debug") the user could ptrace that process, and through it write the
 * memory of root's shim: then fork. */
static bool shared_vm_safe(void)
{
    int fd = open("/proc/sys/fs/suid_dumpable", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char c = 0;
    ssize_t n = read(fd, &c, 1);
    close(fd);
    return n == 1 && (c == '0' || c == '2');
}

/* Start the job's process (job_main).  Cheap: clone(CLONE_VM | CLONE_VFORK), no copy of the
 * shim's page tables and no copy-on-write faults afterwards in either process; the shim waits
 * until the job has exec'd (or failed).  A fork when use_fork (--test-fork) or when the
 * kernel would leave that process open to its user (shared_vm_safe).  The job's pid, or -1
 * with errno. */
/* Under AddressSanitizer the job's process is always forked: ASan does not know a stack it did
 * not make (it writes a warning into the job's stderr at the first noreturn call made there,
 * and cannot check that stack).  The optimised build takes the clone path; t3070 runs both. */
#if defined(__SANITIZE_ADDRESS__)
#define SHIM_ALWAYS_FORK true
#else
#define SHIM_ALWAYS_FORK false
#endif

static pid_t start_job(struct job_args *a, bool use_fork)
{
    a->shared_vm = !use_fork && !SHIM_ALWAYS_FORK && shared_vm_safe();
    if (!a->shared_vm) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(job_main(a));
        return pid;
    }
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || (unsigned long)page > JOB_STACK_PAGE_MAX) {
        errno = EINVAL;
        return -1;
    }
    /* The guard page: the first whole page of job_stack, made inaccessible (a shim starts
     * one job). */
    uintptr_t p = (uintptr_t)job_stack;
    char *guard = (char *)((p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1));
    if (mprotect(guard, (size_t)page, PROT_NONE) < 0)
        return -1;
    char **saved_env = environ;
    /* The stack grows down (x86_64, aarch64): the child starts at the top, 16-byte aligned. */
    pid_t pid = clone(job_main, guard + page + JOB_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
    int saved = errno;
    environ = saved_env;
    errno = saved;
    return pid;
}

/* The fake NVML's shared state file (TESSEL_FAKE_STATE, a test double's setting that comes
 * from the job's environment) for a job run as uid:gid: the fake opens it with O_CREAT,
 * following links, and writes it, which in this root process would let the job name any file
 * for root to create or overwrite.  So the file is opened here with the job's own file-system
 * ids (setfsuid: the shim is single-threaded at this point), O_NOFOLLOW, never created, and
 * must be a regular file; the fake then opens that very file through /proc/self/fd.  Returns
 * the "TESSEL_FAKE_STATE=/proc/self/fd/N" string (static), or NULL (the variable is dropped:
 * the watchdog's fake NVML sees no job-wide state) with the reason in the shim's log. */
static const char *fake_state_as(const char *path, uid_t uid, gid_t gid)
{
    static char env[64];
    syscall(SYS_setfsgid, gid);
    syscall(SYS_setfsuid, uid);
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    int saved = errno;
    syscall(SYS_setfsuid, 0);
    syscall(SYS_setfsgid, 0);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
        saved = EINVAL;
    }
    if (fd < 0) {
        fprintf(stderr,
                "tessel-shim: TESSEL_FAKE_STATE=%s not used: %s (the job's account must "
                "be able to write it, a regular file)\n",
                path, strerror(saved));
        return NULL;
    }
    snprintf(env, sizeof env, "TESSEL_FAKE_STATE=/proc/self/fd/%d", fd);
    return env;
}

/* What exec_start needs: the job's own start (main's job_args) and its first process. */
struct exec_ctx {
    const struct job_args *ja;
    pid_t job;
    int ns; /* the job's mount namespace (JOB_FDS), or -1 */
};

/* tagent_exec_fn: start argv in the running job (tty.h) as its first process was started,
 * with the job's cgroups, account, groups, environment (LD_PRELOAD included), cwd and seccomp
 * filter, in the job's mount namespace (joined, not made), on the terminal pts.  Forked (the
 * shim may be two-threaded by now); the shim waits for its exec or its failure. */
static pid_t exec_start(void *arg, char **argv, int pts, char *why, size_t wlen)
{
    const struct exec_ctx *x = arg;
    struct job_args a = *x->ja;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        snprintf(why, wlen, "exec: %s", strerror(errno));
        return -1;
    }
    /* The namespace the job's first process made, passed to the shim before the job's code
     * ran: never /proc/JOB/ns/mnt now, which the job may have changed. */
    int ns = x->ns;
    if (a.state && ns < 0) {
        snprintf(why, wlen, "exec: the job's mount namespace was not received");
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    a.pfd = pfd[1];
    a.tty = pts;
    a.argv = argv;
    a.exec_mode = true;
    a.ns_fd = ns;
    a.shared_vm = false;
    pid_t pid = fork();
    if (pid == 0)
        _exit(job_main(&a));
    int saved = errno;
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        snprintf(why, wlen, "exec: fork: %s", strerror(saved));
        return -1;
    }
    struct child_error ce;
    ssize_t n;
    do
        n = read(pfd[0], &ce, sizeof ce);
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    if (n == (ssize_t)sizeof ce) {
        ce.stage[sizeof ce.stage - 1] = '\0';
        snprintf(why, wlen, "exec %s: %s: %s", argv[0], ce.stage, strerror(ce.err));
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        return -1;
    }
    return pid;
}

/* How long crun may take to send a terminal's master (it sends it within milliseconds; a
 * loaded machine may take a few hundred). */
#define CONSOLE_WAIT_MS 10000
/* Bytes of crun's own message kept for the client when crun exec fails. */
#define CRUN_MSG_MAX 200

/* What ctr_exec_start needs: the job's start, crun, the state and console directories. */
struct ctr_exec_ctx {
    const struct job_args *ja;
    const char *runtime, *state, *dir;
    pid_t job;    /* the container's first process: its mount namespace */
    unsigned seq; /* names each exec's process.json and socket */
};

/* The longest the exec pre-check (ctr_exec_check) may take. */
#define CTR_EXEC_CHECK_MS 5000

/* Whether file may be executed by the file-system ids of the caller (faccessat2 with
 * AT_EACCESS: the kernel checks with those, not the real ids; never emulated): 0 or the
 * errno. */
static int eaccess_x(const char *file)
{
    return syscall(SYS_faccessat2, AT_FDCWD, file, X_OK, AT_EACCESS) == 0 ? 0 : errno;
}

/* Whether prog can be started in the container as the job's user, looked up as execvp does
 * (PATH from the job's config, from the config's cwd): crun finds a missing program only
 * inside the container, after the terminal was made, and ends with 255 like a command that
 * exits 255; this says it first, so that the client gets the reason and "error exec" (125).
 * A forked process enters the container's mount namespace (that of its first process, as
 * crun exec does), takes the user's file-system ids and groups (not its real ids: the user
 * cannot stop it), and tries; crun still does the real exec, so
 * this decides nothing but the message.  0 when it may start (or the check itself could not
 * run), else the errno (ENOENT, EACCES, ...). */
static int ctr_exec_check(const struct ctr_exec_ctx *x, const char *config, const char *prog)
{
    char path[4096], cwd[4096], nsp[64];
    if (tagent_ctr_process_info(config, path, sizeof path, cwd, sizeof cwd) < 0)
        return 0;
    const struct job_args *a = x->ja;
    snprintf(nsp, sizeof nsp, "/proc/%d/ns/mnt", (int)x->job);
    int ns = open(nsp, O_RDONLY | O_CLOEXEC);
    if (ns < 0)
        return 0;
    pid_t pid = fork();
    if (pid == 0) {
        /* The user's file-system ids only (setfsuid, setfsgid, the groups): the real and
         * effective ids stay root's, so the job's user cannot signal (stop) this process and
         * with it the shim waiting below; a file-system uid other than 0 loses the file
         * capabilities (CAP_DAC_OVERRIDE...), so the look-up is the user's. */
        if (setns(ns, CLONE_NEWNS) < 0)
            _exit(0);
        if (a->gid >= 0) {
            if (syscall(SYS_setgroups, a->ngroups, a->groups) < 0)
                _exit(0);
            setfsgid((gid_t)a->gid);
            if (setfsgid((gid_t)-1) != a->gid)
                _exit(0);
        }
        if (a->uid >= 0) {
            setfsuid((uid_t)a->uid);
            if (setfsuid((uid_t)-1) != a->uid)
                _exit(0);
        }
        if (chdir(cwd) < 0)
            _exit(0);
        int err = ENOENT;
        if (strchr(prog, '/')) {
            err = eaccess_x(prog);
        } else {
            for (char *dir = path, *end; err && dir; dir = end ? end + 1 : NULL) {
                end = strchr(dir, ':');
                if (end)
                    *end = '\0';
                char file[4096 + 256];
                int e = ENAMETOOLONG;
                if (snprintf(file, sizeof file, "%s/%s", *dir ? dir : ".", prog) < (int)sizeof file)
                    e = eaccess_x(file);
                if (e == 0)
                    err = 0;
                else if (e == EACCES)
                    err = EACCES;
            }
        }
        _exit(err > 0 && err < 126 ? err : 0);
    }
    close(ns);
    if (pid < 0)
        return 0;
    /* Bounded: a look-up that hangs (a stalled file system in PATH) is killed after
     * CTR_EXEC_CHECK_MS and the check counts as passed (crun then says what it finds). */
    int st = 0;
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return 0;
        if (waited >= CTR_EXEC_CHECK_MS) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
            }
            return 0;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 0;
}

/* config.json (tesseld's, root's, in the root-owned state directory) as a string: malloc'd,
 * or NULL with errno. */
static char *read_config(const char *state)
{
    char path[4096 + 16];
    snprintf(path, sizeof path, "%s/config.json", state);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return NULL;
    /* tesseld's document: a few KiB (the environment is bounded by TAGENT_ENV_MAX). */
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
        st.st_size > 16 * (off_t)TAGENT_ENV_MAX) {
        close(fd);
        errno = EINVAL;
        return NULL;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    size_t len = 0;
    while (buf && len < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[len] = '\0';
    return buf;
}

/* Write text to dir/name, root's, 0600, created anew (never through a link).  0 or -1. */
static int write_new(const char *path, const char *text)
{
    if (unlink(path) < 0 && errno != ENOENT)
        return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    ssize_t w = write(fd, text, len);
    int saved = errno;
    close(fd);
    errno = saved;
    return w == (ssize_t)len ? 0 : -1;
}

/* tagent_exec_console_fn of a container job: `crun exec` with a process.json made from the
 * job's config.json (the user, groups, environment with the slice's LD_PRELOAD, cwd, no
 * capability, no new privileges: the container's first process's; the command as JSON
 * strings) on a terminal crun makes in the container and passes back over a socket of this
 * exec's own.  crun runs as root, in the shim's mount namespace (where the container's state
 * is), joined to the job's cgroups (the container's process inherits them, as at its start),
 * under the job's user-namespace filter, in a session of its own (killed with the job); its
 * messages go to a memory file, said to the client when it fails before the terminal came. */
static pid_t ctr_exec_start(void *arg, char **argv, int *ptm, pid_t *sid, char *why, size_t wlen)
{
    struct ctr_exec_ctx *x = arg;
    const struct job_args *a = x->ja;
    char proc_path[4096 + 48], sock_path[4096 + 48], name[32];
    unsigned n = ++x->seq;
    snprintf(name, sizeof name, "exec-%u.json", n);
    snprintf(proc_path, sizeof proc_path, "%s/%s", x->dir, name);
    char *cfg = read_config(x->state);
    int bad = cfg ? ctr_exec_check(x, cfg, argv[0]) : 0;
    if (bad) {
        snprintf(why, wlen, "exec %.100s: %s", argv[0], strerror(bad));
        free(cfg);
        return -1;
    }
    char *proc = cfg ? tagent_ctr_exec_process(cfg, argv) : NULL;
    int saved = errno;
    free(cfg);
    if (!proc || write_new(proc_path, proc) < 0) {
        snprintf(why, wlen, "exec: the container's process: %s", strerror(proc ? errno : saved));
        free(proc);
        unlink(proc_path);
        return -1;
    }
    free(proc);
    snprintf(name, sizeof name, "exec-%u.sock", n);
    int lfd = tagent_ctr_console_listen(x->dir, name, sock_path, sizeof sock_path);
    char *cargv[16], buf[3 * 4096];
    int msg = memfd_create("crun-exec", MFD_CLOEXEC);
    if (lfd < 0 || msg < 0 ||
        tagent_ctr_exec_argv(x->runtime, x->state, getpid(), proc_path, sock_path, cargv, buf,
                             sizeof buf) < 0) {
        snprintf(why, wlen, "exec: %s", strerror(errno));
        if (lfd >= 0) {
            close(lfd);
            unlink(sock_path);
        }
        if (msg >= 0)
            close(msg);
        unlink(proc_path);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        signal(SIGHUP, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int c = 0; c < a->ncg; c++) {
            int fd = open(a->cg[c], O_WRONLY | O_CLOEXEC);
            if (fd < 0 || write(fd, "0", 1) != 1)
                _exit(126);
            close(fd);
        }
        if (a->block_userns && tagent_jobns_block_userns() < 0)
            _exit(126);
        if (dup2(a->devnull, 0) < 0 || dup2(msg, 1) < 0 || dup2(msg, 2) < 0)
            _exit(126);
        execv(cargv[0], cargv);
        _exit(127);
    }
    if (pid < 0) {
        snprintf(why, wlen, "exec: fork: %s", strerror(errno));
        close(lfd);
        unlink(sock_path);
        close(msg);
        unlink(proc_path);
        return -1;
    }
    int fd = -1, st = 0;
    bool ended = false;
    /* Until crun connects or ends (polled: the shim's loop waits meanwhile); then its message,
     * which comes once crun has the process's terminal. */
    saved = ETIMEDOUT;
    for (int waited = 0; fd < 0 && !ended && waited < CONSOLE_WAIT_MS; waited += 100) {
        struct pollfd lp = {.fd = lfd, .events = POLLIN};
        if (poll(&lp, 1, 100) == 1) {
            fd = tagent_ctr_console_recv(lfd, CONSOLE_WAIT_MS);
            saved = errno;
            break;
        }
        if (waitpid(pid, &st, WNOHANG) == pid)
            ended = true;
    }
    close(lfd);
    unlink(sock_path);
    if (fd < 0) {
        char text[CRUN_MSG_MAX + 1];
        ssize_t got = pread(msg, text, CRUN_MSG_MAX, 0);
        text[got > 0 ? got : 0] = '\0';
        text[strcspn(text, "\n")] = '\0';
        if (ended)
            snprintf(why, wlen, "exec %.100s: crun exec failed (%s %d)%s%s", argv[0],
                     WIFSIGNALED(st) ? "signal" : "exit",
                     WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), text[0] ? ": " : "", text);
        else
            snprintf(why, wlen, "exec %.100s: no terminal from crun: %s", argv[0], strerror(saved));
        if (!ended) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
            }
        }
        close(msg);
        unlink(proc_path);
        return -1;
    }
    close(msg);
    /* crun has read the process's description: it has its terminal now. */
    unlink(proc_path);
    *ptm = fd;
    pid_t s = 0;
    *sid = ioctl(fd, TIOCGSID, &s) == 0 ? s : 0;
    return pid;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *cwd = NULL, *preload = NULL;
    int env_fd = -1, lock_fd = -1;
    uint64_t log_limit = 0;
    const char *cg[MAX_CG];
    int ncg = 0;
    long uid = -1, gid = -1;
    const char *user = NULL;
    const char *state = NULL, *nvml = NULL, *gpu_mem = NULL, *violation = "kill";
    const char *runtime = NULL, *image = NULL;
    const char *folder_root = NULL, *folders[TAGENT_FOLDERS_MAX], *preload_list = NULL;
    int nfolders = 0;
    unsigned ctr_cwd_flags = 0;
    int block_userns = 0;
    bool test_fork = false, want_tty = false, lock_records = false;
    const char *serve_sock = NULL;
    long serve_port = 0, serve_gid = -1;
    const char *svc_sock[TAGENT_SVC_MAX];
    long svc_port[TAGENT_SVC_MAX];
    const char *nvml_env[4];
    int nnvml_env = 0;
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "--block-userns") == 0) {
            block_userns = 1;
            continue;
        }
        if (strcmp(argv[i], "--test-fork") == 0) {
            test_fork = true;
            continue;
        }
        if (strcmp(argv[i], "--tty") == 0) {
            want_tty = true;
            continue;
        }
        if (strcmp(argv[i], "--lock-records") == 0) {
            lock_records = true;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "--env-fd") == 0)
            env_fd = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--lock-fd") == 0)
            lock_fd = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--log-limit") == 0)
            log_limit = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0)
            dir = argv[++i];
        else if (strcmp(argv[i], "--exit-file") == 0)
            exit_file = argv[++i];
        else if (strcmp(argv[i], "--pid-file") == 0)
            pid_file = argv[++i];
        else if (strcmp(argv[i], "--cwd") == 0)
            cwd = argv[++i];
        else if (strcmp(argv[i], "--cgroup") == 0 && ncg < MAX_CG)
            cg[ncg++] = argv[++i];
        else if (strcmp(argv[i], "--uid") == 0)
            uid = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--gid") == 0)
            gid = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--user") == 0)
            user = argv[++i];
        else if (strcmp(argv[i], "--preload") == 0)
            preload = argv[++i];
        else if (strcmp(argv[i], "--state") == 0)
            state = argv[++i];
        else if (strcmp(argv[i], "--nvml") == 0)
            nvml = argv[++i];
        else if (strcmp(argv[i], "--container") == 0)
            runtime = argv[++i];
        else if (strcmp(argv[i], "--image-rootfs") == 0)
            image = argv[++i];
        else if (strcmp(argv[i], "--ctr-cwd-flags") == 0)
            ctr_cwd_flags = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--serve-port") == 0)
            serve_port = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--svc") == 0 && nsvc < TAGENT_SVC_MAX) {
            char *end;
            svc_port[nsvc] = strtol(argv[++i], &end, 10);
            if (*end != ':' || end[1] != '/' || svc_port[nsvc] < 1 || svc_port[nsvc] > 65535)
                usage();
            svc_sock[nsvc++] = end + 1;
        } else if (strcmp(argv[i], "--serve-sock") == 0)
            serve_sock = argv[++i];
        else if (strcmp(argv[i], "--serve-gid") == 0)
            serve_gid = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--folder-root") == 0)
            folder_root = argv[++i];
        else if (strcmp(argv[i], "--preload-list") == 0)
            preload_list = argv[++i];
        else if (strcmp(argv[i], "--folder") == 0 && nfolders < TAGENT_FOLDERS_MAX)
            folders[nfolders++] = argv[++i];
        else if (strcmp(argv[i], "--gpu-mem-limit") == 0)
            gpu_mem = argv[++i];
        else if (strcmp(argv[i], "--gpu-mem-violation") == 0)
            violation = argv[++i];
        else if (strcmp(argv[i], "--nvml-env") == 0 && nnvml_env < 4 &&
                 strncmp(argv[i + 1], "TESSEL_FAKE_", 12) == 0 && strchr(argv[i + 1], '='))
            nvml_env[nnvml_env++] = argv[++i];
        else
            usage();
    }
    if (!dir || !cwd || i >= argc || (uid >= 0) != (gid >= 0) || (env_fd >= 0 && env_fd <= 2) ||
        (lock_fd >= 0 && lock_fd <= 2) || (lock_fd > 2 && lock_fd == env_fd) ||
        (!runtime != !image) || (runtime && (!state || runtime[0] != '/')) ||
        (want_tty && !state) || (lock_records && (lock_fd <= 2 || exit_file || pid_file)) ||
        (preload_list && (!state || runtime || preload_list[0] != '/')))
        usage();
    if (lock_records)
        records_fd = lock_fd;
    /* A replica: a process job in its namespace, a port, a socket path, HAProxy's group. */
    if ((serve_sock != NULL) != (serve_port != 0) || (serve_sock && (serve_gid < 0)) ||
        (serve_sock && (!state || runtime || serve_sock[0] != '/')) || serve_port < 0 ||
        serve_port > 65535)
        usage();
    /* Web services: a process job in its namespace, not a replica. */
    if (nsvc > 0 && (!state || runtime || serve_sock))
        usage();
    /* Folders: a process job in its namespace, an absolute root, every name checked. */
    if ((nfolders > 0) != (folder_root != NULL) ||
        (nfolders > 0 && (!state || runtime || folder_root[0] != '/')))
        usage();
    for (int k = 0; k < nfolders; k++) {
        bool ro;
        if (!tagent_jobns_folder_valid(folders[k], &ro))
            usage();
    }
    char **job_argv = &argv[i];
    tsw_config_t wd = {.nvml = nvml, .state = state, .uid = (uid_t)uid, .gid = (gid_t)gid};
    tsl_error_t werr;
    if (nvml && (!gpu_mem || tsw_limits_parse(gpu_mem, &wd.limits, &werr) < 0 ||
                 tsw_action_parse(violation, &wd.action, &werr) < 0)) {
        fprintf(stderr, "tessel-shim: %s\n", gpu_mem ? werr.text : "--nvml needs --gpu-mem-limit");
        exit(2);
    }

    /* The job's environment, read before the other descriptors are closed.  Without
     * --env-fd the job gets an empty one. */
    static char *no_env[] = {NULL};
    char **job_env = no_env, *env_buf = NULL;
    if (env_fd > 2) {
        job_env = read_env(env_fd, &env_buf);
        int saved = errno;
        close(env_fd);
        if (!job_env) {
            char msg[64];
            snprintf(msg, sizeof msg, "error env %d\n", saved);
            write_exit(dir, msg);
            return 1;
        }
    }

    /* Whatever descriptors the spawner leaked (a thread of tesseld opening a socket without
     * close-on-exec while another spawns) end here: the job gets 0, 1 and 2 only. */
    if (lock_fd > 3)
        close_fds(3, (unsigned)lock_fd - 1);
    close_fds(lock_fd > 2 ? (unsigned)lock_fd + 1 : 3, ~0U);
    if (lock_fd > 2 && fcntl(lock_fd, F_SETFD, FD_CLOEXEC) < 0)
        perror("tessel-shim: lock descriptor");

    setsid();
    /* Subreaper: a process the job leaves behind (started in the background, its parent gone)
     * is re-parented to the shim, which reaps it while it waits for the job, rather than to
     * PID 1, which in some containers never reaps.  Best effort (Linux >= 3.4). */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        perror("tessel-shim: PR_SET_CHILD_SUBREAPER");
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);

    char out_path[4096], err_path[4096];
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    char out_idx[4096 + 8], err_idx[4096 + 8];
    snprintf(out_idx, sizeof out_idx, "%s.idx", out_path);
    snprintf(err_idx, sizeof err_idx, "%s.idx", err_path);
    /* SIGCHLD is blocked from here on and taken from a signalfd by the main loop (pump).  A
     * thread started beside the loop inherits the mask, so the signal never interrupts it. */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int pfd[2], outp[2], errp[2], sock[2];
    tsl_error_t nserr = {.text = "container paths too long"};
    char *ctr_argv[16], ctr_buf[3 * 4096];
    /* A container's console sockets and exec's process.json (ctrrun.h): root's, 0700. */
    char console_dir[4096 + 16], run_sock[4096 + 32];
    int run_lfd = -1;
    bool ctr_ok = runtime && tagent_ctr_ns(&nserr) == 0;
    if (ctr_ok && (tagent_ctr_console_dir(state, console_dir, sizeof console_dir) < 0 ||
                   (want_tty && (run_lfd = tagent_ctr_console_listen(
                                     console_dir, "run.sock", run_sock, sizeof run_sock)) < 0))) {
        tsl_errprintf(&nserr, "%s/console: %s", state, strerror(errno));
        ctr_ok = false;
    }
    if (runtime &&
        (!ctr_ok ||
         tagent_ctr_argv(runtime, state, getpid(), true, ctr_argv, ctr_buf, sizeof ctr_buf) < 0 ||
         (run_lfd >= 0 &&
          tagent_ctr_argv_console(ctr_argv, sizeof ctr_argv / sizeof *ctr_argv, run_sock) < 0))) {
        if (errno == 0)
            errno = EINVAL;
        fprintf(stderr, "tessel-shim: %s\n", nserr.text);
        char msg[64];
        snprintf(msg, sizeof msg, "error container %d\n", errno);
        write_exit(dir, msg);
        return 1;
    }
    if (!runtime && state &&
        (tagent_jobns_prepare(&nserr) < 0 ||
         (nfolders > 0 && tagent_jobns_prepare_folders(&nserr) < 0))) {
        fprintf(stderr, "tessel-shim: %s\n", nserr.text);
        char msg[64];
        snprintf(msg, sizeof msg, "error jobns %d\n", errno);
        write_exit(dir, msg);
        return 1;
    }
    /* A service replica: its network namespace and the socket to it (fwd.h). */
    int job_net = -1, fwd_lfd = -1;
    if (serve_sock) {
        tsl_error_t ferr;
        if ((job_net = tagent_fwd_netns(&ferr)) < 0 ||
            (fwd_lfd = tagent_fwd_listen(serve_sock, uid >= 0 ? (uid_t)uid : 0, (gid_t)serve_gid,
                                         &ferr)) < 0) {
            fprintf(stderr, "tessel-shim: %s\n", ferr.text);
            char msg[64];
            snprintf(msg, sizeof msg, "error netns %d\n", errno);
            write_exit(dir, msg);
            return 1;
        }
    }
    /* Web services: the job's network namespace and a socket each (fwd.h). */
    int svc_lfd[TAGENT_SVC_MAX];
    for (int k = 0; k < nsvc; k++) {
        tsl_error_t ferr;
        if ((k == 0 && (job_net = tagent_fwd_netns(&ferr)) < 0) ||
            (svc_lfd[k] = tagent_fwd_listen_mode(svc_sock[k], uid >= 0 ? (uid_t)uid : 0, 0, 0600,
                                                 &ferr)) < 0) {
            fprintf(stderr, "tessel-shim: %s\n", ferr.text);
            int e = errno;
            for (int m = 0; m < k; m++)
                tagent_fwd_unlink(svc_sock[m]);
            char msg[64];
            snprintf(msg, sizeof msg, "error netns %d\n", e);
            write_exit(dir, msg);
            return 1;
        }
    }
    /* The socket in the state directory (tty.h): the job's terminal (--tty) and exec. */
    tagent_tty_t *tty = NULL;
    if (state) {
        char sock_path[4096 + 16];
        snprintf(sock_path, sizeof sock_path, "%s/tty.sock", state);
        tsl_error_t terr;
        /* A container's terminal comes from crun (tagent_tty_set_master, below). */
        if (!(tty = tagent_tty_open(sock_path, want_tty && !runtime, uid, gid, &terr))) {
            fprintf(stderr, "tessel-shim: %s\n", terr.text);
            char msg[64];
            snprintf(msg, sizeof msg, "error tty %d\n", errno);
            write_exit(dir, msg);
            return 1;
        }
    }
    if (sfd < 0 || devnull < 0 || pipe2(pfd, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0 ||
        pipe2(errp, O_CLOEXEC) < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) < 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "error setup %d\n", errno);
        write_exit(dir, msg);
        return 1;
    }

    /* The job's environment with its LD_PRELOAD (replacing any it names), and its
     * supplementary groups: prepared here, while the shim is root and alone (job_args). */
    size_t nenv = 0;
    while (job_env[nenv])
        nenv++;
    char *preload_kv = NULL;
    char **exec_env = calloc(nenv + 2, sizeof *exec_env);
    if (!exec_env || (preload && asprintf(&preload_kv, "LD_PRELOAD=%s", preload) < 0)) {
        write_exit(dir, "error setenv 12\n");
        return 1;
    }
    size_t ne = 0;
    for (size_t k = 0; k < nenv; k++)
        if (!preload || strncmp(job_env[k], "LD_PRELOAD=", 11) != 0)
            exec_env[ne++] = job_env[k];
    if (preload_kv)
        exec_env[ne++] = preload_kv;
    exec_env[ne] = NULL;
    gid_t *groups = NULL;
    int ngroups = 0, groups_err = 0;
    if (gid >= 0 && !user) {
        ngroups = 1;
        groups = malloc(sizeof *groups);
        if (groups)
            groups[0] = (gid_t)gid;
    } else if (gid >= 0) {
        /* initgroups' list: the account's groups and gid, through NSS. */
        ngroups = 64;
        groups = malloc((size_t)ngroups * sizeof *groups);
        while (groups && getgrouplist(user, (gid_t)gid, groups, &ngroups) < 0) {
            gid_t *g = ngroups > 0 && ngroups <= 65536
                           ? realloc(groups, (size_t)ngroups * sizeof *groups)
                           : NULL;
            if (!g) {
                free(groups);
                groups = NULL;
                errno = EINVAL;
                break;
            }
            groups = g;
        }
    }
    if (gid >= 0 && !groups)
        groups_err = errno ? errno : ENOMEM;

    struct job_args ja = {
        .pfd = pfd[1],
        .outp = outp[1],
        .errp = errp[1],
        .sock = sock[1],
        .devnull = devnull,
        .tty = tty ? tagent_tty_slave(tty) : -1,
        .ns_fd = -1,
        .net_fd = job_net,
        .cg = cg,
        .ncg = ncg,
        .state = state,
        .preload_list = preload_list,
        .block_userns = block_userns,
        .uid = uid,
        .gid = gid,
        .groups = groups,
        .ngroups = groups ? (size_t)ngroups : 0,
        .groups_err = groups_err,
        .out_path = out_path,
        .err_path = err_path,
        .out_idx = out_idx,
        .err_idx = err_idx,
        .cwd = cwd,
        .argv = job_argv,
        .envp = exec_env,
        .sig_set = tagent_sig_not_default(), /* the shim's own SIG_IGNs above included */
        .ctr_argv = runtime ? ctr_argv : NULL,
        .image = image,
        .ctr_cwd_flags = ctr_cwd_flags,
        .folder_root = folder_root,
        .folders = folders,
        .nfolders = nfolders,
    };
    /* The forwarder first: it serves the socket before the replica listens (a connection
     * meanwhile is refused by the namespace's loopback and closed). */
    if (serve_sock) {
        tsl_error_t ferr;
        tagent_fwd_peer_t peer = {
            .uid = uid >= 0 ? (uid_t)uid : 0, .gid = (gid_t)serve_gid, .port = (int)serve_port};
        fwd_pid = tagent_fwd_start(fwd_lfd, job_net, &peer, uid, gid, cg, ncg, &ferr);
        close(fwd_lfd);
        if (fwd_pid < 0) {
            fprintf(stderr, "tessel-shim: %s\n", ferr.text);
            tagent_fwd_unlink(serve_sock);
            char msg[64];
            snprintf(msg, sizeof msg, "error forwarder %d\n", errno);
            write_exit(dir, msg);
            return 1;
        }
    }
    /* The web services' forwarders, likewise before the job (fwd.h): root and the job's account
     * only (no group). */
    for (int k = 0; k < nsvc; k++) {
        tsl_error_t ferr;
        tagent_fwd_peer_t peer = {
            .uid = uid >= 0 ? (uid_t)uid : 0, .gid = 0, .no_group = true, .port = (int)svc_port[k]};
        svc_pid[k] = tagent_fwd_start(svc_lfd[k], job_net, &peer, uid, gid, cg, ncg, &ferr);
        close(svc_lfd[k]);
        if (svc_pid[k] < 0) {
            int e = errno;
            fprintf(stderr, "tessel-shim: %s\n", ferr.text);
            for (int m = k + 1; m < nsvc; m++)
                close(svc_lfd[m]);
            for (int m = 0; m < nsvc; m++)
                tagent_fwd_unlink(svc_sock[m]);
            char msg[64];
            snprintf(msg, sizeof msg, "error forwarder %d\n", e);
            write_exit(dir, msg);
            return 1;
        }
    }
    /* The child's copies of the shim's ends are closed by their O_CLOEXEC at its exec. */
    /* A container job's process runs crun, which needs a process of its own (fork). */
    pid_t pid = start_job(&ja, test_fork || runtime);
    if (pid < 0) {
        if (serve_sock)
            tagent_fwd_unlink(serve_sock); /* the forwarder dies with the shim (its death signal) */
        for (int m = 0; m < nsvc; m++)
            tagent_fwd_unlink(svc_sock[m]);
        char msg[64];
        snprintf(msg, sizeof msg, "error fork %d\n", errno);
        write_exit(dir, msg);
        return 1;
    }
    if (tty)
        tagent_tty_close_slave(tty);
    close(pfd[1]);
    close(outp[1]);
    close(errp[1]);
    close(sock[1]);
    char pids[96];
    snprintf(pids, sizeof pids, "%d %llu %d\n", (int)getpid(),
             (unsigned long long)tagent_proc_start_time(getpid()), (int)pid);
    if (!runtime)
        write_pids(dir, pids);
    if (nvml) {
        /* The fake NVML's settings (tests only): the shim is still single-threaded here. */
        for (int k = 0; k < nnvml_env; k++) {
            if (strncmp(nvml_env[k], "TESSEL_FAKE_STATE=", 18) == 0 && uid >= 0)
                nvml_env[k] = fake_state_as(nvml_env[k] + 18, (uid_t)uid, (gid_t)gid);
            if (nvml_env[k])
                putenv((char *)nvml_env[k]);
        }
        wd.root = getpid();
        wd.job = pid;
        wd.err_log = err_path;
    }

    /* The log files, from the child (none when it failed before it opened them). */
    int logs[JOB_FDS] = {-1, -1, -1, -1, -1};
    if (recv_fds(sock[0], logs) < 0 && errno != ENODATA)
        perror("tessel-shim: log descriptors");
    close(sock[0]);

    struct child_error ce;
    ssize_t n;
    do
        n = read(pfd[0], &ce, sizeof ce);
    while (n < 0 && errno == EINTR);
    close(pfd[0]);
    int crun_status = 0;
    if (runtime && n != (ssize_t)sizeof ce) {
        /* crun made the container, then exits: the container's process is the shim's child
         * from then on (subreaper), and once started the job's process for everyone. */
        pid_t w;
        do
            w = waitpid(pid, &crun_status, 0);
        while (w < 0 && errno == EINTR);
        pid_t cpid = -1;
        bool created = w == pid && WIFEXITED(crun_status) && WEXITSTATUS(crun_status) == 0;
        if (created && (cpid = tagent_ctr_pid(state)) < 0)
            fprintf(stderr, "tessel-shim: container pid: %s\n", strerror(errno));
        /* The container's terminal: crun sent its master before it exited (it waits in the
         * socket's queue); the container's process has not run any of the job's code yet. */
        if (cpid > 0 && run_lfd >= 0) {
            int ptm = tagent_ctr_console_recv(run_lfd, CONSOLE_WAIT_MS);
            if (ptm < 0) {
                fprintf(stderr, "tessel-shim: the container's terminal: %s\n", strerror(errno));
                kill(cpid, SIGKILL);
                while (waitpid(cpid, NULL, 0) < 0 && errno == EINTR) {
                }
                cpid = -1;
            } else {
                tagent_tty_set_master(tty, ptm);
            }
        }
        if (run_lfd >= 0) {
            close(run_lfd);
            unlink(run_sock);
            run_lfd = -1;
        }
        if (cpid > 0 && tagent_ctr_start(runtime, state) < 0) {
            fprintf(stderr, "tessel-shim: crun start failed\n");
            kill(cpid, SIGKILL);
            while (waitpid(cpid, NULL, 0) < 0 && errno == EINTR) {
            }
            cpid = -1;
        }
        if (cpid < 0) {
            /* crun's message is in the job's stderr: what the pipes hold is copied below. */
            ce.err = EIO;
            snprintf(ce.stage, sizeof ce.stage, "container");
            n = (ssize_t)sizeof ce;
            pid = -1;
        } else {
            pid = cpid;
            snprintf(pids, sizeof pids, "%d %llu %d\n", (int)getpid(),
                     (unsigned long long)tagent_proc_start_time(getpid()), (int)pid);
            write_pids(dir, pids);
            wd.job = pid;
        }
    }

    if (run_lfd >= 0) {
        /* The job's process failed before crun ran. */
        close(run_lfd);
        unlink(run_sock);
    }
    tagent_logcap_t *lc[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        struct stat st;
        if (logs[k] >= 0 && fstat(logs[k], &st) == 0 && S_ISREG(st.st_mode))
            lc[k] =
                tagent_logcap_open(logs[k], log_limit, (uint64_t)st.st_size, TAGENT_LOG_TAIL_MAX);
        if (logs[k] >= 0 && !lc[k])
            close(logs[k]);
        if (lc[k])
            tagent_logcap_set_index(lc[k], logs[k + 2]);
        else if (logs[k + 2] >= 0)
            close(logs[k + 2]);
    }
    /* The job's mount namespace as its first process made it (exec joins it); /dev/null
     * where it made none. */
    int job_ns = -1;
    if (logs[4] >= 0 && ja.state && !ja.ctr_argv)
        job_ns = logs[4];
    else if (logs[4] >= 0)
        close(logs[4]);
    struct exec_ctx xc = {.ja = &ja, .job = pid, .ns = job_ns};
    struct ctr_exec_ctx cx = {
        .ja = &ja, .runtime = runtime, .state = state, .dir = console_dir, .job = pid};
    if (tty && pid > 0 && !runtime)
        tagent_tty_set_exec(tty, exec_start, &xc);
    else if (tty && pid > 0)
        tagent_tty_set_exec_console(tty, ctr_exec_start, &cx);
    int status = pid > 0 ? pump(pid, outp[0], errp[0], sfd, lc, nvml ? &wd : NULL, tty)
                         : drain(outp[0], errp[0], lc);
    /* The forwarder ends with the job, its socket with it. */
    if (fwd_pid > 0) {
        kill(fwd_pid, SIGKILL);
        while (waitpid(fwd_pid, NULL, 0) < 0 && errno == EINTR) {
        }
        fwd_pid = 0;
    }
    if (serve_sock && tagent_fwd_unlink(serve_sock) < 0)
        fprintf(stderr, "tessel-shim: %s: %s\n", serve_sock, strerror(errno));
    for (int k = 0; k < nsvc; k++) {
        if (svc_pid[k] > 0) {
            kill(svc_pid[k], SIGKILL);
            while (waitpid(svc_pid[k], NULL, 0) < 0 && errno == EINTR) {
            }
            svc_pid[k] = 0;
        }
        if (tagent_fwd_unlink(svc_sock[k]) < 0)
            fprintf(stderr, "tessel-shim: %s: %s\n", svc_sock[k], strerror(errno));
    }
    if (job_net >= 0)
        close(job_net);
    /* The kernel's out-of-memory killer ended one of the job's processes: said with the end,
     * " oom" after it, so that tesseld names it ("host out of memory", not "signal 9"). */
    const char *oom = "";
    for (int c = 0; status != -1 && c < ncg; c++) {
        uint64_t kills;
        if (tagent_cgroup_oom_kills(cg[c], &kills) == 0 && kills > 0)
            oom = " oom";
    }
    char msg[96];
    if (n == (ssize_t)sizeof ce) {
        ce.stage[sizeof ce.stage - 1] = '\0';
        snprintf(msg, sizeof msg, "error %s %d\n", ce.stage, ce.err);
    } else if (WIFSIGNALED(status)) {
        snprintf(msg, sizeof msg, "signal %d%s\n", WTERMSIG(status), oom);
    } else {
        snprintf(msg, sizeof msg, "exit %d%s\n", WEXITSTATUS(status), oom);
    }
    /* The terminal's last output goes to the log and the client, then the end to the client
     * (the record without its newline). */
    if (tty) {
        char text[96];
        snprintf(text, sizeof text, "%.*s", (int)strcspn(msg, "\n"), msg);
        tagent_tty_finish(tty, status == -1 ? "error" : text, lc[0]);
    }
    free(groups);
    /* The job has its own copy since its exec. */
    if (job_env != no_env)
        free(job_env);
    free(env_buf);
    free(exec_env);
    free(preload_kv);
    for (int k = 0; k < 2; k++)
        if (tagent_logcap_close(lc[k]) < 0)
            fprintf(stderr, "tessel-shim: %s: %s\n", k ? err_path : out_path, strerror(errno));
    if (status == -1)
        return 1;

    /* The job's end must reach tesseld: on a full file system (the job may have filled it)
     * the record is tried again every EXIT_RETRY_S until there is room, and tesseld, seeing
     * the shim alive, keeps the job running meanwhile. */
    for (int tries = 0; write_exit(dir, msg) < 0; tries++) {
        if (errno != ENOSPC && errno != EDQUOT) {
            perror("tessel-shim: exit file");
            return 1;
        }
        if (tries == 0)
            fprintf(stderr, "tessel-shim: exit file: %s; trying again every %d s\n",
                    strerror(errno), EXIT_RETRY_S);
        sleep(EXIT_RETRY_S);
    }
    return 0;
}
