/* acl.c - who may submit to a queue: the queue's lists of users, Unix groups and roles
 * (tstore_queue_t.allow_*), parsed from the API's "allow" object and checked at submission.
 *
 * Rule: a queue with no list at all is open to everyone.  Otherwise a user may submit when
 * named in allow_users, or a member of a group named in allow_groups (the Unix groups of the
 * system account of the user's name, primary and supplementary), or of a role named in
 * allow_roles ("admin", "user").  An admin is no exception: "--allow-roles admin" says so.
 * A job's queue and every queue above it must let the user in (api_queue_may_submit).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/acl.h"

bool tessd_acl_has(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchrnul(p, ',');
        if ((size_t)(e - p) == n && memcmp(p, name, n) == 0)
            return true;
        p = *e ? e + 1 : e;
    }
    return false;
}

bool tessd_acl_open(const tstore_queue_t *q)
{
    return !q->allow_users[0] && !q->allow_groups[0] && !q->allow_roles[0];
}

bool tessd_acl_allows(const tstore_queue_t *q, const char *user, bool admin,
                      const char *const *groups, size_t ngroups)
{
    if (tessd_acl_open(q))
        return true;
    if (tessd_acl_has(q->allow_users, user) ||
        tessd_acl_has(q->allow_roles, admin ? "admin" : "user"))
        return true;
    for (size_t i = 0; i < ngroups; i++)
        if (tessd_acl_has(q->allow_groups, groups[i]))
            return true;
    return false;
}

bool tessd_group_name_valid(const char *s)
{
    /* Debian's useradd/groupadd rule (NAME_REGEX), without the trailing '$' of machine
     * accounts: a letter or '_' first, then letters, digits, '_' and '-'. */
    size_t n = strlen(s);
    if (n == 0 || n > TSTORE_NAME_MAX || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static const char *const kinds[TESSD_ACL_NKINDS] = {"users", "groups", "roles"};

static bool name_ok(int kind, const char *s)
{
    switch (kind) {
    case TESSD_ACL_USERS:
        return tstore_name_valid(s);
    case TESSD_ACL_GROUPS:
        return tessd_group_name_valid(s);
    default:
        return strcmp(s, "admin") == 0 || strcmp(s, "user") == 0;
    }
}

/* One list from a JSON array of names into out (comma-separated, duplicates dropped). */
static int parse_list(int kind, json_t *arr, char *out, char *why, size_t whylen)
{
    if (json_is_null(arr)) {
        out[0] = '\0';
        return 0;
    }
    if (!json_is_array(arr)) {
        snprintf(why, whylen, "allow.%s must be a list of names (or null)", kinds[kind]);
        return -1;
    }
    if (json_array_size(arr) > TSTORE_ACL_NAMES) {
        snprintf(why, whylen, "allow.%s has %zu names; at most %d", kinds[kind],
                 json_array_size(arr), TSTORE_ACL_NAMES);
        return -1;
    }
    char buf[TSTORE_ACL_LEN] = "";
    size_t len = 0;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        if (!s || !name_ok(kind, s)) {
            if (kind == TESSD_ACL_ROLES)
                snprintf(why, whylen, "allow.roles: '%.40s' is not a role (admin, user)",
                         s ? s : "(not a string)");
            else
                snprintf(why, whylen,
                         "allow.%s: '%.40s' is not a %s name (1 to 32 of a-z, 0-9, '_' and '-', "
                         "starting with a letter%s)",
                         kinds[kind], s ? s : "(not a string)",
                         kind == TESSD_ACL_USERS ? "user" : "group",
                         kind == TESSD_ACL_GROUPS ? " or '_'" : "");
            return -1;
        }
        if (tessd_acl_has(buf, s))
            continue;
        /* At most 32 names of at most 32 bytes, with commas: always fits TSTORE_ACL_LEN. */
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? "," : "", s);
    }
    memcpy(out, buf, len + 1);
    return 0;
}

