/* test_ckptslot.c - the copy slots of the GPUs (src/daemon/ckptslot.c): one copy per GPU
 * at a time while another GPU copies, the cap per GPU, preemptions before persons before
 * reclamations and the order of asking within a class, a gang step taking all its GPUs or
 * none (two gang steps asking in opposite orders do not deadlock; a gang waiter is not passed
 * for ever), a stalled holder not counted, at most one passed holder per GPU (no stockpile of
 * stopped copies: RV16b M2), one restore per GPU, the owners' turns kept per GPU (RV16b M1),
 * and bad input refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "daemon/ckptslot.h"

static uint64_t q1(tessd_cslots_t *s, unsigned gpu, tessd_cslot_class_t cls, bool restore)
{
    uint64_t t = tessd_cslots_queue(s, &gpu, 1, cls, restore, NULL, NULL);
    assert_true(t > 0);
    return t;
}

static void test_one_per_gpu(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(1);
    assert_non_null(s);
    uint64_t a = q1(s, 0, TESSD_CSLOT_PERSON, false);
    uint64_t b = q1(s, 0, TESSD_CSLOT_PERSON, false);
    uint64_t c = q1(s, 1, TESSD_CSLOT_PERSON, false);
    assert_int_equal(tessd_cslots_try(s, a), 1);
    assert_int_equal(tessd_cslots_try(s, b), 0); /* GPU 0 copies a's */
    assert_int_equal(tessd_cslots_try(s, c), 1); /* GPU 1 is free */
    assert_int_equal(tessd_cslots_copying(s, 0), 1);
    assert_int_equal(tessd_cslots_copying(s, 1), 1);
    assert_int_equal(tessd_cslots_try(s, a), 1); /* held already */
    tessd_cslots_done(s, a);
    assert_int_equal(tessd_cslots_try(s, b), 1);
    tessd_cslots_done(s, b);
    tessd_cslots_done(s, c);
    assert_int_equal(tessd_cslots_copying(s, 0), 0);
    assert_int_equal(tessd_cslots_try(s, a), -1);
    assert_int_equal(errno, EINVAL);
    tessd_cslots_done(s, a); /* unknown: ignored */
    tessd_cslots_free(s);
}

static void test_cap(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(2);
    uint64_t a = q1(s, 3, TESSD_CSLOT_PERSON, false);
    uint64_t b = q1(s, 3, TESSD_CSLOT_PERSON, false);
    uint64_t c = q1(s, 3, TESSD_CSLOT_PERSON, false);
    assert_int_equal(tessd_cslots_try(s, a), 1);
    assert_int_equal(tessd_cslots_try(s, b), 1);
    assert_int_equal(tessd_cslots_try(s, c), 0);
    assert_int_equal(tessd_cslots_copying(s, 3), 2);
    tessd_cslots_done(s, b);
    assert_int_equal(tessd_cslots_try(s, c), 1);
    tessd_cslots_free(s);
}

static void test_rank(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(1);
    uint64_t h = q1(s, 0, TESSD_CSLOT_PERSON, false);
    assert_int_equal(tessd_cslots_try(s, h), 1);
    /* asked in this order while h copies */
    uint64_t rec = q1(s, 0, TESSD_CSLOT_RECLAIM, false);
    uint64_t p1 = q1(s, 0, TESSD_CSLOT_PERSON, false);
    uint64_t pre = q1(s, 0, TESSD_CSLOT_PREEMPT, false);
    uint64_t p2 = q1(s, 0, TESSD_CSLOT_PERSON, false);
    tessd_cslots_done(s, h);
    /* the preemption first, though asked after the others */
    assert_int_equal(tessd_cslots_try(s, rec), 0);
    assert_int_equal(tessd_cslots_try(s, p2), 0);
    assert_int_equal(tessd_cslots_try(s, p1), 0);
    assert_int_equal(tessd_cslots_try(s, pre), 1);
    tessd_cslots_done(s, pre);
    /* then persons in the order they asked, the reclamation last */
    assert_int_equal(tessd_cslots_try(s, p2), 0);
    assert_int_equal(tessd_cslots_try(s, rec), 0);
    assert_int_equal(tessd_cslots_try(s, p1), 1);
    tessd_cslots_done(s, p1);
    assert_int_equal(tessd_cslots_try(s, rec), 0);
    assert_int_equal(tessd_cslots_try(s, p2), 1);
    tessd_cslots_done(s, p2);
    assert_int_equal(tessd_cslots_try(s, rec), 1);
    tessd_cslots_free(s);
}

