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
        if (abar_mpi__start_phase(m) != 0) abar_mpi__fail(m);
        /* the round-0 message may be here already (shared memory needs no
         * push: its poll is left to the wait, off the arrive's path) */
        else if (m->engine != ENG_SHM) abar_mpi__progress_locked(m);
        if (m->has_thread) pthread_cond_signal(&m->kick);
    }
}

void abar_mpi__post(void *arg)
{
    struct mpi_impl *m = arg;
    pthread_mutex_lock(&m->lock);
    abar_mpi__post_locked(m);
    pthread_mutex_unlock(&m->lock);
}

void *abar_mpi__progress_main(void *arg)
{
    struct mpi_impl *m = arg;
    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (!m->stop && (m->stage == ST_IDLE || atomic_load(&m->err)))
            pthread_cond_wait(&m->kick, &m->lock);
        if (m->stop) break;
        abar_mpi__progress_locked(m);
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

