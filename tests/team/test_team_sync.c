/* test_team_sync.c - team and cluster barriers: every phase checked, seed
 * 004's collective rule, threads that leave early, abort. */
#include "harness.h"
#include <abar_team.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

static _Atomic int fail;       /* first failure code seen in a kernel */
static void failed(int code) { int z = 0; atomic_compare_exchange_strong(&fail, &z, code); }

static void launch(unsigned pool, unsigned teams, unsigned ts, unsigned cs, size_t shm,
                   abar_kernel_fn *k, void *arg, int want)
{
    CHECK_EQ(abar_pool_configure(pool, 0), 0);
    abar_launch_t cfg = { teams, ts, cs, shm };
    CHECK_EQ(abar_run(&cfg, k, arg), want);
    CHECK_EQ(atomic_load(&fail), 0);
}

/* ---- every phase: a thread sees all its peers' writes of that phase -------------- */

enum { PHASES = 300 };

/* Shared memory: one counter per thread of the team; phase i: each thread
 * stores i+1 in its own, syncs, then checks every counter of the team. */
static void team_phases(abar_thread_t *self, void *arg)
{
    int split = arg != NULL;
    _Atomic unsigned *c = abar_team_shared(self);
    unsigned me = abar_thread_rank(self), n = abar_team_size(self);
    for (unsigned i = 0; i < PHASES; i++) {
        atomic_store_explicit(&c[me], i + 1, memory_order_relaxed);
        int r;
        if (split) {
            abar_token_t t = abar_team_arrive(self);
            r = abar_team_wait(self, t);
        } else {
            r = abar_team_sync(self);
        }
        if (r) { failed(100 + r); return; }
        for (unsigned j = 0; j < n; j++)
            if (atomic_load_explicit(&c[j], memory_order_relaxed) != i + 1) { failed(2); return; }
        /* a second barrier so nobody writes phase i+2's value while a slow
         * peer still checks phase i+1 */
        if (abar_team_sync(self)) { failed(3); return; }
    }
}

TEST(team_sync_every_phase) { launch(4, 4, 4, 1, 64, team_phases, NULL, 0); }
TEST(team_arrive_wait_every_phase) { launch(4, 4, 4, 1, 64, team_phases, (void *)1, 0); }
TEST(team_sync_many_teams_waves) { launch(6, 9, 3, 1, 64, team_phases, NULL, 0); }

/* Cluster phases: each thread writes its slot in its team's shared memory,
 * cluster barrier, then reads every slot of every team of the cluster. */
static void cluster_phases(abar_thread_t *self, void *arg)
{
    int split = arg != NULL;
    _Atomic unsigned *c = abar_team_shared(self);
    unsigned me = abar_thread_rank(self), n = abar_team_size(self), cs = abar_cluster_size(self);
    for (unsigned i = 0; i < PHASES; i++) {
        atomic_store_explicit(&c[me], i + 1, memory_order_relaxed);
        int r;
        if (split) {
            abar_token_t t = abar_cluster_arrive(self);
            if (abar_token_error(t)) { failed(10 + abar_token_error(t)); return; }
            r = abar_cluster_wait(self, t);
        } else {
            r = abar_cluster_sync(self);
        }
        if (r) { failed(100 + r); return; }
        for (unsigned t = 0; t < cs; t++) {
            _Atomic unsigned *p = abar_cluster_map_shared(self, c, t);
            for (unsigned j = 0; j < n; j++)
                if (atomic_load_explicit(&p[j], memory_order_relaxed) != i + 1) { failed(2); return; }
        }
        if (abar_cluster_sync(self)) { failed(3); return; }
    }
}

TEST(cluster_sync_every_phase) { launch(6, 3, 2, 3, 64, cluster_phases, NULL, 0); }
TEST(cluster_arrive_wait_every_phase) { launch(6, 3, 2, 3, 64, cluster_phases, (void *)1, 0); }
TEST(cluster_one_thread_teams) { launch(4, 8, 1, 4, 64, cluster_phases, NULL, 0); }
TEST(cluster_of_one_team) { launch(4, 4, 2, 1, 64, cluster_phases, (void *)1, 0); }
TEST(cluster_waves) { launch(4, 8, 2, 2, 64, cluster_phases, NULL, 0); }

