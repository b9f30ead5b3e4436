/* ctrrun.c - tessel-shim's part of a container job (see ctrrun.h). */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <jansson.h>

#include <linux/magic.h>

#include "agent/ctrrun.h"
#include "libutil/procstat.h"

int tagent_ctr_ns(tsl_error_t *err)
{
    if (unshare(CLONE_NEWNS) < 0)
        return tsl_errprintf(err, "unshare(CLONE_NEWNS): %s", strerror(errno));
    /* Nothing mounted here reaches the host, and nothing unmounted here leaves it. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return tsl_errprintf(err, "mount --make-rprivate /: %s", strerror(errno));
    /* A hybrid layout (v1 hierarchies in a tmpfs at /sys/fs/cgroup, cgroup2 at unified): crun
     * refuses it ("cgroups in hybrid mode not supported") whenever the cgroup2 hierarchy has a
     * controller (hugetlb here); without it crun sees v1, which is what the job's cgroups are. */
    struct statfs top, uni;
    if (statfs("/sys/fs/cgroup", &top) == 0 && top.f_type != CGROUP2_SUPER_MAGIC &&
        statfs("/sys/fs/cgroup/unified", &uni) == 0 && uni.f_type == CGROUP2_SUPER_MAGIC &&
        umount2("/sys/fs/cgroup/unified", MNT_DETACH) < 0)
        return tsl_errprintf(err, "umount /sys/fs/cgroup/unified: %s", strerror(errno));
    return 0;
}

int tagent_ctr_user_ids(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups)
{
    if (syscall(SYS_setgroups, ngroups, groups) < 0)
        return -1;
    syscall(SYS_setfsgid, gid);
    syscall(SYS_setfsuid, uid);
    /* setfs*id say nothing on failure: ask again (a second call returns the current value). */
    if ((uid_t)syscall(SYS_setfsuid, uid) != uid || (gid_t)syscall(SYS_setfsgid, gid) != gid) {
        errno = EPERM;
        return -1;
    }
    return 0;
}

int tagent_ctr_root_ids(void)
{
    syscall(SYS_setfsuid, 0);
    syscall(SYS_setfsgid, 0);
    if (syscall(SYS_setfsuid, 0) != 0 || syscall(SYS_setfsgid, 0) != 0) {
        errno = EPERM;
        return -1;
    }
    gid_t none = 0;
    return syscall(SYS_setgroups, (size_t)0, &none) < 0 ? -1 : 0;
}

bool tagent_ctr_path_ok(const char *path)
{
    return path[0] == '/' && !strpbrk(path, ",:\\\n") && strlen(path) < 3000;
}

int tagent_ctr_cwd_flags_ok(int cwd_fd, unsigned expected)
{
    struct statvfs sv;
    if (fstatvfs(cwd_fd, &sv) < 0)
        return -1;
    if (tagent_ctr_cwd_flags_of(sv.f_flag) & ~expected) {
        errno = EPERM;
        return -1;
    }
    return 0;
}

