/* policy.c - configuration parsing and limit arithmetic (see policy.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "interposer/policy/policy.h"

int tcu_host_admit(uint64_t own, uint64_t bytes, uint64_t limit)
{
    return bytes <= limit && own <= limit - bytes;
}

int tcu_loc_is_host(CUmemLocation l)
{
    return l.type == CU_MEM_LOCATION_TYPE_HOST || l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
           l.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

CUmemLocation tcu_loc_of_device(CUdevice d)
{
    CUmemLocation l = {d == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE,
                       d == CU_DEVICE_CPU ? 0 : d};
    return l;
}

int tcu_advice_to_device(CUmem_advise a, CUmemLocation l)
{
    switch (a) {
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
        return !tcu_loc_is_host(l);
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
        return 0;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
        return 1;
    }
    return 1;
}

int tcu_locs_reach_device(const CUmemLocation *locs, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!tcu_loc_is_host(locs[k]))
            return 1;
    return 0;
}
#include "libutil/size.h"

#define LIMIT_VAR "TESSEL_CUDA_MEM_LIMIT"
#define OVER_VAR  "TESSEL_CUDA_MEM_OVERSUBSCRIBE"

static int fail(tcu_config_t *c, const char *fmt, const char *a, const char *b)
{
    c->ok = 0;
    /* Truncation of a long value is fine: the text is for a person. */
    if (snprintf(c->error, sizeof c->error, fmt, a, b) < 0)
        c->error[0] = '\0';
    for (int i = 0; i < TCU_MAX_DEVICES; i++)
        c->limit[i] = 0;
    c->limited = 1;
    c->host_limit = 0; /* failed closed: nothing spills either */
    return -1;
}

/* One CUDA_VISIBLE_DEVICES entry: a decimal index (the driver reads "-1" as
 * "no device"), or a GPU-/MIG- UUID (prefixes allowed, as the driver does). */
