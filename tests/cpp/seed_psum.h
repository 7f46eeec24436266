// seed_psum.h - the psum of seed 001 (a block of threads summing into acc
// through the barrier's completion), on the host, written once against a
// barrier named by the macro BARRIER: seed_psum.cpp includes it with
// BARRIER std::barrier and with BARRIER abar::barrier, the one-word change.
// Kept as the seed writes it: the completion is a plain capturing lambda
// (not noexcept), the barrier is built in aligned storage with placement new
// from the lambda's type.  unsigned, not the seed's int: acc grows as
// (block + 1)^phases, and only unsigned arithmetic may wrap.
#include <cstddef>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace PSUM_NS {

inline unsigned psum(const unsigned *data, int n, unsigned *acc, int block_size)
{
    std::vector<unsigned> smem(static_cast<std::size_t>(block_size));

    auto completion_fn = [&] {
        unsigned sum = 0;
        for (int i = 0; i < block_size; ++i) sum += smem[static_cast<std::size_t>(i)];
        *acc += sum;
    };

    // Barrier storage
    using completion_fn_t = decltype(completion_fn);
    using barrier_t = BARRIER<completion_fn_t>;
    alignas(barrier_t) unsigned char bar_storage[sizeof(barrier_t)];

    // Initialize barrier
    barrier_t *bar = new (bar_storage) barrier_t{block_size, completion_fn};

    auto body = [&](int thread_rank) {
        // Main loop
        for (int i = 0; i < n; i += block_size) {
            smem[static_cast<std::size_t>(thread_rank)] = data[i] + *acc;
            auto t = bar->arrive();
            // independent computation would go here
            bar->wait(std::move(t));
        }
    };
    std::vector<std::thread> block;
    for (int r = 1; r < block_size; r++) block.emplace_back(body, r);
    body(0);
    for (auto &t : block) t.join();
    bar->~barrier_t();

    // The class template argument deduction form, the one-word change too.
    BARRIER deduced(1, completion_fn);
    deduced.arrive_and_wait(); // adds the last phase's smem once more
    return *acc;
}

} // namespace PSUM_NS
