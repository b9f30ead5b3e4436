/* test_shm.c - the slice accounting file: layout checks, reserve/release
 * arithmetic, racing processes, table growth, dead-process reclaim, and the
 * read-only API tesseld uses. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "libshm/shm.h"
#include "libshm/shm_layout.h"

#define MiB (1ull << 20)

static char g_path[256];
static const unsigned char UUID_A[16] = {0xa, 1, 2, 3};
static const unsigned char UUID_B[16] = {0xb, 1, 2, 3};

static int setup(void **state)
{
    snprintf(g_path, sizeof g_path, "/tmp/tessel-test-shm-%d-XXXXXX", (int)getpid());
    int fd = mkstemp(g_path);
    assert_true(fd >= 0);
    close(fd);
    unlink(g_path); /* tshm_attach creates it */
    return 0;
}

static int teardown(void **state)
{
    unlink(g_path);
    return 0;
}

static void test_reserve_release(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    assert_int_equal(tshm_register(s, &e), 0);
    int a = tshm_device(s, UUID_A, 100 * MiB, &e);
    int b = tshm_device(s, UUID_B, TSHM_UNLIMITED, &e);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    assert_int_equal(tshm_device(s, UUID_A, 200 * MiB, &e), 0); /* same uuid, same index */
    assert_true(tshm_limit(s, a) == 100 * MiB); /* a higher limit does not grow it */
    assert_int_equal(tshm_device(s, UUID_A, 80 * MiB, &e), 0);
    assert_true(tshm_limit(s, a) == 80 * MiB); /* a lower one wins */

    assert_int_equal(tshm_reserve(s, a, 60 * MiB), 0);
    assert_int_equal(tshm_reserve(s, a, 20 * MiB), 0); /* exactly at the limit */
    assert_int_equal(tshm_reserve(s, a, 1), -1);
    assert_true(tshm_used(s, a) == 80 * MiB);
    tshm_release(s, a, 20 * MiB);
    assert_true(tshm_used(s, a) == 60 * MiB);
    assert_int_equal(tshm_reserve(s, a, UINT64_MAX), -1); /* no wrap-around */
    assert_true(tshm_used(s, a) == 60 * MiB);
    tshm_release(s, a, 100 * MiB); /* saturates, never underflows */
    assert_true(tshm_used(s, a) == 0);

    assert_int_equal(tshm_reserve(s, b, 1ull << 50), 0); /* unlimited device */
    tshm_charge(s, a, 5 * MiB);
    assert_true(tshm_used(s, a) == 5 * MiB);

    /* A second handle on the same file sees the same counters. */
    tshm_t *r = tshm_open_ro(g_path, &e);
    assert_non_null(r);
    assert_int_equal(tshm_ndevices(r), 2);
    tshm_device_info_t di;
    assert_int_equal(tshm_device_info(r, 0, &di), 0);
    assert_true(di.limit == 80 * MiB && di.used == 5 * MiB);
    assert_memory_equal(di.uuid, UUID_A, 16);
    errno = 0;
    assert_int_equal(tshm_device_info(r, 2, &di), -1);
    assert_int_equal(errno, ERANGE);
    tshm_close(r);

    tshm_unregister(s); /* clean exit gives everything back */
    assert_true(tshm_used(s, a) == 0 && tshm_used(s, b) == 0);
    tshm_close(s);
}

static int sum_host(const tshm_proc_info_t *p, void *arg)
{
    *(uint64_t *)arg += p->host_used[0];
    return 0;
}

/* Oversubscription (issue 21): spilled bytes counted apart from device bytes, against a host
 * limit of their own (0: off), a lower setting winning, and given back by a dead process. */
