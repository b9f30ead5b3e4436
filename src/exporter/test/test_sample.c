/* test_sample.c - the exporter's reading of a node's slices (sample.c, tex_read_slices): a
 * job's slice file is read without crossing a mount point (a mount over it, such as a user's
 * FUSE mount, would make the sampler wait for its server: review of 2026-11-27).  Needs root
 * (the plugin's directories are root's; the mount). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "exporter/sample.h"
#include "libshm/shm.h"

#define MiB (1ull << 20)

static char base[64], state[128], jobdir[160], slice[200];
static const unsigned char uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const unsigned char uuid2[16] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **st)
{
    (void)st;
    snprintf(base, sizeof base, "/tmp/tessel-test-sample.XXXXXX");
    if (!mkdtemp(base))
        return -1;
    snprintf(state, sizeof state, "%s/state", base);
    snprintf(jobdir, sizeof jobdir, "%s/42", state);
    char step[200];
    snprintf(step, sizeof step, "%s/0", jobdir);
    if (mkdir(state, 0755) < 0 || mkdir(jobdir, 0755) < 0 || mkdir(step, 0755) < 0)
        return -1;
    char gpus[220];
    snprintf(gpus, sizeof gpus, "%s/gpus", step);
    put(gpus, "0 1073741824 50\n"); /* GPU 0: 1 GiB, 50 % (root's, as the plugin writes it) */
    snprintf(slice, sizeof slice, "%s/slice", jobdir);
    tsl_error_t err;
    if (tshm_create(slice, 0, 0, 0600, &err) < 0)
        return -1;
    tshm_t *s = tshm_attach(slice, &err);
    if (!s)
        return -1;
    int dev = tshm_device(s, uuid, 1ull << 30, &err);
    /* and a device of GPU 1, which the job's steps do not give it (read_node2) */
    int dev2 = tshm_device(s, uuid2, 2ull << 30, &err);
    if (dev < 0 || dev2 < 0 || tshm_register(s, &err) < 0 || tshm_reserve(s, dev, 300 * MiB) < 0 ||
        tshm_reserve(s, dev2, 500 * MiB) < 0)
        return -1;
    tshm_close(s);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    char cmd[128];
    umount2(slice, MNT_DETACH);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    return system(cmd) == 0 ? 0 : -1;
}

static int read_node(tnf_node_t *n)
{
    tagent_gpu_t g = {.index = 0};
    memcpy(g.uuid_bin, uuid, 16);
    memset(n, 0, sizeof *n);
    n->ngpus = 1;
    n->gpus[0].index = 0;
    return tex_read_slices(state, &g, 1, n);
}

static void test_slice_read(void **st)
{
    (void)st;
    tnf_node_t n;
    assert_int_equal(read_node(&n), 1);
    assert_int_equal(n.nslices, 1);
    assert_int_equal(n.slices[0].job, 42);
    assert_string_equal(n.slices[0].user, "root");
    assert_int_equal(n.slices[0].memory_limit, 1ull << 30);
    assert_int_equal(n.slices[0].memory_used, 300 * MiB);
    tnf_node_clear(&n);
}

/* A mount over the slice file (here a bind of another file; a user's FUSE mount in the
 * review's case): not read through it, the job left out, nothing waits. */
static void test_slice_mounted_over(void **st)
{
    (void)st;
    char other[200];
    snprintf(other, sizeof other, "%s/other", base);
    put(other, "not a slice\n");
    assert_int_equal(mount(other, slice, NULL, MS_BIND, NULL), 0);
    tnf_node_t n;
    assert_int_equal(read_node(&n), 1);
    assert_int_equal(n.nslices, 0);
    tnf_node_clear(&n);
    assert_int_equal(umount2(slice, 0), 0);
    assert_int_equal(read_node(&n), 1);
    assert_int_equal(n.nslices, 1); /* the file itself again */
    tnf_node_clear(&n);
}

/* A node of two GPUs; the job's slice file (the user's to write) also holds a device of GPU 1
 * with 500 MiB used (setup). */
static int read_node2(tnf_node_t *n)
{
    tagent_gpu_t g[2] = {{.index = 0}, {.index = 1}};
    memcpy(g[0].uuid_bin, uuid, 16);
    memcpy(g[1].uuid_bin, uuid2, 16);
    memset(n, 0, sizeof *n);
    n->ngpus = 2;
    n->gpus[0].index = 0;
    n->gpus[1].index = 1;
    return tex_read_slices(state, g, 2, n);
}

/* The step's gpus file gives the job GPU 0 only: the slice file's GPU 1 is not shown. */
static void test_slice_gpu_not_given(void **st)
{
    (void)st;
    tnf_node_t n;
    assert_int_equal(read_node2(&n), 1);
    assert_int_equal(n.nslices, 1);
    assert_int_equal(n.slices[0].gpu, 0);
    assert_int_equal(n.slices[0].memory_used, 300 * MiB);
    tnf_node_clear(&n);
}

/* Steps without a gpus file (an older plugin): the slice file is all there is, both shown. */
static void test_slice_no_gpus_file(void **st)
{
    (void)st;
    char gpus[220];
    snprintf(gpus, sizeof gpus, "%s/0/gpus", jobdir);
    assert_int_equal(unlink(gpus), 0);
    tnf_node_t n;
    assert_int_equal(read_node2(&n), 1);
    assert_int_equal(n.nslices, 2);
    assert_int_equal(n.slices[0].gpu + n.slices[1].gpu, 1);
    assert_int_equal(n.slices[0].memory_used + n.slices[1].memory_used, 800 * MiB);
    tnf_node_clear(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slice_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slice_mounted_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slice_gpu_not_given, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slice_no_gpus_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
