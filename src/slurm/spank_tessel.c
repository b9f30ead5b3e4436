/* spank_tessel.c - spank_tessel.so: Tessel's hard GPU slices for Slurm jobs (docs/slurm.md).
 *
 * plugstack.conf:
 *   required /usr/lib/x86_64-linux-gnu/slurm/spank_tessel.so [interposer=PATH] [nvml=PATH]
 *            [gres_conf=PATH] [statedir=DIR] [violation=kill] [nvml_timeout=SECONDS]
 *
 * Options (spank_option_register: srun, sbatch, salloc and #SBATCH see them):
 *   --gpu-mem=SIZE         GPU memory per GPU, at most the job's part (its shards' or the GPU's)
 *   --gpu-share=FRACTION   part of each GPU's memory and compute, where shards do not say it
 * Their syntax is checked where the job is submitted (a bad value: sbatch/srun/salloc exit with
 * the error, nothing is queued), and they go to slurmctld's job_submit plugin as numbers
 * (contrib/slurm/job_submit.lua checks them against the cluster's GPUs); what depends on the
 * node (the GPUs Slurm chose, their memory, the shards' part) is checked where the step starts.
 *
 * On each node, in slurmstepd (remote context, root), per step:
 *   slurm_spank_init_post_opt   the limits from what Slurm gave the step (SLURM_STEP_GPUS or
 *                               SLURM_JOB_GPUS, SLURM_SHARDS_ON_NODE), the node's gres.conf and
 *                               NVML, and the options as this callback saw them; then, under a
 *                               lock on STATEDIR, the job's directory STATEDIR/JOBID (root,
 *                               0755) with the slice file shared by all the job's steps and
 *                               tasks (owned by the job's user), and the step's directory
 *                               STATEDIR/JOBID/STEP with `limits` and `ld.so.preload`; the
 *                               GPU-memory watchdog (src/agent/watchdog.c) as a thread of the
 *                               step's slurmstepd.  Any failure fails the step with the reason:
 *                               a step never runs unlimited.
 *   slurm_spank_task_init_privileged  in each task, as root before Slurm drops to the user:
 *                               the task's own mount namespace with /etc/ld.so.preload naming
 *                               libtessel-cuda and /run/tessel/job/limits (src/agent/jobns.c,
 *                               as tessel-shim does); a task without GPUs gets
 *                               CUDA_VISIBLE_DEVICES="".
 *   slurm_spank_exit            (slurmstepd, root, the step's end, also after scancel) removes
 *                               the step's directory, and STATEDIR/JOBID with it when no other
 *                               step of the job runs on the node (each running step holds its
 *                               directory flock'ed: job_tidy), and the directories of other jobs
 *                               whose steps all ended without tidying (a slurmstepd killed).  No
 *                               job epilog: slurmd would exec a slurmstepd for it at every job's
 *                               end (about 7.5 ms of CPU a job on the development machine).
 *   slurm_spank_init in slurmd  (slurmd start) removes directories of jobs with no slurmstepd.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "agent/gpu.h"
#include "agent/jobns.h"
#include "agent/watchdog.h"
#include "interposer/policy/policy.h"
#include "libshm/shm.h"
#include "slurm/slurm_logic.h"

SPANK_PLUGIN(tessel, 1);

/* Where Debian's libtessel-cuda package puts the interposer, and the driver's NVML. */
#define DEFAULT_INTERPOSER "/usr/lib/x86_64-linux-gnu/tessel/libtessel-cuda.so"
#define DEFAULT_NVML       "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
#define DEFAULT_STATEDIR   "/run/tessel/slurm"
/* Node GPU memory, written once (NVML costs tens of ms with a real driver: not per step). */
#define GPU_CACHE ".gpus"
/* How long the NVML child may take by default (nvml_timeout=): nvmlInit on a node of many GPUs
 * without persistence mode takes seconds; 30 s is far beyond that. */
#define DEFAULT_NVML_TIMEOUT 30
/* How long a killed NVML child is waited for (it may sit in the driver, uninterruptible). */
#define REAP_MS 2000
/* How long a step waits for the node's lock beyond nvml_timeout (its holder may be reading
 * the node's GPUs for up to nvml_timeout, and REAP_MS more). */
#define LOCK_WAIT_S 5
/* How long a step's end waits for the node's lock before it leaves the tidying to a later
 * step's end. */
#define EXIT_LOCK_WAIT_S 2

static struct {
    char interposer[PATH_MAX];
    char nvml[PATH_MAX];
    char gres_conf[PATH_MAX];
    char statedir[512]; /* short enough for the job and step directories below */
    tsw_action_t violation;
    int nvml_timeout; /* seconds */
} cfg;

/* NVML as root_owned_path resolved it for this step (the watchdog keeps the pointer). */
static char nvml_real[PATH_MAX];
/* The interposer root checked for this step (its path, and the file held open with O_PATH),
 * which its tasks bind over STEP_DIR/PRELOAD_NAME, the path ld.so.preload names in their
 * namespace, after checking that the path still names that file. */