static void test_gang(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(1);
    unsigned g01[] = {0, 1}, g10[] = {1, 0}, g12[] = {1, 2, 1};
    /* two gang steps asking in opposite orders: one takes both, the other none */
    uint64_t x = tessd_cslots_queue(s, g01, 2, TESSD_CSLOT_PERSON, false, NULL, NULL);
    uint64_t y = tessd_cslots_queue(s, g10, 2, TESSD_CSLOT_PERSON, false, NULL, NULL);
    assert_int_equal(tessd_cslots_try(s, y), 0); /* x ranks before it on both */
    assert_int_equal(tessd_cslots_try(s, x), 1);
    assert_int_equal(tessd_cslots_try(s, y), 0);
    assert_int_equal(tessd_cslots_copying(s, 0), 1);
    assert_int_equal(tessd_cslots_copying(s, 1), 1);
    tessd_cslots_done(s, x);
    assert_int_equal(tessd_cslots_try(s, y), 1);
    /* a gang waiter on GPUs 1 and 2 (1 named twice: counted once) while y holds 1: a single
     * step on GPU 2 asked after it does not pass it, so it is not starved */
    uint64_t z = tessd_cslots_queue(s, g12, 3, TESSD_CSLOT_PERSON, false, NULL, NULL);
    uint64_t single = q1(s, 2, TESSD_CSLOT_PERSON, false);
    assert_int_equal(tessd_cslots_try(s, z), 0);
    assert_int_equal(tessd_cslots_copying(s, 2), 0); /* z holds nothing while it waits */
    assert_int_equal(tessd_cslots_try(s, single), 0);
    tessd_cslots_done(s, y);
    assert_int_equal(tessd_cslots_try(s, z), 1);
    assert_int_equal(tessd_cslots_copying(s, 1), 1);
    assert_int_equal(tessd_cslots_copying(s, 2), 1);
    tessd_cslots_done(s, z);
    assert_int_equal(tessd_cslots_try(s, single), 1);
    tessd_cslots_free(s);
}

static void test_stalled(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(1);
    int tag = 7;
    unsigned g = 0;
    uint64_t a = tessd_cslots_queue(s, &g, 1, TESSD_CSLOT_PERSON, false, NULL, &tag);
    uint64_t b = q1(s, 0, TESSD_CSLOT_PERSON, false);
    uint64_t c = q1(s, 5, TESSD_CSLOT_PERSON, false);
    assert_int_equal(tessd_cslots_pass(s, b), -1); /* a waiter: not passed */
    assert_false(tessd_cslots_passed(s, b));
    assert_int_equal(tessd_cslots_try(s, a), 1);
    assert_int_equal(tessd_cslots_try(s, b), 0);
    uint64_t ts[4];
    void *args[4];
    assert_int_equal(tessd_cslots_blockers(s, b, ts, args, 4), 1);
    assert_int_equal(ts[0], a);
    assert_ptr_equal(args[0], &tag);
    assert_int_equal(tessd_cslots_blockers(s, c, ts, args, 4), 0); /* another GPU */
    /* the process a's copy works on is stopped: a is passed, b copies */
    assert_int_equal(tessd_cslots_pass(s, a), 1);
    assert_true(tessd_cslots_passed(s, a));
    assert_int_equal(tessd_cslots_copying(s, 0), 0);
    assert_int_equal(tessd_cslots_try(s, b), 1);
    /* a goes on: it stays passed (never counts, never blocks again); b counts, a third waits */
    assert_int_equal(tessd_cslots_pass(s, a), 1);
    assert_int_equal(tessd_cslots_copying(s, 0), 1);
    uint64_t d = q1(s, 0, TESSD_CSLOT_PREEMPT, false);
    assert_int_equal(tessd_cslots_try(s, d), 0);
    /* b stopped too: a still holds as GPU 0's passed holder, so b is not passed (it counts) */
    assert_int_equal(tessd_cslots_pass(s, b), 0);
    assert_false(tessd_cslots_passed(s, b));
    assert_int_equal(tessd_cslots_try(s, d), 0);
    tessd_cslots_done(s, a);
    assert_int_equal(tessd_cslots_try(s, d), 0);  /* b counts */
    assert_int_equal(tessd_cslots_pass(s, b), 1); /* now GPU 0 has no passed holder */
    assert_int_equal(tessd_cslots_try(s, d), 1);
    tessd_cslots_done(s, b);
    tessd_cslots_done(s, d);
    tessd_cslots_free(s);
}

