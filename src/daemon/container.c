/* container.c - image references, the image store, the host's driver files and the OCI
 * configuration of a container job (see container.h, docs/containers.md). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/container.h"

#define WHY(...) (why && wlen ? (void)snprintf(why, wlen, __VA_ARGS__) : (void)0)

/* One component of a name: [a-z0-9]+([._-][a-z0-9]+)*; returns its length, 0 when bad. */
static size_t name_component(const char *s)
{
    size_t i = 0;
    for (;;) {
        size_t run = 0;
        while ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')) {
            i++;
            run++;
        }
        if (run == 0)
            return 0;
        if (s[i] == '.' || s[i] == '_' || s[i] == '-') {
            i++;
            continue;
        }
        return i;
    }
}

bool tctr_image_valid(const char *ref, char *why, size_t wlen)
{
    if (!ref || !*ref) {
        WHY("image: empty reference");
        return false;
    }
    size_t len = strlen(ref);
    if (len > TCTR_REF_MAX) {
        WHY("image: reference longer than %d bytes", TCTR_REF_MAX);
        return false;
    }
    const char *p = ref;
    for (int depth = 0;; depth++) {
        size_t n = name_component(p);
        if (n == 0 || depth >= TCTR_NAME_DEPTH) {
            WHY("image '%.64s': a name is up to %d parts separated by '/', each of lower-case "
                "letters and digits, with single '.', '_' or '-' between them (NAME[:TAG])",
                ref, TCTR_NAME_DEPTH);
            return false;
        }
        p += n;
        if (*p == '/') {
            p++;
            continue;
        }
        break;
    }
    if (*p == '\0')
        return true;
    if (*p == ':') {
        p++;
        size_t t = 0;
        if (isalnum((unsigned char)p[0]) || p[0] == '_') {
            for (t = 1; p[t] && (isalnum((unsigned char)p[t]) || strchr("_.-", p[t])); t++) {
            }
        }
        if (t > 0 && t <= 128 && p[t] == '\0')
            return true;
        WHY("image '%.64s': a tag is 1 to 128 letters, digits, '_', '.' or '-', not starting "
            "with '.' or '-'",
            ref);
        return false;
    }
    WHY("image '%.64s': a name is up to %d parts separated by '/', each of lower-case letters "
        "and digits, with single '.', '_' or '-' between them (NAME[:TAG])",
        ref, TCTR_NAME_DEPTH);
    return false;
}

bool tctr_cwd_valid(const char *cwd, char *why, size_t wlen)
{
    static const char *const under[] = {"/proc", "/sys", "/dev", "/run/tessel"};
    /* Nor a parent of a mount point the container gets that is not a host path of its own
     * (/etc/ld.so.preload, /run/tessel/job/limits): crun would make it inside the bound host
     * directory (tctr_config checks every bind). */
    bool ok = cwd[0] == '/' && strcmp(cwd, "/") != 0 && strcmp(cwd, "/etc") != 0 &&
              strcmp(cwd, "/run") != 0;
    /* Canonical: no empty, "." or ".." part, no trailing '/'; the path the container binds at
     * is the path the submission names, so "/tmp/.." must not stand for "/". */
    for (const char *p = cwd; ok && *p; p++) {
        if (*p != '/')
            continue;
        const char *q = p + 1;
        size_t n = strcspn(q, "/");
        ok = n > 0 && !(n == 1 && q[0] == '.') && !(n == 2 && q[0] == '.' && q[1] == '.');
    }
    for (size_t i = 0; ok && i < sizeof under / sizeof *under; i++) {
        size_t n = strlen(under[i]);
        ok = !(strncmp(cwd, under[i], n) == 0 && (cwd[n] == '\0' || cwd[n] == '/'));
    }
    if (!ok)
        WHY("cwd '%.200s' cannot be a container's working directory: it must be a canonical "
            "absolute path (no '.', '..' or empty part) that does not cover the container's "
            "root, /etc, /run, /proc, /sys, /dev or /run/tessel",
            cwd);
    return ok;
}

int tctr_image_split(const char *ref, char *name, size_t nlen, char *tag, size_t tlen)
{
    const char *colon = strchr(ref, ':');
    size_t n = colon ? (size_t)(colon - ref) : strlen(ref);
    const char *t = colon ? colon + 1 : "latest";
    if (n >= nlen || strlen(t) >= tlen) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(name, ref, n);
    name[n] = '\0';
    snprintf(tag, tlen, "%s", t);
    return 0;
}

