#pragma once
// The CPU reference's threading: a loop over [0, count) cut into contiguous chunks, one per
// std::thread. Each item is computed by the same code whatever the thread count, so the
// multithreaded reference is bit-identical to the sequential one.
#include <functional>

namespace klab::reference {

// 0 means one thread per hardware thread; negative counts are refused.
int resolve_threads(int requested);

// Calls body(begin, end) on disjoint chunks covering [0, count); threads == 1 runs inline.
// The first exception thrown by a chunk is rethrown after all threads have joined.
void parallel_for(int count, int threads, const std::function<void(int begin, int end)>& body);

}  // namespace klab::reference
