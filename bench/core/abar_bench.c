/*
 * abar_bench.c - abar against every CPU barrier rival, side by side in one
 * process run, same harness, same pinning, same timing (common.h).
 *
 * Scenarios (--only takes these names):
 *   floor       cache-line ping-pong between two pinned threads (round trip,
 *               one way): the physical floor of any barrier
 *   lat         arrive_and_wait latency per phase, T = 1..cores, pinned
 *   oversub     T = 2x and 4x cores, unpinned, wall-time bounded
 *   split       arrive / W ns work / wait against arrive_and_wait + W ns work,
 *               and the work alone on the same pinned team (no barrier): what
 *               W ns of calibrated work really takes with every thread busy
 *   completion  completion function: empty, and seed 001's psum (checked)
 *   cpuburn     CPU time (user+sys) burnt by a thread that waits 10 ms
 *   jitter      lat with one thread 100 µs late every 256 phases (a noisy
 *               host), T = 2, 4, 8, 16
 *   steal       lat under an emulated hypervisor that takes S CPUs on
 *               average in bursts of 1..5 ms, idle CPUs first (common.h,
 *               hv_start), T = a quarter, half, three quarters and all of
 *               the CPUs; S from ABAR_BENCH_STEAL_CPUS (a comma list,
 *               default 2); scenario rows named stealS
 * Every scenario also writes a hoststeal row: the steal the machine itself
 * showed while it ran (/proc/stat).
 * Every row: see common.h.
 */
#include "common.h"
#include "rivals.h"

#include <abar.h>

#include <sys/mman.h>
#include <sys/wait.h>

#define SCENARIOS "floor,lat,oversub,split,completion,cpuburn,jitter,steal"

static void fail(const char *impl, const char *what, int err)
{
    fprintf(stderr, "abar-bench: %s: %s: %s\n", impl, what, strerror(err));
    exit(1);
}

/* ---- abar, under each wait policy ------------------------------------------ */
struct abar_ts { abar_token_t t; } __attribute__((aligned(64)));

static void *abar_make(unsigned n, void (*fn)(void *), void *arg, unsigned flags)
{
    abar_t *b = aligned_alloc(64, sizeof *b);
    if (!b) abort();
    memset(b, 0, sizeof *b);
    abar_attr_t attr = { fn, arg, flags };
    int r = abar_init(b, n, &attr);
    if (r) fail("abar", "abar_init", r);
    return b;
}
static void *abar_mk_default(unsigned n, void (*fn)(void *), void *arg) { return abar_make(n, fn, arg, 0); }
static void *abar_mk_spin(unsigned n, void (*fn)(void *), void *arg) { return abar_make(n, fn, arg, ABAR_WAIT_SPIN); }
static void *abar_mk_park(unsigned n, void (*fn)(void *), void *arg) { return abar_make(n, fn, arg, ABAR_WAIT_PARK); }
static void abar_free(void *b)
{
    int r = abar_destroy(b);
    if (r) fail("abar", "abar_destroy", r);
    free(b);
}
static void *abar_ts_new(void *b, unsigned tid)
{
    (void)b; (void)tid;
    struct abar_ts *t = aligned_alloc(64, sizeof *t);
    if (!t) abort();
    return t;
}
static void plain_free(void *p) { free(p); }
static void abar_aw(void *b, void *ts)
{
    (void)ts;
    int r = abar_arrive_and_wait(b);
    if (r) fail("abar", "abar_arrive_and_wait", r);
}
static void abar_arr(void *b, void *ts)
{
    abar_token_t t = abar_arrive(b);
    if (abar_token_error(t)) fail("abar", "abar_arrive", abar_token_error(t));
    ((struct abar_ts *)ts)->t = t;
}
static void abar_wt(void *b, void *ts)
{
    int r = abar_wait(b, ((struct abar_ts *)ts)->t);
    if (r) fail("abar", "abar_wait", r);
}

/* ---- pthread_barrier_wait --------------------------------------------------- */
static void *pt_create(unsigned n, void (*fn)(void *), void *arg)
{
    (void)fn; (void)arg;
    pthread_barrier_t *b = aligned_alloc(64, 64 * ((sizeof *b + 63) / 64));
    if (!b) abort();
    int r = pthread_barrier_init(b, NULL, n);
    if (r) fail("pthread", "pthread_barrier_init", r);
    return b;
}
static void pt_destroy(void *b)
{
    pthread_barrier_destroy(b);
    free(b);
}
static void pt_aw(void *b, void *ts)
{
    (void)ts;
    int r = pthread_barrier_wait(b);
    if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD) fail("pthread", "pthread_barrier_wait", r);
}

