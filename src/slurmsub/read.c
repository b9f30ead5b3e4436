/* read.c - tessel-slurm-submit --read: tesseld's reader of Slurm's jobs (read.h). */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <slurm/slurm_errno.h>

#include "libutil/utf8.h"
#include "slurmsub/read.h"
#include "slurmsub/subproto.h"

/* Exported by libslurm (38, Slurm 22.05) under these names, declared only in Slurm's own
 * src/common/slurm_protocol_defs.h (as job_state_string and job_reason_string): the words
 * squeue --json writes for a job's state (the flags COMPLETING, CONFIGURING... before the
 * base state) and its reason. */
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(22, 5, 0) ||                                          \
    SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(22, 6, 0)
#error "read.c: check these two against this Slurm's src/common/slurm_protocol_defs.h"
#endif
extern char *slurm_job_state_string(uint32_t inx);
extern char *slurm_job_reason_string(enum job_state_reason inx);

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int tss_read_request(const char *text, size_t len, uint32_t **ids, size_t *n, bool *all,
                     tsl_error_t *err)
{
    *ids = NULL;
    *n = 0;
    *all = false;
    json_error_t je;
    json_t *req = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(req)) {
        json_decref(req);
        errno = EINVAL;
        return tsl_errprintf(err, "a request: %s", req ? "not an object" : je.text);
    }
    const char *key;
    json_t *v;
    json_t *list = NULL;
    json_object_foreach(req, key, v)
    {
        if (strcmp(key, "ids") == 0 && json_is_array(v)) {
            list = v;
        } else if (strcmp(key, "all") == 0 && json_is_boolean(v)) {
            *all = json_is_true(v);
        } else {
            tsl_errprintf(err, "a request: \"%.40s\" is not a key of this shape", key);
            json_decref(req);
            errno = EINVAL;
            return -1;
        }
    }
    size_t cap = list ? json_array_size(list) : 0;
    if (cap > TSS_READ_IDS_MAX) {
        json_decref(req);
        errno = EINVAL;
        return tsl_errprintf(err, "a request: %zu ids, above %u", cap, TSS_READ_IDS_MAX);
    }
    uint32_t *v32 = cap ? malloc(cap * sizeof *v32) : NULL;
    if (cap && !v32) {
        json_decref(req);
        errno = ENOMEM;
        return tsl_errprintf(err, "a request: out of memory");
    }
    for (size_t i = 0; i < cap; i++) {
        json_t *x = json_array_get(list, i);
        json_int_t id = json_is_integer(x) ? json_integer_value(x) : 0;
        if (id < 1 || id > (json_int_t)UINT32_MAX) {
            free(v32);
            json_decref(req);
            errno = EINVAL;
            return tsl_errprintf(err, "a request: id %zu is not a Slurm job id", i);
        }
        v32[i] = (uint32_t)id;
    }
    json_decref(req);
    size_t k = 0;
    if (cap) {
        qsort(v32, cap, sizeof *v32, cmp_u32);
        for (size_t i = 0; i < cap; i++)
            if (!k || v32[i] != v32[k - 1])
                v32[k++] = v32[i];
    }
    *ids = v32;
    *n = k;
    return 0;
}

/* A string of Slurm's into buf (len bytes: what tesseld keeps of that key, slurmjob.h's
 * tsj_seen_t) as JSON takes it: NULL as "" (squeue --json writes "" for no value), each byte
 * that is not UTF-8 or is a control character as '?' (a job's name is whatever bytes its owner
 * gave sbatch: one that jansson refused would fail every poll, every job's; a control byte is 6
 * bytes of JSON), cut at a character's end to fit.  So no job of a user's is more than about
 * 800 bytes of the answer (review of the reader, 2026-11-28, M1). */
static const char *str(const char *s, char *buf, size_t len)
{
    tsl_utf8_clean(s ? s : "", buf, len);
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    return buf;
}

