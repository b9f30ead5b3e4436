/* jobsvc.c - a job's web services: the pure rules (see jobsvc.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <sys/un.h>

#include <nettle/hmac.h>

#include "daemon/jobsvc.h"
#include "libstore/store.h"

bool tsd_svc_port_browser_ok(unsigned port)
{
    /* The ports browsers refuse to connect to (Chromium's restricted list, which Firefox's
     * matches), in order. */
    static const unsigned bad[] = {
        1,    7,    9,    11,   13,   15,   17,   19,   20,   21,   22,   23,   25,   37,
        42,   43,   53,   69,   77,   79,   87,   95,   101,  102,  103,  104,  109,  110,
        111,  113,  115,  117,  119,  123,  135,  137,  139,  143,  161,  179,  389,  427,
        465,  512,  513,  514,  515,  526,  530,  531,  532,  540,  548,  554,  556,  563,
        587,  601,  636,  989,  990,  993,  995,  1719, 1720, 1723, 2049, 3659, 4045, 5060,
        5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6697, 10080};
    for (size_t i = 0; i < sizeof bad / sizeof *bad && bad[i] <= port; i++)
        if (bad[i] == port)
            return false;
    return true;
}

bool tsd_svc_name_valid(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 1 || n > TSD_SVC_NAME_MAX || name[0] < 'a' || name[0] > 'z' || name[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return false;
    }
    return true;
}

/* err filled with the text, errno EINVAL, NULL. */
#define BAD(...)                                                                                   \
    do {                                                                                           \
        tsl_errprintf(err, __VA_ARGS__);                                                           \
        errno = EINVAL;                                                                            \
        return NULL;                                                                               \
    } while (0)

char *tsd_svc_check(const json_t *v, tsl_error_t *err)
{
#define SHAPE "services must be an array of 1 to %d objects {\"name\", \"port\"}", TSD_SVC_MAX
    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > TSD_SVC_MAX)
        BAD(SHAPE);
    const char *names[TSD_SVC_MAX];
    json_int_t ports[TSD_SVC_MAX];
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(v, i);
        const json_t *name = json_object_get(o, "name"), *port = json_object_get(o, "port");
        if (!json_is_object(o) || json_object_size(o) != 2 || !name || !port)
            BAD(SHAPE);
        if (!json_is_string(name) || strlen(json_string_value(name)) != json_string_length(name) ||
            !tsd_svc_name_valid(json_string_value(name)))
            BAD("services: a name is 1 to %d of a-z, 0-9 and '-', starting with a letter, not "
                "ending with '-'",
                TSD_SVC_NAME_MAX);
        if (!json_is_integer(port) || json_integer_value(port) < 1 ||
            json_integer_value(port) > 65535)
            BAD("services: %s's port must be an integer 1..65535", json_string_value(name));
        names[i] = json_string_value(name);
        ports[i] = json_integer_value(port);
        for (size_t k = 0; k < i; k++) {
            if (strcmp(names[k], names[i]) == 0)
                BAD("services: the name %s is given twice", names[i]);
            if (ports[k] == ports[i])
                BAD("services: %s's port %lld is another service's too", names[i],
                    (long long)ports[i]);
        }
    }
#undef SHAPE
    char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!s) {
        errno = ENOMEM;
        tsl_errprintf(err, "out of memory");
        errno = ENOMEM;
    }
    return s;
}

int tsd_svc_sock(const char *data_dir, int64_t job, const char *name, char *buf, size_t len)
{
    if (!tsd_svc_name_valid(name)) {
        errno = EINVAL;
        return -1;
    }
    int n = snprintf(buf, len, "%s/" TSD_SVC_DIR "/j%lld-%s.sock", data_dir, (long long)job, name);
    if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* ---- the session cookie ------------------------------------------------------------------- */

/* The MAC of (job, name, user, expires) in hexadecimal (64 digits and a NUL) into hex. */
static void cookie_mac(const uint8_t key[TSD_SVC_COOKIE_KEY], int64_t job, const char *name,
                       const char *user, long long expires_s, char hex[2 * SHA256_DIGEST_SIZE + 1])
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "tessel-svc%c%lld%c%s%c%s%c%lld", 0, (long long)job, 0, name,
                     0, user, 0, expires_s);
    struct hmac_sha256_ctx c;
    uint8_t mac[SHA256_DIGEST_SIZE];
    hmac_sha256_set_key(&c, TSD_SVC_COOKIE_KEY, key);
    hmac_sha256_update(&c, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1, (uint8_t *)msg);
    hmac_sha256_digest(&c, SHA256_DIGEST_SIZE, mac);
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++) {
        hex[2 * i] = digits[mac[i] >> 4];
        hex[2 * i + 1] = digits[mac[i] & 15];
    }
    hex[2 * SHA256_DIGEST_SIZE] = '\0';
}

