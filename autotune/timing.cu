#include "autotune/timing.hpp"

#include <algorithm>
#include <chrono>

#include "harness/cuda_check.hpp"
#include "harness/cuda_event.hpp"

namespace klab::autotune {

namespace {

// Reads every word of the flush buffer (which the memset just zeroed), so that L2 ends up holding
// clean lines of it; the store never happens, but the compiler cannot know.
__global__ void read_sweep_kernel(const uint4* buffer, std::size_t count, unsigned* sink) {
    unsigned seen = 0;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        const uint4 v = buffer[i];
        seen |= v.x | v.y | v.z | v.w;
    }
    if (seen == 0xFFFFFFFFu) *sink = seen;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Quartiles are recomputed every this many samples only: sorting after each sample would cost
// O(n^2 log n) over a measurement of thousands of short samples.
constexpr int kCheckEvery = 10;

bool settled(Timing& t, const TimingOptions& options) {
    const int taken = static_cast<int>(t.samples_us.size());
    if (taken < options.min_samples || taken % kCheckEvery != 0) return false;
    t.us = quartiles(t.samples_us);
    t.converged = t.us.relative_spread() < options.target_spread;
    return t.converged;
}

}  // namespace

double cold_sample(const Work& work, L2Flusher& flusher, cudaStream_t stream, const CudaEvent& start, const CudaEvent& stop) {
    flusher.flush(stream);
    KLAB_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    work(stream);
    KLAB_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    KLAB_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float milliseconds = 0.0f;
    KLAB_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()));
    return 1000.0 * milliseconds;
}

L2Flusher::L2Flusher() {
    int device = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&device));
    int l2_bytes = 0;
    KLAB_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    // Twice the L2 size, so that nothing of the measured work's data survives the flush.
    bytes_ = 2 * static_cast<std::size_t>(l2_bytes > 0 ? l2_bytes : 1 << 20);
    bytes_ = (bytes_ + 15) / 16 * 16;
    KLAB_CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
    try {
        KLAB_CUDA_CHECK(cudaMalloc(&sink_, sizeof *sink_));
    } catch (...) {
        KLAB_CUDA_CHECK_NOTHROW(cudaFree(buffer_));
        throw;
    }
}

L2Flusher::~L2Flusher() {
    KLAB_CUDA_CHECK_NOTHROW(cudaFree(sink_));
    KLAB_CUDA_CHECK_NOTHROW(cudaFree(buffer_));
}

void L2Flusher::flush(cudaStream_t stream) {
    KLAB_CUDA_CHECK(cudaMemsetAsync(buffer_, 0, bytes_, stream));
    read_sweep_kernel<<<1024, 256, 0, stream>>>(static_cast<const uint4*>(buffer_), bytes_ / 16, sink_);
    KLAB_CUDA_CHECK_LAUNCH(stream);
}

Timing measure(const Work& work, L2Flusher& flusher, cudaStream_t stream, const TimingOptions& options) {
    work(stream);  // warm-up: module loading, first-touch costs
    KLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    const CudaEvent start;
    const CudaEvent stop;
    Timing timing;
    const auto began = std::chrono::steady_clock::now();
    for (;;) {
        timing.samples_us.push_back(cold_sample(work, flusher, stream, start, stop));
        if (settled(timing, options)) break;
        const int taken = static_cast<int>(timing.samples_us.size());
        if (taken >= options.min_samples && (seconds_since(began) >= options.budget_seconds || taken >= options.max_samples)) break;
    }
    timing.us = quartiles(timing.samples_us);
    return timing;
}

std::vector<Timing> measure_interleaved(const std::vector<Work>& works, L2Flusher& flusher, cudaStream_t stream,
                                        const TimingOptions& options) {
    for (const Work& work : works) work(stream);  // warm-up
    KLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    const CudaEvent start;
    const CudaEvent stop;
    std::vector<Timing> timings(works.size());
    const auto began = std::chrono::steady_clock::now();
    const double budget = options.budget_seconds * static_cast<double>(works.size());
    for (int round = 1;; ++round) {
        bool all_settled = true;
        for (std::size_t i = 0; i < works.size(); ++i) {
            timings[i].samples_us.push_back(cold_sample(works[i], flusher, stream, start, stop));
            all_settled = settled(timings[i], options) && all_settled;
        }
        if (round < options.min_samples) continue;
        if ((all_settled && round % kCheckEvery == 0) || seconds_since(began) >= budget || round >= options.max_samples) break;
    }
    for (Timing& t : timings) t.us = quartiles(t.samples_us);
    return timings;
}

void warm_up(const Work& work, cudaStream_t stream, double seconds) {
    const auto began = std::chrono::steady_clock::now();
    do {
        for (int i = 0; i < 8; ++i) work(stream);
        KLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    } while (seconds_since(began) < seconds);
}

}  // namespace klab::autotune