/* ---- a plain C11 sense-reversing counter: what one shared counter costs ------- *
 * No features (no tokens, arrive_n, drop, cancel, completion, parking): the
 * floor for any single-counter algorithm, abar's included.  Two layouts:
 * c11-central keeps the generation word beside the count; c11-twoline puts
 * it on a line of its own (libgomp's layout: `awaited` apart from
 * `generation`), so the arrivals' RMWs do not invalidate the line every
 * waiter polls. */
struct c11c {
    _Atomic unsigned count __attribute__((aligned(64)));
    unsigned n;
    _Atomic unsigned gen_near;                             /* c11-central */
    _Atomic unsigned gen_far __attribute__((aligned(64))); /* c11-twoline */
};
static void *c11c_create(unsigned n, void (*fn)(void *), void *arg)
{
    (void)fn; (void)arg;
    struct c11c *c = aligned_alloc(64, sizeof *c);
    if (!c) abort();
    atomic_init(&c->count, n);
    atomic_init(&c->gen_near, 0);
    atomic_init(&c->gen_far, 0);
    c->n = n;
    return c;
}
static inline void c11_aw(struct c11c *c, _Atomic unsigned *gen)
{
    unsigned g = atomic_load_explicit(gen, memory_order_relaxed);
    /* acq_rel: the arrivals form a release sequence the last one acquires */
    if (atomic_fetch_sub_explicit(&c->count, 1, memory_order_acq_rel) == 1) {
        atomic_store_explicit(&c->count, c->n, memory_order_relaxed);
        atomic_store_explicit(gen, g + 1, memory_order_release);
    } else {
        while (atomic_load_explicit(gen, memory_order_acquire) == g) cpu_relax();
    }
}
static void c11c_aw(void *b, void *ts)
{
    (void)ts;
    c11_aw(b, &((struct c11c *)b)->gen_near);
}
static void c11t_aw(void *b, void *ts)
{
    (void)ts;
    c11_aw(b, &((struct c11c *)b)->gen_far);
}

#ifndef ABAR_BENCH_ABAR_TAG
#define ABAR_BENCH_ABAR_TAG "abar" /* a build against a variant of src/ renames its rows */
#endif

static const bimpl_t base_impls[] = {
    { ABAR_BENCH_ABAR_TAG "-default", 1, 1, abar_mk_default, abar_free, abar_ts_new, plain_free, abar_aw, abar_arr, abar_wt },
    { ABAR_BENCH_ABAR_TAG "-spin", 1, 1, abar_mk_spin, abar_free, abar_ts_new, plain_free, abar_aw, abar_arr, abar_wt },
    { ABAR_BENCH_ABAR_TAG "-park", 1, 1, abar_mk_park, abar_free, abar_ts_new, plain_free, abar_aw, abar_arr, abar_wt },
    { "pthread", 0, 0, pt_create, pt_destroy, NULL, NULL, pt_aw, NULL, NULL },
    { "c11-central", 0, 0, c11c_create, plain_free, NULL, NULL, c11c_aw, NULL, NULL },
    { "c11-twoline", 0, 0, c11c_create, plain_free, NULL, NULL, c11t_aw, NULL, NULL },
#ifdef ABAR_BENCH_HAVE_STD
    { "std-barrier", 1, 1, stdb_create, stdb_destroy, stdb_thread_state, stdb_thread_free,
      stdb_arrive_and_wait, stdb_arrive, stdb_wait },
    { "abar-cpp", 1, 1, abarcpp_create, abarcpp_destroy, abarcpp_thread_state, abarcpp_thread_free,
      abarcpp_arrive_and_wait, abarcpp_arrive, abarcpp_wait },
#endif
};

static const bimpl_t *impls[32];
static unsigned nimpls;
static bimpl_t tagged[3];
static __attribute__((unused)) char tagged_name[3][64];

/* ---- the team: T threads running one scenario on one barrier ----------------- */
enum mode { M_LAT, M_JOINED, M_SPLIT, M_WORK, M_COMPL, M_BURN, M_JITTER, M_PINGPONG, M_PINGPONG_PAUSE };

