/* test_ctrrun.c - ctrrun.c's pure parts (docs/containers.md): crun's command line, fixed
 * whatever the job (create and start forms, the job's state directory and the shim's pid are
 * its only inputs, each one argv element), too long a state directory refused; the paths an
 * overlay's options may hold (no ',', ':' or '\\' that would add an option or a layer).
 * A container's terminal (docs/terminal.md): --console-socket inserted before the id; exec's
 * command line and process.json (the config's process, the argv as JSON strings, a terminal);
 * the PATH and cwd a program is looked up with before crun exec;
 * the console directory (root's, 0700) and socket: a terminal's master taken, anything else
 * (a plain file, two descriptors, none) refused. */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

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

static void test_argv_console(void **state)
{
    char *argv[16], buf[3 * PATH_MAX];
    assert_int_equal(tagent_ctr_argv("/usr/bin/crun", "/d/run/7", 99, true, argv, buf, sizeof buf),
                     0);
    assert_int_equal(tagent_ctr_argv_console(argv, 16, "/d/run/7/console/run.sock"), 0);
    static const char *const want[] = {"/usr/bin/crun",
                                       "--root",
                                       "/d/run/7/rootfs/crun",
                                       "--cgroup-manager=disabled",
                                       "create",
                                       "--bundle",
                                       "/d/run/7",
                                       "--pid-file",
                                       "/d/run/7/rootfs/pid",
                                       "--console-socket",
                                       "/d/run/7/console/run.sock",
                                       "tessel-99",
                                       NULL};
    for (size_t i = 0; want[i]; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[12]);
    /* No room: refused, argv untouched. */
    assert_int_equal(tagent_ctr_argv_console(argv, 14, "/s"), -1);
    assert_int_equal(errno, E2BIG);
    assert_string_equal(argv[11], "tessel-99");
}

static void test_exec_argv(void **state)
{
    char *argv[16], buf[3 * PATH_MAX];
    assert_int_equal(tagent_ctr_exec_argv("/usr/bin/crun", "/d/run/7", 99,
                                          "/d/run/7/console/e.json", "/d/run/7/console/e.sock",
                                          argv, buf, sizeof buf),
                     0);
    static const char *const want[] = {"/usr/bin/crun",
                                       "--root",
                                       "/d/run/7/rootfs/crun",
                                       "--cgroup-manager=disabled",
                                       "exec",
                                       "--process",
                                       "/d/run/7/console/e.json",
                                       "--console-socket",
                                       "/d/run/7/console/e.sock",
                                       "tessel-99",
                                       NULL};
    for (size_t i = 0; want[i]; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[10]);
    char longs[PATH_MAX * 2];
    memset(longs, 'a', sizeof longs - 1);
    longs[0] = '/';
    longs[sizeof longs - 1] = '\0';
    assert_int_equal(
        tagent_ctr_exec_argv("/usr/bin/crun", longs, 1, "/p", "/s", argv, buf, sizeof buf), -1);
    assert_int_equal(errno, ENAMETOOLONG);
}

static void test_exec_process(void **state)
{
    const char *config =
        "{\"ociVersion\":\"1.0.2\",\"process\":{\"terminal\":false,\"user\":{\"uid\":65534,"
        "\"gid\":65534,\"additionalGids\":[65534]},\"args\":[\"sleep\",\"9\"],\"env\":["
        "\"LD_PRELOAD=/i.so\",\"X=1\"],\"cwd\":\"/home/u\",\"capabilities\":{\"bounding\":[]},"
        "\"noNewPrivileges\":true},\"root\":{\"path\":\"/r\"}}";
    char *argv[] = {"sh", "-c", "id; $(rm -rf /)", "\"quoted\"", NULL};
    char *text = tagent_ctr_exec_process(config, argv);
    assert_non_null(text);
    json_error_t jerr;
    json_t *p = json_loads(text, 0, &jerr);
    free(text);
    assert_non_null(p);
    /* The container's first process's user, environment, cwd and privileges, kept. */
    json_t *user = json_object_get(p, "user");
    assert_int_equal(json_integer_value(json_object_get(user, "uid")), 65534);
    assert_int_equal(json_integer_value(json_object_get(user, "gid")), 65534);
    assert_string_equal(json_string_value(json_array_get(json_object_get(p, "env"), 0)),
                        "LD_PRELOAD=/i.so");
    assert_string_equal(json_string_value(json_object_get(p, "cwd")), "/home/u");
    assert_true(json_is_true(json_object_get(p, "noNewPrivileges")));
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(p, "capabilities"), "bounding")), 0);
    /* The new argv, each a string of its own; a terminal of 24x80. */
    json_t *args = json_object_get(p, "args");
    assert_int_equal(json_array_size(args), 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(json_string_value(json_array_get(args, i)), argv[i]);
    assert_true(json_is_true(json_object_get(p, "terminal")));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(p, "consoleSize"), "height")), 24);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(p, "consoleSize"), "width")), 80);
    assert_null(json_object_get(p, "root")); /* the process only */
    json_decref(p);
    /* Not JSON, no process, no user: refused. */
    assert_null(tagent_ctr_exec_process("not json", argv));
    assert_int_equal(errno, EINVAL);
    assert_null(tagent_ctr_exec_process("{\"process\":{\"args\":[]}}", argv));
    assert_int_equal(errno, EINVAL);
    assert_null(tagent_ctr_exec_process("{}", argv));
    char *none[] = {NULL};
    assert_null(tagent_ctr_exec_process(config, none));
}