/* Team and cluster barriers are different groups: a team phase may run
 * while the thread's cluster arrival is pending, and the other way round. */
static void interleaved(abar_thread_t *self, void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++) {
        abar_token_t ct = abar_cluster_arrive(self);
        abar_token_t tt = abar_team_arrive(self);
        if (abar_token_error(ct) || abar_token_error(tt)) { failed(1); return; }
        if (abar_team_sync(self) != EALREADY) { failed(2); return; }
        if (abar_cluster_sync(self) != EALREADY) { failed(3); return; }
        if (i % 2) {
            if (abar_team_wait(self, tt) || abar_cluster_wait(self, ct)) { failed(4); return; }
        } else {
            if (abar_cluster_wait(self, ct) || abar_team_wait(self, tt)) { failed(5); return; }
        }
        if (abar_team_sync(self) || abar_cluster_sync(self)) { failed(6); return; }
    }
}

TEST(team_and_cluster_interleave) { launch(4, 2, 2, 2, 0, interleaved, NULL, 0); }

/* ---- seed 004's rule, checked per thread ------------------------------------------------ */

static void rule_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    /* a wait without an arrive */
    abar_token_t t0 = abar_team_arrive(self);
    if (abar_team_wait(self, t0)) { failed(1); return; }
    if (abar_team_wait(self, t0) != EINVAL) { failed(2); return; } /* consumed */

    abar_token_t t = abar_team_arrive(self);
    if (abar_token_error(t)) { failed(3); return; }
    abar_token_t t2 = abar_team_arrive(self);               /* a second arrive */
    if (abar_token_error(t2) != EINVAL) { failed(4); return; }
    if (abar_team_wait(self, t2) != EINVAL) { failed(5); return; }
    if (abar_team_sync(self) != EALREADY) { failed(6); return; }
    if (abar_team_wait(self, t0) != EINVAL) { failed(7); return; } /* an old token */
    abar_token_t forged = t;
    forged.raw ^= 0x5a5a;
    if (abar_team_wait(self, forged) != EINVAL) { failed(8); return; }
    if (abar_team_wait(self, t) != 0) { failed(9); return; } /* still pending: the right token works */

    /* the same for the cluster */
    abar_token_t c = abar_cluster_arrive(self);
    if (abar_token_error(c)) { failed(10); return; }
    if (abar_token_error(abar_cluster_arrive(self)) != EINVAL) { failed(11); return; }
    if (abar_cluster_sync(self) != EALREADY) { failed(12); return; }
    if (abar_team_wait(self, c) != EINVAL) { failed(13); return; }  /* a cluster token to the team */
    if (abar_cluster_wait(self, t) != EINVAL) { failed(14); return; } /* a team token to the cluster */
    if (abar_cluster_wait(self, c) != 0) { failed(15); return; }
    if (abar_cluster_wait(self, c) != EINVAL) { failed(16); return; }

    /* another thread's place, or none */
    if (abar_team_sync(NULL) != EINVAL || abar_cluster_sync(NULL) != EINVAL) { failed(17); return; }
    if (abar_token_error(abar_team_arrive(NULL)) != EINVAL ||
        abar_token_error(abar_cluster_arrive(NULL)) != EINVAL) { failed(18); return; }
    if (abar_team_wait(NULL, t) != EINVAL || abar_cluster_wait(NULL, c) != EINVAL) { failed(19); return; }
    if (abar_team_sync(self) || abar_cluster_sync(self)) { failed(20); return; } /* all consistent still */
}

TEST(collective_rule_errors) { launch(4, 2, 2, 2, 0, rule_kernel, NULL, 0); }

