/* test_args.c - `tessel`'s argument parsers, `run`'s request body and exit statuses, and the
 * output helpers (GPU shares, ages, API times, tables). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "cmd/tessel/cli.h"
#include "libutil/jobenv.h"

static void test_parse_gpu(void **state)
{
    static const struct {
        const char *in;
        int64_t milli; /* -1: rejected */
    } cases[] = {
        {"0.5", 500}, {"0.25", 250}, {"0.125", 125}, {"1", 1000},  {"1.0", 1000},
        {"2", 2000},  {"8", 8000},   {"0.001", 1},   {".5", 500},  {"0.5000", 500},
        {"1.5", -1},  {"0", -1},     {"0.0", -1},    {"-0.5", -1}, {"0.0001", -1},
        {"abc", -1},  {"", -1},      {"0.5G", -1},   {"1e3", -1},  {"nan", -1},
        {"2000", -1}, {"1.", -1},    {" 1", -1},     {"0x1", -1},  {"2.0", 2000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t m = -7;
        tsl_error_t err = {{0}};
        int r = cli_parse_gpu(cases[i].in, &m, &err);
        if (cases[i].milli < 0) {
            if (r != -1)
                fail_msg("--gpu '%s' accepted as %lld", cases[i].in, (long long)m);
            assert_int_equal(m, -7); /* untouched */
            assert_non_null(strstr(err.text, "--gpu"));
        } else {
            if (r != 0)
                fail_msg("--gpu '%s' rejected: %s", cases[i].in, err.text);
            assert_int_equal(m, cases[i].milli);
        }
    }
}

static void test_parse_numbers(void **state)
{
    int64_t v;
    double d;
    uint64_t b;
    tsl_error_t err;
    assert_int_equal(cli_parse_gpus("2", &v, &err), 0);
    assert_int_equal(v, 2);
    assert_int_equal(cli_parse_gpus("0", &v, &err), -1);
    assert_int_equal(cli_parse_gpus("1.5", &v, &err), -1);
    assert_int_equal(cli_parse_cpu("2", &d, &err), 0);
    assert_true(d == 2.0);
    assert_int_equal(cli_parse_cpu("0.5", &d, &err), 0);
    assert_true(d == 0.5);
    assert_int_equal(cli_parse_cpu("0", &d, &err), -1);
    assert_int_equal(cli_parse_cpu("-1", &d, &err), -1);
    assert_int_equal(cli_parse_cpu("1e2", &d, &err), -1);
    assert_int_equal(cli_parse_cpu("inf", &d, &err), -1);
    assert_int_equal(cli_parse_cpu("", &d, &err), -1);
    assert_int_equal(cli_parse_int("-1000", -1000, 1000, &v, &err), 0);
    assert_int_equal(v, -1000);
    assert_int_equal(cli_parse_int("1001", -1000, 1000, &v, &err), -1);
    assert_non_null(strstr(err.text, "out of range"));
    assert_int_equal(cli_parse_int("5x", -1000, 1000, &v, &err), -1);
    assert_int_equal(cli_parse_int("+5", -1000, 1000, &v, &err), -1);
    assert_int_equal(cli_parse_int("99999999999999999999", 0, 10, &v, &err), -1);
    assert_int_equal(cli_parse_size("8G", &b, &err), 0);
    assert_int_equal(b, 8ull << 30);
    assert_int_equal(cli_parse_size("1.5G", &b, &err), 0);
    assert_int_equal(b, 3ull << 29);
    assert_int_equal(cli_parse_size("0", &b, &err), -1);
    assert_int_equal(cli_parse_size("12Q", &b, &err), -1);
    assert_non_null(strstr(err.text, "12Q"));
    assert_int_equal(cli_parse_size("-1G", &b, &err), -1);
    /* A size needs a unit: "8" would be 8 bytes, never what anyone means by --gpu-mem 8. */
    assert_int_equal(cli_parse_size("8", &b, &err), -1);
    assert_non_null(strstr(err.text, "8G"));
    assert_int_equal(cli_parse_size("8B", &b, &err), 0);
    assert_int_equal(b, 8);
    assert_int_equal(cli_parse_class("training", &err), 0);
    assert_int_equal(cli_parse_class("inference", &err), 0);
    assert_int_equal(cli_parse_class("interactive", &err), 0);
    assert_int_equal(cli_parse_class("batch", &err), -1);
    assert_non_null(strstr(err.text, "batch"));
    assert_int_equal(cli_parse_id("42", &v, &err), 0);
    assert_int_equal(v, 42);
    assert_int_equal(cli_parse_id("0", &v, &err), -1);
    assert_int_equal(cli_parse_id("042", &v, &err), -1);
    assert_int_equal(cli_parse_id("-1", &v, &err), -1);
    assert_int_equal(cli_parse_id("x", &v, &err), -1);
}