/* Passed holders on one GPU at once (ts[0..n)): at most one may be passed (RV16b M2). */
static unsigned passed_on(const tessd_cslots_t *s, const uint64_t *ts, size_t n)
{
    unsigned c = 0;
    for (size_t i = 0; i < n; i++)
        c += tessd_cslots_passed(s, ts[i]);
    return c;
}

/* RV16b M2: job A takes GPU 0's slot and stops its process (passed); jobs B, C, ... each take
 * the slot in turn, stop theirs and hold past the hold bound.  Each is judged overdue but not
 * passed while another passed holder holds GPU 0, so it keeps counting and the next waits:
 * never more than one passed (stopped) copy to release at once beside the cap, whatever the
 * number of rounds.  Once the passed holder ends, the next overdue one may be passed. */
static void test_stockpile(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(1);
    uint64_t h[8];
    h[0] = q1(s, 0, TESSD_CSLOT_PERSON, false);
    assert_int_equal(tessd_cslots_try(s, h[0]), 1);
    assert_int_equal(tessd_cslots_pass(s, h[0]), 1); /* A stopped: passed */
    size_t n = 1;
    for (int round = 1; round < 8; round++) {
        h[round] = q1(s, 0, TESSD_CSLOT_PERSON, false);
        n++;
        int took = tessd_cslots_try(s, h[round]);
        /* only the first after A takes the slot: the others wait behind a counted holder */
        assert_int_equal(took, round == 1 ? 1 : 0);
        /* the pass (a minute later: overdue and stopped) of every holder is refused */
        for (size_t i = 1; i < n; i++)
            if (tessd_cslots_try(s, h[i]) == 1)
                assert_int_equal(tessd_cslots_pass(s, h[i]), 0);
        assert_int_equal(passed_on(s, h, n), 1);
        assert_int_equal(tessd_cslots_copying(s, 0), 1);
    }
    /* A's copy ends: the overdue B may now be passed, and C takes the slot; C is not passed */
    tessd_cslots_done(s, h[0]);
    assert_int_equal(tessd_cslots_pass(s, h[1]), 1);
    assert_int_equal(tessd_cslots_try(s, h[2]), 1);
    assert_int_equal(tessd_cslots_try(s, h[3]), 0);
    assert_int_equal(tessd_cslots_pass(s, h[2]), 0);
    assert_int_equal(passed_on(s, h + 1, n - 1), 1);
    assert_int_equal(tessd_cslots_copying(s, 0), 1);
    /* a holder on GPU 1 is passed: GPU 0's passed holder does not count against GPU 1 */
    uint64_t o = q1(s, 1, TESSD_CSLOT_PERSON, false);
    assert_int_equal(tessd_cslots_try(s, o), 1);
    assert_int_equal(tessd_cslots_pass(s, o), 1);
    tessd_cslots_free(s);
}

/* RV16 H1's toggling (its PoC): a job stops the process its restore works on until the next
 * restore passes it, then lets it go on.  The passed restore never counts again, so GPU 0
 * never has two counted restores (nor more than one passed holder beside its cap). */
static void test_toggle(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(1);
    uint64_t h1 = q1(s, 0, TESSD_CSLOT_PERSON, true);
    assert_int_equal(tessd_cslots_try(s, h1), 1);
    uint64_t h2 = q1(s, 0, TESSD_CSLOT_PERSON, true);
    assert_int_equal(tessd_cslots_try(s, h2), 0);
    assert_int_equal(tessd_cslots_pass(s, h1), 1); /* stopped */
    assert_int_equal(tessd_cslots_try(s, h2), 1);
    /* SIGCONT: the next verdict says "not stopped"; nothing makes h1 count again */
    assert_int_equal(tessd_cslots_copying(s, 0), 1);
    /* h2 stops too, and a third restore waits: h2 is not passed while h1 holds */
    uint64_t h3 = q1(s, 0, TESSD_CSLOT_PERSON, true);
    assert_int_equal(tessd_cslots_pass(s, h2), 0);
    assert_int_equal(tessd_cslots_try(s, h3), 0);
    assert_int_equal(tessd_cslots_copying(s, 0), 1);
    tessd_cslots_done(s, h1);
    tessd_cslots_done(s, h2);
    assert_int_equal(tessd_cslots_try(s, h3), 1);
    assert_int_equal(tessd_cslots_copying(s, 0), 1);
    tessd_cslots_free(s);
}

