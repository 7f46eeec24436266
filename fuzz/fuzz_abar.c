/*
 * fuzz_abar.c - libFuzzer harness for the abar host API.
 *
 * The input is a program.  Its first bytes set up a barrier (expected count,
 * flags, completion function, a starting phase near a wrap-around of the
 * 21-bit or 32-bit fields); the rest is a sequence of calls, each checked
 * exactly against `ref`, a sequential reference model written from SPEC.md
 * (section 2 and its defined-behaviour table), including every misuse the
 * table defines: arrive_n(0), over-arrival, arrivals after cancel or after
 * the last drop, tokens of completed / future / forged / other barriers /
 * pre-re-init, malformed deadlines, bad init arguments, waits from inside the
 * completion (EDEADLK), arrivals on the own barrier from inside it.
 * abar_token_at is one more operation (opcode bytes 0xF0..0xFF; the low
 * nibble picks the token slot, the high nibble of the argument a phase
 * relative to the model's: older, current, next, far future, UINT64_MAX,
 * aliases of the current phase modulo 2^ST_PHASE_BITS, 2^21, 2^32), its token then
 * judged like any other; check_state asks for the open phase and its
 * neighbours after every step; the completion function asks for the
 * completing phase (valid even once cancelled from inside: it is
 * completing).
 * One opcode runs a multi-threaded episode on a second barrier (threads doing
 * arrive, arrive_n, arrive_and_wait, wait, wait_until, test, drop, with a
 * racing cancel and a racing destroy; and abar_token_at for the phase just
 * arrived in, the one before and the one after), checked for invariants:
 * every wait returns 0 or (after a cancel) ECANCELED, never early (the data
 * written before each arrival is seen after the wait), completions == phases;
 * abar_token_at never refuses a phase the thread has reached (but for
 * ECANCELED after a cancel) and never names a later phase as complete.
 * Two more episodes: anonymous arrivals (more threads than expected,
 * arrive-only threads mixed with waiting ones, far and negative deadlines),
 * checked by counting every arrival before it is made (an_episode); and a
 * cancel racing waiters of which the last destroys and frees the heap
 * barrier right after its wait (cd_episode).  The sequential wait_until
 * also takes negative and far deadlines.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined (fuzz/CMakeLists.txt).
 * A blocking call that the model says would block is never issued on the
 * main thread: a hang is always a bug (libFuzzer's -timeout reports it).
 */
#define _GNU_SOURCE
#include "abar_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAIL(...)                                                          \
    do {                                                                   \
        fprintf(stderr, "fuzz_abar: " __VA_ARGS__);                        \
        fprintf(stderr, "  (%s:%d)\n", __FILE__, __LINE__);                \
        abort();                                                           \
    } while (0)
#define EXPECT_EQ(got, want, what)                                         \
    do {                                                                   \
        long long g_ = (long long)(got), w_ = (long long)(want);           \
        if (g_ != w_) FAIL("%s: got %lld, want %lld", what, g_, w_);       \
    } while (0)

/* ---- input reader -------------------------------------------------------- */
struct input { const uint8_t *p; size_t n; };
static unsigned next_byte(struct input *in)
{
    if (in->n == 0) return 0;
    in->n--;
    return *in->p++;
}

/* ---- the sequential reference model of SPEC.md ----------------------------- */
struct ref {
    int live;
    uint32_t expected, pending, drops;
    uint64_t phase;
    int cancelled, finished;
    unsigned gen;            /* which init of the memory: tokens carry it */
    int completion;          /* a completion function is installed */
    int cancel_in_completion;
    uint64_t completions;
};
struct rtok { int err; uint64_t phase; unsigned gen; };   /* err != 0: invalid */

/* A token as the model sees it, and the real token it goes with. */
#define MAXTOK 16
struct slot { struct rtok r; abar_token_t t; int used; };

struct ctx {
    abar_t bar;
    struct ref m;
    struct slot tok[MAXTOK];
    abar_t other;            /* a second live barrier, for foreign tokens */
    abar_token_t other_tok;
    /* what the completion function saw */
    uint64_t seen_completions;
    int completion_ok;
};
static struct ctx C;

static void completion_fn(void *arg)
{
    struct ctx *c = arg;
    c->seen_completions++;
    /* still the completing phase (the model has already advanced) */
    if (abar_phase(&c->bar) != c->m.phase - 1) c->completion_ok = 0;
    abar_token_t cur = abar_current(&c->bar);
    if (abar_wait(&c->bar, cur) != EDEADLK) c->completion_ok = 0;   /* own barrier */
    abar_token_t own = abar_arrive(&c->bar);        /* no arrival can be counted now */
    if (abar_token_error(own) != EINVAL) c->completion_ok = 0;
    if (c->m.cancel_in_completion && abar_cancel(&c->bar) != 0) c->completion_ok = 0;
    /* abar_token_at: the completing phase p is still the open one (valid
     * even after the cancel just above: it is completing); p + 1 is not
     * reached; p - 1 is complete. */
    uint64_t p = c->m.phase - 1;
    abar_token_t tp = abar_token_at(&c->bar, p);
    if (abar_token_error(tp) != 0 || tp.raw != p) c->completion_ok = 0;
    else {
        if (abar_wait(&c->bar, tp) != EDEADLK) c->completion_ok = 0;
        if (abar_test(&c->bar, tp) != EBUSY) c->completion_ok = 0;
    }
    if (abar_token_error(abar_token_at(&c->bar, p + 1)) != EINVAL) c->completion_ok = 0;
    if (p > 0) {
        abar_token_t old = abar_token_at(&c->bar, p - 1);
        if (abar_token_error(old) != 0 || abar_wait(&c->bar, old) != 0) c->completion_ok = 0;
    }
}

