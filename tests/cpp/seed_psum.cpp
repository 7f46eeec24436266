// seed_psum.cpp - seed 001's psum (seed_psum.h, written once) run on
// std::barrier and on abar::barrier: both must compile from the seed's own
// code (a completion lambda that is not noexcept) and give the sum worked
// out serially.  Built with g++, clang++, and clang++ -stdlib=libc++ where
// that library is installed (tests/cpp/CMakeLists.txt).
#include "abar.hpp"

#include <barrier>
#include <cstdio>
#include <vector>

#define BARRIER std::barrier
#define PSUM_NS on_std
#include "seed_psum.h"
#undef BARRIER
#undef PSUM_NS

#define BARRIER abar::barrier
#define PSUM_NS on_abar
#include "seed_psum.h"
#undef BARRIER
#undef PSUM_NS

int main()
{
    enum { BLOCK = 8, PHASES = 500, N = BLOCK * PHASES };
    std::vector<unsigned> data(N);
    for (int i = 0; i < N; i++) data[static_cast<std::size_t>(i)] = static_cast<unsigned>(i * 7 + 3);

    // What the seed computes, serially: each phase every thread stores
    // data[i] + acc, and the completion adds the block's stores to acc.
    unsigned want = 0, last = 0;
    for (int i = 0; i < N; i += BLOCK) {
        last = BLOCK * (data[static_cast<std::size_t>(i)] + want);
        want += last;
    }
    want += last; // the deduced barrier's one phase

    int failed = 0;
    unsigned acc = 0;
    unsigned got = on_std::psum(data.data(), N, &acc, BLOCK);
    std::printf("std::barrier:  psum %u (want %u)\n", got, want);
    failed += got != want;
    acc = 0;
    got = on_abar::psum(data.data(), N, &acc, BLOCK);
    std::printf("abar::barrier: psum %u (want %u)\n", got, want);
    failed += got != want;
#if defined(_LIBCPP_VERSION)
    std::printf("C++ library: libc++ %d\n", _LIBCPP_VERSION);
#elif defined(__GLIBCXX__)
    std::printf("C++ library: libstdc++ %d\n", __GLIBCXX__);
#endif
    std::printf("seed_psum: %s\n", failed ? "FAIL" : "PASS");
    return failed != 0;
}