static uint64_t qo(tessd_cslots_t *s, unsigned gpu, tessd_cslot_class_t cls, const char *owner)
{
    uint64_t t = tessd_cslots_queue(s, &gpu, 1, cls, false, owner, NULL);
    assert_true(t > 0);
    return t;
}

/* RV16 M1, FIFO chains: within a class the owners take turns, so a user's many queued steps
 * do not all go before another user's one. */
static void test_owner_turns(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(1);
    uint64_t h = qo(s, 0, TESSD_CSLOT_PERSON, "mallory");
    assert_int_equal(tessd_cslots_try(s, h), 1);
    uint64_t m1 = qo(s, 0, TESSD_CSLOT_PERSON, "mallory");
    uint64_t m2 = qo(s, 0, TESSD_CSLOT_PERSON, "mallory");
    uint64_t m3 = qo(s, 0, TESSD_CSLOT_PERSON, "mallory");
    uint64_t v = qo(s, 0, TESSD_CSLOT_PERSON, "victim");
    uint64_t v2 = qo(s, 0, TESSD_CSLOT_PERSON, "victim");
    tessd_cslots_done(s, h);
    /* turns: h was mallory's 0, so m1 1, m2 2, m3 3; v 0 (the turn served now), v2 1 */
    assert_int_equal(tessd_cslots_try(s, m1), 0);
    assert_int_equal(tessd_cslots_try(s, v), 1);
    tessd_cslots_done(s, v);
    assert_int_equal(tessd_cslots_try(s, v2), 0); /* m1 has turn 1 too and asked first */
    assert_int_equal(tessd_cslots_try(s, m1), 1);
    tessd_cslots_done(s, m1);
    assert_int_equal(tessd_cslots_try(s, m2), 0);
    assert_int_equal(tessd_cslots_try(s, v2), 1);
    tessd_cslots_done(s, v2);
    /* victim's next step (turn 2) ties with mallory's m2: the earlier asked goes first, then
     * victim's before mallory's m3 (3) */
    uint64_t v3 = qo(s, 0, TESSD_CSLOT_PERSON, "victim");
    assert_int_equal(tessd_cslots_try(s, v3), 0);
    assert_int_equal(tessd_cslots_try(s, m2), 1);
    tessd_cslots_done(s, m2);
    assert_int_equal(tessd_cslots_try(s, m3), 0);
    assert_int_equal(tessd_cslots_try(s, v3), 1);
    tessd_cslots_done(s, v3);
    /* a user who queues one step at a time gets no earlier turn for it: victim has nothing
     * queued, yet its next step gets turn 3 (after v3's 2, which has ended, not the turn
     * served, 2), and m3 (3 too, asked first) goes before it */
    uint64_t v4 = qo(s, 0, TESSD_CSLOT_PERSON, "victim");
    assert_int_equal(tessd_cslots_try(s, v4), 0);
    assert_int_equal(tessd_cslots_try(s, m3), 1);
    tessd_cslots_done(s, m3);
    assert_int_equal(tessd_cslots_try(s, v4), 1);
    tessd_cslots_free(s);
}

/* RV16b M1, the review's scenario: mallory queues m1..m99 on GPU 0 behind a holder, then a
 * step on GPU 1, where nobody waits, takes its slot at once with the turn after her 99.  That
 * must not move GPU 0's turn on: the victim's step on GPU 0 then gets GPU 0's turn served and
 * goes second (after m1, which has that turn too and asked first), not behind all 99. */
