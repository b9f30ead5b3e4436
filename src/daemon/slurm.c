/* slurm.c - tesseld --slurm (docs/slurm-backend.md): the Slurm commands run as the job's owner
 * (sbatch, scancel) or as tesseld (squeue; scontrol suspend/resume, an operator's), the users'
 * log directories, the poll that records what Slurm says of the jobs through the job model, and
 * the in-memory view of the jobs submitted to Slurm directly that the same poll refreshes.  The
 * pure parts (arguments, script, squeue's JSON, the mapping of states) are slurmjob.c's.
 *
 * Processes: a command is a child forked here and waited for here (waitpid on its pid); in
 * --slurm mode the tick that reaps with waitpid(-1) does not run (no shim), so no other thread
 * takes our child.  The big lock is never held while a command runs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/pwcache.h"
#include "daemon/slurmjob.h"
#include "daemon/slurmsub.h"
#include "daemon/spawnas.h"
#include "libutil/utf8.h"

/* Most bytes kept of a command's standard output and of its error output.  squeue --json
 * prints about 3.1 KiB per job (Slurm 22.05.8, bench/slurm/poll.sh 2026-11-27: 1,548,177
 * bytes for 500 jobs) and lists every job slurmctld holds (poll_jobs): 64 MiB holds ~21,000
 * jobs; a larger answer fails the poll (logged), it never takes jobs for gone. */
#define SLURM_OUT_MAX (64u << 20)
#define SLURM_ERR_MAX (16u << 10)

typedef struct {
    char *out; /* standard output (NUL-terminated), malloc'd */
    size_t outlen;
    char err[SLURM_ERR_MAX]; /* error output, NUL-terminated */
    int status;              /* wait status */
    bool timed_out;
} cmd_t;

static int grow_read(int fd, char **buf, size_t *len, size_t max)
{
    char tmp[16384];
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n <= 0)
        return n < 0 && (errno == EINTR || errno == EAGAIN) ? 1 : 0;
    size_t keep = *len + (size_t)n > max ? max - *len : (size_t)n;
    if (keep) {
        char *nb = realloc(*buf, *len + keep + 1);
        if (!nb)
            return 0;
        memcpy(nb + *len, tmp, keep);
        *len += keep;
        nb[*len] = '\0';
        *buf = nb;
    }
    return 1;
}

/* Run argv (argv[0] an absolute path) as pw (NULL: as tesseld itself) with a clean
 * environment (tessd_spawn_as), input on its standard input, within slurm-timeout, its start
 * included.  0 with c filled (c->out the caller's to free; c->timed_out also when it was not
 * started in time, killed before its exec), or -1 with errno and a line in why (could not
 * start it). */
static int run_cmd(tessd_t *d, const tessd_pw_t *pw, char *const argv[], const char *input,
                   cmd_t *c, char *why, size_t wlen)
{
    memset(c, 0, sizeof *c);
    int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(er, O_CLOEXEC) < 0) {
        int saved = errno;
        for (int i = 0; i < 2; i++) {
            if (in[i] >= 0)
                close(in[i]);
            if (out[i] >= 0)
                close(out[i]);
            if (er[i] >= 0)
                close(er[i]);
        }
        snprintf(why, wlen, "pipe: %s", strerror(saved));
        errno = saved;
        return -1;
    }
    /* One deadline for the start and the run: a child stopped before its exec (by its
     * account, between its setuid and its execve) is killed at it (tessd_spawn_as). */
    int64_t deadline = tessd_mono_ms() + (int64_t)d->slurm_timeout_s * 1000;
    int fds[3] = {in[0], out[1], er[1]};
    pid_t pid;
    int rc = tessd_spawn_as(d, pw, argv, fds, deadline, &pid, why, wlen);
    int saved = errno;
    close(in[0]);
    close(out[1]);
    close(er[1]);
    if (rc < 0) {
        close(in[1]), close(out[0]), close(er[0]);
        if (saved == ETIMEDOUT) {
            /* As a command that did not answer in time: the callers' 503. */
            c->timed_out = true;
            snprintf(c->err, sizeof c->err, "%s", why);
            c->out = strdup("");
            if (c->out)
                return 0;
            saved = ENOMEM;
        }
        errno = saved;
        return -1;
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    size_t inlen = input ? strlen(input) : 0, inoff = 0;
    if (!inlen) {
        close(in[1]);
        in[1] = -1;
    }
    size_t errlen = 0;
    char *errbuf = NULL;
    bool out_open = true, err_open = true;
    while (out_open || err_open || in[1] >= 0) {
        struct pollfd p[3] = {{out_open ? out[0] : -1, POLLIN, 0},
                              {err_open ? er[0] : -1, POLLIN, 0},
                              {in[1], POLLOUT, 0}};
        int64_t left = deadline - tessd_mono_ms();
        if (left <= 0) {
            c->timed_out = true;
            break;
        }
        int n = poll(p, 3, (int)left);
        if (n < 0 && errno != EINTR)
            break;
        if (n <= 0)
            continue;
        if (p[0].revents && !grow_read(out[0], &c->out, &c->outlen, SLURM_OUT_MAX))
            out_open = false;
        if (p[1].revents && !grow_read(er[0], &errbuf, &errlen, sizeof c->err - 1))
            err_open = false;
        if (p[2].revents) {
            ssize_t w = (p[2].revents & POLLOUT) ? write(in[1], input + inoff, inlen - inoff) : -1;
            if (w > 0)
                inoff += (size_t)w;
            if (w < 0 && errno != EAGAIN && errno != EINTR)
                inoff = inlen; /* the command closed its input: no more to give */
            if (inoff >= inlen) {
                close(in[1]);
                in[1] = -1;
            }
        }
    }
    if (c->timed_out)
        kill(pid, SIGKILL);
    if (in[1] >= 0)
        close(in[1]);
    close(out[0]);
    close(er[0]);
    while (waitpid(pid, &c->status, 0) < 0 && errno == EINTR) {
    }
    snprintf(c->err, sizeof c->err, "%s", errbuf ? errbuf : "");
    free(errbuf);
    if (!c->out) {
        c->out = strdup("");
        c->outlen = 0;
    }
    return 0;
}

