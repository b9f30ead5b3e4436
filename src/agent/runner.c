/* runner.c - spawn tessel-shim, read its records (see runner.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/runner.h"
#include "libutil/nomount.h"
#include "libutil/procstat.h"

/* Descriptor numbers the shim gets its inputs on (see shim.c). */
#define ENV_FD  3
#define LOCK_FD 4

/* A sealed memfd holding envp as "K=V\0" strings, positioned at its start; -1 with errno.
 * The strings are gathered into one buffer first: one write, not one a variable. */
static int env_memfd(char *const *envp)
{
    size_t total = 0;
    for (char *const *e = envp; e && *e; e++) {
        total += strlen(*e) + 1;
        if (total > TAGENT_ENV_MAX) {
            errno = E2BIG;
            return -1;
        }
    }
    char *buf = malloc(total ? total : 1);
    if (!buf)
        return -1;
    size_t at = 0;
    for (char *const *e = envp; e && *e; e++) {
        size_t len = strlen(*e) + 1;
        memcpy(buf + at, *e, len);
        at += len;
    }
    int fd = memfd_create("tessel-job-env", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        free(buf);
        return -1;
    }
    for (size_t off = 0; off < total;) {
        ssize_t n = write(fd, buf + off, total - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            free(buf);
            close(fd);
            errno = saved;
            return -1;
        }
        off += (size_t)n;
    }
    free(buf);
    /* Sealed: nothing can change what the shim reads once it is handed over. */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
        lseek(fd, 0, SEEK_SET) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    /* Far above 2, so that dup2 onto ENV_FD in the child never meets the same number (which
     * would leave close-on-exec set). */
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 100);
    int saved = errno;
    close(fd);
    errno = saved;
    return hi;
}

/* DIR/shim.log, the shim's standard output and error, for tagent_spawn: an fd (close-on-exec,
 * blocking), or -1 with errno.  DIR belongs to the job's user, who may have put anything at
 * that name (during an earlier attempt, or in the moment between the directory's chown and the
 * spawn): a FIFO, whose open would wait for a reader (with tesseld's lock held, and before the
 * shim exists to run the watchdog), a symlink, a hard link, a device, a file of their own; or
 * mounted a file system of theirs over DIR or over the file (FUSE), whose server need not
 * answer.  So it is opened here, not by the spawned child, below DIR with no mount point
 * crossed (nomount.h: EXDEV), O_NONBLOCK and O_NOFOLLOW, and used only when it is a regular
 * file of one link that is tesseld's own (made by an earlier attempt); anything else is removed
 * and the file made anew (O_EXCL). */
static int open_shim_log(const char *dir)
{
    int dfd = tsl_dir_nomount(dir);
    if (dfd < 0)
        return -1;
    const int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
    int ret = -1, saved = EEXIST;
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = tsl_openat_nomount(dfd, "shim.log", flags | (attempt ? O_CREAT | O_EXCL : O_CREAT),
                                    0600);
        if (fd >= 0) {
            struct stat st;
            if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
                st.st_uid == geteuid()) {
                int fl = fcntl(fd, F_GETFL);
                if (fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0) {
                    ret = fd;
                    break;
                }
            }
            close(fd);
        } else if (attempt || errno == EXDEV) {
            saved = errno;
            break;
        }
        if (unlinkat(dfd, "shim.log", 0) < 0 && errno != ENOENT) {
            saved = errno;
            break;
        }
    }
    close(dfd);
    if (ret < 0)
        errno = saved;
    return ret;
}

