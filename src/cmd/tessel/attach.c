/* attach.c - `tessel attach JOB` and the terminal session of `tessel run -it`
 * (docs/terminal.md): this terminal in raw mode, its keys to the job's terminal and the job's
 * output to it, over tesseld's WebSocket (tclient_term_*).
 *
 * Session: open (GET /v1/jobs/ID/attach) -> raw mode -> RESIZE with our size -> loop: stdin ->
 * detach filter (Ctrl-P Ctrl-Q) -> INPUT; SIGWINCH -> RESIZE; OUTPUT -> stdout; NOTICE ->
 * stderr; EXIT -> the status -> the terminal put back as it was.  SIGTERM and SIGHUP detach.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cmd/tessel/cli.h"
#include "libutil/term.h"

/* Messages queued for tesseld at most before stdin is read no more (each at most 4 KiB). */
#define TERM_QUEUE_MAX 16

typedef struct {
    bool exited;
    int status;  /* with exited: cli.h's exit status */
    bool notice; /* a NOTICE said why the terminal went away */
    bool shown;  /* some output came */
    int queued;  /* INPUT messages queued (approximate: reset when the socket is writable) */
} session_t;

static volatile sig_atomic_t got_winch, got_term;
/* Whether the last session ended with the job (for attach --json). */
static bool last_exited;

