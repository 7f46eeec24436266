/* test_mpi_level.c - what abar_mpi_init says about MPI's state: before
 * MPI_Init and after MPI_Finalize (EPERM), and under a thread level too low
 * for the mode asked (ENOTSUP).  Runs under MPI_THREAD_FUNNELED. */
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
