/* shim.c - tessel-shim: the per-job supervisor started by tesseld (see runner.h).
 *
 *   tessel-shim --dir DIR --cwd CWD [--cgroup PROCS]... [--uid U --gid G [--user NAME]]
 *               [--preload LIBS] [--state STATE [--block-userns]]
 *               [--nvml LIB --gpu-mem-limit IDX=SIZE,... [--gpu-mem-violation kill|suspend]
 *                [--nvml-env TESSEL_FAKE_NAME=VALUE]...]
 *               -- PROG ARG...
 *
 * LD_PRELOAD of the job comes as --preload and is set only in the job's process, so the shim
 * itself never runs with the interposer loaded.
 * Forks the job (own process group, in its cgroups, as the user, in CWD, stdout and stderr to
 * DIR/stdout and DIR/stderr, stdin from /dev/null, the shim's environment), writes
 * DIR/pid = "SHIM_PID SHIM_START JOB_PID", waits, and writes DIR/exit atomically.  Ignores
 * SIGHUP, SIGINT, SIGTERM and SIGPIPE: it ends when the job ends (or by SIGKILL, which tesseld
 * detects as a lost supervisor).  Exit status: 0 when DIR/exit was written, 1 otherwise.
 *
 * Hardening (the shim runs as root when tesseld does; DIR belongs to the job's user, who can
 * create anything in it while the job runs, and before a requeued job's next attempt):
 *   - every descriptor above 2 is closed at start, whatever the spawner leaked;
 *   - the job drops privileges in the order initgroups (the account's supplementary groups,
 *     NAME from --user; none without it) -> setgid -> setuid, then checks that root cannot be
 *     regained, before it touches any path;
 *   - the job opens DIR/stdout and DIR/stderr itself, as its user (mode 0600), so a symlink
 *     planted there cannot make root write elsewhere;
 *   - DIR/pid and DIR/exit are written by root through a temporary file created with O_EXCL
 *     (never through an existing name or a symlink) and renamed;
 *   - the job starts with default dispositions for every signal, an empty signal mask, in its
 *     own process group (the shim's session).
 *
 * Enforcement (docs/security.md): with --state (tesseld's root-owned per-job directory) the job
 * runs in its own mount namespace where /etc/ld.so.preload names the interposer and its limits
 * file is at /run/tessel/job/limits (jobns.h); --block-userns refuses it new user namespaces.
 * With --nvml (an absolute path tesseld resolved, never the job's) a watchdog thread stops the
 * job when its processes hold more GPU memory than --gpu-mem-limit (watchdog.h); --nvml-env
 * (up to 4, TESSEL_FAKE_* only) configures the fake NVML of the tests, which reads its
 * environment, not the shim's.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/jobns.h"
#include "agent/runner.h"
#include "agent/watchdog.h"

#define MAX_CG 8

/* Mode of the job's logs: its user's only (they may hold secrets); tesseld reads them as root
 * (or as the same user) for the API. */
#define LOG_MODE 0600

static void usage(void)
{
    fprintf(stderr, "usage: tessel-shim --dir DIR --cwd CWD [--cgroup PROCS]... "
                    "[--uid U --gid G [--user NAME]] [--preload LIBS] [--state DIR "
                    "[--block-userns]] [--nvml LIB --gpu-mem-limit IDX=SIZE,... "
                    "[--gpu-mem-violation kill|suspend] [--nvml-env TESSEL_FAKE_NAME=VALUE]...] "
                    "-- PROG [ARG...]\n");
    exit(2);
}