static void test_turns_per_gpu(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(1);
    uint64_t h = qo(s, 0, TESSD_CSLOT_PERSON, "holder");
    assert_int_equal(tessd_cslots_try(s, h), 1);
    uint64_t m[99];
    for (int i = 0; i < 99; i++)
        m[i] = qo(s, 0, TESSD_CSLOT_PERSON, "mallory");
    uint64_t other = qo(s, 1, TESSD_CSLOT_PERSON, "mallory");
    assert_int_equal(tessd_cslots_try(s, other), 1); /* nobody waits on GPU 1 */
    uint64_t v = qo(s, 0, TESSD_CSLOT_PERSON, "victim");
    tessd_cslots_done(s, h);
    assert_int_equal(tessd_cslots_try(s, v), 0); /* m[0] has turn 0 too and asked first */
    assert_int_equal(tessd_cslots_try(s, m[0]), 1);
    tessd_cslots_done(s, m[0]);
    assert_int_equal(tessd_cslots_try(s, m[1]), 0);
    assert_int_equal(tessd_cslots_try(s, v), 1);
    tessd_cslots_done(s, v);
    /* mallory's step on GPU 1 got turn 0 there (GPU 1's own), not the one after her 99 */
    tessd_cslots_done(s, other);
    /* a gang step takes the highest of its turns over its GPUs: victim queues three steps on
     * GPU 1 behind a holder there (turns 0, 1, 2: her next there is 3; on GPU 0 it is 1), then
     * one on GPUs 0 and 1, turn 3: on GPU 0 it goes after m[1..3] (m[3] has turn 3 too and
     * asked first) and before m[4] */
    uint64_t h1 = qo(s, 1, TESSD_CSLOT_PERSON, "holder");
    assert_int_equal(tessd_cslots_try(s, h1), 1);
    for (int i = 0; i < 3; i++)
        assert_true(qo(s, 1, TESSD_CSLOT_PERSON, "victim") > 0);
    unsigned both[2] = {0, 1};
    uint64_t g = tessd_cslots_queue(s, both, 2, TESSD_CSLOT_PERSON, false, "victim", NULL);
    assert_true(g > 0);
    for (int i = 1; i <= 3; i++) {
        assert_int_equal(tessd_cslots_try(s, m[i]), 1);
        tessd_cslots_done(s, m[i]);
    }
    assert_int_equal(tessd_cslots_try(s, m[4]), 0); /* g ranks before it */
    tessd_cslots_free(s);
}

/* RV16 M1, rank: a waiter that waited long ranks up (RECLAIM as PERSON, then before every
 * PERSON not aged), never as PREEMPT. */
static void test_age(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(1);
    uint64_t h = qo(s, 0, TESSD_CSLOT_PERSON, "a");
    assert_int_equal(tessd_cslots_try(s, h), 1);
    assert_int_equal(tessd_cslots_age(s, h), -1); /* a holder */
    assert_int_equal(tessd_cslots_age(s, 999), -1);
    uint64_t r = qo(s, 0, TESSD_CSLOT_RECLAIM, "b");
    uint64_t p = qo(s, 0, TESSD_CSLOT_PERSON, "c");
    tessd_cslots_done(s, h);
    assert_int_equal(tessd_cslots_try(s, r), 0); /* p's class ranks first */
    assert_int_equal(tessd_cslots_age(s, r), 1); /* r as a PERSON waiter: it asked first */
    assert_int_equal(tessd_cslots_try(s, p), 0);
    assert_int_equal(tessd_cslots_try(s, r), 1);
    tessd_cslots_done(s, r);
    assert_int_equal(tessd_cslots_try(s, p), 1);
    /* aged twice: before PERSON waiters who asked first, after a PREEMPT one */
    uint64_t r2 = qo(s, 0, TESSD_CSLOT_RECLAIM, "b");
    uint64_t p2 = qo(s, 0, TESSD_CSLOT_PERSON, "c");
    uint64_t x = qo(s, 0, TESSD_CSLOT_PREEMPT, "d");
    tessd_cslots_done(s, p);
    /* p2 asked after r2, so age r2 with a PERSON waiter asked before it: the check is rank */
    uint64_t p0 = p2;
    assert_int_equal(tessd_cslots_age(s, r2), 1);
    assert_int_equal(tessd_cslots_age(s, r2), 1);
    assert_int_equal(tessd_cslots_age(s, r2), 0); /* as high as aging goes */
    assert_int_equal(tessd_cslots_try(s, r2), 0); /* x (PREEMPT) first */
    assert_int_equal(tessd_cslots_try(s, x), 1);
    tessd_cslots_done(s, x);
    uint64_t p3 = qo(s, 0, TESSD_CSLOT_PERSON, "b");
    (void)p3;
    assert_int_equal(tessd_cslots_try(s, p0), 0);
    assert_int_equal(tessd_cslots_try(s, r2), 1);
    tessd_cslots_done(s, r2);
    /* a PERSON waiter aged once ranks before one asked earlier */
    uint64_t e1 = qo(s, 0, TESSD_CSLOT_PERSON, "e");
    uint64_t f1 = qo(s, 0, TESSD_CSLOT_PERSON, "f");
    tessd_cslots_done(s, p3);
    assert_int_equal(tessd_cslots_age(s, f1), 1);
    assert_int_equal(tessd_cslots_try(s, e1), 0);
    assert_int_equal(tessd_cslots_try(s, f1), 1);
    tessd_cslots_done(s, f1);
    assert_int_equal(tessd_cslots_try(s, e1), 0); /* p2: turn 1 as e1, asked first */
    assert_int_equal(tessd_cslots_try(s, p0), 1);
    tessd_cslots_done(s, p0);
    assert_int_equal(tessd_cslots_try(s, e1), 1);
    tessd_cslots_free(s);
}

