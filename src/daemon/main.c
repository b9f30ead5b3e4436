/* main.c - tesseld: options, start-up (store, admin token, GPUs, cgroups, recovery, HTTP),
 * the main loop (signals, wake-ups, the scheduling tick) and shutdown.
 *
 * Shutdown (SIGTERM, SIGINT) stops serving and exits; running jobs keep running under their
 * shims and are picked up by the next start (see tick.c, tessd_recover).  SIGHUP reloads the
 * configuration file (reload(): the options config.h marks live).
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
#include "daemon/config.h"
#include "daemon/log.h"
#include "daemon/daemon.h"
#include "daemon/pass.h"
#include "daemon/retention.h"
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

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tesseld [OPTION]...\n"
            "  --config FILE       the configuration file (default " TESSD_SYSTEM_CONFIG "\n"
            "                      in --system mode, ~/.config/tessel/tesseld.conf in\n"
            "                      --personal mode, when present): KEY = VALUE lines, each key\n"
            "                      an option below without its --; options given here win\n"
            "  --check-config      check the configuration (file and options) as a start\n"
            "                      would, print it and exit 0, or exit 1 with the error\n"
            "  --mode MODE         auto (default: system as root, else personal), system or\n"
            "                      personal\n"
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
            "  --kill-wait TIME    between SIGTERM and SIGKILL when a job reaches its time\n"
            "                      limit (Slurm's KillWait; 30s, 2m, MM:SS; default 30s)\n"
            "  --job-log-retention DURATION  remove the logs of jobs that ended longer ago\n"
            "                      (30d, 12h; default 30d; 0 = keep them)\n"
            "  --log WHERE         tesseld's own messages: syslog, stderr or auto (default:\n"
            "                      syslog when stderr is the journal's or /dev/null, else\n"
            "                      stderr)\n"
            "  --log-level LEVEL   error, warning, info (default) or debug\n"
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
            "                      system has less free (default 256M)\n"
            "SIGHUP reloads the configuration file: docs/tesseld.md says which options change\n"
            "live and which wait for a restart.\n");
}

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
/* How often the main loop removes old jobs' directories (retention.h). */
#define TESSD_RETENTION_PERIOD_MS (3600 * 1000)
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

/* The options that can change live (TESSD_OPT_LIVE), into d: at start, and at a reload under
 * the lock (the rate limiters are reload()'s). */
static void conf_to_daemon(tessd_t *d, const tessd_conf_t *c)
{
    d->local_users_create = c->local_users == 0;
    if (d->sched_cfg.min_runtime != c->min_runtime ||
        d->sched_cfg.reserve_after != (double)c->reserve_after) {
        d->sched_cfg.min_runtime = c->min_runtime;
        d->sched_cfg.reserve_after = (double)c->reserve_after;
        d->rebuild = d->sched != NULL; /* the scheduler holds a copy */
    }
    d->gpu_mem_suspend = c->gpu_mem_violation == 1;
    d->log_limit = c->log_limit;
    d->kill_wait_ms = c->kill_wait * 1000;
    d->job_log_retention_s = c->job_log_retention;
    d->disk_reserve = c->disk_reserve;
    d->disk_reserve_pct = c->disk_reserve_pct;
    tessd_log_set_level(c->log_level);
}

/* The configuration file to read: --config FILE, else the mode's default when present
 * (TESSD_SYSTEM_CONFIG; personal: $XDG_CONFIG_HOME or ~/.config, tessel/tesseld.conf).
 * path "" when there is none. */
static void config_path(const tessd_args_t *args, bool system, char *path, size_t len)
{
    path[0] = '\0';
    if (args->config) {
        char *rp = realpath(args->config, NULL); /* a reload reads the same file */
        snprintf(path, len, "%s", rp ? rp : args->config);
        free(rp);
        return;
    }
    char p[PATH_MAX + 64];
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (system)
        snprintf(p, sizeof p, "%s", TESSD_SYSTEM_CONFIG);
    else if (xdg && xdg[0] == '/')
        snprintf(p, sizeof p, "%s/tessel/tesseld.conf", xdg);
    else if (home && home[0] == '/')
        snprintf(p, sizeof p, "%s/.config/tessel/tesseld.conf", home);
    else
        return;
    if (access(p, F_OK) == 0 && strlen(p) < len)
        memcpy(path, p, strlen(p) + 1);
}

