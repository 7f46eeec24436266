/*
 * progress.c - posting a rank's arrival to its engine, polling the phase in
 * flight (the release of the rank when it is done), and the progress thread.
 */
#include "mpi_internal.h"

#include <sched.h>

_Thread_local const struct mpi_impl *abar_mpi__completing;

/* An MPI call failed: the barrier is broken for good on this rank. */
void abar_mpi__fail(struct mpi_impl *m)
{
    atomic_store(&m->err, EIO);
    abar_cancel(&m->local);
    abar_cancel(&m->release);
}


int abar_mpi__start_phase(struct mpi_impl *m)
{
    m->sbuf = m->nonce + m->phase;
    switch (m->engine) {
    case ENG_IBARRIER: return abar_mpi__ibarrier_start(m);
    case ENG_SHM:      return abar_mpi__shm_start(m);
    case ENG_DISSEM:   return abar_mpi__dissem_start(m);
    default:           return abar_mpi__tree_start(m);
    }
}

/* One poll of the phase in flight; releases the rank when it is done.
 * Called with m->lock held. */
void abar_mpi__progress_locked(struct mpi_impl *m)
{
    if (m->stage == ST_IDLE || atomic_load_explicit(&m->err, memory_order_relaxed)) return;
    if (m->unstarted) {
        /* posted by an arrival that left the MPI calls to the progress thread */
        m->unstarted = false;
        if (abar_mpi__start_phase(m) != 0) {
            abar_mpi__fail(m);
            return;
        }
    }
    int r;
    switch (m->engine) {
    case ENG_IBARRIER:
        r = abar_mpi__ibarrier_poll(m);
        break;
    case ENG_DISSEM: r = abar_mpi__dissem_poll(m); break;
    case ENG_SHM:    r = abar_mpi__shm_poll(m); break;
    default:         r = abar_mpi__tree_poll(m); break;
    }
    if (r < 0) {
        abar_mpi__fail(m);
    } else if (r > 0) {
        m->stage = ST_IDLE;
        m->done++;
        /* The release: the core barrier's release/acquire carries the result
         * copy (and everything before) to every waiter.  Refused, harmlessly,
         * after a local cancel. */
        (void)abar_arrive(&m->release);
    }
}

void abar_mpi__progress_try(struct mpi_impl *m)
{
    if (pthread_mutex_trylock(&m->lock) == 0) {
        abar_mpi__progress_locked(m);
        pthread_mutex_unlock(&m->lock);
    }
}

/* local's completion: the rank's last local arrival posts the rank's arrival. */
void abar_mpi__post_locked(struct mpi_impl *m)
{
    if (m->stage != ST_IDLE) {
        abar_mpi__fail(m); /* cannot happen without misuse: arrive checks nothing is in flight */
    } else {
        m->phase = m->done; /* = abar_phase(release) while not cancelled */
        m->stage = ST_ARRIVING;
        /* With a progress thread that has a CPU of its own, the arrival
         * makes no MPI call at all: the thread sends (over TCP a send is a
         * system call of several microseconds, which the caller would
         * otherwise pay before it can compute).  Not for shared memory,
         * whose start is one atomic arrival. */
        if (m->has_thread && !m->oversub && m->engine != ENG_SHM) m->unstarted = true;
        else if (abar_mpi__start_phase(m) != 0) abar_mpi__fail(m);
        /* the round-0 message may be here already (shared memory needs no
         * push: its poll is left to the wait, off the arrive's path) */
        else if (m->engine != ENG_SHM && !m->unstarted) abar_mpi__progress_locked(m);
        /* the progress thread spins on posts between phases, or parks;
         * seq_cst: a driver handing its role back reads it (drive()) */
        atomic_fetch_add(&m->posts, 1);
        if (m->parked) pthread_cond_signal(&m->kick);
    }
}

void abar_mpi__post(void *arg)
{
    struct mpi_impl *m = arg;
    if (m->engine == ENG_FLAGS) { /* no MPI, no lock: a store (engine_flags.c) */
        abar_mpi__flags_post(m);
        return;
    }
    lock_hot(m);
    abar_mpi__post_locked(m);
    pthread_mutex_unlock(&m->lock);
}

/* Takes m->lock without sleeping in the kernel: the holder is a few MPI
 * calls from done, and a thread woken from the mutex's futex would come
 * microseconds late. */
static void lock_polling(struct mpi_impl *m, bool oversub)
{
    while (pthread_mutex_trylock(&m->lock) != 0) {
        if (oversub) sched_yield();
        else cpu_relax();
    }
}

/* The progress thread.  While a phase is in flight here it polls it (the
 * rank's threads compute meanwhile, and their waits only block on release:
 * see arrive_wait.c), pausing between polls: progress_us if set, else a few
 * pause instructions, or a yield when the node is oversubscribed.  Between
 * phases it spins on the post counter for PROGRESS_SPIN_NS, so that
 * back-to-back phases need no wake-up, then parks on m->kick.  When the node
 * runs more threads than CPUs it never spins: it polls every OVERSUB_POLL_US
 * (progress_us if set) while a phase is in flight, and backs off to
 * OVERSUB_IDLE_US between phases, so phases still finish while the ranks
 * compute; the rank's waits drive progress themselves. */
void *abar_mpi__progress_main(void *arg)
{
    struct mpi_impl *m = arg;
    unsigned idle_us = OVERSUB_POLL_US;
    pthread_mutex_lock(&m->lock);
    for (;;) {
        bool oversub = m->oversub;
        if (m->stop) break;
        if (oversub) {
            /* no spare CPU to drive progress on: poll now and then (the
             * rank's waits drive it themselves), sleeping in between */
            bool busy = m->stage != ST_IDLE && !atomic_load(&m->err);
            if (busy) abar_mpi__progress_locked(m);
            busy = m->stage != ST_IDLE;
            idle_us = busy ? OVERSUB_POLL_US : idle_us < OVERSUB_IDLE_US ? idle_us * 2 : OVERSUB_IDLE_US;
            unsigned us = busy && m->progress_us ? m->progress_us : idle_us;
            pthread_mutex_unlock(&m->lock);
            struct timespec d = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
            nanosleep(&d, NULL);
            lock_polling(m, oversub);
            continue;
        }
        if (m->stage == ST_IDLE || atomic_load(&m->err)) {
            uint64_t seen = atomic_load_explicit(&m->posts, memory_order_relaxed);
            pthread_mutex_unlock(&m->lock);
            uint64_t t0 = now_ns();
            for (unsigned i = 1; atomic_load_explicit(&m->posts, memory_order_relaxed) == seen; i++) {
                cpu_relax();
                if (i % 64 == 0 && now_ns() - t0 >= PROGRESS_SPIN_NS) break;
            }
            lock_polling(m, oversub);
            if (!m->stop && !m->oversub && atomic_load_explicit(&m->posts, memory_order_relaxed) == seen) {
                m->parked = true;
                pthread_cond_wait(&m->kick, &m->lock);
                m->parked = false;
            }
            continue;
        }
        abar_mpi__progress_locked(m);
        if (m->stage == ST_IDLE) continue;
        pthread_mutex_unlock(&m->lock);
        /* After a local cancel the phase may never finish: poll it slowly. */
        unsigned us = atomic_load(&m->cancelled) ? 1000 : m->progress_us;
        if (us) {
            struct timespec d = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
            nanosleep(&d, NULL);
        } else if (oversub) {
            sched_yield();
        } else {
            for (int i = 0; i < 8; i++) cpu_relax();
        }
        lock_polling(m, oversub);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}
