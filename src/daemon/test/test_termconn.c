/* test_termconn.c - terminal WebSockets at once (termconn.c): a user's cap, the total cap, a
 * closed connection making room, slots of users given back, the total cap below
 * --max-connections, the idle rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "daemon/termconn.h"

static void test_per_user(void **state)
{
    tsd_termconns_t *c = calloc(1, sizeof *c);
    assert_non_null(c);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tsd_termconn_take(c, "nobody", 3, 100), TSD_TERMCONN_OK);
    assert_int_equal(tsd_termconn_take(c, "nobody", 3, 100), TSD_TERMCONN_USER_FULL);
    assert_int_equal(tsd_termconn_of(c, "nobody"), 3);
    assert_int_equal(tsd_termconn_take(c, "ann", 3, 100), TSD_TERMCONN_OK); /* others: yes */
    tsd_termconn_give(c, "nobody");
    assert_int_equal(tsd_termconn_take(c, "nobody", 3, 100), TSD_TERMCONN_OK);
    assert_int_equal(c->total, 4);
    free(c);
}

static void test_total(void **state)
{
    tsd_termconns_t *c = calloc(1, sizeof *c);
    assert_non_null(c);
    char u[16];
    for (int i = 0; i < 5; i++) {
        snprintf(u, sizeof u, "u%d", i);
        assert_int_equal(tsd_termconn_take(c, u, 8, 5), TSD_TERMCONN_OK);
    }
    assert_int_equal(tsd_termconn_take(c, "admin", 8, 5), TSD_TERMCONN_FULL);
    assert_int_equal(tsd_termconn_take(c, "u0", 8, 5), TSD_TERMCONN_FULL);
    tsd_termconn_give(c, "u3");
    assert_int_equal(tsd_termconn_of(c, "u3"), 0);
    assert_int_equal(tsd_termconn_take(c, "admin", 8, 5), TSD_TERMCONN_OK);
    tsd_termconn_give(c, "never"); /* not held: nothing changes */
    assert_int_equal(c->total, 5);
    /* Every user slot in use: one more user is refused, a user who has one is not. */
    tsd_termconns_t *d = calloc(1, sizeof *d);
    assert_non_null(d);
    for (int i = 0; i < TSD_TERMCONN_USERS; i++) {
        snprintf(u, sizeof u, "v%d", i);
        assert_int_equal(tsd_termconn_take(d, u, 8, 100000), TSD_TERMCONN_OK);
    }
    assert_int_equal(tsd_termconn_take(d, "late", 8, 100000), TSD_TERMCONN_FULL);
    assert_int_equal(tsd_termconn_take(d, "v0", 8, 100000), TSD_TERMCONN_OK);
    tsd_termconn_give(d, "v7");
    assert_int_equal(tsd_termconn_take(d, "late", 8, 100000), TSD_TERMCONN_OK);
    free(d);
    free(c);
}

static void test_caps(void **state)
{
    assert_int_equal(tsd_termconn_total_max(1024), 512);
    assert_int_equal(tsd_termconn_total_max(1), 1);
    assert_true(tsd_termconn_total_max(300) < 300);
    assert_false(tsd_termconn_idle(1000, 1000 + 59999, 60000));
    assert_true(tsd_termconn_idle(1000, 1000 + 60000, 60000));
    assert_false(tsd_termconn_idle(0, 1LL << 40, 0)); /* 0: never */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_per_user),
        cmocka_unit_test(test_total),
        cmocka_unit_test(test_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
