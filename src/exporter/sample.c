/* sample.c - the Slurm jobs' slices on a node, read from the SPANK plugin's state directory
 * (see sample.h for what is trusted and how a job's own file is read). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libutil/nomount.h"
#include "exporter/sample.h"
#include "libshm/shm.h"
#include "slurm/slurm_logic.h"

/* What one job holds on each GPU index. */
typedef struct {
    bool has;
    uint64_t limit; /* bytes, 0 = unknown */
    unsigned core;  /* percent, 0 = unknown */
    uint64_t used;
} per_gpu_t;

static bool all_digits(const char *s, size_t max)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (s[n] < '0' || s[n] > '9' || n >= max)
            return false;
    return n > 0;
}

/* A directory entry of dirfd that is a directory of root's, not writable by others. */
static bool root_dir_at(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == 0 && !(st.st_mode & 022);
}

/* STEP/gpus of one step into per[]: the lowest limit and share any step gives a GPU (one slice
 * per job and node, which never grows: docs/slurm.md). */
static void read_step(int jobfd, const char *step, per_gpu_t *per)
{
    char path[300];
    snprintf(path, sizeof path, "%s/gpus", step);
    int fd = openat(jobfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return;
    struct stat st;
    char buf[TEX_GPUS_FILE_MAX + 1];
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022) &&
        st.st_size <= TEX_GPUS_FILE_MAX)
        n = pread(fd, buf, TEX_GPUS_FILE_MAX, 0);
    close(fd);
    if (n < 0)
        return;
    buf[n] = '\0';
    int minor[TSLURM_MAX_GPUS];
    uint64_t mem[TSLURM_MAX_GPUS];
    unsigned core[TSLURM_MAX_GPUS];
    int k = tslurm_gpus_parse(buf, minor, mem, core, TSLURM_MAX_GPUS);
    for (int i = 0; i < k; i++) {
        per_gpu_t *p = &per[minor[i]];
        if (!p->has || (mem[i] && mem[i] < p->limit))
            p->limit = mem[i];
        if (!p->has || core[i] < p->core)
            p->core = core[i];
        p->has = true;
    }
}

/* The job's own slice file, open on sfd: the memory its processes hold per device UUID, onto
 * per[]. */
static void read_slice(int sfd, const tagent_gpu_t *gpus, int ngpus, per_gpu_t *per)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", sfd);
    tshm_t *s = tshm_open_ro(path, NULL);
    if (!s)
        return;
    int known = 0, only = -1; /* the job's one GPU, when its steps name exactly one */
    for (int g = 0; g < TSLURM_MAX_GPUS; g++)
        if (per[g].has) {
            known++;
            only = g;
        }
    int n = tshm_ndevices(s);
    for (int i = 0; i < n; i++) {
        tshm_device_info_t info;
        if (tshm_device_info(s, i, &info) < 0)
            continue;
        int idx = -1;
        for (int g = 0; g < ngpus && idx < 0; g++)
            if (memcmp(info.uuid, gpus[g].uuid_bin, 16) == 0)
                idx = gpus[g].index;
        /* A device the driver names otherwise (MIG, a simulated GPU): a one-GPU job's. */
        if (idx < 0 && known == 1 && n == 1)
            idx = only;
        if (idx < 0 || idx >= TSLURM_MAX_GPUS)
            continue;
        per_gpu_t *p = &per[idx];
        /* A GPU that no STEP/gpus names while others do is not the job's: the slice file is
         * the user's to write (a job could show itself on any GPU; review of 2026-11-27). */
        if (!p->has && known > 0)
            continue;
        p->used = info.used > UINT64_MAX - p->used ? UINT64_MAX : p->used + info.used;
        if (!p->has) { /* a job whose steps have no STEP/gpus (an older plugin) */
            p->has = true;
            p->limit = info.limit == TSHM_UNLIMITED ? 0 : info.limit;
            p->core = info.core_limit <= 100 ? info.core_limit : 0;
        }
    }
    tshm_close(s);
}

static void user_of(uid_t uid, char *buf, size_t len)
{
    struct passwd pw, *res = NULL;
    char tmp[4096];
    if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res && strlen(res->pw_name) < len)
        snprintf(buf, len, "%s", res->pw_name);
    else
        snprintf(buf, len, "%u", (unsigned)uid);
}

int tex_read_slices(const char *statedir, const tagent_gpu_t *gpus, int ngpus, tnf_node_t *out)
{
    DIR *dir = opendir(statedir);
    if (!dir)
        return -1;
    int dfd = dirfd(dir), jobs = 0;
    struct dirent *e;
    while ((e = readdir(dir)) && jobs < TEX_MAX_JOBS) {
        if (!all_digits(e->d_name, 19) || !root_dir_at(dfd, e->d_name))
            continue;
        int64_t job = strtoll(e->d_name, NULL, 10);
        int jfd = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (job <= 0 || jfd < 0) {
            if (jfd >= 0)
                close(jfd);
            continue;
        }
        jobs++;
        per_gpu_t per[TSLURM_MAX_GPUS] = {0};
        DIR *jd = fdopendir(dup(jfd));
        struct dirent *se;
        int steps = 0;
        while (jd && (se = readdir(jd)) && steps < TEX_MAX_STEPS) {
            if (se->d_name[0] == '.' || !root_dir_at(jfd, se->d_name))
                continue;
            steps++;
            read_step(jfd, se->d_name, per);
        }
        if (jd)
            closedir(jd);
        /* The slice file's owner is the job's account (the plugin made it so).  It is the
         * user's: opened without crossing a mount point or following a link (a FUSE mount
         * over it would make the sampler wait for its server: every job's figures frozen,
         * review of 2026-11-27), non-blocking (a FIFO), then read through the descriptor. */
        struct stat st;
        char user[64] = "";
        int sfd = tsl_openat_nomount(jfd, "slice", O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
        if (sfd >= 0 && fstat(sfd, &st) == 0 && S_ISREG(st.st_mode)) {
            user_of(st.st_uid, user, sizeof user);
            read_slice(sfd, gpus, ngpus, per);
        }
        if (sfd >= 0)
            close(sfd);
        close(jfd);
        if (!user[0])
            continue; /* no slice file: no slice (a job being set up or tidied) */
        for (int g = 0; g < TSLURM_MAX_GPUS; g++) {
            bool listed = false;
            for (int i = 0; i < out->ngpus; i++)
                listed = listed || out->gpus[i].index == g;
            if (!per[g].has || !listed)
                continue;
            tnf_slice_t s = {.job = job,
                             .gpu = g,
                             .memory_limit = per[g].limit,
                             .memory_used = per[g].used,
                             .compute_pct = per[g].core <= 100 ? per[g].core : 0};
            snprintf(s.user, sizeof s.user, "%s", user);
            if (tnf_add_slice(out, &s) < 0)
                break;
        }
    }
    closedir(dir);
    return jobs;
}