#define PSUM_DATA 4096
static uint64_t psum_data[PSUM_DATA];

struct team {
    const bimpl_t *im;
    void *b;
    unsigned T;
    int pinned, mode, psum;
    uint64_t witers;
    rctl_t rc;
    uint64_t *smem;                 /* psum: one cache line per thread */
    uint64_t acc;                   /* psum: written by the completion */
    _Atomic uint64_t pp __attribute__((aligned(64))); /* ping-pong line */
    unsigned reps;
    double burn[BENCH_MAX_ROUNDS];
    _Atomic unsigned started;       /* work: threads at the start gate */
    double (*own)[BENCH_MAX_ROUNDS]; /* work: each thread's ns per phase, by round */
};

struct targ { struct team *tm; unsigned tid; pthread_t th; };

static __attribute__((noinline)) void empty_completion(void *arg) { __asm__ __volatile__("" ::"r"(arg) : "memory"); }

static __attribute__((noinline)) void psum_completion(void *arg)
{
    struct team *tm = arg;
    uint64_t s = 0;
    for (unsigned t = 0; t < tm->T; t++) s += tm->smem[t * 8];
    tm->acc += s;
}

static inline void pp_await(_Atomic uint64_t *line, uint64_t v, int pause)
{
    while (atomic_load_explicit(line, memory_order_acquire) != v)
        if (pause) cpu_relax();
}

static void *worker(void *p)
{
    struct targ *a = p;
    struct team *tm = a->tm;
    if (tm->pinned) steal_register(a->tid);
    const bimpl_t *im = tm->im;
    const unsigned tid = a->tid;
    void *b = tm->b;
    void *ts = im && im->ts_new ? im->ts_new(b, tid) : NULL;
    rctl_t *rc = &tm->rc;
    uint64_t w = tm->witers, gk = 0;

    switch (tm->mode) {
    case M_LAT:
        RCTL_LOOP(rc, tid, im->aw(b, ts));
        break;
    case M_JOINED:
        RCTL_LOOP(rc, tid, (im->aw(b, ts), work_spin(w)));
        break;
    case M_SPLIT:
        RCTL_LOOP(rc, tid, (im->arrive(b, ts), work_spin(w), im->wait(b, ts)));
        break;
    case M_WORK: {
        /* the work alone: no barrier, so a gate first (every thread busy from
         * the first round on, as under a barrier) */
        atomic_fetch_add_explicit(&tm->started, 1, memory_order_acq_rel);
        while (atomic_load_explicit(&tm->started, memory_order_acquire) < tm->T) cpu_relax();
        double *own = tm->own[tid];
        RCTL_LOOP_EACH(rc, tid, own, work_spin(w));
        break;
    }
    case M_COMPL: {
        void (*fn)(void *) = tm->psum ? psum_completion : empty_completion;
        uint64_t *slot = &tm->smem[tid * 8];
        const unsigned T = tm->T;
        /* acc is read after the previous phase's completion, written by the next */
        if (im->completion)
            RCTL_LOOP(rc, tid, (*slot = psum_data[(gk * T + tid) % PSUM_DATA] + tm->acc, gk++, im->aw(b, ts)));
        else
            RCTL_LOOP(rc, tid, (*slot = psum_data[(gk * T + tid) % PSUM_DATA] + tm->acc, gk++, im->aw(b, ts),
                                tid == 0 ? fn(tm) : (void)0, im->aw(b, ts)));
        break;
    }
    case M_BURN:
        /* thread 1 arrives 10 ms late; thread 0's CPU time across its wait */
        for (unsigned i = 0; i <= tm->reps; i++) {
            im->aw(b, ts);
            if (tid == 0) {
                uint64_t c0 = thread_cpu_ns();
                im->aw(b, ts);
                if (i > 0) tm->burn[i - 1] = (double)(thread_cpu_ns() - c0);
            } else if (tid == 1) {
                sleep_ns(10000000);
                im->aw(b, ts);
            } else {
                im->aw(b, ts);
            }
        }
        break;
    case M_JITTER: {
        /* every JITTER_EVERY-th phase one thread, each in turn, is late by
         * JITTER_NS (busy, as a vCPU its host preempts) */
        const uint64_t T = tm->T;
        RCTL_LOOP(rc, tid, (++gk % JITTER_EVERY == 0 && gk / JITTER_EVERY % T == tid ? busy_ns(JITTER_NS)
                                                                                    : (void)0,
                            im->aw(b, ts)));
        break;
    }
    case M_PINGPONG:
    case M_PINGPONG_PAUSE: {
        /* round trip: 0 writes odd, 1 answers with the next even value */
        const int pause = tm->mode == M_PINGPONG_PAUSE;
        uint64_t v = 0;
        if (tid == 0)
            RCTL_LOOP(rc, tid, (atomic_store_explicit(&tm->pp, ++v, memory_order_release),
                                pp_await(&tm->pp, ++v, pause)));
        else
            RCTL_LOOP(rc, tid, (pp_await(&tm->pp, ++v, pause),
                                atomic_store_explicit(&tm->pp, ++v, memory_order_release)));
        break;
    }
    }
    if (ts) im->ts_free(ts);
    return NULL;
}

