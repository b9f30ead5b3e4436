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
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "interposer/interposer.h"
#include "interposer/policy/share.h"

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
/* ... and at most this long while the thread has measured work in flight:
 * about a GPU timeslice (1-2 ms), so that the slice stops counting as busy
 * on the device (share.h) soon after its work ends.  0.5 ms would wake
 * dozens of paced processes up to 2000 times a second each, a real cost on
 * a loaded host; only beside another slice (alone, nobody is mischarged). */
#define WAIT_INFLIGHT_NS 2000000ull
/* Poll step while waiting for own work to drain (priority yield). */
#define DRAIN_STEP_NS 100000ull
/* Longest a launch waits for a higher-priority slice's work to end: a
 * launch of ours at least every 10 ms keeps a low slice moving under a busy
 * high one (about the 1 % floor with kernels of 100 us and more). */
#define PRIO_YIELD_NS 10000000ull
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
    _Atomic uint32_t pending;   /* its measured launches in flight (all processes) */
    uint32_t pad;
    _Atomic uint64_t pend_until; /* ... counted as busy until then at most */
};

struct reg_file {
    _Atomic uint64_t magic;
    _Atomic uint32_t version;
    uint32_t slots;
    /* The virtual clock of the device (share.h): V = vv at host time vt,
     * rising at TCU_VCLOCK_ONE / vk per ns.  Written under vlock, read under
     * the sequence count vseq (odd while a write is under way).  These
     * fields were padding in the first layout, zero there: an older
     * interposer beside this one simply does not take part. */
    _Atomic uint32_t vlock;
    _Atomic uint32_t vseq;
    _Atomic uint32_t vk;
    uint32_t vpad;
    _Atomic uint64_t vt;
    _Atomic uint64_t vv;
    _Atomic uint64_t vexp; /* the next pend_until among the busy slices */
    uint8_t pad[8];
    struct reg_entry e[REG_SLOTS];
};
_Static_assert(sizeof(struct reg_file) == 64 + REG_SLOTS * 64, "registry layout");
_Static_assert(sizeof(struct reg_entry) == 64, "registry entry size");

/* Per slice device, process-wide. */
struct devctl {
    _Atomic uint64_t next_refresh;
    _Atomic uint64_t calm_after; /* measure every launch until then */
    _Atomic uint32_t rate;       /* ppm; 0 = not computed yet */
    _Atomic int higher;          /* an active higher-priority slice shares the GPU */
    _Atomic uint32_t prio;       /* the slice's priority on it */
    _Atomic int crowded;         /* other active slices on the GPU */
    _Atomic int rivals;          /* ... of them, those not of lower priority */
    atomic_flag refreshing;      /* one thread refreshes at a time */
    int reg_tried;               /* under refreshing */
    struct reg_file *reg;        /* under refreshing */
    struct reg_entry *entry;     /* under refreshing */
    /* The same two for the launch path (pending counts, virtual clock). */
    _Atomic(struct reg_file *) preg;
    _Atomic(struct reg_entry *) pentry;
};
static struct devctl dctl[TCU_MAX_DEVICES];
static _Atomic uint64_t slice_key; /* tshm_id of the slice, 0 until known */

/* ---- per-thread measurement -------------------------------------------- */

