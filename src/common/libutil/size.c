/* size.c - byte-size parsing and printing (see size.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "libutil/size.h"

static int suffix_shift(const char *p, unsigned *shift)
{
    static const char units[] = "KMGTP";
    if (*p == '\0') {
        *shift = 0;
        return 0;
    }
    if ((*p == 'b' || *p == 'B') && p[1] == '\0') {
        *shift = 0;
        return 0;
    }
    const char *u = strchr(units, toupper((unsigned char)*p));
    if (!u)
        return -1;
    *shift = 10u * (unsigned)(u - units + 1);
    p++;
    if (*p == 'i' || *p == 'I')
        p++;
    if (*p == 'b' || *p == 'B')
        p++;
    return *p == '\0' ? 0 : -1;
}

int tsl_parse_size(const char *s, uint64_t *bytes, tsl_error_t *err)
{
    if (!s || !*s) {
        errno = EINVAL;
        return tsl_errprintf(err, "empty size");
    }
    const char *p = s;
    uint64_t whole = 0;
    int ndigits = 0;
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10) {
            errno = ERANGE;
            return tsl_errprintf(err, "'%s': size too large", s);
        }
        whole = whole * 10 + d;
        p++;
        ndigits++;
    }
    /* Fraction: up to 9 digits kept exactly as a numerator over 10^n. */
    uint64_t frac = 0, frac_div = 1;
    if (*p == '.') {
        p++;
        int nfrac = 0;
        while (isdigit((unsigned char)*p)) {
            if (nfrac < 9) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                frac_div *= 10;
            }
            nfrac++;
            p++;
        }
        ndigits += nfrac;
        if (nfrac == 0) {
            errno = EINVAL;
            return tsl_errprintf(err, "'%s': expected digits after '.'", s);
        }
    }
    if (ndigits == 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': not a size (expected e.g. 8G, 512M or a byte count)", s);
    }
    unsigned shift;
    if (suffix_shift(p, &shift) < 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': unknown unit '%s' (use K, M, G, T or P)", s, p);
    }
    if (shift == 0 && frac != 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': a byte count must be whole", s);
    }
    if (shift && whole > (UINT64_MAX >> shift)) {
        errno = ERANGE;
        return tsl_errprintf(err, "'%s': size too large", s);
    }
    uint64_t v = whole << shift;
    if (frac) {
        /* frac/frac_div < 1 and shift <= 50, so frac << shift fits when
         * frac < 10^9 < 2^30 ... only for shift <= 33; divide first above. */
        uint64_t unit = (uint64_t)1 << shift;
        uint64_t add = unit / frac_div * frac + (unit % frac_div) * frac / frac_div;
        if (v > UINT64_MAX - add) {
            errno = ERANGE;
            return tsl_errprintf(err, "'%s': size too large", s);
        }
        v += add;
    }
    *bytes = v;
    return 0;
}

int tsl_parse_size_unit(const char *s, uint64_t *bytes, tsl_error_t *err)
{
    if (s && *s) {
        const char *p = s + strspn(s, "0123456789.");
        /* 0 is the same in every unit (a queue limit of mem=0). */
        if (*p == '\0' && isdigit((unsigned char)*s) && strspn(s, "0.") != strlen(s)) {
            errno = EINVAL;
            return tsl_errprintf(err, "'%s': a size needs a unit, e.g. %sG (or %sB for bytes)", s,
                                 s, s);
        }
    }
    return tsl_parse_size(s, bytes, err);
}

char *tsl_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    double v = (double)bytes;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else if (v >= 100.0)
        snprintf(buf, len, "%.0f %s", v, units[u]);
    else if (v >= 10.0)
        snprintf(buf, len, "%.1f %s", v, units[u]);
    else
        snprintf(buf, len, "%.2f %s", v, units[u]);
    return buf;
}

char *tsl_format_amount(tsl_res_t res, uint64_t v, char *buf, size_t len)
{
    if (v == UINT64_MAX) {
        snprintf(buf, len, "none");
        return buf;
    }
    if (res == TSL_RES_GPU_MEM || res == TSL_RES_MEM)
        return tsl_format_size(v, buf, len);
    /* milli units: at most 3 decimals, trailing zeros dropped ("1.5", "0.125", "8") */
    char n[32];
    snprintf(n, sizeof n, "%llu.%03llu", (unsigned long long)(v / 1000),
             (unsigned long long)(v % 1000));
    size_t l = strlen(n);
    while (n[l - 1] == '0')
        n[--l] = '\0';
    if (n[l - 1] == '.')
        n[--l] = '\0';
    snprintf(buf, len, "%s %s", n, res == TSL_RES_GPU ? "GPU" : "CPU");
    return buf;
}
