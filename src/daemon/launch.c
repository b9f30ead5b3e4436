/* launch.c - start one placed job: its directory, cgroup, environment, and tessel-shim.
 *
 * The job's environment, in order of precedence (later wins):
 *   1. from tesseld: PATH, LANG, LC_ALL, TZ, and sanitizer options (ASAN_OPTIONS, ...);
 *      HOME, USER, LOGNAME of the account the job runs as;
 *   2. the job's own "env";
 *   3. Tessel's: CUDA_VISIBLE_DEVICES, TESSEL_JOB_ID, TESSEL_ARRAY_* (batch.h), TESSEL_SLICE,
 * TESSEL_CUDA_MEM_LIMIT, TESSEL_CUDA_MEM_LIMIT_<n>, TESSEL_CUDA_MEM_OVERSUBSCRIBE, LD_PRELOAD
 * (interposer first), and with fake GPUs TESSEL_FAKE_GPUS and LD_LIBRARY_PATH (fake library
 * directory first);
 *   4. with a GPU, the compute share (compute_env): TESSEL_CUDA_CORE_LIMIT is the lower of the
 *      job's share and the job's own value; TESSEL_CUDA_CORE_MODE (shared for a fraction) and
 *      TESSEL_CUDA_CORE_PRIORITY (high for inference; a job may lower it, never raise it).
 *
 * As root, the job's limits do not come from its environment (which it can change) but from
 * <data>/run/<id>/limits, root's, which tessel-shim mounts read-only at /run/tessel/job in the
 * job's own mount namespace, beside an /etc/ld.so.preload that names the interposer; the shim's
 * watchdog checks the driver's own per-process figures against the same limits
 * (docs/security.md).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/runner.h"
#include "daemon/batch.h"
#include "daemon/container_launch.h"
#include "agent/watchdog.h"
#include "daemon/daemon.h"
#include "daemon/jobsvc.h"
#include "daemon/pwcache.h"
#include "daemon/serve.h"
#include "daemon/serve_run.h"
#include "libutil/nomount.h"

/* The steps of a job's start, in order (--test-kill-at):
 *   running   the store says running (tick.c start_job), nothing else done yet;
 *   dir       the job's directory exists (and is its user's);
 *   cgroup    its cgroup exists;
 *   spawned   the shim is started, its pid not yet in the store;
 *   recorded  the shim's pid is in the store. */
static const char *const kill_steps[] = {"running", "dir", "cgroup", "spawned", "recorded"};

bool tessd_test_kill_step_valid(const char *step)
{
    for (size_t i = 0; i < sizeof kill_steps / sizeof kill_steps[0]; i++)
        if (strcmp(step, kill_steps[i]) == 0)
            return true;
    return false;
}

void tessd_test_kill_point(const tessd_t *d, const char *step)
{
    if (d->test_kill_at[0] && strcmp(d->test_kill_at, step) == 0) {
        tessd_log("--test-kill-at %s: killing myself (SIGKILL)", step);
        raise(SIGKILL);
    }
}

/* <data-dir>/starts/<id><suffix> (".lock", ".exit").  The directory is tesseld's own (0700,
 * made here on first use): no user can create, replace or lock a file in it. */
static int start_path(const tessd_t *d, int64_t id, bool mkdir_it, const char *suffix, char *buf,
                      size_t len)
{
    char dir[PATH_MAX];
    if (tessd_pathf(dir, sizeof dir, "%s/starts", d->data_dir) < 0)
        return -1;
    if (mkdir_it && mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(dir, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        errno = EPERM;
        return -1;
    }
    return tessd_pathf(buf, len, "%s/%lld%s", dir, (long long)id, suffix);
}

static int start_lock_path(const tessd_t *d, int64_t id, bool mkdir_it, char *buf, size_t len)
{
    return start_path(d, id, mkdir_it, ".lock", buf, len);
}

int tessd_exit_record_path(const tessd_t *d, int64_t id, char *buf, size_t len)
{
    return start_path(d, id, false, ".exit", buf, len);
}

int tessd_pid_record_path(const tessd_t *d, int64_t id, char *buf, size_t len)
{
    return start_path(d, id, false, ".pid", buf, len);
}

/* What a start lock holds (its layouts, oldest first; tessd_start_lock_kind):
 *   - nothing: a tesseld from before the exit record beside it, whose shim wrote jobs/<id>/exit;
 *   - "exit record: <id>.exit\n" alone: the shim writes <id>.exit beside it (pids in
 *     jobs/<id>/pid);
 *   - START_LOCK_MARK (2026-11-27 to 2026-11-28, up to 7fa4294): <id>.exit and <id>.pid;
 *   - TAGENT_LOCK_HEADER (runner.h, from 2026-11-28): both records in the lock file itself,
 *     written by the shim (--lock-records) with pwrite at fixed offsets: one file a start
 *     instead of three.
 * A tesseld reads every layout, so that a job started by an earlier one (an upgrade with the
 * job running) is adopted and its end recorded. */
#define START_LOCK_MARK     "exit record: <id>.exit\npid record: <id>.pid\n"
#define START_LOCK_PID_MARK "pid record: <id>.pid\n"

/* Job id's start lock, open for reading (a regular file reached without a link), or -1 with
 * errno. */
static int start_lock_open(const tessd_t *d, int64_t id)
{
    char p[PATH_MAX];
    if (start_lock_path(d, id, false, p, sizeof p) < 0)
        return -1;
    int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EPROTO;
        return -1;
    }
    return fd;
}

tessd_lock_kind_t tessd_start_lock_kind(const tessd_t *d, int64_t id)
{
    char buf[TAGENT_LOCK_SIZE];
    int fd = start_lock_open(d, id);
    if (fd < 0)
        return TESSD_LOCK_NONE;
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    if (n < 0)
        return TESSD_LOCK_NONE;
    if (n == 0)
        return TESSD_LOCK_EMPTY;
    size_t hl = strlen(TAGENT_LOCK_HEADER);
    if ((size_t)n >= hl && memcmp(buf, TAGENT_LOCK_HEADER, hl) == 0)
        return TESSD_LOCK_RECORDS;
    buf[n] = '\0';
    return strstr(buf, START_LOCK_PID_MARK) ? TESSD_LOCK_FILES : TESSD_LOCK_EXIT_FILE;
}

