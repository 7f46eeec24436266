/* test_mpi.c - abar over MPI: phases, completion, tokens, timeouts, cancel,
 * destroy, hierarchical mode, progress thread.  Run with 2 and 4 ranks.
 *
 * The barrier property is checked through a shared-memory window (all ranks
 * on one node, as under CTest): before arriving in phase k a participant
 * publishes k+1 in its slot; after its wait every slot must be >= k+1 (no one
 * was released early) and <= k+2 (no one ran two phases ahead). */
#include "mpi_harness.h"

#include <abar_mpi.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h" /* white box: which path a hierarchical barrier took */

/* ---- shared slots --------------------------------------------------------- */

static MPI_Win shm_win = MPI_WIN_NULL;

/* n zeroed 64-bit slots seen by every rank, or NULL when the ranks do not
 * share a node (the caller skips). */
static _Atomic int64_t *shm_get(size_t n)
{
    MPI_Comm node;
    int nsize;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    int all = nsize == msize, ok;
    MPI_Allreduce(&all, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) { MPI_Comm_free(&node); return NULL; }
    void *base;
    MPI_Win_allocate_shared(mrank == 0 ? (MPI_Aint)(n * 8) : 0, 8, MPI_INFO_NULL, node, &base, &shm_win);
    MPI_Aint sz;
    int du;
    MPI_Win_shared_query(shm_win, 0, &sz, &du, &base);
    _Atomic int64_t *s = base;
    if (mrank == 0)
        for (size_t i = 0; i < n; i++) atomic_init(&s[i], 0);
    MPI_Comm_free(&node);
    MPI_Barrier(MPI_COMM_WORLD);
    return s;
}

static void shm_put(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&shm_win);
}

/* every slot in [lo, hi] */
static void check_slots(_Atomic int64_t *s, int n, int64_t lo, int64_t hi)
{
    for (int i = 0; i < n; i++) {
        /* acquire: pairs with the publisher's release store */
        int64_t v = atomic_load_explicit(&s[i], memory_order_acquire);
        if (v < lo || v > hi)
            fprintf(stderr, "slot %d = %lld, want %lld..%lld\n", i, (long long)v,
                    (long long)lo, (long long)hi);
        MCHECK(v >= lo && v <= hi);
    }
}

static abar_mpi_attr_t attr0(void) { return (abar_mpi_attr_t){ 0 }; }

/* ---- init errors -------------------------------------------------------- */

MTEST(init_errors)
{
    abar_mpi_t b = { 0 };
    abar_mpi_attr_t a = attr0();
    MCHECK_EQ(abar_mpi_init(NULL, MPI_COMM_WORLD, NULL), EINVAL);
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_NULL, NULL), EINVAL);

    /* an inter-communicator between the even and the odd ranks */
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, mrank % 2, mrank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, mrank % 2 ? 0 : 1, 7, &inter);
    MCHECK_EQ(abar_mpi_init(&b, inter, NULL), EINVAL);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);

    a.root = msize;                       /* out of range everywhere */
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), EINVAL);
    a = attr0();
    a.root = mrank;                       /* ranks disagree on the root */
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), EINVAL);
    a = attr0();
    if (mrank == 1) a.flags = 0x80000000u; /* bad on one rank: fails on all */
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), EINVAL);
    a = attr0();
    a.result_size = 8;                    /* a result without a buffer */
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), EINVAL);
    a = attr0();
    a.flags = ABAR_WAIT_SPIN | ABAR_WAIT_PARK;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), EINVAL);

    /* nothing was created */
    MCHECK(b._private == NULL);
    MCHECK_EQ(abar_token_error(abar_mpi_arrive(&b)), EINVAL);
    MCHECK_EQ(abar_mpi_destroy(&b), EINVAL);
    MCHECK_EQ(abar_mpi_cancel(&b), EINVAL);
    MCHECK_EQ(abar_mpi_phase(&b), 0);

    /* and the communicator still works for a good init */
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, NULL), 0);
    MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);
    MCHECK_EQ(abar_mpi_phase(&b), 1);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
    MCHECK_EQ(abar_mpi_destroy(&b), EINVAL);
}

static void completion_ibarrier(void *arg) { (void)arg; }

MTEST(ibarrier_with_completion_refused)
{
    abar_mpi_t b = { 0 };
    abar_mpi_attr_t a = attr0();
    a.completion = completion_ibarrier;
    a.flags = ABAR_MPI_IBARRIER;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), EINVAL);
}

