/* folderfs.c - the folders' directories on disk (folderfs.h): libacl, openat2 walks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "daemon/folderfs.h"
#include "libutil/nomount.h"

/* The longest ACL text: TFLD_ACL_MAX entries of ",u:4294967295:rwx" and the fixed ones. */
#define ACL_TEXT_MAX (64 + TFLD_ACL_MAX * 18)

int tfld_root_open(const char *path, tsl_error_t *err)
{
    if (path[0] != '/')
        return errno = EINVAL, tsl_errprintf(err, "folder root %s: not an absolute path", path);
    if (mkdir(path, 0711) < 0 && errno != EEXIST)
        return tsl_errprintf(err, "folder root %s: %s", path, strerror(errno));
    int fd = tsl_dir_nomount(path);
    if (fd < 0)
        return tsl_errprintf(err, "folder root %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & (S_IWGRP | S_IWOTH | S_IRGRP | S_IROTH))) {
        close(fd);
        errno = EPERM;
        return tsl_errprintf(err,
                             "folder root %s: must be a directory owned by root, writable by "
                             "root alone and not readable by others (chmod 711 %s): refused",
                             path, path);
    }
    return fd;
}

/* Set the ACL of text on the object open at fd (O_PATH or not), of type (ACL_TYPE_ACCESS or
 * ACL_TYPE_DEFAULT), through /proc/self/fd: the object itself, never a path. */
static int set_acl(int fd, acl_type_t type, const char *text)
{
    acl_t acl = acl_from_text(text);
    if (!acl)
        return -1;
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    int rc = acl_valid(acl) == 0 ? acl_set_file(self, type, acl) : -1;
    int saved = errno;
    acl_free(acl);
    errno = saved;
    return rc;
}

/* Access and default ACLs of a directory open at fd; kind TOP or DIR. */
static int set_dir_acls(int fd, const tfld_acl_entry_t *e, size_t n, tfld_acl_kind_t kind,
                        mode_t mode)
{
    char text[ACL_TEXT_MAX];
    if (tfld_acl_text(e, n, kind, mode, text, sizeof text) < 0 ||
        set_acl(fd, ACL_TYPE_ACCESS, text) < 0)
        return -1;
    if (tfld_acl_text(e, n, TFLD_ACL_DEFAULT, mode, text, sizeof text) < 0)
        return -1;
    return set_acl(fd, ACL_TYPE_DEFAULT, text);
}

int tfld_dir_make(int rootfd, const char *name, const tfld_acl_entry_t *e, size_t n,
                  tsl_error_t *err)
{
    if (mkdirat(rootfd, name, 0700) < 0)
        return tsl_errprintf(err, "folder '%s': %s", name, strerror(errno));
    int fd = tsl_openat_nomount(rootfd, name, O_PATH | O_DIRECTORY, 0);
    if (fd < 0 || set_dir_acls(fd, e, n, TFLD_ACL_TOP, 0) < 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        unlinkat(rootfd, name, AT_REMOVEDIR);
        errno = saved;
        return tsl_errprintf(err, "folder '%s': its ACL: %s", name, strerror(errno));
    }
    close(fd);
    return 0;
}

typedef enum { W_APPLY, W_USAGE, W_REMOVE } walk_op_t;

/* The files with several links a usage walk has counted: an open-addressing set of (st_dev,
 * st_ino), grown by doubling up to TFLD_USAGE_LINKS_MAX entries. */
typedef struct {
    dev_t dev;
    ino_t ino;
} inode_t;

typedef struct {
    inode_t *slot; /* cap slots; ino 0 and dev 0 together: free */
    size_t cap, n;
} inode_set_t;

typedef struct {
    walk_op_t op;
    const tfld_acl_entry_t *e;
    size_t n;
    size_t max, count;
    uint64_t bytes;
    bool stopped;           /* max (or the deadline) reached: the walk ends */
    tfld_usage_stop_t stop; /* the first reason a usage walk is incomplete */
    int error;              /* first errno of an object that could not be changed or removed */
    int64_t deadline_ms;    /* 0: none */
    inode_set_t links;      /* W_USAGE: files with several links counted */
    int topfd;              /* W_REMOVE: the retired directory, where deep subtrees move up */
    unsigned long moved;    /* W_REMOVE: subtrees moved up in this pass */
} walk_t;

