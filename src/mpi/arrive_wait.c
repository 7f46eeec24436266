/*
 * arrive_wait.c - the calls of a phase: arrive, test, wait, wait_until,
 * arrive_and_wait, cancel, phase.
 */
#include "mpi_internal.h"

#include <sched.h>


/* Flat (one participant per rank): no local barrier; the arrival posts
 * directly, under the lock that also orders the release. */
static abar_token_t arrive_flat(struct mpi_impl *m)
{
    lock_hot(m);
    /* our previous phase may be done in MPI by now */
    if (m->stage != ST_IDLE) abar_mpi__progress_locked(m);
    /* Under the lock with nothing in flight, release cannot move: its
     * current token names the phase this arrival joins. */
    abar_token_t t = abar_current(&m->release); /* ECANCELED if cancelled */
    if (abar_token_error(t) == 0 && m->stage != ST_IDLE) t = tok_err(EINVAL); /* already arrived */
    if (abar_token_error(t) == 0) abar_mpi__post_locked(m);
    pthread_mutex_unlock(&m->lock);
    return t;
}

/* After a local cancel this rank's calls return ECANCELED without waiting,
 * but a phase it arrived in may still be in flight, and the other ranks
 * need its part of it (a dissemination round to pass on, the tree's fan-in
 * or fan-out, the root's cancel mark): every such call polls it once more.
 * (The progress thread, if any, goes on polling it; destroy polls it until
 * every rank is in destroy.) */
static void forward_cancelled(struct mpi_impl *m)
{
    if (atomic_load(&m->cancelled) && !atomic_load(&m->err) && m->engine != ENG_FLAGS &&
        !m->direct)
        abar_mpi__progress_try(m);
}

/* Registered in `inside` by the caller. */
static abar_token_t arrive_impl(struct mpi_impl *m)
{
    if (m->engine == ENG_FLAGS)
        return m->threads == 1 ? abar_mpi__flags_arrive(m, true) : abar_mpi__flags_arrive_local(m);
    if (m->direct) return abar_mpi__shm_arrive_direct(m);
    if (m->threads == 1) return arrive_flat(m);
    abar_token_t t;
    for (int tries = 0;; tries++) {
        uint64_t p1 = abar_phase(&m->release);
        t = abar_current(&m->release);
        if (abar_token_error(t)) {      /* cancelled */
            forward_cancelled(m);
            break;
        }
        uint64_t lp = abar_phase(&m->local);
        if (abar_phase(&m->release) != p1) continue; /* a release ran meanwhile */
        if (lp == p1) break;            /* nothing in flight: t names the phase we join */
        if (lp < p1) {
            /* The phase is released, but its last local arriver has not yet
             * left local's completion (abar_mpi__post), so local still refuses
             * arrivals: it is a few instructions from done.  Spin first (a
             * yield is a system call, longer than that); yield once the
             * completer seems to have lost its CPU. */
            if (tries < 256 && !m->oversub) cpu_relax();
            else sched_yield();
            continue;
        }
        /* Our previous phase is still in flight here: it may be done in MPI. */
        if (tries == 0) { abar_mpi__progress_try(m); continue; }
        t = tok_err(EINVAL);            /* we already arrived in the phase in flight */
        break;
    }
    if (abar_token_error(t) == 0) {
        abar_token_t lt = abar_arrive(&m->local); /* the last local one posts to MPI */
        if (abar_token_error(lt)) t = lt;
        /* relaxed: read only by destroy, after every caller has left (`inside`) */
        else atomic_fetch_add_explicit(&m->arrivals, 1, memory_order_relaxed);
    }
    return t;
}

abar_token_t abar_mpi_arrive(abar_mpi_t *b)
{
    struct mpi_impl *m = live(b);
    if (m == NULL) return tok_err(EINVAL);
    /* From its own completion: the phase expects no arrival (as in the core). */
    if (abar_mpi__completing == m) return tok_err(EINVAL);
    /* registers itself, and leaves before its store (engine_flags.c) */
    if (m->engine == ENG_FLAGS && m->threads == 1) return abar_mpi__flags_arrive(m, false);
    /* seq_cst: pairs with destroy's read of `inside` */
    atomic_fetch_add(&m->inside, 1);
    /* After an MPI failure the token says ECANCELED (an invalid token carries
     * only EINVAL or ECANCELED); waiting on it returns EIO. */
    abar_token_t t = arrive_impl(m);
    /* release: our last access to m; destroy reads 0 after it */
    atomic_fetch_sub_explicit(&m->inside, 1, memory_order_release);
    return t;
}

/* Blocks on the release barrier until t's phase is released there, or until
 * `until` (ns, CLOCK_MONOTONIC; ETIMEDOUT).  The core sees a barrier of one
 * participant and would spin before it parks; when this node runs more
 * threads than CPUs, that spin holds a CPU that a rank's driver needs, so
 * here the waiter yields between looks for a while, then parks. */
