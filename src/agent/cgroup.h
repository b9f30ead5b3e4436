/* cgroup.h - one control group per job, with CPU and memory limits; cgroup v2 or v1.
 *
 * Detection (tagent_cgroup_detect): v2 when /sys/fs/cgroup is the unified hierarchy with the
 * memory and cpu controllers; else v1 when /sys/fs/cgroup/memory and /sys/fs/cgroup/cpu are
 * mounted (a hybrid host's /sys/fs/cgroup/unified without controllers is ignored); else none
 * (also when not root: limits are then not enforced, and tesseld says so at start and in
 * GET /v1/nodes).
 *
 * Lifecycle of a job's group, all from tesseld:
 *     tagent_cgroup_create(root, "tessel/<instance>/job-<id>", cpu, mem)   mkdir + limits
 *     tagent_cgroup_procs_paths(...)    -> the files the job writes its pid into before exec
 *     tagent_cgroup_kill(...)           SIGKILL/SIGTERM to every process in the group
 *     tagent_cgroup_remove(...)         rmdir once empty
 * v1 creates the group in the memory, cpu and freezer hierarchies (freezer: so that every
 * process of the job can be found, whatever the others record).
 */
#ifndef TESSEL_AGENT_CGROUP_H
#define TESSEL_AGENT_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "libutil/error.h"

typedef enum {
    TAGENT_CG_NONE = 0,
    TAGENT_CG_V1 = 1,
    TAGENT_CG_V2 = 2,
} tagent_cg_mode_t;

/* Paths are below root (normally "/sys/fs/cgroup"; tests may pass a scratch dir). */
tagent_cg_mode_t tagent_cgroup_detect(const char *root);
const char *tagent_cgroup_mode_name(tagent_cg_mode_t m);

/* The CPU quota period (100 ms, the kernel's default) and the quota written for cpu_milli:
 * quota_us = cpu_milli * period / 1000, at least 1 ms (the kernel's minimum). */
#define TAGENT_CPU_PERIOD_US 100000
uint64_t tagent_cpu_quota_us(int cpu_milli);

/* Create the group (and its parents) and write the limits; cpu_milli 0 / mem 0 = no limit.
 * Returns 0, or -1 with errno and err (nothing left behind). */
int tagent_cgroup_create(tagent_cg_mode_t m, const char *root, const char *name, int cpu_milli,
                         uint64_t mem, tsl_error_t *err);

/* The cgroup.procs files of the group, written into paths[0..n-1] (each PATH_MAX bytes).
 * Returns n (v1: 3, v2: 1, none: 0). */
int tagent_cgroup_procs_paths(tagent_cg_mode_t m, const char *root, const char *name,
                              char paths[][4096], int max);

/* Send sig to every process of the group.  Returns the number signalled (0 when empty or
 * absent), or -1 with errno. */
int tagent_cgroup_kill(tagent_cg_mode_t m, const char *root, const char *name, int sig);

/* Processes of the group the kernel's out-of-memory killer has killed, from the memory files
 * beside procs_path (a cgroup.procs path of tagent_cgroup_procs_paths): v2 memory.events, v1
 * memory.oom_control ("oom_kill N").  0 and *n, or -1 with errno (ENOENT: not the memory
 * group, or a kernel without the count). */
int tagent_cgroup_oom_kills(const char *procs_path, uint64_t *n);

/* Remove the group (it must be empty).  0, or -1 with errno (ENOENT is not an error). */
int tagent_cgroup_remove(tagent_cg_mode_t m, const char *root, const char *name);

/* Called by tagent_cgroup_sweep for each directory it may remove: rel is its path below the
 * swept parent ("<instance>" or "<instance>/job-<id>"), st its stat; true keeps it. */
typedef bool (*tagent_cgroup_keep_fn)(const char *rel, const struct stat *st, void *arg);

/* Remove the stale groups below parent (e.g. "tessel"), in every controller (v1: memory, cpu,
 * freezer; v2: the one hierarchy): deepest first, every directory that keep() does not keep
 * (keep may be NULL) and that the kernel lets go, i.e. has no process and no child group left
 * (a group with a process is never removed: rmdir fails with EBUSY).  parent itself stays.
 * Returns the number of directories removed (counted once per controller). */
int tagent_cgroup_sweep(tagent_cg_mode_t m, const char *root, const char *parent,
                        tagent_cgroup_keep_fn keep, void *arg);

#endif
