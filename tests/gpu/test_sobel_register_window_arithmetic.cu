// sobel.register_window's two pieces of arithmetic that stand in for the reference's (kernels/
// sobel_register_window.cu argues why they agree), checked on the device for every input they can
// meet. The expressions are repeated here: kernel files are not included by tests; keep the two in
// step.
//   gray:      round-half-to-even((1063 r + 3576 g + 361 b) / 5000) by two __dp2a and a
//              multiply-high, against gray_bt709 for all 2^24 colours;
//   magnitude: the low 16 bits of sqrt.approx(n) + 1.5 * 2^23 for n = gx^2 + gy^2 (exact in fp32),
//              two pixels' of them saturated to 255 by one __vminu2, against the reference's
//              saturate_round_u8(sqrt(double(n))) for every n a 3x3 Sobel can make (in both halves
//              of the pair), and through the whole expression for a grid of (gx, gy).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/cuda_check.hpp"
#include "harness/numeric.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

constexpr int kColours = 1 << 24;
constexpr int kLargestSum = 2 * 1020 * 1020;  // |gx|, |gy| <= 4 * 255
constexpr int kGradients = 2041;              // gx = -1020 ... 1020; gy in steps of 8

__device__ std::uint32_t gray_of(std::uint32_t px) {
    const std::uint32_t x = __dp2a_lo(0x0DF80427u, px, __dp2a_hi(0x00000169u, px, 2500u));
    const std::uint32_t u = __umulhi(x, 858994u);
    return x * 858994u < 858994u ? (u & ~1u) : u;
}

__device__ std::uint32_t root_bits(float n) {
    float r;
    asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(n));
    return __float_as_uint(r + 12582912.0f);
}

__device__ std::uint32_t saturated_pair(std::uint32_t low_pixel, std::uint32_t high_pixel) {
    return __vminu2(__byte_perm(low_pixel, high_pixel, 0x5410u), 0x00FF00FFu);
}

// Colour c = r | g << 8 | b << 16, with a byte 3 such as the kernel's words hold (the next pixel's red).
__global__ void grays(std::uint8_t* out) {
    const unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < kColours) out[c] = static_cast<std::uint8_t>(gray_of(c | 0xA5000000u));
}

// Sum n goes into the low half of a pair and count - 1 - n into the high half: out[n] is the low
// half's output, out[count + (count - 1 - n)] the high half's, so each n is checked in both halves.
__global__ void magnitudes_of_sums(std::uint8_t* out, int count) {
    const int n = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (n >= count) return;
    const int mirror = count - 1 - n;
    const std::uint32_t pair = saturated_pair(root_bits(static_cast<float>(n)), root_bits(static_cast<float>(mirror)));  // exact: n < 2^24
    out[n] = static_cast<std::uint8_t>(pair);
    out[count + mirror] = static_cast<std::uint8_t>(pair >> 16);
}

__global__ void magnitudes_of_gradients(std::uint8_t* out) {
    const float gx = static_cast<float>(static_cast<int>(blockIdx.x) - 1020);
    const float gy = static_cast<float>(static_cast<int>(threadIdx.x) * 8 - 1020);
    const std::uint32_t bits = root_bits(fmaf(gy, gy, gx * gx));
    out[blockIdx.x * blockDim.x + threadIdx.x] = static_cast<std::uint8_t>(saturated_pair(bits, bits));
}

// `count` bytes that `launch` writes into device memory, on the host.
template <class Launch>
std::vector<std::uint8_t> computed(std::size_t count, Launch launch) {
    std::uint8_t* device = nullptr;
    KLAB_CUDA_CHECK(cudaMalloc(&device, count));
    launch(device);
    const cudaError_t launched = cudaGetLastError();
    std::vector<std::uint8_t> host(count);
    const cudaError_t copied = cudaMemcpy(host.data(), device, count, cudaMemcpyDeviceToHost);
    KLAB_CUDA_CHECK(cudaFree(device));
    KLAB_CUDA_CHECK(launched);
    KLAB_CUDA_CHECK(copied);
    return host;
}

class SobelRegisterWindowArithmetic : public test::GpuTest {};

TEST_F(SobelRegisterWindowArithmetic, GrayEqualsGrayBt709ForEveryColour) {
    const std::vector<std::uint8_t> gray = computed(kColours, [](std::uint8_t* d) { grays<<<kColours / 256, 256>>>(d); });
    int differing = 0;
    int first = -1;
    for (int c = 0; c < kColours; ++c) {
        const auto byte = [c](int i) { return static_cast<std::uint8_t>(c >> (8 * i)); };
        if (gray[static_cast<std::size_t>(c)] != gray_bt709(byte(0), byte(1), byte(2))) {
            if (first < 0) first = c;
            ++differing;
        }
    }
    EXPECT_EQ(differing, 0) << "first at colour " << first << " (r | g << 8 | b << 16)";
}

TEST_F(SobelRegisterWindowArithmetic, MagnitudeRoundsLikeTheDoubleSquareRootForEverySobelSum) {
    const int count = kLargestSum + 1;
    const std::vector<std::uint8_t> magnitude =
        computed(2 * static_cast<std::size_t>(count), [count](std::uint8_t* d) { magnitudes_of_sums<<<(count + 255) / 256, 256>>>(d, count); });
    for (int half = 0; half < 2; ++half) {
        int differing = 0;
        int first = -1;
        for (int n = 0; n < count; ++n) {
            if (magnitude[static_cast<std::size_t>(half) * count + n] != saturate_round_u8(std::sqrt(static_cast<double>(n)))) {
                if (first < 0) first = n;
                ++differing;
            }
        }
        EXPECT_EQ(differing, 0) << (half == 0 ? "low" : "high") << " half of the pair: first at n = " << first;
    }
}

TEST_F(SobelRegisterWindowArithmetic, MagnitudeOfGradientsEqualsTheReference) {
    constexpr int kRows = 256;  // gy = -1020 ... 1020 in steps of 8
    const std::vector<std::uint8_t> magnitude =
        computed(static_cast<std::size_t>(kGradients) * kRows, [](std::uint8_t* d) { magnitudes_of_gradients<<<kGradients, kRows>>>(d); });
    int differing = 0;
    for (int i = 0; i < kGradients; ++i) {
        for (int j = 0; j < kRows; ++j) {
            const int gx = i - 1020, gy = j * 8 - 1020;
            const std::uint8_t expected = saturate_round_u8(std::sqrt(static_cast<double>(gx * gx + gy * gy)));
            differing += magnitude[static_cast<std::size_t>(i) * kRows + j] != expected;
        }
    }
    EXPECT_EQ(differing, 0);
}

}  // namespace
}  // namespace klab
