/* test_watchdog.c - the watchdog's logic at its own layer: limits, the job's sum, the decision,
 * the reason's words, and which processes are the job's. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/watchdog.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static void test_limits_parse(void **state)
{
    (void)state;
    tsw_limits_t l;
    tsl_error_t err;
    assert_int_equal(tsw_limits_parse("0=4G,3=512M,63=1024", &l, &err), 0);
    assert_true(l.limit[0] == 4 * GiB);
    assert_true(l.limit[3] == 512 * MiB);
    assert_true(l.limit[63] == 1024);
    /* A GPU the job was not given allows nothing. */
    assert_true(l.limit[1] == 0 && l.limit[2] == 0);
    assert_int_equal(tsw_limits_parse("", &l, &err), 0);
    assert_true(l.limit[0] == 0);
    static const char *bad[] = {"0",     "=4G",  "64=1G", "0=",       "0=4Q",
                                "-1=1G", "a=1G", "0=1G,", "0=1G;1=1G"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err.text[0] = '\0';
        assert_int_equal(tsw_limits_parse(bad[i], &l, &err), -1);
        assert_non_null(strstr(err.text, "--gpu-mem-limit"));
    }
    tsw_action_t a;
    assert_int_equal(tsw_action_parse("kill", &a, &err), 0);
    assert_int_equal(a, TSW_KILL);
    assert_int_equal(tsw_action_parse("suspend", &a, &err), 0);
    assert_int_equal(a, TSW_SUSPEND);
    assert_int_equal(tsw_action_parse("stop", &a, &err), -1);
}

/* Members of the job in this table: pids 100..199. */
static bool in_job(unsigned pid, void *arg)
{
    int *calls = arg;
    (*calls)++;
    return pid >= 100 && pid < 200;
}

static void test_sum_and_decide(void **state)
{
    (void)state;
    /* A GPU shared with two other jobs: only the job's processes count, contexts included
     * (NVML's usedGpuMemory already holds them). */
    tsw_proc_t procs[] = {
        {101, 3 * GiB + 300 * MiB}, /* the job: 3 GiB + its context */
        {7, 30 * GiB},              /* another job's */
        {150, 724 * MiB},           /* the job's child */
        {250, 2 * GiB},             /* another */
        {199, ~0ull},               /* the job's, NVML does not know: 0 */
    };
    int calls = 0;
    uint64_t sum = tsw_job_sum(procs, 5, in_job, &calls);
    assert_int_equal(calls, 5);
    assert_true(sum == 4 * GiB);
    assert_false(tsw_over(sum, 4 * GiB)); /* exactly the limit is allowed */
    assert_true(tsw_over(sum, 4 * GiB - 1));
    assert_true(tsw_over(1, 0)); /* a GPU not given: any byte is too much */
    assert_false(tsw_over(0, 0));
    /* Saturation rather than wrap-around. */
    tsw_proc_t huge[] = {{100, UINT64_MAX - 5}, {101, 100}};
    assert_true(tsw_job_sum(huge, 2, in_job, &calls) == UINT64_MAX);
    assert_true(tsw_over(tsw_job_sum(huge, 2, in_job, &calls), 39 * GiB));
    assert_true(tsw_job_sum(procs, 0, in_job, &calls) == 0);
}

/* A hold (suspended by a preemption, its memory given back): the job's GPUs allow
 * TSW_HOLD_ALLOW only, one it was not given still 0; the file decides, root's and regular. */