static int interposer_fd = -1;
static char interposer_real[PATH_MAX];
#define PRELOAD_NAME "libtessel-cuda.so"

/* Options as the callbacks of this process saw them. */
static uint64_t opt_mem;
static unsigned opt_share;
/* "slurmstepd: [JOBID.": the command lines of the job's slurmstepd (its watchdog's roots). */
static char stepd_want[32];
/* The job's directory on this node (its watchdogs' job-wide record). */
static char job_state[600];

/* Set by init_post_opt in slurmstepd for its tasks. */
static char step_dir[640];
/* step_dir, open and flock'ed (shared) for as long as this slurmstepd lives: whoever tidies the
 * job's directory sees a running step by its lock, which the kernel drops when the process
 * ends however it ends (job_tidy). */
static int step_fd = -1;
/* The job's id on this node, set once setup_step knows it (slurm_spank_exit tidies its
 * directory even when the set-up failed half-way). */
static char job_id[16];
static bool no_gpu;
static bool setup_failed;
static tsl_error_t setup_err;

static int opt_cb(int val, const char *optarg, int remote)
{
    tsl_error_t e;
    int rc = val == 1 ? tslurm_parse_mem(optarg, &opt_mem, &e)
                      : tslurm_parse_share(optarg, &opt_share, &e);
    if (rc < 0) {
        slurm_error("tessel: %s", e.text);
        return -1;
    }
    return 0;
}

static struct spank_option options[] = {
    {"gpu-mem", "SIZE",
     "GPU memory per GPU for each task's slice, e.g. 8G (at most the job's shards' part or the "
     "GPU's memory) [tessel]",
     1, 1, opt_cb},
    {"gpu-share", "FRACTION",
     "part of each GPU (memory and compute), e.g. 0.25, where shards do not say it [tessel]", 1, 2,
     opt_cb},
    SPANK_OPTIONS_TABLE_END};

static int copy_arg(char *dst, size_t len, const char *v, bool absolute)
{
    if ((absolute && v[0] != '/') || strlen(v) >= len)
        return -1;
    snprintf(dst, len, "%s", v);
    return 0;
}

static bool parsed;

/* 1..600 seconds, digits only.  0, or -1. */
static int parse_seconds(const char *v, int *out)
{
    size_t n = strlen(v);
    if (n == 0 || n > 3 || strspn(v, "0123456789") != n || atoi(v) < 1 || atoi(v) > 600)
        return -1;
    *out = atoi(v);
    return 0;
}

static int parse_args(int ac, char **av)
{
    if (parsed)
        return 0;
    snprintf(cfg.interposer, sizeof cfg.interposer, "%s", DEFAULT_INTERPOSER);
    snprintf(cfg.nvml, sizeof cfg.nvml, "%s", DEFAULT_NVML);
    snprintf(cfg.statedir, sizeof cfg.statedir, "%s", DEFAULT_STATEDIR);
    cfg.gres_conf[0] = '\0';
    cfg.violation = TSW_KILL;
    cfg.nvml_timeout = DEFAULT_NVML_TIMEOUT;
    for (int i = 0; i < ac; i++) {
        const char *a = av[i];
        int rc = 0;
        tsl_error_t e;
        if (strncmp(a, "interposer=", 11) == 0)
            rc = copy_arg(cfg.interposer, sizeof cfg.interposer, a + 11, true);
        else if (strncmp(a, "nvml=", 5) == 0)
            rc = copy_arg(cfg.nvml, sizeof cfg.nvml, a + 5, true);
        else if (strncmp(a, "gres_conf=", 10) == 0)
            rc = copy_arg(cfg.gres_conf, sizeof cfg.gres_conf, a + 10, true);
        else if (strncmp(a, "statedir=", 9) == 0)
            rc = copy_arg(cfg.statedir, sizeof cfg.statedir, a + 9, true);
        else if (strncmp(a, "violation=", 10) == 0)
            /* suspend: nothing resumes a Slurm step (it would hold its GPU memory, stopped,
             * until its time limit), so only kill is taken. */
            rc = tsw_action_parse(a + 10, &cfg.violation, &e) < 0 || cfg.violation != TSW_KILL ? -1
                                                                                               : 0;
        else if (strncmp(a, "nvml_timeout=", 13) == 0)
            rc = parse_seconds(a + 13, &cfg.nvml_timeout);
        else
            rc = -1;
        if (rc < 0) {
            slurm_error("tessel: plugstack.conf argument '%s': expected interposer=, nvml=, "
                        "gres_conf=, statedir= (absolute paths), violation=kill or "
                        "nvml_timeout=SECONDS (1 to 600)",
                        a);
            return -1;
        }
    }
    if (!cfg.gres_conf[0]) {
        /* Beside slurm.conf, as Slurm itself looks for it. */
        const char *conf = getenv("SLURM_CONF");
        const char *slash = conf && conf[0] == '/' ? strrchr(conf, '/') : NULL;
        if (slash)
            snprintf(cfg.gres_conf, sizeof cfg.gres_conf, "%.*s/gres.conf", (int)(slash - conf),
                     conf);
        else
            snprintf(cfg.gres_conf, sizeof cfg.gres_conf, "/etc/slurm/gres.conf");
    }
    parsed = true;
    return 0;
}