static void test_host_spill(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    assert_int_equal(tshm_register(s, &e), 0);
    int a = tshm_device(s, UUID_A, 10 * MiB, &e);
    assert_int_equal(a, 0);
    assert_true(tshm_host_limit(s, a) == 0);
    assert_int_equal(tshm_reserve_host(s, a, 1), -1); /* off: nothing spills */
    assert_true(tshm_host_used(s, a) == 0);

    assert_int_equal(tshm_host_config(s, a, 64 * MiB), 0);  /* none yet: set */
    assert_int_equal(tshm_host_config(s, a, 128 * MiB), 0); /* higher: ignored */
    assert_true(tshm_host_limit(s, a) == 64 * MiB);
    assert_int_equal(tshm_host_config(s, a, 0), 0); /* 0: changes nothing */
    assert_true(tshm_host_limit(s, a) == 64 * MiB);
    assert_int_equal(tshm_host_config(s, a, 48 * MiB), 0); /* lower wins */
    assert_true(tshm_host_limit(s, a) == 48 * MiB);
    errno = 0;
    assert_int_equal(tshm_host_config(s, 5, 1), -1);
    assert_int_equal(errno, ERANGE);

    assert_int_equal(tshm_reserve(s, a, 10 * MiB), 0); /* the device share, full */
    assert_int_equal(tshm_reserve_host(s, a, 40 * MiB), 0);
    assert_int_equal(tshm_reserve_host(s, a, 8 * MiB), 0); /* exactly at the host limit */
    assert_int_equal(tshm_reserve_host(s, a, 1), -1);
    assert_int_equal(tshm_reserve_host(s, a, UINT64_MAX), -1); /* no wrap-around */
    assert_true(tshm_host_used(s, a) == 48 * MiB);
    assert_true(tshm_used(s, a) == 10 * MiB); /* the device count is its own */
    tshm_release_host(s, a, 8 * MiB);
    assert_true(tshm_host_used(s, a) == 40 * MiB && tshm_used(s, a) == 10 * MiB);

    tshm_t *r = tshm_open_ro(g_path, &e);
    assert_non_null(r);
    tshm_device_info_t di;
    assert_int_equal(tshm_device_info(r, a, &di), 0);
    assert_true(di.host_limit == 48 * MiB && di.host_used == 40 * MiB && di.used == 10 * MiB);
    uint64_t sum = 0;
    assert_int_equal(tshm_foreach_proc(r, sum_host, &sum), 1);
    assert_true(sum == 40 * MiB);
    errno = 0;
    assert_int_equal(tshm_set_host_limit(r, a, 1), -1); /* read-only handle */
    assert_int_equal(errno, EROFS);
    tshm_close(r);
    assert_int_equal(tshm_set_host_limit(s, a, 100 * MiB), 0); /* tesseld: unconditional */
    assert_true(tshm_host_limit(s, a) == 100 * MiB);

    /* A child spills and dies without unregistering: reclaim gives its bytes back. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tshm_atfork_child(s);
        if (tshm_register(s, NULL) < 0 || tshm_reserve_host(s, a, 20 * MiB) < 0)
            _exit(1);
        _exit(0); /* no tshm_unregister: a crash */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(tshm_host_used(s, a) == 60 * MiB);
    assert_int_equal(tshm_reclaim(s), 1);
    assert_true(tshm_host_used(s, a) == 40 * MiB);

    tshm_unregister(s); /* a clean exit gives both kinds back */
    assert_true(tshm_host_used(s, a) == 0 && tshm_used(s, a) == 0);
    tshm_release_host(s, a, MiB); /* unregistered: nothing */
    assert_true(tshm_host_used(s, a) == 0);
    tshm_close(s);
}

static void test_bad_files(void **state)
{
    tsl_error_t e = {{0}};
    int fd = open(g_path, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    char junk[TSHM_PROCS_OFFSET + 64 * TSHM_PROC_SIZE];
    memset(junk, 'x', sizeof junk);
    assert_int_equal(write(fd, junk, sizeof junk), (int)sizeof junk);
    errno = 0;
    assert_null(tshm_attach(g_path, &e));
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(e.text, "magic"));
    errno = 0;
    assert_null(tshm_open_ro(g_path, &e));
    assert_int_equal(errno, EINVAL);

    /* Right magic, future version. */
    struct tshm_header h;
    memset(&h, 0, sizeof h);
    h.magic = TSHM_MAGIC;
    h.version = TSHM_VERSION + 1;
    assert_int_equal(pwrite(fd, &h, sizeof h, 0), (int)sizeof h);
    errno = 0;
    assert_null(tshm_attach(g_path, &e));
    assert_int_equal(errno, EPROTO);
    assert_non_null(strstr(e.text, "version"));

    /* A version 1 file (before compute shares): refused with both versions named. */
    h.version = 1;
    assert_int_equal(pwrite(fd, &h, sizeof h, 0), (int)sizeof h);
    errno = 0;
    assert_null(tshm_open_ro(g_path, &e));
    assert_int_equal(errno, EPROTO);
    assert_non_null(strstr(e.text, "version 1, this build reads 2"));

    /* Too short. */
    assert_int_equal(ftruncate(fd, 100), 0);
    errno = 0;
    assert_null(tshm_attach(g_path, &e));
    assert_int_equal(errno, EINVAL);
    close(fd);

    errno = 0;
    assert_null(tshm_open_ro("/nonexistent/slice", &e));
    assert_int_equal(errno, ENOENT);
    tshm_close(NULL);
}

/* tshm_create: a complete file with the owner and mode asked, attachable at once; an existing
 * path is refused and left as it was; no temporary file left behind. */
