/* compute.c - compute shares, priorities and suspend/resume of a slice
 * (issue 6).  docs/compute-shares.md gives the design, the formulas and the
 * reasons behind the constants; this is the manual of the code.
 *
 * Every launch hook runs, around the driver's launch:
 *
 *   tcu_launch_begin   1. suspend gate: tshm_launch_enter (one atomic add and
 *                         one load on the slice file); a suspended slice
 *                         waits here, polling with backoff (no signal).
 *                      2. the thread's measurement ring of the current
 *                         context (thread-local, no lock): completed event
 *                         pairs are read (cuEventQuery on the oldest, then
 *                         cuEventElapsedTime) and their device time charged
 *                         to the slice (tshm_core_account).
 *                      3. pacing, when the slice's rate is below the whole
 *                         device: refill the slice's shared bucket
 *                         (tshm_core_refill) and, while it is negative,
 *                         sleep for the time the refill needs.  Then the
 *                         launch is charged provisionally its expected
 *                         device time (moving average of what launches in
 *                         this ring measured), so that launch-heavy loops do
 *                         not run ahead of their measurements.
 *                      4. record the start event of a new pair on the
 *                         launch's stream (or, ring full, extend the newest).
 *                         While the slice is calm (not held back: SAMPLE)
 *                         only one launch in SAMPLE is measured; the others
 *                         are charged the ring's estimate.
 *   driver launch
 *   tcu_launch_end     record the end event; leave the suspend gate.
 *
 * Every 20 ms a launch refreshes the slice's rate (tcu_core_rate) from the
 * device registry: one small file per GPU (TESSEL_DEVICE_REGISTRY, default
 * /dev/shm, "tessel-gpu-<uuid>") in which each slice advertises its share,
 * mode, priority, last activity and measured use.  Only processes with a
 * TESSEL_CUDA_CORE_* variable take part in it.
 *
 * Not on the hot path: nanosleep happens only when the slice is over its
 * share or suspended; files are opened only at a refresh that finds no
 * registry yet.  Under budget a launch costs a clock read (vDSO), a few
 * atomics and the event calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "interposer/interposer.h"

/* Event pairs a thread keeps in flight per context.  16 pairs cover a
 * launch-heavy loop's queue for 16 launches; past that the newest pair is
 * extended over further launches (one event record per launch). */
#define RING 16
/* Contexts a thread measures at once (more: the oldest is forgotten). */
#define TCTX 4
/* How often a process recomputes its slice's rate from the registry. */
#define REFRESH_NS 20000000ull
/* A slice that launched (or waited to) within this time is active: 200 ms
 * is 10 refreshes, and well inside the 1 s window within which a quiet
 * slice's share must come back to the others. */
#define ACTIVE_NS 200000000ull
/* Window over which a slice's use (used_ppm) is measured for its peers. */
#define USE_WINDOW_NS 100000000ull
/* A registry entry not active for a minute may be taken by another slice. */
#define STALE_NS 60000000000ull
/* Pacing sleeps: at least 50 us (shorter sleeps cost more than they
 * gain), at most 10 ms so that a changed rate or a resume is seen soon. */
#define WAIT_MIN_NS 50000ull
#define WAIT_MAX_NS 10000000ull
/* Poll step while waiting for own work to drain (priority yield). */
#define DRAIN_STEP_NS 100000ull
/* Sampling while calm.  A slice that is not held back (plenty of credit in
 * its bucket, no wait for its share in this process for CALM_NS, no
 * higher-priority neighbour) measures one launch in SAMPLE on average (a
 * random countdown, so that a periodic sequence of kernels cannot alias
 * with it); the others are charged the ring's running estimate.  Measuring
 * costs two event records and a query in the driver (~500 ns on the fake
 * driver), sampling divides that by SAMPLE; issue 6 allows 200 ns per launch
 * for a limit that does not bind.  The first wait for the share switches the
 * process back to measuring every launch for CALM_NS, so a binding limit is
 * always driven by measured time. */
#define SAMPLE  32u
#define CALM_NS 100000000ull
/* While calm the ring is read at most this often (a query per launch would
 * cost as much as the measurement saved). */
#define CALM_POLL_NS 100000ull

/* ---- the device registry ------------------------------------------------ */

#define REG_MAGIC   0x5347455254534c54ull /* "TLSTREGS" */
#define REG_VERSION 1u
#define REG_SLOTS   64

struct reg_entry {
    _Atomic uint64_t key;       /* slice identity (tshm_id), 0 = free */
    _Atomic uint64_t active_ns; /* CLOCK_MONOTONIC of its last launch or wait */
    _Atomic uint64_t upd_ns;    /* when used_ppm was last measured */
    _Atomic uint64_t upd_busy;  /* the slice's busy_ns then */
    _Atomic uint32_t limit;     /* percent, 0 = none */
    _Atomic uint32_t mode;      /* enum tshm_core_mode */
    _Atomic uint32_t prio;      /* enum tshm_core_prio */
    _Atomic uint32_t used_ppm;  /* measured use over the last window */
    uint8_t pad[16];
};

