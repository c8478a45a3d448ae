#pragma once
// klab's CPU threading: a loop over [0, count) cut into contiguous chunks, one per std::thread.
// Used by the CPU reference and the synthetic-image generator. Each item is computed by the
// same code whatever the thread count, so results are bit-identical for every count.
#include <functional>

namespace klab {

// The most threads one call starts: more would not help and could exhaust the process.
inline constexpr int kMaxThreads = 1024;

// 0 means one thread per hardware thread; 1..kMaxThreads as given; anything else is refused.
int resolve_threads(int requested);

// Calls body(begin, end) on disjoint chunks covering [0, count); one thread runs it inline.
// The first exception thrown by a chunk is rethrown after all threads have joined; a thread
// that cannot be started is reported as klab::Error after the started ones have joined.
void parallel_for(int count, int threads, const std::function<void(int begin, int end)>& body);

}  // namespace klab