int tsd_svc_cookie_make(const uint8_t key[TSD_SVC_COOKIE_KEY], int64_t job, const char *name,
                        const char *user, long long expires_s, char out[TSD_SVC_COOKIE_MAX])
{
    if (!tsd_svc_name_valid(name) || !tstore_name_valid(user) || expires_s < 0) {
        errno = EINVAL;
        return -1;
    }
    char hex[2 * SHA256_DIGEST_SIZE + 1];
    cookie_mac(key, job, name, user, expires_s, hex);
    int n = snprintf(out, TSD_SVC_COOKIE_MAX, "%s:%lld:%s", user, expires_s, hex);
    if (n < 0 || n >= TSD_SVC_COOKIE_MAX) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

bool tsd_svc_cookie_check(const uint8_t key[TSD_SVC_COOKIE_KEY], int64_t job, const char *name,
                          const char *value, long long now_s, char *user, size_t user_len)
{
    if (!value || !tsd_svc_name_valid(name) || strlen(value) >= TSD_SVC_COOKIE_MAX)
        return false;
    const char *c1 = strchr(value, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2 || (size_t)(c1 - value) > TSTORE_NAME_MAX || (size_t)(c1 - value) >= user_len)
        return false;
    char u[TSTORE_NAME_MAX + 1];
    memcpy(u, value, (size_t)(c1 - value));
    u[c1 - value] = '\0';
    char *end;
    errno = 0;
    long long exp = strtoll(c1 + 1, &end, 10);
    if (end != c2 || c1[1] < '0' || c1[1] > '9' || errno || !tstore_name_valid(u))
        return false;
    char hex[2 * SHA256_DIGEST_SIZE + 1];
    cookie_mac(key, job, name, u, exp, hex);
    const char *got = c2 + 1;
    if (strlen(got) != 2 * SHA256_DIGEST_SIZE)
        return false;
    unsigned char d = 0;
    for (size_t i = 0; i < 2 * SHA256_DIGEST_SIZE; i++)
        d |= (unsigned char)(hex[i] ^ got[i]);
    if (d != 0 || exp <= now_s)
        return false;
    memcpy(user, u, strlen(u) + 1);
    return true;
}

/* ---- a service's own origin ---------------------------------------------------------------- */

static bool label_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

bool tsd_svc_domain_valid(const char *d)
{
    size_t n = d ? strlen(d) : 0;
    if (n < 1 || n > TSD_SVC_DOMAIN_MAX)
        return false;
    size_t label = 0;
    for (size_t i = 0; i <= n; i++) {
        char c = d[i];
        if (c == '.' || c == '\0') {
            if (label < 1 || label > 63 || d[i - 1] == '-')
                return false;
            label = 0;
            continue;
        }
        if (!label_char(c) || (label == 0 && c == '-'))
            return false;
        label++;
    }
    return true;
}

int tsd_svc_host_parse(const char *host, const char *domain, int64_t *job, char *name)
{
    if (!host || !domain || host[0] != 'j' || host[1] < '1' || host[1] > '9')
        return -1;
    const char *p = host + 1;
    int64_t id = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (digits >= 18)
            return -1;
        id = id * 10 + (*p - '0');
    }
    if (*p++ != '-')
        return -1;
    size_t nl = strcspn(p, ".");
    if (nl < 1 || nl > TSD_SVC_NAME_MAX || p[nl] != '.')
        return -1;
    char nm[TSD_SVC_NAME_MAX + 1];
    memcpy(nm, p, nl);
    nm[nl] = '\0';
    if (!tsd_svc_name_valid(nm))
        return -1;
    p += nl + 1;
    size_t dl = strlen(domain);
    if (dl == 0 || strncmp(p, domain, dl) != 0)
        return -1;
    p += dl;
    if (*p == ':') {
        size_t pl = strspn(p + 1, "0123456789");
        if (pl < 1 || pl > 5 || p[1 + pl] != '\0')
            return -1;
    } else if (*p != '\0') {
        return -1;
    }
    *job = id;
    memcpy(name, nm, nl + 1);
    return 0;
}

