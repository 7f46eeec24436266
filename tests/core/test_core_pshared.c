/*
 * test_core_pshared.c - ABAR_PSHARED barriers across processes.
 *
 *  - a MAP_SHARED anonymous mapping inherited by fork()ed processes, with a
 *    completion function (its arg points into the mapping, valid in every
 *    process: same address after fork), per-phase invariants checked in the
 *    completion and after every wait, under each wait policy;
 *  - a file (mkstemp in /tmp, unlinked at once) mapped by each process at a
 *    DIFFERENT address (each child unmaps the inherited mapping and maps the
 *    file again with MAP_FIXED_NOREPLACE at its own hint); the completion runs
 *    in every process in turn and finds the data through a per-process
 *    pointer; tokens are handed between processes through the mapping;
 *  - a process that dies mid-phase: the survivors' timed waits expire, one
 *    calls abar_cancel, every other survivor (blocked, untimed) gets
 *    ECANCELED; then destroy + init gives a fresh barrier.
 *
 * Every child sets PR_SET_PDEATHSIG so nothing outlives a failed case, and
 * the parent reaps with a deadline, killing the children if it passes.
 */
#include "harness.h"
#include "abar_internal.h"
#include <abar.h>

#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

enum { MAXP = 8 };

#define FAILF(...)                                                         \
    do {                                                                   \
        fprintf(stderr, "[pid %d] ", (int)getpid());                       \
        fprintf(stderr, __VA_ARGS__);                                      \
        fputc('\n', stderr);                                               \
        fflush(stderr);                                                    \
        _exit(1);                                                          \
    } while (0)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timespec ts_in(int64_t delta_ns)
{
    int64_t t = (int64_t)now_ns() + delta_ns;
    return (struct timespec){ .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };
}

