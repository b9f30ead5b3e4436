/* test_launch.c - launch.c's helpers that decide and name things before a job starts, without a
 * daemon: the --test-kill-at steps; the job's directory, cgroup and state directory names; which
 * users' jobs are refused as root (root's account, an unknown account, --allow-root-jobs, an
 * admin); whether a job may enter its cwd (checked with the account's own ids, one answer for
 * missing / not a directory / no permission), and its bounded wait (tessd_child_wait; a cwd below
 * a FUSE mount that never answers is refused after 2 s, its child reaped); the start locks (held,
 * free, removed, a foreign directory refused); the GPU-memory watchdog's violation record (read,
 * malformed, absent). Runs as root (as tesseld does) where the account's ids matter: not root is a
 * failure. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/batch.h"
#include "daemon/daemon.h"
#include "daemon/serve_run.h"
#include "daemon/test/tmpdir.h"

/* --- doubles of main.c and tick.c --------------------------------------------------------- */

static int g_logged;

void tessd_log(const char *fmt, ...)
{
    g_logged++;
}

int tessd_pathf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

tessd_run_t *tessd_run_find(tessd_t *d, int64_t id)
{
    return NULL;
}

/* batch_store.c: the array variables of a job; the jobs here are in no array. */
int tessd_array_env(tessd_t *d, const tstore_job_t *j, char out[TESSD_ARRAY_ENV][64],
                    tsl_error_t *err)
{
    assert_int_equal(j->array_id, 0);
    return 0;
}

/* serve_run.c: whether a job is a service's replica; none of the jobs here is. */
int tessd_serve_replica_net(tessd_t *d, int64_t job, int *port, char *sock, size_t len, gid_t *gid,
                            tsl_error_t *err)
{
    return 0;
}

/* tick.c's door to the job model: the launch steps tested here never reach a state change,
 * so a call is counted and must not happen. */
static int g_applied;

int tessd_job_apply(tessd_t *d, int64_t id, tjm_event_t ev, const tjm_change_t *chg,
                    const char *who, const char *why, tsl_error_t *err)
{
    g_applied++;
    return 0;
}

/* --- fixture: a daemon whose data directory is a fresh temporary one ---------------------- */

typedef struct {
    tessd_t d;
    char dir[64];
} fix_t;

static int setup(void **state)
{
    fix_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    if (test_tmpdir(f->dir, sizeof f->dir, "launch") < 0)
        return -1;
    snprintf(f->d.data_dir, sizeof f->d.data_dir, "%s", f->dir);
    snprintf(f->d.jobs_dir, sizeof f->d.jobs_dir, "%s/jobs", f->dir);
    snprintf(f->d.run_dir, sizeof f->d.run_dir, "%s/run", f->dir);
    snprintf(f->d.cg_base, sizeof f->d.cg_base, "tessel/abc123");
    g_logged = 0;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fix_t *f = *state;
    int rc = test_tmpdir_remove(f->dir);
    free(f);
    if (g_applied != 0) /* a launch step changed a job's state behind the test's back */
        return -1;
    return rc;
}

static void need_root(void)
{
    if (geteuid() != 0)
        fail_msg("must run as root (tesseld's checks take the job's account's ids)");
}

/* --- names -------------------------------------------------------------------------------- */

