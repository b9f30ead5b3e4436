/* shim.c - tessel-shim: the per-job supervisor started by tesseld (see runner.h).
 *
 *   tessel-shim --dir DIR --cwd CWD [--cgroup PROCS]... [--uid U --gid G] [--preload LIBS]
 *               -- PROG ARG...
 *
 * LD_PRELOAD of the job comes as --preload and is set only in the job's process, so the shim
 * itself never runs with the interposer loaded.
 * Forks the job (own process group, in its cgroups, as the user, in CWD, stdout and stderr to
 * DIR/stdout and DIR/stderr, stdin from /dev/null, the shim's environment), writes
 * DIR/pid = "SHIM_PID SHIM_START JOB_PID", waits, and writes DIR/exit atomically.  Ignores
 * SIGHUP, SIGINT, SIGTERM and SIGPIPE: it ends when the job ends (or by SIGKILL, which tesseld
 * detects as a lost supervisor).  Exit status: 0 when DIR/exit was written, 1 otherwise.
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
#include <sys/wait.h>
#include <unistd.h>

#include "agent/runner.h"

#define MAX_CG 8

static void usage(void)
{
    fprintf(stderr, "usage: tessel-shim --dir DIR --cwd CWD [--cgroup PROCS]... "
                    "[--uid U --gid G] [--preload LIBS] -- PROG [ARG...]\n");
    exit(2);
}

/* Write DIR/name atomically: DIR/name.tmp, then rename. */
static int write_atomic(const char *dir, const char *name, const char *text)
{
    char tmp[4096], final[4096];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
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
        else if (strcmp(argv[i], "--preload") == 0)
            preload = argv[++i];
        else
            usage();
    }
    if (!dir || !cwd || i >= argc)
        usage();
    char **job_argv = &argv[i];

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

    char path[4096];
    snprintf(path, sizeof path, "%s/stdout", dir);
    int out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    snprintf(path, sizeof path, "%s/stderr", dir);
    int err = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int pfd[2];
    if (out < 0 || err < 0 || devnull < 0 || pipe2(pfd, O_CLOEXEC) < 0) {
        char msg[64];
        snprintf(msg, sizeof msg, "error setup %d\n", errno);
        write_atomic(dir, "exit", msg);
        return 1;
    }
    if (uid >= 0) {
        /* The logs belong to the job's user, who may read them directly. */
        if (fchown(out, (uid_t)uid, (gid_t)gid) < 0 || fchown(err, (uid_t)uid, (gid_t)gid) < 0)
            perror("tessel-shim: chown logs");
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
        for (int c = 0; c < ncg; c++) {
            int fd = open(cg[c], O_WRONLY | O_CLOEXEC);
            if (fd < 0 || write(fd, "0", 1) != 1)
                child_fail(pfd[1], "cgroup");
            close(fd);
        }
        if (gid >= 0 && (setgroups(0, NULL) < 0 || setgid((gid_t)gid) < 0))
            child_fail(pfd[1], "setgid");
        if (uid >= 0 && setuid((uid_t)uid) < 0)
            child_fail(pfd[1], "setuid");
        if (chdir(cwd) < 0)
            child_fail(pfd[1], "chdir");
        if (dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            child_fail(pfd[1], "dup2");
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
