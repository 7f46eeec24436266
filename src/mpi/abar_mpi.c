/*
 * abar_mpi.c - abar over MPI.
 *
 * Two core barriers per rank carry the semantics:
 *   local   expected = threads of this rank; its completion function runs on
 *           the rank's last local arrival and posts the rank's arrival to MPI
 *           (unused with one participant per rank: the arrival posts
 *           directly, under the barrier's mutex);
 *   release expected = 1; whoever sees the MPI phase finish arrives on it once,
 *           which releases every waiter of the rank.
 * Tokens are release's tokens: a thread arrives in phase k only while
 * local and release both stand at k (flat: while nothing is in flight), so
 * abar_current(release) names k.
 *
 * Engines (one MPI phase in flight per rank at a time, on a private duplicate
 * of the user's communicator, so nothing can match the user's messages):
 *   DISSEM    no completion: dissemination barrier, ceil(log2 P) rounds of
 *             one-word messages (tag = round);
 *   IBARRIER  no completion, ABAR_MPI_IBARRIER: one MPI_Ibarrier;
 *   TREE      completion: binomial fan-in to the root, the completion on the
 *             root, binomial fan-out of [phase | result] that releases;
 *   SHM       every rank on one node (with or without completion): a
 *             process-shared core barrier (expected = ranks) in an MPI
 *             shared-memory window (MPI_Win_allocate_shared), plus one
 *             (expected 1) through which the root releases after the
 *             completion.  No MPI call finishes a phase, so it completes while
 *             the ranks compute, and a waiting driver sleeps in the core's
 *             spin-then-futex wait.  Chosen at init unless ABAR_MPI_P2P or
 *             ABAR_MPI_IBARRIER.
 * Every message carries nonce + phase (8 bytes; the nonce is drawn at init
 * and agreed by all ranks): a message left over from a cancelled phase of an
 * earlier barrier, which MPI may deliver to a new communicator that reuses
 * the context id, is recognised and dropped instead of counted.  Destroy
 * (collective) first finishes, silently, every phase any rank has posted, so
 * a cancelled phase leaves no message behind: Open MPI numbers the messages
 * between two ranks per communicator, and a leftover delivered to a new
 * communicator would take the place of a real message there.
 * All MPI calls of a barrier are made under its mutex, so MPI_THREAD_SERIALIZED
 * suffices for our own calls.
 */
#define _GNU_SOURCE
#include "abar_mpi.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MPI_MAGIC_LIVE 0x61626d70u /* "abmp" */
#define KNOWN_FLAGS (ABAR_MPI_PROGRESS_THREAD | ABAR_MPI_IBARRIER | ABAR_MPI_P2P | ABAR_WAIT_SPIN | ABAR_WAIT_PARK)
#define TAG_UP   100               /* tree: arrival of a subtree, child -> parent */
#define TAG_DOWN 101               /* tree: [phase | result], parent -> child */
#define POLL_NS  100000u           /* a blocked waiter retries the driver role this often */
#define SHM_POLL_NS 1000000u       /* a driver asleep in the shared wait looks for a cancel */
#define WORD_CANCELLED (UINT64_C(1) << 62) /* tree: the root cancelled this phase */

enum engine { ENG_DISSEM, ENG_IBARRIER, ENG_TREE, ENG_SHM };

/* ENG_SHM: every rank on one node; a segment of MPI_Win_allocate_shared
 * holding two process-shared core barriers. */
struct shm_seg {
    abar_t gather;             /* expected = ranks: every rank arrives once a phase */
    abar_t rel;                /* completion mode, expected 1: the root releases */
    _Atomic uint64_t cancel_mark; /* completion mode: phase+1 the root relayed cancelled */
    char pad[56];
    unsigned char result[];    /* completion mode: the root's result */
};
enum stage { ST_IDLE, ST_ARRIVING, ST_RELEASING };

struct mpi_impl {
    abar_t local;              /* this rank's threads arrive here */
    abar_t release;            /* one arrival per phase releases the rank */
    _Atomic uint32_t magic;
    _Atomic uint32_t inside;   /* calls in progress: destroy is EBUSY while > 0 */
    _Atomic int driving;       /* a waiter is polling MPI (others block on release) */
    _Atomic int err;           /* sticky EIO once an MPI call failed */
    _Atomic int cancelled;
    pthread_mutex_t lock;      /* our MPI calls, and every field below */
    pthread_cond_t kick;       /* progress thread: a phase was posted, or stop */
    int stage;
    uint64_t phase;            /* the phase in flight (or the last one) */
    uint64_t done;             /* phases finished in MPI (release may have refused some) */
    bool draining;             /* destroy is finishing phases: no completion, no result */
    uint64_t nonce;            /* this barrier's, the same on every rank */
    uint64_t sbuf;             /* what our sends carry: nonce + phase */
    MPI_Comm comm;
    int rank, size, root, engine;
    bool oversub;              /* more runnable threads than CPUs: yield while polling */
    unsigned wait_flags;       /* ABAR_WAIT_SPIN / ABAR_WAIT_PARK from attr */
    unsigned threads;          /* participants in this rank (1: flat, local unused) */
    /* DISSEM */
    int rounds, rnd;
    MPI_Request *sreq, *rreq;
    uint64_t *rbuf;            /* one per round */
    int *to, *from;            /* round i: send to rank + 2^i, hear from rank - 2^i */
    /* TREE */
    int nchild;
    bool down_done;
    MPI_Request up, down, *child_in, *child_out;
    uint64_t *cbuf;            /* one per child */
    int parent, child[32];
    unsigned char *staging;    /* [uint64 phase | result] */
    size_t staging_bytes;
    abar_completion_fn *completion;
    void *arg;
    void *result;
    size_t result_size;
    /* IBARRIER */
    MPI_Request ibar;
    /* SHM */
    MPI_Win win;
    struct shm_seg *seg;
    abar_token_t gtok, rtok;   /* this rank's tokens of the phase in flight */
    /* progress thread */
    bool has_thread, stop;
    unsigned progress_us;
    pthread_t thread;
};

