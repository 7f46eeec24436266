/* ck_rivals.c - Concurrency Kit's five barriers behind the benchmark's
 * interface (rivals.h).  Each needs per-thread state, subscribed in the
 * thread that uses it. */
#include "rivals.h"

#include <ck_barrier.h>
#include <stdlib.h>

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n, sz);
    if (!p) abort();
    return p;
}

/* ---- centralized: one counter, sense reversal ----------------------------- */
struct ckc { ck_barrier_centralized_t b __attribute__((aligned(64))); unsigned n; };
struct ckc_ts { ck_barrier_centralized_state_t s; } __attribute__((aligned(64)));

static void *ckc_create(unsigned n, void (*fn)(void *), void *arg)
{
    (void)fn; (void)arg;
    struct ckc *c = aligned_alloc(64, sizeof *c);
    if (!c) abort();
    c->b = (ck_barrier_centralized_t)CK_BARRIER_CENTRALIZED_INITIALIZER;
    c->n = n;
    return c;
}
static void *ckc_ts_new(void *b, unsigned tid)
{
    (void)b; (void)tid;
    struct ckc_ts *t = aligned_alloc(64, sizeof *t);
    if (!t) abort();
    t->s = (ck_barrier_centralized_state_t)CK_BARRIER_CENTRALIZED_STATE_INITIALIZER;
    return t;
}
static void ckc_aw(void *b, void *ts)
{
    struct ckc *c = b;
    ck_barrier_centralized(&c->b, &((struct ckc_ts *)ts)->s, c->n);
}

/* ---- combining: a tree of groups of two threads ---------------------------- */
struct ckm {
    ck_barrier_combining_t b;
    ck_barrier_combining_group_t root;
    ck_barrier_combining_group_t *groups;
    unsigned n;
};
struct ckm_ts { ck_barrier_combining_state_t s; ck_barrier_combining_group_t *g; } __attribute__((aligned(64)));

static void *ckm_create(unsigned n, void (*fn)(void *), void *arg)
{
    (void)fn; (void)arg;
    struct ckm *c = xcalloc(1, sizeof *c);
    unsigned ng = (n + 1) / 2;
    c->n = n;
    c->groups = aligned_alloc(64, ng * sizeof *c->groups);
    if (!c->groups) abort();
    ck_barrier_combining_init(&c->b, &c->root);
    for (unsigned g = 0; g < ng; g++)
        ck_barrier_combining_group_init(&c->b, &c->groups[g], g * 2 + 1 < n ? 2 : 1);
    return c;
}
static void *ckm_ts_new(void *b, unsigned tid)
{
    struct ckm *c = b;
    struct ckm_ts *t = aligned_alloc(64, sizeof *t);
    if (!t) abort();
    t->s = (ck_barrier_combining_state_t)CK_BARRIER_COMBINING_STATE_INITIALIZER;
    t->g = &c->groups[tid / 2];
    return t;
}
static void ckm_aw(void *b, void *ts)
{
    struct ckm_ts *t = ts;
    ck_barrier_combining(&((struct ckm *)b)->b, t->g, &t->s);
}
static void ckm_destroy(void *b)
{
    struct ckm *c = b;
    free(c->groups);
    free(c);
}

/* ---- dissemination ----------------------------------------------------------- */
struct ckd {
    ck_barrier_dissemination_t *b;
    ck_barrier_dissemination_flag_t **flags;
    unsigned n;
};
struct ckd_ts { ck_barrier_dissemination_state_t s; } __attribute__((aligned(64)));

static void *ckd_create(unsigned n, void (*fn)(void *), void *arg)
{
    (void)fn; (void)arg;
    struct ckd *c = xcalloc(1, sizeof *c);
    unsigned size = ck_barrier_dissemination_size(n);
    c->n = n;
    c->b = xcalloc(n, sizeof *c->b);
    c->flags = xcalloc(n, sizeof *c->flags);
    for (unsigned i = 0; i < n; i++) c->flags[i] = xcalloc(size ? size : 1, sizeof **c->flags);
    ck_barrier_dissemination_init(c->b, c->flags, n);
    return c;
}
static void *ckd_ts_new(void *b, unsigned tid)
{
    (void)tid;
    struct ckd_ts *t = aligned_alloc(64, sizeof *t);
    if (!t) abort();
    ck_barrier_dissemination_subscribe(((struct ckd *)b)->b, &t->s);
    return t;
}
static void ckd_aw(void *b, void *ts)
{
    ck_barrier_dissemination(((struct ckd *)b)->b, &((struct ckd_ts *)ts)->s);
}
static void ckd_destroy(void *b)
{
    struct ckd *c = b;
    for (unsigned i = 0; i < c->n; i++) free(c->flags[i]);
    free(c->flags);
    free(c->b);
    free(c);
}

