/* fmt.c - output helpers of `tessel`: aligned tables, GPU shares, ages, API times, and the
 * escaping of text from the API before it reaches a terminal (cli_escape). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/tessel/cli.h"
#include "libutil/size.h"

char *cli_format_milli(int64_t milli, char *buf, size_t len)
{
    if (milli % 1000 == 0) {
        snprintf(buf, len, "%lld", (long long)(milli / 1000));
        return buf;
    }
    snprintf(buf, len, "%lld.%03lld", (long long)(milli / 1000), (long long)(milli % 1000));
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == '0')
        buf[--n] = '\0';
    return buf;
}

char *cli_format_age(int64_t secs, char *buf, size_t len)
{
    if (secs < 0)
        secs = 0;
    if (secs < 120)
        snprintf(buf, len, "%llds", (long long)secs);
    else if (secs < 2 * 3600)
        snprintf(buf, len, "%lldm", (long long)(secs / 60));
    else if (secs < 2 * 86400)
        snprintf(buf, len, "%lldh", (long long)(secs / 3600));
    else
        snprintf(buf, len, "%lldd", (long long)(secs / 86400));
    return buf;
}

char *cli_format_inherited(const char *value, const char *from, const char *queue, const char *none,
                           char *buf, size_t len)
{
    if (!from)
        snprintf(buf, len, "%s", none);
    else if (!queue || strcmp(from, queue) != 0)
        snprintf(buf, len, "%s(%.64s)", value, from);
    else
        snprintf(buf, len, "%s", value);
    return buf;
}

int64_t cli_parse_time(const char *s)
{
    if (!s)
        return -1;
    struct tm tm = {0};
    int n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &n) != 6 ||
        n == 0)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm);
}

/* Length of the valid UTF-8 sequence at s (2..4), or 0 when s does not start one (a stray
 * continuation byte, an overlong form, a surrogate, above U+10FFFF, or cut short).  *cp gets
 * the code point. */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
    size_t n;
    uint32_t c, min;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2, c = s[0] & 0x1fu, min = 0x80;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3, c = s[0] & 0x0fu, min = 0x800;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4, c = s[0] & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
            return 0;
        c = c << 6 | (s[i] & 0x3fu);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

/* Code points a terminal acts on or that reorder the text around them: C1 controls and the
 * bidirectional overrides and isolates ("Trojan Source"). */
static bool cp_is_control(uint32_t c)
{
    return (c >= 0x80 && c <= 0x9f) || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
           (c >= 0x2066 && c <= 0x2069);
}

char *cli_escape(const char *s)
{
    if (!s)
        s = "";
    /* Worst case: every byte becomes "\xHH" (4 bytes); a 2..4-byte sequence "\uHHHH" (6). */
    size_t cap = strlen(s) * 4 + 1;
    char *out = malloc(cap);
    if (!out)
        abort();
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned char b = *p;
        if (b >= 0x20 && b < 0x7f) {
            out[o++] = (char)b;
            p++;
            continue;
        }
        if (b < 0x80) {
            const char *named = b == '\n' ? "\\n" : b == '\t' ? "\\t" : b == '\r' ? "\\r" : NULL;
            if (named)
                o += (size_t)sprintf(out + o, "%s", named);
            else
                o += (size_t)sprintf(out + o, "\\x%02x", b); /* other C0 controls, DEL */
            p++;
            continue;
        }
        uint32_t cp;
        size_t n = utf8_seq(p, &cp);
        if (n == 0) {
            o += (size_t)sprintf(out + o, "\\x%02x", b); /* not UTF-8: the byte's value */
            p++;
        } else if (cp_is_control(cp)) {
            o += (size_t)sprintf(out + o, "\\u%04x", (unsigned)cp);
            p += n;
        } else {
            memcpy(out + o, p, n);
            o += n;
            p += n;
        }
    }
    out[o] = '\0';
    return out;
}

struct cli_table {
    int ncols;
    char **headers;
    bool *right;
    char **cells; /* rows * ncols */
    size_t rows, cap;
};

cli_table_t *cli_table_new(int ncols, const char *const *headers)
{
    cli_table_t *t = calloc(1, sizeof *t);
    if (!t)
        abort();
    t->ncols = ncols;
    t->headers = calloc((size_t)ncols, sizeof *t->headers);
    t->right = calloc((size_t)ncols, sizeof *t->right);
    if (!t->headers || !t->right)
        abort();
    for (int i = 0; i < ncols; i++) {
        const char *h = headers[i];
        if (*h == '>') {
            t->right[i] = true;
            h++;
        }
        if (!(t->headers[i] = strdup(h)))
            abort();
    }
    return t;
}

