/* container_launch.h - tesseld's side of container jobs (container_launch.c). */
#ifndef TESSEL_DAEMON_CONTAINER_LAUNCH_H
#define TESSEL_DAEMON_CONTAINER_LAUNCH_H

#include <limits.h>

#include <jansson.h>

#include "daemon/daemon.h"
#include "daemon/pwcache.h"

/* <data-dir>/images: the image store (container.h). */
void tessd_images_dir(const tessd_t *d, char *buf, size_t len);

/* A submission naming image (cwd: its cwd or NULL): 0 when it may be run; else the HTTP
 * status (400: a bad name or cwd; 422: no such image, no runtime, tesseld not root) with one
 * line in why and the field at fault in *field.  Reads the store's directories: no lock
 * needed. */
int tessd_container_check(const tessd_t *d, const char *image, const char *cwd, char *why,
                          size_t len, const char **field);

typedef struct {
    char runtime[PATH_MAX]; /* crun */
    char rootfs[PATH_MAX];  /* the image's root file system in the store */
    unsigned cwd_flags;     /* TAGENT_CTR_CWD_*: the cwd's host mount as the config binds it */
} tessd_container_t;

/* For job j (j->image set) about to start: find the runtime and the image again, and write
 * state/config.json (root's, 0600) and the empty state/rootfs the shim mounts on.  argv: the
 * job's command line (the shell's included); env: its whole environment (build_env) without
 * LD_PRELOAD; preload: its LD_PRELOAD (the interposer first) or NULL; pw: the account it runs
 * as, NULL for tesseld's own.  0 with *out, or -1 with errno and err. */
int tessd_container_prepare(tessd_t *d, const tstore_job_t *j, const tessd_run_t *r,
                            const tessd_pw_t *pw, char *const *argv, char *const *env,
                            const char *preload, const char *dir, const char *state,
                            tessd_container_t *out, tsl_error_t *err);

/* GET /v1/images: the store's images appended to arr (container.h, tctr_images_list). */
void tessd_images_json(const tessd_t *d, json_t *arr);

/* launch.c: dir/name written through an O_EXCL|O_NOFOLLOW temporary with mode, then renamed
 * (dir: root's, writable by root only).  0, or -1 with err. */
int tessd_write_root_file(const char *dir, const char *name, const char *text, mode_t mode,
                          tsl_error_t *err);

#endif
