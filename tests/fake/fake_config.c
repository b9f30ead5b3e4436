/* fake_config.c - parse the fake GPUs' configuration (see fake_config.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake_config.h"
#include "libutil/size.h"

static int einval(tsl_error_t *err, const char *fmt, const char *a, const char *b)
{
    tsl_errprintf(err, fmt, a, b);
    errno = EINVAL;
    return -1;
}

static int parse_uint(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > max)
            return -1;
    }
    *out = v;
    return 0;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void tfake_uuid_default(int index, const char *name, uint8_t uuid[16])
{
    char key[96];
    int n = snprintf(key, sizeof key, "tessel-fake-gpu:%d:%s", index, name);
    uint64_t a = fnv1a(0xcbf29ce484222325ull, key, (size_t)n);
    uint64_t b = fnv1a(a ^ 0x9e3779b97f4a7c15ull, key, (size_t)n);
    for (int i = 0; i < 8; i++) {
        uuid[i] = (uint8_t)(a >> (8 * i));
        uuid[8 + i] = (uint8_t)(b >> (8 * i));
    }
    uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* version 4 */
    uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80); /* RFC 4122 variant */
}

void tfake_uuid_format(const uint8_t u[16], char out[41])
{
    snprintf(out, 41, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* One UUID of exactly n characters at s: 8-4-4-4-12 hex digits, optional "GPU-". */
static int parse_one_uuid(const char *s, size_t n, uint8_t out[16])
{
    if (n >= 4 && strncmp(s, "GPU-", 4) == 0) {
        s += 4;
        n -= 4;
    }
    static const size_t dash[] = {8, 13, 18, 23};
    if (n != 36)
        return -1;
    int k = 0, hi = -1;
    for (size_t i = 0; i < n; i++) {
        if (i == dash[0] || i == dash[1] || i == dash[2] || i == dash[3]) {
            if (s[i] != '-')
                return -1;
            continue;
        }
        int v = hexval((unsigned char)s[i]);
        if (v < 0)
            return -1;
        if (hi < 0) {
            hi = v;
        } else {
            out[k++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    return k == 16 ? 0 : -1;
}

static int valid_name_char(int c)
{
    return isalnum(c) || c == '_' || c == '.' || c == '+' || c == '-';
}

int tfake_parse_gpus(const char *spec, tfake_config_t *cfg, tsl_error_t *err)
{
    tfake_config_t tmp = *cfg;
    tmp.ndev = 0;
    if (!spec || !*spec)
        return einval(err, "TESSEL_FAKE_GPUS: empty device list%s%s", "", "");
    const char *p = spec;
    unsigned group = 0;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char entry[256];
        if (len == 0 || len >= sizeof entry)
            return einval(err, "TESSEL_FAKE_GPUS: '%s': empty or overlong entry%s", spec, "");
        memcpy(entry, p, len);
        entry[len] = '\0';

        /* [Nx] */
        uint64_t count = 1;
        char *name = entry;
        char *x = entry;
        while (isdigit((unsigned char)*x))
            x++;
        if (x != entry && *x == 'x' && x[1] != '\0' && x[1] != ':') {
            if (parse_uint(entry, (size_t)(x - entry), TFAKE_MAX_DEVICES, &count) < 0 || count == 0)
                return einval(err, "TESSEL_FAKE_GPUS: '%s': bad device count (1..16)%s", entry, "");
            name = x + 1;
        }
        char *colon = strchr(name, ':');
        if (!colon)
            return einval(err, "TESSEL_FAKE_GPUS: '%s': expected [Nx]NAME:MEM[:SMS]%s", entry, "");
        *colon = '\0';
        size_t nlen = strlen(name);
        if (nlen == 0 || nlen >= sizeof tmp.dev[0].name)
            return einval(err, "TESSEL_FAKE_GPUS: '%s': name must be 1..63 characters%s", entry,
                          "");
        for (size_t i = 0; i < nlen; i++)
            if (!valid_name_char((unsigned char)name[i]))
                return einval(err, "TESSEL_FAKE_GPUS: '%s': bad character in name '%s'", entry,
                              name);
        char *mem = colon + 1;
        char *sms_s = strchr(mem, ':');
        if (sms_s)
            *sms_s++ = '\0';
        uint64_t bytes;
        tsl_error_t serr;
        if (tsl_parse_size(mem, &bytes, &serr) < 0 || bytes == 0)
            return einval(err, "TESSEL_FAKE_GPUS: '%s': bad memory size '%s'", entry, mem);
        uint64_t sms = TFAKE_DEFAULT_SMS;
        if (sms_s && (parse_uint(sms_s, strlen(sms_s), 100000, &sms) < 0 || sms == 0))
            return einval(err, "TESSEL_FAKE_GPUS: '%s': bad SM count '%s'", entry, sms_s);
        if (tmp.ndev + (int)count > TFAKE_MAX_DEVICES)
            return einval(err, "TESSEL_FAKE_GPUS: '%s': more than 16 devices%s", spec, "");
        for (uint64_t i = 0; i < count; i++) {
            tfake_device_t *d = &tmp.dev[tmp.ndev];
            memset(d, 0, sizeof *d);
            memcpy(d->name, name, nlen + 1);
            d->mem = bytes;
            d->sms = (unsigned)sms;
            d->group = group;
            tfake_uuid_default(tmp.ndev, d->name, d->uuid);
            tmp.ndev++;
        }
        group++;
        if (!end)
            break;
        p = end + 1;
    }
    *cfg = tmp;
    return 0;
}

int tfake_parse_uuids(const char *list, tfake_config_t *cfg, tsl_error_t *err)
{
    uint8_t uu[TFAKE_MAX_DEVICES][16];
    int n = 0;
    const char *p = list;
    if (!list || !*list)
        return einval(err, "TESSEL_FAKE_GPU_UUIDS: empty list%s%s", "", "");
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (n >= cfg->ndev)
            return einval(err, "TESSEL_FAKE_GPU_UUIDS: '%s': more UUIDs than devices%s", list, "");
        if (parse_one_uuid(p, len, uu[n]) < 0)
            return einval(err, "TESSEL_FAKE_GPU_UUIDS: '%s': malformed UUID%s", list, "");
        for (int j = 0; j < n; j++)
            if (memcmp(uu[j], uu[n], 16) == 0)
                return einval(err, "TESSEL_FAKE_GPU_UUIDS: '%s': duplicate UUID%s", list, "");
        n++;
        if (!end)
            break;
        p = end + 1;
    }
    for (int i = 0; i < n; i++)
        memcpy(cfg->dev[i].uuid, uu[i], 16);
    return 0;
}

static int env_size(const char *var, uint64_t dflt, uint64_t *out, tsl_error_t *err)
{
    const char *v = getenv(var);
    if (!v) {
        *out = dflt;
        return 0;
    }
    tsl_error_t serr;
    if (tsl_parse_size(v, out, &serr) < 0)
        return einval(err, "%s: '%s': not a size", var, v);
    return 0;
}

/* "SIZE[,SIZE...]": one size per device, the last repeating for the rest;
 * unset: dflt[] for every device. */
static int env_size_list(const char *var, const uint64_t *dflt, uint64_t *out, tsl_error_t *err)
{
    const char *v = getenv(var);
    if (!v) {
        memcpy(out, dflt, sizeof(uint64_t) * TFAKE_MAX_DEVICES);
        return 0;
    }
    int n = 0;
    const char *p = v;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char one[64];
        tsl_error_t serr;
        if (n == TFAKE_MAX_DEVICES || len == 0 || len >= sizeof one)
            return einval(err, "%s: '%s': not a size or a list of sizes", var, v);
        memcpy(one, p, len);
        one[len] = '\0';
        if (tsl_parse_size(one, &out[n], &serr) < 0)
            return einval(err, "%s: '%s': not a size or a list of sizes", var, v);
        n++;
        if (!end)
            break;
        p = end + 1;
    }
    for (int i = n; i < TFAKE_MAX_DEVICES; i++)
        out[i] = out[n - 1];
    return 0;
}

static int env_path(const char *var, char *out, size_t len, tsl_error_t *err)
{
    const char *v = getenv(var);
    out[0] = '\0';
    if (!v || !*v)
        return 0;
    if (strlen(v) >= len)
        return einval(err, "%s: path too long%s", var, "");
    strcpy(out, v);
    return 0;
}

int tfake_config_from_env(tfake_config_t *cfg, tsl_error_t *err)
{
    tfake_config_t tmp;
    memset(&tmp, 0, sizeof tmp);
    const char *gpus = getenv("TESSEL_FAKE_GPUS");
    if (tfake_parse_gpus(gpus ? gpus : TFAKE_DEFAULT_GPUS, &tmp, err) < 0)
        return -1;
    const char *uuids = getenv("TESSEL_FAKE_GPU_UUIDS");
    if (uuids && tfake_parse_uuids(uuids, &tmp, err) < 0)
        return -1;
    const char *kus = getenv("TESSEL_FAKE_KERNEL_US");
    uint64_t us = 0;
    if (kus && parse_uint(kus, strlen(kus), 3600ull * 1000000, &us) < 0)
        return einval(err, "TESSEL_FAKE_KERNEL_US: '%s': not a number of microseconds (0..3.6e9)%s",
                      kus, "");
    tmp.kernel_ns = us * 1000;
    uint64_t dflt[TFAKE_MAX_DEVICES];
    for (int i = 0; i < TFAKE_MAX_DEVICES; i++)
        dflt[i] = TFAKE_DEFAULT_CTX_MEM;
    if (env_size_list("TESSEL_FAKE_CTX_MEM", dflt, tmp.ctx_mem_primary, err) < 0 ||
        env_size_list("TESSEL_FAKE_CTX_MEM_CREATED", tmp.ctx_mem_primary, tmp.ctx_mem_created,
                      err) < 0)
        return -1;
    tmp.ctx_mem = tmp.ctx_mem_primary[0];
    if (env_size("TESSEL_FAKE_ALLOC_GRANULE", TFAKE_DEFAULT_ALLOC_GRANULE, &tmp.alloc_granule,
                 err) < 0)
        return -1;
    if (tmp.alloc_granule == 0 || tmp.alloc_granule > (1ull << 30))
        return einval(err, "TESSEL_FAKE_ALLOC_GRANULE: must be 1 B .. 1 GiB%s%s", "", "");
    if (env_size("TESSEL_FAKE_MODULE_MEM", 0, &tmp.module_mem, err) < 0 ||
        env_size("TESSEL_FAKE_FUNC_MEM", 0, &tmp.func_mem, err) < 0 ||
        env_size("TESSEL_FAKE_LAUNCH_MEM", 0, &tmp.launch_mem, err) < 0)
        return -1;
    const char *order = getenv("TESSEL_FAKE_EVENT_ORDER");
    if (order && strcmp(order, "device") == 0)
        tmp.event_device_order = 1;
    else if (order && strcmp(order, "stream") != 0)
        return einval(err, "TESSEL_FAKE_EVENT_ORDER: '%s': must be stream or device%s", order, "");
    const char *ck = getenv("TESSEL_FAKE_CHECKPOINT");
    if (ck && strcmp(ck, "0") == 0)
        tmp.no_checkpoint = 1;
    else if (ck && strcmp(ck, "1") != 0)
        return einval(err, "TESSEL_FAKE_CHECKPOINT: '%s': must be 0 or 1%s", ck, "");
    if (env_path("TESSEL_FAKE_STATE", tmp.state_path, sizeof tmp.state_path, err) < 0 ||
        env_path("TESSEL_FAKE_CALLS_FILE", tmp.calls_path, sizeof tmp.calls_path, err) < 0)
        return -1;
    *cfg = tmp;
    return 0;
}

void tfake_display_name(const tfake_device_t *d, char *out, unsigned len)
{
    if (len == 0)
        return;
    if (strncasecmp(d->name, "fake", 4) == 0)
        snprintf(out, len, "%s", d->name);
    else
        snprintf(out, len, "Fake %s", d->name);
}

/* The device one CUDA_VISIBLE_DEVICES entry of len n names, or -1. */
static int visible_entry(const char *e, size_t n, const tfake_config_t *cfg)
{
    if (n > 0 && strspn(e, "0123456789") >= n) {
        int i = 0;
        for (size_t k = 0; k < n && i <= TFAKE_MAX_DEVICES; k++)
            i = i * 10 + (e[k] - '0');
        return i < cfg->ndev ? i : -1;
    }
    if (n <= 4 || strncmp(e, "GPU-", 4) != 0)
        return -1;
    int found = -1;
    for (int i = 0; i < cfg->ndev; i++) {
        char u[41];
        tfake_uuid_format(cfg->dev[i].uuid, u);
        if (n <= strlen(u) && strncasecmp(u, e, n) == 0) {
            if (found >= 0)
                return -1; /* a prefix of two devices' UUIDs */
            found = i;
        }
    }
    return found;
}

int tfake_visible(const char *visible, const tfake_config_t *cfg, int phys[TFAKE_MAX_DEVICES])
{
    int n = 0;
    if (!visible) {
        for (; n < cfg->ndev; n++)
            phys[n] = n;
        return n;
    }
    const char *p = visible;
    while (*p && n < cfg->ndev) {
        size_t len = strcspn(p, ",");
        int d = visible_entry(p, len, cfg);
        for (int k = 0; d >= 0 && k < n; k++)
            if (phys[k] == d)
                d = -1;
        if (d < 0)
            break;
        phys[n++] = d;
        p += len;
        if (*p == ',')
            p++;
    }
    return n;
}