/* path must be a directory (not a link), root's, writable by no one else.  1 ok, 0 missing,
 * -1 not safe (why). */
static int root_dir_ok(const char *path, char *why, size_t wlen)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 0;
        WHY("%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        WHY("%s: not a directory owned by root and writable by root only (a link, or another "
            "owner): refused",
            path);
        errno = EPERM;
        return -1;
    }
    return 1;
}

/* The store's top directory: as root_dir_ok, and reachable by root alone (0700).  Files
 * inside an image keep the owners the image gave them (an image's own account, uid 1000,
 * is often a real account of the host): a user who could reach them could change an image
 * for every other user's jobs.  Only root's shim mounts an image, so nobody else needs to. */
static int store_dir_ok(const char *path, char *why, size_t wlen)
{
    int rc = root_dir_ok(path, why, wlen);
    if (rc != 1)
        return rc;
    struct stat st;
    if (lstat(path, &st) < 0 || (st.st_mode & 077)) {
        WHY("%s: the image store must be reachable by root alone (chmod 700 %s): files inside "
            "an image may be other accounts' and must not be changed from the host; refused",
            path, path);
        errno = EPERM;
        return -1;
    }
    return 1;
}

int tctr_image_find(const char *dir, const char *ref, char *out, size_t len, char *why, size_t wlen)
{
    char name[TCTR_REF_MAX + 1], tag[TCTR_REF_MAX + 1];
    if (!tctr_image_valid(ref, why, wlen) ||
        tctr_image_split(ref, name, sizeof name, tag, sizeof tag) < 0) {
        errno = EINVAL;
        return -1;
    }
    char path[PATH_MAX];
    int rc = store_dir_ok(dir, why, wlen);
    if (rc <= 0)
        goto missing;
    /* Down the parts of NAME, then TAG, then rootfs: each checked (no link anywhere). */
    size_t n = (size_t)snprintf(path, sizeof path, "%s", dir);
    char *save = NULL;
    for (char *part = strtok_r(name, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
        n += (size_t)snprintf(path + n, n < sizeof path ? sizeof path - n : 0, "/%s", part);
        if (n >= sizeof path || (rc = root_dir_ok(path, why, wlen)) <= 0)
            goto missing;
    }
    n += (size_t)snprintf(path + n, n < sizeof path ? sizeof path - n : 0, "/%s", tag);
    if (n >= sizeof path || (rc = root_dir_ok(path, why, wlen)) <= 0)
        goto missing;
    n += (size_t)snprintf(path + n, n < sizeof path ? sizeof path - n : 0, "/rootfs");
    if (n >= sizeof path || (rc = root_dir_ok(path, why, wlen)) <= 0)
        goto missing;
    if (n >= len) {
        errno = ENAMETOOLONG;
        WHY("%s: path too long", path);
        return -1;
    }
    memcpy(out, path, n + 1);
    return 1;
missing:
    if (rc < 0)
        return -1;
    errno = ENOENT;
    WHY("image '%s' is not in this machine's image store (tessel images lists them)", ref);
    return 0;
}

typedef struct {
    json_t *arr;
    const char *top;
} list_ctx_t;

/* rel: the name so far ("" at the store's top).  A directory holding a "rootfs" directory is
 * a tag of the image named by its parent. */
static void list_dir(list_ctx_t *c, const char *path, const char *rel, int depth)
{
    DIR *dh = opendir(path);
    if (!dh)
        return;
    struct dirent *e;
    while ((e = readdir(dh))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[PATH_MAX], subrel[PATH_MAX], rootfs[PATH_MAX + 8];
        if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub ||
            snprintf(subrel, sizeof subrel, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >=
                (int)sizeof subrel)
            continue;
        if (root_dir_ok(sub, NULL, 0) != 1)
            continue;
        snprintf(rootfs, sizeof rootfs, "%s/rootfs", sub);
        if (*rel && root_dir_ok(rootfs, NULL, 0) == 1) {
            /* sub is a tag of image rel: listed when the whole reference passes. */
            char ref[PATH_MAX * 2], found[PATH_MAX];
            snprintf(ref, sizeof ref, "%s:%s", rel, e->d_name);
            if (tctr_image_find(c->top, ref, found, sizeof found, NULL, 0) != 1)
                continue;
            struct stat st;
            json_t *o = json_object();
            json_object_set_new(o, "image", json_string(ref));
            json_object_set_new(o, "name", json_string(rel));
            json_object_set_new(o, "tag", json_string(e->d_name));
            if (stat(found, &st) == 0)
                json_object_set_new(o, "created_at", json_integer((json_int_t)st.st_mtime));
            json_array_append_new(c->arr, o);
        } else if (depth < TCTR_NAME_DEPTH) {
            list_dir(c, sub, subrel, depth + 1);
        }
    }
    closedir(dh);
}

static int by_image(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    return strcmp(json_string_value(json_object_get(x, "image")),
                  json_string_value(json_object_get(y, "image")));
}

int tctr_images_list(const char *dir, json_t *arr, char *why, size_t wlen)
{
    int rc = store_dir_ok(dir, why, wlen);
    if (rc <= 0)
        return rc; /* no store: no image; an unsafe one: -1 */
    json_t *found = json_array();
    list_ctx_t c = {.arr = found, .top = dir};
    list_dir(&c, dir, "", 0);
    size_t n = json_array_size(found);
    json_t **v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        json_decref(found);
        WHY("out of memory");
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(found, i);
    qsort(v, n, sizeof *v, by_image);
    for (size_t i = 0; i < n; i++)
        json_array_append(arr, v[i]);
    free(v);
    json_decref(found);
    return (int)n;
}

/* A root-owned regular file writable by no one else, in a directory of the same kind. */
static bool root_file_ok(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & (S_IWGRP | S_IWOTH)))
        return false;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return slash == dir;
    *slash = '\0';
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
           !(st.st_mode & (S_IWGRP | S_IWOTH));
}