/* Write DIR/name atomically: DIR/name.tmp, then rename. */
static int write_atomic(const char *dir, const char *name, const char *text)
{
    char tmp[4096], final[4096];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    /* DIR may hold anything the job's user put there: remove what has the temporary's name
     * and create it anew with O_EXCL, which never follows a symlink; rename replaces the
     * final name itself, not what it may point to. */
    if (unlink(tmp) < 0 && errno != ENOENT)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    if (write(fd, text, len) != (ssize_t)len) {
        close(fd);
        return -1;
    }
    if (close(fd) < 0)
        return -1;
    return rename(tmp, final);
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

int main(int argc, char **argv)
{
    const char *dir = NULL, *cwd = NULL, *preload = NULL;
    const char *cg[MAX_CG];
    int ncg = 0;
    long uid = -1, gid = -1;
    const char *user = NULL;
    const char *state = NULL, *nvml = NULL, *gpu_mem = NULL, *violation = "kill";
    int block_userns = 0;
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
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "--dir") == 0)
            dir = argv[++i];
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
    if (!dir || !cwd || i >= argc || (uid >= 0) != (gid >= 0))
        usage();
    char **job_argv = &argv[i];
    tsw_config_t wd = {.nvml = nvml, .state = state, .uid = (uid_t)uid, .gid = (gid_t)gid};
    tsl_error_t werr;
    if (nvml && (!gpu_mem || tsw_limits_parse(gpu_mem, &wd.limits, &werr) < 0 ||
                 tsw_action_parse(violation, &wd.action, &werr) < 0)) {
        fprintf(stderr, "tessel-shim: %s\n", gpu_mem ? werr.text : "--nvml needs --gpu-mem-limit");
        exit(2);
    }

    /* Whatever descriptors the spawner leaked (a thread of tesseld opening a socket without
     * close-on-exec while another spawns) end here: the job gets 0, 1 and 2 only. */
    if (close_range(3, ~0U, 0) < 0) {
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    }

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
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int pfd[2];
    tsl_error_t nserr;
    if (state && tagent_jobns_prepare(&nserr) < 0) {
        fprintf(stderr, "tessel-shim: %s\n", nserr.text);
        char msg[64];
        snprintf(msg, sizeof msg, "error jobns %d\n", errno);
        write_atomic(dir, "exit", msg);
        return 1;
    }
    if (devnull < 0 || pipe2(pfd, O_CLOEXEC) < 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "error setup %d\n", errno);
        write_atomic(dir, "exit", msg);
        return 1;
    }

    pid_t pid = fork();
    if (pid < 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "error fork %d\n", errno);
        write_atomic(dir, "exit", msg);
        return 1;
    }
    if (pid == 0) {
        close(pfd[0]);
        setpgid(0, 0);
        signal(SIGHUP, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int c = 0; c < ncg; c++) {
            int fd = open(cg[c], O_WRONLY | O_CLOEXEC);
            if (fd < 0 || write(fd, "0", 1) != 1)
                child_fail(pfd[1], "cgroup");
            close(fd);
        }
        if (state && tagent_jobns_enter(state) < 0)
            child_fail(pfd[1], "jobns");
        if (block_userns && tagent_jobns_block_userns() < 0)
            child_fail(pfd[1], "seccomp");
        if (gid >= 0) {
            /* initgroups -> setgid -> setuid: groups and gid can only be changed while root. */
            gid_t g = (gid_t)gid;
            if ((user ? initgroups(user, g) : setgroups(1, &g)) < 0)
                child_fail(pfd[1], "setgroups");
            if (setgid(g) < 0)
                child_fail(pfd[1], "setgid");
        }
        if (uid >= 0) {
            if (setuid((uid_t)uid) < 0)
                child_fail(pfd[1], "setuid");
            /* No way back: real, effective and saved ids are the user's. */
            if (uid != 0 && (setuid(0) == 0 || seteuid(0) == 0 || getuid() != (uid_t)uid ||
                             geteuid() != (uid_t)uid)) {
                errno = EPERM;
                child_fail(pfd[1], "privdrop");
            }
        }
        /* The logs are opened as the job's user: a symlink the user left in DIR leads only
         * where the user may write anyway. */
        int out = open(out_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, LOG_MODE);
        if (out < 0)
            child_fail(pfd[1], "stdout");
        int err = open(err_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, LOG_MODE);
        if (err < 0)
            child_fail(pfd[1], "stderr");
        if (chdir(cwd) < 0)
            child_fail(pfd[1], "chdir");
        if (dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            child_fail(pfd[1], "dup2");
        /* Every signal at its default, including the two glibc keeps for itself (32, 33:
         * posix_spawn leaves them ignored in the shim, and an ignored signal stays ignored
         * across exec; a runtime other than glibc's would inherit that).  The kernel's
         * sigaction with every field zero is SIG_DFL, no flags, empty mask, on every arch. */
        for (int sig = 1; sig <= 64; sig++) {
            unsigned long ksa[8] = {0};
            if (sig != SIGKILL && sig != SIGSTOP)
                syscall(SYS_rt_sigaction, sig, ksa, NULL, (size_t)8);
        }
        /* The shim is single-threaded: setenv after fork is safe here. */
        if (preload && setenv("LD_PRELOAD", preload, 1) < 0)
            child_fail(pfd[1], "setenv");
        execvp(job_argv[0], job_argv);
        child_fail(pfd[1], "exec");
    }
    close(pfd[1]);
    char pids[96];
    snprintf(pids, sizeof pids, "%d %llu %d\n", (int)getpid(),
             (unsigned long long)tagent_proc_start_time(getpid()), (int)pid);
    if (write_atomic(dir, "pid", pids) < 0)
        perror("tessel-shim: pid file");
    if (nvml) {
        /* The fake NVML's settings (tests only): the shim is still single-threaded here. */
        for (int k = 0; k < nnvml_env; k++)
            putenv((char *)nvml_env[k]);
        wd.root = getpid();
        wd.job = pid;
        wd.err_log = err_path;
        if (tsw_start(&wd, &werr) < 0)
            fprintf(stderr, "tessel-shim: GPU-memory watchdog not started: %s\n", werr.text);
    }

    struct child_error ce;
    ssize_t n;
    do
        n = read(pfd[0], &ce, sizeof ce);
    while (n < 0 && errno == EINTR);
    close(pfd[0]);

    /* Reap every child until the job itself: the others are the job's orphans. */
    int status = 0;
    for (;;) {
        int st;
        pid_t w = waitpid(-1, &st, 0);
        if (w == pid) {
            status = st;
            break;
        }
        if (w < 0 && errno != EINTR) {
            perror("tessel-shim: waitpid");
            return 1;
        }
    }
    char msg[96];
    if (n == (ssize_t)sizeof ce) {
        ce.stage[sizeof ce.stage - 1] = '\0';
        snprintf(msg, sizeof msg, "error %s %d\n", ce.stage, ce.err);
    } else if (WIFSIGNALED(status)) {
        snprintf(msg, sizeof msg, "signal %d\n", WTERMSIG(status));
    } else {
        snprintf(msg, sizeof msg, "exit %d\n", WEXITSTATUS(status));
    }
    if (write_atomic(dir, "exit", msg) < 0) {
        perror("tessel-shim: exit file");
        return 1;
    }
    return 0;
}
