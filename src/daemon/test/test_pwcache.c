/* test_pwcache.c - tesseld's cache of account lookups (pwcache.h) with a fake NSS, fake account
 * files and a fake clock: a second lookup within the TTL is a hit; an expired one, a changed
 * file or an error is asked again; "no such account" is kept like an answer; an error is not;
 * by name and by uid are apart; a full cache drops its oldest; the real lookup answers root. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/pwcache.h"

#define TTL 1000

static int calls;        /* lookups that reached the fake NSS */
static int fail_errno;   /* the fake NSS fails with this when not 0 */
static uid_t alice_uid;  /* alice's uid in the fake NSS (changed by a test) */
static uint64_t file_v;  /* the fake account files' version */
static bool stamp_fails; /* the account files cannot be looked at */

static int fake_lookup(bool by_uid, const char *name, uid_t uid, tessd_pw_t *out)
{
    calls++;
    if (fail_errno) {
        errno = fail_errno;
        return -1;
    }
    if ((!by_uid && strcmp(name, "alice") == 0) || (by_uid && uid == alice_uid)) {
        snprintf(out->name, sizeof out->name, "alice");
        out->uid = alice_uid;
        out->gid = 100;
        snprintf(out->dir, sizeof out->dir, "/home/alice");
        snprintf(out->shell, sizeof out->shell, "/bin/bash");
        return 1;
    }
    return 0;
}

static int fake_stamp(uint64_t stamp[4])
{
    if (stamp_fails)
        return -1;
    stamp[0] = stamp[1] = stamp[2] = 7;
    stamp[3] = file_v;
    return 0;
}

static int setup(void **state)
{
    static tessd_pwcache_t c;
    calls = 0;
    fail_errno = 0;
    alice_uid = 1000;
    file_v = 1;
    stamp_fails = false;
    tessd_pwcache_init(&c, fake_lookup, fake_stamp, TTL);
    *state = &c;
    return 0;
}

static int teardown(void **state)
{
    tessd_pwcache_destroy(*state);
    return 0;
}

static void test_hit_within_ttl(void **state)
{
    tessd_pwcache_t *c = *state;
    tessd_pw_t pw;
    assert_int_equal(tessd_pwcache_get(c, false, "alice", 0, 0, &pw), 1);
    assert_int_equal(calls, 1);
    memset(&pw, 0, sizeof pw);
    assert_int_equal(tessd_pwcache_get(c, false, "alice", 0, TTL - 1, &pw), 1);
    assert_int_equal(calls, 1);
    assert_string_equal(pw.name, "alice");
    assert_int_equal(pw.uid, 1000);
    assert_int_equal(pw.gid, 100);
    assert_string_equal(pw.dir, "/home/alice");
    assert_string_equal(pw.shell, "/bin/bash");
    assert_int_equal(c->hits, 1);
    assert_int_equal(c->misses, 1);
}

static void test_expired_is_asked_again(void **state)
{
    tessd_pwcache_t *c = *state;
    tessd_pw_t pw;
    assert_int_equal(tessd_pwcache_get(c, false, "alice", 0, 0, &pw), 1);
    alice_uid = 2000; /* changed in a source whose files have no stamp (LDAP) */
    assert_int_equal(tessd_pwcache_get(c, false, "alice", 0, TTL, &pw), 1);
    assert_int_equal(calls, 2);
    assert_int_equal(pw.uid, 2000);
}

static void test_changed_files_drop_everything(void **state)
{
    tessd_pwcache_t *c = *state;
    tessd_pw_t pw;
    assert_int_equal(tessd_pwcache_get(c, false, "alice", 0, 0, &pw), 1);
    assert_int_equal(tessd_pwcache_get(c, true, NULL, 1000, 0, &pw), 1);
    assert_int_equal(calls, 2);
    /* userdel alice, useradd alice with another uid: /etc/passwd changed. */
    alice_uid = 3000;
    file_v++;
    assert_int_equal(tessd_pwcache_get(c, false, "alice", 0, 1, &pw), 1);
    assert_int_equal(pw.uid, 3000);
    assert_int_equal(calls, 3);
    /* uid 1000 is nobody's now: not the kept answer. */
    assert_int_equal(tessd_pwcache_get(c, true, NULL, 1000, 1, &pw), 0);
    assert_int_equal(calls, 4);
}

