// What the box probes share (box_warp_prefix.cu, box_lane_slide.cu, box_mma_rows.cu): the problem, a 9x9 box on an
// 8K RGB AoS image with replicated rows, cut into warps of 512 bytes that write the 480 of lanes
// 1 to 30; the image and its device buffers; the timing (L2 flushed, medians of at least 20) and
// the copy floor; the rows the kernels read, replicated past the image; and the CPU check of a
// few rows' interior bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "autotune/timing.hpp"
#include "harness/cuda_check.hpp"

namespace klab::probes::box9 {

constexpr int kWidth = 7680, kHeight = 4320, kStride = 3, kRowBytes = kWidth * kStride;  // a multiple of 16
constexpr int kRadius = 4, kCount = (2 * kRadius + 1) * (2 * kRadius + 1);
constexpr int kWarpOutput = 480;                       // lanes 1 ... 30
constexpr int kWarpsPerRow = kRowBytes / kWarpOutput;  // 48
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ uint4 load16(const std::uint8_t* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }

// Byte `column` of image row y of `in` (rows `pitch` bytes apart), rows outside the image
// replicated.
__device__ __forceinline__ const std::uint8_t* clamped_row(const std::uint8_t* in, std::size_t pitch, int y, int column) {
    return in + static_cast<std::size_t>(min(max(y, 0), kHeight - 1)) * pitch + column;
}

// The image (pseudo-random bytes, rows kRowBytes apart) on the host and on the device, an output
// buffer and a buffer for the copy floor; the device buffers are freed with it.
struct Buffers {
    static constexpr std::size_t pitch = kRowBytes, bytes = pitch * kHeight;
    std::vector<std::uint8_t> image = std::vector<std::uint8_t>(bytes);
    std::uint8_t *in = nullptr, *out = nullptr, *copy = nullptr;

    Buffers() {
        std::uint32_t state = 12345;
        for (std::uint8_t& b : image) state = state * 1664525u + 1013904223u, b = static_cast<std::uint8_t>(state >> 24);
        KLAB_CUDA_CHECK(cudaMalloc(&in, bytes));
        KLAB_CUDA_CHECK(cudaMalloc(&out, bytes));
        KLAB_CUDA_CHECK(cudaMalloc(&copy, bytes));
        KLAB_CUDA_CHECK(cudaMemcpy(in, image.data(), bytes, cudaMemcpyHostToDevice));
    }
    ~Buffers() {
        KLAB_CUDA_CHECK_NOTHROW(cudaFree(copy));
        KLAB_CUDA_CHECK_NOTHROW(cudaFree(out));
        KLAB_CUDA_CHECK_NOTHROW(cudaFree(in));
    }
    Buffers(const Buffers&) = delete;
    Buffers& operator=(const Buffers&) = delete;

    // The output of one run of `work`, written over zeros.
    std::vector<std::uint8_t> output_of(const autotune::Work& work) const {
        KLAB_CUDA_CHECK(cudaMemset(out, 0, bytes));
        work(nullptr);
        KLAB_CUDA_CHECK(cudaDeviceSynchronize());
        std::vector<std::uint8_t> result(bytes);
        KLAB_CUDA_CHECK(cudaMemcpy(result.data(), out, bytes, cudaMemcpyDeviceToHost));
        return result;
    }
};

// Medians of at least 20 runs, each after an L2 flush.
class Timer {
public:
    Timer() { options_.min_samples = 20; }
    double median_us(const autotune::Work& work) { return autotune::measure(work, flusher_, nullptr, options_).us.median; }
    // The device-to-device copy of the image, printed: the floor every figure is a ratio to.
    double copy_us(const Buffers& buffers) {
        const double us = median_us([&](cudaStream_t s) {
            KLAB_CUDA_CHECK(cudaMemcpyAsync(buffers.copy, buffers.in, Buffers::bytes, cudaMemcpyDeviceToDevice, s));
        });
        std::printf("device-to-device copy of the %zu-byte image: %.1f us\n", Buffers::bytes, us);
        return us;
    }

private:
    autotune::L2Flusher flusher_;
    autotune::TimingOptions options_;
};

// Interior bytes of `rows` (those `margin` bytes or more from a row's ends) that differ from a CPU
// box sum of radius `radius` (replicated rows; by default the 9x9 box these probes share);
// `checked` counts the bytes compared.
inline long differing_bytes(const std::vector<std::uint8_t>& image, const std::vector<std::uint8_t>& result, const std::vector<int>& rows,
                            long& checked, int radius = kRadius, int margin = 16) {
    constexpr std::size_t pitch = Buffers::pitch;
    const std::uint32_t count = static_cast<std::uint32_t>((2 * radius + 1) * (2 * radius + 1));
    std::vector<std::uint32_t> columns(kRowBytes);  // the column sums of the row's box
    long differing = 0;
    for (int y : rows) {
        std::fill(columns.begin(), columns.end(), 0u);
        for (int dy = -radius; dy <= radius; ++dy) {
            const std::size_t source_row = static_cast<std::size_t>(std::min(std::max(y + dy, 0), kHeight - 1)) * pitch;
            for (int e = 0; e < kRowBytes; ++e) columns[static_cast<std::size_t>(e)] += image[source_row + static_cast<std::size_t>(e)];
        }
        for (int e = margin; e < kRowBytes - margin; ++e) {
            std::uint32_t sum = 0;
            for (int dx = -radius; dx <= radius; ++dx) sum += columns[static_cast<std::size_t>(e + dx * kStride)];
            ++checked;
            if (result[static_cast<std::size_t>(y) * pitch + static_cast<std::size_t>(e)] != (sum + (count - 1) / 2) / count) ++differing;
        }
    }
    return differing;
}

}  // namespace klab::probes::box9
