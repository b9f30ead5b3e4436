/* container_launch.c - tesseld's side of a container job's start and submission (container.h,
 * docs/containers.md): the checks of a submission naming an image, and the config.json that
 * tessel-shim hands to crun.  launch.c calls tessd_container_prepare once the job's directory,
 * cgroup, environment and state directory (limits) are made, as for any job.
 *
 * What the container gets, all decided here from tesseld's own settings (never from the job):
 *   - the image's root file system (the shim mounts it under a writable layer);
 *   - the slice as a process job has it: the interposer bound read-only at its own path and
 *     named in LD_PRELOAD and in /etc/ld.so.preload (<data>/run/ld.so.preload, read-only), the
 *     limits file at /run/tessel/job/limits (read-only), the compute registry (its files are
 *     every job's to write, as on the host), the job's directory (its slice file, its logs);
 *   - the cwd (the user's, opened by the job's process as the user: ctrrun.h);
 *   - the GPU device nodes of the job's GPUs only, and the host's driver libraries (ldconfig),
 *     read-only; with --fake-gpus, the fake driver's directory instead: SIMULATED.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "agent/ctrrun.h"
#include "agent/jobns.h"
#include "agent/runner.h"
#include "daemon/container.h"
#include "daemon/container_launch.h"

/* Most supplementary groups put into the container (the kernel's NGROUPS_MAX is 65536). */
#define CTR_MAX_GROUPS 256

void tessd_images_dir(const tessd_t *d, char *buf, size_t len)
{
    snprintf(buf, len, "%s/images", d->data_dir);
}

int tessd_container_check(const tessd_t *d, const char *image, const char *cwd, char *why,
                          size_t len, const char **field)
{
    *field = "image";
    if (!tctr_image_valid(image, why, len))
        return 400;
    if (cwd && !tctr_cwd_valid(cwd, why, len)) {
        *field = "cwd";
        return 400;
    }
    if (d->slurm) {
        snprintf(why, len, "image: not with tesseld --slurm yet (docs/containers.md)");
        return 400;
    }
    if (geteuid() != 0 || !d->run_dir[0]) {
        snprintf(why, len,
                 "image: container jobs need tesseld running as root "
                 "(docs/containers.md)");
        return 422;
    }
    char runtime[PATH_MAX];
    if (tctr_runtime_find(runtime, sizeof runtime, why, len) < 0)
        return 422;
    char dir[PATH_MAX], rootfs[PATH_MAX];
    tessd_images_dir(d, dir, sizeof dir);
    int rc = tctr_image_find(dir, image, rootfs, sizeof rootfs, why, len);
    if (rc == 1)
        return 0;
    if (rc == 0)
        return 422; /* not in the store: why says so */
    return 422;     /* a store or an image that is not root's: refused, why says which */
}

/* "K=V" of env whose key is key, or NULL. */
static char *const *env_find(char *const *env, const char *key)
{
    size_t kl = strlen(key);
    for (char *const *e = env; *e; e++)
        if (strncmp(*e, key, kl) == 0 && (*e)[kl] == '=')
            return e;
    return NULL;
}