/* ---- root-owned directories ------------------------------------------------ */

/* One directory in a directory that root_dir has checked (only root can make entries there):
 * made with mode if missing, and it must be root's and written by root only. */
static int root_subdir(const char *path, mode_t mode, tsl_error_t *err)
{
    struct stat st;
    if (mkdir(path, mode) < 0 && errno != EEXIST)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    if (lstat(path, &st) < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
        return tsl_errprintf(err, "%s: not a directory owned and written only by root", path);
    return 0;
}

/* mkdir -p of a directory that must be root's and written by root only (each directory from
 * the top down). */
static int root_dir(const char *path, tsl_error_t *err)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (root_subdir(buf, 0755, err) < 0)
            return -1;
        if (c == '\0')
            return 0;
        *p = c;
    }
}

/* Write a root-owned file through a temporary and a rename. */
static int root_file(const char *dir, const char *name, const char *text, tsl_error_t *err)
{
    char tmp[PATH_MAX + 64], final[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return tsl_errprintf(err, "%s: %s", tmp, strerror(errno));
    size_t n = strlen(text);
    bool ok = write(fd, text, n) == (ssize_t)n;
    if (close(fd) < 0 || !ok || rename(tmp, final) < 0) {
        int e = errno;
        unlink(tmp);
        return tsl_errprintf(err, "%s: %s", final, strerror(e));
    }
    return 0;
}

/* Read a small root-owned regular file (NUL-terminated).  Length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len, bool root_only)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (!root_only || st.st_uid == 0))
        n = read(fd, buf, len - 1);
    close(fd);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

/* gres.conf's largest size: a cluster of thousands of nodes writes a few hundred KiB. */
#define GRES_CONF_MAX (1024 * 1024)

/* Read a root-owned regular file whole (NUL-terminated, malloc'd into *out), refusing one of
 * more than max bytes.  0, or -1 with err. */
static int read_root_file(const char *path, size_t max, char **out, tsl_error_t *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
        close(fd);
        return tsl_errprintf(err, "%s: not a regular file owned by root", path);
    }
    /* Sized by the file, not by max (a mapping of max bytes made and dropped at every step's
     * start costs more than the read); a file that grew since fstat is read on, up to max + 1
     * bytes, so that one past max is refused as before. */
    size_t cap = (st.st_size >= 0 && (uint64_t)st.st_size < max ? (size_t)st.st_size : max) + 1;
    char *buf = malloc(cap + 1);
    size_t n = 0;
    ssize_t r = 0;
    while (buf && n <= max) {
        if (n == cap) {
            char *more = realloc(buf, max + 2);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap = max + 1;
        }
        if ((r = read(fd, buf + n, cap - n)) <= 0)
            break;
        n += (size_t)r;
    }
    int e = errno;
    close(fd);
    if (!buf || r < 0) {
        free(buf);
        return tsl_errprintf(err, "%s: %s", path, strerror(buf ? e : ENOMEM));
    }
    if (n > max) {
        free(buf);
        return tsl_errprintf(err, "%s: larger than %zu KiB, not read", path, max / 1024);
    }
    buf[n] = '\0';
    *out = buf;
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* Remove a job's directory: nothing below it is followed (FTW_PHYS), nor crossed (FTW_MOUNT). */
static void remove_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* Remove a directory that holds at most the files named (what the plugin writes there), with
 * a walk of it only when something else is left (a temporary of a failed write). */
static void remove_known(const char *path, const char *const names[])
{
    int d = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d < 0)
        return;
    for (int i = 0; names[i]; i++)
        unlinkat(d, names[i], 0);
    close(d);
    if (rmdir(path) < 0 && errno != ENOENT)
        remove_tree(path);
}

/* What the plugin writes in a step's and a job's directory (remove_known). */
static const char *const step_files[] = {"limits",     "gpus",     "ld.so.preload",
                                         PRELOAD_NAME, TSW_RECORD, NULL};
static const char *const job_files[] = {"slice", TSW_RECORD, NULL};

/* Whether the step directory path belongs to a running step (its slurmstepd holds it
 * flock'ed; the kernel drops the lock when that process ends, also when it is killed).  What
 * cannot be told (an error other than its absence) counts as held: kept, never removed. */
static bool step_held(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno != ENOENT && errno != ENOTDIR;
    bool held = flock(fd, LOCK_EX | LOCK_NB) < 0;
    close(fd);
    return held;
}

/* The step directories in the job's directory jobdir: how many (held or not), and in *held
 * how many a running step holds; -1 when the directory cannot be read (other than absent:
 * 0), which counts as running. */