/* ref: n arrivals (drop: arrive_and_drop) */
static struct rtok ref_arrive(struct ref *m, uint32_t n, int drop)
{
    if (!m->live || n == 0) return (struct rtok){ EINVAL, 0, 0 };
    if (m->cancelled || m->finished) return (struct rtok){ ECANCELED, 0, 0 };
    if (n > m->pending) return (struct rtok){ EINVAL, 0, 0 };
    struct rtok t = { 0, m->phase, m->gen };
    m->pending -= n;
    if (drop) m->drops++;
    if (m->pending == 0) {          /* complete: completion, reset, advance */
        if (m->completion) {
            m->completions++;
            if (m->cancel_in_completion) m->cancelled = 1;
        }
        m->expected -= m->drops;
        m->drops = 0;
        m->phase++;
        m->pending = m->expected;
        if (m->expected == 0) m->finished = 1;
    }
    return t;
}

/* ref: what wait/test return at once (EBUSY: a wait would block) */
static int ref_judge(const struct ref *m, struct rtok t)
{
    if (!m->live) return EINVAL;
    if (t.err) return t.err;
    if (t.gen != m->gen) return EINVAL;
    if (t.phase < m->phase) return 0;
    if (t.phase > m->phase) return EINVAL;
    if (m->finished || m->cancelled) return ECANCELED;
    return EBUSY;
}

/* ref: abar_token_at(phase) */
static struct rtok ref_token_at(const struct ref *m, uint64_t phase)
{
    if (!m->live || phase > m->phase) return (struct rtok){ EINVAL, 0, 0 };
    /* the open phase of a cancelled barrier (a finished one is not
     * cancelled: its token is valid, and a wait on it says ECANCELED) */
    if (phase == m->phase && m->cancelled) return (struct rtok){ ECANCELED, 0, 0 };
    return (struct rtok){ 0, phase, m->gen };
}

/* A real token_at token against its model: error, phase, identity. */
static void check_token_at(uint64_t phase, struct rtok rt, abar_token_t t, const char *what)
{
    if (abar_token_error(t) != rt.err)
        FAIL("%s: abar_token_at(phase %llu) at phase %llu: error %d, want %d", what,
             (unsigned long long)phase, (unsigned long long)C.m.phase, abar_token_error(t), rt.err);
    if (rt.err) return;
    EXPECT_EQ(t.raw, phase, what);
    EXPECT_EQ(t.id, ((struct abar_impl *)(void *)&C.bar)->ident, what);
}

static void check_state(void)
{
    EXPECT_EQ(abar_phase(&C.bar), C.m.live ? C.m.phase : 0, "abar_phase");
    if (C.m.completion) {
        EXPECT_EQ(C.seen_completions, C.m.completions, "completions run");
        if (!C.completion_ok) FAIL("a call from inside the completion misbehaved");
    }
    /* abar_token_at around the open phase: the open one, the next (never
     * reached), the last completed (a wait says 0 at once) */
    uint64_t ph = C.m.phase;
    check_token_at(ph, ref_token_at(&C.m, ph), abar_token_at(&C.bar, ph), "token_at(open)");
    check_token_at(ph + 1, ref_token_at(&C.m, ph + 1), abar_token_at(&C.bar, ph + 1),
                   "token_at(open + 1)");
    if (ph > 0) {
        abar_token_t t = abar_token_at(&C.bar, ph - 1);
        check_token_at(ph - 1, ref_token_at(&C.m, ph - 1), t, "token_at(open - 1)");
        EXPECT_EQ(abar_wait(&C.bar, t), C.m.live ? 0 : EINVAL, "wait on token_at(open - 1)");
    }
}

static int do_init(struct input *in, int fresh)
{
    unsigned e = next_byte(in) % 5 + 1;
    unsigned f = next_byte(in);
    abar_attr_t attr = { 0 };
    attr.flags = (f & 1 ? ABAR_PSHARED : 0) | (f & 2 ? ABAR_WAIT_SPIN : 0) |
                 (f & 4 ? ABAR_WAIT_PARK : 0);
    int bad = (f >> 3) % 8; /* 0..7: a few kinds of bad arguments */
    uint32_t expected = e;
    if (bad == 1) expected = 0;
    if (bad == 2) expected = ABAR_EXPECTED_MAX + 1 + (f >> 6);
    if (bad == 3) attr.flags |= 0x100u << (f >> 6);
    int comp = (f >> 6) & 1;
    if (comp) { attr.completion = completion_fn; attr.arg = &C; }
    int want = (bad >= 1 && bad <= 3) || ((attr.flags & ABAR_WAIT_SPIN) && (attr.flags & ABAR_WAIT_PARK))
                   ? EINVAL : 0;
    if (bad == 4) { want = 0; comp = 0; }   /* NULL attr: the defaults */
    int r = abar_init(&C.bar, expected, bad == 4 ? NULL : &attr);
    EXPECT_EQ(r, want, "abar_init");
    if (r != 0) return r;   /* the barrier is unchanged: check_state checks it */
    C.m = (struct ref){ .live = 1, .expected = expected, .pending = expected,
                        .gen = fresh ? 1 : C.m.gen + 1, .completion = comp,
                        .cancel_in_completion = (f >> 7) & 1 };
    C.seen_completions = 0;
    C.completion_ok = 1;
    /* Start near a wrap-around: of the 21-bit phase in the state word, of the
     * 32-bit futex word, or far out. */
    static const uint64_t starts[8] = { 0, 0, (1u << 21) - 2, (1u << 21) - 1,
                                        UINT32_MAX - 1, UINT32_MAX, (UINT64_C(1) << 40) - 1,
                                        (UINT64_C(1) << 62) + 12345 };
    uint64_t start = starts[next_byte(in) % 8];
    if (start) {
        EXPECT_EQ(abar__test_set_phase(&C.bar, start), 0, "abar__test_set_phase");
        C.m.phase = start;
    }
    return 0;
}

static struct timespec deadline_in(long ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += ns;
    while (ts.tv_nsec >= 1000000000) { ts.tv_nsec -= 1000000000; ts.tv_sec++; }
    return ts;
}

/* ---- the multi-threaded episode ------------------------------------------ */
#define MT_MAX 4
#define MT_ROUNDS 8
struct mt {
    abar_t bar;
    unsigned nthreads, rounds;
    uint8_t script[MT_MAX][MT_ROUNDS];
    int dropper, drop_round;          /* thread that drops, and when (-1: none) */
    _Atomic int cancelled;
    _Atomic int cancel_done;
    int data[MT_ROUNDS][MT_MAX];      /* written before arrival, read after wait */
    uint64_t completions;             /* plain: the completion runs alone */
    _Atomic int failed;
    char why[160];
};

