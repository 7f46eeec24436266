/*
 * mpi_internal.h - abar over MPI: what the files of src/mpi share.
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
 *   FLAGS     every rank on one node, no completion: a flag a rank in an
 *             MPI shared-memory window; an arrival is a store to its own
 *             flag (hierarchical: local's completion stores it), a wait
 *             reads them all (engine_flags.c).  No MPI call, mutex or
 *             driver.  Chosen at init over SHM unless ABAR_MPI_FLAGS=0.
 *   SHM, direct  the same node, no completion, some rank hierarchical and
 *             none oversubscribed (there the two levels switch less):
 *             the shared barrier expects every thread of every rank, and
 *             each thread arrives and waits on it itself (engine_shm.c):
 *             no local or release barrier, no mutex, no driver.  Tokens
 *             are the shared barrier's.
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
#ifndef ABAR_MPI_INTERNAL_H
#define ABAR_MPI_INTERNAL_H

#include "abar_mpi.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define MPI_MAGIC_LIVE 0x61626d70u /* "abmp" */
#define KNOWN_FLAGS (ABAR_MPI_PROGRESS_THREAD | ABAR_MPI_IBARRIER | ABAR_MPI_P2P | ABAR_WAIT_SPIN | ABAR_WAIT_PARK)
#define TAG_UP   100               /* tree: arrival of a subtree, child -> parent */
#define TAG_DOWN 101               /* tree: [phase | result], parent -> child */
#define POLL_NS  1000000u          /* a blocked waiter retries the driver role this often
                                      (100 µs made hierarchical phases on messages 10x
                                      slower on the 16-core host: docs/mpi.md) ... */
#define POLL_NS_OVERSUB 100000u    /* ... but this often on an oversubscribed node, where
                                      1 ms measured up to 2x slower */
#define SHM_POLL_NS 1000000u       /* a driver asleep in the shared wait looks for a cancel */
#define PROGRESS_SPIN_NS 1000000u /* the progress thread waits this long for the next phase
                                    before it parks (not when oversubscribed) */
#define OVERSUB_POLL_US 50u      /* oversubscribed progress thread: poll period in a phase */
#define OVERSUB_IDLE_US 1000u    /* ... and its longest sleep between phases */
#define LOCK_SPIN 1024u         /* lock_hot: tries before sleeping on the mutex */
#define WORD_CANCELLED (UINT64_C(1) << 62) /* tree: the root cancelled this phase */

enum engine { ENG_DISSEM, ENG_IBARRIER, ENG_TREE, ENG_SHM, ENG_FLAGS };

/* ENG_FLAGS: every rank on one node, no completion function; a segment of
 * MPI_Win_allocate_shared holding one flag a rank (engine_flags.c).
 * FLAGS_MAX: the most ranks (a wait reads every flag). */
#define FLAGS_MAX 64
struct shm_flags {
    _Atomic uint32_t futex;    /* bumped by an arrival that saw a sleeper, and by a cancel */
    _Atomic uint32_t sleepers; /* waiters of any rank parked on futex, or about to */
    char pad[56];
    struct {
        _Alignas(64) _Atomic uint64_t arrived; /* phases this rank has arrived in */
    } rank[];
};

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
    bool direct;               /* SHM, direct: every thread on seg->gather */
    _Atomic uint64_t arrivals; /* hierarchical: this rank's arrivals so far (destroy's EBUSY) */
    /* FLAGS */
    struct shm_flags *fl;
    _Atomic uint64_t next;     /* phases this rank has arrived in (its flag's value;
                                  hierarchical: written by local's completions) */
    _Atomic uint64_t published;/* arrivals done with the segment (destroy waits for next) */
    _Atomic uint64_t completed;/* phases known complete (a lower bound) */
    uint64_t tok_id;           /* the id of this barrier's tokens */
    bool fl_asym;              /* arrivals skip their fence (membarrier: engine_flags.c) */
    _Atomic uint32_t fl_slept; /* this rank's waits have been parking (a hint: engine_flags.c) */
    /* progress thread */
    bool has_thread, stop;
    bool parked;               /* the progress thread sleeps on kick */
    bool unstarted;            /* the phase in flight is posted, its MPI calls not yet made */
    _Atomic uint64_t posts;    /* phases posted: the progress thread spins on it */
    unsigned progress_us;
    pthread_t thread;
};

/* The barrier whose user completion this thread is running (EDEADLK guard). */

/* The barrier whose user completion this thread is running (EDEADLK guard). */
extern _Thread_local const struct mpi_impl *abar_mpi__completing;

