/* watchdog.c - the GPU-memory watchdog thread of tessel-shim (see watchdog.h). */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/watchdog.h"
#include "libutil/nomount.h"
#include "cudaabi/nvml_abi.h"
#include "libutil/procstat.h"
#include "libutil/size.h"

/* Processes NVML may list on one GPU in one answer (more are asked again with a larger
 * buffer up to this; a GPU runs at most a few dozen contexts in practice). */
#define MAX_PROCS 1024

int tsw_limits_parse(const char *spec, tsw_limits_t *l, tsl_error_t *err)
{
    memset(l, 0, sizeof *l);
    const char *p = spec;
    while (*p) {
        char *end;
        errno = 0;
        unsigned long ix = strtoul(p, &end, 10);
        if (end == p || !isdigit((unsigned char)*p) || *end != '=' || errno || ix >= TSW_MAX_GPUS)
            return tsl_errprintf(err,
                                 "--gpu-mem-limit '%.100s': expected IDX=SIZE[,...], IDX "
                                 "from 0 to 63",
                                 spec);
        const char *v = end + 1;
        const char *comma = strchr(v, ',');
        size_t n = comma ? (size_t)(comma - v) : strlen(v);
        char num[64];
        if (n == 0 || n >= sizeof num || (comma && comma[1] == '\0'))
            return tsl_errprintf(err, "--gpu-mem-limit '%.100s': a size is missing", spec);
        memcpy(num, v, n);
        num[n] = '\0';
        uint64_t b;
        tsl_error_t e;
        if (tsl_parse_size(num, &b, &e) < 0)
            return tsl_errprintf(err, "--gpu-mem-limit '%.100s': %s", spec, e.text);
        l->limit[ix] = b;
        p = comma ? comma + 1 : v + n;
    }
    return 0;
}

int tsw_action_parse(const char *text, tsw_action_t *a, tsl_error_t *err)
{
    if (strcmp(text, "kill") == 0)
        *a = TSW_KILL;
    else if (strcmp(text, "suspend") == 0)
        *a = TSW_SUSPEND;
    else
        return tsl_errprintf(err, "'%.60s': expected kill or suspend", text);
    return 0;
}

uint64_t tsw_job_sum(const tsw_proc_t *procs, size_t n, tsw_member_fn member, void *arg)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        /* NVML_VALUE_NOT_AVAILABLE (all ones): the driver does not know (Windows WDDM, some
         * vGPUs); counted 0 rather than taken for a violation. */
        uint64_t u = procs[i].used == ~0ull ? 0 : procs[i].used;
        if (!member(procs[i].pid, arg))
            continue;
        sum = UINT64_MAX - sum < u ? UINT64_MAX : sum + u;
    }
    return sum;
}

bool tsw_over(uint64_t sum, uint64_t limit)
{
    return sum > limit;
}

bool tsw_must_answer(const tsw_limits_t *l, unsigned gpu)
{
    return gpu < TSW_MAX_GPUS && l->limit[gpu] > 0;
}

/* Bytes in the unit a person reads: GiB with one decimal from 1 GiB, MiB below. */
static void human(char *buf, size_t len, uint64_t b)
{
    if (b >= (1ull << 30))
        snprintf(buf, len, "%.1f GiB", (double)b / (double)(1ull << 30));
    else
        snprintf(buf, len, "%.1f MiB", (double)b / (double)(1ull << 20));
}

void tsw_reason(char *buf, size_t len, int gpu, uint64_t sum, uint64_t limit, tsw_action_t a)
{
    char s[32], l[32];
    human(s, sizeof s, sum);
    human(l, sizeof l, limit);
    if (limit == 0)
        snprintf(buf, len,
                 "GPU %d: the job's processes hold %s on a GPU it was not given: %s by the "
                 "GPU-memory watchdog",
                 gpu, s, a == TSW_KILL ? "killed" : "suspended");
    else
        snprintf(buf, len,
                 "GPU %d: the job's processes hold %s, its slice allows %s: %s by the GPU-memory "
                 "watchdog",
                 gpu, s, l, a == TSW_KILL ? "killed" : "suspended");
}

uint64_t tsw_hold_limit(uint64_t limit, bool hold)
{
    return hold && limit > TSW_HOLD_ALLOW ? TSW_HOLD_ALLOW : limit;
}