struct reg_file {
    _Atomic uint64_t magic;
    _Atomic uint32_t version;
    uint32_t slots;
    uint8_t pad[48];
    struct reg_entry e[REG_SLOTS];
};
_Static_assert(sizeof(struct reg_entry) == 64, "registry entry size");

/* Per slice device, process-wide. */
struct devctl {
    _Atomic uint64_t next_refresh;
    _Atomic uint64_t calm_after; /* measure every launch until then */
    _Atomic uint32_t rate;       /* ppm; 0 = not computed yet */
    _Atomic int higher;          /* an active higher-priority slice shares the GPU */
    atomic_flag refreshing;      /* one thread refreshes at a time */
    int reg_tried;               /* under refreshing */
    struct reg_file *reg;        /* under refreshing */
    struct reg_entry *entry;     /* under refreshing */
};
static struct devctl dctl[TCU_MAX_DEVICES];
static _Atomic uint64_t slice_key; /* tshm_id of the slice, 0 until known */

/* ---- per-thread measurement -------------------------------------------- */

struct pair {
    CUevent start, end;
    uint32_t n;    /* launches covered */
    uint64_t prov; /* provisional charge taken for them */
};

struct meas {
    CUcontext ctx;
    int dev;             /* slice device, -1: not measured */
    int broken;          /* events cannot be created in this context */
    unsigned head, tail; /* pairs [tail, head) in flight */
    uint64_t est;        /* expected device ns per launch (moving average) */
    /* Sampling while calm (SAMPLE). */
    int calm;           /* the last launch found the slice calm */
    uint32_t skip;      /* unmeasured launches left before the next sample */
    uint32_t rng;       /* xorshift32 state of the countdown */
    uint64_t next_poll; /* calm: read the ring again from then */
    uint32_t pend_n;    /* launches charged by estimate, not yet published */
    uint64_t pend_ns;   /* ... and their estimated device time */
    /* Unmeasured launches possibly still running, counted once in the
     * process's inflight (tshm_drained waits for them): on stream ust (upt:
     * per-thread variant) only, unless umulti.  A later pair on that stream
     * covers them (stream order); otherwise a suspended thread synchronizes
     * the context. */
    int udirty, umulti, upt;
    CUstream ust;
    struct pair p[RING];
};

static _Thread_local struct meas tmeas[TCTX];
static _Thread_local int tmeas_last = -1;
static _Thread_local unsigned tmeas_next;

