/*
 * lifecycle.c - init and destroy (both collective), and the drain that
 * leaves no message in flight.
 */
#include "mpi_internal.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


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
 * each phase that any rank has posted.  Then no message is left in flight.
 * Until every rank has reached its destroy, the phase in flight here is
 * polled: the ranks still waiting for it may need this rank's messages
 * (a dissemination round to pass on, the tree's fan-in or fan-out, the
 * root's release or cancel mark), so the agreement is an MPI_Iallreduce
 * tested between polls.  (With ABAR_MPI_IBARRIER, MPI progresses the
 * phase's MPI_Ibarrier itself, and a blocking MPI_Allreduce keeps the
 * order of the communicator's collectives as it was.) */
static void drain(struct mpi_impl *m)
{
    int64_t mine = (int64_t)(m->done + (m->stage != ST_IDLE)), target = mine;
    int bad = atomic_load(&m->err) != 0, anybad = bad;
    int64_t v[2] = { mine, bad }, w[2];
    m->draining = true;
    if (m->engine == ENG_IBARRIER) {
        if (MPI_Allreduce(v, w, 2, MPI_INT64_T, MPI_MAX, m->comm) != MPI_SUCCESS) return;
    } else {
        MPI_Request req;
        if (MPI_Iallreduce(v, w, 2, MPI_INT64_T, MPI_MAX, m->comm, &req) != MPI_SUCCESS) return;
        for (unsigned i = 1;; i++) {
            int flag;
            if (MPI_Test(&req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                abar_mpi__fail(m);
                return;
            }
            if (flag) break;
            abar_mpi__progress_locked(m);
            if (m->oversub && i % 4 == 0) sched_yield();
            else cpu_relax();
        }
    }
    target = w[0];
    anybad = (int)w[1];
    if (anybad) return; /* a rank's MPI failed: no promise the others can finish */
    for (unsigned i = 1; (int64_t)m->done < target && !atomic_load(&m->err); i++) {
        if (m->stage == ST_IDLE) {
            m->phase = m->done;
            m->stage = ST_ARRIVING;
            if (abar_mpi__start_phase(m) != 0) {
                abar_mpi__fail(m);
                break;
            }
        }
        abar_mpi__progress_locked(m);
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
    switch (m->engine) {
    case ENG_DISSEM: return abar_mpi__dissem_setup(m);
    case ENG_TREE:   return abar_mpi__tree_setup(m);
    default:         return 0;
    }
}

/* More runnable threads here than CPUs to run them: pollers should yield.
 * Collective.  The CPUs are those the node's ranks may run on, together
 * (the union of their affinity masks), not the machine's: a job confined by
 * taskset, a cpuset or a container to fewer CPUs than the machine has is
 * oversubscribed by what it runs on them.  Where the mask cannot be read,
 * every online CPU counts.  A cgroup CPU quota (abar_ncpu below the rank's
 * mask) caps both counts: the node's at the largest a rank sees, as for
 * ranks that share one container; a rank that sees none leaves it
 * uncapped.  (Ranks in containers of their own, each with a quota, are
 * counted as if they shared the largest: that errs towards yielding.) */
static bool oversubscribed(MPI_Comm comm, unsigned threads)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        for (long c = 0; c < online && c < CPU_SETSIZE; c++) CPU_SET((int)c, &set);
    const int mask = CPU_COUNT(&set), quota = (int)abar_ncpu();
    int cap = quota < mask ? quota : INT_MAX;
    const int mine = mask < cap ? mask : cap;
    int local = 1, cpus = mine;
    MPI_Comm node;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        if (MPI_Allreduce(MPI_IN_PLACE, &set, (int)sizeof set, MPI_BYTE, MPI_BOR, node) == MPI_SUCCESS)
            cpus = CPU_COUNT(&set);
        else
            cpus = (int)online;
        if (MPI_Allreduce(MPI_IN_PLACE, &cap, 1, MPI_INT, MPI_MAX, node) == MPI_SUCCESS && cap < cpus)
            cpus = cap;
        MPI_Comm_free(&node);
    }
    return (long)local * threads > cpus || (long)threads > mine;
}

int abar_mpi_init(abar_mpi_t *b, MPI_Comm comm, const abar_mpi_attr_t *attr)
{
    int flag, inter, prov, size, rank;
    /* Returned at once, before any collective call: no MPI call can be made,
     * or `comm` is not one the other ranks share (a property of the
     * communicator, the same on each of its ranks). */
    if (MPI_Initialized(&flag) != MPI_SUCCESS || !flag) return EPERM;
    if (MPI_Finalized(&flag) != MPI_SUCCESS || flag) return EPERM;
    if (comm == MPI_COMM_NULL) return EINVAL;
    if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return EINVAL;
    if (MPI_Comm_size(comm, &size) != MPI_SUCCESS || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return EINVAL;

    abar_mpi_attr_t a = attr ? *attr : (abar_mpi_attr_t){ 0 };
    unsigned threads = a.threads ? a.threads : 1;
    int e = 0;
    if (b == NULL || (a.flags & ~KNOWN_FLAGS) ||
        ((a.flags & ABAR_WAIT_SPIN) && (a.flags & ABAR_WAIT_PARK)) ||
        threads > ABAR_EXPECTED_MAX || a.root < 0 || a.root >= size ||
        (a.result_size && (a.result == NULL || a.completion == NULL)) ||
        ((a.flags & ABAR_MPI_IBARRIER) && a.completion) ||
        a.result_size > (size_t)INT32_MAX - sizeof(uint64_t))
        e = EINVAL;
    /* Thread level: our own calls are serialised by a mutex, so several local
     * threads need SERIALIZED; a progress thread runs beside the caller's own
     * MPI calls and needs MULTIPLE.  The attributes may differ between ranks
     * (threads does), so these are agreed like every other error below. */
    MPI_Query_thread(&prov);
    if (!e && (a.flags & ABAR_MPI_PROGRESS_THREAD) && prov < MPI_THREAD_MULTIPLE) e = ENOTSUP;
    if (!e && threads > 1 && prov < MPI_THREAD_SERIALIZED) e = ENOTSUP;
    /* Below SERIALIZED only the main thread may call MPI: from another
     * thread there is no way to take part in the collective, so this one
     * returns at once. */
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
        abar_attr_t la = { .completion = abar_mpi__post, .arg = m, .flags = a.flags & (ABAR_WAIT_SPIN | ABAR_WAIT_PARK) };
        abar_attr_t ra = { .flags = la.flags };
        if ((e = abar_init(&m->local, threads, &la)) == 0 && (e = abar_init(&m->release, 1, &ra)) == 0)
            e = setup_engine(m);
        if (!e) {
            pthread_mutex_init(&m->lock, NULL);
            pthread_cond_init(&m->kick, NULL);
            mutexes = true;
            /* started before the agreement, so that a failure here is everyone's */
            if ((a.flags & ABAR_MPI_PROGRESS_THREAD) && !e) {
                m->has_thread = pthread_create(&m->thread, NULL, abar_mpi__progress_main, m) == 0;
                if (!m->has_thread) e = EAGAIN;
            }
        }
    }

    /* One MPI_Allreduce(MAX) agrees on the outcome (the largest error
     * number of any rank) and checks that the attributes that must match do
     * match (x and -x both maximal). */
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
        /* the progress thread, if any, is one more runnable thread per rank */
        bool over = oversubscribed(dup, threads + (m->has_thread ? 1 : 0));
        pthread_mutex_lock(&m->lock);
        m->oversub = over;
        pthread_cond_signal(&m->kick); /* a parked progress thread rereads it */
        pthread_mutex_unlock(&m->lock);
        if (!(a.flags & (ABAR_MPI_P2P | ABAR_MPI_IBARRIER))) abar_mpi__shm_try(m);
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
    if (abar_mpi__completing == m) return EBUSY;
    /* seq_cst pairs with the callers' registration in `inside` */
    if (atomic_load(&m->inside) != 0) return EBUSY;
    pthread_mutex_lock(&m->lock);
    bool in_flight = m->stage != ST_IDLE;
    pthread_mutex_unlock(&m->lock);
    /* Flags: this rank's flag is ahead of the phases complete. */
    if (m->engine == ENG_FLAGS)
        in_flight |= atomic_load(&m->next) > abar_mpi_phase(b);
    /* Hierarchical: some of this rank's threads arrived in a phase that has
     * not completed here (more arrivals than the completed phases took),
     * posted to MPI or not. */
    if (m->threads > 1)
        in_flight |= atomic_load(&m->arrivals) > (uint64_t)m->threads * abar_mpi_phase(b);
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
    /* flags: an arrival that left `inside` before its flag store (a cancelled
     * rank's destroy gets here with one in flight) is done with the segment
     * once `published` catches up with `next` (engine_flags.c).  acquire:
     * pairs with its release store. */
    while (atomic_load_explicit(&m->published, memory_order_acquire) != atomic_load(&m->next)) sched_yield();
    int fin = 1;
    MPI_Finalized(&fin);
    /* direct and flags: no MPI call is part of a phase, so none is left to
     * finish (both are the same on every rank: this skip is collective) */
    if (!fin && !m->direct && m->engine != ENG_FLAGS) {
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
