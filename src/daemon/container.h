/* container.h - what tesseld decides for a job run in a container (docs/containers.md).
 *
 * A container job is a job like any other: the same states, the same shim, the same cgroup,
 * logs, exit record and kill.  Only its start differs: tesseld writes an OCI runtime
 * configuration (config.json) into the job's root-owned state directory, and tessel-shim, in a
 * mount namespace of its own, starts crun on it (src/agent/ctrrun.h).  This file holds the
 * decisions, pure or close to it, so that cmocka tests them without a daemon
 * (src/daemon/test/test_container.c):
 *
 *   tctr_image_valid     is a reference NAME[:TAG] acceptable (strict set, no option, no path)
 *   tctr_cwd_valid       may a path be a container's cwd (bound at that very path)
 *   tctr_image_find      where its root file system is in the image store, every part root's
 *   tctr_images_list     what the store holds (GET /v1/images, `tessel images`)
 *   tctr_runtime_find    crun, at a fixed root-owned path (never PATH)
 *   tctr_ldconfig_parse  the host's NVIDIA driver libraries in `ldconfig -p` output
 *   tctr_root_path_ok    a path and every directory above it root's, writable by no one else
 *   tctr_driver_libs     the same from the host's ldconfig, each checked root's at each call
 *   tctr_gpu_devices     the device nodes of the GPUs a job was given (as NVIDIA's toolkit)
 *   tctr_config          the OCI config.json of a job: nothing in it comes from the user but
 *                        argv, env, cwd (checked at submission) and the image's name
 *
 * The image store is a directory (<data-dir>/images): NAME/TAG/rootfs, root's all the way down
 * (crun has no store of its own; docs/containers.md says how an admin fills it).
 */
#ifndef TESSEL_DAEMON_CONTAINER_H
#define TESSEL_DAEMON_CONTAINER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "libutil/error.h"

/* Longest reference accepted (Docker's name limit is 255; a tag is at most 128). */
#define TCTR_REF_MAX 255
/* Most driver libraries and device nodes a container gets. */
#define TCTR_MAX_LIBS    32
#define TCTR_MAX_DEVICES 24
/* Paths in the image store below its directory: NAME may have a few '/' parts. */
#define TCTR_NAME_DEPTH 4

/* Whether ref is "NAME[:TAG]" with NAME = component('/' component){0,3}, each component
 * [a-z0-9]+([._-][a-z0-9]+)* (Docker's rule: no "..", no leading '-' or '.', no upper case),
 * TAG = [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}, at most TCTR_REF_MAX bytes.  So a reference can
 * be neither an option of the runtime (it is never on a command line anyway) nor a path
 * outside the store.  false with one line in why. */
bool tctr_image_valid(const char *ref, char *why, size_t len);

/* Whether cwd may be a container job's working directory, bound at that very path: canonical
 * (absolute, no empty, "." or ".." part, no trailing '/') and not "/", "/etc", nor at or below
 * /proc, /sys, /dev, /run/tessel (it would cover the container's root or what Tessel and the
 * kernel put there).  false with one line in why. */
bool tctr_cwd_valid(const char *cwd, char *why, size_t len);

/* Split a valid ref into name and tag ("latest" when none).  0, or -1 with errno ENAMETOOLONG. */
int tctr_image_split(const char *ref, char *name, size_t nlen, char *tag, size_t tlen);

/* The root file system of a valid ref in the store dir, into out: dir/NAME/TAG/rootfs.  Every
 * directory from dir down to rootfs must be a real directory (no symlink), root's, writable by
 * no one else, so that a user can neither plant an image nor swap one.  1 found, 0 not in the
 * store (ENOENT), -1 unsafe or unreadable (why says which path and why). */
int tctr_image_find(const char *dir, const char *ref, char *out, size_t len, char *why,
                    size_t wlen);

