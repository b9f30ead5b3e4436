/* nomount.h - open a path below a trusted directory without crossing a mount point or a link.
 *
 * A job's directory (<data>/jobs/<id>) is its user's.  Where users may mount file systems
 * (fusermount3 is set-uid root wherever fuse3 is installed), a user can mount one over that
 * directory or over a file in it; a root process that then opens the path by name asks the
 * user's file system server, which may never answer: the open waits, and with it whatever the
 * caller holds (tesseld's lock, the GPU-memory watchdog's next kill).
 *
 * These calls resolve rel below base with openat2(2) and RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS
 * | RESOLVE_BENEATH: a mount point anywhere on the way, the last name included, fails with
 * EXDEV before the mounted file system is asked anything; a symbolic link fails with ELOOP; ".."
 * out of base with EXDEV.  A directory descriptor got this way is the directory underneath any
 * later mount, so names opened, made, renamed or removed through it with the *at calls stay on
 * the data directory's file system too (a mount point there is EBUSY, never entered).
 *
 * Linux 5.6 or later (openat2); on an older kernel every call fails with ENOSYS.
 */
#ifndef TESSEL_UTIL_NOMOUNT_H
#define TESSEL_UTIL_NOMOUNT_H

#include <sys/types.h>

/* openat2(dirfd, rel, flags | O_CLOEXEC, mode) without crossing a mount or following a link,
 * staying below dirfd.  A descriptor, or -1 with errno (EXDEV: a mount point on the way). */
int tsl_openat_nomount(int dirfd, const char *rel, int flags, mode_t mode);

/* The same below the directory base (a trusted path: opened as given).  A descriptor, or -1
 * with errno. */
int tsl_open_nomount(const char *base, const char *rel, int flags, mode_t mode);

/* path, whose last `untrusted` names (1 or more) are resolved as above and the rest opened as
 * given: "<data>/jobs/42/stderr" with 2 trusts "<data>/jobs" (root's) and not "42/stderr" (the
 * job's user's).  A descriptor, or -1 with errno (EXDEV: a mount point on the untrusted part;
 * EINVAL: path has fewer names, or ends with '/'). */
int tsl_open_nomount_tail(const char *path, int untrusted, int flags, mode_t mode);

/* The directory path itself, as a descriptor (O_PATH | O_DIRECTORY) that crosses no mount at
 * its last name: tsl_open_nomount_tail(path, 1, O_PATH | O_DIRECTORY, 0).  For a job's
 * directory below tesseld's jobs/. */
int tsl_dir_nomount(const char *path);

#endif