int tessd_start_lock_exit(const tessd_t *d, int64_t id, tagent_exit_t *ex)
{
    int fd = start_lock_open(d, id);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    int rc = tagent_read_lock_exit(fd, ex);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int tessd_start_lock_pids(const tessd_t *d, int64_t id, pid_t *shim, uint64_t *start, pid_t *job)
{
    int fd = start_lock_open(d, id);
    if (fd < 0)
        return -1;
    int rc = tagent_read_lock_pids(fd, shim, start, job);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

void tessd_start_lock_clear(const tessd_t *d, int64_t id)
{
    char p[PATH_MAX];
    if (start_lock_path(d, id, false, p, sizeof p) < 0)
        return;
    int fd = open(p, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && tagent_lock_has_records(fd) == 1 &&
        ftruncate(fd, TAGENT_LOCK_PID_OFF) < 0)
        tessd_log("job %lld: %s: %s", (long long)id, p, strerror(errno));
    close(fd);
}

int tessd_start_lock_held(const tessd_t *d, int64_t id)
{
    char p[PATH_MAX];
    if (start_lock_path(d, id, false, p, sizeof p) < 0)
        return errno == ENOENT ? 0 : -1;
    int fd = open(p, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    int rc = flock(fd, LOCK_EX | LOCK_NB);
    int saved = errno;
    close(fd); /* releases our lock, if we got it */
    if (rc == 0)
        return 0;
    errno = saved;
    return saved == EWOULDBLOCK ? 1 : -1;
}

bool tessd_start_lock_legacy(const tessd_t *d, int64_t id)
{
    return tessd_start_lock_kind(d, id) == TESSD_LOCK_EMPTY;
}

bool tessd_start_lock_pid_record(const tessd_t *d, int64_t id)
{
    tessd_lock_kind_t k = tessd_start_lock_kind(d, id);
    return k == TESSD_LOCK_FILES || k == TESSD_LOCK_RECORDS;
}

void tessd_start_lock_remove(const tessd_t *d, int64_t id)
{
    char p[PATH_MAX];
    if (start_path(d, id, false, ".exit", p, sizeof p) == 0 && unlink(p) < 0 && errno != ENOENT)
        tessd_log("job %lld: %s: %s", (long long)id, p, strerror(errno));
    if (start_path(d, id, false, ".pid", p, sizeof p) == 0 && unlink(p) < 0 && errno != ENOENT)
        tessd_log("job %lld: %s: %s", (long long)id, p, strerror(errno));
    if (start_lock_path(d, id, false, p, sizeof p) == 0 && unlink(p) < 0 && errno != ENOENT)
        tessd_log("job %lld: %s: %s", (long long)id, p, strerror(errno));
}

/* Take job id's start lock for its next shim: a new descriptor holding an exclusive flock,
 * or -1 with err (EWOULDBLOCK: a shim of an earlier attempt still holds it).  Any exit or pid
 * record of an earlier attempt goes (the files of a shim an earlier tesseld started, the
 * records in the lock by truncating it); the lock then holds TAGENT_LOCK_HEADER alone. */
static int start_lock_take(const tessd_t *d, int64_t id, tsl_error_t *err)
{
    char p[PATH_MAX];
    if (start_lock_path(d, id, true, p, sizeof p) < 0)
        return tsl_errprintf(err, "%s/starts: %s", d->data_dir, strerror(errno));
    int fd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return tsl_errprintf(err, "%s: %s", p, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return tsl_errprintf(err, "%s: %s", p,
                             saved == EWOULDBLOCK ? "a supervisor of an earlier attempt still runs"
                                                  : strerror(saved));
    }
    char ex[PATH_MAX], pr[PATH_MAX];
    const char *mark = d->test_start_files ? START_LOCK_MARK : TAGENT_LOCK_HEADER;
    size_t ml = strlen(mark);
    if ((tessd_exit_record_path(d, id, ex, sizeof ex) == 0 && unlink(ex) < 0 && errno != ENOENT) ||
        (tessd_pid_record_path(d, id, pr, sizeof pr) == 0 && unlink(pr) < 0 && errno != ENOENT) ||
        ftruncate(fd, 0) < 0 || pwrite(fd, mark, ml, 0) != (ssize_t)ml) {
        int saved = errno;
        close(fd);
        errno = saved;
        return tsl_errprintf(err, "%s: %s", p, strerror(saved));
    }
    return fd;
}

void tessd_job_dir(const tessd_t *d, int64_t id, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%lld", d->jobs_dir, (long long)id);
}

int tessd_job_open(const tessd_t *d, int64_t id, const char *name, int flags, mode_t mode)
{
    char rel[NAME_MAX + 32];
    if (snprintf(rel, sizeof rel, "%lld/%s", (long long)id, name) >= (int)sizeof rel) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return tsl_open_nomount(d->jobs_dir, rel, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, mode);
}

int tessd_job_dirfd(const tessd_t *d, int64_t id)
{
    char rel[24];
    snprintf(rel, sizeof rel, "%lld", (long long)id);
    return tsl_open_nomount(d->jobs_dir, rel, O_PATH | O_DIRECTORY, 0);
}

void tessd_cgroup_name(const tessd_t *d, int64_t id, char *buf, size_t len)
{
    snprintf(buf, len, "%s/job-%lld", d->cg_base, (long long)id);
}

bool tessd_job_refused(const tessd_t *d, const char *user, bool admin, char *why, size_t len)
{
    if (geteuid() != 0 || d->allow_root_jobs || admin)
        return false;
    tessd_pw_t pw;
    int found = tessd_getpwnam(user, &pw);
    if (found == 1 && pw.uid != 0)
        return false;
    if (found == 1)
        snprintf(why, len,
                 "refused: system account '%s' is uid 0 and tesseld runs no non-admin's job as "
                 "root; ask an admin to start tesseld with --allow-root-jobs",
                 user);
    else
        snprintf(why, len,
                 "refused: no system account '%s' on this machine; ask an admin to create one "
                 "or start tesseld with --allow-root-jobs",
                 user);
    return true;
}

/* Most supplementary groups taken for the check below (NGROUPS_MAX is 65536; an account in
 * more than 256 groups is checked with its first 256, and the job itself gets all of them). */
#define CWD_MAX_GROUPS 256
/* The checker's stack: it makes four system calls. */
#define CWD_STACK (64u << 10)
/* How long a checker that got SIGKILL is waited for: a FUSE or NFS wait is killable, so it
 * ends at once; one that does not (uninterruptible sleep) is left behind, never waited for. */
#define CWD_KILL_WAIT_MS 1000

int tessd_child_wait(pid_t pid, int timeout_ms, int *status)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long nap_us = 200; /* a chdir that answers takes well under 1 ms */
    for (;;) {
        pid_t w = waitpid(pid, status, WNOHANG | __WALL);
        if (w == pid)
            return 1;
        if (w < 0 && errno != EINTR)
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t left_us =
            (int64_t)timeout_ms * 1000 -
            ((int64_t)(now.tv_sec - t0.tv_sec) * 1000000 + (now.tv_nsec - t0.tv_nsec) / 1000);
        if (left_us <= 0)
            return 0;
        long us = left_us < nap_us ? (long)left_us : nap_us;
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
        if (nap_us < 20000)
            nap_us *= 2;
    }
}

typedef struct {
    const char *path;
    const gid_t *groups;
    int ngroups;
    gid_t gid;
    uid_t uid;
} cwd_child_t;

/* The checker: takes the account's ids and tries to enter the path; exit 0 entered, 1 not, 2
 * the ids could not be taken.  Raw system calls only: it is a clone of a threaded process
 * that glibc does not know as a new process (its setuid would signal tesseld's threads). */
static int cwd_child(void *arg)
{
    const cwd_child_t *c = arg;
    if (syscall(SYS_setgroups, (size_t)c->ngroups, c->groups) < 0 ||
        syscall(SYS_setgid, c->gid) < 0 || syscall(SYS_setuid, c->uid) < 0)
        _exit(2);
    _exit(syscall(SYS_chdir, c->path) == 0 ? 0 : 1);
}

int tessd_cwd_check(const tessd_t *d, const char *user, const char *path, char *why, size_t len)
{
    /* The job runs as the account of its user when tesseld is root and that account is not
     * uid 0 (tessd_launch); otherwise as tesseld's own user, which may stat what it likes. */
    tessd_pw_t pw;
    bool as_user = geteuid() == 0 && tessd_getpwnam(user, &pw) == 1 && pw.uid != 0;
    if (!as_user) {
        /* The job runs as tesseld's own user: what tesseld sees, the job may see too (and no
         * child, which costs a few ms on a loaded machine). */
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(path, X_OK) == 0)
            return 0;
        snprintf(why, len, "cwd '%s' is not a directory the job can enter", path);
        return -1;
    }
    gid_t groups[CWD_MAX_GROUPS];
    int ngroups = CWD_MAX_GROUPS;
    if (getgrouplist(pw.name, pw.gid, groups, &ngroups) < 0)
        ngroups = CWD_MAX_GROUPS; /* the first CWD_MAX_GROUPS are filled */
    cwd_child_t c = {path, groups, ngroups, pw.gid, pw.uid};
    /* A short-lived child takes the account's ids and tries to enter path: what it may enter,
     * the job may.  It is made with no exit signal (a "clone" child in waitpid(2)'s words), so
     * that the tick's waitpid(-1), which runs while this caller does not hold the lock, never
     * reaps it: only a wait with __WALL does, ours.  Without CLONE_VM it has its own copy of
     * memory, as after fork. */
    char *stack = malloc(CWD_STACK);
    if (!stack) {
        snprintf(why, len, "cannot check cwd '%s': out of memory", path);
        return -1;
    }
    pid_t pid = clone(cwd_child, stack + CWD_STACK, 0, &c);
    int e = errno;
    free(stack); /* the child runs on its own copy */
    if (pid < 0) {
        snprintf(why, len, "cannot check cwd '%s': %s", path, strerror(e));
        return -1;
    }
    /* A path on a file system that never answers (a user's FUSE mount whose server stalls)
     * would hold the child in chdir for ever: waited for TESSD_CWD_TIMEOUT_MS at most, then
     * killed. */
    int st;
    int w = tessd_child_wait(pid, TESSD_CWD_TIMEOUT_MS, &st);
    if (w < 0) {
        snprintf(why, len, "cannot check cwd '%s': %s", path, strerror(errno));
        return -1;
    }
    if (w == 0) {
        kill(pid, SIGKILL);
        if (tessd_child_wait(pid, CWD_KILL_WAIT_MS, &st) != 1)
            tessd_log("cwd check of '%s' for user '%s': process %d still there 1 s after "
                      "SIGKILL; left behind",
                      path, user, (int)pid);
        snprintf(why, len,
                 "cwd '%s' did not answer within %d s when user '%s' tried to enter it (a file "
                 "system that does not answer cannot be a job's cwd)",
                 path, TESSD_CWD_TIMEOUT_MS / 1000, user);
        return -1;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 2) {
        snprintf(why, len, "cannot check cwd '%s': cannot take the ids of '%s'", path, user);
        return -1;
    }
    /* One answer for "does not exist", "not a directory" and "no permission": telling them
     * apart would tell a user about paths in directories the user cannot read. */
    snprintf(why, len, "cwd '%s' is not a directory user '%s' can enter", path, user);
    return -1;
}

/* Whether path is the list every job binds as it should be: a regular file of root's with one
 * link, writable by no one else, holding want exactly. */
static bool preload_good(const char *path, const char *want)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    char buf[PATH_MAX + 4];
    size_t n = strlen(want);
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && st.st_nlink == 1 &&
              !(st.st_mode & 022) && (size_t)st.st_size == n && n < sizeof buf &&
              pread(fd, buf, sizeof buf, 0) == (ssize_t)n && memcmp(buf, want, n) == 0;
    close(fd);
    return ok;
}

