/* test_ticket.c - terminal tickets (ticket.c): issued for a job, a route and a user; good once
 * (a second use, and any use after a refusal, is refused); expired after TSD_TICKET_TTL_MS;
 * refused for another job or the other route; malformed ones refused; the table's bounds
 * (per user, in all) and expired tickets making room. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/ticket.h"

static tsd_tickets_t *table(void)
{
    tsd_tickets_t *t = calloc(1, sizeof *t);
    assert_non_null(t);
    return t;
}

static void rnd_of(uint8_t r[32], unsigned seed)
{
    for (size_t i = 0; i < 32; i++)
        r[i] = (uint8_t)(seed * 31 + i * 7 + (seed >> 8));
}

static void issue(tsd_tickets_t *t, long long now, unsigned seed, int64_t job,
                  tsd_ticket_kind_t kind, const char *user, char out[TSD_TICKET_LEN + 1])
{
    uint8_t r[32];
    rnd_of(r, seed);
    assert_int_equal(tsd_ticket_issue(t, now, r, job, kind, user, false, out), 0);
}

static void test_once(void **state)
{
    tsd_tickets_t *t = table();
    char tk[TSD_TICKET_LEN + 1];
    uint8_t r[32];
    rnd_of(r, 1);
    assert_int_equal(tsd_ticket_issue(t, 1000, r, 42, TSD_TICKET_ATTACH, "alice", true, tk), 0);
    assert_int_equal(strlen(tk), TSD_TICKET_LEN);
    assert_int_equal(strspn(tk, "0123456789abcdef"), TSD_TICKET_LEN);
    tsd_ticket_t who;
    memset(&who, 0, sizeof who);
    assert_int_equal(tsd_ticket_redeem(t, 2000, tk, 42, TSD_TICKET_ATTACH, &who), TSD_TICKET_OK);
    assert_string_equal(who.user, "alice");
    assert_true(who.admin);
    assert_int_equal(who.job, 42);
    /* Used twice: refused. */
    assert_int_equal(tsd_ticket_redeem(t, 2001, tk, 42, TSD_TICKET_ATTACH, &who),
                     TSD_TICKET_UNKNOWN);
    free(t);
}

static void test_expired(void **state)
{
    tsd_tickets_t *t = table();
    char tk[TSD_TICKET_LEN + 1];
    tsd_ticket_t who;
    issue(t, 1000, 2, 7, TSD_TICKET_EXEC, "bob", tk);
    assert_int_equal(tsd_ticket_redeem(t, 1000 + TSD_TICKET_TTL_MS, tk, 7, TSD_TICKET_EXEC, &who),
                     TSD_TICKET_EXPIRED);
    /* Gone after that: unknown, even if the clock went back. */
    assert_int_equal(tsd_ticket_redeem(t, 1001, tk, 7, TSD_TICKET_EXEC, &who), TSD_TICKET_UNKNOWN);
    /* The last millisecond of its life is still good. */
    issue(t, 1000, 3, 7, TSD_TICKET_EXEC, "bob", tk);
    assert_int_equal(
        tsd_ticket_redeem(t, 1000 + TSD_TICKET_TTL_MS - 1, tk, 7, TSD_TICKET_EXEC, &who),
        TSD_TICKET_OK);
    free(t);
}

static void test_other_job_or_kind(void **state)
{
    tsd_tickets_t *t = table();
    char tk[TSD_TICKET_LEN + 1];
    tsd_ticket_t who;
    issue(t, 0, 4, 7, TSD_TICKET_ATTACH, "bob", tk);
    assert_int_equal(tsd_ticket_redeem(t, 1, tk, 8, TSD_TICKET_ATTACH, &who), TSD_TICKET_OTHER_JOB);
    /* The refusal used it up: the right job is refused too now. */
    assert_int_equal(tsd_ticket_redeem(t, 2, tk, 7, TSD_TICKET_ATTACH, &who), TSD_TICKET_UNKNOWN);
    issue(t, 0, 5, 7, TSD_TICKET_ATTACH, "bob", tk);
    assert_int_equal(tsd_ticket_redeem(t, 1, tk, 7, TSD_TICKET_EXEC, &who), TSD_TICKET_OTHER_KIND);
    assert_int_equal(tsd_ticket_redeem(t, 2, tk, 7, TSD_TICKET_ATTACH, &who), TSD_TICKET_UNKNOWN);
    free(t);
}