/* ---- phases --------------------------------------------------------------- */

static void run_phases(unsigned flags, int phases)
{
    _Atomic int64_t *s = shm_get((size_t)msize);
    if (!s) MSKIP("ranks on several nodes");
    abar_mpi_t b;
    abar_mpi_attr_t a = attr0();
    a.flags = flags;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    /* white box: one node, one participant a rank, no completion: a flag a
     * rank, unless messages are asked for or ABAR_MPI_FLAGS=0 */
    const char *fenv = getenv("ABAR_MPI_FLAGS");
    const bool flags_engine = !(flags & (ABAR_MPI_P2P | ABAR_MPI_IBARRIER)) && !(fenv && fenv[0] == '0');
    MCHECK_EQ(((struct mpi_impl *)b._private)->engine == ENG_FLAGS, flags_engine);
    abar_token_t first = { 0, 0 };
    unsigned seed = 12345u + (unsigned)mrank;
    for (int k = 0; k < phases; k++) {
        /* now and then a rank is late, so others really wait */
        if (rand_r(&seed) % 64 == 0) msleep_ms(1);
        /* release: our arrival's writes are published before the arrive */
        atomic_store_explicit(&s[mrank], k + 1, memory_order_release);
        abar_token_t t = abar_mpi_arrive(&b);
        MCHECK_EQ(abar_token_error(t), 0);
        if (k == 0) first = t;
        if (k % 3 == 0) {
            int r;
            while ((r = abar_mpi_test(&b, t)) == EBUSY) {}
            MCHECK_EQ(r, 0);
        } else {
            MCHECK_EQ(abar_mpi_wait(&b, t), 0);
        }
        check_slots(s, msize, k + 1, k + 2);
        MCHECK(abar_mpi_phase(&b) >= (uint64_t)k + 1);
        MCHECK_EQ(abar_mpi_wait(&b, t), 0);   /* completed: at once */
        MCHECK_EQ(abar_mpi_test(&b, first), 0);
    }
    MCHECK_EQ(abar_mpi_phase(&b), phases);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
    shm_put();
}

MTEST(phases_shm) { run_phases(0, 2000); }
MTEST(phases_dissemination) { run_phases(ABAR_MPI_P2P, 2000); }
MTEST(phases_ibarrier) { run_phases(ABAR_MPI_IBARRIER, 2000); }
MTEST(phases_park) { run_phases(ABAR_MPI_P2P | ABAR_WAIT_PARK, 300); }
MTEST(phases_shm_park) { run_phases(ABAR_WAIT_PARK, 300); }

MTEST(comm_self_and_subcomm)
{
    /* one rank: every arrival completes its phase at once */
    abar_mpi_t b;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_SELF, NULL), 0);
    for (int k = 0; k < 10; k++) {
        abar_token_t t = abar_mpi_arrive(&b);
        MCHECK_EQ(abar_mpi_test(&b, t), 0);
    }
    MCHECK_EQ(abar_mpi_phase(&b), 10);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
    /* two halves run their own barriers at their own pace */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, mrank % 2, mrank, &half);
    MCHECK_EQ(abar_mpi_init(&b, half, NULL), 0);
    int n = mrank % 2 ? 7 : 19;
    for (int k = 0; k < n; k++) MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);
    MCHECK_EQ(abar_mpi_phase(&b), n);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
    MPI_Comm_free(&half);
}

/* ---- completion ----------------------------------------------------------- */

struct cstate {
    _Atomic int64_t *slots;  /* shared: [0..msize) arrivals, [msize] completion runs */
    int nslots;              /* participant slots */
    uint64_t *res;           /* this rank's result buffer */
    size_t words;
    _Atomic int64_t phase_seen;
};

static void on_complete(void *arg)
{
    struct cstate *c = arg;
    int64_t runs = atomic_fetch_add(&c->slots[c->nslots], 1) + 1;
    /* every participant has arrived in this phase (runs == phase + 1) */
    check_slots(c->slots, c->nslots, runs, runs);
    for (size_t i = 0; i < c->words; i++) c->res[i] = (uint64_t)runs * 1000003u + i;
    atomic_store(&c->phase_seen, runs);
}

