/* slurm_logic.c - the pure part of spank_tessel.so (see slurm_logic.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "libutil/size.h"
#include "slurm/slurm_logic.h"

int tslurm_parse_mem(const char *text, uint64_t *bytes, tsl_error_t *err)
{
    uint64_t b;
    tsl_error_t e;
    if (!text || !*text)
        return tsl_errprintf(err, "--gpu-mem: a size is needed, e.g. --gpu-mem=8G");
    if (tsl_parse_size_unit(text, &b, &e) < 0)
        return tsl_errprintf(err, "--gpu-mem=%.60s: %s", text, e.text);
    if (b == 0)
        return tsl_errprintf(err, "--gpu-mem=%.60s: the size must be above 0", text);
    *bytes = b;
    return 0;
}

int tslurm_parse_share(const char *text, unsigned *ppm, tsl_error_t *err)
{
    if (!text || !*text)
        return tsl_errprintf(err, "--gpu-share: a fraction is needed, e.g. --gpu-share=0.25");
    /* Digits and one dot, then an optional '%': no sign, no exponent, no spaces. */
    size_t n = strlen(text);
    bool pct = text[n - 1] == '%';
    size_t digits = 0, dots = 0;
    for (size_t i = 0; i < n - (pct ? 1 : 0); i++) {
        if (isdigit((unsigned char)text[i]))
            digits++;
        else if (text[i] == '.')
            dots++;
        else
            digits = 0, dots = 2;
    }
    if (digits == 0 || dots > 1 || n > 20)
        return tsl_errprintf(err, "--gpu-share=%.60s: expected a fraction such as 0.25 or 25%%",
                             text);
    double v = strtod(text, NULL);
    if (pct)
        v /= 100.0;
    if (!(v > 0.0) || v > 1.0)
        return tsl_errprintf(
            err, "--gpu-share=%.60s: a share of one GPU must be above 0 and at most 1", text);
    unsigned p = (unsigned)(v * TSLURM_PPM + 1e-6);
    *ppm = p ? p : 1;
    return 0;
}

const char *tslurm_gpu_var(uint32_t step)
{
    /* slurm.h: SLURM_BATCH_SCRIPT 0xfffffffb, SLURM_INTERACTIVE_STEP 0xfffffffa (kept here as
     * numbers: this file is built without Slurm's headers for its unit tests). */
    return step == 0xfffffffbu || step == 0xfffffffau ? "SLURM_JOB_GPUS" : "SLURM_STEP_GPUS";
}

int tslurm_gpu_list_parse(const char *text, int *out, int max, tsl_error_t *err)
{
    int n = 0;
    const char *p = text ? text : "";
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p))
            return tsl_errprintf(err, "GPU list '%.60s': expected indexes such as 0,1", text);
        unsigned long a = strtoul(p, &end, 10), b = a;
        if (*end == '-') {
            const char *q = end + 1;
            if (!isdigit((unsigned char)*q))
                return tsl_errprintf(err, "GPU list '%.60s': a range needs an end", text);
            b = strtoul(q, &end, 10);
        }
        if (a >= TSLURM_MAX_GPUS || b >= TSLURM_MAX_GPUS || b < a)
            return tsl_errprintf(err, "GPU list '%.60s': indexes go from 0 to 63", text);
        for (unsigned long i = a; i <= b; i++) {
            if (n == max)
                return tsl_errprintf(err, "GPU list '%.60s': more than %d GPUs", text, max);
            out[n++] = (int)i;
        }
        if (*end == ',' && end[1])
            end++;
        else if (*end)
            return tsl_errprintf(err, "GPU list '%.60s': expected indexes such as 0,1", text);
        p = end;
    }
    return n;
}

/* Expand one Slurm name with at most one bracket ("nvidia[0-1,3]", "n[1-2]x", "n7") and call
 * fn for each name.  Returns -1 on a malformed expression, else 0 (or fn's first non-zero). */