/* A thread that ends with launches in flight must not leave them counted
 * (tshm_drained would wait for ever): a key destructor reads what finished
 * and forgets the rest.  Set once a thread measures anything. */
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static void thread_exit(void *arg);
static void make_exit_key(void)
{
    if (pthread_key_create(&exit_key, thread_exit) != 0)
        exit_key = (pthread_key_t)-1;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Read every completed pair of m, oldest first; stop at the first one still
 * running.  Charges the slice; no syscall. */
static void poll_ring(struct meas *m)
{
    tshm_t *s = tcu.slice;
    cuEventQuery_fn query = TCU_REAL(cuEventQuery);
    cuEventElapsedTime_fn elapsed = TCU_REAL(cuEventElapsedTime);
    while (m->tail != m->head) {
        struct pair *p = &m->p[m->tail % RING];
        CUresult q = query(p->end);
        if (q == CUDA_ERROR_NOT_READY)
            return;
        float ms = 0;
        uint64_t ns = 0;
        if (q == CUDA_SUCCESS && elapsed(&ms, p->start, p->end) == CUDA_SUCCESS && ms > 0)
            ns = (uint64_t)((double)ms * 1e6);
        tshm_core_account(s, m->dev, ns, p->n, p->prov);
        if (p->n) {
            uint64_t x = ns / p->n;
            m->est = m->est ? (m->est * 7 + x) / 8 : (x ? x : 1);
        }
        m->tail++;
        tshm_inflight_add(s, -1);
    }
}

/* Publish the launches charged by estimate (their provisional charge
 * stands: settled at the same value). */
static void flush_pending(struct meas *m)
{
    if (!m->pend_n)
        return;
    tshm_core_account(tcu.slice, m->dev, m->pend_ns, m->pend_n, m->pend_ns);
    m->pend_n = 0;
    m->pend_ns = 0;
}

/* No unmeasured launch of m is in flight any more (or it cannot be known). */
static void undirty(struct meas *m)
{
    if (!m->udirty)
        return;
    m->udirty = m->umulti = 0;
    tshm_inflight_add(tcu.slice, -1);
}

/* Forget the pairs of m (its context is gone or unusable): give back their
 * provisional charges; the events are not destroyed (their context may be
 * destroyed already). */
static void abandon(struct meas *m)
{
    if (m->dev >= 0)
        flush_pending(m);
    undirty(m);
    for (; m->tail != m->head; m->tail++) {
        struct pair *p = &m->p[m->tail % RING];
        if (m->dev >= 0)
            tshm_core_debit(tcu.slice, m->dev, -(int64_t)p->prov);
        tshm_inflight_add(tcu.slice, -1);
    }
    for (int i = 0; i < RING; i++)
        m->p[i].start = m->p[i].end = NULL;
}

/* The calling thread's ring for its current context; NULL without one. */
static struct meas *meas_current(void)
{
    CUcontext ctx = NULL;
    cuCtxGetCurrent_fn cur = TCU_REAL(cuCtxGetCurrent);
    if (!cur || cur(&ctx) != CUDA_SUCCESS || !ctx)
        return NULL;
    if (TCU_LIKELY(tmeas_last >= 0 && tmeas[tmeas_last].ctx == ctx))
        return &tmeas[tmeas_last];
    for (int i = 0; i < TCTX; i++) {
        if (tmeas[i].ctx == ctx) {
            tmeas_last = i;
            return &tmeas[i];
        }
    }
    pthread_once(&exit_once, make_exit_key);
    if (exit_key != (pthread_key_t)-1)
        pthread_setspecific(exit_key, (void *)1);
    int v = (int)(tmeas_next++ % TCTX);
    struct meas *m = &tmeas[v];
    if (m->ctx)
        abandon(m);
    memset(m, 0, sizeof *m);
    m->ctx = ctx;
    CUdevice ord;
    cuCtxGetDevice_fn gd = TCU_REAL(cuCtxGetDevice);
    int dev = gd && gd(&ord) == CUDA_SUCCESS ? tcu_dev(ord) : -1;
    m->dev = dev >= 0 ? dev : -1;
    if (!TCU_REAL(cuEventCreate) || !TCU_REAL(cuEventRecord) || !TCU_REAL(cuEventQuery) ||
        !TCU_REAL(cuEventElapsedTime))
        m->broken = 1;
    tmeas_last = v;
    return m;
}

static void thread_exit(void *arg)
{
    (void)arg;
    for (int i = 0; i < TCTX; i++) {
        struct meas *m = &tmeas[i];
        if (!m->ctx)
            continue;
        if (m->dev >= 0 && !m->broken)
            poll_ring(m);
        abandon(m);
        m->ctx = NULL;
    }
}

/* ---- the registry ----------------------------------------------------- */

static struct reg_file *reg_open(int dev)
{
    tshm_device_info_t info;
    if (tshm_device_info(tcu.slice, dev, &info) < 0)
        return NULL;
    char path[1200];
    int n = snprintf(path, sizeof path, "%s/tessel-gpu-", tcu.cfg.registry);
    for (int i = 0; i < 16 && n > 0 && (size_t)n + 3 < sizeof path; i++)
        n += snprintf(path + n, sizeof path - (size_t)n, "%02x", info.uuid[i]);
    /* Under tesseld (limits file) the registry files are root's, made at its start: a job
     * only opens them, never through a symlink, and never makes one itself (a name it made
     * would be its user's, and others could not trust it). */
    int fd = tcu.cfg.from_file ? open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
                               : open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        tcu_log("device registry %s: %s; shares computed without other slices", path,
                strerror(errno));
        return NULL;
    }
    struct stat st;
    struct reg_file *r = NULL;
    if (fstat(fd, &st) == 0 && (!tcu.cfg.from_file || (S_ISREG(st.st_mode) && st.st_uid == 0)) &&
        (st.st_size >= (off_t)sizeof *r || ftruncate(fd, sizeof *r) == 0)) {
        void *p = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        r = p == MAP_FAILED ? NULL : p;
    }
    close(fd);
    if (!r) {
        tcu_log("device registry %s: cannot map it", path);
        return NULL;
    }
    /* Creators race harmlessly: all write the same version, one sets magic. */
    uint64_t zero = 0;
    if (atomic_load(&r->magic) == 0) {
        atomic_store(&r->version, REG_VERSION);
        r->slots = REG_SLOTS;
        atomic_compare_exchange_strong(&r->magic, &zero, REG_MAGIC);
    }
    if (atomic_load(&r->magic) != REG_MAGIC || atomic_load(&r->version) != REG_VERSION) {
        tcu_log("device registry %s: not a version %u Tessel registry; shares computed "
                "without other slices",
                path, REG_VERSION);
        munmap(r, sizeof *r);
        return NULL;
    }
    return r;
}