static int job_steps(const char *jobdir, int *held)
{
    *held = 0;
    DIR *d = opendir(jobdir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int n = 0;
    struct dirent *de;
    char path[PATH_MAX + 300];
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
            continue;
        snprintf(path, sizeof path, "%s/%s", jobdir, de->d_name);
        struct stat st;
        if (de->d_type == DT_UNKNOWN && (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode)))
            continue;
        n++;
        if (step_held(path))
            (*held)++;
    }
    closedir(d);
    return n;
}

/* What root loads (NVML) or binds into every task (the interposer) must be root's alone: the
 * path resolved (realpath, into real), a regular file owned by root and not writable by group
 * or others, and every directory above it owned by root and not writable by group or others
 * (unless sticky, as /tmp: no one else can replace root's entries there).  The resolved path
 * is the one used, so that no symbolic link outside those directories can be pointed
 * elsewhere later.  0, or -1 with err. */
static int root_owned_path(const char *what, const char *path, char real[PATH_MAX],
                           tsl_error_t *err)
{
    if (!realpath(path, real))
        return tsl_errprintf(err, "%s %s: %s", what, path, strerror(errno));
    struct stat st;
    if (stat(real, &st) < 0)
        return tsl_errprintf(err, "%s %s: %s", what, real, strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
        return tsl_errprintf(err, "%s %s: not a file owned and written only by root", what, real);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", real);
    for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
        slash[slash == dir ? 1 : 0] = '\0';
        if (stat(dir, &st) < 0)
            return tsl_errprintf(err, "%s %s: %s", what, dir, strerror(errno));
        if (st.st_uid != 0 || ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)))
            return tsl_errprintf(err, "%s %s: its directory %s is not root's alone", what, real,
                                 dir);
        if (slash == dir)
            break;
    }
    return 0;
}

/* ---- the node's GPUs ------------------------------------------------------- */

/* Sleep ms milliseconds (the waits below start at 1 ms and grow to 10: the usual wait is a
 * child that has just exited, or a lock given back within a millisecond). */
static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Write STATEDIR/.gpus ("INDEX BYTES" lines) from NVML, in a child process: NVML stays out of
 * slurmd and slurmstepd (a library the daemon keeps loaded, with its threads and exit handlers,
 * for a figure read once).  0, or -1 with err. */
static int gpu_cache_fill(int lock, tsl_error_t *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return tsl_errprintf(err, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return tsl_errprintf(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* The node's lock stays with the step: a child that never exits (a driver call in
         * uninterruptible sleep) must not hold it through an inherited descriptor. */
        close(lock);
        close(fds[0]);
        tsl_error_t e = {""};
        static tagent_gpu_t gpus[TSLURM_MAX_GPUS];
        char text[4096];
        size_t len = 0;
        tagent_nvml_t *n = tagent_nvml_open(nvml_real, &e);
        int count = n ? tagent_nvml_inventory(n, gpus, TSLURM_MAX_GPUS, false, &e) : -1;
        for (int i = 0; i < count && len < sizeof text; i++)
            len += (size_t)snprintf(text + len, sizeof text - len, "%d %" PRIu64 "\n",
                                    gpus[i].index, gpus[i].mem_total);
        if (count >= 0 && len >= sizeof text)
            tsl_errprintf(&e, "too many GPUs");
        else if (count >= 0)
            root_file(cfg.statedir, GPU_CACHE, text, &e);
        if (e.text[0] && write(fds[1], e.text, strlen(e.text)) < 0)
            _exit(2);
        _exit(e.text[0] ? 1 : 0);
    }
    close(fds[1]);
    char why[sizeof err->text] = "";
    /* The child answers (its message, or EOF at its exit) within nvml_timeout, or is killed:
     * a hung driver must not hold the node's lock, and every step waiting on it, for ever. */
    struct pollfd pf = {.fd = fds[0], .events = POLLIN};
    int ready;
    while ((ready = poll(&pf, 1, cfg.nvml_timeout * 1000)) < 0 && errno == EINTR) {
    }
    ssize_t n = ready > 0 ? read(fds[0], why, sizeof why - 1) : -1;
    close(fds[0]);
    if (ready <= 0)
        kill(pid, SIGKILL);
    /* Reaped within REAP_MS: a child killed in uninterruptible sleep (a hung driver) does not
     * exit until the driver returns, and the step must not wait for it. */
    int st = 0;
    pid_t got = 0;
    for (int waited = 0, step = 1; (got = waitpid(pid, &st, WNOHANG)) == 0 && waited < REAP_MS;
         waited += step, step = step < 8 ? step * 2 : 10)
        nap_ms(step);
    if (ready <= 0)
        return tsl_errprintf(err, "the node's GPUs (NVML %s): no answer within %d s%s", nvml_real,
                             cfg.nvml_timeout,
                             got == pid ? "" : " (its query, killed, has not ended yet)");
    if (got != pid)
        return tsl_errprintf(err, "the node's GPUs (NVML %s): the query did not end", nvml_real);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return tsl_errprintf(err, "the node's GPUs (NVML %s): %s", nvml_real,
                             n > 0 ? why : "the query failed");
    return 0;
}

