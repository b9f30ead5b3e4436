/* test_jobmodel.c - the job model (jobmodel.c) on a real store in a temporary file: every
 * state x event pair against the table written out here (legal: the new state, the columns
 * and the event record; illegal: -1 with EINVAL or EBUSY and nothing written), the guards,
 * the end causes, the choice of the end event, recovery from each state after a reopen of the
 * store (a restart), a store failure in the middle of a change (nothing half-written), and the
 * model's tallies against fresh counts of the store. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "daemon/jobmodel.h"

static char dir[64];
static char path[128];
static tstore_t *st;
static int notified;
static tjm_state_t last_from, last_to;

static void on_change(void *arg, int64_t id, tjm_state_t from, tjm_state_t to)
{
    (void)arg;
    (void)id;
    notified++;
    last_from = from;
    last_to = to;
}

static tjm_t model(void)
{
    return (tjm_t){.store = st, .notify = on_change, .arg = NULL};
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tessel-jm-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/tessel.db", dir);
    st = tstore_open(path, NULL);
    notified = 0;
    return st ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tstore_close(st);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int64_t submit(bool no_requeue)
{
    tstore_job_t j = {0};
    j.user = (char *)"alice";
    j.argv_json = (char *)"[\"true\"]";
    j.env_json = (char *)"{}";
    j.queue = (char *)"default";
    j.gpu_milli = 500;
    j.gpu_count = 1;
    j.submitted_ms = 1000;
    j.no_requeue = no_requeue;
    tjm_t m = model();
    assert_int_equal(tjm_submit(&m, &j, "alice", NULL, NULL), 0);
    assert_int_equal(j.state, TSTORE_PENDING);
    return j.id;
}

static void apply_ok(int64_t id, tjm_event_t ev, const tjm_change_t *chg, const char *who)
{
    tjm_t m = model();
    tsl_error_t err = {0};
    int rc = tjm_apply(&m, id, ev, chg, who, NULL, &err);
    if (rc != 0)
        fail_msg("%s: %s", tjm_event_name(ev), err.text);
}

/* A job brought into state s (and, for ev, with the stop its guard asks for). */
static int64_t job_in(tjm_state_t s, tjm_event_t ev)
{
    int64_t id = submit(false);
    tjm_change_t start = {.now_ms = 2000, .placement_json = "[{\"gpu\":0}]"};
    tjm_change_t exit0 = {.now_ms = 3000, .has_exit_code = true};
    tjm_change_t exit1 = {.now_ms = 3000, .has_exit_code = true, .exit_code = 1};
    tjm_change_t pre = {.now_ms = 2500, .preempt_for = 99, .preempt_queue = "prod"};
    switch (s) {
    case TJM_PENDING:
        break;
    case TJM_RUNNING:
    case TJM_SUSPENDED:
        apply_ok(id, TJM_EV_START, &start, "tesseld");
        if (s == TJM_SUSPENDED)
            apply_ok(id, TJM_EV_SUSPEND, NULL, "alice");
        if (ev == TJM_EV_KILLED)
            apply_ok(id, TJM_EV_KILL, NULL, "bob");
        if (ev == TJM_EV_REQUEUE || ev == TJM_EV_PREEMPTED)
            apply_ok(id, TJM_EV_PREEMPT, &pre, "tesseld");
        break;
    case TJM_SUCCEEDED:
        apply_ok(id, TJM_EV_START, &start, "tesseld");
        apply_ok(id, TJM_EV_EXIT, &exit0, "tesseld");
        break;
    case TJM_FAILED:
        apply_ok(id, TJM_EV_START, &start, "tesseld");
        apply_ok(id, TJM_EV_FAIL, &exit1, "tesseld");
        break;
    case TJM_CANCELLED:
        apply_ok(id, TJM_EV_CANCEL, NULL, "alice");
        break;
    case TJM_PREEMPTED:
        apply_ok(id, TJM_EV_START, &start, "tesseld");
        apply_ok(id, TJM_EV_PREEMPT, &pre, "tesseld");
        apply_ok(id, TJM_EV_PREEMPTED, &exit1, "tesseld");
        break;
    default:
        fail_msg("no such state %d", (int)s);
    }
    return id;
}

static int count_events(const tstore_event_t *e, void *arg)
{
    (void)e;
    (*(int *)arg)++;
    return 0;
}

typedef struct {
    char event[32], from[16], to[16], who[32], why[160], detail[256];
    int64_t time_ms;
} last_t;

static int keep_last(const tstore_event_t *e, void *arg)
{
    last_t *l = arg;
    snprintf(l->event, sizeof l->event, "%s", e->event);
    snprintf(l->from, sizeof l->from, "%s", e->from_state ? e->from_state : "-");
    snprintf(l->to, sizeof l->to, "%s", e->to_state);
    snprintf(l->who, sizeof l->who, "%s", e->who);
    snprintf(l->why, sizeof l->why, "%s", e->why ? e->why : "-");
    snprintf(l->detail, sizeof l->detail, "%s", e->detail_json ? e->detail_json : "-");
    l->time_ms = e->time_ms;
    return 0;
}

static int nevents(int64_t id)
{
    int n = 0;
    assert_int_equal(tstore_event_list(st, id, count_events, &n, NULL), 0);
    return n;
}

static last_t last_event(int64_t id)
{
    last_t l;
    memset(&l, 0, sizeof l);
    assert_int_equal(tstore_event_list(st, id, keep_last, &l, NULL), 0);
    return l;
}

/* The table as docs/tesseld.md draws it: X = illegal. */
#define X  (-1)
#define P  TJM_PENDING
#define R  TJM_RUNNING
#define S  TJM_SUSPENDED
#define OK TJM_SUCCEEDED
#define F  TJM_FAILED
#define C  TJM_CANCELLED
#define PR TJM_PREEMPTED
static const int expected[TJM_NSTATES][TJM_NEVENTS] = {
    /*            submit start spawned exit fail cancel kill killed suspend resume preempt
                  requeue preempted unstart launch_fail timeout dep_never reject */
    [TJM_PENDING] = {X, R, X, X, X, C, X, X, X, X, X, X, X, X, X, X, C, F},
    [TJM_RUNNING] = {X, X, R, OK, F, X, R, C, S, X, R, P, PR, P, F, F, X, X},
    [TJM_SUSPENDED] = {X, X, S, OK, F, X, S, C, X, R, S, P, PR, X, X, F, X, X},
    [TJM_SUCCEEDED] = {X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X},
    [TJM_FAILED] = {X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X},
    [TJM_CANCELLED] = {X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X},
    [TJM_PREEMPTED] = {X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X},
};

