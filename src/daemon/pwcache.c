/* pwcache.c - tesseld's cache of account lookups (see pwcache.h). */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "daemon/pwcache.h"

void tessd_pwcache_init(tessd_pwcache_t *c, tessd_pw_lookup_fn lookup, tessd_pw_stamp_fn stamp,
                        int64_t ttl_ms)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    c->lookup = lookup;
    c->stamp_of = stamp;
    c->ttl_ms = ttl_ms;
}

void tessd_pwcache_destroy(tessd_pwcache_t *c)
{
    pthread_mutex_destroy(&c->lock);
}

static bool same_key(const tessd_pw_entry_t *e, bool by_uid, const char *name, uid_t uid)
{
    if (!e->used || e->by_uid != by_uid)
        return false;
    return by_uid ? e->key_uid == uid : strcmp(e->key, name) == 0;
}

int tessd_pwcache_get(tessd_pwcache_t *c, bool by_uid, const char *name, uid_t uid, int64_t now_ms,
                      tessd_pw_t *out)
{
    if (!by_uid && (!name || strlen(name) >= sizeof c->e[0].key)) {
        /* Not kept (the key would not fit): asked every time. */
        return c->lookup(by_uid, name, uid, out);
    }
    pthread_mutex_lock(&c->lock);
    uint64_t stamp[4];
    bool stamped = c->stamp_of(stamp) == 0;
    if (!stamped || !c->have_stamp || memcmp(stamp, c->stamp, sizeof stamp) != 0) {
        /* The account files changed (or cannot be looked at): nothing kept holds. */
        for (size_t i = 0; i < TESSD_PWCACHE_SIZE; i++)
            c->e[i].used = false;
        c->have_stamp = stamped;
        if (stamped)
            memcpy(c->stamp, stamp, sizeof stamp);
    }
    tessd_pw_entry_t *slot = NULL, *oldest = NULL;
    for (size_t i = 0; i < TESSD_PWCACHE_SIZE; i++) {
        tessd_pw_entry_t *e = &c->e[i];
        if (e->used && now_ms - e->at_ms >= c->ttl_ms)
            e->used = false; /* expired */
        if (same_key(e, by_uid, name, uid)) {
            c->hits++;
            int rc = e->found ? 1 : 0;
            if (rc)
                *out = e->pw;
            pthread_mutex_unlock(&c->lock);
            return rc;
        }
        if (!e->used && !slot)
            slot = e;
        if (e->used && (!oldest || e->at_ms < oldest->at_ms))
            oldest = e;
    }
    c->misses++;
    tessd_pw_t pw;
    memset(&pw, 0, sizeof pw);
    int rc = c->lookup(by_uid, name, uid, &pw);
    int saved = errno;
    if (rc >= 0 && c->have_stamp) {
        if (!slot)
            slot = oldest;
        slot->used = true;
        slot->found = rc == 1;
        slot->by_uid = by_uid;
        slot->key_uid = uid;
        slot->at_ms = now_ms;
        slot->pw = pw;
        snprintf(slot->key, sizeof slot->key, "%s", by_uid ? "" : name);
    }
    pthread_mutex_unlock(&c->lock);
    if (rc == 1)
        *out = pw;
    errno = saved;
    return rc;
}

static int copy_field(char *dst, size_t len, const char *src)
{
    if (!src)
        src = "";
    if (strlen(src) >= len)
        return -1;
    memcpy(dst, src, strlen(src) + 1);
    return 0;
}

int tessd_pw_nss_lookup(bool by_uid, const char *name, uid_t uid, tessd_pw_t *out)
{
    struct passwd pwbuf, *pw = NULL;
    char mem[4096];
    int rc = by_uid ? getpwuid_r(uid, &pwbuf, mem, sizeof mem, &pw)
                    : getpwnam_r(name, &pwbuf, mem, sizeof mem, &pw);
    if (rc != 0) {
        /* "Not found" is not an error whatever the source says (getpwnam_r(3)). */
        if (rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM)
            return 0;
        errno = rc;
        return -1;
    }
    if (!pw)
        return 0;
    if (copy_field(out->name, sizeof out->name, pw->pw_name) < 0 ||
        copy_field(out->dir, sizeof out->dir, pw->pw_dir) < 0 ||
        copy_field(out->shell, sizeof out->shell, pw->pw_shell) < 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    out->uid = pw->pw_uid;
    out->gid = pw->pw_gid;
    return 1;
}

int tessd_pw_files_stamp(uint64_t stamp[4])
{
    struct stat st;
    if (stat("/etc/passwd", &st) < 0)
        return -1;
    /* A change of content changes the change time (and a replacement the inode too). */
    stamp[0] = (uint64_t)st.st_dev;
    stamp[1] = (uint64_t)st.st_ino;
    stamp[2] = (uint64_t)st.st_size;
    stamp[3] = (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
    return 0;
}

static pthread_once_t own_once = PTHREAD_ONCE_INIT;
static tessd_pwcache_t own;

static void own_init(void)
{
    tessd_pwcache_init(&own, tessd_pw_nss_lookup, tessd_pw_files_stamp, TESSD_PWCACHE_TTL_MS);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tessd_getpwnam(const char *name, tessd_pw_t *out)
{
    pthread_once(&own_once, own_init);
    return tessd_pwcache_get(&own, false, name, 0, mono_ms(), out);
}

int tessd_getpwuid(uid_t uid, tessd_pw_t *out)
{
    pthread_once(&own_once, own_init);
    return tessd_pwcache_get(&own, true, NULL, uid, mono_ms(), out);
}