static void run_completion(size_t words, int phases, unsigned flags)
{
    _Atomic int64_t *s = shm_get((size_t)msize + 1);
    if (!s) MSKIP("ranks on several nodes");
    struct cstate c = { .slots = s, .nslots = msize, .words = words };
    c.res = calloc(words, sizeof *c.res);
    abar_mpi_t b;
    abar_mpi_attr_t a = attr0();
    a.completion = on_complete;
    a.arg = &c;
    a.root = msize - 1;
    a.result = c.res;
    a.result_size = words * sizeof *c.res;
    a.flags = flags;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    for (int k = 0; k < phases; k++) {
        atomic_store_explicit(&s[mrank], k + 1, memory_order_release);
        abar_token_t t = abar_mpi_arrive(&b);
        if (mrank == 0 && k % 16 == 0) msleep_ms(1);
        MCHECK_EQ(abar_mpi_wait(&b, t), 0);
        /* the completion ran exactly once per phase, before this release */
        int64_t runs = atomic_load(&s[msize]);
        MCHECK(runs == k + 1);
        for (size_t i = 0; i < words; i++) MCHECK(c.res[i] == (uint64_t)(k + 1) * 1000003u + i);
    }
    /* only the root ran it */
    MCHECK_EQ(atomic_load(&c.phase_seen), mrank == msize - 1 ? phases : 0);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
    free(c.res);
    shm_put();
}

MTEST(completion_tree_small_result) { run_completion(2, 1000, ABAR_MPI_P2P); }
MTEST(completion_tree_64k_result) { run_completion(8192, 100, ABAR_MPI_P2P); }
MTEST(completion_tree_no_result) { run_completion(0, 500, ABAR_MPI_P2P); }
MTEST(completion_shm_small_result) { run_completion(2, 1000, 0); }
MTEST(completion_shm_64k_result) { run_completion(8192, 100, 0); }

static abar_mpi_t dl_bar;
static abar_token_t dl_tok0;
static int dl_calls, dl_wait, dl_test, dl_arrive, dl_destroy;
static uint64_t dl_phase;
static void deadlock_completion(void *arg)
{
    (void)arg;
    if (++dl_calls != 2) return;
    /* phase 1: a token of the completing phase (phase 0's token, one on) */
    abar_token_t t1 = dl_tok0;
    t1.raw += 1;
    dl_wait = abar_mpi_wait(&dl_bar, t1);
    dl_test = abar_mpi_test(&dl_bar, t1);
    dl_arrive = abar_token_error(abar_mpi_arrive(&dl_bar));
    dl_destroy = abar_mpi_destroy(&dl_bar);
    dl_phase = abar_mpi_phase(&dl_bar);
}

MTEST(calls_from_completion)
{
    abar_mpi_attr_t a = attr0();
    a.completion = deadlock_completion;
    MCHECK_EQ(abar_mpi_init(&dl_bar, MPI_COMM_WORLD, &a), 0);
    dl_tok0 = abar_mpi_arrive(&dl_bar);
    MCHECK_EQ(abar_mpi_wait(&dl_bar, dl_tok0), 0);
    MCHECK_EQ(abar_mpi_arrive_and_wait(&dl_bar), 0);
    if (mrank == 0) {
        MCHECK_EQ(dl_calls, 2);
        MCHECK_EQ(dl_wait, EDEADLK);
        MCHECK_EQ(dl_test, EBUSY);     /* as in the core: test never says EDEADLK */
        MCHECK_EQ(dl_arrive, EINVAL);  /* the phase expects no arrival, as in the core */
        MCHECK_EQ(dl_destroy, EBUSY);
        MCHECK_EQ(dl_phase, 1);       /* still the completing phase */
    } else {
        MCHECK_EQ(dl_calls, 0);       /* the root runs it, nobody else */
    }
    MCHECK_EQ(abar_mpi_destroy(&dl_bar), 0);
}

/* ---- tokens, misuse ------------------------------------------------------- */

