// abar.hpp - abar::barrier, C++20 std::barrier's interface over abar's C barrier.
//
// std::barrier -> abar::barrier is a one-word change: the same members with
// the same signatures (arrival_token, max(), the constructor with a
// completion, arrive(n), wait(token&&), arrive_and_wait(), arrive_and_drop()).
// Differences, all on the safe side:
//  - where std::barrier has a precondition (undefined behaviour when broken),
//    abar::barrier throws std::system_error with abar's errno: more
//    arrivals than the phase expects (EINVAL), a token of another barrier
//    (EINVAL), waiting on the barrier from its own completion, by wait() or
//    by arrive_and_wait() (EDEADLK), any call after cancel() (ECANCELED);
//  - a completion that throws ends in std::terminate (std::barrier's
//    completion must not throw; neither library checks it);
//  - the constructor is not constexpr (it initialises the C barrier), and
//    throws std::system_error (EINVAL) for expected < 0 or > max();
//    expected == 0 makes a barrier that any arrival finds over-full;
//  - extras: try_wait, wait_for, wait_until, cancel, phase, native_handle.
// The completion runs inline, on the thread whose arrival completes the
// phase, before any waiter is released; nothing is allocated.  Header-only:
// link with libabar (-labar, or the CMake target abar::abar).
#ifndef ABAR_HPP
#define ABAR_HPP

#include "abar.h"

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

namespace abar {

// The default completion: none (the barrier then takes abar's fast path for
// barriers without one).
struct no_completion {
    void operator()() noexcept {}
};

// Any completion std::barrier takes: a function object invocable as an
// lvalue with no argument.  The standard requires it not to throw but does
// not require it to say noexcept (a plain `[&] { ... }` lambda is fine); one
// that throws ends the program in std::terminate, as an exception leaving a
// noexcept function does.
template <class CompletionFunction = no_completion>
class barrier {
    static_assert(std::is_invocable_v<CompletionFunction &>,
                  "the completion must be invocable as an lvalue with no argument (as for std::barrier)");
    static_assert(std::is_move_constructible_v<CompletionFunction>,
                  "the completion must be move-constructible (as for std::barrier)");

public:
    class arrival_token {
    public:
        arrival_token(arrival_token &&) noexcept = default;
        arrival_token &operator=(arrival_token &&) noexcept = default;
        arrival_token(const arrival_token &) noexcept = default;
        arrival_token &operator=(const arrival_token &) noexcept = default;

    private:
        friend class barrier;
        explicit arrival_token(abar_token_t t) noexcept : t_(t) {}
        abar_token_t t_;
    };

    static constexpr std::ptrdiff_t max() noexcept { return ABAR_EXPECTED_MAX; }

    explicit barrier(std::ptrdiff_t expected, CompletionFunction f = CompletionFunction())
        : f_(std::move(f))
    {
        if (expected < 0 || expected > max()) fail(EINVAL, "abar::barrier::barrier");
        if (expected == 0) return; // no C barrier: every arrival is one too many
        abar_attr_t attr{};
        if constexpr (!std::is_same_v<CompletionFunction, no_completion>) {
            attr.completion = &run_completion;
            attr.arg = this;
        }
        int r = abar_init(&b_, static_cast<uint32_t>(expected), &attr);
        if (r != 0) fail(r, "abar::barrier::barrier");
        live_ = true;
    }

    // As std::barrier's, the destructor needs no thread inside a call;
    // abar says EBUSY while the last of them is still leaving one: wait.
    ~barrier()
    {
        if (!live_) return;
        while (abar_destroy(&b_) == EBUSY) std::this_thread::yield();
    }

    barrier(const barrier &) = delete;
    barrier &operator=(const barrier &) = delete;

    [[nodiscard]] arrival_token arrive(std::ptrdiff_t update = 1)
    {
        if (update <= 0 || update > max() || !live_) fail(EINVAL, "abar::barrier::arrive");
        abar_token_t t = update == 1 ? abar_arrive(&b_) : abar_arrive_n(&b_, static_cast<uint32_t>(update));
        if (int r = abar_token_error(t)) fail(r, "abar::barrier::arrive");
        return arrival_token(t);
    }

    void wait(arrival_token &&arrival) const
    {
        if (int r = abar_wait(handle(), arrival.t_)) fail(r, "abar::barrier::wait");
    }

    void arrive_and_wait()
    {
        if (!live_) fail(EINVAL, "abar::barrier::arrive_and_wait");
        if (int r = abar_arrive_and_wait(&b_)) fail(r, "abar::barrier::arrive_and_wait");
    }

    void arrive_and_drop()
    {
        if (!live_) fail(EINVAL, "abar::barrier::arrive_and_drop");
        if (int r = abar_arrive_and_drop(&b_)) fail(r, "abar::barrier::arrive_and_drop");
    }

    // ---- abar's extras ------------------------------------------------------
    // true if the token's phase has completed; never blocks.
    bool try_wait(const arrival_token &arrival) const
    {
        int r = abar_test(handle(), arrival.t_);
        if (r == 0) return true;
        if (r == EBUSY) return false;
        fail(r, "abar::barrier::try_wait");
    }

    // true if the phase completed by the deadline, false on timeout.
    template <class Clock, class Duration>
    bool wait_until(arrival_token &&arrival, const std::chrono::time_point<Clock, Duration> &deadline) const
    {
        // abar_wait_until takes a CLOCK_MONOTONIC time (steady_clock's, on
        // Linux); another clock's deadline is taken as the time left.
        const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
        return wait_for(std::move(arrival), left);
    }

    template <class Rep, class Period>
    bool wait_for(arrival_token &&arrival, const std::chrono::duration<Rep, Period> &rel) const
    {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(rel).count();
        if (ns < 0) ns = 0;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        const long long total = static_cast<long long>(now.tv_nsec) + static_cast<long long>(ns % 1000000000);
        struct timespec abs;
        abs.tv_sec = now.tv_sec + static_cast<time_t>(ns / 1000000000 + total / 1000000000);
        abs.tv_nsec = static_cast<long>(total % 1000000000);
        int r = abar_wait_until(handle(), arrival.t_, &abs);
        if (r == 0) return true;
        if (r == ETIMEDOUT) return false;
        fail(r, "abar::barrier::wait_for");
    }

    // Every current and later wait on an incomplete phase fails with
    // ECANCELED (std::system_error), arrivals too.
    void cancel()
    {
        if (live_) abar_cancel(&b_);
    }

    // Completed phases: 0 after construction, +1 per phase.
    std::uint64_t phase() const noexcept { return live_ ? abar_phase(&b_) : 0; }

    abar_t *native_handle() noexcept { return &b_; }

private:
    // noexcept: an exception from the completion never unwinds into the C
    // library's frames; it ends in std::terminate here.
    static void run_completion(void *self) noexcept { static_cast<barrier *>(self)->f_(); }
    abar_t *handle() const noexcept { return const_cast<abar_t *>(&b_); }
    [[noreturn]] static void fail(int err, const char *what)
    {
        throw std::system_error(std::error_code(err, std::generic_category()), what);
    }

    abar_t b_{};
    [[no_unique_address]] CompletionFunction f_;
    bool live_ = false;
};

} // namespace abar

#endif // ABAR_HPP
