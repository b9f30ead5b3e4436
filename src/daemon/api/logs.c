/* logs.c - GET /v1/jobs/{id}/logs: a job's stdout or stderr, optionally followed; from a byte
 * offset, or from where its last N lines start (tail=N) and/or its output since a time
 * (since=, through the time index tessel-shim keeps beside each log: agent/logcap.h).  The
 * answer says where it starts (X-Tessel-Log-Offset), so that a client resumes from there.
 *
 * A follower's reader runs in its connection's thread (libmicrohttpd, thread per connection)
 * and may sleep: it polls the file every LOG_POLL_MS and ends once the job has finished and
 * the file is drained, or when tesseld stops.  It takes the big lock only to look at the
 * job's state, and sleeps as a waiter of the job (wait.c): the job's end wakes it at once, so
 * the stream ends as soon as the end is recorded (a foreground `tessel run` returns then).
 *
 * The log files are in the job's directory, which is its user's: the user may make them
 * sparse files of terabytes.  So the start of an answer is looked for without the big lock,
 * and never in more than the log limit can hold from the end (tail=), or in more than a
 * bisection of the time index (since=, logcap.h); past that bound the answer starts at the
 * bound and says so (X-Tessel-Log-Scan-Limit).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/logcap.h"
#include "daemon/pwcache.h"
#include "daemon/api/api.h"
#include "libutil/when.h"
#include "libutil/nomount.h"

/* How often a follower looks for new output: the delay a person sees is at most this. */
#define LOG_POLL_MS 100

/* Most bytes tail= reads back from a log's end: what the shim keeps of a stream (--log-limit,
 * its head and its tail) plus room for its marker lines (the limit's, and one per run of
 * failed writes: 64 KiB holds over 800 of them); with no limit (--log-limit 0), 64 MiB, the
 * default limit.  A job's log longer than this was not written by its shim under the limit
 * (its user made it so, or a later SIGHUP lowered the limit). */
#define LOG_SCAN_SLACK    (64u << 10)
#define LOG_SCAN_NO_LIMIT (64ull << 20)

typedef struct {
    tessd_t *d;
    int64_t id;
    char path[PATH_MAX + 16];
    int fd;
    uint64_t offset;
    bool follow;
    uid_t owner; /* the log's owner: the job's account, who writes it */
} logrd_t;

/* True when the job has finished (or is gone); else sleeps until it changes state, or for
 * LOG_POLL_MS (new output), and returns false. */