static void test_create(void **state)
{
    tsl_error_t e = {{0}};
    assert_int_equal(tshm_create(g_path, getuid(), getgid(), 0600, &e), 0);
    struct stat st;
    assert_int_equal(stat(g_path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, getuid());
    assert_true((size_t)st.st_size >= TSHM_PROCS_OFFSET);
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    assert_int_equal(tshm_register(s, &e), 0);
    int dev = tshm_device(s, UUID_A, 0, &e);
    assert_true(dev >= 0);
    assert_int_equal(tshm_set_limit(s, dev, 64 * MiB), 0);
    assert_int_equal(tshm_reserve(s, dev, 32 * MiB), 0);
    tshm_close(s);

    errno = 0;
    assert_int_equal(tshm_create(g_path, getuid(), getgid(), 0644, &e), -1);
    assert_int_equal(errno, EEXIST);
    assert_non_null(strstr(e.text, g_path));
    assert_int_equal(stat(g_path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    s = tshm_open_ro(g_path, &e);
    assert_non_null(s);
    tshm_close(s);

    /* Only the file itself in its directory: no PATH.XXXXXX left. */
    char pattern[300];
    snprintf(pattern, sizeof pattern, "%s.", strrchr(g_path, '/') + 1);
    DIR *d = opendir("/tmp");
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)))
        assert_true(strncmp(de->d_name, pattern, strlen(pattern)) != 0);
    closedir(d);

    errno = 0;
    assert_int_equal(tshm_create("/nonexistent/dir/slice", getuid(), getgid(), 0600, &e), -1);
    assert_int_equal(errno, ENOENT);
}

/* Compute shares: configuration, the pacing bucket, busy accounting,
 * suspend/resume and "drained". */
static int sum_busy(const tshm_proc_info_t *p, void *arg)
{
    uint64_t *v = arg;
    v[0] += p->busy_ns[0];
    v[1] += p->inflight;
    return 0;
}

static void test_compute(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    assert_int_equal(tshm_register(s, &e), 0);
    int a = tshm_device(s, UUID_A, TSHM_UNLIMITED, &e);
    assert_int_equal(a, 0);
    /* Unset: no limit, normal priority, strict. */
    assert_int_equal(tshm_core_limit(s, a), 0);
    assert_int_equal(tshm_core_prio(s, a), TSHM_PRIO_NORMAL);
    tshm_core_config(s, a, 50, TSHM_CORE_SHARED, TSHM_PRIO_LOW);
    tshm_core_config(s, a, 70, TSHM_CORE_STRICT, TSHM_PRIO_HIGH); /* higher: kept 50 */
    assert_int_equal(tshm_core_limit(s, a), 50);
    assert_int_equal(tshm_core_mode(s, a), TSHM_CORE_SHARED); /* the first setter's */
    assert_int_equal(tshm_core_prio(s, a), TSHM_PRIO_LOW);
    tshm_core_config(s, a, 30, TSHM_CORE_STRICT, TSHM_PRIO_HIGH); /* lower wins */
    assert_int_equal(tshm_core_limit(s, a), 30);
    assert_int_equal(tshm_set_core(s, a, 101, 0, 0), -1);
    assert_int_equal(errno, ERANGE);
    assert_int_equal(tshm_set_core(s, a, 40, TSHM_CORE_STRICT, TSHM_PRIO_HIGH), 0);
    assert_int_equal(tshm_core_limit(s, a), 40);
    assert_int_equal(tshm_core_prio(s, a), TSHM_PRIO_HIGH);

    /* Bucket at 40 % (400000 ppm), cap 8 ms: 10 ms of wall time gives 4 ms. */
    uint64_t t = 1000000000ull;
    assert_true(tshm_core_refill(s, a, t, 400000, 8000000) == 0); /* first: starts the clock */
    assert_true(tshm_core_refill(s, a, t + 10000000, 400000, 8000000) == 4000000);
    assert_true(tshm_core_refill(s, a, t + 10010000, 400000, 8000000) == 4000000);  /* < 20 us */
    assert_true(tshm_core_refill(s, a, t + 110000000, 400000, 8000000) == 8000000); /* capped */
    tshm_core_debit(s, a, 3000000);                /* a launch expected to take 3 ms */
    tshm_core_account(s, a, 10000000, 1, 3000000); /* it took 10 ms */
    assert_true(tshm_core_refill(s, a, t + 110000000, 400000, 8000000) == -2000000);
    assert_true(tshm_core_busy(s, a) == 10000000);
    tshm_core_reset(s, a, t + 200000000);
    assert_true(tshm_core_refill(s, a, t + 200000000, 400000, 8000000) == 0);
    /* An idle hour credits at most 1 s before the cap applies: no overflow. */
    assert_true(tshm_core_refill(s, a, t + 3600000000000ull, 1000000, INT64_MAX) == 1000000000ll);

    tshm_device_info_t d;
    assert_int_equal(tshm_device_info(s, a, &d), 0);
    assert_int_equal(d.core_limit, 40);
    assert_true(d.busy_ns == 10000000 && d.launches == 1);
    uint64_t v[2] = {0, 0};
    assert_int_equal(tshm_foreach_proc(s, sum_busy, v), 1);
    assert_true(v[0] == 10000000); /* per process too */

    /* Suspend: a launch is refused entry, "drained" once nothing is in
     * flight or between the gate and the driver. */
    assert_int_equal(tshm_run_state(s), TSHM_RUNNING);
    assert_int_equal(tshm_drained(s), 0); /* not suspended */
    assert_int_equal(tshm_launch_enter(s), 0);
    tshm_inflight_add(s, 1);
    assert_int_equal(tshm_suspend(s), 0);
    assert_int_equal(tshm_drained(s), 0); /* a launch is between the gate and the driver */
    tshm_launch_exit(s);
    assert_int_equal(tshm_drained(s), 0); /* its work is in flight */
    v[0] = v[1] = 0;
    tshm_foreach_proc(s, sum_busy, v);
    assert_true(v[1] == 1);
    tshm_inflight_add(s, -1);
    assert_int_equal(tshm_drained(s), 1);
    assert_int_equal(tshm_launch_enter(s), 1); /* held */
    assert_int_equal(tshm_drained(s), 1);      /* and not counted as launching */
    tshm_t *ro = tshm_open_ro(g_path, &e);
    assert_non_null(ro);
    assert_int_equal(tshm_run_state(ro), TSHM_SUSPENDED);
    assert_int_equal(tshm_suspend(ro), -1);
    assert_int_equal(errno, EROFS);
    tshm_close(ro);
    assert_int_equal(tshm_resume(s), 0);
    assert_int_equal(tshm_launch_enter(s), 0);
    tshm_launch_exit(s);
    assert_int_equal(tshm_drained(s), 0);
    tshm_unregister(s);
    tshm_close(s);
}

