/* test_container.c - container.c alone (docs/containers.md): which image references pass
 * (a table of good and bad ones: engine options, paths, shell characters), how they split, the
 * image store (found, missing, not root's, through a link, listed), the NVIDIA libraries in
 * ldconfig's output (another ABI, other libraries, duplicates), the device nodes of a job's
 * GPUs only (character devices made by mknod in a scratch /dev, minor numbers from a scratch
 * /proc/driver/nvidia/gpus), and the OCI configuration: no capability, no new privileges, the
 * user's ids, its argv and env as given (never parsed), only the binds and devices given, the
 * host's network and PID namespaces.  Runs as root (chown and mknod): not root is a failure. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/container.h"
#include "daemon/test/tmpdir.h"

static void test_image_valid(void **state)
{
    static const char *const good[] = {
        "testimg",
        "testimg:1",
        "debian:12",
        "pytorch/pytorch:2.4-cuda12",
        "a",
        "a-b_c.d",
        "lab/tools/x/y:latest",
        "a:B_1.x-y",
        "nvcr.io/nvidia/pytorch:24.05-py3",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        char why[256] = "";
        if (!tctr_image_valid(good[i], why, sizeof why))
            fail_msg("'%s' refused: %s", good[i], why);
    }
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    static const char *const bad[] = {
        "",
        "--privileged",
        "-v",
        "--volume=/:/host",
        "testimg --privileged",
        "../x",
        "a/../b",
        "/etc",
        "./a",
        "A",
        "testImg",
        "a:b:c",
        "a:",
        "a:-x",
        "a:.x",
        "a;id",
        "a$(id)",
        "a`id`",
        "a b",
        "a\nb",
        "a//b",
        "a/",
        "/a",
        "a/b/c/d/e",
        ".a",
        "a..b",
        "a__b",
        "a.-b",
        "a-",
        "a:b c",
        "a:"
        "x\t",
        "a\\b",
        "a|b",
        "a&b",
        "a>b",
        "a*",
        "a?",
        "a@sha256",
        NULL,
    };
    for (size_t i = 0; bad[i]; i++) {
        char why[256] = "";
        if (tctr_image_valid(bad[i], why, sizeof why))
            fail_msg("'%s' accepted", bad[i]);
        assert_true(why[0] != '\0');
    }
    assert_false(tctr_image_valid(longname, NULL, 0));
    assert_false(tctr_image_valid(NULL, NULL, 0));
    /* 129 characters of tag: refused; 128: taken. */
    char tag[140] = "a:";
    memset(tag + 2, 'x', 129);
    tag[131] = '\0';
    assert_false(tctr_image_valid(tag, NULL, 0));
    tag[130] = '\0';
    assert_true(tctr_image_valid(tag, NULL, 0));
}

static void test_cwd_valid(void **state)
{
    static const char *const good[] = {"/home/alice/proj", "/tmp",  "/work/x.y/..z", "/procfs",
                                       "/devel",           "/etc2", "/run/tesselx",  "/a/.b/c"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        if (!tctr_cwd_valid(good[i], NULL, 0))
            fail_msg("cwd '%s' refused", good[i]);
    static const char *const bad[] = {
        "/",        "/etc",        "/proc",           "/proc/1",    "/sys/fs",  "/dev",
        "/dev/shm", "/run/tessel", "/run/tessel/job", "/tmp/..",    "/tmp/.",   "//proc",
        "/run",     "/tmp//x",     "/tmp/",           "/x/../proc", "relative", "/a/./b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char why[512] = "";
        if (tctr_cwd_valid(bad[i], why, sizeof why))
            fail_msg("cwd '%s' accepted", bad[i]);
        assert_non_null(strstr(why, "cannot be a container's working directory"));
    }
}

static void test_image_split(void **state)
{
    char name[64], tag[64];
    assert_int_equal(tctr_image_split("debian:12", name, sizeof name, tag, sizeof tag), 0);
    assert_string_equal(name, "debian");
    assert_string_equal(tag, "12");
    assert_int_equal(tctr_image_split("lab/x", name, sizeof name, tag, sizeof tag), 0);
    assert_string_equal(name, "lab/x");
    assert_string_equal(tag, "latest");
    assert_int_equal(tctr_image_split("abcdef:1", name, 4, tag, sizeof tag), -1);
    assert_int_equal(errno, ENAMETOOLONG);
}

static void mkdirs(const char *base, const char *rel)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s' && chmod 755 '%s/%s'", base, rel, base, rel);
    assert_int_equal(system(cmd), 0);
}