typedef int (*name_fn)(const char *name, void *arg);
static int expand(const char *expr, size_t len, name_fn fn, void *arg)
{
    char name[256];
    const char *lb = memchr(expr, '[', len);
    if (!lb) {
        if (len == 0 || len >= sizeof name)
            return -1;
        memcpy(name, expr, len);
        name[len] = '\0';
        return fn(name, arg);
    }
    const char *rb = memchr(lb, ']', len - (size_t)(lb - expr));
    if (!rb)
        return -1;
    size_t pre = (size_t)(lb - expr), post = len - (size_t)(rb - expr) - 1;
    const char *p = lb + 1;
    while (p < rb) {
        char *end;
        if (!isdigit((unsigned char)*p))
            return -1;
        const char *start = p;
        unsigned long a = strtoul(p, &end, 10), b = a;
        size_t width = (size_t)(end - start);
        if (*end == '-') {
            if (!isdigit((unsigned char)end[1]))
                return -1;
            b = strtoul(end + 1, &end, 10);
        }
        if (end > rb || b < a || b - a > 4096)
            return -1;
        for (unsigned long i = a; i <= b; i++) {
            int w = snprintf(name, sizeof name, "%.*s%0*lu%.*s", (int)pre, expr, (int)width, i,
                             (int)post, rb + 1);
            if (w < 0 || (size_t)w >= sizeof name)
                return -1;
            int rc = fn(name, arg);
            if (rc)
                return rc;
        }
        if (*end == ',')
            end++;
        else if (end != rb)
            return -1;
        p = end;
    }
    return 0;
}

/* Call fn for every name of a comma list of bracket expressions (commas inside brackets do not
 * split). */
static int expand_list(const char *expr, name_fn fn, void *arg)
{
    const char *p = expr;
    while (*p) {
        const char *q = p;
        int depth = 0;
        while (*q && (depth || *q != ',')) {
            depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
            q++;
        }
        int rc = expand(p, (size_t)(q - p), fn, arg);
        if (rc)
            return rc;
        p = *q ? q + 1 : q;
    }
    return 0;
}

static int same_name(const char *name, void *arg)
{
    return strcmp(name, (const char *)arg) == 0 ? 1 : 0;
}

int tslurm_hostlist_match(const char *expr, const char *host)
{
    return expand_list(expr, same_name, (void *)host);
}

typedef struct {
    int minors[TSLURM_MAX_GPUS];
    int n;
    int bad;
} files_t;

/* A File= name: the device minor is its trailing digits (as Slurm takes them). */
static int add_file(const char *name, void *arg)
{
    files_t *f = arg;
    size_t len = strlen(name), i = len;
    while (i > 0 && isdigit((unsigned char)name[i - 1]))
        i--;
    if (i == len || len - i > 3 || f->n == TSLURM_MAX_GPUS) {
        f->bad = 1;
        return -1;
    }
    int m = atoi(name + i);
    if (m >= TSLURM_MAX_GPUS) {
        f->bad = 1;
        return -1;
    }
    f->minors[f->n++] = m;
    return 0;
}

