// What the variants on the integer tensor cores (conv.integer_mma, conv.separable_row_mma) share:
// coefficients as integer multiples of 2^-e in three balanced signed 8-bit digits, the u8 x s8 MMA,
// the biased accumulators whose bits read back as floats, and where the border rule takes an input
// byte from (bordered_byte() reads it: conv.integer_mma's edge tiles; conv.separable_row_mma's
// edge bands map their columns once with source_element()).
//
// A coefficient c becomes Q = round(c * 2^e), e chosen so that the largest |Q| just fits three
// digits, Q = q2 * 65536 + q1 * 256 + q0 (each q in -128..127). Each digit's sum S of bytes times
// digits is exact in s32; it starts at the bits of 1.5 * 2^23, so that while |S| < 2^22 the float
// with the accumulator's bits is exactly 1.5 * 2^23 + S.
//
// kernels/CMakeLists.txt puts this header into the source hash of every kernel file that includes
// it, so a change to its code makes their tuning records stale (its comment-only lines do not
// count).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "harness/border.hpp"
#include "harness/cuda_check.hpp"
#include "harness/error.hpp"
#include "harness/image.hpp"

namespace klab::integer_digits {

constexpr int kDigits = 3;                      // signed 8-bit digits per coefficient
constexpr std::int32_t kBiasBits = 0x4B400000;  // the bits of the float 1.5 * 2^23
constexpr float kBias = 12582912.0f;            // 1.5 * 2^23
constexpr int kLargestMultiple = 127 * (65536 + 256 + 1);  // the largest |Q| three digits hold

// Q = round(c * 2^e), and digit d (0 lowest) of Q in balanced base 256; the same on host and device.
__host__ __device__ inline int tap_multiple(float c, int e) { return static_cast<int>(rintf(ldexpf(c, e))); }
__host__ __device__ inline int digit_of(int q, int d) {
    for (int i = 0; i < d; ++i) q = (q - (((q + 128) & 255) - 128)) / 256;  // exact: q minus its low digit
    return ((q + 128) & 255) - 128;
}

// The exponent e of the digits of `n` coefficients, and 2^-e: the largest |c| * 2^e lies in
// [2^22, 2^23), one step lower where its multiple would not fit three digits. e = 0 for all zeros.
struct DigitScale {
    int exponent = 0;
    float scale = 1.0f;
};
inline DigitScale digit_scale(const float* coefficients, int n) {
    float largest = 0.0f;
    for (int i = 0; i < n; ++i) largest = std::max(largest, std::fabs(coefficients[i]));
    if (!(largest > 0.0f)) return {};
    int exponent = 0;
    (void)std::frexp(largest, &exponent);  // largest = f * 2^exponent, f in [0.5, 1)
    int e = 23 - exponent;
    if (tap_multiple(largest, e) > kLargestMultiple) --e;
    return {e, std::ldexp(1.0f, -e)};
}

// D = A * B + C for one 16 x 8 tile: A 16 x 32 unsigned bytes, B 32 x 8 signed bytes, D s32; C
// is `init` in every element (mma_u8s8_from) or D itself (mma_u8s8).
__device__ __forceinline__ void mma_u8s8(int (&d)[4], const std::uint32_t (&a)[4], uint2 b) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
#else
    __trap();  // enqueue() refuses devices without 8-bit mma.sync (require_integer_mma)
#endif
}
__device__ __forceinline__ void mma_u8s8_from(int (&d)[4], const std::uint32_t (&a)[4], uint2 b, std::int32_t init) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %10, %10, %10};"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y), "r"(init));
#else
    __trap();
#endif
}

// S2 * 2^16 + S1 * 2^8 + S0 from the three biased accumulators (bits of b + S each, b = 1.5 * 2^23,
// |S| < 2^22) in three instructions, rounded twice:
//   high  = (b + S2) 2^16 - 257 b           = 2^16 (S2 - 49344), exact (24 bits times 2^16);
//   upper = (b + S1) 2^8 + high              = S2 2^16 + S1 2^8 - b, rounded;
//   out   = (b + S0) + upper                 = the sum, rounded.
// upper is a multiple of 2^8, so it is exact below 2^32 and rounds only where |S2 2^16 + S1 2^8| >=
// 2^32 - b, where b is at most 0.3% of it: |out - sum| <= 2^-24 (1.003 |S2 2^16 + S1 2^8| (1 + 2^-24)
// + |sum|) <= 1.002 * 2^-23 * max(|S2 2^16 + S1 2^8|, |sum|).
__device__ __forceinline__ float combine_digits(std::int32_t acc2, std::int32_t acc1, std::int32_t acc0) {
    const float high = fmaf(__int_as_float(acc2), 65536.0f, -kBias * 65793.0f);  // exact: 197379 * 2^22
    const float upper = fmaf(__int_as_float(acc1), 256.0f, high);
    return __int_as_float(acc0) + upper;
}

// The byte of a stored row that element e of a row (S bytes per pixel, e < 0 or past the row
// allowed) reads by the border rule, or -1 where a constant border gives its value.
template <int S>
__device__ __forceinline__ int source_element(int e, int width, BorderMode mode) {
    const int x = e >= 0 ? e / S : -((-e + S - 1) / S);  // floor(e / S)
    const int sx = border_index(x, width, mode);
    return sx < 0 ? -1 : sx * S + (e - x * S);
}

// Byte e of stored row sy (already mapped; < 0 for a constant border's row), its pixel mapped by
// the border rule.
template <int S>
__device__ std::uint8_t bordered_byte(const ImageView<const std::uint8_t>& in, int e, int sy, int plane, Border border) {
    if (sy < 0) return border.value;
    const int source = source_element<S>(e, in.shape.width, border.mode);
    return source < 0 ? border.value : in.row(sy, plane)[source];
}

// Throws unless `device` has the 8-bit mma.sync (compute capability 8.0 or later).
inline void require_integer_mma(int device, const std::string& variant) {
    int major = 0;
    KLAB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (major < 8) {
        throw Error(fmt::format("{} on a GPU of compute capability {}.x", variant, major),
                    "compute capability 8.0 or later (mma.sync with 8-bit operands)");
    }
}

}  // namespace klab::integer_digits