int tctr_runtime_find(char *out, size_t len, char *why, size_t wlen)
{
    static const char *const paths[] = {"/usr/bin/crun", "/usr/local/bin/crun", "/usr/sbin/crun"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        if (root_file_ok(paths[i]) && access(paths[i], X_OK) == 0) {
            snprintf(out, len, "%s", paths[i]);
            return 0;
        }
    }
    errno = ENOENT;
    WHY("no OCI runtime on this machine: container jobs need crun (apt-get install crun), "
        "root's, at /usr/bin/crun");
    return -1;
}

#if defined(__x86_64__)
#define LDCONFIG_ABI "x86-64"
#elif defined(__aarch64__)
#define LDCONFIG_ABI "AArch64"
#else
#define LDCONFIG_ABI ""
#endif

int tctr_ldconfig_parse(const char *text, char libs[][PATH_MAX], int max)
{
    static const char *const prefixes[] = {"libcuda.so", "libnvidia-ml.so",
                                           "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so",
                                           "libcudadebugger.so"};
    int n = 0;
    const char *line = text;
    while (line && *line && n < max) {
        const char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        char buf[PATH_MAX + 256];
        if (ll < sizeof buf) {
            memcpy(buf, line, ll);
            buf[ll] = '\0';
            /* "\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1" */
            const char *s = buf;
            while (*s == ' ' || *s == '\t')
                s++;
            const char *arrow = strstr(s, " => ");
            const char *paren = strchr(s, '(');
            bool want = false;
            for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes && !want; i++)
                want = strncmp(s, prefixes[i], strlen(prefixes[i])) == 0;
            if (want && arrow && paren && paren < arrow && arrow[4] == '/' &&
                (!*LDCONFIG_ABI ||
                 memmem(paren, (size_t)(arrow - paren), LDCONFIG_ABI, strlen(LDCONFIG_ABI)))) {
                const char *path = arrow + 4;
                bool dup = false;
                for (int k = 0; k < n && !dup; k++)
                    dup = strcmp(libs[k], path) == 0;
                if (!dup && strlen(path) < PATH_MAX)
                    snprintf(libs[n++], PATH_MAX, "%s", path);
            }
        }
        line = end ? end + 1 : NULL;
    }
    return n;
}

static pthread_mutex_t libs_lock = PTHREAD_MUTEX_INITIALIZER;
static bool libs_done;
static int libs_n;
static char libs_cache[TCTR_MAX_LIBS][PATH_MAX];

