// std_barrier.cpp - C++20 std::barrier (libstdc++) behind a C entry, the one
// C++ file of the benchmark.  The completion is a plain function pointer
// wrapped in a callable, so the C side can pass an empty or a real one.
#include <barrier>
#include <cstdint>
#include <new>
#include <optional>
#include <utility>

namespace {

struct Completion {
    void (*fn)(void *);
    void *arg;
    void operator()() noexcept
    {
        if (fn) fn(arg);
    }
};

struct Bar {
    std::barrier<Completion> b;
    Bar(unsigned n, void (*fn)(void *), void *arg) : b(static_cast<std::ptrdiff_t>(n), Completion{fn, arg}) {}
};

struct alignas(64) ThreadState {
    std::optional<std::barrier<Completion>::arrival_token> tok;
};

} // namespace

extern "C" {

void *stdb_create(unsigned n, void (*fn)(void *), void *arg)
{
    return new (std::nothrow) Bar(n, fn, arg);
}

void stdb_destroy(void *b) { delete static_cast<Bar *>(b); }

void *stdb_thread_state(void *, unsigned) { return new (std::nothrow) ThreadState; }

void stdb_thread_free(void *ts) { delete static_cast<ThreadState *>(ts); }

void stdb_arrive_and_wait(void *b, void *) { static_cast<Bar *>(b)->b.arrive_and_wait(); }

void stdb_arrive(void *b, void *ts)
{
    static_cast<ThreadState *>(ts)->tok.emplace(static_cast<Bar *>(b)->b.arrive());
}

void stdb_wait(void *b, void *ts)
{
    auto *t = static_cast<ThreadState *>(ts);
    static_cast<Bar *>(b)->b.wait(std::move(*t->tok));
    t->tok.reset();
}

} // extern "C"