static void msleep(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static const unsigned POLICIES[3] = {0, ABAR_WAIT_SPIN, ABAR_WAIT_PARK};

/* Everything the processes share.  No pointers in it. */
struct shm {
    abar_t bar;
    int P;                        /* participants */
    long max_phases;
    uint64_t deadline_ns;         /* CLOCK_MONOTONIC: one clock for the machine */
    _Atomic long counter;         /* +1 per arrival, before it */
    long slot[2][MAXP];           /* plain, double-buffered */
    long sum[2];                  /* plain, written by the completion */
    _Atomic long completions;
    _Atomic int stop;
    _Atomic long ran_in[MAXP + 1];/* completions run by process i (MAXP: the parent) */
    uintptr_t addr[MAXP + 1];     /* where process i mapped the region */
    /* a token passed from process to process: process 0 writes it while the
     * others read it, so its two words are atomics, each read once (a plain
     * struct would be a data race: a compiler may load `raw` twice, once to
     * test the token and once to compare it, and the two loads can see
     * different rounds' tokens; gcc for aarch64 does).  The identity never changes while it runs. */
    _Atomic uint64_t handed_raw, handed_id;
    _Atomic int timed_out;        /* dies-mid-phase: survivors whose timed wait expired */
    _Atomic int go;
};

/* Per process: where this process sees the region, and who it is. */
static struct shm *g_shm;
static int g_me;

static long value(long r, int i) { return r * 1009 + i * 13 + 5; }

static struct abar_impl *I(abar_t *b) { return (struct abar_impl *)(void *)b; }

/* The completion.  arg is the region's address when every process maps it at
 * the same address (fork), NULL when they do not: then the per-process
 * pointer is used (SPEC: arg must be valid in every process that may run it). */
static void completion(void *arg)
{
    struct shm *s = arg ? (struct shm *)arg : g_shm;
    long r = (long)abar_phase(&s->bar);
    long c = atomic_load_explicit(&s->counter, memory_order_relaxed);
    if (c != (long)s->P * (r + 1))
        FAILF("completion of phase %ld: counter %ld, want %ld", r, c, (long)s->P * (r + 1));
    long n = atomic_load_explicit(&s->completions, memory_order_relaxed);
    if (n != r) FAILF("completion of phase %ld: %ld completions before it", r, n);
    long sum = 0;
    for (int i = 0; i < s->P; i++) {
        if (s->slot[r & 1][i] != value(r, i))
            FAILF("completion of phase %ld (in process %d): slot %d holds %ld, want %ld", r,
                  g_me, i, s->slot[r & 1][i], value(r, i));
        sum += s->slot[r & 1][i];
    }
    s->sum[r & 1] = sum;
    atomic_fetch_add_explicit(&s->ran_in[g_me], 1, memory_order_relaxed);
    atomic_store_explicit(&s->completions, n + 1, memory_order_relaxed);
    /* stop by phase count or time, but not before the 3P rounds in which
     * every process takes its turn to run the completion */
    if (r + 1 >= 3L * s->P && (r + 1 >= s->max_phases || now_ns() >= s->deadline_ns))
        atomic_store(&s->stop, 1);
}

/* A participant process: rounds until the completion says stop. */
static void participant(struct shm *s, int me)
{
    g_me = me;
    const int P = s->P;
    for (long r = 0;; r++) {
        atomic_fetch_add_explicit(&s->counter, 1, memory_order_relaxed);
        s->slot[r & 1][me] = value(r, me);
        /* the first 3P rounds: process r % P arrives last, so every process
         * (at its own address) runs the completion */
        if (r < 3 * P && r % P == me) {
            uint64_t t0 = now_ns();
            while (st_pending(atomic_load(&I(&s->bar)->state)) != 1) {
                if (now_ns() - t0 > 5000000000u) FAILF("round %ld: peers never arrived", r);
                sched_yield();
            }
        }
        int rc;
        int how = (int)((r * 3 + me) % 5);
        if (how == 4) {
            rc = abar_arrive_and_wait(&s->bar);
        } else {
            abar_token_t t = abar_arrive(&s->bar);
            if (abar_token_error(t)) FAILF("round %ld: arrive -> %d", r, abar_token_error(t));
            if (me == 0) { /* read by the others after the phase */
                atomic_store_explicit(&s->handed_id, t.id, memory_order_relaxed);
                atomic_store_explicit(&s->handed_raw, t.raw, memory_order_relaxed);
            }
            if (how == 0) {
                rc = abar_wait(&s->bar, t);
            } else if (how == 1) {
                while ((rc = abar_test(&s->bar, t)) == EBUSY) sched_yield();
            } else if (how == 2) {
                do {
                    struct timespec ts = ts_in(30000);
                    rc = abar_wait_until(&s->bar, t, &ts);
                } while (rc == ETIMEDOUT);
            } else {
                struct timespec ts = ts_in(10 * 1000000000LL);
                rc = abar_wait_until(&s->bar, t, &ts);
            }
        }
        if (rc != 0) FAILF("round %ld, process %d: wait (way %d) -> %d", r, me, how, rc);
        uint64_t ph = abar_phase(&s->bar);
        if (ph != (uint64_t)r + 1)
            FAILF("round %ld, process %d: abar_phase %llu after the wait", r, me,
                  (unsigned long long)ph);
        if (atomic_load_explicit(&s->completions, memory_order_relaxed) != r + 1)
            FAILF("round %ld, process %d: %ld completions visible", r, me,
                  atomic_load(&s->completions));
        long want = 0;
        for (int i = 0; i < P; i++) {
            want += value(r, i);
            if (s->slot[r & 1][i] != value(r, i))
                FAILF("round %ld, process %d: slot %d reads %ld, want %ld", r, me, i,
                      s->slot[r & 1][i], value(r, i));
        }
        if (s->sum[r & 1] != want)
            FAILF("round %ld, process %d: completion's sum %ld, want %ld", r, me, s->sum[r & 1], want);
        long c = atomic_load_explicit(&s->counter, memory_order_relaxed);
        if (c < (long)P * (r + 1) || c > (long)P * (r + 2) - 1)
            FAILF("round %ld, process %d: counter %ld out of bounds", r, me, c);
        /* process 0's token of a completed phase is good here too (the
         * barrier's identity is in the shared memory, not in the process);
         * it was written before process 0 arrived in round r or r+1 */
        abar_token_t h = { .raw = atomic_load_explicit(&s->handed_raw, memory_order_relaxed),
                           .id = atomic_load_explicit(&s->handed_id, memory_order_relaxed) };
        int hr;
        if (r > 0 && h.raw < (uint64_t)r + 1 && (hr = abar_test(&s->bar, h)) != 0)
            FAILF("round %ld, process %d: process 0's token of phase %llu -> %d", r, me,
                  (unsigned long long)h.raw, hr);
        if (atomic_load(&s->stop)) _exit(0);
    }
}

/* ---- processes ------------------------------------------------------------ */

static pid_t spawn(void (*fn)(struct shm *, int), struct shm *s, int me)
{
    pid_t parent = getpid();
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(99);
        alarm(30);
        fn(s, me);
        _exit(0);
    }
    return pid;
}

