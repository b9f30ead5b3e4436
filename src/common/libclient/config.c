/* config.c - the CLI's configuration: ~/.config/tessel/config (written by `tessel login`,
 * mode 0600 because it holds a token), overridden by TESSEL_URL and TESSEL_TOKEN; without any
 * of them, tesseld's local socket when one exists. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessel/client.h"

int tclient_config_path(char *buf, size_t len, tsl_error_t *err)
{
    const char *p = getenv("TESSEL_CONFIG");
    int n;
    if (p && *p) {
        n = snprintf(buf, len, "%s", p);
    } else if ((p = getenv("XDG_CONFIG_HOME")) && *p == '/') {
        n = snprintf(buf, len, "%s/tessel/config", p);
    } else if ((p = getenv("HOME")) && *p) {
        n = snprintf(buf, len, "%s/.config/tessel/config", p);
    } else {
        errno = ENOENT;
        return tsl_errprintf(err, "no HOME: cannot locate the config file (set TESSEL_CONFIG)");
    }
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return tsl_errprintf(err, "config file path too long");
    }
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Copy a URL, dropping trailing slashes. */
static int set_url(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);
    while (n > 0 && src[n - 1] == '/')
        n--;
    if (n == 0 || n >= len)
        return -1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return 0;
}

int tclient_config_read(tclient_config_t *cfg, const char *path, tsl_error_t *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    tclient_config_t tmp = *cfg;
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            goto bad;
        *eq = '\0';
        char *key = trim(s), *val = trim(eq + 1);
        if (strcmp(key, "url") == 0) {
            if (set_url(tmp.url, sizeof tmp.url, val) < 0)
                goto bad;
        } else if (strcmp(key, "token") == 0) {
            if (strlen(val) >= sizeof tmp.token)
                goto bad;
            snprintf(tmp.token, sizeof tmp.token, "%s", val);
        } else {
            fclose(f);
            errno = EINVAL;
            return tsl_errprintf(err, "%s:%d: unknown key '%s' (expected url or token)", path,
                                 lineno, key);
        }
    }
    fclose(f);
    *cfg = tmp;
    return 0;
bad:
    fclose(f);
    errno = EINVAL;
    return tsl_errprintf(err, "%s:%d: expected 'url = URL' or 'token = TOKEN'", path, lineno);
}

/* The local socket of a running tesseld: the personal one's (the user's own daemon), then the
 * system one's.  A path that exists and is a socket; "" when none. */
static void local_socket(char *url, size_t len)
{
    tclient_paths_t p;
    struct stat st;
    if (tclient_default_paths(false, getenv("HOME"), getenv("XDG_DATA_HOME"),
                              getenv("XDG_RUNTIME_DIR"), &p, NULL) == 0 &&
        stat(p.socket, &st) == 0 && S_ISSOCK(st.st_mode)) {
        snprintf(url, len, "unix:%s", p.socket);
        return;
    }
    if (stat(TCLIENT_SYSTEM_SOCKET, &st) == 0 && S_ISSOCK(st.st_mode)) {
        snprintf(url, len, "unix:%s", TCLIENT_SYSTEM_SOCKET);
        return;
    }
    url[0] = '\0';
}

int tclient_config_load(tclient_config_t *cfg, tsl_error_t *err)
{
    memset(cfg, 0, sizeof *cfg);
    if (tclient_config_path(cfg->path, sizeof cfg->path, NULL) == 0) {
        if (tclient_config_read(cfg, cfg->path, err) < 0 && errno != ENOENT)
            return -1;
    }
    const char *u = getenv("TESSEL_URL");
    if (u && *u) {
        if (set_url(cfg->url, sizeof cfg->url, u) < 0) {
            errno = EINVAL;
            return tsl_errprintf(err, "TESSEL_URL: not a URL: '%s'", u);
        }
        cfg->url_from_env = true;
    }
    const char *t = getenv("TESSEL_TOKEN");
    if (t && *t) {
        if (strlen(t) >= sizeof cfg->token) {
            errno = EINVAL;
            return tsl_errprintf(err, "TESSEL_TOKEN: too long");
        }
        snprintf(cfg->token, sizeof cfg->token, "%s", t);
        cfg->token_from_env = true;
    }
    /* Nothing named where to go: the local socket (no token needed: the kernel says who we
     * are), or the default TCP address.  A token configured without a URL keeps going to the
     * TCP address, as before sockets: on the socket it could only name the same user. */
    if (!cfg->url[0]) {
        cfg->url_is_default = true;
        if (!cfg->token[0])
            local_socket(cfg->url, sizeof cfg->url);
        if (!cfg->url[0])
            snprintf(cfg->url, sizeof cfg->url, "%s", TCLIENT_DEFAULT_URL);
    }
    return 0;
}

static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int r = mkdir(path, 0700);
        *p = '/';
        if (r < 0 && errno != EEXIST)
            return -1;
    }
    return 0;
}

int tclient_config_save(const tclient_config_t *cfg, const char *path, tsl_error_t *err)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return tsl_errprintf(err, "%s: path too long", path);
    }
    if (mkdirs(tmp) < 0)
        return tsl_errprintf(err, "%s: cannot create its directory: %s", path, strerror(errno));
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return tsl_errprintf(err, "%s: %s", tmp, strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return tsl_errprintf(err, "%s: %s", tmp, strerror(errno));
    }
    fprintf(f, "# tessel CLI configuration, written by `tessel login` (keep it private)\n");
    fprintf(f, "url = %s\n", cfg->url);
    if (cfg->token[0])
        fprintf(f, "token = %s\n", cfg->token);
    /* fchmod as well: an existing file of the same name keeps its mode through O_TRUNC. */
    if (fflush(f) != 0 || fchmod(fd, 0600) < 0 || fsync(fd) < 0) {
        int e = errno;
        fclose(f);
        unlink(tmp);
        errno = e;
        return tsl_errprintf(err, "%s: %s", tmp, strerror(errno));
    }
    if (fclose(f) != 0 || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return tsl_errprintf(err, "%s: %s", path, strerror(errno));
    }
    return 0;
}