int tessd_preload_list(const tessd_t *d, char *buf, size_t len, tsl_error_t *err)
{
    char line[PATH_MAX + 2];
    if (!d->run_dir[0] || snprintf(buf, len, "%s/ld.so.preload", d->run_dir) >= (int)len ||
        snprintf(line, sizeof line, "%s\n", d->interposer) >= (int)sizeof line) {
        errno = ENAMETOOLONG;
        return tsl_errprintf(err, "%s/ld.so.preload: %s", d->run_dir, strerror(errno));
    }
    /* Checked at every use, written again when it is not what tesseld wrote (an admin's clean-up
     * of run/, a restored backup): one bad file must not stay every job's until a restart. */
    if (preload_good(buf, line))
        return 0;
    return tessd_write_root_file(d->run_dir, "ld.so.preload", line, 0644, err);
}

void tessd_state_dir(const tessd_t *d, int64_t id, char *buf, size_t len)
{
    if (d->run_dir[0])
        snprintf(buf, len, "%s/%lld", d->run_dir, (long long)id);
    else if (len)
        buf[0] = '\0';
}

/* Create path (O_EXCL|O_NOFOLLOW: no name there may be taken over) with mode (fchmod: the umask
 * does not decide it) and write text.  0, or -1 with errno, and nothing left behind. */
static int write_excl(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    bool ok = fchmod(fd, mode) == 0 && write(fd, text, len) == (ssize_t)len;
    int saved = errno;
    if (close(fd) < 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        unlink(path);
        errno = saved;
        return -1;
    }
    return 0;
}

/* Write dir/name (dir: root's, writable by root only) through an O_EXCL|O_NOFOLLOW temporary,
 * given mode, then rename.  0, or -1 with err. */