/* Append to arr one object {"image": "NAME:TAG", "name", "tag", "created_at"} for every image
 * of the store dir that tctr_image_find would accept, sorted by reference.  A store that does
 * not exist holds no image.  Returns the number added, or -1 with errno and why. */
int tctr_images_list(const char *dir, json_t *arr, char *why, size_t wlen);

/* crun's path: the first of /usr/bin/crun, /usr/local/bin/crun, /usr/sbin/crun that is a
 * regular file, root's, writable by no one else, in such directories.  0, or -1 with errno
 * ENOENT and why. */
int tctr_runtime_find(char *out, size_t len, char *why, size_t wlen);

/* The NVIDIA driver libraries listed in text (the output of `ldconfig -p`): the paths of
 * libcuda.so*, libnvidia-ml.so*, libnvidia-ptxjitcompiler.so*, libnvidia-nvvm.so* and
 * libcudadebugger.so* for this machine's ABI (x86-64 or AArch64), each once, in the order
 * found.  Returns how many were put into libs (at most max). */
int tctr_ldconfig_parse(const char *text, char libs[][PATH_MAX], int max);

/* Is path (absolute) root's, writable by no one else (a link: root's), and so is every
 * directory from / down to it?  false also when it does not exist. */
bool tctr_root_path_ok(const char *path);

/* The host's driver libraries: /sbin/ldconfig -p, parsed (again when /etc/ld.so.cache has
 * changed since), each name and the file it resolves to (realpath) kept only when
 * tctr_root_path_ok holds for both and the file is a regular one; checked at every call
 * (thread-safe).  Returns the count (0 on a machine without the driver, like the development
 * machines). */
int tctr_driver_libs(char libs[][PATH_MAX], int max);

/* The device nodes of a job given the GPUs with these PCI bus ids (NVML's form,
 * "00000000:17:00.0"): dev_dir's nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset
 * when present, and nvidiaN for each GPU, N its minor number from
 * proc_dir/<bus id>/information ("Device Minor: N"; proc_dir is /proc/driver/nvidia/gpus),
 * or index[i] when that file is missing.  Only character devices are kept.  Returns the
 * count put into out (paths in dev_dir). */
int tctr_gpu_devices(const char *dev_dir, const char *proc_dir, const char *const *bus_ids,
                     const int *index, int ngpus, char out[][PATH_MAX], int max);

/* A host path bound into the container at the same path. */
typedef struct {
    const char *src; /* host path */
    const char *dst; /* path in the container */
    bool rw;         /* else read-only */
    bool noexec;     /* no program runs from it (the host mount's own noexec, kept) */
} tctr_bind_t;

typedef struct {
    const char *root;  /* the container's root (the shim mounts the image there) */
    char *const *argv; /* the program and its arguments, NULL-terminated */
    char *const *envp; /* "K=V", NULL-terminated: the whole environment */
    const char *cwd;   /* absolute, in the container */
    uid_t uid;         /* the job's account */
    gid_t gid;
    const gid_t *groups; /* its supplementary groups */
    size_t ngroups;
    const tctr_bind_t *binds;
    size_t nbinds;
    char (*devices)[PATH_MAX]; /* host character devices made at the same path inside */
    size_t ndevices;
    bool terminal; /* process.terminal: crun makes the container's terminal and passes its
                    * master to tessel-shim (--console-socket, ctrrun.h) */
} tctr_spec_t;

/* The OCI runtime configuration of a job: the process (user, no capabilities at all, no new
 * privileges, argv, env, cwd), the root, the standard kernel file systems, the binds and
 * devices given, namespaces mount and ipc only (the host's network, PID and UTS namespaces, as
 * a process job), the kernel's sensitive /proc and /sys paths masked or read-only.  A new
 * reference (json_decref), or NULL with errno and err (a device that cannot be stat'ed; EINVAL:
 * a bind at a path other than its host path lies under the cwd, where crun would make its
 * mount point in the user's host directory). */
json_t *tctr_config(const tctr_spec_t *s, tsl_error_t *err);

#endif
