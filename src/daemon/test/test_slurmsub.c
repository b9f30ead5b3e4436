/* test_slurmsub.c - tesseld's pool of submitters (slurmsub.c) against fake_submitter: one
 * submitter reused, a killed one replaced without a lost request, an answer out of time (503,
 * the submitter ended), out of shape (500), Slurm's refusal (422 with sbatch's words), one
 * that exits holding a request (500) or is killed holding it (503), a full pool, and the idle
 * ones ended by tessd_slurmsub_reap; a submitter stopped before its exec (its account's
 * SIGSTOP between setuid and execve: review of 2026-11-28, M1) fails the request as a time-out
 * (503), killed and waited for, and holds only its four descriptors meanwhile. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon/daemon.h"
#include "daemon/slurmsub.h"
#include "daemon/spawnas.h"
#include "daemon/test/tmpdir.h"
#include "libutil/procstat.h"

static char dir[128];
static tessd_t *d;
static tessd_pw_t pw;

/* The fake, copied as NAME into dir (0755: any uid the pool takes may run it there).  Copied
 * beside it and renamed over it: a submitter of the test before, killed and waited for, can
 * still hold the old file against writing for a moment (cp: "Text file busy"). */
static void use(const char *name)
{
    char self[PATH_MAX], cmd[PATH_MAX * 6 + 80];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(d->slurm_submitter, sizeof d->slurm_submitter, "%s/%s", dir, name);
    snprintf(cmd, sizeof cmd,
             "cp '%s/fake_submitter' '%s.new' && chmod 755 '%s.new' && mv -f '%s.new' '%s'", self,
             d->slurm_submitter, d->slurm_submitter, d->slurm_submitter, d->slurm_submitter);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    (void)state;
    if (test_tmpdir(dir, sizeof dir, "slurmsub") < 0)
        return -1;
    /* Readable and searchable by the account the fake runs as (root's tests: root). */
    if (chmod(dir, 0755) < 0)
        return -1;
    d = calloc(1, sizeof *d);
    struct passwd *p = getpwuid(getuid());
    if (!d || !p)
        return -1;
    snprintf(pw.name, sizeof pw.name, "%s", p->pw_name);
    pw.uid = p->pw_uid;
    pw.gid = p->pw_gid;
    snprintf(pw.dir, sizeof pw.dir, "%s", p->pw_dir);
    snprintf(pw.shell, sizeof pw.shell, "/bin/sh");
    d->slurm_timeout_s = 2;
    signal(SIGPIPE, SIG_IGN); /* as tesseld */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tessd_slurmsub_reap(d, true);
    free(d);
    return test_tmpdir_remove(dir);
}

static int submit(int64_t *id, char *why, size_t len)
{
    return tessd_slurmsub_submit(d, &pw, "{\"name\":\"t\"}", id, why, len);
}

/* Until pid has ended (a zombie or gone): a kill is not synchronous. */
static void wait_dead(pid_t pid)
{
    tsl_procstat_t ps;
    while (tsl_procstat_read(pid, &ps) == 0 && ps.state != 'Z')
        usleep(1000);
}

static void test_reuse_and_replace(void **state)
{
    (void)state;
    use("fake-ok");
    int64_t a = 0, b = 0, c = 0;
    char why[512];
    assert_int_equal(submit(&a, why, sizeof why), 201);
    assert_int_equal(submit(&b, why, sizeof why), 201);
    assert_true(a > 0);
    assert_int_equal(a, b); /* the same process answered: reused */
    /* Ended by its account: the next request finds it dead at the write and is carried by a
     * new one, without an error. */
    assert_int_equal(kill((pid_t)a, SIGKILL), 0);
    wait_dead((pid_t)a);
    assert_int_equal(submit(&c, why, sizeof why), 201);
    assert_true(c > 0 && c != a);
    /* Idle ones are ended by the reaper (all: as at shutdown). */
    tessd_slurmsub_reap(d, false); /* not idle for a minute yet: kept */
    assert_int_equal(kill((pid_t)c, 0), 0);
    tessd_slurmsub_reap(d, true);
    assert_int_equal(kill((pid_t)c, 0), -1);
    assert_int_equal(errno, ESRCH);
}