static int visible_entry_ok(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    if (n > 4 && (strncmp(s, "GPU-", 4) == 0 || strncmp(s, "MIG-", 4) == 0)) {
        for (size_t i = 4; i < n; i++)
            if (!strchr("0123456789abcdefABCDEF-/", s[i]))
                return 0;
        return 1;
    }
    size_t i = (s[0] == '-') ? 1 : 0;
    if (i == n)
        return 0;
    for (; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

int tcu_config_parse(tcu_config_t *c, char *const *envp)
{
    memset(c, 0, sizeof *c);
    c->ok = 1;
    for (int i = 0; i < TCU_MAX_DEVICES; i++)
        c->limit[i] = TSHM_UNLIMITED;
    const char *all = NULL, *slice = NULL, *visible = NULL;
    const char *core = NULL, *mode = NULL, *prio = NULL, *registry = NULL, *over = NULL;
    c->core_prio = TSHM_PRIO_NORMAL;
    strcpy(c->registry, "/dev/shm");
    const char *per[TCU_MAX_DEVICES] = {0};
    char name[64];

    for (char *const *e = envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t nlen = (size_t)(eq - *e);
        const char *val = eq + 1;
        if (nlen == strlen(LIMIT_VAR) && strncmp(*e, LIMIT_VAR, nlen) == 0) {
            all = val;
        } else if (nlen > strlen(LIMIT_VAR) + 1 &&
                   strncmp(*e, LIMIT_VAR "_", strlen(LIMIT_VAR) + 1) == 0) {
            const char *ix = *e + strlen(LIMIT_VAR) + 1;
            size_t ixlen = nlen - strlen(LIMIT_VAR) - 1;
            if (snprintf(name, sizeof name, "%.*s", (int)(nlen < 60 ? nlen : 60), *e) < 0)
                name[0] = '\0';
            unsigned long n = 0;
            int good = ixlen <= 3;
            for (size_t k = 0; good && k < ixlen; k++) {
                good = ix[k] >= '0' && ix[k] <= '9';
                n = n * 10 + (unsigned long)(ix[k] - '0');
            }
            if (!good || n >= TCU_MAX_DEVICES)
                return fail(c, "%s: not a device index from 0 to 63%s", name, "");
            per[n] = val;
        } else if (nlen == 12 && strncmp(*e, "TESSEL_SLICE", 12) == 0) {
            slice = val;
        } else if (nlen == 20 && strncmp(*e, "CUDA_VISIBLE_DEVICES", 20) == 0) {
            visible = val;
        } else if (nlen == 22 && strncmp(*e, "TESSEL_CUDA_CORE_LIMIT", 22) == 0) {
            core = val;
        } else if (nlen == 21 && strncmp(*e, "TESSEL_CUDA_CORE_MODE", 21) == 0) {
            mode = val;
        } else if (nlen == 25 && strncmp(*e, "TESSEL_CUDA_CORE_PRIORITY", 25) == 0) {
            prio = val;
        } else if (nlen == 22 && strncmp(*e, "TESSEL_DEVICE_REGISTRY", 22) == 0) {
            registry = val;
        } else if (nlen == strlen(OVER_VAR) && strncmp(*e, OVER_VAR, nlen) == 0) {
            over = val;
        }
    }

    tsl_error_t err;
    if (all) {
        uint64_t v;
        if (tsl_parse_size(all, &v, &err) < 0)
            return fail(c, LIMIT_VAR "=%s: %s", all, err.text);
        for (int i = 0; i < TCU_MAX_DEVICES; i++)
            c->limit[i] = v;
        c->limited = 1;
    }
    for (int i = 0; i < TCU_MAX_DEVICES; i++) {
        if (!per[i])
            continue;
        uint64_t v;
        if (tsl_parse_size(per[i], &v, &err) < 0) {
            char what[128];
            if (snprintf(what, sizeof what, LIMIT_VAR "_%d=%.60s", i, per[i]) < 0)
                what[0] = '\0';
            return fail(c, "%s: %s", what, err.text);
        }
        c->limit[i] = v;
        c->limited = 1;
    }
    if (over) {
        uint64_t v;
        if (tsl_parse_size(over, &v, &err) < 0)
            return fail(c, OVER_VAR "=%.60s: %s", over, err.text);
        c->host_limit = v;
        c->host_set = 1;
    }
    if (slice) {
        if (slice[0] != '/')
            return fail(c, "TESSEL_SLICE='%.200s': %s", slice,
                        "must be an absolute path (unset it for a private slice)");
        if (strlen(slice) >= sizeof c->slice)
            return fail(c, "TESSEL_SLICE: %s%s", "path too long", "");
        strcpy(c->slice, slice);
    }
    if (core) {
        /* 1..100, an optional '%', nothing else. */
        unsigned long v = 0;
        size_t k = 0, n = strlen(core);
        if (n && core[n - 1] == '%')
            n--;
        for (; k < n && k < 4 && core[k] >= '0' && core[k] <= '9'; k++)
            v = v * 10 + (unsigned long)(core[k] - '0');
        if (n == 0 || k != n || v < 1 || v > 100)
            return fail(c, "TESSEL_CUDA_CORE_LIMIT='%.60s': %s", core,
                        "must be a percentage from 1 to 100");
        c->core_limit = (unsigned)v;
        c->core_set = 1;
    }
    if (mode) {
        if (strcmp(mode, "strict") == 0)
            c->core_mode = TSHM_CORE_STRICT;
        else if (strcmp(mode, "shared") == 0)
            c->core_mode = TSHM_CORE_SHARED;
        else
            return fail(c, "TESSEL_CUDA_CORE_MODE='%.60s': %s", mode, "must be strict or shared");
        c->core_set = c->mode_set = 1;
    }
    if (prio) {
        if (strcmp(prio, "low") == 0)
            c->core_prio = TSHM_PRIO_LOW;
        else if (strcmp(prio, "normal") == 0)
            c->core_prio = TSHM_PRIO_NORMAL;
        else if (strcmp(prio, "high") == 0)
            c->core_prio = TSHM_PRIO_HIGH;
        else
            return fail(c, "TESSEL_CUDA_CORE_PRIORITY='%.60s': %s", prio,
                        "must be low, normal or high");
        c->core_set = c->prio_set = 1;
    }
    if (registry) {
        if (registry[0] != '/' || strlen(registry) >= sizeof c->registry - 64)
            return fail(c, "TESSEL_DEVICE_REGISTRY='%.200s': %s", registry,
                        "must be an absolute path of a directory");
        strcpy(c->registry, registry);
    }
    if (visible) {
        const char *p = visible;
        while (*p) {
            const char *q = strchr(p, ',');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            if (!visible_entry_ok(p, n))
                return fail(c, "CUDA_VISIBLE_DEVICES='%.200s': %s", visible,
                            "entries must be indexes or GPU-/MIG- UUIDs");
            p += n;
            if (*p == ',')
                p++;
        }
    }
    return 0;
}

int tcu_config_parse_file(tcu_config_t *c, const char *text)
{
    /* The file holds environment-style pairs: split it into lines and let
     * tcu_config_parse read them as it reads environ. */
    enum { MAX_LINES = 128 };
    char buf[TCU_LIMITS_MAX + 1];
    char *lines[MAX_LINES + 1];
    size_t len = strlen(text);
    int n = 0;
    if (len > TCU_LIMITS_MAX) {
        tcu_config_parse(c, NULL);
        c->from_file = 1;
        return fail(c, "limits file: larger than %s bytes%s", "8192", "");
    }
    memcpy(buf, text, len + 1);
    for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (l[0] == '#')
            continue;
        if (n == MAX_LINES || !strchr(l, '=')) {
            tcu_config_parse(c, NULL);
            c->from_file = 1;
            return fail(c, "limits file: '%.80s': %s", l,
                        n == MAX_LINES ? "too many lines" : "expected NAME=value");
        }
        lines[n++] = l;
    }
    lines[n] = NULL;
    int rc = tcu_config_parse(c, lines);
    c->from_file = 1;
    return rc;
}

int tcu_config_lower(tcu_config_t *out, const tcu_config_t *file, const tcu_config_t *env)
{
    *out = *file;
    if (!file->ok || !env->ok) {
        const tcu_config_t *bad = file->ok ? env : file;
        return fail(out, "%s%s", bad->error, "");
    }
    for (int i = 0; i < TCU_MAX_DEVICES; i++)
        if (env->limit[i] < out->limit[i])
            out->limit[i] = env->limit[i];
    out->limited = file->limited || env->limited;
    /* Set in the environment (a number, 0 included): the lower of the two. */
    if (env->host_set && env->host_limit < out->host_limit)
        out->host_limit = env->host_limit;
    if (env->core_limit && (!out->core_limit || env->core_limit < out->core_limit))
        out->core_limit = env->core_limit;
    if (env->core_set) {
        if (env->prio_set && env->core_prio < out->core_prio)
            out->core_prio = env->core_prio;
        if (env->mode_set && env->core_mode == TSHM_CORE_STRICT)
            out->core_mode = TSHM_CORE_STRICT;
        out->core_set = 1;
    }
    return 0;
}

void tcu_view(uint64_t limit, uint64_t used, uint64_t real_free, uint64_t real_total,
              uint64_t *free_out, uint64_t *total_out)
{
    uint64_t total = limit < real_total ? limit : real_total;
    uint64_t left = used < total ? total - used : 0;
    *total_out = total;
    *free_out = left < real_free ? left : real_free;
}

uint64_t tcu_mul_sat(uint64_t a, uint64_t b)
{
    if (a != 0 && b > UINT64_MAX / a)
        return UINT64_MAX;
    return a * b;
}

/* Size of one element in sixteenths of a byte (block-compressed formats
 * store 4x4 pixels in 8 or 16 bytes: 8 or 16 sixteenths per pixel). */
static uint64_t element_sixteenths(CUarray_format fmt, unsigned channels)
{
    uint64_t ch = channels ? channels : 1;
    switch ((int)fmt) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 16 * ch;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 32 * ch;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 64 * ch;
    case CU_AD_FORMAT_UNORM_INT_101010_2:
        return 64;
    case CU_AD_FORMAT_NV12:
        return 24; /* 12 bits per pixel */
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return 16;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return 32;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
        return 64;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return 128;
    default:
        break;
    }
    if (fmt >= CU_AD_FORMAT_BC1_UNORM && fmt <= CU_AD_FORMAT_BC7_UNORM_SRGB) {
        /* BC1 (0x91, 0x92) and BC4 (0x97, 0x98): 8 bytes per 4x4 block. */
        int bc = (int)fmt;
        return (bc <= 0x92 || bc == 0x97 || bc == 0x98) ? 8 : 16;
    }
    /* An unknown format: charge the widest element (4 x 32 bits) so that an
     * unknown format can never be a way around the limit. */
    return 256;
}

