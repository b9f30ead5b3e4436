/* test_projects.c - the rules of projects (projects.h) as tables: every action for every role,
 * with and without the admin role; every job right for own jobs, roles and sharing; the last
 * owner; descriptions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/projects.h"

/* One row per action: may NONE, VIEWER, MEMBER, OWNER (not admins: admins may all). */
static const struct {
    tprj_action_t a;
    const char *name;
    bool may[4];
} actions[] = {
    {TPRJ_SEE, "see", {false, true, true, true}},
    {TPRJ_SUBMIT, "submit", {false, false, true, true}},
    {TPRJ_MANAGE, "manage", {false, false, false, true}},
    {TPRJ_AUDIT, "audit", {false, false, false, true}},
    {TPRJ_DELETE, "delete", {false, false, false, true}},
    {TPRJ_BIND_QUEUE, "bind queue", {false, false, false, false}},
    {TPRJ_FORCE_DELETE, "force delete", {false, false, false, false}},
};

static void test_may(void **state)
{
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        for (int r = TSTORE_ROLE_NONE; r <= TSTORE_ROLE_OWNER; r++) {
            bool got = tprj_may(false, (tstore_role_t)r, actions[i].a);
            if (got != actions[i].may[r])
                fail_msg("%s as %s: %d, want %d", actions[i].name,
                         r ? tstore_role_name((tstore_role_t)r) : "non-member", got,
                         actions[i].may[r]);
            /* An admin may everything, with or without a role. */
            assert_true(tprj_may(true, (tstore_role_t)r, actions[i].a));
        }
    }
}

static void test_job_right(void **state)
{
    static const struct {
        bool admin, own;
        tstore_role_t role;
        bool share;
        tprj_job_right_t want;
    } rows[] = {
        /* One's own job, whatever the role now (demoted, removed, project gone). */
        {false, true, TSTORE_ROLE_NONE, false, TPRJ_JOB_ACT},
        {false, true, TSTORE_ROLE_VIEWER, true, TPRJ_JOB_ACT},
        /* Admins: every job. */
        {true, false, TSTORE_ROLE_NONE, false, TPRJ_JOB_ACT},
        {true, false, TSTORE_ROLE_NONE, true, TPRJ_JOB_ACT},
        /* Another's job of a sharing project. */
        {false, false, TSTORE_ROLE_NONE, true, TPRJ_JOB_NONE},
        {false, false, TSTORE_ROLE_VIEWER, true, TPRJ_JOB_SEE},
        {false, false, TSTORE_ROLE_MEMBER, true, TPRJ_JOB_SEE},
        {false, false, TSTORE_ROLE_OWNER, true, TPRJ_JOB_ACT},
        /* ... of a project that does not share (the project 'default'): nobody's but one's
         * own, owners included. */
        {false, false, TSTORE_ROLE_VIEWER, false, TPRJ_JOB_NONE},
        {false, false, TSTORE_ROLE_MEMBER, false, TPRJ_JOB_NONE},
        {false, false, TSTORE_ROLE_OWNER, false, TPRJ_JOB_NONE},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        tprj_job_right_t got =
            tprj_job_right(rows[i].admin, rows[i].own, rows[i].role, rows[i].share);
        if (got != rows[i].want)
            fail_msg("row %zu: %d, want %d", i, got, rows[i].want);
    }
}

static void test_orphans(void **state)
{
    /* The last owner demoted or removed: refused; one of two: fine; a member: fine. */
    assert_true(tprj_orphans(1, TSTORE_ROLE_OWNER, TSTORE_ROLE_MEMBER));
    assert_true(tprj_orphans(1, TSTORE_ROLE_OWNER, TSTORE_ROLE_VIEWER));
    assert_true(tprj_orphans(1, TSTORE_ROLE_OWNER, TSTORE_ROLE_NONE));
    assert_false(tprj_orphans(1, TSTORE_ROLE_OWNER, TSTORE_ROLE_OWNER));
    assert_false(tprj_orphans(2, TSTORE_ROLE_OWNER, TSTORE_ROLE_NONE));
    assert_false(tprj_orphans(1, TSTORE_ROLE_MEMBER, TSTORE_ROLE_NONE));
    /* A project with no owner (the project 'default') has none to lose. */
    assert_false(tprj_orphans(0, TSTORE_ROLE_MEMBER, TSTORE_ROLE_NONE));
}

static void test_description(void **state)
{
    char big[TSTORE_PROJECT_DESC_MAX + 2];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_false(tprj_description_valid(big));
    big[TSTORE_PROJECT_DESC_MAX] = '\0';
    assert_true(tprj_description_valid(big));
    assert_true(tprj_description_valid(""));
    assert_true(tprj_description_valid("Vision team: détection d'objets"));
    assert_false(tprj_description_valid("two\nlines"));
    assert_false(tprj_description_valid("esc \x1b[31m red"));
    assert_false(tprj_description_valid("del \x7f"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_may),
        cmocka_unit_test(test_job_right),
        cmocka_unit_test(test_orphans),
        cmocka_unit_test(test_description),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