static void test_unstamped_files_keep_nothing(void **state)
{
    tessd_pwcache_t *c = *state;
    tessd_pw_t pw;
    stamp_fails = true;
    assert_int_equal(tessd_pwcache_get(c, false, "alice", 0, 0, &pw), 1);
    assert_int_equal(tessd_pwcache_get(c, false, "alice", 0, 0, &pw), 1);
    assert_int_equal(calls, 2);
}

static void test_negative_kept_error_not(void **state)
{
    tessd_pwcache_t *c = *state;
    tessd_pw_t pw;
    assert_int_equal(tessd_pwcache_get(c, false, "mallory", 0, 0, &pw), 0);
    assert_int_equal(tessd_pwcache_get(c, false, "mallory", 0, 10, &pw), 0);
    assert_int_equal(calls, 1);
    /* An error (the directory server is down) is said, and not kept. */
    fail_errno = EIO;
    errno = 0;
    assert_int_equal(tessd_pwcache_get(c, false, "bob", 0, 10, &pw), -1);
    assert_int_equal(errno, EIO);
    fail_errno = 0;
    assert_int_equal(tessd_pwcache_get(c, false, "bob", 0, 11, &pw), 0);
    assert_int_equal(calls, 3);
}

static void test_name_and_uid_apart(void **state)
{
    tessd_pwcache_t *c = *state;
    tessd_pw_t pw;
    assert_int_equal(tessd_pwcache_get(c, true, NULL, 1000, 0, &pw), 1);
    assert_string_equal(pw.name, "alice");
    /* A name is not found through an entry kept by uid, nor an empty name. */
    assert_int_equal(tessd_pwcache_get(c, false, "", 0, 0, &pw), 0);
    assert_int_equal(tessd_pwcache_get(c, false, "alice", 0, 0, &pw), 1);
    assert_int_equal(calls, 3);
    assert_int_equal(tessd_pwcache_get(c, true, NULL, 1001, 0, &pw), 0);
    assert_int_equal(calls, 4);
}

static void test_full_drops_oldest(void **state)
{
    tessd_pwcache_t *c = *state;
    tessd_pw_t pw;
    char name[32];
    for (int i = 0; i < TESSD_PWCACHE_SIZE; i++) {
        snprintf(name, sizeof name, "user%d", i);
        assert_int_equal(tessd_pwcache_get(c, false, name, 0, i, &pw), 0);
    }
    assert_int_equal(calls, TESSD_PWCACHE_SIZE);
    /* One more: user0 (the oldest) goes, user1 stays. */
    assert_int_equal(tessd_pwcache_get(c, false, "alice", 0, 100, &pw), 1);
    assert_int_equal(tessd_pwcache_get(c, false, "user1", 0, 100, &pw), 0);
    assert_int_equal(calls, TESSD_PWCACHE_SIZE + 1);
    assert_int_equal(tessd_pwcache_get(c, false, "user0", 0, 100, &pw), 0);
    assert_int_equal(calls, TESSD_PWCACHE_SIZE + 2);
}

static void test_long_name_not_kept(void **state)
{
    tessd_pwcache_t *c = *state;
    tessd_pw_t pw;
    char name[400];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    assert_int_equal(tessd_pwcache_get(c, false, name, 0, 0, &pw), 0);
    assert_int_equal(tessd_pwcache_get(c, false, name, 0, 0, &pw), 0);
    assert_int_equal(calls, 2);
}

static void test_real_lookup(void **state)
{
    tessd_pw_t pw;
    assert_int_equal(tessd_getpwuid(0, &pw), 1);
    assert_string_equal(pw.name, "root");
    assert_int_equal(tessd_getpwnam("root", &pw), 1);
    assert_int_equal(pw.uid, 0);
    assert_int_equal(tessd_getpwnam("no-such-account-pwcache", &pw), 0);
    uint64_t a[4], b[4];
    assert_int_equal(tessd_pw_files_stamp(a), 0);
    assert_int_equal(tessd_pw_files_stamp(b), 0);
    assert_memory_equal(a, b, sizeof a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hit_within_ttl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expired_is_asked_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changed_files_drop_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unstamped_files_keep_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_negative_kept_error_not, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_and_uid_apart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_drops_oldest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_name_not_kept, setup, teardown),
        cmocka_unit_test(test_real_lookup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