/* Own entry of the registry, claimed if needed; NULL when all are taken. */
static struct reg_entry *reg_claim(struct reg_file *r, uint64_t key, uint64_t now)
{
    for (int i = 0; i < REG_SLOTS; i++)
        if (atomic_load(&r->e[i].key) == key)
            return &r->e[i];
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < REG_SLOTS; i++) {
            struct reg_entry *e = &r->e[i];
            uint64_t k = atomic_load(&e->key);
            int take = pass == 0 ? k == 0 : atomic_load(&e->active_ns) + STALE_NS < now;
            if (take && atomic_compare_exchange_strong(&e->key, &k, key)) {
                atomic_store(&e->upd_ns, now);
                atomic_store(&e->upd_busy, 0);
                atomic_store(&e->used_ppm, 0);
                return e;
            }
        }
    }
    return NULL;
}

/* Recompute the rate of slice device dev (at most every REFRESH_NS). */
static void refresh(int dev, uint64_t now)
{
    struct devctl *dc = &dctl[dev];
    if (atomic_flag_test_and_set(&dc->refreshing))
        return;
    tshm_t *s = tcu.slice;
    unsigned limit = tshm_core_limit(s, dev), mode = tshm_core_mode(s, dev);
    unsigned prio = tshm_core_prio(s, dev);
    tcu_peer_t peers[REG_SLOTS];
    int np = 0, higher = 0;
    uint64_t key = atomic_load(&slice_key);
    if (tcu.cfg.core_set && !dc->reg_tried) {
        dc->reg_tried = 1;
        if (!key) {
            key = tshm_id(s);
            atomic_store(&slice_key, key);
        }
        dc->reg = key ? reg_open(dev) : NULL;
    }
    if (dc->reg) {
        struct reg_entry *me = dc->entry;
        if (!me || atomic_load(&me->key) != key)
            me = dc->entry = reg_claim(dc->reg, key, now);
        if (me) {
            atomic_store(&me->limit, limit);
            atomic_store(&me->mode, mode);
            atomic_store(&me->prio, prio);
            atomic_store(&me->active_ns, now);
            uint64_t last = atomic_load(&me->upd_ns);
            if (now >= last + USE_WINDOW_NS &&
                atomic_compare_exchange_strong(&me->upd_ns, &last, now)) {
                uint64_t busy = tshm_core_busy(s, dev);
                uint64_t prev = atomic_exchange(&me->upd_busy, busy);
                uint64_t ppm = prev && busy > prev ? (busy - prev) * TCU_PPM / (now - last) : 0;
                atomic_store(&me->used_ppm, (uint32_t)(ppm > TCU_PPM ? TCU_PPM : ppm));
            }
        }
        for (int i = 0; i < REG_SLOTS; i++) {
            struct reg_entry *e = &dc->reg->e[i];
            uint64_t k = atomic_load(&e->key);
            if (k == 0 || k == key || atomic_load(&e->active_ns) + ACTIVE_NS < now)
                continue;
            tcu_peer_t *p = &peers[np++];
            p->limit = atomic_load(&e->limit);
            p->mode = atomic_load(&e->mode);
            p->prio = atomic_load(&e->prio);
            p->used_ppm = atomic_load(&e->used_ppm);
            if (p->prio > prio)
                higher = 1;
        }
    }
    uint32_t rate = tcu_core_rate(limit, mode, prio, peers, np);
    uint32_t prev = atomic_load(&dc->rate);
    /* Pacing starts: the bucket's past (debts run up while unpaced) is
     * forgotten. */
    if (prev >= TCU_PPM && rate < TCU_PPM && !tcu.cfg.core_set)
        tshm_core_reset(s, dev, now);
    atomic_store(&dc->higher, higher);
    atomic_store(&dc->rate, rate);
    tshm_core_set_rate(s, dev, rate);
    atomic_store(&dc->next_refresh, now + REFRESH_NS);
    atomic_flag_clear(&dc->refreshing);
}

/* ---- pacing --------------------------------------------------------------- */

/* Wait until the slice may launch on m's device; returns the provisional
 * charge taken for this launch (0 when the slice is not paced).  *calm: the
 * slice is not held back (see SAMPLE): this launch may go unmeasured. */
