/* gpuspeed.c - the value formats of GPU speeds (gpuspeed.h). */
#include "daemon/gpuspeed.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
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

/* Mean rate of model in the cell (group, milli); 0 when it has none there. */
static double cell_mean(const tessd_rate_obs_t *obs, size_t n, int64_t group, uint32_t milli,
                        const char *model)
{
    double sum = 0;
    int k = 0;
    for (size_t i = 0; i < n; i++)
        if (obs[i].group == group && obs[i].milli == milli && obs[i].rate > 0 && obs[i].model &&
            strcmp(obs[i].model, model) == 0) {
            sum += obs[i].rate;
            k++;
        }
    return k ? sum / k : 0;
}

int tessd_speeds_from_rates(const tessd_rate_obs_t *obs, size_t n, const char *reference,
                            uint32_t ref_speed, tessd_speed_est_t *out, size_t max, size_t *nout,
                            tsl_error_t *err)
{
    *nout = 0;
    if (!reference || max == 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "calibration: no reference model");
    }
    /* out[0]: the reference; then each other model, in the order first seen. */
    snprintf(out[0].model, sizeof out[0].model, "%s", reference);
    out[0].speed = ref_speed;
    out[0].cells = 0;
    size_t m = 1;
    for (size_t i = 0; i < n; i++) {
        const char *model = obs[i].model;
        if (!model || obs[i].rate <= 0 || strcmp(model, reference) == 0)
            continue;
        bool seen = false;
        for (size_t k = 1; k < m && !seen; k++)
            seen = strcmp(out[k].model, model) == 0;
        if (seen || m == max)
            continue;
        /* each (group, milli) cell of this model, once: the first observation of it */
        double logsum = 0;
        int cells = 0;
        for (size_t j = 0; j < n; j++) {
            if (!obs[j].model || obs[j].rate <= 0 || strcmp(obs[j].model, model) != 0)
                continue;
            bool first = true;
            for (size_t q = 0; q < j && first; q++)
                first = !(obs[q].group == obs[j].group && obs[q].milli == obs[j].milli &&
                          obs[q].model && obs[q].rate > 0 && strcmp(obs[q].model, model) == 0);
            if (!first)
                continue;
            double r = cell_mean(obs, n, obs[j].group, obs[j].milli, reference);
            if (r <= 0)
                continue;
            logsum += log(cell_mean(obs, n, obs[j].group, obs[j].milli, model) / r);
            cells++;
        }
        if (!cells)
            continue;
        double v = round(exp(logsum / cells) * ref_speed);
        snprintf(out[m].model, sizeof out[m].model, "%s", model);
        out[m].speed = v < TESSD_SPEED_MIN   ? TESSD_SPEED_MIN
                       : v > TESSD_SPEED_MAX ? TESSD_SPEED_MAX
                                             : (uint32_t)v;
        out[m].cells = cells;
        out[0].cells = out[0].cells > cells ? out[0].cells : cells;
        m++;
    }
    if (m == 1) {
        errno = EINVAL;
        return tsl_errprintf(err,
                             "calibration: no service has measured replicas on '%.63s' and on "
                             "another model with the same share",
                             reference);
    }
    *nout = m;
    return 0;
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