static void test_failures(void **state)
{
    (void)state;
    int64_t id = 0;
    char why[512];
    use("fake-refuse");
    assert_int_equal(submit(&id, why, sizeof why), 422);
    assert_string_equal(why, "sbatch: error: invalid partition specified: nosuch; sbatch: error: "
                             "Batch job submission failed: Invalid partition name specified");
    tessd_slurmsub_reap(d, true);
    use("fake-garbage");
    assert_int_equal(submit(&id, why, sizeof why), 500);
    assert_non_null(strstr(why, "not an answer"));
    /* One that exits by itself holding a request (as when slurm_init cannot read slurm.conf):
     * 500, with its status; one killed holding it: 503, submit again. */
    use("fake-die");
    assert_int_equal(submit(&id, why, sizeof why), 500);
    assert_non_null(strstr(why, "exited with status 3"));
    use("fake-killed");
    assert_int_equal(submit(&id, why, sizeof why), 503);
    assert_non_null(strstr(why, "ended during the submission"));
    /* No answer within slurm-timeout: 503, and that submitter is gone (the next starts anew). */
    use("fake-hang");
    assert_int_equal(submit(&id, why, sizeof why), 503);
    assert_non_null(strstr(why, "did not answer in time"));
    use("fake-ok");
    assert_int_equal(submit(&id, why, sizeof why), 201);
    tessd_slurmsub_reap(d, true);
    /* Nothing to run: 500 with the reason, nothing left in the pool. */
    snprintf(d->slurm_submitter, sizeof d->slurm_submitter, "%s/none", dir);
    assert_int_equal(submit(&id, why, sizeof why), 500);
    assert_non_null(strstr(why, "cannot be run"));
}

/* A full pool (64 submitters, one per account here) makes room for another account by ending
 * the least recently used idle one, instead of keeping it waiting until the reaper runs. */
static void test_full_pool(void **state)
{
    (void)state;
    use("fake-ok");
    uid_t base = pw.uid;
    int64_t first = 0, id = 0;
    char why[512];
    for (int i = 0; i < 64; i++) {
        pw.uid = 60000 + (uid_t)i;
        assert_int_equal(submit(&id, why, sizeof why), 201);
        if (i == 0)
            first = id;
    }
    pw.uid = 60064;
    assert_int_equal(submit(&id, why, sizeof why), 201);
    assert_true(id != first);
    /* The first account's, the least recently used, was ended (and waited for) to make room. */
    assert_int_equal(kill((pid_t)first, 0), -1);
    assert_int_equal(errno, ESRCH);
    pw.uid = base;
    tessd_slurmsub_reap(d, true);
    assert_int_equal(kill((pid_t)id, 0), -1);
}

/* What the child saw of itself before its exec (shared with it: written by stop_hook). */
typedef struct {
    pid_t pid;
    int nfd;
    int fd[16];
    int fd3_flags;
} child_seen_t;
static child_seen_t *seen_by_child;

/* tessd_spawn_hook in the child: its descriptors (every one of 0..4095 that F_GETFD knows),
 * then SIGSTOP, as its account could stop it between setuid and execve. */
static void stop_hook(void)
{
    child_seen_t *c = seen_by_child;
    c->pid = getpid();
    for (int fd = 0; fd < 4096; fd++)
        if (fcntl(fd, F_GETFD) >= 0 && c->nfd < 16)
            c->fd[c->nfd++] = fd;
    c->fd3_flags = fcntl(3, F_GETFD);
    raise(SIGSTOP);
}

