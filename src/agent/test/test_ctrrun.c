/* test_ctrrun.c - ctrrun.c's pure parts (docs/containers.md): crun's command line, fixed
 * whatever the job (create and start forms, the job's state directory and the shim's pid are
 * its only inputs, each one argv element), too long a state directory refused; the paths an
 * overlay's options may hold (no ',', ':' or '\\' that would add an option or a layer). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/ctrrun.h"

static void test_argv_create(void **state)
{
    char *argv[12], buf[3 * PATH_MAX];
    assert_int_equal(tagent_ctr_argv("/usr/bin/crun", "/var/lib/tessel/run/42", 1234, true, argv,
                                     buf, sizeof buf),
                     0);
    static const char *const want[] = {"/usr/bin/crun",
                                       "--root",
                                       "/var/lib/tessel/run/42/rootfs/crun",
                                       "--cgroup-manager=disabled",
                                       "create",
                                       "--bundle",
                                       "/var/lib/tessel/run/42",
                                       "--pid-file",
                                       "/var/lib/tessel/run/42/rootfs/pid",
                                       "tessel-1234",
                                       NULL};
    for (size_t i = 0; want[i]; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[10]);
}

static void test_argv_start(void **state)
{
    char *argv[12], buf[3 * PATH_MAX];
    assert_int_equal(tagent_ctr_argv("/usr/bin/crun", "/d/run/7", 99, false, argv, buf, sizeof buf),
                     0);
    static const char *const want[] = {
        "/usr/bin/crun", "--root", "/d/run/7/rootfs/crun", "--cgroup-manager=disabled", "start",
        "tessel-99",     NULL};
    for (size_t i = 0; want[i]; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[6]);
}

/* A state directory with spaces or an option's look stays one element (no shell, no split). */
static void test_argv_one_element(void **state)
{
    char *argv[12], buf[3 * PATH_MAX];
    assert_int_equal(
        tagent_ctr_argv("/usr/bin/crun", "/d/--privileged x", 5, true, argv, buf, sizeof buf), 0);
    assert_string_equal(argv[6], "/d/--privileged x");
    assert_string_equal(argv[2], "/d/--privileged x/rootfs/crun");
    assert_null(argv[10]);
}

static void test_argv_too_long(void **state)
{
    char *argv[12], buf[96], state_dir[64];
    memset(state_dir, 'a', sizeof state_dir - 1);
    state_dir[0] = '/';
    state_dir[sizeof state_dir - 1] = '\0';
    assert_int_equal(tagent_ctr_argv("/usr/bin/crun", state_dir, 1, true, argv, buf, sizeof buf),
                     -1);
    assert_int_equal(errno, ENAMETOOLONG);
}

static void test_path_ok(void **state)
{
    assert_true(tagent_ctr_path_ok("/var/lib/tessel/images/lab/x/1/rootfs"));
    assert_true(tagent_ctr_path_ok("/a b/c"));
    static const char *const bad[] = {"relative", "/a,upperdir=/x", "/a:/b",
                                      "/a\\,b",   "/a\nlowerdir=",  NULL};
    for (size_t i = 0; bad[i]; i++)
        if (tagent_ctr_path_ok(bad[i]))
            fail_msg("'%s' accepted", bad[i]);
}

/* The cwd's mount against what the container's config binds it with (--ctr-cwd-flags): a
 * directory on a read-only or noexec mount is refused when the config would bind it writable
 * or exec (crun remounts the bind with the config's options only).  Root: a bind mount. */
static void test_cwd_flags(void **state)
{
    (void)state;
    char base[] = "/tmp/tessel-test-ctrcwd.XXXXXX", src[64], dst[64];
    assert_non_null(mkdtemp(base));
    snprintf(src, sizeof src, "%s/src", base);
    snprintf(dst, sizeof dst, "%s/dst", base);
    assert_int_equal(mkdir(src, 0755), 0);
    assert_int_equal(mkdir(dst, 0755), 0);
    int fd = open(src, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(tagent_ctr_cwd_flags_ok(fd, 0), 0); /* a writable, exec mount */
    close(fd);
    assert_int_equal(mount(src, dst, NULL, MS_BIND, NULL), 0);
    assert_int_equal(mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOEXEC, NULL), 0);
    fd = open(dst, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    errno = 0;
    assert_int_equal(tagent_ctr_cwd_flags_ok(fd, 0), -1);
    assert_int_equal(errno, EPERM);
    assert_int_equal(tagent_ctr_cwd_flags_ok(fd, TAGENT_CTR_CWD_RO), -1); /* noexec too */
    assert_int_equal(tagent_ctr_cwd_flags_ok(fd, TAGENT_CTR_CWD_RO | TAGENT_CTR_CWD_NOEXEC), 0);
    close(fd);
    assert_int_equal(umount(dst), 0);
    rmdir(dst);
    rmdir(src);
    rmdir(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argv_create),      cmocka_unit_test(test_argv_start),
        cmocka_unit_test(test_argv_one_element), cmocka_unit_test(test_argv_too_long),
        cmocka_unit_test(test_path_ok),          cmocka_unit_test(test_cwd_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
