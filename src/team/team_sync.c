/* team_sync.c - inside a kernel: ranks, shared memory, team and cluster
 * barriers with seed 004's collective rule checked, abort. */
#include "abar_internal.h"
#include "team_internal.h"

#include <errno.h>
#include <stdint.h>

_Thread_local abar_thread_t *abar__team_self;

/* ---- where am I ----------------------------------------------------------- */

unsigned abar_thread_rank(const abar_thread_t *self) { return self ? self->thread_rank : 0; }
unsigned abar_team_size(const abar_thread_t *self) { return self ? self->L->cfg.team_size : 0; }
unsigned abar_team_rank(const abar_thread_t *self) { return self ? self->team_rank : 0; }
unsigned abar_team_count(const abar_thread_t *self) { return self ? self->L->cfg.teams : 0; }
unsigned abar_cluster_rank(const abar_thread_t *self) { return self ? self->cluster_rank : 0; }
unsigned abar_cluster_size(const abar_thread_t *self) { return self ? self->L->cfg.cluster_size : 0; }
unsigned abar_cluster_index(const abar_thread_t *self) { return self ? self->cluster_index : 0; }
unsigned abar_cluster_count(const abar_thread_t *self) { return self ? self->L->clusters : 0; }

/* ---- shared memory -------------------------------------------------------- */

void *abar_team_shared(const abar_thread_t *self)
{
    if (self == NULL || self->L->cfg.shared_bytes == 0) return NULL;
    return self->team->shared;
}

void *abar_cluster_map_shared(const abar_thread_t *self, const void *addr, unsigned rank)
{
    if (self == NULL || self->L->cfg.shared_bytes == 0 || rank >= self->L->cfg.cluster_size) {
        errno = EINVAL;
        return NULL;
    }
    uintptr_t base = (uintptr_t)self->team->shared, a = (uintptr_t)addr;
    if (a < base || a - base >= self->L->cfg.shared_bytes) {
        errno = EINVAL;
        return NULL;
    }
    return self->slot->teams[rank].shared + (a - base);
}

/* ---- the barriers of a resident cluster ------------------------------------- */

/* Nobody is inside a slot's barriers when it is prepared (the launch has not
 * started, or every thread of the slot is in sbar), so destroy is never
 * EBUSY; a barrier never initialised reads as not live (destroy: EINVAL). */
static int reinit(abar_t *b, unsigned expected, const abar_attr_t *attr)
{
    (void)abar_destroy(b);
    return abar_init(b, expected, attr);
}

int abar__team_prepare_cluster(struct abar__slot *s)
{
    const abar_launch_t *cfg = &s->L->cfg;
    const unsigned f = s->L->wait_flags;
    const abar_attr_t plain = { NULL, NULL, f };
    bool full = s->epoch != s->L->epoch;
    int r = 0;
    if (full) r |= reinit(&s->sbar, s->L->C, &(abar_attr_t){ abar__team_next_wave, s, f });
    /* relaxed: the slot's threads are all quiescent (see above); their
     * stores to `used` are ordered before this by the start/sbar handshake. */
    if (full || atomic_load_explicit(&s->used, memory_order_relaxed))
        r |= reinit(&s->cbar, s->L->C, &plain);
    for (unsigned i = 0; i < cfg->cluster_size; i++) {
        struct abar__team *t = &s->teams[i];
        if (full || atomic_load_explicit(&t->used, memory_order_relaxed))
            r |= reinit(&t->tbar, cfg->team_size, &plain);
        /* Written only when they change: the workers read this line. */
        if (atomic_load_explicit(&t->used, memory_order_relaxed))
            atomic_store_explicit(&t->used, 0, memory_order_relaxed);
        if (t->slot != s) t->slot = s;
        if (t->base != i * cfg->team_size) t->base = i * cfg->team_size;
    }
    if (atomic_load_explicit(&s->used, memory_order_relaxed))
        atomic_store_explicit(&s->used, 0, memory_order_relaxed);
    s->epoch = s->L->epoch;
    return r ? EINVAL : 0;
}

/* Whether the launch was aborted.  Every collective call looks first: the
 * abort cancels the launch's barriers one after the other, and a thread
 * that saw one cancelled must not complete a phase of another not yet
 * cancelled.  acquire: pairs with abort's CAS, which comes before its
 * cancels (a thread that saw a cancel sees the code). */
