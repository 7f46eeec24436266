// std_barrier.cpp - C++20 std::barrier (libstdc++) and abar::barrier
// (include/abar.hpp) behind C entries, the one C++ file of the benchmark.
// The completion is a plain function pointer wrapped in a callable, so the
// C side can pass an empty or a real one.
#include "abar.hpp"

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

// abar::barrier as a C++ program would write it: abar::barrier<> without a
// completion (the fast path), abar::barrier<Completion> with one.
struct ABar {
    abar::barrier<> *plain = nullptr;
    abar::barrier<Completion> *with = nullptr;
    ~ABar()
    {
        delete plain;
        delete with;
    }
};

struct alignas(64) AThreadState {
    std::optional<abar::barrier<>::arrival_token> plain;
    std::optional<abar::barrier<Completion>::arrival_token> with;
};

} // namespace

extern "C" {

void *abarcpp_create(unsigned n, void (*fn)(void *), void *arg)
{
    auto *b = new (std::nothrow) ABar;
    if (!b) return nullptr;
    if (fn) b->with = new (std::nothrow) abar::barrier<Completion>(static_cast<std::ptrdiff_t>(n), Completion{fn, arg});
    else b->plain = new (std::nothrow) abar::barrier<>(static_cast<std::ptrdiff_t>(n));
    return b;
}

void abarcpp_destroy(void *b) { delete static_cast<ABar *>(b); }

void *abarcpp_thread_state(void *, unsigned) { return new (std::nothrow) AThreadState; }

void abarcpp_thread_free(void *ts) { delete static_cast<AThreadState *>(ts); }

void abarcpp_arrive_and_wait(void *b, void *)
{
    auto *p = static_cast<ABar *>(b);
    if (p->plain) p->plain->arrive_and_wait();
    else p->with->arrive_and_wait();
}

void abarcpp_arrive(void *b, void *ts)
{
    auto *p = static_cast<ABar *>(b);
    auto *t = static_cast<AThreadState *>(ts);
    if (p->plain) t->plain.emplace(p->plain->arrive());
    else t->with.emplace(p->with->arrive());
}

void abarcpp_wait(void *b, void *ts)
{
    auto *p = static_cast<ABar *>(b);
    auto *t = static_cast<AThreadState *>(ts);
    if (p->plain) {
        p->plain->wait(std::move(*t->plain));
        t->plain.reset();
    } else {
        p->with->wait(std::move(*t->with));
        t->with.reset();
    }
}

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
