/* folders.h - virtual folders (docs/folders.md): who may do what with a folder, and the POSIX
 * ACL text that gives the same rights on disk.  Pure functions, no store, no file system:
 * unit-tested alone (src/daemon/test/test_folders.c); folderfs.h writes what they compute,
 * api/folders.c asks them and nothing else.
 *
 * Rights, from least to most: none < ro (read, list) < rw (also create, change, delete
 * inside) < manage (also share, unshare, delete the folder).  A caller's right is the highest
 * of what each of these gives:
 *   - an admin (tesseld's role) and the folder's owner (its creator): manage;
 *   - the folder's project: its owners manage, its members rw, its viewers ro;
 *   - a share with the caller: ro or rw as shared;
 *   - a share with a project of the caller: its viewers ro; members and owners as shared.
 * A caller with no right is answered as if the folder did not exist (404).  On disk, manage
 * and rw are the same (rwx on directories); an admin gets no entry (tesseld's admin role is
 * no account of the host; root reaches everything anyway).
 */
#ifndef TESSEL_DAEMON_FOLDERS_H
#define TESSEL_DAEMON_FOLDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "libstore/store.h"

typedef enum {
    TFLD_NONE = 0,
    TFLD_RO,
    TFLD_RW,
    TFLD_MANAGE,
} tfld_access_t;

/* "none", "ro", "rw", "manage". */
const char *tfld_access_name(tfld_access_t a);
/* The higher of a and b. */
tfld_access_t tfld_max(tfld_access_t a, tfld_access_t b);
/* What the role in the folder's own project gives: owner manage, member rw, viewer ro. */
tfld_access_t tfld_of_project_role(tstore_role_t role);
/* What a share gives: with a user, role is TSTORE_ROLE_MEMBER (ro or rw as shared); with a
 * project, the user's role in it (viewer ro; member, owner as shared; none nothing). */
tfld_access_t tfld_of_share(bool rw, tstore_role_t role);

/* The most named entries of one folder's ACL: ext4 keeps an ACL in one 4 KiB block (about 500
 * entries of 8 bytes, less the other attributes); 256 leaves room and is more people than a
 * folder is shared with in a lab.  Past it the folder's ACL is not written (the API says so). */
#define TFLD_ACL_MAX 256

typedef struct {
    uid_t uid;
    bool rw;
} tfld_acl_entry_t;

/* Add uid (rw or not) to e[*n] (capacity cap), merging with an entry of the same uid (rw
 * wins).  0, or -1 with E2BIG when full. */
int tfld_acl_add(tfld_acl_entry_t *e, size_t *n, size_t cap, uid_t uid, bool rw);

typedef enum {
    TFLD_ACL_TOP,     /* the folder's own directory (root's: u::rwx) */
    TFLD_ACL_DIR,     /* a directory inside (its owner keeps its own bits) */
    TFLD_ACL_DEFAULT, /* the default ACL of every directory: what new files and dirs get */
    TFLD_ACL_FILE,    /* a regular file inside (x for the named when its owner has x) */
} tfld_acl_kind_t;

/* The ACL in the short text form of acl_from_text(3) ("u::rwx,g::---,o::---,u:1001:rwx,
 * m::rwx"), with numeric uids (no name lookup), for an object of kind with mode (its st_mode;
 * unused for TOP and DEFAULT).  Group and others get nothing: only the named users pass.
 * The named: rw rwx on directories, rw- on files; ro r-x and r--.  0, or -1 with ENAMETOOLONG
 * when len is too short. */
int tfld_acl_text(const tfld_acl_entry_t *e, size_t n, tfld_acl_kind_t kind, mode_t mode, char *buf,
                  size_t len);

/* ---- quotas (docs/folders.md, "Quotas") ------------------------------------------------- */

/* What a write of add bytes meets: a folder that uses used of its quota (0: none) and belongs
 * to a project whose folders use pused together of its quota pquota (0: none, or no
 * project).  The folder's own quota is looked at first. */
typedef enum {
    TFLD_QUOTA_OK = 0,
    TFLD_QUOTA_FOLDER,  /* it would pass the folder's quota */
    TFLD_QUOTA_PROJECT, /* it would pass the project's */
} tfld_quota_t;
tfld_quota_t tfld_quota_check(int64_t used, int64_t quota, int64_t pused, int64_t pquota,
                              uint64_t add);

#endif
