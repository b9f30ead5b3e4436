/* batchspec.c - time limits, dependencies and arrays as Slurm users write them (batchspec.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "libutil/batchspec.h"

/* A run of 1..9 decimal digits at *p; advances *p.  -1 when there is none or it is too long
 * (9 digits keep every product below in int64_t). */
static int64_t digits(const char **p)
{
    const char *s = *p;
    int64_t v = 0;
    int n = 0;
    while (*s >= '0' && *s <= '9') {
        if (++n > 9)
            return -1;
        v = v * 10 + (*s++ - '0');
    }
    if (n == 0)
        return -1;
    *p = s;
    return v;
}

int tsl_parse_duration(const char *s, int64_t *seconds, tsl_error_t *err)
{
    if (!s || !*s) {
        errno = EINVAL;
        return tsl_errprintf(err, "empty time limit (e.g. 30m, 2h, 1-00:00:00)");
    }
    if (strcasecmp(s, "unlimited") == 0 || strcasecmp(s, "infinite") == 0) {
        *seconds = 0;
        return 0;
    }
    const char *p = s;
    int64_t f[4];
    int nf = 0;
    int64_t days = -1;
    int64_t total;
    int64_t v = digits(&p);
    if (v < 0)
        goto bad;
    if (*p && strchr("smhdSMHD", *p) && !p[1]) {
        /* "30s", "10m", "2h", "1d" */
        static const char units[] = "smhd";
        static const int64_t mult[] = {1, 60, 3600, 86400};
        total = v * mult[strchr(units, *p | 0x20) - units];
        goto range;
    }
    if (*p == '-') {
        days = v;
        p++;
        if ((v = digits(&p)) < 0)
            goto bad;
    }
    f[nf++] = v;
    while (*p == ':' && nf < 3) {
        p++;
        if ((v = digits(&p)) < 0)
            goto bad;
        f[nf++] = v;
    }
    if (*p)
        goto bad;
    if (days >= 0) {
        /* D-HH, D-HH:MM, D-HH:MM:SS */
        total = days * 86400 + f[0] * 3600 + (nf > 1 ? f[1] * 60 : 0) + (nf > 2 ? f[2] : 0);
        if ((nf > 1 && f[1] > 59) || (nf > 2 && f[2] > 59))
            goto bad;
    } else if (nf == 1) {
        total = f[0] * 60; /* MM */
    } else if (nf == 2) {
        total = f[0] * 60 + f[1]; /* MM:SS */
        if (f[1] > 59)
            goto bad;
    } else {
        total = f[0] * 3600 + f[1] * 60 + f[2]; /* HH:MM:SS */
        if (f[1] > 59 || f[2] > 59)
            goto bad;
    }
range:
    if (total > TSL_TIME_MAX_S) {
        errno = ERANGE;
        return tsl_errprintf(err, "time limit '%s' is above the longest, 365 days", s);
    }
    *seconds = total;
    return 0;
bad:
    errno = EINVAL;
    return tsl_errprintf(err,
                         "bad time limit '%s': write MM, MM:SS, HH:MM:SS, D-HH[:MM[:SS]] or a "
                         "number with s, m, h or d (30m)",
                         s);
}

char *tsl_format_duration(int64_t seconds, char *buf, size_t len)
{
    if (seconds <= 0) {
        snprintf(buf, len, "unlimited");
        return buf;
    }
    static const char units[] = "dhms";
    const int64_t part[4] = {seconds / 86400, seconds / 3600 % 24, seconds / 60 % 60, seconds % 60};
    int first = 0, last = 3;
    while (part[first] == 0)
        first++;
    while (part[last] == 0)
        last--;
    size_t o = 0;
    buf[0] = '\0';
    for (int i = first; i <= last && o < len; i++) {
        int n = snprintf(buf + o, len - o, "%lld%c", (long long)part[i], units[i]);
        if (n < 0)
            break;
        o += (size_t)n;
    }
    return buf;
}

static const char *const dep_names[] = {"ok", "any", "notok"};

const char *tsl_dep_kind_name(tsl_dep_kind_t k)
{
    return (unsigned)k < 3 ? dep_names[k] : "?";
}

int tsl_dep_kind_parse(const char *s)
{
    for (int k = 0; k < 3; k++)
        if (strcmp(s, dep_names[k]) == 0)
            return k;
    return -1;
}

/* Add (job, kind) to deps, replacing an earlier entry of the same job. */
static int dep_add(tsl_dep_t *deps, size_t max, size_t *n, int64_t job, tsl_dep_kind_t kind,
                   tsl_error_t *err)
{
    for (size_t i = 0; i < *n; i++)
        if (deps[i].job == job) {
            deps[i].kind = kind;
            return 0;
        }
    if (*n >= max) {
        errno = E2BIG;
        return tsl_errprintf(err, "too many dependencies (at most %zu)", max);
    }
    deps[*n].job = job;
    deps[*n].kind = kind;
    (*n)++;
    return 0;
}

