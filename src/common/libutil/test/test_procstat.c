/* test_procstat.c - tsl_procstat_parse against proc(5) lines, tsl_procstat_read on this process. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "libutil/procstat.h"

/* A real line (a shell), fields 3 to 22 and a few after. */
#define TAIL                                                                                       \
    " S 4242 4243 4243 34816 4243 4194304 1193 0 0 0 2 0 0 0 20 0 1 0 987654321 9101312 "          \
    "845 18446744073709551615"

static void test_parse(void **state)
{
    tsl_procstat_t v;
    assert_int_equal(tsl_procstat_parse("4243 (bash)" TAIL, &v), 0);
    assert_int_equal(v.state, 'S');
    assert_int_equal(v.ppid, 4242);
    assert_true(v.start_time == 987654321ull);
    assert_string_equal(v.comm, "bash");
}

static void test_parse_odd_names(void **state)
{
    /* The name may hold spaces, parentheses and digits: fields count from the last ')'. */
    static const char *const names[] = {"(a b)", "(x) S 1 2 3 (y)", "()", "())", "(1 2 3 4)"};
    /* The command name: what lies between the first '(' and the last ')'. */
    static const char *const comms[] = {"a b", "x) S 1 2 3 (y", "", ")", "1 2 3 4"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "77 %s" TAIL, names[i]);
        tsl_procstat_t v = {0};
        assert_int_equal(tsl_procstat_parse(line, &v), 0);
        assert_int_equal(v.ppid, 4242);
        assert_true(v.start_time == 987654321ull);
        assert_string_equal(v.comm, comms[i]);
    }
    /* At most 15 bytes are kept (the kernel's own limit), NUL-terminated. */
    tsl_procstat_t v;
    assert_int_equal(tsl_procstat_parse("5 (0123456789abcdefXYZ)" TAIL, &v), 0);
    assert_string_equal(v.comm, "0123456789abcde");
}

static void test_parse_states(void **state)
{
    const char *letters = "RSDTtZXI";
    for (const char *c = letters; *c; c++) {
        char line[512];
        snprintf(line, sizeof line, "9 (w) %c 1 9 9 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0",
                 *c);
        tsl_procstat_t v;
        assert_int_equal(tsl_procstat_parse(line, &v), 0);
        assert_int_equal(v.state, *c);
        assert_int_equal(v.ppid, 1);
        assert_true(v.start_time == 5);
    }
}

static void test_parse_bad(void **state)
{
    static const char *const bad[] = {
        "",
        "4243 bash S 1 2", /* no ')' */
        "4243 (bash)",     /* nothing after the name */
        "4243 (bash)S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",  /* no space */
        "4243 (bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17",          /* short */
        "4243 (bash) S x 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", /* ppid */
        "4243 (bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 20",  /* start */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tsl_procstat_t v = {.state = '?', .ppid = 99, .start_time = 7};
        errno = 0;
        assert_int_equal(tsl_procstat_parse(bad[i], &v), -1);
        assert_int_equal(errno, EINVAL);
        /* untouched on failure */
        assert_int_equal(v.state, '?');
        assert_int_equal(v.ppid, 99);
        assert_true(v.start_time == 7);
    }
}

static void test_read(void **state)
{
    tsl_procstat_t me, parent;
    assert_int_equal(tsl_procstat_read(getpid(), &me), 0);
    assert_int_equal(me.state, 'R'); /* reading its own stat, the process runs */
    assert_int_equal(me.ppid, getppid());
    assert_true(me.start_time > 0);
    assert_int_equal(tsl_procstat_read(getppid(), &parent), 0);
    assert_true(parent.start_time <= me.start_time);

    /* A child that has exited and is not reaped yet is a zombie, its parent this process. */
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0)
        _exit(0);
    tsl_procstat_t k = {0};
    for (int i = 0; i < 10000; i++) {
        assert_int_equal(tsl_procstat_read(kid, &k), 0);
        if (k.state == 'Z')
            break;
        usleep(1000);
    }
    assert_int_equal(k.state, 'Z');
    assert_int_equal(k.ppid, getpid());
    int st;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    /* Reaped: gone. */
    errno = 0;
    assert_int_equal(tsl_procstat_read(kid, &k), -1);
    assert_int_equal(errno, ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),        cmocka_unit_test(test_parse_odd_names),
        cmocka_unit_test(test_parse_states), cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