static uint64_t pace(struct meas *m, uint64_t now, int *calm)
{
    tshm_t *s = tcu.slice;
    struct devctl *dc = &dctl[m->dev];
    *calm = 0;
    if (TCU_UNLIKELY(now >= atomic_load_explicit(&dc->next_refresh, memory_order_relaxed)))
        refresh(m->dev, now);
    uint32_t rate = atomic_load_explicit(&dc->rate, memory_order_relaxed);
    int higher = atomic_load_explicit(&dc->higher, memory_order_relaxed);
    /* A slice with a TESSEL_CUDA_CORE_* setting is always paced, at 100 %
     * too: its queue then never runs more than the bucket's cap (20 ms of
     * device time) ahead, so a slice whose share comes back (shared mode,
     * priority) waits at most that long behind it. */
    if (TCU_LIKELY(rate >= TCU_PPM && !higher && !tcu.cfg.core_set))
        return 0;
    uint64_t t0 = now, waited = 0;
    /* A higher-priority slice is active: keep one launch in flight at most,
     * so that its work never queues behind a backlog of ours. */
    while (higher && m->tail != m->head) {
        sleep_ns(DRAIN_STEP_NS);
        poll_ring(m);
        waited = 1;
    }
    /* No expectation yet (the ring's first launch is in flight): wait for
     * its measurement rather than run ahead of it with launches that cost
     * nothing provisionally (16 kernels of 20 ms would be 320 ms queued). */
    while (m->est == 0 && m->head != m->tail) {
        sleep_ns(DRAIN_STEP_NS);
        poll_ring(m);
        waited = 1;
    }
    if (waited)
        now = mono_ns();
    /* A slice paced at the whole device cannot overshoot its share: it may
     * queue up to one cap of work beyond its credit, so that a host stall
     * of up to ~20 ms does not leave the device idle (at 100 % a lost
     * millisecond cannot be caught up later; below, banked credit does). */
    int64_t min_credit = rate >= TCU_PPM ? -tcu_core_cap(rate) : 0;
    int64_t c = tshm_core_refill(s, m->dev, now, rate, tcu_core_cap(rate));
    while (c < min_credit) {
        uint64_t w = tcu_core_wait_ns(c - min_credit, rate);
        sleep_ns(w < WAIT_MIN_NS ? WAIT_MIN_NS : w > WAIT_MAX_NS ? WAIT_MAX_NS : w);
        poll_ring(m);
        now = mono_ns();
        if (now >= atomic_load_explicit(&dc->next_refresh, memory_order_relaxed))
            refresh(m->dev, now);
        rate = atomic_load_explicit(&dc->rate, memory_order_relaxed);
        if (rate >= TCU_PPM && !atomic_load_explicit(&dc->higher, memory_order_relaxed) &&
            !tcu.cfg.core_set)
            break;
        min_credit = rate >= TCU_PPM ? -tcu_core_cap(rate) : 0;
        c = tshm_core_refill(s, m->dev, now, rate, tcu_core_cap(rate));
        waited = 1;
    }
    if (waited) {
        tshm_core_waited(s, m->dev, now - t0);
        atomic_store_explicit(&dc->calm_after, now + CALM_NS, memory_order_relaxed);
    } else {
        *calm = m->est && !higher && c >= tcu_core_cap(rate) / 2 &&
                now >= atomic_load_explicit(&dc->calm_after, memory_order_relaxed);
    }
    if (m->est)
        tshm_core_debit(s, m->dev, (int64_t)m->est);
    return m->est;
}

/* ---- suspend ---------------------------------------------------------- */

/* Poll every ring of this thread (their work drains while we wait). */
static void poll_all(void)
{
    for (int i = 0; i < TCTX; i++)
        if (tmeas[i].ctx && tmeas[i].dev >= 0 && !tmeas[i].broken)
            poll_ring(&tmeas[i]);
}

/* Wait for the unmeasured launches of this thread's rings: synchronize
 * their contexts (the thread is held at the gate anyway). */
static void drain_unmeasured(void)
{
    cuCtxGetCurrent_fn cur = TCU_REAL(cuCtxGetCurrent);
    cuCtxSynchronize_fn sync = TCU_REAL(cuCtxSynchronize);
    cuCtxPushCurrent_v2_fn push = TCU_REAL(cuCtxPushCurrent_v2);
    cuCtxPopCurrent_v2_fn pop = TCU_REAL(cuCtxPopCurrent_v2);
    CUcontext now = NULL;
    if (!cur || cur(&now) != CUDA_SUCCESS)
        now = NULL;
    for (int i = 0; i < TCTX; i++) {
        struct meas *m = &tmeas[i];
        if (!m->ctx || !m->udirty)
            continue;
        if (sync && m->ctx == now) {
            sync();
        } else if (sync && push && pop && push(m->ctx) == CUDA_SUCCESS) {
            sync();
            CUcontext dummy;
            pop(&dummy);
        }
        if (m->dev >= 0)
            flush_pending(m);
        undirty(m);
    }
}

