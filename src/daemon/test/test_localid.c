/* test_localid.c - who a caller on the local socket is (localid.c): root and tesseld's own uid
 * are "admin"; any other uid the Tessel user named like its account; refused with a reason:
 * no account, an account name that is not a Tessel name, a non-root account named "admin". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/localid.h"

static void test_local_name(void **state)
{
    char name[33], why[256];
    /* System mode (tesseld is root): uid 0 is the admin, whatever its account is called. */
    assert_int_equal(tessd_local_name(0, 0, "root", name, sizeof name, why, sizeof why), 1);
    assert_string_equal(name, "admin");
    assert_int_equal(tessd_local_name(1001, 0, "alice", name, sizeof name, why, sizeof why), 0);
    assert_string_equal(name, "alice");
    /* Personal mode (tesseld runs as 1001): its user is the admin; root still is. */
    assert_int_equal(tessd_local_name(1001, 1001, "alice", name, sizeof name, why, sizeof why), 1);
    assert_string_equal(name, "admin");
    assert_int_equal(tessd_local_name(0, 1001, NULL, name, sizeof name, why, sizeof why), 1);

    /* Refusals, each with its reason. */
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    assert_int_equal(tessd_local_name(4242, 0, NULL, name, sizeof name, why, sizeof why), -1);
    assert_string_equal(why, "uid 4242 has no account on this machine: no Tessel user to act as");
    assert_int_equal(name[0], 'x'); /* nothing written on refusal */
    assert_int_equal(tessd_local_name(1002, 0, "Bob.Smith", name, sizeof name, why, sizeof why),
                     -1);
    assert_non_null(strstr(why, "account name 'Bob.Smith' (uid 1002) is not a Tessel user name"));
    assert_int_equal(tessd_local_name(1003, 0, "admin", name, sizeof name, why, sizeof why), -1);
    assert_string_equal(why, "account 'admin' (uid 1003) is not root: on the local socket the "
                             "Tessel user 'admin' is uid 0 alone; use a token");
    assert_int_equal(tessd_local_name(1004, 0, "a23456789012345678901234567890123", name,
                                      sizeof name, why, sizeof why),
                     -1); /* 33 bytes: longer than a Tessel name */
    assert_int_equal(tessd_local_name(1005, 0, "", name, sizeof name, why, sizeof why), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
