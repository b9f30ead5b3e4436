/* test_auth.c - who calls (auth.c), without HTTP: tokens (format, randomness, SHA-256), bearer
 * authentication against a real store (missing, malformed, unknown, revoked, a user's, an
 * admin's), the local socket (root is the admin; an account's own user, created or refused
 * with --local-users; a token sent along must be the same user's) and the first start's admin
 * token (file mode 0600 and content, the store's user and token, once only, a leftover
 * temporary removed).  The request side of libhttp (header, peer credentials, error answer) is
 * replaced by the doubles below, so each case sets exactly what the kernel and client gave. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/daemon.h"
#include "daemon/test/tmpdir.h"

/* --- doubles of libhttp's request side and of main.c's clock and log ---------------------- */

static const char *g_header; /* the Authorization header, NULL when absent */
static int g_peer;           /* thttp_peer_cred's answer: 1 TCP, 0 local socket, -1 error */
static uid_t g_uid;          /* with g_peer 0: the peer's uid */
static char g_msg[512];      /* the last error answer's message */
static char g_code[32];      /* and its code */
static int g_logged;         /* tessd_log calls */

const char *thttp_header(thttp_req_t *req, const char *name)
{
    return strcasecmp(name, "Authorization") == 0 ? g_header : NULL;
}

int thttp_peer_cred(thttp_req_t *req, uid_t *uid, gid_t *gid, pid_t *pid)
{
    if (g_peer < 0) {
        errno = EIO;
        return -1;
    }
    if (g_peer == 0)
        *uid = g_uid;
    return g_peer;
}