pid_t tagent_spawn(const tagent_spawn_t *s, tsl_error_t *err)
{
    /* argv: shim --env-fd 3 --dir D --cwd C [--cgroup P]... [--uid U --gid G] [--preload L]
     *       -- ARGV... */
    size_t nargv = 0;
    while (s->argv[nargv])
        nargv++;
    /* Records in the lock need the lock: without it the shim would write them beside the job's
     * files, where tesseld does not read them for this layout. */
    if (s->lock_records && s->lock_fd <= 2) {
        errno = EINVAL;
        return tsl_errprintf(err, "--lock-records without a start lock");
    }
    size_t cap = 22 + 2 * TAGENT_MAX_CGROUPS + 8 + 9 + 6 + 2 * TAGENT_NVML_ENV_MAX + 2 +
                 2 * TAGENT_FOLDERS_MAX + 6 + 2 * TAGENT_SVC_MAX + nargv + 1;
    char **av = calloc(cap, sizeof *av);
    char uid[24], gid[24], envfd[16], lockfd[16], limit[24], cwd_flags[16], sport[16], sgid[24];
    char svc[TAGENT_SVC_MAX][4200];
    if (!av) {
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    int efd = env_memfd(s->envp);
    if (efd < 0) {
        int saved = errno;
        free(av);
        errno = saved;
        return tsl_errprintf(err, "the job's environment: %s", strerror(saved));
    }
    /* The shim's own environment: fixed, nothing of the job's (see TAGENT_SHIM_PATH). */
    static const char *const keep[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
    char *shim_env[2 + sizeof keep / sizeof keep[0]];
    char *owned[sizeof keep / sizeof keep[0]] = {0};
    size_t ne = 0;
    shim_env[ne++] = (char *)"PATH=" TAGENT_SHIM_PATH;
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
        const char *v = getenv(keep[k]);
        if (v && asprintf(&owned[k], "%s=%s", keep[k], v) >= 0)
            shim_env[ne++] = owned[k];
        else
            owned[k] = NULL;
    }
    shim_env[ne] = NULL;
    size_t i = 0;
    av[i++] = (char *)s->shim;
    snprintf(envfd, sizeof envfd, "%d", ENV_FD);
    av[i++] = (char *)"--env-fd";
    av[i++] = envfd;
    int lfd = -1;
    if (s->lock_fd > 2) {
        /* Far above 2 for the same reason as the memfd's. */
        lfd = fcntl(s->lock_fd, F_DUPFD_CLOEXEC, 100);
        if (lfd < 0) {
            int saved = errno;
            close(efd);
            for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
                free(owned[k]);
            free(av);
            errno = saved;
            return tsl_errprintf(err, "start lock: %s", strerror(saved));
        }
        snprintf(lockfd, sizeof lockfd, "%d", LOCK_FD);
        av[i++] = (char *)"--lock-fd";
        av[i++] = lockfd;
    }
    av[i++] = (char *)"--dir";
    av[i++] = (char *)s->dir;
    if (s->exit_file) {
        av[i++] = (char *)"--exit-file";
        av[i++] = (char *)s->exit_file;
    }
    if (s->pid_file) {
        av[i++] = (char *)"--pid-file";
        av[i++] = (char *)s->pid_file;
    }
    if (s->lock_records && lfd >= 0)
        av[i++] = (char *)"--lock-records";
    if (s->preload_list && s->state && !s->container) {
        av[i++] = (char *)"--preload-list";
        av[i++] = (char *)s->preload_list;
    }
    av[i++] = (char *)"--cwd";
    av[i++] = (char *)s->cwd;
    for (int c = 0; c < s->ncgroups; c++) {
        av[i++] = (char *)"--cgroup";
        av[i++] = (char *)s->cgroup_procs[c];
    }
    if (s->set_user) {
        snprintf(uid, sizeof uid, "%u", (unsigned)s->uid);
        snprintf(gid, sizeof gid, "%u", (unsigned)s->gid);
        av[i++] = (char *)"--uid";
        av[i++] = uid;
        av[i++] = (char *)"--gid";
        av[i++] = gid;
        if (s->user) {
            av[i++] = (char *)"--user";
            av[i++] = (char *)s->user;
        }
    }
    if (s->log_limit) {
        snprintf(limit, sizeof limit, "%llu", (unsigned long long)s->log_limit);
        av[i++] = (char *)"--log-limit";
        av[i++] = limit;
    }
    if (s->preload) {
        av[i++] = (char *)"--preload";
        av[i++] = (char *)s->preload;
    }
    if (s->state) {
        av[i++] = (char *)"--state";
        av[i++] = (char *)s->state;
        if (s->block_userns)
            av[i++] = (char *)"--block-userns";
        if (s->tty)
            av[i++] = (char *)"--tty";
    }
    if (s->state && !s->container && s->folder_root && s->nfolders > 0) {
        av[i++] = (char *)"--folder-root";
        av[i++] = (char *)s->folder_root;
        for (int k = 0; k < s->nfolders && k < TAGENT_FOLDERS_MAX; k++) {
            av[i++] = (char *)"--folder";
            av[i++] = (char *)s->folders[k];
        }
    }
    if (s->state && !s->container && s->serve_sock) {
        snprintf(sport, sizeof sport, "%d", s->serve_port);
        snprintf(sgid, sizeof sgid, "%u", (unsigned)s->serve_gid);
        av[i++] = (char *)"--serve-port";
        av[i++] = sport;
        av[i++] = (char *)"--serve-sock";
        av[i++] = (char *)s->serve_sock;
        av[i++] = (char *)"--serve-gid";
        av[i++] = sgid;
    }
    for (int k = 0;
         s->state && !s->container && !s->serve_sock && k < s->nsvc && k < TAGENT_SVC_MAX; k++) {
        snprintf(svc[k], sizeof svc[k], "%d:%s", s->svc_port[k], s->svc_sock[k]);
        av[i++] = (char *)"--svc";
        av[i++] = svc[k];
    }
    if (s->state && s->container && s->image_rootfs) {
        av[i++] = (char *)"--container";
        av[i++] = (char *)s->container;
        av[i++] = (char *)"--image-rootfs";
        av[i++] = (char *)s->image_rootfs;
        snprintf(cwd_flags, sizeof cwd_flags, "%u", s->ctr_cwd_flags);
        av[i++] = (char *)"--ctr-cwd-flags";
        av[i++] = cwd_flags;
    }
    if (s->nvml && s->gpu_mem_limits) {
        av[i++] = (char *)"--nvml";
        av[i++] = (char *)s->nvml;
        av[i++] = (char *)"--gpu-mem-limit";
        av[i++] = (char *)s->gpu_mem_limits;
        av[i++] = (char *)"--gpu-mem-violation";
        av[i++] = (char *)(s->gpu_mem_violation ? s->gpu_mem_violation : "kill");
        for (int k = 0; k < TAGENT_NVML_ENV_MAX && s->nvml_env[k]; k++) {
            av[i++] = (char *)"--nvml-env";
            av[i++] = (char *)s->nvml_env[k];
        }
    }
    av[i++] = (char *)"--";
    for (size_t k = 0; k < nargv; k++)
        av[i++] = s->argv[k];
    av[i] = NULL;

    /* Opened here with its checks (open_shim_log); /dev/null when nothing usable can be made
     * there (a directory of that name, say): the job runs, without the shim's own messages. */
    int logfd = open_shim_log(s->dir);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (logfd >= 0)
        posix_spawn_file_actions_adddup2(&fa, logfd, 1);
    else
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_adddup2(&fa, efd, ENV_FD);
    if (lfd >= 0)
        posix_spawn_file_actions_adddup2(&fa, lfd, LOCK_FD);
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    /* New session: signals sent to tesseld's process group (a terminal's ^C, a test killing
     * the daemon's group) do not reach the shim or the job. */
    posix_spawnattr_setflags(&at,
                             POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, s->shim, &fa, &at, av, shim_env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (logfd >= 0)
        close(logfd);
    close(efd);
    if (lfd >= 0)
        close(lfd);
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
        free(owned[k]);
    free(av);
    if (rc != 0) {
        errno = rc;
        return tsl_errprintf(err, "cannot start %s: %s", s->shim, strerror(rc));
    }
    return pid;
}

/* Read a small regular file from fd (which read_small closes) into buf. */
static int read_fd_small(int fd, char *buf, size_t len)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EPROTO;
        return -1;
    }
    ssize_t n = read(fd, buf, len - 1);
    int saved = errno;
    close(fd);
    if (n < 0) {
        errno = saved;
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

/* The job directory belongs to the job's user: what is named "pid" or "exit" there may be a
 * symlink (to a file the user may not read), a FIFO (which would block tesseld) or a device,
 * and a file system of the user's (FUSE) may be mounted over the directory or the file, whose
 * server need never answer.  Only a regular file is read, never through a symlink or a mount
 * point (EXDEV, nomount.h), never blocking. */
static int read_small(const char *dir, const char *file, char *buf, size_t len)
{
    int dfd = tsl_dir_nomount(dir);
    if (dfd < 0)
        return errno == ELOOP ? (errno = EPROTO, -1) : -1;
    int fd = tsl_openat_nomount(dfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
    int saved = errno;
    close(dfd);
    if (fd < 0)
        return saved == ELOOP ? (errno = EPROTO, -1) : (errno = saved, -1);
    return read_fd_small(fd, buf, len);
}

/* "exit N [oom]", "signal N [oom]", "error STAGE ERRNO" into *out: 1, or -1 with EPROTO. */
static int parse_exit(const char *buf, tagent_exit_t *out)
{
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    int a, b;
    char stage[32];
    /* "exit N oom", "signal N oom": the out-of-memory killer ended a process of the job. */
    out->oom = strstr(buf, " oom\n") != NULL;
    if (sscanf(buf, "exit %d", &a) == 1) {
        out->exit_code = a;
    } else if (sscanf(buf, "signal %d", &a) == 1) {
        out->sig = a;
    } else if (sscanf(buf, "error %31s %d", stage, &b) == 2) {
        if (strcmp(stage, "container") == 0 && b == EIO) /* ctrrun.h: crun said why */
            snprintf(out->error, sizeof out->error,
                     "container: the OCI runtime did not start it (its message is in the job's "
                     "stderr)");
        else
            snprintf(out->error, sizeof out->error, "%s: %s", stage, strerror(b));
    } else {
        errno = EPROTO;
        return -1;
    }
    return 1;
}

int tagent_read_exit(const char *dir, tagent_exit_t *out)
{
    char buf[256];
    if (read_small(dir, "exit", buf, sizeof buf) < 0)
        return errno == ENOENT ? 0 : -1;
    return parse_exit(buf, out);
}

int tagent_read_exit_file(const char *path, tagent_exit_t *out)
{
    char buf[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return errno == ENOENT ? 0 : errno == ELOOP ? (errno = EPROTO, -1) : -1;
    if (read_fd_small(fd, buf, sizeof buf) < 0)
        return -1;
    return parse_exit(buf, out);
}

/* "SHIM START JOB" in buf: 0 and the three, or -1 with EPROTO. */
static int parse_pids(const char *buf, pid_t *shim, uint64_t *shim_start, pid_t *job)
{
    long s, j;
    unsigned long long st;
    /* pid 1 or below would make kill(-pid) hit every process or tesseld's own group. */
    if (sscanf(buf, "%ld %llu %ld", &s, &st, &j) != 3 || s <= 1 || j <= 1 || s > INT32_MAX ||
        j > INT32_MAX) {
        errno = EPROTO;
        return -1;
    }
    *shim = (pid_t)s;
    *shim_start = st;
    *job = (pid_t)j;
    return 0;
}

int tagent_read_pids(const char *dir, pid_t *shim, uint64_t *shim_start, pid_t *job)
{
    char buf[128];
    if (read_small(dir, "pid", buf, sizeof buf) < 0)
        return -1;
    return parse_pids(buf, shim, shim_start, job);
}

int tagent_read_pids_file(const char *path, pid_t *shim, uint64_t *shim_start, pid_t *job)
{
    char buf[128];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ELOOP)
            errno = EPROTO;
        return -1;
    }
    if (read_fd_small(fd, buf, sizeof buf) < 0)
        return -1;
    return parse_pids(buf, shim, shim_start, job);
}

int tagent_lock_record(const char *buf, size_t n, size_t off, size_t end, char *out, size_t outlen)
{
    if (end > n)
        end = n;
    if (off >= end || buf[off] == '\0')
        return 0;
    for (size_t i = off; i < end && buf[i] != '\0'; i++) {
        if (buf[i] == '\n') {
            size_t len = i + 1 - off;
            if (len >= outlen)
                return 0;
            memcpy(out, buf + off, len);
            out[len] = '\0';
            return 1;
        }
    }
    return 0; /* not written yet, or being written */
}

/* The first TAGENT_LOCK_SIZE bytes of the start lock fd: their count, or -1 with errno. */
static ssize_t lock_read(int fd, char *buf)
{
    ssize_t n;
    do
        n = pread(fd, buf, TAGENT_LOCK_SIZE, 0);
    while (n < 0 && errno == EINTR);
    return n;
}

int tagent_lock_has_records(int fd)
{
    char buf[TAGENT_LOCK_SIZE];
    ssize_t n = lock_read(fd, buf);
    if (n < 0)
        return -1;
    size_t hl = strlen(TAGENT_LOCK_HEADER);
    return (size_t)n >= hl && memcmp(buf, TAGENT_LOCK_HEADER, hl) == 0;
}

int tagent_read_lock_exit(int fd, tagent_exit_t *out)
{
    char buf[TAGENT_LOCK_SIZE], rec[TAGENT_LOCK_SIZE - TAGENT_LOCK_EXIT_OFF + 1];
    ssize_t n = lock_read(fd, buf);
    if (n < 0)
        return -1;
    if (!tagent_lock_record(buf, (size_t)n, TAGENT_LOCK_EXIT_OFF, TAGENT_LOCK_SIZE, rec,
                            sizeof rec))
        return 0;
    return parse_exit(rec, out);
}

int tagent_read_lock_pids(int fd, pid_t *shim, uint64_t *shim_start, pid_t *job)
{
    char buf[TAGENT_LOCK_SIZE], rec[TAGENT_LOCK_EXIT_OFF - TAGENT_LOCK_PID_OFF + 1];
    ssize_t n = lock_read(fd, buf);
    if (n < 0)
        return -1;
    if (!tagent_lock_record(buf, (size_t)n, TAGENT_LOCK_PID_OFF, TAGENT_LOCK_EXIT_OFF, rec,
                            sizeof rec)) {
        errno = ENOENT;
        return -1;
    }
    return parse_pids(rec, shim, shim_start, job);
}

/* Start time, state letter and parent of pid from /proc/PID/stat; 0 when it is gone. */
static uint64_t stat_start3(pid_t pid, char *state_out, pid_t *ppid_out)
{
    tsl_procstat_t ps;
    if (tsl_procstat_read(pid, &ps) < 0)
        return 0;
    *state_out = ps.state;
    if (ppid_out)
        *ppid_out = ps.ppid;
    return ps.start_time;
}

static uint64_t stat_start(pid_t pid, char *state_out)
{
    return stat_start3(pid, state_out, NULL);
}

bool tagent_child_of(pid_t pid, pid_t parent)
{
    if (pid <= 1 || parent <= 1)
        return false;
    char state = 0;
    pid_t pp = 0;
    if (stat_start3(pid, &state, &pp) == 0)
        return false;
    return pp == parent;
}

uint64_t tagent_proc_start_time(pid_t pid)
{
    char state;
    return stat_start(pid, &state);
}

bool tagent_alive(pid_t pid, uint64_t start)
{
    if (pid <= 0)
        return false;
    char state = 0;
    uint64_t now = stat_start(pid, &state);
    /* A zombie has finished; only its parent's wait is missing. */
    if (now == 0 || state == 'Z' || state == 'X')
        return false;
    return start == 0 || now == start;
}

int tagent_sigmask_parse(const char *status, const char *key, uint64_t *mask)
{
    /* "\nKEY:" or KEY: at the start of the text. */
    char want[32];
    size_t kl = strlen(key);
    if (kl + 3 > sizeof want) {
        errno = EINVAL;
        return -1;
    }
    snprintf(want, sizeof want, "\n%s:", key);
    const char *p = NULL;
    if (strncmp(status, want + 1, kl + 1) == 0)
        p = status + kl + 1;
    else if ((p = strstr(status, want)))
        p += kl + 2;
    if (p) {
        p += strspn(p, " \t");
        char *end = (char *)p;
        errno = 0;
        unsigned long long m = isxdigit((unsigned char)*p) ? strtoull(p, &end, 16) : 0;
        /* The kernel writes 16 hex digits (render_sigset_t). */
        if (isxdigit((unsigned char)*p) && errno == 0 && end - p == 16 &&
            (*end == '\n' || *end == '\0')) {
            *mask = (uint64_t)m;
            return 0;
        }
    }
    errno = EINVAL;
    return -1;
}

uint64_t tagent_sig_not_default(void)
{
    char buf[8192];
    size_t len = 0;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ~(uint64_t)0;
    for (;;) {
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == sizeof buf - 1)
            break;
    }
    close(fd);
    buf[len] = '\0';
    uint64_t ign, cgt;
    if (tagent_sigmask_parse(buf, "SigIgn", &ign) < 0 ||
        tagent_sigmask_parse(buf, "SigCgt", &cgt) < 0)
        return ~(uint64_t)0;
    return ign | cgt;
}