static void suspended_wait(tshm_t *s)
{
    tshm_waiting_add(s, 1);
    uint64_t step = 100000; /* 100 us, doubling to 10 ms */
    /* Closed by an idle reclamation (tesseld sets its reclaim word before the suspend word):
     * ask for the restore before any driver call (the drain's synchronisations, the rings'
     * event queries), which the checkpoint's lock would hold unseen. */
    if (TCU_UNLIKELY(tshm_reclaimed(s))) {
        tshm_waiting_add(s, -1);
        tcu_idle_wait();
        tshm_waiting_add(s, 1);
    }
    drain_unmeasured();
    do {
        /* Held since before an idle reclamation was recorded: this launch asks for the
         * restore too (tcu_idle_wait). */
        if (TCU_UNLIKELY(tshm_reclaimed(s))) {
            tshm_waiting_add(s, -1);
            tcu_idle_wait();
            tshm_waiting_add(s, 1);
        }
        poll_all();
        sleep_ns(step);
        if (step < WAIT_MAX_NS)
            step *= 2;
        /* Keep the slice active in the registry: it still wants its share. */
        for (int i = 0; i < TCTX; i++)
            if (tmeas[i].ctx && tmeas[i].dev >= 0) {
                uint64_t now = mono_ns();
                if (now >= atomic_load(&dctl[tmeas[i].dev].next_refresh))
                    refresh(tmeas[i].dev, now);
            }
    } while (tshm_launch_enter(s));
    tshm_waiting_add(s, -1);
}

/* ---- idle reclamation (issue 21 item 3; docs/suspend.md, "Idle reclamation") ---------
 *
 * tesseld gave the slice's GPU memory back while the job did no GPU work: its processes are
 * checkpointed by the driver (a call of theirs that reaches the driver waits there, locked)
 * and the slice's header says reclaim.  A call that needs the GPU (a launch, an allocation, a
 * context) waits here instead, before any driver call, after setting the header's wake word:
 * tesseld reads it at its tick and restores the job when its GPU has room (the same path as
 * a person's resume), then clears reclaim and resumes the slice, and the call goes on.  Past
 * IDLE_NOTICE_S one line on stderr says why the call waits. */

/* Seconds a call waits before its line on stderr (TESSEL_CUDA_IDLE_NOTICE overrides it: tests
 * use 1): a restore of a few GiB takes seconds, so a shorter wait is the normal one and says
 * nothing. */
#define IDLE_NOTICE_S 10
/* Polling of the reclaim word: 1 ms doubling to 50 ms (a restore takes 1 s or more; 50 ms is
 * what a resumed call may lose, 20 loads a second is nothing). */
#define IDLE_POLL_MIN_NS 1000000ull
#define IDLE_POLL_MAX_NS 50000000ull

void tcu_idle_wait(void)
{
    tshm_t *s = tcu.slice;
    if (TCU_LIKELY(!s || !tshm_reclaimed(s)))
        return;
    uint64_t notice = IDLE_NOTICE_S;
    const char *env = getenv("TESSEL_CUDA_IDLE_NOTICE");
    if (env && *env >= '0' && *env <= '9')
        notice = strtoull(env, NULL, 10);
    uint64_t start = mono_ns(), step = IDLE_POLL_MIN_NS;
    int told = 0;
    while (tshm_reclaimed(s) && tshm_run_state(s) == TSHM_SUSPENDED) {
        tshm_wake(s);
        if (!told && mono_ns() - start >= notice * 1000000000ull) {
            tcu_log("pid %d waits for its GPU slice: the job's GPU memory was given back while "
                    "it was idle, and tesseld restores it when its GPU has room ('tessel show' "
                    "of the job says what it waits for)",
                    (int)getpid());
            told = 1;
        }
        sleep_ns(step);
        if (step < IDLE_POLL_MAX_NS)
            step *= 2;
    }
}

/* ---- one stream --------------------------------------------------------- */

int tcu_stream_capturing(CUstream st, int pt)
{
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    cuStreamIsCapturing_fn f =
        pt ? TCU_REAL(cuStreamIsCapturing_ptsz) : TCU_REAL(cuStreamIsCapturing);
    if (!f)
        return 0;
    return f(st, &cs) != CUDA_SUCCESS || cs != CU_STREAM_CAPTURE_STATUS_NONE;
}

static CUresult record(CUevent e, CUstream st, int pt)
{
    cuEventRecord_fn f =
        pt && TCU_REAL(cuEventRecord_ptsz) ? TCU_REAL(cuEventRecord_ptsz) : TCU_REAL(cuEventRecord);
    return f(e, st);
}

static int make_events(struct meas *m, struct pair *p)
{
    if (p->start && p->end)
        return 0;
    cuEventCreate_fn create = TCU_REAL(cuEventCreate);
    if ((!p->start && create(&p->start, CU_EVENT_DEFAULT) != CUDA_SUCCESS) ||
        (!p->end && create(&p->end, CU_EVENT_DEFAULT) != CUDA_SUCCESS)) {
        m->broken = 1;
        return -1;
    }
    return 0;
}