static void run_team(struct team *tm)
{
    struct targ *a = calloc(tm->T, sizeof *a);
    if (!a) abort();
    for (unsigned i = 0; i < tm->T; i++) {
        pthread_attr_t at;
        pthread_attr_init(&at);
        cpu_set_t set;
        if (tm->pinned) {
            CPU_ZERO(&set);
            CPU_SET(bench_cpus[i % bench_ncpus], &set);
        } else {
            set = bench_allowed;
        }
        pthread_attr_setaffinity_np(&at, sizeof set, &set);
        a[i].tm = tm;
        a[i].tid = i;
        int r = pthread_create(&a[i].th, &at, worker, &a[i]);
        if (r) die("pthread_create", r);
        pthread_attr_destroy(&at);
    }
    for (unsigned i = 0; i < tm->T; i++) pthread_join(a[i].th, NULL);
    free(a);
}

static struct team *team_new(const bimpl_t *im, unsigned T, int pinned, int mode, const bopts_t *o,
                             uint64_t cap_ns)
{
    struct team *tm = aligned_alloc(64, sizeof *tm);
    if (!tm) abort();
    memset(tm, 0, sizeof *tm);
    tm->im = im;
    tm->T = T;
    tm->pinned = pinned;
    tm->mode = mode;
    rctl_init(&tm->rc, o->warm, o->rounds, o->round_ns, cap_ns);
    return tm;
}

/* What abar's wait policy did during a row (src/core/policy.h, the core's
 * own count, a lab hook outside the public API): one "policy" row for
 * each kind of event that happened, param "SCEN:KIND", the count as the
 * value.  Rows where nothing happened (every rival's, and every quiet
 * row of abar's) print none. */
enum { T_N = 5 };
void abar__policy_tally(uint64_t out[T_N]);
static const char *const tally_name[T_N] = { "signs", "unheard", "stretches", "ended-early", "unpaid" };

static void policy_rows(const char *scen, const char *impl, unsigned T, const uint64_t a[T_N], const uint64_t b[T_N])
{
    for (int k = 0; k < T_N; k++) {
        if (b[k] == a[k]) continue;
        char param[64];
        snprintf(param, sizeof param, "%s:%s", scen, tally_name[k]);
        const double v = (double)(b[k] - a[k]);
        stats_t st = { v, v, v, 1 };
        row("policy", impl, T, param, st, 0, "count", "");
    }
}

static void measure(const char *scen, const bimpl_t *im, unsigned T, int pinned, const bopts_t *o,
                    uint64_t cap_ns)
{
    struct team *tm = team_new(im, T, pinned, M_LAT, o, cap_ns);
    uint64_t t0[T_N], t1[T_N];
    abar__policy_tally(t0);
    tm->b = im->create(T, NULL, NULL);
    tm->rc.start_ns = now_ns();
    run_team(tm);
    im->destroy(tm->b);
    abar__policy_tally(t1);
    rctl_row(&tm->rc, scen, im->name, T, "-");
    policy_rows(scen, im->name, T, t0, t1);
    free(tm);
}

