/* policy.h - the interposer's pure arithmetic: configuration from the
 * environment, what an allocation costs, and what a slice reports.
 *
 * Nothing here calls the driver, allocates, reads the clock or touches
 * global state, so every rule can be unit-tested with a table
 * (src/interposer/policy/test/test_policy.c).  Prefix tcu_ (Tessel CUDA).
 */
#ifndef TESSEL_INTERPOSER_POLICY_H
#define TESSEL_INTERPOSER_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "cudaabi/cuda_abi.h"
#include "libshm/shm.h"

/* CUDA ordinals the configuration can name: TESSEL_CUDA_MEM_LIMIT_<n> with
 * 0 <= n < TCU_MAX_DEVICES (the slice file's device capacity). */
#define TCU_MAX_DEVICES TSHM_MAX_DEVICES

/* The configuration a process reads once, at initialisation.
 *
 *   TESSEL_CUDA_MEM_LIMIT      bytes or K/M/G/T (binary); every device
 *   TESSEL_CUDA_MEM_LIMIT_<n>  the same for CUDA ordinal n (overrides)
 *   TESSEL_SLICE               absolute path of the slice file; unset: the
 *                              process is a slice of its own
 *   CUDA_VISIBLE_DEVICES       checked only: indexes, GPU-/MIG- UUIDs
 *
 * A malformed value makes ok = 0 and error one line of text; the interposer
 * then fails closed (every limit 0: all counted allocations refused). */
typedef struct {
    int ok;
    char error[256];
    uint64_t limit[TCU_MAX_DEVICES]; /* TSHM_UNLIMITED where unset */
    int limited;                     /* any limit set at all */
    char slice[4096];                /* "" = private slice */
} tcu_config_t;

/* Fill c from an environment vector (environ layout: "NAME=value", NULL
 * terminated).  Always fills c; returns 0 when ok, -1 when the configuration
 * is malformed (c->ok = 0, c->error set, every limit 0). */
int tcu_config_parse(tcu_config_t *c, char *const *envp);

/* What cuMemGetInfo / cuDeviceTotalMem / NVML report for a slice device:
 * total = min(limit, real_total), free = min(total - used, real_free),
 * without underflow.  An unlimited device reports the real figures. */
void tcu_view(uint64_t limit, uint64_t used, uint64_t real_free, uint64_t real_total,
              uint64_t *free_out, uint64_t *total_out);

/* Bytes charged for a CUDA array (cuArrayCreate / cuArray3DCreate): width x
 * max(height,1) x max(depth,1) elements, each the size that format and
 * channel count give; block-compressed and NV12 formats by their bits per
 * pixel.  Saturates at UINT64_MAX instead of wrapping. */
uint64_t tcu_array_bytes(CUarray_format fmt, unsigned channels, size_t w, size_t h, size_t d,
                         unsigned flags);

/* Bytes for a mipmapped array: the sum over levels, each level halving
 * width, height and (unless layered or cubemap) depth, never below 1. */
uint64_t tcu_mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels);

/* Saturating multiply, used for pitch x height. */
uint64_t tcu_mul_sat(uint64_t a, uint64_t b);

#endif
