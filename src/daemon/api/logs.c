/* logs.c - GET /v1/jobs/{id}/logs: a job's stdout or stderr, optionally followed.
 *
 * A follower's reader runs in its connection's thread (libmicrohttpd, thread per connection)
 * and may sleep: it polls the file every LOG_POLL_MS and ends once the job has finished and
 * the file is drained, or when tesseld stops.  It takes the big lock only to look at the
 * job's state.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/api/api.h"

/* How often a follower looks for new output: the delay a person sees is at most this. */
#define LOG_POLL_MS 100

typedef struct {
    tessd_t *d;
    int64_t id;
    char path[PATH_MAX + 16];
    int fd;
    uint64_t offset;
    bool follow;
} logrd_t;

static bool job_finished(logrd_t *r)
{
    tstore_job_t j;
    pthread_mutex_lock(&r->d->lock);
    int rc = tstore_job_get(r->d->store, r->id, &j, NULL);
    pthread_mutex_unlock(&r->d->lock);
    if (rc < 0)
        return true;
    bool done = j.state >= TSTORE_SUCCEEDED;
    tstore_job_clear(&j);
    return done;
}

static ssize_t read_some(logrd_t *r, char *buf, size_t max)
{
    if (r->fd < 0) {
        /* The job's directory is its user's: tesseld (root) reads only a regular file with
         * one link, never through a symlink (to /etc/shadow, say), never a FIFO (which
         * would block this thread). */
        int fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
            return errno == ENOENT ? 0 : -1;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
            close(fd);
            errno = EPERM;
            return -1;
        }
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
        if (job_finished(r)) {
            /* Output written between the last read and the end. */
            n = read_some(r, buf, max);
            return n > 0 ? n : THTTP_STREAM_END;
        }
        struct timespec ts = {0, LOG_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void log_free(void *arg)
{
    logrd_t *r = arg;
    if (r->fd >= 0)
        close(r->fd);
    free(r);
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
    s = thttp_query(req, "follow");
    bool follow = s && (strcmp(s, "1") == 0 || strcmp(s, "true") == 0);
    if (s && !follow && strcmp(s, "0") != 0 && strcmp(s, "false") != 0) {
        thttp_error(rep, 400, "invalid_parameter", "follow", "follow must be 0 or 1");
        return;
    }
    int64_t id;
    if (api_parse_id(req->params[0], &id) < 0) {
        thttp_error(rep, 404, "not_found", NULL, "no job '%s'", req->params[0]);
        return;
    }
    tessd_caller_t who;
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
    logrd_t *r = calloc(1, sizeof *r);
    if (!r) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
    } else {
        char dir[PATH_MAX];
        tessd_job_dir(d, id, dir, sizeof dir);
        r->d = d;
        r->id = id;
        r->fd = -1;
        r->offset = (uint64_t)offset;
        r->follow = follow;
        snprintf(r->path, sizeof r->path, "%s/%s", dir, stream);
        rep->status = 200;
        rep->stream = log_read;
        rep->stream_arg = r;
        rep->stream_free = log_free;
        rep->content_type = "text/plain; charset=utf-8";
        snprintf(rep->extra_name, sizeof rep->extra_name, "X-Tessel-Job-State");
        snprintf(rep->extra_value, sizeof rep->extra_value, "%s",
                 j.state == TSTORE_RUNNING && j.suspended_ms ? "suspended"
                                                             : tstore_state_name(j.state));
    }
    tstore_job_clear(&j);
    api_leave(d);
}