/* Parse a `run` command line given as one string of space-separated words. */
static int parse_run(const char *line, run_opts_t *o, cli_t *cli)
{
    static char buf[1024];
    static char *argv[64];
    snprintf(buf, sizeof buf, "%s", line);
    int argc = 0;
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    memset(cli, 0, sizeof *cli);
    cli->cmd = "run";
    return run_parse(cli, argc, argv, o);
}

static void test_run_request(void **state)
{
    run_opts_t o;
    cli_t cli;
    tsl_error_t err;
    assert_int_equal(parse_run("run --gpu 0.5 --gpu-mem 4G --cpu 2 --mem 16G --queue big "
                               "--class inference --priority -5 --name t --cwd /tmp "
                               "-e A=1 -e B= -d -- python train.py --gpu 9",
                               &o, &cli),
                     0);
    assert_true(o.detach);
    static char *const no_vars[] = {NULL};
    o.caller_env = no_vars;
    json_t *r = run_request(&o, &err);
    assert_non_null(r);
    char *s = json_dumps(r, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(s, "{\"argv\":[\"python\",\"train.py\",\"--gpu\",\"9\"],\"class\":"
                           "\"inference\",\"cpu\":2.0,\"cwd\":\"/tmp\",\"env\":{\"A\":\"1\",\"B\":"
                           "\"\"},\"gpu\":0.5,\"gpu_mem\":4294967296,\"mem\":17179869184,"
                           "\"name\":\"t\",\"priority\":-5,\"queue\":\"big\"}");
    free(s);
    json_decref(r);
    run_opts_free(&o);

    /* Whole GPUs are sent as integers; the command stops option parsing. */
    assert_int_equal(parse_run("run --no-env --gpus 2 --no-requeue --cwd /x ls -l", &o, &cli), 0);
    r = run_request(&o, &err);
    s = json_dumps(r, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(s, "{\"argv\":[\"ls\",\"-l\"],\"cwd\":\"/x\",\"gpus\":2,"
                           "\"requeue\":false}");
    free(s);
    json_decref(r);
    run_opts_free(&o);

    assert_int_equal(parse_run("run --no-env --gpu 2 --shell --cwd /x echo", &o, &cli), 0);
    r = run_request(&o, &err);
    s = json_dumps(r, JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(s, "{\"argv\":[\"echo\"],\"cwd\":\"/x\",\"gpu\":2,\"shell\":true}");
    free(s);
    json_decref(r);
    run_opts_free(&o);

    /* Without --cwd, the current directory goes with the job. */
    assert_int_equal(parse_run("run true", &o, &cli), 0);
    r = run_request(&o, &err);
    assert_true(json_is_string(json_object_get(r, "cwd")));
    assert_int_equal(json_string_value(json_object_get(r, "cwd"))[0], '/');
    json_decref(r);
    run_opts_free(&o);
}

static void test_run_usage_errors(void **state)
{
    static const char *const bad[] = {
        "run",                            /* no command */
        "run --gpu 1.5 true",             /* above 1 needs whole GPUs */
        "run --gpu abc true",             /* not a number */
        "run --gpu 0.5 --gpus 1 true",    /* both */
        "run --gpus 0 true",              /* zero */
        "run --gpu-mem 12Q --gpu 1 true", /* unknown unit */
        "run --gpu-mem 4G true",          /* GPU memory without GPUs */
        "run --mem -1G true",             /* negative */
        "run --cpu 0 true",               /* zero cores */
        "run --class batch true",         /* unknown class */
        "run --priority 5000 true",       /* out of range */
        "run --cwd relative true",        /* relative cwd */
        "run --shell a b",                /* --shell with two words */
        "run --bogus true",               /* unknown option */
        "run --gpu",                      /* missing value */
        "run -e =x true",                 /* empty env name */
        "run -e TESSEL_TEST_SURELY_UNSET_VARIABLE true",
        "run -e CUDA_VISIBLE_DEVICES=3 true",   /* Tessel's to set */
        "run -e TESSEL_CUDA_MEM_LIMIT=1T true", /* would weaken the slice */
        "run --export=CUDA_VISIBLE_DEVICES true",
        "run --export= true",       /* nothing */
        "run --export=A=1,=2 true", /* empty name */
        "run -e A\tB=1 true",       /* blank in a name */
    };
    /* The usage lines go to stderr: keep them out of the test's output. */
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    assert_true(saved >= 0 && null >= 0);
    dup2(null, 2);
    close(null);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run_opts_t o;
        cli_t cli;
        int r = parse_run(bad[i], &o, &cli);
        fflush(stderr);
        run_opts_free(&o);
        if (r != CLI_USAGE) {
            dup2(saved, 2);
            fail_msg("'%s' gave %d, not a usage error", bad[i], r);
        }
    }
    dup2(saved, 2);
    close(saved);
}

/* The env member of `run`'s request for line, with caller as the caller's environment; NULL
 * when run_request fails (its message in err). */
static json_t *run_env(const char *line, char *const *caller, tsl_error_t *err)
{
    run_opts_t o;
    cli_t cli;
    assert_int_equal(parse_run(line, &o, &cli), 0);
    o.caller_env = caller;
    json_t *r = run_request(&o, err);
    run_opts_free(&o);
    if (!r)
        return NULL;
    json_t *env = json_incref(json_object_get(r, "env"));
    json_decref(r);
    return env ? env : json_object();
}

static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(j);
    return s;
}

/* The job's environment: the caller's by default (sbatch --export=ALL), less what Tessel sets
 * and the shell's own; --env-file, then --env over it; --no-env and --export=NONE|list. */
static void test_run_env(void **state)
{
    static char *const caller[] = {
        "PATH=/venv/bin:/usr/bin",
        "VIRTUAL_ENV=/venv",
        "CONDA_PREFIX=/c",
        "CUDA_VISIBLE_DEVICES=7",
        "TESSEL_TOKEN=secret",
        "TESSEL_CUDA_MEM_LIMIT=1",
        "TESSEL_CUDA_CORE_MODE=strict",
        "PWD=/home/a",
        "_=/usr/bin/tessel",
        "A=from-caller",
        "BAD=\xff",
        "NOEQUALS",
        NULL,
    };
    tsl_error_t err;
    char *s = dump(run_env("run true", caller, &err));
    assert_string_equal(s, "{\"A\":\"from-caller\",\"CONDA_PREFIX\":\"/c\",\"PATH\":\"/venv/"
                           "bin:/usr/bin\",\"TESSEL_CUDA_CORE_MODE\":\"strict\",\"VIRTUAL_ENV\":"
                           "\"/venv\"}");
    free(s);
    s = dump(run_env("run --no-env -e A=1 true", caller, &err));
    assert_string_equal(s, "{\"A\":\"1\"}");
    free(s);
    s = dump(run_env("run --export=NONE true", caller, &err));
    assert_string_equal(s, "{}");
    free(s);
    s = dump(run_env("run --export=A=2,B=3 true", caller, &err));
    assert_string_equal(s, "{\"A\":\"2\",\"B\":\"3\"}");
    free(s);
    json_t *e = run_env("run --export=ALL,A=2 true", caller, &err);
    assert_string_equal(json_string_value(json_object_get(e, "A")), "2");
    assert_string_equal(json_string_value(json_object_get(e, "VIRTUAL_ENV")), "/venv");
    json_decref(e);

    /* --env-file: comments, blank lines, CR-LF, '=' in values; --env wins over it. */
    char path[] = "/tmp/tessel-test-envfile-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char good[] = "# a comment\n\nA=file\r\n  B=x=y\nC=\n";
    assert_int_equal(write(fd, good, sizeof good - 1), (ssize_t)(sizeof good - 1));
    close(fd);
    char line[256];
    snprintf(line, sizeof line, "run --no-env -e A=flag --env-file %s true", path);
    s = dump(run_env(line, caller, &err));
    assert_string_equal(s, "{\"A\":\"flag\",\"B\":\"x=y\",\"C\":\"\"}");
    free(s);

    /* A bad line: FILE:LINE and why. */
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"A=1\n=2\n", ":2: '=2': expected KEY=VALUE"},
        {"A=1\n\nexport X Y=1\n", ":3: "},
        {"CUDA_VISIBLE_DEVICES=1\n", ":1: 'CUDA_VISIBLE_DEVICES': set by Tessel"},
        {"SURELY_UNSET_TESSEL_TEST_VAR\n", ":1: 'SURELY_UNSET_TESSEL_TEST_VAR' is not set"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(bad[i].text, f);
        fclose(f);
        assert_null(run_env(line, caller, &err));
        char want[128];
        snprintf(want, sizeof want, "%s%s", path, bad[i].want);
        if (!strstr(err.text, want))
            fail_msg("'%s' gave '%s', not '%s'", bad[i].text, err.text, want);
    }
    unlink(path);
    snprintf(line, sizeof line, "run --env-file %s true", path);
    assert_null(run_env(line, caller, &err));
    assert_non_null(strstr(err.text, "No such file"));

    /* Too many variables or bytes: refused before anything is sent, saying what to do. */
    static char *many[TSL_ENV_MAX_VARS + 2];
    static char names[TSL_ENV_MAX_VARS + 1][16];
    for (int i = 0; i <= TSL_ENV_MAX_VARS; i++) {
        snprintf(names[i], sizeof names[i], "V%d=1", i);
        many[i] = names[i];
    }
    assert_null(run_env("run true", many, &err));
    assert_non_null(strstr(err.text, "--no-env"));
    json_t *none = run_env("run --no-env true", many, &err);
    assert_non_null(none);
    assert_int_equal(json_object_size(none), 0);
    json_decref(none);
    static char big[TSL_ENV_MAX_BYTES + 16];
    memset(big, 'x', sizeof big - 1);
    memcpy(big, "BIG=", 4);
    char *const huge[] = {big, NULL};
    assert_null(run_env("run true", huge, &err));
    assert_non_null(strstr(err.text, "bytes"));
}