static void test_malformed(void **state)
{
    tsd_tickets_t *t = table();
    char tk[TSD_TICKET_LEN + 1], bad[TSD_TICKET_LEN + 2];
    tsd_ticket_t who;
    issue(t, 0, 6, 7, TSD_TICKET_ATTACH, "bob", tk);
    assert_int_equal(tsd_ticket_redeem(t, 1, NULL, 7, TSD_TICKET_ATTACH, &who), TSD_TICKET_UNKNOWN);
    assert_int_equal(tsd_ticket_redeem(t, 1, "", 7, TSD_TICKET_ATTACH, &who), TSD_TICKET_UNKNOWN);
    /* A prefix, the ticket with one more digit, upper case: none matches. */
    snprintf(bad, sizeof bad, "%.*s", TSD_TICKET_LEN - 1, tk);
    assert_int_equal(tsd_ticket_redeem(t, 1, bad, 7, TSD_TICKET_ATTACH, &who), TSD_TICKET_UNKNOWN);
    snprintf(bad, sizeof bad, "%s0", tk);
    assert_int_equal(tsd_ticket_redeem(t, 1, bad, 7, TSD_TICKET_ATTACH, &who), TSD_TICKET_UNKNOWN);
    snprintf(bad, sizeof bad, "%s", tk);
    for (char *p = bad; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 'a' + 'A');
    if (strcmp(bad, tk) != 0)
        assert_int_equal(tsd_ticket_redeem(t, 1, bad, 7, TSD_TICKET_ATTACH, &who),
                         TSD_TICKET_UNKNOWN);
    /* One digit changed: another ticket, unknown. */
    snprintf(bad, sizeof bad, "%s", tk);
    bad[10] = bad[10] == '0' ? '1' : '0';
    assert_int_equal(tsd_ticket_redeem(t, 1, bad, 7, TSD_TICKET_ATTACH, &who), TSD_TICKET_UNKNOWN);
    /* None of these used the real one. */
    assert_int_equal(tsd_ticket_redeem(t, 1, tk, 7, TSD_TICKET_ATTACH, &who), TSD_TICKET_OK);
    free(t);
}

static void test_bounds(void **state)
{
    tsd_tickets_t *t = table();
    char tk[TSD_TICKET_LEN + 1];
    uint8_t r[32];
    unsigned seed = 100;
    for (int i = 0; i < TSD_TICKET_PER_USER; i++)
        issue(t, 0, seed++, 1, TSD_TICKET_ATTACH, "mallory", tk);
    rnd_of(r, seed++);
    errno = 0;
    assert_int_equal(tsd_ticket_issue(t, 1, r, 1, TSD_TICKET_ATTACH, "mallory", false, tk), -1);
    assert_int_equal(errno, EAGAIN);
    /* Another user is not crowded out. */
    issue(t, 1, seed++, 2, TSD_TICKET_ATTACH, "alice", tk);
    /* Once mallory's have expired, there is room again. */
    issue(t, TSD_TICKET_TTL_MS, seed++, 1, TSD_TICKET_ATTACH, "mallory", tk);
    /* The whole table: many users, then full. */
    tsd_tickets_t *u = table();
    char name[16];
    for (int i = 0; i < TSD_TICKET_MAX; i++) {
        snprintf(name, sizeof name, "u%d", i);
        issue(u, 0, seed++, i, TSD_TICKET_EXEC, name, tk);
    }
    rnd_of(r, seed++);
    assert_int_equal(tsd_ticket_issue(u, 1, r, 1, TSD_TICKET_EXEC, "late", false, tk), -1);
    assert_int_equal(errno, EAGAIN);
    issue(u, TSD_TICKET_TTL_MS, seed++, 1, TSD_TICKET_EXEC, "late", tk);
    free(u);
    free(t);
}

