/* serve_run.c - inference services in tesseld (docs/serving.md): each service's replicas kept
 * at their number, HAProxy run as tesseld's child in front of them, and their weights set from
 * what HAProxy measures.  The pure parts are serve.c's.
 *
 * Order, from the tick (tessd_serve_tick, main thread, lock held), at most every
 * TSV_SUPERVISE_MS:
 *   1. for each service: its active replicas against its number.  Fewer: new replicas are
 *      submitted (an ordinary job each, of the inference class, with a port of its own in
 *      PORT), a replacement after a replacement less than a minute before waiting 1, 2, 4 ...
 *      up to 60 s (a replica that fails at once does not loop); more: the newest are stopped
 *      (pending ones cancelled, running ones SIGTERM as any cancel);
 *   2. the proxy's configuration from the running replicas and the callers' token files; when
 *      it differs from the running proxy's (weights aside), or no proxy runs, it is written
 *      and a new HAProxy started with -sf (the old one hands over its port and finishes the
 *      requests it holds); with no service left, the proxy is stopped;
 *   3. every TSV_MEASURE_MS: `show stat json` through the runtime socket, each replica's meter
 *      updated (serve.h), the weights computed and those that changed set (`set weight`).
 * The socket is a Unix socket in <data>/serve (0700, root's when tesseld is root), which only
 * tesseld reaches; a read of it is bounded by TSV_SOCK_TIMEOUT_MS.
 *
 * The proxy's pid is in <data>/serve/haproxy.pid: a tesseld started again takes over from the
 * proxy the last one left (-sf), so the services keep answering across a restart of tesseld.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/fwd.h"
#include "daemon/acl.h"
#include "daemon/serve.h"
#include "daemon/serve_run.h"

extern char **environ;

/* Time between two supervisions: a replica that ended is replaced within it (plus its start). */
#define TSV_SUPERVISE_MS 500
/* Time between two measurements: HAProxy's rtime covers its last 1024 requests, so readings
 * every 2 s at hundreds of requests per second see new figures each time. */
#define TSV_MEASURE_MS 2000
/* Longest wait for the runtime socket's answer: HAProxy answers `show stat` in well under a
 * millisecond for a few hundred servers; the tick holds the lock meanwhile. */
#define TSV_SOCK_TIMEOUT_MS 500
/* A proxy that exits (a configuration it refuses) is started again after this. */
#define TSV_RESPAWN_MS 2000
/* Replacements closer than this to the previous one double the wait before the next. */
#define TSV_BACKOFF_WINDOW_MS 60000
#define TSV_BACKOFF_MAX_MS    60000
/* A replica that passed its health check once and then fails it this long (the proxy's
 * check runs every second, 2 failures mark it DOWN) is stopped, and so replaced: a server
 * that hangs or lost its model does not come back by itself.  10 s rides out a replica's
 * short stall (a long request, a garbage collection). */
#define TSV_DOWN_RESTART_MS 10000
/* Reloads of a running proxy: at most one in this long; the changes in between wait and go in
 * together (a weight is set through the runtime socket, never by a reload). */
#define TSV_RELOAD_MIN_MS 5000
/* haproxy.log past this at a start: renamed haproxy.log.1 (the one before removed). */
#define TSV_LOG_MAX (16 << 20)

typedef struct {
    int64_t job;
    int64_t service;
    tsv_meter_t meter;
    int concurrency;
    bool even;  /* its service splits evenly: no weights */
    int weight; /* computed from the measure (0: none yet) */
    int set;    /* as set in the proxy (0: its configuration's) */
    char status[16];
    bool was_up;        /* passed its health check at least once */
    int64_t down_since; /* failing it since (tessd_mono_ms), 0 = not failing */
    bool restarted;     /* stopped for it */
    bool seen;          /* in the last supervision's list */
} rep_t;

typedef struct {
    int64_t id;
    int streak;         /* replacements each within TSV_BACKOFF_WINDOW_MS of the previous */
    int64_t last_ms;    /* the last replacement */
    int64_t next_ok_ms; /* no replacement before */
    bool started;       /* its first replicas were submitted by this tesseld */
    bool seen;
    char held[TSV_HELD_MAX]; /* why replicas it lacks are not submitted ("" when none) */
} svc_state_t;

/* At most this many earlier proxies are told to stop by one start (-sf) or sweep; any beyond
 * are told by the next. */
#define PROXY_OLD_MAX 16
/* A proxy told to stop is not told again for this long: past hard-stop-after it has ended,
 * unless it never got the signal (a new proxy that failed before sending it), and then the
 * sweep tells it. */
#define PROXY_TOLD_MS ((TSV_HARD_STOP_S + 5) * 1000)
/* How often the proxies no one told to stop are looked for (proxy_sweep). */
#define PROXY_SWEEP_MS 5000

struct tessd_serve {
    pid_t pid;          /* the proxy, 0 when none */
    int64_t respawn_ms; /* not before */
    char *applied;      /* the configuration it runs (weights aside), NULL when none */
    int64_t next_ms, next_measure_ms;
    rep_t *reps;
    size_t nreps, capreps;
    svc_state_t *svcs;
    size_t nsvcs, capsvcs;
    bool failing;         /* the last supervision failed (logged once) */
    int64_t reload_ok_ms; /* no reload of the running proxy before */
    /* As root, the account HAProxy drops to: Debian's haproxy (NULL: not root, or none). */
    const char *user, *group;
    uid_t uid;       /* with user: the account's id (a proxy of ours runs as it or as root) */
    gid_t gid;       /* with user: the group's id (the replicas' sockets are its) */
    bool no_account; /* root, and no haproxy account: no proxy is started */
    /* Why HAProxy (as haproxy) cannot reach <data>/replicas, "" when it can: services refused. */
    char unreachable[2 * PATH_MAX + 256];
    bool swept; /* <data>/replicas cleared of the sockets of jobs that do not run (first tick) */
    /* The proxies told to stop (given to a new one's -sf, or signalled), each left alone until
     * its deadline (proxy_told): never told twice while it may be ending, when its pid could
     * be another process's by the time the signal goes. */
    struct {
        pid_t pid;
        int64_t until_ms;
    } told[PROXY_OLD_MAX];
    size_t ntold;
    int64_t next_sweep_ms; /* proxy_sweep, not before */
    int64_t started_ms;    /* when s->pid (a child) was started */
};

static void path_in(const tessd_t *d, const char *name, char *buf, size_t len)
{
    tessd_pathf(buf, len, "%s/serve/%s", d->data_dir, name);
}

static long proc_uid(int pid);