/* Memory of each GPU (by NVML index = minor), from STATEDIR/.gpus, written the first time.
 * Called with STATEDIR locked through lock.  0, or -1 with err. */
static int node_gpus(int lock, uint64_t mem[TSLURM_MAX_GPUS], tsl_error_t *err)
{
    char path[PATH_MAX + 16], text[4096];
    memset(mem, 0, sizeof(uint64_t) * TSLURM_MAX_GPUS);
    snprintf(path, sizeof path, "%s/%s", cfg.statedir, GPU_CACHE);
    if (read_small(path, text, sizeof text, true) <= 0 &&
        (gpu_cache_fill(lock, err) < 0 || read_small(path, text, sizeof text, true) <= 0))
        return err->text[0] ? -1 : tsl_errprintf(err, "%s: no GPUs", path);
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        int ix;
        uint64_t b;
        if (sscanf(l, "%d %" SCNu64, &ix, &b) == 2 && ix >= 0 && ix < TSLURM_MAX_GPUS)
            mem[ix] = b;
    }
    return 0;
}

/* The node's lock (STATEDIR/.lock flock'ed), held for a few file writes, or for at most
 * nvml_timeout while a step reads the node's GPUs: a step that cannot have it within
 * LOCK_WAIT_S more fails with the reason rather than wait for ever behind a holder that never
 * lets go.  A root-only file (0600), which no job's process can open to hold the lock (it
 * could open STATEDIR itself, 0755, and make every GPU step of the node fail).  Its
 * descriptor, or -1 with err. */
static int node_lock(int wait_s, tsl_error_t *err)
{
    char path[sizeof cfg.statedir + 8];
    snprintf(path, sizeof path, "%s/.lock", cfg.statedir);
    int lock = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lock < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(lock, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
        close(lock);
        return tsl_errprintf(err, "%s: not a file of root's alone (0600)", path);
    }
    int waited = 0, nap = 1, lrc;
    while ((lrc = flock(lock, LOCK_EX | LOCK_NB)) < 0 && (errno == EWOULDBLOCK || errno == EINTR) &&
           waited < wait_s * 1000) {
        nap_ms(nap);
        waited += nap;
        nap = nap < 8 ? nap * 2 : 10;
    }
    if (lrc < 0) {
        int e = errno;
        close(lock);
        if (e == EWOULDBLOCK || e == EINTR)
            return tsl_errprintf(err,
                                 "%s: the node's lock was not given back within %d s (another "
                                 "step holds it: a hung driver?)",
                                 path, wait_s);
        return tsl_errprintf(err, "%s: %s", path, strerror(e));
    }
    return lock;
}

/* ---- callbacks ------------------------------------------------------------- */

static bool job_alive(const char *jobid);

/* The directories of jobs (but except, NULL: none) none of whose step directories is held
 * and no slurmstepd of which runs go: the node restarted, or their slurmstepd were killed
 * before they could tidy.  A job whose steps were started by a plugin that did not hold their
 * directories (an upgrade) keeps its directory while its slurmstepd run. */
static void sweep_stale(const char *except)
{
    DIR *d = opendir(cfg.statedir);
    if (!d)
        return;
    struct dirent *de;
    char path[PATH_MAX + 300];
    int held;
    while ((de = readdir(d))) {
        const char *id = de->d_name;
        if (!*id || strspn(id, "0123456789") != strlen(id) || (except && strcmp(id, except) == 0))
            continue;
        snprintf(path, sizeof path, "%s/%s", cfg.statedir, id);
        if (job_steps(path, &held) >= 0 && held == 0 && !job_alive(id)) {
            remove_tree(path);
            slurm_info("tessel: removed the stale slice of job %s", id);
        }
    }
    closedir(d);
}

/* slurmd start: the stale jobs' directories go (sweep_stale), and the GPU cache with them. */
static void sweep(void)
{
    char path[PATH_MAX + 300];
    sweep_stale(NULL);
    snprintf(path, sizeof path, "%s/%s", cfg.statedir, GPU_CACHE);
    unlink(path);
}

/* Whether process pid (its /proc name) is a slurmstepd whose command line starts with want
 * (wl bytes: "slurmstepd: [ID."), run by root: all four user ids 0 in its status (a user's
 * process cannot have a real uid 0, while /proc/PID of any process that is not dumpable is
 * owned by root).  The ids are read after the command line. */
static bool job_stepd(const char *pid, const char *want, size_t wl)
{
    char path[300], text[1024];
    snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
    if (read_small(path, text, sizeof text, false) <= 0 || strncmp(text, want, wl) != 0)
        return false;
    snprintf(path, sizeof path, "/proc/%s/status", pid);
    unsigned ids[4];
    const char *u = read_small(path, text, sizeof text, false) > 0 ? strstr(text, "\nUid:") : NULL;
    return u && sscanf(u + 5, "%u %u %u %u", &ids[0], &ids[1], &ids[2], &ids[3]) == 4 &&
           (ids[0] | ids[1] | ids[2] | ids[3]) == 0;
}

