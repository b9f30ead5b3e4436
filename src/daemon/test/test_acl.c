/* test_acl.c - who may submit to a queue (acl.c): the rule (open queue; user, group or role
 * named), the API's "allow" object (replace per list, null clears, bad names refused with the
 * field and nothing changed, duplicates dropped, at most TSTORE_ACL_NAMES), its JSON form and
 * the description used in 403 messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/acl.h"

static tstore_queue_t queue(const char *users, const char *groups, const char *roles)
{
    tstore_queue_t q;
    memset(&q, 0, sizeof q);
    snprintf(q.name, sizeof q.name, "q");
    snprintf(q.allow_users, sizeof q.allow_users, "%s", users);
    snprintf(q.allow_groups, sizeof q.allow_groups, "%s", groups);
    snprintf(q.allow_roles, sizeof q.allow_roles, "%s", roles);
    return q;
}

static void test_has(void **state)
{
    assert_true(tessd_acl_has("alice,bob", "alice"));
    assert_true(tessd_acl_has("alice,bob", "bob"));
    assert_false(tessd_acl_has("alice,bob", "ali"));
    assert_false(tessd_acl_has("alice,bob", "alice,bob"));
    assert_false(tessd_acl_has("alice,bobby", "bob"));
    assert_false(tessd_acl_has("", "alice"));
}

static void test_allows(void **state)
{
    const char *ml[] = {"staff", "ml"};
    /* No list: open to everyone (as before queue permissions). */
    tstore_queue_t q = queue("", "", "");
    assert_true(tessd_acl_open(&q));
    assert_true(tessd_acl_allows(&q, "eve", false, NULL, 0));
    /* Users only. */
    q = queue("alice,bob", "", "");
    assert_false(tessd_acl_open(&q));
    assert_true(tessd_acl_allows(&q, "bob", false, NULL, 0));
    assert_false(tessd_acl_allows(&q, "eve", false, ml, 2));
    assert_false(tessd_acl_allows(&q, "admin", true, NULL, 0)); /* admins are no exception */
    /* Groups: any of the user's. */
    q = queue("", "ml", "");
    assert_true(tessd_acl_allows(&q, "eve", false, ml, 2));
    assert_false(tessd_acl_allows(&q, "eve", false, ml, 1));
    assert_false(tessd_acl_allows(&q, "ml", false, NULL, 0)); /* a user named like the group */
    /* Roles. */
    q = queue("", "", "admin");
    assert_true(tessd_acl_allows(&q, "root", true, NULL, 0));
    assert_false(tessd_acl_allows(&q, "eve", false, ml, 2));
    q = queue("", "", "user");
    assert_false(tessd_acl_allows(&q, "root", true, NULL, 0));
    assert_true(tessd_acl_allows(&q, "eve", false, NULL, 0));
    /* Any list that names the user admits them. */
    q = queue("carol", "ml", "admin");
    assert_true(tessd_acl_allows(&q, "carol", false, NULL, 0));
    assert_true(tessd_acl_allows(&q, "dave", false, ml, 2));
    assert_true(tessd_acl_allows(&q, "boss", true, NULL, 0));
    assert_false(tessd_acl_allows(&q, "eve", false, NULL, 0));
}

static int parse(const char *text, tstore_queue_t *q, char *field, char *why)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);
    assert_non_null(v);
    int rc = tessd_acl_parse(v, q, field, 64, why, 256);
    json_decref(v);
    return rc;
}

static void test_parse(void **state)
{
    char field[64], why[256];
    tstore_queue_t q = queue("", "", "");
    assert_int_equal(parse("{\"users\":[\"alice\",\"bob\",\"alice\"],\"groups\":[\"_ml-1\"],"
                           "\"roles\":[\"admin\"]}",
                           &q, field, why),
                     0);
    assert_string_equal(q.allow_users, "alice,bob"); /* duplicate dropped */
    assert_string_equal(q.allow_groups, "_ml-1");
    assert_string_equal(q.allow_roles, "admin");
    /* A list not named is kept; [] and null empty one. */
    assert_int_equal(parse("{\"users\":[\"carol\"]}", &q, field, why), 0);
    assert_string_equal(q.allow_users, "carol");
    assert_string_equal(q.allow_groups, "_ml-1");
    assert_int_equal(parse("{\"groups\":[],\"roles\":null}", &q, field, why), 0);
    assert_string_equal(q.allow_users, "carol");
    assert_string_equal(q.allow_groups, "");
    assert_string_equal(q.allow_roles, "");

    /* Refusals: the field at fault, q untouched (all or nothing). */
    tstore_queue_t before = q;
    assert_int_equal(parse("{\"users\":[\"dave\"],\"roles\":[\"root\"]}", &q, field, why), -1);
    assert_string_equal(field, "allow.roles");
    assert_string_equal(why, "allow.roles: 'root' is not a role (admin, user)");
    assert_memory_equal(&q, &before, sizeof q);
    assert_int_equal(parse("{\"users\":[\"Bad Name\"]}", &q, field, why), -1);
    assert_string_equal(field, "allow.users");
    assert_non_null(strstr(why, "'Bad Name' is not a user name"));
    assert_int_equal(parse("{\"groups\":[\"a,b\"]}", &q, field, why), -1); /* no comma inside */
    assert_string_equal(field, "allow.groups");
    assert_int_equal(parse("{\"groups\":[7]}", &q, field, why), -1);
    assert_int_equal(parse("{\"users\":\"alice\"}", &q, field, why), -1);
    assert_string_equal(why, "allow.users must be a list of names (or null)");
    assert_int_equal(parse("{\"hosts\":[\"x\"]}", &q, field, why), -1);
    assert_string_equal(field, "allow.hosts");
    assert_int_equal(parse("[\"alice\"]", &q, field, why), -1);
    assert_string_equal(field, "allow");
    assert_memory_equal(&q, &before, sizeof q);

    /* At most TSTORE_ACL_NAMES names, each up to 32 bytes: the longest list fits. */
    char big[4096] = "{\"users\":[";
    for (int i = 0; i < TSTORE_ACL_NAMES; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%s\"u%031d\"", i ? "," : "", i);
    strcat(big, "]}");
    assert_int_equal(parse(big, &q, field, why), 0);
    assert_int_equal(strlen(q.allow_users), TSTORE_ACL_NAMES * 33 - 1);
    big[strlen(big) - 2] = '\0';
    strcat(big, ",\"one-more\"]}");
    assert_int_equal(parse(big, &q, field, why), -1);
    assert_string_equal(why, "allow.users has 33 names; at most 32");

    /* null: open to everyone again. */
    assert_int_equal(parse("null", &q, field, why), 0);
    assert_true(tessd_acl_open(&q));
}

static void test_json_describe(void **state)
{
    tstore_queue_t q = queue("alice,bob", "", "admin");
    json_t *o = tessd_acl_json(&q);
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"groups\":[],\"roles\":[\"admin\"],\"users\":[\"alice\",\"bob\"]}");
    free(s);
    json_decref(o);
    char buf[256];
    tessd_acl_describe(&q, buf, sizeof buf);
    assert_string_equal(buf, "users alice,bob; roles admin");
    assert_true(tessd_group_name_valid("_ssh"));
    assert_true(tessd_group_name_valid("ml-team"));
    assert_false(tessd_group_name_valid("1ml"));
    assert_false(tessd_group_name_valid(""));
    assert_false(tessd_group_name_valid("ML"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_has),
        cmocka_unit_test(test_allows),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_json_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
