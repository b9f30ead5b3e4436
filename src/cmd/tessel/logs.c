/* logs.c - `tessel logs`: a job's output, stdout to stdout and stderr to stderr (two
 * requests at once), optionally followed until the job has finished; with --json, both as
 * JSON Lines on stdout (docs/cli.md). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/tessel/cli.h"
#include "libutil/when.h"
#include "libutil/utf8.h"

/* --json: a line longer than this is cut into several objects (a job writing progress with
 * '\r' and no '\n' still shows up). */
#define LOGS_JSON_MAX_LINE 65536

/* As `tessel run`: how long -f keeps trying to reach a tesseld that went away, and the pause
 * between two attempts. */
#define LOGS_RECONNECT_S 60
#define LOGS_RETRY_MS    250

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: tessel logs [-f] [--tail N] [--since T] [--stdout | --stderr] [--json] JOB\n"
        "Print a job's output: its stdout on stdout, its stderr on stderr.\n"
        "\n"
        "  -f, --follow     keep printing new output until the job has finished (across\n"
        "                   a restart of tesseld)\n"
        "  -n, --tail N     only the last N lines of each stream (then new output, with -f)\n"
        "  --since T        only output written since T: a duration before now (10m, 2h,\n"
        "                   1h30m) or a time (2026-11-26T07:00:00Z, \"2026-11-26 08:00:00\"\n"
        "                   in this machine's time zone); with --tail, the later start\n"
        "  --stdout         only its stdout\n"
        "  --stderr         only its stderr\n"
        "  --json           both streams on stdout as JSON Lines, one object per line of\n"
        "                   output: {\"stream\": \"stdout\", \"offset\": N, \"data\": \"...\"}\n");
}

/* ---- --json ---- */

/* One stream's output not yet printed: the bytes after its last newline. */
typedef struct {
    const char *stream;
    uint64_t offset;          /* of buf[0] in the stream */
    const tclient_log_t *src; /* its request: where the bytes given to write_json start */
    char *buf;
    size_t len, cap;
} json_log_t;