/* Waits for every child, up to timeout_ms; kills them all if it passes.
 * st[i] gets each wait status. */
static void reap(pid_t *pids, int n, int *st, int timeout_ms)
{
    uint64_t t0 = now_ns();
    int left = n;
    for (int i = 0; i < n; i++) st[i] = -1;
    while (left > 0) {
        for (int i = 0; i < n; i++) {
            if (st[i] != -1) continue;
            int w;
            pid_t r = waitpid(pids[i], &w, WNOHANG);
            if (r == pids[i]) {
                st[i] = w;
                left--;
            }
        }
        if (left && now_ns() - t0 > (uint64_t)timeout_ms * 1000000u) {
            for (int i = 0; i < n; i++)
                if (st[i] == -1) kill(pids[i], SIGKILL);
            for (int i = 0; i < n; i++)
                if (st[i] == -1) waitpid(pids[i], &st[i], 0);
            FAILF("children still running after %d ms (killed)", timeout_ms);
        }
        if (left) msleep(1);
    }
}

static void expect_clean_exits(pid_t *pids, int n, int *st)
{
    for (int i = 0; i < n; i++)
        if (!WIFEXITED(st[i]) || WEXITSTATUS(st[i]) != 0)
            FAILF("process %d (pid %d) ended with %s %d", i, (int)pids[i],
                  WIFEXITED(st[i]) ? "exit status" : "signal",
                  WIFEXITED(st[i]) ? WEXITSTATUS(st[i]) : WTERMSIG(st[i]));
}

static void shm_reset(struct shm *s, int P, long max_phases, int ms)
{
    memset(s, 0, sizeof *s);
    s->P = P;
    s->max_phases = max_phases;
    s->deadline_ns = now_ns() + (uint64_t)ms * 1000000u;
}

/* The parent, meanwhile, waits on abar_current tokens without taking part. */
static long observe(struct shm *s)
{
    long released = 0;
    while (!atomic_load(&s->stop)) {
        abar_token_t t = abar_current(&s->bar);
        CHECK_EQ(abar_token_error(t), 0);
        struct timespec ts = ts_in(20000000);
        int rc = abar_wait_until(&s->bar, t, &ts);
        if (rc == ETIMEDOUT) continue;
        CHECK_EQ(rc, 0);
        if (atomic_load_explicit(&s->completions, memory_order_relaxed) < (long)t.raw + 1)
            FAILF("observer released from phase %llu with %ld completions",
                  (unsigned long long)t.raw, atomic_load(&s->completions));
        released++;
    }
    return released;
}

/* ---- 1. fork()ed processes, one anonymous shared mapping ----------------------- */

static void fork_anon(int P, unsigned flags)
{
    struct shm *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    g_shm = s;
    g_me = MAXP;
    shm_reset(s, P, 100000, 800);
    abar_attr_t at = { completion, s, ABAR_PSHARED | flags };
    CHECK_EQ(abar_init(&s->bar, (uint32_t)P, &at), 0);
    pid_t pids[MAXP];
    int st[MAXP];
    for (int i = 0; i < P; i++) pids[i] = spawn(participant, s, i);
    long released = observe(s);
    reap(pids, P, st, 15000);
    expect_clean_exits(pids, P, st);
    long n = atomic_load(&s->completions);
    CHECK_EQ(abar_phase(&s->bar), (uint64_t)n);
    for (int i = 0; i < P; i++)
        if (atomic_load(&s->ran_in[i]) < 3)
            FAILF("process %d ran only %ld completions", i, atomic_load(&s->ran_in[i]));
    CHECK_EQ(abar_destroy(&s->bar), 0);
    printf("  P=%d %-7s: %ld phases, parent observed %ld releases\n", P,
           flags & ABAR_WAIT_SPIN ? "spin" : flags & ABAR_WAIT_PARK ? "park" : "default", n, released);
    CHECK(n >= 3L * P);
    munmap(s, sizeof *s);
}

