/* slurmnodes_parse.c - the poll's data without its I/O: the copy handlers take
 * (tsn_snapshot) and sinfo --json's nodes (Slurm 22.05, openapi v0.0.38), pure (see
 * slurmnodes.h).  22.05's `scontrol show nodes` has no --json; sinfo --json prints every node
 * once, with "name", "address" (NodeAddr), "state" (the base state, lower case), "state_flags"
 * (DRAIN, NOT_RESPONDING, ...) and "reason". */
#include <ctype.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "daemon/slurmnodes.h"

const char *tsn_status_name(tsn_status_t s)
{
    switch (s) {
    case TSN_UP:
        return "up";
    case TSN_DOWN:
        return "down";
    case TSN_DRAIN:
        return "drain";
    case TSN_UNREACHABLE:
        return "unreachable";
    default:
        return "unknown";
    }
}

/* A name or address that may go into a URL and a label as it is. */
static bool plain(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n >= max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr(".-_:", s[i]))
            return false;
    return true;
}

static void copy_text(char *buf, size_t len, json_t *v)
{
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    size_t n = 0;
    /* Control characters become spaces: a reason is shown to people as it is. */
    for (; s[n] && n + 1 < len; n++)
        buf[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? ' ' : s[n];
    buf[n] = '\0';
}

int tsn_parse_sinfo(const char *text, size_t len, tsn_slurm_node_t **out, size_t *n,
                    tsl_error_t *err)
{
    *out = NULL;
    *n = 0;
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!json_is_object(root)) {
        json_decref(root);
        errno = EINVAL;
        return tsl_errprintf(err, "sinfo --json: not JSON (%s)", root ? "not an object" : je.text);
    }
    json_t *errors = json_object_get(root, "errors");
    if (json_is_array(errors) && json_array_size(errors) > 0) {
        json_t *e0 = json_array_get(errors, 0);
        char what[160];
        copy_text(
            what, sizeof what,
            json_object_get(e0, json_object_get(e0, "description") ? "description" : "error"));
        json_decref(root);
        errno = EIO;
        return tsl_errprintf(err, "sinfo: %s", what[0] ? what : "Slurm reports an error");
    }
    json_t *nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes)) {
        json_decref(root);
        errno = EINVAL;
        return tsl_errprintf(err, "sinfo --json: no \"nodes\" array");
    }
    size_t cap = json_array_size(nodes) < TSN_MAX_NODES ? json_array_size(nodes) : TSN_MAX_NODES;
    tsn_slurm_node_t *a = calloc(cap ? cap : 1, sizeof *a);
    if (!a) {
        json_decref(root);
        errno = ENOMEM;
        return tsl_errprintf(err, "out of memory");
    }
    size_t i, k = 0;
    json_t *o;
    json_array_foreach(nodes, i, o)
    {
        if (k >= cap)
            break;
        json_t *name = json_object_get(o, "name"), *addr = json_object_get(o, "address");
        if (!json_is_string(name) || !json_is_string(addr) ||
            !plain(json_string_value(name), sizeof a[k].name) ||
            !plain(json_string_value(addr), sizeof a[k].addr))
            continue;
        /* One entry per node (a node of two partitions is listed once by 22.05; be sure). */
        bool dup = false;
        for (size_t j = 0; j < k && !dup; j++)
            dup = strcmp(a[j].name, json_string_value(name)) == 0;
        if (dup)
            continue;
        tsn_slurm_node_t *s = &a[k];
        snprintf(s->name, sizeof s->name, "%s", json_string_value(name));
        snprintf(s->addr, sizeof s->addr, "%s", json_string_value(addr));
        copy_text(s->state, sizeof s->state, json_object_get(o, "state"));
        for (char *p = s->state; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        copy_text(s->reason, sizeof s->reason, json_object_get(o, "reason"));
        s->down = strcmp(s->state, "down") == 0;
        size_t f;
        json_t *flag;
        json_array_foreach(json_object_get(o, "state_flags"), f, flag)
        {
            const char *fl = json_is_string(flag) ? json_string_value(flag) : "";
            if (strcmp(fl, "DRAIN") == 0)
                s->drain = true;
            else if (strcmp(fl, "NOT_RESPONDING") == 0)
                s->down = true;
        }
        k++;
    }
    json_decref(root);
    *out = a;
    *n = k;
    return 0;
}

void tsn_nodes_free(tsn_node_t *nodes, size_t n)
{
    for (size_t i = 0; nodes && i < n; i++)
        tnf_node_clear(&nodes[i].figs);
    free(nodes);
}

/* A deep copy of src into dst (figs' slices duplicated).  0, or -1 (out of memory). */
int tsn_node_copy(tsn_node_t *dst, const tsn_node_t *src)
{
    *dst = *src;
    dst->figs.slices = NULL;
    dst->figs.nslices = dst->figs.cap = 0;
    for (size_t i = 0; i < src->figs.nslices; i++)
        if (tnf_add_slice(&dst->figs, &src->figs.slices[i]) < 0)
            return -1;
    return 0;
}

tsn_node_t *tsn_snapshot(tsn_state_t *s, size_t *n, int64_t *polled_ms, char *why, size_t len)
{
    *n = 0;
    *polled_ms = 0;
    if (why && len)
        why[0] = '\0';
    if (!s)
        return NULL;
    pthread_mutex_lock(&s->lock);
    tsn_node_t *copy = s->n ? calloc(s->n, sizeof *copy) : NULL;
    size_t k = 0;
    for (; copy && k < s->n; k++)
        if (tsn_node_copy(&copy[k], &s->nodes[k]) < 0) {
            k++;
            break;
        }
    *n = copy ? k : 0;
    *polled_ms = s->polled_ms;
    if (why && len)
        snprintf(why, len, "%s", s->error);
    pthread_mutex_unlock(&s->lock);
    return copy;
}