static void test_hold(void **state)
{
    (void)state;
    assert_true(tsw_hold_limit(4 * GiB, false) == 4 * GiB);
    assert_true(tsw_hold_limit(4 * GiB, true) == TSW_HOLD_ALLOW);
    assert_true(tsw_hold_limit(0, true) == 0);
    assert_false(tsw_over(TSW_HOLD_ALLOW, tsw_hold_limit(4 * GiB, true)));
    assert_true(tsw_over(TSW_HOLD_ALLOW + 1, tsw_hold_limit(4 * GiB, true)));
    char buf[320];
    tsw_hold_reason(buf, sizeof buf, 0, 2500 * MiB);
    assert_string_equal(buf, "GPU 0: the job's processes hold 2.4 GiB while it is suspended by a "
                             "preemption (its GPU memory given back; 16.0 MiB allowed): killed "
                             "by the GPU-memory watchdog");
    char dir[] = "/tmp/test_hold.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    assert_false(tsw_hold_on(NULL));
    assert_false(tsw_hold_on(dir));
    snprintf(path, sizeof path, "%s/%s", dir, TSW_HOLD_FILE);
    assert_int_equal(mkdir(path, 0755), 0); /* not a regular file */
    assert_false(tsw_hold_on(dir));
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(symlink("/etc/passwd", path), 0); /* a link is not followed */
    assert_false(tsw_hold_on(dir));
    assert_int_equal(unlink(path), 0);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(tsw_hold_on(dir), geteuid() == 0);
    if (geteuid() == 0) {
        assert_int_equal(chown(path, 65534, 65534), 0); /* not root's: not tesseld's */
        assert_false(tsw_hold_on(dir));
    }
    unlink(path);
    rmdir(dir);
}

static void test_reason(void **state)
{
    (void)state;
    char buf[320];
    tsw_reason(buf, sizeof buf, 1, 6 * GiB, 4 * GiB, TSW_KILL);
    assert_string_equal(buf, "GPU 1: the job's processes hold 6.0 GiB, its slice allows 4.0 GiB: "
                             "killed by the GPU-memory watchdog");
    tsw_reason(buf, sizeof buf, 0, 1536 * MiB, 512 * MiB, TSW_SUSPEND);
    assert_string_equal(buf, "GPU 0: the job's processes hold 1.5 GiB, its slice allows 512.0 "
                             "MiB: suspended by the GPU-memory watchdog");
    tsw_reason(buf, sizeof buf, 2, 300 * MiB, 0, TSW_KILL);
    assert_string_equal(buf, "GPU 2: the job's processes hold 300.0 MiB on a GPU it was not "
                             "given: killed by the GPU-memory watchdog");
}

/* The job's processes are those below the shim: a grandchild is, the parent of the test is
 * not, and a pid that does not exist is not. */
static void test_descends(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        pid_t gc = fork();
        if (gc == 0) {
            pause();
            _exit(0);
        }
        if (write(p[1], &gc, sizeof gc) != sizeof gc)
            _exit(1);
        pause();
        _exit(0);
    }
    pid_t gc = 0;
    assert_int_equal(read(p[0], &gc, sizeof gc), (ssize_t)sizeof gc);
    assert_true(tsw_descends(child, getpid()));
    assert_true(tsw_descends(gc, getpid()));
    assert_true(tsw_descends(gc, child));
    assert_false(tsw_descends(getpid(), child));
    assert_false(tsw_descends(getppid(), getpid()));
    assert_false(tsw_descends(1, getpid()));
    kill(gc, SIGKILL);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(p[0]);
    close(p[1]);
}

/* A fail_closed watchdog needs answers only for the job's own GPUs. */
static void test_must_answer(void **state)
{
    (void)state;
    tsw_limits_t l;
    tsl_error_t err;
    assert_int_equal(tsw_limits_parse("1=4G,63=1", &l, &err), 0);
    assert_true(tsw_must_answer(&l, 1));
    assert_true(tsw_must_answer(&l, 63));
    assert_false(tsw_must_answer(&l, 0));
    assert_false(tsw_must_answer(&l, 2));
    assert_false(tsw_must_answer(&l, 64));
}

/* Membership from a process table, at any depth: a chain of 5000 below the root (listed in
 * shuffled order) is the job's to its deepest process; another account's processes are not;
 * a process whose parent could not be read, and what is below it, count as the job's
 * (undecided) unless the table places them below the root. */
