/*
 * omp_bench.c - `#pragma omp barrier` measured with abar-bench's harness
 * (common.h), built twice: against libgomp (gcc -fopenmp: abar-bench-omp-gomp)
 * and against LLVM libomp (clang -fopenmp=libomp: abar-bench-omp-llvm).  Same
 * rows as abar-bench; the driver script merges them.
 *
 * The runtimes run with their defaults (OMP_WAIT_POLICY, GOMP_SPINCOUNT,
 * KMP_BLOCKTIME unset), as a user would get them; threads are pinned by the
 * harness, not by OMP_PROC_BIND.  OpenMP has no split-phase barrier and no
 * completion function: "split" rows are the joined form only, and the
 * completion is emulated (barrier; thread 0 runs it; barrier).
 */
#include "common.h"

#include <omp.h>

#ifndef OMP_IMPL_NAME
#error "build with -DOMP_IMPL_NAME=\"omp-gomp\" or \"omp-llvm\""
#endif

#define SCENARIOS "lat,oversub,split,completion,cpuburn,jitter,steal"

enum mode { M_LAT, M_JOINED, M_COMPL, M_BURN, M_JITTER };

#define PSUM_DATA 4096
static uint64_t psum_data[PSUM_DATA];

/* An orphaned barrier: binds to the enclosing parallel region.  A call, as
 * the C benchmark calls every barrier through a pointer. */
static __attribute__((noinline)) void omp_bar(void)
{
#pragma omp barrier
}

static struct {
    unsigned T;
    uint64_t *smem, acc;
    double burn[BENCH_MAX_ROUNDS];
} g;

static __attribute__((noinline)) void psum_completion(void)
{
    uint64_t s = 0;
    for (unsigned t = 0; t < g.T; t++) s += g.smem[t * 8];
    g.acc += s;
}

static __attribute__((noinline)) void empty_completion(void) { __asm__ __volatile__("" ::: "memory"); }

static void team(int mode, unsigned T, int pinned, rctl_t *rc, uint64_t witers, int psum, unsigned reps)
{
    g.T = T;
    omp_set_dynamic(0);
#pragma omp parallel num_threads(T)
    {
        const unsigned tid = (unsigned)omp_get_thread_num();
        if ((unsigned)omp_get_num_threads() != T) {
            fprintf(stderr, "abar-bench-omp: asked for %u threads, got %d\n", T, omp_get_num_threads());
            exit(2);
        }
        pin_self(tid, pinned);
        omp_bar();
        if (tid == 0) rc->start_ns = now_ns();
        uint64_t gk = 0;
        switch (mode) {
        case M_LAT:
            RCTL_LOOP(rc, tid, omp_bar());
            break;
        case M_JOINED:
            RCTL_LOOP(rc, tid, (omp_bar(), work_spin(witers)));
            break;
        case M_JITTER: /* as abar-bench's jitter scenario */
            RCTL_LOOP(rc, tid, (++gk % JITTER_EVERY == 0 && gk / JITTER_EVERY % T == tid ? busy_ns(JITTER_NS)
                                                                                      : (void)0,
                                omp_bar()));
            break;
        case M_COMPL: {
            uint64_t *slot = &g.smem[tid * 8];
            RCTL_LOOP(rc, tid, (*slot = psum_data[(gk * T + tid) % PSUM_DATA] + g.acc, gk++, omp_bar(),
                                tid == 0 ? (psum ? psum_completion() : empty_completion()) : (void)0,
                                omp_bar()));
            break;
        }
        case M_BURN:
            for (unsigned i = 0; i <= reps; i++) {
                omp_bar();
                if (tid == 0) {
                    uint64_t c0 = thread_cpu_ns();
                    omp_bar();
                    if (i > 0) g.burn[i - 1] = (double)(thread_cpu_ns() - c0);
                } else {
                    if (tid == 1) sleep_ns(10000000);
                    omp_bar();
                }
            }
            break;
        }
    }
}