const char *tsd_svc_request_refused(const char *method, bool websocket, const char *fetch_site,
                                    const char *origin, const char *host)
{
    if (!websocket && method &&
        (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
         strcmp(method, "OPTIONS") == 0))
        return NULL;
    if (fetch_site && strcmp(fetch_site, "same-origin") != 0 && strcmp(fetch_site, "none") != 0)
        return "the request comes from another site or another service's page (Sec-Fetch-Site)";
    if (origin) {
        if (!host || strncmp(origin, "http://", 7) != 0 || strcmp(origin + 7, host) != 0)
            return "the request comes from a page of another origin (Origin)";
    }
    return NULL;
}

int tsd_svc_set_cookie_filter(const char *value, char *out, size_t len)
{
    const char *p = value ? value + strspn(value, " \t") : "";
    size_t nl = strcspn(p, "=;");
    while (nl > 0 && (p[nl - 1] == ' ' || p[nl - 1] == '\t'))
        nl--;
    if (!*p || (nl == strlen(TSD_SVC_COOKIE) && strncmp(p, TSD_SVC_COOKIE, nl) == 0))
        return 1;
    /* The cookie-pair, then each attribute but Domain, as they came. */
    size_t o = 0, first = strcspn(p, ";");
    if (first + 1 > len)
        return -1;
    memcpy(out, p, first);
    o = first;
    p += first;
    while (*p == ';') {
        p++;
        size_t al = strcspn(p, ";");
        const char *a = p + strspn(p, " \t");
        size_t an = strcspn(a, "=;");
        while (an > 0 && (a[an - 1] == ' ' || a[an - 1] == '\t'))
            an--;
        if (!(an == 6 && strncasecmp(a, "Domain", 6) == 0)) {
            if (o + 1 + al + 1 > len)
                return -1;
            out[o++] = ';';
            memcpy(out + o, p, al);
            o += al;
        }
        p += al;
    }
    out[o] = '\0';
    return 0;
}

/* ---- the last activity of the jobs' services ------------------------------------------------ */

const tsd_svc_act_t *tsd_svc_act_find(const tsd_svc_acts_t *a, int64_t job)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].job == job)
            return &a->v[i];
    return NULL;
}

int tsd_svc_act_touch(tsd_svc_acts_t *a, int64_t job, long long now_ms, int ws_delta)
{
    tsd_svc_act_t *e = (tsd_svc_act_t *)tsd_svc_act_find(a, job);
    if (!e) {
        if (a->n == a->cap) {
            size_t cap = a->cap ? 2 * a->cap : 64;
            tsd_svc_act_t *v = realloc(a->v, cap * sizeof *v);
            if (!v) {
                a->lost = true;
                errno = ENOMEM;
                return -1;
            }
            a->v = v;
            a->cap = cap;
        }
        e = &a->v[a->n++];
        *e = (tsd_svc_act_t){.job = job};
    }
    e->last_ms = now_ms;
    if (ws_delta > 0)
        e->open_ws++;
    else if (ws_delta < 0 && e->open_ws > 0)
        e->open_ws--;
    return 0;
}

void tsd_svc_act_prune(tsd_svc_acts_t *a, bool (*running)(void *ctx, int64_t job), void *ctx)
{
    for (size_t i = 0; i < a->n;) {
        if (running(ctx, a->v[i].job))
            i++;
        else
            a->v[i] = a->v[--a->n];
    }
}

bool tsd_svc_act_idle(const tsd_svc_acts_t *a, int64_t job, long long started_ms, long long now_ms,
                      long long idle_ms)
{
    const tsd_svc_act_t *e = tsd_svc_act_find(a, job);
    if (!e && a->lost)
        return false;
    long long last = started_ms;
    if (e) {
        if (e->open_ws > 0)
            return false;
        if (e->last_ms > last)
            last = e->last_ms;
    }
    return now_ms - last >= idle_ms;
}

void tsd_svc_act_free(tsd_svc_acts_t *a)
{
    free(a->v);
    *a = (tsd_svc_acts_t){0};
}
