/* slurmsub.c - tesseld's side of tessel-slurm-submit (docs/slurm-backend.md, "The submitter";
 * src/slurmsub/): a small pool of long-lived submitters keyed by account, each a child forked
 * as the account (its uid, gid and groups; a clean environment; as run_cmd runs sbatch) and
 * spoken to over a socketpair in frames (src/slurmsub/subproto.h).
 *
 *   tessd_slurmsub_submit  take an idle submitter of the account (start one when it has fewer
 *                          than SUB_PER_ACCOUNT, ending another account's idle one when the
 *                          pool is full; else wait for one), one request, one answer
 *                          within slurm-timeout; a submitter that fails (time out, end of file,
 *                          an answer not of the frame's shape) is killed and forgotten: the
 *                          next submission starts another
 *   tessd_slurmsub_reap    (main thread, each pass of the poll's tick) idle ones past
 *                          SUB_IDLE_MS are killed and waited for; all of them at shutdown
 *   tessd_slurmsub_read    the poll's reader: one tessel-slurm-submit --read, started as
 *                          tesseld itself at the first poll and kept while polls come (ended
 *                          as an idle submitter is), one request and one answer a poll
 *
 * Locks: the pool's own mutex, held only to pick or give back a slot (never tesseld's big
 * lock, never while waiting on a submitter).  A slot being used is busy: only its taker reads
 * or writes its socket, so two API threads never mix their frames. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon/daemon.h"
#include "daemon/pwcache.h"
#include "daemon/slurmjob.h"
#include "daemon/slurmsub.h"
#include "daemon/spawnas.h"
#include "slurmsub/subproto.h"

/* Submitters per account.  One serialises that account's submissions: each is a round trip
 * to slurmctld of a few ms, and slurmctld takes its job write lock for each anyway; a few let
 * the client side (munge's credential, packing, the answer's wait) of several API threads'
 * submissions overlap.  Four: the API's concurrent submissions of one account in the
 * benchmark (bench/slurm/submit.sh, 4 clients), at 0.5 MiB of memory of its own each (4.6
 * MiB resident with libslurm's shared pages, t9014). */
#define SUB_PER_ACCOUNT 4
/* Submitters in all (accounts x their submitters): a burst of many accounts waits for
 * slots rather than forking without bound; an idle one of another account is ended to make
 * room (take). */
#define SUB_MAX 64
/* An idle submitter is ended after a minute: a person's next submission in that time reuses
 * it (no sbatch start), an account gone quiet holds no process. */
#define SUB_IDLE_MS 60000

typedef struct {
    uid_t uid;
    pid_t pid; /* 0: the slot is free */
    int fd;    /* tesseld's end of the socketpair, non-blocking */
    bool busy;
    int64_t used; /* tss_mono_ms of the last answer */
} sub_t;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
/* Waited on with CLOCK_MONOTONIC deadlines (pool_init): a step of the wall clock neither
 * ends a wait early nor makes it last. */
static pthread_cond_t pool_cv;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static sub_t pool[SUB_MAX];

static void pool_init(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&pool_cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* End a submitter: its socket closed, SIGKILL (nothing if it has exited already), waited for.
 * Returns its wait status (0 when there was none). */
static int sub_end(pid_t pid, int fd)
{
    int status = 0;
    if (fd >= 0)
        close(fd);
    if (pid > 0) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    return status;
}

/* Start a submitter as pw (tessd_spawn_as: its ids, a clean environment, nothing of tesseld's
 * but the socket, its exec waited for until deadline): 0 with *pid and *fd, or -1 with errno
 * (ETIMEDOUT: not started by the deadline, killed) and why. */
static int sub_start(tessd_t *d, const tessd_pw_t *pw, const char *mode, int64_t deadline,
                     pid_t *pid, int *fd, char *why, size_t wlen)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        int e = errno;
        snprintf(why, wlen, "socketpair: %s", strerror(e));
        errno = e;
        return -1;
    }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) {
        int e = errno;
        snprintf(why, wlen, "/dev/null: %s", strerror(e));
        close(sv[0]), close(sv[1]);
        errno = e;
        return -1;
    }
    char *argv[] = {d->slurm_submitter, (char *)mode, NULL};
    int fds[3] = {sv[1], sv[1], null};
    pid_t p;
    int rc = tessd_spawn_as(d, pw, argv, fds, deadline, &p, why, wlen);
    int e = errno;
    close(sv[1]);
    close(null);
    if (rc < 0) {
        close(sv[0]);
        errno = e;
        return -1;
    }
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    /* SIGPIPE: tesseld ignores it (a dead submitter is EPIPE on the write). */
    *pid = p;
    *fd = sv[0];
    return 0;
}