struct pair {
    CUevent start, end;
    uint32_t n;    /* launches covered */
    uint64_t prov; /* provisional charge taken for them */
    uint64_t t0;   /* host time of its first launch */
    uint64_t v0;   /* the device's virtual clock then (share.h) */
    int pend;      /* counted in the registry entry's pending */
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

/* ---- the device's virtual clock (share.h) ----------------------------- */

/* A writer that cannot get vlock for this long takes it: its holder died or
 * is descheduled, and a torn update only skews one window's charges. */
#define VLOCK_STEAL_NS 2000000ull

struct vc {
    tcu_vclock_t c;
    uint64_t exp;
};

static struct vc vc_read(struct reg_file *r)
{
    struct vc c = {{0, 0, 0}, 0};
    for (int tries = 0; tries < 64; tries++) {
        uint32_t s1 = atomic_load_explicit(&r->vseq, memory_order_acquire);
        c.c.t_ns = atomic_load_explicit(&r->vt, memory_order_relaxed);
        c.c.v = atomic_load_explicit(&r->vv, memory_order_relaxed);
        c.c.k = atomic_load_explicit(&r->vk, memory_order_relaxed);
        c.exp = atomic_load_explicit(&r->vexp, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (!(s1 & 1) && atomic_load_explicit(&r->vseq, memory_order_relaxed) == s1)
            break;
    }
    return c;
}

static void vc_update(struct reg_file *r, uint64_t now);

/* V of the device now; 0 without a registry.  A busy slice whose
 * pend_until passed since the last count is taken out from that time on
 * (vc_update at the expiry, then at the next one ...). */
static uint64_t vc_now(int dev, uint64_t now)
{
    struct reg_file *r = atomic_load_explicit(&dctl[dev].preg, memory_order_acquire);
    if (!r)
        return 0;
    struct vc c = vc_read(r);
    for (int i = 0; i < REG_SLOTS && c.exp && c.exp <= now; i++) {
        vc_update(r, c.exp);
        c = vc_read(r);
    }
    return tcu_vclock_at(&c.c, now);
}

/* Count the slices with measured work in flight at time `at` (active ones,
 * within their pend_until: a slice asleep on the host with a finished pair
 * unread, or a dead process's count, stops counting) and make that the
 * clock's k from `at` on. */
static void vc_update(struct reg_file *r, uint64_t at)
{
    uint32_t free_ = 0;
    uint64_t t0 = 0;
    for (unsigned i = 0; !atomic_compare_exchange_weak(&r->vlock, &free_, 1); i++, free_ = 0) {
        if (i == 0)
            t0 = mono_ns();
        else if ((i & 63) == 0 && mono_ns() - t0 > VLOCK_STEAL_NS)
            break;
    }
    uint32_t k = 0;
    uint64_t exp = 0;
    for (int i = 0; i < REG_SLOTS; i++) {
        struct reg_entry *e = &r->e[i];
        uint64_t until = atomic_load(&e->pend_until);
        if (atomic_load(&e->pending) && atomic_load(&e->key) && until > at &&
            atomic_load(&e->active_ns) + ACTIVE_NS >= at) {
            k++;
            if (!exp || until < exp)
                exp = until;
        }
    }
    struct vc c = vc_read(r);
    tcu_vclock_set(&c.c, at, k);
    uint32_t seq = atomic_load(&r->vseq) | 1;
    atomic_store(&r->vseq, seq); /* odd: readers retry */
    atomic_store_explicit(&r->vt, c.c.t_ns, memory_order_relaxed);
    atomic_store_explicit(&r->vv, c.c.v, memory_order_relaxed);
    atomic_store_explicit(&r->vk, c.c.k, memory_order_relaxed);
    atomic_store_explicit(&r->vexp, exp, memory_order_relaxed);
    atomic_store_explicit(&r->vseq, seq + 1, memory_order_release);
    atomic_store(&r->vlock, 0);
}

/* The slice's count of measured launches in flight on dev moves by delta;
 * when it starts or stops having any, the clock's k is recounted.  A start
 * also says until when, at most, the slice counts as busy: `until` (the
 * latest of its processes' estimates). */
static void pend_add(int dev, int delta, uint64_t now, uint64_t until)
{
    struct reg_entry *e = atomic_load_explicit(&dctl[dev].pentry, memory_order_acquire);
    struct reg_file *r = atomic_load_explicit(&dctl[dev].preg, memory_order_acquire);
    if (!e || !r)
        return;
    uint32_t old = atomic_load(&e->pending);
    int recount = 0;
    if (delta > 0) {
        uint64_t u = atomic_load(&e->pend_until);
        while (u < until && !atomic_compare_exchange_weak(&e->pend_until, &u, until))
            ;
        old = atomic_fetch_add(&e->pending, 1);
        /* A later estimate than the clock knows must be seen too. */
        recount = old == 0 || u <= now;
    } else {
        do {
            if (old == 0)
                return;
        } while (!atomic_compare_exchange_weak(&e->pending, &old, old - 1));
        recount = old == 1;
    }
    if (recount)
        vc_update(r, now ? now : mono_ns());
}

/* An active slice of higher priority than ours has measured work in flight
 * on dev (its pending count, within its pend_until). */
static int higher_busy(int dev, uint64_t now)
{
    struct reg_file *r = atomic_load_explicit(&dctl[dev].preg, memory_order_acquire);
    struct reg_entry *me = atomic_load_explicit(&dctl[dev].pentry, memory_order_relaxed);
    if (!r)
        return 0;
    uint32_t prio = atomic_load_explicit(&dctl[dev].prio, memory_order_relaxed);
    for (int i = 0; i < REG_SLOTS; i++) {
        struct reg_entry *e = &r->e[i];
        if (e == me || !atomic_load(&e->key) || atomic_load(&e->prio) <= prio)
            continue;
        if (atomic_load(&e->pending) && atomic_load(&e->pend_until) > now &&
            atomic_load(&e->active_ns) + ACTIVE_NS >= now)
            return 1;
    }
    return 0;
}

/* How long, at most, the thread's queued measured work keeps its slice
 * busy on the device from now: each pair's expected device time (the
 * ring's estimate, 20 ms before there is one) stretched by the active
 * slices that take timeslices in between (a neighbour may start after this
 * launch; lower-priority ones yield, see pace), plus WAIT_INFLIGHT_NS.
 * Past it the slice stops counting even if its pairs are still unread: a
 * thread that sleeps on the host after its work ended (a
 * launch-then-synchronize loop with host work between launches) must not
 * make its neighbours' time look shared, nor hold lower priorities back. */
static uint64_t busy_horizon(struct meas *m, unsigned pairs)
{
    uint64_t n = (uint64_t)atomic_load_explicit(&dctl[m->dev].rivals, memory_order_relaxed) + 1;
    uint64_t est = m->est ? m->est : 20000000ull;
    return (uint64_t)pairs * est * n + WAIT_INFLIGHT_NS;
}

/* A pair is no longer in flight (read, abandoned or never launched). */
static void pair_gone(struct meas *m, struct pair *p, uint64_t now)
{
    tshm_inflight_add(tcu.slice, -1);
    if (p->pend && m->dev >= 0)
        pend_add(m->dev, -1, now, 0);
    p->pend = 0;
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
        /* The span holds the neighbours' timeslices too: charge the share
         * of it this slice had while the pair was in flight (share.h). */
        uint64_t now = 0;
        if (p->pend && ns) {
            now = mono_ns();
            ns = tcu_share_charge(ns, vc_now(m->dev, now) - p->v0, p->t0, now);
        }
        tshm_core_account(s, m->dev, ns, p->n, p->prov);
        if (p->n) {
            uint64_t x = ns / p->n;
            m->est = m->est ? (m->est * 7 + x) / 8 : (x ? x : 1);
        }
        m->tail++;
        pair_gone(m, p, now);
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
        pair_gone(m, p, 0);
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
                atomic_store(&e->pending, 0);
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
    int np = 0, higher = 0, rivals = 0;
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
        atomic_store(&dc->preg, dc->reg);
        atomic_store(&dc->pentry, me);
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
            if (p->prio >= prio)
                rivals++;
        }
        /* Recount the busy slices now and then: one that went quiet with a
         * count left (killed, or idle with unread pairs) drops out within
         * ACTIVE_NS even if no slice starts or stops work meanwhile. */
        if (me)
            vc_update(dc->reg, now);
    }
    uint32_t rate = tcu_core_rate(limit, mode, prio, peers, np);
    uint32_t prev = atomic_load(&dc->rate);
    /* Pacing starts: the bucket's past (debts run up while unpaced) is
     * forgotten. */
    if (prev >= TCU_PPM && rate < TCU_PPM && !tcu.cfg.core_set)
        tshm_core_reset(s, dev, now);
    atomic_store(&dc->higher, higher);
    atomic_store(&dc->prio, prio);
    atomic_store(&dc->crowded, np);
    atomic_store(&dc->rivals, rivals);
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
    /* ... and launch nothing while it has work on the device: the GPU
     * time-slices between processes whatever their priority, so a kernel of
     * ours would stretch its work.  At most PRIO_YIELD_NS at a time, so that
     * the slice keeps making progress (the rate's floor). */
    if (higher) {
        uint64_t t = mono_ns();
        uint64_t stop = t + PRIO_YIELD_NS;
        while (t < stop && higher_busy(m->dev, t)) {
            sleep_ns(DRAIN_STEP_NS);
            poll_ring(m);
            waited = 1;
            t = mono_ns();
        }
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
        /* With pairs in flight beside another slice, wake up often enough
         * to see them end: the slice counts as busy in the device's virtual
         * clock until they are read, and the neighbours are charged as
         * sharing meanwhile (alone, nobody is). */
        uint64_t wmax =
            m->tail != m->head && atomic_load_explicit(&dc->crowded, memory_order_relaxed)
                ? WAIT_INFLIGHT_NS
                : WAIT_MAX_NS;
        sleep_ns(w < WAIT_MIN_NS ? WAIT_MIN_NS : w > wmax ? wmax : w);
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
        /* Beside another slice every launch is measured: its pairs tell the
         * device's virtual clock when this slice has work (share.h). */
        *calm = m->est && !higher && !atomic_load_explicit(&dc->crowded, memory_order_relaxed) &&
                c >= tcu_core_cap(rate) / 2 &&
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
    drain_unmeasured();
    do {
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

/* ---- one stream --------------------------------------------------------- */

static int capturing(CUstream st, int pt)
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
    if (!was_calm && capturing(st, pt))
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
    if (was_calm && capturing(st, pt)) {
        tshm_core_debit(tcu.slice, m->dev, -(int64_t)prov);
        o->m = NULL;
        return;
    }
    if (m->head - m->tail >= RING) {
        o->fresh = 0; /* extend the newest pair over this launch */
        return;
    }
    struct pair *p = &m->p[m->head % RING];
    /* In flight for the device's virtual clock from now (share.h); done
     * before the start event is recorded, so that nothing but the record
     * lies between it and the launch (a host delay there is measured). */
    int pend = atomic_load_explicit(&dctl[m->dev].pentry, memory_order_relaxed) != NULL;
    uint64_t t0 = pend ? mono_ns() : now; /* pace() may have slept */
    if (pend)
        pend_add(m->dev, 1, t0, t0 + busy_horizon(m, m->head - m->tail + 1));
    uint64_t v0 = pend ? vc_now(m->dev, t0) : 0;
    if (make_events(m, p) < 0 || record(p->start, st, pt) != CUDA_SUCCESS) {
        /* A context that reused a destroyed one's handle: start over. */
        abandon(m);
        if (make_events(m, p) < 0 || record(p->start, st, pt) != CUDA_SUCCESS) {
            m->broken = 1;
            tshm_core_debit(tcu.slice, m->dev, -(int64_t)prov);
            if (pend)
                pend_add(m->dev, -1, 0, 0);
            o->m = NULL;
            return;
        }
    }
    p->n = 0;
    p->prov = 0;
    p->pend = pend;
    p->t0 = t0;
    p->v0 = v0;
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
            pair_gone(m, p, 0);
        }
        return;
    }
    if (record(p->end, o->st, o->pt) != CUDA_SUCCESS && o->fresh) {
        /* Unmeasurable: account it as nothing rather than lose the ring. */
        m->head--;
        pair_gone(m, p, 0);
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
    if (TCU_UNLIKELY(tshm_launch_enter(s)))
        suspended_wait(s);
    l->entered = 1;
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
    if (tshm_launch_enter(s))
        suspended_wait(s);
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
    /* The exiting thread's launches charged by estimate: published without a
     * driver call (the driver may be finalised already).  Its measured pairs
     * still unread are not charged: docs/compute-shares.md. */
    for (int i = 0; i < TCTX; i++)
        if (tmeas[i].ctx && tmeas[i].dev >= 0)
            flush_pending(&tmeas[i]);
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
