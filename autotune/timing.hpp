#pragma once
// Cold-cache GPU timing after nvbench's method: CUDA events around each sample, the L2 cache
// flushed before every sample by overwriting one persistent buffer larger than L2, a warm-up
// first, at least `min_samples` samples, and about `budget_seconds` per measurement, stopping
// early once the quartiles agree within `target_spread`.
#include <cstddef>
#include <functional>
#include <vector>

#include <cuda_runtime_api.h>

#include "autotune/statistics.hpp"

namespace klab::autotune {

// One device buffer of twice the L2 size, written with cudaMemsetAsync to evict the cache.
class L2Flusher {
public:
    L2Flusher();  // sized for the current device
    ~L2Flusher();
    L2Flusher(const L2Flusher&) = delete;
    L2Flusher& operator=(const L2Flusher&) = delete;
    void flush(cudaStream_t stream);
    std::size_t bytes() const { return bytes_; }

private:
    void* buffer_ = nullptr;
    std::size_t bytes_ = 0;
};

struct TimingOptions {
    double budget_seconds = 0.2;  // wall time per measurement, warm-up excluded
    int min_samples = 10;
    int max_samples = 10000;
    double target_spread = 0.01;  // stop once (q3 - q1) / median is below this
};

struct Timing {
    std::vector<double> samples_us;  // in the order taken
    Quartiles us;                    // of samples_us
    bool converged = false;          // stopped on the spread, not the budget
};

// Times `work` (which enqueues on the stream it is given) with CUDA events. `work` runs once
// more as warm-up, untimed. Throws klab::Error on any CUDA error.
Timing measure(const std::function<void(cudaStream_t)>& work, L2Flusher& flusher, cudaStream_t stream,
               const TimingOptions& options);

}  // namespace klab::autotune