/* Take a slot of uid: an idle live one, or a new one (pid 0: to be started by the caller).
 * With every slot taken, the least recently used idle submitter of another account is ended
 * for it (*evict_pid, *evict_fd: the caller ends it, outside the lock), so that accounts
 * gone quiet never keep a new one out until they are reaped.  NULL when the deadline passed
 * first. */
static sub_t *take(uid_t uid, int64_t deadline, pid_t *evict_pid, int *evict_fd)
{
    *evict_pid = 0;
    *evict_fd = -1;
    pthread_once(&pool_once, pool_init);
    pthread_mutex_lock(&pool_mu);
    for (;;) {
        sub_t *free_slot = NULL, *lru = NULL;
        int mine = 0;
        for (int i = 0; i < SUB_MAX; i++) {
            sub_t *s = &pool[i];
            if (s->pid && s->uid == uid) {
                mine++;
                if (!s->busy) {
                    s->busy = true;
                    pthread_mutex_unlock(&pool_mu);
                    return s;
                }
            } else if (!s->pid && !s->busy && !free_slot) {
                free_slot = s;
            } else if (s->pid && !s->busy && (!lru || s->used < lru->used)) {
                lru = s;
            }
        }
        /* Slots being started count as the account's (busy, pid 0, uid set). */
        for (int i = 0; i < SUB_MAX; i++)
            if (!pool[i].pid && pool[i].busy && pool[i].uid == uid)
                mine++;
        if (mine < SUB_PER_ACCOUNT && !free_slot && lru) {
            *evict_pid = lru->pid;
            *evict_fd = lru->fd;
            lru->pid = 0;
            lru->fd = -1;
            free_slot = lru;
        }
        if (mine < SUB_PER_ACCOUNT && free_slot) {
            free_slot->busy = true;
            free_slot->uid = uid;
            free_slot->fd = -1;
            pthread_mutex_unlock(&pool_mu);
            return free_slot;
        }
        int64_t left = deadline - tss_mono_ms();
        if (left <= 0) {
            pthread_mutex_unlock(&pool_mu);
            return NULL;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&pool_cv, &pool_mu, &ts);
    }
}

/* Give a slot back: kept (ok) or its submitter ended and the slot freed.  Returns the ended
 * submitter's wait status (0 when kept). */
static int give(sub_t *s, bool ok)
{
    pid_t pid = 0;
    int fd = -1;
    pthread_once(&pool_once, pool_init);
    pthread_mutex_lock(&pool_mu);
    if (ok) {
        s->used = tss_mono_ms();
    } else {
        pid = s->pid;
        fd = s->fd;
        s->pid = 0;
        s->fd = -1;
    }
    s->busy = false;
    pthread_cond_broadcast(&pool_cv);
    pthread_mutex_unlock(&pool_mu);
    return sub_end(pid, fd);
}