static void mt_fail(struct mt *x, const char *what, int r, unsigned id, unsigned round)
{
    if (atomic_exchange(&x->failed, 1) == 0)
        snprintf(x->why, sizeof x->why, "%s: %d (thread %u round %u)", what, r, id, round);
}

static void mt_completion(void *arg)
{
    struct mt *x = arg;
    x->completions++;
}

struct mt_arg { struct mt *x; unsigned id; };

/* Thread `id` has arrived in phase r (its own arrival is counted): waits on
 * abar_token_at(r) instead of the arrival's token.  Phase r is reached: the
 * token is valid, or ECANCELED after a cancel (r open, not completing).
 * r - 1 is complete (this thread's last wait said 0).  r + 1 cannot complete
 * without this thread: EINVAL (not reached) or valid and not complete. */
static int mt_token_at(struct mt *x, unsigned id, unsigned r)
{
    abar_token_t next = abar_token_at(&x->bar, r + 1);
    int e = abar_token_error(next);
    if (e == 0) {
        int tr = abar_test(&x->bar, next);
        if (tr != EBUSY && !(tr == ECANCELED && atomic_load(&x->cancelled)))
            mt_fail(x, "test(token_at(r + 1))", tr, id, r);
        if (next.raw != r + 1) mt_fail(x, "token_at(r + 1) phase", (int)next.raw, id, r);
    } else if (e != EINVAL && !(e == ECANCELED && atomic_load(&x->cancelled))) {
        mt_fail(x, "token_at(r + 1)", e, id, r);
    }
    if (r > 0) {
        abar_token_t prev = abar_token_at(&x->bar, r - 1);
        if (abar_token_error(prev) != 0 || abar_test(&x->bar, prev) != 0)
            mt_fail(x, "token_at(r - 1)", abar_token_error(prev), id, r);
    }
    abar_token_t t = abar_token_at(&x->bar, r);
    int res = abar_token_error(t);
    if (res == ECANCELED && atomic_load(&x->cancelled)) return res;
    if (res != 0) { mt_fail(x, "token_at(r)", res, id, r); return res; }
    if (t.raw != r) mt_fail(x, "token_at(r) phase", (int)t.raw, id, r);
    res = abar_wait(&x->bar, t);
    if (res == 0 && abar_test(&x->bar, t) != 0)
        mt_fail(x, "test after wait on token_at(r)", abar_test(&x->bar, t), id, r);
    return res;
}

/* Every wait must return 0 or, after a cancel, ECANCELED; after 0 every
 * participant's write of that round is visible. */
static void *mt_thread(void *p)
{
    struct mt_arg *a = p;
    struct mt *x = a->x;
    for (unsigned r = 0; r < x->rounds; r++) {
        x->data[r][a->id] = (int)(r * 16 + a->id + 1);
        unsigned op = x->script[a->id][r] % 6;
        int res;
        if ((int)a->id == x->dropper && (int)r == x->drop_round) {
            res = abar_arrive_and_drop(&x->bar);
            if (res != 0 && !(res == ECANCELED && atomic_load(&x->cancelled)))
                mt_fail(x, "arrive_and_drop", res, a->id, r);
            return NULL;
        }
        if (op == 0) {
            res = abar_arrive_and_wait(&x->bar);
        } else {
            abar_token_t t = abar_arrive(&x->bar);
            res = abar_token_error(t);
            if (res == 0) {
                if (op == 1) res = abar_wait(&x->bar, t);
                else if (op == 2) {
                    struct timespec ts = deadline_in(20000000); /* 20 ms, retried */
                    while ((res = abar_wait_until(&x->bar, t, &ts)) == ETIMEDOUT)
                        ts = deadline_in(20000000);
                } else if (op == 3) {
                    while ((res = abar_test(&x->bar, t)) == EBUSY) sched_yield();
                } else if (op == 4) {
                    res = abar_wait(&x->bar, t);
                    if (res == 0 && abar_test(&x->bar, t) != 0)
                        mt_fail(x, "test after wait", abar_test(&x->bar, t), a->id, r);
                } else {
                    res = mt_token_at(x, a->id, r);
                }
                if (res == 0 && t.raw != r) mt_fail(x, "token phase", (int)t.raw, a->id, r);
            }
        }
        if (res == ECANCELED && atomic_load(&x->cancelled)) return NULL;
        if (res != 0) { mt_fail(x, "wait", res, a->id, r); return NULL; }
        for (unsigned j = 0; j < x->nthreads; j++) {
            int dropped = (int)j == x->dropper && x->drop_round < (int)r;
            if (!dropped && x->data[r][j] != (int)(r * 16 + j + 1))
                mt_fail(x, "released before an arrival's write was visible", (int)j, a->id, r);
        }
    }
    return NULL;
}