/* Countdown to the next sampled launch: uniform in [0, 2 SAMPLE - 2], so a
 * mean of SAMPLE - 1 unmeasured launches between samples. */
static uint32_t next_skip(struct meas *m)
{
    uint32_t x = m->rng ? m->rng : (uint32_t)(uintptr_t)m ^ 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    m->rng = x ? x : 1;
    return x % (2 * SAMPLE - 1);
}

static void one_begin(struct tcu_launch_one *o, CUstream st, int pt)
{
    o->m = NULL;
    struct meas *m = meas_current();
    if (!m || m->broken || m->dev < 0)
        return;
    uint64_t now = mono_ns();
    int was_calm = m->calm;
    /* Measuring every launch: a launch into a capturing stream does not run
     * now, it is neither paced nor timed.  Calm: checked for sampled
     * launches only (an unmeasured captured launch is charged the estimate:
     * docs/compute-shares.md). */
    if (!was_calm && tcu_stream_capturing(st, pt))
        return;
    if (!was_calm || now >= m->next_poll || m->head - m->tail >= RING / 2) {
        poll_ring(m);
        flush_pending(m);
        m->next_poll = now + CALM_POLL_NS;
    }
    int calm;
    uint64_t prov = pace(m, now, &calm);
    m->calm = calm;
    o->m = m;
    o->st = st;
    o->pt = pt;
    o->prov = prov;
    if (calm && m->skip) {
        m->skip--;
        o->fresh = 2; /* unmeasured: charged prov, the estimate */
        return;
    }
    if (calm)
        m->skip = next_skip(m);
    if (was_calm && tcu_stream_capturing(st, pt)) {
        tshm_core_debit(tcu.slice, m->dev, -(int64_t)prov);
        o->m = NULL;
        return;
    }
    if (m->head - m->tail >= RING) {
        o->fresh = 0; /* extend the newest pair over this launch */
        return;
    }
    struct pair *p = &m->p[m->head % RING];
    if (make_events(m, p) < 0 || record(p->start, st, pt) != CUDA_SUCCESS) {
        /* A context that reused a destroyed one's handle: start over. */
        abandon(m);
        if (make_events(m, p) < 0 || record(p->start, st, pt) != CUDA_SUCCESS) {
            m->broken = 1;
            tshm_core_debit(tcu.slice, m->dev, -(int64_t)prov);
            o->m = NULL;
            return;
        }
    }
    p->n = 0;
    p->prov = 0;
    m->head++;
    tshm_inflight_add(tcu.slice, 1); /* before the launch: tshm_drained sees it */
    o->fresh = 1;
}

static void one_end(struct tcu_launch_one *o, CUresult rc)
{
    struct meas *m = o->m;
    if (!m)
        return;
    if (o->fresh == 2) {
        if (rc != CUDA_SUCCESS) {
            tshm_core_debit(tcu.slice, m->dev, -(int64_t)o->prov);
            return;
        }
        m->pend_n++;
        m->pend_ns += o->prov;
        if (!m->udirty) {
            /* Counted before the gate is left: tshm_drained sees it. */
            m->udirty = 1;
            m->umulti = 0;
            m->ust = o->st;
            m->upt = o->pt;
            tshm_inflight_add(tcu.slice, 1);
        } else if (m->ust != o->st || m->upt != o->pt) {
            m->umulti = 1;
        }
        return;
    }
    struct pair *p = &m->p[(m->head - 1) % RING];
    if (rc != CUDA_SUCCESS) {
        tshm_core_debit(tcu.slice, m->dev, -(int64_t)o->prov);
        if (o->fresh && p->n == 0) {
            m->head--;
            tshm_inflight_add(tcu.slice, -1);
        }
        return;
    }
    if (record(p->end, o->st, o->pt) != CUDA_SUCCESS && o->fresh) {
        /* Unmeasurable: account it as nothing rather than lose the ring. */
        m->head--;
        tshm_inflight_add(tcu.slice, -1);
        tshm_core_debit(tcu.slice, m->dev, -(int64_t)o->prov);
        return;
    }
    p->n++;
    p->prov += o->prov;
    /* The pair's end follows the unmeasured launches of its stream. */
    if (m->udirty && !m->umulti && m->ust == o->st && m->upt == o->pt)
        undirty(m);
}

/* ---- the hooks' interface --------------------------------------------------- */