static void test_members_table(void **state)
{
    (void)state;
    enum { DEPTH = 5000, N = DEPTH + 6 };
    static tsw_pstat_t t[N];
    size_t n = 0;
    const pid_t root = 100;
    t[n++] = (tsw_pstat_t){1, 0, 0};
    t[n++] = (tsw_pstat_t){root, 1, 0};
    for (int i = 0; i < DEPTH; i++) /* 1000 <- root, 1001 <- 1000, ... */
        t[n++] = (tsw_pstat_t){1000 + i, i ? 1000 + i - 1 : root, 0};
    t[n++] = (tsw_pstat_t){200, 1, 0};   /* another account's shell */
    t[n++] = (tsw_pstat_t){201, 200, 0}; /* and its program */
    t[n++] = (tsw_pstat_t){300, -1, 0};  /* cannot be read */
    t[n++] = (tsw_pstat_t){301, 300, 0}; /* below it */
    /* Shuffle (a fixed permutation): the table's order must not matter. */
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (i * 7919u) % (i + 1);
        tsw_pstat_t x = t[i];
        t[i] = t[j];
        t[j] = x;
    }
    tsw_members(t, n, root);
    size_t members = 0;
    for (size_t i = 0; i < n; i++) {
        pid_t p = t[i].pid;
        if (p >= 1000)
            assert_int_equal(t[i].kin, TSW_MEMBER);
        else if (p == 300 || p == 301)
            assert_int_equal(t[i].kin, TSW_UNDECIDED);
        else
            assert_int_equal(t[i].kin, TSW_OTHER); /* 1, the root itself, 200, 201 */
        members += t[i].kin == TSW_MEMBER;
    }
    assert_int_equal(members, DEPTH);
    tsw_members(t, 0, root); /* an empty table */
}

/* Several roots (the slurmstepd of each step of a Slurm job): the descendants of each, at any
 * depth, are members; no root is, not even one below another; the rest as with one root. */
static void test_members_roots(void **state)
{
    (void)state;
    tsw_pstat_t t[] = {
        {1, 0, 0},     {50, 1, 0},    /* slurmd */
        {100, 50, 0},  {101, 100, 0}, /* step 0's slurmstepd, its task */
        {102, 101, 0}, {103, 102, 0}, /* below the task, two levels */
        {200, 1, 0},   {201, 200, 0}, /* step 1's slurmstepd (reparented to init), its task */
        {250, 201, 0},                /* a root below another's task (not a member) */
        {251, 250, 0},                /* its task: a member */
        {300, 1, 0},   {301, 300, 0}, /* another job */
        {400, -1, 0},  {401, 400, 0}, /* cannot be read, and below it */
    };
    size_t n = sizeof t / sizeof *t;
    const pid_t roots[] = {200, 100, 250};
    tsw_members_of(t, n, roots, 3);
    for (size_t i = 0; i < n; i++) {
        pid_t p = t[i].pid;
        tsw_kin_t want = TSW_OTHER;
        if (p == 101 || p == 102 || p == 103 || p == 201 || p == 251)
            want = TSW_MEMBER;
        else if (p == 400 || p == 401)
            want = TSW_UNDECIDED;
        assert_int_equal(t[i].kin, want);
    }
    /* One root of the three: step 1 alone. */
    tsw_members_of(t, n, roots, 1);
    size_t members = 0;
    for (size_t i = 0; i < n; i++) {
        members += t[i].kin == TSW_MEMBER;
        if (t[i].pid == 201 || t[i].pid == 251)
            assert_int_equal(t[i].kin, TSW_MEMBER);
    }
    assert_int_equal(members, 3); /* 201, 250 (no root now), 251 */
    tsw_members_of(t, n, roots, 0);
    for (size_t i = 0; i < n; i++)
        assert_int_not_equal(t[i].kin, TSW_MEMBER);
}

/* The job-wide sum: the GPU memory of two steps' processes, counted through the table
 * (tsw_in_table), breaks a limit that each step's alone keeps; another job's does not count,
 * an undecided process does, a pid the table lacks (ended) does not. */
