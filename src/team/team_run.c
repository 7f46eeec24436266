/* team_run.c - abar_run: check a launch, fit the pool to it, lay its slots,
 * teams and shared memory out, and run each worker's part: its cluster, then
 * the later waves of its slot. */
#include "abar_internal.h"
#include "team_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- one worker's part of a launch --------------------------------------------- */

static void run_cluster(struct abar__slot *s, unsigned r, uint64_t residency, abar_thread_t *self)
{
    struct abar__launch *L = s->L;
    unsigned ts = L->cfg.team_size;
    *self = (abar_thread_t){
        .L = L, .slot = s, .team = &s->teams[r / ts], .x = &s->x[r], .key = residency * 4,
        .thread_rank = r % ts,
        .cluster_rank = r / ts,
        .cluster_index = s->cluster,
        .team_rank = s->cluster * L->cfg.cluster_size + r / ts,
    };
    abar__team_self = self;
    L->kernel(self, L->arg);
    abar__team_self = NULL;
    abar__team_exit(self);
}

/* sbar's completion: every thread of the slot has left the previous cluster;
 * set the slot up for the next (or stop after an abort). */
void abar__team_next_wave(void *arg)
{
    struct abar__slot *s = arg;
    struct abar__launch *L = s->L;
    pthread_mutex_lock(&L->lock);
    /* relaxed: abort stores the code before taking the lock we hold. */
    if (atomic_load_explicit(&L->abort_code, memory_order_relaxed) != 0) {
        s->stop = true;
    } else {
        s->cluster += L->K;
        /* relaxed: only uniqueness matters; sbar's release publishes it. */
        s->residency = atomic_fetch_add_explicit(L->residencies, 1, memory_order_relaxed) + 1;
        if (abar__team_prepare_cluster(s) != 0) s->stop = true; /* cannot happen */
    }
    pthread_mutex_unlock(&L->lock);
}

static void run_part(struct abar__pool *p, unsigned w, uint64_t base)
{
    struct abar__launch *L = p->L;
    int k = p->slot_of[w];
    if (k < 0 || (unsigned)k >= L->K) return; /* not needed by this launch */
    struct abar__slot *s = &L->slots[k];
    unsigned r = (unsigned)p->rank_of[w];
    abar_thread_t self;
    for (;;) {
        /* The first wave's threads all start (its cluster started together,
         * an abort in it or not: their calls then return ECANCELED); a later
         * wave's do not after an abort.  acquire: pairs with abort's CAS. */
        const bool first = s->cluster < L->K;
        if (first || atomic_load_explicit(&L->abort_code, memory_order_acquire) == 0)
            run_cluster(s, r, first ? base + s->cluster : s->residency, &self);
        if (s->cluster + L->K >= L->clusters) return; /* the last wave */
        /* sbar's completion sets s->cluster and s->stop before its release. */
        (void)abar__team_wait(L, &s->sbar, abar_arrive(&s->sbar));
        if (s->stop) return;
    }
}

/* Checks cfg against a pool of P threads; 0 or the error abar_run returns. */
static int check_launch(const abar_launch_t *cfg, abar_kernel_fn *kernel, unsigned P)
{
    if (cfg == NULL || kernel == NULL) return EINVAL;
    if (cfg->teams == 0 || cfg->team_size == 0 || cfg->cluster_size == 0) return EINVAL;
    if (cfg->teams % cfg->cluster_size != 0) return EINVAL;
    if ((uint64_t)cfg->team_size * cfg->cluster_size > P) return E2BIG;
    return 0;
}

