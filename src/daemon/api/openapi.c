/* openapi.c - GET /v1/openapi.json: docs/openapi.json as built into tesseld, without a token
 * (the document holds nothing of this site: docs/security.md), and the check that it and the
 * route table name the same operations (test_openapi runs it on the real table). */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "daemon/api/api.h"
#include "daemon/api/openapi.h"

void api_openapi(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    char *copy = malloc(tessd_openapi_json_len);
    if (!copy) {
        thttp_error(rep, 500, "internal", NULL, "out of memory");
        return;
    }
    memcpy(copy, tessd_openapi_json, tessd_openapi_json_len);
    rep->status = 200;
    rep->text = copy;
    rep->text_len = tessd_openapi_json_len;
    rep->content_type = "application/json";
}

/* The operations an OpenAPI path item may hold (OpenAPI 3.1, "Path Item Object"). */
static const char *const operations[] = {"get",  "put",     "post",  "delete",
                                         "head", "options", "patch", "trace"};

/* Append one mismatch to err's text ("; " between them); the text stays one line. */
static void add_mismatch(tsl_error_t *err, int *n, const char *what, const char *method,
                         const char *path)
{
    if (!err)
        return;
    size_t used = *n ? strlen(err->text) : 0;
    if (used < sizeof err->text)
        snprintf(err->text + used, sizeof err->text - used, "%s%s %s %s", *n ? "; " : "", method,
                 path, what);
    (*n)++;
}

int tessd_openapi_check(const char *doc, size_t len, const thttp_route_t *routes, size_t nroutes,
                        tsl_error_t *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(doc, len, 0, &jerr);
    errno = EINVAL;
    if (!root)
        return tsl_errprintf(err, "the OpenAPI document is not JSON: line %d: %s", jerr.line,
                             jerr.text);
    json_t *paths = json_object_get(root, "paths");
    const char *version = json_string_value(json_object_get(root, "openapi"));
    if (!json_is_object(paths) || !version || strncmp(version, "3.", 2) != 0) {
        json_decref(root);
        return tsl_errprintf(err, "not an OpenAPI 3 document (no \"openapi\": \"3.x\" or no "
                                  "\"paths\" object)");
    }
    int n = 0;
    for (size_t i = 0; i < nroutes; i++) {
        char op[16];
        size_t k = 0;
        for (; routes[i].method[k] && k < sizeof op - 1; k++)
            op[k] = (char)tolower((unsigned char)routes[i].method[k]);
        op[k] = '\0';
        if (!json_is_object(json_object_get(json_object_get(paths, routes[i].pattern), op)))
            add_mismatch(err, &n, "is routed but not documented", routes[i].method,
                         routes[i].pattern);
    }
    const char *path;
    json_t *item;
    json_object_foreach(paths, path, item)
    {
        for (size_t o = 0; o < sizeof operations / sizeof operations[0]; o++) {
            if (!json_object_get(item, operations[o]))
                continue;
            char method[16];
            size_t k = 0;
            for (; operations[o][k]; k++)
                method[k] = (char)toupper((unsigned char)operations[o][k]);
            method[k] = '\0';
            bool routed = false;
            for (size_t i = 0; i < nroutes && !routed; i++)
                routed =
                    strcmp(routes[i].method, method) == 0 && strcmp(routes[i].pattern, path) == 0;
            if (!routed)
                add_mismatch(err, &n, "is documented but not routed", method, path);
        }
    }
    json_decref(root);
    return n ? -1 : 0;
}