/* A place used from another thread is refused. */
static abar_thread_t *_Atomic other_self;
static _Atomic int other_r = -1;
static void *use_other(void *arg) { (void)arg; atomic_store(&other_r, abar_team_sync(atomic_load(&other_self))); return NULL; }
static void foreign_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    atomic_store(&other_self, self);
    pthread_t th;
    pthread_create(&th, NULL, use_other, NULL);
    pthread_join(th, NULL);
    if (abar_abort(NULL, 1) != EINVAL) failed(1);
}

TEST(place_from_another_thread)
{
    launch(1, 1, 1, 1, 0, foreign_kernel, NULL, 0);
    CHECK_EQ(atomic_load(&other_r), EINVAL);
}

/* ---- threads that leave the kernel early ------------------------------------------------- */

static void leave_early(abar_thread_t *self, void *arg)
{
    (void)arg;
    unsigned me = abar_thread_rank(self);
    if (me == 0) return;                 /* leaves at once */
    if (me == 1) { (void)abar_team_arrive(self); (void)abar_cluster_arrive(self); return; } /* leaves pending */
    for (int i = 0; i < 200; i++)
        if (abar_team_sync(self) || abar_cluster_sync(self)) { failed(1); return; }
}

/* A thread leaves with a cluster arrival pending while its team peer still
 * syncs the team: it must leave the team barrier before it waits for the
 * cluster phase (which needs the peer's arrival), or both would hang. */
static void leave_pending_cluster(abar_thread_t *self, void *arg)
{
    (void)arg;
    if (abar_thread_rank(self) == 0) { (void)abar_cluster_arrive(self); return; }
    for (int i = 0; i < 50; i++)
        if (abar_team_sync(self)) { failed(1); return; }
    for (int i = 0; i < 10; i++)
        if (abar_cluster_sync(self)) { failed(2); return; }
}

TEST(exit_with_pending_cluster_arrival) { launch(4, 2, 2, 2, 0, leave_pending_cluster, NULL, 0); }

TEST(early_exit_never_blocks_peers) { launch(8, 2, 4, 2, 0, leave_early, NULL, 0); }

static void team_leaves(abar_thread_t *self, void *arg)
{
    (void)arg;
    if (abar_cluster_rank(self) == 1) return; /* a whole team leaves */
    for (int i = 0; i < 200; i++) {
        abar_token_t t = abar_cluster_arrive(self);
        if (abar_cluster_wait(self, t)) { failed(1); return; }
    }
}

TEST(early_exit_in_waves) { launch(8, 8, 4, 2, 0, leave_early, NULL, 0); } /* 4 clusters, 1 at a time */

/* Peers that start using the barriers only after a thread has certainly left
 * the kernel: the first user drops for it (the lazy path). */
static _Atomic int gone;
static void leave_then_use(abar_thread_t *self, void *arg)
{
    (void)arg;
    if (abar_team_rank(self) == 0 && abar_thread_rank(self) == 0) { atomic_fetch_add(&gone, 1); return; }
    while (atomic_load(&gone) == 0) sched_yield();
    struct timespec ts = { 0, 5 * 1000 * 1000 }; /* it has returned and flagged its exit */
    nanosleep(&ts, NULL);
    for (int i = 0; i < 20; i++)
        if (abar_team_sync(self) || abar_cluster_sync(self)) { failed(1); return; }
}

TEST(first_user_drops_for_a_thread_gone)
{
    for (int k = 0; k < 5; k++) {
        atomic_store(&gone, 0);
        launch(4, 2, 2, 2, 0, leave_then_use, NULL, 0);
    }
}

/* Launches of one shape alternate between using the barriers (an odd or even
 * number of phases) and not: barriers kept from a launch that did not use
 * them, and re-initialised after one that did, both behave. */
