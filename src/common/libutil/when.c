/* when.c - `--since` times (see when.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "libutil/when.h"

/* Longest duration accepted: far beyond any log's age, small enough for any arithmetic. */
#define WHEN_MAX_S (100ll * 365 * 86400)

/* "10m", "1h30m": seconds, or -1 when s is not a duration. */
static int64_t duration(const char *s)
{
    int64_t total = 0;
    const char *p = s;
    if (!*p)
        return -1;
    while (*p) {
        if (!isdigit((unsigned char)*p))
            return -1;
        int64_t v = 0;
        while (isdigit((unsigned char)*p)) {
            v = v * 10 + (*p++ - '0');
            if (v > WHEN_MAX_S)
                return -2;
        }
        int64_t unit;
        switch (*p++) {
        case 's':
            unit = 1;
            break;
        case 'm':
            unit = 60;
            break;
        case 'h':
            unit = 3600;
            break;
        case 'd':
            unit = 86400;
            break;
        default:
            return -1;
        }
        if (v > WHEN_MAX_S / unit)
            return -2;
        total += v * unit;
        if (total > WHEN_MAX_S)
            return -2;
    }
    return total;
}

/* Date and time fields, checked for their ranges; the rest of s after them in *rest. */
static int date_time(const char *s, struct tm *tm, const char **rest)
{
    int n = 0;
    memset(tm, 0, sizeof *tm);
    if (sscanf(s, "%4d-%2d-%2d%n", &tm->tm_year, &tm->tm_mon, &tm->tm_mday, &n) != 3 || n != 10)
        return -1;
    const char *p = s + n;
    if (*p == 'T' || *p == ' ') {
        int m = 0;
        if (sscanf(p + 1, "%2d:%2d:%2d%n", &tm->tm_hour, &tm->tm_min, &tm->tm_sec, &m) != 3 ||
            m != 8)
            return -1;
        p += 1 + m;
        if (*p == '.') {
            p++;
            if (!isdigit((unsigned char)*p))
                return -1;
            while (isdigit((unsigned char)*p))
                p++;
        }
    }
    if (tm->tm_mon < 1 || tm->tm_mon > 12 || tm->tm_mday < 1 || tm->tm_mday > 31 ||
        tm->tm_hour > 23 || tm->tm_min > 59 || tm->tm_sec > 60)
        return -1;
    tm->tm_year -= 1900;
    tm->tm_mon -= 1;
    *rest = p;
    return 0;
}

int tsl_parse_when(const char *s, int64_t now, int64_t *t, tsl_error_t *err)
{
    if (!s || !*s) {
        errno = EINVAL;
        return tsl_errprintf(err, "empty time");
    }
    if (strspn(s, "0123456789") == strlen(s)) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': a duration needs a unit, e.g. %sm (or s, h, d)", s, s);
    }
    int64_t d = duration(s);
    if (d == -2) {
        errno = ERANGE;
        return tsl_errprintf(err, "'%s': at most 100 years", s);
    }
    if (d >= 0) {
        *t = now - d;
        return 0;
    }
    struct tm tm;
    const char *rest;
    if (date_time(s, &tm, &rest) < 0)
        goto bad;
    int64_t v;
    if (*rest == '\0') {
        tm.tm_isdst = -1;
        time_t lt = mktime(&tm);
        if (lt == (time_t)-1)
            goto bad;
        v = (int64_t)lt;
    } else {
        int off = 0;
        if (strcmp(rest, "Z") == 0 || strcmp(rest, "z") == 0) {
            off = 0;
        } else {
            int hh, mm, n = 0;
            if ((rest[0] != '+' && rest[0] != '-') ||
                sscanf(rest + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 || n != 5 || rest[6] != '\0' ||
                hh > 23 || mm > 59)
                goto bad;
            off = (hh * 3600 + mm * 60) * (rest[0] == '-' ? -1 : 1);
        }
        v = (int64_t)timegm(&tm) - off;
    }
    *t = v;
    return 0;
bad:
    errno = EINVAL;
    return tsl_errprintf(err,
                         "'%s': expected a duration (10m, 2h, 1h30m) or a time "
                         "(2026-11-26T07:00:00Z, \"2026-11-26 07:00:00\")",
                         s);
}
