/* args.c - parsers for the values people type on `tessel` command lines.  Each checks what
 * the API would reject, so that bad input gets one clear line before anything is sent. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tessel/cli.h"
#include "libutil/jobenv.h"
#include "libutil/size.h"

/* Most whole GPUs one request may name: far above any single machine, low enough that
 * N * 1000 milli-GPUs cannot overflow anything downstream. */
#define CLI_MAX_GPUS 1024
/* Most CPU cores a request may name (the daemon checks against the node). */
#define CLI_MAX_CPU 4096

int cli_parse_gpu(const char *s, int64_t *milli, tsl_error_t *err)
{
    /* Decimal digits only: no sign, exponent, hex, inf or nan. */
    const char *p = s;
    int64_t whole = 0, frac = 0;
    int nwhole = 0, nfrac = 0;
    for (; *p >= '0' && *p <= '9'; p++, nwhole++) {
        if (whole > CLI_MAX_GPUS)
            goto range;
        whole = whole * 10 + (*p - '0');
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, nfrac++) {
            if (nfrac >= 3) {
                if (*p != '0') {
                    errno = EINVAL;
                    return tsl_errprintf(
                        err, "--gpu: '%s': at most 3 decimals (a thousandth of a GPU)", s);
                }
                continue;
            }
            frac = frac * 10 + (*p - '0');
        }
        for (int i = nfrac; i < 3; i++)
            frac *= 10;
        if (nfrac == 0)
            nwhole = 0; /* "1." is not a number people write */
    }
    if (nwhole + nfrac == 0 || *p != '\0') {
        errno = EINVAL;
        return tsl_errprintf(err, "--gpu: '%s': expected a share such as 0.5, or a GPU count", s);
    }
    if (whole > CLI_MAX_GPUS)
        goto range;
    int64_t m = whole * 1000 + frac;
    if (m == 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "--gpu: '%s': must be above 0", s);
    }
    if (m > 1000 && frac != 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "--gpu: '%s': above 1, only whole GPUs (a share is of one GPU)",
                             s);
    }
    *milli = m;
    return 0;
range:
    errno = ERANGE;
    return tsl_errprintf(err, "--gpu: '%s': at most %d GPUs", s, CLI_MAX_GPUS);
}

int cli_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *v, tsl_error_t *err)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!*s || *end || end == s || (*s != '-' && (*s < '0' || *s > '9'))) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': not an integer", s);
    }
    if (errno == ERANGE || x < lo || x > hi) {
        errno = ERANGE;
        return tsl_errprintf(err, "'%s': out of range (%lld to %lld)", s, (long long)lo,
                             (long long)hi);
    }
    *v = x;
    return 0;
}

int cli_parse_gpus(const char *s, int64_t *n, tsl_error_t *err)
{
    tsl_error_t e;
    if (cli_parse_int(s, 1, CLI_MAX_GPUS, n, &e) < 0)
        return tsl_errprintf(err, "--gpus: %s", e.text);
    return 0;
}

int cli_parse_cpu(const char *s, double *cpu, tsl_error_t *err)
{
    char *end;
    const char *p = s;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p == '.')
        p++;
    while (*p >= '0' && *p <= '9')
        p++;
    errno = 0;
    double x = strtod(s, &end);
    if (!*s || *p || end != p || *s == '.' || isnan(x)) {
        errno = EINVAL;
        return tsl_errprintf(err, "--cpu: '%s': expected a number of cores such as 2 or 0.5", s);
    }
    if (!(x > 0) || x > CLI_MAX_CPU) {
        errno = ERANGE;
        return tsl_errprintf(err, "--cpu: '%s': must be above 0 and at most %d", s, CLI_MAX_CPU);
    }
    *cpu = x;
    return 0;
}

int cli_parse_size(const char *s, uint64_t *bytes, tsl_error_t *err)
{
    uint64_t b;
    if (tsl_parse_size_unit(s, &b, err) < 0)
        return -1;
    if (b == 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': must be above 0", s);
    }
    if (b > (uint64_t)INT64_MAX) {
        errno = ERANGE;
        return tsl_errprintf(err, "'%s': size too large", s);
    }
    *bytes = b;
    return 0;
}

int cli_parse_class(const char *s, tsl_error_t *err)
{
    static const char *const classes[] = {"interactive", "training", "inference"};
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strcmp(s, classes[i]) == 0)
            return 0;
    errno = EINVAL;
    return tsl_errprintf(err, "--class: '%s': expected interactive, training or inference", s);
}

int cli_parse_id(const char *s, int64_t *id, tsl_error_t *err)
{
    tsl_error_t e;
    if (*s < '1' || *s > '9' || cli_parse_int(s, 1, INT64_MAX, id, &e) < 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': not a job id", s);
    }
    return 0;
}