static void no_usage(FILE *f)
{
    fputs("usage\n", f);
}

/* The helpers every command's option loop and log streams share (cli.c). */
static void test_common_helpers(void **state)
{
    cli_t cli;
    memset(&cli, 0, sizeof cli);
    cli.cmd = "x";
    char *argv[] = {"x", "--bogus", NULL};
    assert_int_equal(cli_common_option(&cli, CLI_OPT_JSON, 2, argv, no_usage), -1);
    assert_true(cli.json);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    int help = cli_common_option(&cli, 'h', 2, argv, no_usage);
    fflush(stdout);
    optind = 2;
    optopt = 0;
    int bad = cli_common_option(&cli, '?', 2, argv, no_usage);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    close(null);
    assert_int_equal(help, CLI_OK);
    assert_int_equal(bad, CLI_USAGE);

    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(cli_write_fd("hello\n", 6, &p[1]), 0);
    char buf[16] = "";
    assert_int_equal(read(p[0], buf, sizeof buf), 6);
    assert_memory_equal(buf, "hello\n", 6);
    close(p[0]);
    assert_int_equal(cli_write_fd("x", 1, &p[1]), -1); /* EPIPE (SIGPIPE ignored above) */
    close(p[1]);

    assert_true(cli_conn_lost(ECONNREFUSED));
    assert_true(cli_conn_lost(ECONNRESET));
    assert_false(cli_conn_lost(ENOENT));
}