/* Whether process pid is one of this data directory's proxies: the configured executable
 * (the kernel's link, not a name a process can give itself), run by tesseld's account or by
 * HAProxy's (the account it drops to), started with `-f <data>/serve/haproxy.cfg`. */
static bool proxy_of_ours(const tessd_t *d, long pid, const char *exe, const char *cfg)
{
    char path[64], got[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%ld/exe", pid);
    ssize_t n = readlink(path, got, sizeof got - 1);
    if (n <= 0)
        return false;
    got[n] = '\0';
    /* A proxy started before its executable was replaced (a package upgrade) is still ours. */
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof deleted - 1;
    if ((size_t)n > dl && strcmp(got + n - dl, deleted) == 0)
        got[n - dl] = '\0';
    if (strcmp(got, exe) != 0)
        return false;
    long uid = proc_uid((int)pid);
    if (uid < 0 || (uid != (long)geteuid() && !(d->serve->user && uid == (long)d->serve->uid)))
        return false;
    /* Its arguments, NUL-separated: "-f" then the path, as proxy_start gives them. */
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char args[2 * PATH_MAX + 64];
    ssize_t len = read(fd, args, sizeof args - 1);
    close(fd);
    if (len <= 0)
        return false;
    args[len] = '\0';
    for (const char *a = args; a < args + len; a += strlen(a) + 1)
        if (strcmp(a, "-f") == 0 && a + 3 < args + len && strcmp(a + 3, cfg) == 0)
            return true;
    return false;
}

/* Whether pid was told to stop and its time to end has not run out (expired ones dropped). */
static bool proxy_told(struct tessd_serve *s, pid_t pid, int64_t now)
{
    size_t k = 0;
    bool told = false;
    for (size_t i = 0; i < s->ntold; i++) {
        if (s->told[i].until_ms <= now)
            continue;
        s->told[k++] = s->told[i];
        told = told || s->told[i].pid == pid;
    }
    s->ntold = k;
    return told;
}

static void proxy_tell(struct tessd_serve *s, pid_t pid, int64_t now)
{
    if (proxy_told(s, pid, now))
        return;
    if (s->ntold == PROXY_OLD_MAX) /* the oldest makes room: its deadline is the nearest */
        memmove(s->told, s->told + 1, --s->ntold * sizeof *s->told);
    s->told[s->ntold].pid = pid;
    s->told[s->ntold++].until_ms = now + PROXY_TOLD_MS;
}

/* A pid that is free again (reaped) or tesseld's new proxy's: no longer one told to stop. */
static void proxy_untell(struct tessd_serve *s, pid_t pid)
{
    size_t k = 0;
    for (size_t i = 0; i < s->ntold; i++)
        if (s->told[i].pid != pid)
            s->told[k++] = s->told[i];
    s->ntold = k;
}

/* The pids of the proxies of this data directory that run (proxy_of_ours) and have not been
 * told to stop (proxy_told), at most max into pids; how many.  The proxy tesseld started last
 * (s->pid, its child: its pid cannot be another's until it is reaped) is among them even when
 * /proc does not show it as ours (its executable unreadable without CAP_SYS_PTRACE once it is
 * the haproxy account's).  haproxy.pid names the last one started, but not a process that a
 * reload failed to replace (the new one exited before it signalled the old), nor one a
 * tesseld killed between starting it and writing the file left: each goes on serving the
 * configuration it read, callers' tokens included, until it is told to stop. */
static size_t proxy_pids(const tessd_t *d, pid_t *pids, size_t max)
{
    struct tessd_serve *s = d->serve;
    int64_t now = tessd_mono_ms();
    size_t n = 0;
    if (s->pid > 0 && max > 0 && !proxy_told(s, s->pid, now))
        pids[n++] = s->pid;
    char exe[PATH_MAX], cfg[PATH_MAX];
    if (!realpath(d->haproxy, exe))
        return n;
    path_in(d, "haproxy.cfg", cfg, sizeof cfg);
    DIR *dir = opendir("/proc");
    if (!dir)
        return n;
    for (struct dirent *e; n < max && (e = readdir(dir));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 1 || pid == (long)getpid() || pid == (long)s->pid)
            continue;
        if (!proxy_told(s, (pid_t)pid, now) && proxy_of_ours(d, pid, exe, cfg))
            pids[n++] = (pid_t)pid;
    }
    closedir(dir);
    return n;
}

/* Tell the proxies of the data directory that are neither the running one nor told already
 * to stop (SIGUSR1: a soft stop, bounded by hard-stop-after): one a failed start never
 * signalled, one another tesseld left.  Only while a proxy of tesseld's runs (s->pid) and has
 * run PROXY_SWEEP_MS (one that fails at its start exits sooner): with none, the one that goes
 * on is the services' only proxy, and the next start takes it over.
 * Every PROXY_SWEEP_MS at most. */
static void proxy_sweep(tessd_t *d, int64_t now)
{
    struct tessd_serve *s = d->serve;
    if (now < s->next_sweep_ms || !s->pid || (s->pid > 0 && now - s->started_ms < PROXY_SWEEP_MS))
        return;
    s->next_sweep_ms = now + PROXY_SWEEP_MS;
    pid_t pids[PROXY_OLD_MAX];
    size_t n = proxy_pids(d, pids, PROXY_OLD_MAX);
    pid_t cur = s->pid < 0 ? -s->pid : s->pid;
    for (size_t i = 0; i < n; i++) {
        if (pids[i] == cur)
            continue;
        if (kill(pids[i], SIGUSR1) == 0)
            tessd_log("serve: haproxy (pid %d), not the running proxy, told to stop", (int)pids[i]);
        proxy_tell(s, pids[i], now);
    }
}

/* Whether the account uid (group gid) may traverse every directory from / down to path: the
 * proxy connects to the replicas' sockets below it once it runs as haproxy.  false and why
 * (for a person) when a directory on the way is closed to it (a data directory under a 0700
 * one, say). */
static bool reachable(const char *path, uid_t uid, gid_t gid, char *why, size_t len)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (;;) {
        struct stat st;
        if (stat(p[0] ? p : "/", &st) < 0) {
            snprintf(why, len, "%s: %s", p[0] ? p : "/", strerror(errno));
            return false;
        }
        bool ok = (st.st_mode & S_IXOTH) || (st.st_gid == gid && (st.st_mode & S_IXGRP)) ||
                  (st.st_uid == uid && (st.st_mode & S_IXUSR));
        if (!ok) {
            snprintf(why, len,
                     "%s (mode %04o) is closed to the haproxy account, which must reach the "
                     "replicas' sockets in %s: an admin opens it to search (chmod o+x) or moves "
                     "--data-dir",
                     p[0] ? p : "/", (unsigned)(st.st_mode & 07777), path);
            return false;
        }
        char *slash = strrchr(p, '/');
        if (!slash || !p[0])
            return true;
        *slash = '\0';
    }
}