TEST(pshared_fork_anon_default) { fork_anon(3, 0); fork_anon(2, 0); }
TEST(pshared_fork_anon_spin) { fork_anon(3, ABAR_WAIT_SPIN); fork_anon(2, ABAR_WAIT_SPIN); }
TEST(pshared_fork_anon_park) { fork_anon(4, ABAR_WAIT_PARK); fork_anon(2, ABAR_WAIT_PARK); }

/* Processes blocked in waits across fork are woken by a completing arrive in
 * another process (shared futex, not a private one). */
TEST(pshared_fork_parked_waiters_woken)
{
    struct shm *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    for (int pi = 0; pi < 3; pi++) {
        memset(s, 0, sizeof *s);
        abar_attr_t at = { NULL, NULL, ABAR_PSHARED | POLICIES[pi] };
        CHECK_EQ(abar_init(&s->bar, 4, &at), 0);
        pid_t pids[3];
        int st[3];
        for (int i = 0; i < 3; i++) {
            fflush(stdout);
            pids[i] = fork();
            CHECK(pids[i] >= 0);
            if (pids[i] == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                int rc = abar_arrive_and_wait(&s->bar);
                _exit(rc == 0 ? 0 : 10 + rc);
            }
        }
        /* all three arrived and are blocked (parked, for the park policy) */
        uint64_t t0 = now_ns();
        while (atomic_load(&I(&s->bar)->inside) < 3 || st_pending(atomic_load(&I(&s->bar)->state)) != 1) {
            if (now_ns() - t0 > 5000000000u) FAILF("children never blocked");
            msleep(1);
        }
        /* parked within their spin budget (50 µs), once they got a CPU: on a
         * loaded machine that can take a while, so poll rather than sleep a
         * fixed time */
        if (POLICIES[pi] != ABAR_WAIT_SPIN) {
            t0 = now_ns();
            while (!(atomic_load(&I(&s->bar)->state) & ST_PARKED)) {
                if (now_ns() - t0 > 5000000000u) FAILF("blocked children never parked");
                msleep(1);
            }
        }
        CHECK_EQ(abar_destroy(&s->bar), EBUSY); /* blocked in other processes: busy */
        CHECK_EQ(abar_token_error(abar_arrive(&s->bar)), 0);
        reap(pids, 3, st, 5000);
        expect_clean_exits(pids, 3, st);
        CHECK_EQ(abar_phase(&s->bar), 1);
        CHECK_EQ(abar_destroy(&s->bar), 0);
    }
    munmap(s, sizeof *s);
}

/* ---- 2. a file mapped at a different address in every process ------------------ */

static int file_fd = -1;
static void *file_parent_addr;

/* Maps the file at an address of our own: not the parent's, not a sibling's. */
static struct shm *map_elsewhere(int me)
{
    size_t len = (sizeof(struct shm) + 4095) & ~(size_t)4095;
    /* hints spaced 1 GiB apart, per process, far from the parent's address */
    uintptr_t base = ((uintptr_t)file_parent_addr & ~(((uintptr_t)1 << 30) - 1)) -
                     ((uintptr_t)(me + 2) << 33);
    for (int k = 0; k < 64; k++) {
        void *hint = (void *)(base - ((uintptr_t)k << 30));
        void *p = mmap(hint, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, file_fd, 0);
        if (p == MAP_FAILED) continue;
        if (p != hint) { /* an old kernel ignored the flag: keep it if distinct */
            if (p == file_parent_addr) { munmap(p, len); continue; }
        }
        return p;
    }
    FAILF("could not map the file at a distinct address");
}

