/* test_openapi.c - docs/openapi.json against the route table: the document built into tesseld
 * names exactly the operations of tessd_routes (routes.c, linked here with the whole daemon),
 * so a route added without its documentation, or a documented path that is not routed, fails
 * here; and tessd_openapi_check itself, on small tables, finds each kind of drift. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "daemon/api/openapi.h"

extern const thttp_route_t tessd_routes[];
extern const size_t tessd_nroutes;

static void handler(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
}

static int check(const char *doc, const thttp_route_t *r, size_t n, tsl_error_t *err)
{
    memset(err, 0, sizeof *err);
    return tessd_openapi_check(doc, strlen(doc), r, n, err);
}

static void test_real_table_matches(void **state)
{
    tsl_error_t err = {{0}};
    int rc = tessd_openapi_check(tessd_openapi_json, tessd_openapi_json_len, tessd_routes,
                                 tessd_nroutes, &err);
    if (rc != 0)
        fail_msg("docs/openapi.json and routes.c differ: %s", err.text);
    /* The document is the one served: valid JSON of OpenAPI 3.1, and the embedded bytes end
     * with the NUL the generator adds. */
    assert_int_equal(tessd_openapi_json[tessd_openapi_json_len], '\0');
    json_t *doc = json_loadb(tessd_openapi_json, tessd_openapi_json_len, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
    /* Every operation of the table is there, counted: as many operations as routes. */
    size_t ops = 0;
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        const char *k;
        json_t *v;
        json_object_foreach(item, k, v) ops += strcmp(k, "parameters") != 0;
    }
    assert_int_equal(ops, tessd_nroutes);
    json_decref(doc);
}

static const thttp_route_t table[] = {
    {"GET", "/v1/things", handler},
    {"POST", "/v1/things", handler},
    {"DELETE", "/v1/things/{id}", handler},
};

static void test_same_passes(void **state)
{
    tsl_error_t err;
    assert_int_equal(check("{\"openapi\": \"3.1.0\", \"paths\": {"
                           "\"/v1/things\": {\"get\": {}, \"post\": {}},"
                           "\"/v1/things/{id}\": {\"delete\": {}, \"parameters\": []}}}",
                           table, 3, &err),
                     0);
}

static void test_route_missing_from_doc(void **state)
{
    tsl_error_t err;
    assert_int_equal(check("{\"openapi\": \"3.1.0\", \"paths\": {"
                           "\"/v1/things\": {\"get\": {}, \"post\": {}}}}",
                           table, 3, &err),
                     -1);
    assert_string_equal(err.text, "DELETE /v1/things/{id} is routed but not documented");
}

static void test_documented_not_routed(void **state)
{
    tsl_error_t err;
    /* A path the table lacks, and a method the table lacks on a routed path. */
    assert_int_equal(check("{\"openapi\": \"3.1.0\", \"paths\": {"
                           "\"/v1/things\": {\"get\": {}, \"post\": {}, \"patch\": {}},"
                           "\"/v1/things/{id}\": {\"delete\": {}},"
                           "\"/v1/gone\": {\"get\": {}}}}",
                           table, 3, &err),
                     -1);
    assert_string_equal(err.text, "PATCH /v1/things is documented but not routed; "
                                  "GET /v1/gone is documented but not routed");
}

static void test_method_case_and_pattern_exact(void **state)
{
    tsl_error_t err;
    /* "{name}" is not "{id}": patterns are compared as written. */
    assert_int_equal(check("{\"openapi\": \"3.1.0\", \"paths\": {"
                           "\"/v1/things\": {\"get\": {}, \"post\": {}},"
                           "\"/v1/things/{name}\": {\"delete\": {}}}}",
                           table, 3, &err),
                     -1);
    assert_string_equal(err.text, "DELETE /v1/things/{id} is routed but not documented; "
                                  "DELETE /v1/things/{name} is documented but not routed");
}

static void test_not_a_document(void **state)
{
    tsl_error_t err;
    assert_int_equal(check("{\"paths\": {", table, 3, &err), -1);
    assert_non_null(strstr(err.text, "not JSON"));
    assert_int_equal(check("{\"swagger\": \"2.0\", \"paths\": {}}", table, 3, &err), -1);
    assert_non_null(strstr(err.text, "not an OpenAPI 3 document"));
    assert_int_equal(check("{\"openapi\": \"3.1.0\"}", table, 3, &err), -1);
    assert_non_null(strstr(err.text, "not an OpenAPI 3 document"));
}

static void test_many_mismatches_stay_one_line(void **state)
{
    tsl_error_t err;
    thttp_route_t many[40];
    char names[40][32];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "/v1/long-resource-name-%02d", i);
        many[i] = (thttp_route_t){"GET", names[i], handler};
    }
    assert_int_equal(check("{\"openapi\": \"3.1.0\", \"paths\": {}}", many, 40, &err), -1);
    assert_true(strlen(err.text) < sizeof err.text);
    assert_null(strchr(err.text, '\n'));
    assert_int_equal(strncmp(err.text, "GET /v1/long-resource-name-00 is routed", 39), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_table_matches),
        cmocka_unit_test(test_same_passes),
        cmocka_unit_test(test_route_missing_from_doc),
        cmocka_unit_test(test_documented_not_routed),
        cmocka_unit_test(test_method_case_and_pattern_exact),
        cmocka_unit_test(test_not_a_document),
        cmocka_unit_test(test_many_mismatches_stay_one_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
