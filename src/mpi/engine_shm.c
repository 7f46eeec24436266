/*
 * engine_shm.c - every rank on one node (with or without a completion): a
 * process-shared core barrier (expected = ranks) in an MPI shared-memory
 * window, plus one (expected 1) through which the root releases after the
 * completion.  No MPI call finishes a phase.  In the direct hierarchical
 * way the shared barrier counts every thread of every rank instead, and the
 * threads arrive and wait on it themselves (abar_mpi__shm_arrive_direct,
 * abar_mpi__shm_wait_direct).
 */
#include "mpi_internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

int abar_mpi__shm_start(struct mpi_impl *m)
{
    /* rel cannot complete phase k before gather does, which needs us:
     * its current token, taken first, names phase k */
    if (m->completion && m->rank != m->root) {
        m->rtok = abar_current(&m->seg->rel);
        if (abar_token_error(m->rtok)) return -1;
    }
    m->gtok = abar_arrive(&m->seg->gather);
    return abar_token_error(m->gtok) ? -1 : 0;
}

int abar_mpi__shm_poll(struct mpi_impl *m)
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
            const struct mpi_impl *outer = abar_mpi__completing;
            abar_mpi__completing = m;
            m->completion(m->arg);
            abar_mpi__completing = outer;
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
void abar_mpi__shm_block(struct mpi_impl *m, uint64_t deadline)
{
    lock_hot(m);
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

/* SHM, direct: the thread arrives on the node's shared barrier itself,
 * which counts every thread of every rank. */
abar_token_t abar_mpi__shm_arrive_direct(struct mpi_impl *m)
{
    /* relaxed: a cancel that happens before this call is seen (coherence);
     * one racing with it may go either way, as in the core */
    if (atomic_load_explicit(&m->cancelled, memory_order_relaxed)) return tok_err(ECANCELED);
    abar_token_t t = abar_arrive(&m->seg->gather);
    /* relaxed: read only by destroy, after every caller has left (`inside`) */
    if (abar_token_error(t) == 0) atomic_fetch_add_explicit(&m->arrivals, 1, memory_order_relaxed);
    return t;
}

/* SHM, direct: waits on the shared barrier (the core's spin-then-futex
 * wait, which polls the release words only), in slices of SHM_POLL_NS so
 * that a local cancel (which cannot touch the shared barrier: the other
 * ranks still use it) is seen within one slice.  (Polling abar_test
 * instead, which also reads the state word that every arrival writes, was
 * slower: docs/mpi.md.) */
int abar_mpi__shm_wait_direct(struct mpi_impl *m, abar_token_t t, const struct timespec *abstime, bool test)
{
    abar_t *g = &m->seg->gather;
    const uint64_t deadline = abstime ? (uint64_t)abstime->tv_sec * 1000000000u + (uint64_t)abstime->tv_nsec
                                      : UINT64_MAX;
    for (;;) {
        if (atomic_load_explicit(&m->cancelled, memory_order_relaxed)) {
            int r = abar_test(g, t); /* a phase completed here still says 0 */
            return r == EBUSY ? ECANCELED : r;
        }
        if (test) {
            int r = abar_test(g, t);
            /* oversubscribed: a caller polling test in a loop would hold
             * the CPU that a late thread needs */
            if (r == EBUSY && m->oversub) sched_yield();
            return r;
        }
        const uint64_t now = now_ns();
        if (now >= deadline) {
            int r = abar_test(g, t);
            return r == EBUSY ? ETIMEDOUT : r;
        }
        const uint64_t until = deadline - now < SHM_POLL_NS ? deadline : now + SHM_POLL_NS;
        const struct timespec ts = { .tv_sec = (time_t)(until / 1000000000u),
                                     .tv_nsec = (long)(until % 1000000000u) };
        int r = abar_wait_until(g, t, &ts);
        if (r != ETIMEDOUT) return r;
    }
}

/* Collective: switches to ENG_FLAGS or ENG_SHM if every rank of the
 * communicator shares this node and the shared window can be made
 * everywhere. */
void abar_mpi__shm_try(struct mpi_impl *m)
{
    MPI_Comm node;
    int nsize = 0, ok, all = 0;
    if (MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return; /* collective: fails alike everywhere */
    MPI_Comm_size(node, &nsize);
    /* Flags when no completion (a flag a rank: engine_flags.c), on an
     * oversubscribed node too: there the flags were faster than two levels
     * in every configuration measured, with the ranks bound to CPUs or not
     * (docs/mpi.md, Hierarchical mode); ABAR_MPI_FLAGS=0 (on any rank)
     * says no.  Else direct when no completion and some rank runs several
     * threads: the shared barrier then counts every thread of every rank
     * (above).  Not when oversubscribed: there every thread of the node on
     * one barrier costs more switches than a rank's threads on their own
     * barrier and one arrival a rank (docs/mpi.md).  ABAR_MPI_DIRECT=1 or
     * 0 (on any rank) says yes or no regardless.  Collective, so every
     * rank takes the same path. */
    const char *env = getenv("ABAR_MPI_DIRECT"), *fenv = getenv("ABAR_MPI_FLAGS");
    unsigned long mine = m->threads, most = 0, total = 0;
    int v[4] = { m->oversub, env && env[0] == '1', env && env[0] == '0', fenv && fenv[0] == '0' },
        any[4] = { 0, 0, 0, 0 };
    if (MPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG, MPI_MAX, m->comm) != MPI_SUCCESS ||
        MPI_Allreduce(&mine, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, m->comm) != MPI_SUCCESS ||
        MPI_Allreduce(v, any, 4, MPI_INT, MPI_MAX, m->comm) != MPI_SUCCESS) {
        MPI_Comm_free(&node); /* collective: fails alike everywhere */
        return;
    }
    const bool flags = m->completion == NULL && m->size <= FLAGS_MAX && !any[3];
    const bool direct = !flags && m->completion == NULL && most > 1 && !any[2] && (any[1] || !any[0]);
    const unsigned long expected = direct ? total : (unsigned long)m->size;
    /* + 64: the segment is placed at the first 64-byte boundary of rank 0's
     * memory (the mapping is page-aligned in every process, so the offset is
     * the same everywhere) */
    MPI_Aint bytes = flags ? (MPI_Aint)(sizeof(struct shm_flags) + 64 * (size_t)m->size + 64)
                           : (MPI_Aint)(sizeof(struct shm_seg) + m->result_size + 64);
    if (expected > ABAR_EXPECTED_MAX) {
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
    } else if (flags) {
        m->fl = (struct shm_flags *)(((uintptr_t)base + 63) & ~(uintptr_t)63);
        if (m->rank == 0) {
            atomic_init(&m->fl->futex, 0);
            atomic_init(&m->fl->sleepers, 0);
            for (int i = 0; i < m->size; i++) atomic_init(&m->fl->rank[i].arrived, 0);
        }
        m->fl_asym = abar_mpi__flags_asym(m->comm);
        m->tok_id = m->nonce << 1 | 1; /* never 0: 0 marks an invalid token */
        MPI_Barrier(m->comm);           /* the flags are zero before anyone arrives */
        m->engine = ENG_FLAGS;
    } else {
        m->seg = (struct shm_seg *)(((uintptr_t)base + 63) & ~(uintptr_t)63);
        int good = 1;
        if (m->rank == 0) {
            /* the wait flags of attr apply to the shared waits too */
            abar_attr_t sa = { .flags = ABAR_PSHARED | m->wait_flags };
            good = abar_init(&m->seg->gather, (uint32_t)expected, &sa) == 0 &&
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
        m->direct = direct;
    }
    MPI_Comm_free(&node);
}

