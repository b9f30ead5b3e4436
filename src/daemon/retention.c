/* retention.c - removal of old jobs' directories, in steps (retention.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/retention.h"
#include "libutil/duration.h"
#include "libutil/nomount.h"

/* The sweep under way (main thread only). */
struct tessd_retention {
    int64_t next;      /* tessd_mono_ms when the next sweep begins; 0: at the next call */
    int64_t next_step; /* when the next step may run */
    int64_t *ids;      /* the directories to remove, ids[at..n) left */
    size_t n, at;
    bool full;           /* the batch was full: another sweep follows at once */
    int jfd;             /* jobs/, for the sweep's life */
    int removed, failed; /* directories */
    long entries;        /* entries removed */
    char first_err[72];  /* the first failure, for the log */
    int64_t retention_s; /* the retention the sweep began with (for the log) */
};

static int remove_step(int dirfd, const char *name, long *budget, long *removed, int depth)
{
    if (depth > 64) {
        errno = ELOOP;
        return -1;
    }
    if (*budget <= 0)
        return 0;
    /* A directory reached without crossing a mount point (EXDEV: something is mounted there;
     * left) or following a link; anything else is unlinked by its name. */
    int fd = tsl_openat_nomount(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        if (errno != ENOTDIR && errno != ELOOP)
            return -1;
        (*budget)--;
        if (unlinkat(dirfd, name, 0) < 0)
            return errno == ENOENT ? 1 : -1;
        (*removed)++;
        return 1;
    }
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int rc = 1, first_errno = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (*budget <= 0) {
            rc = 0;
            break;
        }
        int r;
        if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
            r = remove_step(fd, e->d_name, budget, removed, depth + 1);
        } else {
            (*budget)--;
            r = unlinkat(fd, e->d_name, 0) == 0 || errno == ENOENT ? 1 : -1;
            if (r == 1)
                (*removed)++;
        }
        if (r == 0) {
            rc = 0;
            break;
        }
        if (r < 0 && !first_errno)
            first_errno = errno ? errno : EIO;
    }
    closedir(dir);
    if (rc == 0)
        return 0;
    if (first_errno) {
        errno = first_errno;
        return -1;
    }
    if (*budget <= 0)
        return 0; /* empty now: removed at the next step */
    (*budget)--;
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
        return errno == ENOENT ? 1 : -1;
    (*removed)++;
    return 1;
}

int tessd_remove_tree_step(int dirfd, const char *name, long *budget, long *removed)
{
    return remove_step(dirfd, name, budget, removed, 0);
}

int tessd_remove_tree(int dirfd, const char *name)
{
    long budget = LONG_MAX, removed = 0;
    return remove_step(dirfd, name, &budget, &removed, 0) == 1 ? 0 : -1;
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static struct tessd_retention *state(tessd_t *d)
{
    if (!d->retention) {
        d->retention = calloc(1, sizeof *d->retention);
        if (d->retention)
            d->retention->jfd = -1;
    }
    return d->retention;
}

/* Begin a sweep: the directories of jobs that ended before the cutoff, at most
 * TESSD_RETENTION_BATCH.  0 (s->n set, maybe 0), or -1 after a logged error. */
static int begin(tessd_t *d, struct tessd_retention *s)
{
    int64_t cutoff = tessd_now_ms() - d->job_log_retention_s * 1000;
    int jfd = open(d->jobs_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int lfd = jfd >= 0 ? dup(jfd) : -1; /* fdopendir takes the one it is given */
    DIR *dir = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!dir) {
        tessd_log("warning: job-log retention: %s: %s", d->jobs_dir, strerror(errno));
        if (lfd >= 0)
            close(lfd);
        if (jfd >= 0)
            close(jfd);
        return -1;
    }
    /* The jobs that have a directory (names that are ids only: jobs/.stale-* are the
     * admin's, tessd_job_dir_prepare). */
    size_t n = 0, cap = 256;
    int64_t *ids = malloc(cap * sizeof *ids);
    struct dirent *e;
    while (ids && (e = readdir(dir))) {
        char *end;
        long long id = strtoll(e->d_name, &end, 10);
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || *end || id <= 0)
            continue;
        if (n == cap) {
            int64_t *more = realloc(ids, 2 * cap * sizeof *ids);
            if (!more) {
                free(ids);
                ids = NULL;
                break;
            }
            ids = more;
            cap *= 2;
        }
        ids[n++] = id;
    }
    closedir(dir);
    if (!ids) {
        close(jfd);
        tessd_log("warning: job-log retention: out of memory");
        return -1;
    }
    qsort(ids, n, sizeof *ids, cmp_id);
    /* Keep those that ended before the cutoff, asking the store a few hundred at a time. */
    size_t old = 0;
    int rc = 0;
    for (size_t i = 0; i < n && old < TESSD_RETENTION_BATCH && rc == 0;) {
        pthread_mutex_lock(&d->lock);
        for (size_t k = 0; k < 256 && i < n && old < TESSD_RETENTION_BATCH; k++, i++) {
            tstore_job_t j = {0};
            tsl_error_t err;
            if (tstore_job_get(d->store, ids[i], &j, &err) < 0) {
                if (errno != ENOENT) {
                    tessd_log("job-log retention: store: %s (tried again at the next sweep)",
                              err.text);
                    rc = -1;
                    break;
                }
                continue; /* not a job of this store: left alone */
            }
            if (j.state >= TSTORE_SUCCEEDED && j.state < TSTORE_NSTATES && j.finished_ms > 0 &&
                j.finished_ms < cutoff)
                ids[old++] = ids[i];
            tstore_job_clear(&j);
        }
        pthread_mutex_unlock(&d->lock);
    }
    if (rc < 0 || old == 0) {
        free(ids);
        close(jfd);
        return rc;
    }
    s->ids = ids;
    s->n = old;
    s->at = 0;
    s->full = old >= TESSD_RETENTION_BATCH;
    s->jfd = jfd;
    s->removed = s->failed = 0;
    s->entries = 0;
    s->first_err[0] = '\0';
    s->retention_s = d->job_log_retention_s;
    return 0;
}