static void mt_episode(struct input *in)
{
    static struct mt x;
    memset(&x, 0, sizeof x);
    unsigned h = next_byte(in);
    x.nthreads = h % (MT_MAX - 1) + 2;          /* 2..4 */
    x.rounds = (h >> 2) % MT_ROUNDS + 1;
    unsigned f = next_byte(in);
    abar_attr_t attr = { mt_completion, &x, (f & 1 ? ABAR_PSHARED : 0) |
                         ((f >> 1) % 3 == 1 ? ABAR_WAIT_SPIN : (f >> 1) % 3 == 2 ? ABAR_WAIT_PARK : 0) };
    x.dropper = (f >> 3) & 1 ? (int)(next_byte(in) % x.nthreads) : -1;
    x.drop_round = (int)(next_byte(in) % x.rounds);
    int cancel = (f >> 4) & 1, destroy_race = (f >> 5) & 1;
    unsigned cancel_after = next_byte(in);
    for (unsigned i = 0; i < x.nthreads; i++)
        for (unsigned r = 0; r < x.rounds; r++) x.script[i][r] = (uint8_t)next_byte(in);
    if (destroy_race) {
        /* the main thread is one more participant of round 0 (it drops),
         * every thread starts with arrive_and_wait (registered before it
         * arrives): once all are inside, destroy must say EBUSY */
        x.dropper = -1;
        for (unsigned i = 0; i < x.nthreads; i++) x.script[i][0] = 0;
    }
    EXPECT_EQ(abar_init(&x.bar, x.nthreads + (destroy_race ? 1 : 0), &attr), 0, "mt init");
    pthread_t th[MT_MAX];
    struct mt_arg args[MT_MAX];
    for (unsigned i = 0; i < x.nthreads; i++) {
        args[i] = (struct mt_arg){ &x, i };
        if (pthread_create(&th[i], NULL, mt_thread, &args[i]) != 0) FAIL("pthread_create");
    }
    if (destroy_race) {
        /* every thread registered (hazard slot or count: the test hook) */
        while (abar__test_waiters(&x.bar) < x.nthreads) sched_yield();
        EXPECT_EQ(abar_destroy(&x.bar), EBUSY, "destroy while threads wait");
        EXPECT_EQ(abar_init(&x.bar, 1, NULL), EBUSY, "init while threads wait");
        EXPECT_EQ(abar_arrive_and_drop(&x.bar), 0, "main's drop");
    }
    for (unsigned i = 0; i < cancel_after; i++) sched_yield();
    if (cancel) {
        atomic_store(&x.cancelled, 1);
        EXPECT_EQ(abar_cancel(&x.bar), 0, "mt cancel");
    }
    for (unsigned i = 0; i < x.nthreads; i++) pthread_join(th[i], NULL);
    if (x.failed) FAIL("mt episode: %s", x.why);
    uint64_t ph = abar_phase(&x.bar);
    EXPECT_EQ(x.completions, ph, "mt completions == phases");
    if (!cancel) EXPECT_EQ(ph, x.rounds, "mt phases");
    EXPECT_EQ(abar_destroy(&x.bar), 0, "mt destroy after join");
}

/* ---- anonymous arrivals ------------------------------------------------- */
/* Arrivals are anonymous: 1..6 threads on a barrier of expected 1..8 (the
 * pair's one-CAS path at 1 and 2 without a completion, the single counter
 * at 3 and 4, the arrival tree from 5 unless process-shared), so often more
 * threads than expected, all started together, each running a script of
 * arrive-only bursts, arrive_n,
 * arrive + wait (plain, far deadline, past or negative deadline, test) and
 * arrive_and_wait.  No drop, no cancel.  Every arrival is added to
 * `attempts` before it is made (and to `refused` after a refusal), so:
 *   - the completion of phase p (index i from the start) sees
 *     attempts - refused >= expected x (i + 1), and runs in order;
 *   - a wait or test that says 0 on phase p sees p complete (abar_phase past
 *     it, the completion of p run) and attempts >= expected x (i + 1);
 *   - a barrier of 1 or 2 without a completion refuses no arrival of one
 *     (an arrive_n of 2 may find one pending: EINVAL, counted nothing);
 *   - a deadline already past (tv_sec < 0 too) says 0 or ETIMEDOUT, a far
 *     one (tv_sec 2^62, LONG_MAX, just past 2^64 ns) never times out;
 *   - once every thread is joined (the main thread arrives as one more
 *     anonymous thread until the blocked ones are released): counted
 *     arrivals = expected x completed phases + those of the open phase, each
 *     valid token's phase got exactly `expected` of them (at most, where
 *     arrive_and_wait's arrivals have no token), no token names a later phase. */
#define AN_THREADS 6
#define AN_ROUNDS 8
#define AN_PHASES 8192
#define AN_TOPUP 2048
struct an {
    abar_t bar;
    uint32_t expected, nthreads, rounds;
    uint64_t start;
    int completion, strict; /* strict: 1 or 2 without completion, no refusal */
    uint8_t script[AN_THREADS][AN_ROUNDS];
    _Atomic uint64_t attempts, refused, counted, aw_counted;
    _Atomic uint32_t per_phase[AN_PHASES]; /* token-counted arrivals by phase index */
    _Atomic uint8_t done[AN_PHASES];       /* the completion of that phase ran */
    uint64_t completions;                  /* plain: the completion runs alone */
    _Atomic int go;                        /* the threads start together */
    _Atomic int failed;
    char why[200];
};

static void an_fail(struct an *x, const char *what, long long v, unsigned id, unsigned round)
{
    if (atomic_exchange(&x->failed, 1) == 0)
        snprintf(x->why, sizeof x->why, "%s: %lld (thread %u round %u, expected %u, %u threads)", what, v,
                 id, round, x->expected, x->nthreads);
}

static void an_completion(void *arg)
{
    struct an *x = arg;
    const uint64_t p = abar_phase(&x->bar), i = p - x->start;
    if (i != x->completions) an_fail(x, "completion out of order (phase index)", (long long)i, 99, 0);
    x->completions++;
    const uint64_t upper = atomic_load(&x->attempts) - atomic_load(&x->refused);
    if (upper < x->expected * (i + 1))
        an_fail(x, "phase completed before `expected` arrivals were made; made", (long long)upper, 99,
                (unsigned)i);
    if (i < AN_PHASES) atomic_store(&x->done[i], 1);
}

/* Phase `p` (of a valid token) reported complete by a wait or a test. */
static void an_check_complete(struct an *x, uint64_t p, unsigned id, unsigned r, const char *what)
{
    const uint64_t i = p - x->start;
    if (abar_phase(&x->bar) <= p) an_fail(x, what, (long long)p, id, r);
    if (x->completion && (i >= AN_PHASES || !atomic_load(&x->done[i])))
        an_fail(x, "released before the completion ran", (long long)i, id, r);
    if (atomic_load(&x->attempts) < x->expected * (i + 1))
        an_fail(x, "released before `expected` arrivals of its phase were made", (long long)i, id, r);
}