int tagent_ctr_mount(const char *state, const char *image, int cwd_fd)
{
    char top[PATH_MAX], sub[PATH_MAX + 16], opts[3 * PATH_MAX];
    if (!tagent_ctr_path_ok(state) || !tagent_ctr_path_ok(image) ||
        snprintf(top, sizeof top, "%s/rootfs", state) >= (int)sizeof top) {
        errno = EINVAL;
        return -1;
    }
    /* The writable layer: memory, charged to the job's memory cgroup as the container writes
     * it (the container's processes are in that group), gone with the shim's namespace. */
    if (mount("tessel-ctr", top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0)
        return -1;
    static const char *const dirs[] = {"upper", "work", "root", "cwd", "crun"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        snprintf(sub, sizeof sub, "%s/%s", top, dirs[i]);
        if (mkdir(sub, 0700) < 0)
            return -1;
    }
    /* The container's root is 0755 like any root directory (the tmpfs's mode was 0700). */
    snprintf(sub, sizeof sub, "%s/upper", top);
    if (chmod(sub, 0755) < 0)
        return -1;
    int n = snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s/upper,workdir=%s/work", image, top,
                     top);
    snprintf(sub, sizeof sub, "%s/root", top);
    if (n >= (int)sizeof opts ||
        mount("tessel-image", sub, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
        return -1;
    /* The cwd the user opened: bound from the descriptor, in this namespace (where it was
     * opened: a mount namespace binds only its own mounts). */
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", cwd_fd);
    snprintf(sub, sizeof sub, "%s/cwd", top);
    if (mount(fdpath, sub, NULL, MS_BIND, NULL) < 0)
        return -1;
    return 0;
}

int tagent_ctr_argv(const char *runtime, const char *state, pid_t shim, bool create, char **argv,
                    char *buf, size_t len)
{
    char *root = buf, *pidf = buf + len / 3, *id = buf + 2 * (len / 3);
    size_t third = len / 3;
    if (snprintf(root, third, "%s/rootfs/crun", state) >= (int)third ||
        snprintf(pidf, third, "%s/rootfs/pid", state) >= (int)third ||
        snprintf(id, third, "tessel-%d", (int)shim) >= (int)third) {
        errno = ENAMETOOLONG;
        return -1;
    }
    size_t i = 0;
    argv[i++] = (char *)runtime;
    argv[i++] = (char *)"--root";
    argv[i++] = root;
    argv[i++] = (char *)"--cgroup-manager=disabled";
    if (create) {
        argv[i++] = (char *)"create";
        argv[i++] = (char *)"--bundle";
        argv[i++] = (char *)state;
        argv[i++] = (char *)"--pid-file";
        argv[i++] = pidf;
    } else {
        argv[i++] = (char *)"start";
    }
    argv[i++] = id;
    argv[i] = NULL;
    return 0;
}

int tagent_ctr_start(const char *runtime, const char *state)
{
    char *argv[16], buf[3 * PATH_MAX];
    if (tagent_ctr_argv(runtime, state, getpid(), false, argv, buf, sizeof buf) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    pid_t w;
    do
        w = waitpid(pid, &st, 0);
    while (w < 0 && errno == EINTR);
    if (w != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        errno = EIO;
        return -1;
    }
    return 0;
}

pid_t tagent_ctr_pid(const char *state)
{
    char path[PATH_MAX], buf[32];
    if (snprintf(path, sizeof path, "%s/rootfs/pid", state) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) {
        errno = EPROTO;
        return -1;
    }
    buf[n] = '\0';
    char *end;
    long pid = strtol(buf, &end, 10);
    if (end == buf || pid <= 1 || pid > 0x7fffffff) {
        errno = EPROTO;
        return -1;
    }
    tsl_procstat_t ps;
    if (tsl_procstat_read((pid_t)pid, &ps) < 0 || ps.ppid != getpid()) {
        errno = ESRCH;
        return -1;
    }
    return (pid_t)pid;
}

int tagent_ctr_console_dir(const char *state, char *dir, size_t len)
{
    if (snprintf(dir, len, "%s/console", state) >= (int)len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -1;
    /* STATE is tesseld's (root's, writable by root alone): what is there is an earlier
     * attempt's directory; still, only a real directory of root's is used. */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -1;
    int rc = fstat(fd, &st);
    if (rc == 0 && st.st_uid != 0) {
        rc = -1;
        errno = EPERM;
    }
    if (rc < 0 || fchmod(fd, 0700) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    close(fd);
    return 0;
}

int tagent_ctr_console_listen(const char *dir, const char *name, char *path, size_t plen)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (snprintf(path, plen, "%s/%s", dir, name) >= (int)plen ||
        strlen(path) >= sizeof a.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (unlink(path) < 0 && errno != ENOENT) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    mode_t old = umask(077);
    int rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    umask(old);
    /* One connection: crun's, which sends the descriptor and goes (it need not be accepted
     * first: the connection and its message wait in the queue). */
    if (rc < 0 || listen(fd, 1) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int tagent_ctr_console_recv(int lfd, int timeout_ms)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    int rc;
    do
        rc = poll(&p, 1, timeout_ms);
    while (rc < 0 && errno == EINTR);
    if (rc <= 0) {
        if (rc == 0)
            errno = ETIMEDOUT;
        return -1;
    }
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
        return -1;
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != geteuid()) {
        close(c);
        errno = EPERM;
        return -1;
    }
    /* crun sends its message at once (it is done with the socket when it exits). */
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char byte[256];
    struct iovec iov = {.iov_base = byte, .iov_len = sizeof byte};
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t n;
    do
        n = recvmsg(c, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    close(c);
    if (n < 0)
        return -1;
    /* Exactly one descriptor, a terminal's master; anything else is closed. */
    int fd = -1, extra = 0;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int got;
            memcpy(&got, CMSG_DATA(h) + i * sizeof(int), sizeof got);
            if (fd < 0)
                fd = got;
            else {
                close(got);
                extra++;
            }
        }
    }
    int ptn;
    if (fd < 0 || extra || (m.msg_flags & MSG_CTRUNC) || ioctl(fd, TIOCGPTN, &ptn) < 0) {
        if (fd >= 0)
            close(fd);
        errno = EPROTO;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int tagent_ctr_argv_console(char **argv, size_t slots, const char *sock)
{
    size_t n = 0;
    while (argv[n])
        n++;
    if (n < 2 || n + 3 > slots) {
        errno = E2BIG;
        return -1;
    }
    argv[n + 2] = NULL;
    argv[n + 1] = argv[n - 1];
    argv[n - 1] = (char *)"--console-socket";
    argv[n] = (char *)sock;
    return 0;
}

char *tagent_ctr_exec_process(const char *config, char *const *argv)
{
    json_error_t jerr;
    json_t *c = json_loads(config, JSON_REJECT_DUPLICATES, &jerr);
    json_t *p = c ? json_object_get(c, "process") : NULL;
    if (!json_is_object(p) || !json_is_object(json_object_get(p, "user")) || !argv || !argv[0]) {
        json_decref(c);
        errno = EINVAL;
        return NULL;
    }
    json_t *args = json_array();
    for (char *const *a = argv; *a; a++)
        json_array_append_new(args, json_string(*a));
    json_object_set_new(p, "args", args);
    json_object_set_new(p, "terminal", json_true());
    json_t *size = json_object();
    json_object_set_new(size, "height", json_integer(24));
    json_object_set_new(size, "width", json_integer(80));
    json_object_set_new(p, "consoleSize", size);
    char *text = json_dumps(p, JSON_COMPACT);
    json_decref(c);
    if (!text)
        errno = ENOMEM;
    return text;
}

int tagent_ctr_exec_argv(const char *runtime, const char *state, pid_t shim, const char *process,
                         const char *sock, char **argv, char *buf, size_t len)
{
    char *root = buf, *id = buf + len / 2;
    size_t half = len / 2;
    if (snprintf(root, half, "%s/rootfs/crun", state) >= (int)half ||
        snprintf(id, half, "tessel-%d", (int)shim) >= (int)half) {
        errno = ENAMETOOLONG;
        return -1;
    }
    size_t i = 0;
    argv[i++] = (char *)runtime;
    argv[i++] = (char *)"--root";
    argv[i++] = root;
    argv[i++] = (char *)"--cgroup-manager=disabled";
    argv[i++] = (char *)"exec";
    argv[i++] = (char *)"--process";
    argv[i++] = (char *)process;
    argv[i++] = (char *)"--console-socket";
    argv[i++] = (char *)sock;
    argv[i++] = id;
    argv[i] = NULL;
    return 0;
}

int tagent_ctr_process_info(const char *config, char *path, size_t plen, char *cwd, size_t clen)
{
    json_error_t jerr;
    json_t *c = json_loads(config, JSON_REJECT_DUPLICATES, &jerr);
    json_t *p = c ? json_object_get(c, "process") : NULL;
    const char *dir = json_string_value(json_object_get(p, "cwd"));
    if (!dir) {
        json_decref(c);
        errno = EINVAL;
        return -1;
    }
    const char *found = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(p, "env"), i, v)
    {
        const char *kv = json_string_value(v);
        if (kv && strncmp(kv, "PATH=", 5) == 0)
            found = kv + 5;
    }
    int rc = 0;
    if (snprintf(path, plen, "%s", found) >= (int)plen ||
        snprintf(cwd, clen, "%s", dir) >= (int)clen) {
        errno = ENAMETOOLONG;
        rc = -1;
    }
    json_decref(c);
    return rc;
}
