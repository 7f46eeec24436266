/*
 * stress.c - long stress of the abar host barrier.
 *
 *   stress [-p PHASES] [-t THREADS] [-w default|spin|park|all] [-s SEED] [-T SECONDS] [-C] [-q]
 *
 * Runs PHASES phases (default 10^8) under each wait policy asked for (all:
 * PHASES/3 each), with THREADS participants (default 4), in epochs on the
 * same memory (init, a few thousand phases, an ending, destroy, init again).
 * Every phase each thread does one of: arrive + wait, arrive_and_wait,
 * arrive + test until done, arrive + wait_until (a short deadline, retried),
 * abar_current + wait while a partner counts two with arrive_n(2) (even
 * phases only: a thread is then at most two phases ahead of another).  An epoch
 * ends normally, by a cascade of arrive_and_drop (the barrier finishes: a
 * wait on a later phase says ECANCELED), or by abar_cancel from one thread
 * mid-phase (every wait returns 0 or ECANCELED, nothing hangs).
 *
 * The invariant, checked by every thread every phase: its wait returned 0
 * only after the completion of its phase ran exactly once (the completion
 * counts completions and checks that every arrival of the phase was made),
 * its token names that phase, and every participant's write made before
 * its arrival is visible.  Any violation: a message and exit 1.  A hang is
 * caught by a watchdog (no phase for 30 s: exit 2).  Prints phases/s.
 * -C runs without a completion function (a barrier of two then takes the
 * pair path, arrive.c): a release is then checked by the phase count and
 * the payloads alone.
 * -T stops each policy at the end of the epoch running when SECONDS have
 * passed since it began (the phases then run are reported).
 */
#define _GNU_SOURCE
#include <abar.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXT 64

static abar_t bar;
static unsigned nthreads;
static uint64_t seed = 1;
static uint64_t epoch_len;                 /* phases in this epoch */
static int ending;                         /* 0 normal, 1 drops, 2 cancel */
static uint64_t cancel_phase;
static unsigned cancel_thread;

static _Atomic uint64_t arrivals[4];       /* arrivals made, by phase mod 4 */
static _Atomic uint64_t completed;         /* written by the completion only; atomic: a
                                            * pair-phase waiter (it does not arrive) reads
                                            * it while the next completion may write it */
static int payload[4][MAXT];              /* by phase mod 4: a thread is at most 2 phases ahead */
static _Atomic int failed;
static _Atomic uint64_t progress;          /* for the watchdog */
static uint64_t total_phases;
static int no_completion;                  /* -C */
static double time_limit;                  /* -T: seconds a policy may run; 0: none */

#define FAILF(...)                                                          \
    do {                                                                    \
        if (atomic_exchange(&failed, 1) == 0) {                             \
            fprintf(stderr, "stress: FAIL: " __VA_ARGS__);                  \
            fputc('\n', stderr);                                            \
        }                                                                   \
        exit(1);                                                            \
    } while (0)

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

/* Participants of phase ph: all, less one a phase in a drop ending. */
static uint64_t alive_at(uint64_t ph)
{
    uint64_t d = epoch_len - nthreads; /* first phase with a drop */
    return ending == 1 && ph > d ? nthreads - (ph - d) : nthreads;
}

static void on_complete(void *arg)
{
    (void)arg;
    uint64_t ph = completed;
    uint64_t a = atomic_exchange_explicit(&arrivals[ph & 3], 0, memory_order_relaxed);
    if (a != alive_at(ph))
        FAILF("phase %llu completed with %llu of %llu arrivals", (unsigned long long)ph,
              (unsigned long long)a, (unsigned long long)alive_at(ph));
    completed = ph + 1;
}

static struct timespec soon(long ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += ns;
    while (ts.tv_nsec >= 1000000000) { ts.tv_nsec -= 1000000000; ts.tv_sec++; }
    return ts;
}

/* Waits for token t in the way `how` says; returns 0, ECANCELED or fails. */
static int wait_how(abar_token_t t, unsigned how)
{
    int r;
    switch (how) {
    case 0: return abar_wait(&bar, t);
    case 1:
        while ((r = abar_test(&bar, t)) == EBUSY) {}
        return r;
    default: {
        struct timespec ts = soon(200000); /* 0.2 ms, retried */
        while ((r = abar_wait_until(&bar, t, &ts)) == ETIMEDOUT) ts = soon(200000);
        return r;
    }
    }
}

struct targ { unsigned id; pthread_barrier_t *epoch_gate; };

