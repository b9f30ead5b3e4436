/* share.c - charging a measured span under contention (see share.h). */
#include "interposer/policy/share.h"

uint64_t tcu_vclock_at(const tcu_vclock_t *c, uint64_t now)
{
    if (now <= c->t_ns)
        return c->v;
    uint64_t dt = now - c->t_ns;
    return c->v + dt * TCU_VCLOCK_ONE / (c->k ? c->k : 1);
}

void tcu_vclock_set(tcu_vclock_t *c, uint64_t now, uint32_t k_new)
{
    if (now > c->t_ns) {
        c->v = tcu_vclock_at(c, now);
        c->t_ns = now;
    }
    c->k = k_new;
}

uint64_t tcu_share_charge(uint64_t span_ns, uint64_t dv, uint64_t t0, uint64_t t1)
{
    if (t1 <= t0)
        return span_ns;
    /* dv <= dt x ONE when k >= 1 throughout; long double keeps span x dv
     * (up to 2^34 x 2^44) exact enough. */
    long double f = (long double)dv / ((long double)(t1 - t0) * TCU_VCLOCK_ONE);
    long double min = 1.0L / TCU_SHARE_MIN_DIV;
    if (f > 1.0L)
        f = 1.0L;
    if (f < min)
        f = min;
    return (uint64_t)((long double)span_ns * f + 0.5L);
}

uint64_t tcu_peer_claim(uint64_t limit_ppm, uint64_t used_ppm, int *full)
{
    *full = 1;
    if (!limit_ppm)
        return used_ppm;
    if (used_ppm + TCU_CLAIM_HEADROOM_PPM < limit_ppm) {
        *full = 0;
        return used_ppm + TCU_CLAIM_HEADROOM_PPM;
    }
    return limit_ppm;
}
