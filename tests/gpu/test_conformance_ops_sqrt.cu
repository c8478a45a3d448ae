// sobel.fused rounds the gradient magnitude as saturate_round_u8(n * rsqrtf(n)) with n = gx^2 + gy^2
// (kernels/sobel_fused.cu, magnitude_u8, which argues why that equals the reference's
// saturate_round_u8(sqrt(double(n)))). This checks the claim on the device for every n a 3x3 Sobel
// can produce, 0 ... 2 * 1020^2. The expression is repeated here: kernel files are not included by
// tests; keep the two in step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/cuda_check.hpp"
#include "harness/numeric.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

constexpr int kLargestSum = 2 * 1020 * 1020;  // |gx|, |gy| <= 4 * 255

__global__ void rsqrt_magnitudes(std::uint8_t* out, int count) {
    const int n = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (n >= count) return;
    const float f = static_cast<float>(n);
    out[n] = saturate_round_u8(f * rsqrtf(f));
}

class SobelMagnitude : public test::GpuTest {};

TEST_F(SobelMagnitude, RsqrtRoundingEqualsTheDoubleSquareRootForEverySobelSum) {
    const int count = kLargestSum + 1;
    std::uint8_t* device = nullptr;
    KLAB_CUDA_CHECK(cudaMalloc(&device, static_cast<std::size_t>(count)));
    rsqrt_magnitudes<<<(count + 255) / 256, 256>>>(device, count);
    KLAB_CUDA_CHECK_LAUNCH(nullptr);
    std::vector<std::uint8_t> host(static_cast<std::size_t>(count));
    const cudaError_t copied = cudaMemcpy(host.data(), device, host.size(), cudaMemcpyDeviceToHost);
    KLAB_CUDA_CHECK(cudaFree(device));
    KLAB_CUDA_CHECK(copied);
    int differing = 0;
    int first = -1;
    for (int n = 0; n < count; ++n) {
        if (host[static_cast<std::size_t>(n)] != saturate_round_u8(std::sqrt(static_cast<double>(n)))) {
            if (first < 0) first = n;
            ++differing;
        }
    }
    EXPECT_EQ(differing, 0) << "first at n = " << first;
}

}  // namespace
}  // namespace klab