int tessd_write_root_file(const char *dir, const char *name, const char *text, mode_t mode,
                          tsl_error_t *err)
{
    char tmp[PATH_MAX + 64], final[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    if (unlink(tmp) < 0 && errno != ENOENT)
        return tsl_errprintf(err, "%s: %s", tmp, strerror(errno));
    if (write_excl(tmp, text, mode) < 0)
        return tsl_errprintf(err, "%s: %s", tmp, strerror(errno));
    if (rename(tmp, final) < 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return tsl_errprintf(err, "%s: %s", final, strerror(saved));
    }
    return 0;
}

/* Create dir/name (dir: root's, writable by root only, emptied by tessd_state_remove and not
 * yet handed to any reader) with given mode, and write text: no temporary and rename, since no
 * one can read the file half-written (no shim is started yet) and no one but root can make a
 * name there.  0, or -1 with err. */
static int write_new_root_file(const char *dir, const char *name, const char *text, mode_t mode,
                               tsl_error_t *err)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (write_excl(path, text, mode) < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    return 0;
}

/* A directory that must be root's and writable by root only: made (mode) when missing. */
static int root_dir(const char *path, mode_t mode, tsl_error_t *err)
{
    if (mkdir(path, mode) < 0 && errno != EEXIST)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    struct stat st;
    if (lstat(path, &st) < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
        errno = EPERM;
        return tsl_errprintf(err, "%s: must be a directory owned by root, writable by no one else",
                             path);
    }
    if ((st.st_mode & 07777) != mode && chmod(path, mode) < 0)
        return tsl_errprintf(err, "chmod %s: %s", path, strerror(errno));
    return 0;
}

int tessd_enforce_init(tessd_t *d, tsl_error_t *err)
{
    tessd_pathf(d->run_dir, sizeof d->run_dir, "%s/run", d->data_dir);
    tessd_pathf(d->registry_dir, sizeof d->registry_dir, "%s/registry", d->data_dir);
    /* 0711: a job reaches its own run/<id> (bind-mounted for it anyway) but lists none. */
    if (root_dir(d->run_dir, 0711, err) < 0 || root_dir(d->registry_dir, 0755, err) < 0)
        return -1;
    /* run/ld.so.preload: what every job's /etc/ld.so.preload says (the interposer), one file
     * for all (tessd_preload_list), no longer one in each run/<id> (2026-11-28).  Replaced by a
     * rename: a job that runs on from an earlier tesseld keeps the file it has bound. */
    char line[PATH_MAX + 2], list[PATH_MAX];
    if (snprintf(line, sizeof line, "%s\n", d->interposer) >= (int)sizeof line ||
        snprintf(list, sizeof list, "%s/ld.so.preload", d->run_dir) >= (int)sizeof list) {
        errno = ENAMETOOLONG;
        return tsl_errprintf(err, "%s/ld.so.preload: %s", d->run_dir, strerror(errno));
    }
    if (tessd_write_root_file(d->run_dir, "ld.so.preload", line, 0644, err) < 0)
        return -1;
    for (int g = 0; g < d->ngpus; g++) {
        /* The interposer's name for GPU g's registry: tessel-gpu-<32 hex digits of its UUID>. */
        char path[PATH_MAX + 64];
        int n = snprintf(path, sizeof path, "%s/tessel-gpu-", d->registry_dir);
        for (int i = 0; i < 16; i++)
            n += snprintf(path + n, sizeof path - (size_t)n, "%02x", d->gpus[g].uuid_bin[i]);
        struct stat st;
        if (lstat(path, &st) == 0) {
            if (S_ISREG(st.st_mode) && st.st_uid == 0 && st.st_nlink == 1 &&
                (st.st_mode & 07777) == 0666)
                continue; /* ours, from an earlier start: the slices in it stay */
            if (unlink(path) < 0)
                return tsl_errprintf(err, "%s: %s", path, strerror(errno));
        }
        /* Writable by every job (sharing needs it), but root's: no user can chmod, replace or
         * pre-create it (the directory is root's). */
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return tsl_errprintf(err, "%s: %s", path, strerror(errno));
        int rc = fchmod(fd, 0666);
        close(fd);
        if (rc < 0)
            return tsl_errprintf(err, "chmod %s: %s", path, strerror(errno));
    }
    return 0;
}

int tessd_violation_read(const tessd_t *d, int64_t id, char *action, size_t alen, unsigned *episode,
                         char *reason, size_t rlen)
{
    char dir[PATH_MAX], path[PATH_MAX + 32], buf[512];
    tessd_state_dir(d, id, dir, sizeof dir);
    if (!dir[0])
        return 0;
    snprintf(path, sizeof path, "%s/violation", dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    char act[16];
    int off = 0;
    if (sscanf(buf, "%15s %u %n", act, episode, &off) != 2 || off == 0)
        return 0;
    snprintf(action, alen, "%s", act);
    snprintf(reason, rlen, "%s", buf + off);
    return 1;
}

void tessd_state_remove(const tessd_t *d, int64_t id)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    tessd_state_dir(d, id, dir, sizeof dir);
    struct stat st;
    if (!dir[0] || (lstat(dir, &st) < 0 && errno == ENOENT))
        return; /* a first start: nothing to remove */
    static const char *const names[] = {"limits",
                                        "ld.so.preload",
                                        "violation",
                                        ".limits.tmp",
                                        ".ld.so.preload.tmp",
                                        ".violation.tmp",
                                        "config.json",
                                        ".config.json.tmp",
                                        "tty.sock",
                                        "limits.run",
                                        ".limits.run.tmp",
                                        TSW_HOLD_FILE,
                                        "." TSW_HOLD_FILE ".tmp"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    /* A container job's mount point (its mounts were the shim's, gone with it). */
    snprintf(path, sizeof path, "%s/rootfs", dir);
    rmdir(path);
    /* Its console directory (root's, 0700): the sockets and process.json files a shim killed
     * while it used them left there (tessel-shim names them run.sock, exec-N.json, exec-N.sock). */
    snprintf(path, sizeof path, "%s/console", dir);
    int cfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *cd = cfd >= 0 ? fdopendir(cfd) : NULL;
    if (!cd && cfd >= 0)
        close(cfd);
    for (struct dirent *e; cd && (e = readdir(cd));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(cd), e->d_name, 0);
    if (cd)
        closedir(cd);
    rmdir(path);
    rmdir(dir);
}

/* Read dir/name, a regular file of root's reached without a link, into buf (cap bytes with
 * its NUL): 0, or -1 with err. */
static int read_root_file(const char *dir, const char *name, char *buf, size_t cap,
                          tsl_error_t *err)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0)
        n = read(fd, buf, cap - 1);
    else
        errno = EPERM;
    int saved = errno;
    close(fd);
    if (n < 0 || (size_t)n == cap - 1) {
        errno = n < 0 ? saved : E2BIG;
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    }
    buf[n] = '\0';
    return 0;
}

int tessd_gpu_hold(tessd_t *d, const tessd_run_t *r, bool on, tsl_error_t *err)
{
    char state[PATH_MAX], run[4096], path[PATH_MAX + 64];
    tessd_state_dir(d, r->id, state, sizeof state);
    struct stat st;
    if (!d->run_dir[0] || !state[0] || lstat(state, &st) < 0)
        return 0; /* no state directory: a job tesseld did not start as root */
    if (!on) {
        /* The limits first, then the watchdog's file: never the job's full limit in a new
         * process while the watchdog still holds it to nothing would kill it. */
        if (read_root_file(state, "limits.run", run, sizeof run, NULL) == 0 &&
            tessd_write_root_file(state, "limits", run, 0644, err) < 0)
            return -1;
        snprintf(path, sizeof path, "%s/limits.run", state);
        unlink(path);
        snprintf(path, sizeof path, "%s/%s", state, TSW_HOLD_FILE);
        if (unlink(path) < 0 && errno != ENOENT)
            return tsl_errprintf(err, "%s: %s", path, strerror(errno));
        return 0;
    }
    /* Kept once: a hold asked again (a restore that did not fit) keeps the first copy. */
    if (read_root_file(state, "limits.run", run, sizeof run, NULL) < 0) {
        if (read_root_file(state, "limits", run, sizeof run, err) < 0 ||
            tessd_write_root_file(state, "limits.run", run, 0600, err) < 0)
            return -1;
    }
    /* The same lines with every GPU-memory limit 0. */
    char held[sizeof run + 64];
    size_t n = 0;
    for (char *line = run; *line && n < sizeof held;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *eq = memchr(line, '=', len);
        if (strncmp(line, "TESSEL_CUDA_MEM_LIMIT", 21) == 0 && eq)
            n += (size_t)snprintf(held + n, sizeof held - n, "%.*s=0\n", (int)(eq - line), line);
        else
            n += (size_t)snprintf(held + n, sizeof held - n, "%.*s\n", (int)len, line);
        line += len + (nl ? 1 : 0);
    }
    if (n >= sizeof held) {
        errno = E2BIG;
        return tsl_errprintf(err, "job %lld: limits file too large", (long long)r->id);
    }
    if (tessd_write_root_file(state, "limits", held, 0644, err) < 0)
        return -1;
    return tessd_write_root_file(state, TSW_HOLD_FILE,
                                 "held by tesseld: suspended by a preemption\n", 0644, err);
}