static void cmd_path(const tessd_t *d, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", d->slurm_bin, name);
}

/* The account of a Tessel user for a Slurm command: it must exist and not be root.  A tesseld
 * that is not root (personal mode) has one account, its own: every job is its user's. */
static int slurm_account(const char *user, tessd_pw_t *pw, char *why, size_t len)
{
    if (geteuid() != 0) {
        if (tessd_getpwuid(geteuid(), pw) != 1) {
            snprintf(why, len, "tesseld's own account (uid %u) has no passwd entry",
                     (unsigned)geteuid());
            return -1;
        }
        return 0;
    }
    if (tessd_getpwnam(user, pw) != 1) {
        snprintf(why, len, "user '%s' has no Unix account: a Slurm job runs as its owner's account",
                 user);
        return -1;
    }
    if (pw->uid == 0) {
        snprintf(why, len, "user '%s' is root's account: tesseld submits no Slurm job as root",
                 user);
        return -1;
    }
    return 0;
}

/* <out>/<user> (user: the Tessel user, as tessd_slurm_log_path names it), the user's log
 * directory: the account pw's, 0700, in a directory only root writes (made here, 0711).  0,
 * or -1 with why. */
static int user_dir(tessd_t *d, const char *user, const tessd_pw_t *pw, char *dir, size_t len,
                    char *why, size_t wlen)
{
    struct stat st;
    if (mkdir(d->slurm_out, 0711) < 0 && errno != EEXIST) {
        snprintf(why, wlen, "%s: %s", d->slurm_out, strerror(errno));
        return -1;
    }
    if (lstat(d->slurm_out, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 022)) {
        snprintf(why, wlen, "%s: must be tesseld's directory, writable by no one else",
                 d->slurm_out);
        return -1;
    }
    if (snprintf(dir, len, "%s/%s", d->slurm_out, user) >= (int)len) {
        snprintf(why, wlen, "%s/%s: path too long", d->slurm_out, user);
        return -1;
    }
    if (mkdir(dir, 0700) == 0) {
        if (geteuid() == 0 && lchown(dir, pw->uid, pw->gid) < 0) {
            snprintf(why, wlen, "%s: %s", dir, strerror(errno));
            rmdir(dir);
            return -1;
        }
    } else if (errno != EEXIST) {
        snprintf(why, wlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    uid_t want = geteuid() == 0 ? pw->uid : geteuid();
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != want) {
        snprintf(why, wlen, "%s: not a directory of the account '%s'", dir, pw->name);
        return -1;
    }
    return 0;
}

void tessd_slurm_log_path(const tessd_t *d, const char *user, int64_t slurm_id, bool err, char *buf,
                          size_t len)
{
    snprintf(buf, len, "%s/%s/%lld.%s", d->slurm_out, user, (long long)slurm_id,
             err ? "err" : "out");
}

int tessd_slurm_submit(tessd_t *d, const tstore_job_t *j, const char *cwd, int64_t *slurm_id,
                       char *why, size_t len)
{
    tessd_pw_t pw;
    if (slurm_account(j->user, &pw, why, len) < 0)
        return 422;
    char dir[PATH_MAX];
    /* One at a time: two first submissions of a user at once would otherwise see each other's
     * directory between its mkdir and its chown (root's for a moment: "not a directory of the
     * account", bench/slurm/submit.sh 2026-11-28 with 4 clients). */
    static pthread_mutex_t dir_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&dir_mu);
    int drc = user_dir(d, j->user, &pw, dir, sizeof dir, why, len);
    pthread_mutex_unlock(&dir_mu);
    if (drc < 0)
        return 500;
    char sbatch[PATH_MAX + 16];
    cmd_path(d, "sbatch", sbatch, sizeof sbatch);
    tsj_submit_t s = {
        .name = j->name,
        .cwd = cwd ? cwd : dir,
        .out_dir = dir,
        .gpus = j->gpus,
        .gpu_milli = j->gpu_count ? j->gpu_milli : 0,
        .gpu_mem = j->gpu_mem,
        .cpu_milli = j->cpu_milli,
        .mem = j->mem,
        .time_limit_s = j->time_limit_s,
        .shards = (unsigned)d->slurm_shards,
        .no_requeue = j->no_requeue,
    };
    const tsj_qmap_t *qm = tsj_qmap_find(d->slurm_qmap, d->slurm_nqmap, j->queue);
    if (qm) {
        s.partition = qm->partition;
        s.qos = qm->qos;
    }
    tsl_error_t err;
    if (d->slurm_submitter[0]) {
        /* The account's long-lived submitter (slurmsub.c): the same checks, script and
         * options, one request frame, no process per job. */
        char *script = tsj_script(j->user, j->argv_json, j->shell, j->env_json,
                                  d->fake_spec[0] ? d->fake_spec : NULL, &err);
        char *req = script ? tsj_submit_request(&s, script, &err) : NULL;
        free(script);
        if (!req) {
            snprintf(why, len, "%s", err.text);
            return errno == ENOMEM ? 500 : 400;
        }
        int st = tessd_slurmsub_submit(d, &pw, req, slurm_id, why, len);
        free(req);
        return st;
    }
    char **argv = tsj_sbatch_argv(sbatch, &s, &err);
    char *script = argv ? tsj_script(j->user, j->argv_json, j->shell, j->env_json,
                                     d->fake_spec[0] ? d->fake_spec : NULL, &err)
                        : NULL;
    if (!argv || !script) {
        snprintf(why, len, "%s", err.text);
        tsj_argv_free(argv);
        free(script);
        return errno == ENOMEM ? 500 : 400;
    }
    cmd_t c;
    int rc = run_cmd(d, &pw, argv, script, &c, why, len);
    tsj_argv_free(argv);
    free(script);
    if (rc < 0)
        return 500;
    int status = 0;
    if (!c.timed_out && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0 &&
        tsj_parse_jobid(c.out, slurm_id) == 0) {
        status = 201;
    } else {
        char text[SLURM_ERR_MAX + 256];
        snprintf(text, sizeof text, "%s\n%.200s", c.err, c.out);
        status = tsj_sbatch_error(text, c.timed_out, why, len);
    }
    free(c.out);
    return status;
}

