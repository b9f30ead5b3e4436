/* folderfs.h - the folders' directories on disk (docs/folders.md): the folder root, one
 * directory per folder whose POSIX ACLs (folders.h's text) let in only those it is shared
 * with, and the walks that rewrite those ACLs, measure a folder and delete one.
 *
 * Users write inside folders: any name below <root>/<folder> may be a link, a mount point or
 * a directory that is replaced while tesseld (root) walks.  Every step is therefore one name
 * opened relative to its parent's descriptor with tsl_openat_nomount (openat2: beneath, no
 * link, no mount crossing); objects are read or changed through their own descriptors, never
 * by path; a regular file with more than one link is left alone (a hard link may be another
 * place's file: its ACL is not the folder's to change); nothing is ever followed out.
 *
 * Lifecycle: tfld_root_open at start; tfld_dir_make at creation; tfld_dir_apply after each
 * change of the folder's shares or of its projects' members; tfld_dir_usage for du;
 * tfld_dir_retire (under tesseld's lock: the name is free at once and nobody enters any more)
 * then tfld_dir_remove (after the lock: the walk may be long).  Prefix tfld_. */
#ifndef TESSEL_DAEMON_FOLDERFS_H
#define TESSEL_DAEMON_FOLDERFS_H

#include <linux/capability.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/folders.h"
#include "libutil/error.h"

/* Deepest directory a walk enters (each level holds one descriptor): deeper ones are not
 * visited and the walk says it stopped. */
#define TFLD_WALK_DEPTH 64
/* Most passes of a removal (each goes TFLD_WALK_DEPTH levels deeper): 4096 x 64 levels. */
#define TFLD_REMOVE_PASSES 4096

/* Open the folder root path, made when missing (root's, 0711): it must be a directory (not a
 * link), root's, writable by root alone and not readable by others (0711 or 0700: nobody
 * lists the folders' names).  An O_PATH descriptor, or -1 with err. */
int tfld_root_open(const char *path, tsl_error_t *err);

/* Make the directory <root>/name (name: one component, checked by the caller), root's, mode
 * 0770 with the ACL of e (access and default).  EEXIST when something has that name (a
 * directory left from before is not taken over: an admin looks at it).  0, or -1 with err
 * (nothing left behind). */
int tfld_dir_make(int rootfd, const char *name, const tfld_acl_entry_t *e, size_t n,
                  tsl_error_t *err);

/* Write the ACLs of e on <root>/name and on what is inside: directories (access and default),
 * regular files with one link (access); links and other objects are left alone.  At most max
 * objects: *done says how many were written.  0 done, 1 stopped (max or depth), -1 with err
 * (the folder's own directory could not be written: its old ACL stays). */
int tfld_dir_apply(int rootfd, const char *name, const tfld_acl_entry_t *e, size_t n, size_t max,
                   size_t *done, tsl_error_t *err);

/* Why a usage walk did not see the whole folder (its figures are then a lower bound, never
 * taken as the folder's use for a quota decision: docs/folders.md, "Quotas"). */
typedef enum {
    TFLD_USAGE_COMPLETE = 0,
    TFLD_USAGE_OBJECTS, /* more than max objects */
    TFLD_USAGE_DEPTH,   /* a directory deeper than TFLD_WALK_DEPTH (not entered) */
    TFLD_USAGE_LINKS,   /* more files with several links than TFLD_USAGE_LINKS_MAX */
    TFLD_USAGE_ERROR,   /* a directory or an entry that could not be read (EMFILE, ENOMEM,
                         * a mount point, ...) */
    TFLD_USAGE_TIME,    /* the deadline passed */
} tfld_usage_stop_t;

/* Most files with more than one link (st_nlink > 1) one usage walk remembers, to count each
 * (st_dev, st_ino) once: a walk that meets more stops as incomplete (TFLD_USAGE_LINKS). */
#define TFLD_USAGE_LINKS_MAX (1u << 18)

/* The space (st_blocks) and the number of objects (names) of <root>/name, links counted as
 * themselves, a file with several links in the folder counted once.  At most max objects;
 * deadline_ms (tfld_mono_ms's clock; 0: none) stops it too.  0 complete, 1 incomplete (*stop
 * says why; the figures are a lower bound), -1 with err. */
int tfld_dir_usage(int rootfd, const char *name, size_t max, int64_t deadline_ms, uint64_t *bytes,
                   uint64_t *objects, tfld_usage_stop_t *stop, tsl_error_t *err);
/* A few words saying why a walk stopped ("too many entries", "too deep", ...). */
const char *tfld_usage_stop_text(tfld_usage_stop_t stop);
/* CLOCK_MONOTONIC in milliseconds (the deadlines of the walks). */
int64_t tfld_mono_ms(void);

/* Rename <root>/name to <root>/.deleted-<id> and shut it to everyone but root (mode 0700, no
 * named entry), so that the name is free and nobody enters it any more.  retired receives
 * the new name (at least 32 bytes).  ENOENT when there is no such directory.  0 or -1. */
int tfld_dir_retire(int rootfd, const char *name, int64_t id, char *retired, size_t len,
                    tsl_error_t *err);

/* Remove <root>/retired and everything in it, at any depth: a directory at TFLD_WALK_DEPTH is
 * moved up into <root>/retired and removed by the next pass (at most TFLD_REMOVE_PASSES).  0,
 * or -1 with err (what could not be removed stays, shut as tfld_dir_retire left it). */
int tfld_dir_remove(int rootfd, const char *retired, tsl_error_t *err);

/* ---- files through the API, as the caller's account ------------------------------------- */

/* A path inside a folder as the API takes it: "" (the folder itself) or 1 to 64 names joined
 * by single '/', each 1 to 255 bytes, not "." nor "..", with no leading or trailing '/', at
 * most 1024 bytes in all. */
bool tfld_path_valid(const char *rel);

/* Most supplementary groups of an account taken into its identity (more are dropped: the
 * rights they would give are not used). */
#define TFLD_GROUPS_MAX 64

/* An account's identity for the file system: this thread's fsuid, fsgid and groups. */
typedef struct {
    uid_t uid;
    gid_t gid;
    gid_t groups[TFLD_GROUPS_MAX];
    int ngroups;
} tfld_ident_t;

/* What tfld_as_enter replaces, for tfld_as_leave. */
typedef struct {
    gid_t groups[TFLD_GROUPS_MAX];
    int ngroups;
    struct __user_cap_data_struct caps[2]; /* the thread's capability sets */
} tfld_saved_t;

/* Take id as THIS THREAD's file-system identity (raw setgroups, setfsgid, setfsuid system
 * calls: the other threads keep root's): the kernel then checks every open, read and write
 * as that account's, ACLs included, and root's capabilities over files are off for the
 * thread until tfld_as_leave; the thread's whole effective capability set is emptied too
 * (capset: CAP_SYS_RESOURCE would pass disk quotas and the root-reserved blocks).  uid 0 is refused
 * (EPERM).  0, or -1 with errno (the identity is root's again). */
int tfld_as_enter(const tfld_ident_t *id, tfld_saved_t *saved);
/* Back to root's identity (fsuid, fsgid 0, the saved groups). */
void tfld_as_leave(const tfld_saved_t *saved);

/* Space on the file system of fd (O_PATH will do): *avail bytes free for unprivileged
 * writers (f_bavail), *reserve what --disk-reserve (reserve_bytes, or reserve_pct of the
 * file system when > 0) keeps free there.  0, or -1 with errno. */
int tfld_space(int fd, uint64_t reserve_bytes, double reserve_pct, uint64_t *avail,
               uint64_t *reserve);

#endif