MTEST(token_rules)
{
    abar_mpi_t b, other;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, NULL), 0);
    MCHECK_EQ(abar_mpi_init(&other, MPI_COMM_WORLD, NULL), 0);
    abar_t core;
    MCHECK_EQ(abar_init(&core, 1, NULL), 0);
    abar_token_t ct = abar_arrive(&core);

    abar_token_t t = abar_mpi_arrive(&b);
    abar_token_t forged = t;
    forged.raw += 5;
    MCHECK_EQ(abar_mpi_test(&b, forged), EINVAL);
    MCHECK_EQ(abar_mpi_wait(&b, ct), EINVAL);            /* a core barrier's token */
    abar_token_t ot = abar_mpi_arrive(&other);
    MCHECK_EQ(abar_mpi_wait(&b, ot), EINVAL);            /* another MPI barrier's */
    MCHECK_EQ(abar_mpi_wait(&b, (abar_token_t){ ECANCELED, 0 }), ECANCELED);
    struct timespec bad = { 0, 1000000000L };
    MCHECK_EQ(abar_mpi_wait_until(&b, t, &bad), EINVAL);
    MCHECK_EQ(abar_mpi_wait_until(&b, t, NULL), EINVAL);
    MCHECK_EQ(abar_mpi_wait(&b, t), 0);
    MCHECK_EQ(abar_mpi_wait(&other, ot), 0);
    /* a deadline long past still returns 0 for a completed phase */
    struct timespec past = { 0, 0 };
    MCHECK_EQ(abar_mpi_wait_until(&b, t, &past), 0);
    for (int k = 0; k < 50; k++) MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);
    MCHECK_EQ(abar_mpi_wait(&b, t), 0);                  /* 50 phases old */
    MCHECK_EQ(abar_mpi_destroy(&other), 0);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
    MCHECK_EQ(abar_mpi_wait(&b, t), EINVAL);             /* destroyed */
    MCHECK_EQ(abar_destroy(&core), 0);
}

MTEST(second_arrival_in_one_phase)
{
    abar_mpi_t b;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, NULL), 0);
    abar_token_t t = { 0, 0 };
    if (mrank == 0) {
        t = abar_mpi_arrive(&b);
        MCHECK_EQ(abar_token_error(t), 0);
        /* the others have not arrived: this rank is already counted */
        abar_token_t t2 = abar_mpi_arrive(&b);
        MCHECK_EQ(abar_token_error(t2), EINVAL);
        MCHECK_EQ(abar_mpi_wait(&b, t2), EINVAL);
        /* destroy with our arrival in flight would strand the others */
        MCHECK_EQ(abar_mpi_destroy(&b), EBUSY);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (mrank != 0) t = abar_mpi_arrive(&b);
    MCHECK_EQ(abar_mpi_wait(&b, t), 0);
    MCHECK_EQ(abar_mpi_phase(&b), 1);
    MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);          /* unharmed */
    MCHECK_EQ(abar_mpi_phase(&b), 2);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
}

/* ---- parked waiters -------------------------------------------------------- */

/* Waiters that have parked (at once, or after the spin budget) are woken by
 * the late rank's arrival, not by their deadline: each phase one rank, in
 * turn, arrives 20 ms late, and every wait must end well before its 5 s
 * deadline (an arrival that does not wake the sleepers fails here). */
static void run_parked(unsigned flags)
{
    abar_mpi_t b;
    abar_mpi_attr_t a = attr0();
    a.flags = flags;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    for (int k = 0; k < 6; k++) {
        if (k % msize == mrank) msleep_ms(20);
        double t0 = mnow();
        abar_token_t t = abar_mpi_arrive(&b);
        MCHECK_EQ(abar_token_error(t), 0);
        struct timespec d = mdeadline_ms(5000);
        MCHECK_EQ(abar_mpi_wait_until(&b, t, &d), 0);
        MCHECK(mnow() - t0 < 2.0);
        MCHECK_EQ(abar_mpi_phase(&b), k + 1);
    }
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
}

MTEST(parked_waiters_woken_shm) { run_parked(0); }
MTEST(parked_waiters_woken_shm_park) { run_parked(ABAR_WAIT_PARK); }
MTEST(parked_waiters_woken_p2p) { run_parked(ABAR_MPI_P2P | ABAR_WAIT_PARK); }

/* ---- timeouts and cancel ------------------------------------------------- */

