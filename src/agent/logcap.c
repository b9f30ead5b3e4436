/* logcap.c - head + tail log writer with a size limit (see logcap.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/logcap.h"

struct tagent_logcap {
    int fd;
    uint64_t limit;    /* 0 = none */
    uint64_t head_cap; /* bytes the head may hold (limit - tail_cap) */
    uint64_t in_file;  /* bytes stored in the file (head), markers excluded */
    size_t tail_cap;   /* T */
    char *ring;        /* the tail: tail_cap bytes, allocated when the head is full */
    size_t ring_pos;   /* next byte to write in ring */
    uint64_t over;     /* bytes taken after the head was full */
    uint64_t lost;     /* bytes a write failed to store since the last marker */
    int lost_err;
    char last;       /* last byte stored in the file ('\n' at start) */
    int err;         /* first write error, for close */
    uint64_t pos;    /* the file's size: what it held, plus every byte stored since */
    int idx_fd;      /* time index, -1 if none */
    int64_t idx_sec; /* second of the last index line (-1: none yet) */
    int64_t now;     /* time of the write in progress */
};

tagent_logcap_t *tagent_logcap_open(int fd, uint64_t limit, uint64_t already, size_t tail_max)
{
    tagent_logcap_t *lc = calloc(1, sizeof *lc);
    if (!lc)
        return NULL;
    lc->fd = fd;
    lc->limit = limit;
    lc->last = '\n';
    if (limit) {
        uint64_t t = limit / 2 < tail_max ? limit / 2 : tail_max;
        lc->tail_cap = (size_t)t;
        lc->head_cap = limit - t;
    }
    lc->in_file = already;
    lc->pos = already;
    lc->idx_fd = -1;
    lc->idx_sec = -1;
    return lc;
}

void tagent_logcap_set_index(tagent_logcap_t *lc, int idx_fd)
{
    if (!lc) {
        if (idx_fd >= 0)
            close(idx_fd);
        return;
    }
    if (lc->idx_fd >= 0)
        close(lc->idx_fd);
    lc->idx_fd = idx_fd;
}

/* Before bytes go to the file at lc->pos: a line for the second they are written in, the
 * first time in that second. */
static void index_mark(tagent_logcap_t *lc)
{
    if (lc->idx_fd < 0 || lc->now == lc->idx_sec)
        return;
    char line[48];
    int n =
        snprintf(line, sizeof line, "%lld %llu\n", (long long)lc->now, (unsigned long long)lc->pos);
    ssize_t w;
    do
        w = write(lc->idx_fd, line, (size_t)n);
    while (w < 0 && errno == EINTR);
    lc->idx_sec = lc->now;
}

/* Write all of buf; on failure count what was not stored.  Returns bytes stored. */
static size_t store(tagent_logcap_t *lc, const char *buf, size_t len)
{
    size_t off = 0;
    if (len)
        index_mark(lc);
    while (off < len) {
        ssize_t n = write(lc->fd, buf + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : ENOSPC;
            if (!lc->err)
                lc->err = e;
            if (!lc->lost)
                lc->lost_err = e;
            lc->lost += len - off;
            break;
        }
        off += (size_t)n;
    }
    if (off)
        lc->last = buf[off - 1];
    lc->pos += off;
    return off;
}

/* One line, on a line of its own. */
static bool store_line(tagent_logcap_t *lc, const char *line)
{
    char buf[192];
    int n = snprintf(buf, sizeof buf, "%s%s\n", lc->last == '\n' ? "" : "\n", line);
    if (n <= 0)
        return false;
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    uint64_t lost = lc->lost;
    bool ok = store(lc, buf, len) == len;
    if (!ok)
        lc->lost = lost; /* a marker is not output: it is not counted as lost */
    return ok;
}

/* Before output that follows a gap: the line that says how much was lost. */
static void mark_lost(tagent_logcap_t *lc)
{
    if (!lc->lost)
        return;
    char line[160];
    snprintf(line, sizeof line, "[tessel: %llu bytes lost here: %s]", (unsigned long long)lc->lost,
             strerror(lc->lost_err));
    uint64_t lost = lc->lost;
    lc->lost = 0;
    if (!store_line(lc, line))
        lc->lost = lost;
}

/* Store bytes of the head, after the mark of an earlier loss when there was one. */
static void store_head(tagent_logcap_t *lc, const char *buf, size_t len)
{
    mark_lost(lc);
    if (lc->lost) {
        /* Still failing: these are lost too. */
        lc->lost += len;
        return;
    }
    lc->in_file += store(lc, buf, len);
}

void tagent_logcap_write(tagent_logcap_t *lc, const void *data, size_t len)
{
    tagent_logcap_write_at(lc, data, len, (int64_t)time(NULL));
}

