/*
 * engine_tree.c - the engine with a completion over messages: binomial
 * fan-in to the root, the completion on the root, binomial fan-out of
 * [phase | result] that releases (a cancel on the root travels down in the
 * phase word, WORD_CANCELLED).
 */
#include "mpi_internal.h"

#include <stdlib.h>
#include <string.h>

static int send_down(struct mpi_impl *m)
{
    for (int i = 0; i < m->nchild; i++)
        if (MPI_Isend(m->staging, (int)m->staging_bytes, MPI_BYTE, m->child[i], TAG_DOWN, m->comm,
                      &m->child_out[i]) != MPI_SUCCESS)
            return -1;
    return 0;
}

static int recv_down(struct mpi_impl *m)
{
    return MPI_Irecv(m->staging, (int)m->staging_bytes, MPI_BYTE, m->parent, TAG_DOWN, m->comm,
                     &m->down) == MPI_SUCCESS ? 0 : -1;
}

int abar_mpi__tree_setup(struct mpi_impl *m)
{
    int P = m->size, r = m->rank;
    /* TREE: binomial tree over v = rank relative to root; parent v - lowbit(v),
     * children v + 2^j for 2^j below lowbit(v) (all 2^j for the root). */
    int v = (r - m->root + P) % P;
    m->staging_bytes = sizeof(uint64_t) + m->result_size;
    m->staging = calloc(1, m->staging_bytes);
    m->child_in = malloc(sizeof(MPI_Request) * 32);
    m->child_out = malloc(sizeof(MPI_Request) * 32);
    m->cbuf = calloc(32, sizeof *m->cbuf);
    if (!m->staging || !m->child_in || !m->child_out || !m->cbuf) return ENOMEM;
    for (int d = 1; d < P; d <<= 1) {
        if (v & d) break;
        if (v + d >= P) continue;
        int k = m->nchild++;
        m->child_in[k] = m->child_out[k] = MPI_REQUEST_NULL;
        m->child[k] = (v + d + m->root) % P;
    }
    m->parent = v ? (v - (v & -v) + m->root) % P : -1;
    return 0;
}

int abar_mpi__tree_start(struct mpi_impl *m)
{
    m->down_done = m->rank == m->root;
    for (int i = 0; i < m->nchild; i++)
        if (recv_word(m, &m->cbuf[i], m->child[i], TAG_UP, &m->child_in[i])) return -1;
    return m->rank != m->root ? recv_down(m) : 0;
}

int abar_mpi__tree_poll(struct mpi_impl *m)
{
    int flag;
    bool root = m->rank == m->root;
    if (m->stage == ST_ARRIVING) {
        if (MPI_Testall(m->nchild, m->child_in, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return -1;
        if (!flag) return 0;
        bool again = false;
        for (int i = 0; i < m->nchild; i++) {
            int c = check_word(m, m->cbuf[i]);
            if (c < 0) return -1;
            if (c == 0) {
                if (recv_word(m, &m->cbuf[i], m->child[i], TAG_UP, &m->child_in[i])) return -1;
                again = true;
            }
        }
        if (again) return 0;
        if (root && (m->draining || atomic_load(&m->cancelled))) {
            /* cancelled here (sticky: the completion never runs again):
             * release the others with the cancel, not with a result */
            uint64_t w = m->sbuf + WORD_CANCELLED;
            memcpy(m->staging, &w, sizeof w);
            if (send_down(m)) return -1;
        } else if (root) {
            /* every rank has arrived and none is released: the completion's moment */
            if (m->completion) {
                const struct mpi_impl *outer = abar_mpi__completing;
                abar_mpi__completing = m;
                m->completion(m->arg);
                abar_mpi__completing = outer;
            }
            memcpy(m->staging, &m->sbuf, sizeof m->sbuf);
            if (m->result_size) memcpy(m->staging + sizeof m->sbuf, m->result, m->result_size);
            if (send_down(m)) return -1;
        } else if (send_word(m, m->parent, TAG_UP, &m->up)) {
            return -1;
        }
        m->stage = ST_RELEASING;
    }
    if (!m->down_done) {
        if (MPI_Test(&m->down, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
        if (!flag) return 0;
        uint64_t w;
        memcpy(&w, m->staging, sizeof w);
        int c = check_word(m, w);
        if (c < 0) return -1;
        if (c == 0) return recv_down(m);
        if (c == 2) {
            /* the root cancelled: so do we (the flagged word goes on down) */
            atomic_store(&m->cancelled, 1);
            abar_cancel(&m->local);
            abar_cancel(&m->release);
        } else if (m->result_size && !m->draining) {
            memcpy(m->result, m->staging + sizeof w, m->result_size);
        }
        if (send_down(m)) return -1;
        m->down_done = true;
    }
    if (MPI_Testall(m->nchild, m->child_out, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return -1;
    if (!flag) return 0;
    if (!root) {
        if (MPI_Test(&m->up, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
        if (!flag) return 0;
    }
    return 1;
}