static void test_table(void **state)
{
    (void)state;
    for (int s = 0; s < TJM_NSTATES; s++) {
        for (int e = 0; e < TJM_NEVENTS; e++) {
            assert_int_equal(tjm_next((tjm_state_t)s, (tjm_event_t)e), expected[s][e]);
            int64_t id = job_in((tjm_state_t)s, (tjm_event_t)e);
            tstore_job_t before;
            assert_int_equal(tstore_job_get(st, id, &before, NULL), 0);
            int n = nevents(id);
            int calls = notified;
            tjm_t m = model();
            tsl_error_t err = {0};
            tjm_change_t chg = {
                .now_ms = 5000, .has_exit_code = true, .exit_code = 0, .preempt_for = 99};
            int rc = tjm_apply(&m, id, (tjm_event_t)e, &chg, "carol", "because", &err);
            tstore_job_t after;
            assert_int_equal(tstore_job_get(st, id, &after, NULL), 0);
            if (expected[s][e] == X) {
                if (rc != -1)
                    fail_msg("%s on %s: accepted", tjm_event_name(e), tjm_state_name(s));
                assert_int_equal(errno, EINVAL);
                assert_non_null(strstr(err.text, tjm_event_name(e)));
                assert_int_equal(after.state, before.state);
                assert_int_equal(after.suspended_ms, before.suspended_ms);
                assert_int_equal(after.finished_ms, before.finished_ms);
                assert_int_equal(nevents(id), n);
                assert_int_equal(notified, calls);
            } else {
                if (rc != 0)
                    fail_msg("%s on %s: %s", tjm_event_name(e), tjm_state_name(s), err.text);
                assert_int_equal(tjm_job_state(&after), expected[s][e]);
                assert_int_equal(nevents(id), n + 1);
                last_t l = last_event(id);
                assert_string_equal(l.event, tjm_event_name(e));
                assert_string_equal(l.from, tjm_state_name(s));
                assert_string_equal(l.to, tjm_state_name(expected[s][e]));
                assert_string_equal(l.who, "carol");
                assert_string_equal(l.why, "because");
                assert_int_equal(l.time_ms, 5000);
                assert_int_equal(notified, calls + 1);
                assert_int_equal(last_from, s);
                assert_int_equal(last_to, expected[s][e]);
                bool ends = expected[s][e] >= TJM_SUCCEEDED && expected[s][e] <= TJM_PREEMPTED;
                assert_int_equal(after.finished_ms, ends ? 5000 : 0);
                assert_int_equal(after.end_cause != 0, ends);
            }
            tstore_job_clear(&before);
            tstore_job_clear(&after);
        }
    }
    /* The submission is tjm_submit's alone. */
    int64_t id = submit(false);
    tjm_t m = model();
    assert_int_equal(tjm_apply(&m, id, TJM_EV_SUBMIT, NULL, "a", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tjm_apply(&m, id, TJM_NEVENTS, NULL, "a", NULL, NULL), -1);
    assert_int_equal(tjm_apply(&m, 4242, TJM_EV_START, NULL, "a", NULL, NULL), -1);
    assert_int_equal(errno, ENOENT);
    last_t l = last_event(id);
    assert_string_equal(l.event, "submit");
    assert_string_equal(l.from, "-");
    assert_string_equal(l.to, "pending");
    assert_string_equal(l.who, "alice");
    assert_string_equal(l.detail, "{\"queue\":\"default\"}");
}

/* The guards: a stop under way refuses another (EBUSY); an end that needs one it lacks is
 * illegal (EINVAL); nothing written either way. */
static void test_guards(void **state)
{
    (void)state;
    tjm_t m = model();
    tjm_change_t start = {.placement_json = "[]"};
    int64_t a = submit(false);
    apply_ok(a, TJM_EV_START, &start, "tesseld");
    assert_int_equal(tjm_apply(&m, a, TJM_EV_KILLED, NULL, "t", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tjm_apply(&m, a, TJM_EV_REQUEUE, NULL, "t", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tjm_apply(&m, a, TJM_EV_PREEMPTED, NULL, "t", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
    apply_ok(a, TJM_EV_KILL, NULL, "bob");
    int n = nevents(a);
    tsl_error_t err;
    assert_int_equal(tjm_apply(&m, a, TJM_EV_KILL, NULL, "bob", NULL, &err), -1);
    assert_int_equal(errno, EBUSY);
    assert_string_equal(err.text, "job 1: a cancel is already asked");
    assert_int_equal(tjm_apply(&m, a, TJM_EV_SUSPEND, NULL, "bob", NULL, &err), -1);
    assert_int_equal(errno, EBUSY);
    assert_string_equal(err.text, "job 1 is being cancelled: no suspend now");
    tjm_change_t pre = {.preempt_for = 7};
    assert_int_equal(tjm_apply(&m, a, TJM_EV_PREEMPT, &pre, "t", NULL, NULL), -1);
    assert_int_equal(errno, EBUSY);
    assert_int_equal(nevents(a), n);

    /* Preempting: no second preemption, no suspend; a cancel may still come. */
    int64_t b = submit(false);
    apply_ok(b, TJM_EV_START, &start, "tesseld");
    apply_ok(b, TJM_EV_PREEMPT, &pre, "tesseld");
    assert_int_equal(tjm_apply(&m, b, TJM_EV_PREEMPT, &pre, "t", NULL, NULL), -1);
    assert_int_equal(errno, EBUSY);
    assert_int_equal(tjm_apply(&m, b, TJM_EV_SUSPEND, NULL, "t", NULL, NULL), -1);
    assert_int_equal(errno, EBUSY);
    apply_ok(b, TJM_EV_KILL, NULL, "bob");

    /* "requeue": false: a preemption ends it, never requeues it. */
    int64_t c = submit(true);
    apply_ok(c, TJM_EV_START, &start, "tesseld");
    apply_ok(c, TJM_EV_PREEMPT, &pre, "tesseld");
    assert_int_equal(tjm_apply(&m, c, TJM_EV_REQUEUE, NULL, "t", NULL, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(err.text, "job 3 was submitted with requeue false: not requeued");
    apply_ok(c, TJM_EV_PREEMPTED, NULL, "tesseld");

    /* Unstart: only a job whose supervisor was never recorded. */
    int64_t d = submit(false);
    apply_ok(d, TJM_EV_START, &start, "tesseld");
    tjm_change_t sp = {.shim_pid = 4242, .shim_start = 77};
    apply_ok(d, TJM_EV_SPAWNED, &sp, "tesseld");
    assert_int_equal(tjm_apply(&m, d, TJM_EV_UNSTART, NULL, "t", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);

    /* Causes: FAIL takes the causes a supervisor's end can have; KILL only the time limit. */
    tjm_change_t bad = {.cause = TJM_CAUSE_DEPENDENCY};
    assert_int_equal(tjm_apply(&m, d, TJM_EV_FAIL, &bad, "t", NULL, &err), -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(err.text, "job 4: fail cannot have end cause dependency");
    bad.cause = TJM_CAUSE_HOST_OOM;
    assert_int_equal(tjm_apply(&m, d, TJM_EV_KILL, &bad, "t", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
    bad.cause = TJM_NCAUSES;
    assert_int_equal(tjm_apply(&m, d, TJM_EV_FAIL, &bad, "t", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
}

/* What each event writes. */
static void test_columns(void **state)
{
    (void)state;
    int64_t id = submit(false);
    tstore_job_t j;
    tjm_change_t start = {.now_ms = 2000, .placement_json = "[{\"gpu\":1,\"milli\":500}]"};
    apply_ok(id, TJM_EV_START, &start, "tesseld");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_RUNNING);
    assert_int_equal(j.started_ms, 2000);
    assert_string_equal(j.placement_json, "[{\"gpu\":1,\"milli\":500}]");
    assert_null(j.reason);
    tstore_job_clear(&j);
    assert_string_equal(last_event(id).detail, "{\"placement\":[{\"gpu\":1,\"milli\":500}]}");
    tjm_change_t sp = {.shim_pid = 321, .shim_start = 99, .job_pid = 322};
    apply_ok(id, TJM_EV_SPAWNED, &sp, "tesseld");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.shim_pid, 321);
    assert_int_equal(j.shim_start, 99);
    assert_int_equal(j.job_pid, 322);
    tstore_job_clear(&j);
    tjm_change_t su = {.now_ms = 2100};
    apply_ok(id, TJM_EV_SUSPEND, &su, "alice");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_RUNNING); /* stored running: counted as active */
    assert_int_equal(j.suspended_ms, 2100);
    assert_int_equal(tjm_job_state(&j), TJM_SUSPENDED);
    tstore_job_clear(&j);
    apply_ok(id, TJM_EV_RESUME, NULL, "alice");
    tjm_change_t pre = {.now_ms = 2200, .preempt_for = 42, .preempt_queue = "prod"};
    apply_ok(id, TJM_EV_PREEMPT, &pre, "tesseld");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.suspended_ms, 0);
    assert_int_equal(j.preempt_for, 42);
    assert_string_equal(j.preempt_queue, "prod");
    assert_int_equal(j.preempt_ms, 2200);
    assert_string_equal(j.reason, "preempting: makes room for job 42 of queue 'prod'");
    tstore_job_clear(&j);
    assert_string_equal(last_event(id).detail, "{\"preempt_for\":42,\"preempt_queue\":\"prod\"}");
    tjm_change_t sig = {.now_ms = 2300, .signal = 15};
    apply_ok(id, TJM_EV_REQUEUE, &sig, "tesseld");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_PENDING);
    assert_int_equal(j.preemptions, 1);
    assert_int_equal(j.started_ms, 0);
    assert_int_equal(j.shim_pid, 0);
    assert_int_equal(j.preempt_for, 0);
    assert_null(j.preempt_queue);
    assert_null(j.placement_json);
    assert_int_equal(j.signal, 0);
    assert_int_equal(j.end_cause, 0);
    assert_string_equal(j.reason, "requeued: preempted to make room for job 42");
    tstore_job_clear(&j);
    last_t l = last_event(id);
    assert_string_equal(l.detail, "{\"preempt_for\":42,\"preempt_queue\":\"prod\",\"signal\":15}");

    /* Second attempt: cancelled while running, ended by SIGTERM. */
    apply_ok(id, TJM_EV_START, &start, "tesseld");
    tjm_change_t k = {.now_ms = 2400};
    apply_ok(id, TJM_EV_KILL, &k, "bob");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.cancel_ms, 2400);
    assert_string_equal(j.cancel_by, "bob");
    assert_string_equal(j.reason, "cancelling");
    tstore_job_clear(&j);
    tjm_change_t end = {.now_ms = 2500, .signal = 15};
    apply_ok(id, TJM_EV_KILLED, &end, "tesseld");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_CANCELLED);
    assert_int_equal(j.end_cause, TJM_CAUSE_CANCELLED);
    assert_string_equal(tjm_cause_name(j.end_cause), "cancelled");
    assert_int_equal(j.signal, 15);
    assert_false(j.has_exit_code);
    assert_int_equal(j.finished_ms, 2500);
    assert_string_equal(j.reason, "cancelled by bob");
    tstore_job_clear(&j);
    assert_string_equal(last_event(id).detail, "{\"end_cause\":\"cancelled\",\"signal\":15}");

    /* A failure with a cause the caller saw (host OOM): stored as such. */
    int64_t b = submit(false);
    apply_ok(b, TJM_EV_START, &start, "tesseld");
    tjm_change_t oom = {.now_ms = 2600, .signal = 9, .cause = TJM_CAUSE_HOST_OOM};
    apply_ok(b, TJM_EV_FAIL, &oom, "tesseld");
    assert_int_equal(tstore_job_get(st, b, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_FAILED);
    assert_string_equal(tjm_cause_name(j.end_cause), "host_oom");
    assert_string_equal(j.reason, "killed by signal 9");
    tstore_job_clear(&j);
    /* A pending job cancelled: by whom. */
    int64_t c = submit(false);
    apply_ok(c, TJM_EV_CANCEL, NULL, "dave");
    assert_int_equal(tstore_job_get(st, c, &j, NULL), 0);
    assert_string_equal(j.cancel_by, "dave");
    assert_string_equal(j.reason, "cancelled by dave");
    assert_string_equal(tjm_cause_name(j.end_cause), "cancelled");
    tstore_job_clear(&j);
    /* The names of every cause. */
    static const char *const names[] = {
        NULL,       "exit",          "signal",         "cancelled",  "preempted", "time_limit",
        "host_oom", "gpu_mem_limit", "launch_failure", "dependency", "lost",      "rejected"};
    for (int i = 0; i < TJM_NCAUSES; i++) {
        if (names[i])
            assert_string_equal(tjm_cause_name((tjm_cause_t)i), names[i]);
        else
            assert_null(tjm_cause_name((tjm_cause_t)i));
    }
    assert_null(tjm_cause_name(TJM_NCAUSES));
}

/* An idle reclamation (docs/suspend.md, "Idle reclamation"): a suspend with suspend_idle
 * keeps suspended_idle (across a reopen of the store), says "idle" in its detail, a resume and
 * an end clear it; with another event or with suspend_for it is refused, nothing written. */
static void test_suspended_idle(void **state)
{
    (void)state;
    int64_t id = submit(false);
    tstore_job_t j;
    tjm_change_t start = {.now_ms = 2000, .placement_json = "[{\"gpu\":0}]"};
    apply_ok(id, TJM_EV_START, &start, "tesseld");
    tjm_t m = model();
    tjm_change_t bad = {.suspend_idle = true};
    assert_int_equal(tjm_apply(&m, id, TJM_EV_RESUME, &bad, "tesseld", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
    bad.suspend_for = 7;
    assert_int_equal(tjm_apply(&m, id, TJM_EV_SUSPEND, &bad, "tesseld", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.suspended_ms, 0);
    assert_false(j.suspended_idle);
    tstore_job_clear(&j);
    tjm_change_t su = {.now_ms = 2100, .suspend_idle = true};
    apply_ok(id, TJM_EV_SUSPEND, &su, "tesseld");
    assert_string_equal(last_event(id).detail, "{\"idle\":true}");
    tstore_close(st);
    st = tstore_open(path, NULL);
    assert_non_null(st);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(tjm_job_state(&j), TJM_SUSPENDED);
    assert_true(j.suspended_idle);
    assert_int_equal(j.suspended_for, 0);
    tstore_job_clear(&j);
    tjm_change_t re = {.now_ms = 2150};
    apply_ok(id, TJM_EV_RESUME, &re, "tesseld");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_false(j.suspended_idle);
    /* the job ran on while reclaimed: that time counts against its time limit */
    assert_int_equal(j.suspended_total_ms, 0);
    tstore_job_clear(&j);
    /* a person's suspend after it is not an idle one */
    tjm_change_t person = {.now_ms = 2200};
    apply_ok(id, TJM_EV_SUSPEND, &person, "alice");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_false(j.suspended_idle);
    tstore_job_clear(&j);
    apply_ok(id, TJM_EV_RESUME, NULL, "alice");
    /* reclaimed again, then cancelled: the end clears it */
    apply_ok(id, TJM_EV_SUSPEND, &su, "tesseld");
    apply_ok(id, TJM_EV_KILL, NULL, "alice");
    tjm_change_t end = {.now_ms = 2500, .signal = 15};
    apply_ok(id, TJM_EV_KILLED, &end, "tesseld");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_CANCELLED);
    assert_false(j.suspended_idle);
    tstore_job_clear(&j);
}

/* A preemption by suspension (docs/suspend.md): the suspend event carries the job it makes
 * room for; suspended_for keeps it while suspended (across a reopen of the store, as a restart
 * reads it), the event's detail names it, a resume or an end clears it; a suspend_for on any
 * other event, or a negative one, is refused with nothing written. */
static void test_suspended_for(void **state)
{
    (void)state;
    int64_t id = submit(false);
    tstore_job_t j;
    tjm_change_t start = {.now_ms = 2000, .placement_json = "[{\"gpu\":0}]"};
    apply_ok(id, TJM_EV_START, &start, "tesseld");
    tjm_t m = model();
    tjm_change_t bad = {.suspend_for = 7};
    assert_int_equal(tjm_apply(&m, id, TJM_EV_RESUME, &bad, "tesseld", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
    bad.suspend_for = -1;
    assert_int_equal(tjm_apply(&m, id, TJM_EV_SUSPEND, &bad, "tesseld", NULL, NULL), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.suspended_ms, 0);
    tstore_job_clear(&j);
    tjm_change_t su = {.now_ms = 2100, .suspend_for = 7, .preempt_queue = "prod"};
    apply_ok(id, TJM_EV_SUSPEND, &su, "tesseld");
    assert_string_equal(last_event(id).detail, "{\"preempt_queue\":\"prod\",\"suspended_for\":7}");
    tstore_close(st);
    st = tstore_open(path, NULL);
    assert_non_null(st);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(tjm_job_state(&j), TJM_SUSPENDED);
    assert_int_equal(j.suspended_for, 7);
    assert_null(j.preempt_queue); /* not a preemption under way: no stop is asked */
    assert_int_equal(j.preempt_for, 0);
    tstore_job_clear(&j);
    apply_ok(id, TJM_EV_RESUME, NULL, "tesseld");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.suspended_for, 0);
    tstore_job_clear(&j);
    /* suspended by a preemption again, then cancelled: the end clears it */
    apply_ok(id, TJM_EV_SUSPEND, &su, "tesseld");
    apply_ok(id, TJM_EV_KILL, NULL, "alice");
    tjm_change_t end = {.now_ms = 2500, .signal = 15};
    apply_ok(id, TJM_EV_KILLED, &end, "tesseld");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_CANCELLED);
    assert_int_equal(j.suspended_for, 0);
    tstore_job_clear(&j);
    /* the preemptible option is stored as submitted (0: its class's default) */
    tstore_job_t n = {0};
    n.user = (char *)"alice";
    n.argv_json = (char *)"[\"true\"]";
    n.env_json = (char *)"{}";
    n.queue = (char *)"default";
    n.submitted_ms = 1000;
    n.preemptible = TSTORE_PREEMPT_NEVER;
    m = model(); /* the store reopened above */
    assert_int_equal(tjm_submit(&m, &n, "alice", NULL, NULL), 0);
    assert_int_equal(tstore_job_get(st, n.id, &j, NULL), 0);
    assert_int_equal(j.preemptible, TSTORE_PREEMPT_NEVER);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.preemptible, TSTORE_PREEMPT_DEFAULT);
    tstore_job_clear(&j);
}

/* tjm_end_event: which end the tick records from the job's columns and how it ended. */
static void test_end_event(void **state)
{
    (void)state;
    tjm_cause_t c;
    tstore_job_t j = {.state = TSTORE_RUNNING};
    assert_int_equal(tjm_end_event(&j, 0, 0, TJM_CAUSE_NONE, &c), TJM_EV_EXIT);
    assert_int_equal(tjm_end_event(&j, 3, 0, TJM_CAUSE_NONE, &c), TJM_EV_FAIL);
    assert_int_equal(c, TJM_CAUSE_EXIT);
    assert_int_equal(tjm_end_event(&j, -1, 9, TJM_CAUSE_NONE, &c), TJM_EV_FAIL);
    assert_int_equal(c, TJM_CAUSE_SIGNAL);
    assert_int_equal(tjm_end_event(&j, -1, 9, TJM_CAUSE_HOST_OOM, &c), TJM_EV_FAIL);
    assert_int_equal(c, TJM_CAUSE_HOST_OOM);
    assert_int_equal(tjm_end_event(&j, -1, 0, TJM_CAUSE_LOST, &c), TJM_EV_FAIL);
    assert_int_equal(c, TJM_CAUSE_LOST);
    assert_int_equal(tjm_end_event(&j, -1, 0, TJM_CAUSE_LAUNCH_FAILURE, &c), TJM_EV_LAUNCH_FAIL);
    /* Preempted: requeued unless it finished cleanly, asked not to be, or its watchdog
     * killed it. */
    j.preempt_for = 5;
    assert_int_equal(tjm_end_event(&j, -1, 15, TJM_CAUSE_NONE, &c), TJM_EV_REQUEUE);
    assert_int_equal(tjm_end_event(&j, 0, 0, TJM_CAUSE_NONE, &c), TJM_EV_EXIT);
    assert_int_equal(tjm_end_event(&j, -1, 9, TJM_CAUSE_GPU_MEM_LIMIT, &c), TJM_EV_PREEMPTED);
    j.no_requeue = true;
    assert_int_equal(tjm_end_event(&j, -1, 15, TJM_CAUSE_NONE, &c), TJM_EV_PREEMPTED);
    /* A cancel wins over a preemption, whatever the end. */
    j.cancel_ms = 1;
    assert_int_equal(tjm_end_event(&j, 0, 0, TJM_CAUSE_NONE, &c), TJM_EV_KILLED);
    assert_int_equal(tjm_end_event(&j, -1, 0, TJM_CAUSE_LOST, &c), TJM_EV_KILLED);
    /* A stop for the time limit ends as the time limit. */
    j.end_cause = TJM_CAUSE_TIME_LIMIT;
    assert_int_equal(tjm_end_event(&j, -1, 15, TJM_CAUSE_NONE, &c), TJM_EV_TIMEOUT);
    assert_int_equal(tjm_end_event(&j, 0, 0, TJM_CAUSE_NONE, &c), TJM_EV_TIMEOUT);
}

/* The time limit through the model: KILL with the cause, then the end it picks. */
static void test_time_limit(void **state)
{
    (void)state;
    int64_t id = submit(false);
    tjm_change_t start = {.placement_json = "[]"};
    apply_ok(id, TJM_EV_START, &start, "tesseld");
    tjm_change_t k = {.cause = TJM_CAUSE_TIME_LIMIT};
    apply_ok(id, TJM_EV_KILL, &k, "tesseld");
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    tjm_cause_t c;
    tjm_event_t ev = tjm_end_event(&j, -1, 15, TJM_CAUSE_NONE, &c);
    tstore_job_clear(&j);
    assert_int_equal(ev, TJM_EV_TIMEOUT);
    tjm_change_t end = {.signal = 15, .cause = c};
    apply_ok(id, ev, &end, "tesseld");
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_FAILED);
    assert_string_equal(tjm_cause_name(j.end_cause), "time_limit");
    assert_string_equal(j.reason, "time limit reached");
    tstore_job_clear(&j);
}

/* Recovery after a restart (the store closed and opened again): from each state, the plan
 * the model makes out of the stored columns and what is seen. */
static void test_recover(void **state)
{
    (void)state;
    tjm_change_t start = {.placement_json = "[]"};
    int64_t pend = submit(false);
    int64_t run = submit(false), nostart = submit(false), susp = submit(false);
    int64_t canc = submit(false), pre = submit(false), done = submit(false);
    for (int64_t id = run; id <= done; id++)
        apply_ok(id, TJM_EV_START, &start, "tesseld");
    tjm_change_t sp = {.shim_pid = 500, .shim_start = 5, .job_pid = 501};
    apply_ok(run, TJM_EV_SPAWNED, &sp, "tesseld");
    apply_ok(susp, TJM_EV_SPAWNED, &sp, "tesseld");
    tjm_change_t su = {.now_ms = 777};
    apply_ok(susp, TJM_EV_SUSPEND, &su, "alice");
    tjm_change_t k = {.now_ms = 888};
    apply_ok(canc, TJM_EV_KILL, &k, "bob");
    tjm_change_t pr = {.now_ms = 999, .preempt_for = run, .preempt_queue = "prod"};
    apply_ok(pre, TJM_EV_SPAWNED, &sp, "tesseld");
    apply_ok(pre, TJM_EV_PREEMPT, &pr, "tesseld");
    apply_ok(done, TJM_EV_EXIT, NULL, "tesseld");
    tstore_close(st);
    st = tstore_open(path, NULL);
    assert_non_null(st);

    tjm_seen_t alive = {.shim_alive = true}, gone = {0}, ended = {.exit_record = true};
    tjm_seen_t pidonly = {.pid_record = true};
    tjm_recovery_t p;
    tstore_job_t j;
    /* Pending and finished jobs need no recovery. */
    assert_int_equal(tstore_job_get(st, pend, &j, NULL), 0);
    assert_int_equal(tjm_recover(&j, &alive, &p), -1);
    assert_int_equal(errno, EINVAL);
    tstore_job_clear(&j);
    assert_int_equal(tstore_job_get(st, done, &j, NULL), 0);
    assert_int_equal(tjm_recover(&j, &gone, &p), -1);
    tstore_job_clear(&j);
    /* Running, shim alive: watched; shim gone with its record: ended; without: lost. */
    assert_int_equal(tstore_job_get(st, run, &j, NULL), 0);
    assert_int_equal(tjm_recover(&j, &alive, &p), 0);
    assert_int_equal(p.action, TJM_REC_WATCH);
    assert_false(p.suspended || p.cancel_asked || p.preempting);
    assert_int_equal(tjm_recover(&j, &ended, &p), 0);
    assert_int_equal(p.action, TJM_REC_END);
    assert_int_equal(tjm_recover(&j, &gone, &p), 0);
    assert_int_equal(p.action, TJM_REC_LOST);
    tstore_job_clear(&j);
    /* Start never happened (no supervisor recorded, no pid record): unstarted; with a pid
     * record its supervisor did start, and is lost. */
    assert_int_equal(tstore_job_get(st, nostart, &j, NULL), 0);
    assert_int_equal(tjm_recover(&j, &gone, &p), 0);
    assert_int_equal(p.action, TJM_REC_UNSTART);
    assert_int_equal(tjm_recover(&j, &pidonly, &p), 0);
    assert_int_equal(p.action, TJM_REC_LOST);
    tstore_job_clear(&j);
    apply_ok(nostart, TJM_EV_UNSTART, NULL, "tesseld");
    assert_int_equal(tstore_job_get(st, nostart, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_PENDING);
    assert_int_equal(j.preemptions, 0);
    tstore_job_clear(&j);
    /* Suspended: stays suspended. */
    assert_int_equal(tstore_job_get(st, susp, &j, NULL), 0);
    assert_int_equal(tjm_recover(&j, &alive, &p), 0);
    assert_int_equal(p.action, TJM_REC_WATCH);
    assert_true(p.suspended);
    tstore_job_clear(&j);
    /* Cancel asked: it goes on; never started: cancelled. */
    assert_int_equal(tstore_job_get(st, canc, &j, NULL), 0);
    assert_int_equal(tjm_recover(&j, &alive, &p), 0);
    assert_true(p.cancel_asked);
    assert_int_equal(p.cancel_ms, 888);
    assert_int_equal(tjm_recover(&j, &gone, &p), 0);
    assert_int_equal(p.action, TJM_REC_CANCEL_UNSTARTED);
    tstore_job_clear(&j);
    /* Preempting: for which job, of which queue, since when: from columns, not a sentence. */
    assert_int_equal(tstore_job_get(st, pre, &j, NULL), 0);
    free(j.reason);
    j.reason = NULL; /* the human reason plays no part */
    assert_int_equal(tjm_recover(&j, &alive, &p), 0);
    assert_true(p.preempting);
    assert_int_equal(p.preempt_for, run);
    assert_string_equal(p.preempt_queue, "prod");
    assert_int_equal(p.preempt_ms, 999);
    tstore_job_clear(&j);
    /* The history survived the restart. */
    assert_int_equal(nevents(pre), 4); /* submit, start, spawned, preempt */
}

/* A store failure in the middle of a change (the event record refused): nothing of it is
 * written, the error says so, and the next try works. */
static void test_store_failure(void **state)
{
    (void)state;
    int64_t id = submit(false);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TRIGGER fail BEFORE INSERT ON job_events"
                                  " BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    tjm_t m = model();
    tsl_error_t err;
    int calls = notified;
    tjm_change_t start = {.placement_json = "[{\"gpu\":0}]"};
    assert_int_equal(tjm_apply(&m, id, TJM_EV_START, &start, "tesseld", NULL, &err), -1);
    /* RAISE(ABORT) is a constraint failure to SQLite: the store says EEXIST for those. */
    assert_true(errno == EIO || errno == EEXIST);
    assert_non_null(strstr(err.text, "injected failure"));
    assert_int_equal(notified, calls);
    tstore_job_t j;
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_PENDING);
    assert_null(j.placement_json);
    assert_int_equal(j.started_ms, 0);
    tstore_job_clear(&j);
    assert_int_equal(nevents(id), 1);
    /* A submission too: no job without its record. */
    tstore_job_t n = {0};
    n.user = (char *)"bob";
    n.argv_json = (char *)"[\"true\"]";
    n.env_json = (char *)"{}";
    n.queue = (char *)"default";
    assert_int_equal(tjm_submit(&m, &n, "bob", NULL, NULL), -1);
    int64_t counts[TSTORE_NSTATES];
    assert_int_equal(tstore_job_counts(st, counts, NULL), 0);
    assert_int_equal(counts[TSTORE_PENDING], 1);
    /* Neither failed change counted anything (the tallies follow the transaction). */
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_SUBMITTED), 1);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_STATE + TJM_PENDING), 1);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_STATE + TJM_RUNNING), 0);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_STARTED), 0);
    /* Inside the caller's transaction: only the change is undone. */
    assert_int_equal(tstore_begin(st, NULL), 0);
    assert_int_equal(tstore_job_set_reason(st, id, "waiting", NULL), 0);
    assert_int_equal(tjm_apply(&m, id, TJM_EV_START, &start, "tesseld", NULL, NULL), -1);
    assert_int_equal(tstore_commit(st, NULL), 0);
    assert_int_equal(tstore_job_get(st, id, &j, NULL), 0);
    assert_int_equal(j.state, TSTORE_PENDING);
    assert_string_equal(j.reason, "waiting");
    tstore_job_clear(&j);
    assert_int_equal(sqlite3_exec(db, "DROP TRIGGER fail", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    apply_ok(id, TJM_EV_START, &start, "tesseld");
    assert_int_equal(nevents(id), 2);
}

/* --- tallies (TJM_TALLY_*, what /metrics serves) ------------------------------------------
 * After a mixed random workload of every event, legal and illegal, with submissions in outer
 * transactions that commit or roll back, each tally equals a fresh count of the store; after a
 * reopen (a restart) tjm_tally_load counts the same and goes on counting right. */

static int64_t ids[4096];
static size_t nids;

/* A small deterministic generator (the same workload at every run). */
static uint64_t rng = 0x9e3779b97f4a7c15u;
static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static int submit_one(tsl_error_t *err)
{
    tstore_job_t j = {0};
    j.user = (char *)"alice";
    j.argv_json = (char *)"[\"true\"]";
    j.env_json = (char *)"{}";
    j.queue = (char *)"default";
    j.gpu_milli = 500;
    j.gpu_count = 1;
    j.no_requeue = rnd(4) == 0;
    tjm_t m = model();
    if (tjm_submit(&m, &j, "alice", NULL, err) < 0)
        return -1;
    assert_true(nids < sizeof ids / sizeof ids[0]);
    ids[nids++] = j.id;
    return 0;
}

/* Submissions: alone, or several in a transaction that commits or rolls back (an array). */
static void submit_some(void)
{
    tsl_error_t err;
    unsigned how = rnd(4);
    if (how < 2) {
        assert_int_equal(submit_one(&err), 0);
        return;
    }
    size_t before = nids;
    assert_int_equal(tstore_begin(st, &err), 0);
    for (int k = 0; k < 3; k++)
        assert_int_equal(submit_one(&err), 0);
    if (how == 2) {
        assert_int_equal(tstore_commit(st, &err), 0);
    } else {
        tstore_rollback(st);
        nids = before; /* those jobs are not in the store */
    }
}

/* One random event on one random job; illegal ones fail and must count nothing. */
static void random_event(void)
{
    int64_t id = ids[rnd((unsigned)nids)];
    tjm_event_t ev = (tjm_event_t)(1 + rnd(TJM_NEVENTS - 1));
    tjm_change_t chg = {0};
    switch (ev) {
    case TJM_EV_START:
        chg.placement_json = "[{\"gpu\":0,\"milli\":500}]";
        break;
    case TJM_EV_SPAWNED:
        if (rnd(2)) {
            chg.shim_pid = 100 + (int)rnd(1000);
            chg.job_pid = chg.shim_pid + 1;
        }
        break;
    case TJM_EV_EXIT:
        chg.has_exit_code = true;
        break;
    case TJM_EV_FAIL: {
        static const tjm_cause_t causes[] = {TJM_CAUSE_NONE, TJM_CAUSE_HOST_OOM,
                                             TJM_CAUSE_GPU_MEM_LIMIT, TJM_CAUSE_LOST};
        chg.cause = causes[rnd(4)];
        if (chg.cause == TJM_CAUSE_NONE && rnd(2))
            chg.signal = 9;
        else {
            chg.has_exit_code = true;
            chg.exit_code = 1;
        }
        break;
    }
    case TJM_EV_KILL:
        chg.cause = rnd(3) == 0 ? TJM_CAUSE_TIME_LIMIT : TJM_CAUSE_NONE;
        break;
    case TJM_EV_PREEMPT:
        chg.preempt_for = ids[0];
        chg.preempt_queue = "default";
        break;
    case TJM_EV_SUSPEND: /* a person's, a preemption's, an idle reclamation's (by the job's id:
                          * the workload's random sequence stays as it was) */
        if (id % 3 == 1)
            chg.suspend_for = ids[0];
        else if (id % 3 == 2)
            chg.suspend_idle = true;
        break;
    default:
        break;
    }
    tjm_t m = model();
    tsl_error_t err;
    if (tjm_apply(&m, id, ev, &chg, "tesseld", NULL, &err) < 0)
        assert_true(errno == EINVAL || errno == EBUSY);
}

typedef struct {
    int64_t v[TJM_TALLY_NSLOTS];
} counts_t;

/* A suspend record of the job's log, counted by its reason (its detail). */
static int count_suspend(const tstore_event_t *ev, void *arg)
{
    counts_t *c = arg;
    if (strcmp(ev->event, tjm_event_name(TJM_EV_SUSPEND)) != 0)
        return 0;
    json_t *o = ev->detail_json ? json_loads(ev->detail_json, 0, NULL) : NULL;
    int r = json_is_true(json_object_get(o, "idle"))                  ? TJM_SUSP_IDLE
            : json_integer_value(json_object_get(o, "suspended_for")) ? TJM_SUSP_PREEMPTION
                                                                      : TJM_SUSP_REQUEST;
    json_decref(o);
    c->v[TJM_TALLY_SUSPENDS + r]++;
    return 0;
}

static int count_job(const tstore_job_t *j, void *arg)
{
    counts_t *c = arg;
    assert_int_equal(tstore_event_list(st, j->id, count_suspend, c, NULL), 0);
    tjm_state_t s = tjm_job_state(j);
    c->v[TJM_TALLY_STATE + s]++;
    c->v[TJM_TALLY_SUBMITTED]++;
    if (s != TJM_PENDING && s != TJM_RUNNING && s != TJM_SUSPENDED)
        c->v[TJM_TALLY_ENDED + j->end_cause]++;
    return 0;
}

/* Every tally against a count made now from the store's rows. */
static void check_fresh(void)
{
    counts_t c = {0};
    tstore_job_filter_t f = {.limit = 1000000};
    assert_int_equal(tstore_job_list(st, &f, count_job, &c, NULL), 0);
    assert_int_equal(tstore_event_count(st, "start", &c.v[TJM_TALLY_STARTED], NULL), 0);
    for (unsigned i = 0; i < TJM_TALLY_NSLOTS; i++) {
        if (tstore_tally_get(st, i) != c.v[i])
            fail_msg("tally %u: kept %lld, counted %lld", i, (long long)tstore_tally_get(st, i),
                     (long long)c.v[i]);
    }
}

static void workload(int steps)
{
    for (int k = 0; k < steps; k++) {
        if (nids == 0 || rnd(5) == 0)
            submit_some();
        else
            random_event();
    }
}

static void test_tally_equals_store(void **state)
{
    (void)state;
    nids = 0;
    tjm_t m = model();
    assert_int_equal(tjm_tally_load(&m, NULL), 0); /* an empty store: all 0 */
    check_fresh();
    workload(3000);
    check_fresh();
    /* The workload reached every kind of count. */
    assert_true(tstore_tally_get(st, TJM_TALLY_STATE + TJM_PENDING) > 0);
    assert_true(tstore_tally_get(st, TJM_TALLY_STATE + TJM_SUSPENDED) +
                    tstore_tally_get(st, TJM_TALLY_STATE + TJM_RUNNING) >
                0);
    assert_true(tstore_tally_get(st, TJM_TALLY_STARTED) > 0);
    for (int r = 0; r < TJM_NSUSP; r++)
        if (tstore_tally_get(st, TJM_TALLY_SUSPENDS + (unsigned)r) == 0)
            fail_msg("no suspend for the reason %s", tjm_susp_reason_name((tjm_susp_reason_t)r));
    for (int c = TJM_CAUSE_EXIT; c <= TJM_CAUSE_LOST; c++) {
        if (c == TJM_CAUSE_LAUNCH_FAILURE || c == TJM_CAUSE_DEPENDENCY)
            continue;
        if (tstore_tally_get(st, TJM_TALLY_ENDED + (unsigned)c) == 0)
            fail_msg("no job ended with cause %s", tjm_cause_name((tjm_cause_t)c));
    }
    int64_t kept[TJM_TALLY_NSLOTS];
    for (unsigned i = 0; i < TJM_TALLY_NSLOTS; i++)
        kept[i] = tstore_tally_get(st, i);
    /* A restart: a new store handle counts the same from the rows. */
    tstore_close(st);
    st = tstore_open(path, NULL);
    assert_non_null(st);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_SUBMITTED), 0);
    m = model();
    assert_int_equal(tjm_tally_load(&m, NULL), 0);
    for (unsigned i = 0; i < TJM_TALLY_NSLOTS; i++)
        assert_int_equal(tstore_tally_get(st, i), kept[i]);
    /* And counts on from there. */
    workload(1000);
    check_fresh();
}

