/* test_config.c - the table of tesseld's options (config.c) and its log levels (log.c), with
 * no daemon: the defaults; a good file; every kind of bad value, an unknown key, a key given
 * twice, a section, a malformed line, a test-only flag in a file (each refused with file, line
 * and key, the settings untouched); flags over the file; options that contradict each other;
 * what a reload sees as changed; the owner check of the file as root; the level of each kind
 * of existing message and the level filter; the removal of an old job's directory, which
 * follows no symbolic link its user left there. */
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/retention.h"
#include "daemon/test/tmpdir.h"

/* main.c's clock (retention.c asks it for the cutoff). */
int64_t tessd_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Double of launch.c's list of start steps (config.c asks it about --test-kill-at). */
bool tessd_test_kill_step_valid(const char *step);
bool tessd_test_kill_step_valid(const char *step)
{
    return strcmp(step, "running") == 0 || strcmp(step, "spawned") == 0;
}

typedef struct {
    char dir[64];
    char path[128];
    tessd_conf_t c;
} fix_t;

static int setup(void **state)
{
    fix_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(test_tmpdir(f->dir, sizeof f->dir, "config"), 0);
    snprintf(f->path, sizeof f->path, "%s/tesseld.conf", f->dir);
    tsl_error_t err;
    assert_int_equal(tessd_conf_defaults(&f->c, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fix_t *f = *state;
    tessd_conf_free(&f->c);
    test_tmpdir_remove(f->dir);
    free(f);
    return 0;
}

static void write_file(const fix_t *f, const char *text)
{
    FILE *fp = fopen(f->path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

static const char *text_of(const tessd_conf_t *c, const char *name)
{
    for (size_t i = 0; i < tessd_nopts; i++)
        if (strcmp(tessd_opt_name(i), name) == 0)
            return c->text[i];
    fail_msg("no option %s", name);
    return NULL;
}

static void test_defaults(void **state)
{
    fix_t *f = *state;
    assert_int_equal(f->c.kill_wait, 30);
    assert_int_equal(f->c.log_limit, 64ull << 20);
    assert_int_equal(f->c.job_log_retention, 30 * 86400);
    assert_int_equal(f->c.reserve_after, 900);
    assert_true(f->c.min_runtime == 60);
    assert_int_equal(f->c.max_body, 64 * 1024);
    assert_int_equal(f->c.disk_reserve, 256ull << 20);
    assert_int_equal(f->c.log_level, TESSD_LOG_INFO);
    assert_int_equal(f->c.local_users, 0);
    assert_string_equal(f->c.listen, "127.0.0.1:7470");
    /* Each option's text is its table default (aliases keep their target's). */
    for (size_t i = 0; i < tessd_nopts; i++)
        if (strcmp(tessd_opt_name(i), "system") && strcmp(tessd_opt_name(i), "personal") &&
            strcmp(tessd_opt_name(i), "no-root-jobs"))
            assert_string_equal(f->c.text[i], tessd_opt_default(i));
}

static void test_good_file(void **state)
{
    fix_t *f = *state;
    write_file(f, "# a comment\n"
                  "; another\n"
                  "\n"
                  "kill-wait = 2m\n"
                  "log-limit=1M\n"
                  "  job-log-retention = 7d\n"
                  "log-level = debug\n"
                  "local-users = existing\n"
                  "no-cgroups = yes\n"
                  "disk-reserve = 5%\n"
                  "listen = localhost:0\n"
                  "submit-rate = 0.5\n"
                  "reserve-after = 90m\n");
    tsl_error_t err;
    assert_int_equal(tessd_conf_load_file(&f->c, f->path, &err), 0);
    assert_int_equal(f->c.kill_wait, 120);
    assert_int_equal(f->c.log_limit, 1 << 20);
    assert_int_equal(f->c.job_log_retention, 7 * 86400);
    assert_int_equal(f->c.log_level, TESSD_LOG_DEBUG);
    assert_int_equal(f->c.local_users, 1);
    assert_true(f->c.no_cgroups);
    assert_true(f->c.disk_reserve_pct == 5 && f->c.disk_reserve == 0);
    assert_string_equal(f->c.listen, "localhost:0");
    assert_true(f->c.submit_rate == 0.5);
    assert_int_equal(f->c.reserve_after, 5400);
    /* Normalised texts: a reload compares these. */
    assert_string_equal(text_of(&f->c, "reserve-after"), "1h30m");
    assert_string_equal(text_of(&f->c, "no-cgroups"), "yes");
    /* Keys the file does not give keep their values. */
    assert_int_equal(f->c.max_connections, 1024);
}

/* A one-key file KEY = VALUE on line 2 is refused with "PATH:2: KEY: WANT", c untouched. */
static void refused(fix_t *f, const char *line, const char *want)
{
    char text[512], msg[512];
    snprintf(text, sizeof text, "# first line\n%s\nlog-level = debug\n", line);
    write_file(f, text);
    tsl_error_t err;
    err.text[0] = '\0';
    assert_int_equal(tessd_conf_load_file(&f->c, f->path, &err), -1);
    snprintf(msg, sizeof msg, "%s:2: %s", f->path, want);
    if (strncmp(err.text, msg, strlen(msg)) != 0)
        fail_msg("'%s': got '%s', want '%s...'", line, err.text, msg);
    /* Nothing of the bad file was taken, not even its good line 3. */
    assert_int_equal(f->c.log_level, TESSD_LOG_INFO);
    assert_string_equal(text_of(&f->c, "log-level"), "info");
}

static void test_bad_values(void **state)
{
    fix_t *f = *state;
    refused(f, "kill-wait = soon", "kill-wait: ");
    refused(f, "kill-wait = 2h", "kill-wait: at most 1h");
    refused(f, "log-limit = lots", "log-limit: ");
    refused(f, "max-body = 1", "max-body: expected a size from 1K to 16M");
    refused(f, "max-body = 17M", "max-body: expected a size from 1K to 16M");
    refused(f, "max-connections = 0", "max-connections: expected a whole number from 1 to 65536");
    refused(f, "max-connections = -5", "max-connections: expected a whole number");
    refused(f, "request-timeout = 10s", "request-timeout: expected a whole number");
    refused(f, "submit-rate = fast", "submit-rate: expected submissions a second");
    refused(f, "submit-rate = -1", "submit-rate: expected submissions a second");
    refused(f, "min-runtime = -1", "min-runtime: expected seconds >= 0");
    refused(f, "reserve-after = 30", "reserve-after: ");
    refused(f, "reserve-after = 8d", "reserve-after: ");
    refused(f, "job-log-retention = forever", "job-log-retention: ");
    refused(f, "log-level = loud", "log-level: expected error, warning, info or debug");
    refused(f, "log = journal", "log: expected auto, syslog or stderr");
    refused(f, "durability = maybe", "durability: expected normal or full");
    refused(f, "local-users = all", "local-users: expected create or existing");
    refused(f, "no-cgroups = perhaps", "no-cgroups: expected yes or no");
    refused(f, "listen = nope", "listen: expected HOST:PORT");
    refused(f, "listen = example.org:80", "listen: HOST must be a numeric IPv4 address");
    refused(f, "listen = 127.0.0.1:70000", "listen: expected HOST:PORT");
    refused(f, "disk-reserve = 100%", "disk-reserve: expected a percentage");
    refused(f, "disk-reserve = x", "disk-reserve: ");
    refused(f, "socket = relative.sock", "socket: expected an absolute path");
    refused(f, "shim = bin/tessel-shim", "shim: expected an absolute path");
    refused(f, "fake-gpus = 2xRTX", "fake-gpus: ");
    refused(f, "policy = nosuch", "policy: ");
    refused(f, "kill-wait = 30s # not a comment after a value", "kill-wait: ");
}

static void test_bad_keys(void **state)
{
    fix_t *f = *state;
    refused(f, "kil-wait = 30s", "kil-wait: unknown key");
    /* The --test-* options and the flag aliases are not keys of the file. */
    refused(f, "test-tick-ms = 10", "test-tick-ms: unknown key");
    refused(f, "system = yes", "system: unknown key");
    refused(f, "[tesseld]", "[tesseld]: the file has no sections");
    refused(f, "kill-wait", "expected KEY = VALUE");

    char text[] = "kill-wait = 10s\nlog-level = debug\nkill-wait = 20s\n";
    write_file(f, text);
    tsl_error_t err;
    assert_int_equal(tessd_conf_load_file(&f->c, f->path, &err), -1);
    char want[256];
    snprintf(want, sizeof want, "%s:3: kill-wait: given twice", f->path);
    assert_string_equal(err.text, want);
    assert_int_equal(f->c.kill_wait, 30);

    snprintf(want, sizeof want, "%s/none.conf: ", f->dir);
    char missing[160];
    snprintf(missing, sizeof missing, "%s/none.conf", f->dir);
    assert_int_equal(tessd_conf_load_file(&f->c, missing, &err), -1);
    assert_memory_equal(err.text, want, strlen(want));
}

static void test_flags_over_file(void **state)
{
    fix_t *f = *state;
    write_file(f, "kill-wait = 10s\nlog-level = debug\nsubmit-burst = 7\n");
    char *argv[] = {"tesseld",    "--kill-wait", "20s",   "--no-cgroups",
                    "--personal", "--log-level", "error", NULL};
    tessd_args_t args;
    tsl_error_t err;
    assert_int_equal(tessd_args_parse(7, argv, &args, &err), 0);
    assert_int_equal(tessd_conf_load_file(&f->c, f->path, &err), 0);
    assert_int_equal(tessd_conf_apply_args(&f->c, &args, &err), 0);
    assert_int_equal(f->c.kill_wait, 20);
    assert_int_equal(f->c.log_level, TESSD_LOG_ERROR);
    assert_int_equal(f->c.submit_burst, 7); /* the file's, no flag */
    assert_true(f->c.no_cgroups);
    assert_int_equal(f->c.mode, 2);
    assert_string_equal(text_of(&f->c, "mode"), "personal");
    tessd_args_free(&args);

    /* A bad flag names the flag and its value. */
    char *bad[] = {"tesseld", "--config", "/x.conf", "--kill-wait", "x", NULL};
    assert_int_equal(tessd_args_parse(5, bad, &args, &err), 0);
    assert_string_equal(args.config, "/x.conf");
    assert_int_equal(tessd_conf_apply_args(&f->c, &args, &err), -1);
    assert_memory_equal(err.text, "--kill-wait x: ", 15);
    tessd_args_free(&args);

    char *both[] = {"tesseld", "--system", "--personal", NULL};
    assert_int_equal(tessd_args_parse(3, both, &args, &err), -1);
    assert_string_equal(err.text, "give one of --system and --personal");
    char *stray[] = {"tesseld", "--check-config", "stray", NULL};
    assert_int_equal(tessd_args_parse(3, stray, &args, &err), -1);
    assert_string_equal(err.text, "stray: unexpected argument");
}

static void test_check(void **state)
{
    fix_t *f = *state;
    tsl_error_t err;
    assert_int_equal(tessd_conf_check(&f->c, &err), 0);
    write_file(f, "no-socket = yes\nno-listen = yes\n");
    assert_int_equal(tessd_conf_load_file(&f->c, f->path, &err), 0);
    assert_int_equal(tessd_conf_check(&f->c, &err), -1);
    assert_non_null(strstr(err.text, "leave no way to reach tesseld"));
}

static void count_changed(size_t i, void *ud)
{
    size_t *seen = ud;
    seen[0]++;
    seen[1] = i;
}

static void test_diff_take(void **state)
{
    fix_t *f = *state;
    tessd_conf_t next;
    tsl_error_t err;
    assert_int_equal(tessd_conf_defaults(&next, &err), 0);
    size_t seen[2] = {0, 0};
    tessd_conf_diff(&f->c, &next, count_changed, seen);
    assert_int_equal(seen[0], 0);
    write_file(f, "log-level = warning\n");
    assert_int_equal(tessd_conf_load_file(&next, f->path, &err), 0);
    tessd_conf_diff(&f->c, &next, count_changed, seen);
    assert_int_equal(seen[0], 1);
    assert_string_equal(tessd_opt_name(seen[1]), "log-level");
    assert_true(tessd_opt_flags(seen[1]) & TESSD_OPT_LIVE);
    tessd_conf_take(&f->c, &next, seen[1]);
    assert_int_equal(f->c.log_level, TESSD_LOG_WARNING);
    assert_string_equal(text_of(&f->c, "log-level"), "warning");
    tessd_conf_free(&next);
}

/* As root (tesseld's case in system mode) the file and its directory must be root's and
 * writable by no one else.  Run as another user, a file of that user is refused as well. */
static void test_owner(void **state)
{
    fix_t *f = *state;
    tsl_error_t err;
    write_file(f, "log-level = debug\n");
    assert_int_equal(chmod(f->dir, 0755), 0);
    assert_int_equal(chmod(f->path, 0666), 0);
    assert_int_equal(tessd_check_root_owned(f->path, "the configuration file", &err), -1);
    assert_non_null(strstr(err.text, "must be owned by root and writable by no one else"));
    assert_int_equal(chmod(f->path, 0644), 0);
    assert_int_equal(tessd_check_root_owned(f->path, "the configuration file", &err),
                     geteuid() == 0 ? 0 : -1);
    assert_int_equal(chmod(f->dir, 0777), 0);
    assert_int_equal(tessd_check_root_owned(f->path, "the configuration file", &err), -1);
    assert_non_null(strstr(err.text, "configuration file's directory"));
    assert_int_equal(chmod(f->dir, 0700), 0);
}

/* tessel-slurm-submit, started as every account (review of the submitter, 2026-11-28, L2): as
 * root only a regular file of root's, writable by no one else, executable by others; else one
 * tesseld may run. */
static void test_submitter(void **state)
{
    fix_t *f = *state;
    tsl_error_t err;
    bool root = geteuid() == 0;
    write_file(f, "#!/bin/sh\n");
    assert_int_equal(chmod(f->dir, 0755), 0);
    assert_int_equal(chmod(f->path, 0711), 0);
    assert_int_equal(tessd_check_submitter(f->path, root, &err), 0); /* as installed */
    assert_int_equal(tessd_check_submitter(f->path, false, &err), 0);
    assert_int_equal(chmod(f->path, 0775), 0); /* a group may write it */
    assert_int_equal(tessd_check_submitter(f->path, true, &err), -1);
    assert_non_null(strstr(err.text, "must be owned by root and writable by no one else"));
    assert_int_equal(chmod(f->path, 0700), 0); /* the accounts cannot run it */
    assert_int_equal(tessd_check_submitter(f->path, true, &err), -1);
    if (root)
        assert_non_null(strstr(err.text, "must be executable by others (mode 0700"));
    assert_int_equal(chmod(f->path, 0644), 0); /* not executable at all */
    assert_int_equal(tessd_check_submitter(f->path, false, &err), -1);
    assert_int_equal(tessd_check_submitter(f->dir, false, &err), -1); /* a directory */
    assert_non_null(strstr(err.text, "not a regular file"));
    char none[200];
    snprintf(none, sizeof none, "%s/none", f->dir);
    assert_int_equal(tessd_check_submitter(none, root, &err), -1);
    assert_non_null(strstr(err.text, "No such file"));
    assert_int_equal(chmod(f->path, 0711), 0);
    assert_int_equal(chmod(f->dir, 0777), 0); /* its directory writable by all */
    assert_int_equal(tessd_check_submitter(f->path, true, &err), -1);
    assert_non_null(strstr(err.text, "tessel-slurm-submit's directory"));
    assert_int_equal(chmod(f->dir, 0700), 0);
}

static void test_log_levels(void **state)
{
    (void)state;
    assert_int_equal(tessd_log_level_of("warning: %s: cannot resolve its path"), TESSD_LOG_WARNING);
    assert_int_equal(tessd_log_level_of("store: %s: %s"), TESSD_LOG_ERROR);
    assert_int_equal(tessd_log_level_of("job %lld: cannot record its end: %s"), TESSD_LOG_ERROR);
    assert_int_equal(tessd_log_level_of("job %lld: not preempted: %s"), TESSD_LOG_WARNING);
    assert_int_equal(tessd_log_level_of("job %lld: %s"), TESSD_LOG_WARNING);
    assert_int_equal(tessd_log_level_of("job %lld started (user %s, shim pid %d, GPUs [%s])"),
                     TESSD_LOG_INFO);
    assert_int_equal(tessd_log_level_of("listening on %s%s"), TESSD_LOG_INFO);

    /* The filter: to stderr (a file here), warning and above. */
    char path[] = "/tmp/tessel-test-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(STDERR_FILENO);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    tessd_log_open(TESSD_LOGTO_STDERR, TESSD_LOG_WARNING);
    assert_false(tessd_log_syslog());
    tessd_log("listening on %s", "x");
    tessd_log("warning: %s", "low");
    tessd_logl(TESSD_LOG_ERROR, "broken %d", 1);
    tessd_logl(TESSD_LOG_DEBUG, "detail");
    tessd_log_set_level(TESSD_LOG_DEBUG);
    tessd_logl(TESSD_LOG_DEBUG, "detail %d", 2);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    char buf[512] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    assert_true(n > 0);
    close(fd);
    unlink(path);
    assert_string_equal(buf, "tesseld: warning: low\n"
                             "tesseld: error: broken 1\n"
                             "tesseld: debug: detail 2\n");
}

static void test_remove_tree(void **state)
{
    fix_t *f = *state;
    char p[256];
    /* Outside the job's directory: must survive. */
    snprintf(p, sizeof p, "%s/precious", f->dir);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fclose(fp);
    snprintf(p, sizeof p, "%s/keepdir", f->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/keepdir/inside", f->dir);
    fp = fopen(p, "w");
    assert_non_null(fp);
    fclose(fp);
    /* jobs/7: logs, a nested directory, links to a file and a directory outside. */
    const char *const mk[] = {"jobs", "jobs/7", "jobs/7/a", "jobs/7/a/b"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", f->dir, mk[i]);
        assert_int_equal(mkdir(p, 0700), 0);
    }
    const char *const files[] = {"jobs/7/stdout", "jobs/7/stderr", "jobs/7/a/b/deep"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", f->dir, files[i]);
        fp = fopen(p, "w");
        assert_non_null(fp);
        fclose(fp);
    }
    char target[256];
    snprintf(target, sizeof target, "%s/precious", f->dir);
    snprintf(p, sizeof p, "%s/jobs/7/link", f->dir);
    assert_int_equal(symlink(target, p), 0);
    snprintf(target, sizeof target, "%s/keepdir", f->dir);
    snprintf(p, sizeof p, "%s/jobs/7/a/dirlink", f->dir);
    assert_int_equal(symlink(target, p), 0);

    snprintf(p, sizeof p, "%s/jobs", f->dir);
    int jfd = open(p, O_RDONLY | O_DIRECTORY);
    assert_true(jfd >= 0);
    assert_int_equal(tessd_remove_tree(jfd, "7"), 0);
    struct stat st;
    assert_int_equal(fstatat(jfd, "7", &st, AT_SYMLINK_NOFOLLOW), -1);
    snprintf(p, sizeof p, "%s/precious", f->dir);
    assert_int_equal(stat(p, &st), 0);
    snprintf(p, sizeof p, "%s/keepdir/inside", f->dir);
    assert_int_equal(stat(p, &st), 0);
    /* A name that is a link is removed itself, never followed. */
    snprintf(target, sizeof target, "%s/keepdir", f->dir);
    assert_int_equal(symlinkat(target, jfd, "8"), 0);
    assert_int_equal(tessd_remove_tree(jfd, "8"), 0);
    assert_int_equal(fstatat(jfd, "8", &st, AT_SYMLINK_NOFOLLOW), -1);
    assert_int_equal(stat(p, &st), 0);
    close(jfd);
}

/* dir/name with n empty files f0..f<n-1>. */
static void fill_dir(const char *dir, const char *name, int n)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(mkdir(p, 0700), 0);
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s/f%d", dir, name, i);
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        close(fd);
    }
}

/* The removal in steps: each step removes at most its budget of entries and goes on at the next
 * from what is left; links are removed, not followed; the tree is gone after as many steps as
 * its entries need, and a tree that is not there is done at once. */
static void test_remove_tree_step(void **state)
{
    fix_t *f = *state;
    char p[256];
    snprintf(p, sizeof p, "%s/precious", f->dir);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fclose(fp);
    snprintf(p, sizeof p, "%s/jobs", f->dir);
    assert_int_equal(mkdir(p, 0711), 0);
    fill_dir(p, "7", 100);
    fill_dir(p, "7/a", 30);
    char target[256], link[256];
    snprintf(target, sizeof target, "%s/precious", f->dir);
    snprintf(link, sizeof link, "%s/jobs/7/a/link", f->dir);
    assert_int_equal(symlink(target, link), 0);
    /* 100 + 30 files, a link, two directories: 133 entries. */
    int jfd = open(p, O_RDONLY | O_DIRECTORY);
    assert_true(jfd >= 0);
    long total = 0;
    int steps = 0, r;
    do {
        long budget = 7, removed = 0;
        r = tessd_remove_tree_step(jfd, "7", &budget, &removed);
        assert_true(r == 0 || r == 1);
        assert_true(removed <= 7); /* never more than the budget */
        assert_true(budget >= 0);
        if (r == 0)
            assert_true(removed > 0); /* and each step gets on */
        total += removed;
        steps++;
    } while (r == 0 && steps < 1000);
    assert_int_equal(r, 1);
    assert_int_equal(total, 133);
    assert_true(steps >= 133 / 7);
    struct stat st;
    assert_int_equal(fstatat(jfd, "7", &st, AT_SYMLINK_NOFOLLOW), -1);
    assert_int_equal(stat(target, &st), 0); /* the link's target is left */
    long budget = 7, removed = 0;
    assert_int_equal(tessd_remove_tree_step(jfd, "7", &budget, &removed), 1); /* gone: done */
    assert_int_equal(removed, 0);
    close(jfd);
}

/* A sweep of the retention runs in steps: each call of tessd_retention_run takes at most
 * --test-retention-step entries, the sweep is under way (busy) between them, and only the
 * directory of the job that ended before the cutoff goes; the store's jobs stay. */
static void test_retention_steps(void **state)
{
    fix_t *f = *state;
    tessd_t *d = calloc(1, sizeof *d);
    assert_non_null(d);
    pthread_mutex_init(&d->lock, NULL);
    char db[160];
    snprintf(db, sizeof db, "%s/tessel.db", f->dir);
    tsl_error_t err;
    d->store = tstore_open(db, &err);
    assert_non_null(d->store);
    snprintf(d->jobs_dir, sizeof d->jobs_dir, "%s/jobs", f->dir);
    assert_int_equal(mkdir(d->jobs_dir, 0711), 0);
    int64_t ids[2];
    for (int i = 0; i < 2; i++) {
        tstore_job_t j = {.user = (char *)"alice",
                          .argv_json = (char *)"[\"true\"]",
                          .env_json = (char *)"{}",
                          .queue = (char *)"default",
                          .submitted_ms = 1000};
        assert_int_equal(tstore_job_add(d->store, &j, &err), 0);
        ids[i] = j.id;
        j.state = TSTORE_SUCCEEDED;
        j.started_ms = 2000;
        /* The first ended 40 days ago, the second a minute ago. */
        j.finished_ms = tessd_now_ms() - (i == 0 ? 40 * 86400000LL : 60000);
        assert_int_equal(tstore_job_write(d->store, &j, &err), 0);
        char name[24];
        snprintf(name, sizeof name, "%lld", (long long)j.id);
        fill_dir(d->jobs_dir, name, 500);
    }
    d->job_log_retention_s = 30 * 86400;
    d->test_retention_step = 50;
    char old[PATH_MAX + 32];
    snprintf(old, sizeof old, "%s/%lld", d->jobs_dir, (long long)ids[0]);
    /* The first call begins the sweep; each later one is a step, at most 50 entries. */
    int64_t mono = 1000000;
    assert_int_equal(tessd_retention_run(d, mono), 0);
    assert_true(tessd_retention_busy(d));
    int steps = 0;
    long left = 500;
    while (tessd_retention_busy(d) && steps < 100) {
        int64_t wait = tessd_retention_run(d, mono);
        mono += TESSD_RETENTION_STEP_GAP_MS;
        steps++;
        char cmd[PATH_MAX + 96];
        snprintf(cmd, sizeof cmd, "ls -A '%s' 2>/dev/null | wc -l", old);
        FILE *p = popen(cmd, "r");
        long now = -1;
        assert_int_equal(fscanf(p, "%ld", &now), 1);
        pclose(p);
        assert_true(left - now <= 50); /* a step removes at most its budget */
        assert_true(now < left || now == 0);
        left = now;
        if (tessd_retention_busy(d))
            assert_int_equal(wait, TESSD_RETENTION_STEP_GAP_MS);
    }
    assert_false(tessd_retention_busy(d));
    assert_true(steps >= 10); /* 501 entries, 50 a step */
    struct stat st;
    assert_int_equal(lstat(old, &st), -1);
    char young[PATH_MAX + 32];
    snprintf(young, sizeof young, "%s/%lld", d->jobs_dir, (long long)ids[1]);
    assert_int_equal(lstat(young, &st), 0); /* within the retention: kept */
    tstore_job_t j;
    assert_int_equal(tstore_job_get(d->store, ids[0], &j, &err), 0); /* the store keeps it */
    tstore_job_clear(&j);
    /* The next sweep is an hour away; a reload makes it due at once (nothing to do now). */
    assert_true(tessd_retention_run(d, mono) > 3000 * 1000);
    tessd_retention_due(d);
    tessd_retention_run(d, mono);
    assert_false(tessd_retention_busy(d));
    tessd_retention_free(d);
    tstore_close(d->store);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_good_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flags_over_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diff_take, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submitter, setup, teardown),
        cmocka_unit_test(test_log_levels),
        cmocka_unit_test_setup_teardown(test_remove_tree, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_tree_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_steps, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