/* Sets up the shared memory for K resident clusters. */
static int setup_shared(struct abar__pool *p, struct abar__launch *L)
{
    size_t b = L->cfg.shared_bytes;
    if (b == 0) {
        if (L->shared_stride) L->shared_stride = 0;
        return 0;
    }
    if (b > SIZE_MAX - ABAR_TEAM_SHARED_ALIGN) return ENOMEM;
    size_t stride = (b + ABAR_TEAM_SHARED_ALIGN - 1) / ABAR_TEAM_SHARED_ALIGN * ABAR_TEAM_SHARED_ALIGN;
    size_t nteams = (size_t)L->K * L->cfg.cluster_size;
    if (stride > SIZE_MAX / nteams) return ENOMEM;
    size_t need = stride * nteams;
    if (need > p->shm_bytes) {
        void *m = aligned_alloc(ABAR_TEAM_SHARED_ALIGN, need);
        if (m == NULL) return ENOMEM;
        free(p->shm);
        p->shm = m;
        p->shm_bytes = need;
    }
    if (L->shared_stride != stride) L->shared_stride = stride;
    return 0;
}

int abar_run(const abar_launch_t *cfg, abar_kernel_fn *kernel, void *arg)
{
    if (abar__team_self) return EDEADLK; /* the pool is busy with our own launch */
    int err = check_launch(cfg, kernel, ABAR_POOL_THREADS_MAX);
    if (err) return err;
    /* The pool fits the launch's cluster: without a configured size it grows
     * to it; with one, E2BIG above it (check_launch below). */
    struct abar__pool *p;
    if ((err = abar__pool_enter(cfg->team_size * cfg->cluster_size, &p)) != 0) return err;
    if ((err = check_launch(cfg, kernel, p->nthreads)) != 0) goto out;

    /* Fields are written only when they change: every worker reads them, and
     * a store would take their cache lines away from all of them. */
#define SET(lv, v) do { if ((lv) != (v)) (lv) = (v); } while (0)
    struct abar__launch *L = &p->launch;
    if (memcmp(&L->cfg, cfg, sizeof *cfg) != 0) L->cfg = *cfg;
    SET(L->kernel, kernel);
    SET(L->arg, arg);
    SET(L->clusters, cfg->teams / cfg->cluster_size);
    SET(L->C, cfg->team_size * cfg->cluster_size);
    if (p->place_C != L->C) {
        unsigned K = abar__team_place(p->nthreads, L->C,
                                      p->flags & ABAR_POOL_PIN ? p->grp : NULL,
                                      p->slot_of, p->rank_of);
        p->place_C = L->C;
        p->place_K = K;
    }
    if (p->shape_ts != cfg->team_size || p->shape_cs != cfg->cluster_size) {
        p->shape_ts = cfg->team_size; /* another layout: initialise every barrier */
        p->shape_cs = cfg->cluster_size;
        p->epoch++;
    }
    SET(L->epoch, p->epoch);
    SET(L->wait_flags, p->wait_flags);
    SET(L->yield_rounds, p->yield_rounds);
    SET(L->residencies, &p->residencies);
    SET(L->K, p->place_K < L->clusters ? p->place_K : L->clusters);
    if ((err = setup_shared(p, L)) != 0) goto out;
    SET(L->slots, p->slots);
    if (atomic_load_explicit(&L->abort_code, memory_order_relaxed))
        atomic_store_explicit(&L->abort_code, 0, memory_order_relaxed);
    for (unsigned k = 0; k < L->K; k++) {
        struct abar__slot *s = &p->slots[k];
        SET(s->L, L);
        SET(s->teams, &p->teams[(size_t)k * cfg->cluster_size]);
        SET(s->x, &p->xflags[(size_t)k * L->C]);
        SET(s->cluster, k);
        SET(s->stop, false);
        for (unsigned i = 0; i < cfg->cluster_size; i++)
            SET(s->teams[i].shared, L->shared_stride == 0 ? NULL /* no pointer arithmetic on NULL */
                                    : p->shm + ((size_t)k * cfg->cluster_size + i) * L->shared_stride);
        if (abar__team_prepare_cluster(s) != 0) {
            err = EINVAL; /* cannot happen: sizes were checked */
            p->epoch++;
            goto out;
        }
    }
    p->L = L;
    abar__pool_dispatch(p, run_part);
    /* relaxed: the dispatch's acquire ordered every worker's part, and the
     * abort code, before this. */
    err = atomic_load_explicit(&L->abort_code, memory_order_relaxed);
    if (err) p->epoch++; /* cancelled barriers: initialise them all next time */
out:
    abar__pool_leave();
    return err;
}
