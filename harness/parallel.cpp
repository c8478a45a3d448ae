#include "harness/parallel.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "harness/error.hpp"

namespace klab {

int resolve_threads(int requested) {
    if (requested < 0 || requested > kMaxThreads) {
        throw Error(fmt::format("thread count {}", requested),
                    fmt::format("0 (one per hardware thread) or 1 to {}", kMaxThreads));
    }
    if (requested > 0) return requested;
    return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(kMaxThreads)));
}

void parallel_for(int count, int threads, const std::function<void(int, int)>& body) {
    if (count <= 0) return;
    threads = std::min(resolve_threads(threads), count);
    if (threads == 1) {
        body(0, count);
        return;
    }
    std::exception_ptr first_error;
    std::mutex error_mutex;
    const auto keep_first_error = [&](std::exception_ptr error) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = error;
    };
    std::vector<std::thread> workers;
    workers.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        const int begin = static_cast<int>(static_cast<long long>(count) * t / threads);
        const int end = static_cast<int>(static_cast<long long>(count) * (t + 1) / threads);
        try {
            workers.emplace_back([&, begin, end] {
                try {
                    body(begin, end);
                } catch (...) {
                    keep_first_error(std::current_exception());
                }
            });
        } catch (const std::system_error& e) {
            // Joining what started keeps the process alive; the chunks not started are not done,
            // so the call as a whole fails.
            keep_first_error(std::make_exception_ptr(
                Error(fmt::format("could not start thread {} of {}: {}", t + 1, threads, e.what()),
                      "fewer threads (--threads)")));
            break;
        }
    }
    for (auto& worker : workers) worker.join();
    if (first_error) std::rethrow_exception(first_error);
}

}  // namespace klab