static void on_sig(int sig)
{
    if (sig == SIGWINCH)
        got_winch = 1;
    else
        got_term = 1;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            struct pollfd pf = {.fd = fd, .events = POLLOUT};
            if (errno == EAGAIN && poll(&pf, 1, -1) >= 0)
                continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* "exit N" -> N, "signal N" -> 128 + N, anything else: TESSEL_EXIT_NOSTART. */
static int exit_status(const uint8_t *p, size_t n)
{
    char text[TSL_TERM_TEXT_MAX + 1];
    if (n > TSL_TERM_TEXT_MAX)
        n = TSL_TERM_TEXT_MAX;
    memcpy(text, p, n);
    text[n] = '\0';
    int v;
    if (sscanf(text, "exit %d", &v) == 1 && v >= 0 && v <= 255)
        return v;
    if (sscanf(text, "signal %d", &v) == 1 && v > 0 && v < 128)
        return 128 + v;
    return TESSEL_EXIT_NOSTART;
}

static void on_msg(void *arg, const uint8_t *msg, size_t len)
{
    session_t *s = arg;
    tsl_term_msg_t m;
    if (tsl_term_parse(msg, len, &m) < 0)
        return;
    if (m.type == TSL_TERM_OUTPUT) {
        s->shown = true;
        write_all(1, m.data, m.len);
    } else if (m.type == TSL_TERM_NOTICE) {
        char text[TSL_TERM_TEXT_MAX + 1];
        memcpy(text, m.data, m.len);
        text[m.len] = '\0';
        char *e = cli_escape(text);
        fprintf(stderr, "\r\ntessel: %s\r\n", e);
        free(e);
        s->notice = true;
    } else if (m.type == TSL_TERM_EXIT) {
        s->exited = true;
        s->status = exit_status(m.data, m.len);
    }
}

/* Our window's size as a RESIZE (stdin's terminal, else stdout's); false when neither is one. */
static bool send_size(tclient_term_t *t)
{
    struct winsize ws;
    if (ioctl(0, TIOCGWINSZ, &ws) < 0 && ioctl(1, TIOCGWINSZ, &ws) < 0)
        return false;
    uint8_t m[5];
    tsl_term_resize_msg(m, ws.ws_row, ws.ws_col);
    return tclient_term_send(t, m, sizeof m) == 0;
}

int cli_term_session(cli_t *cli, int64_t id, char *const *argv, int argc, bool input, bool quiet)
{
    if (cli_connect(cli) < 0)
        return CLI_ERR;
    session_t s = {0};
    tsl_error_t err;
    tclient_term_t *t = argv ? tclient_term_exec(cli->client, id, argv, argc, on_msg, &s, &err)
                             : tclient_term_open(cli->client, id, on_msg, &s, &err);
    if (!t) {
        const char *code = tclient_error_code(cli->client);
        if (errno == EEXIST && (strcmp(code, "finished") == 0 || strcmp(code, "not_started") == 0))
            return CLI_TERM_GONE;
        return cli_fail("%s", err.text);
    }
    /* Signals wait blocked and are taken in ppoll only: no race between a check and a wait. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGWINCH);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    struct sigaction sa = {.sa_handler = on_sig}, osa[3];
    sigemptyset(&sa.sa_mask);
    sigaction(SIGWINCH, &sa, &osa[0]);
    sigaction(SIGTERM, &sa, &osa[1]);
    sigaction(SIGHUP, &sa, &osa[2]);
    bool tty_in = isatty(0);
    struct termios saved;
    bool raw = false;
    if (input && tty_in && tcgetattr(0, &saved) == 0) {
        struct termios r = saved;
        cfmakeraw(&r);
        raw = tcsetattr(0, TCSANOW, &r) == 0;
    }
    send_size(t);
    tsl_term_detach_t det = {0};
    bool stdin_open = input, detached = false, lost = false;
    int rc = 0;
    for (;;) {
        struct pollfd p[2] = {
            {.fd = stdin_open && s.queued < TERM_QUEUE_MAX ? 0 : -1, .events = POLLIN},
            {.fd = tclient_term_fd(t), .events = tclient_term_events(t)}};
        int k = ppoll(p, 2, NULL, &old);
        if (k < 0 && errno != EINTR) {
            lost = true;
            break;
        }
        if (got_term) {
            detached = true;
            break;
        }
        if (got_winch) {
            got_winch = 0;
            send_size(t);
        }
        if (k <= 0) {
            if ((rc = tclient_term_io(t, 0, &err)) != 0)
                break;
            continue;
        }
        if (p[0].fd >= 0 && p[0].revents) {
            uint8_t in[TSL_TERM_INPUT_MAX - 1], out[1 + TSL_TERM_INPUT_MAX];
            ssize_t n = read(0, in, sizeof in);
            if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN))) {
                /* The end of what was piped in: one Ctrl-D, as typed at the terminal. */
                stdin_open = false;
                if (!tty_in) {
                    out[0] = TSL_TERM_INPUT;
                    out[1] = 0x04;
                    tclient_term_send(t, out, 2);
                }
            } else if (n > 0) {
                size_t m;
                bool d = false;
                if (tty_in) {
                    d = tsl_term_detach_feed(&det, in, (size_t)n, out + 1, &m);
                } else {
                    memcpy(out + 1, in, (size_t)n);
                    m = (size_t)n;
                }
                if (m > 0) {
                    out[0] = TSL_TERM_INPUT;
                    tclient_term_send(t, out, m + 1);
                    s.queued++;
                }
                if (d) {
                    detached = true;
                    tclient_term_io(t, 0, &err); /* what came before the keys goes */
                    break;
                }
            }
        }
        if (p[1].revents & POLLOUT)
            s.queued = 0;
        rc = tclient_term_io(t, p[1].revents, &err);
        if (rc != 0)
            break;
    }
    if (raw)
        tcsetattr(0, TCSANOW, &saved);
    char reason[128] = "";
    unsigned code = tclient_term_closed(t, reason, sizeof reason);
    tclient_term_free(t);
    sigaction(SIGWINCH, &osa[0], NULL);
    sigaction(SIGTERM, &osa[1], NULL);
    sigaction(SIGHUP, &osa[2], NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    last_exited = s.exited;
    if (s.exited)
        return s.status;
    if (detached) {
        if (!quiet && argv)
            fprintf(stderr, "%stessel: left the command started in job %lld (it was hung up)\n",
                    raw ? "\r\n" : "", (long long)id);
        else if (!quiet)
            fprintf(stderr, "%stessel: detached from job %lld (tessel attach %lld to return)\n",
                    raw ? "\r\n" : "", (long long)id, (long long)id);
        return CLI_OK;
    }
    if (s.notice)
        return CLI_ERR;
    if (rc < 0 || lost)
        return cli_fail("%s; job %lld goes on (tessel attach %lld)", err.text, (long long)id,
                        (long long)id);
    if (code == 1001)
        return cli_fail("%s", reason[0] ? reason : "tesseld is stopping");
    /* Closed without the job's end: the job ended as the connection opened (nothing shown:
     * the caller may show its log instead), or its shim went away. */
    if (!s.shown)
        return CLI_TERM_GONE;
    return cli_fail("job %lld's terminal closed (%s); tessel show %lld says how it ended",
                    (long long)id, reason[0] ? reason : "no reason given", (long long)id);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tessel attach [--no-stdin] [--quiet] [--json] JOB\n"
            "Attach this terminal to a running job's (one submitted with tessel run -it):\n"
            "its output here, the keys typed to it (Ctrl-C too), the window's size with them.\n"
            "Ctrl-P Ctrl-Q detaches and leaves the job running; attach again at any time\n"
            "(what it wrote meanwhile is shown, its last 64 KiB; tessel logs has the whole).\n"
            "\n"
            "  --no-stdin         only show the terminal: what is typed is not sent\n"
            "  --quiet            no message on detaching\n"
            "  --json             at the end, one line on stderr instead of the message:\n"
            "                     {\"id\": N, \"detached\": true|false, \"exit_status\": N|null}\n"
            "\n"
            "Exit status: the job's when it ends while attached (128+N: signal N); 0 after\n"
            "a detach; 1 when the job has no terminal, is not running, or is not yours.\n");
}