int tslurm_gres_parse(const char *text, const char *node, tslurm_gres_t *g, tsl_error_t *err)
{
    memset(g, 0, sizeof *g);
    int lineno = 0;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[1024];
        lineno++;
        if (len >= sizeof line)
            return tsl_errprintf(err, "gres.conf line %d: longer than %zu bytes", lineno,
                                 sizeof line - 1);
        memcpy(line, p, len);
        line[len] = '\0';
        p = eol ? eol + 1 : p + len;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *name = NULL, *count = NULL, *file = NULL, *nodes = NULL, *save = NULL;
        for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
            char *eq = strchr(t, '=');
            if (!eq)
                continue;
            *eq = '\0';
            if (strcasecmp(t, "Name") == 0)
                name = eq + 1;
            else if (strcasecmp(t, "Count") == 0)
                count = eq + 1;
            else if (strcasecmp(t, "File") == 0)
                file = eq + 1;
            else if (strcasecmp(t, "NodeName") == 0)
                nodes = eq + 1;
        }
        if (!name || (strcmp(name, "gpu") != 0 && strcmp(name, "shard") != 0))
            continue;
        if (nodes) {
            int m = tslurm_hostlist_match(nodes, node);
            if (m < 0)
                return tsl_errprintf(err, "gres.conf line %d: NodeName=%.60s: malformed", lineno,
                                     nodes);
            if (m == 0)
                continue;
        }
        files_t f = {.n = 0};
        if (!file)
            return tsl_errprintf(err, "gres.conf line %d: Name=%s without File=", lineno, name);
        if (expand_list(file, add_file, &f) < 0 || f.bad || f.n == 0)
            return tsl_errprintf(err,
                                 "gres.conf line %d: File=%.60s: expected device files "
                                 "such as /dev/nvidia[0-1]",
                                 lineno, file);
        if (strcmp(name, "gpu") == 0) {
            for (int i = 0; i < f.n; i++)
                g->gpu[f.minors[i]] = 1;
            continue;
        }
        char *end;
        errno = 0;
        unsigned long c = count ? strtoul(count, &end, 10) : 0;
        if (!count || end == count || *end || errno || c == 0 || c > 1000000)
            return tsl_errprintf(err, "gres.conf line %d: Name=shard needs Count=N (1 or more)",
                                 lineno);
        for (int i = 0; i < f.n; i++)
            g->shards[f.minors[i]] +=
                (unsigned)(c / (unsigned)f.n) + (i < (int)(c % (unsigned)f.n) ? 1 : 0);
    }
    return 0;
}

/* bytes * num / den without overflow for the sizes met here (den <= 10^6). */
static uint64_t part(uint64_t bytes, uint64_t num, uint64_t den)
{
    return (bytes / den) * num + (bytes % den) * num / den;
}

int tslurm_limits(const tslurm_request_t *r, const tslurm_gres_t *g, const uint64_t *gpu_mem,
                  tslurm_limits_t *out, tsl_error_t *err)
{
    char a[32], b[32];
    memset(out, 0, sizeof *out);
    if (r->ngpus == 0) {
        if (r->mem || r->share_ppm)
            return tsl_errprintf(err, "%s needs GPUs or shards (--gres=gpu:N or --gres=shard:N)",
                                 r->mem ? "--gpu-mem" : "--gpu-share");
        return 0;
    }
    if (r->ngpus > TSLURM_MAX_GPUS)
        return tsl_errprintf(err, "more than %d GPUs", TSLURM_MAX_GPUS);
    if (r->shards && r->ngpus != 1)
        return tsl_errprintf(err,
                             "shards on %d GPUs: Slurm 22.05 gives a job's shards on a node "
                             "from one GPU",
                             r->ngpus);
    for (int k = 0; k < r->ngpus; k++) {
        int m = r->minor[k];
        if (m < 0 || m >= TSLURM_MAX_GPUS)
            return tsl_errprintf(err, "GPU %d: not a GPU of this node", m);
        uint64_t total = gpu_mem[m];
        if (total == 0)
            return tsl_errprintf(err, "GPU %d: its memory is unknown (NVML names no such GPU)", m);
        unsigned ppm = TSLURM_PPM;
        uint64_t allowed = total;
        /* A whole GPU whose shards gres.conf offers: shard jobs may hold parts of it (Slurm
         * 22.05 counts gpu and shard apart), so the whole of it is no one's to give.  Whole
         * GPUs reach such a GPU as all of its shards (job_submit.lua's whole_gpus_as_shards). */
        if (!r->shards && g->shards[m] > 0)
            return tsl_errprintf(err,
                                 "GPU %d has %u shards in gres.conf (shard jobs may hold parts "
                                 "of it): a whole-GPU job cannot run on it; ask for "
                                 "--gres=shard:%u (all of its shards) instead",
                                 m, g->shards[m], g->shards[m]);
        if (r->shards) {
            unsigned count = g->shards[m];
            if (count == 0)
                return tsl_errprintf(err, "GPU %d: gres.conf gives it no shards", m);
            uint64_t s = r->shards > count ? count : r->shards;
            ppm = (unsigned)(s * TSLURM_PPM / count);
            allowed = part(total, s, count);
        }
        const char *whose = r->shards ? "its shards' part" : "the GPU's memory";
        if (r->share_ppm > ppm)
            return tsl_errprintf(err, "--gpu-share %.4g is above %s (%.4g of GPU %d)",
                                 r->share_ppm / (double)TSLURM_PPM, whose, ppm / (double)TSLURM_PPM,
                                 m);
        uint64_t mem = allowed;
        if (r->share_ppm) {
            ppm = r->share_ppm;
            mem = part(total, ppm, TSLURM_PPM);
        }
        if (r->mem > allowed)
            return tsl_errprintf(err, "--gpu-mem %s is above %s on GPU %d (%s)",
                                 tsl_format_size(r->mem, a, sizeof a), whose, m,
                                 tsl_format_size(allowed, b, sizeof b));
        if (r->mem)
            mem = r->mem < mem || !r->share_ppm ? r->mem : mem;
        unsigned core = (unsigned)((uint64_t)ppm * 100 / TSLURM_PPM);
        out->minor[k] = m;
        out->mem[k] = mem;
        out->core[k] = core ? core : 1;
    }
    out->n = r->ngpus;
    return 0;
}