int tessd_serve_init(tessd_t *d, tsl_error_t *err)
{
    char dir[PATH_MAX];
    tessd_pathf(dir, sizeof dir, "%s/serve", d->data_dir);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return tsl_errprintf(err, "%s: %s", dir, strerror(errno));
    struct stat st;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return tsl_errprintf(err, "%s: not a directory of tesseld's own", dir);
    if (chmod(dir, 0700) < 0)
        return tsl_errprintf(err, "%s: %s", dir, strerror(errno));
    d->serve = calloc(1, sizeof *d->serve);
    if (!d->serve)
        return tsl_errprintf(err, "out of memory");
    if (geteuid() == 0) {
        /* Its own account only: nobody is shared with other programs, which could signal or
         * trace the proxy. */
        struct passwd *pw = getpwnam("haproxy");
        uid_t huid = pw ? pw->pw_uid : 0;
        struct group *gr = pw ? getgrnam("haproxy") : NULL;
        if (gr) {
            d->serve->user = "haproxy";
            d->serve->group = "haproxy";
            d->serve->uid = huid;
            d->serve->gid = gr->gr_gid;
            /* The replicas' sockets (docs/serving.md, "How a replica is reached"): root's,
             * traversed by their owners and HAProxy, listed and written by root only. */
            char rdir[PATH_MAX];
            tessd_pathf(rdir, sizeof rdir, "%s/replicas", d->data_dir);
            struct stat rst;
            if ((mkdir(rdir, 0711) < 0 && errno != EEXIST) || lstat(rdir, &rst) < 0 ||
                !S_ISDIR(rst.st_mode) || rst.st_uid != 0 || chmod(rdir, 0711) < 0) {
                tsl_errprintf(err, "%s: not a directory of root's own", rdir);
                free(d->serve);
                d->serve = NULL;
                return -1;
            }
            if (!reachable(rdir, huid, gr->gr_gid, d->serve->unreachable,
                           sizeof d->serve->unreachable))
                tessd_log("serve: %s: inference services are refused", d->serve->unreachable);
        } else {
            d->serve->no_account = true;
            tessd_log("serve: no haproxy account and group (Debian's haproxy package makes "
                      "them): inference services are refused");
        }
    }
    /* A proxy left by the last tesseld (or several: proxy_pids): taken over by the first
     * start (-sf). */
    char pidf[PATH_MAX], buf[32] = "", exe[PATH_MAX], cfg[PATH_MAX];
    path_in(d, "haproxy.pid", pidf, sizeof pidf);
    path_in(d, "haproxy.cfg", cfg, sizeof cfg);
    FILE *f = fopen(pidf, "re");
    if (f) {
        long pid = fgets(buf, sizeof buf, f) ? strtol(buf, NULL, 10) : 0;
        if (pid > 1 && realpath(d->haproxy, exe) && proxy_of_ours(d, pid, exe, cfg))
            d->serve->pid = -(pid_t)pid; /* not our child: handed over at the start */
        fclose(f);
    }
    pid_t left;
    if (!d->serve->pid && proxy_pids(d, &left, 1) == 1)
        d->serve->pid = -left;
    return 0;
}

void tessd_serve_stop(tessd_t *d)
{
    if (!d->serve)
        return;
    /* The proxy stays: the next tesseld takes it over (haproxy.pid). */
    free(d->serve->applied);
    free(d->serve->reps);
    free(d->serve->svcs);
    free(d->serve);
    d->serve = NULL;
}

void tessd_serve_reaped(tessd_t *d, pid_t pid, int status)
{
    if (!d->serve)
        return;
    proxy_untell(d->serve, pid); /* its pid may be another process's from now on */
    if (pid != d->serve->pid)
        return;
    tessd_log("serve: haproxy (pid %d) exited (status %d); started again in %d ms", (int)pid,
              status, TSV_RESPAWN_MS);
    d->serve->pid = 0;
    d->serve->respawn_ms = tessd_mono_ms() + TSV_RESPAWN_MS;
    free(d->serve->applied);
    d->serve->applied = NULL;
}

static rep_t *rep_find(struct tessd_serve *s, int64_t job)
{
    for (size_t i = 0; i < s->nreps; i++)
        if (s->reps[i].job == job)
            return &s->reps[i];
    return NULL;
}

static rep_t *rep_get(struct tessd_serve *s, int64_t job, int64_t service)
{
    rep_t *r = rep_find(s, job);
    if (r)
        return r;
    if (s->nreps == s->capreps) {
        size_t cap = s->capreps ? 2 * s->capreps : 16;
        rep_t *n = realloc(s->reps, cap * sizeof *n);
        if (!n)
            return NULL;
        s->reps = n;
        s->capreps = cap;
    }
    r = &s->reps[s->nreps++];
    memset(r, 0, sizeof *r);
    r->job = job;
    r->service = service;
    return r;
}

static svc_state_t *svc_get(struct tessd_serve *s, int64_t id)
{
    for (size_t i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].id == id)
            return &s->svcs[i];
    if (s->nsvcs == s->capsvcs) {
        size_t cap = s->capsvcs ? 2 * s->capsvcs : 8;
        svc_state_t *n = realloc(s->svcs, cap * sizeof *n);
        if (!n)
            return NULL;
        s->svcs = n;
        s->capsvcs = cap;
    }
    svc_state_t *v = &s->svcs[s->nsvcs++];
    memset(v, 0, sizeof *v);
    v->id = id;
    return v;
}

int tessd_serve_figures(tessd_t *d, int64_t job, tessd_serve_fig_t *out)
{
    memset(out, 0, sizeof *out);
    rep_t *r = d->serve ? rep_find(d->serve, job) : NULL;
    if (!r)
        return -1;
    out->weight = r->weight;
    out->mu = r->meter.mu;
    out->lambda = r->meter.lambda;
    out->latency_ms = r->meter.latency_ms;
    snprintf(out->status, sizeof out->status, "%s", r->status);
    return 0;
}

/* ---- replicas ---------------------------------------------------------------------------- */

/* A port for a new replica: one the kernel has free on 127.0.0.1 now and no service or active
 * replica holds.  0 when none was found. */
static int free_port(tessd_t *d)
{
    for (int tries = 0; tries < 16; tries++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return 0;
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof a;
        int port = 0;
        if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
            getsockname(fd, (struct sockaddr *)&a, &al) == 0)
            port = ntohs(a.sin_port);
        close(fd);
        bool used = true;
        tsl_error_t err;
        if (port && tstore_service_port_used(d->store, port, &used, &err) == 0 && !used)
            return port;
    }
    return 0;
}