static json_t *job(const char *state, const char *code, const char *sig)
{
    char buf[256];
    snprintf(buf, sizeof buf, "{\"state\":\"%s\",\"exit_code\":%s,\"signal\":%s}", state, code,
             sig);
    return json_loads(buf, 0, NULL);
}

static void test_exit_status(void **state)
{
    static const struct {
        const char *state, *code, *sig;
        int want;
    } cases[] = {
        {"succeeded", "0", "null", 0},
        {"failed", "3", "null", 3},
        {"failed", "null", "9", 137},
        {"failed", "null", "null", TESSEL_EXIT_NOSTART},
        {"cancelled", "null", "15", TESSEL_EXIT_CANCELLED},
        {"cancelled", "null", "null", TESSEL_EXIT_CANCELLED},
        {"preempted", "null", "15", TESSEL_EXIT_PREEMPTED},
        {"running", "null", "null", CLI_ERR},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = job(cases[i].state, cases[i].code, cases[i].sig);
        assert_non_null(j);
        assert_int_equal(run_exit_status(j), cases[i].want);
        json_decref(j);
    }
}

static void test_format(void **state)
{
    char b[64];
    assert_string_equal(cli_format_milli(500, b, sizeof b), "0.5");
    assert_string_equal(cli_format_milli(250, b, sizeof b), "0.25");
    assert_string_equal(cli_format_milli(125, b, sizeof b), "0.125");
    assert_string_equal(cli_format_milli(1000, b, sizeof b), "1");
    assert_string_equal(cli_format_milli(2000, b, sizeof b), "2");
    assert_string_equal(cli_format_milli(1500, b, sizeof b), "1.5");
    assert_string_equal(cli_format_milli(0, b, sizeof b), "0");
    assert_string_equal(cli_format_age(5, b, sizeof b), "5s");
    assert_string_equal(cli_format_age(300, b, sizeof b), "5m");
    assert_string_equal(cli_format_age(3 * 3600, b, sizeof b), "3h");
    assert_string_equal(cli_format_age(3 * 86400, b, sizeof b), "3d");
    assert_string_equal(cli_format_age(-4, b, sizeof b), "0s");
    /* an inherited setting's cell (tessel queues' IDLE and OVERSUB) */
    assert_string_equal(cli_format_inherited("30m", "org", "team", "-", b, sizeof b), "30m(org)");
    assert_string_equal(cli_format_inherited("30m", "org", "org", "-", b, sizeof b), "30m");
    assert_string_equal(cli_format_inherited("off", "ops", "kid", "-", b, sizeof b), "off(ops)");
    assert_string_equal(cli_format_inherited("none", "lab", NULL, "-", b, sizeof b), "none(lab)");
    assert_string_equal(cli_format_inherited("8.0 GiB", NULL, "org", "-", b, sizeof b), "-");
    assert_string_equal(cli_format_inherited("1h", NULL, "org", "1h", b, sizeof b), "1h");
    char big[112], from[100];
    memset(from, 'q', sizeof from - 1);
    from[sizeof from - 1] = '\0';
    cli_format_inherited("1h", from, "org", "-", big, sizeof big);
    assert_int_equal(strlen(big), 2 + 1 + 64 + 1); /* the queue cut at 64 characters */
    assert_string_equal(cli_format_inherited("1h", "org", "x", "-", b, 4), "1h("); /* cut */
    assert_int_equal(cli_parse_time("1970-01-01T00:01:40.512Z"), 100);
    assert_int_equal(cli_parse_time("2026-11-21T19:40:03.512Z"), 1795290003);
    assert_int_equal(cli_parse_time("yesterday"), -1);
    assert_int_equal(cli_parse_time(NULL), -1);
}