static void test_store(void **state)
{
    assert_int_equal(geteuid(), 0); /* chown below: run as root, as tesseld */
    char dir[128], store[256], out[4096], why[512];
    assert_int_equal(test_tmpdir(dir, sizeof dir, "container"), 0);
    snprintf(store, sizeof store, "%s/images", dir);
    /* No store: nothing found, nothing listed. */
    assert_int_equal(tctr_image_find(store, "a:1", out, sizeof out, why, sizeof why), 0);
    assert_int_equal(errno, ENOENT);
    assert_non_null(strstr(why, "not in this machine's image store"));
    json_t *arr = json_array();
    assert_int_equal(tctr_images_list(store, arr, why, sizeof why), 0);
    mkdirs(store, "debian/12/rootfs");
    mkdirs(store, "lab/tools/2.4/rootfs");
    mkdirs(store, "lab/tools/latest/rootfs");
    mkdirs(store, "empty/1"); /* no rootfs: not an image */
    /* A store other accounts can reach is refused (an image's files may be theirs). */
    assert_int_equal(chmod(store, 0755), 0);
    assert_int_equal(tctr_image_find(store, "debian:12", out, sizeof out, why, sizeof why), -1);
    assert_non_null(strstr(why, "reachable by root alone"));
    assert_int_equal(chmod(store, 0700), 0);
    assert_int_equal(tctr_image_find(store, "debian:12", out, sizeof out, why, sizeof why), 1);
    char want[512];
    snprintf(want, sizeof want, "%s/debian/12/rootfs", store);
    assert_string_equal(out, want);
    assert_int_equal(tctr_image_find(store, "lab/tools", out, sizeof out, why, sizeof why), 1);
    assert_int_equal(tctr_image_find(store, "debian:11", out, sizeof out, why, sizeof why), 0);
    assert_int_equal(tctr_image_find(store, "empty:1", out, sizeof out, why, sizeof why), 0);
    /* A bad reference never reaches the file system. */
    assert_int_equal(tctr_image_find(store, "../x", out, sizeof out, why, sizeof why), -1);
    assert_int_equal(errno, EINVAL);
    /* Not root's, at any level; writable by others; a link: refused (-1), never listed. */
    mkdirs(store, "theirs/1/rootfs");
    char p[512];
    snprintf(p, sizeof p, "%s/theirs/1/rootfs", store);
    assert_int_equal(chown(p, 65534, 65534), 0);
    assert_int_equal(tctr_image_find(store, "theirs:1", out, sizeof out, why, sizeof why), -1);
    assert_non_null(strstr(why, "not a directory owned by root"));
    mkdirs(store, "open/1/rootfs");
    snprintf(p, sizeof p, "%s/open/1", store);
    assert_int_equal(chmod(p, 0777), 0);
    assert_int_equal(tctr_image_find(store, "open:1", out, sizeof out, why, sizeof why), -1);
    snprintf(p, sizeof p, "%s/linked", store);
    char target[512];
    snprintf(target, sizeof target, "%s/debian", store);
    assert_int_equal(symlink(target, p), 0);
    assert_int_equal(tctr_image_find(store, "linked:12", out, sizeof out, why, sizeof why), -1);
    assert_int_equal(tctr_images_list(store, arr, why, sizeof why), 3);
    assert_int_equal(json_array_size(arr), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 0), "image")),
                        "debian:12");
    assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 1), "image")),
                        "lab/tools:2.4");
    assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 2), "name")),
                        "lab/tools");
    assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 2), "tag")),
                        "latest");
    json_decref(arr);
    /* A store that is not root's is no store. */
    assert_int_equal(chown(store, 65534, 65534), 0);
    assert_int_equal(tctr_image_find(store, "debian:12", out, sizeof out, why, sizeof why), -1);
    arr = json_array();
    assert_int_equal(tctr_images_list(store, arr, why, sizeof why), -1);
    json_decref(arr);
    test_tmpdir_remove(dir);
}

