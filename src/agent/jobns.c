/* jobns.c - the job's mount namespace and its user-namespace filter (see jobns.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "agent/jobns.h"
#include "interposer/policy/policy.h"
#include "libutil/nomount.h"

#define PRELOAD_PATH "/etc/ld.so.preload"

/* A directory that must be root's and writable by root only: made when missing. */
static int root_dir(const char *path, tsl_error_t *err)
{
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    struct stat st;
    if (lstat(path, &st) < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        errno = EPERM;
        return tsl_errprintf(err, "%s: not a directory owned and written only by root", path);
    }
    return 0;
}

int tagent_jobns_prepare(tsl_error_t *err)
{
    if (root_dir("/run/tessel", err) < 0 || root_dir(TCU_LIMITS_DIR, err) < 0)
        return -1;
    /* A bind mount needs a file to cover: without a site's own /etc/ld.so.preload, an empty one
     * (which changes nothing for the host's programs). */
    int fd = open(PRELOAD_PATH, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
    struct stat st;
    if (lstat(PRELOAD_PATH, &st) < 0)
        return tsl_errprintf(err, "%s: %s", PRELOAD_PATH, strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_uid != 0) {
        errno = EPERM;
        return tsl_errprintf(err, "%s: not a regular file owned by root", PRELOAD_PATH);
    }
    return 0;
}

/* Bind src over dst, then make that mount read-only, without devices or set-uid. */
static int bind_ro(const char *src, const char *dst)
{
    if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
        return -1;
    return mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL);
}

int tagent_jobns_enter(const char *state, const char *preload_list)
{
    char preload[4096];
    struct stat st;
    if (state[0] != '/' || lstat(state, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        errno = EPERM;
        return -1;
    }
    if (preload_list) {
        /* Not through a link: lstat sees what the bind mount takes (its directory, tesseld's
         * run/, is root's and written by root alone, so the name cannot change meanwhile). */
        if (preload_list[0] != '/' || lstat(preload_list, &st) < 0)
            return -1;
        if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
            errno = EPERM;
            return -1;
        }
        if (snprintf(preload, sizeof preload, "%s", preload_list) >= (int)sizeof preload) {
            errno = ENAMETOOLONG;
            return -1;
        }
    } else if (snprintf(preload, sizeof preload, "%s/ld.so.preload", state) >=
               (int)sizeof preload) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (unshare(CLONE_NEWNS) < 0)
        return -1;
    /* Nothing mounted here reaches the host; the host's later mounts still reach the job. */
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
        return -1;
    if (bind_ro(state, TCU_LIMITS_DIR) < 0)
        return -1;
    if (bind_ro(preload, PRELOAD_PATH) < 0)
        return -1;
    return 0;
}

int tagent_jobns_prepare_folders(tsl_error_t *err)
{
    return root_dir("/tessel", err) < 0 || root_dir(TAGENT_FOLDERS_DIR, err) < 0 ? -1 : 0;
}

bool tagent_jobns_folder_valid(const char *spec, bool *ro)
{
    size_t n = 0;
    if (!(spec[0] >= 'a' && spec[0] <= 'z'))
        return false;
    for (; spec[n] && spec[n] != ':'; n++) {
        char c = spec[n];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    if (n > 32)
        return false;
    *ro = spec[n] == ':';
    return spec[n] == '\0' || strcmp(spec + n, ":ro") == 0;
}

int tagent_jobns_folders(const char *root, const char *const *specs, int n)
{
    if (mount("tessel-folders", TAGENT_FOLDERS_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755,size=64k") < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        char name[40], dst[128], src[64];
        bool ro;
        if (!tagent_jobns_folder_valid(specs[i], &ro)) {
            errno = EINVAL;
            return -1;
        }
        size_t len = strcspn(specs[i], ":");
        memcpy(name, specs[i], len);
        name[len] = '\0';
        snprintf(dst, sizeof dst, "%s/%s", TAGENT_FOLDERS_DIR, name);
        if (mkdir(dst, 0755) < 0)
            return -1;
        /* Opened in this namespace (a bind takes only its own namespace's mounts), one name
         * beneath the root, no link: the folder's directory itself. */
        int fd = tsl_open_nomount(root, name, O_PATH | O_DIRECTORY, 0);
        if (fd < 0)
            return -1;
        snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
        int rc = mount(src, dst, NULL, MS_BIND, NULL);
        int saved = errno;
        close(fd);
        if (rc < 0) {
            errno = saved;
            return -1;
        }
        if (mount(NULL, dst, NULL,
                  MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | (ro ? MS_RDONLY : 0), NULL) < 0)
            return -1;
    }
    return mount(NULL, TAGENT_FOLDERS_DIR, NULL,
                 MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k");
}

int tagent_jobns_bind_file(const char *path, int fd, const char *name)
{
    char dst[4096];
    struct stat want, got;
    if (fd < 0 || path[0] != '/' || strchr(name, '/') || !name[0]) {
        errno = EINVAL;
        return -1;
    }
    if (snprintf(dst, sizeof dst, "%s/%s", TCU_LIMITS_DIR, name) >= (int)sizeof dst) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* By path: a mount namespace binds only its own mounts (the fd's is the parent's). */
    if (fstat(fd, &want) < 0 || bind_ro(path, dst) < 0 || stat(dst, &got) < 0)
        return -1;
    if (got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
        errno = ESTALE; /* replaced since it was checked */
        return -1;
    }
    return 0;
}

#if defined(__x86_64__)
#define ARCH_NR AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH_NR AUDIT_ARCH_AARCH64
#endif

int tagent_jobns_block_userns(void)
{
#ifdef ARCH_NR
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
    struct sock_filter f[] = {
        /* Another ABI (i386 through int 0x80, say) numbers its calls otherwise: refused. */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH_NR, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
        /* x32 calls (bit 30) would name unshare by another number. */
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
#endif
        /* clone3 passes its flags in memory, which a filter cannot read: ENOSYS makes glibc
         * fall back to clone, whose flags it can. */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
        /* The flags: the low 32 bits of the first argument (little-endian). */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof f / sizeof f[0]), .filter = f};
    /* Installed while root (CAP_SYS_ADMIN): no need for no_new_privs, so set-uid programs in
     * the job keep working. */
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}
