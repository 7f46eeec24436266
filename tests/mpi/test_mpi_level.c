/* test_mpi_level.c - what abar_mpi_init says about MPI's state: before
 * MPI_Init and after MPI_Finalize (EPERM), and under a thread level too low
 * for the mode asked (ENOTSUP), on every rank even when only one rank asks
 * for it.  Runs under MPI_THREAD_FUNNELED. */
#include "mpi_harness.h"

#include <abar_mpi.h>
#include <errno.h>
#include <pthread.h>

static int level_ok = -1;

MTEST(thread_level_too_low)
{
    int prov;
    MPI_Query_thread(&prov);
    if (prov != MPI_THREAD_FUNNELED) MSKIP("MPI gave another level than FUNNELED");
    abar_mpi_t b = { 0 };
    abar_mpi_attr_t a = { 0 };
    a.threads = 2;                                   /* hierarchical: SERIALIZED */
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), ENOTSUP);
    a.threads = 1;
    a.flags = ABAR_MPI_PROGRESS_THREAD;              /* MULTIPLE */
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, &a), ENOTSUP);
    MCHECK(b._private == NULL);
    /* flat, from the main thread: fine */
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, NULL), 0);
    for (int k = 0; k < 10; k++) MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
}

/* Init's errors when only one rank's arguments are wrong: every rank
 * returns the same error, and none is left in a collective call (the next
 * barrier on the communicator works). */
static void init_fails_everywhere(const abar_mpi_attr_t *mine, abar_mpi_t *bp, int want)
{
    MCHECK_EQ(abar_mpi_init(bp, MPI_COMM_WORLD, mine), want);
    if (bp) MCHECK(bp->_private == NULL);
    abar_mpi_t b = { 0 };
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, NULL), 0);
    for (int k = 0; k < 3; k++) MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0);
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
}

MTEST(init_error_on_one_rank)
{
    int prov;
    MPI_Query_thread(&prov);
    if (prov != MPI_THREAD_FUNNELED) MSKIP("MPI gave another level than FUNNELED");
    abar_mpi_t b = { 0 };
    abar_mpi_attr_t a = { 0 };
    /* a progress thread asked by rank 0 only (it needs MULTIPLE) */
    a.flags = mrank == 0 ? ABAR_MPI_PROGRESS_THREAD : 0;
    init_fails_everywhere(&a, &b, ENOTSUP);
    /* hierarchical on the last rank only (threads may differ between ranks;
     * it needs SERIALIZED) */
    a.flags = 0;
    a.threads = mrank == msize - 1 ? 2 : 1;
    init_fails_everywhere(&a, &b, ENOTSUP);
    /* both errors at once, on different ranks: the same error everywhere */
    a.flags = mrank == 0 ? 0x80000000u : 0;               /* unknown flag: EINVAL */
    init_fails_everywhere(&a, &b, ENOTSUP);
    /* a NULL barrier on rank 0 only */
    a = (abar_mpi_attr_t){ 0 };
    init_fails_everywhere(&a, mrank == 0 ? NULL : &b, EINVAL);
    /* an unknown flag on the last rank only */
    a.flags = mrank == msize - 1 ? 0x80000000u : 0;
    init_fails_everywhere(&a, &b, EINVAL);
}

static void *init_elsewhere(void *arg)
{
    abar_mpi_t *b = arg;
    level_ok = abar_mpi_init(b, MPI_COMM_WORLD, NULL); /* not the main thread */
    return NULL;
}

MTEST(funneled_other_thread)
{
    int prov;
    MPI_Query_thread(&prov);
    if (prov != MPI_THREAD_FUNNELED) MSKIP("MPI gave another level than FUNNELED");
    abar_mpi_t b = { 0 };
    pthread_t th;
    MCHECK_EQ(pthread_create(&th, NULL, init_elsewhere, &b), 0);
    pthread_join(th, NULL);
    MCHECK_EQ(level_ok, ENOTSUP);
    MCHECK(b._private == NULL);
}

int main(int argc, char **argv)
{
    abar_mpi_t b = { 0 };
    /* before MPI_Init: EPERM, nothing touched */
    int before = abar_mpi_init(&b, MPI_COMM_WORLD, NULL);
    int rc = mharness_main(argc, argv, MPI_THREAD_FUNNELED); /* runs the cases, finalizes */
    int after = abar_mpi_init(&b, MPI_COMM_WORLD, NULL);
    if (before != EPERM || after != EPERM || b._private != NULL) {
        fprintf(stderr, "FAIL init outside MPI: before %d, after %d (want EPERM = %d)\n",
                before, after, EPERM);
        return 1;
    }
    printf("PASS init before MPI_Init and after MPI_Finalize: EPERM\n");
    return rc;
}