const char *tessd_serve_unusable(tessd_t *d)
{
    if (d->serve && d->serve->no_account)
        return "no haproxy account and group on this node (Debian's haproxy package makes "
               "them): an admin installs it";
    if (d->serve && d->serve->unreachable[0])
        return d->serve->unreachable;
    return NULL;
}

int tessd_serve_free_port(tessd_t *d)
{
    return free_port(d);
}

/* The Unix socket of replica job: <data>/replicas/r<job>.sock.  0, or -1 (ENAMETOOLONG: more
 * than a socket's 107 bytes). */
static int replica_sock(const tessd_t *d, int64_t job, char *buf, size_t len)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/replicas/r%lld.sock", d->data_dir, (long long)job);
    if (n < 0 || (size_t)n >= sizeof path || n > TSV_SOCK_MAX - 1 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, (size_t)n + 1);
    return 0;
}

/* Whether replicas run in a network namespace of their own behind a socket: tesseld as root
 * with the haproxy account (the only case where services run at all as root). */
static bool replicas_private(const tessd_t *d)
{
    return d->serve && d->serve->user && geteuid() == 0;
}

/* A replica's socket removed once its job is gone: a shim killed (SIGKILL) could not remove it
 * itself.  Nothing listens on it then; only the name is left. */
static void drop_sock(const tessd_t *d, int64_t job)
{
    char path[TSV_SOCK_MAX];
    if (replica_sock(d, job, path, sizeof path) == 0 && tagent_fwd_unlink(path) < 0 &&
        errno != ENOENT)
        tessd_log("serve: %s: %s", path, strerror(errno));
}

/* At the first tick: the sockets in <data>/replicas of jobs that do not run (left by shims
 * killed while no tesseld ran, or by the last tesseld's replicas that ended meanwhile). */
static void sweep_sockets(tessd_t *d)
{
    char rdir[PATH_MAX];
    tessd_pathf(rdir, sizeof rdir, "%s/replicas", d->data_dir);
    DIR *dir = opendir(rdir);
    if (!dir)
        return;
    struct dirent *e;
    while ((e = readdir(dir))) {
        long long job;
        char tail[8];
        if (sscanf(e->d_name, "r%lld.%7s", &job, tail) != 2 || strcmp(tail, "sock") != 0 ||
            job <= 0)
            continue;
        tstore_job_t j;
        tsl_error_t err;
        int got = tstore_job_get(d->store, job, &j, &err);
        bool runs = got == 0 && j.state == TSTORE_RUNNING;
        if (got == 0)
            tstore_job_clear(&j);
        if (!runs)
            drop_sock(d, job);
    }
    closedir(dir);
}

int tessd_serve_replica_net(tessd_t *d, int64_t job, int *port, char *sock, size_t len, gid_t *gid,
                            tsl_error_t *err)
{
    int rc = tstore_replica_port(d->store, job, port, err);
    if (rc <= 0)
        return rc;
    if (!replicas_private(d))
        return 0;
    if (replica_sock(d, job, sock, len) < 0)
        return tsl_errprintf(err,
                             "the replica's socket %s/replicas/r%lld.sock is longer than a Unix "
                             "socket's path may be (107 bytes): a shorter --data-dir",
                             d->data_dir, (long long)job);
    *gid = d->serve->gid;
    return 1;
}

/* Submit one replica of sv (its job and its row, in one transaction), and hand it over to the
 * scheduler.  0, or -1 with err. */
static int submit_replica(tessd_t *d, const tstore_service_t *sv, tsl_error_t *err)
{
    json_t *spec = json_loads(sv->spec_json, 0, NULL);
    if (!spec)
        return tsl_errprintf(err, "service %s: its stored spec is not JSON", sv->name);
    int port = free_port(d);
    char *argv_s = json_dumps(json_object_get(spec, "argv"), JSON_COMPACT);
    json_t *env = json_deep_copy(json_object_get(spec, "env"));
    if (!json_is_object(env)) {
        json_decref(env);
        env = json_object();
    }
    char pbuf[16];
    snprintf(pbuf, sizeof pbuf, "%d", port);
    json_object_set_new(env, "PORT", json_string(pbuf));
    json_object_set_new(env, "TESSEL_SERVICE", json_string(sv->name));
    char *env_s = json_dumps(env, JSON_COMPACT);
    json_decref(env);
    int rc = -1;
    if (!port) {
        tsl_errprintf(err, "service %s: no free port on 127.0.0.1", sv->name);
        goto out;
    }
    if (!argv_s || !env_s) {
        tsl_errprintf(err, "out of memory");
        goto out;
    }
    char name[TSTORE_NAME_MAX + 16];
    snprintf(name, sizeof name, "svc-%s", sv->name);
    tstore_job_t j = {0};
    j.user = (char *)sv->owner;
    j.name = name;
    j.argv_json = argv_s;
    j.env_json = env_s;
    j.queue = (char *)(json_string_value(json_object_get(spec, "queue"))
                           ? json_string_value(json_object_get(spec, "queue"))
                           : "default");
    j.klass = TSTORE_CLASS_INFERENCE;
    j.gpus = (int)json_integer_value(json_object_get(spec, "gpus"));
    j.gpu_milli = (int)json_integer_value(json_object_get(spec, "gpu_milli"));
    j.gpu_count = (int)json_integer_value(json_object_get(spec, "gpu_count"));
    j.gpu_mem = (uint64_t)json_integer_value(json_object_get(spec, "gpu_mem"));
    j.cpu_milli = (int)json_integer_value(json_object_get(spec, "cpu_milli"));
    j.mem = (uint64_t)json_integer_value(json_object_get(spec, "mem"));
    j.simulated = j.gpu_count > 0 && d->simulated;
    j.submitted_ms = tessd_now_ms();
    tjm_t m;
    tessd_jobmodel(d, &m);
    char why[96];
    snprintf(why, sizeof why, "replica of service %s", sv->name);
    if (tstore_begin(d->store, err) < 0)
        goto out;
    if (tjm_submit(&m, &j, "tesseld", why, err) < 0 ||
        tstore_replica_add(d->store, j.id, sv->id, port, err) < 0 ||
        tstore_commit(d->store, err) < 0) {
        tstore_rollback(d->store);
        goto out;
    }
    if (tessd_inbox_submit(d, &j) < 0)
        d->rebuild = true;
    d->sched_dirty = true;
    tessd_log("service %s: replica job %lld submitted (port %d)", sv->name, (long long)j.id, port);
    rc = 0;
out:
    free(argv_s);
    free(env_s);
    json_decref(spec);
    return rc;
}

