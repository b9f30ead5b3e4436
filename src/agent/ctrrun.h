/* ctrrun.h - tessel-shim's part of a container job (docs/containers.md): the shim's own mount
 * namespace, the container's root, and crun's command line.
 *
 * The order, in tessel-shim (shim.c) for a job started with --container RUNTIME
 * --image-rootfs IMAGE --state STATE (STATE: tesseld's root-owned directory holding the job's
 * config.json, limits and ld.so.preload, and an empty directory rootfs/):
 *
 *   shim       tagent_ctr_ns          a mount namespace of the shim's own, private; on a hybrid
 *                                     host /sys/fs/cgroup/unified unmounted there (crun refuses
 *                                     a cgroup2 hierarchy with controllers beside v1)
 *   job proc   joins the job's cgroups (as a process job), seccomp's user-namespace filter
 *              tagent_ctr_user_ids    takes the user's file-system ids and groups: the logs and
 *                                     the cwd are opened as the user (a link planted there leads
 *                                     where the user may go anyway)
 *              tagent_ctr_root_ids    back to root's
 *              tagent_ctr_mount       STATE/rootfs: a tmpfs; root/ = overlay of IMAGE (read
 *                                     only, never written) under a writable layer on that tmpfs;
 *                                     cwd/ = the cwd the user opened, bound (no path is looked up
 *                                     again, so no link swapped in meanwhile is followed)
 *              exec crun create (tagent_ctr_argv): crun makes the container from config.json
 *                                     in the job's cgroup (--cgroup-manager=disabled) and exits;
 *                                     the container's process waits for "start", orphaned, and
 *                                     so re-parented to the shim (a subreaper)
 *   shim       waits for crun, reads the container's pid (tagent_ctr_pid), checks it is now its
 *              child; with a terminal (--tty: crun create got --console-socket
 *              STATE/console/run.sock, tagent_ctr_argv_console) takes the terminal's master
 *              crun sent there (tagent_ctr_console_recv); then runs "crun start"
 * (tagent_ctr_start): the container's process execs the job's program.  It records that pid as the
 * job's and supervises it as a process job's: logs, watchdog, exit status (the container process's
 * own: the shim is its parent, so no one else can reap it first), kill.
 *
 * Why create then start and not "crun run --detach": with run, a container that ends at once
 * ends while crun is still its parent, and crun reaps it: its exit status is lost (3 jobs of
 * 30 `exit 7` reported no status that way in a first version).
 *
 * Everything mounted here lives in the shim's namespace only and goes with it; crun's state
 * (--root) is on the tmpfs too, so nothing is left behind on the host whatever ends the shim.
 */
#ifndef TESSEL_AGENT_CTRRUN_H
#define TESSEL_AGENT_CTRRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include "libutil/error.h"

/* A mount namespace of the caller's own, every mount private; the unified hierarchy of a hybrid
 * cgroup layout unmounted in it.  0, or -1 with errno and err. */
int tagent_ctr_ns(tsl_error_t *err);

/* The caller's file-system ids and supplementary groups become the user's (raw system calls:
 * only this thread).  0 or -1 with errno. */
int tagent_ctr_user_ids(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups);
/* Back to root's (uid 0, gid 0, no supplementary group).  0 or -1 with errno. */
int tagent_ctr_root_ids(void);

/* Whether a path may go into an overlay's options (no ',', ':' or '\\'), absolute. */
bool tagent_ctr_path_ok(const char *path);

/* The cwd's host mount as tesseld wrote it into the container's config (--ctr-cwd-flags): crun
 * remounts the bind with the config's options, so a read-only or noexec host mount must be
 * named there.  tagent_ctr_cwd_flags_ok: whether the mount the user's descriptor is on needs
 * no more than `expected` (a cwd moved to another mount since tesseld looked: refused, EPERM). */
#define TAGENT_CTR_CWD_RO     1u
#define TAGENT_CTR_CWD_NOEXEC 2u
static inline unsigned tagent_ctr_cwd_flags_of(unsigned long statvfs_flags)
{
    return (statvfs_flags & ST_RDONLY ? TAGENT_CTR_CWD_RO : 0u) |
           (statvfs_flags & ST_NOEXEC ? TAGENT_CTR_CWD_NOEXEC : 0u);
}
int tagent_ctr_cwd_flags_ok(int cwd_fd, unsigned expected);

