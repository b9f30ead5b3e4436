/* main.c - tesseld: options, start-up (store, admin token, GPUs, cgroups, recovery, HTTP),
 * the main loop (signals, wake-ups, the scheduling tick) and shutdown.
 *
 * Shutdown (SIGTERM, SIGINT, SIGHUP) stops serving and exits; running jobs keep running under
 * their shims and are picked up by the next start (see tick.c, tessd_recover).
 */
#include <dlfcn.h>
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "daemon/api/console.h"
#include "daemon/batch.h"
#include "daemon/daemon.h"
#include "daemon/pass.h"
#include "tessel/client.h"
#include "libutil/duration.h"
#include "libutil/batchspec.h"
#include "libutil/size.h"

int64_t tessd_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tessd_wake(tessd_t *d)
{
    uint64_t one = 1;
    if (write(d->wake_fd, &one, sizeof one) < 0) {
        /* The counter is saturated: a tick is already due. */
    }
}

int tessd_pathf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

void tessd_log(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tesseld: %s\n", buf);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tesseld [OPTION]...\n"
            "  --system            a lab's tesseld (the default as root; needs root): data in\n"
            "                      " TCLIENT_SYSTEM_DATA_DIR ", local socket " TCLIENT_SYSTEM_SOCKET
            "\n"
            "                      (mode 0666: every local user, identified by uid)\n"
            "  --personal          one user's tesseld (the default when not root): data in\n"
            "                      ~/.local/share/tessel, socket $XDG_RUNTIME_DIR/tessel/\n"
            "                      tesseld.sock (mode 0600: that user alone)\n"
            "  --data-dir DIR      store, job logs, admin token (default: the mode's)\n"
            "  --socket PATH       the local socket (default: the mode's); its directory is\n"
            "                      created, or must be writable by no one but tesseld's user\n"
            "  --no-socket         no local socket: tokens over TCP only\n"
            "  --local-users MODE  create (default): a local account with no Tessel user gets\n"
            "                      one, role user, at its first call on the socket;\n"
            "                      existing: such an account is refused until an admin adds it\n"
            "  --listen HOST:PORT  HTTP address: numeric IPv4 or localhost (default\n"
            "                      127.0.0.1:7470; port 0 = any free port, written to\n"
            "                      DIR/tesseld.addr)\n"
            "  --no-listen         no TCP listener: the local socket only\n"
            "  --fake-gpus SPEC    simulated GPUs, e.g. 2xRTX4090:24G (marked simulated)\n"
            "  --fake-gpus-if-none SPEC  the real GPUs, or these simulated ones when NVML\n"
            "                      finds none (for demos)\n"
            "  --fake-lib-dir DIR  where the fake libcuda/libnvidia-ml live\n"
            "                      (default BINDIR/../tests/fake)\n"
            "  --nvml LIB          NVML library to dlopen (default libnvidia-ml.so.1)\n"
            "  --interposer PATH   libtessel-cuda.so (default BINDIR/../lib/libtessel-cuda.so)\n"
            "  --shim PATH         tessel-shim (default BINDIR/tessel-shim)\n"
            "  --policy NAME       libsched placement policy (default tessel)\n"
            "  --cgroup-root DIR   cgroup file system (default /sys/fs/cgroup)\n"
            "  --no-cgroups        do not put jobs in cgroups (no CPU/memory limits)\n"
            "  --web-root DIR      the web console's files (default BINDIR/../share/tessel/web)\n"
            "  --min-runtime SECS  a job runs this long before it can be preempted\n"
            "                      (default: libsched's, 60)\n"
            "  --reserve-after DURATION  a big job pending this long gets a reservation (0,\n"
            "                      30s, 15m; default 15m); a queue may set its own\n"
            "  --durability MODE   normal (default): a committed change survives a crash of\n"
            "                      tesseld; full: also power loss and OS crashes (an fsync per\n"
            "                      commit: slower submissions, docs/tesseld.md)\n"
            "  --allow-root-jobs   as root: run the job of a non-admin user without a system\n"
            "                      account of its name (or whose account is uid 0) as root;\n"
            "                      by default it is refused (an admin's job runs as root)\n"
            "  --no-root-jobs      the default (kept for old command lines): such jobs are\n"
            "                      refused\n"
            "  --gpu-mem-violation kill|suspend  as root: what the GPU-memory watchdog does to\n"
            "                      a job whose processes hold more GPU memory than its slice\n"
            "                      (default kill; docs/security.md)\n"
            "  --allow-user-namespaces  as root: let jobs create user namespaces (by default\n"
            "                      refused: one could undo the job's ld.so.preload mount)\n"
            "  --log-limit SIZE    most bytes kept of each of a job's stdout and stderr (its\n"
            "                      head and tail, with a marker where bytes were dropped);\n"
            "                      default 64M, 0 = unlimited\n"
            "  --history-interval TIME  sample GPUs, queues and users for the usage history\n"
            "                      this often (a divisor of 1m: 10s default; docs/tesseld.md)\n"
            "  --history-retention TIME  keep the usage history this long (1h to 400d;\n"
            "                      default 8d)\n"
            "  --kill-wait TIME    between SIGTERM and SIGKILL when a job reaches its time\n"
            "                      limit (Slurm's KillWait; 30s, 2m, MM:SS; default 30s)\n"
            "  --test-kill-at STEP for tests: SIGKILL tesseld itself at this step of the next\n"
            "                      job's start (running, dir, cgroup, spawned, recorded)\n"
            "  --test-tick-ms N    for tests: the period of the tick for rules of time\n"
            "                      (default 250; pass.h)\n"
            "  --test-pass-gap-ms N  for tests: least time between two scheduling passes\n"
            "                      (default 5)\n"
            "Limits on what one client can take (docs/tesseld.md):\n"
            "  --max-connections N           connections of all clients together (default 1024)\n"
            "  --max-connections-per-client N  connections from one address (default 256); the\n"
            "                      next one is closed unanswered\n"
            "  --request-timeout SECS  close a connection silent this long (default 30)\n"
            "  --max-body SIZE     largest request body (default 64K; 413 above)\n"
            "  --submit-rate R     job submissions a second per user, R > 0, or 0 for no limit\n"
            "                      (default 5; 429 with Retry-After above it)\n"
            "  --submit-burst N    submissions a user may make at once (default 50)\n"
            "  --admin-submit-rate R  the same for admins (default: admins are not limited)\n"
            "  --disk-reserve SIZE|N%%  refuse submissions (507) when the data directory's file\n"
            "                      system has less free (default 256M)\n");
}