static void test_stopped_before_exec(void **state)
{
    (void)state;
    use("fake-ok");
    seen_by_child = mmap(NULL, sizeof *seen_by_child, PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(seen_by_child != MAP_FAILED);
    memset(seen_by_child, 0, sizeof *seen_by_child);
    /* Descriptors of tesseld's, one without close-on-exec (as a starter could leak one). */
    int null = open("/dev/null", O_RDONLY);
    assert_true(null >= 0);
    int leaked = fcntl(null, F_DUPFD, 10), kept = fcntl(null, F_DUPFD_CLOEXEC, 10);
    close(null);
    assert_true(leaked >= 10 && kept >= 10);
    tessd_spawn_hook = stop_hook;
    int64_t id = 0;
    char why[512];
    int st = submit(&id, why, sizeof why);
    tessd_spawn_hook = NULL;
    /* The request ends (at slurm-timeout, 2 s here) rather than waiting for the exec. */
    assert_int_equal(st, 503);
    assert_non_null(strstr(why, "did not start within slurm-timeout"));
    /* The stopped child was killed and waited for: no process, no zombie. */
    assert_true(seen_by_child->pid > 0);
    assert_int_equal(kill(seen_by_child->pid, 0), -1);
    assert_int_equal(errno, ESRCH);
    /* Stopped, it held its standard descriptors and its error pipe (3, close-on-exec) only. */
    assert_int_equal(seen_by_child->nfd, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(seen_by_child->fd[i], i);
    assert_true(seen_by_child->fd3_flags >= 0 && (seen_by_child->fd3_flags & FD_CLOEXEC));
    close(leaked);
    close(kept);
    munmap(seen_by_child, sizeof *seen_by_child);
    /* The slot was given back: the next submission starts a submitter and works. */
    assert_int_equal(submit(&id, why, sizeof why), 201);
    tessd_slurmsub_reap(d, true);
}

/* The test's child running `NAME --read` (the reader), 0 when there is none. */
static pid_t reader_of(void)
{
    char path[300], cmd[PATH_MAX];
    DIR *dp = opendir("/proc");
    assert_non_null(dp);
    pid_t found = 0;
    struct dirent *e;
    while (!found && (e = readdir(dp))) {
        char *end;
        long p = strtol(e->d_name, &end, 10);
        if (*end || p <= 0)
            continue;
        tsl_procstat_t ps;
        if (tsl_procstat_read((pid_t)p, &ps) < 0 || ps.ppid != getpid() || ps.state == 'Z')
            continue;
        snprintf(path, sizeof path, "/proc/%ld/cmdline", p);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(cmd, 1, sizeof cmd - 1, f);
        fclose(f);
        cmd[n] = '\0';
        size_t first = strlen(cmd);
        if (first + 1 < n && strcmp(cmd + first + 1, "--read") == 0)
            found = (pid_t)p;
    }
    closedir(dp);
    return found;
}

static int read_ids(json_t **a, char *why, size_t len)
{
    int64_t ids[] = {5, 9};
    return tessd_slurmsub_read(d, ids, 2, false, a, why, len);
}

/* The poll's reader (tessel-slurm-submit --read): one, kept from poll to poll, started again
 * when it was killed between them; Slurm's error (slurmctld down) is -1 and keeps it; a reader
 * that answers out of shape, exits or is killed holding a request is -2 (the poll reads by
 * squeue instead), one that does not answer in time -1, and each of those is ended. */
static void test_reader(void **state)
{
    (void)state;
    use("fake-ok");
    json_t *a = NULL;
    char why[512];
    assert_int_equal(read_ids(&a, why, sizeof why), 0);
    json_t *jobs = json_object_get(a, "jobs");
    assert_int_equal(json_array_size(jobs), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(jobs, 1), "job_id")), 9);
    pid_t r = (pid_t)json_integer_value(json_object_get(json_array_get(jobs, 0), "cpus"));
    json_decref(a);
    assert_int_equal(reader_of(), r);
    assert_int_equal(read_ids(&a, why, sizeof why), 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(a, "jobs"), 0), "cpus")),
        r); /* the same reader */
    json_decref(a);
    /* Killed between two polls: the next one starts another, without an error. */
    assert_int_equal(kill(r, SIGKILL), 0);
    wait_dead(r);
    assert_int_equal(read_ids(&a, why, sizeof why), 0);
    pid_t r2 = reader_of();
    assert_true(r2 > 0 && r2 != r);
    json_decref(a);
    /* Idle ones are ended by the reaper, with the submitters. */
    tessd_slurmsub_reap(d, false);
    assert_int_equal(reader_of(), r2);
    tessd_slurmsub_reap(d, true);
    assert_int_equal(reader_of(), 0);

    use("fake-refuse");
    assert_int_equal(read_ids(&a, why, sizeof why), -1);
    assert_null(a);
    assert_string_equal(why,
                        "Slurm: Unable to contact slurm controller (connect failure) (error 1007)");
    assert_true(reader_of() > 0); /* kept: Slurm's error is not the reader's */
    tessd_slurmsub_reap(d, true);
    use("fake-garbage");
    assert_int_equal(read_ids(&a, why, sizeof why), -2);
    assert_non_null(strstr(why, "out of shape"));
    assert_int_equal(reader_of(), 0);
    /* Its own refusal is not Slurm's error: -2 (squeue for that poll), the reader kept. */
    use("fake-busy");
    assert_int_equal(read_ids(&a, why, sizeof why), -2);
    assert_string_equal(why, "tessel-slurm-submit --read: out of memory");
    assert_true(reader_of() > 0);
    tessd_slurmsub_reap(d, true);
    /* An answer above the bound: refused unread, the reader ended, said as such. */
    use("fake-big");
    assert_int_equal(read_ids(&a, why, sizeof why), -2);
    assert_string_equal(why, "tessel-slurm-submit --read: an answer above 16 MiB");
    assert_int_equal(reader_of(), 0);
    use("fake-die");
    assert_int_equal(read_ids(&a, why, sizeof why), -2);
    assert_non_null(strstr(why, "exited with status 3"));
    use("fake-killed");
    assert_int_equal(read_ids(&a, why, sizeof why), -2);
    assert_non_null(strstr(why, "Killed"));
    /* The poll's read: ids that are not Slurm's are not asked; a read of every job above the
     * bound is made again for the ids alone, the view's failure said (review M1). */
    use("fake-bigall");
    int64_t mixed[] = {0, 5, -7, 4294967296LL, 9};
    bool all = true;
    char vwhy[256];
    assert_int_equal(
        tessd_slurmsub_read_poll(d, mixed, 5, &all, &a, vwhy, sizeof vwhy, why, sizeof why), 0);
    assert_false(all);
    assert_string_equal(vwhy, "tessel-slurm-submit --read: an answer above 16 MiB");
    jobs = json_object_get(a, "jobs");
    assert_int_equal(json_array_size(jobs), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(jobs, 0), "job_id")), 5);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(jobs, 1), "job_id")), 9);
    json_decref(a);
    all = false; /* a read of the ids alone: as asked, no view said */
    assert_int_equal(
        tessd_slurmsub_read_poll(d, mixed, 5, &all, &a, vwhy, sizeof vwhy, why, sizeof why), 0);
    assert_string_equal(vwhy, "");
    assert_int_equal(json_array_size(json_object_get(a, "jobs")), 2);
    json_decref(a);
    tessd_slurmsub_reap(d, true);
    use("fake-hang");
    assert_int_equal(read_ids(&a, why, sizeof why), -1);
    assert_non_null(strstr(why, "did not answer in 2 s"));
    assert_int_equal(reader_of(), 0);
    snprintf(d->slurm_submitter, sizeof d->slurm_submitter, "%s/none", dir);
    assert_int_equal(read_ids(&a, why, sizeof why), -2);
    assert_non_null(strstr(why, "cannot be run"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_and_replace),
        cmocka_unit_test(test_failures),
        cmocka_unit_test(test_full_pool),
        cmocka_unit_test(test_stopped_before_exec),
        cmocka_unit_test(test_reader),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