static void test_ldconfig(void **state)
{
    const char *text =
        "1432 libs found in cache `/etc/ld.so.cache'\n"
        "\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1\n"
        "\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1\n"
        "\tlibcuda.so.1 (libc6) => /lib/i386-linux-gnu/libcuda.so.1\n"
        "\tlibcuda.so (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so\n"
        "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12\n"
        "\tlibnvidia-ml.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-ml.so.1\n"
        "\tlibnvidia-ml.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-ml.so.1\n"
        "\tlibnvidia-ptxjitcompiler.so.1 (libc6,x86-64) => /usr/lib/libnvidia-ptxjitcompiler.so.1\n"
        "\tlibnvidia-encode.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-encode.so.1\n"
        "\tlibcuda.so.2 (libc6,x86-64) => relative/libcuda.so.2\n"
        "Cache generated by: ldconfig (GNU libc) stable release version 2.36\n";
    char libs[8][PATH_MAX];
    int n = tctr_ldconfig_parse(text, libs, 8);
#if defined(__x86_64__)
    assert_int_equal(n, 4);
    assert_string_equal(libs[0], "/lib/x86_64-linux-gnu/libcuda.so.1");
    assert_string_equal(libs[1], "/lib/x86_64-linux-gnu/libcuda.so");
    assert_string_equal(libs[2], "/lib/x86_64-linux-gnu/libnvidia-ml.so.1");
    assert_string_equal(libs[3], "/usr/lib/libnvidia-ptxjitcompiler.so.1");
    assert_int_equal(tctr_ldconfig_parse(text, libs, 2), 2);
#endif
    assert_int_equal(tctr_ldconfig_parse("", libs, 8), 0);
#if defined(__x86_64__)
    /* As an H200 host listed them (2026-11-27, Ubuntu 24.04, driver libraries in two
     * directories): every path of the wanted libraries, each once, libcudart left out. */
    const char *h200 =
        "\tlibnvidia-ptxjitcompiler.so.1 (libc6,x86-64) => "
        "/usr/local/nvidia/lib64/libnvidia-ptxjitcompiler.so.1\n"
        "\tlibnvidia-ptxjitcompiler.so.1 (libc6,x86-64) => /lib/libnvidia-ptxjitcompiler.so.1\n"
        "\tlibnvidia-nvvm.so.4 (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-nvvm.so.4\n"
        "\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libnvidia-ml.so.1\n"
        "\tlibnvidia-ml.so.1 (libc6,x86-64) => /lib/libnvidia-ml.so.1\n"
        "\tlibcudart.so.13 (libc6,x86-64) => "
        "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.13\n"
        "\tlibcudadebugger.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libcudadebugger.so.1\n"
        "\tlibcuda.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so.1\n"
        "\tlibcuda.so.1 (libc6,x86-64) => /lib/libcuda.so.1\n";
    n = tctr_ldconfig_parse(h200, libs, 8);
    assert_int_equal(n, 8);
    assert_string_equal(libs[6], "/usr/local/nvidia/lib64/libcuda.so.1");
    assert_string_equal(libs[7], "/lib/libcuda.so.1");
    for (int i = 0; i < n; i++)
        assert_null(strstr(libs[i], "cudart"));
#endif
    /* This machine: the driver is not installed (a development machine), or its libraries
     * are root's; either way every answer is a root-owned path. */
    n = tctr_driver_libs(libs, 8);
    for (int i = 0; i < n; i++) {
        struct stat st;
        assert_int_equal(lstat(libs[i], &st), 0);
        assert_int_equal(st.st_uid, 0);
    }
}

/* A driver library's path and every directory above it must be root's and writable by no one
 * else (review of 2026-11-27: only the file's own directory was checked). */