/* Defaults of the limits on clients (usage() and docs/tesseld.md give their reasons). */
#define TESSD_SUBMIT_RATE   5.0
#define TESSD_SUBMIT_BURST  50.0
#define TESSD_DISK_RESERVE  (256ull << 20)
#define TESSD_MAX_BODY_HIGH (16u << 20) /* --max-body above this: a mistake */
/* The store's reserve file (DIR/store.reserve, tstore_reserve_init): room for the store and
 * the jobs' exit records once the disk is full.  A job's end is one row update (a few WAL
 * pages of 4 KiB) and an exit record (one block): 4 MiB records hundreds of them. */
#define TESSD_STORE_RESERVE (4ull << 20)
/* WAL pages (4 KiB) after which the store's maintenance thread checkpoints: SQLite's own
 * default threshold, now off the request path (4 MiB of WAL at most, give or take a
 * checkpoint's time). */
#define TESSD_WAL_CHECKPOINT_PAGES 1000
/* Free space below which the reserve is given back ahead of a failed write (the shim's exit
 * record needs a block too, and is written before the store learns of the end). */
#define TESSD_STORE_LOW (1ull << 20)
/* How often the main loop looks at the data directory's free space. */
#define TESSD_DISK_WATCH_MS 1000

int tessd_disk_space(tessd_t *d, uint64_t *avail, uint64_t *reserve)
{
    struct statvfs vfs;
    if (statvfs(d->data_dir, &vfs) < 0)
        return -1;
    *avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    *reserve = d->disk_reserve_pct > 0
                   ? (uint64_t)((double)vfs.f_blocks * vfs.f_frsize * d->disk_reserve_pct / 100)
                   : d->disk_reserve;
    return 0;
}

/* Once a second: give the store's reserve back when the disk is (nearly) full, allocate it
 * again once there is room above --disk-reserve. */
static void disk_watch(tessd_t *d)
{
    uint64_t avail, reserve;
    if (tessd_disk_space(d, &avail, &reserve) < 0)
        return;
    pthread_mutex_lock(&d->lock);
    if (tstore_reserve_held(d->store) && avail < TESSD_STORE_LOW) {
        uint64_t n = tstore_reserve_release(d->store);
        tessd_log("data directory's file system nearly full (%llu bytes free): gave back the "
                  "store's %llu-byte reserve, so that job ends can still be recorded",
                  (unsigned long long)avail, (unsigned long long)n);
    } else if (!tstore_reserve_held(d->store) && avail >= reserve + 2 * TESSD_STORE_RESERVE) {
        /* Given back, or never made (a full disk at start): try again. */
        tsl_error_t err;
        if (tstore_reserve_restore(d->store, &err) == 0)
            tessd_log("free space is back (%llu bytes): the store's reserve is allocated again",
                      (unsigned long long)avail);
    }
    pthread_mutex_unlock(&d->lock);
}

/* An unsigned integer option in [lo, hi]: 0, or -1 after the one-line error. */
static int opt_uint(const char *opt, const char *arg, unsigned long lo, unsigned long hi,
                    unsigned long *v)
{
    char *e;
    errno = 0;
    unsigned long x = strtoul(arg, &e, 10);
    if (!*arg || *e || errno || arg[0] == '-' || x < lo || x > hi) {
        fprintf(stderr, "tesseld: %s %s: expected a whole number from %lu to %lu\n", opt, arg, lo,
                hi);
        return -1;
    }
    *v = x;
    return 0;
}

/* A rate a second >= 0 (0 allowed when zero_ok): 0, or -1 after the one-line error. */
static int opt_rate(const char *opt, const char *arg, bool zero_ok, double *v)
{
    char *e;
    double x = strtod(arg, &e);
    if (!*arg || *e || !(x >= 0) || x > 1e6 || (x == 0 && !zero_ok)) {
        fprintf(stderr, "tesseld: %s %s: expected submissions a second, a number %s 0\n", opt, arg,
                zero_ok ? ">=" : ">");
        return -1;
    }
    *v = x;
    return 0;
}

/* --disk-reserve: SIZE (tsl_parse_size) or N% (0 < N < 100). */
static int opt_reserve(const char *arg, uint64_t *bytes, double *pct)
{
    size_t n = strlen(arg);
    if (n > 1 && arg[n - 1] == '%') {
        char *e;
        double x = strtod(arg, &e);
        if (e != arg + n - 1 || !(x >= 0 && x < 100)) {
            fprintf(stderr, "tesseld: --disk-reserve %s: expected a percentage from 0 to 99%%\n",
                    arg);
            return -1;
        }
        *pct = x;
        *bytes = 0;
        return 0;
    }
    tsl_error_t err;
    if (tsl_parse_size(arg, bytes, &err) < 0) {
        fprintf(stderr, "tesseld: --disk-reserve %s: %s (e.g. 1G or 5%%)\n", arg, err.text);
        return -1;
    }
    *pct = 0;
    return 0;
}

/* The data directory and jobs/ must be tesseld's own, real directories, writable by no one
 * else: whoever could rename or replace an entry there could point tesseld (root) at files
 * of their choosing (jobs/<id> is created, chowned and read by path). */