static int stop_replica(tessd_t *d, const tstore_service_t *sv, int64_t job, tstore_state_t state,
                        tsl_error_t *err)
{
    tessd_log("service %s: stopping replica job %lld", sv->name, (long long)job);
    if (state == TSTORE_PENDING) {
        if (tessd_job_apply(d, job, TJM_EV_CANCEL, NULL, "tesseld", "service scaled down", err) < 0)
            return -1;
        tessd_inbox_remove(d, job);
        return 0;
    }
    return tessd_cancel_running(d, job, "tesseld", err);
}

int tessd_serve_stop_replicas(tessd_t *d, const tstore_service_t *sv, tsl_error_t *err)
{
    tstore_service_t copy = *sv;
    copy.replicas = 0;
    return tessd_serve_reconcile(d, &copy, err);
}

typedef struct {
    tstore_replica_t r[TSV_MAX_REPLICAS * 2];
    size_t n;
} replist_t;

static int rep_collect(const tstore_replica_t *r, void *arg)
{
    replist_t *l = arg;
    if (l->n == sizeof l->r / sizeof l->r[0])
        return 1;
    l->r[l->n] = *r;
    l->r[l->n].placement_json = NULL; /* not kept past the call */
    l->n++;
    return 0;
}

/* Whether the owner of sv may have replicas submitted now: their account exists (*admin:
 * their role) and the service's queue, with its ancestors, admits them (the queues' allow
 * lists can change after the service was made).  1, or 0 with the reason in held, or -1 with
 * err. */
static int owner_may_submit(tessd_t *d, const tstore_service_t *sv, bool *admin, char *held,
                            size_t len, tsl_error_t *err)
{
    tstore_user_t u;
    if (tstore_user_get(d->store, sv->owner, &u, err) < 0) {
        if (errno != ENOENT)
            return -1;
        snprintf(held, len, "its owner '%s' is no longer a user", sv->owner);
        return 0;
    }
    *admin = strcmp(u.role, "admin") == 0;
    json_t *spec = json_loads(sv->spec_json, 0, NULL);
    const char *qn = json_string_value(json_object_get(spec, "queue"));
    char name[TSTORE_NAME_MAX + 1];
    snprintf(name, sizeof name, "%s", qn ? qn : "default");
    json_decref(spec);
    char **groups = NULL;
    size_t ngroups = 0;
    bool loaded = false;
    int rc = 1;
    for (int depth = 0; rc == 1 && depth <= TSCHED_MAX_QUEUE_DEPTH; depth++) {
        tstore_queue_t q;
        if (tstore_queue_get(d->store, name, &q, err) < 0) {
            if (errno != ENOENT) {
                rc = -1;
                break;
            }
            snprintf(held, len, "its queue '%s' no longer exists", name);
            rc = 0;
            break;
        }
        if (!tessd_acl_open(&q)) {
            if (!loaded && q.allow_groups[0]) {
                if (tessd_user_groups(sv->owner, &groups, &ngroups) < 0) {
                    tsl_errprintf(err, "the groups of '%s': %s", sv->owner, strerror(errno));
                    rc = -1;
                    break;
                }
                loaded = true;
            }
            if (!tessd_acl_allows(&q, sv->owner, *admin, (const char *const *)groups, ngroups)) {
                snprintf(held, len, "queue '%s' no longer admits its owner '%s'", q.name,
                         sv->owner);
                rc = 0;
            }
        }
        if (!q.parent[0])
            break;
        snprintf(name, sizeof name, "%s", q.parent);
    }
    tessd_user_groups_free(groups, ngroups);
    return rc;
}

const char *tessd_serve_held(tessd_t *d, int64_t service)
{
    if (!d->serve)
        return NULL;
    for (size_t i = 0; i < d->serve->nsvcs; i++)
        if (d->serve->svcs[i].id == service)
            return d->serve->svcs[i].held[0] ? d->serve->svcs[i].held : NULL;
    return NULL;
}

int tessd_serve_reconcile(tessd_t *d, const tstore_service_t *sv, tsl_error_t *err)
{
    replist_t l = {.n = 0};
    if (tstore_replica_list(d->store, sv->id, true, rep_collect, &l, err) < 0)
        return -1;
    int live = 0;
    for (size_t i = 0; i < l.n; i++)
        if (!l.r[i].stopping)
            live++;
    /* More than wanted: the newest go first (pending ones before running ones). */
    for (int pass = 0; pass < 2 && live > sv->replicas; pass++) {
        for (size_t i = l.n; i-- > 0 && live > sv->replicas;) {
            if (l.r[i].stopping || (pass == 0) != (l.r[i].state == TSTORE_PENDING))
                continue;
            if (stop_replica(d, sv, l.r[i].job, l.r[i].state, err) < 0)
                return -1;
            l.r[i].stopping = true;
            live--;
        }
    }
    struct tessd_serve *s = d->serve;
    svc_state_t *st = s ? svc_get(s, sv->id) : NULL;
    if (live >= sv->replicas) {
        if (st)
            st->held[0] = 0; /* nothing lacks: nothing held */
        return 0;
    }
    int64_t now = tessd_mono_ms();
    /* A replacement (the service ran its replicas already) waits out its back-off. */
    bool replacing = st && st->started;
    if (replacing && now < st->next_ok_ms)
        return 0;
    int want = sv->replicas - live;
    /* Its owner still an account its queue admits, and their submission bucket not empty:
     * else nothing is submitted and the service says why (held). */
    char held[TSV_HELD_MAX] = "";
    bool admin = false;
    int ok = owner_may_submit(d, sv, &admin, held, sizeof held, err);
    if (ok < 0)
        return -1;
    int done = 0;
    thttp_limiter_t *bucket = admin ? d->admin_submit_limit : d->submit_limit;
    for (; ok && done < want; done++) {
        int64_t wait = bucket ? thttp_limiter_take(bucket, sv->owner, now) : 0;
        if (wait != 0) {
            snprintf(held, sizeof held,
                     "its owner's submission rate (--submit-rate) is spent: %d more replica(s) "
                     "as it refills",
                     want - done);
            break;
        }
        if (submit_replica(d, sv, err) < 0)
            return -1;
    }
    if (st) {
        if (strcmp(st->held, held) != 0 && held[0])
            tessd_log("service %s: no replica submitted: %s", sv->name, held);
        snprintf(st->held, sizeof st->held, "%s", held);
    }
    if (!done)
        return 0;
    if (st) {
        if (replacing) {
            st->streak = now - st->last_ms < TSV_BACKOFF_WINDOW_MS ? st->streak + 1 : 0;
            int64_t wait = st->streak ? 1000ll << (st->streak > 6 ? 6 : st->streak - 1) : 0;
            st->next_ok_ms = now + (wait > TSV_BACKOFF_MAX_MS ? TSV_BACKOFF_MAX_MS : wait);
            st->last_ms = now;
        }
        st->started = true;
    }
    return 0;
}