/* The barrier whose user completion this thread is running (EDEADLK guard). */
static _Thread_local const struct mpi_impl *completing;

/* An invalid token, in the core's encoding (EINVAL or ECANCELED only). */
static abar_token_t tok_err(int e) { return (abar_token_t){ .raw = (uint64_t)e, .id = 0 }; }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct mpi_impl *live(const abar_mpi_t *b)
{
    if (b == NULL || b->_private == NULL) return NULL;
    struct mpi_impl *m = b->_private;
    /* relaxed: magic changes only at init and destroy, which the caller must
     * not race with other calls (beyond what EBUSY detects). */
    return atomic_load_explicit(&m->magic, memory_order_relaxed) == MPI_MAGIC_LIVE ? m : NULL;
}

/* An MPI call failed: the barrier is broken for good on this rank. */
static void fail(struct mpi_impl *m)
{
    atomic_store(&m->err, EIO);
    abar_cancel(&m->local);
    abar_cancel(&m->release);
}

/* ---- engines: start a phase, and poll it (1 done, 0 not yet, -1 error) ---- */

/* One-word messages.  Plain Isend/Irecv: Open MPI 4.1 serves them by a
 * faster path than persistent requests (MPI_Start), about 0.7 us against
 * 1.0 us a round trip here. */
static int recv_word(struct mpi_impl *m, uint64_t *buf, int from, int tag, MPI_Request *r)
{
    return MPI_Irecv(buf, 1, MPI_UINT64_T, from, tag, m->comm, r) == MPI_SUCCESS ? 0 : -1;
}

static int send_word(struct mpi_impl *m, int to, int tag, MPI_Request *r)
{
    return MPI_Isend(&m->sbuf, 1, MPI_UINT64_T, to, tag, m->comm, r) == MPI_SUCCESS ? 0 : -1;
}

static int send_down(struct mpi_impl *m)
{
    for (int i = 0; i < m->nchild; i++)
        if (MPI_Isend(m->staging, (int)m->staging_bytes, MPI_BYTE, m->child[i], TAG_DOWN, m->comm,
                      &m->child_out[i]) != MPI_SUCCESS)
            return -1;
    return 0;
}

static int recv_down(struct mpi_impl *m)
{
    return MPI_Irecv(m->staging, (int)m->staging_bytes, MPI_BYTE, m->parent, TAG_DOWN, m->comm,
                     &m->down) == MPI_SUCCESS ? 0 : -1;
}

static int start_phase(struct mpi_impl *m)
{
    m->sbuf = m->nonce + m->phase;
    switch (m->engine) {
    case ENG_IBARRIER:
        return MPI_Ibarrier(m->comm, &m->ibar) == MPI_SUCCESS ? 0 : -1;
    case ENG_SHM:
        /* rel cannot complete phase k before gather does, which needs us:
         * its current token, taken first, names phase k */
        if (m->completion && m->rank != m->root) {
            m->rtok = abar_current(&m->seg->rel);
            if (abar_token_error(m->rtok)) return -1;
        }
        m->gtok = abar_arrive(&m->seg->gather);
        return abar_token_error(m->gtok) ? -1 : 0;
    case ENG_DISSEM:
        m->rnd = 0;
        for (int i = 0; i < m->rounds; i++)
            if (recv_word(m, &m->rbuf[i], m->from[i], i, &m->rreq[i])) return -1;
        return m->rounds ? send_word(m, m->to[0], 0, &m->sreq[0]) : 0;
    default: /* ENG_TREE */
        m->down_done = m->rank == m->root;
        for (int i = 0; i < m->nchild; i++)
            if (recv_word(m, &m->cbuf[i], m->child[i], TAG_UP, &m->child_in[i])) return -1;
        return m->rank != m->root ? recv_down(m) : 0;
    }
}

/* A received word: 1 this phase's, 2 this phase's with the root's cancel,
 * 0 a leftover of an older barrier (drop it and receive again), -1 this
 * barrier's but another phase (misuse). */
static int check_word(const struct mpi_impl *m, uint64_t w)
{
    uint64_t ph = w - m->nonce;
    if (ph == m->phase) return 1;
    if (ph == m->phase + WORD_CANCELLED) return 2;
    return ph <= m->phase + 1 ? -1 : 0;
}

