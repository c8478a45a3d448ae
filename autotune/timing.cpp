#include "autotune/timing.hpp"

#include <chrono>

#include "harness/cuda_check.hpp"
#include "harness/cuda_event.hpp"

namespace klab::autotune {

L2Flusher::L2Flusher() {
    int device = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&device));
    int l2_bytes = 0;
    KLAB_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    // Twice the L2 size, so that nothing of the measured work's data survives the flush.
    bytes_ = 2 * static_cast<std::size_t>(l2_bytes > 0 ? l2_bytes : 1 << 20);
    KLAB_CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
}

L2Flusher::~L2Flusher() { KLAB_CUDA_CHECK_NOTHROW(cudaFree(buffer_)); }

void L2Flusher::flush(cudaStream_t stream) { KLAB_CUDA_CHECK(cudaMemsetAsync(buffer_, 0, bytes_, stream)); }

Timing measure(const std::function<void(cudaStream_t)>& work, L2Flusher& flusher, cudaStream_t stream,
               const TimingOptions& options) {
    work(stream);  // warm-up: module loading, first-touch costs
    KLAB_CUDA_CHECK(cudaStreamSynchronize(stream));

    const CudaEvent start;
    const CudaEvent stop;
    Timing timing;
    const auto began = std::chrono::steady_clock::now();
    for (;;) {
        flusher.flush(stream);
        KLAB_CUDA_CHECK(cudaEventRecord(start.get(), stream));
        work(stream);
        KLAB_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
        KLAB_CUDA_CHECK(cudaEventSynchronize(stop.get()));
        float milliseconds = 0.0f;
        KLAB_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()));
        timing.samples_us.push_back(1000.0 * milliseconds);

        const int taken = static_cast<int>(timing.samples_us.size());
        if (taken < options.min_samples) continue;
        timing.us = quartiles(timing.samples_us);
        if (timing.us.relative_spread() < options.target_spread) {
            timing.converged = true;
            break;
        }
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        if (elapsed >= options.budget_seconds || taken >= options.max_samples) break;
    }
    return timing;
}

}  // namespace klab::autotune