/* ---- the proxy --------------------------------------------------------------------------- */

/* Write path atomically (a temporary file renamed over it), mode 0600.  0 or -1. */
static int write_file(const char *path, const char *text)
{
    char tmp[PATH_MAX];
    if (tessd_pathf(tmp, sizeof tmp, "%s.tmp", path) < 0)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Whether path holds text exactly (a file unchanged is not written again). */
static bool same_file(const char *path, const char *text)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t len = strlen(text), off = 0;
    char *buf = malloc(len + 1);
    bool same = false;
    while (buf) {
        ssize_t r = read(fd, buf + off, len + 1 - off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            same = off == len && memcmp(buf, text, len) == 0;
            break;
        }
        off += (size_t)r;
        if (off > len)
            break; /* longer */
    }
    free(buf);
    close(fd);
    return same;
}

typedef struct {
    char *buf;
    size_t len;
    FILE *f;
} text_t;

static int add_hash(const unsigned char hash[32], void *arg)
{
    text_t *t = arg;
    for (int i = 0; i < 32; i++)
        fprintf(t->f, "%02x", hash[i]);
    fputc('\n', t->f);
    return 0;
}

typedef struct {
    tessd_t *d;
    tsv_cfg_service_t svc[256];
    tsv_cfg_replica_t *reps; /* TSV_MAX_REPLICAS per service */
    char names[256][TSTORE_NAME_MAX + 1], health[256][TSTORE_HEALTH_MAX], tokf[256][PATH_MAX];
    size_t n;
    text_t tokens; /* every token file's text, for the comparison */
    int failed;
} plan_t;

/* The uid of process pid (its real uid, /proc/PID/status), or -1. */
static long proc_uid(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "re");
    long uid = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Uid:", 4) == 0) {
            uid = strtol(line + 4, NULL, 10);
            break;
        }
    fclose(f);
    return uid;
}

/* Whether a TCP socket of uid listens on 127.0.0.1:port (or on every address) in the network
 * namespace of process pid (the replica's own, or the host's for a replica on the host's
 * network): the kernel's table of sockets (/proc/PID/net/tcp: local address and port in hex,
 * state 0A = LISTEN, the owner's uid).  A replica gets traffic only once such a socket is
 * there: a program of another account that took the replica's port first (on the host's
 * network) never receives the service's requests. */
static bool listens(int pid, int port, long uid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/net/tcp", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    char line[512];
    bool found = false;
    if (!fgets(line, sizeof line, f)) { /* the header */
        fclose(f);
        return false;
    }
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long addr;
        unsigned lport, st;
        long owner;
        if (sscanf(line, " %*u: %8lx:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %ld", &addr, &lport, &st,
                   &owner) != 4)
            continue;
        /* 127.0.0.1 as the kernel prints it (network byte order read as a host integer). */
        bool local = addr == 0 || addr == 0x0100007FUL;
        found = st == 0x0A && lport == (unsigned)port && local && owner == uid;
    }
    fclose(f);
    return found;
}

typedef struct {
    tessd_t *d;
    tsv_cfg_service_t *s;
} rep_arg_t;

/* Whether process pid is in tesseld's own network namespace. */
static bool same_netns(int pid)
{
    char path[64], mine[64], theirs[64];
    snprintf(path, sizeof path, "/proc/%d/ns/net", pid);
    ssize_t a = readlink("/proc/self/ns/net", mine, sizeof mine - 1);
    ssize_t b = readlink(path, theirs, sizeof theirs - 1);
    if (a <= 0 || b <= 0)
        return false;
    mine[a] = theirs[b] = '\0';
    return strcmp(mine, theirs) == 0;
}

static int rep_running(const tstore_replica_t *r, void *arg)
{
    rep_arg_t *ra = arg;
    tsv_cfg_service_t *s = ra->s;
    if (r->state != TSTORE_RUNNING || r->stopping || s->nreplicas >= TSV_MAX_REPLICAS)
        return 0;
    long uid = r->job_pid > 0 ? proc_uid(r->job_pid) : -1;
    if (uid < 0 || !listens(r->job_pid, r->port, uid))
        return 0; /* not listening yet (or someone else is) */
    tsv_cfg_replica_t *c = (tsv_cfg_replica_t *)&s->replicas[s->nreplicas];
    c->job = r->job;
    c->port = r->port;
    c->weight = TSV_WEIGHT_MAX;
    c->sock[0] = '\0';
    /* Behind its socket (its port is in its own network namespace), or on the host's: a
     * replica started by a tesseld before this one's version, found running at a restart, is
     * still on the host's network (its namespace is tesseld's), and stays reached there. */
    if (replicas_private(ra->d) && !same_netns(r->job_pid) &&
        replica_sock(ra->d, r->job, c->sock, sizeof c->sock) < 0)
        return 0;
    s->nreplicas++;
    return 0;
}