static void run_wait_until(unsigned flags)
{
    abar_mpi_t b;
    abar_mpi_attr_t a = attr0();
    a.flags = flags;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    abar_token_t t;
    if (mrank == 0) {
        t = abar_mpi_arrive(&b);
        double t0 = mnow();
        struct timespec d = mdeadline_ms(50);
        MCHECK_EQ(abar_mpi_wait_until(&b, t, &d), ETIMEDOUT);
        MCHECK(mnow() - t0 >= 0.049);
        MCHECK_EQ(abar_mpi_test(&b, t), EBUSY);
        MCHECK_EQ(abar_mpi_phase(&b), 0);
    } else {
        msleep_ms(300);
        t = abar_mpi_arrive(&b);
    }
    struct timespec d = mdeadline_ms(10000);
    MCHECK_EQ(abar_mpi_wait_until(&b, t, &d), 0);       /* the arrival stayed counted */
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
}

MTEST(wait_until_times_out_shm) { run_wait_until(0); }
MTEST(wait_until_times_out_shm_park) { run_wait_until(ABAR_WAIT_PARK); }
MTEST(wait_until_times_out_p2p) { run_wait_until(ABAR_MPI_P2P); }

struct waiter { abar_mpi_t *b; abar_token_t t; int r; };
static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    w->r = abar_mpi_wait(w->b, w->t);
    return NULL;
}

/* A thread blocked in wait on t (this rank's phase cannot complete) keeps
 * destroy at EBUSY and is woken by the cancel with ECANCELED. */
static void cancel_wakes_waiter(abar_mpi_t *b, abar_token_t t)
{
    struct waiter w = { b, t, -1 };
    pthread_t th;
    MCHECK_EQ(pthread_create(&th, NULL, wait_thread, &w), 0);
    msleep_ms(100);
    MCHECK_EQ(abar_mpi_destroy(b), EBUSY); /* the thread is inside */
    MCHECK_EQ(abar_mpi_cancel(b), 0);
    pthread_join(th, NULL);
    MCHECK_EQ(w.r, ECANCELED);
}

static void run_cancel(int with_completion, unsigned flags)
{
    abar_mpi_t b;
    abar_mpi_attr_t a = attr0();
    a.flags = flags;
    uint64_t res = 0;
    if (with_completion) {
        a.completion = completion_ibarrier;
        a.result = &res;
        a.result_size = sizeof res;
    }
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);
    if (mrank == 1) {
        /* never arrives in phase 1: cancels instead */
        MCHECK_EQ(abar_mpi_cancel(&b), 0);
        MCHECK_EQ(abar_mpi_cancel(&b), 0);              /* idempotent */
        MCHECK_EQ(abar_token_error(abar_mpi_arrive(&b)), ECANCELED);
    } else if (mrank == 0) {
        abar_token_t t = abar_mpi_arrive(&b);
        cancel_wakes_waiter(&b, t);
        MCHECK_EQ(abar_mpi_wait(&b, t), ECANCELED);
    } else {
        abar_token_t t = abar_mpi_arrive(&b);
        struct timespec d = mdeadline_ms(100);
        MCHECK_EQ(abar_mpi_wait_until(&b, t, &d), ETIMEDOUT);
        MCHECK_EQ(abar_mpi_cancel(&b), 0);
        MCHECK_EQ(abar_mpi_wait(&b, t), ECANCELED);
    }
    MCHECK_EQ(abar_mpi_phase(&b), 1);
    MCHECK_EQ(abar_token_error(abar_mpi_arrive(&b)), ECANCELED);
    /* the cancelled phase is retired by destroy (collective) */
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
    /* and the communicator is clean for a fresh barrier */
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    for (int k = 0; k < 20; k++) MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
}

MTEST(cancel_dissemination) { run_cancel(0, ABAR_MPI_P2P); }
MTEST(cancel_tree) { run_cancel(1, ABAR_MPI_P2P); }
MTEST(cancel_ibarrier) { run_cancel(0, ABAR_MPI_IBARRIER); }
MTEST(cancel_shm) { run_cancel(0, 0); }
MTEST(cancel_shm_completion) { run_cancel(1, 0); }

/* ---- hierarchical --------------------------------------------------------- */

enum { HT_MAX = 3, HPHASES = 300 };
struct hctx {
    abar_mpi_t *b;
    _Atomic int64_t *s;
    int tid, nthreads_total;
    uint64_t *res;
    int mode;      /* 0 arrive/wait, 1 arrive_and_wait, 2 test loop */
};

