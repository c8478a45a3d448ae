#include "bench/fma_rate.hpp"

#include <algorithm>
#include <vector>

#include "autotune/statistics.hpp"
#include "harness/cuda_check.hpp"
#include "harness/cuda_event.hpp"
#include "harness/mask.hpp"

namespace klab::bench {

namespace {

constexpr int kChains = 8;         // independent FFMA chains per thread: covers the FMA latency
constexpr int kIterations = 2048;  // of 16 unrolled steps: 8 x 16 x 2048 FFMAs per thread
constexpr int kThreads = 256;

// x = x * a + b on eight chains. The values stay finite (|a| < 1); the result is written only
// when it equals a value it never reaches, so the compiler keeps every FFMA.
__global__ void __launch_bounds__(kThreads) ffma_kernel(float a, float b, float* sink) {
    float x[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = static_cast<float>(threadIdx.x + c);
    for (int i = 0; i < kIterations; ++i) {
#pragma unroll
        for (int step = 0; step < 16; ++step) {
#pragma unroll
            for (int c = 0; c < kChains; ++c) x[c] = fmaf(x[c], a, b);
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kChains; ++c) sum += x[c];
    if (sum == -1.0f) *sink = sum;
}

}  // namespace

double measure_ffma_per_second(cudaStream_t stream) {
    int device = 0, sms = 0, threads_per_sm = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&device));
    KLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    KLAB_CUDA_CHECK(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
    const int blocks = sms * std::max(1, threads_per_sm / kThreads);  // every SM full
    float* sink = nullptr;
    KLAB_CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    const CudaEvent start, stop;
    std::vector<double> seconds;
    try {
        for (int run = 0; run < 13; ++run) {  // the first three warm the clocks up
            KLAB_CUDA_CHECK(cudaEventRecord(start.get(), stream));
            ffma_kernel<<<blocks, kThreads, 0, stream>>>(0.999f, 0.001f, sink);
            KLAB_CUDA_CHECK_LAUNCH(stream);
            KLAB_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
            KLAB_CUDA_CHECK(cudaEventSynchronize(stop.get()));
            float ms = 0.0f;
            KLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
            if (run >= 3) seconds.push_back(ms * 1e-3);
        }
    } catch (...) {
        KLAB_CUDA_CHECK_NOTHROW(cudaFree(sink));
        throw;
    }
    KLAB_CUDA_CHECK(cudaFree(sink));
    const double ffmas = static_cast<double>(blocks) * kThreads * kChains * 16.0 * kIterations;
    return ffmas / autotune::quantile(seconds, 0.5);
}

double fma_per_output_element(const Problem& problem) {
    if (problem.op != Operation::convolve || !problem.mask) return 0.0;
    const Mask& mask = *problem.mask;
    const std::vector<float>& c = mask.coefficients();
    const bool box = std::all_of(c.begin(), c.end(), [&](float v) { return v == c.front(); });
    // A box mask of any size: running sums, an add and a subtract per pass and element.
    if (box && mask.width() > 1 && mask.height() > 1) return 4.0;
    if (mask.width() > 1 && mask.height() > 1 && separate(mask)) return static_cast<double>(mask.width() + mask.height());
    return static_cast<double>(mask.width()) * mask.height();
}

}  // namespace klab::bench
