/* openapi.h - the API's OpenAPI 3.1 description (docs/openapi.json), built into tesseld, and
 * the check that it documents exactly the routes of the route table (routes.c). */
#ifndef TESSEL_DAEMON_API_OPENAPI_H
#define TESSEL_DAEMON_API_OPENAPI_H

#include <stddef.h>

#include "libhttp/http.h"
#include "libutil/error.h"

/* docs/openapi.json's bytes, NUL-terminated (generated at build time: src/daemon/module.mk). */
extern const char tessd_openapi_json[];
extern const size_t tessd_openapi_json_len;

/* 0 when doc (len bytes of JSON) is an OpenAPI document whose paths and their operations
 * (get, post, patch, delete, put, head, options, trace) are exactly the method and pattern
 * pairs of routes[0..nroutes): each route documented, each documented operation routed.
 * Otherwise -1 with err naming the first mismatches ("GET /v1/x is routed but not documented;
 * ..."), or why doc is not such a document. */
int tessd_openapi_check(const char *doc, size_t len, const thttp_route_t *routes, size_t nroutes,
                        tsl_error_t *err);

#endif
