#include "harness/reference/parallel.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "harness/error.hpp"

namespace klab::reference {

int resolve_threads(int requested) {
    if (requested < 0) throw Error(fmt::format("thread count {}", requested), "0 (one per hardware thread) or a positive count");
    if (requested > 0) return requested;
    return std::max(1u, std::thread::hardware_concurrency());
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
    std::vector<std::thread> workers;
    workers.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        const int begin = static_cast<int>(static_cast<long long>(count) * t / threads);
        const int end = static_cast<int>(static_cast<long long>(count) * (t + 1) / threads);
        workers.emplace_back([&, begin, end] {
            try {
                body(begin, end);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(error_mutex);
                if (!first_error) first_error = std::current_exception();
            }
        });
    }
    for (auto& worker : workers) worker.join();
    if (first_error) std::rethrow_exception(first_error);
}

}  // namespace klab::reference