/* n arrivals; counts them; the token (error carried) */
static abar_token_t an_arrive(struct an *x, uint32_t n, unsigned id, unsigned r)
{
    atomic_fetch_add(&x->attempts, n);
    abar_token_t t = n == 1 && (r & 1) ? abar_arrive(&x->bar) : abar_arrive_n(&x->bar, n);
    const int e = abar_token_error(t);
    if (e != 0) {
        atomic_fetch_add(&x->refused, n);
        /* refused for racing a completion (EINVAL): never on the pair or
         * the barrier of one without completion, unless n > 1 */
        if (e != EINVAL || (x->strict && n == 1)) {
            char what[80];
            snprintf(what, sizeof what, "%s(%u) refused at phase %llu", n == 1 && (r & 1) ? "abar_arrive" : "abar_arrive_n",
                     n, (unsigned long long)abar_phase(&x->bar));
            an_fail(x, what, e, id, r);
        }
        return t;
    }
    atomic_fetch_add(&x->counted, n);
    const uint64_t i = t.raw - x->start;
    if (i >= AN_PHASES) an_fail(x, "token phase out of range", (long long)t.raw, id, r);
    else atomic_fetch_add(&x->per_phase[i], n);
    return t;
}

static const time_t far_secs[3] = { (time_t)18446744074LL, (time_t)1 << 62, (time_t)LONG_MAX };

static void an_step(struct an *x, unsigned id, unsigned r, unsigned b)
{
    const unsigned op = b % 8, v = b >> 3;
    uint32_t n = 1;
    if (op == 0) {                                  /* a burst of 1..49 arrivals, tokens dropped */
        for (unsigned k = 0; k < 1 + (v % 4) * 16; k++) (void)an_arrive(x, 1, id, r + k);
        return;
    }
    if (op == 1) n = v % x->expected + 1;           /* arrive_n: 1..expected */
    if (op == 6) {                                  /* arrive_and_wait */
        atomic_fetch_add(&x->attempts, 1);
        const int res = abar_arrive_and_wait(&x->bar);
        if (res == 0) { atomic_fetch_add(&x->counted, 1); atomic_fetch_add(&x->aw_counted, 1); return; }
        atomic_fetch_add(&x->refused, 1);
        if (res != EINVAL || x->strict) an_fail(x, "arrive_and_wait", res, id, r);
        return;
    }
    abar_token_t t = an_arrive(x, n, id, r);
    if (abar_token_error(t) != 0 || op <= 1) return;  /* arrive only */
    int res;
    struct timespec ts;
    switch (op) {
    case 2: res = abar_wait(&x->bar, t); break;
    case 3: /* far deadlines */
        ts.tv_sec = far_secs[v % 3];
        ts.tv_nsec = (long)(v / 3 % 2) * 999999999;
        res = abar_wait_until(&x->bar, t, &ts);
        break;
    case 4: /* past or negative deadlines (tv_nsec in range): 0 or ETIMEDOUT */
        ts = deadline_in(0);
        if (v % 4 == 1) ts.tv_sec = -1;
        if (v % 4 == 2) ts.tv_sec = -((time_t)1 << 40);
        if (v % 4 == 3) ts.tv_sec = (time_t)LONG_MIN;
        ts.tv_nsec = (long)(v / 4 % 3) * 333333333;
        res = abar_wait_until(&x->bar, t, &ts);
        if (res == ETIMEDOUT) return;               /* stays counted: arrive-only */
        break;
    case 5: /* test until complete */
        while ((res = abar_test(&x->bar, t)) == EBUSY) sched_yield();
        break;
    default: /* a short deadline, retried */
        ts = deadline_in(2000000);
        while ((res = abar_wait_until(&x->bar, t, &ts)) == ETIMEDOUT) ts = deadline_in(2000000);
        break;
    }
    if (res != 0) {
        char what[96];
        snprintf(what, sizeof what, "wait (op %u, n %u, token phase %llu, phase now %llu)", op, n,
                 (unsigned long long)t.raw, (unsigned long long)abar_phase(&x->bar));
        an_fail(x, what, res, id, r);
        return;
    }
    an_check_complete(x, t.raw, id, r, "wait said 0 before its phase completed");
    if (abar_test(&x->bar, t) != 0) an_fail(x, "test after wait", abar_test(&x->bar, t), id, r);
}

struct an_arg { struct an *x; unsigned id; };
static void *an_thread(void *p)
{
    struct an_arg *a = p;
    while (!atomic_load(&a->x->go)) sched_yield();
    for (unsigned r = 0; r < a->x->rounds && !atomic_load(&a->x->failed); r++)
        an_step(a->x, a->id, r, a->x->script[a->id][r]);
    return NULL;
}

