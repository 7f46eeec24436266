/*
 * abar_cuda/checked.h - the checked build's shadow phase (-DABAR_CHECKED) and token construction.
 *
 * Part of abar_cuda.h: include <abar_cuda.h>, not this file.
 */
#ifndef ABAR_CUDA_CHECKED_H
#define ABAR_CUDA_CHECKED_H

#ifndef ABAR_CUDA_H
#error "include <abar_cuda.h>, not <abar_cuda/checked.h>"
#endif

/* ------------------------------------------------------------------------ */
/* Checked build: shadow phase                                              */
/* ------------------------------------------------------------------------ */

#ifdef ABAR_CHECKED
/* The init stamp of the block of cluster rank `rank` in this cluster: the
 * launch's %gridid and the block's place in the grid, named by its cluster
 * and its rank there, so a block can compute a peer's stamp (a launch
 * without clusters has clusters of one block: the block index). */
ABAR_CUDA__INL unsigned abar_cuda__magic_of(unsigned rank)
{
    unsigned long long g;
    asm volatile("mov.u64 %0, %%gridid;" : "=l"(g));
#if ABAR_CUDA__SM90
    unsigned cx, cy, cz, nx, ny, nr;
    asm("mov.u32 %0, %%clusterid.x;" : "=r"(cx));
    asm("mov.u32 %0, %%clusterid.y;" : "=r"(cy));
    asm("mov.u32 %0, %%clusterid.z;" : "=r"(cz));
    asm("mov.u32 %0, %%nclusterid.x;" : "=r"(nx));
    asm("mov.u32 %0, %%nclusterid.y;" : "=r"(ny));
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(nr));
    unsigned b = (cx + nx * (cy + ny * cz)) * nr + rank;
#else
    (void)rank;
    unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
#endif
    return (unsigned)(g * 0x9E3779B97F4A7C15ull >> 32) ^ (b * 0x85EBCA6Bu) ^ 0xABA4u;
}

ABAR_CUDA__INL unsigned abar_cuda__magic(void)
{
#if ABAR_CUDA__SM90
    unsigned r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return abar_cuda__magic_of(r);
#else
    return abar_cuda__magic_of(0);
#endif
}

/* The shadow's fence: acquire and release at the widest scope an arrival
 * can come from (the cluster on sm_90, the block before). */
ABAR_CUDA__INL void abar_cuda__shadow_fence(void)
{
#if ABAR_CUDA__SM90
    asm volatile("fence.acq_rel.cluster;" ::: "memory");
#else
    __threadfence_block();
#endif
}

#define ABAR_CUDA__SH_PHASE(w)    ((unsigned)((w) >> 40))
#define ABAR_CUDA__SH_ARRIVED(w)  ((unsigned)((w) >> 20) & 0xFFFFFu)
#define ABAR_CUDA__SH_EXPECTED(w) ((unsigned)(w) & 0xFFFFFu)
#define ABAR_CUDA__SH(p, a, e) \
    (((unsigned long long)((p) & 0xFFFFFFu) << 40) | ((unsigned long long)(a) << 20) | (e))

/* Counts n arrivals in the shadow of barrier s (this block's barrier, or
 * a peer's through its mapa address, stamped `magic`); returns the shadow
 * phase they fall in.  `b` names the barrier in a trap message.  The word is
 * changed by CAS only, so every arrival sees a consistent (phase, arrived,
 * expected) triple.  Called before the hardware arrival it shadows: the
 * arrival's release (a remote one's at cluster scope) then orders this CAS
 * before whatever the phase's waiters do next, their next arrival's CAS
 * included, so a shadow phase holds exactly the arrivals of its hardware
 * phase.  A drop lowers next_expected, then fences, then counts its arrival;
 * the arrival that completes the phase fences after reading the word and
 * before reading next_expected: if the word it read holds the drop's count,
 * it reads the lowered count (release and acquire patterns through the
 * word's chain of CASes; docs/cuda.md). */
ABAR_CUDA__INL unsigned abar_cuda__shadow_count(abar_cuda_bar_t *s, const void *b, unsigned magic,
                                                unsigned n, int drop)
{
    if (*(volatile const unsigned *)&s->magic != magic)
        abar_cuda__fail("barrier used before its init was published "
                        "(abar_cuda_init, then __syncthreads or a cluster sync)", b, 0);
    if (n == 0 || n > ABAR_CUDA_EXPECTED_MAX)
        abar_cuda__fail("arrival count must be 1 .. 2^20-1", b, 0);
    if (drop) {
        atomicSub(&s->next_expected, 1u);
        abar_cuda__shadow_fence();
    }
    unsigned long long old = *(volatile unsigned long long *)&s->shadow, seen;
    for (;;) {
        unsigned ph = ABAR_CUDA__SH_PHASE(old), a = ABAR_CUDA__SH_ARRIVED(old);
        unsigned e = ABAR_CUDA__SH_EXPECTED(old);
        if (e == 0)
            abar_cuda__fail("arrival on a barrier every participant has dropped", b, ph);
        if (a + n > e)
            abar_cuda__fail("more arrivals in a phase than expected "
                            "(an arrive when the countdown is already zero)", b, ph);
        unsigned long long nw;
        if (a + n == e) {
            abar_cuda__shadow_fence();
            nw = ABAR_CUDA__SH(ph + 1, 0, *(volatile unsigned *)&s->next_expected);
        } else {
            nw = ABAR_CUDA__SH(ph, a + n, e);
        }
        seen = atomicCAS(&s->shadow, old, nw);
        if (seen == old)
            return ph;
        old = seen;
    }
}

ABAR_CUDA__INL void abar_cuda__check_init(const abar_cuda_bar_t *b)
{
    if (*(volatile const unsigned *)&b->magic != abar_cuda__magic())
        abar_cuda__fail("barrier used before its init was published "
                        "(abar_cuda_init, then __syncthreads or a cluster sync)", b, 0);
}

/* Counts n arrivals of this block on its barrier b. */
ABAR_CUDA__INL unsigned abar_cuda__shadow_arrive(abar_cuda_bar_t *b, unsigned n, int drop)
{
    return abar_cuda__shadow_count(b, b, abar_cuda__magic(), n, drop);
}

ABAR_CUDA__INL void abar_cuda__shadow_check_token(const abar_cuda_bar_t *b, abar_cuda_token_t t)
{
    abar_cuda__check_init(b);
    if (t.bar != (const void *)b)
        abar_cuda__fail("token of another barrier", b, t.phase);
    unsigned cur = ABAR_CUDA__SH_PHASE(*(volatile unsigned long long *)&b->shadow);
    if (((cur - t.phase) & 0xFFFFFFu) >= 2)
        abar_cuda__fail("wait with a token two or more phases old "
                        "(only the current or the preceding phase may be named)", b, t.phase);
}
#endif /* ABAR_CHECKED */

ABAR_CUDA__INL abar_cuda_token_t abar_cuda__token(unsigned long long raw, const void *b, unsigned phase)
{
    abar_cuda_token_t t;
    t.raw = raw;
#ifdef ABAR_CHECKED
    t.bar = b;
    t.phase = phase;
#else
    (void)b;
    (void)phase;
#endif
    return t;
}

#endif /* ABAR_CUDA_CHECKED_H */