int tessd_slurm_cancel(tessd_t *d, const char *user, int64_t slurm_id, char *why, size_t len)
{
    tessd_pw_t pw;
    if (slurm_account(user, &pw, why, len) < 0)
        return 422;
    char scancel[PATH_MAX + 16], id[32];
    cmd_path(d, "scancel", scancel, sizeof scancel);
    snprintf(id, sizeof id, "%lld", (long long)slurm_id);
    char *argv[] = {scancel, id, NULL};
    cmd_t c;
    if (run_cmd(d, &pw, argv, NULL, &c, why, len) < 0)
        return 500;
    int status = 200;
    if (c.timed_out || !WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
        status = tsj_sbatch_error(c.err, c.timed_out, why, len);
        if (status == 422)
            status = 409;
    }
    free(c.out);
    return status;
}

int tessd_slurm_suspend(tessd_t *d, int64_t slurm_id, bool suspend, char *why, size_t len)
{
    char scontrol[PATH_MAX + 16], id[32];
    cmd_path(d, "scontrol", scontrol, sizeof scontrol);
    snprintf(id, sizeof id, "%lld", (long long)slurm_id);
    char *argv[] = {scontrol, suspend ? (char *)"suspend" : (char *)"resume", id, NULL};
    cmd_t c;
    /* As tesseld itself (root): Slurm lets only an operator suspend (22.05: a user's own
     * `scontrol suspend` is refused). */
    if (run_cmd(d, NULL, argv, NULL, &c, why, len) < 0)
        return 500;
    int status = 200;
    if (c.timed_out || !WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
        char text[SLURM_ERR_MAX + 256];
        snprintf(text, sizeof text, "%s\n%.200s", c.err, c.out);
        status = tsj_sbatch_error(text, c.timed_out, why, len);
        if (status == 422)
            status = 409;
    }
    free(c.out);
    return status;
}

