/*
 * abar_cuda.h - asynchronous barriers for CUDA threads: the device layer.
 *
 * The host API's verbs (include/abar.h) for the threads of a GPU block and
 * cluster, on the hardware mbarrier.  CUDA C: static inline __device__
 * functions on plain structs; no templates, classes or namespaces.
 *
 *   __shared__ abar_cuda_bar_t bar;
 *   if (threadIdx.x == 0) abar_cuda_init(&bar, blockDim.x);
 *   __syncthreads();                              // publishes the init
 *   abar_cuda_token_t t = abar_cuda_arrive(&bar); // code before is published
 *   compute();                                    // independent work
 *   abar_cuda_wait(&bar, t);                      // everyone has arrived
 *
 * Layers (each a thin wrapper named after its PTX instruction, then the
 * verbs on top):
 *   sm_80+  abar_cuda_bar_t  block barrier: init, arrive, arrive_n,
 *           arrive_and_drop, wait, wait_parity, current_parity, test,
 *           try_wait, arrive_and_wait.
 *   sm_80+  abar_cuda_cbar_t block barrier with a completion function, run by
 *           the last arriver before anyone is released (seed 001).
 *   sm_80+  abar_cuda_ring_t producer/consumer ring over full/empty pairs
 *           (warp producer with register copies or cp.async).
 *   sm_90   expect_tx / complete_tx, cp.async.bulk global->shared completing
 *           on a barrier, arrival on a peer block's barrier, cluster
 *           arrive/wait (hardware and mbarrier-based), map_shared_rank,
 *           cluster-safe exit, the ring with a bulk-copy producer.
 *
 * This header is an umbrella over one header per concept, in include order:
 *   abar_cuda/types.h    errors, limits, types
 *   abar_cuda/ptx.h      helpers, the failure trap, thin PTX wrappers
 *   abar_cuda/checked.h  the checked build's shadow phase, tokens
 *   abar_cuda/bar.h      the block barrier
 *   abar_cuda/cbar.h     the completion barrier, ABAR_CUDA_CBAR_DEFINE
 *   abar_cuda/tx.h       Hopper transaction counts and bulk copies
 *   abar_cuda/cluster.h  Hopper clusters
 *   abar_cuda/ring.h     the producer/consumer ring
 * Include <abar_cuda.h>; the parts refuse to be included alone.
 *
 * -DABAR_CHECKED: every barrier carries a shadow phase and every token the
 * barrier and phase it names; each rule of the CUDA guide's section on a
 * barrier's phase (seed 003) is checked and a broken one traps with a message
 * naming the rule, the barrier and the phase.  Without it: no shadow, no
 * checks, the same instructions as hand-written PTX.
 *
 * Functions that need sm_90 trap with a message when compiled for an older
 * target (never a silent fallback).  Hardware limits: an expected count is
 * 1 .. 2^20-1 (ABAR_CUDA_EXPECTED_MAX); the pending transaction count of a
 * phase is at most 2^20-1 bytes; a bulk copy moves a multiple of 16 bytes
 * between 16-byte aligned addresses.
 */
#ifndef ABAR_CUDA_H
#define ABAR_CUDA_H

#if defined(__CUDACC__)

#include <stdint.h>
#include <stdio.h>

#include "abar_cuda/types.h"
#include "abar_cuda/ptx.h"
#include "abar_cuda/checked.h"
#include "abar_cuda/bar.h"
#include "abar_cuda/cbar.h"
#include "abar_cuda/tx.h"
#include "abar_cuda/cluster.h"
#include "abar_cuda/ring.h"

#endif /* __CUDACC__ */
#endif /* ABAR_CUDA_H */