/* ---- scenarios ------------------------------------------------------------------ */
static void scen_floor(const bopts_t *o)
{
    if (bench_ncpus < 2) return;
    for (int pause = 0; pause <= 1; pause++) {
        struct team *tm = team_new(NULL, 2, 1, pause ? M_PINGPONG_PAUSE : M_PINGPONG, o, o->cap_ns);
        run_team(tm);
        const char *name = pause ? "pingpong-pause" : "pingpong";
        rctl_row(&tm->rc, "floor", name, 2, "rt");
        stats_t st = stats_of(tm->rc.per_phase, tm->rc.nrec);
        st.med /= 2; st.min /= 2; st.max /= 2;
        row("floor", name, 2, "oneway", st, tm->rc.phases, "ns/phase", tm->rc.capped ? "lb" : "");
        free(tm);
    }
}

/* The latency table, the one the headline ratios come from.  The host's
 * speed drifts (a VM's vCPUs move between cores; a row measured a few
 * seconds after another can be a fifth faster or slower), so each T is
 * measured in LAT_PASSES passes over every implementation, a share of the
 * rounds each, and a row's figures are over the rounds of all its passes:
 * every row of a T saw the same stretches of the host's time.  Each pass
 * takes the implementations in another order (lat_order), so that no row
 * is always the first of a pass or always follows the same one.
 *
 * Each pass runs in a child process of its own (fork), so that each pass
 * puts the barrier in other physical memory.  On a mesh CPU a line's
 * transfers go through its home (the L3 slice its physical address hashes
 * to), and at T = 3, 4 the same barrier on the same CPUs takes 1.04-1.47x
 * as long at its slowest of 16 addresses as at its fastest, by address
 * alone (bench/labs/homelab.c; docs/lab/placement.md).
 * In one process a row was one draw of that lottery, and "the fastest
 * rival" the best of nine draws.  A child writes the barrier, so its pages
 * are copied to new frames: its row's median is over LAT_PASSES
 * placements.  With 4, two rows of the same code (abar-default and
 * abar-spin, whose waits at T = 3, 4 end in the same first spin) still
 * differed by 0.91-1.13x there within a run (five runs); with 8, by
 * 0.95-1.04x (six runs; docs/lab/runs.md, "Eight placements a row", and
 * docs/bench.md, "The table at 63b75c2").  The rounds come back through a shared mapping. */
#define LAT_PASSES 8u
struct lat_acc { double v[BENCH_MAX_ROUNDS]; unsigned n; uint64_t phases; int capped; uint64_t tally[T_N]; };

static void lat_pass(const bimpl_t *im, unsigned T, unsigned per, const bopts_t *o, unsigned passes,
                     struct lat_acc *acc)
{
    struct team *tm = team_new(im, T, 1, M_LAT, o, o->cap_ns / passes);
    rctl_init(&tm->rc, o->warm, per, o->round_ns, o->cap_ns / passes);
    uint64_t t0[T_N], t1[T_N];
    abar__policy_tally(t0);
    tm->b = im->create(T, NULL, NULL);
    tm->rc.start_ns = now_ns();
    run_team(tm);
    im->destroy(tm->b);
    abar__policy_tally(t1);
    for (int k = 0; k < T_N; k++) acc->tally[k] += t1[k] - t0[k];
    for (unsigned r = 0; r < tm->rc.nrec && acc->n < BENCH_MAX_ROUNDS; r++)
        acc->v[acc->n++] = tm->rc.per_phase[r];
    acc->phases += tm->rc.phases;
    acc->capped |= tm->rc.capped;
    free(tm);
}

/* Which implementation pass p runs j-th: the list rotated by p / 2 steps
 * of a (passes / 2)-th of its length, forwards in even passes and
 * backwards in odd ones (8 passes: rotated by 0, 1/4, 1/2, 3/4, each way). */
static unsigned lat_order(unsigned p, unsigned passes, unsigned j)
{
    const unsigned k = (p / 2) * nimpls / ((passes + 1) / 2);
    return p % 2 ? (k + nimpls - 1 - j) % nimpls : (k + j) % nimpls;
}