static void an_episode(struct input *in)
{
    static struct an x;
    memset(&x, 0, sizeof x);
    const unsigned h = next_byte(in), f = next_byte(in);
    x.expected = h % 8 + 1;
    x.nthreads = (h >> 3) % AN_THREADS + 1;
    x.rounds = (f >> 5) % AN_ROUNDS + 1;
    x.completion = f & 1;
    x.strict = !x.completion && x.expected <= 2;
    abar_attr_t attr = { x.completion ? an_completion : NULL, &x,
                         ((f >> 1) & 1 ? ABAR_PSHARED : 0) |
                         ((f >> 2) % 3 == 1 ? ABAR_WAIT_SPIN : (f >> 2) % 3 == 2 ? ABAR_WAIT_PARK : 0) };
    for (unsigned i = 0; i < x.nthreads; i++)
        for (unsigned r = 0; r < x.rounds; r++) x.script[i][r] = (uint8_t)next_byte(in);
    EXPECT_EQ(abar_init(&x.bar, x.expected, &attr), 0, "anon init");
    /* near the wrap of the state word's phase field, or of 32 bits */
    static const uint64_t starts[4] = { 0, (UINT64_C(1) << ST_PHASE_BITS) - 3, UINT32_MAX - 2, 0 };
    x.start = starts[(h >> 6) % 4];
    if (x.start) EXPECT_EQ(abar__test_set_phase(&x.bar, x.start), 0, "anon set phase");
    pthread_t th[AN_THREADS];
    struct an_arg args[AN_THREADS];
    for (unsigned i = 0; i < x.nthreads; i++) {
        args[i] = (struct an_arg){ &x, i };
        if (pthread_create(&th[i], NULL, an_thread, &args[i]) != 0) FAIL("pthread_create");
    }
    atomic_store(&x.go, 1);
    /* Join; while threads are still blocked, arrive (one more anonymous
     * thread): each `expected` arrivals complete the open phase. */
    int joined[AN_THREADS] = { 0 };
    unsigned left = x.nthreads, topups = 0, idle = 0;
    while (left > 0) {
        for (unsigned i = 0; i < x.nthreads; i++)
            if (!joined[i] && pthread_tryjoin_np(th[i], NULL) == 0) { joined[i] = 1; left--; idle = 0; }
        if (left == 0) break;
        if (++idle < 64) { sched_yield(); continue; }
        /* Past AN_TOPUP arrivals, far more phases completed than any
         * thread needs, but a thread starved of CPU (a busy host) may still
         * be on its way: arrive once a millisecond for 2 s more (at most
         * 2000 phases more, within AN_PHASES), then it is wedged. */
        if (topups > AN_TOPUP) usleep(1000);
        if (topups++ == AN_TOPUP + 2000) {
            /* wedged: say so, then cancel (releases everyone) to report */
            an_fail(&x, "waiters not released by further arrivals; phase", (long long)abar_phase(&x.bar), 0, 0);
            abar_cancel(&x.bar);
            for (unsigned i = 0; i < x.nthreads; i++) if (!joined[i]) pthread_join(th[i], NULL);
            FAIL("anon episode: %s", x.why);
        }
        (void)an_arrive(&x, 1, AN_THREADS, 1);
        idle = 0;
    }
    if (x.failed) FAIL("anon episode: %s", x.why);
    const uint64_t phases = abar_phase(&x.bar) - x.start;
    const int32_t open = (int32_t)x.expected - abar__test_pending(&x.bar);
    const uint64_t counted = atomic_load(&x.counted);
    if (open < 0 || open >= (int32_t)x.expected)
        FAIL("anon: open phase holds %d arrivals of %u", open, x.expected);
    if (counted != x.expected * phases + (uint64_t)open)
        FAIL("anon: %llu arrivals counted, but %llu phases of %u completed and %d in the open one "
             "(%u threads, completion %d)", (unsigned long long)counted, (unsigned long long)phases,
             x.expected, open, x.nthreads, x.completion);
    if (x.completion) EXPECT_EQ(x.completions, phases, "anon completions == phases");
    const int exact = atomic_load(&x.aw_counted) == 0;
    for (uint64_t i = 0; i < AN_PHASES; i++) {
        const uint32_t c = atomic_load(&x.per_phase[i]);
        const uint32_t want = i < phases ? x.expected : i == phases ? (uint32_t)open : 0;
        if (exact ? c != want : c > want)
            FAIL("anon: phase index %llu got %u arrivals by token, want %s%u (%llu phases)",
                 (unsigned long long)i, c, exact ? "" : "at most ", want, (unsigned long long)phases);
    }
    /* quiescent: whole, and counts on */
    for (int32_t i = open; i < (int32_t)x.expected; i++)
        if (abar_token_error(abar_arrive(&x.bar)) != 0) FAIL("anon: arrival refused at quiescence");
    EXPECT_EQ(abar_phase(&x.bar), x.start + phases + 1, "anon: the open phase completes");
    EXPECT_EQ(abar_destroy(&x.bar), 0, "anon destroy after join");
}

/* ---- cancel racing a waiter that destroys and frees ---------------------- */
/* A heap barrier (ASan sees any touch after the free) of expected 1..6;
 * 1..4 threads, each waiting (plain, far deadline, negative deadline then a
 * far one, arrive_and_wait) or arriving only, round after round until the
 * main thread's cancel refuses or releases them (ECANCELED).  The last
 * thread out destroys the barrier (0: every other call has returned; a
 * cancel still writing is waited for) and frees it at once, while the
 * cancel may still be inside abar_cancel. */
#define CD_THREADS 4
struct cd {
    abar_t *b;
    uint32_t expected, nthreads;
    int strict;
    uint8_t script[CD_THREADS][4];
    _Atomic unsigned users;
    _Atomic int cancel_done; /* abar_cancel has returned */
    _Atomic int failed;
    char why[160];
};
struct cd_arg { struct cd *x; unsigned id; };

static void cd_fail(struct cd *x, const char *what, long long v, unsigned id)
{
    if (atomic_exchange(&x->failed, 1) == 0)
        snprintf(x->why, sizeof x->why, "%s: %lld (thread %u, expected %u, %u threads)", what, v, id,
                 x->expected, x->nthreads);
}

static void *cd_thread(void *p)
{
    struct cd_arg *a = p;
    struct cd *x = a->x;
    abar_t *b = x->b;
    int cancelled = 0;
    for (unsigned r = 0;; r++) {
        const unsigned s = x->script[a->id][r % 4], op = s % 5, v = s >> 3;
        int res;
        if (op == 4) {
            res = abar_arrive_and_wait(b);
        } else {
            abar_token_t t = abar_arrive(b);
            res = abar_token_error(t);
            if (res == 0 && op != 3) {
                struct timespec ts;
                if (op == 0) res = abar_wait(b, t);
                else {
                    if (op == 2) {  /* negative deadline first: 0 or ETIMEDOUT */
                        ts.tv_sec = -1 - (time_t)(v % 3);
                        ts.tv_nsec = 999999999;
                        res = abar_wait_until(b, t, &ts);
                        if (res != ETIMEDOUT) goto judged;
                    }
                    ts.tv_sec = far_secs[v % 3];
                    ts.tv_nsec = 0;
                    res = abar_wait_until(b, t, &ts);
                }
            judged:
                if (res == 0 && abar_phase(b) <= t.raw)
                    cd_fail(x, "wait said 0 before its phase completed", (long long)t.raw, a->id);
            }
        }
        if (res == ECANCELED) { cancelled = 1; break; }
        if (res == EINVAL && !x->strict) continue;  /* raced a completion: nothing counted */
        if (res != 0) { cd_fail(x, "result", res, a->id); break; }
    }
    /* A thread that saw no ECANCELED (it failed) may not know that the
     * cancel has begun: it leaves once the cancel has returned. */
    if (!cancelled)
        while (!atomic_load(&x->cancel_done)) sched_yield();
    if (atomic_fetch_sub(&x->users, 1) == 1) {
        /* the last one out: every other call on b has returned */
        const int r = abar_destroy(b);
        if (r != 0) cd_fail(x, "destroy by the last waiter", r, a->id);
        if (r == EBUSY) {   /* keep ASan's view honest: free only a dead barrier */
            while (abar_destroy(b) == EBUSY) sched_yield();
        }
        memset(b, 0xa5, sizeof *b);
        free(b);
    }
    return NULL;
}