int64_t tfld_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *tfld_usage_stop_text(tfld_usage_stop_t stop)
{
    switch (stop) {
    case TFLD_USAGE_COMPLETE:
        return "complete";
    case TFLD_USAGE_OBJECTS:
        return "too many entries";
    case TFLD_USAGE_DEPTH:
        return "too deep";
    case TFLD_USAGE_LINKS:
        return "too many hard-linked files";
    case TFLD_USAGE_ERROR:
        return "a directory could not be read";
    case TFLD_USAGE_TIME:
        return "out of time";
    }
    return "incomplete";
}

static void incomplete(walk_t *w, tfld_usage_stop_t why)
{
    if (w->stop == TFLD_USAGE_COMPLETE)
        w->stop = why;
}

/* Whether (dev, ino) was in the set; added when not.  -1 when the set is full (or out of
 * memory). */
static int inode_seen(inode_set_t *s, dev_t dev, ino_t ino)
{
    if (s->n * 2 >= s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        if (s->n >= TFLD_USAGE_LINKS_MAX)
            return -1;
        inode_t *t = calloc(cap, sizeof *t);
        if (!t)
            return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (s->slot[i].dev == 0 && s->slot[i].ino == 0)
                continue;
            size_t h =
                (size_t)((s->slot[i].ino * 0x9E3779B97F4A7C15ull) ^ s->slot[i].dev) & (cap - 1);
            while (t[h].dev != 0 || t[h].ino != 0)
                h = (h + 1) & (cap - 1);
            t[h] = s->slot[i];
        }
        free(s->slot);
        s->slot = t;
        s->cap = cap;
    }
    size_t h = (size_t)((ino * 0x9E3779B97F4A7C15ull) ^ dev) & (s->cap - 1);
    while (s->slot[h].dev != 0 || s->slot[h].ino != 0) {
        if (s->slot[h].dev == dev && s->slot[h].ino == ino)
            return 1;
        h = (h + 1) & (s->cap - 1);
    }
    s->slot[h].dev = dev;
    s->slot[h].ino = ino;
    s->n++;
    return 0;
}

/* Before a removal walks into the directory open at fd: when it is the root of a read-only
 * btrfs subvolume (a user may snapshot a subvolume of theirs with "btrfs subvolume snapshot -r"
 * inside their folder), its read-only flag is cleared (root may), so that its files can be
 * removed and the emptied subvolume deleted by the walk's rmdir; otherwise a deleted folder
 * would leave it behind, its data counted against no quota.  0 when there was nothing to do
 * or it was done, -1 with errno. */
static int subvol_writable(int fd)
{
    struct stat st;
    struct statfs sf;
    if (fstat(fd, &st) < 0 || fstatfs(fd, &sf) < 0)
        return -1;
    if ((unsigned long)sf.f_type != (unsigned long)BTRFS_SUPER_MAGIC ||
        st.st_ino != BTRFS_FIRST_FREE_OBJECTID)
        return 0;
    uint64_t flags = 0;
    if (ioctl(fd, BTRFS_IOC_SUBVOL_GETFLAGS, &flags) < 0)
        return -1;
    if (!(flags & BTRFS_SUBVOL_RDONLY))
        return 0;
    flags &= ~(uint64_t)BTRFS_SUBVOL_RDONLY;
    return ioctl(fd, BTRFS_IOC_SUBVOL_SETFLAGS, &flags);
}

/* The entries of the directory open at dfd (O_RDONLY, taken: closed here), depth levels
 * below the folder's own directory. */