static void test_root_path(void **state)
{
    (void)state;
    assert_int_equal(geteuid(), 0);
    char dir[64], sub[96], file[128], link[128], tmpf[128];
    snprintf(dir, sizeof dir, "/run/tessel-test-rootpath-XXXXXX"); /* /run: root's, 0755 */
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0755), 0);
    snprintf(sub, sizeof sub, "%s/lib", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(file, sizeof file, "%s/libcuda.so.1", sub);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(file, 0644), 0);
    snprintf(link, sizeof link, "%s/libcuda.so", sub);
    assert_int_equal(symlink("libcuda.so.1", link), 0);
    assert_true(tctr_root_path_ok(file));
    assert_true(tctr_root_path_ok(link));
    /* A directory above the file's own writable by its group: refused, file and link. */
    assert_int_equal(chmod(dir, 0775), 0);
    assert_false(tctr_root_path_ok(file));
    assert_false(tctr_root_path_ok(link));
    assert_int_equal(chmod(dir, 0755), 0);
    /* The file's own directory owned by another account. */
    assert_int_equal(chown(sub, 65534, 65534), 0);
    assert_false(tctr_root_path_ok(file));
    assert_int_equal(chown(sub, 0, 0), 0);
    /* The file itself writable by others, or not there; a relative path. */
    assert_int_equal(chmod(file, 0666), 0);
    assert_false(tctr_root_path_ok(file));
    assert_int_equal(chmod(file, 0644), 0);
    assert_false(tctr_root_path_ok("/run/tessel-test-no-such-dir/libcuda.so.1"));
    assert_false(tctr_root_path_ok("lib/libcuda.so.1"));
    assert_true(tctr_root_path_ok(file));
    /* Under a sticky, world-writable directory (/tmp): refused. */
    snprintf(tmpf, sizeof tmpf, "/tmp/tessel-test-rootpath-%d", (int)getpid());
    f = fopen(tmpf, "w");
    assert_non_null(f);
    fclose(f);
    assert_false(tctr_root_path_ok(tmpf));
    unlink(tmpf);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* A bind whose path inside is not its host path, under the cwd: crun would make its mount
 * point in the user's bound host directory (review of 2026-11-27): refused, with the reason. */
static void test_config_mount_under_cwd(void **state)
{
    (void)state;
    char *argv[] = {"true", NULL};
    char *envp[] = {"PATH=/bin", NULL};
    tctr_bind_t binds[] = {{"/s/rootfs/cwd", "/srv/p", true, false},
                           {"/srv/p/data", "/srv/p/data", false, false}, /* its own path */
                           {"/s/limits", "/srv/p/x/limits", false, false}};
    tctr_spec_t s = {.root = "/s/rootfs/root",
                     .argv = argv,
                     .envp = envp,
                     .cwd = "/srv/p",
                     .uid = 65534,
                     .gid = 65534,
                     .binds = binds,
                     .nbinds = 2};
    tsl_error_t err;
    json_t *c = tctr_config(&s, &err);
    assert_non_null(c); /* the cwd's own bind and a bind at its host path: fine */
    json_decref(c);
    s.nbinds = 3;
    errno = 0;
    assert_null(tctr_config(&s, &err));
    assert_int_equal(errno, EINVAL);
    assert_non_null(strstr(err.text, "'/srv/p' holds /srv/p/x/limits"));
    s.cwd = "/srv/pq"; /* a sibling with the same prefix is not a parent */
    binds[0].dst = "/srv/pq";
    c = tctr_config(&s, &err);
    assert_non_null(c);
    json_decref(c);
}

