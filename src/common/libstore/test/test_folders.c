/* test_folders.c - libstore's folders (docs/folders.md): folders added, found, listed and
 * deleted with the errno of each refusal; shares with users and projects set, changed, listed
 * and removed; a deleted user's or project's shares go with it, a deleted project's folders
 * become their owners' own; the folders of a project; the folders a user owns. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "libstore/store.h"

static char dir[64];
static char path[128];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/tessel-fold-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/tessel.db", dir);
    *state = NULL;
    return 0;
}

static int teardown(void **state)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int add_name(const tstore_folder_t *f, void *arg)
{
    char *buf = arg;
    strcat(buf, f->name);
    strcat(buf, ":");
    strcat(buf, f->project_name);
    strcat(buf, " ");
    return 0;
}

static int add_share(const tstore_fshare_t *s, void *arg)
{
    char *buf = arg;
    char one[96];
    snprintf(one, sizeof one, "%s/%s/%s ", s->user[0] ? s->user : "-",
             s->project ? s->project_name : "-", s->rw ? "rw" : "ro");
    strcat(buf, one);
    return 0;
}

static int add_str(const char *name, void *arg)
{
    strcat(arg, name);
    strcat(arg, " ");
    return 0;
}

static tstore_t *open_with_users(void)
{
    tsl_error_t err;
    tstore_t *st = tstore_open(path, &err);
    assert_non_null(st);
    assert_int_equal(tstore_schema_version(st), 26);
    const char *users[] = {"alice", "bob", "carol"};
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(tstore_user_add(st, users[i], "user", 1, NULL), 0);
    return st;
}

static void test_folders(void **state)
{
    tsl_error_t err;
    tstore_t *st = open_with_users();
    tstore_project_t p = {.share_jobs = true, .created_ms = 5};
    snprintf(p.name, sizeof p.name, "vision");
    snprintf(p.queue, sizeof p.queue, "default");
    snprintf(p.created_by, sizeof p.created_by, "alice");
    assert_int_equal(tstore_project_add(st, &p, "alice", 5, NULL), 0);

    tstore_folder_t f = {.created_ms = 10};
    snprintf(f.name, sizeof f.name, "data");
    snprintf(f.owner, sizeof f.owner, "alice");
    assert_int_equal(tstore_folder_add(st, &f, NULL), 0);
    assert_true(f.id > 0);
    tstore_folder_t dup = f;
    assert_int_equal(tstore_folder_add(st, &dup, &err), -1);
    assert_int_equal(errno, EEXIST);
    assert_string_equal(err.text, "folder 'data' already exists");
    tstore_folder_t pf = {.created_ms = 11, .project = p.id};
    snprintf(pf.name, sizeof pf.name, "shared");
    snprintf(pf.owner, sizeof pf.owner, "bob");
    assert_int_equal(tstore_folder_add(st, &pf, NULL), 0);

    tstore_folder_t got;
    assert_int_equal(tstore_folder_get(st, "shared", &got, NULL), 0);
    assert_string_equal(got.owner, "bob");
    assert_int_equal(got.project, p.id);
    assert_string_equal(got.project_name, "vision");
    assert_int_equal(got.created_ms, 11);
    assert_int_equal(tstore_folder_get(st, "nosuch", &got, &err), -1);
    assert_int_equal(errno, ENOENT);
    char buf[512] = "";
    assert_int_equal(tstore_folder_list(st, add_name, buf, NULL), 0);
    assert_string_equal(buf, "data: shared:vision ");

    /* Shares: users, projects, a mode changed by sharing again, refusals. */
    assert_int_equal(tstore_fshare_set(st, f.id, "bob", 0, false, 20, NULL), 0);
    assert_int_equal(tstore_fshare_set(st, f.id, "carol", 0, true, 21, NULL), 0);
    assert_int_equal(tstore_fshare_set(st, f.id, NULL, p.id, false, 22, NULL), 0);
    assert_int_equal(tstore_fshare_set(st, f.id, "bob", 0, true, 23, NULL), 0);
    assert_int_equal(tstore_fshare_set(st, f.id, NULL, 0, true, 23, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tstore_fshare_set(st, f.id, "bob", p.id, true, 23, &err), -1);
    assert_int_equal(errno, EINVAL);
    buf[0] = '\0';
    assert_int_equal(tstore_fshare_list(st, f.id, add_share, buf, NULL), 0);
    assert_string_equal(buf, "bob/-/rw carol/-/rw -/vision/ro ");
    assert_int_equal(tstore_fshare_del(st, f.id, "carol", 0, NULL), 0);
    assert_int_equal(tstore_fshare_del(st, f.id, "carol", 0, &err), -1);
    assert_int_equal(errno, ENOENT);
    buf[0] = '\0';
    assert_int_equal(tstore_folder_by_project(st, p.id, add_str, buf, NULL), 0);
    assert_string_equal(buf, "data shared ");
    int64_t n = -1;
    assert_int_equal(tstore_folder_count_owner(st, "alice", &n, NULL), 0);
    assert_int_equal(n, 1);
    assert_int_equal(tstore_folder_count_owner(st, "carol", &n, NULL), 0);
    assert_int_equal(n, 0);

    /* A deleted user's shares go; so do a deleted project's, and its folders become their
     * owners' own. */
    assert_int_equal(tstore_user_del(st, "bob", NULL), 0);
    assert_int_equal(tstore_project_del(st, p.id, NULL), 0);
    buf[0] = '\0';
    assert_int_equal(tstore_fshare_list(st, f.id, add_share, buf, NULL), 0);
    assert_string_equal(buf, "");
    assert_int_equal(tstore_folder_get(st, "shared", &got, NULL), 0);
    assert_int_equal(got.project, 0);
    assert_string_equal(got.project_name, "");

    /* A folder deleted takes its shares; its id is not given again. */
    assert_int_equal(tstore_fshare_set(st, f.id, "carol", 0, true, 30, NULL), 0);
    assert_int_equal(tstore_folder_del(st, f.id, NULL), 0);
    assert_int_equal(tstore_folder_del(st, f.id, &err), -1);
    assert_int_equal(errno, ENOENT);
    buf[0] = '\0';
    assert_int_equal(tstore_fshare_list(st, f.id, add_share, buf, NULL), 0);
    assert_string_equal(buf, "");
    tstore_folder_t again = {.created_ms = 40};
    snprintf(again.name, sizeof again.name, "data");
    snprintf(again.owner, sizeof again.owner, "carol");
    assert_int_equal(tstore_folder_add(st, &again, NULL), 0);
    assert_true(again.id > pf.id);
    tstore_close(st);
}

