/* test_folders.c - virtual folders in tesseld (folders.h, folderfs.h): the rights every role
 * and share gives, the ACL text of each kind of object, and the directories on disk: the
 * folder root's checks, a folder made with its ACLs, ACLs rewritten inside without following
 * a link, touching a hard-linked file or leaving the folder, the usage walk, and a deletion
 * that removes links, not what they point at.  The disk cases need root (ACLs naming other
 * uids, a root-owned folder root). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/acl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <acl/libacl.h> /* acl_to_any_text */
#include <cmocka.h>

#include "daemon/folderfs.h"
#include "daemon/folders.h"
#include "daemon/test/tmpdir.h"

static void test_rights(void **state)
{
    /* The folder's own project: owner manage, member rw, viewer ro, none nothing. */
    assert_int_equal(tfld_of_project_role(TSTORE_ROLE_OWNER), TFLD_MANAGE);
    assert_int_equal(tfld_of_project_role(TSTORE_ROLE_MEMBER), TFLD_RW);
    assert_int_equal(tfld_of_project_role(TSTORE_ROLE_VIEWER), TFLD_RO);
    assert_int_equal(tfld_of_project_role(TSTORE_ROLE_NONE), TFLD_NONE);
    /* A share: a user's as shared; a project's viewers ro whatever it says. */
    assert_int_equal(tfld_of_share(true, TSTORE_ROLE_MEMBER), TFLD_RW);
    assert_int_equal(tfld_of_share(false, TSTORE_ROLE_MEMBER), TFLD_RO);
    assert_int_equal(tfld_of_share(true, TSTORE_ROLE_OWNER), TFLD_RW);
    assert_int_equal(tfld_of_share(true, TSTORE_ROLE_VIEWER), TFLD_RO);
    assert_int_equal(tfld_of_share(false, TSTORE_ROLE_VIEWER), TFLD_RO);
    assert_int_equal(tfld_of_share(true, TSTORE_ROLE_NONE), TFLD_NONE);
    assert_int_equal(tfld_max(TFLD_RO, TFLD_RW), TFLD_RW);
    assert_int_equal(tfld_max(TFLD_MANAGE, TFLD_NONE), TFLD_MANAGE);
    assert_string_equal(tfld_access_name(TFLD_RO), "ro");
    assert_string_equal(tfld_access_name(TFLD_MANAGE), "manage");
    assert_string_equal(tfld_access_name((tfld_access_t)9), "none");
}

