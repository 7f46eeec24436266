/*
 * os_win.h - the prelude of every library source file in a Windows build
 * (CMakeLists.txt force-includes it there; nowhere else).
 *
 * The C runtime mingw-w64 links (msvcrt) has no C11 aligned_alloc, and its
 * _aligned_malloc blocks must be freed with _aligned_free, not free.  So
 * in the library every allocation goes through _aligned_malloc (malloc's
 * alignment, 16, where none is asked for), and every free through
 * _aligned_free: memory from aligned_alloc is freed with free, as C11
 * says.  No block crosses the library's API, so the pairing holds.
 *
 * Windows has no fork: winpthreads defines pthread_atfork as a macro that
 * drops its handlers, which would leave them unused.  This one takes them.
 */
#ifndef ABAR_OS_WIN_H
#define ABAR_OS_WIN_H

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

static inline void *abar__win_alloc(size_t align, size_t size) { return _aligned_malloc(size ? size : 1, align); }
static inline void *abar__win_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    const size_t bytes = n * size;
    void *p = _aligned_malloc(bytes ? bytes : 1, 16);
    if (p) memset(p, 0, bytes);
    return p;
}
static inline void *abar__win_realloc(void *p, size_t size) { return _aligned_realloc(p, size ? size : 1, 16); }
#define aligned_alloc(align, size) abar__win_alloc((align), (size))
#define malloc(size) abar__win_alloc(16, (size))
#define calloc(n, size) abar__win_calloc((n), (size))
#define realloc(p, size) abar__win_realloc((p), (size))
#define free(p) _aligned_free(p)

#undef pthread_atfork
static inline int abar__no_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    (void)prepare, (void)parent, (void)child;
    return 0;
}
#define pthread_atfork abar__no_atfork

#endif