/* The job's roots for its watchdogs (tsw_config_t job_root): each slurmstepd of the job on
 * this node.  arg: "slurmstepd: [ID.". */
static bool job_root(pid_t pid, const char *comm, void *arg)
{
    const char *want = arg;
    char name[24];
    snprintf(name, sizeof name, "%d", (int)pid);
    return strcmp(comm, "slurmstepd") == 0 && job_stepd(name, want, strlen(want));
}

/* Whether a root-owned slurmstepd of job id runs ("slurmstepd: [ID.STEP]"), other than this
 * process. */
static bool job_alive(const char *jobid)
{
    DIR *d = opendir("/proc");
    if (!d)
        return true; /* cannot tell: keep it */
    char want[64];
    int wl = snprintf(want, sizeof want, "slurmstepd: [%s.", jobid);
    bool alive = false;
    struct dirent *de;
    char self[24];
    snprintf(self, sizeof self, "%d", (int)getpid());
    while (!alive && (de = readdir(d)))
        alive = strspn(de->d_name, "0123456789") == strlen(de->d_name) &&
                strcmp(de->d_name, self) != 0 && job_stepd(de->d_name, want, (size_t)wl);
    closedir(d);
    return alive;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    if (parse_args(ac, av) < 0)
        return -1;
    for (struct spank_option *o = options; o->name; o++)
        if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
            slurm_error("tessel: cannot register --%s", o->name);
            return -1;
        }
    if (spank_context() == S_CTX_SLURMD)
        sweep();
    return 0;
}

static int env_get(spank_t sp, const char *name, char *buf, int len)
{
    buf[0] = '\0';
    return spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS ? 1 : 0;
}

/* The step's request as Slurm set it up on this node. */
static int step_request(spank_t sp, uint32_t step, tslurm_request_t *r, tsl_error_t *err)
{
    char gpus[512], shards[32];
    memset(r, 0, sizeof *r);
    r->mem = opt_mem;
    r->share_ppm = opt_share;
    /* Only the variable Slurm writes for this kind of step (tslurm_gpu_var). */
    env_get(sp, tslurm_gpu_var(step), gpus, sizeof gpus);
    int n = tslurm_gpu_list_parse(gpus, r->minor, TSLURM_MAX_GPUS, err);
    if (n < 0)
        return -1;
    r->ngpus = n;
    if (n > 0 && env_get(sp, "SLURM_SHARDS_ON_NODE", shards, sizeof shards)) {
        char *end;
        unsigned long s = strtoul(shards, &end, 10);
        if (end == shards || *end || s == 0 || s > 1000000)
            return tsl_errprintf(err, "SLURM_SHARDS_ON_NODE='%.20s': not a count", shards);
        r->shards = (unsigned)s;
    }
    return 0;
}