static int poll_dissem(struct mpi_impl *m)
{
    int flag;
    while (m->rnd < m->rounds) {
        if (MPI_Test(&m->rreq[m->rnd], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
        if (!flag) return 0;
        int c = check_word(m, m->rbuf[m->rnd]);
        if (c < 0) return -1;
        if (c == 0) {
            if (recv_word(m, &m->rbuf[m->rnd], m->from[m->rnd], m->rnd, &m->rreq[m->rnd])) return -1;
            continue;
        }
        /* round rnd heard from rank - 2^rnd: everyone it had heard from has arrived */
        if (++m->rnd < m->rounds && send_word(m, m->to[m->rnd], m->rnd, &m->sreq[m->rnd])) return -1;
    }
    /* our sends must be done before the next phase rewrites sbuf */
    if (MPI_Testall(m->rounds, m->sreq, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return -1;
    return flag;
}

static int poll_tree(struct mpi_impl *m)
{
    int flag;
    bool root = m->rank == m->root;
    if (m->stage == ST_ARRIVING) {
        if (MPI_Testall(m->nchild, m->child_in, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return -1;
        if (!flag) return 0;
        bool again = false;
        for (int i = 0; i < m->nchild; i++) {
            int c = check_word(m, m->cbuf[i]);
            if (c < 0) return -1;
            if (c == 0) {
                if (recv_word(m, &m->cbuf[i], m->child[i], TAG_UP, &m->child_in[i])) return -1;
                again = true;
            }
        }
        if (again) return 0;
        if (root && (m->draining || atomic_load(&m->cancelled))) {
            /* cancelled here (sticky: the completion never runs again):
             * release the others with the cancel, not with a result */
            uint64_t w = m->sbuf + WORD_CANCELLED;
            memcpy(m->staging, &w, sizeof w);
            if (send_down(m)) return -1;
        } else if (root) {
            /* every rank has arrived and none is released: the completion's moment */
            if (m->completion) {
                const struct mpi_impl *outer = completing;
                completing = m;
                m->completion(m->arg);
                completing = outer;
            }
            memcpy(m->staging, &m->sbuf, sizeof m->sbuf);
            if (m->result_size) memcpy(m->staging + sizeof m->sbuf, m->result, m->result_size);
            if (send_down(m)) return -1;
        } else if (send_word(m, m->parent, TAG_UP, &m->up)) {
            return -1;
        }
        m->stage = ST_RELEASING;
    }
    if (!m->down_done) {
        if (MPI_Test(&m->down, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
        if (!flag) return 0;
        uint64_t w;
        memcpy(&w, m->staging, sizeof w);
        int c = check_word(m, w);
        if (c < 0) return -1;
        if (c == 0) return recv_down(m);
        if (c == 2) {
            /* the root cancelled: so do we (the flagged word goes on down) */
            atomic_store(&m->cancelled, 1);
            abar_cancel(&m->local);
            abar_cancel(&m->release);
        } else if (m->result_size && !m->draining) {
            memcpy(m->result, m->staging + sizeof w, m->result_size);
        }
        if (send_down(m)) return -1;
        m->down_done = true;
    }
    if (MPI_Testall(m->nchild, m->child_out, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return -1;
    if (!flag) return 0;
    if (!root) {
        if (MPI_Test(&m->up, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
        if (!flag) return 0;
    }
    return 1;
}

static int poll_shm(struct mpi_impl *m)
{
    struct shm_seg *g = m->seg;
    if (m->completion == NULL || m->rank == m->root) {
        int r = abar_test(&g->gather, m->gtok);
        if (r) return r == EBUSY ? 0 : -1;
        if (m->completion == NULL) return 1;
        /* root: every rank has arrived, none is released */
        if (m->draining || atomic_load(&m->cancelled)) {
            atomic_store_explicit(&g->cancel_mark, m->phase + 1, memory_order_relaxed);
        } else {
            const struct mpi_impl *outer = completing;
            completing = m;
            m->completion(m->arg);
            completing = outer;
            if (m->result_size) memcpy(g->result, m->result, m->result_size);
        }
        /* rel's release carries the result and the mark to every rank */
        return abar_token_error(abar_arrive(&g->rel)) ? -1 : 1;
    }
    int r = abar_test(&g->rel, m->rtok);
    if (r) return r == EBUSY ? 0 : -1;
    if (atomic_load_explicit(&g->cancel_mark, memory_order_relaxed) == m->phase + 1) {
        atomic_store(&m->cancelled, 1);
        abar_cancel(&m->local);
        abar_cancel(&m->release);
    } else if (m->result_size && !m->draining) {
        /* the root's next completion cannot start before our next arrival */
        memcpy(m->result, g->result, m->result_size);
    }
    return 1;
}

/* SHM: blocks (core spin-then-futex wait, no lock held) until the phase in
 * flight can be finished by a poll, or the deadline passes. */
static void shm_block(struct mpi_impl *m, uint64_t deadline)
{
    pthread_mutex_lock(&m->lock);
    bool waiting = m->stage != ST_IDLE;
    bool on_rel = m->completion && m->rank != m->root;
    abar_token_t t = on_rel ? m->rtok : m->gtok;
    pthread_mutex_unlock(&m->lock);
    if (!waiting) return;
    abar_t *bar = on_rel ? &m->seg->rel : &m->seg->gather;
    struct timespec ts = { .tv_sec = (time_t)(deadline / 1000000000u),
                           .tv_nsec = (long)(deadline % 1000000000u) };
    (void)abar_wait_until(bar, t, &ts);
}

/* One poll of the phase in flight; releases the rank when it is done.
 * Called with m->lock held. */
static void progress_locked(struct mpi_impl *m)
{
    if (m->stage == ST_IDLE || atomic_load_explicit(&m->err, memory_order_relaxed)) return;
    int r, flag;
    switch (m->engine) {
    case ENG_IBARRIER:
        r = MPI_Test(&m->ibar, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS ? -1 : flag;
        break;
    case ENG_DISSEM: r = poll_dissem(m); break;
    case ENG_SHM:    r = poll_shm(m); break;
    default:         r = poll_tree(m); break;
    }
    if (r < 0) {
        fail(m);
    } else if (r > 0) {
        m->stage = ST_IDLE;
        m->done++;
        /* The release: the core barrier's release/acquire carries the result
         * copy (and everything before) to every waiter.  Refused, harmlessly,
         * after a local cancel. */
        (void)abar_arrive(&m->release);
    }
}

static void progress_try(struct mpi_impl *m)
{
    if (pthread_mutex_trylock(&m->lock) == 0) {
        progress_locked(m);
        pthread_mutex_unlock(&m->lock);
    }
}

/* local's completion: the rank's last local arrival posts the rank's arrival. */
static void post_locked(struct mpi_impl *m)
{
    if (m->stage != ST_IDLE) {
        fail(m); /* cannot happen without misuse: arrive checks nothing is in flight */
    } else {
        m->phase = m->done; /* = abar_phase(release) while not cancelled */
        m->stage = ST_ARRIVING;
        if (start_phase(m) != 0) fail(m);
        /* the round-0 message may be here already (shared memory needs no
         * push: its poll is left to the wait, off the arrive's path) */
        else if (m->engine != ENG_SHM) progress_locked(m);
        if (m->has_thread) pthread_cond_signal(&m->kick);
    }
}

static void post(void *arg)
{
    struct mpi_impl *m = arg;
    pthread_mutex_lock(&m->lock);
    post_locked(m);
    pthread_mutex_unlock(&m->lock);
}

static void *progress_main(void *arg)
{
    struct mpi_impl *m = arg;
    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (!m->stop && (m->stage == ST_IDLE || atomic_load(&m->err)))
            pthread_cond_wait(&m->kick, &m->lock);
        if (m->stop) break;
        progress_locked(m);
        if (m->stage == ST_IDLE) continue;
        pthread_mutex_unlock(&m->lock);
        /* After a local cancel the phase may never finish: poll it slowly. */
        unsigned us = atomic_load(&m->cancelled) ? 1000 : m->progress_us;
        if (us) {
            struct timespec d = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
            nanosleep(&d, NULL);
        } else {
            sched_yield();
        }
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

/* ---- arrive and wait -------------------------------------------------------- */

/* Flat (one participant per rank): no local barrier; the arrival posts
 * directly, under the lock that also orders the release. */
static abar_token_t arrive_flat(struct mpi_impl *m)
{
    pthread_mutex_lock(&m->lock);
    /* our previous phase may be done in MPI by now */
    if (m->stage != ST_IDLE) progress_locked(m);
    /* Under the lock with nothing in flight, release cannot move: its
     * current token names the phase this arrival joins. */
    abar_token_t t = abar_current(&m->release); /* ECANCELED if cancelled */
    if (abar_token_error(t) == 0 && m->stage != ST_IDLE) t = tok_err(EINVAL); /* already arrived */
    if (abar_token_error(t) == 0) post_locked(m);
    pthread_mutex_unlock(&m->lock);
    return t;
}

/* Registered in `inside` by the caller. */
static abar_token_t arrive_impl(struct mpi_impl *m)
{
    if (m->threads == 1) return arrive_flat(m);
    abar_token_t t;
    for (int tries = 0;; tries++) {
        uint64_t p1 = abar_phase(&m->release);
        t = abar_current(&m->release);
        if (abar_token_error(t)) break; /* cancelled */
        uint64_t lp = abar_phase(&m->local);
        if (abar_phase(&m->release) != p1) continue; /* a release ran meanwhile */
        if (lp == p1) break;            /* nothing in flight: t names the phase we join */
        if (lp < p1) {
            /* The phase is released, but its last local arriver has not yet
             * left local's completion (post), so local still refuses
             * arrivals: it is a few instructions from done. */
            sched_yield();
            continue;
        }
        /* Our previous phase is still in flight here: it may be done in MPI. */
        if (tries == 0) { progress_try(m); continue; }
        t = tok_err(EINVAL);            /* we already arrived in the phase in flight */
        break;
    }
    if (abar_token_error(t) == 0) {
        abar_token_t lt = abar_arrive(&m->local); /* the last local one posts to MPI */
        if (abar_token_error(lt)) t = lt;
    }
    return t;
}

abar_token_t abar_mpi_arrive(abar_mpi_t *b)
{
    struct mpi_impl *m = live(b);
    if (m == NULL) return tok_err(EINVAL);
    /* From its own completion: the phase expects no arrival (as in the core). */
    if (completing == m) return tok_err(EINVAL);
    /* seq_cst: pairs with destroy's read of `inside` */
    atomic_fetch_add(&m->inside, 1);
    /* After an MPI failure the token says ECANCELED (an invalid token carries
     * only EINVAL or ECANCELED); waiting on it returns EIO. */
    abar_token_t t = arrive_impl(m);
    /* release: our last access to m; destroy reads 0 after it */
    atomic_fetch_sub_explicit(&m->inside, 1, memory_order_release);
    return t;
}

/* Waits for t, polling MPI while this thread holds the driver role, else
 * blocking on the release barrier and retrying the role every POLL_NS. */
static int drive(struct mpi_impl *m, abar_token_t t, const struct timespec *abstime)
{
    uint64_t deadline = abstime ? (uint64_t)abstime->tv_sec * 1000000000u + (uint64_t)abstime->tv_nsec
                                : UINT64_MAX;
    for (;;) {
        int r, no = 0;
        /* acquire/release on the role only orders the hand-over; the MPI state
         * itself is guarded by m->lock. */
        if (atomic_compare_exchange_strong_explicit(&m->driving, &no, 1, memory_order_acquire,
                                                    memory_order_relaxed)) {
            for (unsigned i = 1;; i++) {
                pthread_mutex_lock(&m->lock);
                progress_locked(m);
                bool idle = m->stage == ST_IDLE;
                pthread_mutex_unlock(&m->lock);
                r = abar_test(&m->release, t);
                if (r != EBUSY) {
                    atomic_store_explicit(&m->driving, 0, memory_order_release);
                    return r;
                }
                if (idle) break; /* our rank's own threads have not all arrived yet */
                if (m->engine == ENG_SHM && !m->oversub) {
                    /* sleep in the shared wait, waking every SHM_POLL_NS to
                     * see a local cancel (which cannot touch the shared
                     * barrier: the other ranks still use it).  Not when the
                     * node is oversubscribed: a process woken from the futex
                     * can wait milliseconds for a CPU there, while one that
                     * polls and yields (as MPI does) keeps its place. */
                    uint64_t now = now_ns();
                    shm_block(m, deadline - now < SHM_POLL_NS ? deadline : now + SHM_POLL_NS);
                    if (now_ns() >= deadline) {
                        atomic_store_explicit(&m->driving, 0, memory_order_release);
                        r = abar_test(&m->release, t);
                        return r == EBUSY ? ETIMEDOUT : r;
                    }
                    continue;
                }
                if (i % 64 == 0 && now_ns() >= deadline) {
                    atomic_store_explicit(&m->driving, 0, memory_order_release);
                    return ETIMEDOUT;
                }
                if (m->oversub && i % 4 == 0) sched_yield();
            }
            atomic_store_explicit(&m->driving, 0, memory_order_release);
        }
        uint64_t now = now_ns();
        if (now >= deadline) return ETIMEDOUT;
        uint64_t until = deadline - now < POLL_NS ? deadline : now + POLL_NS;
        struct timespec ts = { .tv_sec = (time_t)(until / 1000000000u),
                               .tv_nsec = (long)(until % 1000000000u) };
        r = abar_wait_until(&m->release, t, &ts);
        if (r != ETIMEDOUT) return r;
    }
}

/* Registered in `inside` by the caller. */
static int wait_impl(struct mpi_impl *m, abar_token_t t, const struct timespec *abstime, bool test)
{
    int r = abar_test(&m->release, t); /* 0, EBUSY, or the token's error */
    /* from its own completion a wait would never end (test just says EBUSY, as in the core) */
    if (r == EBUSY && !test && completing == m) r = EDEADLK;
    if (r == EBUSY) {
        if (test) {
            progress_try(m);
            r = abar_test(&m->release, t);
            /* More runnable threads than CPUs: a caller polling test in a
             * loop would hold the CPU a late rank needs (MPI's own polls
             * yield there too). */
            if (r == EBUSY && m->oversub) sched_yield();
        } else {
            r = drive(m, t, abstime);
        }
    }
    if (r == ECANCELED) {
        int e = atomic_load(&m->err);
        if (e) r = e;
    }
    return r;
}

static int wait_common(abar_mpi_t *b, abar_token_t t, const struct timespec *abstime, bool test)
{
    struct mpi_impl *m = live(b);
    if (m == NULL) return EINVAL;
    atomic_fetch_add(&m->inside, 1); /* seq_cst: as in arrive */
    int r = wait_impl(m, t, abstime, test);
    atomic_fetch_sub_explicit(&m->inside, 1, memory_order_release);
    return r;
}

int abar_mpi_test(abar_mpi_t *b, abar_token_t t) { return wait_common(b, t, NULL, true); }

int abar_mpi_wait(abar_mpi_t *b, abar_token_t t) { return wait_common(b, t, NULL, false); }

int abar_mpi_wait_until(abar_mpi_t *b, abar_token_t t, const struct timespec *abstime)
{
    if (abstime == NULL || abstime->tv_sec < 0 || abstime->tv_nsec < 0 ||
        abstime->tv_nsec > 999999999)
        return EINVAL;
    return wait_common(b, t, abstime, false);
}

int abar_mpi_arrive_and_wait(abar_mpi_t *b)
{
    struct mpi_impl *m = live(b);
    if (m == NULL) return EINVAL;
    /* Registered across both calls: a peer thread released by our arrival
     * must see us inside if it tries to destroy. */
    if (completing == m) return EINVAL;
    atomic_fetch_add(&m->inside, 1);
    abar_token_t t = arrive_impl(m);
    int r = abar_token_error(t);
    if (r == 0) r = wait_impl(m, t, NULL, false);
    else if (r == ECANCELED && atomic_load(&m->err)) r = atomic_load(&m->err);
    atomic_fetch_sub_explicit(&m->inside, 1, memory_order_release);
    return r;
}

int abar_mpi_cancel(abar_mpi_t *b)
{
    struct mpi_impl *m = live(b);
    if (m == NULL) return EINVAL;
    atomic_store(&m->cancelled, 1);
    abar_cancel(&m->local);   /* later arrivals: ECANCELED */
    abar_cancel(&m->release); /* blocked and later waits: ECANCELED */
    return 0;
}

uint64_t abar_mpi_phase(const abar_mpi_t *b)
{
    struct mpi_impl *m = live(b);
    return m ? abar_phase(&m->release) : 0;
}

/* ---- life cycle ------------------------------------------------------------- */

/* A receive that may still be active: complete it or cancel it. */
static void retire_recv(MPI_Request *r)
{
    int flag = 1;
    if (*r == MPI_REQUEST_NULL) return;
    MPI_Test(r, &flag, MPI_STATUS_IGNORE);
    if (!flag) {
        MPI_Cancel(r);
        MPI_Wait(r, MPI_STATUS_IGNORE);
    }
}

/* A send that may still be active: true if it has completed, else it is
 * left to MPI to finish (its buffer must then stay allocated). */
static bool retire_send(MPI_Request *r)
{
    int flag = 1;
    if (*r == MPI_REQUEST_NULL) return true;
    MPI_Test(r, &flag, MPI_STATUS_IGNORE);
    if (!flag) MPI_Request_free(r);
    return flag;
}

/* Destroy's first step (collective, m->lock held, no other thread inside):
 * every rank finishes, without releasing anyone or running the completion,
 * each phase that any rank has posted.  Then no message is left in flight. */
static void drain(struct mpi_impl *m)
{
    int64_t mine = (int64_t)(m->done + (m->stage != ST_IDLE)), target = mine;
    int bad = atomic_load(&m->err) != 0, anybad = bad;
    int64_t v[2] = { mine, bad }, w[2];
    if (MPI_Allreduce(v, w, 2, MPI_INT64_T, MPI_MAX, m->comm) != MPI_SUCCESS) return;
    target = w[0];
    anybad = (int)w[1];
    if (anybad) return; /* a rank's MPI failed: no promise the others can finish */
    m->draining = true;
    for (unsigned i = 1; (int64_t)m->done < target && !atomic_load(&m->err); i++) {
        if (m->stage == ST_IDLE) {
            m->phase = m->done;
            m->stage = ST_ARRIVING;
            if (start_phase(m) != 0) {
                fail(m);
                break;
            }
        }
        progress_locked(m);
        if (m->oversub && i % 4 == 0) sched_yield();
    }
}

/* Releases the MPI side.  After drain() nothing is in flight, unless an MPI
 * call failed: then receives are cancelled, unfinished sends are freed (MPI
 * finishes them; what they read is then left allocated: returns true), and an
 * unfinished MPI_Ibarrier, which cannot be cancelled or freed, is left to MPI. */
static bool teardown(struct mpi_impl *m, bool mpi_alive)
{
    bool leak = false;
    if (mpi_alive) {
        for (int i = 0; i < m->rounds; i++) {
            retire_recv(&m->rreq[i]);
            leak |= !retire_send(&m->sreq[i]);
        }
        for (int i = 0; i < m->nchild; i++) {
            retire_recv(&m->child_in[i]);
            leak |= !retire_send(&m->child_out[i]);
        }
        retire_recv(&m->down);
        leak |= !retire_send(&m->up);
        if (m->ibar != MPI_REQUEST_NULL) {
            int flag;
            MPI_Test(&m->ibar, &flag, MPI_STATUS_IGNORE); /* if not done: left to MPI */
        }
        if (m->win != MPI_WIN_NULL) MPI_Win_free(&m->win); /* collective */
        if (m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
    }
    free(m->sreq);
    free(m->rreq);
    free(m->rbuf);
    free(m->to);
    free(m->from);
    free(m->cbuf);
    free(m->child_in);
    free(m->child_out);
    /* An unfinished send still reads m->sbuf or staging: both are left allocated. */
    if (!leak) free(m->staging);
    return leak;
}

static int setup_engine(struct mpi_impl *m)
{
    int P = m->size, r = m->rank;
    if (m->engine == ENG_IBARRIER) return 0;
    if (m->engine == ENG_DISSEM) {
        int R = 0;
        while ((1 << R) < P) R++;
        size_t n = (size_t)R + 1;
        m->sreq = malloc(n * sizeof *m->sreq);
        m->rreq = malloc(n * sizeof *m->rreq);
        m->rbuf = calloc(n, sizeof *m->rbuf);
        m->to = malloc(n * sizeof *m->to);
        m->from = malloc(n * sizeof *m->from);
        if (!m->sreq || !m->rreq || !m->rbuf || !m->to || !m->from) return ENOMEM;
        for (int i = 0, d = 1; i < R; i++, d <<= 1) {
            m->sreq[i] = m->rreq[i] = MPI_REQUEST_NULL;
            m->to[i] = (r + d) % P;
            m->from[i] = (r - d + P) % P;
        }
        m->rounds = R;
        return 0;
    }
    /* TREE: binomial tree over v = rank relative to root; parent v - lowbit(v),
     * children v + 2^j for 2^j below lowbit(v) (all 2^j for the root). */
    int v = (r - m->root + P) % P;
    m->staging_bytes = sizeof(uint64_t) + m->result_size;
    m->staging = calloc(1, m->staging_bytes);
    m->child_in = malloc(sizeof(MPI_Request) * 32);
    m->child_out = malloc(sizeof(MPI_Request) * 32);
    m->cbuf = calloc(32, sizeof *m->cbuf);
    if (!m->staging || !m->child_in || !m->child_out || !m->cbuf) return ENOMEM;
    for (int d = 1; d < P; d <<= 1) {
        if (v & d) break;
        if (v + d >= P) continue;
        int k = m->nchild++;
        m->child_in[k] = m->child_out[k] = MPI_REQUEST_NULL;
        m->child[k] = (v + d + m->root) % P;
    }
    m->parent = v ? (v - (v & -v) + m->root) % P : -1;
    return 0;
}

/* Collective: switches to ENG_SHM if every rank of the communicator shares
 * this node and the shared window can be made everywhere. */
static void try_shm(struct mpi_impl *m)
{
    MPI_Comm node;
    int nsize = 0, ok, all = 0;
    if (MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return; /* collective: fails alike everywhere */
    MPI_Comm_size(node, &nsize);
    /* + 64: the segment is placed at the first 64-byte boundary of rank 0's
     * memory (the mapping is page-aligned in every process, so the offset is
     * the same everywhere) */
    MPI_Aint bytes = (MPI_Aint)(sizeof(struct shm_seg) + m->result_size + 64);
    if ((size_t)m->size > ABAR_EXPECTED_MAX) {
        MPI_Comm_free(&node);
        return;
    }
    void *base = NULL;
    ok = nsize == m->size &&
         MPI_Win_allocate_shared(m->rank == 0 ? bytes : 0, 1, MPI_INFO_NULL, node, &base, &m->win) == MPI_SUCCESS;
    /* nsize == size is the same answer on every rank; the allocation may not be */
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, m->comm);
    if (all) {
        MPI_Aint sz;
        int du;
        all = MPI_Win_shared_query(m->win, 0, &sz, &du, &base) == MPI_SUCCESS && sz >= bytes;
        int a2 = all;
        MPI_Allreduce(&a2, &all, 1, MPI_INT, MPI_MIN, m->comm);
    }
    if (!all) {
        if (m->win != MPI_WIN_NULL) MPI_Win_free(&m->win);
        m->win = MPI_WIN_NULL;
    } else {
        m->seg = (struct shm_seg *)(((uintptr_t)base + 63) & ~(uintptr_t)63);
        int good = 1;
        if (m->rank == 0) {
            /* the wait flags of attr apply to the shared waits too */
            abar_attr_t sa = { .flags = ABAR_PSHARED | m->wait_flags };
            good = abar_init(&m->seg->gather, (uint32_t)m->size, &sa) == 0 &&
                   abar_init(&m->seg->rel, 1, &sa) == 0;
            atomic_init(&m->seg->cancel_mark, 0);
        }
        MPI_Bcast(&good, 1, MPI_INT, 0, m->comm);
        if (!good) {
            MPI_Win_free(&m->win);
            m->win = MPI_WIN_NULL;
            m->seg = NULL;
            MPI_Comm_free(&node);
            return;
        }
        MPI_Barrier(m->comm); /* the segment is initialised before anyone arrives */
        m->engine = ENG_SHM;
    }
    MPI_Comm_free(&node);
}

/* More runnable threads here than CPUs to run them: pollers should yield. */
static bool oversubscribed(MPI_Comm comm, unsigned threads)
{
    MPI_Comm node;
    int local = 1;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    int mine = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)online;
    return (long)local * threads > online || (long)threads > mine;
}

int abar_mpi_init(abar_mpi_t *b, MPI_Comm comm, const abar_mpi_attr_t *attr)
{
    int flag, inter, prov, size, rank;
    if (b == NULL) return EINVAL;
    if (MPI_Initialized(&flag) != MPI_SUCCESS || !flag) return EPERM;
    if (MPI_Finalized(&flag) != MPI_SUCCESS || flag) return EPERM;
    if (comm == MPI_COMM_NULL) return EINVAL;
    if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return EINVAL;
    if (MPI_Comm_size(comm, &size) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return EINVAL;

    abar_mpi_attr_t a = attr ? *attr : (abar_mpi_attr_t){ 0 };
    unsigned threads = a.threads ? a.threads : 1;
    int e = 0;
    if ((a.flags & ~KNOWN_FLAGS) || ((a.flags & ABAR_WAIT_SPIN) && (a.flags & ABAR_WAIT_PARK)) ||
        threads > ABAR_EXPECTED_MAX || a.root < 0 || a.root >= size ||
        (a.result_size && (a.result == NULL || a.completion == NULL)) ||
        ((a.flags & ABAR_MPI_IBARRIER) && a.completion) ||
        a.result_size > (size_t)INT32_MAX - sizeof(uint64_t))
        e = EINVAL;
    /* Thread level: our own calls are serialised by a mutex, so several local
     * threads need SERIALIZED; a progress thread runs beside the caller's own
     * MPI calls and needs MULTIPLE; below SERIALIZED only the main thread may
     * call.  */
    /* These return at once, before any collective call: the thread level is
     * the same on every rank of a job, and below SERIALIZED this thread may
     * not be allowed to call MPI at all. */
    MPI_Query_thread(&prov);
    if ((a.flags & ABAR_MPI_PROGRESS_THREAD) && prov < MPI_THREAD_MULTIPLE) return ENOTSUP;
    if (threads > 1 && prov < MPI_THREAD_SERIALIZED) return ENOTSUP;
    if (prov < MPI_THREAD_SERIALIZED && (MPI_Is_thread_main(&flag), !flag)) return ENOTSUP;

    /* Collective from here on: every rank dups, then all agree on the outcome. */
    MPI_Comm dup;
    if (MPI_Comm_dup(comm, &dup) != MPI_SUCCESS) return EIO;
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);

    struct mpi_impl *m = NULL;
    size_t bytes = (sizeof *m + 63) & ~(size_t)63;
    if (!e && (m = aligned_alloc(64, bytes)) == NULL) e = ENOMEM;
    bool mutexes = false;
    if (m) {
        memset(m, 0, sizeof *m);
        m->comm = dup;
        m->rank = rank;
        m->size = size;
        m->root = a.root;
        m->engine = a.completion ? ENG_TREE : (a.flags & ABAR_MPI_IBARRIER) ? ENG_IBARRIER : ENG_DISSEM;
        m->completion = a.completion;
        m->arg = a.arg;
        m->result = a.result;
        m->result_size = a.result_size;
        m->up = m->down = m->ibar = MPI_REQUEST_NULL;
        m->win = MPI_WIN_NULL;
        m->wait_flags = a.flags & (ABAR_WAIT_SPIN | ABAR_WAIT_PARK);
        m->threads = threads;
        m->progress_us = a.progress_us;
        abar_attr_t la = { .completion = post, .arg = m, .flags = a.flags & (ABAR_WAIT_SPIN | ABAR_WAIT_PARK) };
        abar_attr_t ra = { .flags = la.flags };
        if ((e = abar_init(&m->local, threads, &la)) == 0 && (e = abar_init(&m->release, 1, &ra)) == 0)
            e = setup_engine(m);
        if (!e) {
            pthread_mutex_init(&m->lock, NULL);
            pthread_cond_init(&m->kick, NULL);
            mutexes = true;
            /* started before the agreement, so that a failure here is everyone's */
            if ((a.flags & ABAR_MPI_PROGRESS_THREAD) && !e) {
                m->has_thread = pthread_create(&m->thread, NULL, progress_main, m) == 0;
                if (!m->has_thread) e = EAGAIN;
            }
        }
    }

    /* One MPI_Allreduce(MAX) agrees on the outcome and checks that the
     * attributes that must match do match (x and -x both maximal). */
    uint64_t nonce = 0;
    if (rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        nonce = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)getpid() << 32 ^
                (uint64_t)(uintptr_t)b ^ (uint64_t)ts.tv_sec;
        nonce = (nonce ^ (nonce >> 31)) * 0xbf58476d1ce4e5b9u;
        nonce >>= 1; /* fits a non-negative int64 for the MAX below */
    }
    int64_t v[10] = { e, a.root, -(int64_t)a.root, (int64_t)a.result_size, -(int64_t)a.result_size,
                     a.completion != NULL, -(int64_t)(a.completion != NULL),
                     (int64_t)(a.flags & (ABAR_MPI_IBARRIER | ABAR_MPI_P2P)),
                     -(int64_t)(a.flags & (ABAR_MPI_IBARRIER | ABAR_MPI_P2P)),
                     (int64_t)nonce };
    int64_t agreed[10];
    if (MPI_Allreduce(v, agreed, 10, MPI_INT64_T, MPI_MAX, dup) != MPI_SUCCESS) agreed[0] = EIO;
    int r = (int)agreed[0];
    for (int i = 1; !r && i < 9; i += 2)
        if (agreed[i] != -agreed[i + 1]) r = EINVAL;
    if (!r) {
        m->nonce = (uint64_t)agreed[9];
        m->oversub = oversubscribed(dup, threads);
        if (!(a.flags & (ABAR_MPI_P2P | ABAR_MPI_IBARRIER))) try_shm(m);
    }
    if (r) {
        if (m) {
            if (m->has_thread) {
                pthread_mutex_lock(&m->lock);
                m->stop = true;
                pthread_cond_signal(&m->kick);
                pthread_mutex_unlock(&m->lock);
                pthread_join(m->thread, NULL);
            }
            (void)teardown(m, true); /* nothing was sent */
            if (mutexes) {
                pthread_mutex_destroy(&m->lock);
                pthread_cond_destroy(&m->kick);
            }
            free(m);
        } else {
            MPI_Comm_free(&dup);
        }
        return r;
    }
    /* release: a thread that sees the magic sees the initialised fields */
    atomic_store_explicit(&m->magic, MPI_MAGIC_LIVE, memory_order_release);
    b->_private = m;
    return 0;
}

int abar_mpi_destroy(abar_mpi_t *b)
{
    struct mpi_impl *m = live(b);
    if (m == NULL) return EINVAL;
    if (completing == m) return EBUSY;
    /* seq_cst pairs with the callers' registration in `inside` */
    if (atomic_load(&m->inside) != 0) return EBUSY;
    pthread_mutex_lock(&m->lock);
    bool in_flight = m->stage != ST_IDLE;
    pthread_mutex_unlock(&m->lock);
    /* A phase in flight (this rank arrived, the others may not have) would
     * leave peers hanging: cancel first if that is what you mean. */
    if (in_flight && !atomic_load(&m->cancelled) && !atomic_load(&m->err)) return EBUSY;
    if (abar_destroy(&m->local) != 0 || abar_destroy(&m->release) != 0) return EBUSY;
    atomic_store(&m->magic, 0);
    if (m->has_thread) {
        pthread_mutex_lock(&m->lock);
        m->stop = true;
        pthread_cond_signal(&m->kick);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->thread, NULL);
    }
    int fin = 1;
    MPI_Finalized(&fin);
    if (!fin) {
        pthread_mutex_lock(&m->lock);
        drain(m);
        pthread_mutex_unlock(&m->lock);
    }
    bool leaked = teardown(m, !fin);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->kick);
    if (!leaked) free(m);
    b->_private = NULL;
    return 0;
}