static int check_own_dir(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        fprintf(stderr, "tesseld: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
        fprintf(stderr,
                "tesseld: %s: must be a directory owned by tesseld's user (uid %u) and "
                "writable by no one else (it is %s, uid %u, mode %04o)\n",
                path, (unsigned)geteuid(), S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
                (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

static int mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, mode) < 0 && errno != EEXIST ? -1 : 0;
}

/* The absolute path of the NVML library the GPUs were found with, for the shims' watchdogs
 * (tessel-shim takes no library path from a job or a user): the fake's with --fake-gpus, else
 * where the dynamic loader found --nvml.  Left "" (no watchdog) without GPUs. */
static void resolve_nvml(tessd_t *d, const char *nvml_lib)
{
    char lib[PATH_MAX + 32];
    d->nvml_path[0] = '\0';
    if (d->ngpus == 0)
        return;
    if (d->fake_spec[0])
        snprintf(lib, sizeof lib, "%s/libnvidia-ml.so.1", d->fake_lib_dir);
    else
        snprintf(lib, sizeof lib, "%s", nvml_lib);
    void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    Dl_info info;
    void *sym = h ? dlsym(h, "nvmlInit_v2") : NULL;
    char *rp = sym && dladdr(sym, &info) && info.dli_fname ? realpath(info.dli_fname, NULL) : NULL;
    if (rp && rp[0] == '/')
        snprintf(d->nvml_path, sizeof d->nvml_path, "%s", rp);
    else
        tessd_log("warning: %s: cannot resolve its path: jobs run without the GPU-memory "
                  "watchdog",
                  lib);
    free(rp);
    if (h)
        dlclose(h);
}

/* The mode's default data directory and socket (tclient_default_paths).  In personal mode
 * HOME falls back to the account's home directory.  0, or -1 after a message. */
static int default_paths(bool system, tclient_paths_t *p)
{
    const char *home = getenv("HOME");
    struct passwd *pw = NULL;
    if (!system && (!home || home[0] != '/') && (pw = getpwuid(geteuid())))
        home = pw->pw_dir;
    tsl_error_t err;
    if (tclient_default_paths(system, home, getenv("XDG_DATA_HOME"), getenv("XDG_RUNTIME_DIR"), p,
                              &err) < 0) {
        fprintf(stderr, "tesseld: %s\n", err.text);
        return -1;
    }
    return 0;
}

/* The local socket's directory: created (0755 in system mode, 0700 in personal mode), or an
 * existing one that only tesseld's user (or root) can write to, so that no one can replace
 * the socket with their own and collect other users' requests.  0, or -1 after a message. */
static int socket_dir(const char *sock, bool system)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", sock);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) {
        fprintf(stderr, "tesseld: --socket %s: expected an absolute path in a directory\n", sock);
        return -1;
    }
    *slash = '\0';
    struct stat st;
    if (lstat(dir, &st) < 0) {
        if (errno != ENOENT || mkdir_p(dir, system ? 0755 : 0700) < 0 ||
            chmod(dir, system ? 0755 : 0700) < 0 || lstat(dir, &st) < 0) {
            fprintf(stderr, "tesseld: %s: %s\n", dir, strerror(errno));
            return -1;
        }
    }
    if (!S_ISDIR(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022)) {
        fprintf(stderr,
                "tesseld: %s: the socket's directory must be a directory owned by tesseld's "
                "user (uid %u) or root and writable by no one else (it is %s, uid %u, mode "
                "%04o)\n",
                dir, (unsigned)geteuid(), S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
                (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* Instance id: random, kept in the store, names the daemon's cgroup subtree so that two
 * tesselds on one machine (tests) never share job cgroups. */
static int instance_id(tessd_t *d, tsl_error_t *err)
{
    if (tstore_meta_get(d->store, "instance", d->instance, sizeof d->instance, NULL) == 0)
        return 0;
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return tsl_errprintf(err, "getrandom: %s", strerror(errno));
    for (int i = 0; i < 8; i++)
        snprintf(d->instance + 2 * i, 3, "%02x", r[i]);
    return tstore_meta_set(d->store, "instance", d->instance, err);
}

static int ensure_default_queue(tessd_t *d, tsl_error_t *err)
{
    tstore_queue_t q;
    if (tstore_queue_get(d->store, "default", &q, NULL) == 0)
        return 0;
    q = (tstore_queue_t){.name = "default",
                         .guarantee = {-1, -1, -1, -1},
                         .limit = {-1, -1, -1, -1},
                         .weight = 1,
                         .reserve_after_s = -1,
                         .placement = "spread", /* docs/scheduler-queues.md, "Placement" */
                         .created_ms = tessd_now_ms()};
    return tstore_queue_add(d->store, &q, err);
}

static int discover_gpus(tessd_t *d, const char *nvml_lib, const char *fallback, tsl_error_t *err)
{
    tsl_error_t e;
    if (!d->fake_spec[0] && fallback[0]) {
        /* --fake-gpus-if-none: real GPUs when NVML finds some, else the simulated ones. */
        unsigned n = 0;
        tagent_nvml_t *real = tagent_nvml_open(nvml_lib, &e);
        if (real) {
            tagent_gpu_t tmp[TAGENT_MAX_GPUS];
            int k = tagent_nvml_inventory(real, tmp, TAGENT_MAX_GPUS, false, NULL);
            n = k > 0 ? (unsigned)k : 0;
            tagent_nvml_close(real);
        }
        if (n == 0) {
            tessd_log("no GPU found (%s): simulating %s", real ? "NVML lists none" : e.text,
                      fallback);
            snprintf(d->fake_spec, sizeof d->fake_spec, "%s", fallback);
        }
    }
    if (d->fake_spec[0]) {
        /* Validate the spec ourselves (a clear message at start), then let the fake NVML,
         * which reads the same variable, describe the devices as a real one would. */
        if (tagent_fake_spec_parse(d->fake_spec, d->gpus, TAGENT_MAX_GPUS, &e) < 0)
            return tsl_errprintf(err, "--fake-gpus: %s", e.text);
        setenv("TESSEL_FAKE_GPUS", d->fake_spec, 1);
        char lib[PATH_MAX + 32];
        snprintf(lib, sizeof lib, "%s/libnvidia-ml.so.1", d->fake_lib_dir);
        d->nvml = tagent_nvml_open(lib, &e);
        if (d->nvml) {
            d->ngpus = tagent_nvml_inventory(d->nvml, d->gpus, TAGENT_MAX_GPUS, true, &e);
            if (d->ngpus < 0)
                return tsl_errprintf(err, "fake NVML: %s", e.text);
        } else {
            tessd_log("warning: %s; simulated GPUs are described from --fake-gpus alone", e.text);
            d->ngpus = tagent_fake_spec_parse(d->fake_spec, d->gpus, TAGENT_MAX_GPUS, NULL);
        }
        d->simulated = true;
    } else {
        d->nvml = tagent_nvml_open(nvml_lib, &e);
        if (!d->nvml) {
            tessd_log("no GPU found (%s); jobs asking for GPUs will be refused; "
                      "use --fake-gpus SPEC to simulate some",
                      e.text);
            d->ngpus = 0;
        } else {
            d->ngpus = tagent_nvml_inventory(d->nvml, d->gpus, TAGENT_MAX_GPUS, false, &e);
            if (d->ngpus < 0)
                return tsl_errprintf(err, "NVML: %s", e.text);
        }
    }
    d->min_gpu_mem = UINT64_MAX;
    d->max_gpu_mem = 0;
    for (int i = 0; i < d->ngpus; i++) {
        if (d->gpus[i].mem_total < d->min_gpu_mem)
            d->min_gpu_mem = d->gpus[i].mem_total;
        if (d->gpus[i].mem_total > d->max_gpu_mem)
            d->max_gpu_mem = d->gpus[i].mem_total;
    }
    if (d->ngpus == 0)
        d->min_gpu_mem = 0;
    return 0;
}

/* This node as libsched sees it (d->node, used by every cluster tesseld builds), the empty
 * cluster that answers "could this job ever run here?", and the placement policy.  The live
 * cluster and the scheduler are built by tessd_sched_build (at recovery). */
static int build_cluster(tessd_t *d, const char *policy, tsl_error_t *err)
{
    for (int i = 0; i < d->ngpus; i++) {
        /* NVLink island: the lowest index reachable through active links. */
        int island = -1;
        uint32_t seen = 1u << i, frontier = 1u << i;
        while (frontier) {
            uint32_t next = 0;
            for (int g = 0; g < d->ngpus; g++)
                if (frontier & (1u << g))
                    next |= d->gpus[g].nvlink_peers;
            frontier = next & ~seen;
            seen |= next;
        }
        if (seen != (1u << i))
            island = __builtin_ctz(seen);
        d->gpu_specs[i] = (tsched_gpu_spec_t){.model = d->gpus[i].name,
                                              .mem_bytes = d->gpus[i].mem_total,
                                              .sm_count = d->gpus[i].sm_count,
                                              .nvlink_island = island,
                                              .pcie_switch = -1};
    }
    d->node = (tsched_node_spec_t){.name = d->node_name,
                                   .cpu_milli = (uint64_t)d->ncpus * 1000,
                                   .mem_bytes = d->mem_total,
                                   .ngpus = (uint32_t)d->ngpus,
                                   .gpus = d->gpu_specs};
    d->empty = tsched_cluster_create();
    if (!d->empty)
        return tsl_errprintf(err, "out of memory");
    if (tsched_cluster_add_node(d->empty, &d->node, err) < 0)
        return -1;
    d->policy = tsched_policy_create(policy, err);
    if (!d->policy)
        return -1;
    d->check_policy = tsched_policy_create(policy, err);
    return d->check_policy ? 0 : -1;
}

static int write_addr(tessd_t *d, const char *host, tsl_error_t *err)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 32], text[96];
    snprintf(path, sizeof path, "%s/tesseld.addr", d->data_dir);
    snprintf(tmp, sizeof tmp, "%s/tesseld.addr.tmp", d->data_dir);
    snprintf(text, sizeof text, "%s:%u\n", host, (unsigned)thttp_port(d->http));
    FILE *f = fopen(tmp, "we");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) < 0)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    return 0;
}