static void test_devices(void **state)
{
    assert_int_equal(geteuid(), 0); /* mknod */
    char dir[128], dev[256], proc[256], p[512];
    assert_int_equal(test_tmpdir(dir, sizeof dir, "ctrdev"), 0);
    snprintf(dev, sizeof dev, "%s/dev", dir);
    snprintf(proc, sizeof proc, "%s/gpus", dir);
    assert_int_equal(mkdir(dev, 0755), 0);
    static const char *const nodes[] = {"nvidia0", "nvidia1",   "nvidia2",
                                        "nvidia3", "nvidiactl", "nvidia-uvm"};
    for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++) {
        snprintf(p, sizeof p, "%s/%s", dev, nodes[i]);
        assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(1, 3)), 0); /* /dev/null's numbers */
    }
    snprintf(p, sizeof p, "%s/nvidia-modeset", dev); /* not a character device: not taken */
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    /* GPU 1 of NVML sits at bus 0000:3b:00.0, whose minor number is 3 (written as the driver
     * writes it on an H200 host: "Device Minor: \t 0"). */
    snprintf(p, sizeof p, "%s/0000:3b:00.0", proc);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && printf 'Model: X\\nDevice Minor: \\t 3\\n' >'%s/information'", p, p);
    assert_int_equal(system(cmd), 0);
    char out[16][PATH_MAX];
    const char *bus[] = {"00000000:3B:00.0", "00000000:AF:00.0"};
    int idx[] = {1, 2};
    int n = tctr_gpu_devices(dev, proc, bus, idx, 2, out, 16);
    assert_int_equal(n, 4);
    snprintf(p, sizeof p, "%s/nvidiactl", dev);
    assert_string_equal(out[0], p);
    snprintf(p, sizeof p, "%s/nvidia-uvm", dev);
    assert_string_equal(out[1], p);
    snprintf(p, sizeof p, "%s/nvidia3", dev); /* the minor number, not the index */
    assert_string_equal(out[2], p);
    snprintf(p, sizeof p, "%s/nvidia2", dev); /* no /proc entry: the index */
    assert_string_equal(out[3], p);
    /* Only the job's GPUs: nvidia0 and nvidia1 are never there. */
    for (int i = 0; i < n; i++) {
        assert_null(strstr(out[i], "nvidia0"));
        assert_null(strstr(out[i], "nvidia1"));
    }
    /* A job without a GPU gets no NVIDIA device at all. */
    assert_int_equal(tctr_gpu_devices(dev, proc, bus, idx, 0, out, 16), 0);
    assert_int_equal(tctr_gpu_devices(dev, proc, bus, idx, 2, out, 2), 2);
    test_tmpdir_remove(dir);
}

static bool has_string(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (strcmp(json_string_value(v), s) == 0) return true;
    return false;
}