/* Mount the container's root under state/rootfs (above) from image, and bind the directory
 * cwd_fd (opened by the user) at state/rootfs/cwd.  0, or -1 with errno. */
int tagent_ctr_mount(const char *state, const char *image, int cwd_fd);

/* crun's command line into argv (at least 16 slots) with its strings in buf (3 * PATH_MAX
 * bytes): RUNTIME --root STATE/rootfs/crun --cgroup-manager=disabled, then with create
 * "create --bundle STATE --pid-file STATE/rootfs/pid", else "start", then tessel-SHIMPID.
 * 0, or -1 with errno ENAMETOOLONG. */
int tagent_ctr_argv(const char *runtime, const char *state, pid_t shim, bool create, char **argv,
                    char *buf, size_t len);

/* Run "crun start" (argv above, the caller's pid as shim) and wait for it: the container's
 * process, made by "crun create" and waiting for this, runs the job's program.  Its messages
 * go to the caller's stderr.  0, or -1 with errno (EIO: crun failed). */
int tagent_ctr_start(const char *runtime, const char *state);

/* The container's pid from crun's pid file, when it is a child of the caller now; else -1
 * with errno (ESRCH: gone, or not the caller's child). */
pid_t tagent_ctr_pid(const char *state);

/* A container job's terminal (docs/terminal.md, "Container jobs"): crun makes the
 * pseudo-terminal in the container (process.terminal) and passes its master side over a Unix
 * socket (--console-socket, SCM_RIGHTS); the shim holds it as it holds a process job's.
 *
 * tagent_ctr_console_dir: STATE/console, made root's with mode 0700 (an existing one must be
 * a directory, not a link, root's; its mode is set to 0700 again), into dir.  Every socket and
 * process.json of the shim is there: no user reaches it.  0, or -1 with errno.
 * tagent_ctr_console_listen: a listening socket (close-on-exec, non-blocking) at dir/name
 * (anything there replaced; mode 0600), its path into path.  fd, or -1 with errno.
 * tagent_ctr_console_recv: accept one connection on lfd within timeout_ms (from a peer of the
 * caller's own uid only: crun, root's) and take the one descriptor it sends, which must be a
 * terminal's master: returned close-on-exec and non-blocking.  -1 with errno (ETIMEDOUT: none
 * came; EPROTO: not one terminal descriptor). */
int tagent_ctr_console_dir(const char *state, char *dir, size_t len);
int tagent_ctr_console_listen(const char *dir, const char *name, char *path, size_t plen);
int tagent_ctr_console_recv(int lfd, int timeout_ms);

/* Insert "--console-socket SOCK" before the container's id, the last argument of argv (from
 * tagent_ctr_argv: room for 16 slots).  0, or -1 with errno E2BIG. */
int tagent_ctr_argv_console(char **argv, size_t slots, const char *sock);

/* The process.json of `crun exec` (tessel exec into a container job): the "process" object of
 * the job's config.json text (tesseld's: the user, groups, environment with the slice's
 * LD_PRELOAD, cwd, no capability, no new privileges: what the container's first process has)
 * with "args" replaced by argv (JSON strings, never a shell's words) and on a terminal of 24x80
 * ("terminal": true, "consoleSize").  A malloc'd compact JSON text, or NULL with errno (EINVAL:
 * config is not JSON or has no process object with a user). */
char *tagent_ctr_exec_process(const char *config, char *const *argv);

/* From the job's config.json text: the PATH of its process's environment into path (the
 * default "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" without one) and its
 * cwd into cwd.  0, or -1 with errno (EINVAL: no process with a cwd; ENAMETOOLONG). */
int tagent_ctr_process_info(const char *config, char *path, size_t plen, char *cwd, size_t clen);

/* crun's command line for exec into argv (16 slots) with its strings in buf (3 * PATH_MAX
 * bytes): RUNTIME --root STATE/rootfs/crun --cgroup-manager=disabled exec --process PROCESS
 * --console-socket SOCK tessel-SHIMPID.  crun stays the process's parent and exits with its
 * status (128+N for a signal N).  0, or -1 with errno ENAMETOOLONG. */
int tagent_ctr_exec_argv(const char *runtime, const char *state, pid_t shim, const char *process,
                         const char *sock, char **argv, char *buf, size_t len);

#endif