int tslurm_limits_text(const tslurm_limits_t *l, const char *slice, const char *what, char *buf,
                       size_t len)
{
    size_t n = 0;
    int w = snprintf(buf, len,
                     "# spank_tessel: the limits of %s (root's: the job cannot change them)\n"
                     "TESSEL_SLICE=%s\nTESSEL_CUDA_MEM_LIMIT=0\n",
                     what, slice);
    if (w < 0 || (size_t)w >= len)
        return -1;
    n = (size_t)w;
    unsigned core = 100;
    for (int k = 0; k < l->n; k++) {
        w = snprintf(buf + n, len - n, "TESSEL_CUDA_MEM_LIMIT_%d=%" PRIu64 "\n", k, l->mem[k]);
        if (w < 0 || (size_t)w >= len - n)
            return -1;
        n += (size_t)w;
        if (l->core[k] < core)
            core = l->core[k];
    }
    if (core < 100) {
        w = snprintf(buf + n, len - n, "TESSEL_CUDA_CORE_LIMIT=%u\n", core);
        if (w < 0 || (size_t)w >= len - n)
            return -1;
        n += (size_t)w;
    }
    return (int)n;
}

int tslurm_watchdog_spec(const tslurm_limits_t *l, char *buf, size_t len)
{
    size_t n = 0;
    if (len == 0)
        return -1;
    buf[0] = '\0';
    for (int k = 0; k < l->n; k++) {
        int w = snprintf(buf + n, len - n, "%s%d=%" PRIu64, k ? "," : "", l->minor[k], l->mem[k]);
        if (w < 0 || (size_t)w >= len - n)
            return -1;
        n += (size_t)w;
    }
    return (int)n;
}

int tslurm_gpus_text(const tslurm_limits_t *l, char *buf, size_t len)
{
    size_t n = 0;
    if (len == 0)
        return -1;
    buf[0] = '\0';
    for (int k = 0; k < l->n; k++) {
        int w =
            snprintf(buf + n, len - n, "%d %" PRIu64 " %u\n", l->minor[k], l->mem[k], l->core[k]);
        if (w < 0 || (size_t)w >= len - n)
            return -1;
        n += (size_t)w;
    }
    return (int)n;
}

int tslurm_gpus_parse(const char *text, int *minor, uint64_t *mem, unsigned *core, int max)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *e;
        if (n >= max || !isdigit((unsigned char)*p))
            return -1;
        errno = 0;
        unsigned long m = strtoul(p, &e, 10);
        if (errno || m >= TSLURM_MAX_GPUS || *e != ' ' || !isdigit((unsigned char)e[1]))
            return -1;
        p = e + 1;
        unsigned long long b = strtoull(p, &e, 10);
        if (errno || *e != ' ' || !isdigit((unsigned char)e[1]))
            return -1;
        p = e + 1;
        unsigned long c = strtoul(p, &e, 10);
        if (errno || c < 1 || c > 100 || *e != '\n')
            return -1;
        minor[n] = (int)m;
        mem[n] = (uint64_t)b;
        core[n] = (unsigned)c;
        n++;
        p = e + 1;
    }
    return n;
}