static void test_restores(void **state)
{
    (void)state;
    tessd_cslots_t *s = tessd_cslots_new(3);
    uint64_t r1 = q1(s, 0, TESSD_CSLOT_PERSON, true);
    uint64_t r2 = q1(s, 0, TESSD_CSLOT_PERSON, true);
    uint64_t c1 = q1(s, 0, TESSD_CSLOT_PERSON, false);
    uint64_t r3 = q1(s, 1, TESSD_CSLOT_PERSON, true);
    assert_int_equal(tessd_cslots_try(s, r1), 1);
    assert_int_equal(tessd_cslots_try(s, r2), 0); /* one restore per GPU, whatever the cap */
    assert_int_equal(tessd_cslots_try(s, r3), 1); /* on another GPU */
    assert_int_equal(tessd_cslots_try(s, c1), 0); /* r2 ranks before it */
    tessd_cslots_done(s, r1);
    assert_int_equal(tessd_cslots_try(s, r2), 1);
    assert_int_equal(tessd_cslots_try(s, c1), 1); /* a checkpoint beside a restore: cap 3 */
    tessd_cslots_free(s);
}

static void test_bad(void **state)
{
    (void)state;
    errno = 0;
    assert_null(tessd_cslots_new(0));
    assert_int_equal(errno, EINVAL);
    assert_null(tessd_cslots_new(TESSD_CSLOT_MAX_PER_GPU + 1));
    tessd_cslots_t *s = tessd_cslots_new(TESSD_CSLOT_MAX_PER_GPU);
    assert_non_null(s);
    unsigned g[TESSD_CSLOT_MAX_GPUS + 1] = {0};
    errno = 0;
    assert_int_equal(tessd_cslots_queue(s, g, 0, TESSD_CSLOT_PERSON, false, NULL, NULL), 0);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(
        tessd_cslots_queue(s, g, TESSD_CSLOT_MAX_GPUS + 1, TESSD_CSLOT_PERSON, false, NULL, NULL),
        0);
    assert_int_equal(tessd_cslots_queue(s, g, 1, (tessd_cslot_class_t)3, false, NULL, NULL), 0);
    assert_int_equal(tessd_cslots_queue(s, NULL, 1, TESSD_CSLOT_PERSON, false, NULL, NULL), 0);
    unsigned far = TESSD_CSLOT_MAX_GPUS; /* not a node's GPU index */
    errno = 0;
    assert_int_equal(tessd_cslots_queue(s, &far, 1, TESSD_CSLOT_PERSON, false, NULL, NULL), 0);
    assert_int_equal(errno, EINVAL);
    /* nothing was queued: the first real ticket copies at once */
    uint64_t t = tessd_cslots_queue(s, g, 1, TESSD_CSLOT_RECLAIM, false, NULL, NULL);
    assert_int_equal(tessd_cslots_try(s, t), 1);
    /* many waiters (the table grows) */
    for (unsigned i = 0; i < 100; i++)
        assert_true(q1(s, i % 4, TESSD_CSLOT_PERSON, false) > 0);
    tessd_cslots_free(s);
    tessd_cslots_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_per_gpu),   cmocka_unit_test(test_cap),
        cmocka_unit_test(test_rank),          cmocka_unit_test(test_gang),
        cmocka_unit_test(test_stalled),       cmocka_unit_test(test_toggle),
        cmocka_unit_test(test_stockpile),     cmocka_unit_test(test_owner_turns),
        cmocka_unit_test(test_age),           cmocka_unit_test(test_restores),
        cmocka_unit_test(test_turns_per_gpu), cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