int tessd_gpu_hold_watch(tessd_t *d, const tessd_run_t *r, bool on, tsl_error_t *err)
{
    char state[PATH_MAX];
    tessd_state_dir(d, r->id, state, sizeof state);
    struct stat st;
    if (!on)
        return tessd_gpu_hold(d, r, false, err);
    if (!d->run_dir[0] || !state[0] || lstat(state, &st) < 0)
        return 0; /* no state directory: a job tesseld did not start as root */
    return tessd_write_root_file(
        state, TSW_HOLD_FILE, "held by tesseld: its GPU memory reclaimed while idle\n", 0644, err);
}

/* The job's state directory with its limits (the same NAME=value pairs as its environment, so
 * the interposer reads them as it reads environ).  Anything an earlier
 * attempt left (a requeue: its watchdog record) goes first.  0, or -1 with err. */
static int write_state(tessd_t *d, const tessd_run_t *r, char *const *env, char *state, size_t slen,
                       tsl_error_t *err)
{
    tessd_state_dir(d, r->id, state, slen);
    tessd_state_remove(d, r->id);
    if (root_dir(state, 0755, err) < 0)
        return -1;
    char text[4096];
    size_t n = (size_t)snprintf(text, sizeof text,
                                "# tesseld: the limits of job %lld (the job cannot change them)\n",
                                (long long)r->id);
    bool mem = false;
    for (char *const *e = env; *e && n < sizeof text; e++) {
        /* tesseld's own values only (build_env and compute_env set them last); a
         * TESSEL_CUDA_MEM_LIMIT_7 of the job's own env, for a GPU it was not given, is not. */
        static const char *const keys[] = {"TESSEL_SLICE=",
                                           "TESSEL_CUDA_CORE_LIMIT=",
                                           "TESSEL_CUDA_CORE_MODE=",
                                           "TESSEL_CUDA_CORE_PRIORITY=",
                                           "TESSEL_CUDA_MEM_OVERSUBSCRIBE=",
                                           NULL};
        bool take = false;
        if (r->member.ngpus) {
            for (const char *const *k = keys; *k && !take; k++)
                take = strncmp(*e, *k, strlen(*k)) == 0;
            mem = mem || strncmp(*e, "TESSEL_CUDA_MEM_LIMIT=", 22) == 0;
            take = take || strncmp(*e, "TESSEL_CUDA_MEM_LIMIT=", 22) == 0;
            for (uint32_t i = 0; i < r->member.ngpus && !take; i++) {
                char k[48];
                snprintf(k, sizeof k, "TESSEL_CUDA_MEM_LIMIT_%u=", (unsigned)i);
                take = strncmp(*e, k, strlen(k)) == 0;
            }
        } else {
            take = strncmp(*e, "TESSEL_SLICE=", 13) == 0;
        }
        if (!take)
            continue;
        n += (size_t)snprintf(text + n, sizeof text - n, "%s\n", *e);
    }
    /* A job without a GPU gets none: 0 bytes on any it might reach. */
    if (!mem && n < sizeof text)
        n += (size_t)snprintf(text + n, sizeof text - n, "TESSEL_CUDA_MEM_LIMIT=0\n");
    if (n < sizeof text)
        n += (size_t)snprintf(text + n, sizeof text - n, "TESSEL_DEVICE_REGISTRY=%s\n",
                              d->registry_dir);
    if (n >= sizeof text) {
        errno = E2BIG;
        return tsl_errprintf(err, "job %lld: limits file too large", (long long)r->id);
    }
    /* Its /etc/ld.so.preload is run/ld.so.preload, the same for every job (tessd_enforce_init). */
    return write_new_root_file(state, "limits", text, 0644, err);
}

typedef struct {
    tessd_t *d;
    time_t stale_before;
} sweep_ctx_t;

static bool sweep_keep(const char *rel, const struct stat *st, void *arg)
{
    const sweep_ctx_t *c = arg;
    size_t il = strlen(c->d->instance);
    if (strncmp(rel, c->d->instance, il) == 0 && (rel[il] == '\0' || rel[il] == '/')) {
        /* Ours: keep the group of a job that runs (and what is below it). */
        long long id;
        char end;
        if (rel[il] == '/' && sscanf(rel + il + 1, "job-%lld%c", &id, &end) >= 1)
            return tessd_run_find(c->d, (int64_t)id) != NULL;
        return false;
    }
    /* Another instance's: its tesseld may be alive and starting a job in a group it has just
     * made (the job joins it within milliseconds); only an old group is taken for stale. */
    return st->st_mtime > c->stale_before;
}

void tessd_cgroup_sweep(tessd_t *d)
{
    if (d->cg_mode == TAGENT_CG_NONE)
        return;
    char parent[sizeof d->cg_base];
    snprintf(parent, sizeof parent, "%s", d->cg_base);
    char *slash = strrchr(parent, '/');
    if (!slash)
        return;
    *slash = '\0';
    sweep_ctx_t c = {.d = d, .stale_before = time(NULL) - TESSD_CG_STALE_S};
    int n = tagent_cgroup_sweep(d->cg_mode, d->cg_root, parent, sweep_keep, &c);
    if (n > 0)
        tessd_log("removed %d stale cgroup director%s below %s/%s", n, n == 1 ? "y" : "ies",
                  d->cg_root, parent);
}

/* A growable NULL-terminated array of "K=V" strings where a later set replaces. */
typedef struct {
    char **v;
    size_t n, cap;
} envv_t;

static int env_set(envv_t *e, const char *key, const char *val)
{
    size_t kl = strlen(key);
    char *kv = malloc(kl + strlen(val) + 2);
    if (!kv)
        return -1;
    sprintf(kv, "%s=%s", key, val);
    for (size_t i = 0; i < e->n; i++) {
        if (strncmp(e->v[i], key, kl) == 0 && e->v[i][kl] == '=') {
            free(e->v[i]);
            e->v[i] = kv;
            return 0;
        }
    }
    if (e->n + 2 > e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 32;
        char **v = realloc(e->v, cap * sizeof *v);
        if (!v) {
            free(kv);
            return -1;
        }
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = kv;
    e->v[e->n] = NULL;
    return 0;
}

static const char *env_get(const envv_t *e, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < e->n; i++)
        if (strncmp(e->v[i], key, kl) == 0 && e->v[i][kl] == '=')
            return e->v[i] + kl + 1;
    return NULL;
}

/* Take LD_PRELOAD out of e and return the job's value: the interposer first, then what the
 * job's env asked for.  Caller frees; NULL when there is nothing to preload. */
