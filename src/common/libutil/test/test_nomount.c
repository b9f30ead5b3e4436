/* test_nomount.c - tsl_open_nomount and friends: a mount point on the way (the last name
 * included) is EXDEV, a symbolic link ELOOP, and a directory descriptor got before a mount
 * reaches the files underneath it.  The mounts are tmpfs in a mount namespace of the test's own
 * (root is needed: the test fails without it). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "libutil/nomount.h"

static char top[64];

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void read_fd(int fd, char *buf, size_t len)
{
    ssize_t n = read(fd, buf, len - 1);
    assert_true(n >= 0);
    buf[n] = '\0';
}

/* top/jobs/7/{stdout,slice}; a mount over 7 (then over 7/slice) hides them. */
static void test_mounts(void **state)
{
    (void)state;
    char jobs[128], job[160], p[192];
    snprintf(jobs, sizeof jobs, "%s/jobs", top);
    snprintf(job, sizeof job, "%s/7", jobs);
    assert_int_equal(mkdir(jobs, 0711), 0);
    assert_int_equal(mkdir(job, 0700), 0);
    snprintf(p, sizeof p, "%s/stdout", job);
    put(p, "lower\n");
    snprintf(p, sizeof p, "%s/slice", job);
    put(p, "slice\n");

    /* Nothing mounted: the files open. */
    char buf[64];
    int fd = tsl_open_nomount(jobs, "7/stdout", O_RDONLY, 0);
    assert_true(fd >= 0);
    read_fd(fd, buf, sizeof buf);
    assert_string_equal(buf, "lower\n");
    close(fd);
    int held = tsl_dir_nomount(job); /* got before the mount */
    assert_true(held >= 0);

    /* A file system mounted over the job's directory. */
    assert_int_equal(mount("t", job, "tmpfs", 0, "size=1m"), 0);
    snprintf(p, sizeof p, "%s/stdout", job);
    put(p, "upper\n"); /* what an open by name sees now */
    errno = 0;
    assert_int_equal(tsl_open_nomount(jobs, "7/stdout", O_RDONLY, 0), -1);
    assert_int_equal(errno, EXDEV);
    errno = 0;
    assert_int_equal(tsl_dir_nomount(job), -1);
    assert_int_equal(errno, EXDEV);
    errno = 0;
    assert_int_equal(tsl_open_nomount_tail(p, 2, O_RDONLY, 0), -1);
    assert_int_equal(errno, EXDEV);
    /* The descriptor from before reaches the directory underneath, not the mount. */
    fd = tsl_openat_nomount(held, "stdout", O_RDONLY, 0);
    assert_true(fd >= 0);
    read_fd(fd, buf, sizeof buf);
    assert_string_equal(buf, "lower\n");
    close(fd);
    /* A new name made through it lands underneath too. */
    fd = tsl_openat_nomount(held, "pid", O_WRONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    close(fd);
    /* So does one made through /proc/self/fd/N (a path for calls that take no dirfd). */
    char via[200];
    snprintf(via, sizeof via, "/proc/self/fd/%d/via-proc", held);
    fd = open(via, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
    struct stat st;
    snprintf(p, sizeof p, "%s/pid", job);
    assert_int_equal(stat(p, &st), -1); /* not in the mounted one */
    snprintf(via, sizeof via, "%s/via-proc", job);
    assert_int_equal(stat(via, &st), -1);
    assert_int_equal(umount(job), 0);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(stat(via, &st), 0);

    /* A file system mounted over one file: the last name counts too. */
    snprintf(p, sizeof p, "%s/slice", job);
    assert_int_equal(mount("/dev/null", p, NULL, MS_BIND, NULL), 0);
    errno = 0;
    assert_int_equal(tsl_open_nomount(jobs, "7/slice", O_RDONLY, 0), -1);
    assert_int_equal(errno, EXDEV);
    errno = 0;
    assert_int_equal(tsl_openat_nomount(held, "slice", O_RDONLY, 0), -1);
    assert_int_equal(errno, EXDEV);
    assert_int_equal(umount(p), 0);
    fd = tsl_openat_nomount(held, "slice", O_RDONLY, 0);
    assert_true(fd >= 0);
    close(fd);
    close(held);
}

static void test_links(void **state)
{
    (void)state;
    char d[128], p[192];
    snprintf(d, sizeof d, "%s/links", top);
    assert_int_equal(mkdir(d, 0700), 0);
    snprintf(p, sizeof p, "%s/to-passwd", d);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    errno = 0;
    assert_int_equal(tsl_open_nomount(d, "to-passwd", O_RDONLY, 0), -1);
    assert_int_equal(errno, ELOOP);
    snprintf(p, sizeof p, "%s/up", d);
    assert_int_equal(symlink("..", p), 0);
    errno = 0;
    assert_int_equal(tsl_open_nomount(d, "up/links", O_RDONLY, 0), -1);
    assert_int_equal(errno, ELOOP);
    errno = 0;
    assert_int_equal(tsl_open_nomount(d, "../links", O_RDONLY, 0), -1);
    assert_int_equal(errno, EXDEV); /* out of base */
    errno = 0;
    assert_int_equal(tsl_open_nomount(d, "/etc/passwd", O_RDONLY, 0), -1);
    assert_int_equal(errno, EXDEV);
}

static void test_tail_names(void **state)
{
    (void)state;
    errno = 0;
    assert_int_equal(tsl_open_nomount_tail("stderr", 1, O_RDONLY, 0), -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_int_equal(tsl_open_nomount_tail("/a/b/", 1, O_RDONLY, 0), -1);
    assert_int_equal(errno, EINVAL);
    errno = 0;
    assert_int_equal(tsl_open_nomount_tail("/a", 2, O_RDONLY, 0), -1);
    assert_int_equal(errno, EINVAL);
    /* "/etc" trusted, "passwd" not: a plain file there opens. */
    int fd = tsl_open_nomount_tail("/etc/passwd", 1, O_RDONLY, 0);
    assert_true(fd >= 0);
    close(fd);
    fd = tsl_dir_nomount("/etc");
    assert_true(fd >= 0);
    close(fd);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("Bail out! test_nomount must run as root (it mounts tmpfs in its own namespace)\n");
        return 1;
    }
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        printf("Bail out! a mount namespace of its own: %s\n", strerror(errno));
        return 1;
    }
    snprintf(top, sizeof top, "/tmp/tessel-test-nomount-XXXXXX");
    if (!mkdtemp(top)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mounts),
        cmocka_unit_test(test_links),
        cmocka_unit_test(test_tail_names),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