static int plan_service(const tstore_service_t *sv, void *arg)
{
    plan_t *p = arg;
    tessd_t *d = p->d;
    tsl_error_t err;
    if (tessd_serve_reconcile(d, sv, &err) < 0) {
        if (!d->serve->failing)
            tessd_log("service %s: %s (tried again)", sv->name, err.text);
        p->failed++;
    }
    if (p->n == sizeof p->svc / sizeof p->svc[0])
        return 0;
    size_t i = p->n;
    tsv_cfg_service_t *s = &p->svc[i];
    memset(s, 0, sizeof *s);
    snprintf(p->names[i], sizeof p->names[i], "%s", sv->name);
    snprintf(p->health[i], sizeof p->health[i], "%s", sv->health);
    char base[64];
    snprintf(base, sizeof base, "svc-%lld.tokens", (long long)sv->id);
    path_in(d, base, p->tokf[i], sizeof p->tokf[i]);
    s->name = p->names[i];
    s->health = p->health[i];
    s->port = sv->port;
    s->concurrency = sv->concurrency;
    s->tokens_file = p->tokf[i];
    s->replicas = p->reps + i * TSV_MAX_REPLICAS;
    rep_arg_t ra = {.d = d, .s = s};
    if (tstore_replica_list(d->store, sv->id, true, rep_running, &ra, &err) < 0) {
        p->failed++;
        return 0;
    }
    for (size_t k = 0; k < s->nreplicas; k++) {
        rep_t *r = rep_get(d->serve, s->replicas[k].job, sv->id);
        if (r) {
            r->seen = true;
            r->concurrency = sv->concurrency;
            r->even = sv->split_even;
            if (r->weight)
                ((tsv_cfg_replica_t *)s->replicas)[k].weight = r->weight;
        }
    }
    svc_state_t *st = svc_get(d->serve, sv->id);
    if (st)
        st->seen = true;
    /* Its callers: the owner's API tokens and the service's own, as SHA-256 in hex. */
    text_t t = {0};
    t.f = open_memstream(&t.buf, &t.len);
    if (!t.f) {
        p->failed++;
        return 0;
    }
    int rc = tstore_service_hashes(d->store, sv->id, sv->owner, add_hash, &t, &err);
    fclose(t.f);
    if (rc == 0 && (same_file(p->tokf[i], t.buf) || write_file(p->tokf[i], t.buf) == 0)) {
        fprintf(p->tokens.f, "%s:\n%s", p->tokf[i], t.buf);
        p->n++;
    } else {
        p->failed++;
    }
    free(t.buf);
    return 0;
}

static void proxy_start(tessd_t *d, const char *cfg)
{
    struct tessd_serve *s = d->serve;
    char pidf[PATH_MAX], logf[PATH_MAX];
    path_in(d, "haproxy.pid", pidf, sizeof pidf);
    path_in(d, "haproxy.log", logf, sizeof logf);
    struct stat lst;
    if (stat(logf, &lst) == 0 && lst.st_size > TSV_LOG_MAX) {
        char old1[PATH_MAX];
        path_in(d, "haproxy.log.1", old1, sizeof old1);
        if (rename(logf, old1) < 0)
            tessd_log("serve: %s: %s", logf, strerror(errno));
    }
    /* Every proxy of ours that runs and was not told already, the one in s->pid among them,
     * ends once the new one listens (-sf: a soft stop, bounded by hard-stop-after). */
    pid_t olds[PROXY_OLD_MAX];
    size_t nold = proxy_pids(d, olds, PROXY_OLD_MAX);
    char oldv[PROXY_OLD_MAX][24], list[PROXY_OLD_MAX * 24] = "";
    char *argv[5 + PROXY_OLD_MAX + 1] = {(char *)"haproxy", (char *)"-f", (char *)cfg,
                                         (char *)"-db"};
    size_t argc = 4;
    if (nold)
        argv[argc++] = (char *)"-sf";
    for (size_t i = 0; i < nold; i++) {
        snprintf(oldv[i], sizeof oldv[i], "%d", (int)olds[i]);
        argv[argc++] = oldv[i];
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? " " : "", oldv[i]);
    }
    argv[argc] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, logf, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, d->haproxy, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        tessd_log("serve: cannot start %s: %s", d->haproxy, strerror(rc));
        s->respawn_ms = tessd_mono_ms() + TSV_RESPAWN_MS;
        return;
    }
    s->pid = pid;
    int64_t now = tessd_mono_ms();
    s->started_ms = now;
    proxy_untell(s, pid); /* a pid an ended proxy had, reused for this one */
    for (size_t i = 0; i < nold; i++)
        proxy_tell(s, olds[i], now);
    char buf[24];
    snprintf(buf, sizeof buf, "%d\n", (int)pid);
    if (write_file(pidf, buf) < 0)
        tessd_log("serve: %s: %s", pidf, strerror(errno));
    tessd_log("serve: haproxy started (pid %d%s%s)", (int)pid, nold ? ", taking over from " : "",
              list);
}

static void proxy_stop(tessd_t *d)
{
    struct tessd_serve *s = d->serve;
    /* Soft stops (the requests under way end): the proxy tesseld started last and any other of
     * ours still running that was not told already (proxy_pids: a proxy taken over is
     * signalled only while it is still ours). */
    pid_t pids[PROXY_OLD_MAX];
    size_t n = proxy_pids(d, pids, PROXY_OLD_MAX);
    int64_t now = tessd_mono_ms();
    for (size_t i = 0; i < n; i++) {
        kill(pids[i], SIGUSR1);
        proxy_tell(s, pids[i], now);
    }
    if (n)
        tessd_log("serve: no service left: haproxy (pid %d) stopped%s", (int)pids[0],
                  n > 1 ? ", and the earlier ones still running" : "");
    s->pid = 0;
    free(s->applied);
    s->applied = NULL;
    char pidf[PATH_MAX];
    path_in(d, "haproxy.pid", pidf, sizeof pidf);
    unlink(pidf);
}

/* ---- measurement ------------------------------------------------------------------------- */

/* Send cmd to the runtime socket and read the whole answer (malloc'd, NUL-terminated) into
 * *out when out is not NULL.  0 or -1. */
static int sock_cmd(tessd_t *d, const char *cmd, char **out)
{
    char path[PATH_MAX];
    path_in(d, "haproxy.sock", path, sizeof path);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return -1;
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = 0, .tv_usec = TSV_SOCK_TIMEOUT_MS * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd)) {
        close(fd);
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 16384;
            if (cap > (16u << 20)) /* an answer this large is not one of ours */
                break;
            char *n = realloc(buf, cap);
            if (!n)
                break;
            buf = n;
        }
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    if (!buf)
        return out ? -1 : 0;
    buf[len] = 0;
    if (out)
        *out = buf;
    else
        free(buf);
    return 0;
}

typedef struct {
    tessd_t *d;
    int64_t now;
} measure_t;

static int on_stat(const tsv_stat_t *st, void *arg)
{
    measure_t *m = arg;
    if (st->server[0] != 'r')
        return 0;
    rep_t *r = rep_find(m->d->serve, strtoll(st->server + 1, NULL, 10));
    if (!r)
        return 0;
    tsv_meter_update(&r->meter, st->req_tot, st->rtime_ms, st->scur, r->concurrency, m->now);
    snprintf(r->status, sizeof r->status, "%s", st->status ? st->status : "");
    if (strncmp(r->status, "UP", 2) == 0) {
        r->was_up = true;
        r->down_since = 0;
    } else if (strncmp(r->status, "DOWN", 4) == 0 && r->was_up && !r->down_since) {
        r->down_since = m->now;
    }
    return 0;
}

/* Read the proxy's figures, update the meters, and compute each service's weights (set by
 * the caller where they changed). */
