/* jobns.h - the job's own mount namespace, made by tessel-shim (root) before it drops to the
 * job's account: the way libtessel-cuda is loaded and the job's limits are read cannot be
 * undone from inside the job.
 *
 * In the namespace (private to the job and its children; the host sees none of it):
 *   /etc/ld.so.preload   read-only bind mount of STATE/ld.so.preload (it names the interposer):
 *                        the dynamic loader loads it into every dynamically linked program,
 *                        whatever LD_PRELOAD says (as container runtimes inject their hooks);
 *   /run/tessel/job      read-only bind mount of STATE (TCU_LIMITS_DIR): the interposer reads
 *                        its limits from /run/tessel/job/limits (tesseld's, root-owned).
 * STATE is tesseld's per-job directory <data>/run/<id>, root-owned, not writable by the job.
 *
 * A job cannot unmount or cover these without CAP_SYS_ADMIN in the namespace's user namespace;
 * the one way to get it as an ordinary user is a new user namespace (unshare -U): with
 * block_userns the job is refused CLONE_NEWUSER by a seccomp filter (see jobns.c).
 * Prefix tagent_jobns_. */
#ifndef TESSEL_AGENT_JOBNS_H
#define TESSEL_AGENT_JOBNS_H

#include <stdbool.h>

#include "libutil/error.h"

/* The mount points: made (root, 0755; an empty /etc/ld.so.preload) when missing.  Run by the
 * shim as root before it forks the job.  0, or -1 with err. */
int tagent_jobns_prepare(tsl_error_t *err);

/* In the job's process, as root, before the privileges are dropped: a new mount namespace with
 * the two bind mounts above, from state (an absolute path of a root-owned directory that no one
 * else can write) and preload, the file bound at /etc/ld.so.preload: an absolute path of a
 * regular file of root's that no one else can write, reached without a link (tesseld's one
 * <data>/run/ld.so.preload for every job); NULL: state/ld.so.preload.  0, or -1 with errno
 * (EPERM: state or preload is not such; the caller reports the stage). */
int tagent_jobns_enter(const char *state, const char *preload);

/* In the job's process, as root, after tagent_jobns_enter: bind path read-only over
 * TCU_LIMITS_DIR/name (an empty root-owned file of the state directory), and check that what
 * was bound is the file open at fd (the interposer as root checked it, held open since), so
 * that the path ld.so.preload names holds that very file for the job's life, whatever becomes
 * of path later (an upgrade that re-points a link and deletes the old file).  0, or -1 with
 * errno (ESTALE: path is another file now). */
int tagent_jobns_bind_file(const char *path, int fd, const char *name);

/* Where a job's virtual folders are mounted (docs/folders.md): TAGENT_FOLDERS_DIR/NAME. */
#define TAGENT_FOLDERS_DIR "/tessel/folders"

/* The mount point of the folders, TAGENT_FOLDERS_DIR (root's, 0755, made when missing on the
 * host: an empty directory).  Run by the shim as root before it forks a job with folders.
 * 0, or -1 with err. */
int tagent_jobns_prepare_folders(tsl_error_t *err);

/* A folder's name as the shim takes it (tesseld's rule: 1 to 32 of a-z, 0-9, '_', '-',
 * starting with a letter), with an optional ":ro"; *ro says which.  false for anything else. */
bool tagent_jobns_folder_valid(const char *spec, bool *ro);

/* In the job's process, as root, after tagent_jobns_enter: a tmpfs of its own over
 * TAGENT_FOLDERS_DIR (read-only once filled), and in it one bind mount per folder spec
 * ("NAME" or "NAME:ro", checked with tagent_jobns_folder_valid) of root/NAME, opened beneath
 * root with no link and no mount crossed; ":ro" ones read-only; all nosuid, nodev.  The
 * folder's own ACLs still decide what the job's user may do in it.  0, or -1 with errno (ENOENT:
 * a folder that is not there any more). */
int tagent_jobns_folders(const char *root, const char *const *specs, int n);

/* In the job's process, last thing before exec (after no_new_privs): refuse the creation of a
 * user namespace (clone/unshare with CLONE_NEWUSER, and clone3, whose flags a filter cannot
 * read: it gets ENOSYS, and the C libraries then use clone).  0, or -1 with errno. */
int tagent_jobns_block_userns(void);

#endif
