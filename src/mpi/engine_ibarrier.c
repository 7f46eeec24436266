/*
 * engine_ibarrier.c - ABAR_MPI_IBARRIER: one MPI_Ibarrier a phase, no
 * completion function.
 */
#include "mpi_internal.h"

int abar_mpi__ibarrier_start(struct mpi_impl *m)
{
    return MPI_Ibarrier(m->comm, &m->ibar) == MPI_SUCCESS ? 0 : -1;
}

int abar_mpi__ibarrier_poll(struct mpi_impl *m)
{
    int flag;
    return MPI_Test(&m->ibar, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS ? -1 : flag;
}