static void test_sum_two_steps(void **state)
{
    (void)state;
    tsw_pstat_t t[] = {
        {1, 0, 0},    {100, 1, 0},   {101, 100, 0}, /* step 0: slurmstepd, task */
        {200, 1, 0},  {201, 200, 0},                /* step 1 */
        {300, 1, 0},  {301, 300, 0},                /* another job's step and task */
        {400, -1, 0},                               /* cannot be read */
    };
    tsw_table_t tab = {t, sizeof t / sizeof *t};
    const pid_t roots[] = {100, 200};
    const uint64_t limit = 1000 * MiB;
    const tsw_proc_t nvml[] = {
        {101, 600 * MiB},
        {201, 600 * MiB},
        {301, 900 * MiB},
        {999, 700 * MiB},
    };
    /* Each step alone: 600 MiB of 1000, under. */
    tsw_members_of(tab.procs, tab.n, roots, 1);
    tsw_table_index(&tab);
    assert_false(tsw_over(tsw_job_sum(nvml, 4, tsw_in_table, &tab), limit));
    assert_int_equal(tsw_job_sum(nvml, 4, tsw_in_table, &tab), 600 * MiB);
    /* The job: 1200 MiB, over. */
    tsw_members_of(tab.procs, tab.n, roots, 2);
    tsw_table_index(&tab);
    assert_int_equal(tsw_job_sum(nvml, 4, tsw_in_table, &tab), 1200 * MiB);
    assert_true(tsw_over(tsw_job_sum(nvml, 4, tsw_in_table, &tab), limit));
    /* Two steps at 400 MiB each: 800 MiB, under. */
    const tsw_proc_t low[] = {{101, 400 * MiB}, {201, 400 * MiB}, {301, 900 * MiB}};
    assert_false(tsw_over(tsw_job_sum(low, 3, tsw_in_table, &tab), limit));
    /* The undecided process counts. */
    const tsw_proc_t und[] = {{400, 5 * MiB}, {101, 1 * MiB}};
    assert_int_equal(tsw_job_sum(und, 2, tsw_in_table, &tab), 6 * MiB);
}

/* A real pass over /proc with a root callback: two children of the test each stand for a
 * step's slurmstepd (found by the callback among all the node's processes), their children
 * for its tasks. */
static pid_t fake_stepd[2];

static bool is_fake_stepd(pid_t pid, const char *comm, void *arg)
{
    (void)arg;
    bool is = pid == fake_stepd[0] || pid == fake_stepd[1];
    if (is) /* the name from /proc/PID/stat: this program's */
        assert_string_equal(comm, "test_watchdog");
    return is;
}

static pid_t spawn_with_child(pid_t *grandchild)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        pid_t g = fork();
        if (g == 0) {
            pause();
            _exit(0);
        }
        if (g < 0 || write(p[1], &g, sizeof g) != sizeof g)
            _exit(1);
        waitpid(g, NULL, 0);
        _exit(0);
    }
    assert_int_equal(read(p[0], grandchild, sizeof *grandchild), (ssize_t)sizeof *grandchild);
    close(p[0]);
    close(p[1]);
    return c;
}

static void test_snapshot_roots(void **state)
{
    (void)state;
    pid_t task[2];
    fake_stepd[0] = spawn_with_child(&task[0]);
    fake_stepd[1] = spawn_with_child(&task[1]);
    /* The watchdog of step 0: its own root, and the callback finds step 1's. */
    tsw_pstat_t *procs;
    size_t n;
    assert_int_equal(tsw_snapshot_roots(fake_stepd[0], is_fake_stepd, NULL, &procs, &n), 0);
    tsw_table_t tab = {procs, n};
    tsw_table_index(&tab);
    assert_true(tsw_in_table((unsigned)task[0], &tab));
    assert_true(tsw_in_table((unsigned)task[1], &tab));
    assert_false(tsw_in_table((unsigned)fake_stepd[0], &tab));
    assert_false(tsw_in_table((unsigned)fake_stepd[1], &tab));
    assert_false(tsw_in_table((unsigned)getpid(), &tab));
    free(procs);
    /* Without the callback: step 0's task alone. */
    assert_int_equal(tsw_snapshot_roots(fake_stepd[0], NULL, NULL, &procs, &n), 0);
    tab = (tsw_table_t){procs, n};
    tsw_table_index(&tab);
    assert_true(tsw_in_table((unsigned)task[0], &tab));
    assert_false(tsw_in_table((unsigned)task[1], &tab));
    free(procs);
    for (int i = 0; i < 2; i++) {
        kill(task[i], SIGKILL);
        waitpid(fake_stepd[i], NULL, 0);
    }
}

