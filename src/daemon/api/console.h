/* console.h - the web console's static files (web/ in the source tree), served by tesseld at /.
 *
 * Routes (api/routes.c): GET /, GET /app/{file}, GET /vendor/{dir}/{file}.  No token is needed
 * for these files: they hold no data; every figure the console shows comes from /v1 with the
 * token the person signs in with (docs/console.md).
 */
#ifndef TESSEL_DAEMON_CONSOLE_H
#define TESSEL_DAEMON_CONSOLE_H

#include "libhttp/http.h"
#include "libutil/error.h"

/* Largest file served.  The biggest today is app/overview.js (~20 KiB); the cap keeps a
 * stray large file in the web root from being read into memory per request. */
#define TESSD_CONSOLE_MAX_FILE (4u << 20)

/* Choose the directory served.  web_root: --web-root DIR, or NULL for the default
 * BINDIR/../share/tessel/web (where `make` installs web/).  Returns 0 when a directory was
 * chosen; 1 when no web_root was given and the default is absent (the console is then off and
 * GET / answers 404 saying how to turn it on); -1 with err ("DIR: reason") when web_root was
 * given but is not a readable directory.  Call once at start, before the HTTP server starts. */
int tessd_console_init(const char *web_root, const char *bindir, tsl_error_t *err);
/* The directory served, or "" when the console is off. */
const char *tessd_console_root(void);

/* GET /, /app/{file}, /vendor/{dir}/{file}.  Answers the file with its Content-Type and a cache
 * policy (Cache-Control: "no-cache" for index.html and app/, so a new tesseld's console is
 * picked up at once; a year and immutable for vendor/, whose directory names carry the
 * library's version).  404 for anything absent, hidden (a segment starting with '.'), with
 * characters outside [A-Za-z0-9._-], reached through a symbolic link, not a regular file, of an
 * unknown type, or above TESSD_CONSOLE_MAX_FILE. */
void api_console(thttp_req_t *req, thttp_reply_t *rep, void *ctx);

#endif