int cli_parse_slurm_ref(const char *s, int64_t *id)
{
    tsl_error_t e;
    if (strncmp(s, "slurm:", 6) != 0 || s[6] < '1' || s[6] > '9' ||
        cli_parse_int(s + 6, 1, INT64_MAX, id, &e) < 0)
        return -1;
    return 0;
}

int cli_parse_job_ref(const char *s, int64_t *id, tsl_error_t *err)
{
    /* A job submitted to Slurm directly (tesseld --slurm): tesseld says what it allows. */
    if (cli_parse_slurm_ref(s, id) == 0)
        return 0;
    const char *us = strchr(s, '_');
    if (!us)
        return cli_parse_id(s, id, err);
    char head[24];
    int64_t index;
    tsl_error_t e;
    if ((size_t)(us - s) >= sizeof head || cli_parse_int(us + 1, 0, 1000000, &index, &e) < 0 ||
        !(us[1] >= '0' && us[1] <= '9')) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': not a job id (42, or an array's element 40_3)", s);
    }
    memcpy(head, s, (size_t)(us - s));
    head[us - s] = '\0';
    if (cli_parse_id(head, id, NULL) < 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': not a job id (42, or an array's element 40_3)", s);
    }
    return 0;
}

/* Largest whole amount a queue's guarantee or limit may name (GPUs or CPU cores, summed over
 * a cluster): far above any cluster, small enough for milli units in an int64. */
#define CLI_MAX_AMOUNT 1000000

int cli_parse_amount(const char *s, int64_t *milli, tsl_error_t *err)
{
    const char *p = s;
    int64_t whole = 0, frac = 0;
    int nwhole = 0, nfrac = 0;
    for (; *p >= '0' && *p <= '9'; p++, nwhole++) {
        whole = whole * 10 + (*p - '0');
        if (whole > CLI_MAX_AMOUNT) {
            errno = ERANGE;
            return tsl_errprintf(err, "'%s': at most %d", s, CLI_MAX_AMOUNT);
        }
    }
    if (*p == '.' && nwhole > 0) {
        for (p++; *p >= '0' && *p <= '9'; p++, nfrac++) {
            if (nfrac >= 3) {
                if (*p != '0') {
                    errno = EINVAL;
                    return tsl_errprintf(err, "'%s': at most 3 decimals", s);
                }
                continue;
            }
            frac = frac * 10 + (*p - '0');
        }
        for (int i = nfrac; i < 3; i++)
            frac *= 10;
        if (nfrac == 0)
            nwhole = 0;
    }
    if (nwhole == 0 || *p != '\0') {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': expected a number >= 0 such as 1.5", s);
    }
    *milli = whole * 1000 + frac;
    return 0;
}

int cli_parse_resources(const char *opt, const char *s, json_t **out, tsl_error_t *err)
{
    /* ngpu: normal GPU units (docs/scheduler-queues.md), a limit only (tesseld says so) */
    static const char *const keys[] = {"gpu", "gpu-mem", "cpu", "mem", "ngpu"};
    static const char *const fields[] = {"gpu", "gpu_mem", "cpu", "mem", "ngpu"};
    if (strcmp(s, "none") == 0) {
        *out = json_null();
        return 0;
    }
    char *copy = strdup(s);
    json_t *o = json_object();
    if (!copy || !o)
        abort();
    tsl_error_t e;
    char *save = NULL;
    int n = 0;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save), n++) {
        char *eq = strchr(item, '=');
        int k = -1;
        if (eq) {
            *eq = '\0';
            for (int i = 0; i < 5; i++)
                if (strcmp(item, keys[i]) == 0 || strcmp(item, fields[i]) == 0)
                    k = i;
        }
        if (k < 0) {
            tsl_errprintf(err,
                          "%s: '%s': expected RES=VALUE with RES gpu, gpu-mem, cpu, mem or ngpu",
                          opt, item);
            goto bad;
        }
        if (json_object_get(o, fields[k])) {
            tsl_errprintf(err, "%s: %s given twice", opt, keys[k]);
            goto bad;
        }
        const char *v = eq + 1;
        json_t *val;
        if (strcmp(v, "none") == 0) {
            val = json_null();
        } else if (k == 0 || k == 2 || k == 4) {
            int64_t milli;
            if (cli_parse_amount(v, &milli, &e) < 0) {
                tsl_errprintf(err, "%s: %s=%s", opt, keys[k], e.text);
                goto bad;
            }
            val =
                milli % 1000 == 0 ? json_integer(milli / 1000) : json_real((double)milli / 1000.0);
        } else {
            uint64_t b;
            if (tsl_parse_size_unit(v, &b, &e) < 0) {
                tsl_errprintf(err, "%s: %s=%s", opt, keys[k], e.text);
                goto bad;
            }
            if (b > (uint64_t)INT64_MAX) {
                tsl_errprintf(err, "%s: %s=%s: size too large", opt, keys[k], v);
                goto bad;
            }
            val = json_integer((json_int_t)b);
        }
        json_object_set_new(o, fields[k], val);
    }
    if (n == 0) {
        tsl_errprintf(err, "%s: expected RES=VALUE[,...] (gpu, gpu-mem, cpu, mem, ngpu) or none",
                      opt);
        goto bad;
    }
    free(copy);
    *out = o;
    return 0;