int tessd_slurm_partitions(tessd_t *d, tsj_partition_t **out, size_t *n, char *why, size_t len)
{
    char sinfo[PATH_MAX + 16];
    cmd_path(d, "sinfo", sinfo, sizeof sinfo);
    char *argv[] = {sinfo, (char *)"--json", NULL};
    cmd_t c;
    *out = NULL;
    *n = 0;
    /* As tesseld itself: it only reads what every account of the cluster may read. */
    if (run_cmd(d, NULL, argv, NULL, &c, why, len) < 0)
        return -1;
    int rc = 0;
    tsl_error_t err;
    if (c.timed_out) {
        snprintf(why, len, "sinfo did not answer in %lu s", d->slurm_timeout_s);
        rc = -1;
    } else if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
        snprintf(why, len, "sinfo: %.300s", c.err[0] ? c.err : "failed");
        rc = -1;
    } else if (tsj_parse_sinfo(c.out, c.outlen, out, n, &err) < 0) {
        snprintf(why, len, "%s", err.text);
        rc = -1;
    }
    free(c.out);
    return rc;
}

/* ---- the poll ---------------------------------------------------------------------------- */

/* How long the poll keeps the view of direct jobs fresh after a read of it, with no active job
 * of tesseld's: a console open on the job list reads it every few seconds; a minute without
 * one stops the polls (none at all while nobody looks and tesseld has no active job). */
#define SLURM_VIEW_KEEP_MS 60000
/* A poll starts at least this many times its predecessor's duration after it: polls take at
 * most a tenth of the time (tessd_slurm_tick). */
#define SLURM_POLL_SPACING 10

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Lock held: the Slurm ids of tesseld's jobs submitted since the last read, into d->slurm_mine
 * (every one ever, less those below lowest, the smallest id squeue lists: Slurm's ids only
 * grow, so no job squeue lists later has one of those).  0, or -1 with err. */
static int mine_update(tessd_t *d, int64_t lowest, tsl_error_t *err)
{
    tstore_slurm_pair_t *v = NULL;
    size_t n = 0;
    if (tstore_slurm_since(d->store, d->slurm_mine_after, &v, &n, err) < 0)
        return -1;
    if (d->slurm_mine_n + n > d->slurm_mine_cap) {
        size_t cap = (d->slurm_mine_n + n) * 2 + 64;
        int64_t *nm = realloc(d->slurm_mine, cap * sizeof *nm);
        if (!nm) {
            free(v);
            errno = ENOMEM;
            return tsl_errprintf(err, "Slurm ids: out of memory");
        }
        d->slurm_mine = nm;
        d->slurm_mine_cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        d->slurm_mine[d->slurm_mine_n++] = v[i].slurm_id;
        d->slurm_mine_after = v[i].job;
    }
    free(v);
    if (n)
        qsort(d->slurm_mine, d->slurm_mine_n, sizeof *d->slurm_mine, cmp_id);
    size_t k = 0;
    while (k < d->slurm_mine_n && d->slurm_mine[k] < lowest)
        k++;
    if (k) {
        memmove(d->slurm_mine, d->slurm_mine + k, (d->slurm_mine_n - k) * sizeof *d->slurm_mine);
        d->slurm_mine_n -= k;
    }
    return 0;
}

static bool is_mine(const tessd_t *d, int64_t sid)
{
    return d->slurm_mine_n &&
           bsearch(&sid, d->slurm_mine, d->slurm_mine_n, sizeof sid, cmp_id) != NULL;
}