/* A change the store refuses counts nothing (the tallies follow its transaction). */
static void test_failed_change_counts_nothing(void **state)
{
    (void)state;
    nids = 0;
    tjm_t m = model();
    assert_int_equal(tjm_tally_load(&m, NULL), 0);
    assert_int_equal(submit_one(NULL), 0);
    /* An outer transaction that rolls back takes a start back with it. */
    assert_int_equal(tstore_begin(st, NULL), 0);
    tjm_change_t chg = {.placement_json = "[]"};
    assert_int_equal(tjm_apply(&m, ids[0], TJM_EV_START, &chg, "tesseld", NULL, NULL), 0);
    tstore_rollback(st);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_STARTED), 0);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_STATE + TJM_PENDING), 1);
    assert_int_equal(tstore_tally_get(st, TJM_TALLY_STATE + TJM_RUNNING), 0);
    /* A job that does not exist: nothing. */
    assert_int_equal(tjm_apply(&m, 999999, TJM_EV_CANCEL, NULL, "tesseld", NULL, NULL), -1);
    assert_int_equal(errno, ENOENT);
    check_fresh();
    /* Loading inside a transaction is refused. */
    assert_int_equal(tstore_begin(st, NULL), 0);
    assert_int_equal(tjm_tally_load(&m, NULL), -1);
    assert_int_equal(errno, EBUSY);
    tstore_rollback(st);
}

