/*
 * mpi_harness.h - a test runner for MPI programs.  tests/harness.h forks per
 * case, which MPI does not allow; here every case runs in turn in every rank,
 * between two MPI_Barrier calls, under an alarm: a failed check or a hang
 * kills the whole job (MPI_Abort), so mpiexec exits non-zero and the log
 * names the case and the rank.
 *
 *   MTEST(name) { MCHECK(x == 1); MCHECK_EQ(abar_mpi_wait(&b, t), 0); }
 *   MSKIP("why") in a case: reported as skipped, never counted as passed
 *   int main(int argc, char **argv) { return mharness_main(argc, argv, level); }
 *
 * ABAR_TEST_TIMEOUT (seconds, default 30) is the limit per case.
 */
#ifndef ABAR_MPI_HARNESS_H
#define ABAR_MPI_HARNESS_H

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void mharness_fn(void);
struct mharness_case { const char *name; mharness_fn *fn; };
static struct mharness_case mharness_cases[256];
static int mharness_ncases;
static int mrank, msize;              /* in MPI_COMM_WORLD */
static const char *mharness_current = "";
static int mharness_skipped_flag;

#define MTEST(name)                                                        \
    static void mtest_##name(void);                                        \
    __attribute__((constructor)) static void mharness_reg_##name(void) {   \
        if (mharness_ncases < 256)                                         \
            mharness_cases[mharness_ncases++] =                            \
                (struct mharness_case){#name, mtest_##name};               \
    }                                                                      \
    static void mtest_##name(void)

#define MCHECK(cond)                                                       \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "FAIL %s: rank %d: %s:%d: CHECK failed: %s\n", \
                    mharness_current, mrank, __FILE__, __LINE__, #cond);   \
            fflush(stderr);                                                \
            MPI_Abort(MPI_COMM_WORLD, 1);                                  \
        }                                                                  \
    } while (0)

#define MCHECK_EQ(a, b)                                                    \
    do {                                                                   \
        long long mh_a_ = (long long)(a), mh_b_ = (long long)(b);          \
        if (mh_a_ != mh_b_) {                                              \
            fprintf(stderr, "FAIL %s: rank %d: %s:%d: CHECK_EQ failed: "   \
                    "%s == %lld, %s == %lld\n", mharness_current, mrank,   \
                    __FILE__, __LINE__, #a, mh_a_, #b, mh_b_);             \
            fflush(stderr);                                                \
            MPI_Abort(MPI_COMM_WORLD, 1);                                  \
        }                                                                  \
    } while (0)

/* Skips the rest of the case (same decision on every rank, please). */
#define MSKIP(why)                                                         \
    do {                                                                   \
        if (mrank == 0) printf("SKIP %-34s %s\n", mharness_current, why);  \
        mharness_skipped_flag = 1;                                         \
        return;                                                            \
    } while (0)

__attribute__((unused)) static double mnow(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((unused)) static void msleep_ms(int ms)
{
    struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&d, &d) != 0) {}
}

__attribute__((unused)) static struct timespec mdeadline_ms(int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
    return ts;
}

static void mharness_alarm(int sig)
{
    (void)sig;
    char msg[256];
    int n = snprintf(msg, sizeof msg, "FAIL %s: rank %d: timed out\n", mharness_current, mrank);
    if (n > 0) { ssize_t w = write(2, msg, (size_t)n); (void)w; }
    _exit(3);
}

static int mharness_main(int argc, char **argv, int level)
{
    int provided;
    MPI_Init_thread(&argc, &argv, level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mrank);
    MPI_Comm_size(MPI_COMM_WORLD, &msize);
    const char *to = getenv("ABAR_TEST_TIMEOUT");
    int timeout_s = to ? atoi(to) : 30;
    if (timeout_s <= 0) timeout_s = 30;
    signal(SIGALRM, mharness_alarm);
    int passed = 0, skipped = 0;
    for (int i = 0; i < mharness_ncases; i++) {
        int wanted = argc <= 1;
        for (int a = 1; a < argc && !wanted; a++)
            wanted = strcmp(argv[a], mharness_cases[i].name) == 0;
        if (!wanted) continue;
        mharness_current = mharness_cases[i].name;
        mharness_skipped_flag = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = mnow();
        alarm((unsigned)timeout_s);
        mharness_cases[i].fn();
        MPI_Barrier(MPI_COMM_WORLD);
        alarm(0);
        if (mharness_skipped_flag) { skipped++; continue; }
        passed++;
        if (mrank == 0) {
            printf("PASS %-34s %7.3f s (%d ranks)\n", mharness_current, mnow() - t0, msize);
            fflush(stdout);
        }
    }
    if (mrank == 0) printf("%d passed, 0 failed, %d skipped\n", passed, skipped);
    MPI_Finalize();
    return passed > 0 ? 0 : 1;
}

#endif