static void measure(tessd_t *d)
{
    struct tessd_serve *s = d->serve;
    char *text = NULL;
    if (sock_cmd(d, "show stat json\n", &text) < 0)
        return;
    measure_t m = {d, tessd_mono_ms()};
    if (tsv_stat_parse(text, on_stat, &m) < 0)
        tessd_log("serve: haproxy's statistics are not the JSON expected");
    free(text);
    for (size_t i = 0; i < s->nreps; i++) {
        int64_t svc = s->reps[i].service;
        bool first = true;
        for (size_t k = 0; k < i && first; k++)
            first = s->reps[k].service != svc;
        if (!first)
            continue;
        double mu[TSV_MAX_REPLICAS];
        int w[TSV_MAX_REPLICAS];
        size_t idx[TSV_MAX_REPLICAS], n = 0;
        for (size_t k = i; k < s->nreps && n < TSV_MAX_REPLICAS; k++)
            if (s->reps[k].service == svc) {
                mu[n] = s->reps[k].meter.mu;
                idx[n++] = k;
            }
        tsv_weights(mu, n, w);
        for (size_t k = 0; k < n; k++)
            s->reps[idx[k]].weight = s->reps[idx[k]].even ? TSV_WEIGHT_MAX : w[k];
    }
}

/* ---- the tick ---------------------------------------------------------------------------- */

void tessd_serve_tick(tessd_t *d)
{
    struct tessd_serve *s = d->serve;
    if (!s)
        return;
    int64_t now = tessd_mono_ms();
    if (now < s->next_ms)
        return;
    s->next_ms = now + TSV_SUPERVISE_MS;
    proxy_sweep(d, now);
    plan_t *p = calloc(1, sizeof *p);
    tsv_cfg_replica_t *reps = p ? calloc(256 * TSV_MAX_REPLICAS, sizeof *reps) : NULL;
    if (!reps) {
        free(p);
        return;
    }
    p->d = d;
    p->reps = reps;
    p->tokens.f = open_memstream(&p->tokens.buf, &p->tokens.len);
    for (size_t i = 0; i < s->nreps; i++)
        s->reps[i].seen = false;
    for (size_t i = 0; i < s->nsvcs; i++)
        s->svcs[i].seen = false;
    tsl_error_t err;
    int rc = p->tokens.f ? tstore_service_list(d->store, plan_service, p, &err) : -1;
    if (p->tokens.f)
        fclose(p->tokens.f);
    if (rc < 0 || p->failed) {
        if (!s->failing && rc < 0)
            tessd_log("serve: services: %s (tried again)", err.text);
        s->failing = true;
        goto out;
    }
    s->failing = false;
    /* Forget the replicas and services that are gone (and the sockets of those replicas). */
    if (!s->swept && replicas_private(d)) {
        sweep_sockets(d);
        s->swept = true;
    }
    size_t k = 0;
    for (size_t i = 0; i < s->nreps; i++) {
        if (s->reps[i].seen)
            s->reps[k++] = s->reps[i];
        else if (replicas_private(d))
            drop_sock(d, s->reps[i].job);
    }
    s->nreps = k;
    k = 0;
    for (size_t i = 0; i < s->nsvcs; i++)
        if (s->svcs[i].seen)
            s->svcs[k++] = s->svcs[i];
    s->nsvcs = k;
    if (p->n == 0) {
        if (s->pid)
            proxy_stop(d);
        goto out;
    }
    char sock[PATH_MAX], cfgp[PATH_MAX];
    path_in(d, "haproxy.sock", sock, sizeof sock);
    path_in(d, "haproxy.cfg", cfgp, sizeof cfgp);
    char *bare = tsv_haproxy_cfg(sock, p->svc, p->n, false, s->user, s->group);
    char *cmp = NULL;
    if (bare && asprintf(&cmp, "%s%s", bare, p->tokens.buf ? p->tokens.buf : "") < 0)
        cmp = NULL;
    free(bare);
    if (!cmp)
        goto out;
    bool running = s->pid != 0;
    /* A running proxy is reloaded at most every TSV_RELOAD_MIN_MS (the changes coalesced);
     * none running: started at once. */
    if ((!running || !s->applied || strcmp(cmp, s->applied) != 0) && now >= s->respawn_ms &&
        (!running || now >= s->reload_ok_ms) && !s->no_account) {
        char *full = tsv_haproxy_cfg(sock, p->svc, p->n, true, s->user, s->group);
        if (full && write_file(cfgp, full) == 0) {
            proxy_start(d, cfgp);
            s->reload_ok_ms = now + TSV_RELOAD_MIN_MS;
            if (s->pid > 0) {
                for (size_t i = 0; i < s->nreps; i++)
                    s->reps[i].set = s->reps[i].weight;
                free(s->applied);
                s->applied = cmp;
                cmp = NULL;
            }
        } else {
            tessd_log("serve: cannot write %s", cfgp);
        }
        free(full);
    }
    free(cmp);
    if (s->pid > 0 && now >= s->next_measure_ms) {
        s->next_measure_ms = now + TSV_MEASURE_MS;
        measure(d);
        /* Replicas that fail their health check too long: stopped (the supervision replaces
         * them). */
        for (size_t i = 0; i < s->nreps; i++) {
            rep_t *rp = &s->reps[i];
            if (!rp->down_since || rp->restarted || now - rp->down_since < TSV_DOWN_RESTART_MS)
                continue;
            rp->restarted = true;
            tessd_log("service replica job %lld: failed its health check for %d s: stopped, to "
                      "be replaced",
                      (long long)rp->job, TSV_DOWN_RESTART_MS / 1000);
            if (tessd_cancel_running(d, rp->job, "tesseld", &err) < 0)
                tessd_log("job %lld: %s", (long long)rp->job, err.text);
        }
        /* The weights that changed: set in their backends. */
        for (size_t i = 0; i < p->n; i++) {
            const tsv_cfg_service_t *sv = &p->svc[i];
            for (size_t r = 0; r < sv->nreplicas; r++) {
                rep_t *rp = rep_find(s, sv->replicas[r].job);
                if (!rp || !rp->weight || rp->weight == rp->set)
                    continue;
                char cmd[160];
                snprintf(cmd, sizeof cmd, "set weight be_%s/r%lld %d\n", sv->name,
                         (long long)rp->job, rp->weight);
                if (sock_cmd(d, cmd, NULL) == 0)
                    rp->set = rp->weight;
            }
        }
    }
out:
    free(p->tokens.buf);
    free(reps);
    free(p);
}

pid_t tessd_serve_proxy_pid(const tessd_t *d)
{
    if (!d->serve)
        return 0;
    return d->serve->pid < 0 ? -d->serve->pid : d->serve->pid;
}
