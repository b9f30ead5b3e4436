/* cgroup.c - job control groups, v2 and v1 (see cgroup.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/cgroup.h"

static const char *const v1_controllers[] = {"memory", "cpu", "freezer"};
#define NV1 3

static bool file_has_words(const char *path, const char *w1, const char *w2)
{
    char buf[512];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    bool a = false, b = false;
    for (char *save, *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
        a |= strcmp(t, w1) == 0;
        b |= strcmp(t, w2) == 0;
    }
    return a && b;
}

tagent_cg_mode_t tagent_cgroup_detect(const char *root)
{
    char p[4096];
    if (geteuid() != 0)
        return TAGENT_CG_NONE;
    snprintf(p, sizeof p, "%s/cgroup.controllers", root);
    if (file_has_words(p, "memory", "cpu"))
        return TAGENT_CG_V2;
    for (int i = 0; i < NV1; i++) {
        snprintf(p, sizeof p, "%s/%s/cgroup.procs", root, v1_controllers[i]);
        if (access(p, W_OK) != 0)
            return TAGENT_CG_NONE;
    }
    return TAGENT_CG_V1;
}

const char *tagent_cgroup_mode_name(tagent_cg_mode_t m)
{
    return m == TAGENT_CG_V2 ? "v2" : m == TAGENT_CG_V1 ? "v1" : "none";
}

uint64_t tagent_cpu_quota_us(int cpu_milli)
{
    uint64_t q = (uint64_t)cpu_milli * TAGENT_CPU_PERIOD_US / 1000;
    return q < 1000 ? 1000 : q;
}

static int write_file(const char *dir, const char *file, const char *value)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    /* O_CREAT changes nothing on a cgroup file system (its files exist, and new ones cannot be
     * made), and lets the unit tests lay the files out in a scratch directory. */
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t len = strlen(value);
    ssize_t n = write(fd, value, len);
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)len ? 0 : -1;
}

