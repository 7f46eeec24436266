/* hazard.c - which barriers this process's threads are blocked on.
 *
 * A waiter on a process-private barrier announces the barrier in a slot of
 * its own thread record (a plain store on a line no other thread writes;
 * the fence is destroy's, below) instead of counting itself (an add on a line
 * every waiter shares).  abar_destroy scans the records: a barrier named in a
 * slot is in use.  Records are never freed: a thread's is recycled when it
 * exits.  Process-shared barriers keep the in-barrier count (another
 * process's records are not ours to read).
 *
 * The slot store must be ordered before the waiter's next loads (the
 * barrier's words), and destroy's mark before its loads of the slots: a
 * store-load pair, which needs a full fence on each side.  A waiter pays it
 * every wait, destroy rarely, so the fence is asymmetric where the system
 * allows (the backend's abar__os_membarrier, os.h: Linux's membarrier,
 * 4.14+, or Windows' FlushProcessWriteBuffers): waiters keep only the
 * compiler's order, and destroy makes every running thread of the process
 * execute a full fence.  A waiter whose slot store is still buffered is
 * running, so that fence orders it before destroy's slot loads; a waiter
 * not running has been switched out, which fences too.  Either its slot is
 * seen, or its loads come after the fence and see destroy's mark.  Where
 * there is no such call (the portable backend) or it is refused (old
 * kernel, seccomp, an emulator), both sides use a seq_cst fence. */
#define _GNU_SOURCE
#include "abar_internal.h"
#include "os.h"

#include <pthread.h>
#include <stdlib.h>

/* Decided before any thread can be in abar (a constructor; again in a fork
 * child, single-threaded then): a plain bool every thread reads. */
bool abar__hazard_asym;

static void hazard_register(void) { abar__hazard_asym = abar__os_membarrier_register(); }

static void hazard_forked(void);

__attribute__((constructor)) static void hazard_setup(void)
{
    hazard_register();
    pthread_atfork(NULL, NULL, hazard_forked);
}

void abar__hazard_fence_heavy(void)
{
    if (abar__hazard_asym) abar__os_membarrier();
    /* seq_cst fence: our own half (the whole pair without membarrier) */
    atomic_thread_fence(memory_order_seq_cst);
}

static _Atomic(struct abar__hazard *) records;
ABAR__TLS struct abar__hazard *abar__hazard_self;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void record_release(void *p)
{
    struct abar__hazard *h = p;
    for (int i = 0; i < ABAR__HAZARD_DEPTH; i++)
        atomic_store_explicit(&h->slot[i], NULL, memory_order_relaxed);
    h->depth = 0;
    /* release: the cleared slots are visible to the next owner */
    atomic_store_explicit(&h->used, 0, memory_order_release);
}

static void exit_key_create(void) { pthread_key_create(&exit_key, record_release); }

/* The first call of a thread: claims a free record or allocates one. */
struct abar__hazard *abar__hazard_claim(void)
{
    pthread_once(&exit_once, exit_key_create);
    struct abar__hazard *h;
    /* acquire: pairs with the release push below and the release in record_release */
    for (h = atomic_load_explicit(&records, memory_order_acquire); h; h = h->next) {
        int free_ = 0;
        if (atomic_load_explicit(&h->used, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&h->used, &free_, 1, memory_order_acquire,
                                                    memory_order_relaxed))
            break;
    }
    if (h == NULL) {
        h = aligned_alloc(64, sizeof *h);
        if (h == NULL) return NULL; /* callers fall back to the in-barrier count */
        for (int i = 0; i < ABAR__HAZARD_DEPTH; i++) atomic_init(&h->slot[i], NULL);
        h->depth = 0;
        atomic_init(&h->used, 1);
        h->next = atomic_load_explicit(&records, memory_order_relaxed);
        /* release: a scanner that finds h sees it initialised */
        while (!atomic_compare_exchange_weak_explicit(&records, &h->next, h, memory_order_release,
                                                      memory_order_relaxed)) {}
    }
    pthread_setspecific(exit_key, h);
    abar__hazard_self = h;
    return h;
}

/* In a fork child only the forking thread lives on: the other threads'
 * records, copied with whatever slots they held (a thread blocked in a
 * wait), would say their barriers are in use for good.  Free them. */
static void hazard_forked(void)
{
    hazard_register();
    for (struct abar__hazard *h = atomic_load_explicit(&records, memory_order_relaxed); h; h = h->next)
        if (h != abar__hazard_self) record_release(h);
}

bool abar__hazard_any(const void *b)
{
    /* seq_cst loads: the other half of the Dekker pair with abar__enter */
    for (struct abar__hazard *h = atomic_load(&records); h; h = h->next)
        for (int i = 0; i < ABAR__HAZARD_DEPTH; i++)
            if (atomic_load(&h->slot[i]) == b) return true;
    return false;
}

/* Test hook: how many threads are registered as blocked on b. */
unsigned abar__test_waiters(abar_t *b)
{
    struct abar_impl *bi = impl(b);
    unsigned n = atomic_load(&bi->inside) & ~ABAR__INSIDE_DEAD;
    for (struct abar__hazard *h = atomic_load(&records); h; h = h->next)
        for (int i = 0; i < ABAR__HAZARD_DEPTH; i++)
            n += atomic_load(&h->slot[i]) == (const void *)bi;
    return n;
}
