/*
 * test_mpi_oversub.c - white box: abar_mpi_init's verdict that the node runs
 * more threads than it has CPUs (which makes every poller yield: progress.c,
 * arrive_wait.c) counts the CPUs the node's ranks may run on together, the
 * union of their affinity masks, not the machine's CPUs.
 */
#include "mpi_harness.h"
#include "mpi_internal.h"

#include <sched.h>

/* The ranks of this node, and the union of their affinity masks. */
static int node_cpus(cpu_set_t *all)
{
    MPI_Comm node;
    int local = 0;
    MCHECK_EQ(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
              MPI_SUCCESS);
    MPI_Comm_size(node, &local);
    MCHECK_EQ(sched_getaffinity(0, sizeof *all, all), 0);
    MCHECK_EQ(MPI_Allreduce(MPI_IN_PLACE, all, (int)sizeof *all, MPI_BYTE, MPI_BOR, node), MPI_SUCCESS);
    MPI_Comm_free(&node);
    return local;
}

static bool oversub_after_init(void)
{
    abar_mpi_t b;
    MCHECK_EQ(abar_mpi_init(&b, MPI_COMM_WORLD, NULL), 0);
    bool v = live(&b)->oversub;
    for (int i = 0; i < 100; i++) MCHECK_EQ(abar_mpi_arrive_and_wait(&b), 0); /* and it works */
    MCHECK_EQ(abar_mpi_destroy(&b), 0);
    return v;
}

/* One participant a rank: oversubscribed exactly when the node's ranks
 * outnumber the CPUs they may use. */
MTEST(verdict_counts_the_node_ranks_cpus)
{
    cpu_set_t all;
    int local = node_cpus(&all);
    MCHECK_EQ(oversub_after_init(), local > CPU_COUNT(&all));
}

/* Every rank of the node confined to one CPU (as taskset or a cpuset would):
 * oversubscribed, however many CPUs the machine has. */
MTEST(ranks_confined_to_one_cpu_are_oversubscribed)
{
    cpu_set_t all, mine, one;
    int local = node_cpus(&all);
    if (local < 2) {
        MSKIP("one rank on this node: one CPU is enough for it");
        return;
    }
    MCHECK_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    int first = 0;
    while (!CPU_ISSET(first, &all)) first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    MCHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    MCHECK(oversub_after_init());
    MCHECK_EQ(sched_setaffinity(0, sizeof mine, &mine), 0);
}

int main(int argc, char **argv) { return mharness_main(argc, argv, MPI_THREAD_MULTIPLE); }