static inline bool aborted(const abar_thread_t *self)
{
    return atomic_load_explicit(&self->L->abort_code, memory_order_acquire) != 0;
}

/* ---- leaving a group: now, or lazily by the group's first user ------------- */

/* One thread leaves tbar. */
static void drop_team(struct abar__team *t) { (void)abar_arrive_and_drop(&t->tbar); }

/* One thread leaves cbar. */
static void drop_cluster(struct abar__slot *s) { (void)abar_arrive_and_drop(&s->cbar); }

/* The first use of the team barrier in this residency (as far as this thread
 * knows): mark it used, then drop for every peer that left without dropping.
 * seq_cst store then seq_cst loads, against the leaver's seq_cst store of its
 * flag then seq_cst load of `used`: at least one of the two sees the other. */
static void team_first_use(abar_thread_t *self)
{
    struct abar__team *t = self->team;
    atomic_store(&t->used, 1);
    uint64_t ex = self->key + ABAR__X_EXITED;
    for (unsigned r = t->base; r < t->base + self->L->cfg.team_size; r++) {
        uint64_t v = ex;
        if (atomic_load(&self->slot->x[r].t) == ex &&
            atomic_compare_exchange_strong(&self->slot->x[r].t, &v, ex + 1))
            drop_team(t);
    }
}

static void cluster_first_use(abar_thread_t *self)
{
    struct abar__slot *s = self->slot;
    const struct abar__launch *L = self->L;
    atomic_store(&s->used, 1);
    uint64_t ex = self->key + ABAR__X_EXITED;
    for (unsigned r = 0; r < L->C; r++) {
        uint64_t v = ex;
        if (atomic_load(&s->x[r].c) == ex && atomic_compare_exchange_strong(&s->x[r].c, &v, ex + 1))
            drop_cluster(s);
    }
}

/* relaxed: a stale 0 only sends the thread through the (idempotent) first-use
 * scan; a 1 means some thread marked it and did (or is doing) the scan. */
static inline void team_use(abar_thread_t *self)
{
    if (!atomic_load_explicit(&self->team->used, memory_order_relaxed)) team_first_use(self);
}
static inline void cluster_use(abar_thread_t *self)
{
    if (!atomic_load_explicit(&self->slot->used, memory_order_relaxed)) cluster_first_use(self);
}

/* The calling thread leaves the team barrier: flag, then drop if the group is
 * in use (claiming the flag, so a concurrent first user does not drop too). */
static void leave_team(abar_thread_t *self)
{
    if (self->L->cfg.team_size == 1) return; /* no peer can wait for it */
    if (aborted(self)) return;               /* the barrier is (being) cancelled */
    uint64_t ex = self->key + ABAR__X_EXITED, v = ex;
    atomic_store(&self->x->t, ex);
    if (atomic_load(&self->team->used) && atomic_compare_exchange_strong(&self->x->t, &v, ex + 1))
        drop_team(self->team);
}

static void leave_cluster(abar_thread_t *self)
{
    if (self->L->C == 1) return; /* no peer can wait for it */
    if (aborted(self)) return;   /* the barrier is (being) cancelled */
    uint64_t ex = self->key + ABAR__X_EXITED, v = ex;
    atomic_store(&self->x->c, ex);
    if (atomic_load(&self->slot->used) && atomic_compare_exchange_strong(&self->x->c, &v, ex + 1))
        drop_cluster(self->slot);
}

/* The checks every collective call makes: a live self, in its own thread. */
static inline bool self_ok(const abar_thread_t *self)
{
    return self != NULL && self == abar__team_self;
}

/* ---- team barrier --------------------------------------------------------- */

abar_token_t abar_team_arrive(abar_thread_t *self)
{
    if (!self_ok(self)) return tok_error(EINVAL);
    if (aborted(self)) return tok_error(ECANCELED);
    if (self->team_pending) return tok_error(EINVAL); /* second arrive in a phase */
    team_use(self);
    abar_token_t t = abar_arrive(&self->team->tbar);
    if (abar_token_error(t) == 0) {
        self->team_pending = true;
        self->team_tok = t;
    }
    return t;
}