/* 8 processes race to reserve 3 MiB chunks under a 100 MiB limit. */
static void test_race(void **state)
{
    enum { NPROC = 8, CHUNK = 3 * MiB };
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    int d = tshm_device(s, UUID_A, 100 * MiB, &e);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t kids[NPROC];
    for (int i = 0; i < NPROC; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0) {
            tshm_t *c = tshm_attach(g_path, NULL);
            if (!c || tshm_register(c, NULL) < 0)
                _exit(2);
            unsigned n = 0;
            while (tshm_reserve(c, d, CHUNK) == 0)
                n++;
            if (write(pfd[1], &n, sizeof n) != sizeof n)
                _exit(3);
            pause(); /* stay alive until killed: the charge stays */
            _exit(0);
        }
    }
    unsigned total = 0;
    for (int i = 0; i < NPROC; i++) {
        unsigned n;
        assert_int_equal(read(pfd[0], &n, sizeof n), (int)sizeof n);
        total += n;
    }
    /* floor(100 / 3) = 33 chunks fit, whoever wins them. */
    assert_int_equal(total, 33);
    assert_true(tshm_used(s, d) == 33ull * CHUNK);
    assert_int_equal(tshm_register(s, &e), 0);
    /* SIGKILL everyone: reclaim returns every byte. */
    for (int i = 0; i < NPROC; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    assert_int_equal(tshm_reclaim(s), NPROC);
    assert_true(tshm_used(s, d) == 0);
    assert_int_equal(tshm_reclaim(s), 0);
    close(pfd[0]);
    close(pfd[1]);
    tshm_unregister(s);
    tshm_close(s);
}

static int count_proc(const tshm_proc_info_t *p, void *arg)
{
    uint64_t *sum = arg;
    sum[0]++;
    sum[1] += p->used[0];
    return 0;
}

/* More processes than the initial table holds: the table grows. */
static void test_growth(void **state)
{
    enum { NPROC = TSHM_INITIAL_PROCS * 2 + 5 };
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    int d = tshm_device(s, UUID_A, TSHM_UNLIMITED, &e);
    int ready[2], hold[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(hold), 0);
    pid_t kids[NPROC];
    for (int i = 0; i < NPROC; i++) {
        kids[i] = fork();
        assert_true(kids[i] >= 0);
        if (kids[i] == 0) {
            close(hold[1]);
            tshm_t *c = tshm_attach(g_path, NULL);
            char ok = (c && tshm_register(c, NULL) == 0 && tshm_reserve(c, d, MiB) == 0);
            if (write(ready[1], &ok, 1) != 1)
                _exit(3);
            char x;
            (void)read(hold[0], &x, 1); /* EOF when the parent closes it */
            _exit(0);
        }
    }
    close(hold[0]);
    for (int i = 0; i < NPROC; i++) {
        char ok = 0;
        assert_int_equal(read(ready[0], &ok, 1), 1);
        assert_int_equal(ok, 1);
    }
    tshm_t *r = tshm_open_ro(g_path, &e);
    assert_non_null(r);
    uint64_t sum[2] = {0, 0};
    assert_int_equal(tshm_foreach_proc(r, count_proc, sum), NPROC);
    assert_true(sum[0] == NPROC && sum[1] == NPROC * MiB);
    assert_true(tshm_used(r, d) == NPROC * MiB);
    struct stat st;
    assert_int_equal(stat(g_path, &st), 0);
    assert_true((size_t)st.st_size ==
                TSHM_PROCS_OFFSET + (size_t)TSHM_INITIAL_PROCS * 4 * TSHM_PROC_SIZE);
    close(hold[1]); /* children exit normally, without unregistering */
    for (int i = 0; i < NPROC; i++)
        waitpid(kids[i], NULL, 0);
    assert_int_equal(tshm_reclaim(s), NPROC);
    assert_true(tshm_used(r, d) == NPROC * MiB); /* a read-only handle holds a copy... */
    assert_int_equal(tshm_refresh(r), 0);        /* ...until it reads the file again */
    assert_true(tshm_used(r, d) == 0);
    assert_int_equal(tshm_foreach_proc(r, count_proc, sum), 0);
    tshm_close(r);
    close(ready[0]);
    close(ready[1]);
    tshm_close(s);
}