static char *base64(const unsigned char *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        abort();
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        *o++ = tab[(v >> 18) & 63];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        *o++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

/* Print one object for the first n bytes of l->buf and drop them.  Output that is not valid
 * UTF-8 (jansson refuses it) gets "data" with each invalid byte replaced by U+FFFD, and
 * "data_base64" with the exact bytes. */
static int json_emit(json_log_t *l, size_t n)
{
    const unsigned char *p = (const unsigned char *)l->buf;
    json_t *obj = json_pack("{s:s, s:I}", "stream", l->stream, "offset", (json_int_t)l->offset);
    json_t *data = json_stringn(l->buf, n);
    char *b64 = NULL;
    if (!data) {
        char *fixed = malloc(n * 3 + 1);
        size_t k = 0;
        if (!fixed)
            abort();
        for (size_t i = 0; i < n;) {
            size_t cl = tsl_utf8_char(p + i, n - i);
            if (cl) {
                memcpy(fixed + k, p + i, cl);
                k += cl;
                i += cl;
            } else {
                memcpy(fixed + k, "\xef\xbf\xbd", 3);
                k += 3;
                i++;
            }
        }
        data = json_stringn(fixed, k);
        free(fixed);
        b64 = base64(p, n);
    }
    json_object_set_new(obj, "data", data ? data : json_string(""));
    if (b64)
        json_object_set_new(obj, "data_base64", json_string(b64));
    free(b64);
    char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(obj);
    int r = 0;
    if (!s || printf("%s\n", s) < 0 || fflush(stdout) != 0)
        r = -1;
    free(s);
    memmove(l->buf, l->buf + n, l->len - n);
    l->len -= n;
    l->offset += n;
    return r;
}

/* Where to cut a line longer than LOGS_JSON_MAX_LINE: not inside a UTF-8 character. */
static size_t json_cut(const json_log_t *l)
{
    size_t n = LOGS_JSON_MAX_LINE;
    for (size_t back = 0; back < 4 && n > back; back++)
        if (((unsigned char)l->buf[n - back] & 0xc0) != 0x80)
            return n - back;
    return n;
}

static int write_json(const char *data, size_t len, void *arg)
{
    json_log_t *l = arg;
    /* The stream may start anywhere (--tail, --since): tclient's offset is that of data. */
    l->offset = l->src->offset - l->len;
    if (l->len + len > l->cap) {
        l->cap = l->len + len > 2 * l->cap ? l->len + len : 2 * l->cap;
        if (!(l->buf = realloc(l->buf, l->cap)))
            abort();
    }
    memcpy(l->buf + l->len, data, len);
    l->len += len;
    for (;;) {
        char *nl = memchr(l->buf, '\n', l->len);
        size_t n;
        if (nl)
            n = (size_t)(nl - l->buf) + 1;
        else if (l->len > LOGS_JSON_MAX_LINE)
            n = json_cut(l);
        else
            return 0;
        if (json_emit(l, n) < 0)
            return -1;
    }
}

/* Fetch the n streams; following, ride out a tesseld restart: resume each stream at its
 * offset.  Returns CLI_OK or CLI_ERR (the error printed). */
static int fetch(cli_t *cli, int64_t id, tclient_log_t *logs, int n, bool follow)
{
    tsl_error_t err;
    time_t lost_since = 0;
    while (tclient_logs(cli->client, id, logs, n, follow, NULL, &err) < 0) {
        if (follow && cli_conn_lost(errno)) {
            time_t now = time(NULL);
            if (!lost_since)
                lost_since = now;
            if (now - lost_since <= LOGS_RECONNECT_S) {
                struct timespec ts = {0, LOGS_RETRY_MS * 1000000L};
                nanosleep(&ts, NULL);
                json_t *probe = NULL;
                if (tclient_request(cli->client, "GET", "/v1/whoami", NULL, &probe, NULL) == 0)
                    lost_since = 0;
                json_decref(probe);
                continue;
            }
        }
        /* tesseld's messages name the job; a transfer error does not. */
        if (tclient_status(cli->client) >= 400)
            return cli_fail("%s", err.text);
        return cli_fail("job %lld: %s", (long long)id, err.text);
    }
    return CLI_OK;
}

int cmd_logs(cli_t *cli, int argc, char **argv)
{
    enum { O_STDOUT = 256, O_STDERR, O_SINCE };
    static const struct option opts[] = {
        {"follow", no_argument, NULL, 'f'},      {"stdout", no_argument, NULL, O_STDOUT},
        {"stderr", no_argument, NULL, O_STDERR}, {"json", no_argument, NULL, CLI_OPT_JSON},
        {"tail", required_argument, NULL, 'n'},  {"since", required_argument, NULL, O_SINCE},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    bool follow = false, want_out = true, want_err = true, has_tail = false, has_since = false;
    int64_t tail = 0, since = 0;
    tsl_error_t err;
    int c, rc;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":fhn:", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            follow = true;
            break;
        case 'n':
            if (cli_parse_int(optarg, 0, INT64_MAX, &tail, &err) < 0)
                return cli_usage(cli, "--tail: %s", err.text);
            has_tail = true;
            break;
        case O_SINCE:
            if (tsl_parse_when(optarg, (int64_t)time(NULL), &since, &err) < 0)
                return cli_usage(cli, "--since: %s", err.text);
            has_since = true;
            break;
        case O_STDOUT:
            want_err = false;
            break;
        case O_STDERR:
            want_out = false;
            break;
        default:
            if ((rc = cli_common_option(cli, c, argc, argv, usage)) >= 0)
                return rc;
        }
    }
    if (!want_out && !want_err)
        return cli_usage(cli, "give --stdout or --stderr, not both");
    if (optind != argc - 1)
        return cli_usage(cli, optind >= argc ? "no job id given" : "one job id at a time");
    int64_t id;
    /* slurm:N (a job submitted to Slurm directly): tesseld says why it has no logs of it. */
    if (cli_parse_slurm_ref(argv[optind], &id) == 0) {
        char path[64];
        snprintf(path, sizeof path, "/v1/jobs/slurm:%lld/logs", (long long)id);
        return cli_connect(cli) < 0 || cli_call(cli, "GET", path, NULL, NULL) < 0 ? CLI_ERR
                                                                                  : CLI_OK;
    }
    if (cli_parse_id(argv[optind], &id, &err) < 0)
        return cli_usage(cli, "%s", err.text);
    if (cli_connect(cli) < 0)
        return CLI_ERR;
    /* Plain: each stream to its descriptor.  --json: both to stdout, line by line. */
    int fds[2] = {1, 2};
    json_log_t jl[2] = {{.stream = "stdout"}, {.stream = "stderr"}};
    bool want[2] = {want_out, want_err};
    tclient_log_t logs[2];
    int n = 0;
    memset(logs, 0, sizeof logs);
    for (int i = 0; i < 2; i++) {
        if (!want[i])
            continue;
        jl[i].src = &logs[n];
        logs[n++] = (tclient_log_t){.stream = jl[i].stream,
                                    .write = cli->json ? write_json : cli_write_fd,
                                    .arg = cli->json ? (void *)&jl[i] : (void *)&fds[i],
                                    .has_tail = has_tail,
                                    .tail = (uint64_t)tail,
                                    .has_since = has_since,
                                    .since = since};
    }
    rc = fetch(cli, id, logs, n, follow);
    /* --json: the last line of each stream, if it did not end with a newline. */
    for (int i = 0; i < 2; i++) {
        if (jl[i].len && json_emit(&jl[i], jl[i].len) < 0 && rc == CLI_OK)
            rc = cli_fail("stdout: %s", strerror(errno));
        free(jl[i].buf);
    }
    return rc;
}
