/* console.c - the web console's static files (see console.h and docs/console.md).
 *
 * No directory traversal: the path is split into at most TSD_CONSOLE_DEPTH segments, each of
 * [A-Za-z0-9._-] and not starting with '.', and opened one segment at a time below a directory
 * descriptor of the web root with O_NOFOLLOW, so neither ".." nor a symbolic link can lead out.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/api/console.h"

/* Deepest path served: vendor/<library-version>/<file>. */
#define TSD_CONSOLE_DEPTH 3

static char console_root[PATH_MAX];

typedef struct {
    const char *ext;
    const char *type;
} ctype_t;

static const ctype_t ctypes[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".json", "application/json"},
    {".txt", "text/plain; charset=utf-8"},
    {".ico", "image/x-icon"},
    {".woff2", "font/woff2"},
};

int tessd_console_init(const char *web_root, const char *bindir, tsl_error_t *err)
{
    char path[PATH_MAX];
    console_root[0] = '\0';
    if (web_root)
        snprintf(path, sizeof path, "%s", web_root);
    else if (snprintf(path, sizeof path, "%s/../share/tessel/web", bindir) >= (int)sizeof path)
        return 1;
    struct stat st;
    int e = 0;
    if (stat(path, &st) < 0)
        e = errno;
    else if (!S_ISDIR(st.st_mode))
        e = ENOTDIR;
    else if (access(path, R_OK | X_OK) < 0)
        e = errno;
    if (e) {
        if (!web_root)
            return 1;
        errno = e;
        return tsl_errprintf(err, "%s: %s", web_root, strerror(e));
    }
    char *rp = realpath(path, NULL);
    if (!rp)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    if (strlen(rp) >= sizeof console_root) {
        free(rp);
        errno = ENAMETOOLONG;
        return tsl_errprintf(err, "%s: path too long", path);
    }
    snprintf(console_root, sizeof console_root, "%s", rp);
    free(rp);
    return 0;
}

const char *tessd_console_root(void)
{
    return console_root;
}

static bool segment_ok(const char *s, size_t n)
{
    if (n == 0 || n > 255 || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

static const char *content_type_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return NULL;
    for (size_t i = 0; i < sizeof ctypes / sizeof ctypes[0]; i++)
        if (strcmp(dot, ctypes[i].ext) == 0)
            return ctypes[i].type;
    return NULL;
}

static void not_found(thttp_reply_t *rep, const char *path)
{
    thttp_error(rep, 404, "not_found", NULL, "no console file %s", path);
}

/* Open path (relative, segments separated by '/') below the root, refusing links.  Returns a
 * descriptor or -1. */
static int open_beneath(const char *rel)
{
    int dir = open(console_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return -1;
    const char *seg = rel;
    for (int depth = 0;; depth++) {
        const char *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        if (depth >= TSD_CONSOLE_DEPTH || !segment_ok(seg, n)) {
            close(dir);
            return -1;
        }
        char name[256];
        memcpy(name, seg, n);
        name[n] = '\0';
        int fd = openat(dir, name,
                        O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (slash ? O_DIRECTORY : O_NONBLOCK));
        close(dir);
        if (fd < 0 || !slash)
            return fd;
        dir = fd;
        seg = slash + 1;
    }
}

void api_console(thttp_req_t *req, thttp_reply_t *rep, void *ctx)
{
    (void)ctx;
    if (!console_root[0]) {
        thttp_error(rep, 404, "not_found", NULL,
                    "the web console is not installed: run `make`, or start tesseld with "
                    "--web-root DIR (the source tree's web/)");
        return;
    }
    const char *rel = strcmp(req->path, "/") == 0 ? "index.html" : req->path + 1;
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    const char *type = content_type_of(base);
    if (!type) {
        not_found(rep, req->path);
        return;
    }
    int fd = open_beneath(rel);
    if (fd < 0) {
        not_found(rep, req->path);
        return;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > TESSD_CONSOLE_MAX_FILE) {
        close(fd);
        not_found(rep, req->path);
        return;
    }
    /* A validator, so that a browser revalidates its copy (no-cache) with If-None-Match and
     * gets 304 rather than the file again: what it compiled from the file (V8's code cache)
     * stays valid too.  Weak: the file's size, change time and inode. */
    char etag[64];
    snprintf(etag, sizeof etag, "W/\"%llx-%llx.%lx-%llx\"", (unsigned long long)st.st_size,
             (unsigned long long)st.st_mtim.tv_sec, (unsigned long)st.st_mtim.tv_nsec,
             (unsigned long long)st.st_ino);
    snprintf(rep->extra_name, sizeof rep->extra_name, "Cache-Control");
    snprintf(rep->extra_value, sizeof rep->extra_value, "%s",
             strncmp(rel, "vendor/", 7) == 0 ? "public, max-age=31536000, immutable" : "no-cache");
    snprintf(rep->extra2_name, sizeof rep->extra2_name, "ETag");
    snprintf(rep->extra2_value, sizeof rep->extra2_value, "%s", etag);
    const char *inm = thttp_header(req, "If-None-Match");
    if (inm && (strstr(inm, etag) || strcmp(inm, "*") == 0)) {
        close(fd);
        rep->status = 304;
        return;
    }
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size ? size : 1);
    size_t got = 0;
    while (buf && got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!buf || got != size) {
        free(buf);
        thttp_error(rep, 500, "internal", NULL, "cannot read console file %s", req->path);
        return;
    }
    rep->status = 200;
    rep->text = buf;
    rep->text_len = size;
    rep->content_type = type;
}
