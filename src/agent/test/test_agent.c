/* test_agent.c - agent: fake GPU spec, UUID parsing, CPU quota, and tessel-shim end to end
 * (exit status, signal, exec failure, pid file), plus cgroup mode naming, and the handling of
 * records in a job directory its user may have tampered with (or mounted a file system over),
 * the exit record kept out of it (--exit-file), and the sweep of stale cgroups. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/cgroup.h"
#include "agent/gpu.h"
#include "agent/jobns.h"
#include "agent/runner.h"

extern char **environ;

static void test_fake_spec(void **state)
{
    tagent_gpu_t g[TAGENT_MAX_GPUS];
    tsl_error_t err;
    assert_int_equal(tagent_fake_spec_parse("2xRTX4090:24G,1xA100:80G", g, TAGENT_MAX_GPUS, &err),
                     3);
    assert_string_equal(g[0].name, "RTX4090");
    assert_int_equal(g[1].mem_total, 24ull << 30);
    assert_string_equal(g[2].name, "A100");
    assert_int_equal(g[2].mem_total, 80ull << 30);
    assert_int_equal(g[2].index, 2);
    assert_true(g[2].simulated);
    assert_int_equal(tagent_fake_spec_parse("T4:16G:40", g, TAGENT_MAX_GPUS, NULL), 1);
    assert_int_equal(g[0].sm_count, 40);
    assert_string_equal(g[0].name, "T4");
    static const char *const bad[] = {"",       "RTX4090", "2xRTX4090:", "2xRTX4090:0", ":24G",
                                      "0xA:1G", "A:1Q",    "A:1G,,B:1G", "A:1G:0",      "A:1G:x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        assert_int_equal(tagent_fake_spec_parse(bad[i], g, TAGENT_MAX_GPUS, &err), -1);
        assert_int_equal(errno, EINVAL);
    }
    assert_int_equal(tagent_fake_spec_parse("17xA:1G", g, TAGENT_MAX_GPUS, &err), -1);
    assert_int_equal(errno, E2BIG);
}

static void test_uuid(void **state)
{
    unsigned char u[16];
    assert_int_equal(tagent_uuid_parse("GPU-00112233-4455-6677-8899-aabbccddeeff", u), 0);
    assert_int_equal(u[0], 0x00);
    assert_int_equal(u[1], 0x11);
    assert_int_equal(u[15], 0xff);
    assert_int_equal(tagent_uuid_parse("GPU-0011", u), -1);
    assert_int_equal(tagent_uuid_parse("GPU-00112233-4455-6677-8899-aabbccddeeffaa", u), -1);
}

static void test_quota(void **state)
{
    assert_int_equal(tagent_cpu_quota_us(1000), 100000);
    assert_int_equal(tagent_cpu_quota_us(2500), 250000);
    assert_int_equal(tagent_cpu_quota_us(1), 1000); /* kernel minimum */
    assert_string_equal(tagent_cgroup_mode_name(TAGENT_CG_V1), "v1");
    assert_string_equal(tagent_cgroup_mode_name(TAGENT_CG_NONE), "none");
}

static bool keep_job2(const char *rel, const struct stat *st, void *arg)
{
    (void)st;
    (*(int *)arg)++;
    return strcmp(rel, "abc/job-2") == 0;
}

/* The sweep at start: deepest first, every directory rmdir lets go except those kept, in every
 * v1 controller; a non-empty one (a group with processes, here a file) and its parents stay. */