/* An invalid token, in the core's encoding (EINVAL or ECANCELED only). */
static inline abar_token_t tok_err(int e) { return (abar_token_t){ .raw = (uint64_t)e, .id = 0 }; }

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline struct mpi_impl *live(const abar_mpi_t *b)
{
    if (b == NULL || b->_private == NULL) return NULL;
    struct mpi_impl *m = b->_private;
    /* relaxed: magic changes only at init and destroy, which the caller must
     * not race with other calls (beyond what EBUSY detects). */
    return atomic_load_explicit(&m->magic, memory_order_relaxed) == MPI_MAGIC_LIVE ? m : NULL;
}

/* One-word messages.  Plain Isend/Irecv: Open MPI 4.1 serves them by a
 * faster path than persistent requests (MPI_Start), about 0.7 us against
 * 1.0 us a round trip here. */
static inline int recv_word(struct mpi_impl *m, uint64_t *buf, int from, int tag, MPI_Request *r)
{
    return MPI_Irecv(buf, 1, MPI_UINT64_T, from, tag, m->comm, r) == MPI_SUCCESS ? 0 : -1;
}

static inline int send_word(struct mpi_impl *m, int to, int tag, MPI_Request *r)
{
    return MPI_Isend(&m->sbuf, 1, MPI_UINT64_T, to, tag, m->comm, r) == MPI_SUCCESS ? 0 : -1;
}

/* A received word: 1 this phase's, 2 this phase's with the root's cancel,
 * 0 a leftover of an older barrier (drop it and receive again), -1 this
 * barrier's but another phase (misuse). */
static inline int check_word(const struct mpi_impl *m, uint64_t w)
{
    uint64_t ph = w - m->nonce;
    if (ph == m->phase) return 1;
    if (ph == m->phase + WORD_CANCELLED) return 2;
    return ph <= m->phase + 1 ? -1 : 0;
}


static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Takes m->lock on a path that a phase waits for (an arrival's post, a
 * driver's poll).  Every holder keeps it for a few MPI calls at most, so a
 * thread that finds it taken tries again before it sleeps on the mutex: one
 * put to sleep comes back microseconds after the unlock, through a futex
 * wake-up, and the whole phase waits for it.  Not on an oversubscribed
 * node, where the holder may need this thread's CPU. */
static inline void lock_hot(struct mpi_impl *m)
{
    for (unsigned i = 0; i < LOCK_SPIN && !m->oversub; i++) {
        if (pthread_mutex_trylock(&m->lock) == 0) return;
        for (int k = 0; k < 4; k++) cpu_relax();
    }
    pthread_mutex_lock(&m->lock);
}

/* progress.c */
void abar_mpi__fail(struct mpi_impl *m);
int abar_mpi__start_phase(struct mpi_impl *m);
void abar_mpi__progress_locked(struct mpi_impl *m);
void abar_mpi__progress_try(struct mpi_impl *m);
void abar_mpi__post(void *arg);
void abar_mpi__post_locked(struct mpi_impl *m);
void *abar_mpi__progress_main(void *arg);

/* Engines: setup (at init, 0 or ENOMEM), start a phase (0, -1 error), poll it
 * (1 done, 0 not yet, -1 error); polls run under m->lock. */
int abar_mpi__dissem_setup(struct mpi_impl *m);
int abar_mpi__dissem_start(struct mpi_impl *m);
int abar_mpi__dissem_poll(struct mpi_impl *m);
int abar_mpi__tree_setup(struct mpi_impl *m);
int abar_mpi__tree_start(struct mpi_impl *m);
int abar_mpi__tree_poll(struct mpi_impl *m);
int abar_mpi__ibarrier_start(struct mpi_impl *m);
int abar_mpi__ibarrier_poll(struct mpi_impl *m);
void abar_mpi__shm_try(struct mpi_impl *m);
int abar_mpi__shm_start(struct mpi_impl *m);
int abar_mpi__shm_poll(struct mpi_impl *m);
void abar_mpi__shm_block(struct mpi_impl *m, uint64_t deadline);
abar_token_t abar_mpi__shm_arrive_direct(struct mpi_impl *m);
abar_token_t abar_mpi__flags_arrive(struct mpi_impl *m, bool registered);
abar_token_t abar_mpi__flags_arrive_local(struct mpi_impl *m);
void abar_mpi__flags_post(struct mpi_impl *m);
int abar_mpi__flags_wait(struct mpi_impl *m, abar_token_t t, const struct timespec *abstime, bool test);
uint64_t abar_mpi__flags_phase(struct mpi_impl *m);
void abar_mpi__flags_cancel(struct mpi_impl *m);
bool abar_mpi__flags_asym(MPI_Comm comm);
int abar_mpi__shm_wait_direct(struct mpi_impl *m, abar_token_t t, const struct timespec *abstime, bool test);

#endif /* ABAR_MPI_INTERNAL_H */