static void scen_lat(const bopts_t *o)
{
    const unsigned passes = o->quick ? 1 : LAT_PASSES;
    const unsigned per = (o->rounds + passes - 1) / passes;
    struct lat_acc *acc = mmap(NULL, nimpls * sizeof *acc, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                               -1, 0);
    if (acc == MAP_FAILED) die("mmap", errno);
    /* ABAR_BENCH_LAT_MIN=N: only the rows from T = N on (a lab's shortcut) */
    const char *from = getenv("ABAR_BENCH_LAT_MIN");
    const unsigned tmin = from ? (unsigned)atoi(from) : 1;
    for (unsigned T = 1; T; T = lat_next_t(T, o->max_threads)) {
        if (T < tmin) continue;
        memset(acc, 0, nimpls * sizeof *acc);
        for (unsigned p = 0; p < passes; p++)
            for (unsigned j = 0; j < nimpls; j++) {
                const unsigned i = lat_order(p, passes, j);
                fflush(NULL); /* nothing buffered for the child to write twice */
                const pid_t pid = passes > 1 ? fork() : -1;
                if (pid == 0) {
                    lat_pass(impls[i], T, per, o, passes, &acc[i]);
                    _exit(0);
                }
                if (pid < 0) { /* one pass, or fork refused: here, at this process's address */
                    lat_pass(impls[i], T, per, o, passes, &acc[i]);
                    continue;
                }
                int st;
                while (waitpid(pid, &st, 0) < 0)
                    if (errno != EINTR) die("waitpid", errno);
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                    fprintf(stderr, "abar-bench: lat %s T=%u: the pass's process failed\n", impls[i]->name, T);
                    exit(1);
                }
            }
        for (unsigned i = 0; i < nimpls; i++) {
            row("lat", impls[i]->name, T, "-", stats_of(acc[i].v, acc[i].n), acc[i].phases, "ns/phase",
                acc[i].capped ? "lb" : "");
            const uint64_t zero[T_N] = { 0 };
            policy_rows("lat", impls[i]->name, T, zero, acc[i].tally);
        }
    }
    munmap(acc, nimpls * sizeof *acc);
}

/* A noisy host: the latency loop with one thread JITTER_NS late every
 * JITTER_EVERY phases (each thread in turn; common.h; abar-bench-omp runs
 * the same for the OpenMP barriers).  A barrier that absorbs the
 * hiccup costs the lat row plus JITTER_NS / JITTER_EVERY (390 ns) a
 * phase; one whose waiters park on it pays their wake-ups as well. */
static void scen_jitter(const bopts_t *o)
{
    static const unsigned Ts[] = {2, 4, 8, 16};
    char param[32];
    snprintf(param, sizeof param, "%uus/%u", JITTER_NS / 1000, JITTER_EVERY);
    for (unsigned k = 0; k < sizeof Ts / sizeof Ts[0]; k++) {
        if (Ts[k] > o->max_threads) break;
        for (unsigned i = 0; i < nimpls; i++) {
            struct team *tm = team_new(impls[i], Ts[k], 1, M_JITTER, o, o->cap_ns);
            tm->b = impls[i]->create(Ts[k], NULL, NULL);
            tm->rc.start_ns = now_ns();
            run_team(tm);
            impls[i]->destroy(tm->b);
            rctl_row(&tm->rc, "jitter", impls[i]->name, Ts[k], param);
            free(tm);
        }
    }
}

/* A host that takes CPUs: the latency loop while the thieves of common.h
 * (hv_start) take S CPUs-worth in bursts of 1..5 ms, idle CPUs first.  Each
 * row has its own thieves, started with it; a stealgot row beside it says
 * how many CPUs-worth they really took while it ran. */
static void steal_ts(unsigned max, unsigned ts[4], unsigned *n)
{
    *n = 0;
    for (unsigned q = 1; q <= 4; q++) {
        unsigned T = max * q / 4;
        if (T < 2 || (*n && ts[*n - 1] == T)) continue;
        ts[(*n)++] = T;
    }
}

static void scen_steal(const bopts_t *oo)
{
    const bopts_t so = steal_opts(oo), *o = &so;
    const char *e = getenv("ABAR_BENCH_STEAL_CPUS");
    char list[128];
    snprintf(list, sizeof list, "%s", e && *e ? e : "2");
    unsigned ts[4], nts;
    steal_ts(o->max_threads, ts, &nts);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const double S = atof(tok);
        if (S <= 0) continue;
        char scen[32];
        {
            const char *m = getenv("ABAR_BENCH_STEAL_MODE");
            snprintf(scen, sizeof scen, "steal%s%s", m && strcmp(m, "nice") == 0 ? "nice" : "", tok);
        }
        const hsteal_t h0 = hsteal_now();
        for (unsigned k = 0; k < nts; k++)
            for (unsigned i = 0; i < nimpls; i++) {
                hv_start(S);
                measure(scen, impls[i], ts[k], 1, o, o->cap_ns);
                const double got = hv_stop();
                stats_t st = { got, got, got, 1 };
                row("stealgot", impls[i]->name, ts[k], scen, st, 0, "cpus", "");
            }
        hsteal_row(program_invocation_short_name, scen, h0);
    }
}

