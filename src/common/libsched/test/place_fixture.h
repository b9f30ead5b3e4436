/* place_fixture.h - helpers shared by libsched's cmocka tests: a seeded
 * generator for randomized tests (splitmix64: the same seed, the same run)
 * and a one-member job request. */
#ifndef TESSEL_LIBSCHED_TEST_PLACE_FIXTURE_H
#define TESSEL_LIBSCHED_TEST_PLACE_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include "tessel/sched.h"

#ifndef GiB
#define GiB (1ull << 30)
#endif

/* Seed by assigning; each test program has its own. */
static uint64_t rng_state;

static inline uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* 0 .. n-1 */
static inline unsigned below(unsigned n)
{
    return (unsigned)(rnd() % n);
}

/* One member: cpu milli-cores, 1 GiB, ngpus GPUs of milli each. */
static inline tsched_job_t job(uint64_t cpu, uint32_t ngpus, uint32_t milli)
{
    tsched_job_t j;
    memset(&j, 0, sizeof j);
    j.cpu_milli = cpu;
    j.mem_bytes = GiB;
    j.ngpus = ngpus;
    j.milli_gpu = milli;
    j.gang = 1;
    return j;
}

#endif