json_t *tss_job_json(const slurm_job_info_t *j)
{
    char st[TSS_KEEP_SHORT], why[TSS_KEEP_SHORT], nodes[TSS_KEEP_NODES], name[TSS_KEEP_NAME],
        part[TSS_KEEP_SHORT], user[TSS_KEEP_SHORT];
    /* The name of uid when slurmctld gives none (22.05 fills user_name only now and then): the
     * last one looked up is kept, a whole list is mostly a few users' jobs. */
    static uint32_t last_uid = UINT32_MAX;
    static char last_name[TSS_KEEP_SHORT];
    const char *uname = j->user_name;
    if (!uname && j->user_id != last_uid) {
        struct passwd pw, *r = NULL;
        char buf[4096];
        last_uid = j->user_id;
        last_name[0] = '\0';
        if (getpwuid_r(j->user_id, &pw, buf, sizeof buf, &r) == 0 && r)
            snprintf(last_name, sizeof last_name, "%s", r->pw_name);
    }
    if (!uname)
        uname = last_name;
    return json_pack(
        "{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:I, s:s, s:s, s:s, s:I}", "job_id",
        (json_int_t)j->job_id, "job_state",
        str(slurm_job_state_string(j->job_state), st, sizeof st), "state_reason",
        str(slurm_job_reason_string((enum job_state_reason)j->state_reason), why, sizeof why),
        "start_time", (json_int_t)j->start_time, "submit_time", (json_int_t)j->submit_time,
        "end_time", (json_int_t)j->end_time, "exit_code", (json_int_t)j->exit_code, "nodes",
        str(j->nodes, nodes, sizeof nodes), "user_id", (json_int_t)j->user_id, "user_name",
        str(uname, user, sizeof user), "name", str(j->name, name, sizeof name), "partition",
        str(j->partition, part, sizeof part), "cpus", (json_int_t)j->num_cpus);
}

int tss_read_add(json_t *jobs, const job_info_msg_t *m, const uint32_t *ids, size_t n, bool all)
{
    for (uint32_t i = 0; m && i < m->record_count; i++) {
        const slurm_job_info_t *j = &m->job_array[i];
        if (!all && !(n && bsearch(&j->job_id, ids, n, sizeof *ids, cmp_u32)))
            continue;
        json_t *o = tss_job_json(j);
        if (!o || json_array_append_new(jobs, o) < 0)
            return -1;
    }
    return 0;
}

/* The answer to one request: {"jobs": [...]}, or {"errno", "error"}. */
static json_t *read_jobs(const uint32_t *ids, size_t n, bool all)
{
    json_t *jobs = json_array();
    if (!jobs)
        return NULL;
    int e = 0;
    if (!all && n <= TSS_READ_ONE_BY_ONE) {
        for (size_t i = 0; i < n && !e; i++) {
            job_info_msg_t *m = NULL;
            if (slurm_load_job(&m, ids[i], SHOW_ALL) != SLURM_SUCCESS) {
                e = slurm_get_errno() ? slurm_get_errno() : SLURM_ERROR;
                if (e == ESLURM_INVALID_JOB_ID)
                    e = 0; /* not held: ended past MinJobAge, or never Slurm's */
            } else if (tss_read_add(jobs, m, ids + i, 1, false) < 0) {
                e = ENOMEM;
            }
            if (m)
                slurm_free_job_info_msg(m);
        }
    } else {
        job_info_msg_t *m = NULL;
        if (slurm_load_jobs(0, &m, SHOW_ALL) != SLURM_SUCCESS)
            e = slurm_get_errno() ? slurm_get_errno() : SLURM_ERROR;
        else if (tss_read_add(jobs, m, ids, n, all) < 0)
            e = ENOMEM;
        if (m)
            slurm_free_job_info_msg(m);
    }
    if (e == ENOMEM) {
        json_decref(jobs);
        return json_pack("{s:s}", "refused", "out of memory");
    }
    if (e) {
        json_decref(jobs);
        return json_pack("{s:i, s:s}", "errno", e, "error", slurm_strerror(e));
    }
    return json_pack("{s:o}", "jobs", jobs);
}

int tss_read_main(void)
{
    /* Run as tesseld (root when it is): nothing of it to read from another process. */
    if (prctl(PR_SET_DUMPABLE, 0) < 0)
        return 2;
    slurm_init(NULL);
    for (;;) {
        char *text;
        size_t len;
        if (tss_frame_read(0, TSS_REQUEST_MAX, -1, &text, &len) < 0)
            return errno == ENODATA ? 0 : 1;
        uint32_t *ids;
        size_t n;
        bool all;
        tsl_error_t err;
        json_t *a;
        if (tss_read_request(text, len, &ids, &n, &all, &err) < 0)
            a = json_pack("{s:s}", "refused", err.text);
        else
            a = read_jobs(ids, n, all);
        free(text);
        free(ids);
        char *out = a ? json_dumps(a, JSON_COMPACT) : NULL;
        json_decref(a);
        if (!out)
            return 1;
        int rc = tss_frame_write(1, out, strlen(out), -1);
        free(out);
        if (rc < 0)
            return 1;
    }
}