/* The settings: defaults, the file, the flags over it, then what involves several options.
 * As root the file must be root's (tessd_check_root_owned).  0, or -1 with err. */
static int config_load(const tessd_args_t *args, const char *path, tessd_conf_t *c,
                       tsl_error_t *err)
{
    if (tessd_conf_defaults(c, err) < 0)
        return -1;
    if (path[0] && ((geteuid() == 0 &&
                     tessd_check_root_owned(path, "as root, the configuration file", err) < 0) ||
                    tessd_conf_load_file(c, path, err) < 0)) {
        tessd_conf_free(c);
        return -1;
    }
    if (tessd_conf_apply_args(c, args, err) < 0 || tessd_conf_check(c, err) < 0) {
        tessd_conf_free(c);
        return -1;
    }
    return 0;
}

/* SIGHUP: read the file again (and the same flags over it).  A bad file is refused and the
 * running configuration kept; else each live option that changed is applied under the lock
 * (the handlers and the tick see it whole), and each restart-only one is said to wait for a
 * restart.  Main thread. */
typedef struct {
    tessd_t *d;
    tessd_conf_t *run, *next;
    int nlive, nrestart;
} reload_t;

static void reload_one(size_t i, void *ud)
{
    reload_t *r = ud;
    const char *name = tessd_opt_name(i);
    if (!(tessd_opt_flags(i) & TESSD_OPT_LIVE)) {
        tessd_logl(TESSD_LOG_WARNING, "reload: %s = %s needs a restart; still %s", name,
                   r->next->text[i], r->run->text[i]);
        r->nrestart++;
        return;
    }
    tessd_logl(TESSD_LOG_INFO, "reload: %s = %s (was %s)", name, r->next->text[i], r->run->text[i]);
    tessd_conf_take(r->run, r->next, i);
    r->nlive++;
}

static void reload(tessd_t *d, const tessd_args_t *args, tessd_conf_t *run)
{
    char path[PATH_MAX];
    config_path(args, d->system_mode, path, sizeof path);
    tessd_conf_t next;
    tsl_error_t err;
    if (config_load(args, path, &next, &err) < 0) {
        tessd_logl(TESSD_LOG_ERROR, "reload refused, the running configuration is kept: %s",
                   err.text);
        return;
    }
    /* New limiters first (no allocation under the lock). */
    thttp_limiter_t *sub = NULL, *adm = NULL;
    if ((next.submit_rate > 0 &&
         !(sub = thttp_limiter_new(next.submit_rate, (double)next.submit_burst))) ||
        (next.admin_submit_rate > 0 &&
         !(adm = thttp_limiter_new(next.admin_submit_rate, (double)next.submit_burst)))) {
        tessd_logl(TESSD_LOG_ERROR, "reload refused: out of memory");
        thttp_limiter_free(sub);
        tessd_conf_free(&next);
        return;
    }
    reload_t r = {d, run, &next, 0, 0};
    pthread_mutex_lock(&d->lock);
    tessd_conf_diff(run, &next, reload_one, &r);
    conf_to_daemon(d, run);
    if (d->submit_rate != run->submit_rate || d->admin_submit_rate != run->admin_submit_rate ||
        d->submit_burst != (double)run->submit_burst) {
        thttp_limiter_t *os = d->submit_limit, *oa = d->admin_submit_limit;
        d->submit_limit = sub;
        d->admin_submit_limit = adm;
        sub = os;
        adm = oa;
    }
    d->submit_rate = run->submit_rate;
    d->admin_submit_rate = run->admin_submit_rate;
    d->submit_burst = (double)run->submit_burst;
    pthread_mutex_unlock(&d->lock);
    thttp_limiter_free(sub);
    thttp_limiter_free(adm);
    tessd_conf_free(&next);
    tessd_logl(TESSD_LOG_INFO, "reloaded %s: %d option(s) changed, %d more need a restart",
               path[0] ? path : "(no configuration file)", r.nlive, r.nrestart);
}

