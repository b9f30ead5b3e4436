/* subproto.c - the frames between tesseld and tessel-slurm-submit (subproto.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "slurmsub/subproto.h"

int64_t tss_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is ready for events, by deadline_ms (-1: do not wait, fd is blocking).  0, or
 * -1 with errno ETIMEDOUT. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    if (deadline_ms < 0)
        return 0;
    for (;;) {
        int64_t left = deadline_ms - tss_mono_ms();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

static int write_all(int fd, const unsigned char *b, size_t len, int64_t deadline_ms)
{
    while (len) {
        if (wait_fd(fd, POLLOUT, deadline_ms) < 0)
            return -1;
        ssize_t w = write(fd, b, len);
        if (w < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (w <= 0)
            return -1;
        b += w;
        len -= (size_t)w;
    }
    return 0;
}

/* 1 when all len bytes were read, 0 at end of file before the first, -1 with errno. */
static int read_all(int fd, unsigned char *b, size_t len, int64_t deadline_ms)
{
    size_t got = 0;
    while (got < len) {
        if (wait_fd(fd, POLLIN, deadline_ms) < 0)
            return -1;
        ssize_t r = read(fd, b + got, len - got);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r < 0)
            return -1;
        if (r == 0) {
            if (got == 0)
                return 0;
            errno = EPROTO;
            return -1;
        }
        got += (size_t)r;
    }
    return 1;
}

int tss_frame_write(int fd, const char *buf, size_t len, int64_t deadline_ms)
{
    if (len > UINT32_MAX) {
        errno = EMSGSIZE;
        return -1;
    }
    unsigned char h[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16),
                          (unsigned char)(len >> 8), (unsigned char)len};
    if (write_all(fd, h, 4, deadline_ms) < 0)
        return -1;
    return write_all(fd, (const unsigned char *)buf, len, deadline_ms);
}

int tss_frame_read(int fd, size_t max, int64_t deadline_ms, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    unsigned char h[4];
    int rc = read_all(fd, h, 4, deadline_ms);
    if (rc == 0)
        errno = ENODATA;
    if (rc <= 0)
        return -1;
    size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
    if (n > max) {
        errno = EMSGSIZE;
        return -1;
    }
    char *b = malloc(n + 1);
    if (!b)
        return -1;
    rc = n ? read_all(fd, (unsigned char *)b, n, deadline_ms) : 1;
    if (rc <= 0) {
        if (rc == 0)
            errno = EPROTO;
        free(b);
        return -1;
    }
    b[n] = '\0';
    *out = b;
    *len = n;
    return 0;
}

int tss_answer_parse(const char *text, size_t len, int64_t *job_id, int *code, char *msg,
                     size_t msglen, tsl_error_t *err)
{
    *job_id = 0;
    *code = 0;
    msg[0] = '\0';
    json_error_t je;
    json_t *a = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    json_t *id = json_object_get(a, "job_id"), *e = json_object_get(a, "errno");
    json_t *et = json_object_get(a, "error"), *lg = json_object_get(a, "log");
    int rc = -1;
    /* Those keys and nothing else: an answer with more is not the submitter's. */
    size_t keys = json_is_object(a) ? json_object_size(a) : 0;
    if (json_is_object(a) && json_is_integer(id) && keys == 1 && json_integer_value(id) > 0 &&
        json_integer_value(id) <= UINT32_MAX) {
        *job_id = json_integer_value(id);
        rc = 0;
    } else if (json_is_object(a) && !id && json_is_integer(e) && json_is_string(et) &&
               (!lg || json_is_string(lg)) && keys == (lg ? 3u : 2u) &&
               json_integer_value(e) != 0 && json_integer_value(e) >= -1 &&
               json_integer_value(e) < 100000) {
        *code = (int)json_integer_value(e);
        const char *l = lg ? json_string_value(lg) : "";
        size_t ll = strnlen(l, TSS_LOG_MAX);
        snprintf(msg, msglen, "%.*s%ssbatch: error: Batch job submission failed: %.200s", (int)ll,
                 l, ll && l[ll - 1] != '\n' ? "\n" : "", json_string_value(et));
        rc = 1;
    } else {
        errno = EPROTO;
        tsl_errprintf(err, "tessel-slurm-submit: not an answer (%s)", a ? "its shape" : je.text);
    }
    json_decref(a);
    return rc;
}