void tcu_launch_begin(tcu_launch_t *l, CUstream st, int pt)
{
    l->entered = 0;
    l->one.m = NULL;
    tshm_t *s = tcu.slice;
    if (TCU_UNLIKELY(!s))
        return;
    if (TCU_UNLIKELY(!tshm_registered(s)))
        tcu_register();
    tcu_idle_wait(); /* before anything reaches the driver: see "idle reclamation" */
    if (TCU_UNLIKELY(tshm_launch_enter(s)))
        suspended_wait(s);
    l->entered = 1;
    tshm_note_work(s);
    /* A process with no TESSEL_CUDA_CORE_* setting is never paced (it does
     * not join the device registry), so measuring its launches would only
     * feed usage figures, at the price of two event records and a query per
     * launch in the driver (~500 ns on the fake driver; issue 2 allows 100 ns
     * added per launch).  It keeps the suspend gate; see compute-shares.md,
     * "Processes without a compute setting". */
    if (TCU_LIKELY(!tcu.cfg.core_set))
        return;
    one_begin(&l->one, st, pt);
}

void tcu_launch_end(tcu_launch_t *l, CUresult rc)
{
    one_end(&l->one, rc);
    if (l->entered)
        tshm_launch_exit(tcu.slice);
}

/* Multi-device cooperative launch: every entry is paced and measured on its
 * own stream, in its stream's context (pushed for the bookkeeping only).
 * Entries past TCU_MULTI_MAX are launched but not measured. */
#define TCU_MULTI_MAX 16

CUresult tcu_launch_multi(CUDA_LAUNCH_PARAMS *list, unsigned n, unsigned flags)
{
    cuLaunchCooperativeKernelMultiDevice_fn real = TCU_REAL(cuLaunchCooperativeKernelMultiDevice);
    if (TCU_UNLIKELY(!real))
        return CUDA_ERROR_NOT_INITIALIZED;
    tshm_t *s = tcu.slice;
    if (!s || !list)
        return real(list, n, flags);
    if (!tshm_registered(s))
        tcu_register();
    tcu_idle_wait();
    if (tshm_launch_enter(s))
        suspended_wait(s);
    tshm_note_work(s);
    if (!tcu.cfg.core_set) { /* not measured: see tcu_launch_begin */
        CUresult rc = real(list, n, flags);
        tshm_launch_exit(s);
        return rc;
    }
    struct tcu_launch_one one[TCU_MULTI_MAX];
    CUcontext ctxs[TCU_MULTI_MAX];
    unsigned k = n < TCU_MULTI_MAX ? n : TCU_MULTI_MAX;
    cuStreamGetCtx_fn getctx = TCU_REAL(cuStreamGetCtx);
    cuCtxPushCurrent_v2_fn push = TCU_REAL(cuCtxPushCurrent_v2);
    cuCtxPopCurrent_v2_fn pop = TCU_REAL(cuCtxPopCurrent_v2);
    for (unsigned i = 0; i < k; i++) {
        one[i].m = NULL;
        ctxs[i] = NULL;
        if (!getctx || !push || !pop || getctx(list[i].hStream, &ctxs[i]) != CUDA_SUCCESS ||
            push(ctxs[i]) != CUDA_SUCCESS) {
            ctxs[i] = NULL;
            continue;
        }
        one_begin(&one[i], list[i].hStream, 0);
        CUcontext dummy;
        pop(&dummy);
    }
    CUresult rc = real(list, n, flags);
    for (unsigned i = 0; i < k; i++) {
        if (!ctxs[i] || push(ctxs[i]) != CUDA_SUCCESS)
            continue;
        one_end(&one[i], rc);
        CUcontext dummy;
        pop(&dummy);
    }
    tshm_launch_exit(s);
    return rc;
}

void tcu_compute_fini(void)
{
    /* The exiting thread's launches, published without a driver call (the
     * driver may be finalised already): those charged by estimate, and
     * those of its measured pairs still unread, settled at their
     * provisional charge (the estimate) rather than their measured time:
     * every launch is counted.  docs/compute-shares.md. */
    for (int i = 0; i < TCTX; i++) {
        struct meas *m = &tmeas[i];
        if (!m->ctx || m->dev < 0)
            continue;
        flush_pending(m);
        for (; m->tail != m->head; m->tail++) {
            struct pair *p = &m->p[m->tail % RING];
            tshm_core_account(tcu.slice, m->dev, p->prov, p->n, p->prov);
            tshm_inflight_add(tcu.slice, -1);
        }
    }
}

void tcu_compute_atfork_child(void)
{
    /* The child has no CUDA state: the forking thread's rings are void. */
    memset(tmeas, 0, sizeof tmeas);
    tmeas_last = -1;
    for (int i = 0; i < TCU_MAX_DEVICES; i++) {
        atomic_store(&dctl[i].next_refresh, 0);
        atomic_flag_clear(&dctl[i].refreshing);
    }
}
