/* share.h - what a slice is charged for a measured span of device time when
 * other slices' work shared the GPU during it (docs/compute-shares.md,
 * "Charging under contention").  Pure: no clock, no I/O, no globals;
 * unit-tested in src/interposer/policy/test/test_share.c.
 *
 * An event pair times a launch's work from its start to its end on the
 * device.  A GPU time-slices between the contexts of different processes, so
 * on a shared GPU that span also holds the neighbours' timeslices: charged
 * as it is, each slice pays for the others' work too.  The device is shared
 * the way a processor-sharing server is: while k slices have work on it,
 * each gets about 1/k of it.  So the device registry keeps a virtual clock,
 * V(t) = integral of 1/k(t) dt (k: slices with measured work in flight),
 * and a pair launched at host time t0 and read at t1 is charged
 *
 *     span x (V(t1) - V(t0)) / (t1 - t0)
 *
 * its span scaled by the mean share the slice had while the pair was in
 * flight: the whole span when it was alone, half of it beside one busy
 * neighbour, and so on.
 */
#ifndef TESSEL_INTERPOSER_SHARE_H
#define TESSEL_INTERPOSER_SHARE_H

#include <stdint.h>

/* V advances by TCU_VCLOCK_ONE per ns when one slice has work, one k-th of
 * that when k have (2^10: the division by k up to 64 loses less than 2 % of
 * a ns per update; V wraps after 208 days, differences stay right). */
#define TCU_VCLOCK_ONE 1024u

/* Smallest fraction of a span a pair is charged (1/64: the registry's
 * slots), so that a wrong k can never make work free. */
#define TCU_SHARE_MIN_DIV 64u

/* The virtual clock: V = v at host time t, rising at TCU_VCLOCK_ONE / k per
 * ns from there (k = 0: the device is idle, V rises as if k were 1). */
typedef struct {
    uint64_t t_ns;
    uint64_t v;
    uint32_t k;
} tcu_vclock_t;

/* V at time now (>= c->t_ns; an earlier now reads V at c->t_ns). */
uint64_t tcu_vclock_at(const tcu_vclock_t *c, uint64_t now);

/* Bring c to time now and make k_new the number of busy slices from then
 * on.  A now earlier than c->t_ns (another process's clock read raced ours)
 * keeps c's time: V never goes back. */
void tcu_vclock_set(tcu_vclock_t *c, uint64_t now, uint32_t k_new);

/* Device time charged for a pair that measured span_ns, in flight from host
 * time t0 to t1 while V rose by dv: span x dv / ((t1 - t0) x TCU_VCLOCK_ONE),
 * never more than span_ns nor less than span_ns / TCU_SHARE_MIN_DIV.  t1 <=
 * t0 (no time passed) charges the whole span. */
uint64_t tcu_share_charge(uint64_t span_ns, uint64_t dv, uint64_t t0, uint64_t t1);

/* What a peer with a share claims of the device in work-conserving
 * arithmetic (tcu_core_rate): its use over the last window plus
 * TCU_CLAIM_HEADROOM_PPM, at most its share; *full = 1 when it claims its
 * whole share (it uses about all of it, so it also wants the spare).  A
 * peer that uses less leaves the rest to the others, and takes it back as
 * its use grows: 2 points per window (100 ms) from the headroom, and at
 * once up to its timeslices' worth, since the GPU time-slices between
 * processes whatever their rates (a busy slice beside one other gets half
 * the device while both have work).  2 points, not the 5 kept for
 * priorities: the headroom is device time nobody uses while the peer's
 * demand is steady (t0531 lost 5 % of the throughput with 5 points).
 * Without a share (limit_ppm 0) a peer claims its use, and wants more. */
#define TCU_CLAIM_HEADROOM_PPM 20000u
uint64_t tcu_peer_claim(uint64_t limit_ppm, uint64_t used_ppm, int *full);

#endif