static void measure(const char *scen, unsigned T, int pinned, const bopts_t *o, uint64_t cap, int mode,
                    uint64_t witers, const char *param)
{
    rctl_t rc;
    rctl_init(&rc, o->warm, o->rounds, o->round_ns, cap);
    team(mode, T, pinned, &rc, witers, 0, 0);
    rctl_row(&rc, scen, OMP_IMPL_NAME, T, param);
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

int main(int argc, char **argv)
{
    bopts_t o = parse_opts(argc, argv, SCENARIOS);
    for (unsigned i = 0; i < PSUM_DATA; i++) psum_data[i] = (i * 0x9e3779b97f4a7c15u) >> 54;
    unsigned T = o.max_threads;
    const char *bin = program_invocation_short_name;
    hsteal_t h0 = hsteal_now();
    if (scen_on(&o, "lat")) {
        for (unsigned t = 1; t; t = lat_next_t(t, o.max_threads)) measure("lat", t, 1, &o, o.cap_ns, M_LAT, 0, "-");
        hsteal_row(bin, "lat", h0);
    }
    if (scen_on(&o, "steal")) { /* as abar-bench's steal scenario (scen_steal) */
        const bopts_t so = steal_opts(&o);
        const char *e = getenv("ABAR_BENCH_STEAL_CPUS");
        char list[128];
        snprintf(list, sizeof list, "%s", e && *e ? e : "2");
        for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            const double S = atof(tok);
            if (S <= 0) continue;
            char scen[32];
            {
            const char *m = getenv("ABAR_BENCH_STEAL_MODE");
            snprintf(scen, sizeof scen, "steal%s%s", m && strcmp(m, "nice") == 0 ? "nice" : "", tok);
        }
            h0 = hsteal_now();
            for (unsigned q = 1; q <= 4; q++) {
                const unsigned t = T * q / 4;
                if (t < 2 || (q > 1 && t == T * (q - 1) / 4)) continue;
                hv_start(S);
                measure(scen, t, 1, &so, so.cap_ns, M_LAT, 0, "-");
                const double got = hv_stop();
                stats_t st = { got, got, got, 1 };
                row("stealgot", OMP_IMPL_NAME, t, scen, st, 0, "cpus", "");
            }
            hsteal_row(bin, scen, h0);
        }
    }
    h0 = hsteal_now();
    if (scen_on(&o, "split")) {
        static const unsigned W[] = { 0, 100, 500, 2000, 10000 };
        for (unsigned wi = 0; wi < 5; wi++) {
            char param[32];
            snprintf(param, sizeof param, "joined:%u", W[wi]);
            measure("split", T, 1, &o, o.cap_ns, M_JOINED, work_iters(W[wi]), param);
        }
        hsteal_row(bin, "split", h0);
    }
    h0 = hsteal_now();
    if (scen_on(&o, "completion")) {
        g.smem = aligned_alloc(64, (size_t)T * 64);
        if (!g.smem) abort();
        for (int psum = 0; psum <= 1; psum++) {
            rctl_t rc;
            rctl_init(&rc, o.warm, o.rounds, o.round_ns, o.cap_ns);
            memset(g.smem, 0, (size_t)T * 64);
            g.acc = 0;
            team(M_COMPL, T, 1, &rc, 0, psum, 0);
            if (psum && g.acc != psum_expect(T, rc.total_phases)) {
                fprintf(stderr, "abar-bench-omp: psum WRONG after %llu phases\n",
                        (unsigned long long)rc.total_phases);
                return 1;
            }
            row("completion", OMP_IMPL_NAME, T, psum ? "psum" : "empty", stats_of(rc.per_phase, rc.nrec),
                rc.phases, "ns/phase", rc.capped ? "lb;emul" : "emul");
        }
        free(g.smem);
        hsteal_row(bin, "completion", h0);
    }
    if (scen_on(&o, "cpuburn")) {
        rctl_t rc;
        rctl_init(&rc, 0, 1, 1, 1);
        team(M_BURN, 2, bench_ncpus >= 2, &rc, 0, 0, o.burn_reps);
        row("cpuburn", OMP_IMPL_NAME, 2, "wait10ms", stats_of(g.burn, o.burn_reps), o.burn_reps, "cpu_ns", "");
    }
    h0 = hsteal_now();
    if (scen_on(&o, "jitter")) {
        static const unsigned Ts[] = {2, 4, 8, 16};
        char param[32];
        snprintf(param, sizeof param, "%uus/%u", JITTER_NS / 1000, JITTER_EVERY);
        for (unsigned k = 0; k < sizeof Ts / sizeof Ts[0] && Ts[k] <= o.max_threads; k++)
            measure("jitter", Ts[k], 1, &o, o.cap_ns, M_JITTER, 0, param);
        hsteal_row(bin, "jitter", h0);
    }
    h0 = hsteal_now();
    if (scen_on(&o, "oversub")) {
        for (unsigned f = 2; f <= 4; f += 2)
            measure("oversub", f * bench_ncpus, 0, &o, o.oversub_cap_ns, M_LAT, 0, "-");
        hsteal_row(bin, "oversub", h0);
    }
    if (bench_csv) fclose(bench_csv);
    return 0;
}