static void *hier_thread(void *arg)
{
    struct hctx *h = arg;
    int slot = mrank * HT_MAX + h->tid;
    for (int k = 0; k < HPHASES; k++) {
        atomic_store_explicit(&h->s[slot], k + 1, memory_order_release);
        int r;
        if (h->mode == 1) {
            r = abar_mpi_arrive_and_wait(h->b);
        } else {
            abar_token_t t = abar_mpi_arrive(h->b);
            MCHECK_EQ(abar_token_error(t), 0);
            if (h->mode == 2) while ((r = abar_mpi_test(h->b, t)) == EBUSY) sched_yield();
            else r = abar_mpi_wait(h->b, t);
        }
        MCHECK_EQ(r, 0);
        /* every thread of every rank arrived; nobody is two phases ahead */
        for (int q = 0; q < msize; q++) {
            int nt = q == 1 ? 3 : 2;
            for (int j = 0; j < nt; j++) {
                int64_t v = atomic_load_explicit(&h->s[q * HT_MAX + j], memory_order_acquire);
                MCHECK(v >= k + 1 && v <= k + 2);
            }
        }
        if (h->res) {
            MCHECK_EQ(atomic_load(&h->s[msize * HT_MAX]), k + 1);
            MCHECK(h->res[0] == (uint64_t)(k + 1) * 1000003u);
        }
    }
    return NULL;
}

static void hier_complete(void *arg)
{
    struct cstate *c = arg;
    int64_t runs = atomic_fetch_add(&c->slots[msize * HT_MAX], 1) + 1;
    for (int q = 0; q < msize; q++)
        for (int j = 0; j < (q == 1 ? 3 : 2); j++)
            MCHECK_EQ(atomic_load(&c->slots[q * HT_MAX + j]), runs);
    c->res[0] = (uint64_t)runs * 1000003u;
}

static void run_hier(int with_completion, unsigned flags)
{
    _Atomic int64_t *s = shm_get((size_t)msize * HT_MAX + 1);
    if (!s) MSKIP("ranks on several nodes");
    int nt = mrank == 1 ? 3 : 2;   /* ranks may differ in thread count */
    uint64_t res[1] = { 0 };
    struct cstate c = { .slots = s, .res = res, .words = 1 };
    abar_mpi_t b;
    abar_mpi_attr_t a = attr0();
    a.threads = (unsigned)nt;
    a.flags = flags;
    if (with_completion) {
        a.completion = hier_complete;
        a.arg = &c;
        a.root = msize - 1;
        a.result = res;
        a.result_size = sizeof res;
    }
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    pthread_t th[HT_MAX];
    struct hctx h[HT_MAX];
    for (int i = 0; i < nt; i++) {
        h[i] = (struct hctx){ &b, s, i, 0, with_completion ? res : NULL, i % 3 };
        MCHECK_EQ(pthread_create(&th[i], NULL, hier_thread, &h[i]), 0);
    }
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    MCHECK_EQ(abar_mpi_phase(&b), HPHASES);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
    shm_put();
}

MTEST(hierarchical_shm) { run_hier(0, 0); }
MTEST(hierarchical_shm_completion) { run_hier(1, 0); }
MTEST(hierarchical_dissemination) { run_hier(0, ABAR_MPI_P2P); }
MTEST(hierarchical_tree_completion) { run_hier(1, ABAR_MPI_P2P); }
MTEST(hierarchical_progress_thread) { run_hier(1, ABAR_MPI_P2P | ABAR_MPI_PROGRESS_THREAD); }

/* Hierarchical, two threads a rank: a timeout, a cancel that wakes a
 * blocked thread and refuses arrivals, and a destroy after a phase that
 * only some threads of some rank joined.  On one node without a completion
 * the threads arrive on the node's shared barrier themselves (the direct
 * path, arrive_wait.c); with ABAR_MPI_P2P they go through the rank's local
 * barrier and MPI. */
struct hloop { abar_mpi_t *b; int phases, r; };
static void *hier_loop(void *arg)
{
    struct hloop *h = arg;
    h->r = 0;
    for (int k = 0; k < h->phases && h->r == 0; k++) h->r = abar_mpi_arrive_and_wait(h->b);
    return NULL;
}