int abar_team_wait(abar_thread_t *self, abar_token_t t)
{
    if (!self_ok(self)) return EINVAL;
    if (aborted(self)) {
        self->team_pending = false;
        return ECANCELED;
    }
    int e = abar_token_error(t);
    if (e) return e; /* the error its arrive reported */
    if (!self->team_pending || t.raw != self->team_tok.raw || t.id != self->team_tok.id)
        return EINVAL; /* no arrive to wait for, or not its token: consumed once */
    int r = abar__team_wait(self->L, &self->team->tbar, t);
    if (r == 0 || r == ECANCELED) self->team_pending = false;
    return r;
}

int abar_team_sync(abar_thread_t *self)
{
    if (!self_ok(self)) return EINVAL;
    if (aborted(self)) return ECANCELED;
    if (self->team_pending) return EALREADY;
    team_use(self);
    return abar__team_sync(self->L, &self->team->tbar);
}

/* ---- cluster barrier: one core barrier over the cluster's threads -------- */

abar_token_t abar_cluster_arrive(abar_thread_t *self)
{
    if (!self_ok(self)) return tok_error(EINVAL);
    if (aborted(self)) return tok_error(ECANCELED);
    if (self->cluster_pending) return tok_error(EINVAL); /* second arrive in a phase */
    cluster_use(self);
    abar_token_t t = abar_arrive(&self->slot->cbar);
    if (abar_token_error(t) == 0) {
        self->cluster_pending = true;
        self->cluster_tok = t;
    }
    return t;
}

int abar_cluster_wait(abar_thread_t *self, abar_token_t t)
{
    if (!self_ok(self)) return EINVAL;
    if (aborted(self)) {
        self->cluster_pending = false;
        return ECANCELED;
    }
    int e = abar_token_error(t);
    if (e) return e;
    if (!self->cluster_pending || t.raw != self->cluster_tok.raw || t.id != self->cluster_tok.id)
        return EINVAL;
    int r = abar__team_wait(self->L, &self->slot->cbar, t);
    if (r == 0 || r == ECANCELED) self->cluster_pending = false;
    return r;
}

int abar_cluster_sync(abar_thread_t *self)
{
    if (!self_ok(self)) return EINVAL;
    if (aborted(self)) return ECANCELED;
    if (self->cluster_pending) return EALREADY;
    cluster_use(self);
    return abar__team_sync(self->L, &self->slot->cbar);
}

/* ---- leaving the kernel ------------------------------------------------------ */

/* A thread that returns from the kernel leaves its team's barriers so that
 * peers still synchronising never wait for it.  It first leaves the groups it
 * has no arrival pending in (a peer may need that to reach its own next
 * arrival); an arrival it left pending is counted in its phase already, so it
 * waits for that phase (which needs only the peers) and leaves after. */
void abar__team_exit(abar_thread_t *self)
{
    struct abar__team *team = self->team;
    if (!self->team_pending) leave_team(self);
    if (!self->cluster_pending) leave_cluster(self);
    if (self->team_pending) {
        (void)abar__team_wait(self->L, &team->tbar, self->team_tok);
        self->team_pending = false;
        leave_team(self);
    }
    if (self->cluster_pending) {
        (void)abar__team_wait(self->L, &self->slot->cbar, self->cluster_tok);
        self->cluster_pending = false;
        leave_cluster(self);
    }
}

/* ---- failure ------------------------------------------------------------------ */

int abar_abort(abar_thread_t *self, int code)
{
    if (!self_ok(self) || code == 0) return EINVAL;
    struct abar__launch *L = self->L;
    int zero = 0;
    /* acq_rel: the first abort wins; abar_run reads the code after the done
     * barrier, which orders it after this. */
    if (!atomic_compare_exchange_strong_explicit(&L->abort_code, &zero, code,
                                                 memory_order_acq_rel, memory_order_acquire))
        return 0; /* already aborted: the first code stands */
    /* The lock orders these cancels with a re-initialisation between waves:
     * either the wave sees the code and does not start, or its barriers are
     * cancelled here. */
    pthread_mutex_lock(&L->lock);
    for (unsigned k = 0; k < L->K; k++) {
        struct abar__slot *s = &L->slots[k];
        (void)abar_cancel(&s->cbar);
        for (unsigned i = 0; i < L->cfg.cluster_size; i++) (void)abar_cancel(&s->teams[i].tbar);
    }
    pthread_mutex_unlock(&L->lock);
    return 0;
}

int abar_aborted(const abar_thread_t *self)
{
    if (self == NULL) return 0;
    return atomic_load_explicit(&self->L->abort_code, memory_order_acquire);
}
