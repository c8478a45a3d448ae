#include "autotune/device_compare.hpp"

#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"

namespace klab::autotune {

namespace {

// One thread per byte of a row, grid-stride over rows; one atomic per thread that found any.
__global__ void count_differences_kernel(const unsigned char* a, std::size_t a_pitch, const unsigned char* b,
                                         std::size_t b_pitch, int row_bytes, int rows, unsigned long long* count) {
    unsigned long long found = 0;
    for (int row = blockIdx.y; row < rows; row += gridDim.y) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < row_bytes; i += gridDim.x * blockDim.x) {
            found += a[row * a_pitch + i] != b[row * b_pitch + i];
        }
    }
    if (found != 0) atomicAdd(count, found);
}

}  // namespace

std::size_t count_differences(const DeviceBuffer& a, const DeviceBuffer& b) {
    if (a.type != ElementType::u8 || b.type != ElementType::u8 || a.shape != b.shape) {
        throw Error(fmt::format("comparing a {} {} buffer with a {} {} buffer", to_string(a.shape), to_string(a.type),
                                to_string(b.shape), to_string(b.type)),
                    "two u8 buffers of the same shape");
    }
    const int row_bytes = a.shape.row_elements();
    const int rows = a.shape.rows();
    unsigned long long* count = nullptr;
    KLAB_CUDA_CHECK(cudaMalloc(&count, sizeof *count));
    unsigned long long host_count = 0;
    try {
        KLAB_CUDA_CHECK(cudaMemset(count, 0, sizeof *count));
        const dim3 block(256);
        const dim3 grid(std::min((row_bytes + 255) / 256, 64), std::min(rows, 65535));
        count_differences_kernel<<<grid, block>>>(static_cast<const unsigned char*>(a.data), a.pitch_bytes,
                                                  static_cast<const unsigned char*>(b.data), b.pitch_bytes, row_bytes,
                                                  rows, count);
        KLAB_CUDA_CHECK_LAUNCH(nullptr);
        KLAB_CUDA_CHECK(cudaMemcpy(&host_count, count, sizeof host_count, cudaMemcpyDeviceToHost));
    } catch (...) {
        KLAB_CUDA_CHECK_NOTHROW(cudaFree(count));
        throw;
    }
    KLAB_CUDA_CHECK(cudaFree(count));
    return static_cast<std::size_t>(host_count);
}

}  // namespace klab::autotune