static void walk_dir(walk_t *w, int dfd, int depth)
{
    DIR *dir = fdopendir(dfd);
    if (!dir) {
        if (!w->error)
            w->error = errno;
        incomplete(w, TFLD_USAGE_ERROR);
        close(dfd);
        return;
    }
    struct dirent *de;
    for (;;) {
        errno = 0;
        if ((de = readdir(dir)) == NULL) {
            if (errno) {
                if (!w->error)
                    w->error = errno;
                incomplete(w, TFLD_USAGE_ERROR);
            }
            break;
        }
        const char *nm = de->d_name;
        if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        if (w->count >= w->max) {
            w->stopped = true;
            incomplete(w, TFLD_USAGE_OBJECTS);
            break;
        }
        if (w->deadline_ms > 0 && w->count % 256 == 1 && tfld_mono_ms() >= w->deadline_ms) {
            w->stopped = true;
            incomplete(w, TFLD_USAGE_TIME);
            break;
        }
        struct stat st;
        if (fstatat(dirfd(dir), nm, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno != ENOENT) /* not gone since readdir: unread */
                incomplete(w, TFLD_USAGE_ERROR);
            continue;
        }
        w->count++;
        /* A file with several links: its blocks once per walk (a thousand names of one file
         * are one file's space). */
        bool seen = false;
        if (w->op == W_USAGE && !S_ISDIR(st.st_mode) && st.st_nlink > 1) {
            int r = inode_seen(&w->links, st.st_dev, st.st_ino);
            if (r < 0)
                incomplete(w, TFLD_USAGE_LINKS);
            seen = r != 0;
        }
        if (!seen)
            w->bytes += (uint64_t)st.st_blocks * 512u;
        if (S_ISDIR(st.st_mode)) {
            if (depth + 1 >= TFLD_WALK_DEPTH) {
                /* Not entered (each level holds a descriptor).  A removal moves it up into
                 * the retired directory, for its next pass. */
                incomplete(w, TFLD_USAGE_DEPTH);
                if (w->op == W_REMOVE) {
                    char up[64];
                    int r = -1;
                    for (unsigned k = 0; k < 1000 && r < 0; k++) {
                        snprintf(up, sizeof up, ".up-%lu-%u", w->moved, k);
                        r = renameat2(dirfd(dir), nm, w->topfd, up, RENAME_NOREPLACE);
                        if (r < 0 && errno != EEXIST)
                            break;
                    }
                    if (r == 0)
                        w->moved++;
                    else if (!w->error)
                        w->error = errno;
                }
                continue;
            }
            /* One name, beneath, no link, no mount: a directory swapped for a link since
             * fstatat, or a mount point, is not entered. */
            int sub = tsl_openat_nomount(dirfd(dir), nm, O_RDONLY | O_DIRECTORY, 0);
            if (sub < 0) {
                if (errno != ENOENT)
                    incomplete(w, TFLD_USAGE_ERROR);
                if (w->op != W_USAGE && !w->error)
                    w->error = errno;
                continue;
            }
            if (w->op == W_REMOVE && subvol_writable(sub) < 0 && !w->error)
                w->error = errno;
            struct stat sst;
            if (w->op == W_APPLY &&
                (fstat(sub, &sst) < 0 ||
                 set_dir_acls(sub, w->e, w->n, TFLD_ACL_DIR, sst.st_mode) < 0) &&
                !w->error)
                w->error = errno;
            walk_dir(w, sub, depth + 1);
            if (w->op == W_REMOVE && unlinkat(dirfd(dir), nm, AT_REMOVEDIR) < 0 && !w->error)
                w->error = errno;
        } else if (w->op == W_REMOVE) {
            /* unlinkat never follows the name: a link is removed, not its target. */
            if (unlinkat(dirfd(dir), nm, 0) < 0 && errno != ENOENT && !w->error)
                w->error = errno;
        } else if (w->op == W_APPLY && S_ISREG(st.st_mode)) {
            int fd = tsl_openat_nomount(dirfd(dir), nm, O_PATH, 0);
            struct stat fst;
            if (fd < 0)
                continue;
            /* Checked on the object itself: a regular file with one link, the folder's. */
            if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_nlink == 1) {
                char text[ACL_TEXT_MAX];
                if ((tfld_acl_text(w->e, w->n, TFLD_ACL_FILE, fst.st_mode, text, sizeof text) < 0 ||
                     set_acl(fd, ACL_TYPE_ACCESS, text) < 0) &&
                    !w->error)
                    w->error = errno;
            }
            close(fd);
        }
        if (w->stopped)
            break;
    }
    closedir(dir);
}