static void cd_episode(struct input *in)
{
    static struct cd x;
    memset(&x, 0, sizeof x);
    const unsigned h = next_byte(in), f = next_byte(in);
    x.expected = h % 6 + 1;
    x.nthreads = (h >> 3) % CD_THREADS + 1;
    const int comp = f & 1;
    x.strict = !comp && x.expected <= 2;
    const unsigned cancel_after = next_byte(in);
    for (unsigned i = 0; i < x.nthreads; i++)
        for (unsigned r = 0; r < 4; r++) x.script[i][r] = (uint8_t)next_byte(in);
    void *mem = NULL;
    if (posix_memalign(&mem, 64, sizeof(abar_t)) != 0) FAIL("posix_memalign");
    x.b = mem;
    abar_attr_t attr = { comp ? mt_completion : NULL, NULL,
                         ((f >> 1) & 1 ? ABAR_PSHARED : 0) |
                         ((f >> 2) % 3 == 1 ? ABAR_WAIT_SPIN : (f >> 2) % 3 == 2 ? ABAR_WAIT_PARK : 0) };
    static struct mt sink;  /* mt_completion counts into it */
    attr.arg = &sink;
    EXPECT_EQ(abar_init(x.b, x.expected, &attr), 0, "cd init");
    atomic_store(&x.users, x.nthreads);
    pthread_t th[CD_THREADS];
    struct cd_arg args[CD_THREADS];
    for (unsigned i = 0; i < x.nthreads; i++) {
        args[i] = (struct cd_arg){ &x, i };
        if (pthread_create(&th[i], NULL, cd_thread, &args[i]) != 0) FAIL("pthread_create");
    }
    /* up to 1020 yields, at most 10 ms (a yield to a spinning thread may
     * take a whole time slice) */
    const struct timespec until = deadline_in(10000000);
    for (unsigned i = 0; i < cancel_after * 4; i++) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > until.tv_sec || (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec)) break;
        sched_yield();
    }
    /* the threads run until this cancel: the barrier is live until it has
     * begun; after it returns this thread touches nothing */
    const int r = abar_cancel(x.b);
    atomic_store(&x.cancel_done, 1);
    for (unsigned i = 0; i < x.nthreads; i++) pthread_join(th[i], NULL);
    EXPECT_EQ(r, 0, "cd cancel");
    if (x.failed) FAIL("cancel/destroy episode: %s", x.why);
}