static void test_words(void **state)
{
    assert_non_null(strstr(tsd_ticket_res_str(TSD_TICKET_EXPIRED), "expired"));
    assert_non_null(strstr(tsd_ticket_res_str(TSD_TICKET_OTHER_JOB), "another job"));
    assert_non_null(strstr(tsd_ticket_res_str(TSD_TICKET_UNKNOWN), "one use"));
}

/* A service's ticket: bound to the job and the service's name; the terminal's routes and
 * another service refuse it (and it is used up all the same). */
static void test_service(void **state)
{
    (void)state;
    tsd_tickets_t *t = table();
    uint8_t r[32];
    char tk[TSD_TICKET_LEN + 1];
    tsd_ticket_t who;
    rnd_of(r, 77);
    assert_int_equal(tsd_ticket_issue_svc(t, 1000, r, 42, "jupyter", "alice", false, tk), 0);
    assert_int_equal(tsd_ticket_redeem_svc(t, 1001, tk, 42, "jupyter", &who), TSD_TICKET_OK);
    assert_string_equal(who.user, "alice");
    assert_string_equal(who.svc, "jupyter");
    assert_int_equal(tsd_ticket_redeem_svc(t, 1002, tk, 42, "jupyter", &who), TSD_TICKET_UNKNOWN);
    /* Another service of the same job. */
    rnd_of(r, 78);
    assert_int_equal(tsd_ticket_issue_svc(t, 1000, r, 42, "jupyter", "alice", false, tk), 0);
    assert_int_equal(tsd_ticket_redeem_svc(t, 1001, tk, 42, "tb", &who), TSD_TICKET_OTHER_KIND);
    assert_int_equal(tsd_ticket_redeem_svc(t, 1001, tk, 42, "jupyter", &who), TSD_TICKET_UNKNOWN);
    /* Another job; a terminal's route. */
    rnd_of(r, 79);
    assert_int_equal(tsd_ticket_issue_svc(t, 1000, r, 42, "jupyter", "alice", false, tk), 0);
    assert_int_equal(tsd_ticket_redeem_svc(t, 1001, tk, 43, "jupyter", &who), TSD_TICKET_OTHER_JOB);
    rnd_of(r, 80);
    assert_int_equal(tsd_ticket_issue_svc(t, 1000, r, 42, "jupyter", "alice", false, tk), 0);
    assert_int_equal(tsd_ticket_redeem(t, 1001, tk, 42, TSD_TICKET_ATTACH, &who),
                     TSD_TICKET_OTHER_KIND);
    /* A terminal's ticket is no service's. */
    rnd_of(r, 81);
    assert_int_equal(tsd_ticket_issue(t, 1000, r, 42, TSD_TICKET_ATTACH, "alice", false, tk), 0);
    assert_int_equal(tsd_ticket_redeem_svc(t, 1001, tk, 42, "", &who), TSD_TICKET_OTHER_KIND);
    /* Expired. */
    rnd_of(r, 82);
    assert_int_equal(tsd_ticket_issue_svc(t, 1000, r, 42, "jupyter", "alice", false, tk), 0);
    assert_int_equal(tsd_ticket_redeem_svc(t, 1000 + TSD_TICKET_TTL_MS, tk, 42, "jupyter", &who),
                     TSD_TICKET_EXPIRED);
    /* A name too long is refused. */
    errno = 0;
    assert_int_equal(tsd_ticket_issue_svc(t, 1000, r, 42, "abcdefghijklmnopq", "alice", false, tk),
                     -1);
    assert_int_equal(errno, EINVAL);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_service),   cmocka_unit_test(test_once),
        cmocka_unit_test(test_expired),   cmocka_unit_test(test_other_job_or_kind),
        cmocka_unit_test(test_malformed), cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