/* The histograms of /metrics (tjm_t.pending_hist, run_hist): a start counts its time since
 * submission, the end of an attempt (an exit, a requeue) its time since its start; a change
 * the model refuses, or a suspension, counts nothing. */
static void test_histograms(void **state)
{
    static const double le[] = {1, 10, 100};
    tsl_hist_t pend, run;
    assert_int_equal(tsl_hist_init(&pend, le, 3), 0);
    assert_int_equal(tsl_hist_init(&run, le, 3), 0);
    tjm_t m = model();
    m.pending_hist = &pend;
    m.run_hist = &run;
    int64_t a = submit(false), b = submit(false); /* submitted at 1000 ms */
    tjm_change_t start = {.now_ms = 6000, .placement_json = "[]"};
    tjm_change_t start2 = {.now_ms = 500000, .placement_json = "[]"};
    tjm_change_t exit0 = {.now_ms = 56000, .has_exit_code = true};
    tjm_change_t pre = {.now_ms = 7000, .preempt_for = 99};
    tjm_change_t req = {.now_ms = 7500};
    assert_int_equal(tjm_apply(&m, a, TJM_EV_START, &start, "tesseld", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, a, TJM_EV_SUSPEND, NULL, "alice", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, a, TJM_EV_RESUME, NULL, "alice", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, a, TJM_EV_START, &start, "tesseld", NULL, NULL), -1);
    assert_int_equal(tjm_apply(&m, a, TJM_EV_EXIT, &exit0, "tesseld", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, b, TJM_EV_START, &start, "tesseld", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, b, TJM_EV_PREEMPT, &pre, "tesseld", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, b, TJM_EV_REQUEUE, &req, "tesseld", NULL, NULL), 0);
    assert_int_equal(tjm_apply(&m, b, TJM_EV_START, &start2, "tesseld", NULL, NULL), 0);
    /* Pending: a 5 s, b 5 s then 499 s (from its submission). */
    assert_int_equal(atomic_load(&pend.bucket[0]), 0);
    assert_int_equal(atomic_load(&pend.bucket[1]), 2);
    assert_int_equal(atomic_load(&pend.bucket[3]), 1);
    assert_int_equal(atomic_load(&pend.sum_micro), 509000000ull);
    /* Run: a 50 s (suspension included), b's first attempt 1.5 s; b runs still. */
    assert_int_equal(atomic_load(&run.bucket[1]), 1);
    assert_int_equal(atomic_load(&run.bucket[2]), 1);
    assert_int_equal(atomic_load(&run.bucket[0]) + atomic_load(&run.bucket[3]), 0);
    assert_int_equal(atomic_load(&run.sum_micro), 51500000ull);
}