/* A project's folder quota (migration 19) and the measured use of its folders together. */
static int count_folder(const tstore_folder_t *f, void *arg)
{
    (*(int *)arg)++;
    return 0;
}

static void test_project_quota(void **state)
{
    tsl_error_t err;
    tstore_t *st = open_with_users();
    tstore_project_t p = {.share_jobs = true, .created_ms = 5};
    snprintf(p.name, sizeof p.name, "vision");
    snprintf(p.queue, sizeof p.queue, "default");
    snprintf(p.created_by, sizeof p.created_by, "alice");
    assert_int_equal(tstore_project_add(st, &p, "alice", 5, NULL), 0);
    tstore_project_t got;
    assert_int_equal(tstore_project_get(st, "vision", &got, NULL), 0);
    assert_int_equal(got.folder_quota, 0);
    assert_int_equal(tstore_project_set_folder_quota(st, p.id, 1 << 20, NULL), 0);
    assert_int_equal(tstore_project_get_id(st, p.id, &got, NULL), 0);
    assert_int_equal(got.folder_quota, 1 << 20);
    /* tstore_project_update leaves it as it is. */
    snprintf(got.description, sizeof got.description, "changed");
    assert_int_equal(tstore_project_update(st, &got, NULL), 0);
    assert_int_equal(tstore_project_get(st, "vision", &got, NULL), 0);
    assert_int_equal(got.folder_quota, 1 << 20);
    assert_int_equal(tstore_project_set_folder_quota(st, 999, 5, &err), -1);
    assert_int_equal(errno, ENOENT);

    /* Use together: the folders of the project only, those measured counted. */
    int64_t used = -1, measured = -1, n = -1;
    assert_int_equal(tstore_project_folder_use(st, p.id, &used, &measured, &n, NULL), 0);
    assert_int_equal(used + measured + n, 0);
    tstore_folder_t a = {.created_ms = 10, .project = p.id}, b = a, own = {.created_ms = 10};
    snprintf(a.name, sizeof a.name, "a");
    snprintf(b.name, sizeof b.name, "b");
    snprintf(own.name, sizeof own.name, "own");
    snprintf(a.owner, sizeof a.owner, "alice");
    snprintf(b.owner, sizeof b.owner, "alice");
    snprintf(own.owner, sizeof own.owner, "alice");
    assert_int_equal(tstore_folder_add(st, &a, NULL), 0);
    assert_int_equal(tstore_folder_add(st, &b, NULL), 0);
    assert_int_equal(tstore_folder_add(st, &own, NULL), 0);
    assert_int_equal(tstore_folder_set_used(st, a.id, 300, 20, NULL), 0);
    assert_int_equal(tstore_folder_set_used(st, own.id, 5000, 20, NULL), 0);
    assert_int_equal(tstore_project_folder_use(st, p.id, &used, &measured, &n, NULL), 0);
    assert_int_equal(used, 300);
    assert_int_equal(measured, 1);
    assert_int_equal(n, 2);
    assert_int_equal(tstore_folder_set_used(st, b.id, 700, 21, NULL), 0);
    assert_int_equal(tstore_project_folder_use(st, p.id, &used, &measured, &n, NULL), 0);
    assert_int_equal(used, 1000);
    assert_int_equal(measured, 2);
    /* A deleted folder counts no more. */
    assert_int_equal(tstore_folder_del(st, a.id, NULL), 0);
    assert_int_equal(tstore_project_folder_use(st, p.id, &used, &measured, &n, NULL), 0);
    assert_int_equal(used, 700);
    assert_int_equal(measured, 1);
    assert_int_equal(n, 1);
    /* An upload's bytes: added to the figure as it is, the time of the walk kept;
     * saturating; a folder never measured stays so. */
    assert_int_equal(tstore_folder_add_used(st, b.id, 50, NULL), 0);
    tstore_folder_t fb;
    assert_int_equal(tstore_folder_get(st, "b", &fb, NULL), 0);
    assert_int_equal(fb.used, 750);
    assert_int_equal(fb.used_ms, 21);
    assert_int_equal(tstore_folder_add_used(st, b.id, -1, &err), -1);
    assert_int_equal(errno, EINVAL);
    tstore_folder_t c = {.created_ms = 10, .project = p.id};
    snprintf(c.name, sizeof c.name, "c");
    snprintf(c.owner, sizeof c.owner, "alice");
    assert_int_equal(tstore_folder_add(st, &c, NULL), 0);
    assert_int_equal(tstore_folder_add_used(st, c.id, 50, NULL), 0);
    assert_int_equal(tstore_folder_get(st, "c", &fb, NULL), 0);
    assert_int_equal(fb.used, -1);
    /* The project's folders (an index), not the others. */
    int count = 0;
    assert_int_equal(tstore_folder_list_project(st, p.id, count_folder, &count, NULL), 0);
    assert_int_equal(count, 2);
    count = 0;
    assert_int_equal(tstore_folder_list_project(st, 0, count_folder, &count, NULL), 0);
    assert_int_equal(count, 0);
    /* Figures near INT64_MAX: the sum saturates (no integer overflow error). */
    assert_int_equal(tstore_folder_set_used(st, b.id, INT64_MAX - 10, 22, NULL), 0);
    assert_int_equal(tstore_folder_add_used(st, b.id, 100, NULL), 0);
    assert_int_equal(tstore_folder_get(st, "b", &fb, NULL), 0);
    assert_int_equal(fb.used, INT64_MAX);
    assert_int_equal(tstore_folder_set_used(st, c.id, INT64_MAX, 22, NULL), 0);
    assert_int_equal(tstore_project_folder_use(st, p.id, &used, &measured, &n, NULL), 0);
    assert_int_equal(used, INT64_MAX);
    assert_int_equal(measured, 2);
    assert_int_equal(tstore_project_set_folder_quota(st, p.id, 0, NULL), 0);
    assert_int_equal(tstore_project_get(st, "vision", &got, NULL), 0);
    assert_int_equal(got.folder_quota, 0);
    tstore_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_folders, setup, teardown),
        cmocka_unit_test_setup_teardown(test_project_quota, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