/* A real chain deeper than the quick walk (tsw_descends' table path): its deepest process is
 * the test's descendant, and one started beside the chain is not. */
static void test_descends_deep(void **state)
{
    (void)state;
    enum { DEPTH = 200 };
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t top = fork();
    assert_true(top >= 0);
    if (top == 0) {
        for (int i = 0; i < DEPTH; i++) {
            pid_t c = fork();
            if (c < 0)
                _exit(1);
            if (c > 0) {
                waitpid(c, NULL, 0);
                _exit(0);
            }
        }
        pid_t me = getpid();
        if (write(p[1], &me, sizeof me) != sizeof me)
            _exit(1);
        pause();
        _exit(0);
    }
    pid_t deep = 0;
    assert_int_equal(read(p[0], &deep, sizeof deep), (ssize_t)sizeof deep);
    assert_true(tsw_descends(deep, getpid()));
    assert_true(tsw_descends(deep, top));
    assert_false(tsw_descends(top, deep));
    tsw_pstat_t *procs;
    size_t n;
    assert_int_equal(tsw_snapshot(getpid(), &procs, &n), 0);
    size_t members = 0;
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        members += procs[i].kin == TSW_MEMBER;
        if (procs[i].pid == deep)
            found = procs[i].kin == TSW_MEMBER;
    }
    free(procs);
    assert_true(found);
    assert_true(members >= DEPTH + 1);
    /* The chain ends from its deepest process up. */
    kill(deep, SIGKILL);
    waitpid(top, NULL, 0);
    close(p[0]);
    close(p[1]);
}

/* The record another step's watchdog left in the job's directory: its reason, only from a
 * regular file owned by root (a file the job's user made, or a symbolic link, is no record). */
static void test_job_record(void **state)
{
    (void)state;
    char dir[] = "/tmp/tsw-record-XXXXXX", path[64], link[64], why[320];
    assert_non_null(mkdtemp(dir));
    assert_false(tsw_job_record(NULL, why, sizeof why));
    assert_false(tsw_job_record(dir, why, sizeof why)); /* none yet */
    snprintf(path, sizeof path, "%s/%s", dir, TSW_RECORD);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("kill 1 GPU 0: the job's processes hold 5.0 GiB, its slice allows 4.0 GiB\nmore\n", f);
    assert_int_equal(fclose(f), 0);
    bool root = geteuid() == 0;
    assert_int_equal(tsw_job_record(dir, why, sizeof why), root);
    if (root) {
        assert_string_equal(why,
                            "GPU 0: the job's processes hold 5.0 GiB, its slice allows 4.0 GiB");
        /* A user's file is not root's record. */
        assert_int_equal(chown(path, 65534, 65534), 0);
        assert_false(tsw_job_record(dir, why, sizeof why));
    }
    /* A symbolic link in its place is not followed. */
    snprintf(link, sizeof link, "%s/target", dir);
    assert_int_equal(rename(path, link), 0);
    assert_int_equal(symlink(link, path), 0);
    if (root)
        assert_int_equal(chown(link, 0, 0), 0);
    assert_false(tsw_job_record(dir, why, sizeof why));
    unlink(path);
    unlink(link);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_parse),  cmocka_unit_test(test_sum_and_decide),
        cmocka_unit_test(test_reason),        cmocka_unit_test(test_descends),
        cmocka_unit_test(test_members_table), cmocka_unit_test(test_must_answer),
        cmocka_unit_test(test_descends_deep), cmocka_unit_test(test_members_roots),
        cmocka_unit_test(test_sum_two_steps), cmocka_unit_test(test_snapshot_roots),
        cmocka_unit_test(test_job_record),    cmocka_unit_test(test_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
