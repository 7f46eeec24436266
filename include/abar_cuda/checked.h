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
ABAR_CUDA__INL unsigned abar_cuda__magic(void)
{
    unsigned long long g;
    asm volatile("mov.u64 %0, %%gridid;" : "=l"(g));
    unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    return (unsigned)(g * 0x9E3779B97F4A7C15ull >> 32) ^ (b * 0x85EBCA6Bu) ^ 0xABA4u;
}

#define ABAR_CUDA__SH_PHASE(w)    ((unsigned)((w) >> 40))
#define ABAR_CUDA__SH_ARRIVED(w)  ((unsigned)((w) >> 20) & 0xFFFFFu)
#define ABAR_CUDA__SH_EXPECTED(w) ((unsigned)(w) & 0xFFFFFu)
#define ABAR_CUDA__SH(p, a, e) \
    (((unsigned long long)((p) & 0xFFFFFFu) << 40) | ((unsigned long long)(a) << 20) | (e))

ABAR_CUDA__INL void abar_cuda__check_init(const abar_cuda_bar_t *b)
{
    if (*(volatile const unsigned *)&b->magic != abar_cuda__magic())
        abar_cuda__fail("barrier used before its init was published "
                        "(abar_cuda_init, then __syncthreads or a cluster sync)", b, 0);
}

/* Counts n arrivals in the shadow; returns the shadow phase they fall in.
 * The word is changed by CAS only, so every arrival sees a consistent
 * (phase, arrived, expected) triple. */
ABAR_CUDA__INL unsigned abar_cuda__shadow_arrive(abar_cuda_bar_t *b, unsigned n, int drop)
{
    abar_cuda__check_init(b);
    if (n == 0 || n > ABAR_CUDA_EXPECTED_MAX)
        abar_cuda__fail("arrival count must be 1 .. 2^20-1", b, 0);
    if (drop)
        atomicSub(&b->next_expected, 1u);  /* before the arrival that publishes it */
    unsigned long long old = *(volatile unsigned long long *)&b->shadow, seen;
    for (;;) {
        unsigned ph = ABAR_CUDA__SH_PHASE(old), a = ABAR_CUDA__SH_ARRIVED(old);
        unsigned e = ABAR_CUDA__SH_EXPECTED(old);
        if (e == 0)
            abar_cuda__fail("arrival on a barrier every participant has dropped", b, ph);
        if (a + n > e)
            abar_cuda__fail("more arrivals in a phase than expected "
                            "(an arrive when the countdown is already zero)", b, ph);
        unsigned long long nw = (a + n == e)
            ? ABAR_CUDA__SH(ph + 1, 0, *(volatile unsigned *)&b->next_expected)
            : ABAR_CUDA__SH(ph, a + n, e);
        seen = atomicCAS(&b->shadow, old, nw);
        if (seen == old)
            return ph;
        old = seen;
    }
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
