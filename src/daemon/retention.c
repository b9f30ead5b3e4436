/* retention.c - removal of old jobs' directories (retention.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/retention.h"
#include "libutil/duration.h"

static int remove_at(int dirfd, const char *name, int depth)
{
    if (depth > 64) {
        errno = ELOOP;
        return -1;
    }
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOTDIR || errno == ELOOP ? unlinkat(dirfd, name, 0) : -1;
    DIR *dir = fdopendir(fd);
    if (!dir) {
        close(fd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone meanwhile */
        if (S_ISDIR(st.st_mode) ? remove_at(fd, e->d_name, depth + 1) < 0
                                : unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT)
            rc = -1;
    }
    int saved = errno;
    closedir(dir);
    if (rc < 0) {
        errno = saved;
        return -1;
    }
    return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -1 : 0;
}

int tessd_remove_tree(int dirfd, const char *name)
{
    return remove_at(dirfd, name, 0);
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int tessd_retention_sweep(tessd_t *d, int64_t now_ms)
{
    if (d->job_log_retention_s <= 0)
        return 0;
    int64_t cutoff = now_ms - d->job_log_retention_s * 1000;
    int jfd = open(d->jobs_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *dir = jfd >= 0 ? fdopendir(jfd) : NULL;
    if (!dir) {
        tessd_log("warning: job-log retention: %s: %s", d->jobs_dir, strerror(errno));
        if (jfd >= 0)
            close(jfd);
        return -1;
    }
    /* The jobs that have a directory (names that are ids only). */
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
    if (!ids) {
        closedir(dir);
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
    /* Remove them, without the lock: nothing else writes an ended job's directory. */
    int removed = 0, failed = 0;
    char first_err[72] = "";
    for (size_t i = 0; i < old; i++) {
        char name[24];
        snprintf(name, sizeof name, "%lld", (long long)ids[i]);
        if (tessd_remove_tree(dirfd(dir), name) == 0) {
            removed++;
        } else if (failed++ == 0) {
            snprintf(first_err, sizeof first_err, "%.23s: %.39s", name, strerror(errno));
        }
    }
    closedir(dir);
    free(ids);
    char keep[32];
    tsl_format_seconds(d->job_log_retention_s, keep, sizeof keep);
    if (removed)
        tessd_log("job-log retention: removed the directories (logs) of %d job(s) that ended "
                  "more than %s ago",
                  removed, keep);
    if (failed)
        tessd_log("warning: job-log retention: %d directory(ies) of %s not removed, e.g. %s",
                  failed, d->jobs_dir, first_err);
    if (rc < 0)
        return -1;
    return old >= TESSD_RETENTION_BATCH ? TESSD_RETENTION_BATCH : removed;
}