const tsj_seen_t *tessd_slurm_view_find(const tessd_t *d, int64_t slurm_id)
{
    for (size_t lo = 0, hi = d->slurm_view_n; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t x = d->slurm_view[mid].slurm_id;
        if (x == slurm_id)
            return &d->slurm_view[mid];
        if (x < slurm_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Lock held: the view from one squeue's jobs (seen[0..ns), by Slurm id): those that are not
 * tesseld's and whose state this build knows.  A Slurm id stored for one of tesseld's jobs that
 * squeue gives to another account (foreign[0..nf), sorted: apply_seen did not apply it; an id
 * a submitter lied about, docs/security.md) stays in the view: its owner's job is not hidden.  A
 * job new to the view while a submission of tesseld's is between its sbatch and its commit may be
 * that submission's: it waits for the next poll.  Takes seen's entries it keeps; 0, or -1 with err
 * (the view left as it was). */
static int view_update(tessd_t *d, const tsj_seen_t *seen, size_t ns, const int64_t *foreign,
                       size_t nf, int64_t at, tsl_error_t *err)
{
    if (mine_update(d, ns ? seen[0].slurm_id : 0, err) < 0)
        return -1;
    tsj_seen_t *v = ns ? malloc(ns * sizeof *v) : NULL;
    if (ns && !v) {
        errno = ENOMEM;
        return tsl_errprintf(err, "the Slurm view: out of memory");
    }
    size_t n = 0;
    for (size_t i = 0; i < ns; i++) {
        const tsj_seen_t *s = &seen[i];
        if (!s->known || (is_mine(d, s->slurm_id) &&
                          !(nf && bsearch(&s->slurm_id, foreign, nf, sizeof *foreign, cmp_id))))
            continue;
        if (d->slurm_inflight > 0 && !tessd_slurm_view_find(d, s->slurm_id))
            continue;
        v[n++] = *s;
    }
    free(d->slurm_view);
    d->slurm_view = n ? v : NULL;
    if (!n)
        free(v);
    d->slurm_view_n = n;
    d->slurm_view_at = at;
    d->slurm_view_gen++;
    d->slurm_view_error[0] = '\0';
    return 0;
}

void tessd_slurm_free(tessd_t *d)
{
    free(d->slurm_view);
    free(d->slurm_mine);
    d->slurm_view = NULL;
    d->slurm_mine = NULL;
    d->slurm_view_n = d->slurm_mine_n = d->slurm_mine_cap = 0;
}

int tessd_slurm_view(tessd_t *d)
{
    int64_t now = tessd_mono_ms(), asked = tessd_now_ms();
    bool idle = !d->slurm_view_wanted || now - d->slurm_view_wanted > SLURM_VIEW_KEEP_MS;
    d->slurm_view_wanted = now;
    /* Fresh enough: a poll at most a period old, while the polls run (someone looked within
     * the minute, or tesseld has active jobs: the poll runs then anyway). */
    if (d->slurm_view_gen && !idle &&
        asked - d->slurm_view_at <= (int64_t)d->slurm_poll_s * 1000 + 1000)
        return 0;
    /* Else a poll whose squeue starts after this call (a job sbatch'd just before is in it),
     * or its failure; woken at every poll's end (tessd_wake_waiters of id 0). */
    int64_t deadline = now + (int64_t)d->slurm_timeout_s * 1000 + 1000;
    tessd_slurm_poll_soon(d);
    while (!(d->slurm_view_gen && d->slurm_view_at >= asked) && d->slurm_view_failed < asked &&
           tessd_mono_ms() < deadline && !atomic_load(&d->stopping))
        if (tessd_wait_job(d, 0, deadline) < 0)
            break;
    return d->slurm_view_gen && d->slurm_view_at >= asked ? 0 : -1;
}

/* Apply the plan of one job (lock held), from what a squeue begun at `at` said.  Returns 1
 * when Slurm has that id as another account's job (nothing applied), else 0. */
static int apply_seen(tessd_t *d, int64_t id, const tsj_seen_t *s, int64_t now, int64_t at)
{
    tstore_job_t j;
    tsl_error_t err;
    if (s && !s->known)
        return 0; /* a state this build does not know: left as it is, not taken for gone */
    if (tstore_job_get(d->store, id, &j, &err) < 0)
        return 0;
    /* squeue runs as root and sees every job: nothing of another account's job is taken into
     * this one (tsj_applies: by uid; an owner without an account is refused). */
    tessd_pw_t pw;
    int64_t owner = -1;
    if (geteuid() != 0)
        owner = geteuid();
    else if (tessd_getpwnam(j.user, &pw) == 1)
        owner = pw.uid;
    if (!tsj_applies(s, owner)) {
        tessd_log("job %lld: Slurm job %lld belongs to uid %lld ('%s'), not '%s' (uid %lld): "
                  "its state is not applied",
                  (long long)id, (long long)s->slurm_id, (long long)s->uid, s->user, j.user,
                  (long long)owner);
        tstore_job_clear(&j);
        return 1;
    }
    tsj_plan_t p;
    tsj_plan(&j, s, now, &p);
    /* A squeue begun before tesseld's own last suspend or resume ended may say what was true
     * before it: such a squeue does not suspend or resume (the next poll says what is). */
    if (p.n == 1 && (p.ev[0] == TJM_EV_SUSPEND || p.ev[0] == TJM_EV_RESUME) &&
        d->slurm_toggled >= at)
        p.n = 0;
    if (p.wait_code[0])
        tstore_job_set_wait(d->store, id, p.wait_code, p.wait_code, NULL);
    for (int i = 0; i < p.n; i++) {
        const char *who = p.ev[i] == TJM_EV_KILLED && j.cancel_by ? j.cancel_by : "slurm";
        const char *why = i == p.n - 1 && p.why[0] ? p.why : NULL;
        if (tessd_job_apply(d, id, p.ev[i], &p.chg[i], who, why, &err) < 0) {
            tessd_log("job %lld (Slurm %lld): %s: %s", (long long)id,
                      (long long)(s ? s->slurm_id : 0), tjm_event_name(p.ev[i]), err.text);
            break;
        }
    }
    tstore_job_clear(&j);
    return 0;
}

static int cmp_seen(const void *a, const void *b)
{
    int64_t x = ((const tsj_seen_t *)a)->slurm_id, y = ((const tsj_seen_t *)b)->slurm_id;
    return x < y ? -1 : x > y;
}

/* Most jobs one sacct is asked about (its --jobs list; the rest wait for the next poll).  A
 * job is asked about only once slurmctld has forgotten it (MinJobAge after its end, or a
 * restart of slurmctld without its state): rare, a few at a time. */
#define SLURM_SACCT_MAX 64

/* What Slurm's accounting (sacct, slurmdbd) says of the jobs ids[0..n) that squeue no longer
 * lists: 0 with *out and *nout (sorted by id; a job it does not list is gone), 1 when the
 * cluster keeps no accounting (sacct says so, or is not installed: the jobs are gone, as
 * without slurmdbd), -1 with why when sacct did not answer (slurmdbd down: the jobs are left
 * as they are, asked again at the next poll).  Run as tesseld (root sees every account's
 * jobs; each job's user is checked against its owner, tsj_applies, as squeue's). */
static int ask_sacct(tessd_t *d, const int64_t *ids, size_t n, tsj_seen_t **out, size_t *nout,
                     char *why, size_t len)
{
    char sacct[PATH_MAX + 16], list[SLURM_SACCT_MAX * 21 + 16];
    size_t off = (size_t)snprintf(list, sizeof list, "--jobs=");
    for (size_t i = 0; i < n && i < SLURM_SACCT_MAX; i++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%lld", i ? "," : "",
                                (long long)ids[i]);
    cmd_path(d, "sacct", sacct, sizeof sacct);
    char *argv[] = {sacct,
                    (char *)"--noheader",
                    (char *)"--parsable2",
                    (char *)"--allocations",
                    (char *)"--allusers",
                    (char *)"--format=JobIDRaw,State,ExitCode,User,UID,NodeList,Start",
                    list,
                    NULL};
    *out = NULL;
    *nout = 0;
    if (access(sacct, X_OK) < 0)
        return 1;
    cmd_t c;
    if (run_cmd(d, NULL, argv, NULL, &c, why, len) < 0)
        return errno == ENOENT ? 1 : -1;
    int rc = 0;
    tsl_error_t err;
    if (c.timed_out) {
        snprintf(why, len, "sacct did not answer in %lu s", d->slurm_timeout_s);
        rc = -1;
    } else if (strstr(c.err, "accounting storage is disabled")) {
        rc = 1; /* AccountingStorageType=accounting_storage/none */
    } else if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
        c.err[strcspn(c.err, "\n")] = '\0';
        snprintf(why, len, "sacct: %.300s", c.err[0] ? c.err : "failed");
        rc = -1;
    } else if (c.outlen >= SLURM_OUT_MAX) {
        snprintf(why, len, "sacct's answer is above %u MiB", SLURM_OUT_MAX >> 20);
        rc = -1;
    } else if (tsj_parse_sacct(c.out, c.outlen, out, nout, &err) < 0) {
        snprintf(why, len, "%s", err.text);
        rc = -1;
    }
    free(c.out);
    if (rc == 0 && *nout)
        qsort(*out, *nout, sizeof **out, cmp_seen);
    return rc;
}

/* Every job slurmctld holds, by squeue --json: 0 with *seen and *ns, or -1 with why.  Slurm
 * 22.05's squeue ignores --jobs and --user with --json (measured: `squeue --json --jobs=999`
 * lists every job slurmctld holds). */
static int read_squeue(tessd_t *d, tsj_seen_t **seen, size_t *ns, char *why, size_t len)
{
    char squeue[PATH_MAX + 16];
    cmd_path(d, "squeue", squeue, sizeof squeue);
    char *argv[] = {squeue, (char *)"--json", (char *)"--states=all", NULL};
    cmd_t c;
    *seen = NULL;
    *ns = 0;
    if (run_cmd(d, NULL, argv, NULL, &c, why, len) < 0)
        return -1;
    tsl_error_t err;
    int rc = 0;
    /* squeue writes a job's name as the bytes its owner gave sbatch: one that is not UTF-8
     * made the whole answer something jansson refuses, and every poll failed (any user could
     * freeze every Tessel job's state so; t9015).  Such bytes become '?', in place. */
    if (c.out)
        tsl_utf8_fix(c.out, c.outlen);
    if (c.timed_out) {
        snprintf(why, len, "squeue did not answer in %lu s", d->slurm_timeout_s);
        rc = -1;
    } else if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
        snprintf(why, len, "squeue: %.300s", c.err[0] ? c.err : "failed");
        rc = -1;
    } else if (c.outlen >= SLURM_OUT_MAX) {
        snprintf(why, len, "squeue's answer is above %u MiB", SLURM_OUT_MAX >> 20);
        rc = -1;
    } else if (tsj_parse_squeue(c.out, c.outlen, seen, ns, &err) < 0) {
        snprintf(why, len, "%s", err.text);
        rc = -1;
    }
    free(c.out);
    return rc;
}

/* Bytes of the reason the view of every job was not read (d->slurm_view_error's). */
#define SLURM_VIEW_WHY 256

/* What Slurm holds of tesseld's active jobs jobs[0..n), and of every job when all.  When
 * tesseld submits through libslurm, through its reader (tessel-slurm-submit --read: only these
 * jobs, by binary RPCs; squeue --json formats about a hundred fields of every job slurmctld
 * holds, and was the largest cost of a submission through tesseld, docs/bench-submit.md); else,
 * or when the reader itself fails (logged), by squeue.  0 with *seen, *ns and *whole (every job
 * slurmctld holds is in seen: the view may be made from it; else view_why, SLURM_VIEW_WHY bytes,
 * says why when every job was asked for), or -1 with why. */
static int read_jobs(tessd_t *d, const tstore_slurm_pair_t *jobs, size_t n, bool all,
                     tsj_seen_t **seen, size_t *ns, bool *whole, char *view_why, char *why,
                     size_t len)
{
    *seen = NULL;
    *ns = 0;
    *whole = true;
    view_why[0] = '\0';
    if (d->slurm_submitter[0]) {
        int64_t *ids = n ? malloc(n * sizeof *ids) : NULL;
        json_t *a = NULL;
        int rc = -2;
        if (n && !ids) {
            snprintf(why, len, "the jobs' ids: out of memory");
        } else {
            for (size_t i = 0; i < n; i++)
                ids[i] = jobs[i].slurm_id;
            rc = tessd_slurmsub_read_poll(d, ids, n, &all, &a, view_why, SLURM_VIEW_WHY, why, len);
        }
        free(ids);
        if (rc == -1)
            return -1;
        if (rc == 0) {
            tsl_error_t err;
            rc = tsj_parse_jobs(a, "tessel-slurm-submit --read", seen, ns, &err);
            json_decref(a);
            if (rc < 0) {
                snprintf(why, len, "%s", err.text);
                return -1;
            }
            if (d->slurm_reader_failing)
                tessd_log("slurm: the jobs' states are read through libslurm again");
            d->slurm_reader_failing = false;
            *whole = all;
            return 0;
        }
        if (!d->slurm_reader_failing)
            tessd_log("slurm: %s: the jobs' states are read by squeue until it works", why);
        d->slurm_reader_failing = true;
    }
    return read_squeue(d, seen, ns, why, len);
}

/* The states of tesseld's active jobs jobs[0..n) read (read_jobs; every job's too when all),
 * and applied.  0, or -1 with why (nothing applied: a job is never taken for unknown on a
 * failed read). */
static int poll_jobs(tessd_t *d, const tstore_slurm_pair_t *jobs, size_t n, bool all, char *why,
                     size_t len)
{
    int64_t at = tessd_now_ms();
    tsj_seen_t *seen = NULL;
    size_t ns = 0;
    bool whole;
    tsl_error_t err;
    char view_why[SLURM_VIEW_WHY];
    if (read_jobs(d, jobs, n, all, &seen, &ns, &whole, view_why, why, len) < 0)
        goto failed;
    if (ns)
        qsort(seen, ns, sizeof *seen, cmp_seen); /* seen is NULL when squeue lists no job */
    /* The jobs squeue no longer lists: Slurm's accounting, when the cluster keeps it, has their
     * end (state, exit code) after slurmctld forgot them (MinJobAge after the end, e.g. while
     * tesseld was down); without it they are gone (tsj_plan: failed, cause lost). */
    int64_t gone[SLURM_SACCT_MAX];
    size_t ng = 0;
    for (size_t i = 0; i < n && ng < SLURM_SACCT_MAX; i++) {
        tsj_seen_t key = {.slurm_id = jobs[i].slurm_id};
        if (!ns || !bsearch(&key, seen, ns, sizeof *seen, cmp_seen))
            gone[ng++] = jobs[i].slurm_id;
    }
    if (ng)
        qsort(gone, ng, sizeof *gone, cmp_id);
    tsj_seen_t *acct = NULL;
    size_t na = 0;
    char awhy[512] = "";
    int arc = ng ? ask_sacct(d, gone, ng, &acct, &na, awhy, sizeof awhy) : 1;
    if (ng && arc < 0 && !d->slurm_acct_failing)
        tessd_log("slurm: %zu job(s) left squeue and sacct cannot say how they ended (%s): they "
                  "stay as they are until it can",
                  ng, awhy);
    else if (ng && arc >= 0 && d->slurm_acct_failing)
        tessd_log("slurm: sacct answers again");
    if (ng)
        d->slurm_acct_failing = arc < 0;
    int64_t now = tessd_now_ms();
    int64_t *foreign = n ? malloc(n * sizeof *foreign) : NULL;
    size_t nf = 0;
    /* tesseld's lock is taken for one job at a time: a poll that sees a few hundred jobs start
     * and end (a burst of short jobs) applies each in its own transactions, and submissions,
     * which commit under the same lock, must not wait for all of them (the tail of
     * bench/slurm/submit.sh, docs/bench-submit.md). */
    for (size_t i = 0; i < n; i++) {
        tsj_seen_t key = {.slurm_id = jobs[i].slurm_id};
        const tsj_seen_t *s = ns ? bsearch(&key, seen, ns, sizeof *seen, cmp_seen) : NULL;
        if (!s) {
            bool asked = ng && bsearch(&key.slurm_id, gone, ng, sizeof *gone, cmp_id);
            if (!asked || arc < 0)
                continue; /* not asked this poll, or sacct did not answer: left as it is */
            s = na ? bsearch(&key, acct, na, sizeof *acct, cmp_seen) : NULL;
        }
        pthread_mutex_lock(&d->lock);
        int rc = apply_seen(d, jobs[i].job, s, now, at);
        pthread_mutex_unlock(&d->lock);
        if (rc == 1 && foreign)
            foreign[nf++] = jobs[i].slurm_id;
    }
    free(acct);
    pthread_mutex_lock(&d->lock);
    if (nf)
        qsort(foreign, nf, sizeof *foreign, cmp_id);
    /* The jobs submitted to Slurm directly, for GET /v1/jobs?origin=slurm (from a read of
     * every job only). */
    if (whole && view_update(d, seen, ns, foreign, nf, at, &err) < 0) {
        snprintf(d->slurm_view_error, sizeof d->slurm_view_error, "%s", err.text);
        d->slurm_view_failed = at;
    } else if (!whole && view_why[0]) {
        snprintf(d->slurm_view_error, sizeof d->slurm_view_error, "%s", view_why);
        d->slurm_view_failed = at;
    }
    tessd_wake_waiters(d, 0);
    pthread_mutex_unlock(&d->lock);
    free(seen);
    free(foreign);
    return 0;
failed:
    pthread_mutex_lock(&d->lock);
    snprintf(d->slurm_view_error, sizeof d->slurm_view_error, "%s", why);
    d->slurm_view_failed = at;
    tessd_wake_waiters(d, 0);
    pthread_mutex_unlock(&d->lock);
    return -1;
}

void tessd_slurm_poll_soon(tessd_t *d)
{
    atomic_store(&d->slurm_poll_now, true);
    tessd_wake(d);
}

void tessd_slurm_tick(tessd_t *d)
{
    int64_t now = tessd_mono_ms();
    bool forced = atomic_exchange(&d->slurm_poll_now, false);
    if (!forced && now < d->slurm_next_poll)
        return;
    d->slurm_next_poll = now + (int64_t)d->slurm_poll_s * 1000;
    tessd_slurmsub_reap(d, false);
    tstore_slurm_pair_t *jobs = NULL;
    size_t n = 0;
    tsl_error_t err;
    pthread_mutex_lock(&d->lock);
    int rc = tstore_slurm_active(d->store, &jobs, &n, &err);
    bool viewed = d->slurm_view_wanted && now - d->slurm_view_wanted <= SLURM_VIEW_KEEP_MS;
    pthread_mutex_unlock(&d->lock);
    if (rc < 0) {
        tessd_log("slurm: %s", err.text);
        return;
    }
    if (n == 0 && !viewed) {
        free(jobs);
        return; /* no active Slurm job and nobody looks at the direct ones: no command */
    }
    char why[512] = "";
    bool failed = poll_jobs(d, jobs, n, viewed, why, sizeof why) < 0;
    free(jobs);
    /* At most a tenth of the time in polls: squeue --json lists every job slurmctld
     * holds (ended ones for MinJobAge), and with many held a poll takes long enough to compete
     * with the submissions for slurmctld and the CPUs (bench/slurm/submit.sh, 2026-11-27: the
     * polls were about half of tesseld's CPU a submission with ~1,000 jobs held, polled every
     * second).  The next one waits SLURM_POLL_SPACING times this one's duration (an
     * explicit request, tessd_slurm_poll_soon, still polls at once). */
    int64_t took = tessd_mono_ms() - now;
    if (d->slurm_next_poll < now + took * SLURM_POLL_SPACING)
        d->slurm_next_poll = now + took * SLURM_POLL_SPACING;
    if (failed && !d->slurm_failing)
        tessd_log("slurm: cannot read the jobs' states (%s); the jobs stay as they are and are "
                  "looked at again every %lu s",
                  why, d->slurm_poll_s);
    else if (!failed && d->slurm_failing)
        tessd_log("slurm: the jobs' states can be read again");
    d->slurm_failing = failed;
}

int tessd_slurm_read(tessd_t *d, const char *cmd, const char *const args[], char **out,
                     size_t *outlen, char *why, size_t len)
{
    char path[PATH_MAX + 16];
    char *argv[16];
    int n = 0;
    cmd_path(d, cmd, path, sizeof path);
    argv[n++] = path;
    for (; args && args[n - 1] && n < 15; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    cmd_t c;
    if (run_cmd(d, NULL, argv, NULL, &c, why, len) < 0)
        return -1;
    if (c.timed_out || !WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) {
        c.err[strcspn(c.err, "\n")] = '\0';
        snprintf(why, len, "%s: %s", cmd,
                 c.timed_out ? "did not answer in time"
                 : c.err[0]  ? c.err
                             : "failed");
        free(c.out);
        return -1;
    }
    *out = c.out;
    *outlen = c.outlen;
    return 0;
}