/* Walk <root>/name (its own directory done by the caller through top, an O_PATH fd). */
static int walk(int rootfd, const char *name, walk_t *w, tsl_error_t *err)
{
    int dfd = tsl_openat_nomount(rootfd, name, O_RDONLY | O_DIRECTORY, 0);
    if (dfd < 0)
        return tsl_errprintf(err, "folder '%s': %s", name, strerror(errno));
    struct stat st;
    if (fstat(dfd, &st) == 0)
        w->bytes += (uint64_t)st.st_blocks * 512u;
    w->count++;
    walk_dir(w, dfd, 0);
    return 0;
}

int tfld_dir_apply(int rootfd, const char *name, const tfld_acl_entry_t *e, size_t n, size_t max,
                   size_t *done, tsl_error_t *err)
{
    *done = 0;
    int top = tsl_openat_nomount(rootfd, name, O_PATH | O_DIRECTORY, 0);
    if (top < 0)
        return tsl_errprintf(err, "folder '%s': %s", name, strerror(errno));
    /* The folder's own directory first: it is the gate (nobody without an entry there
     * reaches anything inside), so a walk stopped early never leaves anyone in who should be
     * out. */
    int rc = set_dir_acls(top, e, n, TFLD_ACL_TOP, 0);
    int saved = errno;
    close(top);
    if (rc < 0) {
        errno = saved;
        return tsl_errprintf(err, "folder '%s': its ACL: %s", name, strerror(saved));
    }
    walk_t w = {.op = W_APPLY, .e = e, .n = n, .max = max};
    if (walk(rootfd, name, &w, err) < 0)
        return -1;
    *done = w.count;
    return w.stopped || w.error || w.stop != TFLD_USAGE_COMPLETE ? 1 : 0;
}

int tfld_dir_usage(int rootfd, const char *name, size_t max, int64_t deadline_ms, uint64_t *bytes,
                   uint64_t *objects, tfld_usage_stop_t *stop, tsl_error_t *err)
{
    walk_t w = {.op = W_USAGE, .max = max, .deadline_ms = deadline_ms};
    int rc = walk(rootfd, name, &w, err);
    free(w.links.slot);
    if (rc < 0)
        return -1;
    *bytes = w.bytes;
    *objects = w.count;
    *stop = w.stop;
    return w.stop != TFLD_USAGE_COMPLETE ? 1 : 0;
}

int tfld_dir_retire(int rootfd, const char *name, int64_t id, char *retired, size_t len,
                    tsl_error_t *err)
{
    snprintf(retired, len, ".deleted-%lld", (long long)id);
    if (renameat(rootfd, name, rootfd, retired) < 0)
        return tsl_errprintf(err, "folder '%s': %s", name, strerror(errno));
    int fd = tsl_openat_nomount(rootfd, retired, O_PATH | O_DIRECTORY, 0);
    if (fd < 0 || set_dir_acls(fd, NULL, 0, TFLD_ACL_TOP, 0) < 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        errno = saved;
        return tsl_errprintf(err, "folder '%s' (now %s): shutting it: %s", name, retired,
                             strerror(saved));
    }
    close(fd);
    return 0;
}