static void run_hier_cancel(unsigned flags)
{
    abar_mpi_t b;
    abar_mpi_attr_t a = attr0();
    a.threads = 2;
    a.flags = flags;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    /* White box: on one node the flags engine, oversubscribed (as CI's 2
     * CPUs are) or not, unless ABAR_MPI_FLAGS=0.  CTest runs this program
     * again with ABAR_MPI_FLAGS=0 ABAR_MPI_DIRECT=1 (the direct path forced
     * on) and with ABAR_MPI_FLAGS=0 (two levels, where oversubscribed). */
    const char *env = getenv("ABAR_MPI_DIRECT"), *fenv = getenv("ABAR_MPI_FLAGS");
    const bool no_flags = fenv && !strcmp(fenv, "0");
    const struct mpi_impl *mi = b._private;
    MCHECK_EQ(mi->engine == ENG_FLAGS, flags == 0 && !no_flags);
    if (env && !strcmp(env, "1")) MCHECK_EQ(mi->direct, flags == 0 && no_flags);
    if (env && !strcmp(env, "0")) MCHECK(!mi->direct);
    struct hloop h = { &b, 1, -1 };
    pthread_t th;
    MCHECK_EQ(pthread_create(&th, NULL, hier_loop, &h), 0);
    MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);
    pthread_join(th, NULL);
    MCHECK_EQ(h.r, 0);
    MCHECK_EQ(abar_mpi_phase(&b), 1);
    if (mrank == 0) {
        /* one of this rank's two threads arrives in phase 1, the other never */
        abar_token_t t = abar_mpi_arrive(&b);
        MCHECK_EQ(abar_token_error(t), 0);
        struct timespec d = mdeadline_ms(50);
        double t0 = mnow();
        MCHECK_EQ(abar_mpi_wait_until(&b, t, &d), ETIMEDOUT);
        MCHECK(mnow() - t0 >= 0.049);
        MCHECK_EQ(abar_mpi_test(&b, t), EBUSY);
        /* half of this rank arrived in an open phase: not destroyable */
        MCHECK_EQ(abar_mpi_destroy(&b), EBUSY);
        cancel_wakes_waiter(&b, t);
        MCHECK_EQ(abar_mpi_test(&b, t), ECANCELED);
    } else {
        /* both threads arrive; rank 0 never completes the phase */
        abar_token_t t1 = abar_mpi_arrive(&b), t2 = abar_mpi_arrive(&b);
        MCHECK_EQ(abar_token_error(t1), 0);
        MCHECK_EQ(abar_token_error(t2), 0);
        struct timespec d = mdeadline_ms(100);
        MCHECK_EQ(abar_mpi_wait_until(&b, t1, &d), ETIMEDOUT);
        MCHECK_EQ(abar_mpi_cancel(&b), 0);
        MCHECK_EQ(abar_mpi_wait(&b, t1), ECANCELED);
        MCHECK_EQ(abar_mpi_wait(&b, t2), ECANCELED);
    }
    MCHECK_EQ(abar_mpi_phase(&b), 1);
    MCHECK_EQ(abar_token_error(abar_mpi_arrive(&b)), ECANCELED);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
    /* a fresh barrier on the same communicator works */
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    h = (struct hloop){ &b, 50, -1 };
    MCHECK_EQ(pthread_create(&th, NULL, hier_loop, &h), 0);
    for (int k = 0; k < 50; k++) MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);
    pthread_join(th, NULL);
    MCHECK_EQ(h.r, 0);
    MCHECK_EQ(abar_mpi_phase(&b), 50);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
}

MTEST(hierarchical_cancel_shm) { run_hier_cancel(0); }
MTEST(hierarchical_cancel_dissemination) { run_hier_cancel(ABAR_MPI_P2P); }

/* ---- progress thread ------------------------------------------------------ */

MTEST(progress_thread_completes_while_computing)
{
    abar_mpi_t b;
    abar_mpi_attr_t a = attr0();
    a.flags = ABAR_MPI_PROGRESS_THREAD | ABAR_MPI_P2P; /* shared memory needs no progress */
    a.progress_us = 20;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    for (int k = 0; k < 5; k++) {
        abar_token_t t = abar_mpi_arrive(&b);
        /* "compute" with no MPI call and no abar call: only the progress
         * threads can finish the phase */
        double t0 = mnow();
        while (mnow() - t0 < 0.1 && abar_mpi_phase(&b) == (uint64_t)k) msleep_ms(1);
        MCHECK_EQ(abar_mpi_phase(&b), k + 1);
        MCHECK_EQ(abar_mpi_wait(&b, t), 0);
    }
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
}

int main(int argc, char **argv) { return mharness_main(argc, argv, MPI_THREAD_MULTIPLE); }