/* ---- tournament ----------------------------------------------------------------- */
struct ckt {
    ck_barrier_tournament_t b;
    ck_barrier_tournament_round_t **rounds;
    unsigned n;
};
struct ckt_ts { ck_barrier_tournament_state_t s; } __attribute__((aligned(64)));

static void *ckt_create(unsigned n, void (*fn)(void *), void *arg)
{
    (void)fn; (void)arg;
    struct ckt *c = xcalloc(1, sizeof *c);
    unsigned size = ck_barrier_tournament_size(n);
    c->n = n;
    c->rounds = xcalloc(n, sizeof *c->rounds);
    for (unsigned i = 0; i < n; i++) c->rounds[i] = xcalloc(size ? size : 1, sizeof **c->rounds);
    ck_barrier_tournament_init(&c->b, c->rounds, n);
    return c;
}
static void *ckt_ts_new(void *b, unsigned tid)
{
    (void)tid;
    struct ckt_ts *t = aligned_alloc(64, sizeof *t);
    if (!t) abort();
    ck_barrier_tournament_subscribe(&((struct ckt *)b)->b, &t->s);
    return t;
}
static void ckt_aw(void *b, void *ts)
{
    ck_barrier_tournament(&((struct ckt *)b)->b, &((struct ckt_ts *)ts)->s);
}
static void ckt_destroy(void *b)
{
    struct ckt *c = b;
    for (unsigned i = 0; i < c->n; i++) free(c->rounds[i]);
    free(c->rounds);
    free(c);
}

/* ---- MCS: a 4-ary arrival tree, binary wake-up tree ------------------------------ */
struct ckmcs { ck_barrier_mcs_t *b; unsigned n; };
struct ckmcs_ts { ck_barrier_mcs_state_t s; } __attribute__((aligned(64)));

static void *ckmcs_create(unsigned n, void (*fn)(void *), void *arg)
{
    (void)fn; (void)arg;
    struct ckmcs *c = xcalloc(1, sizeof *c);
    c->n = n;
    c->b = aligned_alloc(64, ((n * sizeof *c->b + 63) / 64) * 64);
    if (!c->b) abort();
    ck_barrier_mcs_init(c->b, n);
    return c;
}
static void *ckmcs_ts_new(void *b, unsigned tid)
{
    (void)tid;
    struct ckmcs_ts *t = aligned_alloc(64, sizeof *t);
    if (!t) abort();
    ck_barrier_mcs_subscribe(((struct ckmcs *)b)->b, &t->s);
    return t;
}
static void ckmcs_aw(void *b, void *ts)
{
    ck_barrier_mcs(((struct ckmcs *)b)->b, &((struct ckmcs_ts *)ts)->s);
}
static void ckmcs_destroy(void *b)
{
    struct ckmcs *c = b;
    free(c->b);
    free(c);
}

static void free_plain(void *p) { free(p); }

const bimpl_t ck_impls[] = {
    { "ck-centralized", 0, 0, ckc_create, free_plain, ckc_ts_new, free_plain, ckc_aw, NULL, NULL },
    { "ck-combining", 0, 0, ckm_create, ckm_destroy, ckm_ts_new, free_plain, ckm_aw, NULL, NULL },
    { "ck-dissemination", 0, 0, ckd_create, ckd_destroy, ckd_ts_new, free_plain, ckd_aw, NULL, NULL },
    { "ck-tournament", 0, 0, ckt_create, ckt_destroy, ckt_ts_new, free_plain, ckt_aw, NULL, NULL },
    { "ck-mcs", 0, 0, ckmcs_create, ckmcs_destroy, ckmcs_ts_new, free_plain, ckmcs_aw, NULL, NULL },
};
const unsigned ck_nimpls = sizeof ck_impls / sizeof ck_impls[0];
