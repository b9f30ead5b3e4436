/* btrfsq.c - folders as btrfs subvolumes held by qgroups (btrfsq.h): the kernel's ioctls. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "daemon/btrfsq.h"
#include "libutil/nomount.h"

/* Simple quotas (kernel 6.7+, "btrfs quota enable -s"): not in Debian 12's headers. */
#ifndef BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE
#define BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE (1ULL << 3)
#endif

/* A directory descriptor of the root for the ioctls (an O_PATH one takes none). */
static int root_dir(int rootfd)
{
    return openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* err's text for what failed, errno kept; -1. */
static int fail(tsl_error_t *err, const char *what)
{
    int e = errno;
    tsl_errprintf(err, "btrfs %s: %s", what, strerror(e));
    errno = e;
    return -1;
}

/* One item of tree tree at exactly (objectid, type, offset) into buf (len bytes at most):
 * its length, 0 when there is none, -1 with errno. */
static int search_one(int fd, uint64_t tree, uint64_t objectid, uint32_t type, uint64_t offset,
                      void *buf, size_t len)
{
    struct btrfs_ioctl_search_args a;
    memset(&a, 0, sizeof a);
    a.key.tree_id = tree;
    a.key.min_objectid = a.key.max_objectid = objectid;
    a.key.min_type = a.key.max_type = type;
    a.key.min_offset = a.key.max_offset = offset;
    a.key.max_transid = (uint64_t)-1;
    a.key.nr_items = 1;
    if (ioctl(fd, BTRFS_IOC_TREE_SEARCH, &a) < 0)
        return -1;
    if (a.key.nr_items == 0)
        return 0;
    struct btrfs_ioctl_search_header h;
    memcpy(&h, a.buf, sizeof h);
    size_t n = h.len < len ? h.len : len;
    memcpy(buf, a.buf + sizeof h, n);
    return (int)n;
}

/* The quota tree's status flags into *flags: 0; ENOENT when quotas are not enabled. */
static int status_flags(int fd, uint64_t *flags)
{
    struct btrfs_qgroup_status_item st;
    int n =
        search_one(fd, BTRFS_QUOTA_TREE_OBJECTID, 0, BTRFS_QGROUP_STATUS_KEY, 0, &st, sizeof st);
    if (n < 0)
        return -1;
    if ((size_t)n < sizeof st) {
        errno = ENOENT;
        return -1;
    }
    *flags = le64toh(st.flags);
    return 0;
}

int tbq_probe(int rootfd, tsl_error_t *err)
{
    struct statfs sf;
    if (fstatfs(rootfd, &sf) < 0)
        return fail(err, "statfs");
    if ((unsigned long)sf.f_type != (unsigned long)BTRFS_SUPER_MAGIC) {
        tsl_errprintf(err, "not btrfs");
        return 0;
    }
    int fd = root_dir(rootfd);
    if (fd < 0)
        return fail(err, "folder root");
    uint64_t flags = 0;
    int rc = status_flags(fd, &flags);
    int e = errno;
    close(fd);
    if (rc < 0 && (e == ENOENT || e == EINVAL)) {
        tsl_errprintf(err, "btrfs without quotas (btrfs quota enable)");
        return 0;
    }
    if (rc < 0)
        return errno = e, fail(err, "quota status");
    if (!(flags & BTRFS_QGROUP_STATUS_FLAG_ON) || (flags & BTRFS_QGROUP_STATUS_FLAG_SIMPLE_MODE)) {
        tsl_errprintf(err, "btrfs with %s",
                      (flags & BTRFS_QGROUP_STATUS_FLAG_ON) ? "simple quotas (not qgroups)"
                                                            : "quotas off");
        return 0;
    }
    return 1;
}

/* The subvolume id of the directory open at fd into *id. */
static int subvol_id(int fd, uint64_t *id)
{
    struct btrfs_ioctl_ino_lookup_args a;
    memset(&a, 0, sizeof a);
    a.objectid = BTRFS_FIRST_FREE_OBJECTID;
    if (ioctl(fd, BTRFS_IOC_INO_LOOKUP, &a) < 0)
        return -1;
    *id = a.treeid;
    return 0;
}

int tbq_subvol_of(int rootfd, const char *name, uint64_t *subvol, tsl_error_t *err)
{
    int fd = tsl_openat_nomount(rootfd, name, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return fail(err, name);
    struct stat st;
    int rc = fstat(fd, &st);
    if (rc == 0 && st.st_ino != BTRFS_FIRST_FREE_OBJECTID) {
        close(fd);
        errno = ENOTDIR;
        return fail(err, "folder is no subvolume");
    }
    if (rc == 0)
        rc = subvol_id(fd, subvol);
    int e = errno;
    close(fd);
    errno = e;
    return rc < 0 ? fail(err, "subvolume id") : 0;
}

static int qgroup_create(int fd, uint64_t q, bool create)
{
    struct btrfs_ioctl_qgroup_create_args a = {.create = create ? 1 : 0, .qgroupid = q};
    return ioctl(fd, BTRFS_IOC_QGROUP_CREATE, &a);
}

/* Put child in parent (assign) or take it out; a rescan when the kernel marked the numbers
 * inconsistent (it could not move the child's figures at once). */
static int relation(int fd, uint64_t child, uint64_t parent, bool assign)
{
    struct btrfs_ioctl_qgroup_assign_args a = {
        .assign = assign ? 1 : 0, .src = child, .dst = parent};
    int rc = ioctl(fd, BTRFS_IOC_QGROUP_ASSIGN, &a);
    if (rc < 0)
        return -1;
    uint64_t flags;
    if (status_flags(fd, &flags) == 0 && (flags & BTRFS_QGROUP_STATUS_FLAG_INCONSISTENT) &&
        !(flags & BTRFS_QGROUP_STATUS_FLAG_RESCAN)) {
        struct btrfs_ioctl_quota_rescan_args r;
        memset(&r, 0, sizeof r);
        if (ioctl(fd, BTRFS_IOC_QUOTA_RESCAN, &r) < 0 && errno != EINPROGRESS)
            return -1;
    }
    return 0;
}

static int ensure(int fd, uint64_t q, uint64_t child)
{
    if (qgroup_create(fd, q, true) < 0 && errno != EEXIST)
        return -1;
    if (child && relation(fd, child, q, true) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

int tbq_qgroup_ensure(int rootfd, uint64_t q, uint64_t child, tsl_error_t *err)
{
    int fd = root_dir(rootfd);
    if (fd < 0)
        return fail(err, "folder root");
    int rc = ensure(fd, q, child);
    int e = errno;
    close(fd);
    errno = e;
    return rc < 0 ? fail(err, "qgroup") : 0;
}

int tbq_folder_make(int rootfd, const char *name, uint64_t folderq, uint64_t projq,
                    uint64_t *subvol, tsl_error_t *err)
{
    int fd = root_dir(rootfd);
    if (fd < 0)
        return fail(err, "folder root");
    struct btrfs_ioctl_vol_args a;
    memset(&a, 0, sizeof a);
    if (strlen(name) >= sizeof a.name) {
        close(fd);
        errno = ENAMETOOLONG;
        return fail(err, "subvolume");
    }
    snprintf(a.name, sizeof a.name, "%s", name);
    /* A name taken answers EEXIST; the new subvolume's root is root's, 0755: shut to 0700
     * before anything else (its ACL is the caller's to write). */
    if (ioctl(fd, BTRFS_IOC_SUBVOL_CREATE, &a) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return fail(err, "subvolume create");
    }
    int sfd = tsl_openat_nomount(rootfd, name, O_RDONLY | O_DIRECTORY, 0);
    int rc = sfd < 0 ? -1 : fchmod(sfd, 0700);
    if (rc == 0)
        rc = subvol_id(sfd, subvol);
    if (rc == 0)
        rc = ensure(fd, folderq, *subvol);
    if (rc == 0 && projq)
        rc = ensure(fd, projq, folderq);
    int e = errno;
    if (sfd >= 0)
        close(sfd);
    if (rc < 0) {
        struct btrfs_ioctl_vol_args d;
        memset(&d, 0, sizeof d);
        snprintf(d.name, sizeof d.name, "%s", name);
        ioctl(fd, BTRFS_IOC_SNAP_DESTROY, &d);
        qgroup_create(fd, folderq, false);
    }
    close(fd);
    errno = e;
    return rc < 0 ? fail(err, "folder subvolume and qgroup") : 0;
}

int tbq_limit(int rootfd, uint64_t q, uint64_t bytes, tsl_error_t *err)
{
    int fd = root_dir(rootfd);
    if (fd < 0)
        return fail(err, "folder root");
    struct btrfs_ioctl_qgroup_limit_args a;
    memset(&a, 0, sizeof a);
    a.qgroupid = q;
    a.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
    /* (u64)-1 with the flag clears the limit (the kernel's CLEAR_VALUE). */
    a.lim.max_rfer = bytes ? bytes : (uint64_t)-1;
    int rc = ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &a);
    int e = errno;
    close(fd);
    errno = e;
    return rc < 0 ? fail(err, "qgroup limit") : 0;
}

int tbq_usage(int rootfd, uint64_t q, uint64_t *rfer, uint64_t *limit, tsl_error_t *err)
{
    int fd = root_dir(rootfd);
    if (fd < 0)
        return fail(err, "folder root");
    struct btrfs_qgroup_info_item info;
    struct btrfs_qgroup_limit_item lim;
    int n =
        search_one(fd, BTRFS_QUOTA_TREE_OBJECTID, 0, BTRFS_QGROUP_INFO_KEY, q, &info, sizeof info);
    int m = n > 0 ? search_one(fd, BTRFS_QUOTA_TREE_OBJECTID, 0, BTRFS_QGROUP_LIMIT_KEY, q, &lim,
                               sizeof lim)
                  : 0;
    int e = errno;
    close(fd);
    if (n < 0 || m < 0)
        return errno = e, fail(err, "qgroup usage");
    if ((size_t)n < sizeof info) {
        errno = ENOENT;
        return fail(err, "qgroup usage");
    }
    *rfer = le64toh(info.rfer);
    *limit = 0;
    if ((size_t)m >= sizeof lim && (le64toh(lim.flags) & BTRFS_QGROUP_LIMIT_MAX_RFER))
        *limit = le64toh(lim.max_rfer);
    return 0;
}

/* The subvolumes directly below subvol (ROOT_REF items of the root tree) appended to ids
 * (*n of cap). */
static int children(int fd, uint64_t subvol, uint64_t *ids, size_t *n, size_t cap)
{
    struct btrfs_ioctl_search_args a;
    memset(&a, 0, sizeof a);
    a.key.tree_id = BTRFS_ROOT_TREE_OBJECTID;
    a.key.min_objectid = a.key.max_objectid = subvol;
    a.key.min_type = a.key.max_type = BTRFS_ROOT_REF_KEY;
    a.key.max_offset = (uint64_t)-1;
    a.key.max_transid = (uint64_t)-1;
    for (;;) {
        a.key.nr_items = 4096;
        if (ioctl(fd, BTRFS_IOC_TREE_SEARCH, &a) < 0)
            return -1;
        if (a.key.nr_items == 0)
            return 0;
        size_t off = 0;
        struct btrfs_ioctl_search_header h;
        for (uint32_t i = 0; i < a.key.nr_items; i++) {
            memcpy(&h, a.buf + off, sizeof h);
            off += sizeof h + h.len;
            if (h.objectid != subvol || h.type != BTRFS_ROOT_REF_KEY)
                continue;
            if (*n >= cap)
                return 0;
            ids[(*n)++] = h.offset;
        }
        if (h.offset == (uint64_t)-1)
            return 0;
        a.key.min_offset = h.offset + 1;
    }
}

int tbq_adopt(int rootfd, uint64_t subvol, uint64_t folderq, int *adopted, tsl_error_t *err)
{
    *adopted = 0;
    int fd = root_dir(rootfd);
    if (fd < 0)
        return fail(err, "folder root");
    uint64_t ids[TBQ_ADOPT_MAX];
    size_t n = 0;
    int rc = children(fd, subvol, ids, &n, TBQ_ADOPT_MAX);
    /* Breadth first: each found subvolume's own children are appended after it. */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (relation(fd, ids[i], folderq, true) == 0)
            (*adopted)++;
        else if (errno != EEXIST)
            rc = -1;
        if (rc == 0)
            rc = children(fd, ids[i], ids, &n, TBQ_ADOPT_MAX);
    }
    int e = errno;
    close(fd);
    errno = e;
    return rc < 0 ? fail(err, "nested subvolumes") : 0;
}

int tbq_unassign(int rootfd, uint64_t child, uint64_t parent, tsl_error_t *err)
{
    int fd = root_dir(rootfd);
    if (fd < 0)
        return fail(err, "folder root");
    int rc = relation(fd, child, parent, false);
    int e = errno;
    close(fd);
    errno = e;
    if (rc < 0 && e == ENOENT)
        return 0;
    return rc < 0 ? fail(err, "qgroup remove") : 0;
}

int tbq_qgroup_destroy(int rootfd, uint64_t q, tsl_error_t *err)
{
    int fd = root_dir(rootfd);
    if (fd < 0)
        return fail(err, "folder root");
    int rc = qgroup_create(fd, q, false);
    int e = errno;
    close(fd);
    errno = e;
    if (rc < 0 && e == ENOENT)
        return 0;
    return rc < 0 ? fail(err, "qgroup destroy") : 0;
}

/* The offsets of the items (objectid, type, lo..hi) of the quota tree into ids (at most cap):
 * their number, or -1. */
static int quota_items(int fd, uint64_t objectid, uint32_t type, uint64_t lo, uint64_t hi,
                       uint64_t *ids, size_t cap)
{
    struct btrfs_ioctl_search_args a;
    memset(&a, 0, sizeof a);
    a.key.tree_id = BTRFS_QUOTA_TREE_OBJECTID;
    a.key.min_objectid = a.key.max_objectid = objectid;
    a.key.min_type = a.key.max_type = type;
    a.key.min_offset = lo;
    a.key.max_offset = hi;
    a.key.max_transid = (uint64_t)-1;
    size_t n = 0;
    while (n < cap) {
        a.key.nr_items = 4096;
        if (ioctl(fd, BTRFS_IOC_TREE_SEARCH, &a) < 0)
            return -1;
        if (a.key.nr_items == 0)
            break;
        size_t off = 0;
        struct btrfs_ioctl_search_header h;
        for (uint32_t i = 0; i < a.key.nr_items; i++) {
            memcpy(&h, a.buf + off, sizeof h);
            off += sizeof h + h.len;
            if (h.objectid == objectid && h.type == type && h.offset >= lo && h.offset <= hi &&
                n < cap)
                ids[n++] = h.offset;
        }
        if (h.offset >= hi)
            break;
        a.key.min_offset = h.offset + 1;
    }
    return (int)n;
}

int tbq_sweep(int rootfd, unsigned level, tbq_keep_f keep, void *arg, int *dropped,
              tsl_error_t *err)
{
    *dropped = 0;
    int fd = root_dir(rootfd);
    if (fd < 0)
        return fail(err, "folder root");
    uint64_t base = (uint64_t)level << BTRFS_QGROUP_LEVEL_SHIFT;
    uint64_t mask = (1ULL << BTRFS_QGROUP_LEVEL_SHIFT) - 1;
    uint64_t qs[TBQ_ADOPT_MAX], kids[TBQ_ADOPT_MAX];
    int n = quota_items(fd, 0, BTRFS_QGROUP_INFO_KEY, base | 1, base | mask, qs, TBQ_ADOPT_MAX);
    for (int i = 0; i < n; i++) {
        if (keep(qs[i] & mask, arg))
            continue;
        /* Its members: the relation items (parent, RELATION, child) with a lower child. */
        int k =
            quota_items(fd, qs[i], BTRFS_QGROUP_RELATION_KEY, 0, qs[i] - 1, kids, TBQ_ADOPT_MAX);
        for (int j = 0; j < k; j++)
            relation(fd, kids[j], qs[i], false);
        if (qgroup_create(fd, qs[i], false) == 0)
            (*dropped)++;
    }
    int e = errno;
    close(fd);
    errno = e;
    return n < 0 ? fail(err, "qgroups") : 0;
}
