/* test_wait.c - why a job waits (tessel/sched_wait.h): one small case per reason, worked out
 * by hand, checked as data and as the line a person reads; the list of changed reasons; and
 * the submission check "can this job ever run?".
 *
 * Clusters of A100s (80 GiB), 64 CPUs, 512 GiB; "binpack" placement (fullest GPU first).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "queue_fixture.h"
#include "tessel/sched_wait.h"

/* The reason of job id after the last cycle, as text; its code in *code. */
static const char *why(struct fx *f, uint64_t id, tsched_wait_code_t *code)
{
    static char buf[512];
    tsched_wait_t w;
    assert_int_equal(tsched_job_wait(f->s, id, &w), 0);
    *code = w.code;
    int n = tsched_wait_format(&w, buf, sizeof buf);
    assert_int_equal(n, (int)strlen(buf));
    return buf;
}

static int changed(const struct fx *f, uint64_t id)
{
    const uint64_t *ids;
    size_t n = tsched_waits_changed(f->s, &ids);
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* 1 node x 2 GPUs.  Jobs 1 and 2 take 0.7 of each GPU.  Job 3 (0.5) finds no GPU with 0.5
 * free: Resources, best gpu0 with 0.3 (the first of two equal GPUs).  Job 4, same shape,
 * later: Priority, behind job 3.  A second cycle with nothing new changes no reason.  Job 5
 * (priority 5, same shape) goes ahead of both.  Once job 1 ends, gpu0 holds jobs 5 and 3, and
 * job 4, alone short of room, is back to Resources. */
static void test_resources_and_priority(void **state)
{
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    int a = fx_queue(&f, "vision", NULL, 2000, 0, 1);
    assert_int_equal(fx_submit(&f, 1, a, TSCHED_CLASS_TRAINING, 0, 0, 1, 700), 0);
    assert_int_equal(fx_submit(&f, 2, a, TSCHED_CLASS_TRAINING, 0, 1, 1, 700), 0);
    fx_cycle(&f, 1);
    assert_int_equal(f.d.nstarts, 2);
    assert_int_equal(fx_submit(&f, 3, a, TSCHED_CLASS_TRAINING, 0, 2, 1, 500), 0);
    assert_int_equal(fx_submit(&f, 4, a, TSCHED_CLASS_TRAINING, 0, 3, 1, 500), 0);
    fx_cycle(&f, 3);
    tsched_wait_code_t code;
    assert_string_equal(why(&f, 3, &code),
                        "Resources: no GPU has 0.5 free (best: gpu0 has 0.3 and 80.0 GiB free)");
    assert_int_equal(code, TSCHED_WAIT_RESOURCES);
    assert_string_equal(why(&f, 4, &code),
                        "Priority: behind job 3 of queue 'vision' (no GPU has 0.5 free (best: "
                        "gpu0 has 0.3 and 80.0 GiB free))");
    assert_int_equal(code, TSCHED_WAIT_PRIORITY);
    assert_true(changed(&f, 3));
    assert_true(changed(&f, 4));
    assert_int_equal(tsched_waits_changed(f.s, NULL), 2);
    /* running jobs have no reason */
    assert_string_equal(why(&f, 1, &code), "None: not examined yet");
    assert_int_equal(code, TSCHED_WAIT_NONE);

    fx_cycle(&f, 4);
    assert_int_equal(tsched_waits_changed(f.s, NULL), 0);

    /* a priority-5 job of the same shape goes ahead of both */
    assert_int_equal(fx_submit(&f, 5, a, TSCHED_CLASS_TRAINING, 5, 4, 1, 500), 0);
    fx_cycle(&f, 5);
    assert_int_equal(tsched_waits_changed(f.s, NULL), 3);
    assert_string_equal(why(&f, 4, &code),
                        "Priority: behind jobs 5, 3 of queue 'vision' (no GPU has 0.5 free "
                        "(best: gpu0 has 0.3 and 80.0 GiB free))");

    /* job 1 ends: gpu0 has room for two halves, jobs 5 and 3 start; job 4 waits alone */
    assert_int_equal(tsched_job_remove(f.s, 1, 6), 0);
    fx_cycle(&f, 6);
    assert_true(fx_started(&f, 5));
    assert_true(fx_started(&f, 3));
    assert_false(changed(&f, 3));
    assert_true(changed(&f, 4));
    assert_int_equal(tsched_waits_changed(f.s, NULL), 1);
    assert_string_equal(why(&f, 4, &code),
                        "Resources: no GPU has 0.5 free (best: gpu1 has 0.3 and 80.0 GiB free)");
    assert_string_equal(why(&f, 3, &code), "None: not examined yet");
    fx_fini(&f);
}

/* Queue 'vision' is limited to 2 GPUs; it uses 1.5 (three jobs of 0.5) and the next job asks
 * for 1: QueueLimit with the figures.  An interactive job of queue 'nlp' (guarantee 1) beside
 * another that uses it: GuaranteeLimit. */
static void test_limits(void **state)
{
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int v = fx_queue(&f, "vision", NULL, 0, 2000, 1);
    int n = fx_queue(&f, "nlp", NULL, 1000, 0, 1);
    for (uint64_t i = 1; i <= 3; i++)
        assert_int_equal(fx_submit(&f, i, v, TSCHED_CLASS_TRAINING, 0, (double)i, 1, 500), 0);
    assert_int_equal(fx_submit(&f, 5, n, TSCHED_CLASS_INTERACTIVE, 0, 1, 1, 1000), 0);
    fx_cycle(&f, 3);
    assert_int_equal(f.d.nstarts, 4);
    assert_int_equal(fx_submit(&f, 4, v, TSCHED_CLASS_TRAINING, 0, 4, 1, 1000), 0);
    assert_int_equal(fx_submit(&f, 6, n, TSCHED_CLASS_INTERACTIVE, 0, 4, 1, 1000), 0);
    fx_cycle(&f, 4);
    tsched_wait_code_t code;
    assert_string_equal(why(&f, 4, &code),
                        "QueueLimit: queue 'vision' would exceed its limit gpu=2 (uses 1.5, job "
                        "asks 1)");
    assert_int_equal(code, TSCHED_WAIT_QUEUE_LIMIT);
    assert_string_equal(why(&f, 6, &code),
                        "GuaranteeLimit: interactive and inference jobs of queue 'nlp' must fit "
                        "within its guarantee gpu=1 (they use 1, job asks 1)");
    assert_int_equal(code, TSCHED_WAIT_GUARANTEE_LIMIT);

    /* a queue closed with a limit of 0 */
    int h = fx_queue(&f, "held", NULL, 0, 0, 1);
    tsched_res_t g = {0, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    tsched_res_t lim = {0, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    assert_int_equal(tsched_queue_update(f.s, h, &g, &lim, 1, NULL), 0);
    assert_int_equal(fx_submit(&f, 7, h, TSCHED_CLASS_TRAINING, 0, 5, 1, 250), 0);
    fx_cycle(&f, 5);
    assert_string_equal(why(&f, 7, &code),
                        "QueueLimit: queue 'held' is closed (limit gpu=0): its jobs wait until an "
                        "admin raises it");
    fx_fini(&f);
}

/* 1 node x 4 GPUs.  'vision' (guarantee 2) borrows all four GPUs with jobs 1-4 (started
 * t = 1..4); 'nlp' (guarantee 2) asks for one at t = 100: job 4, the youngest borrowed one,
 * is its victim: Guarantee.  In 'vision', a priority-5 job finds no over-quota work of other
 * queues and preempts its own lower-priority job 3: Preempting. */
static void test_guarantee_and_preempting(void **state)
{
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int v = fx_queue(&f, "vision", NULL, 2000, 0, 1);
    int n = fx_queue(&f, "nlp", NULL, 2000, 0, 1);
    for (uint64_t i = 1; i <= 4; i++) {
        assert_int_equal(fx_submit(&f, i, v, TSCHED_CLASS_TRAINING, 0, (double)i, 1, 1000), 0);
        fx_cycle(&f, (double)i);
    }
    assert_int_equal(fx_submit(&f, 41, n, TSCHED_CLASS_TRAINING, 0, 100, 1, 1000), 0);
    assert_int_equal(fx_submit(&f, 42, v, TSCHED_CLASS_TRAINING, 5, 100, 1, 1000), 0);
    fx_cycle(&f, 100);
    assert_int_equal(f.d.nvictims, 2);
    tsched_wait_code_t code;
    assert_string_equal(why(&f, 41, &code),
                        "Guarantee: waiting for queue 'nlp' to get back its guarantee "
                        "(reclaiming from job 4)");
    assert_int_equal(code, TSCHED_WAIT_GUARANTEE);
    assert_string_equal(why(&f, 42, &code),
                        "Preempting: waiting for lower-priority job 3 of queue 'vision' to stop");
    assert_int_equal(code, TSCHED_WAIT_PREEMPTING);
    fx_fini(&f);
}

/* 1 node x 4 GPUs, reservations after 900 s.  Job 1 holds two GPUs.  Job 10 (4 GPUs,
 * t = 0) waits 1000 s and gets a reservation: what is free (gpu2, gpu3) is held for it.  Job
 * 11 (1 GPU, arrived later) would fit there: Reservation. */
static void test_reservation(void **state)
{
    struct fx f;
    fx_init(&f, 1, 4, NULL);
    int a = fx_queue(&f, "A", NULL, 4000, 0, 1);
    assert_int_equal(fx_submit(&f, 1, a, TSCHED_CLASS_TRAINING, 0, 0, 2, 1000), 0);
    fx_cycle(&f, 0);
    assert_int_equal(fx_submit(&f, 10, a, TSCHED_CLASS_TRAINING, 0, 0, 4, 1000), 0);
    fx_cycle(&f, 1);
    tsched_wait_code_t code;
    assert_string_equal(why(&f, 10, &code), "Resources: no node has 4 whole GPUs free (best: 2)");
    assert_int_equal(code, TSCHED_WAIT_RESOURCES);
    assert_int_equal(fx_submit(&f, 11, a, TSCHED_CLASS_TRAINING, 0, 500, 1, 1000), 0);
    fx_cycle(&f, 1000);
    assert_int_equal(f.d.reserved, 1);
    assert_int_equal(f.d.nstarts, 0);
    assert_string_equal(why(&f, 11, &code),
                        "Reservation: GPU gpu2 is reserved for job 10, which has waited longest");
    assert_int_equal(code, TSCHED_WAIT_RESERVATION);
    fx_fini(&f);
}

/* Reasons the caller sets, names, and text cut to the buffer like snprintf. */
static void test_dependency_and_names(void **state)
{
    tsched_wait_t w;
    uint64_t ids[6] = {7, 8, 9, 10, 11, 12};
    tsched_wait_dependency(&w, ids, 2);
    char buf[128];
    tsched_wait_format(&w, buf, sizeof buf);
    assert_string_equal(buf, "Dependency: waiting for jobs 7, 8 to end");
    tsched_wait_dependency(&w, ids, 6);
    int n = tsched_wait_format(&w, buf, sizeof buf);
    assert_string_equal(buf, "Dependency: waiting for jobs 7, 8, 9, 10 and 2 more to end");
    char small[12];
    assert_int_equal(tsched_wait_format(&w, small, sizeof small), n);
    assert_string_equal(small, "Dependency:");
    for (int c = 0; c < TSCHED_WAIT_NCODES; c++)
        assert_int_equal(tsched_wait_code_parse(tsched_wait_code_name((tsched_wait_code_t)c)), c);
    assert_int_equal(tsched_wait_code_parse("Nonsense"), -1);
    assert_string_equal(tsched_wait_code_name(TSCHED_WAIT_NCODES), "Unknown");
    assert_int_equal(tsched_job_wait(NULL, 1, &w), -1);
    assert_int_equal(errno, ENOENT);
}

/* Jobs that can never run, and one that can. */
static void test_feasible(void **state)
{
    struct fx f;
    fx_init(&f, 1, 2, NULL);
    tsched_queue_spec_t path[2];
    memset(path, 0, sizeof path);
    path[0].name = "vision";
    path[1].name = "lab";
    tsched_res_t unl = {TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED, TSCHED_UNLIMITED};
    path[0].guarantee = path[0].limit = path[1].guarantee = path[1].limit = unl;
    path[1].limit.milli_gpu = 1000;
    path[0].guarantee.milli_gpu = 500;
    tsched_job_t r;
    memset(&r, 0, sizeof r);
    r.ngpus = 1;
    r.milli_gpu = 500;
    r.cpu_milli = 1000;
    r.mem_bytes = GIB;
    tsched_wait_t w;
    char buf[256];
    assert_int_equal(tsched_job_feasible(f.c, f.p, path, 2, TSCHED_CLASS_INTERACTIVE, &r, &w), 1);

    /* two GPUs: the ancestor's limit is 1 */
    r.ngpus = 2;
    assert_int_equal(tsched_job_feasible(f.c, f.p, path, 2, TSCHED_CLASS_TRAINING, &r, &w), 0);
    tsched_wait_format(&w, buf, sizeof buf);
    assert_string_equal(buf, "QueueLimit: the job asks gpu=2, above queue 'lab''s limit gpu=1");
    assert_int_equal(w.never, 1);

    /* an interactive job beyond the leaf's guarantee */
    r.ngpus = 1;
    r.milli_gpu = 800;
    assert_int_equal(tsched_job_feasible(f.c, f.p, path, 2, TSCHED_CLASS_INTERACTIVE, &r, &w), 0);
    tsched_wait_format(&w, buf, sizeof buf);
    assert_string_equal(buf, "GuaranteeLimit: interactive and inference jobs must fit within "
                             "queue 'vision''s guarantee gpu=0.5 (the job asks 0.8)");

    /* more GPU memory than any GPU has */
    r.gpu_mem_bytes = 100 * GIB;
    assert_int_equal(tsched_job_feasible(f.c, f.p, path, 1, TSCHED_CLASS_TRAINING, &r, &w), 0);
    tsched_wait_format(&w, buf, sizeof buf);
    assert_string_equal(buf, "Resources: no GPU can hold 0.8 with 100 GiB (largest: gpu0 holds 1 "
                             "and 80.0 GiB)");
    assert_int_equal(w.code, TSCHED_WAIT_RESOURCES);

    /* more GPUs than the node has (no queue) */
    r.gpu_mem_bytes = 0;
    r.ngpus = 3;
    assert_int_equal(tsched_job_feasible(f.c, f.p, NULL, 0, TSCHED_CLASS_TRAINING, &r, &w), 0);
    tsched_wait_format(&w, buf, sizeof buf);
    assert_string_equal(buf, "Resources: no node can hold 3 whole GPUs (largest: 2)");

    /* more CPU than the machine */
    r.ngpus = 0;
    r.cpu_milli = 65000;
    assert_int_equal(tsched_job_feasible(f.c, f.p, NULL, 0, TSCHED_CLASS_TRAINING, &r, &w), 0);
    tsched_wait_format(&w, buf, sizeof buf);
    assert_string_equal(buf, "Resources: no node can hold 65 CPU (largest: 64)");

    /* more memory than the machine */
    r.cpu_milli = 1000;
    r.mem_bytes = 1024 * GIB;
    assert_int_equal(tsched_job_feasible(f.c, f.p, NULL, 0, TSCHED_CLASS_TRAINING, &r, &w), 0);
    tsched_wait_format(&w, buf, sizeof buf);
    assert_string_equal(buf, "Resources: no node can hold 1.00 TiB of memory (largest: 512 GiB)");

    /* a limit of 0 closes a queue for now: its jobs are accepted and wait */
    r.mem_bytes = GIB;
    r.ngpus = 1;
    r.milli_gpu = 500;
    path[1].limit.milli_gpu = 0;
    assert_int_equal(tsched_job_feasible(f.c, f.p, path, 2, TSCHED_CLASS_TRAINING, &r, &w), 1);

    assert_int_equal(tsched_job_feasible(NULL, f.p, NULL, 0, TSCHED_CLASS_TRAINING, &r, &w), -1);
    assert_int_equal(errno, EINVAL);
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resources_and_priority),   cmocka_unit_test(test_limits),
        cmocka_unit_test(test_guarantee_and_preempting), cmocka_unit_test(test_reservation),
        cmocka_unit_test(test_dependency_and_names),     cmocka_unit_test(test_feasible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