/* A slot whose pid is alive but whose start time differs belongs to a dead
 * process whose pid was reused: it is reclaimed. */
static void test_pid_reuse(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    int d = tshm_device(s, UUID_A, 10 * MiB, &e);
    int fd = open(g_path, O_RDWR);
    assert_true(fd >= 0);
    char *m = mmap(NULL, TSHM_PROCS_OFFSET + 8 * TSHM_PROC_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                   fd, 0);
    assert_true(m != MAP_FAILED);
    close(fd);
    struct tshm_device_rec *dev = (struct tshm_device_rec *)(m + TSHM_DEVICES_OFFSET) + d;
    struct tshm_proc_rec *p3 = (struct tshm_proc_rec *)(m + TSHM_PROCS_OFFSET) + 3;
    struct tshm_proc_rec *p4 = (struct tshm_proc_rec *)(m + TSHM_PROCS_OFFSET) + 4;
    /* Slot 3: the parent's pid with another start time (a reused pid). */
    p3->pid = (int32_t)getppid();
    p3->start_time = tshm_proc_start_time(getppid()) + 1;
    atomic_store(&p3->used[d], 4 * MiB);
    atomic_store(&p3->state, TSHM_PROC_ACTIVE);
    /* Slot 4: the parent's pid with its real start time: alive. */
    p4->pid = (int32_t)getppid();
    p4->start_time = tshm_proc_start_time(getppid());
    atomic_store(&p4->used[d], 1 * MiB);
    atomic_store(&p4->state, TSHM_PROC_ACTIVE);
    atomic_store(&dev->used, 5 * MiB);
    assert_true(p4->start_time > 0);
    assert_true(tshm_proc_start_time(0x7ffffff0) == 0);

    assert_int_equal(tshm_register(s, &e), 0); /* cheap check: both pids exist */
    assert_true(tshm_used(s, d) == 5 * MiB);
    assert_int_equal(tshm_reclaim(s), 1); /* start times: slot 3 is stale */
    assert_true(tshm_used(s, d) == 1 * MiB);
    assert_int_equal(atomic_load(&p3->state), TSHM_PROC_FREE);
    assert_int_equal(atomic_load(&p4->state), TSHM_PROC_ACTIVE);
    tshm_t *r = tshm_open_ro(g_path, &e);
    uint64_t sum[2] = {0, 0};
    assert_int_equal(tshm_foreach_proc(r, count_proc, sum), 2); /* slot 4 + s */
    assert_true(sum[1] == 1 * MiB);
    tshm_close(r);
    munmap(m, TSHM_PROCS_OFFSET + 8 * TSHM_PROC_SIZE);
    tshm_close(s);
}

/* A private slice (memfd) works the same and is shared with a forked child,
 * which gets its own slot. */