static void test_acl_text(void **state)
{
    tfld_acl_entry_t e[3];
    size_t n = 0;
    assert_int_equal(tfld_acl_add(e, &n, 3, 1001, false), 0);
    assert_int_equal(tfld_acl_add(e, &n, 3, 1002, true), 0);
    assert_int_equal(tfld_acl_add(e, &n, 3, 1001, true), 0); /* merged: rw wins */
    assert_int_equal(tfld_acl_add(e, &n, 3, 1001, false), 0);
    assert_int_equal(n, 2);
    assert_true(e[0].rw);
    assert_int_equal(tfld_acl_add(e, &n, 3, 1003, false), 0);
    assert_int_equal(tfld_acl_add(e, &n, 3, 1004, false), -1);
    assert_int_equal(errno, E2BIG);
    char buf[256];
    assert_int_equal(tfld_acl_text(e, 3, TFLD_ACL_TOP, 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "u::rwx,g::---,o::---,u:1001:rwx,u:1002:rwx,u:1003:r-x,m::rwx");
    assert_int_equal(tfld_acl_text(e, 3, TFLD_ACL_DIR, 040750, buf, sizeof buf), 0);
    assert_string_equal(buf, "u::rwx,g::---,o::---,u:1001:rwx,u:1002:rwx,u:1003:r-x,m::rwx");
    assert_int_equal(tfld_acl_text(e, 3, TFLD_ACL_FILE, 0100640, buf, sizeof buf), 0);
    assert_string_equal(buf, "u::rw-,g::---,o::---,u:1001:rw-,u:1002:rw-,u:1003:r--,m::rw-");
    assert_int_equal(tfld_acl_text(e + 2, 1, TFLD_ACL_FILE, 0100755, buf, sizeof buf), 0);
    assert_string_equal(buf, "u::rwx,g::---,o::---,u:1003:r-x,m::r-x");
    assert_int_equal(tfld_acl_text(NULL, 0, TFLD_ACL_TOP, 0, buf, sizeof buf), 0);
    assert_string_equal(buf, "u::rwx,g::---,o::---,m::---");
    assert_int_equal(tfld_acl_text(e, 3, TFLD_ACL_TOP, 0, buf, 20), -1);
    assert_int_equal(errno, ENAMETOOLONG);
}

/* The ACL of path (access or default) in short text form with numeric ids, into buf. */
static void acl_of(const char *path, acl_type_t type, char *buf, size_t len)
{
    acl_t a = acl_get_file(path, type);
    assert_non_null(a);
    char *t = acl_to_any_text(a, NULL, ',', TEXT_ABBREVIATE | TEXT_NUMERIC_IDS);
    snprintf(buf, len, "%s", t);
    acl_free(t);
    acl_free(a);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_disk(void **state)
{
    if (geteuid() != 0)
        fail_msg("the disk cases need root (a root-owned folder root, ACLs naming other uids)");
    char dir[64], root[96], p[256], q[256], text[512];
    tsl_error_t err;
    assert_int_equal(test_tmpdir(dir, sizeof dir, "folders"), 0);

    /* The root: made 0711; refused when others may write or read it, or when a link. */
    snprintf(root, sizeof root, "%s/root", dir);
    int rootfd = tfld_root_open(root, &err);
    assert_true(rootfd >= 0);
    struct stat st;
    assert_int_equal(stat(root, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0711);
    snprintf(p, sizeof p, "%s/open", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(tfld_root_open(p, &err), -1);
    assert_int_equal(errno, EPERM);
    assert_non_null(strstr(err.text, "not readable by others"));
    snprintf(q, sizeof q, "%s/link", dir);
    assert_int_equal(symlink(root, q), 0);
    assert_int_equal(tfld_root_open(q, &err), -1);
    assert_int_equal(tfld_root_open("relative", &err), -1);
    assert_int_equal(errno, EINVAL);

    /* A folder: root's, with the entries as its access and default ACLs. */
    tfld_acl_entry_t e[2] = {{.uid = 60001, .rw = true}, {.uid = 60002, .rw = false}};
    assert_int_equal(tfld_dir_make(rootfd, "data", e, 2, &err), 0);
    snprintf(p, sizeof p, "%s/data", root);
    acl_of(p, ACL_TYPE_ACCESS, text, sizeof text);
    assert_string_equal(text, "u::rwx,u:60001:rwx,u:60002:r-x,g::---,m::rwx,o::---");
    acl_of(p, ACL_TYPE_DEFAULT, text, sizeof text);
    assert_string_equal(text, "u::rwx,u:60001:rwx,u:60002:r-x,g::---,m::rwx,o::---");
    assert_int_equal(tfld_dir_make(rootfd, "data", e, 2, &err), -1);
    assert_int_equal(errno, EEXIST);

    /* Inside: a file and a subdirectory made as a user would, a link out of the folder, a
     * hard link to a file outside it.  A rewrite with the second entry made rw: the file and
     * the subdirectory get it; the link's target, the hard-linked file are not touched. */
    snprintf(p, sizeof p, "%s/data/sub", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/data/sub/f", root);
    write_file(p, "12345");
    snprintf(q, sizeof q, "%s/outside", dir);
    write_file(q, "secret");
    assert_int_equal(chmod(q, 0600), 0);
    snprintf(p, sizeof p, "%s/data/escape", root);
    assert_int_equal(symlink(q, p), 0);
    snprintf(p, sizeof p, "%s/data/hard", root);
    assert_int_equal(link(q, p), 0);
    e[1].rw = true;
    size_t done = 0;
    assert_int_equal(tfld_dir_apply(rootfd, "data", e, 2, 100, &done, &err), 0);
    assert_int_equal(done, 5); /* data, sub, f, escape, hard (counted; the last two untouched) */
    snprintf(p, sizeof p, "%s/data/sub", root);
    acl_of(p, ACL_TYPE_DEFAULT, text, sizeof text);
    assert_string_equal(text, "u::rwx,u:60001:rwx,u:60002:rwx,g::---,m::rwx,o::---");
    snprintf(p, sizeof p, "%s/data/sub/f", root);
    acl_of(p, ACL_TYPE_ACCESS, text, sizeof text);
    assert_string_equal(text, "u::rw-,u:60001:rw-,u:60002:rw-,g::---,m::rw-,o::---");
    acl_of(q, ACL_TYPE_ACCESS, text, sizeof text);
    assert_string_equal(text, "u::rw-,g::---,o::---"); /* the file outside: as it was */
    /* Stopped at max: the gate is written all the same. */
    e[1].rw = false;
    assert_int_equal(tfld_dir_apply(rootfd, "data", e, 2, 1, &done, &err), 1);
    snprintf(p, sizeof p, "%s/data", root);
    acl_of(p, ACL_TYPE_ACCESS, text, sizeof text);
    assert_string_equal(text, "u::rwx,u:60001:rwx,u:60002:r-x,g::---,m::rwx,o::---");
    /* A name that is a link is not a folder. */
    snprintf(p, sizeof p, "%s/trap", root);
    assert_int_equal(symlink(dir, p), 0);
    assert_int_equal(tfld_dir_apply(rootfd, "trap", e, 2, 100, &done, &err), -1);
    assert_int_equal(errno, ELOOP);

    /* Usage: every object below, links as themselves, never their targets. */
    uint64_t bytes = 0, objects = 0;
    tfld_usage_stop_t stop;
    assert_int_equal(tfld_dir_usage(rootfd, "data", 100, 0, &bytes, &objects, &stop, &err), 0);
    assert_int_equal(objects, 5);
    assert_int_equal(stop, TFLD_USAGE_COMPLETE);
    assert_true(bytes > 0);
    assert_int_equal(tfld_dir_usage(rootfd, "data", 2, 0, &bytes, &objects, &stop, &err), 1);
    assert_int_equal(stop, TFLD_USAGE_OBJECTS);
    assert_int_equal(tfld_dir_usage(rootfd, "nosuch", 2, 0, &bytes, &objects, &stop, &err), -1);
    assert_int_equal(errno, ENOENT);

    /* Deletion: renamed and shut at once, then removed; what the links point at stays. */
    char retired[64];
    assert_int_equal(tfld_dir_retire(rootfd, "data", 7, retired, sizeof retired, &err), 0);
    assert_string_equal(retired, ".deleted-7");
    snprintf(p, sizeof p, "%s/.deleted-7", root);
    acl_of(p, ACL_TYPE_ACCESS, text, sizeof text);
    assert_string_equal(text, "u::rwx,g::---,m::---,o::---");
    snprintf(p, sizeof p, "%s/data", root);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(tfld_dir_remove(rootfd, retired, &err), 0);
    snprintf(p, sizeof p, "%s/.deleted-7", root);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(access(q, F_OK), 0);
    assert_int_equal(tfld_dir_retire(rootfd, "data", 8, retired, sizeof retired, &err), -1);
    assert_int_equal(errno, ENOENT);
    close(rootfd);
    assert_int_equal(test_tmpdir_remove(dir), 0);
}

/* A chain of n directories "d" below path (made with mkdirat, one level at a time). */
static void deep_chain(const char *path, int n)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    for (int i = 0; i < n; i++) {
        assert_int_equal(mkdirat(fd, "d", 0700), 0);
        int sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
        assert_true(sub >= 0);
        close(fd);
        fd = sub;
    }
    assert_int_equal(mkdirat(fd, "bottom", 0700), 0);
    close(fd);
}

static void fill_file(const char *path, size_t n)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        fputc('x', f);
    fclose(f);
}

/* The usage walk is never a quota's figure when it stopped early: it says why (too deep, too
 * many entries, out of time); a directory too deep to enter does not stop the walk of the
 * rest; a file with several links counts once; a removal reaches any depth. */
static void test_usage_walk(void **state)
{
    if (geteuid() != 0)
        fail_msg("the disk cases need root (a root-owned folder root)");
    char dir[64], root[96], p[256], q[256];
    tsl_error_t err;
    assert_int_equal(test_tmpdir(dir, sizeof dir, "fusage"), 0);
    snprintf(root, sizeof root, "%s/root", dir);
    int rootfd = tfld_root_open(root, &err);
    assert_true(rootfd >= 0);
    assert_int_equal(mkdirat(rootfd, "u", 0700), 0);
    uint64_t bytes = 0, objects = 0, one = 0, n1 = 0;
    tfld_usage_stop_t stop;

    /* One file of 64 KiB, then nine more names of it: the same space, ten more objects. */
    snprintf(p, sizeof p, "%s/u/file", root);
    fill_file(p, 65536);
    assert_int_equal(tfld_dir_usage(rootfd, "u", 100, 0, &one, &n1, &stop, &err), 0);
    for (int i = 0; i < 9; i++) {
        snprintf(q, sizeof q, "%s/u/name%d", root, i);
        assert_int_equal(link(p, q), 0);
    }
    assert_int_equal(tfld_dir_usage(rootfd, "u", 100, 0, &bytes, &objects, &stop, &err), 0);
    assert_int_equal(stop, TFLD_USAGE_COMPLETE);
    assert_int_equal(bytes, one);
    assert_int_equal(objects, n1 + 9);
    assert_true(bytes >= 65536);

    /* Out of time: a deadline already past. */
    assert_int_equal(tfld_dir_usage(rootfd, "u", 100, 1, &bytes, &objects, &stop, &err), 1);
    assert_int_equal(stop, TFLD_USAGE_TIME);

    /* Deeper than TFLD_WALK_DEPTH: incomplete, and the file beside the chain still counted
     * (whatever the order readdir gives). */
    snprintf(p, sizeof p, "%s/u", root);
    deep_chain(p, TFLD_WALK_DEPTH + 10);
    assert_int_equal(tfld_dir_usage(rootfd, "u", 1000, 0, &bytes, &objects, &stop, &err), 1);
    assert_int_equal(stop, TFLD_USAGE_DEPTH);
    assert_true(bytes >= one);
    assert_true(objects >= n1 + 9 + TFLD_WALK_DEPTH - 1);
    assert_string_equal(tfld_usage_stop_text(TFLD_USAGE_DEPTH), "too deep");
    assert_string_equal(tfld_usage_stop_text(TFLD_USAGE_OBJECTS), "too many entries");
    assert_string_equal(tfld_usage_stop_text(TFLD_USAGE_COMPLETE), "complete");

    /* Removal at any depth: a chain five times the walk's depth goes whole. */
    snprintf(p, sizeof p, "%s/u/deeper", root);
    assert_int_equal(mkdir(p, 0700), 0);
    deep_chain(p, 5 * TFLD_WALK_DEPTH);
    char retired[64];
    assert_int_equal(tfld_dir_retire(rootfd, "u", 3, retired, sizeof retired, &err), 0);
    assert_int_equal(tfld_dir_remove(rootfd, retired, &err), 0);
    snprintf(p, sizeof p, "%s/.deleted-3", root);
    assert_int_equal(access(p, F_OK), -1);
    close(rootfd);
    assert_int_equal(test_tmpdir_remove(dir), 0);
}

/* Paths inside a folder as the files routes take them. */
static void test_paths(void **state)
{
    char long_name[300], many[200];
    memset(long_name, 'a', 256);
    long_name[256] = '\0';
    many[0] = '\0';
    for (int i = 0; i < 65; i++)
        strcat(many, i ? "/a" : "a");
    static const char *const good[] = {"", "a", "a.txt", "sub/dir/f", ".hidden", "a..b", "..a"};
    static const char *const bad[] = {"/a",   "a/",     "a//b",  ".",    "..",
                                      "../a", "a/../b", "a/./b", "a/..", "./a"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!tfld_path_valid(good[i]))
            fail_msg("'%s' refused", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (tfld_path_valid(bad[i]))
            fail_msg("'%s' taken", bad[i]);
    assert_false(tfld_path_valid(long_name));
    long_name[255] = '\0';
    assert_true(tfld_path_valid(long_name));
    assert_false(tfld_path_valid(many)); /* 65 names */
}

/* The thread's file-system identity: another account's, then root's again. */
static void test_identity(void **state)
{
    if (geteuid() != 0)
        fail_msg("needs root (it takes another account's identity)");
    char dir[64], p[128];
    assert_int_equal(test_tmpdir(dir, sizeof dir, "ident"), 0);
    snprintf(p, sizeof p, "%s/root-only", dir);
    write_file(p, "x");
    assert_int_equal(chmod(p, 0600), 0);
    assert_int_equal(chmod(dir, 0755), 0);
    tfld_ident_t id = {.uid = 65534, .gid = 65534, .groups = {65534}, .ngroups = 1};
    tfld_saved_t saved;
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct before[2];
    assert_int_equal(syscall(SYS_capget, &h, before), 0);
    assert_true(before[0].effective & (1u << CAP_SETUID)); /* root's, on */
    assert_int_equal(tfld_as_enter(&id, &saved), 0);
    int fd = open(p, O_RDONLY);
    int e = errno;
    char q[160];
    snprintf(q, sizeof q, "%s/made", dir);
    int made = open(q, O_WRONLY | O_CREAT, 0644);
    int e2 = errno;
    /* The thread's effective capability set inside: empty (CAP_SYS_RESOURCE included, which
     * would pass disk quotas and ext4's root-reserved blocks); the permitted set kept, and
     * the effective one back after. */
    struct __user_cap_data_struct in[2], out[2];
    assert_int_equal(syscall(SYS_capget, &h, in), 0);
    tfld_as_leave(&saved);
    assert_int_equal(in[0].effective, 0);
    assert_int_equal(in[1].effective, 0);
    assert_int_equal(in[0].permitted, before[0].permitted);
    assert_int_equal(in[1].permitted, before[1].permitted);
    assert_int_equal(syscall(SYS_capget, &h, out), 0);
    assert_int_equal(out[0].effective, before[0].effective);
    assert_int_equal(out[1].effective, before[1].effective);
    assert_int_equal(fd, -1);
    assert_int_equal(e, EACCES); /* root's capabilities are off for the thread */
    assert_int_equal(made, -1);
    assert_int_equal(e2, EACCES);
    fd = open(p, O_RDONLY); /* and on again */
    assert_true(fd >= 0);
    close(fd);
    tfld_ident_t rootid = {.uid = 0};
    assert_int_equal(tfld_as_enter(&rootid, &saved), -1);
    assert_int_equal(errno, EPERM);
    assert_int_equal(test_tmpdir_remove(dir), 0);
}

/* The quota decisions: folder first, then project; no quota never refuses; no overflow. */
static void test_quota_check(void **state)
{
    static const struct {
        int64_t used, quota, pused, pquota;
        uint64_t add;
        tfld_quota_t want;
    } cases[] = {
        {0, 0, 0, 0, 1ULL << 62, TFLD_QUOTA_OK},     /* no quota at all */
        {50, 100, 0, 0, 50, TFLD_QUOTA_OK},          /* exactly to the limit */
        {50, 100, 0, 0, 51, TFLD_QUOTA_FOLDER},      /* one byte past */
        {100, 100, 0, 0, 0, TFLD_QUOTA_OK},          /* nothing added at the limit */
        {150, 100, 0, 0, 1, TFLD_QUOTA_FOLDER},      /* already past */
        {100, 100, 0, 0, 1, TFLD_QUOTA_FOLDER},      /* a rw job's question (add 1): at it */
        {99, 100, 999, 1000, 1, TFLD_QUOTA_OK},      /* ... a byte below both */
        {0, 100, 1000, 1000, 1, TFLD_QUOTA_PROJECT}, /* ... the project's at its quota */
        {-1, 100, 0, 0, 100, TFLD_QUOTA_OK},         /* not measured: 0 */
        {0, 100, 900, 1000, 100, TFLD_QUOTA_OK},     /* both to their limits */
        {0, 100, 950, 1000, 60, TFLD_QUOTA_PROJECT}, /* the project's passed */
        {90, 100, 950, 1000, 60, TFLD_QUOTA_FOLDER}, /* both: the folder's named */
        {0, 0, 1000, 1000, 1, TFLD_QUOTA_PROJECT},   /* the project's alone */
        {0, INT64_MAX, 0, 0, UINT64_MAX, TFLD_QUOTA_FOLDER},
        {INT64_MAX, 0, INT64_MAX, INT64_MAX, 0, TFLD_QUOTA_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(tfld_quota_check(cases[i].used, cases[i].quota, cases[i].pused,
                                          cases[i].pquota, cases[i].add),
                         cases[i].want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rights),     cmocka_unit_test(test_acl_text),
        cmocka_unit_test(test_disk),       cmocka_unit_test(test_paths),
        cmocka_unit_test(test_identity),   cmocka_unit_test(test_quota_check),
        cmocka_unit_test(test_usage_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