static int setup_step(spank_t sp, tsl_error_t *err)
{
    uint32_t job = 0, step = 0;
    uid_t uid;
    gid_t gid;
    if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
        return tsl_errprintf(err, "cannot read the job's id, step and user from Slurm");
    tslurm_request_t r;
    if (step_request(sp, step, &r, err) < 0)
        return -1;
    if (r.ngpus == 0) {
        no_gpu = true;
        tslurm_limits_t none;
        static const tslurm_gres_t g0;
        static const uint64_t m0[TSLURM_MAX_GPUS];
        return tslurm_limits(&r, &g0, m0, &none, err);
    }
    /* gres.conf says how many shards each GPU has, so what each shard is worth: the same test
     * as what root loads (owned and written only by root, every directory above it too). */
    char *text, gres_real[PATH_MAX];
    if (root_owned_path("gres.conf", cfg.gres_conf, gres_real, err) < 0 ||
        read_root_file(gres_real, GRES_CONF_MAX, &text, err) < 0)
        return -1;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char *dot = strchr(host, '.');
    if (dot)
        *dot = '\0';
    tslurm_gres_t g;
    int parsed_rc = tslurm_gres_parse(text, host, &g, err);
    free(text);
    if (parsed_rc < 0)
        return -1;

    if (root_dir(cfg.statedir, err) < 0)
        return -1;
    int lock = node_lock(cfg.nvml_timeout + LOCK_WAIT_S, err);
    if (lock < 0)
        return -1;
    int rc = -1;
    uint64_t mem[TSLURM_MAX_GPUS];
    tslurm_limits_t l;
    char jobdir[600], slice[620], what[128], limits[4096], spec[2048], gpus[2048];
    snprintf(job_id, sizeof job_id, "%" PRIu32, job);
    snprintf(jobdir, sizeof jobdir, "%s/%s", cfg.statedir, job_id);
    snprintf(slice, sizeof slice, "%s/slice", jobdir);
    if (step == SLURM_BATCH_SCRIPT)
        snprintf(step_dir, sizeof step_dir, "%s/batch", jobdir);
    else if (step == SLURM_EXTERN_CONT)
        snprintf(step_dir, sizeof step_dir, "%s/extern", jobdir);
    else
        snprintf(step_dir, sizeof step_dir, "%s/%" PRIu32, jobdir, step);
    snprintf(what, sizeof what, "Slurm job %" PRIu32 " on %.64s", job, host);
    if (root_owned_path("the interposer", cfg.interposer, interposer_real, err) < 0 ||
        root_owned_path("NVML", cfg.nvml, nvml_real, err) < 0 || node_gpus(lock, mem, err) < 0 ||
        tslurm_limits(&r, &g, mem, &l, err) < 0 ||
        tslurm_limits_text(&l, slice, what, limits, sizeof limits) < 0 ||
        tslurm_watchdog_spec(&l, spec, sizeof spec) < 0 ||
        tslurm_gpus_text(&l, gpus, sizeof gpus) < 0 || root_subdir(jobdir, 0755, err) < 0)
        goto out;
    /* A step directory another slurmstepd holds (a step of the same id running here) is not
     * shared; one no process holds is an ended step's leftover, cleared. */
    if (step_held(step_dir)) {
        tsl_errprintf(err, "%s: in use by another slurmstepd of this job on the node", step_dir);
        goto out;
    }
    remove_known(step_dir, step_files);
    if (root_subdir(step_dir, 0711, err) < 0)
        goto out;
    /* Held until this slurmstepd ends: the job's directory stays while a step runs.  (0711:
     * the job's processes reach the files in it but cannot open it, so cannot lock it and
     * keep the job's directory for ever.) */
    if (step_fd < 0 &&
        ((step_fd = open(step_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
         flock(step_fd, LOCK_SH) < 0)) {
        tsl_errprintf(err, "%s: %s", step_dir, strerror(errno));
        goto out;
    }
    /* A step of this job already broke the job's limit here: its watchdog stops every step of
     * the job (tsw_config_t job_state); a new one does not start. */
    char why[320];
    if (tsw_job_record(jobdir, why, sizeof why)) {
        tsl_errprintf(err, "another step of this job was stopped: %s", why);
        goto out;
    }
    /* The slice file: made by root, then the job's user's (its processes charge it). */
    struct stat st;
    if (lstat(slice, &st) < 0) {
        if (tshm_create(slice, uid, gid, 0600, err) < 0)
            goto out;
    } else if (!S_ISREG(st.st_mode) || st.st_uid != uid) {
        tsl_errprintf(err, "%s: not the job's slice file", slice);
        goto out;
    }
    /* The tasks preload the interposer from a fixed path of their namespace, the checked file
     * bound over it (tagent_jobns_bind_file): a program started late in a long step gets the
     * same file even if the configured path has been re-pointed and the file deleted since. */
    if (interposer_fd >= 0)
        close(interposer_fd);
    interposer_fd = open(interposer_real, O_PATH | O_CLOEXEC | O_NOFOLLOW);
    struct stat ist;
    if (interposer_fd < 0 || fstat(interposer_fd, &ist) < 0 || !S_ISREG(ist.st_mode) ||
        ist.st_uid != 0) {
        tsl_errprintf(err, "the interposer %s: %s", interposer_real,
                      interposer_fd < 0 ? strerror(errno) : "changed while it was checked");
        goto out;
    }
    /* STEP/gpus: the step's GPUs and limits by NVML index, for tessel-node-exporter. */
    if (root_file(step_dir, "limits", limits, err) < 0 ||
        root_file(step_dir, "gpus", gpus, err) < 0 ||
        root_file(step_dir, PRELOAD_NAME, "", err) < 0 ||
        root_file(step_dir, "ld.so.preload", TCU_LIMITS_DIR "/" PRELOAD_NAME "\n", err) < 0 ||
        tagent_jobns_prepare(err) < 0)
        goto out;
    tsw_config_t wc = {.nvml = nvml_real,
                       .action = cfg.violation,
                       .state = step_dir,
                       .uid = (uid_t)-1,
                       .gid = (gid_t)-1,
                       .root = getpid(),
                       .job = 0,
                       .fail_closed = true,
                       .job_root = job_root,
                       .job_root_arg = stepd_want,
                       .job_state = job_state,
                       .first_after_ms = TSW_PERIOD_MS,
                       .hang_ms = (unsigned)cfg.nvml_timeout * 1000};
    snprintf(job_state, sizeof job_state, "%s", jobdir);
    /* One limit per job and GPU: the sum counts the processes of all the job's steps here. */
    snprintf(stepd_want, sizeof stepd_want, "slurmstepd: [%" PRIu32 ".", job);
    /* The watchdog stops the processes below this slurmstepd: one that its parent leaves
     * (a shell killed first) must stay below it, as below tessel-shim, to be stopped too. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        tsl_errprintf(err, "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
        goto out;
    }
    if (tsw_limits_parse(spec, &wc.limits, err) < 0 || tsw_start(&wc, err) < 0)
        goto out;
    rc = 0;
out:
    flock(lock, LOCK_UN);
    close(lock);
    return rc;
}

/* Where the job is submitted (srun, sbatch, salloc): the options as numbers for slurmctld's
 * job_submit plugin (contrib/slurm/job_submit.lua), which checks them against the cluster's GPUs
 * before anything is queued.  They reach it in the job's SPANK environment (job_desc
 * spank_job_env), where a submitter could also write them: they decide only whether a job is
 * refused early; the node checks the options again where the step starts. */
static int submit_env(spank_t sp)
{
    char v[32];
    if (opt_mem) {
        snprintf(v, sizeof v, "%" PRIu64, opt_mem);
        if (spank_job_control_setenv(sp, TSLURM_ENV_MEM, v, 1) != ESPANK_SUCCESS)
            return -1;
    }
    if (opt_share) {
        snprintf(v, sizeof v, "%u", opt_share);
        if (spank_job_control_setenv(sp, TSLURM_ENV_SHARE, v, 1) != ESPANK_SUCCESS)
            return -1;
    }
    return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    if (!spank_remote(sp)) {
        /* Not fatal: without them the job is checked where its steps start. */
        if (submit_env(sp) < 0)
            slurm_debug("tessel: --gpu-mem/--gpu-share not passed to the job_submit plugin");
        return 0;
    }
    if (parse_args(ac, av) < 0)
        return -1;
    if (setup_step(sp, &setup_err) < 0) {
        /* Told in each task (its stderr is the job's output there), which then does not run:
         * here, before the step's I/O is connected, the user would read only "Plugin
         * initialization failed". */
        slurm_error("tessel: the GPU slice could not be set up: %s", setup_err.text);
        setup_failed = true;
    }
    return 0;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
    if (!spank_remote(sp))
        return 0;
    if (setup_failed) {
        fprintf(stderr, "tessel: the GPU slice could not be set up, the task does not run: %s\n",
                setup_err.text);
        return -1;
    }
    if (no_gpu)
        return spank_setenv(sp, "CUDA_VISIBLE_DEVICES", "", 1) == ESPANK_SUCCESS ? 0 : -1;
    if (!step_dir[0]) {
        slurm_error("tessel: no GPU slice for this task: it does not run");
        return -1;
    }
    /* The watchdog has already stopped the step (it cannot ask the driver, or a violation). */
    const char *why = tsw_stopped();
    if (why) {
        fprintf(stderr, "tessel: %s: the task does not run\n", why);
        return -1;
    }
    if (tagent_jobns_enter(step_dir, NULL) < 0 ||
        tagent_jobns_bind_file(interposer_real, interposer_fd, PRELOAD_NAME) < 0) {
        slurm_error("tessel: %s: the task's slice could not be entered (%s): it does not run",
                    step_dir, strerror(errno));
        return -1;
    }
    return 0;
}

/* Under the node's lock, at a step's end (the step's own directory already gone): the job's
 * directory goes when no other step of the job has a directory here (its last step on the
 * node tidies it: the slice, the watchdogs' record; a later step of the job, as in salloc,
 * starts a new one).  A directory with step directories none of which is held (slurmstepd
 * killed before they could tidy), of this job or another, goes only when no other slurmstepd
 * of that job runs: the directories of steps started by a plugin that did not hold them (an
 * upgrade) stay. */
static void job_tidy(void)
{
    char path[PATH_MAX + 300];
    int held;
    snprintf(path, sizeof path, "%s/%s", cfg.statedir, job_id);
    int n = job_steps(path, &held);
    if (n == 0)
        remove_known(path, job_files);
    else if (n > 0 && held == 0 && !job_alive(job_id))
        remove_tree(path);
    sweep_stale(job_id);
}

/* slurmstepd (root) at the step's end (its tasks have ended; also after scancel): the step's
 * directory goes, and the job's when this was its last step on the node, so that neither a
 * job running many steps nor many jobs fill /run. */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    if (!spank_remote(sp) || !job_id[0])
        return 0;
    /* slurmstepd exits next: not while the watchdog is inside NVML (a sample under way is
     * finished first, at most a second; none starts after). */
    tsw_quiesce(1000);
    /* A short wait: the step's end is not held up by another step's set-up; what is not
     * tidied now is at a later step's end. */
    tsl_error_t err;
    int lock = node_lock(EXIT_LOCK_WAIT_S, &err);
    /* The step's own directory only if this step held it (not one a set-up that failed
     * before found in use). */
    if (step_fd >= 0 && step_dir[0])
        remove_known(step_dir, step_files);
    step_dir[0] = '\0';
    if (step_fd >= 0)
        close(step_fd);
    step_fd = -1;
    if (lock < 0) {
        /* Left for the next step's end on the node, or slurmd's start. */
        slurm_error("tessel: the job's slice is left on the node: %s", err.text);
        return 0;
    }
    job_tidy();
    flock(lock, LOCK_UN);
    close(lock);
    return 0;
}