static void file_participant(struct shm *inherited, int me)
{
    size_t len = (sizeof(struct shm) + 4095) & ~(size_t)4095;
    struct shm *s = map_elsewhere(me);
    /* the inherited mapping goes: only our own address can work now */
    CHECK_EQ(munmap(inherited, len), 0);
    CHECK(s != (struct shm *)file_parent_addr);
    g_shm = s;
    s->addr[me] = (uintptr_t)s;
    participant(s, me); /* _exits */
}

static void file_mapped(int P, unsigned flags)
{
    char path[] = "/tmp/abar_core_pshared_XXXXXX";
    file_fd = mkstemp(path);
    CHECK(file_fd >= 0);
    CHECK_EQ(unlink(path), 0);
    size_t len = (sizeof(struct shm) + 4095) & ~(size_t)4095;
    CHECK_EQ(ftruncate(file_fd, (off_t)len), 0);
    struct shm *s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, file_fd, 0);
    CHECK(s != MAP_FAILED);
    file_parent_addr = s;
    g_shm = s;
    g_me = MAXP;
    shm_reset(s, P, 60000, 800);
    s->addr[MAXP] = (uintptr_t)s;
    /* no arg: the region is at a different address in each process */
    abar_attr_t at = { completion, NULL, ABAR_PSHARED | flags };
    CHECK_EQ(abar_init(&s->bar, (uint32_t)P, &at), 0);
    pid_t pids[MAXP];
    int st[MAXP];
    for (int i = 0; i < P; i++) pids[i] = spawn(file_participant, s, i);
    long released = observe(s);
    reap(pids, P, st, 15000);
    expect_clean_exits(pids, P, st);
    /* the addresses really differed: P children and the parent */
    int who[MAXP + 1], nw = 0;
    for (int i = 0; i < P; i++) who[nw++] = i;
    who[nw++] = MAXP;
    for (int a = 0; a < nw; a++) {
        CHECK(s->addr[who[a]] != 0);
        for (int b = 0; b < a; b++)
            if (s->addr[who[a]] == s->addr[who[b]])
                FAILF("processes %d and %d mapped the file at the same address %p", who[a],
                      who[b], (void *)s->addr[who[a]]);
    }
    for (int i = 0; i < P; i++)
        if (atomic_load(&s->ran_in[i]) < 3)
            FAILF("process %d ran only %ld completions", i, atomic_load(&s->ran_in[i]));
    long n = atomic_load(&s->completions);
    CHECK_EQ(abar_phase(&s->bar), (uint64_t)n);
    CHECK_EQ(abar_destroy(&s->bar), 0);
    printf("  P=%d %-7s: %ld phases at %d distinct addresses, parent observed %ld releases\n", P,
           flags & ABAR_WAIT_SPIN ? "spin" : flags & ABAR_WAIT_PARK ? "park" : "default", n, P + 1,
           released);
    munmap(s, len);
    close(file_fd);
}

TEST(pshared_file_distinct_addresses_default) { file_mapped(3, 0); }
TEST(pshared_file_distinct_addresses_spin) { file_mapped(2, ABAR_WAIT_SPIN); }
TEST(pshared_file_distinct_addresses_park) { file_mapped(4, ABAR_WAIT_PARK); }

/* ---- 3. a process dies mid-phase --------------------------------------------- */

enum { DIE_P = 4, DIE_ROUND = 20, VICTIM = DIE_P - 1, LEADER = 0 };
static unsigned die_flags;

