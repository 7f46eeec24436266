/*
 * rank_failure.c - a rank killed in the middle of a phase: what the
 * survivors see.  Run under `mpiexec --enable-recovery` (Open MPI), which
 * lets the job go on when a process dies (by default mpirun kills every
 * rank at once, see docs/mpi.md).  Argument: p2p (dissemination engine) or
 * shm (shared-memory engine).
 *
 * Phase 0 completes with every rank; then the last rank is killed
 * (SIGKILL) before it arrives in phase 1.  Every survivor arrives and must
 * see: abar_mpi_wait_until -> ETIMEDOUT (the phase cannot complete; no
 * failure is reported by MPI to the barrier), abar_mpi_test -> EBUSY,
 * abar_mpi_cancel -> 0, then abar_mpi_wait -> ECANCELED and a new arrive ->
 * ECANCELED.  Each survivor prints one line, "survivor R: ok" or
 * "FAIL ..."; the test passes when rank 0 says ok and nobody says FAIL (the
 * survivors leave with _exit: destroy and MPI_Finalize are collective and
 * would wait for the dead rank).
 */
#include <abar_mpi.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank;

#define EXPECT(what, got, want)                                                                   \
    do {                                                                                          \
        int g_ = (got);                                                                           \
        if (g_ != (want)) {                                                                       \
            printf("FAIL rank %d: %s = %s (%d), expected %s\n", rank, what, strerror(g_), g_,     \
                   strerror(want));                                                               \
            fflush(stdout);                                                                       \
            _exit(1);                                                                             \
        }                                                                                         \
    } while (0)

int main(int argc, char **argv)
{
    int prov, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    abar_mpi_t b;
    abar_mpi_attr_t a = { .flags = argc > 1 && strcmp(argv[1], "p2p") == 0 ? ABAR_MPI_P2P : 0 };
    EXPECT("init", abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    EXPECT("phase 0", abar_mpi_arrive_and_wait(&b), 0);
    if (rank == size - 1) raise(SIGKILL);

    abar_token_t t = abar_mpi_arrive(&b);
    EXPECT("arrive", abar_token_error(t), 0);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += 2;
    EXPECT("wait_until", abar_mpi_wait_until(&b, t, &ts), ETIMEDOUT);
    EXPECT("test", abar_mpi_test(&b, t), EBUSY);
    EXPECT("cancel", abar_mpi_cancel(&b), 0);
    EXPECT("wait after cancel", abar_mpi_wait(&b, t), ECANCELED);
    EXPECT("arrive after cancel", abar_token_error(abar_mpi_arrive(&b)), ECANCELED);
    EXPECT("phase", (int)abar_mpi_phase(&b), 1);
    printf("survivor %d: ok (wait_until ETIMEDOUT, cancel, wait ECANCELED)\n", rank);
    fflush(stdout);
    _exit(0);
}
