/* logcap.c - head + tail log writer with a size limit (see logcap.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* The index is read in windows of this size: a well-formed line is at most 42 bytes
 * ("-9223372036854775808 18446744073709551615\n"), so a window holds about 200 of them, and a
 * search of an index of any size reads at most 52 windows and a final 3 (about 220 KiB). */
#define IDX_WINDOW 4096
/* Lines this long or longer are no index lines: skipped unparsed. */
#define IDX_LINE_MAX 64

/* The first well-formed index line whose second is at least since, among the whole lines that
 * start at or after pos, reading at most max bytes from pos - 1 (pread: no offset moves).  1
 * found (*sec, *o), 0 none within max bytes or before the end, -1 with errno. */
static int idx_first(int fd, uint64_t pos, uint64_t max, int64_t since, int64_t *sec, uint64_t *o)
{
    char buf[IDX_WINDOW];
    uint64_t at = pos ? pos - 1 : 0, end = at + max;
    bool in_line = pos == 0; /* buf starts at a line's start (else: skip to a newline) */
    size_t have = 0;         /* bytes of a partial line carried at buf's start */
    while (at < end) {
        size_t want = sizeof buf - have;
        if (want > end - at)
            want = (size_t)(end - at);
        ssize_t r;
        do
            r = pread(fd, buf + have, want, (off_t)at);
        while (r < 0 && errno == EINTR);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        at += (uint64_t)r;
        size_t len = have + (size_t)r, start = 0;
        if (!in_line) {
            const char *nl = memchr(buf, '\n', len);
            if (!nl) {
                have = 0;
                continue;
            }
            start = (size_t)(nl - buf) + 1;
            in_line = true;
        }
        for (;;) {
            const char *nl = memchr(buf + start, '\n', len - start);
            if (!nl)
                break;
            size_t ll = (size_t)(nl - (buf + start)) + 1;
            if (ll < IDX_LINE_MAX) {
                char line[IDX_LINE_MAX];
                memcpy(line, buf + start, ll);
                line[ll] = '\0';
                long long s;
                unsigned long long v;
                char c;
                if (sscanf(line, "%lld %llu%c", &s, &v, &c) == 3 && c == '\n' && s >= since) {
                    *sec = s;
                    *o = v;
                    return 1;
                }
            }
            start += ll;
        }
        have = len - start;
        if (have >= IDX_LINE_MAX) {
            in_line = false; /* no index line: skip to its end */
            have = 0;
        } else {
            memmove(buf, buf + start, have);
        }
    }
    return 0;
}

int tagent_logidx_since(int idx_fd, int64_t since, uint64_t *off)
{
    struct stat st;
    if (fstat(idx_fd, &st) < 0)
        return -1;
    /* Bisection on byte positions: lo's first line is earlier than since (or lo is 0), the
     * first line at or after hi is not (or there is none).  A probe that finds no well-formed
     * line within a window (a hole, junk) moves hi: the search stays bounded whatever the file
     * holds, and is exact for an index the shim wrote (its seconds never decrease). */
    uint64_t lo = 0, hi = (uint64_t)st.st_size;
    while (hi - lo > IDX_WINDOW) {
        uint64_t mid = lo + (hi - lo) / 2, o;
        int64_t sec;
        int r = idx_first(idx_fd, mid, IDX_WINDOW, INT64_MIN, &sec, &o);
        if (r < 0)
            return -1;
        if (r == 1 && sec < since)
            lo = mid;
        else
            hi = mid;
    }
    int64_t sec;
    int r = idx_first(idx_fd, lo, hi - lo + 2 * IDX_WINDOW, since, &sec, off);
    return r < 0 ? -1 : r == 1 ? 0 : 1;
}

/* Read back from the end in blocks of this size. */
#define TAIL_BLOCK 65536

int tagent_log_tail(int fd, uint64_t size, uint64_t n, uint64_t max, uint64_t *off)
{
    char *buf = malloc(TAIL_BLOCK);
    if (!buf)
        return -1;
    uint64_t floor = size > max ? size - max : 0, end = size, seen = 0;
    *off = 0;
    while (end > floor) {
        size_t len = end - floor < TAIL_BLOCK ? (size_t)(end - floor) : TAIL_BLOCK;
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
    *off = floor;
    return floor > 0 ? 1 : 0;
}