/* A positive job id: the whole of s. */
static int64_t job_id(const char *s)
{
    const char *p = s;
    int64_t v = digits(&p);
    return v > 0 && !*p ? v : -1;
}

int tsl_parse_deps(const char *s, tsl_dep_t *deps, size_t max, size_t *n, tsl_error_t *err)
{
    if (!s || !*s) {
        errno = EINVAL;
        return tsl_errprintf(err, "empty dependency (e.g. 12, 12:any, afterok:12:13)");
    }
    size_t len = strlen(s);
    if (s[0] == ',' || s[len - 1] == ',' || s[len - 1] == ':' || strstr(s, ",,") ||
        strstr(s, "::")) {
        errno = EINVAL;
        return tsl_errprintf(err, "bad dependency '%s': an empty item", s);
    }
    char *copy = strdup(s);
    if (!copy)
        return tsl_errprintf(err, "out of memory");
    size_t cnt = 0;
    int rc = 0;
    char *save;
    for (char *item = strtok_r(copy, ",", &save); item && rc == 0;
         item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':');
        int kind;
        if (strncmp(item, "after", 5) == 0 && colon) {
            /* Slurm: afterok:12:13 */
            *colon = '\0';
            kind = strcmp(item, "after") == 0 ? -1 : tsl_dep_kind_parse(item + 5);
            if (kind < 0) {
                errno = EINVAL;
                rc = tsl_errprintf(
                    err, "unknown dependency type '%s' (afterok, afterany or afternotok)", item);
                break;
            }
            char *save2;
            bool one = false;
            for (char *j = strtok_r(colon + 1, ":", &save2); j && rc == 0;
                 j = strtok_r(NULL, ":", &save2)) {
                int64_t id = job_id(j);
                if (id < 0) {
                    errno = EINVAL;
                    rc = tsl_errprintf(err, "bad job id '%s' in dependency '%s'", j, s);
                } else {
                    rc = dep_add(deps, max, &cnt, id, (tsl_dep_kind_t)kind, err);
                    one = true;
                }
            }
            if (rc == 0 && !one) {
                errno = EINVAL;
                rc = tsl_errprintf(err, "dependency '%s' names no job", item);
            }
            continue;
        }
        kind = TSL_DEP_OK;
        if (colon) {
            *colon = '\0';
            kind = tsl_dep_kind_parse(colon + 1);
            if (kind < 0) {
                errno = EINVAL;
                rc = tsl_errprintf(err,
                                   "unknown dependency type '%s' after job %s (ok, any or "
                                   "notok)",
                                   colon + 1, item);
                break;
            }
        }
        int64_t id = job_id(item);
        if (id < 0) {
            errno = EINVAL;
            rc = tsl_errprintf(err, "bad job id '%s' in dependency '%s'", item, s);
            break;
        }
        rc = dep_add(deps, max, &cnt, id, (tsl_dep_kind_t)kind, err);
    }
    if (rc == 0 && cnt == 0) {
        errno = EINVAL;
        rc = tsl_errprintf(err, "dependency '%s' names no job", s);
    }
    free(copy);
    if (rc == 0)
        *n = cnt;
    return rc;
}

int tsl_parse_array(const char *s, tsl_array_t *a, tsl_error_t *err)
{
    if (!s || !*s) {
        errno = EINVAL;
        return tsl_errprintf(err, "empty array (e.g. 0-99, 1,3,5, 0-10:2, 0-99%%4)");
    }
    bool set[TSL_ARRAY_INDEX_MAX + 1];
    memset(set, 0, sizeof set);
    const char *p = s;
    uint32_t max_running = 0;
    for (;;) {
        int64_t lo = digits(&p), hi, step = 1;
        if (lo < 0)
            goto bad;
        hi = lo;
        if (*p == '-') {
            p++;
            if ((hi = digits(&p)) < 0)
                goto bad;
            if (*p == ':') {
                p++;
                if ((step = digits(&p)) < 0 || step == 0)
                    goto bad;
            }
        }
        if (hi < lo)
            goto bad;
        if (hi > TSL_ARRAY_INDEX_MAX) {
            errno = ERANGE;
            return tsl_errprintf(err, "array '%s': index %lld is above the largest, %d", s,
                                 (long long)hi, TSL_ARRAY_INDEX_MAX);
        }
        for (int64_t i = lo; i <= hi; i += step)
            set[i] = true;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '%') {
            p++;
            int64_t m = digits(&p);
            if (m <= 0 || *p)
                goto bad;
            max_running = (uint32_t)m;
        }
        if (*p)
            goto bad;
        break;
    }
    a->n = 0;
    a->max_running = max_running;
    for (int i = 0; i <= TSL_ARRAY_INDEX_MAX; i++)
        if (set[i])
            a->index[a->n++] = i;
    return 0;
bad:
    errno = EINVAL;
    return tsl_errprintf(err,
                         "bad array '%s': write indices as 0-99, 1,3,5 or 0-10:2, optionally "
                         "followed by %%N (at most N at once)",
                         s);
}