int tessd_container_prepare(tessd_t *d, const tstore_job_t *j, const tessd_run_t *r,
                            const tessd_pw_t *pw, char *const *argv, char *const *env,
                            const char *preload, const char *dir, const char *state,
                            tessd_container_t *out, tsl_error_t *err)
{
    char why[512];
    if (tctr_runtime_find(out->runtime, sizeof out->runtime, why, sizeof why) < 0)
        return tsl_errprintf(err, "%s", why);
    char images[PATH_MAX];
    tessd_images_dir(d, images, sizeof images);
    int found = tctr_image_find(images, j->image, out->rootfs, sizeof out->rootfs, why, sizeof why);
    if (found != 1) {
        errno = found == 0 ? ENOENT : EPERM;
        return tsl_errprintf(err, "%s", why);
    }

    /* The environment: the job's (build_env's, Tessel's variables last), the preload, and
     * where the driver's libraries are. */
    size_t nenv = 0;
    while (env[nenv])
        nenv++;
    char **cenv = calloc(nenv + 4, sizeof *cenv);
    char *preload_kv = NULL, *ldpath_kv = NULL, *cvd_kv = NULL;
    char libs[TCTR_MAX_LIBS][PATH_MAX], devs[TCTR_MAX_DEVICES][PATH_MAX];
    tctr_bind_t binds[16 + TCTR_MAX_LIBS + TAGENT_FOLDERS_MAX];
    /* Its virtual folders (docs/folders.md): <folder-root>/NAME at /tessel/folders/NAME. */
    char fsrc[TAGENT_FOLDERS_MAX][PATH_MAX + 40], fdst[TAGENT_FOLDERS_MAX][80];
    json_t *folders = j->folders_json ? json_loads(j->folders_json, 0, NULL) : NULL;
    size_t nb = 0;
    json_t *cfg = NULL;
    char *text = NULL;
    int rc = -1;
    if (!cenv)
        goto oom;
    int nlibs = 0, ndevs = 0;
    bool simulated = d->fake_spec[0] != '\0';
    if (simulated) {
        /* SIMULATED: the fake driver of tests/fake stands for the host's driver libraries; it
         * is on LD_LIBRARY_PATH already (build_env). */
    } else {
        nlibs = tctr_driver_libs(libs, TCTR_MAX_LIBS);
        const char *bus[TAGENT_MAX_GPUS];
        int idx[TAGENT_MAX_GPUS];
        int ng = 0;
        for (uint32_t i = 0; i < r->member.ngpus && ng < TAGENT_MAX_GPUS; i++) {
            int g = (int)r->member.gpu[i];
            bus[ng] = g >= 0 && g < d->ngpus ? d->gpus[g].bus_id : NULL;
            idx[ng++] = g;
        }
        ndevs = tctr_gpu_devices("/dev", "/proc/driver/nvidia/gpus", bus, idx, ng, devs,
                                 TCTR_MAX_DEVICES);
    }
    size_t ne = 0;
    for (size_t i = 0; i < nenv; i++) {
        if (strncmp(env[i], "LD_PRELOAD=", 11) == 0)
            continue;
        if (nlibs && strncmp(env[i], "LD_LIBRARY_PATH=", 16) == 0)
            continue;
        if (ndevs && strncmp(env[i], "CUDA_VISIBLE_DEVICES=", 21) == 0)
            continue;
        cenv[ne++] = env[i];
    }
    if (preload) {
        if (asprintf(&preload_kv, "LD_PRELOAD=%s", preload) < 0) {
            preload_kv = NULL;
            goto oom;
        }
        cenv[ne++] = preload_kv;
    }
    if (nlibs) {
        /* The driver's directories after the job's own. */
        char *const *old = env_find(env, "LD_LIBRARY_PATH");
        size_t cap = 32 + (old ? strlen(*old) : 0) + (size_t)nlibs * PATH_MAX;
        if (!(ldpath_kv = malloc(cap)))
            goto oom;
        size_t n = (size_t)snprintf(ldpath_kv, cap, "LD_LIBRARY_PATH=%s", old ? *old + 16 : "");
        for (int i = 0; i < nlibs; i++) {
            char ldir[PATH_MAX];
            memcpy(ldir, libs[i], PATH_MAX);
            ldir[PATH_MAX - 1] = '\0';
            char *slash = strrchr(ldir, '/');
            if (slash)
                *slash = '\0';
            if (!strstr(ldpath_kv + 16, ldir))
                n += (size_t)snprintf(ldpath_kv + n, cap - n, "%s%s", n > 16 ? ":" : "", ldir);
        }
        cenv[ne++] = ldpath_kv;
    }
    if (ndevs) {
        /* Only the job's GPUs have device nodes in the container: the driver numbers them
         * from 0 there (as with NVIDIA's container toolkit). */
        size_t cap = 32 + 4 * (size_t)r->member.ngpus;
        if (!(cvd_kv = malloc(cap)))
            goto oom;
        size_t n = (size_t)snprintf(cvd_kv, cap, "CUDA_VISIBLE_DEVICES=");
        for (uint32_t i = 0; i < r->member.ngpus; i++)
            n += (size_t)snprintf(cvd_kv + n, cap - n, "%s%u", i ? "," : "", (unsigned)i);
        cenv[ne++] = cvd_kv;
    }
    cenv[ne] = NULL;

    /* The binds, in this order: the cwd first, so that every one of Tessel's is above it. */
    char cwd_src[PATH_MAX + 16], preload_src[PATH_MAX + 32], limits_src[PATH_MAX + 32];
    snprintf(cwd_src, sizeof cwd_src, "%s/rootfs/cwd", state);
    if (tessd_preload_list(d, preload_src, sizeof preload_src, err) < 0)
        goto out;
    snprintf(limits_src, sizeof limits_src, "%s/limits", state);
    const char *cwd = j->cwd ? j->cwd : dir;
    /* The host mounts' read-only and noexec, kept inside: crun remounts a bind with exactly
     * the config's options (review of 2026-11-27).  The cwd's as tesseld sees it now; the
     * job's process checks that the directory it opens as the user is on a mount that needs
     * no more (ctrrun.h, --ctr-cwd-flags), or the job fails. */
    struct statvfs sv;
    unsigned dir_flags = statvfs(dir, &sv) == 0 ? tagent_ctr_cwd_flags_of(sv.f_flag) : 0;
    out->cwd_flags = dir_flags;
    if (j->cwd && strcmp(j->cwd, dir) != 0) {
        out->cwd_flags = statvfs(j->cwd, &sv) == 0 ? tagent_ctr_cwd_flags_of(sv.f_flag) : 0;
        binds[nb++] = (tctr_bind_t){cwd_src, j->cwd, !(out->cwd_flags & TAGENT_CTR_CWD_RO),
                                    (out->cwd_flags & TAGENT_CTR_CWD_NOEXEC) != 0};
    }
    binds[nb++] = (tctr_bind_t){dir, dir, !(dir_flags & TAGENT_CTR_CWD_RO),
                                (dir_flags & TAGENT_CTR_CWD_NOEXEC) != 0};
    if (d->interposer[0])
        binds[nb++] = (tctr_bind_t){d->interposer, d->interposer, false, false};
    binds[nb++] = (tctr_bind_t){preload_src, "/etc/ld.so.preload", false, false};
    binds[nb++] = (tctr_bind_t){limits_src, "/run/tessel/job/limits", false, false};
    if (d->registry_dir[0])
        binds[nb++] = (tctr_bind_t){d->registry_dir, d->registry_dir, true, false};
    if (simulated && d->fake_lib_dir[0])
        binds[nb++] = (tctr_bind_t){d->fake_lib_dir, d->fake_lib_dir, false, false};
    for (int i = 0; i < nlibs; i++)
        binds[nb++] = (tctr_bind_t){libs[i], libs[i], false, false};
    /* Checked at submission; the shim's rule again here (the name goes into two paths).  The
     * folder root and each folder's directory are root's: the path cannot be turned into a
     * link by a user.  Inside, the folder's ACLs decide for the job's account, as outside. */
    for (size_t fi = 0; fi < json_array_size(folders) && fi < TAGENT_FOLDERS_MAX; fi++) {
        const char *spec = json_string_value(json_array_get(folders, fi));
        bool ro;
        if (!spec || !tagent_jobns_folder_valid(spec, &ro)) {
            errno = EINVAL;
            tsl_errprintf(err, "folders[%zu]: not NAME or NAME:ro", fi);
            goto out;
        }
        int len = (int)strcspn(spec, ":");
        snprintf(fsrc[fi], sizeof fsrc[fi], "%s/%.*s", d->folder_root, len, spec);
        snprintf(fdst[fi], sizeof fdst[fi], "%s/%.*s", TAGENT_FOLDERS_DIR, len, spec);
        binds[nb++] = (tctr_bind_t){fsrc[fi], fdst[fi], !ro, false};
    }

    gid_t groups[CTR_MAX_GROUPS];
    int ngroups = 1;
    groups[0] = pw ? pw->gid : getegid();
    if (pw) {
        ngroups = CTR_MAX_GROUPS;
        if (getgrouplist(pw->name, pw->gid, groups, &ngroups) < 0)
            ngroups = CTR_MAX_GROUPS;
    }
    char root[PATH_MAX + 16];
    snprintf(root, sizeof root, "%s/rootfs/root", state);
    tctr_spec_t spec = {
        .root = root,
        .argv = argv,
        .envp = cenv,
        .cwd = cwd,
        .uid = pw ? pw->uid : geteuid(),
        .gid = pw ? pw->gid : getegid(),
        .groups = groups,
        .ngroups = (size_t)ngroups,
        .binds = binds,
        .nbinds = nb,
        .devices = devs,
        .ndevices = (size_t)ndevs,
        .terminal = j->tty,
    };
    if (!(cfg = tctr_config(&spec, err)))
        goto out;
    if (!(text = json_dumps(cfg, JSON_COMPACT)))
        goto oom;
    /* 0600: it holds the job's environment, which may hold the user's secrets. */
    if (tessd_write_root_file(state, "config.json", text, 0600, err) < 0)
        goto out;
    char sub[PATH_MAX + 16];
    snprintf(sub, sizeof sub, "%s/rootfs", state);
    if (mkdir(sub, 0700) < 0 && errno != EEXIST) {
        tsl_errprintf(err, "%s: %s", sub, strerror(errno));
        goto out;
    }
    tessd_log("job %lld: container of image %s (%s, %d driver librar%s, %d device node%s%s)",
              (long long)j->id, j->image, out->rootfs, nlibs, nlibs == 1 ? "y" : "ies", ndevs,
              ndevs == 1 ? "" : "s", simulated ? ", SIMULATED GPUs: the fake driver" : "");
    rc = 0;
    goto out;
oom:
    errno = ENOMEM;
    tsl_errprintf(err, "out of memory");
out:
    free(text);
    json_decref(cfg);
    json_decref(folders);
    free(preload_kv);
    free(ldpath_kv);
    free(cvd_kv);
    free(cenv);
    return rc;
}

void tessd_images_json(const tessd_t *d, json_t *arr)
{
    char dir[PATH_MAX], why[256];
    tessd_images_dir(d, dir, sizeof dir);
    if (tctr_images_list(dir, arr, why, sizeof why) < 0)
        tessd_log("images: %s", why);
}
