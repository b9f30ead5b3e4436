/* test_term.c - a job's terminal messages, the detach keys and the WebSocket accept value
 * (libutil/term.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "libutil/term.h"

static void parse_ok(void **state)
{
    (void)state;
    tsl_term_msg_t m;
    assert_int_equal(tsl_term_parse("ihello", 6, &m), 0);
    assert_int_equal(m.type, TSL_TERM_INPUT);
    assert_int_equal(m.len, 5);
    assert_memory_equal(m.data, "hello", 5);
    assert_int_equal(tsl_term_parse("o", 1, &m), 0); /* an empty output is harmless */
    assert_int_equal(m.len, 0);
    assert_int_equal(tsl_term_parse("xexit 3", 7, &m), 0);
    assert_int_equal(m.type, TSL_TERM_EXIT);
    assert_int_equal(tsl_term_parse("nsome words", 11, &m), 0);
    assert_int_equal(m.type, TSL_TERM_NOTICE);
}

static void parse_bad(void **state)
{
    (void)state;
    tsl_term_msg_t m;
    static const struct {
        const char *msg;
        size_t len;
    } bad[] = {
        {"", 0},            /* empty */
        {"i", 1},           /* empty input */
        {"?abc", 4},        /* unknown type */
        {"r\0\1\0", 4},     /* resize with 3 bytes */
        {"r\0\1\0\1\0", 6}, /* and with 5 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        assert_int_equal(tsl_term_parse(bad[i].msg, bad[i].len, &m), -1);
        assert_int_equal(errno, EINVAL);
    }
    assert_int_equal(tsl_term_parse(NULL, 3, &m), -1);
    /* Payloads one byte over their bound. */
    static uint8_t big[TSL_TERM_MSG_MAX + 1];
    big[0] = TSL_TERM_INPUT;
    assert_int_equal(tsl_term_parse(big, TSL_TERM_INPUT_MAX + 1, &m), 0);
    assert_int_equal(tsl_term_parse(big, TSL_TERM_INPUT_MAX + 2, &m), -1);
    big[0] = TSL_TERM_OUTPUT;
    assert_int_equal(tsl_term_parse(big, TSL_TERM_OUTPUT_MAX + 1, &m), 0);
    assert_int_equal(tsl_term_parse(big, TSL_TERM_OUTPUT_MAX + 2, &m), -1);
    big[0] = TSL_TERM_NOTICE;
    assert_int_equal(tsl_term_parse(big, TSL_TERM_TEXT_MAX + 2, &m), -1);
}

static void exec_argv(void **state)
{
    (void)state;
    tsl_term_msg_t m;
    char buf[64], *argv[TSL_TERM_EXEC_ARGS + 1];
    static const char ok1[] = "els\0-l\0\0/tmp"; /* "ls", "-l", "", "/tmp" */
    assert_int_equal(tsl_term_parse(ok1, sizeof ok1, &m), 0);
    assert_int_equal(tsl_term_exec_argv(&m, buf, argv), 4);
    assert_string_equal(argv[0], "ls");
    assert_string_equal(argv[1], "-l");
    assert_string_equal(argv[2], "");
    assert_string_equal(argv[3], "/tmp");
    assert_null(argv[4]);
    assert_int_equal(tsl_term_parse("els", 3, &m), -1);      /* no final NUL */
    assert_int_equal(tsl_term_parse("e\0", 2, &m), -1);      /* nothing */
    assert_int_equal(tsl_term_parse("e\0x", 4, &m), 0);      /* "", "x" */
    assert_int_equal(tsl_term_exec_argv(&m, buf, argv), -1); /* an empty program */
    assert_int_equal(tsl_term_parse("a", 1, &m), 0);
    assert_int_equal(tsl_term_parse("ax", 2, &m), -1);
    /* One argument too many. */
    static char many[2 * (TSL_TERM_EXEC_ARGS + 1) + 1];
    many[0] = TSL_TERM_EXEC;
    for (int i = 0; i <= TSL_TERM_EXEC_ARGS; i++) {
        many[1 + 2 * i] = 'x';
        many[2 + 2 * i] = '\0';
    }
    static char big[sizeof many];
    assert_int_equal(tsl_term_parse(many, sizeof many, &m), 0);
    assert_int_equal(tsl_term_exec_argv(&m, big, (char * [TSL_TERM_EXEC_ARGS + 1]){0}), -1);
    assert_int_equal(tsl_term_parse(many, sizeof many - 2, &m), 0);
    char *av[TSL_TERM_EXEC_ARGS + 1];
    assert_int_equal(tsl_term_exec_argv(&m, big, av), TSL_TERM_EXEC_ARGS);
}

static void resize(void **state)
{
    (void)state;
    uint8_t b[5];
    tsl_term_msg_t m;
    assert_int_equal(tsl_term_resize_msg(b, 50, 132), 5);
    assert_int_equal(tsl_term_parse(b, 5, &m), 0);
    assert_int_equal(m.type, TSL_TERM_RESIZE);
    assert_int_equal(m.rows, 50);
    assert_int_equal(m.cols, 132);
    /* Absurd values from a hostile client: clamped, never 0 nor 65535. */
    static const uint8_t huge[5] = {'r', 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(tsl_term_parse(huge, 5, &m), 0);
    assert_int_equal(m.rows, TSL_TERM_DIM_MAX);
    assert_int_equal(m.cols, TSL_TERM_DIM_MAX);
    static const uint8_t zero[5] = {'r', 0, 0, 0, 0};
    assert_int_equal(tsl_term_parse(zero, 5, &m), 0);
    assert_int_equal(m.rows, 1);
    assert_int_equal(m.cols, 1);
    tsl_term_resize_msg(b, 0, 100000);
    assert_int_equal(tsl_term_parse(b, 5, &m), 0);
    assert_int_equal(m.rows, 1);
    assert_int_equal(m.cols, TSL_TERM_DIM_MAX);
}

static void detach(void **state)
{
    (void)state;
    tsl_term_detach_t d = {0};
    uint8_t out[16];
    size_t n;
    /* Plain keys pass. */
    assert_false(tsl_term_detach_feed(&d, (const uint8_t *)"ls\r", 3, out, &n));
    assert_int_equal(n, 3);
    assert_memory_equal(out, "ls\r", 3);
    /* The sequence in one read: what came before it is sent, what follows is dropped. */
    assert_true(tsl_term_detach_feed(&d, (const uint8_t *)"ab\x10\x11zz", 6, out, &n));
    assert_int_equal(n, 2);
    assert_memory_equal(out, "ab", 2);
    /* Across two reads. */
    d.pending = false;
    assert_false(tsl_term_detach_feed(&d, (const uint8_t *)"x\x10", 2, out, &n));
    assert_int_equal(n, 1);
    assert_true(d.pending);
    assert_true(tsl_term_detach_feed(&d, (const uint8_t *)"\x11", 1, out, &n));
    assert_int_equal(n, 0);
    /* Ctrl-P followed by another key: both go (Ctrl-P is the shell's previous-history key). */
    d.pending = false;
    assert_false(tsl_term_detach_feed(&d, (const uint8_t *)"\x10", 1, out, &n));
    assert_int_equal(n, 0);
    assert_false(tsl_term_detach_feed(&d, (const uint8_t *)"a", 1, out, &n));
    assert_int_equal(n, 2);
    assert_memory_equal(out,
                        "\x10"
                        "a",
                        2);
    /* Ctrl-P Ctrl-P Ctrl-Q: one Ctrl-P sent, then the sequence. */
    d.pending = false;
    assert_true(tsl_term_detach_feed(&d, (const uint8_t *)"\x10\x10\x11", 3, out, &n));
    assert_int_equal(n, 1);
    assert_int_equal(out[0], 0x10);
}

static void ws_accept(void **state)
{
    (void)state;
    /* RFC 6455, section 1.3's example. */
    char acc[29];
    assert_true(tsl_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=="));
    tsl_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", acc);
    assert_string_equal(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert_false(tsl_ws_key_valid(NULL));
    assert_false(tsl_ws_key_valid(""));
    assert_false(tsl_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ="));   /* 23 characters */
    assert_false(tsl_ws_key_valid("dGhlIHNhbXBsZSBub25jZ!=="));  /* not base64 */
    assert_false(tsl_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ==x")); /* 25 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_ok), cmocka_unit_test(parse_bad), cmocka_unit_test(resize),
        cmocka_unit_test(detach),   cmocka_unit_test(ws_accept), cmocka_unit_test(exec_argv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