void thttp_error(thttp_reply_t *rep, int status, const char *code, const char *field,
                 const char *fmt, ...)
{
    rep->status = status;
    snprintf(g_code, sizeof g_code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    va_end(ap);
}

int64_t tessd_now_ms(void)
{
    return 1000;
}

void tessd_log(const char *fmt, ...)
{
    g_logged++;
}

/* --- fixture: a daemon with a fresh store in a temporary data directory ------------------ */

typedef struct {
    tessd_t d;
    char dir[64];
} fix_t;

static int setup(void **state)
{
    fix_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    if (test_tmpdir(f->dir, sizeof f->dir, "auth") < 0)
        return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/tessel.db", f->dir);
    tsl_error_t err;
    f->d.store = tstore_open(path, &err);
    if (!f->d.store)
        return -1;
    snprintf(f->d.data_dir, sizeof f->d.data_dir, "%s", f->dir);
    g_header = NULL;
    g_peer = 1;
    g_uid = 0;
    g_msg[0] = g_code[0] = '\0';
    g_logged = 0;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fix_t *f = *state;
    tstore_close(f->d.store);
    int rc = test_tmpdir_remove(f->dir);
    free(f);
    return rc;
}

/* Calls tessd_auth; returns the answer's status (0 when it let the caller through). */
static int auth(fix_t *f, tessd_caller_t *who)
{
    thttp_req_t req;
    memset(&req, 0, sizeof req);
    thttp_reply_t rep;
    memset(&rep, 0, sizeof rep);
    g_msg[0] = g_code[0] = '\0';
    int rc = tessd_auth(&f->d, &req, &rep, who);
    if (rc == 0) {
        assert_int_equal(rep.status, 0); /* no error answer written */
        return 0;
    }
    assert_int_equal(rc, -1);
    assert_true(rep.status >= 400);
    return rep.status;
}

/* A user with a token; the token's text into tok, its id returned. */
static int64_t user_with_token(fix_t *f, const char *user, const char *role, char *tok)
{
    unsigned char hash[32];
    assert_int_equal(tstore_user_add(f->d.store, user, role, 1, NULL), 0);
    assert_int_equal(tessd_token_new(tok, hash), 0);
    int64_t id = tstore_token_add(f->d.store, user, "t", hash, 1, NULL);
    assert_true(id > 0);
    return id;
}

/* --- tokens ------------------------------------------------------------------------------ */

static void test_token_hash(void **state)
{
    /* FIPS 180-2's example: SHA-256("abc"). */
    static const unsigned char want[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
                                           0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
                                           0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
                                           0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    unsigned char h[32];
    tessd_token_hash("abc", h);
    assert_memory_equal(h, want, 32);
}

static void test_token_new(void **state)
{
    char a[TESSD_TOKEN_LEN + 1], b[TESSD_TOKEN_LEN + 1];
    unsigned char ha[32], hb[32], check[32];
    assert_int_equal(tessd_token_new(a, ha), 0);
    assert_int_equal(tessd_token_new(b, hb), 0);
    assert_int_equal(strlen(a), TESSD_TOKEN_LEN);
    assert_memory_equal(a, TESSD_TOKEN_PREFIX, 4);
    for (size_t i = 4; i < TESSD_TOKEN_LEN; i++)
        assert_non_null(strchr("0123456789abcdef", a[i]));
    tessd_token_hash(a, check);
    assert_memory_equal(ha, check, 32); /* the hash given back is the token's */
    assert_string_not_equal(a, b);      /* 256 random bits: never the same twice */
    assert_memory_not_equal(ha, hb, 32);
}

/* --- bearer tokens (TCP) ----------------------------------------------------------------- */

static void test_bearer(void **state)
{
    fix_t *f = *state;
    tessd_caller_t who;
    char tok[TESSD_TOKEN_LEN + 1], adm[TESSD_TOKEN_LEN + 1], hdr[128];
    int64_t id = user_with_token(f, "alice", "user", tok);
    int64_t aid = user_with_token(f, "root2", "admin", adm);

    g_header = NULL;
    assert_int_equal(auth(f, &who), 401);
    assert_string_equal(g_msg, "missing Authorization header (expected: Bearer TOKEN)");
    g_header = "Basic YWxpY2U6eA==";
    assert_int_equal(auth(f, &who), 401);
    assert_string_equal(g_msg, "malformed Authorization header (expected: Bearer TOKEN)");
    g_header = "Bearer tsl_0123";
    assert_int_equal(auth(f, &who), 401);
    assert_string_equal(g_msg, "malformed token");
    /* The right length without the prefix. */
    snprintf(hdr, sizeof hdr, "Bearer xyz_%s", tok + 4);
    g_header = hdr;
    assert_int_equal(auth(f, &who), 401);
    assert_string_equal(g_msg, "malformed token");
    /* Well formed, unknown. */
    char other[TESSD_TOKEN_LEN + 1];
    unsigned char h[32];
    assert_int_equal(tessd_token_new(other, h), 0);
    snprintf(hdr, sizeof hdr, "Bearer %s", other);
    assert_int_equal(auth(f, &who), 401);
    assert_string_equal(g_code, "unauthorized");
    assert_string_equal(g_msg, "unknown or revoked token");

    /* alice's token, the scheme in any case and spaces before the token. */
    snprintf(hdr, sizeof hdr, "bEaReR   %s", tok);
    assert_int_equal(auth(f, &who), 0);
    assert_string_equal(who.user, "alice");
    assert_false(who.admin);
    assert_int_equal(who.token_id, id);
    assert_false(who.local);
    /* An admin's. */
    snprintf(hdr, sizeof hdr, "Bearer %s", adm);
    assert_int_equal(auth(f, &who), 0);
    assert_string_equal(who.user, "root2");
    assert_true(who.admin);
    assert_int_equal(who.token_id, aid);
    /* Revoked: refused like an unknown one. */
    assert_int_equal(tstore_token_del(f->d.store, id, NULL), 0);
    snprintf(hdr, sizeof hdr, "Bearer %s", tok);
    assert_int_equal(auth(f, &who), 401);
    assert_string_equal(g_msg, "unknown or revoked token");
}

static void test_peer_error(void **state)
{
    fix_t *f = *state;
    tessd_caller_t who;
    g_peer = -1;
    assert_int_equal(auth(f, &who), 500);
    assert_string_equal(g_msg, "peer credentials: Input/output error");
}

/* --- the local socket -------------------------------------------------------------------- */

static void test_local_root(void **state)
{
    fix_t *f = *state;
    tessd_caller_t who;
    tstore_user_t u;
    g_peer = 0;
    g_uid = 0;
    assert_int_equal(tstore_user_get(f->d.store, "admin", &u, NULL), -1);
    assert_int_equal(auth(f, &who), 0);
    assert_string_equal(who.user, "admin");
    assert_true(who.admin && who.local);
    assert_int_equal(who.uid, 0);
    assert_int_equal(who.token_id, 0);
    /* The user 'admin' was created, once, and said so. */
    assert_int_equal(tstore_user_get(f->d.store, "admin", &u, NULL), 0);
    assert_string_equal(u.role, "admin");
    assert_int_equal(g_logged, 1);
    assert_int_equal(auth(f, &who), 0);
    assert_int_equal(g_logged, 1);
}

static void test_local_user(void **state)
{
    fix_t *f = *state;
    tessd_caller_t who;
    struct passwd *pw = getpwnam("nobody");
    assert_non_null(pw); /* Debian has it */
    g_peer = 0;
    g_uid = pw->pw_uid;
    /* Without --local-users create: an account with no Tessel user is refused, and told how. */
    f->d.local_users_create = false;
    assert_int_equal(auth(f, &who), 403);
    assert_string_equal(
        g_msg, "no Tessel user 'nobody': ask an admin to add it (tessel users add nobody)");
    tstore_user_t u;
    assert_int_equal(tstore_user_get(f->d.store, "nobody", &u, NULL), -1);
    /* With it: created as a user at its first call. */
    f->d.local_users_create = true;
    assert_int_equal(auth(f, &who), 0);
    assert_string_equal(who.user, "nobody");
    assert_false(who.admin);
    assert_true(who.local);
    assert_int_equal(who.uid, pw->pw_uid);
    assert_int_equal(tstore_user_get(f->d.store, "nobody", &u, NULL), 0);
    assert_string_equal(u.role, "user");
    /* A uid with no account: refused with the reason (localid.c). */
    g_uid = 4242424;
    assert_int_equal(auth(f, &who), 403);
    assert_true(strlen(g_msg) > 0);
}

static void test_local_with_token(void **state)
{
    fix_t *f = *state;
    tessd_caller_t who;
    char tok[TESSD_TOKEN_LEN + 1], hdr[128];
    struct passwd *pw = getpwnam("nobody");
    assert_non_null(pw);
    int64_t id = user_with_token(f, "nobody", "user", tok);
    char alice[TESSD_TOKEN_LEN + 1];
    user_with_token(f, "alice", "user", alice);
    g_peer = 0;
    g_uid = pw->pw_uid;
    /* The same user's token: accepted, its id kept. */
    snprintf(hdr, sizeof hdr, "Bearer %s", tok);
    g_header = hdr;
    assert_int_equal(auth(f, &who), 0);
    assert_string_equal(who.user, "nobody");
    assert_int_equal(who.token_id, id);
    /* Another user's: refused, a token cannot change who one is on the socket. */
    snprintf(hdr, sizeof hdr, "Bearer %s", alice);
    assert_int_equal(auth(f, &who), 403);
    assert_non_null(strstr(g_msg, "the token belongs to user 'alice', but on the local socket "
                                  "you are 'nobody'"));
    /* A bad one: refused as over TCP. */
    g_header = "Bearer nope";
    assert_int_equal(auth(f, &who), 401);
    assert_string_equal(g_msg, "malformed token");
}

/* --- the first start's admin token ------------------------------------------------------- */

static void test_bootstrap(void **state)
{
    fix_t *f = *state;
    char path[128], tmp[128], line[TESSD_TOKEN_LEN + 8];
    snprintf(path, sizeof path, "%s/admin.token", f->dir);
    snprintf(tmp, sizeof tmp, "%s/admin.token.tmp", f->dir);
    /* A leftover temporary from a start that died is replaced, never followed or reused. */
    FILE *fp = fopen(tmp, "w");
    assert_non_null(fp);
    fputs("stale\n", fp);
    fclose(fp);

    tsl_error_t err;
    assert_int_equal(tessd_bootstrap_admin(&f->d, &err), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(access(tmp, F_OK), -1);
    fp = fopen(path, "r");
    assert_non_null(fp);
    assert_non_null(fgets(line, sizeof line, fp));
    fclose(fp);
    assert_int_equal(strlen(line), TESSD_TOKEN_LEN + 1);
    assert_int_equal(line[TESSD_TOKEN_LEN], '\n');
    line[TESSD_TOKEN_LEN] = '\0';

    /* The token in the file is the admin's. */
    tessd_caller_t who;
    char hdr[128];
    snprintf(hdr, sizeof hdr, "Bearer %s", line);
    g_header = hdr;
    assert_int_equal(auth(f, &who), 0);
    assert_string_equal(who.user, "admin");
    assert_true(who.admin);

    /* Once only: with users in the store, nothing is written again. */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(tessd_bootstrap_admin(&f->d, &err), 0);
    assert_int_equal(access(path, F_OK), -1);
}

static void test_bootstrap_unwritable(void **state)
{
    fix_t *f = *state;
    /* A data directory it cannot write into: an error naming the file, and no user. */
    snprintf(f->d.data_dir, sizeof f->d.data_dir, "%s/no/such/dir", f->dir);
    tsl_error_t err;
    assert_int_equal(tessd_bootstrap_admin(&f->d, &err), -1);
    char want[160];
    snprintf(want, sizeof want, "%s/no/such/dir/admin.token.tmp: No such file or directory",
             f->dir);
    assert_string_equal(err.text, want);
    int64_t n = -1;
    assert_int_equal(tstore_user_count(f->d.store, &n, NULL), 0);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_hash),
        cmocka_unit_test(test_token_new),
        cmocka_unit_test_setup_teardown(test_bearer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peer_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_local_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_local_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_local_with_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bootstrap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bootstrap_unwritable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