static void test_cgroup_sweep(void **state)
{
    (void)state;
    char root[] = "/tmp/tessel-cgsweep-XXXXXX", p[4096];
    assert_non_null(mkdtemp(root));
    static const char *const ctl[] = {"memory", "cpu", "freezer"};
    for (int i = 0; i < 3; i++) {
        static const char *const dirs[] = {"abc/job-1", "abc/job-2", "old/job-7/sub", "busy/job-3"};
        for (int k = 0; k < 4; k++) {
            snprintf(p, sizeof p, "%s/%s/tessel/%s", root, ctl[i], dirs[k]);
            char cmd[4200];
            snprintf(cmd, sizeof cmd, "mkdir -p '%s'", p);
            assert_int_equal(system(cmd), 0);
        }
        snprintf(p, sizeof p, "%s/%s/tessel/busy/job-3/cgroup.procs", root, ctl[i]);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs("4242\n", f);
        fclose(f);
    }
    int asked = 0;
    /* Per controller: abc/job-1, old/job-7/sub, old/job-7, old removed; abc (job-2 kept),
     * busy/job-3 (a file) and busy stay. */
    assert_int_equal(tagent_cgroup_sweep(TAGENT_CG_V1, root, "tessel", keep_job2, &asked), 12);
    assert_true(asked >= 3 * 6);
    for (int i = 0; i < 3; i++) {
        static const char *const gone[] = {"abc/job-1", "old"};
        static const char *const kept[] = {"abc/job-2", "busy/job-3", ""};
        for (int k = 0; k < 2; k++) {
            snprintf(p, sizeof p, "%s/%s/tessel/%s", root, ctl[i], gone[k]);
            assert_int_equal(access(p, F_OK), -1);
        }
        for (int k = 0; k < 3; k++) {
            snprintf(p, sizeof p, "%s/%s/tessel/%s", root, ctl[i], kept[k]);
            assert_int_equal(access(p, F_OK), 0);
        }
    }
    assert_int_equal(tagent_cgroup_sweep(TAGENT_CG_NONE, root, "tessel", NULL, NULL), 0);
    /* v2: one hierarchy; without keep, job-2 goes too. */
    snprintf(p, sizeof p, "%s/memory", root);
    assert_int_equal(tagent_cgroup_sweep(TAGENT_CG_V2, p, "tessel", NULL, NULL), 2);
    snprintf(p, sizeof p, "%s/memory/tessel/abc", root);
    assert_int_equal(access(p, F_OK), -1);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static void read_into(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
}

/* The files a job's group gets, laid out in a scratch directory standing for /sys/fs/cgroup. */
static void test_cgroup_layout(void **state)
{
    char root[64], p[512], buf[64];
    snprintf(root, sizeof root, "/tmp/tessel-cg-XXXXXX");
    assert_non_null(mkdtemp(root));
    const char *name = "tessel/abc/job-7";

    assert_int_equal(tagent_cgroup_create(TAGENT_CG_V2, root, name, 500, 64u << 20, NULL), 0);
    snprintf(p, sizeof p, "%s/%s/memory.max", root, name);
    read_into(p, buf, sizeof buf);
    assert_string_equal(buf, "67108864");
    snprintf(p, sizeof p, "%s/%s/cpu.max", root, name);
    read_into(p, buf, sizeof buf);
    assert_string_equal(buf, "50000 100000");
    snprintf(p, sizeof p, "%s/tessel/abc/cgroup.subtree_control", root);
    read_into(p, buf, sizeof buf);
    assert_string_equal(buf, "+memory +cpu");
    char procs[3][4096];
    assert_int_equal(tagent_cgroup_procs_paths(TAGENT_CG_V2, root, name, procs, 3), 1);
    snprintf(p, sizeof p, "%s/%s/cgroup.procs", root, name);
    assert_string_equal(procs[0], p);

    static const char *const ctl[] = {"memory", "cpu", "freezer"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", root, ctl[i]);
        assert_int_equal(mkdir(p, 0755), 0);
    }
    assert_int_equal(tagent_cgroup_create(TAGENT_CG_V1, root, name, 2500, 1u << 30, NULL), 0);
    snprintf(p, sizeof p, "%s/memory/%s/memory.limit_in_bytes", root, name);
    read_into(p, buf, sizeof buf);
    assert_string_equal(buf, "1073741824");
    snprintf(p, sizeof p, "%s/cpu/%s/cpu.cfs_quota_us", root, name);
    read_into(p, buf, sizeof buf);
    assert_string_equal(buf, "250000");
    snprintf(p, sizeof p, "%s/cpu/%s/cpu.cfs_period_us", root, name);
    read_into(p, buf, sizeof buf);
    assert_string_equal(buf, "100000");
    assert_int_equal(tagent_cgroup_procs_paths(TAGENT_CG_V1, root, name, procs, 3), 3);
    snprintf(p, sizeof p, "%s/freezer/%s/cgroup.procs", root, name);
    assert_string_equal(procs[2], p);
    /* No limits asked: the group exists, no limit file is written. */
    assert_int_equal(tagent_cgroup_create(TAGENT_CG_V1, root, "tessel/abc/job-8", 0, 0, NULL), 0);
    snprintf(p, sizeof p, "%s/memory/tessel/abc/job-8/memory.limit_in_bytes", root);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(tagent_cgroup_procs_paths(TAGENT_CG_NONE, root, name, procs, 3), 0);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* Run the shim on argv in a fresh dir with environment envp; returns the dir (static
 * buffer). */
static const char *run_shim_env(char *const *argv, char *const *envp, tagent_exit_t *ex)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tessel-agent-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char shim[4096];
    snprintf(shim, sizeof shim, "%s/bin/tessel-shim", getenv("TESSEL_BUILD") ?: "build");
    tagent_spawn_t sp = {.shim = shim, .dir = dir, .cwd = dir, .argv = argv, .envp = envp};
    tsl_error_t err;
    pid_t pid = tagent_spawn(&sp, &err);
    assert_true(pid > 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(tagent_read_exit(dir, ex), 1);
    return dir;
}

static const char *run_shim(char *const *argv, tagent_exit_t *ex)
{
    return run_shim_env(argv, environ, ex);
}

/* Read dir/name into buf (NUL-terminated). */
static void slurp(const char *dir, const char *name, char *buf, size_t len)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
}

static void cleanup(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_shim(void **state)
{
    tagent_exit_t ex;
    char *a1[] = {"sh", "-c", "echo out; echo err >&2; pwd; exit 3", NULL};
    const char *dir = run_shim(a1, &ex);
    assert_int_equal(ex.exit_code, 3);
    assert_int_equal(ex.sig, 0);
    assert_string_equal(ex.error, "");
    char p[256], buf[256] = "";
    snprintf(p, sizeof p, "%s/stdout", dir);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char want[256];
    snprintf(want, sizeof want, "out\n%s\n", dir);
    assert_string_equal(buf, want);
    pid_t shim, job;
    uint64_t start;
    assert_int_equal(tagent_read_pids(dir, &shim, &start, &job), 0);
    assert_true(shim > 0 && job > 0 && start > 0);
    assert_false(tagent_alive(job, 0));
    cleanup(dir);

    char *a2[] = {"sh", "-c", "kill -TERM $$", NULL};
    dir = run_shim(a2, &ex);
    assert_int_equal(ex.exit_code, -1);
    assert_int_equal(ex.sig, SIGTERM);
    cleanup(dir);

    char *a3[] = {"/nonexistent/program", NULL};
    dir = run_shim(a3, &ex);
    assert_int_equal(ex.exit_code, -1);
    assert_string_equal(ex.error, "exec: No such file or directory");
    cleanup(dir);

    assert_true(tagent_alive(getpid(), tagent_proc_start_time(getpid())));
    assert_false(tagent_alive(getpid(), 1));
}

/* The job gets exactly the environment it was given; the shim (its parent, root when tesseld
 * is) runs with the fixed one: PATH and the caller's sanitizer options, nothing of the job's
 * (an LD_AUDIT or LD_LIBRARY_PATH there would be loaded by root). */
static void test_shim_env(void **state)
{
    tagent_exit_t ex;
    char *env[] = {"PATH=/usr/bin:/bin",
                   "FOO=bar baz",
                   "LD_AUDIT=/nonexistent/audit.so",
                   "LD_LIBRARY_PATH=/nonexistent/lib",
                   "EMPTY=",
                   NULL};
    char *a[] = {"sh", "-c",
                 "env | grep -E '^(FOO|LD_AUDIT|LD_LIBRARY_PATH|EMPTY)=' | sort; echo --; "
                 "tr '\\0' '\\n' </proc/$PPID/environ | cut -d= -f1 | sort",
                 NULL};
    const char *dir = run_shim_env(a, env, &ex);
    assert_int_equal(ex.exit_code, 0);
    char buf[1024], want[1024];
    slurp(dir, "stdout", buf, sizeof buf);
    snprintf(want, sizeof want,
             "EMPTY=\nFOO=bar baz\nLD_AUDIT=/nonexistent/audit.so\n"
             "LD_LIBRARY_PATH=/nonexistent/lib\n--\n%s%sPATH\n%s",
             getenv("ASAN_OPTIONS") ? "ASAN_OPTIONS\n" : "",
             getenv("LSAN_OPTIONS") ? "LSAN_OPTIONS\n" : "",
             getenv("UBSAN_OPTIONS") ? "UBSAN_OPTIONS\n" : "");
    assert_string_equal(buf, want);
    cleanup(dir);

    /* An empty environment: the job runs with none (execvp falls back to its default path). */
    char *none[] = {NULL};
    char *b[] = {"/usr/bin/env", NULL};
    dir = run_shim_env(b, none, &ex);
    assert_int_equal(ex.exit_code, 0);
    slurp(dir, "stdout", buf, sizeof buf);
    assert_string_equal(buf, "");
    cleanup(dir);
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The job directory is the job's user's: records there may be forged or replaced. */
static void test_untrusted_records(void **state)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tessel-agent-XXXXXX");
    assert_non_null(mkdtemp(dir));
    pid_t shim, job;
    uint64_t start;
    char p[256], secret[256];

    /* pids <= 1 would make kill(-pid) reach every process or the caller's group. */
    put(dir, "pid", "123 456 1\n");
    errno = 0;
    assert_int_equal(tagent_read_pids(dir, &shim, &start, &job), -1);
    assert_int_equal(errno, EPROTO);
    put(dir, "pid", "123 456 -1\n");
    assert_int_equal(tagent_read_pids(dir, &shim, &start, &job), -1);
    put(dir, "pid", "0 456 77\n");
    assert_int_equal(tagent_read_pids(dir, &shim, &start, &job), -1);
    put(dir, "pid", "123 456 77\n");
    assert_int_equal(tagent_read_pids(dir, &shim, &start, &job), 0);
    assert_int_equal(job, 77);

    /* A symlink is not followed (a record pointing at another file). */
    snprintf(secret, sizeof secret, "%s/secret", dir);
    put(dir, "secret", "exit 0\n");
    snprintf(p, sizeof p, "%s/exit", dir);
    assert_int_equal(symlink(secret, p), 0);
    tagent_exit_t ex;
    errno = 0;
    assert_int_equal(tagent_read_exit(dir, &ex), -1);
    assert_int_equal(errno, EPROTO);
    unlink(p);

    /* A FIFO does not block the reader. */
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(tagent_read_exit(dir, &ex), -1);
    assert_int_equal(errno, EPROTO);
    unlink(p);

    /* tagent_child_of: this process is its parent's child, not pid 1's, nor a stranger's. */
    assert_true(tagent_child_of(getpid(), getppid()) || getppid() <= 1);
    assert_false(tagent_child_of(getpid(), getpid()));
    assert_false(tagent_child_of(1, 0));
    assert_false(tagent_child_of(getpid(), 1) && getppid() != 1);
    cleanup(dir);
}

/* The end record's " oom" mark (shim.c) and the out-of-memory count of a group's memory files:
 * v2 memory.events, v1 memory.oom_control; not the memory group: ENOENT. */
static void test_oom_records(void **state)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tessel-agent-XXXXXX");
    assert_non_null(mkdtemp(dir));
    tagent_exit_t ex;
    put(dir, "exit", "signal 9 oom\n");
    assert_int_equal(tagent_read_exit(dir, &ex), 1);
    assert_true(ex.sig == 9 && ex.oom);
    put(dir, "exit", "exit 137 oom\n");
    assert_int_equal(tagent_read_exit(dir, &ex), 1);
    assert_true(ex.exit_code == 137 && ex.oom);
    put(dir, "exit", "signal 9\n");
    assert_int_equal(tagent_read_exit(dir, &ex), 1);
    assert_true(ex.sig == 9 && !ex.oom);

    char procs[128];
    snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
    uint64_t n = 77;
    errno = 0;
    assert_int_equal(tagent_cgroup_oom_kills(procs, &n), -1);
    assert_int_equal(errno, ENOENT);
    assert_true(n == 77);
    put(dir, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
    assert_int_equal(tagent_cgroup_oom_kills(procs, &n), 0);
    assert_true(n == 2);
    put(dir, "memory.events", "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n");
    assert_int_equal(tagent_cgroup_oom_kills(procs, &n), 0);
    assert_true(n == 1); /* v2's file first */
    put(dir, "memory.events", "low 0\nhigh 0\n");
    assert_int_equal(tagent_cgroup_oom_kills(procs, &n), 0);
    assert_true(n == 2); /* no count in memory.events: v1's file */
    assert_int_equal(tagent_cgroup_oom_kills("no-slash", &n), -1);
    cleanup(dir);
}

/* The shim writes its records through an O_EXCL temporary: a symlink the job's user left
 * under the temporary's name is replaced, its target untouched. */
static void test_shim_no_follow(void **state)
{
    char dir[64], victim[128], p[256];
    snprintf(dir, sizeof dir, "/tmp/tessel-agent-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(victim, sizeof victim, "%s.victim", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/exit.tmp", dir);
    assert_int_equal(symlink(victim, p), 0);
    snprintf(p, sizeof p, "%s/pid.tmp", dir);
    assert_int_equal(symlink(victim, p), 0);
    char shim[4096];
    snprintf(shim, sizeof shim, "%s/bin/tessel-shim", getenv("TESSEL_BUILD") ?: "build");
    char *argv[] = {"true", NULL};
    tagent_spawn_t sp = {.shim = shim, .dir = dir, .cwd = dir, .argv = argv, .envp = environ};
    pid_t pid = tagent_spawn(&sp, NULL);
    assert_true(pid > 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    tagent_exit_t ex;
    assert_int_equal(tagent_read_exit(dir, &ex), 1);
    assert_int_equal(ex.exit_code, 0);
    char buf[64] = "";
    f = fopen(victim, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, "precious\n");
    unlink(victim);
    cleanup(dir);
}

/* What the job's user may have put at DIR/shim.log before a start (the directory is theirs):
 * a FIFO (no reader: its open would wait; with one: writes would fill and block), a symlink to
 * a file of someone else's, a hard link, a file of their own.  The spawn neither waits nor
 * writes through any of them: the shim runs, with a new shim.log that is the spawner's. */
static void test_shim_log_planted(void **state)
{
    char shim[4096];
    snprintf(shim, sizeof shim, "%s/bin/tessel-shim", getenv("TESSEL_BUILD") ?: "build");
    for (int kind = 0; kind < 5; kind++) {
        char dir[64], victim[128], log[256];
        snprintf(dir, sizeof dir, "/tmp/tessel-agent-XXXXXX");
        assert_non_null(mkdtemp(dir));
        snprintf(victim, sizeof victim, "%s.victim", dir);
        snprintf(log, sizeof log, "%s/shim.log", dir);
        FILE *f = fopen(victim, "w");
        assert_non_null(f);
        fputs("precious\n", f);
        fclose(f);
        int holder = -1;
        if (kind == 0) {
            assert_int_equal(mkfifo(log, 0666), 0); /* no reader */
        } else if (kind == 1) {
            assert_int_equal(mkfifo(log, 0666), 0); /* a reader that never reads */
            holder = open(log, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            assert_true(holder >= 0);
        } else if (kind == 2) {
            assert_int_equal(symlink(victim, log), 0);
        } else if (kind == 3) {
            assert_int_equal(link(victim, log), 0);
        } else {
            f = fopen(log, "w");
            assert_non_null(f);
            fclose(f);
            assert_int_equal(chown(log, 65534, 65534), 0); /* someone else's (we run as root) */
        }
        char *argv[] = {"sh", "-c", "echo ran", NULL};
        tagent_spawn_t sp = {.shim = shim, .dir = dir, .cwd = dir, .argv = argv, .envp = environ};
        alarm(20); /* a spawn that waits fails the test rather than hanging it */
        pid_t pid = tagent_spawn(&sp, NULL);
        assert_true(pid > 0);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        alarm(0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        tagent_exit_t ex;
        assert_int_equal(tagent_read_exit(dir, &ex), 1);
        assert_int_equal(ex.exit_code, 0);
        struct stat sb;
        assert_int_equal(lstat(log, &sb), 0);
        assert_true(S_ISREG(sb.st_mode) && sb.st_nlink == 1 && sb.st_uid == geteuid());
        char buf[64];
        f = fopen(victim, "r");
        assert_non_null(f);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        assert_string_equal(buf, "precious\n");
        if (holder >= 0)
            close(holder);
        unlink(victim);
        cleanup(dir);
    }
}

static void on_usr1(int sig)
{
    (void)sig;
}

/* The signal masks of /proc/PID/status (tessel-shim resets only the signals that are not at
 * their default in the job's process before its exec). */
static void test_sigmask(void **state)
{
    (void)state;
    static const char status[] = "Name:\tx\nSigPnd:\t0000000000000000\n"
                                 "SigBlk:\t0000000000010000\nSigIgn:\t0000000180001005\n"
                                 "SigCgt:\t0000000000004a02\n";
    uint64_t m = 42;
    assert_int_equal(tagent_sigmask_parse(status, "SigIgn", &m), 0);
    assert_true(m == 0x180001005ull); /* HUP, QUIT, PIPE (bits 0, 2, 12), 32 and 33 */
    assert_int_equal(tagent_sigmask_parse(status, "SigCgt", &m), 0);
    assert_true(m == 0x4a02ull);
    assert_int_equal(tagent_sigmask_parse(status, "SigBlk", &m), 0);
    assert_true(m == 0x10000ull);
    assert_int_equal(tagent_sigmask_parse("SigIgn:\t0000000000000000", "SigIgn", &m), 0);
    assert_true(m == 0); /* the first line, and the last without a newline */
    assert_int_equal(tagent_sigmask_parse("SigIgn:\tFFFFFFFFFFFFFFFF\n", "SigIgn", &m), 0);
    assert_true(m == ~0ull);
    /* Missing or malformed: refused, *mask untouched. */
    static const char *const bad[] = {
        "",
        "Name:\tx\n",
        "SigIgn:\t000000000000000\n",    /* 15 digits */
        "SigIgn:\t00000000000000000\n",  /* 17 */
        "SigIgn:\t00000000000000g0\n",   /* not hex */
        "SigIgn:\t-000000000000001\n",   /* a sign */
        "SigIgn:\t0000000000000000 x\n", /* trailing text */
        "XSigIgn:\t0000000000000000\n",  /* another key */
        "SigIgnX:\t0000000000000000\n",
        "SigBlk:\t0000000000000000\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        m = 42;
        errno = 0;
        assert_int_equal(tagent_sigmask_parse(bad[i], "SigIgn", &m), -1);
        assert_int_equal(errno, EINVAL);
        assert_true(m == 42);
    }
    /* This process: what it ignores or catches is seen, what it leaves at default is not. */
    signal(SIGUSR2, SIG_IGN);
    signal(SIGUSR1, on_usr1);
    signal(SIGURG, SIG_DFL);
    uint64_t now = tagent_sig_not_default();
    assert_true(now >> (SIGUSR2 - 1) & 1);
    assert_true(now >> (SIGUSR1 - 1) & 1);
    assert_false(now >> (SIGURG - 1) & 1);
    assert_false(now >> (SIGKILL - 1) & 1);
    signal(SIGUSR2, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
    now = tagent_sig_not_default();
    assert_false(now >> (SIGUSR2 - 1) & 1);
    assert_false(now >> (SIGUSR1 - 1) & 1);
}

/* Run fn in a child and wait for it at most 10 s: 1 when it ended with exit status 0, 0 when
 * it failed; a child still running then (waiting on a file system that never answers) is
 * killed and the test fails: "did not hang" is what is asserted, not a time. */
static int in_child(void (*fn)(const char *), const char *arg)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fn(arg);
        _exit(0);
    }
    for (int i = 0; i < 1000; i++) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return WIFEXITED(st) && WEXITSTATUS(st) == 0;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fail_msg("the call did not return within 10 s (it waits on the mounted file system)");
    return 0;
}

/* A FUSE file system whose server never answers, mounted on mnt (as fusermount3 mounts one for
 * any user where fuse3 is installed): the /dev/fuse descriptor, to close at the end. */
static int mount_stalled(const char *mnt)
{
    if (geteuid() != 0)
        fail_msg("must run as root (the test mounts FUSE)");
    int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        fail_msg("/dev/fuse: %s (the FUSE module is needed for this test)", strerror(errno));
    char opts[128];
    snprintf(opts, sizeof opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
    if (mount("tessel-test", mnt, "fuse", MS_NOSUID | MS_NODEV, opts) < 0)
        fail_msg("mount fuse on %s: %s", mnt, strerror(errno));
    return fd;
}

static void read_pid_exdev(const char *dir)
{
    pid_t s, j;
    uint64_t st;
    errno = 0;
    _exit(tagent_read_pids(dir, &s, &st, &j) == -1 && errno == EXDEV ? 0 : 1);
}

static void read_exit_exdev(const char *dir)
{
    tagent_exit_t ex;
    errno = 0;
    _exit(tagent_read_exit(dir, &ex) == -1 && errno == EXDEV ? 0 : 1);
}

/* Something mounted over the job's directory (a FUSE file system of its user's whose server
 * never answers): the records there are not read through it (EXDEV at once), and the shim's
 * log is not opened through it (the shim starts with /dev/null as its log). */
static void test_mounted_dir(void **state)
{
    char top[64], dir[96];
    snprintf(top, sizeof top, "/tmp/tessel-agent-XXXXXX");
    assert_non_null(mkdtemp(top));
    snprintf(dir, sizeof dir, "%s/7", top);
    assert_int_equal(mkdir(dir, 0755), 0);
    put(dir, "pid", "123 456 77\n");
    put(dir, "exit", "exit 0\n");
    int fuse = mount_stalled(dir);
    int ok_pid = in_child(read_pid_exdev, dir);
    int ok_exit = in_child(read_exit_exdev, dir);
    close(fuse);
    umount2(dir, MNT_DETACH);
    assert_true(ok_pid);
    assert_true(ok_exit);
    cleanup(top);
}

/* --exit-file: the shim writes its record there, in a directory of tesseld's own, never in the
 * job's directory.  A process the job (of user nobody) leaves behind rewrites DIR/exit after
 * the job's end and tries the record itself: the record still says how the job ended. */
static void test_shim_exit_file(void **state)
{
    if (geteuid() != 0)
        fail_msg("must run as root (the job runs as nobody)");
    struct passwd *pw = getpwnam("nobody");
    if (!pw)
        fail_msg("no 'nobody' account");
    char dir[64], recdir[64], rec[96], prec[96], shim[4096];
    snprintf(dir, sizeof dir, "/tmp/tessel-agent-XXXXXX");
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chown(dir, pw->pw_uid, pw->pw_gid), 0);
    snprintf(recdir, sizeof recdir, "/tmp/tessel-agent-starts-XXXXXX");
    assert_non_null(mkdtemp(recdir)); /* 0700, root's */
    snprintf(rec, sizeof rec, "%s/7.exit", recdir);
    snprintf(prec, sizeof prec, "%s/7.pid", recdir);
    snprintf(shim, sizeof shim, "%s/bin/tessel-shim", getenv("TESSEL_BUILD") ?: "build");
    char script[1024];
    snprintf(script, sizeof script,
             "(sleep 0.5; echo 'exit 0' > %s/exit; echo 'exit 0' > %s; echo '2 3 4' > %s/p.tmp; "
             "mv -f %s/p.tmp %s/pid; echo '2 3 4' > %s; touch %s/forged) >/dev/null 2>&1 & exit 3",
             dir, rec, dir, dir, dir, prec, dir);
    char *argv[] = {"sh", "-c", script, NULL};
    tagent_spawn_t sp = {.shim = shim,
                         .dir = dir,
                         .exit_file = rec,
                         .pid_file = prec,
                         .cwd = dir,
                         .argv = argv,
                         .envp = environ,
                         .set_user = true,
                         .uid = pw->pw_uid,
                         .gid = pw->pw_gid};
    tsl_error_t err;
    pid_t pid = tagent_spawn(&sp, &err);
    assert_true(pid > 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* The process left behind has done its worst (it touches "forged" last). */
    char forged[96];
    snprintf(forged, sizeof forged, "%s/forged", dir);
    for (int i = 0; i < 1000 && access(forged, F_OK) < 0; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(access(forged, F_OK), 0);
    tagent_exit_t ex;
    assert_int_equal(tagent_read_exit_file(rec, &ex), 1);
    assert_int_equal(ex.exit_code, 3); /* the job's own end, not the forgery */
    assert_int_equal(tagent_read_exit(dir, &ex), 1);
    assert_int_equal(ex.exit_code, 0); /* what the job's user wrote in its directory */
    struct stat sb;
    assert_int_equal(lstat(rec, &sb), 0);
    assert_int_equal(sb.st_uid, 0);
    /* The pid record is the shim's ("SHIM START JOB"); jobs/<id>/pid is what the user wrote. */
    pid_t s, j;
    uint64_t start;
    assert_int_equal(tagent_read_pids_file(prec, &s, &start, &j), 0);
    assert_int_equal(s, pid);
    assert_true(j > 1 && j != 4 && start > 0);
    assert_int_equal(tagent_read_pids(dir, &s, &start, &j), 0);
    assert_int_equal(j, 4);
    assert_int_equal(lstat(prec, &sb), 0);
    assert_int_equal(sb.st_uid, 0);
    assert_int_equal(unlink(prec), 0);
    assert_int_equal(symlink(rec, prec), 0);
    errno = 0;
    assert_int_equal(tagent_read_pids_file(prec, &s, &start, &j), -1);
    assert_int_equal(errno, EPROTO);
    unlink(prec);
    errno = 0;
    assert_int_equal(tagent_read_pids_file(prec, &s, &start, &j), -1);
    assert_int_equal(errno, ENOENT);
    /* A symlink at the record's path is not followed. */
    assert_int_equal(unlink(rec), 0);
    snprintf(forged, sizeof forged, "%s/exit", dir);
    assert_int_equal(symlink(forged, rec), 0);
    errno = 0;
    assert_int_equal(tagent_read_exit_file(rec, &ex), -1);
    assert_int_equal(errno, EPROTO);
    unlink(rec);
    assert_int_equal(tagent_read_exit_file(rec, &ex), 0); /* none yet */
    cleanup(dir);
    cleanup(recdir);
}

/* A record in a start lock's slot (runner.h, TAGENT_LOCK_*): there only when its first byte is
 * not NUL and a newline ends it before any NUL, within the slot; a read that overlaps the
 * shim's pwrite sees either none or the whole record. */
static void test_lock_record(void **state)
{
    static const struct {
        const char slot[9]; /* the slot's 8 bytes (the rest NUL) */
        size_t n;           /* bytes read (the file may end inside the slot) */
        int found;
        const char *rec;
    } cases[] = {
        {"exit 0\n", 8, 1, "exit 0\n"},
        {"exit 0\nx", 8, 1, "exit 0\n"}, /* what follows the newline is not the record's */
        {"", 8, 0, ""},                  /* not written */
        {"", 0, 0, ""},                  /* the file ends before the slot */
        {"exit 1", 8, 0, ""},            /* being written: no newline yet */
        {"\0xit 0\n", 8, 0, ""},         /* being written: its first byte not yet */
        {"exit 0\n", 4, 0, ""},          /* the file ends inside it */
        {"12345678", 8, 0, ""},          /* no newline within the slot */
        {"exi\0 0\n", 8, 0, ""},         /* a NUL before the newline */
        {"\n", 8, 1, "\n"},              /* an empty line is a record (parsed later) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[24] = {0}, out[16];
        memcpy(buf + 8, cases[i].slot, 8);
        int got = tagent_lock_record(buf, 8 + cases[i].n, 8, 16, out, sizeof out);
        if (got != cases[i].found || (got && strcmp(out, cases[i].rec) != 0))
            fail_msg("case %zu: got %d '%s'", i, got, got ? out : "");
    }
    /* A record longer than out can take is none. */
    char buf[16] = "exit 12345\n", small[6];
    assert_int_equal(tagent_lock_record(buf, sizeof buf, 0, sizeof buf, small, sizeof small), 0);
    /* An empty slot (off at or past the end). */
    assert_int_equal(tagent_lock_record(buf, 4, 8, 16, small, sizeof small), 0);
}

/* --lock-records: the shim writes its pid and exit records into the start lock (the
 * descriptor it holds) at TAGENT_LOCK_PID_OFF and TAGENT_LOCK_EXIT_OFF, and makes no file for
 * them; the header tesseld wrote stays. */
static void test_shim_lock_records(void **state)
{
    char dir[64], lock[96], shim[4096];
    snprintf(dir, sizeof dir, "/tmp/tessel-agent-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(lock, sizeof lock, "%s/7.lock", dir);
    snprintf(shim, sizeof shim, "%s/bin/tessel-shim", getenv("TESSEL_BUILD") ?: "build");
    int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    assert_true(lfd > 2);
    size_t hl = strlen(TAGENT_LOCK_HEADER);
    assert_int_equal(pwrite(lfd, TAGENT_LOCK_HEADER, hl, 0), (ssize_t)hl);
    assert_int_equal(tagent_lock_has_records(lfd), 1);
    pid_t s, j;
    uint64_t start;
    tagent_exit_t ex;
    errno = 0;
    assert_int_equal(tagent_read_lock_pids(lfd, &s, &start, &j), -1);
    assert_int_equal(errno, ENOENT); /* none yet */
    assert_int_equal(tagent_read_lock_exit(lfd, &ex), 0);
    char *argv[] = {"sh", "-c", "exit 5", NULL};
    tagent_spawn_t sp = {.shim = shim,
                         .dir = dir,
                         .lock_fd = lfd,
                         .lock_records = true,
                         .cwd = dir,
                         .argv = argv,
                         .envp = environ};
    tsl_error_t err;
    pid_t pid = tagent_spawn(&sp, &err);
    assert_true(pid > 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(tagent_read_lock_exit(lfd, &ex), 1);
    assert_int_equal(ex.exit_code, 5);
    assert_int_equal(tagent_read_lock_pids(lfd, &s, &start, &j), 0);
    assert_int_equal(s, pid);
    assert_true(j > 1 && start > 0);
    assert_int_equal(tagent_lock_has_records(lfd), 1);
    /* No record file beside the lock or in the job's directory but DIR/pid (the user's copy). */
    char path[128];
    snprintf(path, sizeof path, "%s/exit", dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/7.exit", dir);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/pid", dir);
    assert_int_equal(access(path, F_OK), 0);
    /* Another file (a v2 lock) has no records. */
    assert_int_equal(ftruncate(lfd, 0), 0);
    assert_int_equal(pwrite(lfd, "exit record: <id>.exit\n", 23, 0), 23);
    assert_int_equal(tagent_lock_has_records(lfd), 0);
    close(lfd);
    cleanup(dir);
}

/* The folder specs the shim takes (--folder NAME[:ro]): tesseld's names, ":ro" or nothing. */
static void test_folder_specs(void **state)
{
    static const struct {
        const char *spec;
        bool ok, ro;
    } cases[] = {
        {"data", true, false},
        {"data:ro", true, true},
        {"a", true, false},
        {"x_1-b", true, false},
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true, false},   /* 32 */
        {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false, false}, /* 33 */
        {"data:rw", false, false},
        {"data:ro:ro", false, false},
        {"data:", false, false},
        {"Data", false, false},
        {"1data", false, false},
        {"", false, false},
        {"..", false, false},
        {"../x", false, false},
        {"a/b", false, false},
        {"-x", false, false},
        {".x", false, false},
        {"a b", false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool ro = false;
        bool ok = tagent_jobns_folder_valid(cases[i].spec, &ro);
        if (ok != cases[i].ok || (ok && ro != cases[i].ro))
            fail_msg("'%s': got %d/%d", cases[i].spec, ok, ro);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_spec),
        cmocka_unit_test(test_uuid),
        cmocka_unit_test(test_quota),
        cmocka_unit_test(test_cgroup_layout),
        cmocka_unit_test(test_shim),
        cmocka_unit_test(test_untrusted_records),
        cmocka_unit_test(test_shim_no_follow),
        cmocka_unit_test(test_cgroup_sweep),
        cmocka_unit_test(test_shim_log_planted),
        cmocka_unit_test(test_shim_env),
        cmocka_unit_test(test_oom_records),
        cmocka_unit_test(test_sigmask),
        cmocka_unit_test(test_mounted_dir),
        cmocka_unit_test(test_shim_exit_file),
        cmocka_unit_test(test_lock_record),
        cmocka_unit_test(test_shim_lock_records),
        cmocka_unit_test(test_folder_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