static void test_table(void **state)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    static const char *const hdr[] = {">ID", "NAME", ">GPU", "NOTE"};
    cli_table_t *t = cli_table_new(4, hdr);
    const char *r1[] = {"7", "train", "0.5", "a"};
    const char *r2[] = {"123", NULL, "2", "longer note"};
    cli_table_add(t, r1);
    cli_table_add(t, r2);
    cli_table_print(t, f);
    fclose(f);
    assert_string_equal(out, " ID  NAME   GPU  NOTE\n"
                             "  7  train  0.5  a\n"
                             "123  -        2  longer note\n");
    free(out);
}

static void test_escape(void **state)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"train-1 \\ ok", "train-1 \\ ok"}, /* printable ASCII, backslash kept */
        {"\x1b]0;pwned\x07\x1b[2J", "\\x1b]0;pwned\\x07\\x1b[2J"}, /* OSC title, clear screen */
        {"a\nb\tc\rd", "a\\nb\\tc\\rd"},
        {"del\x7f", "del\\x7f"},
        {"\xc2\x9b"
         "31m",
         "\\u009b31m"}, /* C1 CSI as UTF-8 */
        {"\x9b"
         "31m",
         "\\x9b31m"}, /* C1 as a raw byte: not UTF-8 */
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"\xe2\x80\xaetxt.exe", "\\u202etxt.exe"},    /* right-to-left override */
        {"\xc0\xaf", "\\xc0\\xaf"},                   /* overlong '/' */
        {"\xed\xa0\x80", "\\xed\\xa0\\x80"},          /* a surrogate */
        {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"}, /* above U+10FFFF */
        {"cut\xe2\x82", "cut\\xe2\\x82"},             /* a sequence cut short */
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *e = cli_escape(cases[i].in);
        assert_string_equal(e, cases[i].out);
        free(e);
    }
    char *e = cli_escape(NULL);
    assert_string_equal(e, "");
    free(e);
    /* Every byte value alone: no raw control byte comes out. */
    for (int b = 1; b < 256; b++) {
        char in[2] = {(char)b, 0};
        e = cli_escape(in);
        for (const unsigned char *p = (const unsigned char *)e; *p; p++)
            assert_true(*p >= 0x20 && *p < 0x7f);
        free(e);
    }
    /* A table escapes its cells, and its widths count the escaped text. */
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    static const char *const hdr[] = {"NAME", "ID"};
    cli_table_t *t = cli_table_new(2, hdr);
    const char *r1[] = {"\x1b[31mred", "1"};
    const char *r2[] = {"x", "2"};
    cli_table_add(t, r1);
    cli_table_add(t, r2);
    cli_table_print(t, f);
    fclose(f);
    assert_string_equal(out, "NAME         ID\n"
                             "\\x1b[31mred  1\n"
                             "x            2\n");
    free(out);
}