bad:
    free(copy);
    json_decref(o);
    errno = EINVAL;
    return -1;
}

int cli_env_item(const char *item, tsl_error_t *err)
{
    const char *eq = strchr(item, '=');
    size_t n = eq ? (size_t)(eq - item) : strlen(item);
    if (n == 0) {
        errno = EINVAL;
        return tsl_errprintf(err, "'%s': expected KEY=VALUE or KEY", item);
    }
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), item);
    for (const char *p = name; *p; p++) {
        if (*p == ' ' || *p == '\t') {
            errno = EINVAL;
            return tsl_errprintf(err, "'%s': a variable name has no blanks (KEY=VALUE)", item);
        }
    }
    const char *why = tsl_env_reserved(name);
    if (why) {
        errno = EPERM;
        return tsl_errprintf(err, "'%s': %s", name, why);
    }
    if (!eq && !getenv(item)) {
        errno = ENOENT;
        return tsl_errprintf(err, "'%s' is not set in this environment", item);
    }
    return 0;
}

int cli_env_set(json_t *env, const char *item, tsl_error_t *err)
{
    const char *eq = strchr(item, '=');
    const char *v = eq ? eq + 1 : getenv(item);
    char *k = eq ? strndup(item, (size_t)(eq - item)) : strdup(item);
    if (!k)
        abort();
    json_t *js = json_string(v ? v : "");
    int rc = 0;
    if (!js) {
        errno = EINVAL;
        rc = tsl_errprintf(err, "'%s': its value is not valid UTF-8", k);
    } else {
        json_object_set_new(env, k, js);
    }
    free(k);
    return rc;
}

int cli_env_file(const char *path, json_t *env, tsl_error_t *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        tsl_errprintf(err, "--env-file %s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    tsl_error_t e;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if ((size_t)len != strlen(line)) {
            rc = tsl_errprintf(err, "%s:%d: a NUL byte in the line", path, lineno);
            break;
        }
        const char *p = line + strspn(line, " \t");
        if (*p == '\0' || *p == '#')
            continue;
        if (cli_env_item(p, &e) < 0 || cli_env_set(env, p, &e) < 0) {
            rc = tsl_errprintf(err, "%s:%d: %s", path, lineno, e.text);
            break;
        }
    }
    if (rc == 0 && ferror(f))
        rc = tsl_errprintf(err, "--env-file %s: read error", path);
    free(line);
    fclose(f);
    if (rc < 0)
        errno = EINVAL;
    return rc;
}

/* Variables of the caller's shell that describe the shell itself, not the job; and the CLI's
 * own configuration (its token is a secret the job's record should not hold). */
static bool env_shell_own(const char *name, size_t n)
{
    static const char *const own[] = {"PWD",          "OLDPWD",       "_", "SHLVL", "TESSEL_URL",
                                      "TESSEL_TOKEN", "TESSEL_CONFIG"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strlen(own[i]) == n && strncmp(name, own[i], n) == 0)
            return true;
    return false;
}

int cli_env_export_all(char *const *envp, json_t *env, size_t *skipped)
{
    *skipped = 0;
    for (char *const *e = envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || eq == *e || env_shell_own(*e, (size_t)(eq - *e)))
            continue;
        char *k = strndup(*e, (size_t)(eq - *e));
        if (!k)
            abort();
        if (!tsl_env_reserved(k)) {
            json_t *v = json_string(eq + 1);
            if (v)
                json_object_set_new(env, k, v);
            else
                (*skipped)++;
        }
        free(k);
    }
    return 0;
}

int cli_env_check_size(const json_t *env, tsl_error_t *err)
{
    size_t bytes = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v)
    {
        bytes += strlen(k) + json_string_length(v) + 2;
    }
    if (json_object_size(env) > TSL_ENV_MAX_VARS) {
        errno = E2BIG;
        return tsl_errprintf(err,
                             "the job's environment has %zu variables, at most %d (--no-env "
                             "sends only --env and --env-file)",
                             json_object_size(env), TSL_ENV_MAX_VARS);
    }
    if (bytes > TSL_ENV_MAX_BYTES) {
        errno = E2BIG;
        return tsl_errprintf(err,
                             "the job's environment takes %zu bytes, at most %u (--no-env sends "
                             "only --env and --env-file)",
                             bytes, TSL_ENV_MAX_BYTES);
    }
    return 0;
}