int main(int argc, char **argv)
{
    static tessd_t dd;
    tessd_t *d = &dd;
    char listen[128] = "127.0.0.1:7470", nvml_lib[PATH_MAX] = "libnvidia-ml.so.1";
    char policy[64] = "", data_dir[PATH_MAX] = "";
    bool no_cgroups = false;
    bool durable_full = false; /* --durability full */
    char fallback[256] = "";
    char web_root[PATH_MAX] = "";
    char socket_path[PATH_MAX] = "";
    int mode = -1; /* 1 --system, 0 --personal, -1 by euid */
    bool no_socket = false, no_listen = false;
    d->local_users_create = true;
    unsigned long max_conn = THTTP_DEFAULT_MAX_CONNECTIONS;
    unsigned long max_per_client = THTTP_DEFAULT_MAX_PER_CLIENT;
    unsigned long timeout_s = THTTP_DEFAULT_TIMEOUT_S;
    uint64_t max_body = TESSD_MAX_BODY;
    double submit_rate = TESSD_SUBMIT_RATE, submit_burst = TESSD_SUBMIT_BURST;
    double admin_rate = 0; /* 0: admins exempt */
    d->disk_reserve = TESSD_DISK_RESERVE;
    tsched_sched_config_default(&d->sched_cfg);
    d->log_limit = TESSD_LOG_LIMIT_DEFAULT;
    d->kill_wait_ms = TESSD_KILL_WAIT_MS_DEFAULT;
    d->hist_interval = THIST_INTERVAL_DEFAULT;
    d->hist_retention = THIST_RETENTION_DEFAULT;
    d->holds_dirty = true; /* held jobs are checked at the first tick */
    d->shim[0] = d->interposer[0] = d->fake_lib_dir[0] = '\0';
    snprintf(d->cg_root, sizeof d->cg_root, "/sys/fs/cgroup");
    enum {
        O_DATA = 1,
        O_LISTEN,
        O_FAKE,
        O_FAKENONE,
        O_WEBROOT,
        O_FAKEDIR,
        O_NVML,
        O_INTER,
        O_SHIM,
        O_POLICY,
        O_CGROOT,
        O_NOCG,
        O_MINRUN,
        O_RESERVE_AFTER,
        O_DURABLE,
        O_NOROOT,
        O_ALLOWROOT,
        O_SYSTEM,
        O_PERSONAL,
        O_SOCKET,
        O_NOSOCKET,
        O_NOLISTEN,
        O_LOCALUSERS,
        O_MAXCONN,
        O_MAXPERCLIENT,
        O_TIMEOUT,
        O_MAXBODY,
        O_SUBRATE,
        O_SUBBURST,
        O_ADMINRATE,
        O_DISKRES,
        O_LOGLIMIT,
        O_KILLWAIT,
        O_HISTINT,
        O_HISTRET,
        O_TESTKILL,
        O_TESTTICK,
        O_TESTGAP,
        O_GPUMEMV,
        O_USERNS,
        O_HELP,
        O_VERSION
    };
    static const struct option opts[] = {
        {"data-dir", required_argument, NULL, O_DATA},
        {"listen", required_argument, NULL, O_LISTEN},
        {"fake-gpus", required_argument, NULL, O_FAKE},
        {"fake-gpus-if-none", required_argument, NULL, O_FAKENONE},
        {"web-root", required_argument, NULL, O_WEBROOT},
        {"fake-lib-dir", required_argument, NULL, O_FAKEDIR},
        {"nvml", required_argument, NULL, O_NVML},
        {"interposer", required_argument, NULL, O_INTER},
        {"shim", required_argument, NULL, O_SHIM},
        {"policy", required_argument, NULL, O_POLICY},
        {"cgroup-root", required_argument, NULL, O_CGROOT},
        {"no-cgroups", no_argument, NULL, O_NOCG},
        {"min-runtime", required_argument, NULL, O_MINRUN},
        {"reserve-after", required_argument, NULL, O_RESERVE_AFTER},
        {"durability", required_argument, NULL, O_DURABLE},
        {"no-root-jobs", no_argument, NULL, O_NOROOT},
        {"allow-root-jobs", no_argument, NULL, O_ALLOWROOT},
        {"system", no_argument, NULL, O_SYSTEM},
        {"personal", no_argument, NULL, O_PERSONAL},
        {"socket", required_argument, NULL, O_SOCKET},
        {"no-socket", no_argument, NULL, O_NOSOCKET},
        {"no-listen", no_argument, NULL, O_NOLISTEN},
        {"local-users", required_argument, NULL, O_LOCALUSERS},
        {"max-connections", required_argument, NULL, O_MAXCONN},
        {"max-connections-per-client", required_argument, NULL, O_MAXPERCLIENT},
        {"request-timeout", required_argument, NULL, O_TIMEOUT},
        {"max-body", required_argument, NULL, O_MAXBODY},
        {"submit-rate", required_argument, NULL, O_SUBRATE},
        {"submit-burst", required_argument, NULL, O_SUBBURST},
        {"admin-submit-rate", required_argument, NULL, O_ADMINRATE},
        {"disk-reserve", required_argument, NULL, O_DISKRES},
        {"log-limit", required_argument, NULL, O_LOGLIMIT},
        {"kill-wait", required_argument, NULL, O_KILLWAIT},
        {"history-interval", required_argument, NULL, O_HISTINT},
        {"history-retention", required_argument, NULL, O_HISTRET},
        {"test-kill-at", required_argument, NULL, O_TESTKILL},
        {"test-tick-ms", required_argument, NULL, O_TESTTICK},
        {"test-pass-gap-ms", required_argument, NULL, O_TESTGAP},
        {"gpu-mem-violation", required_argument, NULL, O_GPUMEMV},
        {"allow-user-namespaces", no_argument, NULL, O_USERNS},
        {"help", no_argument, NULL, O_HELP},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_DATA:
            snprintf(data_dir, sizeof data_dir, "%s", optarg);
            break;
        case O_LISTEN:
            snprintf(listen, sizeof listen, "%s", optarg);
            break;
        case O_WEBROOT:
            snprintf(web_root, sizeof web_root, "%s", optarg);
            break;
        case O_FAKENONE:
            snprintf(fallback, sizeof fallback, "%s", optarg);
            break;
        case O_FAKE:
            snprintf(d->fake_spec, sizeof d->fake_spec, "%s", optarg);
            break;
        case O_FAKEDIR:
            snprintf(d->fake_lib_dir, sizeof d->fake_lib_dir, "%s", optarg);
            break;
        case O_NVML:
            snprintf(nvml_lib, sizeof nvml_lib, "%s", optarg);
            break;
        case O_INTER:
            snprintf(d->interposer, sizeof d->interposer, "%s", optarg);
            break;
        case O_SHIM:
            snprintf(d->shim, sizeof d->shim, "%s", optarg);
            break;
        case O_POLICY:
            snprintf(policy, sizeof policy, "%s", optarg);
            break;
        case O_CGROOT:
            snprintf(d->cg_root, sizeof d->cg_root, "%s", optarg);
            break;
        case O_NOCG:
            no_cgroups = true;
            break;
        case O_MINRUN: {
            char *e;
            double v = strtod(optarg, &e);
            if (*e || !(v >= 0)) {
                fprintf(stderr, "tesseld: --min-runtime %s: expected seconds >= 0\n", optarg);
                return 2;
            }
            d->sched_cfg.min_runtime = v;
            break;
        }
        case O_RESERVE_AFTER: {
            int64_t v;
            tsl_error_t e;
            if (tsl_parse_seconds(optarg, TESSD_RESERVE_AFTER_MAX, &v, &e) < 0) {
                fprintf(stderr, "tesseld: --reserve-after %s: %s\n", optarg, e.text);
                return 2;
            }
            d->sched_cfg.reserve_after = (double)v;
            break;
        }
        case O_DURABLE:
            if (strcmp(optarg, "normal") != 0 && strcmp(optarg, "full") != 0) {
                fprintf(stderr, "tesseld: --durability %s: expected normal or full\n", optarg);
                return 2;
            }
            durable_full = strcmp(optarg, "full") == 0;
            break;
        case O_NOROOT:
            d->allow_root_jobs = false;
            break;
        case O_ALLOWROOT:
            d->allow_root_jobs = true;
            break;
        case O_SYSTEM:
        case O_PERSONAL:
            if (mode >= 0 && mode != (c == O_SYSTEM)) {
                fprintf(stderr, "tesseld: give one of --system and --personal\n");
                return 2;
            }
            mode = c == O_SYSTEM;
            break;
        case O_SOCKET:
            if (optarg[0] != '/' || strlen(optarg) > TCLIENT_SOCKET_PATH_MAX) {
                fprintf(stderr,
                        "tesseld: --socket %s: expected an absolute path of at most %d "
                        "bytes\n",
                        optarg, TCLIENT_SOCKET_PATH_MAX);
                return 2;
            }
            snprintf(socket_path, sizeof socket_path, "%s", optarg);
            break;
        case O_NOSOCKET:
            no_socket = true;
            break;
        case O_NOLISTEN:
            no_listen = true;
            break;
        case O_LOCALUSERS:
            if (strcmp(optarg, "create") != 0 && strcmp(optarg, "existing") != 0) {
                fprintf(stderr, "tesseld: --local-users %s: expected create or existing\n", optarg);
                return 2;
            }
            d->local_users_create = strcmp(optarg, "create") == 0;
            break;
        case O_MAXCONN:
            if (opt_uint("--max-connections", optarg, 1, 65536, &max_conn) < 0)
                return 2;
            break;
        case O_MAXPERCLIENT:
            if (opt_uint("--max-connections-per-client", optarg, 1, 65536, &max_per_client) < 0)
                return 2;
            break;
        case O_TIMEOUT:
            if (opt_uint("--request-timeout", optarg, 1, 86400, &timeout_s) < 0)
                return 2;
            break;
        case O_MAXBODY: {
            tsl_error_t e;
            if (tsl_parse_size(optarg, &max_body, &e) < 0 || max_body < 1024 ||
                max_body > TESSD_MAX_BODY_HIGH) {
                fprintf(stderr, "tesseld: --max-body %s: expected a size from 1K to 16M\n", optarg);
                return 2;
            }
            break;
        }
        case O_KILLWAIT: {
            tsl_error_t e;
            int64_t kw = 0;
            if (tsl_parse_duration(optarg, &kw, &e) < 0 || kw > 3600) {
                fprintf(stderr, "tesseld: --kill-wait %s: %s\n", optarg,
                        kw > 3600 ? "at most 1h" : e.text);
                return 2;
            }
            d->kill_wait_ms = kw * 1000;
            break;
        }
        case O_LOGLIMIT: {
            tsl_error_t e;
            if (tsl_parse_size(optarg, &d->log_limit, &e) < 0) {
                fprintf(stderr, "tesseld: --log-limit %s: %s\n", optarg, e.text);
                return 2;
            }
            break;
        }
        case O_SUBRATE:
            if (opt_rate("--submit-rate", optarg, true, &submit_rate) < 0)
                return 2;
            break;
        case O_SUBBURST: {
            unsigned long b;
            if (opt_uint("--submit-burst", optarg, 1, 1000000, &b) < 0)
                return 2;
            submit_burst = (double)b;
            break;
        }
        case O_ADMINRATE:
            if (opt_rate("--admin-submit-rate", optarg, false, &admin_rate) < 0)
                return 2;
            break;
        case O_DISKRES:
            if (opt_reserve(optarg, &d->disk_reserve, &d->disk_reserve_pct) < 0)
                return 2;
            break;
        case O_TESTKILL:
            if (!tessd_test_kill_step_valid(optarg)) {
                fprintf(stderr,
                        "tesseld: --test-kill-at %s: expected running, dir, cgroup, spawned or "
                        "recorded\n",
                        optarg);
                return 2;
            }
            snprintf(d->test_kill_at, sizeof d->test_kill_at, "%s", optarg);
            break;
        case O_TESTTICK:
        case O_TESTGAP: {
            unsigned long v;
            if (opt_uint(c == O_TESTTICK ? "--test-tick-ms" : "--test-pass-gap-ms", optarg,
                         c == O_TESTTICK ? 1 : 0, 3600000, &v) < 0)
                return 2;
            *(c == O_TESTTICK ? &d->test_tick_ms : &d->test_pass_gap_ms) = (int64_t)v;
            break;
        }
        case O_GPUMEMV:
            if (strcmp(optarg, "kill") != 0 && strcmp(optarg, "suspend") != 0) {
                fprintf(stderr, "tesseld: --gpu-mem-violation %s: expected kill or suspend\n",
                        optarg);
                return 2;
            }
            d->gpu_mem_suspend = strcmp(optarg, "suspend") == 0;
            break;
        case O_USERNS:
            d->allow_userns = true;
            break;
        case O_HISTINT:
        case O_HISTRET: {
            const char *name = c == O_HISTINT ? "--history-interval" : "--history-retention";
            int64_t v;
            tsl_error_t e;
            if (tsl_parse_seconds(optarg, THIST_RETENTION_MAX, &v, &e) < 0) {
                fprintf(stderr, "tesseld: %s %s: %s\n", name, optarg, e.text);
                return 2;
            }
            if (c == O_HISTINT)
                d->hist_interval = (int)v;
            else
                d->hist_retention = v;
            break;
        }
        case O_HELP:
            usage(stdout);
            return 0;
        case O_VERSION:
            printf("tesseld %s\n", TESSD_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    {
        tsl_error_t herr;
        if (tessd_history_init(d, &herr) < 0) {
            fprintf(stderr, "tesseld: %s\n", herr.text);
            return 2;
        }
    }
    if (no_socket && no_listen) {
        fprintf(stderr, "tesseld: --no-socket and --no-listen leave no way to reach tesseld\n");
        return 2;
    }
    if (no_socket && socket_path[0]) {
        fprintf(stderr, "tesseld: give one of --socket and --no-socket\n");
        return 2;
    }
    d->system_mode = mode >= 0 ? mode == 1 : geteuid() == 0;
    if (d->system_mode && geteuid() != 0) {
        fprintf(stderr, "tesseld: --system needs root (it runs every user's jobs as that user); "
                        "use --personal for your own tesseld\n");
        return 2;
    }
    tsl_error_t err;
    /* Where our siblings live: the directory of this executable. */
    char self[PATH_MAX], bindir[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl < 0) {
        perror("tesseld: /proc/self/exe");
        return 1;
    }
    self[sl] = '\0';
    snprintf(bindir, sizeof bindir, "%s", dirname(self));
    if (!d->shim[0])
        tessd_pathf(d->shim, sizeof d->shim, "%s/tessel-shim", bindir);
    if (!d->fake_lib_dir[0])
        tessd_pathf(d->fake_lib_dir, sizeof d->fake_lib_dir, "%s/../tests/fake", bindir);
    bool interposer_given = d->interposer[0] != '\0';
    if (!interposer_given)
        tessd_pathf(d->interposer, sizeof d->interposer, "%s/../lib/libtessel-cuda.so", bindir);
    if (access(d->interposer, R_OK) != 0) {
        if (interposer_given) {
            fprintf(stderr, "tesseld: --interposer %s: %s\n", d->interposer, strerror(errno));
            return 1;
        }
        tessd_log("warning: %s not found: jobs run without GPU-memory limits", d->interposer);
        d->interposer[0] = '\0';
    } else {
        char *rp = realpath(d->interposer, NULL);
        if (rp) {
            snprintf(d->interposer, sizeof d->interposer, "%s", rp);
            free(rp);
        }
    }
    char *rp = realpath(d->fake_lib_dir, NULL);
    if (rp) {
        snprintf(d->fake_lib_dir, sizeof d->fake_lib_dir, "%s", rp);
        free(rp);
    }
    if (access(d->shim, X_OK) != 0) {
        fprintf(stderr, "tesseld: %s: %s (the job supervisor is needed)\n", d->shim,
                strerror(errno));
        return 1;
    }
    char host[64];
    unsigned port;
    char *colon = strrchr(listen, ':');
    if (!colon || colon == listen || sscanf(colon + 1, "%u", &port) != 1 || port > 65535) {
        fprintf(stderr, "tesseld: --listen %s: expected HOST:PORT\n", listen);
        return 2;
    }
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    struct in_addr addr;
    if (inet_pton(AF_INET, host, &addr) != 1) {
        fprintf(stderr, "tesseld: --listen %s: HOST must be a numeric IPv4 address\n", listen);
        return 2;
    }
    const char *const specs[] = {d->fake_spec, fallback};
    for (int i = 0; i < 2; i++) {
        tagent_gpu_t probe[TAGENT_MAX_GPUS];
        if (specs[i][0] && tagent_fake_spec_parse(specs[i], probe, TAGENT_MAX_GPUS, &err) < 0) {
            fprintf(stderr, "tesseld: %s: %s\n", i ? "--fake-gpus-if-none" : "--fake-gpus",
                    err.text);
            return 2;
        }
    }

    tclient_paths_t defaults;
    if ((!data_dir[0] || (!socket_path[0] && !no_socket)) &&
        default_paths(d->system_mode, &defaults) < 0)
        return 1;
    if (!data_dir[0])
        snprintf(data_dir, sizeof data_dir, "%s", defaults.data_dir);
    if (!socket_path[0] && !no_socket)
        snprintf(socket_path, sizeof socket_path, "%s", defaults.socket);
    if (mkdir_p(data_dir, 0700) < 0) {
        fprintf(stderr, "tesseld: %s: %s\n", data_dir, strerror(errno));
        return 1;
    }
    rp = realpath(data_dir, NULL);
    snprintf(d->data_dir, sizeof d->data_dir, "%s", rp ? rp : data_dir);
    free(rp);
    tessd_pathf(d->jobs_dir, sizeof d->jobs_dir, "%s/jobs", d->data_dir);
    /* Jobs running as other users must reach their directory jobs/<id> (their cwd and
     * logs): the data dir and jobs/ are traversable (0711) but not listable; the store and
     * the admin token stay 0600. */
    if (geteuid() == 0)
        chmod(d->data_dir, 0711);
    if (mkdir_p(d->jobs_dir, 0711) < 0) {
        fprintf(stderr, "tesseld: %s: %s\n", d->jobs_dir, strerror(errno));
        return 1;
    }
    if (check_own_dir(d->data_dir) < 0 || check_own_dir(d->jobs_dir) < 0)
        return 1;
    char path[PATH_MAX + 32];
    tessd_pathf(path, sizeof path, "%s/tesseld.lock", d->data_dir);
    int lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) < 0) {
        if (lockfd >= 0 && errno == EWOULDBLOCK) {
            /* The holder wrote its PID into the file once it had the lock. */
            char buf[32] = "";
            ssize_t n = pread(lockfd, buf, sizeof buf - 1, 0);
            long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
            if (pid > 0)
                fprintf(stderr, "tesseld: %s: another tesseld (pid %ld) uses this data directory\n",
                        path, pid);
            else
                fprintf(stderr, "tesseld: %s: another tesseld uses this data directory\n", path);
        } else {
            fprintf(stderr, "tesseld: %s: %s\n", path, strerror(errno));
        }
        return 1;
    }
    {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
        if (ftruncate(lockfd, 0) < 0 || pwrite(lockfd, buf, (size_t)n, 0) != n)
            tessd_log("warning: %s: cannot write our PID: %s", path, strerror(errno));
    }
    tessd_pathf(path, sizeof path, "%s/tessel.db", d->data_dir);
    /* Create the database file 0600 first: SQLite gives its -wal and -shm files the same mode. */
    int dbfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (dbfd >= 0)
        close(dbfd);
    d->store = tstore_open(path, &err);
    if (d->store && durable_full && tstore_set_durable(d->store, true, &err) < 0) {
        tstore_close(d->store);
        d->store = NULL;
    }
    if (!d->store) {
        fprintf(stderr, "tesseld: %s\n", err.text);
        return 1;
    }
    tessd_pathf(path, sizeof path, "%s/store.reserve", d->data_dir);
    if (tstore_reserve_init(d->store, path, TESSD_STORE_RESERVE, &err) < 0)
        tessd_log("warning: %s: the store has no reserve for a full disk", err.text);
    {
        /* /metrics' counts, kept by the job model from now on; checkpoints off the request
         * path (docs/tesseld.md, "Store"). */
        tjm_t jm;
        tessd_jobmodel(d, &jm);
        if (tjm_tally_load(&jm, &err) < 0 ||
            tstore_maint_start(d->store, TESSD_WAL_CHECKPOINT_PAGES, &err) < 0) {
            fprintf(stderr, "tesseld: %s\n", err.text);
            return 1;
        }
    }
    if (instance_id(d, &err) < 0 || ensure_default_queue(d, &err) < 0 ||
        tessd_bootstrap_admin(d, &err) < 0 || discover_gpus(d, nvml_lib, fallback, &err) < 0) {
        fprintf(stderr, "tesseld: %s\n", err.text);
        return 1;
    }
    if (geteuid() == 0) {
        resolve_nvml(d, nvml_lib);
        if (tessd_enforce_init(d, &err) < 0) {
            fprintf(stderr, "tesseld: %s\n", err.text);
            return 1;
        }
    }
    if (gethostname(d->node_name, sizeof d->node_name) < 0)
        snprintf(d->node_name, sizeof d->node_name, "localhost");
    d->ncpus = sysconf(_SC_NPROCESSORS_ONLN);
    d->mem_total = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    d->cg_mode = no_cgroups ? TAGENT_CG_NONE : tagent_cgroup_detect(d->cg_root);
    tessd_pathf(d->cg_base, sizeof d->cg_base, "tessel/%s", d->instance);
    if (d->cg_mode == TAGENT_CG_NONE && !no_cgroups)
        tessd_log("warning: no usable cgroup controllers (%s); CPU and memory limits are not "
                  "enforced",
                  geteuid() ? "not root" : "neither v2 nor v1 memory+cpu+freezer");
    if (build_cluster(d, policy, &err) < 0) {
        fprintf(stderr, "tesseld: %s\n", err.text);
        return 1;
    }
    /* Child subreaper: a job's process whose shim is gone (a shim that died, an orphan the job
     * left after its shim ended) is re-parented to tesseld rather than to PID 1, and the tick
     * reaps it with the shims (waitpid(-1)).  So nothing of ours lingers as a zombie while
     * tesseld runs, even in a container whose PID 1 does not reap.  Shims are still started
     * in their own session and outlive a kill -9 of tesseld. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        tessd_log("warning: PR_SET_CHILD_SUBREAPER: %s", strerror(errno));

    /* Signals: blocked in every thread (the HTTP threads inherit the mask), read here. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (sfd < 0 || d->wake_fd < 0) {
        perror("tesseld: signalfd/eventfd");
        return 1;
    }
    pthread_mutex_init(&d->lock, NULL);
    if (tessd_recover(d, &err) < 0) {
        fprintf(stderr, "tesseld: recovery: %s\n", err.text);
        return 1;
    }
    int crc = tessd_console_init(web_root[0] ? web_root : NULL, bindir, &err);
    if (crc < 0) {
        fprintf(stderr, "tesseld: --web-root: %s\n", err.text);
        return 1;
    }
    if (crc > 0)
        tessd_log("web console off: no %s/../share/tessel/web (give --web-root DIR)", bindir);
    d->submit_rate = submit_rate;
    d->admin_submit_rate = admin_rate;
    d->submit_burst = submit_burst;
    if (submit_rate > 0 && !(d->submit_limit = thttp_limiter_new(submit_rate, submit_burst))) {
        perror("tesseld: submission rate limit");
        return 1;
    }
    if (admin_rate > 0 && !(d->admin_submit_limit = thttp_limiter_new(admin_rate, submit_burst))) {
        perror("tesseld: submission rate limit");
        return 1;
    }
    thttp_config_t hc = {.host = host,
                         .port = (uint16_t)port,
                         .max_body = (size_t)max_body,
                         .max_connections = (unsigned)max_conn,
                         .max_per_client = (unsigned)max_per_client,
                         .timeout_s = (unsigned)timeout_s,
                         .routes = tessd_routes,
                         .nroutes = tessd_nroutes,
                         .ctx = d};
    if (!no_socket) {
        /* The socket after the data directory's lock: a socket file found there is a dead
         * tesseld's, never a live one's of the same data. */
        if (socket_dir(socket_path, d->system_mode) < 0)
            return 1;
        d->http_unix = thttp_start_unix(&hc, socket_path, d->system_mode ? 0666 : 0600, &err);
        if (!d->http_unix) {
            fprintf(stderr, "tesseld: %s\n", err.text);
            return 1;
        }
        /* At most TCLIENT_SOCKET_PATH_MAX bytes: checked with --socket, and by the defaults. */
        snprintf(d->socket_path, sizeof d->socket_path, "%.*s", (int)sizeof d->socket_path - 1,
                 socket_path);
    }
    if (!no_listen) {
        d->http = thttp_start(&hc, &err);
        if (!d->http) {
            fprintf(stderr, "tesseld: %s\n", err.text);
            thttp_stop(d->http_unix);
            return 1;
        }
        if (write_addr(d, host, &err) < 0) {
            fprintf(stderr, "tesseld: %s\n", err.text);
            thttp_stop(d->http_unix);
            return 1;
        }
        if (tessd_console_root()[0])
            tessd_log("web console at http://%s:%u/ (files from %s)", host,
                      (unsigned)thttp_port(d->http), tessd_console_root());
    }
    char tcp[96] = "", local[192] = "";
    if (d->http)
        snprintf(tcp, sizeof tcp, "http://%s:%u", host, (unsigned)thttp_port(d->http));
    if (d->http_unix)
        snprintf(local, sizeof local, "%sunix:%.107s (%s mode: %s)", d->http ? " and " : "",
                 d->socket_path, d->system_mode ? "system" : "personal",
                 d->system_mode ? "every local user" : "this user alone");
    tessd_log("listening on %s%s (data dir %s, %d GPU(s)%s, cgroups %s, policy %s)", tcp, local,
              d->data_dir, d->ngpus, d->simulated ? " SIMULATED" : "",
              tagent_cgroup_mode_name(d->cg_mode), tsched_policy_name(d->policy));
    for (int i = 0; i < d->ngpus; i++)
        tessd_log("GPU %d: %s, %llu MiB, %u SMs, %s%s", i, d->gpus[i].name,
                  (unsigned long long)(d->gpus[i].mem_total >> 20), d->gpus[i].sm_count,
                  d->gpus[i].uuid, d->gpus[i].simulated ? " (simulated)" : "");

    /* The main loop: signals (SIGCHLD: a shim ended, i.e. a job's end) and the wake fd (a
     * handler's event) ask for a pass; pass.h decides when it runs. */
    tessd_pass_t ps;
    tessd_pass_init(&ps, d->test_pass_gap_ms ? d->test_pass_gap_ms : TESSD_PASS_GAP_MS,
                    d->test_tick_ms ? d->test_tick_ms : TESSD_TICK_MS, tessd_mono_ms());
    int64_t last_disk = 0;
    for (;;) {
        int64_t timeout = tessd_pass_timeout(&ps, tessd_mono_ms());
        struct pollfd p[2] = {{sfd, POLLIN, 0}, {d->wake_fd, POLLIN, 0}};
        int n = timeout == 0 ? 0 : poll(p, 2, (int)timeout);
        if (n < 0 && errno != EINTR) {
            perror("tesseld: poll");
            break;
        }
        bool stop = false;
        if (n > 0 && (p[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo != SIGCHLD)
                    stop = true;
                else
                    tessd_pass_event(&ps);
            }
        }
        if (stop)
            break;
        if (n > 0 && (p[1].revents & POLLIN)) {
            uint64_t v;
            if (read(d->wake_fd, &v, sizeof v) == (ssize_t)sizeof v)
                tessd_pass_event(&ps);
        }
        int64_t now = tessd_mono_ms();
        if (tessd_pass_timeout(&ps, now) != 0)
            continue;
        tessd_pass_begin(&ps, now);
        if (now - last_disk >= TESSD_DISK_WATCH_MS) {
            disk_watch(d);
            last_disk = now;
        }
        tessd_tick(d);
        tessd_history_tick(d);
        atomic_fetch_add(&d->sched_passes, 1);
        tessd_pass_end(&ps);
    }
    atomic_store(&d->stopping, true);
    pthread_mutex_lock(&d->lock);
    tessd_wake_waiters(d, -1); /* long polls answer now, so that the servers can stop */
    pthread_mutex_unlock(&d->lock);
    tessd_log("stopping; %zu running job(s) keep running and are picked up at the next start",
              d->nruns);
    thttp_stop(d->http);
    thttp_stop(d->http_unix);
    /* The instance's cgroup parent goes when no job is left in it (rmdir fails otherwise). */
    if (d->nruns == 0)
        tagent_cgroup_remove(d->cg_mode, d->cg_root, d->cg_base);
    pthread_mutex_lock(&d->lock);
    tstore_close(d->store);
    pthread_mutex_unlock(&d->lock);
    tsched_sched_destroy(d->sched);
    tsched_policy_destroy(d->policy);
    tsched_policy_destroy(d->check_policy);
    free(d->inbox);
    free(d->qsnap);
    tsched_cluster_destroy(d->cluster);
    tsched_cluster_destroy(d->empty);
    tagent_nvml_close(d->nvml);
    thttp_limiter_free(d->submit_limit);
    thttp_limiter_free(d->admin_submit_limit);
    free(d->runs);
    thist_writer_free(d->hist);
    close(sfd);
    close(d->wake_fd);
    close(lockfd);
    return 0;
}
