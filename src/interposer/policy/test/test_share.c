/* test_share.c - the charging arithmetic under contention (share.h), by
 * table: the virtual clock, the charge of a span, a peer's claim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "interposer/policy/share.h"

#define MS 1000000ull

/* V rises at ONE per ns alone, ONE/k beside k-1 others; changes of k take
 * effect from their time on; time never goes back. */
static void test_vclock(void **state)
{
    (void)state;
    tcu_vclock_t c = {1000 * MS, 0, 0};
    tcu_vclock_set(&c, 1000 * MS, 1);
    assert_true(tcu_vclock_at(&c, 1000 * MS) == 0);
    assert_true(tcu_vclock_at(&c, 1010 * MS) == 10 * MS * TCU_VCLOCK_ONE);
    tcu_vclock_set(&c, 1010 * MS, 2); /* a neighbour starts */
    assert_true(tcu_vclock_at(&c, 1030 * MS) == 20 * MS * TCU_VCLOCK_ONE);
    tcu_vclock_set(&c, 1030 * MS, 4);
    assert_true(tcu_vclock_at(&c, 1070 * MS) == 30 * MS * TCU_VCLOCK_ONE);
    /* a racing writer with an older clock read: V stays, k is taken */
    tcu_vclock_set(&c, 1020 * MS, 3);
    assert_true(c.t_ns == 1030 * MS && c.k == 3);
    assert_true(tcu_vclock_at(&c, 1000 * MS) == 20 * MS * TCU_VCLOCK_ONE);
    /* idle (k = 0) rises as alone */
    tcu_vclock_set(&c, 1060 * MS, 0);
    assert_true(tcu_vclock_at(&c, 1061 * MS) - tcu_vclock_at(&c, 1060 * MS) == MS * TCU_VCLOCK_ONE);
    /* k = 3: a third per ns, rounded down by less than a ns per update */
    tcu_vclock_t d = {0, 0, 3};
    assert_true(tcu_vclock_at(&d, 3 * MS) == MS * TCU_VCLOCK_ONE);
    /* wrapping: differences stay right */
    tcu_vclock_t w = {5, UINT64_MAX - 10, 1};
    assert_true(tcu_vclock_at(&w, 6) - (UINT64_MAX - 10) == TCU_VCLOCK_ONE);
}

static void test_charge(void **state)
{
    (void)state;
    static const struct {
        uint64_t span, dv, t0, t1, want;
    } rows[] = {
        /* alone the whole time: the span */
        {5 * MS, 10 * MS * TCU_VCLOCK_ONE, 0, 10 * MS, 5 * MS},
        /* beside one busy neighbour throughout: half */
        {10 * MS, 6 * MS * TCU_VCLOCK_ONE, 0, 12 * MS, 5 * MS},
        /* beside three: a quarter */
        {20 * MS, 5 * MS * TCU_VCLOCK_ONE, 0, 20 * MS, 5 * MS},
        /* 30/70 case: a 5 ms kernel stretched to 10 ms, in flight 12 ms of
         * which 10 beside the neighbour (V: 2 + 10/2 = 7 ms): 10 x 7/12 */
        {10 * MS, 7 * MS * TCU_VCLOCK_ONE, 100 * MS, 112 * MS, 5833333},
        /* no time passed: the span */
        {3 * MS, 0, 7 * MS, 7 * MS, 3 * MS},
        /* a clock that says more than alone (racing reads): at most the span */
        {4 * MS, 9 * MS * TCU_VCLOCK_ONE, 0, 4 * MS, 4 * MS},
        /* a clock that did not move: never below 1/64 of the span */
        {64 * MS, 0, 0, 10 * MS, MS},
        /* nothing measured: nothing */
        {0, 5 * MS * TCU_VCLOCK_ONE, 0, 10 * MS, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        uint64_t c = tcu_share_charge(rows[i].span, rows[i].dv, rows[i].t0, rows[i].t1);
        if (c != rows[i].want)
            fail_msg("row %zu: charge %llu, want %llu", i, (unsigned long long)c,
                     (unsigned long long)rows[i].want);
    }
}

/* The same arithmetic over a whole schedule: two tenants round-robin on a
 * device in 2 ms slices; A has a 5 ms kernel in flight from 0 to 10 ms
 * (its span), B is busy throughout.  Charged from the clock, A pays 5 ms
 * and B, over its 10 ms span, 5 ms: what each used. */
static void test_schedule(void **state)
{
    (void)state;
    tcu_vclock_t c = {0, 0, 0};
    tcu_vclock_set(&c, 0, 1); /* B busy */
    uint64_t vb0 = tcu_vclock_at(&c, 0);
    tcu_vclock_set(&c, 0, 2); /* A launches at 0 */
    uint64_t va0 = tcu_vclock_at(&c, 0);
    tcu_vclock_set(&c, 10 * MS, 1); /* A's pair read at 10 ms */
    uint64_t a = tcu_share_charge(10 * MS, tcu_vclock_at(&c, 10 * MS) - va0, 0, 10 * MS);
    assert_true(a == 5 * MS);
    /* B's pair covered 0..20 ms: 10 ms beside A, 10 ms alone: 15 of 20 */
    uint64_t b = tcu_share_charge(15 * MS, tcu_vclock_at(&c, 20 * MS) - vb0, 0, 20 * MS);
    assert_true(b == 11250000); /* its 15 ms span x 15/20 */
}

static void test_claim(void **state)
{
    (void)state;
    static const struct {
        uint64_t limit, used;
        uint64_t want;
        int full;
    } rows[] = {
        {500000, 500000, 500000, 1}, /* uses its share */
        {500000, 480000, 500000, 1}, /* within 2 points of it */
        {500000, 470000, 490000, 0}, /* 3 points below: claims 49 */
        {500000, 210000, 230000, 0}, /* uses 21 %: claims 23 */
        {300000, 0, 20000, 0},       /* active, nothing used yet */
        {0, 420000, 420000, 1},      /* no share: its use */
        {200000, 900000, 200000, 1}, /* over its share (shared mode): the share */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int full = -1;
        uint64_t c = tcu_peer_claim(rows[i].limit, rows[i].used, &full);
        if (c != rows[i].want || full != rows[i].full)
            fail_msg("row %zu: claim %llu full %d, want %llu %d", i, (unsigned long long)c, full,
                     (unsigned long long)rows[i].want, rows[i].full);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vclock),
        cmocka_unit_test(test_charge),
        cmocka_unit_test(test_schedule),
        cmocka_unit_test(test_claim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
