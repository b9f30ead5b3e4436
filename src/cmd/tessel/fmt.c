/* fmt.c - output helpers of `tessel`: aligned tables, GPU shares, ages, API times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/tessel/cli.h"

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
        char *c = strdup(cells[i] ? cells[i] : "-");
        if (!c)
            abort();
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
    if (strcmp(st, "suspended") == 0)
        drain = json_is_true(json_object_get(job, "drained")) ? ", drained" : ", draining";
    /* A job ended `preempted` says so already, unless it had been requeued before. */
    if (n <= 0 || (strcmp(st, "preempted") == 0 && n == 1))
        snprintf(buf, len, "%s%s%s%s", st, *drain ? " (" : "", *drain ? drain + 2 : "",
                 *drain ? ")" : "");
    else
        snprintf(buf, len, "%s (%s \u00d7%lld%s)", st, active ? "requeued" : "preempted",
                 (long long)n, drain);
    return buf;
}