static char *preload_of(const tessd_t *d, envv_t *e)
{
    char *user = NULL;
    for (size_t i = 0; i < e->n; i++) {
        if (strncmp(e->v[i], "LD_PRELOAD=", 11) == 0) {
            user = strdup(e->v[i] + 11);
            free(e->v[i]);
            e->v[i] = e->v[--e->n];
            e->v[e->n] = NULL;
            break;
        }
    }
    if (!d->interposer[0])
        return user && *user ? user : (free(user), NULL);
    char *v = malloc(strlen(d->interposer) + (user ? strlen(user) : 0) + 2);
    if (v)
        sprintf(v, "%s%s%s", d->interposer, user && *user ? ":" : "", user ? user : "");
    free(user);
    return v;
}

static void env_free(envv_t *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
}

/* The compute share of a job on a GPU (docs/compute-shares.md): a fraction gets its share in
 * percent, work-conserving (mode shared); a whole GPU gets 100, which measures its busy time
 * and lets a suspend drain it without limiting it.  Inference jobs go first (priority high).
 * The job's own env may lower the limit and the priority (never raise them) and choose the mode. */
static int compute_env(const tstore_job_t *j, const tessd_run_t *r, envv_t *e)
{
    unsigned pct = 100;
    if (r->member.milli_gpu > 0 && r->member.milli_gpu < 1000)
        pct = (unsigned)r->member.milli_gpu / 10;
    if (pct < 1)
        pct = 1;
    const char *user = env_get(e, "TESSEL_CUDA_CORE_LIMIT");
    if (user) {
        char *end;
        unsigned long v = strtoul(user, &end, 10);
        if (end != user && (*end == '\0' || strcmp(end, "%") == 0) && v >= 1 && v < pct)
            pct = (unsigned)v;
    }
    char num[16];
    snprintf(num, sizeof num, "%u", pct);
    int rc = env_set(e, "TESSEL_CUDA_CORE_LIMIT", num);
    bool fraction = r->member.milli_gpu > 0 && r->member.milli_gpu < 1000;
    if (fraction && !env_get(e, "TESSEL_CUDA_CORE_MODE"))
        rc |= env_set(e, "TESSEL_CUDA_CORE_MODE", "shared");
    /* Priority is the class's: inference goes first.  A job may lower its own priority
     * ("low", or "normal" for inference) but never raise it: a training job that asks for
     * "high" (or anything else) runs at "normal". */
    const char *prio = env_get(e, "TESSEL_CUDA_CORE_PRIORITY");
    if (j->klass == TSTORE_CLASS_INFERENCE) {
        if (!prio || (strcmp(prio, "low") != 0 && strcmp(prio, "normal") != 0))
            rc |= env_set(e, "TESSEL_CUDA_CORE_PRIORITY", "high");
    } else if (prio && strcmp(prio, "low") != 0) {
        rc |= env_set(e, "TESSEL_CUDA_CORE_PRIORITY", "normal");
    }
    return rc;
}

static int build_env(tessd_t *d, const tstore_job_t *j, const tessd_run_t *r, const tessd_pw_t *pw,
                     const char *dir, envv_t *e)
{
    static const char *const inherit[] = {"PATH",         "LANG",          "LC_ALL",       "TZ",
                                          "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", NULL};
    int rc = 0;
    for (const char *const *k = inherit; *k; k++) {
        const char *v = getenv(*k);
        if (v)
            rc |= env_set(e, *k, v);
    }
    if (!getenv("PATH"))
        rc |= env_set(e, "PATH", "/usr/local/bin:/usr/bin:/bin");
    json_t *env = json_loads(j->env_json, 0, NULL);
    const char *key;
    json_t *val;
    json_object_foreach(env, key, val)
    {
        rc |= env_set(e, key, json_string_value(val));
    }
    /* The account's own, over the submitter's copy (`tessel run` sends its environment). */
    if (pw) {
        rc |= env_set(e, "HOME", pw->dir);
        rc |= env_set(e, "USER", pw->name);
        rc |= env_set(e, "LOGNAME", pw->name);
        rc |= env_set(e, "SHELL", *pw->shell ? pw->shell : "/bin/sh");
    }
    char buf[PATH_MAX * 2], num[64];
    /* CUDA_VISIBLE_DEVICES: the placed GPUs' indexes as NVML and the driver number them. */
    buf[0] = '\0';
    for (uint32_t i = 0; i < r->member.ngpus; i++) {
        snprintf(num, sizeof num, "%s%u", i ? "," : "", (unsigned)r->member.gpu[i]);
        strcat(buf, num);
    }
    rc |= env_set(e, "CUDA_VISIBLE_DEVICES", buf);
    snprintf(num, sizeof num, "%lld", (long long)j->id);
    rc |= env_set(e, "TESSEL_JOB_ID", num);
    char arr[TESSD_ARRAY_ENV][64]; /* TESSEL_ARRAY_* (batch.h) */
    int na = tessd_array_env(d, j, arr, NULL);
    rc |= na < 0 ? -1 : 0;
    for (int k = 0; k < na; k++) {
        char *eq = strchr(arr[k], '=');
        *eq = '\0';
        rc |= env_set(e, arr[k], eq + 1);
    }
    snprintf(buf, sizeof buf, "%s/slice", dir);
    rc |= env_set(e, "TESSEL_SLICE", buf);
    if (r->member.ngpus) {
        snprintf(num, sizeof num, "%llu", (unsigned long long)r->member.gpu_mem_bytes);
        rc |= env_set(e, "TESSEL_CUDA_MEM_LIMIT", num);
        for (uint32_t i = 0; i < r->member.ngpus; i++) {
            char k[48];
            snprintf(k, sizeof k, "TESSEL_CUDA_MEM_LIMIT_%u", (unsigned)i);
            rc |= env_set(e, k, num);
        }
        /* Oversubscription (docs/interposer.md): tesseld's figure, 0 when the job asked none,
         * so that a value of the job's own env is no way to spill. */
        snprintf(num, sizeof num, "%llu", (unsigned long long)j->gpu_oversub);
        rc |= env_set(e, "TESSEL_CUDA_MEM_OVERSUBSCRIBE", num);
        rc |= compute_env(j, r, e);
    }
    /* LD_PRELOAD is handed to the shim apart (tagent_spawn_t.preload): see preload_of. */
    if (d->fake_spec[0]) {
        rc |= env_set(e, "TESSEL_FAKE_GPUS", d->fake_spec);
        const char *user = env_get(e, "LD_LIBRARY_PATH");
        if (!user)
            user = getenv("LD_LIBRARY_PATH");
        snprintf(buf, sizeof buf, "%s%s%s", d->fake_lib_dir, user && *user ? ":" : "",
                 user ? user : "");
        rc |= env_set(e, "LD_LIBRARY_PATH", buf);
    }
    json_decref(env);
    return rc ? -1 : 0;
}

/* tessd_job_dir_prepare (daemon.h): a directory that is there already is another job's unless
 * the job was preempted before and the directory is its account's. */
