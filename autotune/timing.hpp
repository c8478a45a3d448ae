#pragma once
// Cold-cache GPU timing after nvbench's method: CUDA events around each sample, the L2 cache
// flushed before every sample (one persistent buffer of twice the L2 size is overwritten, then
// read, so that no dirty line of it is left to be written back during the sample), a warm-up
// first, at least `min_samples` samples and about `budget_seconds` per measurement, stopping
// early once the quartiles agree within `target_spread`.
//
// CUDA events resolve about 0.5 us (CUDA programming guide; the medians in the H200's tuning
// records are multiples of 32 ns): for kernels of a few tens of microseconds, differences near 1%
// may be at the timer's resolution, which the tuner's tie rule takes into account where the
// samples' quartiles overlap (tuner.hpp).
#include <cstddef>
#include <functional>
#include <vector>

#include <cuda_runtime_api.h>

#include "autotune/statistics.hpp"
#include "harness/cuda_event.hpp"

namespace klab::autotune {

// The resolution of cudaEventElapsedTime, as documented.
inline constexpr double kEventResolutionUs = 0.5;

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
    unsigned* sink_ = nullptr;  // written only if the read sweep finds a value it never will
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

using Work = std::function<void(cudaStream_t)>;

// One cold sample in microseconds: the L2 flushed, then `start` and `stop` recorded right around
// `work` on `stream`, and waited for. measure() takes its samples this way, and so does klab-bench.
double cold_sample(const Work& work, L2Flusher& flusher, cudaStream_t stream, const CudaEvent& start, const CudaEvent& stop);

// Times `work` (which enqueues on the stream it is given) with CUDA events. `work` runs once
// more as warm-up, untimed. Throws klab::Error on any CUDA error.
Timing measure(const Work& work, L2Flusher& flusher, cudaStream_t stream, const TimingOptions& options);

// Times several pieces of work in interleaved rounds (a b c a b c ...), so that clock or thermal
// drift during the measurement shifts them alike: for the final comparison of close candidates.
// Each gets at least options.min_samples samples; it stops when every spread is below the
// target or after options.budget_seconds per piece of work.
std::vector<Timing> measure_interleaved(const std::vector<Work>& works, L2Flusher& flusher, cudaStream_t stream,
                                        const TimingOptions& options);

// Keeps the GPU busy with `work` for about `seconds`, so that its clocks have ramped up before
// the first measurement (the GPU idles while the CPU reference is computed).
void warm_up(const Work& work, cudaStream_t stream, double seconds);

}  // namespace klab::autotune
