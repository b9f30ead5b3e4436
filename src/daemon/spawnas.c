/* spawnas.c - a command started as an account (spawnas.h), the one child set-up of run_cmd
 * (slurm.c) and of the pool of submitters (slurmsub.c).
 *
 * The child: system calls only (tesseld has threads).  Its standard descriptors and its error
 * pipe (fd 3, close-on-exec) first, everything else of tesseld's closed (not only marked
 * close-on-exec: a child stopped before its exec would hold tesseld's lock file, store and
 * sockets), a clean signal state, then the account's ids, all of them, and PR_SET_DUMPABLE 0,
 * then execve.  The parent waits for the exec (the pipe's end of file) or the child's report
 * (one byte, the step that failed) with poll() until the deadline: a child stopped by its
 * account between its setuid and its execve (docs/security.md, review of the submitter,
 * 2026-11-28, M1) is killed and waited for at the deadline, and the request fails as a
 * time-out. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/spawnas.h"

/* Groups of an account passed to setgroups: all of them or no command (a group left out could
 * be one that denies access somewhere). */
#define SPAWN_MAX_GROUPS 256

void (*tessd_spawn_hook)(void);

/* tessd_mono_ms's clock (wait.c), here so that test_slurmsub needs no more of tesseld. */
static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reap(pid_t pid)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

/* Child: every descriptor from 4 up closed. */
static int close_from_4(void)
{
    if (syscall(SYS_close_range, 4u, ~0u, 0u) == 0)
        return 0;
    if (errno != ENOSYS && errno != EINVAL)
        return -1;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return -1;
    rlim_t max =
        rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 20) ? (1u << 20) : rl.rlim_cur;
    for (rlim_t fd = 4; fd < max; fd++)
        close((int)fd);
    return 0;
}

int tessd_spawn_as(const tessd_t *d, const tessd_pw_t *pw, char *const argv[], const int fds[3],
                   int64_t deadline, pid_t *pid, char *why, size_t wlen)
{
    char home[PATH_MAX + 8], user[272], logname[272], shell[PATH_MAX + 8], conf[PATH_MAX + 16];
    char *envp[8];
    int ne = 0;
    envp[ne++] = (char *)"PATH=/usr/bin:/bin";
    envp[ne++] = (char *)"LC_ALL=C";
    if (pw) {
        snprintf(home, sizeof home, "HOME=%s", pw->dir);
        snprintf(user, sizeof user, "USER=%s", pw->name);
        snprintf(logname, sizeof logname, "LOGNAME=%s", pw->name);
        snprintf(shell, sizeof shell, "SHELL=%s", pw->shell[0] ? pw->shell : "/bin/sh");
        envp[ne++] = home;
        envp[ne++] = user;
        envp[ne++] = logname;
        envp[ne++] = shell;
    }
    if (d->slurm_conf[0]) {
        snprintf(conf, sizeof conf, "SLURM_CONF=%s", d->slurm_conf);
        envp[ne++] = conf;
    }
    envp[ne] = NULL;
    gid_t groups[SPAWN_MAX_GROUPS];
    int ngroups = SPAWN_MAX_GROUPS;
    bool become = pw && geteuid() == 0;
    if (become && getgrouplist(pw->name, pw->gid, groups, &ngroups) < 0) {
        snprintf(why, wlen, "account '%s' is in more than %d groups", pw->name, SPAWN_MAX_GROUPS);
        errno = E2BIG;
        return -1;
    }
    int fail[2];
    if (pipe2(fail, O_CLOEXEC) < 0) {
        int e = errno;
        snprintf(why, wlen, "pipe: %s", strerror(e));
        errno = e;
        return -1;
    }
    pid_t p = fork();
    if (p < 0) {
        int e = errno;
        close(fail[0]), close(fail[1]);
        snprintf(why, wlen, "fork: %s", strerror(e));
        errno = e;
        return -1;
    }
    if (p == 0) {
        char step = 's';
        int rep = fail[1];
        /* Above 3 first, so that no dup2 below overwrites one still to be moved. */
        int a = fcntl(fds[0], F_DUPFD, 4), b = fcntl(fds[1], F_DUPFD, 4);
        int c = fcntl(fds[2], F_DUPFD, 4), w = fcntl(fail[1], F_DUPFD_CLOEXEC, 4);
        if (a < 0 || b < 0 || c < 0 || w < 0)
            goto child_fail;
        rep = w;
        if (dup2(a, 0) < 0 || dup2(b, 1) < 0 || dup2(c, 2) < 0 || dup2(w, 3) < 0 ||
            fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
            goto child_fail;
        rep = 3;
        /* Nothing of tesseld's but these four: the lock file, the store, the sockets and
         * whatever its starter leaked are closed now, not at the exec. */
        if (close_from_4() < 0 || chdir("/") < 0)
            goto child_fail;
        sigset_t none;
        sigemptyset(&none);
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        if (sigprocmask(SIG_SETMASK, &none, NULL) < 0 || sigaction(SIGPIPE, &dfl, NULL) < 0)
            goto child_fail;
        if (tessd_spawn_hook)
            tessd_spawn_hook();
        step = 'i';
        if (become &&
            (setgroups((size_t)ngroups, groups) < 0 || setgid(pw->gid) < 0 || setuid(pw->uid) < 0))
            goto child_fail;
        /* Not dumpable until the exec: the account cannot ptrace or read the memory of a
         * child still holding tesseld's copy of memory.  (After the exec, a program the
         * account cannot read stays not dumpable: tessel-slurm-submit is installed 0711.) */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
            goto child_fail;
        if (become && (getuid() != pw->uid || geteuid() != pw->uid))
            goto child_fail;
        step = 'x';
        execve(argv[0], argv, envp);
    child_fail:
        if (write(rep, &step, 1) < 0)
            _exit(127);
        _exit(127);
    }
    close(fail[1]);
    char step = 0;
    ssize_t got = -1;
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            break;
        struct pollfd pf = {fail[0], POLLIN, 0};
        int n = poll(&pf, 1, left > 60000 ? 60000 : (int)left);
        if (n < 0 && errno != EINTR)
            break;
        if (n <= 0)
            continue;
        while ((got = read(fail[0], &step, 1)) < 0 && errno == EINTR) {
        }
        break;
    }
    close(fail[0]);
    if (got == 0) {
        *pid = p;
        return 0;
    }
    reap(p);
    if (got < 0) {
        snprintf(why, wlen, "%s did not start within slurm-timeout (stopped before its exec?)",
                 argv[0]);
        errno = ETIMEDOUT;
        return -1;
    }
    snprintf(why, wlen, "%s: %s", argv[0],
             step == 'i'   ? "cannot take the account's ids"
             : step == 'x' ? "cannot be run"
                           : "cannot be set up");
    errno = step == 'x' ? ENOENT : step == 'i' ? EPERM : EIO;
    return -1;
}