static void test_resources(void **state)
{
    static const struct {
        const char *in;
        const char *json; /* NULL: rejected */
    } cases[] = {
        {"gpu=1.5,gpu-mem=40G,cpu=8,mem=64G",
         "{\"cpu\":8,\"gpu\":1.5,\"gpu_mem\":42949672960,\"mem\":68719476736}"},
        {"gpu=0", "{\"gpu\":0}"},
        {"gpu=2.000", "{\"gpu\":2}"},
        {"gpu_mem=512M,cpu=0.25", "{\"cpu\":0.25,\"gpu_mem\":536870912}"},
        {"gpu=none,mem=0", "{\"gpu\":null,\"mem\":0}"},
        {"none", "null"},
        {"", NULL},
        {"gpu", NULL},
        {"gpu=", NULL},
        {"gpu=1.2345", NULL},
        {"gpu=-1", NULL},
        {"gpu=.5", NULL},
        {"gpus=1", NULL},
        {"gpu=1,gpu=2", NULL},
        {"mem=12Q", NULL},
        {"gpu-mem=40", NULL},
        {"cpu=1e3", NULL},
        {"gpu=2000000", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *o = NULL;
        tsl_error_t err = {{0}};
        int r = cli_parse_resources("--limit", cases[i].in, &o, &err);
        if (!cases[i].json) {
            if (r != -1)
                fail_msg("'%s' accepted", cases[i].in);
            assert_null(o);
            assert_non_null(strstr(err.text, "--limit"));
            continue;
        }
        if (r != 0)
            fail_msg("'%s' rejected: %s", cases[i].in, err.text);
        char *s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
        assert_string_equal(s, cases[i].json);
        free(s);
        json_decref(o);
    }
}

static void test_state(void **state)
{
    char b[64];
    json_t *j = json_pack("{s:s,s:i}", "state", "pending", "preemptions", 0);
    assert_string_equal(cli_format_state(j, b, sizeof b), "pending");
    json_object_set_new(j, "preemptions", json_integer(1));
    assert_string_equal(cli_format_state(j, b, sizeof b), "pending (requeued \u00d71)");
    json_object_set_new(j, "state", json_string("succeeded"));
    json_object_set_new(j, "preemptions", json_integer(2));
    assert_string_equal(cli_format_state(j, b, sizeof b), "succeeded (preempted \u00d72)");
    json_object_set_new(j, "state", json_string("preempted"));
    json_object_set_new(j, "preemptions", json_integer(1));
    assert_string_equal(cli_format_state(j, b, sizeof b), "preempted");
    /* A suspended job says whether its GPU work has drained. */
    json_object_set_new(j, "state", json_string("suspended"));
    json_object_set_new(j, "preemptions", json_integer(0));
    json_object_set_new(j, "drained", json_false());
    assert_string_equal(cli_format_state(j, b, sizeof b), "suspended (draining)");
    json_object_set_new(j, "drained", json_true());
    assert_string_equal(cli_format_state(j, b, sizeof b), "suspended (drained)");
    json_object_set_new(j, "preemptions", json_integer(1));
    assert_string_equal(cli_format_state(j, b, sizeof b), "suspended (requeued \u00d71, drained)");
    /* And the GPU memory it gave back (its GPU state checkpointed). */
    json_object_set_new(j, "gpu_released", json_integer(8LL << 30));
    assert_string_equal(cli_format_state(j, b, sizeof b),
                        "suspended (requeued \u00d71, drained, gpu released 8.00 GiB)");
    json_object_set_new(j, "preemptions", json_integer(0));
    assert_string_equal(cli_format_state(j, b, sizeof b),
                        "suspended (drained, gpu released 8.00 GiB)");
    json_object_set_new(j, "gpu_released", json_integer(0));
    json_decref(j);

    /* Columns are padded by characters, not bytes: the x sign is two bytes of UTF-8. */
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    static const char *const hdr[] = {"STATE", ">N"};
    cli_table_t *t = cli_table_new(2, hdr);
    const char *r1[] = {"pending (requeued \u00d71)", "1"};
    const char *r2[] = {"running", "22"};
    cli_table_add(t, r1);
    cli_table_add(t, r2);
    cli_table_print(t, f);
    fclose(f);
    assert_string_equal(out, "STATE                   N\n"
                             "pending (requeued \u00d71)   1\n"
                             "running                22\n");
    free(out);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_gpu),   cmocka_unit_test(test_parse_numbers),
        cmocka_unit_test(test_run_request), cmocka_unit_test(test_run_usage_errors),
        cmocka_unit_test(test_run_env),     cmocka_unit_test(test_common_helpers),
        cmocka_unit_test(test_exit_status), cmocka_unit_test(test_format),
        cmocka_unit_test(test_table),       cmocka_unit_test(test_resources),
        cmocka_unit_test(test_state),       cmocka_unit_test(test_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