static int wait_release(struct mpi_impl *m, abar_token_t t, uint64_t until)
{
    if (m->oversub) {
        for (unsigned i = 0; i < 64; i++) {
            int r = abar_test(&m->release, t);
            if (r != EBUSY) return r;
            if (i % 16 == 15 && now_ns() >= until) return ETIMEDOUT;
            sched_yield();
        }
    }
    if (until == UINT64_MAX) return abar_wait(&m->release, t);
    struct timespec ts = { .tv_sec = (time_t)(until / 1000000000u), .tv_nsec = (long)(until % 1000000000u) };
    return abar_wait_until(&m->release, t, &ts);
}

/* Waits for t, polling MPI while this thread holds the driver role, else
 * blocking on the release barrier and retrying the role every POLL_NS
 * (POLL_NS_OVERSUB). */
static int drive(struct mpi_impl *m, abar_token_t t, const struct timespec *abstime)
{
    uint64_t deadline = abstime ? (uint64_t)abstime->tv_sec * 1000000000u + (uint64_t)abstime->tv_nsec
                                : UINT64_MAX;
    for (;;) {
        int r, no = 0;
        /* seq_cst: see the hand-back below; the MPI state itself is guarded
         * by m->lock. */
        if (atomic_compare_exchange_strong(&m->driving, &no, 1)) {
            uint64_t seen = 0;
            for (unsigned i = 1;; i++) {
                lock_hot(m);
                abar_mpi__progress_locked(m);
                bool idle = m->stage == ST_IDLE;
                seen = atomic_load_explicit(&m->posts, memory_order_relaxed); /* under the lock */
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
                    abar_mpi__shm_block(m, deadline - now < SHM_POLL_NS ? deadline : now + SHM_POLL_NS);
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
            /* Our rank's own threads had not all arrived: hand the role
             * back and block.  The thread whose arrival posts the phase
             * may have found the role taken and blocked too, for POLL_NS,
             * with nobody driving: so look at the post counter once more.
             * seq_cst (this store and load, the post's increment, the CAS
             * above): either that thread's CAS, after its post, finds the
             * role free, or this load sees its post and we drive. */
            atomic_store(&m->driving, 0);
            if (atomic_load(&m->posts) != seen) continue;
        }
        uint64_t now = now_ns();
        if (now >= deadline) return ETIMEDOUT;
        const uint64_t poll = m->oversub ? POLL_NS_OVERSUB : POLL_NS;
        r = wait_release(m, t, deadline - now < poll ? deadline : now + poll);
        if (r != ETIMEDOUT) return r;
    }
}

/* Registered in `inside` by the caller. */
static int wait_impl(struct mpi_impl *m, abar_token_t t, const struct timespec *abstime, bool test)
{
    if (m->engine == ENG_FLAGS) return abar_mpi__flags_wait(m, t, abstime, test);
    if (m->direct) return abar_mpi__shm_wait_direct(m, t, abstime, test);
    int r = abar_test(&m->release, t); /* 0, EBUSY, or the token's error */
    /* from its own completion a wait would never end (test just says EBUSY, as in the core) */
    if (r == EBUSY && !test && abar_mpi__completing == m) r = EDEADLK;
    if (r == EBUSY) {
        if (test) {
            abar_mpi__progress_try(m);
            r = abar_test(&m->release, t);
            /* More runnable threads than CPUs: a caller polling test in a
             * loop would hold the CPU a late rank needs (MPI's own polls
             * yield there too). */
            if (r == EBUSY && m->oversub) sched_yield();
        } else if (m->has_thread && !m->oversub) {
            /* the progress thread drives: a second poller would only contend
             * with it for the lock (oversubscribed, it sleeps: see progress.c) */
            r = wait_release(m, t, abstime ? (uint64_t)abstime->tv_sec * 1000000000u + (uint64_t)abstime->tv_nsec
                                           : UINT64_MAX);
        } else {
            r = drive(m, t, abstime);
        }
    }
    if (r == ECANCELED) {
        int e = atomic_load(&m->err);
        if (e) r = e;
        else forward_cancelled(m);
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
    if (abar_mpi__completing == m) return EINVAL;
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
    if (m->engine == ENG_FLAGS) abar_mpi__flags_cancel(m); /* wakes our sleepers */
    /* registered like a wait: the poll takes m's lock and makes MPI calls */
    atomic_fetch_add(&m->inside, 1);
    forward_cancelled(m);
    atomic_fetch_sub_explicit(&m->inside, 1, memory_order_release);
    return 0;
}

uint64_t abar_mpi_phase(const abar_mpi_t *b)
{
    struct mpi_impl *m = live(b);
    if (m == NULL) return 0;
    if (m->engine == ENG_FLAGS) return abar_mpi__flags_phase(m);
    return abar_phase(m->direct ? &m->seg->gather : &m->release);
}