static void scen_oversub(const bopts_t *o)
{
    for (unsigned f = 2; f <= 4; f += 2)
        for (unsigned i = 0; i < nimpls; i++)
            measure("oversub", impls[i], f * bench_ncpus, 0, o, o->oversub_cap_ns);
}

/* The work of the split scenario alone: the same team of T pinned threads,
 * the same work loop and rounds, no barrier.  Rows "work", "work:W" (thread
 * 0's ns per phase, as every other row) and "work-slowest:W" (each round:
 * the slowest thread's ns per phase, what a barrier would wait for). */
static void measure_work(unsigned T, unsigned W, const bopts_t *o)
{
    struct team *tm = team_new(NULL, T, 1, M_WORK, o, o->cap_ns);
    tm->witers = work_iters(W);
    tm->own = calloc(T, sizeof *tm->own);
    if (!tm->own) abort();
    tm->rc.start_ns = now_ns();
    run_team(tm);
    char param[32];
    snprintf(param, sizeof param, "work:%u", W);
    rctl_row(&tm->rc, "split", "work", T, param);
    unsigned nrounds = atomic_load(&tm->rc.last_round) + 1, n = 0;
    double slow[BENCH_MAX_ROUNDS];
    for (unsigned r = 0; r < nrounds; r++) {
        if (!rctl_kept(&tm->rc, r, nrounds)) continue;
        slow[n] = 0;
        for (unsigned t = 0; t < T; t++)
            if (tm->own[t][r] > slow[n]) slow[n] = tm->own[t][r];
        n++;
    }
    /* each thread's median over the kept rounds, to stderr (which CPUs are slow) */
    fprintf(stderr, "abar-bench: split work:%u T=%u, ns/phase by thread (cpu):", W, T);
    for (unsigned t = 0; t < T; t++) {
        double v[BENCH_MAX_ROUNDS];
        unsigned m = 0;
        for (unsigned r = 0; r < nrounds; r++)
            if (rctl_kept(&tm->rc, r, nrounds)) v[m++] = tm->own[t][r];
        fprintf(stderr, " %.0f(%d)", stats_of(v, m).med, bench_cpus[t % bench_ncpus]);
    }
    fputc('\n', stderr);
    snprintf(param, sizeof param, "work-slowest:%u", W);
    row("split", "work", T, param, stats_of(slow, n), tm->rc.phases, "ns/phase", tm->rc.capped ? "lb" : "");
    free(tm->own);
    free(tm);
}

static void scen_split(const bopts_t *o)
{
    static const unsigned W[] = { 0, 100, 500, 2000, 10000 };
    unsigned T = o->max_threads;
    for (unsigned wi = 0; wi < 5; wi++) {
        measure_work(T, W[wi], o);
        for (unsigned i = 0; i < nimpls; i++)
            for (int split = 0; split <= impls[i]->split; split++) {
                struct team *tm = team_new(impls[i], T, 1, split ? M_SPLIT : M_JOINED, o, o->cap_ns);
                tm->witers = work_iters(W[wi]);
                tm->b = impls[i]->create(T, NULL, NULL);
                tm->rc.start_ns = now_ns();
                run_team(tm);
                impls[i]->destroy(tm->b);
                char param[32];
                snprintf(param, sizeof param, "%s:%u", split ? "split" : "joined", W[wi]);
                rctl_row(&tm->rc, "split", impls[i]->name, T, param);
                free(tm);
            }
    }
}

static uint64_t psum_expect(unsigned T, uint64_t phases)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < phases; i++) {
        uint64_t s = 0;
        for (unsigned t = 0; t < T; t++) s += psum_data[(i * T + t) % PSUM_DATA] + acc;
        acc += s;
    }
    return acc;
}

