/* term.c - a job's terminal messages and the detach key sequence (see term.h). */
#include <errno.h>
#include <string.h>

#include "libutil/term.h"

unsigned tsl_term_clamp(unsigned v)
{
    return v < 1 ? 1 : v > TSL_TERM_DIM_MAX ? TSL_TERM_DIM_MAX : v;
}

int tsl_term_parse(const void *msg, size_t len, tsl_term_msg_t *out)
{
    const uint8_t *m = msg;
    if (!m || len < 1) {
        errno = EINVAL;
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->type = (char)m[0];
    out->data = m + 1;
    out->len = len - 1;
    size_t max;
    switch (m[0]) {
    case TSL_TERM_INPUT:
        max = TSL_TERM_INPUT_MAX;
        if (out->len == 0) {
            errno = EINVAL;
            return -1;
        }
        break;
    case TSL_TERM_OUTPUT:
        max = TSL_TERM_OUTPUT_MAX;
        break;
    case TSL_TERM_NOTICE:
    case TSL_TERM_EXIT:
        max = TSL_TERM_TEXT_MAX;
        break;
    case TSL_TERM_ATTACH:
        max = 0;
        break;
    case TSL_TERM_EXEC:
        max = TSL_TERM_OUTPUT_MAX;
        if (out->len < 2 || m[len - 1] != '\0') {
            errno = EINVAL;
            return -1;
        }
        break;
    case TSL_TERM_RESIZE:
        if (out->len != 4) {
            errno = EINVAL;
            return -1;
        }
        out->rows = tsl_term_clamp((unsigned)m[1] << 8 | m[2]);
        out->cols = tsl_term_clamp((unsigned)m[3] << 8 | m[4]);
        out->data = NULL;
        out->len = 0;
        return 0;
    default:
        errno = EINVAL;
        return -1;
    }
    if (out->len > max) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

int tsl_term_exec_argv(const tsl_term_msg_t *m, char *buf, char **argv)
{
    if (m->type != TSL_TERM_EXEC || m->len < 2 || m->data[m->len - 1] != '\0' ||
        m->data[0] == '\0') {
        errno = EINVAL;
        return -1;
    }
    memcpy(buf, m->data, m->len);
    int n = 0;
    for (size_t off = 0; off < m->len; off += strlen(buf + off) + 1) {
        if (n == TSL_TERM_EXEC_ARGS) {
            errno = EINVAL;
            return -1;
        }
        argv[n++] = buf + off;
    }
    argv[n] = NULL;
    return n;
}

size_t tsl_term_resize_msg(uint8_t out[5], unsigned rows, unsigned cols)
{
    rows = tsl_term_clamp(rows);
    cols = tsl_term_clamp(cols);
    out[0] = TSL_TERM_RESIZE;
    out[1] = (uint8_t)(rows >> 8);
    out[2] = (uint8_t)rows;
    out[3] = (uint8_t)(cols >> 8);
    out[4] = (uint8_t)cols;
    return 5;
}

bool tsl_term_detach_feed(tsl_term_detach_t *d, const uint8_t *in, size_t n, uint8_t *out,
                          size_t *outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = in[i];
        if (d->pending) {
            d->pending = false;
            if (c == TSL_TERM_DETACH_2) {
                *outlen = o;
                return true;
            }
            out[o++] = TSL_TERM_DETACH_1;
            if (c == TSL_TERM_DETACH_1) {
                /* Ctrl-P Ctrl-P: the first goes, the second may start the sequence. */
                d->pending = true;
                continue;
            }
            out[o++] = c;
            continue;
        }
        if (c == TSL_TERM_DETACH_1) {
            d->pending = true;
            continue;
        }
        out[o++] = c;
    }
    *outlen = o;
    return false;
}
