/* paths.c - where tesseld keeps its data and its local socket by default (system mode and
 * personal mode), shared by tesseld (its defaults) and the CLI (where to find the socket); and
 * the unix:PATH form of tesseld's URL; percent-encoding of query values. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/client.h"

static int fits(int n, size_t len)
{
    return n >= 0 && (size_t)n < len;
}

static bool absolute(const char *p)
{
    return p && p[0] == '/';
}

int tclient_default_paths(bool system, const char *home, const char *xdg_data_home,
                          const char *xdg_runtime_dir, tclient_paths_t *out, tsl_error_t *err)
{
    tclient_paths_t p;
    memset(&p, 0, sizeof p);
    int n;
    if (system) {
        snprintf(p.data_dir, sizeof p.data_dir, "%s", TCLIENT_SYSTEM_DATA_DIR);
        snprintf(p.socket, sizeof p.socket, "%s", TCLIENT_SYSTEM_SOCKET);
        *out = p;
        return 0;
    }
    if (absolute(xdg_data_home)) {
        n = snprintf(p.data_dir, sizeof p.data_dir, "%s/tessel", xdg_data_home);
    } else if (absolute(home)) {
        n = snprintf(p.data_dir, sizeof p.data_dir, "%s/.local/share/tessel", home);
    } else {
        errno = ENOENT;
        return tsl_errprintf(err, "no HOME (nor XDG_DATA_HOME): give --data-dir");
    }
    if (!fits(n, sizeof p.data_dir)) {
        errno = ENAMETOOLONG;
        return tsl_errprintf(err, "data directory path too long");
    }
    if (absolute(xdg_runtime_dir))
        n = snprintf(p.socket, sizeof p.socket, "%s/tessel/tesseld.sock", xdg_runtime_dir);
    else
        n = snprintf(p.socket, sizeof p.socket, "%s/tesseld.sock", p.data_dir);
    if (!fits(n, sizeof p.socket)) {
        errno = ENAMETOOLONG;
        return tsl_errprintf(err, "socket path longer than %d bytes: give --socket",
                             TCLIENT_SOCKET_PATH_MAX);
    }
    *out = p;
    return 0;
}

const char *tclient_url_socket(const char *url)
{
    const char *p = NULL;
    if (strncmp(url, "unix://", 7) == 0)
        p = url + 7;
    else if (strncmp(url, "unix:", 5) == 0)
        p = url + 5;
    return p && p[0] == '/' && strlen(p) <= TCLIENT_SOCKET_PATH_MAX ? p : NULL;
}

char *tclient_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}