uint64_t tcu_array_bytes(CUarray_format fmt, unsigned channels, size_t w, size_t h, size_t d,
                         unsigned flags)
{
    (void)flags; /* layers and cube faces are already in d */
    uint64_t px = tcu_mul_sat(tcu_mul_sat(w, h ? h : 1), d ? d : 1);
    uint64_t s = tcu_mul_sat(px, element_sixteenths(fmt, channels));
    if (s == UINT64_MAX)
        return UINT64_MAX;
    return (s + 15) / 16;
}

uint64_t tcu_mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels)
{
    size_t w = desc->Width, h = desc->Height, d = desc->Depth;
    int keep_depth = (desc->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    uint64_t sum = 0;
    if (levels == 0)
        levels = 1;
    for (unsigned l = 0; l < levels; l++) {
        uint64_t b = tcu_array_bytes(desc->Format, desc->NumChannels, w, h, d, desc->Flags);
        sum = (UINT64_MAX - sum < b) ? UINT64_MAX : sum + b;
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        if (!keep_depth)
            d = d > 1 ? d / 2 : d;
    }
    return sum;
}

uint32_t tcu_core_rate(unsigned limit, unsigned mode, unsigned prio, const tcu_peer_t *peers,
                       int npeers)
{
    uint64_t base = limit ? (uint64_t)limit * (TCU_PPM / 100) : TCU_PPM;
    uint64_t rate = base;
    if (mode == TSHM_CORE_SHARED) {
        uint64_t claims = base, shared_bases = base;
        for (int i = 0; i < npeers; i++) {
            uint64_t pb =
                peers[i].limit ? (uint64_t)peers[i].limit * (TCU_PPM / 100) : peers[i].used_ppm;
            claims += pb;
            if (peers[i].mode == TSHM_CORE_SHARED)
                shared_bases += pb;
        }
        if (claims < TCU_PPM && shared_bases > 0)
            rate = base + (TCU_PPM - claims) * base / shared_bases;
    }
    uint64_t higher = 0;
    int any_higher = 0;
    for (int i = 0; i < npeers; i++) {
        if (peers[i].prio > prio) {
            higher += peers[i].used_ppm;
            any_higher = 1;
        }
    }
    if (any_higher) {
        uint64_t left =
            higher + TCU_PRIO_HEADROOM_PPM < TCU_PPM ? TCU_PPM - higher - TCU_PRIO_HEADROOM_PPM : 0;
        if (rate > left)
            rate = left;
    }
    if (rate < TCU_RATE_FLOOR_PPM)
        rate = TCU_RATE_FLOOR_PPM;
    if (rate > TCU_PPM)
        rate = TCU_PPM;
    return (uint32_t)rate;
}

int64_t tcu_core_cap(uint32_t rate_ppm)
{
    int64_t cap = (int64_t)rate_ppm * 20; /* rate x 20 ms: ppm x 2e7 ns / 1e6 */
    return cap < 1000000 ? 1000000 : cap;
}

uint64_t tcu_core_wait_ns(int64_t credit, uint32_t rate_ppm)
{
    if (credit >= 0)
        return 0;
    if (rate_ppm == 0)
        rate_ppm = TCU_RATE_FLOOR_PPM;
    return (uint64_t)(-credit) * TCU_PPM / rate_ppm;
}

/* ---- NVML devices without the CUDA driver ---------------------------------- */

static uint64_t min_limit(const uint64_t *limit, unsigned n)
{
    uint64_t m = TSHM_UNLIMITED;
    for (unsigned i = 0; i < n && i < TCU_MAX_DEVICES; i++)
        if (limit[i] < m)
            m = limit[i];
    return m;
}

int tcu_nvml_limit(const uint64_t *limit, const char *visible, int pci_order, const char *uuid,
                   unsigned index, unsigned count, uint64_t *out)
{
    if (!visible) {
        if (pci_order && index < TCU_MAX_DEVICES) {
            *out = limit[index];
            return 1;
        }
        *out = min_limit(limit, count ? count : 1);
        return 1;
    }
    /* The driver reads entries in order and stops at the first it cannot
     * use; a negative index hides every device after it. */
    unsigned k = 0;
    int unknown = 0;
    const char *p = visible;
    while (*p && k < TCU_MAX_DEVICES) {
        const char *q = strchr(p, ',');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n > 4 && strncmp(p, "GPU-", 4) == 0) {
            if (strlen(uuid) >= n && strncasecmp(uuid, p, n) == 0) {
                *out = limit[k];
                return 1;
            }
        } else if (n > 4 && strncmp(p, "MIG-", 4) == 0) {
            unknown = 1; /* a MIG instance of some GPU: which one is unknown */
        } else {
            char num[16];
            if (n == 0 || n >= sizeof num)
                break;
            memcpy(num, p, n);
            num[n] = '\0';
            char *end;
            long v = strtol(num, &end, 10);
            if (*end || v < 0)
                break;
            if (!pci_order)
                unknown = 1;
            else if ((unsigned long)v == index) {
                *out = limit[k];
                return 1;
            }
        }
        k++;
        p += n;
        if (*p == ',')
            p++;
    }
    if (!unknown)
        return 0;
    *out = min_limit(limit, k);
    return 1;
}