int cmd_attach(cli_t *cli, int argc, char **argv)
{
    enum { O_NO_STDIN = 256, O_QUIET };
    static const struct option opts[] = {
        {"no-stdin", no_argument, NULL, O_NO_STDIN},
        {"quiet", no_argument, NULL, O_QUIET},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool input = true, quiet = false;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case O_NO_STDIN:
            input = false;
            break;
        case O_QUIET:
            quiet = true;
            break;
        case CLI_OPT_JSON:
            cli->json = true;
            break;
        case 'h':
            usage(stdout);
            return CLI_OK;
        default:
            return cli_bad_option(cli, argc, argv, c);
        }
    }
    if (argc - optind != 1)
        return cli_usage(cli, "give one job id");
    int64_t id;
    tsl_error_t err;
    if (cli_parse_id(argv[optind], &id, &err) < 0)
        return cli_usage(cli, "%s", err.text);
    int rc = cli_term_session(cli, id, NULL, 0, input, quiet || cli->json);
    if (cli->json && rc != CLI_TERM_GONE && (rc != CLI_ERR || last_exited)) {
        char st[16] = "null";
        if (last_exited)
            snprintf(st, sizeof st, "%d", rc);
        fprintf(stderr, "{\"id\": %lld, \"detached\": %s, \"exit_status\": %s}\n", (long long)id,
                last_exited ? "false" : "true", st);
    }
    if (rc == CLI_TERM_GONE)
        return cli_fail("job %lld is not running (tessel logs %lld shows its output)",
                        (long long)id, (long long)id);
    return rc;
}

static void exec_usage(FILE *f)
{
    fprintf(f, "usage: tessel exec [--no-stdin] [--json] JOB [--] COMMAND [ARG]...\n"
               "       tessel shell [--json] JOB\n"
               "Run COMMAND inside a running job (yours), on a terminal of its own: the job's\n"
               "account and groups, cgroups (its slice), mount namespace, environment (with its\n"
               "LD_PRELOAD) and cwd.  shell runs the job's $SHELL (when /etc/shells lists it,\n"
               "else /bin/sh) as a login shell.\n"
               "\n"
               "Ctrl-P Ctrl-Q leaves it (the command is hung up, as when a terminal closes);\n"
               "the job goes on either way.  In a container job, COMMAND runs in the same\n"
               "container (crun exec).\n"
               "\n"
               "  --no-stdin         do not send what is typed\n"
               "  --json             at the end, one line on stderr: {\"id\": N, \"exit_status\": "
               "N|null}\n"
               "\n"
               "Exit status: COMMAND's (128+N: signal N; 125 it could not start); 0 after\n"
               "leaving it; 1 when the job is not running or not yours.\n");
}

/* exec and shell: the command is argv[first..argc) (shell: none, the job's shell). */
static int exec_main(cli_t *cli, int argc, char **argv, bool shell)
{
    enum { O_NO_STDIN = 256 };
    static const struct option opts[] = {
        {"no-stdin", no_argument, NULL, O_NO_STDIN},
        {"json", no_argument, NULL, CLI_OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool input = true;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case O_NO_STDIN:
            input = false;
            break;
        case CLI_OPT_JSON:
            cli->json = true;
            break;
        case 'h':
            exec_usage(stdout);
            return CLI_OK;
        default:
            return cli_bad_option(cli, argc, argv, c);
        }
    }
    if (optind >= argc)
        return cli_usage(cli, "give a job id");
    int64_t id;
    tsl_error_t err;
    if (cli_parse_id(argv[optind], &id, &err) < 0)
        return cli_usage(cli, "%s", err.text);
    optind++;
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    /* The job's own $SHELL when it is a login shell of /etc/shells (an account's nologin is
     * not), else /bin/sh. */
    static char *sh[] = {"/bin/sh", "-c",
                         "s=${SHELL:-/bin/sh}; grep -qx \"$s\" /etc/shells 2>/dev/null || "
                         "s=/bin/sh; exec \"$s\" -l",
                         NULL};
    char **cmd = shell ? sh : argv + optind;
    int n = shell ? 3 : argc - optind;
    if (shell && optind < argc)
        return cli_usage(cli, "shell takes only a job id (tessel exec JOB -- COMMAND runs one)");
    if (n < 1)
        return cli_usage(cli, "no command given");
    int rc = cli_term_session(cli, id, cmd, n, input, cli->json);
    if (rc == CLI_TERM_GONE)
        return cli_fail("job %lld is not running (tessel logs %lld shows its output)",
                        (long long)id, (long long)id);
    if (cli->json && (rc != CLI_ERR || last_exited)) {
        char st[16] = "null";
        if (last_exited)
            snprintf(st, sizeof st, "%d", rc);
        fprintf(stderr, "{\"id\": %lld, \"exit_status\": %s}\n", (long long)id, st);
    }
    return rc;
}

int cmd_exec(cli_t *cli, int argc, char **argv)
{
    return exec_main(cli, argc, argv, false);
}

int cmd_shell(cli_t *cli, int argc, char **argv)
{
    return exec_main(cli, argc, argv, true);
}
