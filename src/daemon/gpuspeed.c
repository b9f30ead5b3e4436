/* gpuspeed.c - the value formats of GPU speeds (gpuspeed.h). */
#include "daemon/gpuspeed.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tessd_speed_parse(const char *s, uint32_t *milli, tsl_error_t *err)
{
    char *end = NULL;
    errno = 0;
    double v = s && *s && *s != ' ' && *s != '+' && *s != '-' ? strtod(s, &end) : NAN;
    if (!s || errno || !end || *end || !isfinite(v)) {
        errno = EINVAL;
        return tsl_errprintf(err, "speed '%.32s': expected a number such as 3 or 0.33", s ? s : "");
    }
    double m = round(v * 1000.0);
    if (fabs(v * 1000.0 - m) > 1e-6) {
        errno = EINVAL;
        return tsl_errprintf(err, "speed '%.32s': at most 3 decimals", s);
    }
    if (m < TESSD_SPEED_MIN || m > TESSD_SPEED_MAX) {
        errno = EINVAL;
        return tsl_errprintf(err, "speed '%.32s': must be from 0.001 to 1000", s);
    }
    *milli = (uint32_t)m;
    return 0;
}

int tessd_model_name_valid(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 63 || name[0] == ' ' || name[n - 1] == ' ')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (name[i] < 0x20 || name[i] > 0x7e || name[i] == ',' || name[i] == '=' || name[i] == '/')
            return 0;
    return 1;
}

int tessd_speeds_lookup(const char *list, const char *model, uint32_t *milli, tsl_error_t *err)
{
    int found = 0;
    const char *p = list ? list : "";
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[160];
        if (len >= sizeof item) {
            errno = EINVAL;
            return tsl_errprintf(err, "gpu-speeds: entry '%.32s...' is too long", p);
        }
        memcpy(item, p, len);
        item[len] = '\0';
        char *eq = strchr(item, '=');
        if (!eq) {
            errno = EINVAL;
            return tsl_errprintf(err, "gpu-speeds: '%s' is not MODEL=SPEED", item);
        }
        *eq = '\0';
        if (!tessd_model_name_valid(item)) {
            errno = EINVAL;
            return tsl_errprintf(err, "gpu-speeds: bad GPU model name '%.63s'", item);
        }
        uint32_t v;
        tsl_error_t e2;
        if (tessd_speed_parse(eq + 1, &v, &e2) < 0)
            return tsl_errprintf(err, "gpu-speeds: %s: %s", item, e2.text);
        if (model && strcmp(model, item) == 0 && !found) {
            *milli = v;
            found = 1;
        }
        p += len;
        if (*p == ',') {
            p++;
            if (!*p) {
                errno = EINVAL;
                return tsl_errprintf(err, "gpu-speeds: trailing ','");
            }
        }
    }
    return found;
}