int main(int argc, char **argv)
{
    static tessd_t dd;
    tessd_t *d = &dd;
    tsl_error_t err;
    static tessd_args_t args;
    int ar = tessd_args_parse(argc, argv, &args, &err);
    if (ar < 0) {
        if (err.text[0])
            fprintf(stderr, "tesseld: %s\n", err.text);
        if (!err.text[0] || strstr(err.text, "unexpected argument"))
            usage(stderr);
        return 2;
    }
    if (args.help) {
        usage(stdout);
        return 0;
    }
    if (args.version) {
        printf("tesseld %s\n", TESSD_VERSION);
        return 0;
    }
    int exit_bad = args.check_config ? 1 : 2;
    /* The mode the command line asks for picks the default configuration file. */
    int cmd_mode = 0;
    for (size_t i = 0; i < args.n; i++)
        if (strcmp(args.name[i], "system") == 0 || strcmp(args.name[i], "personal") == 0)
            cmd_mode = args.name[i][0] == 's' ? 1 : 2;
        else if (strcmp(args.name[i], "mode") == 0)
            cmd_mode = strcmp(args.val[i], "system") == 0     ? 1
                       : strcmp(args.val[i], "personal") == 0 ? 2
                                                              : 0;
    char conf_file[PATH_MAX];
    config_path(&args, cmd_mode ? cmd_mode == 1 : geteuid() == 0, conf_file, sizeof conf_file);
    static tessd_conf_t conf;
    if (config_load(&args, conf_file, &conf, &err) < 0) {
        fprintf(stderr, "tesseld: %s\n", err.text);
        return exit_bad;
    }
    tessd_log_open(args.check_config ? TESSD_LOGTO_STDERR : conf.log_to, conf.log_level);
    char listen[128], nvml_lib[PATH_MAX], policy[64], data_dir[PATH_MAX];
    char fallback[256], web_root[PATH_MAX], socket_path[PATH_MAX];
    snprintf(listen, sizeof listen, "%s", conf.listen);
    snprintf(nvml_lib, sizeof nvml_lib, "%s", conf.nvml);
    snprintf(policy, sizeof policy, "%s", conf.policy);
    snprintf(data_dir, sizeof data_dir, "%s", conf.data_dir);
    snprintf(fallback, sizeof fallback, "%s", conf.fake_gpus_if_none);
    snprintf(web_root, sizeof web_root, "%s", conf.web_root);
    snprintf(socket_path, sizeof socket_path, "%s", conf.socket);
    bool no_cgroups = conf.no_cgroups, durable_full = conf.durability == 1;
    bool no_socket = conf.no_socket, no_listen = conf.no_listen;
    unsigned long max_conn = conf.max_connections, max_per_client = conf.max_per_client;
    unsigned long timeout_s = conf.request_timeout;
    uint64_t max_body = conf.max_body;
    double submit_rate = conf.submit_rate, submit_burst = (double)conf.submit_burst;
    double admin_rate = conf.admin_submit_rate; /* 0: admins exempt */
    tsched_sched_config_default(&d->sched_cfg);
    conf_to_daemon(d, &conf);
    d->holds_dirty = true; /* held jobs are checked at the first tick */
    snprintf(d->fake_spec, sizeof d->fake_spec, "%s", conf.fake_gpus);
    snprintf(d->fake_lib_dir, sizeof d->fake_lib_dir, "%s", conf.fake_lib_dir);
    snprintf(d->interposer, sizeof d->interposer, "%s", conf.interposer);
    snprintf(d->shim, sizeof d->shim, "%s", conf.shim);
    snprintf(d->cg_root, sizeof d->cg_root, "%s", conf.cgroup_root);
    snprintf(d->test_kill_at, sizeof d->test_kill_at, "%s", conf.test_kill_at);
    d->test_tick_ms = (int64_t)conf.test_tick_ms;
    d->test_pass_gap_ms = (int64_t)conf.test_pass_gap_ms;
    d->allow_root_jobs = conf.allow_root_jobs;
    d->allow_userns = conf.allow_user_namespaces;
    d->system_mode = conf.mode ? conf.mode == 1 : geteuid() == 0;
    if (d->system_mode && geteuid() != 0) {
        fprintf(stderr, "tesseld: --system needs root (it runs every user's jobs as that user); "
                        "use --personal for your own tesseld\n");
        return exit_bad;
    }
    /* In system mode an explicit shim or interposer must be root's (tessd_check_root_owned). */
    const char *const runs[][2] = {{"--shim", d->shim}, {"--interposer", d->interposer}};
    for (int i = 0; i < 2 && d->system_mode; i++)
        if (runs[i][1][0] && tessd_check_root_owned(runs[i][1], runs[i][0], &err) < 0) {
            fprintf(stderr, "tesseld: %s (in --system mode)\n", err.text);
            return exit_bad;
        }
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
    /* HOST:PORT, checked by the configuration (config.c). */
    char host[64];
    char *colon = strrchr(listen, ':');
    unsigned port = (unsigned)strtoul(colon + 1, NULL, 10);
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    if (args.check_config) {
        /* Everything checked as a start would, nothing created: the effective settings, with
         * what "" stands for resolved (the mode's paths, the programs next to tesseld). */
        tclient_paths_t defs;
        if (default_paths(d->system_mode, &defs) < 0)
            return exit_bad;
        const char *const resolved[][2] = {{"mode", d->system_mode ? "system" : "personal"},
                                           {"data-dir", data_dir[0] ? data_dir : defs.data_dir},
                                           {"socket", no_socket        ? ""
                                                      : socket_path[0] ? socket_path
                                                                       : defs.socket},
                                           {"shim", d->shim},
                                           {"interposer", d->interposer},
                                           {"fake-lib-dir", d->fake_lib_dir}};
        for (size_t i = 0; i < sizeof resolved / sizeof resolved[0]; i++)
            if (tessd_conf_set(&conf, resolved[i][0], resolved[i][1], false, &err) < 0) {
                fprintf(stderr, "tesseld: %s\n", err.text);
                return exit_bad;
            }
        printf("# tesseld %s: %s is valid; the effective configuration:\n", TESSD_VERSION,
               conf_file[0] ? conf_file : "(no configuration file)");
        tessd_conf_print(&conf, stdout);
        tessd_conf_free(&conf);
        return 0;
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
    tsl_hist_init(&d->job_pending_hist, tsl_hist_seconds_to_days, tsl_hist_seconds_to_days_n);
    tsl_hist_init(&d->job_run_hist, tsl_hist_seconds_to_days, tsl_hist_seconds_to_days_n);
    tsl_hist_init(&d->pass_hist, tsl_hist_sub_second, tsl_hist_sub_second_n);
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
    int64_t next_retention = 0; /* --job-log-retention: at the first pass, then hourly */
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
                if (si.ssi_signo == SIGHUP) {
                    reload(d, &args, &conf);
                    tessd_pass_event(&ps); /* a setting of the scheduler may have changed */
                    next_retention = 0;    /* and the retention: applied at once */
                } else if (si.ssi_signo != SIGCHLD) {
                    stop = true;
                } else {
                    tessd_pass_event(&ps);
                }
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
        if (now >= next_retention) {
            int more = tessd_retention_sweep(d, tessd_now_ms()) == TESSD_RETENTION_BATCH;
            next_retention = now + (more ? 1000 : TESSD_RETENTION_PERIOD_MS);
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tessd_tick(d);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        tsl_hist_observe(&d->pass_hist,
                         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
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
    tessd_conf_free(&conf);
    tessd_args_free(&args);
    close(sfd);
    close(d->wake_fd);
    close(lockfd);
    return 0;
}