int tessd_acl_parse(json_t *allow, tstore_queue_t *q, char *field, size_t fieldlen, char *why,
                    size_t whylen)
{
    char *lists[TESSD_ACL_NKINDS] = {q->allow_users, q->allow_groups, q->allow_roles};
    snprintf(field, fieldlen, "allow");
    if (json_is_null(allow)) {
        for (int k = 0; k < TESSD_ACL_NKINDS; k++)
            lists[k][0] = '\0';
        return 0;
    }
    if (!json_is_object(allow)) {
        snprintf(why, whylen,
                 "allow must be an object {\"users\": [...], \"groups\": [...], \"roles\": "
                 "[...]} or null (open to everyone)");
        return -1;
    }
    const char *key;
    json_t *val;
    json_object_foreach(allow, key, val)
    {
        int k = 0;
        while (k < TESSD_ACL_NKINDS && strcmp(kinds[k], key) != 0)
            k++;
        if (k == TESSD_ACL_NKINDS) {
            snprintf(field, fieldlen, "allow.%.40s", key);
            snprintf(why, whylen, "unknown field 'allow.%.40s' (users, groups, roles)", key);
            return -1;
        }
    }
    /* All or nothing: parse into a copy. */
    tstore_queue_t tmp;
    char *tl[TESSD_ACL_NKINDS] = {tmp.allow_users, tmp.allow_groups, tmp.allow_roles};
    for (int k = 0; k < TESSD_ACL_NKINDS; k++) {
        json_t *arr = json_object_get(allow, kinds[k]);
        if (!arr) {
            memcpy(tl[k], lists[k], TSTORE_ACL_LEN);
            continue;
        }
        if (parse_list(k, arr, tl[k], why, whylen) < 0) {
            snprintf(field, fieldlen, "allow.%s", kinds[k]);
            return -1;
        }
    }
    for (int k = 0; k < TESSD_ACL_NKINDS; k++)
        memcpy(lists[k], tl[k], TSTORE_ACL_LEN);
    return 0;
}

json_t *tessd_acl_json(const tstore_queue_t *q)
{
    const char *lists[TESSD_ACL_NKINDS] = {q->allow_users, q->allow_groups, q->allow_roles};
    json_t *o = json_object();
    for (int k = 0; k < TESSD_ACL_NKINDS; k++) {
        json_t *arr = json_array();
        for (const char *p = lists[k]; *p;) {
            const char *e = strchrnul(p, ',');
            json_array_append_new(arr, json_stringn(p, (size_t)(e - p)));
            p = *e ? e + 1 : e;
        }
        json_object_set_new(o, kinds[k], arr);
    }
    return o;
}

void tessd_acl_describe(const tstore_queue_t *q, char *buf, size_t len)
{
    const char *lists[TESSD_ACL_NKINDS] = {q->allow_users, q->allow_groups, q->allow_roles};
    size_t n = 0;
    buf[0] = '\0';
    for (int k = 0; k < TESSD_ACL_NKINDS && n < len; k++) {
        if (!lists[k][0])
            continue;
        int w = snprintf(buf + n, len - n, "%s%s %s", n ? "; " : "", kinds[k], lists[k]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

int tessd_user_groups(const char *user, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    struct passwd pwbuf, *pw = NULL;
    char pwmem[4096];
    if (getpwnam_r(user, &pwbuf, pwmem, sizeof pwmem, &pw) != 0 || !pw)
        return 0; /* no account: no groups */
    int ng = 64;
    gid_t *gids = NULL;
    for (;;) {
        gid_t *g = realloc(gids, (size_t)ng * sizeof *g);
        if (!g) {
            free(gids);
            errno = ENOMEM;
            return -1;
        }
        gids = g;
        int want = ng;
        if (getgrouplist(pw->pw_name, pw->pw_gid, gids, &want) >= 0) {
            ng = want;
            break;
        }
        if (want <= ng || want > 65536) {
            free(gids);
            errno = EOVERFLOW;
            return -1;
        }
        ng = want;
    }
    char **names = calloc((size_t)ng + 1, sizeof *names);
    if (!names) {
        free(gids);
        errno = ENOMEM;
        return -1;
    }
    size_t k = 0;
    for (int i = 0; i < ng; i++) {
        struct group grbuf, *gr = NULL;
        char grmem[16384];
        if (getgrgid_r(gids[i], &grbuf, grmem, sizeof grmem, &gr) != 0 || !gr)
            continue;
        if (!(names[k] = strdup(gr->gr_name))) {
            tessd_user_groups_free(names, k);
            free(gids);
            errno = ENOMEM;
            return -1;
        }
        k++;
    }
    free(gids);
    *out = names;
    *n = k;
    return 0;
}

void tessd_user_groups_free(char **groups, size_t n)
{
    if (!groups)
        return;
    for (size_t i = 0; i < n; i++)
        free(groups[i]);
    free(groups);
}