static void die_child(struct shm *s, int me)
{
    g_me = me;
    for (long r = 0; r < DIE_ROUND; r++) {
        atomic_fetch_add_explicit(&s->counter, 1, memory_order_relaxed);
        s->slot[r & 1][me] = value(r, me);
        int rc = abar_arrive_and_wait(&s->bar);
        if (rc) FAILF("round %ld: arrive_and_wait -> %d", r, rc);
    }
    if (me == VICTIM) raise(SIGKILL); /* dies without arriving in round DIE_ROUND */

    atomic_fetch_add_explicit(&s->counter, 1, memory_order_relaxed);
    s->slot[DIE_ROUND & 1][me] = value(DIE_ROUND, me);
    abar_token_t t = abar_arrive(&s->bar);
    if (abar_token_error(t)) FAILF("arrive in the dying round -> %d", abar_token_error(t));
    struct timespec ts = ts_in(150000000);
    int rc = abar_wait_until(&s->bar, t, &ts);
    if (rc != ETIMEDOUT) FAILF("survivor %d: timed wait -> %d, want ETIMEDOUT", me, rc);
    if (abar_phase(&s->bar) != DIE_ROUND) FAILF("phase moved to %llu", (unsigned long long)abar_phase(&s->bar));
    atomic_fetch_add(&s->timed_out, 1);
    if (me == LEADER) {
        /* wait until every other survivor timed out and is blocked again */
        uint64_t t0 = now_ns();
        while (atomic_load(&s->timed_out) < DIE_P - 1 ||
               atomic_load(&I(&s->bar)->inside) < DIE_P - 2) {
            if (now_ns() - t0 > 5000000000u) FAILF("the other survivors never blocked again");
            msleep(1);
        }
        msleep(10);
        if (abar_cancel(&s->bar) != 0) FAILF("abar_cancel failed");
    }
    /* every survivor: ECANCELED, for the blocked wait and for what follows */
    rc = abar_wait(&s->bar, t);
    if (rc != ECANCELED) FAILF("survivor %d: wait after the cancel -> %d, want ECANCELED", me, rc);
    ts = ts_in(1000000000);
    if (abar_wait_until(&s->bar, t, &ts) != ECANCELED) FAILF("survivor %d: timed wait not ECANCELED", me);
    if (abar_token_error(abar_arrive(&s->bar)) != ECANCELED) FAILF("survivor %d: arrive not refused", me);
    if (abar_arrive_and_wait(&s->bar) != ECANCELED) FAILF("survivor %d: arrive_and_wait not refused", me);
    if (abar_phase(&s->bar) != DIE_ROUND) FAILF("phase moved");
    _exit(0);
}

static void dies_mid_phase(unsigned flags)
{
    struct shm *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED);
    g_shm = s;
    g_me = MAXP;
    shm_reset(s, DIE_P, 1000000, 60000);
    die_flags = flags;
    abar_attr_t at = { completion, s, ABAR_PSHARED | flags };
    CHECK_EQ(abar_init(&s->bar, DIE_P, &at), 0);
    pid_t pids[DIE_P];
    int st[DIE_P];
    for (int i = 0; i < DIE_P; i++) pids[i] = spawn(die_child, s, i);
    reap(pids, DIE_P, st, 15000);
    CHECK(WIFSIGNALED(st[VICTIM]) && WTERMSIG(st[VICTIM]) == SIGKILL);
    for (int i = 0; i < DIE_P; i++) {
        if (i == VICTIM) continue;
        if (!WIFEXITED(st[i]) || WEXITSTATUS(st[i]) != 0)
            FAILF("survivor %d ended with status %#x", i, st[i]);
    }
    CHECK_EQ(atomic_load(&s->timed_out), DIE_P - 1);
    CHECK_EQ(atomic_load(&s->completions), DIE_ROUND);
    CHECK_EQ(abar_phase(&s->bar), DIE_ROUND);
    /* the victim died outside any call: destroy + init gives a fresh barrier */
    CHECK_EQ(abar_destroy(&s->bar), 0);
    abar_attr_t fresh = { NULL, NULL, ABAR_PSHARED | flags };
    CHECK_EQ(abar_init(&s->bar, 1, &fresh), 0);
    CHECK_EQ(abar_arrive_and_wait(&s->bar), 0);
    CHECK_EQ(abar_phase(&s->bar), 1);
    CHECK_EQ(abar_destroy(&s->bar), 0);
    munmap(s, sizeof *s);
}

TEST(pshared_process_dies_mid_phase_default) { dies_mid_phase(0); }
TEST(pshared_process_dies_mid_phase_spin) { dies_mid_phase(ABAR_WAIT_SPIN); }
TEST(pshared_process_dies_mid_phase_park) { dies_mid_phase(ABAR_WAIT_PARK); }

int main(int argc, char **argv) { return harness_main(argc, argv); }