static _Atomic int phases_wanted;
static void some_phases(abar_thread_t *self, void *arg)
{
    (void)arg;
    _Atomic unsigned *c = abar_team_shared(self);
    unsigned me = abar_thread_rank(self), n = abar_team_size(self), cs = abar_cluster_size(self);
    int ph = atomic_load(&phases_wanted);
    for (int i = 0; i < ph; i++) {
        atomic_store_explicit(&c[me], (unsigned)i + 1, memory_order_relaxed);
        abar_token_t t = abar_cluster_arrive(self);
        if (abar_team_sync(self) || abar_cluster_wait(self, t)) { failed(1); return; }
        for (unsigned r = 0; r < cs; r++) {
            _Atomic unsigned *p = abar_cluster_map_shared(self, c, r);
            for (unsigned j = 0; j < n; j++)
                if (atomic_load_explicit(&p[j], memory_order_relaxed) != (unsigned)i + 1) { failed(2); return; }
        }
        if (abar_cluster_sync(self)) { failed(3); return; }
    }
    if (ph == 0 && abar_thread_rank(self) == 0 && abar_cluster_rank(self) == 1) {
        if (abar_team_sync(self) != 0) failed(4); /* a lone team barrier use, with peers gone */
    }
}

TEST(barriers_reused_between_launches)
{
    for (int k = 0; k < 40; k++) {
        atomic_store(&phases_wanted, k % 3 == 0 ? 0 : k % 7);
        launch(4, 4, 2, 2, 64, some_phases, NULL, 0);
    }
}

TEST(whole_team_leaves_cluster) { launch(6, 6, 2, 3, 0, team_leaves, NULL, 0); }

/* ---- abort ------------------------------------------------------------------------------------- */

static _Atomic int cancelled_seen, aborted_code_seen;

static void abort_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    if (abar_team_rank(self) == 1 && abar_thread_rank(self) == 1) {
        /* let the others block first */
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        if (abar_abort(self, 1234)) failed(1);
        if (abar_abort(self, 99)) failed(2);      /* the first code stands */
        if (abar_abort(self, 0) != EINVAL) failed(3);
        if (abar_aborted(self) != 1234) failed(4);
        return;
    }
    int r;
    if (abar_team_rank(self) == 1) { /* same team: blocks on the team barrier */
        abar_token_t t = abar_team_arrive(self);
        r = abar_team_wait(self, t);
    } else if (abar_thread_rank(self) == 0) { /* other team: the cluster barrier */
        r = abar_cluster_sync(self);
    } else {
        r = abar_team_sync(self);
    }
    if (r != ECANCELED) { failed(10 + r); return; }
    atomic_fetch_add(&cancelled_seen, 1);
    /* later calls: cancelled too */
    if (abar_team_sync(self) != ECANCELED || abar_cluster_sync(self) != ECANCELED) failed(5);
    if (abar_token_error(abar_team_arrive(self)) != ECANCELED) failed(6);
    if (abar_aborted(self) == 1234) atomic_fetch_add(&aborted_code_seen, 1);
}

static _Atomic int ran_after;
static void plain_kernel(abar_thread_t *self, void *arg)
{
    (void)arg;
    for (int i = 0; i < 50; i++)
        if (abar_team_sync(self) || abar_cluster_sync(self)) { failed(50); return; }
    atomic_fetch_add(&ran_after, 1);
}

TEST(abort_cancels_every_barrier)
{
    launch(4, 2, 2, 2, 0, abort_kernel, NULL, 1234);
    CHECK_EQ(atomic_load(&cancelled_seen), 3);
    CHECK_EQ(atomic_load(&aborted_code_seen), 3);
    /* the pool is usable for the next launch */
    launch(4, 4, 2, 2, 0, plain_kernel, NULL, 0);
    CHECK_EQ(atomic_load(&ran_after), 8);
}

static _Atomic int clusters_ran;
static void abort_first_wave(abar_thread_t *self, void *arg)
{
    (void)arg;
    if (abar_thread_rank(self) == 0) atomic_fetch_add(&clusters_ran, 1);
    if (abar_team_rank(self) == 0) { (void)abar_abort(self, 7); return; }
    (void)abar_team_sync(self); /* may be cancelled */
}

