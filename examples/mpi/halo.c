/*
 * halo.c - a 1-D heat stencil split over MPI ranks, synchronised by a split
 * barrier: the overlap that abar_mpi is for.
 *
 * Each iteration a rank puts its two edge cells into its neighbours' ghost
 * cells (MPI_Put, passive target), arrives on the barrier, updates its
 * interior (which needs no ghost), waits, and only then updates its two edge
 * cells from the ghosts.  The ghosts are double-buffered by iteration parity,
 * so one barrier per iteration is enough: a rank writes ghost[p] of a
 * neighbour again only two iterations later, after a wait that needs the
 * neighbour's next arrival, which comes after it has read ghost[p].
 *
 * The same run is repeated with a blocking MPI_Barrier (no overlap) for
 * timing, and rank 0 checks the final field against a serial computation:
 * the program exits 0 only if every cell matches bit for bit.
 *
 *   mpiexec -n 4 ./abar_mpi_halo [cells_per_rank] [iterations]
 */
#include <abar_mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double C = 0.25; /* diffusion number (stable below 0.5) */

static double cell_update(const double *u, int i)
{
    return u[i] + C * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
}

static double initial(long global_i) { return sin(0.001 * (double)global_i) * 100.0; }

/* Runs the stencil; split = 1 uses abar_mpi arrive/compute/wait, 0 MPI_Barrier.
 * Returns the seconds taken; leaves the field in u[1..n]. */
static double run(int split, int n, int iters, double *u, double *un, int rank, int size)
{
    MPI_Win win;
    double *ghost; /* [parity][0: from left neighbour, 1: from right] */
    MPI_Win_allocate(4 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &ghost, &win);
    for (int i = 0; i < 4; i++) ghost[i] = 0.0; /* the ends of the rod stay at 0 */
    for (int i = 1; i <= n; i++) u[i] = initial((long)rank * n + i - 1);
    abar_mpi_t bar;
    if (abar_mpi_init(&bar, MPI_COMM_WORLD, NULL) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        int p = it % 2;
        /* my left edge is my left neighbour's right ghost, and vice versa */
        if (rank > 0) MPI_Put(&u[1], 1, MPI_DOUBLE, rank - 1, 2 * p + 1, 1, MPI_DOUBLE, win);
        if (rank < size - 1) MPI_Put(&u[n], 1, MPI_DOUBLE, rank + 1, 2 * p + 0, 1, MPI_DOUBLE, win);
        MPI_Win_flush_all(win); /* the puts are complete at their targets */
        if (split) {
            abar_token_t t = abar_mpi_arrive(&bar);
            for (int i = 2; i < n; i++) un[i] = cell_update(u, i); /* interior */
            if (abar_mpi_wait(&bar, t) != 0) MPI_Abort(MPI_COMM_WORLD, 3);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = 2; i < n; i++) un[i] = cell_update(u, i);
        }
        MPI_Win_sync(win); /* see the neighbours' puts in our window */
        u[0] = ghost[2 * p + 0];
        u[n + 1] = ghost[2 * p + 1];
        un[1] = cell_update(u, 1);
        un[n] = cell_update(u, n);
        memcpy(&u[1], &un[1], (size_t)n * sizeof *u);
    }
    double dt = MPI_Wtime() - t0;
    MPI_Win_unlock_all(win);
    if (abar_mpi_destroy(&bar) != 0) MPI_Abort(MPI_COMM_WORLD, 4);
    MPI_Win_free(&win);
    return dt;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    int iters = argc > 2 ? atoi(argv[2]) : 300;
    if (n < 3 || iters < 1) {
        if (rank == 0) fprintf(stderr, "usage: %s [cells_per_rank >= 3] [iterations >= 1]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    double *u = calloc((size_t)n + 2, sizeof *u), *un = calloc((size_t)n + 2, sizeof *un);
    double t_block = run(0, n, iters, u, un, rank, size);
    double t_split = run(1, n, iters, u, un, rank, size);
    double tb, ts;
    MPI_Reduce(&t_block, &tb, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t_split, &ts, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    /* rank 0 checks the split run's field against the serial stencil */
    long total = (long)n * size;
    double *all = rank == 0 ? malloc((size_t)total * sizeof *all) : NULL;
    MPI_Gather(&u[1], n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int ok = 1;
    if (rank == 0) {
        double *s = calloc((size_t)total + 2, sizeof *s), *sn = calloc((size_t)total + 2, sizeof *sn);
        for (long i = 1; i <= total; i++) s[i] = initial(i - 1);
        for (int it = 0; it < iters; it++) {
            for (long i = 1; i <= total; i++) sn[i] = cell_update(s, (int)i);
            memcpy(&s[1], &sn[1], (size_t)total * sizeof *s);
        }
        long bad = 0;
        for (long i = 0; i < total; i++) bad += all[i] != s[i + 1];
        ok = bad == 0;
        printf("halo: %d ranks x %d cells, %d iterations: split barrier %.3f ms, "
               "MPI_Barrier %.3f ms (%.1f%% of it); %ld cells differ from serial: %s\n",
               size, n, iters, ts * 1e3, tb * 1e3, 100.0 * ts / tb, bad, ok ? "OK" : "WRONG");
        free(s);
        free(sn);
        free(all);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(u);
    free(un);
    MPI_Finalize();
    return ok ? 0 : 1;
}