/* The output of /sbin/ldconfig -p (root's, run with an empty environment), malloc'd, or NULL. */
static char *ldconfig_output(void)
{
    const char *ldconfig = "/sbin/ldconfig";
    if (!root_file_ok(ldconfig))
        return NULL;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)ldconfig, (char *)"-p", NULL};
    char *envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, ldconfig, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return NULL;
    }
    size_t cap = 64 << 10, len = 0;
    char *buf = malloc(cap);
    for (ssize_t r; buf && (r = read(p[0], buf + len, cap - 1 - len)) != 0;) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        len += (size_t)r;
        if (len + 1 == cap) {
            if (cap >= (16u << 20))
                break; /* more than any ldconfig cache lists */
            char *b = realloc(buf, cap * 2);
            if (!b)
                break;
            buf = b;
            cap *= 2;
        }
    }
    close(p[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

bool tctr_root_path_ok(const char *path)
{
    struct stat st;
    if (path[0] != '/' || lstat(path, &st) < 0 || st.st_uid != 0 ||
        (!S_ISLNK(st.st_mode) && (st.st_mode & (S_IWGRP | S_IWOTH))))
        return false;
    /* Every directory from / down to the file's own: root's, writable by no one else (a
     * sticky /tmp is refused too: another account could have made the name there first). */
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return false;
    for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
        slash[slash == dir] = '\0'; /* "/a/b" -> "/a" -> "/" */
        if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
            (st.st_mode & (S_IWGRP | S_IWOTH)))
            return false;
        if (slash == dir)
            break;
    }
    return true;
}

