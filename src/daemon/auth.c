/* auth.c - who calls: API tokens (creation, hashing with SHA-256 from nettle, bearer
 * authentication), the local socket's peer credentials, and the first start's admin token.
 *
 * A token is "tsl_" + 64 hex digits from getrandom (256 bits).  The store keeps only its
 * SHA-256, so a copy of the database does not let anyone in.  No salt is needed: the secret
 * itself is random and long, unlike a password.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "daemon/daemon.h"
#include "daemon/localid.h"

void tessd_token_hash(const char *token, unsigned char hash[32])
{
    struct sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, strlen(token), (const uint8_t *)token);
    sha256_digest(&c, SHA256_DIGEST_SIZE, hash);
}

int tessd_token_new(char *out, unsigned char hash[32])
{
    unsigned char raw[32];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    memcpy(out, TESSD_TOKEN_PREFIX, 4);
    for (size_t i = 0; i < sizeof raw; i++) {
        out[4 + 2 * i] = hex[raw[i] >> 4];
        out[5 + 2 * i] = hex[raw[i] & 15];
    }
    out[TESSD_TOKEN_LEN] = '\0';
    tessd_token_hash(out, hash);
    return 0;
}

/* The bearer token's caller. */
static int auth_token(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, tessd_caller_t *who)
{
    const char *h = thttp_header(req, "Authorization");
    if (!h) {
        thttp_error(rep, 401, "unauthorized", NULL,
                    "missing Authorization header (expected: Bearer TOKEN)");
        return -1;
    }
    if (strncasecmp(h, "Bearer ", 7) != 0) {
        thttp_error(rep, 401, "unauthorized", NULL,
                    "malformed Authorization header (expected: Bearer TOKEN)");
        return -1;
    }
    const char *tok = h + 7;
    while (*tok == ' ')
        tok++;
    if (strlen(tok) != TESSD_TOKEN_LEN || strncmp(tok, TESSD_TOKEN_PREFIX, 4) != 0) {
        thttp_error(rep, 401, "unauthorized", NULL, "malformed token");
        return -1;
    }
    unsigned char hash[32];
    tessd_token_hash(tok, hash);
    tstore_token_t t;
    tstore_user_t u;
    tsl_error_t err;
    if (tstore_token_auth(d->store, hash, &t, &u, &err) < 0) {
        if (errno == ENOENT)
            thttp_error(rep, 401, "unauthorized", NULL, "unknown or revoked token");
        else
            thttp_error(rep, 500, "internal", NULL, "%s", err.text);
        return -1;
    }
    snprintf(who->user, sizeof who->user, "%s", u.name);
    who->admin = strcmp(u.role, "admin") == 0;
    who->token_id = t.id;
    return 0;
}

/* The Tessel user of a local uid (see daemon.h).  Lock held. */
static int auth_local(tessd_t *d, uid_t uid, thttp_reply_t *rep, tessd_caller_t *who)
{
    tsl_error_t err;
    tstore_user_t u;
    who->local = true;
    who->uid = uid;
    struct passwd pwbuf, *pw = NULL;
    char pwmem[4096], why[256];
    if (uid != 0 && uid != geteuid() && (getpwuid_r(uid, &pwbuf, pwmem, sizeof pwmem, &pw) != 0))
        pw = NULL;
    int kind = tessd_local_name(uid, geteuid(), pw ? pw->pw_name : NULL, who->user,
                                sizeof who->user, why, sizeof why);
    if (kind < 0) {
        thttp_error(rep, 403, "forbidden", NULL, "%s", why);
        return -1;
    }
    if (kind == 1) {
        who->admin = true;
        if (tstore_user_get(d->store, "admin", &u, &err) == 0)
            return 0;
        if (errno != ENOENT ||
            tstore_user_add(d->store, "admin", "admin", tessd_now_ms(), &err) < 0) {
            thttp_error(rep, 500, "internal", NULL, "%s", err.text);
            return -1;
        }
        tessd_log("created user 'admin' (role admin) for uid %u on the local socket",
                  (unsigned)uid);
        return 0;
    }
    if (tstore_user_get(d->store, who->user, &u, &err) == 0) {
        who->admin = strcmp(u.role, "admin") == 0;
        return 0;
    }
    if (errno != ENOENT) {
        thttp_error(rep, 500, "internal", NULL, "%s", err.text);
        return -1;
    }
    if (!d->local_users_create) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "no Tessel user '%s': ask an admin to add it (tessel users add %s)", who->user,
                    who->user);
        return -1;
    }
    if (tstore_user_add(d->store, who->user, "user", tessd_now_ms(), &err) < 0) {
        thttp_error(rep, 500, "internal", NULL, "%s", err.text);
        return -1;
    }
    tessd_log("created user '%s' (role user) for uid %u at its first call on the local socket",
              who->user, (unsigned)uid);
    who->admin = false;
    return 0;
}