/* ---- the sequential program ----------------------------------------------- */
static void put_token(unsigned idx, struct rtok r, abar_token_t t)
{
    C.tok[idx % MAXTOK] = (struct slot){ r, t, 1 };
    EXPECT_EQ(abar_token_error(t), r.err, "abar_token_error");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = { data, size };
    memset(&C, 0, sizeof C);
    if (do_init(&in, 1) != 0) {
        /* a rejected init leaves zeroed memory: every call says EINVAL */
        EXPECT_EQ(abar_token_error(abar_arrive(&C.bar)), EINVAL, "arrive on uninitialised");
        return 0;
    }
    EXPECT_EQ(abar_init(&C.other, 2, NULL), 0, "init other");
    C.other_tok = abar_arrive(&C.other);

    unsigned steps = 0;
    while (in.n > 0 && steps++ < 256) {
        unsigned op = next_byte(&in), arg = next_byte(&in);
        unsigned k = arg % MAXTOK;
        struct rtok rt;
        abar_token_t t;
        int r, want;
        switch (op >= 0xF0 ? 16 : op % 16) {
        case 0: case 1: /* arrive */
            rt = ref_arrive(&C.m, 1, 0);
            put_token(k, rt, abar_arrive(&C.bar));
            if (!rt.err) EXPECT_EQ(C.tok[k].t.raw, rt.phase, "arrive token phase");
            break;
        case 2: /* arrive_n, n = 0..5 */
            rt = ref_arrive(&C.m, arg % 6, 0);
            put_token(k, rt, abar_arrive_n(&C.bar, arg % 6));
            if (!rt.err) EXPECT_EQ(C.tok[k].t.raw, rt.phase, "arrive_n token phase");
            break;
        case 3: /* arrive_and_drop */
            rt = ref_arrive(&C.m, 1, 1);
            EXPECT_EQ(abar_arrive_and_drop(&C.bar), rt.err, "arrive_and_drop");
            break;
        case 4: /* current */
            if (!C.m.live) rt = (struct rtok){ EINVAL, 0, 0 };
            else if (C.m.cancelled) rt = (struct rtok){ ECANCELED, 0, 0 };
            else rt = (struct rtok){ 0, C.m.phase, C.m.gen };
            put_token(k, rt, abar_current(&C.bar));
            break;
        case 5: case 6: /* wait, only when it cannot block; else test */
            if (!C.tok[k].used) break;
            want = ref_judge(&C.m, C.tok[k].r);
            r = want == EBUSY ? abar_test(&C.bar, C.tok[k].t) : abar_wait(&C.bar, C.tok[k].t);
            EXPECT_EQ(r, want, want == EBUSY ? "test" : "wait");
            break;
        case 7: { /* wait_until: past deadline, malformed, NULL; with kind 0,
                   * bits 6-7 pick a negative tv_sec (1, 2) or a far deadline
                   * (3, issued only where the wait cannot block) */
            if (!C.tok[k].used) break;
            want = ref_judge(&C.m, C.tok[k].r);
            struct timespec ts = deadline_in(0);
            int kind = (arg >> 4) % 4, when = arg >> 6;
            if (kind == 1) ts.tv_nsec = 1000000000;
            if (kind == 2) ts.tv_nsec = -1;
            if (kind == 0 && when == 1) ts.tv_sec = -1;
            if (kind == 0 && when == 2) ts = (struct timespec){ (time_t)LONG_MIN, 999999999 };
            if (kind == 0 && when == 3 && want != EBUSY)
                ts = (struct timespec){ far_secs[op % 3], (long)(op >> 4) * 66666666 };
            r = abar_wait_until(&C.bar, C.tok[k].t, kind == 3 ? NULL : &ts);
            if (kind != 0) want = EINVAL;
            else if (want == EBUSY) want = ETIMEDOUT;
            EXPECT_EQ(r, want, "wait_until");
            break;
        }
        case 8: /* cancel */
            EXPECT_EQ(abar_cancel(&C.bar), C.m.live ? 0 : EINVAL, "cancel");
            if (C.m.live) C.m.cancelled = 1;
            break;
        case 9: /* forged tokens: a future phase, a random id, another barrier's */
            if (!C.tok[k].used || C.tok[k].r.err) break;
            t = C.tok[k].t;
            t.raw = C.m.phase + 1 + arg % 3;
            /* every case is EINVAL: a phase no arrive returned, a stale or
             * foreign identity, or a dead barrier */
            EXPECT_EQ(abar_test(&C.bar, t), EINVAL, "forged future token");
            EXPECT_EQ(abar_wait(&C.bar, t), EINVAL, "forged future token (wait)");
            t.id ^= 0x5a5a5a5a5a5a5a5aull | 1;
            t.raw = 0;
            EXPECT_EQ(abar_wait(&C.bar, t), EINVAL, "forged id");
            EXPECT_EQ(abar_wait(&C.bar, C.other_tok), EINVAL, "another barrier's token");
            break;
        case 10: /* arrive_and_wait, when it cannot block */
            if (C.m.live && !C.m.cancelled && !C.m.finished && C.m.pending != 1) break;
            rt = ref_arrive(&C.m, 1, 0);
            EXPECT_EQ(abar_arrive_and_wait(&C.bar), rt.err, "arrive_and_wait");
            break;
        case 11: /* destroy (nothing is inside: 0), maybe re-init at once */
            EXPECT_EQ(abar_destroy(&C.bar), C.m.live ? 0 : EINVAL, "destroy");
            C.m.live = 0;
            if (arg & 1) do_init(&in, 0);
            break;
        case 12: /* init on a live barrier: bad arguments change nothing; good ones re-init */
            do_init(&in, 0);
            break;
        case 13: /* the multi-threaded episodes (each on its own barrier) */
            if (arg % 4 == 0) mt_episode(&in);
            else if (arg % 4 == 1) an_episode(&in);
            else if (arg % 4 == 2) cd_episode(&in);
            break;
        case 14: /* test */
            if (!C.tok[k].used) break;
            EXPECT_EQ(abar_test(&C.bar, C.tok[k].t), ref_judge(&C.m, C.tok[k].r), "test");
            break;
        case 15: /* NULL barrier everywhere */
            EXPECT_EQ(abar_token_error(abar_arrive(NULL)), EINVAL, "arrive(NULL)");
            EXPECT_EQ(abar_token_error(abar_token_at(NULL, 0)), EINVAL, "token_at(NULL)");
            EXPECT_EQ(abar_wait(NULL, C.other_tok), EINVAL, "wait(NULL)");
            EXPECT_EQ(abar_cancel(NULL), EINVAL, "cancel(NULL)");
            EXPECT_EQ(abar_destroy(NULL), EINVAL, "destroy(NULL)");
            EXPECT_EQ(abar_init(NULL, 1, NULL), EINVAL, "init(NULL)");
            break;
        case 16: { /* token_at: a phase relative to the model's (arg >> 4) */
            const uint64_t cur = C.m.phase;
            uint64_t ph;
            switch (arg >> 4) {
            case 0: case 15: ph = cur; break;          /* the open phase */
            case 1: ph = cur + 1; break;               /* the next: not reached */
            case 2: ph = cur - 1; break;               /* the last completed (or wraps: far future) */
            case 3: ph = cur - 2 - (op & 3); break;    /* older */
            case 4: ph = 0; break;                     /* the first */
            case 5: ph = cur + 2 + (op & 3); break;    /* future */
            case 6: ph = UINT64_MAX; break;
            case 7: ph = cur + (UINT64_C(1) << ST_PHASE_BITS); break;  /* same bits in the state word */
            case 8: ph = cur - (UINT64_C(1) << ST_PHASE_BITS); break;
            case 9: ph = cur + (UINT64_C(1) << 21); break;
            case 10: ph = cur - (UINT64_C(1) << 21); break;
            case 11: ph = cur + (UINT64_C(1) << 32); break; /* same low 32 bits */
            case 12: ph = cur - (UINT64_C(1) << 32); break;
            case 13: ph = cur + (UINT64_C(1) << 63); break; /* far future */
            default: ph = (uint64_t)ECANCELED; break;  /* a phase equal to an error value */
            }
            rt = ref_token_at(&C.m, ph);
            t = abar_token_at(&C.bar, ph);
            put_token(k, rt, t);
            check_token_at(ph, rt, t, "abar_token_at");
            /* the token at once: test, then wait (or a past deadline) */
            want = ref_judge(&C.m, rt);
            EXPECT_EQ(abar_test(&C.bar, t), want, "test(token_at)");
            if (want == EBUSY) {
                struct timespec ts = deadline_in(0);
                EXPECT_EQ(abar_wait_until(&C.bar, t, &ts), ETIMEDOUT, "wait_until(token_at)");
            } else {
                EXPECT_EQ(abar_wait(&C.bar, t), want, "wait(token_at)");
            }
            break;
        }
        }
        check_state();
    }
    if (C.m.live) EXPECT_EQ(abar_destroy(&C.bar), 0, "final destroy");
    EXPECT_EQ(abar_destroy(&C.other), 0, "destroy other");
    return 0;
}