/* ldconfig's cache as last read: its identity decides whether to run ldconfig again. */
static bool cache_same(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int tctr_driver_libs(char libs[][PATH_MAX], int max)
{
    static struct stat cache_st;
    pthread_mutex_lock(&libs_lock);
    /* ldconfig again when its cache changed (a driver installed or upgraded since). */
    struct stat st;
    if (stat("/etc/ld.so.cache", &st) < 0)
        memset(&st, 0, sizeof st);
    if (!libs_done || !cache_same(&st, &cache_st)) {
        char *text = ldconfig_output();
        libs_n = text ? tctr_ldconfig_parse(text, libs_cache, TCTR_MAX_LIBS) : 0;
        free(text);
        cache_st = st;
        libs_done = true;
    }
    /* Checked at every start, not once: the name ldconfig lists (usually a link to the
     * versioned file) and the file it resolves to, each with every directory above it. */
    int n = 0;
    for (int i = 0; i < libs_n && n < max; i++) {
        char real[PATH_MAX];
        if (!tctr_root_path_ok(libs_cache[i]) || !realpath(libs_cache[i], real) ||
            !root_file_ok(real) || !tctr_root_path_ok(real))
            continue;
        memcpy(libs[n++], libs_cache[i], PATH_MAX);
    }
    pthread_mutex_unlock(&libs_lock);
    return n;
}

/* Minor number of the GPU at bus id from proc_dir/<bus>/information, or -1. */
static int gpu_minor(const char *proc_dir, const char *bus)
{
    /* NVML says "00000000:17:00.0", the driver's /proc "0000:17:00.0", lower case. */
    char b[64];
    size_t bl = strlen(bus);
    const char *colon = strchr(bus, ':');
    if (colon && colon - bus == 8 && bl < sizeof b)
        bus += 4;
    snprintf(b, sizeof b, "%s", bus);
    for (char *p = b; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s/information", proc_dir, b) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256];
    int minor = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Device Minor: %d", &minor) == 1)
            break;
    fclose(f);
    return minor;
}

static int add_chr(const char *dev_dir, const char *name, char out[][PATH_MAX], int n, int max)
{
    char path[PATH_MAX];
    struct stat st;
    if (n >= max || snprintf(path, sizeof path, "%s/%s", dev_dir, name) >= (int)sizeof path ||
        lstat(path, &st) < 0 || !S_ISCHR(st.st_mode))
        return n;
    for (int k = 0; k < n; k++)
        if (strcmp(out[k], path) == 0)
            return n;
    snprintf(out[n], PATH_MAX, "%s", path);
    return n + 1;
}

int tctr_gpu_devices(const char *dev_dir, const char *proc_dir, const char *const *bus_ids,
                     const int *index, int ngpus, char out[][PATH_MAX], int max)
{
    int n = 0;
    if (ngpus <= 0)
        return 0; /* a job without a GPU gets no NVIDIA device at all */
    static const char *const shared[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools",
                                         "nvidia-modeset"};
    for (size_t i = 0; i < sizeof shared / sizeof *shared; i++)
        n = add_chr(dev_dir, shared[i], out, n, max);
    for (int g = 0; g < ngpus; g++) {
        int minor = bus_ids && bus_ids[g] ? gpu_minor(proc_dir, bus_ids[g]) : -1;
        char name[32];
        snprintf(name, sizeof name, "nvidia%d", minor >= 0 ? minor : index[g]);
        n = add_chr(dev_dir, name, out, n, max);
    }
    return n;
}

static json_t *strings(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static json_t *mount_of(const char *dst, const char *type, const char *src, const char *const *opts,
                        size_t nopts)
{
    json_t *m = json_object();
    json_object_set_new(m, "destination", json_string(dst));
    json_object_set_new(m, "type", json_string(type));
    json_object_set_new(m, "source", json_string(src));
    json_object_set_new(m, "options", strings(opts, nopts));
    return m;
}

#define N(a) (sizeof(a) / sizeof *(a))

json_t *tctr_config(const tctr_spec_t *s, tsl_error_t *err)
{
    /* A bind at a path that is not its own host path needs a mount point made by crun, as root:
     * under the cwd (the user's host directory, bound first) that would be made on the host
     * (review of 2026-11-27: an empty /run/tessel/job/limits left behind). */
    size_t cl = strlen(s->cwd);
    for (size_t i = 0; i < s->nbinds; i++) {
        const char *dst = s->binds[i].dst;
        if (strcmp(dst, s->binds[i].src) != 0 && strncmp(dst, s->cwd, cl) == 0 &&
            (dst[cl] == '/' || (cl == 1 && dst[cl] != '\0'))) {
            errno = EINVAL;
            tsl_errprintf(err,
                          "the working directory '%.200s' holds %.200s, a mount point of the "
                          "container that is not on the host: run the job from another directory",
                          s->cwd, dst);
            return NULL;
        }
    }
    json_t *c = json_object();
    json_object_set_new(c, "ociVersion", json_string("1.0.2"));

    json_t *p = json_object();
    json_object_set_new(p, "terminal", json_boolean(s->terminal));
    if (s->terminal) {
        /* The size the shim gives every terminal until its client says its own (tty.h). */
        json_t *size = json_object();
        json_object_set_new(size, "height", json_integer(24));
        json_object_set_new(size, "width", json_integer(80));
        json_object_set_new(p, "consoleSize", size);
    }
    json_t *user = json_object();
    json_object_set_new(user, "uid", json_integer(s->uid));
    json_object_set_new(user, "gid", json_integer(s->gid));
    json_t *gids = json_array();
    for (size_t i = 0; i < s->ngroups; i++)
        json_array_append_new(gids, json_integer(s->groups[i]));
    json_object_set_new(user, "additionalGids", gids);
    json_object_set_new(p, "user", user);
    json_t *args = json_array(), *env = json_array();
    for (char *const *a = s->argv; *a; a++)
        json_array_append_new(args, json_string(*a));
    for (char *const *e = s->envp; *e; e++)
        json_array_append_new(env, json_string(*e));
    json_object_set_new(p, "args", args);
    json_object_set_new(p, "env", env);
    json_object_set_new(p, "cwd", json_string(s->cwd));
    /* Not one capability, in any set, whoever the user (root's job included): no mount, no
     * raw device, no module, no ptrace of others; and no way to gain any by exec. */
    json_t *caps = json_object();
    static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted",
                                       "ambient"};
    for (size_t i = 0; i < N(sets); i++)
        json_object_set_new(caps, sets[i], json_array());
    json_object_set_new(p, "capabilities", caps);
    json_object_set_new(p, "noNewPrivileges", json_true());
    json_object_set_new(c, "process", p);

    json_t *root = json_object();
    json_object_set_new(root, "path", json_string(s->root));
    json_object_set_new(root, "readonly", json_false());
    json_object_set_new(c, "root", root);

    json_t *mounts = json_array();
    static const char *const proc_o[] = {"nosuid", "noexec", "nodev"};
    static const char *const dev_o[] = {"nosuid", "strictatime", "mode=755", "size=65536k"};
    static const char *const pts_o[] = {"nosuid", "noexec", "newinstance", "ptmxmode=0666",
                                        "mode=0620"};
    static const char *const shm_o[] = {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"};
    static const char *const mq_o[] = {"nosuid", "noexec", "nodev"};
    static const char *const sys_o[] = {"nosuid", "noexec", "nodev", "ro"};
    /* A bind's options: crun remounts it with exactly these, so a host mount's read-only and
     * noexec must be named here or the container would get more than the host gives
     * (review of 2026-11-27: a job's cwd on a read-only bind mount was writable inside). */
    static const char *const ro_o[] = {"rbind", "ro", "nosuid", "nodev"};
    static const char *const rw_o[] = {"rbind", "nosuid", "nodev"};
    static const char *const ro_nx_o[] = {"rbind", "ro", "nosuid", "nodev", "noexec"};
    static const char *const rw_nx_o[] = {"rbind", "nosuid", "nodev", "noexec"};
    json_array_append_new(mounts, mount_of("/proc", "proc", "proc", proc_o, N(proc_o)));
    json_array_append_new(mounts, mount_of("/dev", "tmpfs", "tmpfs", dev_o, N(dev_o)));
    json_array_append_new(mounts, mount_of("/dev/pts", "devpts", "devpts", pts_o, N(pts_o)));
    json_array_append_new(mounts, mount_of("/dev/shm", "tmpfs", "shm", shm_o, N(shm_o)));
    json_array_append_new(mounts, mount_of("/dev/mqueue", "mqueue", "mqueue", mq_o, N(mq_o)));
    json_array_append_new(mounts, mount_of("/sys", "sysfs", "sysfs", sys_o, N(sys_o)));
    for (size_t i = 0; i < s->nbinds; i++) {
        const tctr_bind_t *b = &s->binds[i];
        json_t *m = b->noexec ? (b->rw ? mount_of(b->dst, "bind", b->src, rw_nx_o, N(rw_nx_o))
                                       : mount_of(b->dst, "bind", b->src, ro_nx_o, N(ro_nx_o)))
                              : (b->rw ? mount_of(b->dst, "bind", b->src, rw_o, N(rw_o))
                                       : mount_of(b->dst, "bind", b->src, ro_o, N(ro_o)));
        json_array_append_new(mounts, m);
    }
    json_object_set_new(c, "mounts", mounts);

    json_t *lx = json_object();
    json_t *ns = json_array();
    static const char *const nss[] = {"mount", "ipc"};
    for (size_t i = 0; i < N(nss); i++) {
        json_t *o = json_object();
        json_object_set_new(o, "type", json_string(nss[i]));
        json_array_append_new(ns, o);
    }
    json_object_set_new(lx, "namespaces", ns);
    json_t *devs = json_array();
    for (size_t i = 0; i < s->ndevices; i++) {
        struct stat st;
        int rc = stat(s->devices[i], &st);
        if (rc < 0 || !S_ISCHR(st.st_mode)) {
            int e = rc < 0 ? errno : ENODEV;
            tsl_errprintf(err, "%s: %s", s->devices[i], strerror(e));
            json_decref(devs);
            json_decref(lx);
            json_decref(c);
            errno = e;
            return NULL;
        }
        json_t *d = json_object();
        json_object_set_new(d, "path", json_string(s->devices[i]));
        json_object_set_new(d, "type", json_string("c"));
        json_object_set_new(d, "major", json_integer(major(st.st_rdev)));
        json_object_set_new(d, "minor", json_integer(minor(st.st_rdev)));
        json_object_set_new(d, "fileMode", json_integer(st.st_mode & 0777));
        json_object_set_new(d, "uid", json_integer(st.st_uid));
        json_object_set_new(d, "gid", json_integer(st.st_gid));
        json_array_append_new(devs, d);
    }
    json_object_set_new(lx, "devices", devs);
    /* The lists of runc's and Docker's defaults: kernel state no job needs. */
    static const char *const masked[] = {"/proc/acpi",
                                         "/proc/asound",
                                         "/proc/kcore",
                                         "/proc/keys",
                                         "/proc/latency_stats",
                                         "/proc/timer_list",
                                         "/proc/timer_stats",
                                         "/proc/sched_debug",
                                         "/proc/scsi",
                                         "/sys/firmware",
                                         "/sys/devices/virtual/powercap"};
    static const char *const ro[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                     "/proc/sysrq-trigger"};
    json_object_set_new(lx, "maskedPaths", strings(masked, N(masked)));
    json_object_set_new(lx, "readonlyPaths", strings(ro, N(ro)));
    json_object_set_new(c, "linux", lx);
    return c;
}