static void test_private_fork(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(NULL, &e);
    assert_non_null(s);
    assert_int_equal(tshm_register(s, &e), 0);
    int d = tshm_device(s, UUID_A, 10 * MiB, &e);
    assert_int_equal(tshm_reserve(s, d, 4 * MiB), 0);
    pid_t pid = fork();
    if (pid == 0) {
        tshm_atfork_child(s);
        if (tshm_registered(s))
            _exit(10);
        if (tshm_register(s, NULL) < 0)
            _exit(11);
        if (tshm_reserve(s, d, 6 * MiB) != 0)
            _exit(12);
        if (tshm_reserve(s, d, 1) != -1)
            _exit(13);
        _exit(0); /* no unregister: the parent reclaims */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_true(tshm_used(s, d) == 10 * MiB);
    assert_int_equal(tshm_reclaim(s), 1);
    assert_true(tshm_used(s, d) == 4 * MiB);
    tshm_close(s);
}

/* Frees that arrive after a process left its slice (threads still running
 * after the exit-time tshm_unregister, or frees from atexit handlers) give
 * back nothing: the slot's charges went back once, with the slot. */
static void test_release_after_unregister(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    assert_int_equal(tshm_register(s, &e), 0); /* this process: another one of the slice */
    int d = tshm_device(s, UUID_A, 100 * MiB, &e);
    assert_int_equal(tshm_reserve(s, d, 50 * MiB), 0);
    pid_t pid = fork();
    if (pid == 0) {
        tshm_atfork_child(s);
        if (tshm_register(s, NULL) < 0 || tshm_reserve(s, d, 30 * MiB) != 0 ||
            tshm_used(s, d) != 80 * MiB)
            _exit(10);
        tshm_unregister(s); /* clean exit: its 30 MiB go back now */
        if (tshm_registered(s) || tshm_used(s, d) != 50 * MiB)
            _exit(11);
        tshm_release(s, d, 30 * MiB); /* the late free of the same 30 MiB */
        tshm_release(s, d, 100 * MiB);
        if (tshm_used(s, d) != 50 * MiB)
            _exit(12);
        tshm_charge(s, d, 7 * MiB); /* nor is anything charged to no one */
        if (tshm_reserve(s, d, 1 * MiB) != -1 || tshm_used(s, d) != 50 * MiB)
            _exit(13);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_true(tshm_used(s, d) == 50 * MiB);
    /* This process's own frees still count. */
    tshm_release(s, d, 20 * MiB);
    assert_true(tshm_used(s, d) == 30 * MiB);
    tshm_close(s);
}

/* exec: the new image of a process registers under the same pid and start
 * time; the old image's slot (its memory freed by the driver at exec) is
 * given back then, exactly once, and the limit stays the slice's. */
static void test_exec_image(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *old = tshm_attach(g_path, &e);
    assert_non_null(old);
    assert_int_equal(tshm_register(old, &e), 0); /* the image before exec */
    int d = tshm_device(old, UUID_A, 100 * MiB, &e);
    assert_int_equal(tshm_reserve(old, d, 60 * MiB), 0);
    int alive[2];
    assert_int_equal(pipe(alive), 0);
    pid_t pid = fork(); /* another process of the slice, alive throughout */
    if (pid == 0) {
        tshm_atfork_child(old);
        close(alive[1]);
        char ok = tshm_register(old, NULL) == 0 && tshm_reserve(old, d, 10 * MiB) == 0, c;
        if (!ok)
            _exit(1);
        while (read(alive[0], &c, 1) > 0) /* until the test ends, pass or fail */
            ;
        _exit(0);
    }
    close(alive[0]);
    while (tshm_used(old, d) != 70 * MiB)
        usleep(1000);
    /* The new image: a new handle, the same pid.  (The old image's handle
     * is left as exec leaves it: never used again.) */
    tshm_t *img = tshm_attach(g_path, &e);
    assert_non_null(img);
    assert_int_equal(tshm_register(img, &e), 0);
    assert_true(tshm_used(img, d) == 10 * MiB); /* the old image's 60 MiB are back */
    assert_int_equal(tshm_device(img, UUID_A, 100 * MiB, &e), d);
    assert_int_equal(tshm_reserve(img, d, 90 * MiB), 0); /* the shared limit, not a fresh one */
    assert_int_equal(tshm_reserve(img, d, 1), -1);
    assert_int_equal(tshm_register(img, &e), 0); /* idempotent: nothing more given back */
    assert_true(tshm_used(img, d) == 100 * MiB);
    tshm_t *r = tshm_open_ro(g_path, &e);
    uint64_t sum[2] = {0, 0};
    assert_int_equal(tshm_foreach_proc(r, count_proc, sum), 2); /* the child + the new image */
    assert_true(sum[1] == 100 * MiB);
    tshm_close(r);
    close(alive[1]);
    waitpid(pid, NULL, 0);
    tshm_close(img);
    tshm_close(old);
}

/* Context costs are kept per device and per kind, first measurement wins;
 * a process reads its own charge. */
static void test_ctx_cost(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    assert_int_equal(tshm_register(s, &e), 0);
    int a = tshm_device(s, UUID_A, TSHM_UNLIMITED, &e);
    int b = tshm_device(s, UUID_B, TSHM_UNLIMITED, &e);
    assert_true(tshm_ctx_cost_of(s, a, TSHM_CTX_PRIMARY) == 0); /* not measured */
    assert_true(tshm_ctx_cost_of(s, a, TSHM_CTX_CREATED) == 0);
    tshm_set_ctx_cost_of(s, a, TSHM_CTX_PRIMARY, 612 * MiB);
    tshm_set_ctx_cost_of(s, a, TSHM_CTX_CREATED, 90 * MiB);
    tshm_set_ctx_cost_of(s, b, TSHM_CTX_CREATED, 70 * MiB);
    tshm_set_ctx_cost_of(s, a, TSHM_CTX_PRIMARY, 1 * MiB); /* a later measurement loses */
    assert_true(tshm_ctx_cost_of(s, a, TSHM_CTX_PRIMARY) == 612 * MiB);
    assert_true(tshm_ctx_cost(s, a) == 612 * MiB); /* the primary kind's */
    assert_true(tshm_ctx_cost_of(s, a, TSHM_CTX_CREATED) == 90 * MiB);
    assert_true(tshm_ctx_cost_of(s, b, TSHM_CTX_PRIMARY) == 0);
    assert_true(tshm_ctx_cost_of(s, b, TSHM_CTX_CREATED) == 70 * MiB);
    assert_true(tshm_ctx_cost_of(s, -1, TSHM_CTX_CREATED) == 0);
    assert_true(tshm_ctx_cost_of(s, TSHM_MAX_DEVICES, TSHM_CTX_PRIMARY) == 0);
    tshm_device_info_t di;
    assert_int_equal(tshm_device_info(s, a, &di), 0);
    assert_true(di.ctx_cost == 612 * MiB);
    assert_true(di.ctx_cost_created == 90 * MiB);

    assert_int_equal(tshm_reserve(s, b, 5 * MiB), 0);
    assert_true(tshm_self_used(s, b) == 5 * MiB);
    assert_true(tshm_self_used(s, a) == 0);
    tshm_unregister(s);
    assert_true(tshm_self_used(s, b) == 0);
    tshm_close(s);
}

/* A read-only handle (tesseld reading a job's slice) holds a copy: the file's owner may truncate
 * it at any moment, and the reader must neither fault (SIGBUS, through a mapping) nor use what
 * it no longer can read. */
static void test_ro_truncated(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    assert_int_equal(tshm_register(s, &e), 0);
    int d = tshm_device(s, UUID_A, 80 * MiB, &e);
    assert_int_equal(d, 0);
    assert_int_equal(tshm_reserve(s, d, 3 * MiB), 0);
    tshm_t *r = tshm_open_ro(g_path, &e);
    assert_non_null(r);
    assert_int_equal(truncate(g_path, 0), 0);
    /* Every reader of the handle, on a file now empty: the copy's values, no fault. */
    assert_int_equal(tshm_ndevices(r), 1);
    tshm_device_info_t di;
    assert_int_equal(tshm_device_info(r, 0, &di), 0);
    assert_true(di.limit == 80 * MiB && di.used == 3 * MiB);
    assert_true(tshm_used(r, d) == 3 * MiB);
    assert_int_equal(tshm_run_state(r), TSHM_RUNNING);
    /* Reading it again fails, and so do those that read it again first. */
    errno = 0;
    assert_int_equal(tshm_refresh(r), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tshm_foreach_proc(r, NULL, NULL), -1);
    tshm_close(r);
    /* A file cut short (in its process table): refused. */
    tshm_close(s);
    assert_int_equal(unlink(g_path), 0);
    s = tshm_attach(g_path, &e);
    assert_non_null(s);
    assert_int_equal(truncate(g_path, TSHM_PROCS_OFFSET + 3 * TSHM_PROC_SIZE + 100), 0);
    errno = 0;
    assert_null(tshm_open_ro(g_path, &e)); /* shorter than any slice file */
    assert_int_equal(errno, EINVAL);
    tshm_close(s);
    /* Not a regular file: refused at once (a FIFO would block a reader's open or read). */
    assert_int_equal(unlink(g_path), 0);
    assert_int_equal(mkfifo(g_path, 0600), 0);
    errno = 0;
    assert_null(tshm_open_ro(g_path, &e));
    assert_int_equal(errno, EINVAL);
}

static int count_any(const tshm_proc_info_t *p, void *arg)
{
    (void)p;
    (*(int *)arg)++;
    return 0;
}

/* The run state read and set through the descriptor alone (tesseld suspending a job): what an
 * attached process (the interposer) sees, no lock taken, and nothing written into what is not a
 * slice file. */
static void test_fd_run(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    assert_int_equal(tshm_register(s, &e), 0);
    int fd = open(g_path, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    /* Another open file description holds the file's lock, as a hostile owner could: no
     * wait (the alarm fails the test instead of letting it hang). */
    int lk = open(g_path, O_RDONLY | O_CLOEXEC);
    assert_true(lk >= 0);
    assert_int_equal(flock(lk, LOCK_EX), 0);
    alarm(10);
    assert_int_equal(tshm_fd_run_state(fd, &e), TSHM_RUNNING);
    assert_int_equal(tshm_fd_set_run(fd, TSHM_SUSPENDED, &e), 0);
    assert_int_equal(tshm_run_state(s), TSHM_SUSPENDED);
    assert_int_equal(tshm_launch_enter(s), 1); /* the attached process's launches are held */
    assert_int_equal(tshm_fd_run_state(fd, &e), TSHM_SUSPENDED);
    assert_int_equal(tshm_fd_set_run(fd, TSHM_RUNNING, &e), 0);
    assert_int_equal(tshm_run_state(s), TSHM_RUNNING);
    assert_int_equal(tshm_launch_enter(s), 0);
    tshm_launch_exit(s);
    alarm(0);
    /* Each change bumps the generation, as tshm_suspend and tshm_resume do. */
    struct tshm_header h;
    assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
    assert_true(atomic_load(&h.suspend_gen) == 2);
    int n = 0;
    tshm_t *r = tshm_open_ro(g_path, &e);
    assert_non_null(r);
    assert_int_equal(tshm_foreach_proc(r, count_any, &n), 1);
    tshm_close(r);
    errno = 0;
    assert_int_equal(tshm_fd_set_run(fd, 7, &e), -1);
    assert_int_equal(errno, EINVAL);
    close(lk);
    close(fd);
    tshm_close(s);

    /* Not a slice file (bad magic), or too short: refused, and left byte for byte as it was. */
    assert_int_equal(unlink(g_path), 0);
    fd = open(g_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    static unsigned char junk[TSHM_PROCS_OFFSET + 64 * TSHM_PROC_SIZE];
    memset(junk, 0x5a, sizeof junk);
    assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    errno = 0;
    assert_int_equal(tshm_fd_run_state(fd, &e), -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_int_equal(tshm_fd_set_run(fd, TSHM_SUSPENDED, &e), -1);
    assert_int_equal(errno, EINVAL);
    static unsigned char back[sizeof junk];
    assert_int_equal(pread(fd, back, sizeof back, 0), (ssize_t)sizeof back);
    assert_memory_equal(back, junk, sizeof junk);
    assert_int_equal(ftruncate(fd, 100), 0);
    errno = 0;
    assert_int_equal(tshm_fd_set_run(fd, TSHM_SUSPENDED, &e), -1);
    assert_int_equal(errno, EINVAL);
    close(fd);
}

/* Idle reclamation's words (docs/suspend.md, "Idle reclamation"): a launch marks work, which
 * tesseld takes (read and cleared) through the descriptor; reclaim set by tesseld is seen by an
 * attached process, whose wake tesseld then reads; clearing reclaim clears wake; a file that is
 * not a slice file is refused and left as it was. */
static void test_idle_words(void **state)
{
    tsl_error_t e = {{0}};
    tshm_t *s = tshm_attach(g_path, &e);
    assert_non_null(s);
    assert_int_equal(tshm_register(s, &e), 0);
    int fd = open(g_path, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    tshm_idle_t w = {7, 7, 7};
    assert_int_equal(tshm_fd_idle(fd, &w, &e), 0);
    assert_int_equal(w.work + w.reclaim + w.wake, 0); /* a new file: nothing */
    assert_int_equal(tshm_fd_take_work(fd, &e), 0);
    tshm_note_work(s);
    tshm_note_work(s); /* twice is once */
    assert_int_equal(tshm_fd_take_work(fd, &e), 1);
    assert_int_equal(tshm_fd_take_work(fd, &e), 0); /* taken: cleared */
    tshm_note_work(s);                              /* set again after tesseld cleared it */
    assert_int_equal(tshm_fd_take_work(fd, &e), 1);

    assert_int_equal(tshm_reclaimed(s), 0);
    tshm_wake(s); /* a stale wake from before the reclaim */
    assert_int_equal(tshm_fd_set_reclaim(fd, 1, &e), 0);
    assert_int_equal(tshm_reclaimed(s), 1);
    assert_int_equal(tshm_fd_idle(fd, &w, &e), 0);
    assert_int_equal(w.reclaim, 1);
    assert_int_equal(w.wake, 0); /* cleared by the reclaim */
    tshm_wake(s);
    assert_int_equal(tshm_fd_idle(fd, &w, &e), 0);
    assert_int_equal(w.wake, 1);
    assert_int_equal(w.work, 0); /* a wake is not work */
    assert_int_equal(tshm_fd_set_reclaim(fd, 0, &e), 0);
    assert_int_equal(tshm_reclaimed(s), 0);
    assert_int_equal(tshm_fd_idle(fd, &w, &e), 0);
    assert_int_equal(w.reclaim + w.wake, 0);
    /* The words sit where version 2 reserved zeros: the other header fields are unchanged. */
    assert_int_equal(tshm_fd_run_state(fd, &e), TSHM_RUNNING);
    close(fd);
    tshm_close(s);

    assert_int_equal(unlink(g_path), 0);
    fd = open(g_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    static unsigned char junk[TSHM_PROCS_OFFSET + 64];
    memset(junk, 0x5a, sizeof junk);
    assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    errno = 0;
    assert_int_equal(tshm_fd_take_work(fd, &e), -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_int_equal(tshm_fd_set_reclaim(fd, 1, &e), -1);
    assert_int_equal(errno, EINVAL);
    static unsigned char back[sizeof junk];
    assert_int_equal(pread(fd, back, sizeof back, 0), (ssize_t)sizeof back);
    assert_memory_equal(back, junk, sizeof junk);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reserve_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_growth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pid_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_fork, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_after_unregister, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ctx_cost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_image, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ro_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fd_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_host_spill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_words, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