/* mkdir -p below base: the components of name are created one by one. */
static int mkdir_below(const char *base, const char *name, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s", base);
    const char *p = name;
    while (*p) {
        const char *end = strchrnul(p, '/');
        size_t l = strlen(out);
        snprintf(out + l, outlen - l, "/%.*s", (int)(end - p), p);
        if (mkdir(out, 0755) < 0 && errno != EEXIST)
            return -1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* v2: the controllers must be enabled in every ancestor's subtree_control. */
static int v2_enable(const char *root, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", root);
    write_file(p, "cgroup.subtree_control", "+memory +cpu");
    const char *s = name;
    while (*s) {
        const char *end = strchrnul(s, '/');
        if (!*end)
            break;
        size_t l = strlen(p);
        snprintf(p + l, sizeof p - l, "/%.*s", (int)(end - s), s);
        if (write_file(p, "cgroup.subtree_control", "+memory +cpu") < 0)
            return -1;
        s = end + 1;
    }
    return 0;
}

int tagent_cgroup_create(tagent_cg_mode_t m, const char *root, const char *name, int cpu_milli,
                         uint64_t mem, tsl_error_t *err)
{
    char dir[4096], val[64];
    if (m == TAGENT_CG_NONE)
        return 0;
    if (m == TAGENT_CG_V2) {
        if (mkdir_below(root, name, dir, sizeof dir) < 0 || v2_enable(root, name) < 0)
            goto error;
        if (mem) {
            snprintf(val, sizeof val, "%llu", (unsigned long long)mem);
            if (write_file(dir, "memory.max", val) < 0)
                goto error;
            write_file(dir, "memory.swap.max", "0");
        }
        if (cpu_milli) {
            snprintf(val, sizeof val, "%llu %d", (unsigned long long)tagent_cpu_quota_us(cpu_milli),
                     TAGENT_CPU_PERIOD_US);
            if (write_file(dir, "cpu.max", val) < 0)
                goto error;
        }
        return 0;
    }
    for (int i = 0; i < NV1; i++) {
        char base[4096];
        snprintf(base, sizeof base, "%s/%s", root, v1_controllers[i]);
        if (mkdir_below(base, name, dir, sizeof dir) < 0)
            goto error;
        if (i == 0 && mem) {
            snprintf(val, sizeof val, "%llu", (unsigned long long)mem);
            if (write_file(dir, "memory.limit_in_bytes", val) < 0)
                goto error;
            /* Without swap accounting this file is absent; then swap is not limited. */
            write_file(dir, "memory.memsw.limit_in_bytes", val);
        }
        if (i == 1 && cpu_milli) {
            snprintf(val, sizeof val, "%d", TAGENT_CPU_PERIOD_US);
            if (write_file(dir, "cpu.cfs_period_us", val) < 0)
                goto error;
            snprintf(val, sizeof val, "%llu", (unsigned long long)tagent_cpu_quota_us(cpu_milli));
            if (write_file(dir, "cpu.cfs_quota_us", val) < 0)
                goto error;
        }
    }
    return 0;
error : {
    int saved = errno;
    tsl_errprintf(err, "cgroup %s: %s: %s", name, dir, strerror(saved));
    tagent_cgroup_remove(m, root, name);
    errno = saved;
    return -1;
}
}

int tagent_cgroup_procs_paths(tagent_cg_mode_t m, const char *root, const char *name,
                              char paths[][4096], int max)
{
    int n = 0;
    if (m == TAGENT_CG_V2 && max >= 1)
        snprintf(paths[n++], 4096, "%s/%s/cgroup.procs", root, name);
    if (m == TAGENT_CG_V1)
        for (int i = 0; i < NV1 && n < max; i++)
            snprintf(paths[n++], 4096, "%s/%s/%s/cgroup.procs", root, v1_controllers[i], name);
    return n;
}

int tagent_cgroup_kill(tagent_cg_mode_t m, const char *root, const char *name, int sig)
{
    char paths[3][4096];
    int np = tagent_cgroup_procs_paths(m, root, name, paths, 3);
    if (np == 0)
        return 0;
    /* v1: the freezer group is the one every process of the job is in. */
    FILE *f = fopen(paths[np - 1], "re");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    int n = 0;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1)
        if (pid > 0 && kill((pid_t)pid, sig) == 0)
            n++;
    fclose(f);
    return n;
}

int tagent_cgroup_remove(tagent_cg_mode_t m, const char *root, const char *name)
{
    char dir[4096];
    int rc = 0;
    if (m == TAGENT_CG_V2) {
        snprintf(dir, sizeof dir, "%s/%s", root, name);
        if (rmdir(dir) < 0 && errno != ENOENT)
            rc = -1;
    } else if (m == TAGENT_CG_V1) {
        for (int i = 0; i < NV1; i++) {
            snprintf(dir, sizeof dir, "%s/%s/%s", root, v1_controllers[i], name);
            if (rmdir(dir) < 0 && errno != ENOENT)
                rc = -1;
        }
    }
    return rc;
}

/* Groups are at most "<instance>/job-<id>" below the swept parent; a little more depth is
 * tolerated (a job may create sub-groups of its own in v2), deeper ones are left alone. */
#define SWEEP_MAX_DEPTH 4

/* Depth-first over the sub-directories of dir (rel: its path below the swept parent, "" for the
 * parent itself, which is never removed). */
static int sweep_dir(const char *dir, const char *rel, int depth, tagent_cgroup_keep_fn keep,
                     void *arg)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char sub[4096], subrel[4096];
        if ((size_t)snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= sizeof sub ||
            (size_t)snprintf(subrel, sizeof subrel, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >=
                sizeof subrel)
            continue;
        struct stat st;
        if (lstat(sub, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        if (keep && keep(subrel, &st, arg))
            continue;
        if (depth + 1 < SWEEP_MAX_DEPTH)
            removed += sweep_dir(sub, subrel, depth + 1, keep, arg);
        if (rmdir(sub) == 0)
            removed++;
    }
    closedir(dp);
    return removed;
}

int tagent_cgroup_sweep(tagent_cg_mode_t m, const char *root, const char *parent,
                        tagent_cgroup_keep_fn keep, void *arg)
{
    char dir[4096];
    int removed = 0;
    if (m == TAGENT_CG_V2) {
        snprintf(dir, sizeof dir, "%s/%s", root, parent);
        removed = sweep_dir(dir, "", 0, keep, arg);
    } else if (m == TAGENT_CG_V1) {
        for (int i = 0; i < NV1; i++) {
            snprintf(dir, sizeof dir, "%s/%s/%s", root, v1_controllers[i], parent);
            removed += sweep_dir(dir, "", 0, keep, arg);
        }
    }
    return removed;
}

/* "oom_kill N" in dir/file: 0 and *n, or -1 with errno (ENOENT: no such file or line). */
static int read_oom_kill(const char *dir, const char *file, uint64_t *n)
{
    char path[4096 + 32];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char key[64];
    unsigned long long v;
    int rc = -1;
    while (fscanf(f, "%63s %llu", key, &v) == 2) {
        if (strcmp(key, "oom_kill") == 0) {
            *n = v;
            rc = 0;
            break;
        }
    }
    fclose(f);
    if (rc < 0)
        errno = ENOENT;
    return rc;
}

int tagent_cgroup_oom_kills(const char *procs_path, uint64_t *n)
{
    char dir[4096];
    const char *slash = strrchr(procs_path, '/');
    if (!slash || (size_t)(slash - procs_path) >= sizeof dir) {
        errno = EINVAL;
        return -1;
    }
    memcpy(dir, procs_path, (size_t)(slash - procs_path));
    dir[slash - procs_path] = '\0';
    /* v2: memory.events (every OOM kill of a process of the group, the group's limit or the
     * host's); v1: memory.oom_control (kernel >= 4.13). */
    if (read_oom_kill(dir, "memory.events", n) == 0)
        return 0;
    return read_oom_kill(dir, "memory.oom_control", n);
}
