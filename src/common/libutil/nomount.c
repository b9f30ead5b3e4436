/* nomount.c - opens that cross no mount point and follow no link (nomount.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "libutil/nomount.h"

int tsl_openat_nomount(int dirfd, const char *rel, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (unsigned long long)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
    };
    long fd;
    do
        fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
    while (fd < 0 && errno == EINTR);
    return (int)fd;
}

int tsl_open_nomount(const char *base, const char *rel, int flags, mode_t mode)
{
    int b = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (b < 0)
        return -1;
    int fd = tsl_openat_nomount(b, rel, flags, mode);
    int saved = errno;
    close(b);
    errno = saved;
    return fd;
}

int tsl_open_nomount_tail(const char *path, int untrusted, int flags, mode_t mode)
{
    size_t len = strlen(path);
    if (untrusted < 1 || len == 0 || path[len - 1] == '/') {
        errno = EINVAL;
        return -1;
    }
    /* The slash before the untrusted part. */
    const char *cut = path + len;
    for (int n = 0; n < untrusted; n++) {
        while (cut > path && cut[-1] != '/')
            cut--;
        if (cut == path) {
            errno = EINVAL;
            return -1;
        }
        if (n + 1 < untrusted)
            cut--;
    }
    char base[PATH_MAX];
    size_t blen = (size_t)(cut - 1 - path);
    if (blen >= sizeof base) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(base, path, blen);
    base[blen] = '\0';
    return tsl_open_nomount(blen ? base : "/", cut, flags, mode);
}

int tsl_dir_nomount(const char *path)
{
    return tsl_open_nomount_tail(path, 1, O_PATH | O_DIRECTORY, 0);
}