TEST(abort_stops_later_waves)
{
    launch(2, 50, 2, 1, 0, abort_first_wave, NULL, 7); /* 50 waves of one team */
    CHECK(atomic_load(&clusters_ran) < 50);
    launch(2, 4, 2, 1, 0, plain_kernel, NULL, 0);
    CHECK_EQ(atomic_load(&ran_after), 8);
}

/* The resident cluster starts together: an abort by one of its threads
 * does not keep the others from running the kernel (their calls return
 * ECANCELED). */
static _Atomic int calls_ran;
static void abort_at_once(abar_thread_t *self, void *arg)
{
    (void)arg;
    atomic_fetch_add(&calls_ran, 1);
    if (abar_thread_rank(self) == 0) (void)abar_abort(self, 9);
    else if (abar_team_sync(self) != ECANCELED) failed(1);
}

TEST(abort_in_the_first_wave_runs_every_thread)
{
    for (int i = 0; i < 200; i++) {
        atomic_store(&calls_ran, 0);
        launch(4, 1, 4, 1, 0, abort_at_once, NULL, 9);
        CHECK_EQ(atomic_load(&calls_ran), 4);
    }
}

static void abort_everywhere(abar_thread_t *self, void *arg)
{
    (void)arg;
    for (int i = 0;; i++) {
        if (i == 30 && abar_team_rank(self) % 3 == 1) (void)abar_abort(self, 1000 + (int)abar_team_rank(self));
        if (abar_cluster_sync(self) || abar_team_sync(self)) return;
        if (i > 100000) { failed(1); return; }
    }
}

TEST(abort_from_many_threads_repeatedly)
{
    for (int k = 0; k < 20; k++) {
        CHECK_EQ(abar_pool_configure(12, 0), 0);
        abar_launch_t cfg = { 12, 2, 2, 16 }; /* 3 clusters at once: teams 1 and 4 abort */
        int r = abar_run(&cfg, abort_everywhere, NULL);
        CHECK(r == 1001 || r == 1004);
    }
    CHECK_EQ(atomic_load(&fail), 0);
}

/* Two threads of a cluster abort at once.  The abort that loses returns 0
 * ("changes nothing"), but the launch is aborted by then: its caller's next
 * sync must return ECANCELED, as after any abar_abort.  A team of one
 * completes a phase alone, so a team barrier not yet cancelled when the
 * losing call returns shows at once (its sync returns 0). */
static _Atomic int both_in, losers, loser_synced;

static void abort_race(abar_thread_t *self, void *arg)
{
    (void)arg;
    atomic_fetch_add(&both_in, 1);
    /* both in the cluster (it runs at once): spin, so that the two aborts
     * meet; yield after a while, for a run on one CPU */
    for (unsigned i = 0; atomic_load(&both_in) < 2; i++)
        if (i > 100000) sched_yield();
    int code = 10 + (int)abar_team_rank(self);
    if (abar_abort(self, code)) failed(1);
    int r = abar_team_sync(self);
    if (abar_aborted(self) != code) { /* the losing abort */
        atomic_fetch_add(&losers, 1);
        if (r != ECANCELED) atomic_fetch_add(&loser_synced, 1);
    }
}

TEST(losing_abort_then_sync_is_cancelled)
{
    CHECK_EQ(abar_pool_configure(2, 0), 0);
    for (int k = 0; k < 300; k++) {
        atomic_store(&both_in, 0);
        abar_launch_t cfg = { 2, 1, 2, 0 }; /* one cluster of two teams of one */
        int r = abar_run(&cfg, abort_race, NULL);
        CHECK(r == 10 || r == 11);
    }
    CHECK_EQ(atomic_load(&losers), 300);
    CHECK_EQ(atomic_load(&loser_synced), 0);
    CHECK_EQ(atomic_load(&fail), 0);
}

int main(int argc, char **argv) { return harness_main(argc, argv); }
