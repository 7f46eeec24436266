/*
 * engine_dissem.c - the flat engine without a completion: a dissemination
 * barrier, ceil(log2 P) rounds of one-word messages (tag = round); round i
 * sends to rank + 2^i and hears from rank - 2^i.
 */
#include "mpi_internal.h"

#include <stdlib.h>

int abar_mpi__dissem_setup(struct mpi_impl *m)
{
    int P = m->size, r = m->rank;
    int R = 0;
    while ((1 << R) < P) R++;
    size_t n = (size_t)R + 1;
    m->sreq = malloc(n * sizeof *m->sreq);
    m->rreq = malloc(n * sizeof *m->rreq);
    m->rbuf = calloc(n, sizeof *m->rbuf);
    m->to = malloc(n * sizeof *m->to);
    m->from = malloc(n * sizeof *m->from);
    if (!m->sreq || !m->rreq || !m->rbuf || !m->to || !m->from) return ENOMEM;
    for (int i = 0, d = 1; i < R; i++, d <<= 1) {
        m->sreq[i] = m->rreq[i] = MPI_REQUEST_NULL;
        m->to[i] = (r + d) % P;
        m->from[i] = (r - d + P) % P;
    }
    m->rounds = R;
    return 0;
}

int abar_mpi__dissem_start(struct mpi_impl *m)
{
    m->rnd = 0;
    for (int i = 0; i < m->rounds; i++)
        if (recv_word(m, &m->rbuf[i], m->from[i], i, &m->rreq[i])) return -1;
    return m->rounds ? send_word(m, m->to[0], 0, &m->sreq[0]) : 0;
}

int abar_mpi__dissem_poll(struct mpi_impl *m)
{
    int flag;
    while (m->rnd < m->rounds) {
        if (MPI_Test(&m->rreq[m->rnd], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
        if (!flag) return 0;
        int c = check_word(m, m->rbuf[m->rnd]);
        if (c < 0) return -1;
        if (c == 0) {
            if (recv_word(m, &m->rbuf[m->rnd], m->from[m->rnd], m->rnd, &m->rreq[m->rnd])) return -1;
            continue;
        }
        /* round rnd heard from rank - 2^rnd: everyone it had heard from has arrived */
        if (++m->rnd < m->rounds && send_word(m, m->to[m->rnd], m->rnd, &m->sreq[m->rnd])) return -1;
    }
    /* our sends must be done before the next phase rewrites sbuf */
    if (MPI_Testall(m->rounds, m->sreq, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return -1;
    return flag;
}
