/* btrfsq.h - folders as btrfs subvolumes held by qgroups (docs/folders.md, "Quotas"): the
 * kernel's ioctls (linux/btrfs.h), no btrfs command and no library.
 *
 * When the folder root is on btrfs with quotas enabled, a folder is a subvolume and its quota
 * the limit (max referenced) of a level-1 qgroup of its own, 1/<folder id>, that its
 * subvolume's qgroup 0/<subvolume id> belongs to; a project's quota is the limit of the level-2
 * qgroup 2/<project id> that the qgroups of its folders belong to (tfld_qgroup_folder,
 * tfld_qgroup_project in folders.h).  The kernel then refuses (EDQUOT) every write past a
 * limit, whoever makes it: a job, a shell, rsync, an upload.
 *
 * Why level 1 for a folder and not its subvolume's own 0/<id>: a user may create a subvolume
 * inside their folder (BTRFS_IOC_SUBVOL_CREATE needs only write access to the directory); its
 * qgroup is a new 0/<id> that no limit names.  tbq_adopt puts every subvolume below a folder's
 * into the folder's 1/<folder id>, so that its files count against the folder's quota (and
 * the project's) from then on.
 *
 * Every call takes the folder root's descriptor (O_PATH will do: a directory descriptor for
 * the ioctls is opened from it), needs CAP_SYS_ADMIN (tesseld is root), and returns 0 or -1
 * with errno and err (when not NULL).  Prefix tbq_. */
#ifndef TESSEL_DAEMON_BTRFSQ_H
#define TESSEL_DAEMON_BTRFSQ_H

#include <stdbool.h>
#include <stdint.h>

#include "libutil/error.h"

/* Most subvolumes below one folder that tbq_adopt puts into the folder's qgroup per call (a
 * user's nested subvolumes; more are adopted at the next call, which starts over). */
#define TBQ_ADOPT_MAX 256

/* 1 when the file system of rootfd is btrfs with quotas enabled (qgroups, not simple quotas),
 * 0 when it is another file system or btrfs without quotas (why into err), -1 on an error. */
int tbq_probe(int rootfd, tsl_error_t *err);

/* Make <root>/name a subvolume (root's, 0700: the caller writes its ACL), create the qgroup
 * folderq and put the subvolume in it, and folderq in projq when projq is not 0 (created when
 * missing).  The subvolume's id into *subvol.  EEXIST when the name is taken.  On failure the
 * subvolume is deleted again. */
int tbq_folder_make(int rootfd, const char *name, uint64_t folderq, uint64_t projq,
                    uint64_t *subvol, tsl_error_t *err);

/* The subvolume id of <root>/name into *subvol: 0 when it is a subvolume; ENOTDIR when it is
 * an ordinary directory (a folder made before quotas were enabled: the measured path). */
int tbq_subvol_of(int rootfd, const char *name, uint64_t *subvol, tsl_error_t *err);

/* Create qgroup q when missing, and put child in it when child is not 0 (already in it: 0). */
int tbq_qgroup_ensure(int rootfd, uint64_t q, uint64_t child, tsl_error_t *err);

/* Set the limit (max referenced) of qgroup q to bytes; 0 removes it. */
int tbq_limit(int rootfd, uint64_t q, uint64_t bytes, tsl_error_t *err);

/* The bytes qgroup q references (as of the last transaction commit: btrfs commits every 30 s
 * by default, and at every sync) into *rfer, its limit into *limit (0: none).  ENOENT when
 * there is no such qgroup. */
int tbq_usage(int rootfd, uint64_t q, uint64_t *rfer, uint64_t *limit, tsl_error_t *err);

/* Put every subvolume below subvolume subvol (at any depth, at most TBQ_ADOPT_MAX) into
 * qgroup folderq; *adopted: how many were not in it yet.  Starts a rescan when the kernel
 * could not update the numbers at once. */
int tbq_adopt(int rootfd, uint64_t subvol, uint64_t folderq, int *adopted, tsl_error_t *err);

/* Take qgroup child out of parent (not in it: 0). */
int tbq_unassign(int rootfd, uint64_t child, uint64_t parent, tsl_error_t *err);

/* Destroy qgroup q (ENOENT: 0).  EBUSY while it has members or, for a deleted subvolume's
 * 0/<id>, until the kernel has dropped its extents. */
int tbq_qgroup_destroy(int rootfd, uint64_t q, tsl_error_t *err);

/* Whether tesseld still has the folder or project numbered id (tbq_sweep). */
typedef bool (*tbq_keep_f)(uint64_t id, void *arg);
/* The qgroups of level (1: folders, 2: projects) that keep says are no one's any more: their
 * members taken out and the qgroup destroyed; one still referencing extents (a deleted
 * subvolume the kernel has not dropped yet: EBUSY) is left for the next call.  At most
 * TBQ_ADOPT_MAX per call.  *dropped: how many were destroyed.  The levels 1 and 2 of the
 * folder root's file system are tesseld's (docs/folders.md). */
int tbq_sweep(int rootfd, unsigned level, tbq_keep_f keep, void *arg, int *dropped,
              tsl_error_t *err);

#endif