int tessd_slurmsub_submit(tessd_t *d, const tessd_pw_t *pw, const char *request, int64_t *slurm_id,
                          char *why, size_t len)
{
    int64_t deadline = tss_mono_ms() + (int64_t)d->slurm_timeout_s * 1000;
    size_t rlen = strlen(request);
    /* At most one restart: a submitter found dead at the write (ended by its account, or idle
     * and gone) had read nothing of this request, so starting another cannot submit twice. */
    for (int attempt = 0; attempt < 2; attempt++) {
        pid_t epid;
        int efd;
        sub_t *s = take(pw->uid, deadline, &epid, &efd);
        sub_end(epid, efd);
        if (!s) {
            snprintf(why, len,
                     "Slurm did not answer in time: slurmctld may be down "
                     "(every submitter of the account is busy)");
            return 503;
        }
        if (!s->pid) {
            pid_t pid;
            int fd;
            if (sub_start(d, pw, NULL, deadline, &pid, &fd, why, len) < 0) {
                int e = errno;
                give(s, false);
                return e == ETIMEDOUT ? 503 : 500;
            }
            pthread_mutex_lock(&pool_mu);
            s->pid = pid;
            s->fd = fd;
            pthread_mutex_unlock(&pool_mu);
        }
        if (tss_frame_write(s->fd, request, rlen, deadline) < 0) {
            int e = errno;
            give(s, false);
            if (e == EPIPE && attempt == 0)
                continue;
            snprintf(why, len, "tessel-slurm-submit: %s", strerror(e));
            return e == ETIMEDOUT ? 503 : 500;
        }
        char *ans;
        size_t alen;
        if (tss_frame_read(s->fd, TSS_ANSWER_MAX, deadline, &ans, &alen) < 0) {
            int e = errno;
            int st = give(s, false);
            if (e == ETIMEDOUT) {
                snprintf(why, len, "Slurm did not answer in time: slurmctld may be down");
                return 503;
            }
            /* It exited by itself: it cannot work here (slurm_init exits when it cannot read
             * slurm.conf or load its plugins), every submission would end the same way. */
            if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
                snprintf(why, len,
                         "tessel-slurm-submit exited with status %d before answering (can "
                         "libslurm read slurm.conf here? slurm-submit = sbatch runs sbatch "
                         "instead)",
                         WEXITSTATUS(st));
                tessd_log("slurm: %s", why);
                return 500;
            }
            /* Killed (by its account) with the request read: whether Slurm has the job is
             * not known. */
            snprintf(why, len, "tessel-slurm-submit ended during the submission (%s): submit again",
                     e == ENODATA || e == EPROTO ? "no answer" : strerror(e));
            return 503;
        }
        int code;
        char msg[TSS_LOG_MAX + 512];
        tsl_error_t err;
        int rc = tss_answer_parse(ans, alen, slurm_id, &code, msg, sizeof msg, &err);
        free(ans);
        give(s, rc >= 0);
        if (rc < 0) {
            snprintf(why, len, "%s", err.text);
            return 500;
        }
        if (rc == 0)
            return 201;
        return tsj_sbatch_error(msg, false, why, len);
    }
    snprintf(why, len, "tessel-slurm-submit: cannot be started");
    return 500;
}

/* The poll's reader (tessel-slurm-submit --read): one, used by one poll at a time. */
static pthread_mutex_t reader_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t reader_pid;
static int reader_fd = -1;
static int64_t reader_used;

/* End the reader.  Returns its wait status (0 when there was none).  reader_mu held. */
static int reader_end_locked(void)
{
    if (!reader_pid)
        return 0;
    int st = sub_end(reader_pid, reader_fd);
    reader_pid = 0;
    reader_fd = -1;
    return st;
}

/* The reader ended when all, or when idle past SUB_IDLE_MS (the submitters' rule). */
static void reader_reap(bool all, int64_t now)
{
    pthread_mutex_lock(&reader_mu);
    if (all || now - reader_used > SUB_IDLE_MS)
        reader_end_locked();
    pthread_mutex_unlock(&reader_mu);
}