static void scen_completion(const bopts_t *o)
{
    unsigned T = o->max_threads;
    for (int psum = 0; psum <= 1; psum++)
        for (unsigned i = 0; i < nimpls; i++) {
            const bimpl_t *im = impls[i];
            struct team *tm = team_new(im, T, 1, M_COMPL, o, o->cap_ns);
            tm->psum = psum;
            tm->smem = aligned_alloc(64, (size_t)T * 64);
            if (!tm->smem) abort();
            memset(tm->smem, 0, (size_t)T * 64);
            tm->b = im->create(T, psum ? psum_completion : empty_completion, tm);
            tm->rc.start_ns = now_ns();
            run_team(tm);
            im->destroy(tm->b);
            if (psum && tm->acc != psum_expect(T, tm->rc.total_phases)) {
                fprintf(stderr, "abar-bench: %s: psum WRONG after %llu phases\n", im->name,
                        (unsigned long long)tm->rc.total_phases);
                exit(1);
            }
            stats_t st = stats_of(tm->rc.per_phase, tm->rc.nrec);
            char flags[16];
            snprintf(flags, sizeof flags, "%s%s%s", tm->rc.capped ? "lb" : "",
                     tm->rc.capped && !im->completion ? ";" : "", im->completion ? "" : "emul");
            row("completion", im->name, T, psum ? "psum" : "empty", st, tm->rc.phases, "ns/phase", flags);
            free(tm->smem);
            free(tm);
        }
}

static void scen_cpuburn(const bopts_t *o)
{
    int pinned = bench_ncpus >= 2;
    for (unsigned i = 0; i < nimpls; i++) {
        struct team *tm = team_new(impls[i], 2, pinned, M_BURN, o, o->cap_ns);
        tm->reps = o->burn_reps;
        tm->b = impls[i]->create(2, NULL, NULL);
        run_team(tm);
        impls[i]->destroy(tm->b);
        row("cpuburn", impls[i]->name, 2, "wait10ms", stats_of(tm->burn, tm->reps), tm->reps, "cpu_ns", "");
        free(tm);
    }
}

int main(int argc, char **argv)
{
    bopts_t o = parse_opts(argc, argv, SCENARIOS);
    for (unsigned i = 0; i < PSUM_DATA; i++) psum_data[i] = (i * 0x9e3779b97f4a7c15u) >> 54;
    for (unsigned i = 0; i < sizeof base_impls / sizeof base_impls[0]; i++) impls[nimpls++] = &base_impls[i];
#ifdef ABAR_BENCH_HAVE_CK
    for (unsigned i = 0; i < ck_nimpls; i++) impls[nimpls++] = &ck_impls[i];
#endif
#ifdef ABAR_BENCH_PTHREAD_ONLY
    /* abar-bench-pthread (dynamically linked): pthread_barrier_wait alone,
     * its row named by --tag; run_all.sh runs it as it is and under
     * LD_PRELOAD=libabar-pthread.so (the drop-in rows) */
    for (unsigned i = 0; i < nimpls; i++)
        if (strcmp(impls[i]->name, "pthread") == 0) tagged[0] = *impls[i];
    tagged[0].name = o.tag ? o.tag : "pthread";
    impls[0] = &tagged[0];
    nimpls = 1;
#else
#ifdef ABAR_BENCH_ABAR_ONLY
    o.abar_only = 1; /* a variant build: its abar rows only */
#endif
    if (o.abar_only) nimpls = 3;
    if (o.tag) /* the first three are abar's */
        for (unsigned i = 0; i < 3; i++) {
            tagged[i] = *impls[i];
            snprintf(tagged_name[i], sizeof tagged_name[i], "%s%s", o.tag, strchr(impls[i]->name, '-'));
            tagged[i].name = tagged_name[i];
            impls[i] = &tagged[i];
        }
#endif
    static const struct { const char *name; void (*fn)(const bopts_t *); } scens[] = {
        { "floor", scen_floor }, { "lat", scen_lat }, { "split", scen_split },
        { "completion", scen_completion }, { "cpuburn", scen_cpuburn }, { "jitter", scen_jitter },
        { "oversub", scen_oversub }, { "steal", scen_steal },
    };
    for (unsigned k = 0; k < sizeof scens / sizeof scens[0]; k++) {
        if (!scen_on(&o, scens[k].name)) continue;
        const hsteal_t h0 = hsteal_now();
        scens[k].fn(&o);
        if (strcmp(scens[k].name, "steal") != 0) hsteal_row(program_invocation_short_name, scens[k].name, h0);
    }
    if (bench_csv) fclose(bench_csv);
    return 0;
}