/* The suspend tallies of a job suspended more often than its log keeps (TSTORE_EVENTS_KEEP
 * suspend and resume records; the older ones dropped into one marker): 1,200 suspends, a third
 * each a person's, a preemption's and an idle reclamation's, each resumed.  The tallies count
 * every one as they happen, and the same again at a restart (the marker keeps the dropped
 * ones' counts by reason), so the /metrics counter never goes back. */
static void test_suspend_tally_past_the_bound(void **state)
{
    (void)state;
    tjm_t m = model();
    assert_int_equal(tjm_tally_load(&m, NULL), 0);
    int64_t before[TJM_NSUSP];
    for (int r = 0; r < TJM_NSUSP; r++)
        before[r] = tstore_tally_get(st, TJM_TALLY_SUSPENDS + (unsigned)r);
    int64_t id = submit(false);
    tjm_change_t start = {.now_ms = 2000, .placement_json = "[{\"gpu\":0}]"};
    apply_ok(id, TJM_EV_START, &start, "tesseld");
    for (int k = 0; k < 1200; k++) {
        tjm_change_t su = {.now_ms = 3000 + 2 * k};
        if (k % 3 == 1)
            su.suspend_for = 1;
        else if (k % 3 == 2)
            su.suspend_idle = true;
        apply_ok(id, TJM_EV_SUSPEND, &su, "tesseld");
        tjm_change_t re = {.now_ms = 3001 + 2 * k};
        apply_ok(id, TJM_EV_RESUME, &re, "tesseld");
    }
    for (int r = 0; r < TJM_NSUSP; r++)
        assert_int_equal(tstore_tally_get(st, TJM_TALLY_SUSPENDS + (unsigned)r) - before[r], 400);
    int64_t kept = 0;
    assert_int_equal(tstore_event_count(st, "suspend", &kept, NULL), 0);
    assert_true(kept < 1200); /* the log was bounded */
    int64_t all, idle, pre;
    assert_int_equal(tstore_suspend_counts(st, &all, &idle, &pre, NULL), 0);
    assert_true(all == 1200 && idle == 400 && pre == 400);
    tstore_close(st);
    st = tstore_open(path, NULL);
    assert_non_null(st);
    m = model();
    assert_int_equal(tjm_tally_load(&m, NULL), 0);
    for (int r = 0; r < TJM_NSUSP; r++)
        assert_int_equal(tstore_tally_get(st, TJM_TALLY_SUSPENDS + (unsigned)r) - before[r], 400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_guards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_columns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_suspended_for, setup, teardown),
        cmocka_unit_test_setup_teardown(test_suspended_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_suspend_tally_past_the_bound, setup, teardown),
        cmocka_unit_test(test_end_event),
        cmocka_unit_test_setup_teardown(test_time_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tally_equals_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_change_counts_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_histograms, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