int tessd_auth(tessd_t *d, thttp_req_t *req, thttp_reply_t *rep, tessd_caller_t *who)
{
    memset(who, 0, sizeof *who);
    uid_t uid;
    int pc = thttp_peer_cred(req, &uid, NULL, NULL);
    if (pc < 0) {
        thttp_error(rep, 500, "internal", NULL, "peer credentials: %s", strerror(errno));
        return -1;
    }
    if (pc > 0)
        return auth_token(d, req, rep, who);
    /* The local socket: the kernel's word is the identity.  No header can change it; a token
     * sent along is checked and must be the same user's (else the caller would not act as
     * whom they think: refused rather than ignored). */
    if (auth_local(d, uid, rep, who) < 0)
        return -1;
    if (!thttp_header(req, "Authorization"))
        return 0;
    tessd_caller_t tok;
    memset(&tok, 0, sizeof tok);
    if (auth_token(d, req, rep, &tok) < 0)
        return -1;
    if (strcmp(tok.user, who->user) != 0) {
        thttp_error(rep, 403, "forbidden", NULL,
                    "the token belongs to user '%s', but on the local socket you are '%s' "
                    "(uid %u): a token cannot change who you are here; use tesseld's TCP address",
                    tok.user, who->user, (unsigned)uid);
        return -1;
    }
    who->token_id = tok.token_id;
    return 0;
}

int tessd_bootstrap_admin(tessd_t *d, tsl_error_t *err)
{
    int64_t n;
    if (tstore_user_count(d->store, &n, err) < 0)
        return -1;
    if (n > 0)
        return 0;
    char token[TESSD_TOKEN_LEN + 1];
    unsigned char hash[32];
    if (tessd_token_new(token, hash) < 0)
        return tsl_errprintf(err, "getrandom: %s", strerror(errno));
    char path[PATH_MAX + 32], tmp[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/admin.token", d->data_dir);
    snprintf(tmp, sizeof tmp, "%s/admin.token.tmp", d->data_dir);
    /* The file first, then the store: if we die in between, the next start tries again. */
    /* A leftover temporary (a start that died here) is removed; the new one is created with
     * O_EXCL (never an existing file, never through a symlink) and mode 0600 from the start,
     * so the secret is never readable by anyone else, not even for a moment. */
    if (unlink(tmp) < 0 && errno != ENOENT)
        return tsl_errprintf(err, "%s: %s", tmp, strerror(errno));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return tsl_errprintf(err, "%s: %s", tmp, strerror(errno));
    char line[TESSD_TOKEN_LEN + 2];
    snprintf(line, sizeof line, "%s\n", token);
    ssize_t w = write(fd, line, strlen(line));
    if (w != (ssize_t)strlen(line) || fsync(fd) < 0 || close(fd) < 0) {
        int saved = errno;
        unlink(tmp);
        errno = saved;
        return tsl_errprintf(err, "%s: %s", tmp, strerror(saved));
    }
    int64_t now = tessd_now_ms();
    if (tstore_begin(d->store, err) < 0)
        return -1;
    if (tstore_user_add(d->store, "admin", "admin", now, err) < 0 ||
        tstore_token_add(d->store, "admin", "admin.token", hash, now, err) < 0) {
        tstore_rollback(d->store);
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) < 0) {
        tstore_rollback(d->store);
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    }
    if (tstore_commit(d->store, err) < 0)
        return -1;
    fprintf(stderr, "tesseld: created user 'admin'; its API token is in %s\n", path);
    return 0;
}