static bool job_finished_or_wait(logrd_t *r)
{
    tstore_job_t j;
    pthread_mutex_lock(&r->d->lock);
    bool done = true;
    if (tstore_job_get(r->d->store, r->id, &j, NULL) == 0) {
        done = j.state >= TSTORE_SUCCEEDED;
        tstore_job_clear(&j);
    }
    int w = done ? 0 : tessd_wait_job(r->d, r->id, tessd_mono_ms() + LOG_POLL_MS);
    pthread_mutex_unlock(&r->d->lock);
    if (w < 0) {
        struct timespec ts = {0, LOG_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    return done;
}

/* A file of the job's directory, which is its user's: tesseld (root) reads only a regular
 * file with one link owned by owner (the job's account, whose processes write the logs), never
 * through a symlink (to /etc/shadow, say), never a FIFO (which would block this thread), never
 * through a mount point (a FUSE file system the user mounted over the directory or the file,
 * whose server need not answer: EXDEV, libutil/nomount.h; the directory's parent is tesseld's),
 * never a file of someone else's that the user moved there (rename needs no right to read it).
 * fd, or -1 with errno (ENOENT: not there yet; EPERM: not such a file); *size its size. */
static int open_job_file(const char *path, uid_t owner, uint64_t *size)
{
    int fd = tsl_open_nomount_tail(path, 2, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != owner) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

static ssize_t read_some(logrd_t *r, char *buf, size_t max)
{
    if (r->fd < 0) {
        uint64_t size;
        int fd = open_job_file(r->path, r->owner, &size);
        if (fd < 0)
            return errno == ENOENT ? 0 : -1;
        r->fd = fd;
        if (r->offset && lseek(r->fd, (off_t)r->offset, SEEK_SET) < 0)
            return -1;
    }
    ssize_t n;
    do
        n = read(r->fd, buf, max);
    while (n < 0 && errno == EINTR);
    return n;
}

static ssize_t log_read(void *arg, uint64_t pos, char *buf, size_t max)
{
    logrd_t *r = arg;
    for (;;) {
        ssize_t n = read_some(r, buf, max);
        if (n > 0)
            return n;
        if (n < 0)
            return THTTP_STREAM_ERROR;
        if (!r->follow || atomic_load(&r->d->stopping))
            return THTTP_STREAM_END;
        if (job_finished_or_wait(r)) {
            /* Output written between the last read and the end. */
            n = read_some(r, buf, max);
            return n > 0 ? n : THTTP_STREAM_END;
        }
    }
}

static void log_free(void *arg)
{
    logrd_t *r = arg;
    if (r->fd >= 0)
        close(r->fd);
    free(r);
}

/* Where an answer with tail (n lines; -1: not asked) and since (Unix seconds; INT64_MIN: not
 * asked) starts in the log at path, at least at offset: the later of the two starts.  A log
 * not written yet starts at 0; without a time index (a job started by an older tesseld) since
 * cannot be told and starts at offset.  tail= reads at most scan_max bytes from the end: *cut
 * is set when the lines asked for were not found within them (the start is then scan_max
 * before the end).  Without the big lock: reads only the job's files.  0, or -1 with errno. */
static int start_offset(const char *path, uid_t owner, int64_t tail, int64_t since,
                        uint64_t scan_max, uint64_t *offset, bool *cut)
{
    uint64_t size, start = *offset;
    *cut = false;
    int fd = open_job_file(path, owner, &size);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    int rc = 0;
    if (tail >= 0) {
        uint64_t off = size;
        int t = tail > 0 ? tagent_log_tail(fd, size, (uint64_t)tail, scan_max, &off) : 0;
        if (t < 0)
            rc = -1;
        if (off > start) {
            start = off;
            *cut = t == 1;
        }
    }
    char idx_path[PATH_MAX + 24];
    snprintf(idx_path, sizeof idx_path, "%s.idx", path);
    uint64_t isize;
    int ifd = since != INT64_MIN && rc == 0 ? open_job_file(idx_path, owner, &isize) : -1;
    if (ifd >= 0) {
        uint64_t off = size;
        int found = tagent_logidx_since(ifd, since, &off);
        if (found < 0)
            rc = -1;
        else if (found == 1 || off > size)
            off = size; /* nothing written since: from the end */
        if (off > start) {
            start = off;
            *cut = false;
        }
        close(ifd);
    } else if (since != INT64_MIN && rc == 0 && errno != ENOENT) {
        rc = -1;
    }
    int e = errno;
    close(fd);
    errno = e;
    if (rc == 0)
        *offset = start;
    return rc;
}

void api_jobs_logs(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    tessd_t *d = ctx;
    const char *stream = thttp_query(req, "stream");
    if (!stream)
        stream = "stdout";
    if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0) {
        thttp_error(rep, 400, "invalid_parameter", "stream", "stream must be stdout or stderr");
        return;
    }
    int64_t offset = 0;
    const char *s = thttp_query(req, "offset");
    if (s && strcmp(s, "0") != 0 && api_parse_id(s, &offset) < 0) {
        thttp_error(rep, 400, "invalid_parameter", "offset", "offset must be a byte count");
        return;
    }
    int64_t tail = -1, since = INT64_MIN;
    s = thttp_query(req, "tail");
    if (s && strcmp(s, "0") != 0 && api_parse_id(s, &tail) < 0) {
        thttp_error(rep, 400, "invalid_parameter", "tail", "tail must be a number of lines");
        return;
    }
    if (s && strcmp(s, "0") == 0)
        tail = 0;
    s = thttp_query(req, "since");
    if (s) {
        tsl_error_t terr;
        int64_t v;
        if (s[0] >= '1' && s[0] <= '9' && api_parse_id(s, &v) == 0) {
            since = v; /* Unix seconds */
        } else if (tsl_parse_when(s, (int64_t)time(NULL), &since, &terr) < 0) {
            thttp_error(rep, 400, "invalid_parameter", "since", "since: %s (or Unix seconds)",
                        terr.text);
            return;
        }
    }
    s = thttp_query(req, "follow");
    bool follow = s && (strcmp(s, "1") == 0 || strcmp(s, "true") == 0);
    if (s && !follow && strcmp(s, "0") != 0 && strcmp(s, "false") != 0) {
        thttp_error(rep, 400, "invalid_parameter", "follow", "follow must be 0 or 1");
        return;
    }
    int64_t id;
    tessd_caller_t who;
    /* tesseld --slurm: a job submitted to Slurm directly (slurm:N): its output is where its
     * user's sbatch put it, not read here (409, or 404 when not the caller's). */
    if (strncmp(req->params[0], "slurm:", 6) == 0) {
        if (api_enter(d, req, rep, &who)) {
            api_slurm_direct_refuse(d, &who, req->params[0],
                                    "its output is where its sbatch wrote it (scontrol show job)",
                                    rep);
            api_leave(d);
        }
        return;
    }
    if (api_parse_id(req->params[0], &id) < 0) {
        thttp_error(rep, 404, "not_found", NULL, "no job '%s'", req->params[0]);
        return;
    }
    if (!api_enter(d, req, rep, &who))
        return;
    tstore_job_t j;
    tsl_error_t err;
    if (tstore_job_get(d->store, id, &j, &err) < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 404, "not_found", NULL, "no job %lld", (long long)id);
        else
            api_store_error(rep, &err);
        api_leave(d);
        return;
    }
    if (!who.admin && strcmp(j.user, who.user) != 0) {
        thttp_error(rep, 404, "not_found", NULL, "no job %lld", (long long)id);
        tstore_job_clear(&j);
        api_leave(d);
        return;
    }
    const char *state =
        j.state == TSTORE_RUNNING && j.suspended_ms ? "suspended" : tstore_state_name(j.state);
    uint64_t scan_max = d->log_limit ? d->log_limit + LOG_SCAN_SLACK : LOG_SCAN_NO_LIMIT;
    char dir[PATH_MAX], path[PATH_MAX + 16];
    tessd_job_dir(d, id, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s", dir, stream);
    /* --slurm: slurmstepd writes the job's output as its user, in the user's directory
     * (docs/slurm-backend.md); read with the same care (open_job_file). */
    int64_t sid;
    if (d->slurm && tstore_slurm_get(d->store, id, &sid, NULL) == 0)
        tessd_slurm_log_path(d, j.user, sid, strcmp(stream, "stderr") == 0, path, sizeof path);
    /* Whose the logs are: the job's account's when tesseld (root) runs it as one, else
     * tesseld's own (personal mode, a job run as root). */
    uid_t owner = geteuid();
    tessd_pw_t pw;
    if (geteuid() == 0 && tessd_getpwnam(j.user, &pw) == 1 && pw.uid != 0)
        owner = pw.uid;
    tstore_job_clear(&j);
    /* The rest reads the job's files only: without the lock, so that a log its user made huge
     * stalls no one else's request. */
    api_leave(d);
    logrd_t *r = calloc(1, sizeof *r);
    if (!r) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return;
    }
    r->d = d;
    r->id = id;
    r->fd = -1;
    r->offset = (uint64_t)offset;
    r->follow = follow;
    r->owner = owner;
    snprintf(r->path, sizeof r->path, "%s", path);
    bool cut = false;
    if ((tail >= 0 || since != INT64_MIN) &&
        start_offset(r->path, owner, tail, since, scan_max, &r->offset, &cut) < 0) {
        thttp_error(rep, 500, "internal", NULL, "job %lld's %s log: %s", (long long)id, stream,
                    strerror(errno));
        free(r);
        return;
    }
    snprintf(rep->extra2_name, sizeof rep->extra2_name, "X-Tessel-Log-Offset");
    snprintf(rep->extra2_value, sizeof rep->extra2_value, "%llu", (unsigned long long)r->offset);
    if (cut) {
        snprintf(rep->extra3_name, sizeof rep->extra3_name, "X-Tessel-Log-Scan-Limit");
        snprintf(rep->extra3_value, sizeof rep->extra3_value, "%llu", (unsigned long long)scan_max);
    }
    rep->status = 200;
    rep->stream = log_read;
    rep->stream_arg = r;
    rep->stream_free = log_free;
    rep->content_type = "text/plain; charset=utf-8";
    snprintf(rep->extra_name, sizeof rep->extra_name, "X-Tessel-Job-State");
    snprintf(rep->extra_value, sizeof rep->extra_value, "%s", state);
}