static void test_config(void **state)
{
    char *argv[] = {"sh", "-c", "echo $X; --privileged", "--volume=/:/host", NULL};
    char *envp[] = {"PATH=/bin", "X=a b\nc", "--privileged=true", "LD_PRELOAD=/i.so", NULL};
    gid_t groups[] = {65534, 27};
    /* The cwd on a noexec host mount, a second bind of a read-only one: their flags kept. */
    tctr_bind_t binds[] = {{"/s/rootfs/cwd", "/home/u/p", true, true},
                           {"/lib/i.so", "/lib/i.so", false, false},
                           {"/data/ro", "/data/ro", false, true}};
    char devs[1][PATH_MAX] = {"/dev/null"};
    tctr_spec_t s = {.root = "/s/rootfs/root",
                     .argv = argv,
                     .envp = envp,
                     .cwd = "/home/u/p",
                     .uid = 65534,
                     .gid = 65534,
                     .groups = groups,
                     .ngroups = 2,
                     .binds = binds,
                     .nbinds = 3,
                     .devices = devs,
                     .ndevices = 1};
    tsl_error_t err;
    json_t *c = tctr_config(&s, &err);
    assert_non_null(c);
    json_t *p = json_object_get(c, "process");
    assert_true(json_is_true(json_object_get(p, "noNewPrivileges")));
    assert_true(json_is_false(json_object_get(p, "terminal")));
    assert_null(json_object_get(p, "consoleSize"));
    /* With a terminal (tessel run -it --image): crun makes it, 24x80 until the client's size. */
    s.terminal = true;
    json_t *ct = tctr_config(&s, &err);
    assert_non_null(ct);
    json_t *pt = json_object_get(ct, "process");
    assert_true(json_is_true(json_object_get(pt, "terminal")));
    json_t *size = json_object_get(pt, "consoleSize");
    assert_int_equal(json_integer_value(json_object_get(size, "height")), 24);
    assert_int_equal(json_integer_value(json_object_get(size, "width")), 80);
    json_decref(ct);
    s.terminal = false;
    json_t *caps = json_object_get(p, "capabilities");
    const char *key;
    json_t *set;
    int nsets = 0;
    json_object_foreach(caps, key, set)
    {
        assert_int_equal(json_array_size(set), 0);
        nsets++;
    }
    assert_int_equal(nsets, 5);
    json_t *user = json_object_get(p, "user");
    assert_int_equal(json_integer_value(json_object_get(user, "uid")), 65534);
    assert_int_equal(json_integer_value(json_object_get(user, "gid")), 65534);
    assert_int_equal(json_array_size(json_object_get(user, "additionalGids")), 2);
    /* argv and env exactly as given: strings in a JSON document, never an engine's options. */
    json_t *args = json_object_get(p, "args");
    assert_int_equal(json_array_size(args), 4);
    assert_string_equal(json_string_value(json_array_get(args, 3)), "--volume=/:/host");
    json_t *env = json_object_get(p, "env");
    assert_int_equal(json_array_size(env), 4);
    assert_true(has_string(env, "X=a b\nc"));
    assert_string_equal(json_string_value(json_object_get(p, "cwd")), "/home/u/p");
    assert_string_equal(json_string_value(json_object_get(json_object_get(c, "root"), "path")),
                        "/s/rootfs/root");
    /* Mounts: the kernel's file systems, then only the binds given (rw only where asked). */
    json_t *mounts = json_object_get(c, "mounts");
    size_t i;
    json_t *m;
    int nbind = 0;
    json_array_foreach(mounts, i, m)
    {
        const char *type = json_string_value(json_object_get(m, "type"));
        json_t *o = json_object_get(m, "options");
        if (strcmp(type, "bind") == 0) {
            nbind++;
            const char *dst = json_string_value(json_object_get(m, "destination"));
            bool rw = strcmp(dst, "/home/u/p") == 0;
            bool nx = rw || strcmp(dst, "/data/ro") == 0;
            assert_true(has_string(o, "nosuid") && has_string(o, "nodev"));
            assert_true(has_string(o, "ro") != rw);
            assert_true(has_string(o, "noexec") == nx);
        } else {
            assert_true(has_string(o, "nosuid"));
        }
        if (strcmp(json_string_value(json_object_get(m, "destination")), "/sys") == 0)
            assert_true(has_string(o, "ro"));
    }
    assert_int_equal(nbind, 3);
    /* Namespaces: mount and IPC only (host network and PIDs, as a process job). */
    json_t *lx = json_object_get(c, "linux");
    json_t *ns = json_object_get(lx, "namespaces");
    assert_int_equal(json_array_size(ns), 2);
    json_array_foreach(ns, i, m)
    {
        const char *t = json_string_value(json_object_get(m, "type"));
        assert_true(strcmp(t, "mount") == 0 || strcmp(t, "ipc") == 0);
    }
    json_t *devices = json_object_get(lx, "devices");
    assert_int_equal(json_array_size(devices), 1);
    json_t *d0 = json_array_get(devices, 0);
    assert_string_equal(json_string_value(json_object_get(d0, "type")), "c");
    assert_int_equal(json_integer_value(json_object_get(d0, "major")), 1);
    assert_int_equal(json_integer_value(json_object_get(d0, "minor")), 3);
    assert_true(has_string(json_object_get(lx, "maskedPaths"), "/proc/kcore"));
    assert_true(has_string(json_object_get(lx, "readonlyPaths"), "/proc/sys"));
    assert_null(json_object_get(c, "hostname")); /* no UTS namespace: none to set */
    json_decref(c);

    /* A device that is not a character device: refused, nothing returned. */
    char bad[1][PATH_MAX] = {"/etc/passwd"};
    s.devices = bad;
    assert_null(tctr_config(&s, &err));
    assert_non_null(strstr(err.text, "/etc/passwd"));
    char gone[1][PATH_MAX] = {"/dev/tessel-no-such-device"};
    s.devices = gone;
    assert_null(tctr_config(&s, &err));
    assert_int_equal(errno, ENOENT);
}

static void test_runtime(void **state)
{
    char rt[4096], why[256];
    if (tctr_runtime_find(rt, sizeof rt, why, sizeof why) == 0) {
        struct stat st;
        assert_int_equal(stat(rt, &st), 0);
        assert_int_equal(st.st_uid, 0);
        assert_int_equal(st.st_mode & 022, 0);
    } else {
        assert_int_equal(errno, ENOENT);
        assert_non_null(strstr(why, "crun"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_valid),
        cmocka_unit_test(test_cwd_valid),
        cmocka_unit_test(test_image_split),
        cmocka_unit_test(test_store),
        cmocka_unit_test(test_ldconfig),
        cmocka_unit_test(test_root_path),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_config_mount_under_cwd),
        cmocka_unit_test(test_runtime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