static void test_kill_steps(void **state)
{
    static const char *const ok[] = {"running", "dir", "cgroup", "spawned", "recorded"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        assert_true(tessd_test_kill_step_valid(ok[i]));
    static const char *const bad[] = {"", "Running", "run", "recorded ", "nowhere"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(tessd_test_kill_step_valid(bad[i]));
}

static void test_names(void **state)
{
    fix_t *f = *state;
    char buf[PATH_MAX], want[PATH_MAX];
    tessd_job_dir(&f->d, 42, buf, sizeof buf);
    snprintf(want, sizeof want, "%s/jobs/42", f->dir);
    assert_string_equal(buf, want);
    tessd_cgroup_name(&f->d, 42, buf, sizeof buf);
    assert_string_equal(buf, "tessel/abc123/job-42");
    tessd_state_dir(&f->d, 9000000000LL, buf, sizeof buf);
    snprintf(want, sizeof want, "%s/run/9000000000", f->dir);
    assert_string_equal(buf, want);
    /* Not root: no state directory. */
    f->d.run_dir[0] = '\0';
    strcpy(buf, "x");
    tessd_state_dir(&f->d, 42, buf, sizeof buf);
    assert_string_equal(buf, "");
}

/* --- whose jobs run ----------------------------------------------------------------------- */

static void test_job_refused(void **state)
{
    fix_t *f = *state;
    need_root();
    char why[512] = "";
    assert_false(tessd_job_refused(&f->d, "nobody", false, why, sizeof why));
    /* An account that is uid 0: refused, and told how to allow it. */
    assert_true(tessd_job_refused(&f->d, "root", false, why, sizeof why));
    assert_string_equal(why, "refused: system account 'root' is uid 0 and tesseld runs no "
                             "non-admin's job as root; ask an admin to start tesseld with "
                             "--allow-root-jobs");
    assert_true(tessd_job_refused(&f->d, "no-such-account-t", false, why, sizeof why));
    assert_string_equal(why, "refused: no system account 'no-such-account-t' on this machine; "
                             "ask an admin to create one or start tesseld with --allow-root-jobs");
    /* An admin's job, or --allow-root-jobs: not refused. */
    assert_false(tessd_job_refused(&f->d, "root", true, why, sizeof why));
    f->d.allow_root_jobs = true;
    assert_false(tessd_job_refused(&f->d, "root", false, why, sizeof why));
    assert_false(tessd_job_refused(&f->d, "no-such-account-t", false, why, sizeof why));
}

static void test_cwd_check(void **state)
{
    fix_t *f = *state;
    need_root();
    char why[512] = "", priv[128], open_dir[128], file[128];
    snprintf(priv, sizeof priv, "%s/private", f->dir);
    snprintf(open_dir, sizeof open_dir, "%s/open", f->dir);
    snprintf(file, sizeof file, "%s/file", f->dir);
    assert_int_equal(mkdir(priv, 0700), 0);
    assert_int_equal(mkdir(open_dir, 0755), 0);
    assert_int_equal(chmod(f->dir, 0755), 0); /* mkdtemp's 0700 would hide both */
    int fd = open(file, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    close(fd);

    /* nobody: with its own ids. */
    assert_int_equal(tessd_cwd_check(&f->d, "nobody", open_dir, why, sizeof why), 0);
    assert_int_equal(tessd_cwd_check(&f->d, "nobody", "/", why, sizeof why), 0);
    const char *const no[] = {priv, file, "/no/such/dir"};
    for (size_t i = 0; i < 3; i++) {
        char want[512];
        snprintf(want, sizeof want, "cwd '%s' is not a directory user 'nobody' can enter", no[i]);
        why[0] = '\0';
        assert_int_equal(tessd_cwd_check(&f->d, "nobody", no[i], why, sizeof why), -1);
        assert_string_equal(why, want); /* one answer: no telling which */
    }
    /* root's account: the job runs as tesseld's user, which enters the private directory. */
    assert_int_equal(tessd_cwd_check(&f->d, "root", priv, why, sizeof why), 0);
    assert_int_equal(tessd_cwd_check(&f->d, "root", file, why, sizeof why), -1);
    char want[512];
    snprintf(want, sizeof want, "cwd '%s' is not a directory the job can enter", file);
    assert_string_equal(why, want);
}

/* The bounded wait: a child that ends is reaped with its status; one that does not is left
 * running at the deadline (0), and reaped once killed; a child made with no exit signal (as
 * the cwd checker is) is reaped by it but not by waitpid(-1) (the tick's); no child: ECHILD. */
static int exit_4(void *arg)
{
    _exit(4);
}

static void test_child_wait(void **state)
{
    int st = 0;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(3);
    assert_int_equal(tessd_child_wait(pid, 10000, &st), 1);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 3);

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pause();
        _exit(0);
    }
    assert_int_equal(tessd_child_wait(pid, 100, &st), 0); /* still there after 0.1 s */
    assert_int_equal(kill(pid, 0), 0);
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(tessd_child_wait(pid, 10000, &st), 1);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

    static char stack[16384];
    pid = clone(exit_4, stack + sizeof stack, 0, NULL);
    assert_true(pid > 0);
    /* Once it is a zombie, waitpid(-1) still does not see it. */
    char statf[64], line[256] = "";
    snprintf(statf, sizeof statf, "/proc/%d/stat", (int)pid);
    for (int i = 0; i < 10000; i++) {
        FILE *fp = fopen(statf, "r");
        assert_non_null(fp);
        assert_non_null(fgets(line, sizeof line, fp));
        fclose(fp);
        if (strstr(line, ") Z "))
            break;
        usleep(1000);
    }
    assert_non_null(strstr(line, ") Z "));
    assert_int_equal(waitpid(-1, &st, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    assert_int_equal(tessd_child_wait(pid, 10000, &st), 1);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 4);

    assert_int_equal(tessd_child_wait(1, 10, &st), -1);
    assert_int_equal(errno, ECHILD);
}

/* A cwd on a file system that never answers: a FUSE mount (made here as root, as fusermount3
 * makes one for any user where fuse3 is installed) whose server never reads /dev/fuse, so that
 * any lookup below its root waits for ever.  The check answers (refused, with the reason)
 * after TESSD_CWD_TIMEOUT_MS, its child killed and reaped; the same account's next check of a
 * good path is answered as before. */
static void test_cwd_stalled(void **state)
{
    fix_t *f = *state;
    need_root();
    char mnt[128], below[160], why[512] = "";
    snprintf(mnt, sizeof mnt, "%s/fuse", f->dir);
    snprintf(below, sizeof below, "%s/sub", mnt);
    assert_int_equal(chmod(f->dir, 0755), 0);
    assert_int_equal(mkdir(mnt, 0755), 0);
    int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        fail_msg("/dev/fuse: %s (the FUSE module is needed for this test)", strerror(errno));
    char opts[128];
    snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
    if (mount("tessel-test", mnt, "fuse", MS_NOSUID | MS_NODEV, opts) < 0)
        fail_msg("mount fuse on %s: %s", mnt, strerror(errno));
    g_logged = 0;
    int rc = tessd_cwd_check(&f->d, "nobody", below, why, sizeof why);
    char want[512];
    snprintf(want, sizeof want,
             "cwd '%s' did not answer within 2 s when user 'nobody' tried to enter it (a file "
             "system that does not answer cannot be a job's cwd)",
             below);
    close(fd); /* the connection aborts: anything still waiting on it fails */
    umount2(mnt, MNT_DETACH);
    assert_int_equal(rc, -1);
    assert_string_equal(why, want);
    assert_int_equal(g_logged, 0); /* the child ended at its SIGKILL: none left behind */
    int st;
    assert_int_equal(waitpid(-1, &st, WNOHANG | __WALL), -1); /* and it was reaped */
    assert_int_equal(errno, ECHILD);
    assert_int_equal(tessd_cwd_check(&f->d, "nobody", "/", why, sizeof why), 0);
}

/* --- the job's directory ------------------------------------------------------------------ */

static void put_file(const char *dir, const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The one entry of jobs/ named .stale-<id>-*, into out ("" when none). */
static void find_stale(const char *jobs, int64_t id, char *out, size_t len)
{
    char pat[32], cmd[256];
    snprintf(pat, sizeof pat, ".stale-%lld-", (long long)id);
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c '^%s'", jobs, pat);
    FILE *p = popen(cmd, "r");
    int n = 0;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    out[0] = '\0';
    if (n == 0)
        return;
    assert_int_equal(n, 1);
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep '^%s'", jobs, pat);
    p = popen(cmd, "r");
    char name[64] = "";
    assert_int_equal(fscanf(p, "%63s", name), 1);
    pclose(p);
    snprintf(out, len, "%s/%s", jobs, name);
}

/* A job's directory is made for it, and given to its account; one that is there already is
 * reused only by a job that was preempted before, when it is that account's; any other (a
 * directory of another job of the same id, after the store was restored from an older backup)
 * is taken from its user (root's, 0700) and moved aside whole, and the job gets a new one. */
static void test_job_dir(void **state)
{
    fix_t *f = *state;
    need_root();
    struct passwd *pw = getpwnam("nobody");
    assert_non_null(pw);
    uid_t nb = pw->pw_uid, other = nb - 1;
    gid_t ng = pw->pw_gid;
    assert_int_equal(mkdir(f->d.jobs_dir, 0711), 0);
    char dir[160], p[256], stale[192];
    tessd_job_dir(&f->d, 7, dir, sizeof dir);
    tstore_job_t j = {.id = 7};
    tsl_error_t err;
    struct stat st;

    /* None there: made, 0700, the account's. */
    assert_int_equal(tessd_job_dir_prepare(&f->d, &j, true, nb, ng, &err), 0);
    assert_int_equal(lstat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode) && st.st_uid == nb && (st.st_mode & 07777) == 0700);
    put_file(dir, "stdout", "first attempt\n");

    /* The same job after a preemption: its own directory goes on (the logs are appended to). */
    j.preemptions = 1;
    assert_int_equal(tessd_job_dir_prepare(&f->d, &j, true, nb, ng, &err), 0);
    snprintf(p, sizeof p, "%s/stdout", dir);
    assert_int_equal(access(p, F_OK), 0);
    find_stale(f->d.jobs_dir, 7, stale, sizeof stale);
    assert_string_equal(stale, "");

    /* Another account's directory (the job of that id before a restore): moved aside even for
     * a job that was preempted (its first attempt would have moved it). */
    assert_int_equal(chown(dir, other, ng), 0);
    g_logged = 0;
    assert_int_equal(tessd_job_dir_prepare(&f->d, &j, true, nb, ng, &err), 0);
    assert_int_equal(g_logged, 1); /* said, for the admin */
    find_stale(f->d.jobs_dir, 7, stale, sizeof stale);
    assert_string_not_equal(stale, "");
    assert_int_equal(lstat(stale, &st), 0);
    assert_true(S_ISDIR(st.st_mode) && st.st_uid == 0 && st.st_gid == 0 &&
                (st.st_mode & 07777) == 0700);
    snprintf(p, sizeof p, "%s/stdout", stale);
    assert_int_equal(access(p, F_OK), 0); /* kept whole, for the admin */
    snprintf(p, sizeof p, "%s/stdout", dir);
    assert_int_equal(access(p, F_OK), -1); /* the job's new one is empty */
    assert_int_equal(lstat(dir, &st), 0);
    assert_true(st.st_uid == nb && (st.st_mode & 07777) == 0700);
    snprintf(p, sizeof p, "rm -rf '%s'", stale);
    assert_int_equal(system(p), 0);

    /* Even the same account's, for a job never preempted: another job's of that id. */
    put_file(dir, "secret", "the earlier job's\n");
    j.preemptions = 0;
    assert_int_equal(tessd_job_dir_prepare(&f->d, &j, true, nb, ng, &err), 0);
    find_stale(f->d.jobs_dir, 7, stale, sizeof stale);
    assert_string_not_equal(stale, "");
    snprintf(p, sizeof p, "%s/secret", dir);
    assert_int_equal(access(p, F_OK), -1);
    snprintf(p, sizeof p, "%s/secret", stale);
    assert_int_equal(access(p, F_OK), 0);
    snprintf(p, sizeof p, "rm -rf '%s'", stale);
    assert_int_equal(system(p), 0);

    /* A job run as tesseld's own user (chown_it false) reuses its directory the same way. */
    tstore_job_t k = {.id = 8, .preemptions = 1};
    assert_int_equal(tessd_job_dir_prepare(&f->d, &k, false, 0, 0, &err), 0);
    tessd_job_dir(&f->d, 8, p, sizeof p);
    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_uid, 0);
    put_file(p, "stdout", "x\n");
    assert_int_equal(tessd_job_dir_prepare(&f->d, &k, false, 0, 0, &err), 0);
    find_stale(f->d.jobs_dir, 8, stale, sizeof stale);
    assert_string_equal(stale, "");
}

static void prepare_exdev(fix_t *f)
{
    tstore_job_t j = {.id = 9, .preemptions = 1};
    tsl_error_t err;
    errno = 0;
    int rc = tessd_job_dir_prepare(&f->d, &j, true, 65534, 65534, &err);
    _exit(rc == -1 && errno == EXDEV && strstr(err.text, "a file system is mounted on it") ? 0 : 1);
}

/* A file system mounted over the job's directory (its user's, a FUSE server that never
 * answers): refused at once with the reason, never entered (in a child, waited for 10 s at most:
 * "did not hang" is what is asserted). */
static void test_job_dir_mounted(void **state)
{
    fix_t *f = *state;
    need_root();
    assert_int_equal(mkdir(f->d.jobs_dir, 0711), 0);
    char dir[160];
    tessd_job_dir(&f->d, 9, dir, sizeof dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        fail_msg("/dev/fuse: %s (the FUSE module is needed for this test)", strerror(errno));
    char opts[128];
    snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
    if (mount("tessel-test", dir, "fuse", MS_NOSUID | MS_NODEV, opts) < 0)
        fail_msg("mount fuse on %s: %s", dir, strerror(errno));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        prepare_exdev(f);
    int st, w = tessd_child_wait(pid, 10000, &st);
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    close(fd);
    umount2(dir, MNT_DETACH);
    assert_int_equal(w, 1); /* it answered */
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* --- start locks -------------------------------------------------------------------------- */

static void test_start_lock(void **state)
{
    fix_t *f = *state;
    char starts[128], lock[160];
    snprintf(starts, sizeof starts, "%s/starts", f->dir);
    snprintf(lock, sizeof lock, "%s/7.lock", starts);
    /* No directory, no lock file: not held. */
    assert_int_equal(tessd_start_lock_held(&f->d, 7), 0);
    assert_int_equal(mkdir(starts, 0700), 0);
    assert_int_equal(tessd_start_lock_held(&f->d, 7), 0);
    /* A shim holds it (here: a descriptor of ours, as a child would inherit it). */
    int fd = open(lock, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    assert_int_equal(tessd_start_lock_held(&f->d, 7), 1);
    assert_int_equal(tessd_start_lock_held(&f->d, 8), 0);
    close(fd);
    /* Released: the file is there but nobody holds it. */
    assert_int_equal(tessd_start_lock_held(&f->d, 7), 0);
    /* An empty lock file is an earlier tesseld's, whose shim wrote jobs/<id>/exit (an upgrade
     * with the job running); one this tesseld takes says so (launch.c, START_LOCK_MARK). */
    assert_true(tessd_start_lock_legacy(&f->d, 7));
    assert_false(tessd_start_lock_legacy(&f->d, 8)); /* none: not an earlier tesseld's */
    assert_false(tessd_start_lock_pid_record(&f->d, 7));
    assert_int_equal(write(fd = open(lock, O_WRONLY), "exit record: <id>.exit\n", 23), 23);
    close(fd);
    assert_false(tessd_start_lock_legacy(&f->d, 7));
    /* A tesseld from before the pid record: its shim wrote jobs/<id>/pid alone (tick.c takes it
     * under strict checks); one this tesseld takes says the shim writes <id>.pid. */
    assert_false(tessd_start_lock_pid_record(&f->d, 7));
    assert_false(tessd_start_lock_pid_record(&f->d, 8));
    assert_int_equal(write(fd = open(lock, O_WRONLY | O_APPEND), "pid record: <id>.pid\n", 21), 21);
    close(fd);
    assert_true(tessd_start_lock_pid_record(&f->d, 7));
    assert_false(tessd_start_lock_legacy(&f->d, 7));
    assert_int_equal(tessd_start_lock_kind(&f->d, 7), TESSD_LOCK_FILES);
    assert_int_equal(tessd_start_lock_kind(&f->d, 8), TESSD_LOCK_NONE);
    /* One this tesseld takes (from 2026-11-28) holds both records itself (runner.h). */
    assert_int_equal(truncate(lock, 0), 0);
    assert_int_equal(tessd_start_lock_kind(&f->d, 7), TESSD_LOCK_EMPTY);
    fd = open(lock, O_WRONLY);
    size_t hl = strlen(TAGENT_LOCK_HEADER);
    assert_int_equal(pwrite(fd, TAGENT_LOCK_HEADER, hl, 0), (ssize_t)hl);
    assert_int_equal(tessd_start_lock_kind(&f->d, 7), TESSD_LOCK_RECORDS);
    assert_true(tessd_start_lock_pid_record(&f->d, 7));
    assert_false(tessd_start_lock_legacy(&f->d, 7));
    tagent_exit_t ex;
    pid_t ls, lj;
    uint64_t lst;
    assert_int_equal(tessd_start_lock_exit(&f->d, 7, &ex), 0);
    errno = 0;
    assert_int_equal(tessd_start_lock_pids(&f->d, 7, &ls, &lst, &lj), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(pwrite(fd, "12 34 56\n", 9, TAGENT_LOCK_PID_OFF), 9);
    assert_int_equal(pwrite(fd, "exit 3\n", 7, TAGENT_LOCK_EXIT_OFF), 7);
    assert_int_equal(tessd_start_lock_pids(&f->d, 7, &ls, &lst, &lj), 0);
    assert_int_equal(ls, 12);
    assert_int_equal(lj, 56);
    assert_int_equal(tessd_start_lock_exit(&f->d, 7, &ex), 1);
    assert_int_equal(ex.exit_code, 3);
    assert_int_equal(tessd_start_lock_exit(&f->d, 8, &ex), 0); /* no lock: none */
    /* An ended attempt's records go; the header stays. */
    tessd_start_lock_clear(&f->d, 7);
    assert_int_equal(tessd_start_lock_exit(&f->d, 7, &ex), 0);
    assert_int_equal(tessd_start_lock_pids(&f->d, 7, &ls, &lst, &lj), -1);
    assert_int_equal(tessd_start_lock_kind(&f->d, 7), TESSD_LOCK_RECORDS);
    close(fd);
    /* The exit and pid records beside it, removed with it. */
    char rec[160], prec[160], path[192];
    assert_int_equal(tessd_exit_record_path(&f->d, 7, rec, sizeof rec), 0);
    snprintf(path, sizeof path, "%s/7.exit", starts);
    assert_string_equal(rec, path);
    assert_int_equal(tessd_pid_record_path(&f->d, 7, prec, sizeof prec), 0);
    snprintf(path, sizeof path, "%s/7.pid", starts);
    assert_string_equal(prec, path);
    fd = open(rec, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    close(fd);
    fd = open(prec, O_WRONLY | O_CREAT, 0644);
    assert_true(fd >= 0);
    close(fd);
    tessd_start_lock_remove(&f->d, 7);
    assert_int_equal(access(lock, F_OK), -1);
    assert_int_equal(access(rec, F_OK), -1);
    assert_int_equal(access(prec, F_OK), -1);
    tessd_start_lock_remove(&f->d, 7); /* gone already: nothing said */
    assert_int_equal(g_logged, 0);
    /* A starts directory others may write into is not trusted. */
    assert_int_equal(chmod(starts, 0777), 0);
    errno = 0;
    assert_int_equal(tessd_start_lock_held(&f->d, 7), -1);
    assert_int_equal(errno, EPERM);
}

/* --- the watchdog's record ---------------------------------------------------------------- */

static void write_violation(fix_t *f, int64_t id, const char *text)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    tessd_state_dir(&f->d, id, dir, sizeof dir);
    mkdir(f->d.run_dir, 0755);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/violation", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void test_violation(void **state)
{
    fix_t *f = *state;
    char act[16] = "", reason[256] = "";
    unsigned ep = 0;
    /* None. */
    assert_int_equal(tessd_violation_read(&f->d, 3, act, sizeof act, &ep, reason, sizeof reason),
                     0);
    write_violation(f, 3,
                    "kill 2 GPU 0: the job's processes hold 1.5 GiB, its slice allows 1.0 GiB\n"
                    "ignored second line\n");
    assert_int_equal(tessd_violation_read(&f->d, 3, act, sizeof act, &ep, reason, sizeof reason),
                     1);
    assert_string_equal(act, "kill");
    assert_int_equal(ep, 2);
    assert_string_equal(reason,
                        "GPU 0: the job's processes hold 1.5 GiB, its slice allows 1.0 GiB");
    /* Malformed records are not read. */
    static const char *const bad[] = {"", "kill\n", "kill x reason\n", "\nkill 1 late\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_violation(f, 4, bad[i]);
        assert_int_equal(
            tessd_violation_read(&f->d, 4, act, sizeof act, &ep, reason, sizeof reason), 0);
    }
    /* A record without a reason is read, its reason empty. */
    write_violation(f, 4, "suspend 3\n");
    assert_int_equal(tessd_violation_read(&f->d, 4, act, sizeof act, &ep, reason, sizeof reason),
                     1);
    assert_string_equal(act, "suspend");
    assert_int_equal(ep, 3);
    assert_string_equal(reason, "");
    /* Removed with the state directory. */
    tessd_state_remove(&f->d, 3);
    char dir[PATH_MAX];
    tessd_state_dir(&f->d, 3, dir, sizeof dir);
    assert_int_equal(access(dir, F_OK), -1);
    assert_int_equal(tessd_violation_read(&f->d, 3, act, sizeof act, &ep, reason, sizeof reason),
                     0);
    /* Not root (no run directory): never a record. */
    f->d.run_dir[0] = '\0';
    assert_int_equal(tessd_violation_read(&f->d, 4, act, sizeof act, &ep, reason, sizeof reason),
                     0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_steps),
        cmocka_unit_test_setup_teardown(test_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cwd_check, setup, teardown),
        cmocka_unit_test(test_child_wait),
        cmocka_unit_test_setup_teardown(test_cwd_stalled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_violation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_dir_mounted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