static void *worker(void *p)
{
    struct targ *a = p;
    const unsigned id = a->id;
    for (;;) {
        pthread_barrier_wait(a->epoch_gate);        /* epoch set up by thread 0 */
        if (epoch_len == 0) return NULL;            /* done */
        const uint64_t d = epoch_len - nthreads; /* drop ending: thread n-1-(ph-d) drops at ph */
        for (uint64_t ph = 0;; ph++) {
            uint64_t h = mix(seed ^ (ph * 0x100000001b3u));
            int drop_now = ending == 1 && ph >= d && id == nthreads - 1 - (unsigned)(ph - d);
            int pair = alive_at(ph) == nthreads && (h & 7) == 0 && ph % 2 == 0 && !(ending == 1 && ph >= d);
            int canceller = ending == 2 && ph == cancel_phase && id == cancel_thread;
            unsigned how = (unsigned)((h >> (8 + 3 * id)) % 5);
            int r;
            abar_token_t t;
            if (!(pair && id == 1)) payload[ph & 3][id] = (int)ph;
            if (pair && id == 0) payload[ph & 3][1] = (int)ph;   /* we arrive for thread 1 */
            if (drop_now) {
                atomic_fetch_add_explicit(&arrivals[ph & 3], 1, memory_order_relaxed);
                r = abar_arrive_and_drop(&bar);
                if (r != 0) FAILF("arrive_and_drop: %d", r);
                if (id == 0) {
                    /* the last drop finished the barrier: later phases refused */
                    if (abar_phase(&bar) != epoch_len) FAILF("phase after the last drop");
                    t = abar_current(&bar);
                    if (abar_wait(&bar, t) != ECANCELED) FAILF("wait after the last drop");
                    if (abar_token_error(abar_arrive(&bar)) != ECANCELED) FAILF("arrive after the last drop");
                    atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
                }
                break;
            }
            if (pair && id == 1) {
                /* thread 0 counts for us with arrive_n(2); we wait without arriving */
                t = abar_current(&bar);
                r = abar_token_error(t);
                if (r == 0 && t.raw == ph) r = wait_how(t, how % 3);
                else if (r == 0 && t.raw < ph) FAILF("abar_current went back");
                /* phase ph is complete, its release perhaps still being
                 * published (abar_current names ph+1 from the state word
                 * already): a token for ph waits that out */
                else if (r == 0) r = wait_how(abar_token_at(&bar, ph), how % 3);
            } else if (how == 4 && !pair && !canceller) {
                atomic_fetch_add_explicit(&arrivals[ph & 3], 1, memory_order_relaxed);
                r = abar_arrive_and_wait(&bar);
            } else {
                uint32_t n = pair && id == 0 ? 2 : 1;
                atomic_fetch_add_explicit(&arrivals[ph & 3], n, memory_order_relaxed);
                t = n == 2 ? abar_arrive_n(&bar, 2) : abar_arrive(&bar);
                r = abar_token_error(t);
                if (r == 0 && t.raw != ph) FAILF("token names phase %llu, not %llu",
                                                 (unsigned long long)t.raw, (unsigned long long)ph);
                if (canceller && abar_cancel(&bar) != 0) FAILF("cancel");
                if (r == 0) r = wait_how(t, how % 3);
            }
            if (r == ECANCELED && ending == 2) break;
            if (r != 0) FAILF("thread %u phase %llu: wait returned %d", id, (unsigned long long)ph, r);
            /* the invariant: released only after the completion of ph, with
             * every participant's write visible */
            uint64_t c = no_completion ? abar_phase(&bar) : completed;
            if (c < ph + 1) FAILF("released from phase %llu before its completion (%llu done)",
                                  (unsigned long long)ph, (unsigned long long)c);
            for (unsigned j = 0; j < alive_at(ph); j++)
                if (payload[ph & 3][j] != (int)ph)
                    FAILF("phase %llu: thread %u's write not visible to thread %u "
                          "(saw %d; pair %d, how %u, ending %d)",
                          (unsigned long long)ph, j, id, payload[ph & 3][j], pair, how, ending);
            if (id == 0) atomic_fetch_add_explicit(&progress, 1, memory_order_relaxed);
            if (ending != 1 && ph + 1 == epoch_len) break;
        }
        pthread_barrier_wait(a->epoch_gate);        /* epoch over */
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *watchdog(void *p)
{
    (void)p;
    uint64_t last = (uint64_t)-1;
    for (;;) {
        sleep(30);
        uint64_t cur = atomic_load(&progress);
        if (cur == last) {
            fprintf(stderr, "stress: FAIL: no phase completed in 30 s (hang) at %llu\n",
                    (unsigned long long)cur);
            _exit(2);
        }
        last = cur;
    }
    return NULL;
}

static uint64_t run_policy(unsigned flags, uint64_t phases, const char *name, int quiet)
{
    pthread_t th[MAXT];
    struct targ args[MAXT];
    pthread_barrier_t gate;
    pthread_barrier_init(&gate, NULL, nthreads + 1);
    for (unsigned i = 0; i < nthreads; i++) {
        args[i] = (struct targ){ i, &gate };
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    abar_attr_t attr = { no_completion ? NULL : on_complete, NULL, flags };
    uint64_t done = 0, epochs = 0, cancels = 0, dropends = 0;
    double t0 = now_s();
    while (done < phases && !(time_limit > 0 && now_s() - t0 > time_limit)) {
        uint64_t h = mix(seed ^ 0xabcdefu ^ epochs);
        seed = mix(seed + epochs + 1);
        epoch_len = 1000 + h % 20000;
        if (epoch_len > phases - done + nthreads) epoch_len = phases - done + nthreads;
        if (epoch_len < nthreads + 2) epoch_len = nthreads + 2;
        ending = (h >> 32) % 8 == 0 ? 1 : (h >> 32) % 8 == 1 ? 2 : 0;
        cancel_phase = (h >> 40) % epoch_len;
        cancel_thread = (unsigned)((h >> 56) % nthreads);
        completed = 0;
        for (int i = 0; i < 4; i++) atomic_store(&arrivals[i], 0);
        int r = abar_init(&bar, nthreads, &attr);
        if (r != 0) FAILF("init: %d", r);
        pthread_barrier_wait(&gate);                /* go */
        pthread_barrier_wait(&gate);                /* epoch over */
        if (ending == 1) dropends++;
        if (ending == 2) cancels++;
        done += no_completion ? abar_phase(&bar) : completed;
        r = abar_destroy(&bar);
        if (r != 0) FAILF("destroy after the epoch: %d", r);
        epochs++;
    }
    double dt = now_s() - t0;
    epoch_len = 0;
    pthread_barrier_wait(&gate);
    for (unsigned i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&gate);
    if (!quiet)
        printf("stress: policy %-7s %12llu phases in %8.2f s: %10.0f phases/s "
               "(%llu epochs, %llu cancelled, %llu ended by drops)\n",
               name, (unsigned long long)done, dt, done / dt, (unsigned long long)epochs,
               (unsigned long long)cancels, (unsigned long long)dropends);
    return done;
}

int main(int argc, char **argv)
{
    uint64_t phases = 100000000;
    const char *pol = "all";
    int quiet = 0, opt;
    nthreads = 4;
    while ((opt = getopt(argc, argv, "p:t:w:s:T:Cq")) != -1) {
        switch (opt) {
        case 'p': phases = strtoull(optarg, NULL, 0); break;
        case 't': nthreads = (unsigned)atoi(optarg); break;
        case 'w': pol = optarg; break;
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'T': time_limit = strtod(optarg, NULL); break;
        case 'C': no_completion = 1; break;
        case 'q': quiet = 1; break;
        default:
            fprintf(stderr, "usage: stress [-p phases] [-t threads] [-w default|spin|park|all] [-s seed] [-T seconds] [-C]\n");
            return 64;
        }
    }
    if (nthreads < 2 || nthreads > MAXT) { fprintf(stderr, "stress: 2..%d threads\n", MAXT); return 64; }
    pthread_t wd;
    pthread_create(&wd, NULL, watchdog, NULL);
    pthread_detach(wd);
    static const struct { const char *name; unsigned flags; } pols[] = {
        { "default", 0 }, { "spin", ABAR_WAIT_SPIN }, { "park", ABAR_WAIT_PARK } };
    int all = strcmp(pol, "all") == 0, any = 0;
    double t0 = now_s();
    for (int i = 0; i < 3; i++) {
        if (!all && strcmp(pol, pols[i].name) != 0) continue;
        any = 1;
        total_phases += run_policy(pols[i].flags, all ? phases / 3 : phases, pols[i].name, quiet);
    }
    if (!any) { fprintf(stderr, "stress: unknown policy %s\n", pol); return 64; }
    double dt = now_s() - t0;
    printf("stress: PASS %llu phases, %u threads, %.2f s, %.0f phases/s, invariant checked every phase\n",
           (unsigned long long)total_phases, nthreads, dt, total_phases / dt);
    return 0;
}