int tessd_job_dir_prepare(tessd_t *d, const tstore_job_t *j, bool chown_it, uid_t uid, gid_t gid,
                          tsl_error_t *err)
{
    char dir[PATH_MAX], name[24];
    tessd_job_dir(d, j->id, dir, sizeof dir);
    snprintf(name, sizeof name, "%lld", (long long)j->id);
    uid_t owner = chown_it ? uid : geteuid();
    for (int attempt = 0; attempt < 2; attempt++) {
        bool made = mkdir(dir, 0700) == 0;
        if (!made && errno != EEXIST)
            return tsl_errprintf(err, "%s: %s", dir, strerror(errno));
        int fd = tsl_open_nomount(d->jobs_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            errno = e;
            return tsl_errprintf(err, "%s: %s", dir,
                                 e == EXDEV ? "a file system is mounted on it: not used"
                                            : strerror(e));
        }
        if (made || (j->preemptions > 0 && st.st_uid == owner)) {
            int rc = chown_it && fchown(fd, uid, gid) < 0 ? -1 : 0;
            int e = errno;
            close(fd);
            if (rc < 0) {
                errno = e;
                return tsl_errprintf(err, "chown %s: %s", dir, strerror(e));
            }
            return 0;
        }
        /* Another job's: taken from its user first (who can then neither change it nor mount
         * anything over it), then moved aside (a mount point there is EBUSY, never entered). */
        char stale[64];
        snprintf(stale, sizeof stale, ".stale-%lld-%lld", (long long)j->id, (long long)time(NULL));
        int jfd = open(d->jobs_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        int rc = jfd < 0 || fchown(fd, geteuid(), getegid()) < 0 || fchmod(fd, 0700) < 0 ||
                         renameat2(jfd, name, jfd, stale, RENAME_NOREPLACE) < 0
                     ? -1
                     : 0;
        int e = errno;
        close(fd);
        if (jfd >= 0)
            close(jfd);
        if (rc < 0) {
            errno = e;
            return tsl_errprintf(err,
                                 "%s is another job's (owner uid %u) and cannot be moved "
                                 "aside: %s",
                                 dir, (unsigned)st.st_uid, strerror(e));
        }
        tessd_log("job %lld: %s was there already and is not this job's (owner uid %u, the job "
                  "was never preempted; a store restored from an older backup?): moved aside "
                  "to %s/%s (tesseld's, 0700)",
                  (long long)j->id, dir, (unsigned)st.st_uid, d->jobs_dir, stale);
    }
    errno = EEXIST;
    return tsl_errprintf(err, "%s: made again meanwhile", dir);
}

int tessd_launch(tessd_t *d, const tstore_job_t *j, tessd_run_t *r, tsl_error_t *err)
{
    char dir[PATH_MAX];
    tessd_job_dir(d, j->id, dir, sizeof dir);
    /* As root, the job runs as its submitter when that name is a system account (not uid 0);
     * otherwise as tesseld's own user: when tesseld is not root, or for an admin's job, or
     * with --allow-root-jobs; else it is refused (tessd_job_refused). */
    tessd_pw_t pwbuf, *pw = NULL;
    bool as_user = false;
    if (geteuid() == 0 && tessd_getpwnam(j->user, &pwbuf) == 1 && pwbuf.uid != 0) {
        as_user = true;
        pw = &pwbuf;
    }
    if (!as_user && geteuid() == 0 && !d->allow_root_jobs) {
        /* Checked at submission already; checked again here because the account may have gone
         * since, or the job was submitted to a tesseld started with --allow-root-jobs. */
        tstore_user_t u;
        tsl_error_t uerr;
        bool admin =
            tstore_user_get(d->store, j->user, &u, &uerr) == 0 && strcmp(u.role, "admin") == 0;
        char why[256];
        if (tessd_job_refused(d, j->user, admin, why, sizeof why)) {
            errno = EPERM;
            return tsl_errprintf(err, "%s", why);
        }
    }
    if (tessd_job_dir_prepare(d, j, as_user, as_user ? pw->uid : 0, as_user ? pw->gid : 0, err) < 0)
        return -1;
    if (!as_user)
        pw = tessd_getpwuid(geteuid(), &pwbuf) == 1 ? &pwbuf : NULL;
    tessd_test_kill_point(d, "dir");
    char cg[160];
    tessd_cgroup_name(d, j->id, cg, sizeof cg);
    if (tagent_cgroup_create(d->cg_mode, d->cg_root, cg, j->cpu_milli, j->mem, err) < 0)
        return -1;
    tessd_test_kill_point(d, "cgroup");
    char procs[TAGENT_MAX_CGROUPS][4096];
    int nprocs = tagent_cgroup_procs_paths(d->cg_mode, d->cg_root, cg, procs, TAGENT_MAX_CGROUPS);

    envv_t env = {0};
    char *preload = NULL;
    json_t *argv_j = json_loads(j->argv_json, 0, NULL);
    size_t n = json_array_size(argv_j);
    char **argv = calloc(n + 4, sizeof *argv);
    int rc = -1;
    /* Held from before the spawn until the shim ends (the shim keeps it): a tesseld killed
     * between the spawn and the store's record of the shim's pid finds at its restart that a
     * shim lives; one killed before the spawn finds the lock free and requeues the job. */
    int lock = start_lock_take(d, j->id, err);
    if (lock < 0)
        goto out;
    if (!argv || build_env(d, j, r, pw, dir, &env) < 0) {
        tsl_errprintf(err, "out of memory");
        goto out;
    }
    size_t k = 0;
    if (j->shell) {
        argv[k++] = (char *)"/bin/sh";
        argv[k++] = (char *)"-c";
    }
    for (size_t i = 0; i < n; i++)
        argv[k++] = (char *)json_string_value(json_array_get(argv_j, i));
    argv[k] = NULL;
    preload = preload_of(d, &env);
    char state[PATH_MAX] = "", limits[TAGENT_MAX_GPUS * 32 + 1] = "", plist[PATH_MAX] = "";
    if (d->run_dir[0] && write_state(d, r, env.v, state, sizeof state, err) < 0)
        goto out;
    if (state[0] && tessd_preload_list(d, plist, sizeof plist, err) < 0)
        goto out;
    for (uint32_t i = 0; i < r->member.ngpus; i++) {
        size_t l = strlen(limits);
        snprintf(limits + l, sizeof limits - l, "%s%u=%llu", i ? "," : "",
                 (unsigned)r->member.gpu[i], (unsigned long long)r->member.gpu_mem_bytes);
    }
    /* The fake NVML (a test double) is configured by environment: the shim's watchdog gets the
     * fake's GPUs (tesseld's own) and the job's shared fake state, if any. */
    char fake_gpus[300];
    const char *nvml_env[TAGENT_NVML_ENV_MAX + 1] = {0};
    if (d->fake_spec[0]) {
        int nk = 0;
        snprintf(fake_gpus, sizeof fake_gpus, "TESSEL_FAKE_GPUS=%s", d->fake_spec);
        nvml_env[nk++] = fake_gpus;
        static const char *const fake_keys[] = {"TESSEL_FAKE_STATE", "TESSEL_FAKE_GPU_UUIDS",
                                                "TESSEL_FAKE_CTX_MEM"};
        for (size_t f = 0; f < sizeof fake_keys / sizeof *fake_keys; f++) {
            const char *v = env_get(&env, fake_keys[f]);
            if (v)
                nvml_env[nk++] = v - strlen(fake_keys[f]) - 1; /* the "K=V" string itself */
        }
    }
    /* --test-start-files: the records in files beside the lock, as tesseld made them up to
     * 7fa4294 (a later tesseld must adopt such a job: t3169). */
    char exit_rec[PATH_MAX] = "", pid_rec[PATH_MAX] = "";
    if (d->test_start_files && (tessd_exit_record_path(d, j->id, exit_rec, sizeof exit_rec) < 0 ||
                                tessd_pid_record_path(d, j->id, pid_rec, sizeof pid_rec) < 0)) {
        tsl_errprintf(err, "%s/starts: %s", d->data_dir, strerror(errno));
        goto out;
    }
    tessd_container_t ctr;
    if (j->image) {
        if (!state[0]) {
            errno = EPERM;
            tsl_errprintf(err, "container jobs need tesseld running as root");
            goto out;
        }
        if (tessd_container_prepare(d, j, r, pw, argv, env.v, preload, dir, state, &ctr, err) < 0)
            goto out;
    }
    /* Its virtual folders (docs/folders.md): checked at submission; mounted by the shim in the
     * job's namespace, where the folders' ACLs still decide (a share removed since: the mount
     * is there, its files are not readable). */
    json_t *folders_j = j->folders_json ? json_loads(j->folders_json, 0, NULL) : NULL;
    if (j->folders_json && (!state[0] || !json_is_array(folders_j) ||
                            json_array_size(folders_j) > TAGENT_FOLDERS_MAX)) {
        json_decref(folders_j);
        errno = EPERM;
        tsl_errprintf(err, "its folders cannot be mounted (they need tesseld as root)");
        goto out;
    }
    /* A service's replica (docs/serving.md, "How a replica is reached"): in a network namespace
     * of its own, reached through its Unix socket only.  Looked up in the store, never taken
     * from the job's environment (any job may set PORT). */
    int rport = 0;
    char rsock[TSV_SOCK_MAX] = "";
    gid_t rgid = 0;
    if (j->klass == TSTORE_CLASS_INFERENCE && !j->image) {
        int rn = tessd_serve_replica_net(d, j->id, &rport, rsock, sizeof rsock, &rgid, err);
        if (rn < 0) {
            json_decref(folders_j);
            goto out;
        }
        if (rn == 1 && !state[0]) {
            json_decref(folders_j);
            errno = EPERM;
            tsl_errprintf(err, "a service's replica needs its namespace (tesseld as root)");
            goto out;
        }
        if (rn == 0)
            rsock[0] = '\0';
    }
    tagent_spawn_t sp = {
        .lock_records = !d->test_start_files, /* both records in the start lock (runner.h) */
        .exit_file = exit_rec[0] ? exit_rec : NULL,
        .pid_file = pid_rec[0] ? pid_rec : NULL,
        .state = state[0] ? state : NULL,
        .preload_list = plist[0] ? plist : NULL,
        .container = j->image ? ctr.runtime : NULL,
        .image_rootfs = j->image ? ctr.rootfs : NULL,
        .ctr_cwd_flags = j->image ? ctr.cwd_flags : 0,
        .tty = j->tty && state[0],
        .block_userns = !d->allow_userns,
        .nvml = state[0] && d->nvml_path[0] ? d->nvml_path : NULL,
        .gpu_mem_limits = limits,
        .gpu_mem_violation = d->gpu_mem_suspend ? "suspend" : "kill",
        .preload = j->image ? NULL : preload, /* a container's is in its config.json */
        .shim = d->shim,
        .dir = dir,
        .cwd = j->cwd ? j->cwd : dir,
        .argv = argv,
        .envp = env.v,
        .ncgroups = nprocs,
        .set_user = as_user,
        .user = as_user ? pw->name : NULL,
        .uid = as_user ? pw->uid : 0,
        .gid = as_user ? pw->gid : 0,
        .lock_fd = lock,
        .log_limit = d->log_limit,
    };
    for (int i = 0; i < nprocs; i++)
        sp.cgroup_procs[i] = procs[i];
    memcpy(sp.nvml_env, nvml_env, sizeof sp.nvml_env);
    for (size_t fi = 0; folders_j && fi < json_array_size(folders_j); fi++) {
        const char *f = json_string_value(json_array_get(folders_j, fi));
        if (f)
            sp.folders[sp.nfolders++] = f;
    }
    sp.folder_root = sp.nfolders ? d->folder_root : NULL;
    if (rsock[0]) {
        sp.serve_port = rport;
        sp.serve_sock = rsock;
        sp.serve_gid = rgid;
    }
    /* Its web services (docs/job-services.md): checked at submission; each a socket in
     * <data>/jobsvc that the shim binds and serves, in the job's own network namespace. */
    char svc_sock[TSD_SVC_MAX][108];
    json_t *svc_j = j->services_json ? json_loads(j->services_json, 0, NULL) : NULL;
    if (j->services_json && (!state[0] || j->image || rsock[0] || !json_is_array(svc_j) ||
                             json_array_size(svc_j) > TSD_SVC_MAX)) {
        json_decref(svc_j);
        json_decref(folders_j);
        errno = EPERM;
        tsl_errprintf(err, "its web services need tesseld as root and a process job");
        goto out;
    }
    for (size_t si = 0; svc_j && si < json_array_size(svc_j); si++) {
        json_t *o = json_array_get(svc_j, si);
        const char *name = json_string_value(json_object_get(o, "name"));
        if (!name ||
            tsd_svc_sock(d->data_dir, j->id, name, svc_sock[si], sizeof svc_sock[si]) < 0) {
            json_decref(svc_j);
            json_decref(folders_j);
            tsl_errprintf(err,
                          "service %s: its socket %s/" TSD_SVC_DIR "/j%lld-%s.sock is longer than "
                          "a Unix socket's path may be (107 bytes): a shorter --data-dir",
                          name ? name : "?", d->data_dir, (long long)j->id, name ? name : "?");
            errno = ENAMETOOLONG;
            goto out;
        }
        sp.svc_port[sp.nsvc] = (int)json_integer_value(json_object_get(o, "port"));
        sp.svc_sock[sp.nsvc++] = svc_sock[si];
    }
    pid_t pid = tagent_spawn(&sp, err);
    json_decref(svc_j);
    json_decref(folders_j);
    if (pid < 0)
        goto out;
    /* The shim holds the lock now; ours goes. */
    close(lock);
    lock = -1;
    tessd_test_kill_point(d, "spawned");
    r->shim_pid = pid;
    r->shim_start = tagent_proc_start_time(pid);
    tjm_change_t chg = {.shim_pid = pid, .shim_start = r->shim_start};
    if (tessd_job_apply(d, j->id, TJM_EV_SPAWNED, &chg, "tesseld", NULL, err) < 0)
        tessd_log("job %lld: %s", (long long)j->id, err->text);
    tessd_test_kill_point(d, "recorded");
    tessd_log("job %lld started (user %s, shim pid %d, GPUs [%s])", (long long)j->id, j->user,
              (int)pid, env_get(&env, "CUDA_VISIBLE_DEVICES"));
    rc = 0;
out:
    if (lock >= 0)
        close(lock);
    if (rc < 0) {
        tagent_cgroup_remove(d->cg_mode, d->cg_root, cg);
        tessd_state_remove(d, j->id);
    }
    free(preload);
    env_free(&env);
    free(argv);
    json_decref(argv_j);
    return rc;
}