void tagent_logcap_write_at(tagent_logcap_t *lc, const void *data, size_t len, int64_t now)
{
    const char *buf = data;
    if (!lc || len == 0)
        return;
    lc->now = now;
    if (!lc->limit) {
        store_head(lc, buf, len);
        return;
    }
    if (lc->over == 0 && lc->in_file + lc->lost < lc->head_cap) {
        uint64_t room = lc->head_cap - lc->in_file - lc->lost;
        size_t n = len < room ? len : (size_t)room;
        store_head(lc, buf, n);
        buf += n;
        len -= n;
        if (len == 0)
            return;
    }
    /* The head is full: the last tail_cap bytes are kept in the ring. */
    if (lc->tail_cap == 0) {
        lc->over += len;
        return;
    }
    if (!lc->ring) {
        lc->ring = malloc(lc->tail_cap);
        if (!lc->ring) {
            /* No memory for the tail: what follows the head is dropped. */
            lc->tail_cap = 0;
            lc->over += len;
            return;
        }
    }
    lc->over += len;
    if (len >= lc->tail_cap) {
        memcpy(lc->ring, buf + len - lc->tail_cap, lc->tail_cap);
        lc->ring_pos = 0;
        return;
    }
    size_t first = lc->tail_cap - lc->ring_pos;
    if (first > len)
        first = len;
    memcpy(lc->ring + lc->ring_pos, buf, first);
    memcpy(lc->ring, buf + first, len - first);
    lc->ring_pos = (lc->ring_pos + len) % lc->tail_cap;
}

uint64_t tagent_logcap_dropped(const tagent_logcap_t *lc)
{
    if (!lc)
        return 0;
    return lc->over > lc->tail_cap ? lc->over - lc->tail_cap : 0;
}

/* "64 MiB", "1536 KiB", "1000 bytes" */
static void limit_text(uint64_t v, char *buf, size_t len)
{
    if (v >= (1ull << 30) && v % (1ull << 30) == 0)
        snprintf(buf, len, "%llu GiB", (unsigned long long)(v >> 30));
    else if (v >= (1ull << 20) && v % (1ull << 20) == 0)
        snprintf(buf, len, "%llu MiB", (unsigned long long)(v >> 20));
    else if (v >= 1024 && v % 1024 == 0)
        snprintf(buf, len, "%llu KiB", (unsigned long long)(v >> 10));
    else
        snprintf(buf, len, "%llu bytes", (unsigned long long)v);
}

int tagent_logcap_close(tagent_logcap_t *lc)
{
    if (!lc)
        return 0;
    lc->now = (int64_t)time(NULL);
    uint64_t dropped = tagent_logcap_dropped(lc);
    if (dropped) {
        char lim[32], line[160];
        limit_text(lc->limit, lim, sizeof lim);
        snprintf(line, sizeof line, "[tessel: %llu bytes dropped here: log limit %s]",
                 (unsigned long long)dropped, lim);
        mark_lost(lc);
        store_line(lc, line);
    }
    if (lc->over && lc->ring) {
        /* The ring in order, oldest first: from 0 while it is not full, else from ring_pos. */
        if (lc->over < lc->tail_cap) {
            store_head(lc, lc->ring, (size_t)lc->over);
        } else {
            store_head(lc, lc->ring + lc->ring_pos, lc->tail_cap - lc->ring_pos);
            store_head(lc, lc->ring, lc->ring_pos);
        }
    }
    mark_lost(lc);
    int err = lc->err;
    if (close(lc->fd) < 0 && !err)
        err = errno;
    if (lc->idx_fd >= 0)
        close(lc->idx_fd);
    free(lc->ring);
    free(lc);
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

int tagent_logidx_since(int idx_fd, int64_t since, uint64_t *off)
{
    int fd = dup(idx_fd);
    FILE *f = fd >= 0 && lseek(fd, 0, SEEK_SET) == 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return -1;
    }
    char line[64];
    int rc = 1;
    while (fgets(line, sizeof line, f)) {
        long long sec;
        unsigned long long o;
        char nl;
        if (sscanf(line, "%lld %llu%c", &sec, &o, &nl) != 3 || nl != '\n')
            continue;
        if (sec >= since) {
            *off = o;
            rc = 0;
            break;
        }
    }
    if (rc == 1 && ferror(f))
        rc = -1;
    int e = errno;
    fclose(f);
    errno = e;
    return rc;
}

/* Read back from the end in blocks of this size. */
#define TAIL_BLOCK 65536

int tagent_log_tail(int fd, uint64_t size, uint64_t n, uint64_t *off)
{
    char *buf = malloc(TAIL_BLOCK);
    if (!buf)
        return -1;
    uint64_t end = size, seen = 0;
    *off = 0;
    while (end > 0) {
        size_t len = end < TAIL_BLOCK ? (size_t)end : TAIL_BLOCK;
        uint64_t start = end - len;
        ssize_t r;
        do
            r = pread(fd, buf, len, (off_t)start);
        while (r < 0 && errno == EINTR);
        if (r != (ssize_t)len) {
            if (r >= 0)
                errno = EIO;
            free(buf);
            return -1;
        }
        for (size_t i = len; i-- > 0;) {
            /* The log's last newline ends the last line: it does not start one. */
            if (start + i == size - 1 && buf[i] == '\n')
                continue;
            if (buf[i] == '\n' && ++seen == n) {
                *off = start + i + 1;
                free(buf);
                return 0;
            }
        }
        end = start;
    }
    free(buf);
    return 0;
}
