/* test_mpi_straggler.c - a phase every rank arrived in completes on every
 * rank that waits for it, whatever the others did after their arrival: one
 * rank (the "quitter") times out, cancels and destroys, another arrives
 * 300 ms after that cancel, the rest wait.  The quitter's part of the phase
 * (a dissemination round to pass on, the tree's fan-in and fan-out, the
 * root's release or cancel mark) must still reach them.  Run with 2 and 4
 * ranks. */
#include "mpi_harness.h"

#include <abar_mpi.h>
#include <errno.h>
#include <stdint.h>

/* ---- a straggler and a quitter ------------------------------------------ */

/* on the root: counts the phases in its result, which every rank receives */
static void count_phase(void *arg) { ++*(uint64_t *)arg; }

enum { WARM = 3 };                  /* phases every rank completes first */
enum { QUIT_WAITS, QUIT_AT_ONCE };  /* the quitter times out first, or not */

/* 2 ranks: rank 0 quits, rank 1 is late.  4 ranks: rank 2 quits, rank 1 is
 * late, ranks 0 and 3 wait.  With a completion, its root is the quitter
 * (root_quits) or another rank: then the phase completes (0, the root's
 * result everywhere); else the root's cancel mark reaches every rank
 * (ECANCELED), and the completion does not run. */
static void run_straggler(unsigned flags, int completion, int root_quits, int how)
{
    const int quitter = msize == 2 ? 0 : 2, late = 1;
    abar_mpi_t b;
    abar_mpi_attr_t a = { 0 };
    a.flags = flags;
    uint64_t res = 0;
    if (completion) {
        a.completion = count_phase;
        a.arg = &res;
        a.result = &res;
        a.result_size = sizeof res;
        a.root = root_quits ? quitter : quitter == 0 ? 1 : 0;
    }
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), 0);
    for (int k = 0; k < WARM; k++) MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);
    if (mrank == quitter) {
        abar_token_t t = abar_mpi_arrive(&b);
        MCHECK_EQ(abar_token_error(t), 0);
        if (how == QUIT_WAITS) {
            struct timespec d = mdeadline_ms(100);
            MCHECK_EQ(abar_mpi_wait_until(&b, t, &d), ETIMEDOUT);
        }
        MCHECK_EQ(abar_mpi_cancel(&b), 0);
        /* the late rank arrives only after this cancel (on a loaded machine
         * a sleep alone would not order them) */
        int go = 1;
        MPI_Send(&go, 1, MPI_INT, late, 77, MPI_COMM_WORLD);
        MCHECK_EQ(abar_mpi_wait(&b, t), ECANCELED);
        MCHECK_EQ(abar_mpi_destroy(&b), 0);   /* while the others still wait */
        return;
    }
    if (mrank == late) {
        int go;
        MPI_Recv(&go, 1, MPI_INT, quitter, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        msleep_ms(300);
    }
    abar_token_t t = abar_mpi_arrive(&b);
    MCHECK_EQ(abar_token_error(t), 0);
    /* a deadline, so that a lost phase fails here rather than hangs */
    struct timespec d = mdeadline_ms(10000);
    int want = completion && root_quits ? ECANCELED : 0;
    MCHECK_EQ(abar_mpi_wait_until(&b, t, &d), want);
    if (want == 0) {
        MCHECK_EQ(abar_mpi_phase(&b), WARM + 1);
        if (completion) MCHECK_EQ(res, WARM + 1);       /* the root's count, delivered */
    } else {
        MCHECK_EQ(res, WARM);                           /* no result for the cancelled phase */
    }
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
}

MTEST(straggler_dissemination) { run_straggler(ABAR_MPI_P2P, 0, 0, QUIT_WAITS); }
MTEST(straggler_dissemination_at_once) { run_straggler(ABAR_MPI_P2P, 0, 0, QUIT_AT_ONCE); }
MTEST(straggler_dissemination_park) { run_straggler(ABAR_MPI_P2P | ABAR_WAIT_PARK, 0, 0, QUIT_WAITS); }
MTEST(straggler_dissemination_progress_thread)
{
    run_straggler(ABAR_MPI_P2P | ABAR_MPI_PROGRESS_THREAD, 0, 0, QUIT_WAITS);
}
MTEST(straggler_tree) { run_straggler(ABAR_MPI_P2P, 1, 0, QUIT_WAITS); }
MTEST(straggler_tree_at_once) { run_straggler(ABAR_MPI_P2P, 1, 0, QUIT_AT_ONCE); }
MTEST(straggler_tree_root_quits) { run_straggler(ABAR_MPI_P2P, 1, 1, QUIT_WAITS); }
MTEST(straggler_tree_root_quits_at_once) { run_straggler(ABAR_MPI_P2P, 1, 1, QUIT_AT_ONCE); }
MTEST(straggler_ibarrier) { run_straggler(ABAR_MPI_IBARRIER, 0, 0, QUIT_WAITS); }
MTEST(straggler_shared_memory) { run_straggler(0, 0, 0, QUIT_WAITS); }
MTEST(straggler_shm_completion) { run_straggler(0, 1, 0, QUIT_WAITS); }
MTEST(straggler_shm_root_quits) { run_straggler(0, 1, 1, QUIT_WAITS); }

int main(int argc, char **argv) { return mharness_main(argc, argv, MPI_THREAD_MULTIPLE); }