int tessd_slurmsub_read(tessd_t *d, const int64_t *ids, size_t n, bool all, json_t **answer,
                        char *why, size_t len)
{
    *answer = NULL;
    int64_t deadline = tss_mono_ms() + (int64_t)d->slurm_timeout_s * 1000;
    /* Only Slurm's ids (1..2^32-1) are asked: another (a store written with slurm-submit =
     * sbatch holds what sbatch printed) cannot be held by slurmctld, it is gone. */
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        if (ids[i] >= 1 && ids[i] <= (int64_t)UINT32_MAX &&
            json_array_append_new(list, json_integer(ids[i])) < 0) {
            json_decref(list);
            list = NULL;
        }
    json_t *req = list ? json_pack("{s:o, s:b}", "ids", list, "all", all) : NULL;
    char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!text) {
        snprintf(why, len, "the reader's request: out of memory");
        return -2;
    }
    size_t tlen = strlen(text);
    int rc = -2;
    pthread_mutex_lock(&reader_mu);
    /* At most one restart: a reader found dead at the write (ended by an operator, or idle and
     * reaped) read nothing of this request. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!reader_pid) {
            pid_t pid;
            int fd;
            if (sub_start(d, NULL, "--read", deadline, &pid, &fd, why, len) < 0) {
                rc = errno == ETIMEDOUT ? -1 : -2;
                break;
            }
            reader_pid = pid;
            reader_fd = fd;
        }
        reader_used = tss_mono_ms();
        if (tss_frame_write(reader_fd, text, tlen, deadline) < 0) {
            int e = errno;
            reader_end_locked();
            if (e == EPIPE && attempt == 0)
                continue;
            snprintf(why, len, "tessel-slurm-submit --read: %s", strerror(e));
            rc = e == ETIMEDOUT ? -1 : -2;
            break;
        }
        char *ans;
        size_t alen;
        if (tss_frame_read(reader_fd, TSS_JOBS_MAX, deadline, &ans, &alen) < 0) {
            int e = errno;
            int st = reader_end_locked();
            if (e == ETIMEDOUT) {
                snprintf(why, len, "Slurm did not answer in %lu s: slurmctld may be down",
                         d->slurm_timeout_s);
                rc = -1;
            } else if (e == EMSGSIZE) {
                snprintf(why, len, "tessel-slurm-submit --read: an answer above %u MiB",
                         TSS_JOBS_MAX >> 20);
            } else if (WIFEXITED(st)) {
                snprintf(why, len, "tessel-slurm-submit --read exited with status %d",
                         WEXITSTATUS(st));
            } else {
                snprintf(why, len, "tessel-slurm-submit --read ended (%s)",
                         WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : strerror(e));
            }
            break;
        }
        json_error_t je;
        json_t *a = json_loadb(ans, alen, JSON_REJECT_DUPLICATES, &je);
        free(ans);
        json_t *e = json_object_get(a, "errno"), *et = json_object_get(a, "error");
        json_t *refused = json_object_get(a, "refused");
        if (json_is_object(a) && json_object_size(a) == 1 &&
            json_is_array(json_object_get(a, "jobs"))) {
            *answer = a;
            rc = 0;
        } else if (json_is_object(a) && json_object_size(a) == 2 && json_is_integer(e) &&
                   json_is_string(et)) {
            /* Slurm's own error (slurmctld down, a refusal): as squeue's. */
            snprintf(why, len, "Slurm: %.300s (error %lld)", json_string_value(et),
                     (long long)json_integer_value(e));
            json_decref(a);
            rc = -1;
        } else if (json_is_object(a) && json_object_size(a) == 1 && json_is_string(refused)) {
            /* The reader's own failure (a request it refused, out of memory): not Slurm's. */
            snprintf(why, len, "tessel-slurm-submit --read: %.300s", json_string_value(refused));
            json_decref(a);
        } else {
            snprintf(why, len, "tessel-slurm-submit --read answered out of shape (%s)",
                     a ? "not {\"jobs\"} nor {\"errno\", \"error\"}" : je.text);
            json_decref(a);
            reader_end_locked();
        }
        break;
    }
    pthread_mutex_unlock(&reader_mu);
    free(text);
    return rc;
}

int tessd_slurmsub_read_poll(tessd_t *d, const int64_t *ids, size_t n, bool *all, json_t **answer,
                             char *view_why, size_t vlen, char *why, size_t len)
{
    view_why[0] = '\0';
    int rc = tessd_slurmsub_read(d, ids, n, *all, answer, why, len);
    /* Every job for the direct jobs' view, and that failed in the reader (an answer above its
     * bound: any user can hold many jobs with long names): tesseld's own are read again alone,
     * only the view fails (review of the reader, 2026-11-28, M1). */
    if (rc == -2 && *all) {
        tessd_log("slurm: the view of every job: %s; tesseld's own jobs are read alone", why);
        snprintf(view_why, vlen, "%s", why);
        *all = false;
        rc = tessd_slurmsub_read(d, ids, n, false, answer, why, len);
    }
    return rc;
}

void tessd_slurmsub_reap(tessd_t *d, bool all)
{
    (void)d;
    int64_t now = tss_mono_ms();
    pid_t pids[SUB_MAX];
    int fds[SUB_MAX], n = 0;
    pthread_mutex_lock(&pool_mu);
    for (int i = 0; i < SUB_MAX; i++) {
        sub_t *s = &pool[i];
        if (s->pid && !s->busy && (all || now - s->used > SUB_IDLE_MS)) {
            pids[n] = s->pid;
            fds[n++] = s->fd;
            s->pid = 0;
            s->fd = -1;
        }
    }
    pthread_mutex_unlock(&pool_mu);
    for (int i = 0; i < n; i++)
        sub_end(pids[i], fds[i]);
    reader_reap(all, now);
}