void tsw_hold_reason(char *buf, size_t len, int gpu, uint64_t sum)
{
    char s[32], a[32];
    human(s, sizeof s, sum);
    human(a, sizeof a, TSW_HOLD_ALLOW);
    snprintf(buf, len,
             "GPU %d: the job's processes hold %s while it is suspended by a preemption (its GPU "
             "memory given back; %s allowed): killed by the GPU-memory watchdog",
             gpu, s, a);
}

bool tsw_hold_on(const char *state)
{
    if (!state)
        return false;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", state, TSW_HOLD_FILE) >= sizeof path)
        return false;
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0;
}

/* Parent steps followed from a pid before the whole process table decides (tsw_descends):
 * a job's processes sit a few levels below the shim, another account's a few below init. */
#define CHAIN_QUICK 64

static int by_ppid(const void *a, const void *b)
{
    const tsw_pstat_t *x = a, *y = b;
    return (x->ppid > y->ppid) - (x->ppid < y->ppid);
}

static int by_pid(const void *a, const void *b)
{
    const tsw_pstat_t *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

static int pid_cmp(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

/* Walk down from the pids in queue (tail of them; room for cap) over procs sorted by ppid,
 * setting kin to `to` on every descendant not yet TSW_MEMBER (the roots are marked
 * TSW_MEMBER during the walks, so none is reached). */
static void mark_below(tsw_pstat_t *procs, size_t n, pid_t *queue, size_t tail, size_t cap,
                       tsw_kin_t to)
{
    for (size_t head = 0; head < tail;) {
        pid_t parent = queue[head++];
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (procs[mid].ppid < parent)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t i = lo; i < n && procs[i].ppid == parent; i++)
            if (procs[i].kin != TSW_MEMBER && procs[i].kin != to && tail < cap) {
                procs[i].kin = to;
                queue[tail++] = procs[i].pid;
            }
    }
}

void tsw_members_of(tsw_pstat_t *procs, size_t n, const pid_t *roots, size_t nroots)
{
    pid_t *queue = malloc((n + nroots + 1) * sizeof *queue);
    pid_t *sorted = malloc((nroots + 1) * sizeof *sorted);
    if (!queue || !sorted) {
        /* Cannot be decided: every process but the roots counts. */
        for (size_t i = 0; i < n; i++) {
            bool is_root = false;
            for (size_t r = 0; r < nroots && !is_root; r++)
                is_root = procs[i].pid == roots[r];
            procs[i].kin = is_root ? TSW_OTHER : TSW_UNDECIDED;
        }
        free(queue);
        free(sorted);
        return;
    }
    if (nroots)
        memcpy(sorted, roots, nroots * sizeof *sorted);
    qsort(sorted, nroots, sizeof *sorted, pid_cmp);
    /* The roots are marked TSW_MEMBER while the walks run (so that neither walk marks or
     * queues them) and TSW_OTHER at the end: no root is its own or another root's member. */
    for (size_t i = 0; i < n; i++) {
        bool is_root = bsearch(&procs[i].pid, sorted, nroots, sizeof *sorted, pid_cmp) != NULL;
        procs[i].kin = is_root ? TSW_MEMBER : procs[i].ppid < 0 ? TSW_UNDECIDED : TSW_OTHER;
    }
    /* Sorted by parent, the children of a pid are one run: a walk down from the roots over
     * them reaches every descendant at any depth, each entry once (a cycle cannot loop it). */
    qsort(procs, n, sizeof *procs, by_ppid);
    size_t cap = n + nroots + 1, tail = 0;
    for (size_t r = 0; r < nroots; r++)
        queue[tail++] = sorted[r];
    mark_below(procs, n, queue, tail, cap, TSW_MEMBER);
    /* Below a process that cannot be placed, nothing can be either. */
    tail = 0;
    for (size_t i = 0; i < n; i++)
        if (procs[i].kin == TSW_UNDECIDED)
            queue[tail++] = procs[i].pid;
    mark_below(procs, n, queue, tail, cap, TSW_UNDECIDED);
    for (size_t i = 0; i < n; i++)
        if (bsearch(&procs[i].pid, sorted, nroots, sizeof *sorted, pid_cmp))
            procs[i].kin = TSW_OTHER;
    free(queue);
    free(sorted);
}

void tsw_members(tsw_pstat_t *procs, size_t n, pid_t root)
{
    tsw_members_of(procs, n, &root, 1);
}

void tsw_table_index(tsw_table_t *t)
{
    qsort(t->procs, t->n, sizeof *t->procs, by_pid);
}

bool tsw_in_table(unsigned pid, void *arg)
{
    const tsw_table_t *t = arg;
    tsw_pstat_t key = {.pid = (pid_t)pid};
    const tsw_pstat_t *e = bsearch(&key, t->procs, t->n, sizeof *t->procs, by_pid);
    return e && e->kin != TSW_OTHER;
}

/* Room for one more entry of size bytes in *p (n in use, *cap allocated; first: the first
 * allocation's count, then doubled).  false when memory runs out (*p unchanged). */
static bool room(void **p, size_t *cap, size_t n, size_t size, size_t first)
{
    if (n < *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : first;
    void *nv = realloc(*p, ncap * size);
    if (!nv)
        return false;
    *p = nv;
    *cap = ncap;
    return true;
}

int tsw_snapshot_roots(pid_t root, tsw_root_fn is_root, void *arg, tsw_pstat_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *dp = opendir("/proc");
    if (!dp)
        return -1;
    size_t cap = 0, nroots = 1, rcap = 16;
    tsw_pstat_t *v = NULL;
    pid_t *roots = malloc(rcap * sizeof *roots);
    struct dirent *de;
    bool ok = roots != NULL;
    if (ok)
        roots[0] = root;
    while (ok && (de = readdir(dp))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0 || end == de->d_name)
            continue;
        tsl_procstat_t ps;
        if (tsl_procstat_read((pid_t)pid, &ps) < 0) {
            if (errno == ENOENT || errno == ESRCH)
                continue; /* gone */
            ps.ppid = -1; /* cannot be read: undecided */
            ps.comm[0] = '\0';
        }
        pid_t ppid = ps.ppid;
        const char *comm = ps.comm;
        if (!(ok = room((void **)&v, &cap, *n, sizeof *v, 1024)))
            break;
        v[(*n)++] = (tsw_pstat_t){.pid = (pid_t)pid, .ppid = ppid};
        if (is_root && (pid_t)pid != root && is_root((pid_t)pid, comm, arg)) {
            if (!(ok = room((void **)&roots, &rcap, nroots, sizeof *roots, 8)))
                break;
            roots[nroots++] = (pid_t)pid;
        }
    }
    closedir(dp);
    if (!ok) {
        free(roots);
        free(v);
        *n = 0;
        return -1;
    }
    tsw_members_of(v, *n, roots, nroots);
    free(roots);
    *out = v;
    return 0;
}

int tsw_snapshot(pid_t root, tsw_pstat_t **out, size_t *n)
{
    return tsw_snapshot_roots(root, NULL, NULL, out, n);
}

bool tsw_descends(pid_t pid, pid_t ancestor)
{
    /* The quick answer: the parent chain within CHAIN_QUICK steps. */
    pid_t p = pid;
    for (int i = 0; i < CHAIN_QUICK; i++) {
        tsl_procstat_t ps;
        if (p <= 1 || p == ancestor)
            break;
        if (tsl_procstat_read(p, &ps) < 0) {
            if (p == pid && (errno == ENOENT || errno == ESRCH))
                return false; /* the process itself is gone */
            p = -1;           /* an ancestor went (its child was reparented): the table says */
            break;
        }
        if (ps.ppid == ancestor)
            return true;
        p = ps.ppid;
    }
    if (p == 1 || p == 0)
        return false;
    /* Deeper than CHAIN_QUICK, or the chain changed under the walk: the whole process table
     * decides, at any depth; a process it cannot place counts as the job's. */
    tsw_pstat_t *procs;
    size_t n;
    if (tsw_snapshot(ancestor, &procs, &n) < 0)
        return true;
    bool member = false, found = false;
    for (size_t i = 0; i < n && !found; i++)
        if (procs[i].pid == pid) {
            found = true;
            member = procs[i].kin != TSW_OTHER;
        }
    free(procs);
    return member;
}

/* ---- the thread ---------------------------------------------------------- */

static struct {
    tsw_config_t c;
    nvmlDeviceGetCount_v2_fn count;
    nvmlDeviceGetHandleByIndex_v2_fn handle;
    nvmlDeviceGetComputeRunningProcesses_v2_fn procs; /* _v3 or _v2: the same layout */
    nvmlDeviceGetComputeRunningProcesses_fn procs_v1;
    pthread_mutex_t lock;
    char violation[320]; /* under lock */
} w = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Set (release) once w.violation holds its first reason, which never changes after: read
 * without the lock by tsw_stopped, in a process forked while the thread may hold it. */
static atomic_bool stopped_once;
/* CLOCK_MONOTONIC ms at which the sample under way began; 0 between samples (hang_ms). */
static _Atomic int64_t sample_since;
/* tsw_quiesce was called: the threads take no sample more (the process is about to exit). */
static atomic_bool quiesced;

static int64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

const char *tsw_stopped(void)
{
    return atomic_load_explicit(&stopped_once, memory_order_acquire) ? w.violation : NULL;
}

void tsw_violation(char *buf, size_t len)
{
    pthread_mutex_lock(&w.lock);
    snprintf(buf, len, "%s", w.violation);
    pthread_mutex_unlock(&w.lock);
}

static bool member(unsigned pid, void *arg)
{
    (void)arg;
    return (pid_t)pid != w.c.root && tsw_descends((pid_t)pid, w.c.root);
}

/* Signal every process of the job: its process group, then each process below the shim at
 * any depth (one that left the group with setpgid or setsid), from one pass over /proc. */
static void signal_job(int sig)
{
    if (w.c.job > 1)
        kill(-w.c.job, sig);
    tsw_pstat_t *procs;
    size_t n;
    if (tsw_snapshot(w.c.root, &procs, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (procs[i].kin == TSW_MEMBER && procs[i].pid > 1 && procs[i].pid != w.c.root)
            kill(procs[i].pid, sig);
    free(procs);
}

/* The record for tesseld, in the root-owned state directory: "ACTION EPISODE REASON". */
static void record_in(const char *dir, unsigned episode, const char *line, tsw_action_t action)
{
    if (!dir)
        return;
    char tmp[4096], final[4096];
    /* The temporary is this process's: the job's record may be written by two steps at once. */
    snprintf(tmp, sizeof tmp, "%s/.%s.%d.tmp", dir, TSW_RECORD, (int)getpid());
    snprintf(final, sizeof final, "%s/%s", dir, TSW_RECORD);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    if (fd < 0)
        return;
    char text[400];
    int n = snprintf(text, sizeof text, "%s %u %s\n", action == TSW_KILL ? "kill" : "suspend",
                     episode, line);
    bool ok = n > 0 && write(fd, text, (size_t)n) == n;
    if (close(fd) < 0 || !ok || rename(tmp, final) < 0)
        unlink(tmp);
}

/* The record in the step's state directory and in the job's (job_state). */
static void record(unsigned episode, const char *line, tsw_action_t action)
{
    record_in(w.c.state, episode, line, action);
    record_in(w.c.job_state, episode, line, action);
}

bool tsw_job_record(const char *job_state, char *buf, size_t len)
{
    if (!job_state)
        return false;
    char path[4096], text[400];
    snprintf(path, sizeof path, "%s/%s", job_state, TSW_RECORD);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0)
        n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    text[strcspn(text, "\n")] = '\0';
    /* "ACTION EPISODE REASON": the reason. */
    const char *r = strchr(text, ' ');
    r = r ? strchr(r + 1, ' ') : NULL;
    snprintf(buf, len, "%.300s", r ? r + 1 : text);
    return true;
}

/* A line in the job's stderr log, written as the job's account (this thread's filesystem ids
 * only, so the log cannot be made to lead root anywhere the account cannot write). */
static void log_line(const char *line)
{
    if (!w.c.err_log)
        return;
    bool as_user = w.c.uid != (uid_t)-1;
    if (as_user) {
        syscall(SYS_setfsgid, w.c.gid);
        syscall(SYS_setfsuid, w.c.uid);
    }
    /* O_NONBLOCK: a FIFO the user put there must not hold this thread; only a regular file
     * is written.  Nor a file system the user mounted over the job's directory (FUSE, whose
     * server need not answer): the log is reached without crossing a mount point (nomount.h),
     * else the kill that follows this line would wait for that server. */
    int fd = tsl_open_nomount_tail(w.c.err_log, 2,
                                   O_WRONLY | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0);
    if (as_user) {
        syscall(SYS_setfsuid, 0);
        syscall(SYS_setfsgid, 0);
    }
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    if (fd < 0)
        return;
    char text[400];
    int n = snprintf(text, sizeof text, "tessel: %s\n", line);
    if (n > 0 && write(fd, text, (size_t)n) < 0) {
        /* the log is the user's: nothing more to do */
    }
    close(fd);
}

/* The processes on GPU index i, into out (cap entries); how many, or -1. */
static int gpu_procs(unsigned i, tsw_proc_t *out, unsigned cap)
{
    static nvmlProcessInfo_t info[MAX_PROCS];
    static nvmlProcessInfo_v1_t info1[MAX_PROCS];
    nvmlDevice_t dev;
    if (w.handle(i, &dev) != NVML_SUCCESS)
        return -1;
    unsigned n = cap;
    if (w.procs) {
        if (w.procs(dev, &n, info) != NVML_SUCCESS)
            return -1;
        for (unsigned k = 0; k < n; k++)
            out[k] = (tsw_proc_t){info[k].pid, info[k].usedGpuMemory};
    } else {
        if (w.procs_v1(dev, &n, info1) != NVML_SUCCESS)
            return -1;
        for (unsigned k = 0; k < n; k++)
            out[k] = (tsw_proc_t){info1[k].pid, info1[k].usedGpuMemory};
    }
    return (int)n;
}

/* Whether pid is stopped (state T in /proc/PID/stat). */
static bool stopped(pid_t pid)
{
    tsl_procstat_t ps;
    return tsl_procstat_read(pid, &ps) == 0 && ps.state == 'T';
}

/* Load and initialise NVML (c->nvml) into w.  0, or -1 with err. */
static int load_nvml(const tsw_config_t *c, tsl_error_t *err)
{
    void *h = dlopen(c->nvml, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return tsl_errprintf(err, "%s: %s", c->nvml, dlerror());
    nvmlInit_v2_fn init = (nvmlInit_v2_fn)dlsym(h, "nvmlInit_v2");
    w.count = (nvmlDeviceGetCount_v2_fn)dlsym(h, "nvmlDeviceGetCount_v2");
    w.handle = (nvmlDeviceGetHandleByIndex_v2_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    w.procs = (nvmlDeviceGetComputeRunningProcesses_v2_fn)dlsym(
        h, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (!w.procs)
        w.procs = (nvmlDeviceGetComputeRunningProcesses_v2_fn)dlsym(
            h, "nvmlDeviceGetComputeRunningProcesses_v2");
    w.procs_v1 =
        (nvmlDeviceGetComputeRunningProcesses_fn)dlsym(h, "nvmlDeviceGetComputeRunningProcesses");
    if (!init || !w.count || !w.handle || (!w.procs && !w.procs_v1))
        return tsl_errprintf(err, "%s: not an NVML library (entry points missing)", c->nvml);
    nvmlReturn_t r = init();
    if (r != NVML_SUCCESS)
        return tsl_errprintf(err, "%s: nvmlInit_v2 failed (%d)", c->nvml, (int)r);
    return 0;
}

/* A fail_closed watchdog that cannot ask the driver: the job's processes are killed, now and
 * every period for as long as this thread runs (a task started later goes the same way). */
_Noreturn static void fail_closed(const char *why)
{
    char line[320];
    snprintf(line, sizeof line,
             "the GPU-memory watchdog cannot ask the driver (%.200s): the job's processes are "
             "killed",
             why);
    pthread_mutex_lock(&w.lock);
    if (w.violation[0] == '\0')
        snprintf(w.violation, sizeof w.violation, "%s", line);
    atomic_store_explicit(&stopped_once, true, memory_order_release);
    pthread_mutex_unlock(&w.lock);
    record(1, line, w.c.action);
    log_line(line);
    fprintf(stderr, "tessel: %s\n", line);
    for (;;) {
        signal_job(SIGKILL);
        struct timespec ts = {0, TSW_PERIOD_MS * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
    }
}

/* The second thread of a fail_closed watchdog with hang_ms: a sample that has not ended
 * within hang_ms (an NVML call that hangs in the driver: the sampling thread cannot act) stops
 * the job as fail_closed does. */
static void *sentinel(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {0, 100 * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
        /* The job is being stopped already (a violation, or fail_closed in the sampling
         * thread, which then sleeps between kills with a sample begun): nothing to add. */
        if (atomic_load_explicit(&stopped_once, memory_order_acquire) || atomic_load(&quiesced))
            return NULL;
        int64_t since = atomic_load(&sample_since);
        if (since && mono_ms() - since > (int64_t)w.c.hang_ms) {
            char why[96];
            snprintf(why, sizeof why, "no answer within %u s", (w.c.hang_ms + 999) / 1000);
            fail_closed(why);
        }
    }
    return NULL;
}

static int thread_start(void *(*fn)(void *), tsl_error_t *err)
{
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &at, fn, NULL);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        errno = rc;
        return tsl_errprintf(err, "watchdog thread: %s", strerror(rc));
    }
    return 0;
}

static void *watch(void *arg)
{
    (void)arg;
    static tsw_proc_t procs[MAX_PROCS];
    bool over_before = false;
    unsigned episode = 0;
    unsigned failed = 0; /* samples in a row the driver did not answer (fail_closed) */
    /* Consecutive samples over the limit, per GPU (TSW_CONFIRM). */
    static unsigned streak[TSW_MAX_GPUS];
    /* The shim starts this thread once the job has run a period (TSW_PERIOD_MS): the first
     * sample is due at once (first_after_ms 0), the next a period later.  The Slurm plugin
     * starts it with the step and asks for the first sample a period later. */
    for (bool first = true;; first = false) {
        unsigned ms = first ? w.c.first_after_ms : TSW_PERIOD_MS;
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        atomic_store(&sample_since, 0);
        while (ms && nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
        atomic_store(&sample_since, mono_ms());
        /* Set before quiesced is read, as tsw_quiesce sets quiesced before it reads
         * sample_since: either this thread sees the request, or the caller sees the sample
         * and waits for it. */
        if (atomic_load(&quiesced)) {
            atomic_store(&sample_since, 0);
            for (;;)
                pause();
        }
        /* The sentinel comes with the first sample (a step that ends sooner costs no thread);
         * without it a hang could not be told, so the job does not run on. */
        tsl_error_t serr;
        if (first && w.c.fail_closed && w.c.hang_ms && thread_start(sentinel, &serr) < 0)
            fail_closed(serr.text);
        /* NVML is loaded at the first sample, not before the job starts: a job that ends
         * within the first period (a short job) costs the shim no thread, no dlopen and no
         * nvmlInit (tens of ms of CPU with the real driver). */
        if (!w.count) {
            tsl_error_t err;
            if (load_nvml(&w.c, &err) < 0) {
                if (w.c.fail_closed)
                    fail_closed(err.text);
                fprintf(stderr, "tessel-shim: GPU-memory watchdog not started: %s\n", err.text);
                return NULL;
            }
        }
        /* Suspended, and someone (tesseld's resume) continued the job's first process: the
         * others go on too, and a violation from now on is a new one. */
        if (over_before && w.c.action == TSW_SUSPEND && !stopped(w.c.job)) {
            signal_job(SIGCONT);
            over_before = false;
        }
        /* Another step of the job broke the job's limit: this step is stopped with its
         * reason (the first step stopped lowers the job's sum that the others see). */
        char jline[320];
        if (w.c.action == TSW_KILL && tsw_job_record(w.c.job_state, jline, sizeof jline)) {
            if (!over_before) {
                pthread_mutex_lock(&w.lock);
                if (w.violation[0] == '\0')
                    snprintf(w.violation, sizeof w.violation, "%s", jline);
                atomic_store_explicit(&stopped_once, true, memory_order_release);
                pthread_mutex_unlock(&w.lock);
                record_in(w.c.state, ++episode, jline, TSW_KILL);
                log_line(jline);
                fprintf(stderr, "tessel-shim: %s\n", jline);
                over_before = true;
            }
            signal_job(SIGKILL);
            continue;
        }
        unsigned ngpus = 0;
        nvmlReturn_t cr = w.count(&ngpus);
        if (cr != NVML_SUCCESS) {
            if (w.c.fail_closed && ++failed >= TSW_FAIL_SAMPLES) {
                char why[64];
                snprintf(why, sizeof why, "nvmlDeviceGetCount: error %d", (int)cr);
                fail_closed(why);
            }
            continue;
        }
        /* Suspended by a preemption with its memory given back: held to TSW_HOLD_ALLOW on
         * every GPU, and killed past it (tsw_hold_on, tesseld's file). */
        bool hold = tsw_hold_on(w.c.state);
        tsw_action_t action = hold ? TSW_KILL : w.c.action;
        bool over = false, answered = true, table_failed = false;
        tsw_table_t table = {NULL, 0}; /* this sample's job-wide process table */
        for (unsigned i = 0; i < ngpus && i < TSW_MAX_GPUS && !over; i++) {
            int n = gpu_procs(i, procs, MAX_PROCS);
            /* Only the job's own GPUs must answer: one that fails on a GPU it was not given
             * (another job's, or a lost GPU) must not kill every job of the node; cgroup
             * ConstrainDevices keeps the job off those GPUs. */
            if (n < 0 && w.c.fail_closed && tsw_must_answer(&w.c.limits, i)) {
                answered = false;
                if (failed + 1 >= TSW_FAIL_SAMPLES) {
                    char why[64];
                    snprintf(why, sizeof why, "the processes on GPU %u", i);
                    fail_closed(why);
                }
            }
            uint64_t sum = 0;
            if (n > 0 && w.c.job_root && w.c.limits.limit[i] > 0) {
                /* Job-wide: one pass over /proc per sample, taken after the driver listed
                 * the processes (a pid it listed and the pass did not see has ended); when
                 * it cannot be taken, the step's own processes still count. */
                if (!table.procs && !table_failed) {
                    table_failed = tsw_snapshot_roots(w.c.root, w.c.job_root, w.c.job_root_arg,
                                                      &table.procs, &table.n) < 0;
                    if (!table_failed)
                        tsw_table_index(&table);
                }
                sum = table.procs ? tsw_job_sum(procs, (size_t)n, tsw_in_table, &table)
                                  : tsw_job_sum(procs, (size_t)n, member, NULL);
            } else if (n > 0) {
                sum = tsw_job_sum(procs, (size_t)n, member, NULL);
            }
            uint64_t limit = tsw_hold_limit(w.c.limits.limit[i], hold);
            if (!tsw_over(sum, limit)) {
                streak[i] = 0;
                continue;
            }
            if (++streak[i] < TSW_CONFIRM && !over_before)
                continue;
            over = true;
            /* A stop first (it keeps the memory: telling can wait a moment); a kill last, so
             * that the record and the log line are there before the shim sees the job end. */
            if (action == TSW_SUSPEND)
                signal_job(SIGSTOP);
            if (!over_before) {
                char line[320];
                if (hold)
                    tsw_hold_reason(line, sizeof line, (int)i, sum);
                else
                    tsw_reason(line, sizeof line, (int)i, sum, limit, action);
                pthread_mutex_lock(&w.lock);
                if (w.violation[0] == '\0')
                    snprintf(w.violation, sizeof w.violation, "%s", line);
                atomic_store_explicit(&stopped_once, true, memory_order_release);
                pthread_mutex_unlock(&w.lock);
                record(++episode, line, action);
                log_line(line);
                fprintf(stderr, "tessel-shim: %s\n", line);
            }
            if (action == TSW_KILL)
                signal_job(SIGKILL);
        }
        free(table.procs);
        over_before = over;
        failed = answered ? 0 : failed + 1;
    }
    return NULL;
}

void tsw_quiesce(unsigned wait_ms)
{
    atomic_store(&quiesced, true);
    int64_t end = mono_ms() + wait_ms;
    while (atomic_load(&sample_since) != 0 && mono_ms() < end) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
}

int tsw_start(const tsw_config_t *c, tsl_error_t *err)
{
    if (!c->nvml || c->nvml[0] != '/')
        return tsl_errprintf(err, "--nvml: an absolute path is needed");
    w.c = *c;
    return thread_start(watch, err);
}
