/* duration.c - short durations with units (duration.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "libutil/duration.h"

static const char units[] = "dhms";
static const int64_t unit_s[] = {86400, 3600, 60, 1};

int tsl_parse_seconds(const char *s, int64_t max, int64_t *seconds, tsl_error_t *err)
{
    if (!s || !*s) {
        errno = EINVAL;
        return tsl_errprintf(err, "empty duration (e.g. 0, 30s, 15m, 2h)");
    }
    if (strcmp(s, "0") == 0) {
        *seconds = 0;
        return 0;
    }
    int64_t total = 0;
    int last = -1; /* index of the last unit: each unit once, largest first */
    for (const char *p = s; *p;) {
        int64_t v = 0;
        const char *start = p;
        for (; *p >= '0' && *p <= '9'; p++)
            v = v > max ? v : v * 10 + (*p - '0'); /* stops growing once above max */
        const char *u = *p ? strchr(units, *p) : NULL;
        if (p == start || !u || (int)(u - units) <= last) {
            errno = EINVAL;
            return tsl_errprintf(err,
                                 "duration '%.40s': expected 0 or numbers with units d, h, m, s "
                                 "(e.g. 30s, 15m, 1h30m)",
                                 s);
        }
        last = (int)(u - units);
        if (v > max || (total += v * unit_s[last]) > max) {
            errno = ERANGE;
            return tsl_errprintf(err, "duration '%.40s' is above %lld s", s, (long long)max);
        }
        p++;
    }
    *seconds = total;
    return 0;
}

char *tsl_format_seconds(int64_t seconds, char *buf, size_t len)
{
    if (seconds <= 0) {
        snprintf(buf, len, "0");
        return buf;
    }
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < 4 && off < len; i++) {
        int64_t n = seconds / unit_s[i];
        seconds %= unit_s[i];
        if (n)
            off += (size_t)snprintf(buf + off, len - off, "%lld%c", (long long)n, units[i]);
    }
    return buf;
}