static void end(struct tessd_retention *s, const char *jobs_dir)
{
    char keep[32];
    tsl_format_seconds(s->retention_s, keep, sizeof keep);
    if (s->removed)
        tessd_log("job-log retention: removed the directories (logs) of %d job(s) that ended "
                  "more than %s ago (%ld entries)",
                  s->removed, keep, s->entries);
    if (s->failed)
        tessd_log("warning: job-log retention: %d directory(ies) of %s not removed, e.g. %s",
                  s->failed, jobs_dir, s->first_err);
    free(s->ids);
    s->ids = NULL;
    s->n = s->at = 0;
    if (s->jfd >= 0)
        close(s->jfd);
    s->jfd = -1;
}

/* One step: at most budget entries of the directories left. */
static void step(tessd_t *d, struct tessd_retention *s, long budget)
{
    while (s->at < s->n && budget > 0) {
        char name[24];
        snprintf(name, sizeof name, "%lld", (long long)s->ids[s->at]);
        long before = s->entries;
        int r = tessd_remove_tree_step(s->jfd, name, &budget, &s->entries);
        if (r == 0 && s->entries == before) {
            /* A whole step's budget spent and nothing removed: what is left cannot be
             * (entries that fail again at each step); counted as failed, not tried for ever. */
            r = -1;
            errno = EPERM;
        }
        if (r == 0)
            return; /* the budget ran out: this directory goes on at the next step */
        if (r == 1)
            s->removed++;
        else if (s->failed++ == 0)
            snprintf(s->first_err, sizeof s->first_err, "%.23s: %.39s", name, strerror(errno));
        s->at++;
    }
    if (s->at >= s->n)
        end(s, d->jobs_dir);
}

int64_t tessd_retention_run(tessd_t *d, int64_t mono)
{
    struct tessd_retention *s = state(d);
    if (!s)
        return TESSD_RETENTION_STEP_GAP_MS;
    if (s->at < s->n) {
        if (mono < s->next_step)
            return s->next_step - mono;
        step(d, s, d->test_retention_step ? d->test_retention_step : TESSD_RETENTION_STEP);
        s->next_step = mono + TESSD_RETENTION_STEP_GAP_MS;
        if (s->at < s->n)
            return TESSD_RETENTION_STEP_GAP_MS;
        /* Done: a full batch is followed by the next at once. */
        s->next = s->full ? mono : mono + TESSD_RETENTION_PERIOD_MS;
    }
    if (mono < s->next)
        return s->next - mono;
    s->next = mono + TESSD_RETENTION_PERIOD_MS;
    if (d->job_log_retention_s <= 0)
        return TESSD_RETENTION_PERIOD_MS;
    if (begin(d, s) < 0 || s->n == 0)
        return TESSD_RETENTION_PERIOD_MS;
    s->next_step = mono;
    return 0;
}

void tessd_retention_due(tessd_t *d)
{
    struct tessd_retention *s = state(d);
    if (s)
        s->next = 0;
}

bool tessd_retention_busy(const tessd_t *d)
{
    return d->retention && d->retention->at < d->retention->n;
}

void tessd_retention_free(tessd_t *d)
{
    if (d->retention) {
        free(d->retention->ids);
        if (d->retention->jfd >= 0)
            close(d->retention->jfd);
        free(d->retention);
        d->retention = NULL;
    }
}