void cli_table_add(cli_table_t *t, const char *const *cells)
{
    if (t->rows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = realloc(t->cells, t->cap * (size_t)t->ncols * sizeof *t->cells);
        if (!t->cells)
            abort();
    }
    for (int i = 0; i < t->ncols; i++) {
        char *c = cli_escape(cells[i] ? cells[i] : "-");
        t->cells[t->rows * (size_t)t->ncols + (size_t)i] = c;
    }
    t->rows++;
}

/* Columns a cell takes on a terminal: its UTF-8 characters (continuation bytes take none). */
static size_t width_of(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            n++;
    return n;
}

static void pad(size_t n, FILE *f)
{
    for (; n > 0; n--)
        fputc(' ', f);
}

static void print_row(const cli_table_t *t, const size_t *w, char *const *row, FILE *f)
{
    for (int i = 0; i < t->ncols; i++) {
        bool last = i == t->ncols - 1;
        size_t cw = width_of(row[i]);
        if (t->right[i])
            pad(w[i] - cw, f);
        fputs(row[i], f);
        if (!t->right[i] && !last)
            pad(w[i] - cw, f);
        fputs(last ? "\n" : "  ", f);
    }
}

void cli_table_print(cli_table_t *t, FILE *f)
{
    size_t *w = calloc((size_t)t->ncols, sizeof *w);
    if (!w)
        abort();
    for (int i = 0; i < t->ncols; i++) {
        w[i] = width_of(t->headers[i]);
        for (size_t r = 0; r < t->rows; r++) {
            size_t l = width_of(t->cells[r * (size_t)t->ncols + (size_t)i]);
            if (l > w[i])
                w[i] = l;
        }
    }
    print_row(t, w, t->headers, f);
    for (size_t r = 0; r < t->rows; r++)
        print_row(t, w, t->cells + r * (size_t)t->ncols, f);
    free(w);
    cli_table_free(t);
}

void cli_table_free(cli_table_t *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->ncols; i++)
        free(t->headers[i]);
    for (size_t k = 0; k < t->rows * (size_t)t->ncols; k++)
        free(t->cells[k]);
    free(t->cells);
    free(t->headers);
    free(t->right);
    free(t);
}

char *cli_format_state(const json_t *job, char *buf, size_t len)
{
    const char *st = json_string_value(json_object_get(job, "state"));
    json_int_t n = json_integer_value(json_object_get(job, "preemptions"));
    if (!st)
        st = "?";
    bool active =
        strcmp(st, "pending") == 0 || strcmp(st, "running") == 0 || strcmp(st, "suspended") == 0;
    /* A suspended job says whether its in-flight GPU work has drained. */
    const char *drain = "";
    char dbuf[128];
    if (strcmp(st, "suspended") == 0) {
        drain = json_is_true(json_object_get(job, "drained")) ? ", drained" : ", draining";
        /* And how much GPU memory it gave back, when its GPU state was checkpointed. */
        json_int_t rel = json_integer_value(json_object_get(job, "gpu_released"));
        if (rel > 0) {
            char sz[32];
            snprintf(dbuf, sizeof dbuf, "%s, gpu released %s", drain,
                     tsl_format_size((uint64_t)rel, sz, sizeof sz));
            drain = dbuf;
        }
        /* Suspended by a preemption: for which job (resumed once it has room again). */
        json_int_t pf = json_integer_value(json_object_get(job, "suspended_for"));
        if (pf > 0) {
            char more[160];
            snprintf(more, sizeof more, "%.90s, preempted for job %lld", drain, (long long)pf);
            snprintf(dbuf, sizeof dbuf, "%.127s", more);
            drain = dbuf;
        }
        /* Given its memory back while idle (docs/suspend.md, "Idle reclamation"): resumed by
         * its next CUDA call. */
        const char *why = json_string_value(json_object_get(job, "suspended_reason"));
        if (why && strcmp(why, "idle") == 0) {
            char more[160];
            snprintf(more, sizeof more, "%.90s, reclaimed while idle", drain);
            snprintf(dbuf, sizeof dbuf, "%.127s", more);
            drain = dbuf;
        }
    }
    /* A job ended `preempted` says so already, unless it had been requeued before. */
    if (n <= 0 || (strcmp(st, "preempted") == 0 && n == 1))
        snprintf(buf, len, "%s%s%s%s", st, *drain ? " (" : "", *drain ? drain + 2 : "",
                 *drain ? ")" : "");
    else
        snprintf(buf, len, "%s (%s \u00d7%lld%s)", st, active ? "requeued" : "preempted",
                 (long long)n, drain);
    return buf;
}