int tfld_dir_remove(int rootfd, const char *retired, tsl_error_t *err)
{
    int top = tsl_openat_nomount(rootfd, retired, O_PATH | O_DIRECTORY, 0);
    if (top < 0)
        return tsl_errprintf(err, "%s: %s", retired, strerror(errno));
    /* Each pass removes what lies within TFLD_WALK_DEPTH levels and moves the directories at
     * that depth up into the retired directory, for the next pass. */
    walk_t w = {.op = W_REMOVE, .max = SIZE_MAX, .topfd = top};
    unsigned pass = 0;
    do {
        w.moved = 0;
        w.stop = TFLD_USAGE_COMPLETE;
        if (walk(rootfd, retired, &w, err) < 0) {
            close(top);
            return -1;
        }
    } while (!w.error && w.moved > 0 && ++pass < TFLD_REMOVE_PASSES);
    close(top);
    if (w.error || w.moved > 0) {
        errno = w.error ? w.error : ELOOP;
        return tsl_errprintf(err, "%s: not everything could be removed: %s", retired,
                             strerror(errno));
    }
    if (unlinkat(rootfd, retired, AT_REMOVEDIR) < 0)
        return tsl_errprintf(err, "%s: %s", retired, strerror(errno));
    return 0;
}

bool tfld_path_valid(const char *rel)
{
    size_t len = strlen(rel), names = 0;
    if (len == 0)
        return true;
    if (len > 1024 || rel[0] == '/' || rel[len - 1] == '/')
        return false;
    const char *p = rel;
    while (*p) {
        size_t n = strcspn(p, "/");
        if (n == 0 || n > 255 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (++names > 64)
            return false;
        p += n;
        if (*p == '/')
            p++;
    }
    return true;
}

/* This thread's capability sets (capget/capset with pid 0 act on the calling thread only). */
static int caps_get(struct __user_cap_data_struct data[2])
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    return (int)syscall(SYS_capget, &h, data);
}

static int caps_set(const struct __user_cap_data_struct data[2])
{
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    return (int)syscall(SYS_capset, &h, data);
}

int tfld_as_enter(const tfld_ident_t *id, tfld_saved_t *saved)
{
    if (id->uid == 0) {
        errno = EPERM;
        return -1;
    }
    if (caps_get(saved->caps) < 0)
        return -1;
    int n = (int)syscall(SYS_getgroups, TFLD_GROUPS_MAX, saved->groups);
    saved->ngroups = n < 0 ? 0 : n;
    if (syscall(SYS_setgroups, (size_t)id->ngroups, id->groups) < 0)
        return -1;
    /* setfsuid and setfsgid answer the previous id, never an error: asked again with -1
     * (no change), they say whether the change took. */
    syscall(SYS_setfsgid, id->gid);
    syscall(SYS_setfsuid, id->uid);
    if ((gid_t)syscall(SYS_setfsgid, (gid_t)-1) != id->gid ||
        (uid_t)syscall(SYS_setfsuid, (uid_t)-1) != id->uid) {
        tfld_as_leave(saved);
        errno = EPERM;
        return -1;
    }
    /* A non-zero fsuid turns off only the file capabilities (CAP_DAC_OVERRIDE, CAP_FOWNER,
     * ...): CAP_SYS_RESOURCE would still pass quotas and ext4's root-reserved blocks.  The
     * whole effective set goes (the permitted set stays, for tfld_as_leave), so the thread
     * writes as a shell of the account would. */
    struct __user_cap_data_struct none[2];
    memcpy(none, saved->caps, sizeof none);
    none[0].effective = none[1].effective = 0;
    if (caps_set(none) < 0) {
        int e = errno;
        tfld_as_leave(saved);
        errno = e;
        return -1;
    }
    return 0;
}

void tfld_as_leave(const tfld_saved_t *saved)
{
    /* Effective again first (raising within the permitted set needs no capability): the
     * calls below need CAP_SETUID and CAP_SETGID. */
    caps_set(saved->caps);
    syscall(SYS_setfsuid, 0);
    syscall(SYS_setfsgid, 0);
    syscall(SYS_setgroups, (size_t)saved->ngroups, saved->groups);
}

int tfld_space(int fd, uint64_t reserve_bytes, double reserve_pct, uint64_t *avail,
               uint64_t *reserve)
{
    struct statvfs vfs;
    if (fstatvfs(fd, &vfs) < 0)
        return -1;
    *avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    *reserve = reserve_pct > 0 ? (uint64_t)((double)vfs.f_blocks * vfs.f_frsize * reserve_pct / 100)
                               : reserve_bytes;
    return 0;
}
