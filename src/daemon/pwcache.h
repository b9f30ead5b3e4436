/* pwcache.h - tesseld's cache of account lookups (getpwnam_r, getpwuid_r) on the launch path.
 *
 * Every start looked the job's account up through NSS (and tesseld's own account when the job
 * runs as tesseld's user): with nss-systemd in nsswitch.conf a name that is not in /etc/passwd
 * costs a dozen path lookups under /etc, /run and /usr/lib/userdb, under tesseld's lock.  An
 * answer (found or not) is kept at most ttl_ms, as nscd and sssd keep theirs, and dropped at
 * once when the stamp of the account files changes (tessd_pw_files_stamp: /etc/passwd's
 * device, inode, size and change time: useradd, usermod, userdel, vipw all replace or rewrite
 * it), so that an account removed or changed in /etc/passwd is never used from the cache; an
 * account of another NSS source (LDAP, sssd) is seen within ttl_ms.  A lookup that fails with
 * an error (not "no such account") is not kept.
 *
 * Pure apart from the two functions it is given (the lookup and the stamp), so that it is
 * unit-tested with fakes and a fake clock (src/daemon/test/test_pwcache.c).  Thread-safe (its
 * own mutex): submissions check accounts on the API's threads, starts on the main thread.
 */
#ifndef TESSEL_DAEMON_PWCACHE_H
#define TESSEL_DAEMON_PWCACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* What tesseld needs of an account (longer fields do not fit: such an account is looked up
 * every time, never cut short). */
typedef struct {
    char name[256];
    uid_t uid;
    gid_t gid;
    char dir[1024];
    char shell[256];
} tessd_pw_t;

/* Look an account up by name (by_uid false) or by uid: 1 found (*out filled), 0 no such
 * account, -1 an error (errno). */
typedef int (*tessd_pw_lookup_fn)(bool by_uid, const char *name, uid_t uid, tessd_pw_t *out);
/* The stamp of the account files: equal stamps mean unchanged files.  0, or -1 (then nothing
 * is kept). */
typedef int (*tessd_pw_stamp_fn)(uint64_t stamp[4]);

#define TESSD_PWCACHE_SIZE   64
#define TESSD_PWCACHE_TTL_MS 5000

typedef struct {
    bool used, found, by_uid;
    uid_t key_uid;
    char key[256]; /* the name asked for (by name) */
    int64_t at_ms; /* when it was looked up */
    tessd_pw_t pw;
} tessd_pw_entry_t;

typedef struct {
    pthread_mutex_t lock;
    tessd_pw_lookup_fn lookup;
    tessd_pw_stamp_fn stamp_of;
    int64_t ttl_ms;
    bool have_stamp;
    uint64_t stamp[4];
    tessd_pw_entry_t e[TESSD_PWCACHE_SIZE];
    uint64_t hits, misses; /* for the tests and the figures */
} tessd_pwcache_t;

void tessd_pwcache_init(tessd_pwcache_t *c, tessd_pw_lookup_fn lookup, tessd_pw_stamp_fn stamp,
                        int64_t ttl_ms);
void tessd_pwcache_destroy(tessd_pwcache_t *c);
/* By name or by uid (as the lookup function), at now_ms (a monotonic clock): 1, 0 or -1. */
int tessd_pwcache_get(tessd_pwcache_t *c, bool by_uid, const char *name, uid_t uid, int64_t now_ms,
                      tessd_pw_t *out);

/* The real functions: getpwnam_r/getpwuid_r, and the stamp of /etc/passwd. */
int tessd_pw_nss_lookup(bool by_uid, const char *name, uid_t uid, tessd_pw_t *out);
int tessd_pw_files_stamp(uint64_t stamp[4]);

/* tesseld's own cache (the real functions, TESSD_PWCACHE_TTL_MS). */
int tessd_getpwnam(const char *name, tessd_pw_t *out);
int tessd_getpwuid(uid_t uid, tessd_pw_t *out);

#endif