static void test_process_info(void **state)
{
    char path[64], cwd[64];
    assert_int_equal(
        tagent_ctr_process_info("{\"process\":{\"env\":[\"A=1\",\"PATH=/opt/x/bin:/bin\"],"
                                "\"cwd\":\"/home/u\"}}",
                                path, sizeof path, cwd, sizeof cwd),
        0);
    assert_string_equal(path, "/opt/x/bin:/bin");
    assert_string_equal(cwd, "/home/u");
    /* No PATH: the usual default. */
    assert_int_equal(tagent_ctr_process_info("{\"process\":{\"env\":[],\"cwd\":\"/\"}}", path,
                                             sizeof path, cwd, sizeof cwd),
                     0);
    assert_string_equal(path, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    /* No cwd, not JSON, too long: refused. */
    assert_int_equal(
        tagent_ctr_process_info("{\"process\":{}}", path, sizeof path, cwd, sizeof cwd), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tagent_ctr_process_info("[", path, sizeof path, cwd, sizeof cwd), -1);
    assert_int_equal(
        tagent_ctr_process_info("{\"process\":{\"cwd\":\"/home/u\"}}", path, 8, cwd, sizeof cwd),
        -1);
    assert_int_equal(errno, ENAMETOOLONG);
}

/* Connect to path and send fds (n of them) with one byte, as crun does. */
static void send_to(const char *path, const int *fds, int n)
{
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof a), 0);
    char byte = ' ';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n > 0) {
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE((size_t)n * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
    }
    assert_int_equal(sendmsg(s, &m, 0), 1);
    close(s);
}

static void test_console(void **state)
{
    char base[] = "/tmp/test_ctrrun.XXXXXX", dir[PATH_MAX], path[PATH_MAX];
    assert_non_null(mkdtemp(base));
    assert_int_equal(tagent_ctr_console_dir(base, dir, sizeof dir), 0);
    struct stat st;
    assert_int_equal(lstat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(st.st_uid, geteuid());
    /* Again (an earlier attempt's, its mode changed): 0700 again. */
    chmod(dir, 0755);
    assert_int_equal(tagent_ctr_console_dir(base, dir, sizeof dir), 0);
    assert_int_equal(lstat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);

    int lfd = tagent_ctr_console_listen(dir, "run.sock", path, sizeof path);
    assert_true(lfd >= 0);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 077, 0);
    /* Nobody came: ETIMEDOUT. */
    assert_int_equal(tagent_ctr_console_recv(lfd, 10), -1);
    assert_int_equal(errno, ETIMEDOUT);

    /* A terminal's master: taken, non-blocking. */
    int ptm = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(ptm >= 0);
    send_to(path, &ptm, 1);
    int got = tagent_ctr_console_recv(lfd, 1000);
    assert_true(got >= 0);
    assert_true(fcntl(got, F_GETFL) & O_NONBLOCK);
    assert_true(fcntl(got, F_GETFD) & FD_CLOEXEC);
    close(got);
    /* A plain file, two descriptors, none: refused. */
    int f = open("/dev/null", O_RDONLY);
    send_to(path, &f, 1);
    assert_int_equal(tagent_ctr_console_recv(lfd, 1000), -1);
    assert_int_equal(errno, EPROTO);
    int two[2] = {ptm, f};
    send_to(path, two, 2);
    assert_int_equal(tagent_ctr_console_recv(lfd, 1000), -1);
    assert_int_equal(errno, EPROTO);
    send_to(path, NULL, 0);
    assert_int_equal(tagent_ctr_console_recv(lfd, 1000), -1);
    assert_int_equal(errno, EPROTO);
    close(f);
    close(ptm);
    close(lfd);
    unlink(path);
    /* A link where the directory should be: refused. */
    rmdir(dir);
    assert_int_equal(symlink("/tmp", dir), 0);
    assert_int_equal(tagent_ctr_console_dir(base, dir, sizeof dir), -1);
    unlink(dir);
    rmdir(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argv_create),      cmocka_unit_test(test_argv_start),
        cmocka_unit_test(test_argv_one_element), cmocka_unit_test(test_argv_too_long),
        cmocka_unit_test(test_path_ok),          cmocka_unit_test(test_cwd_flags),
        cmocka_unit_test(test_argv_console),     cmocka_unit_test(test_exec_argv),
        cmocka_unit_test(test_exec_process),     cmocka_unit_test(test_console),
        cmocka_unit_test(test_process_info),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
