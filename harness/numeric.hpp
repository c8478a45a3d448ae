#pragma once
// The store rule of the numeric contract (docs/numeric-contract.md): an accumulated value becomes a
// u8 pixel by rounding half to even and saturating to [0, 255], as OpenCV's saturate_cast and
// CUDA's __float2int_rn do. The CPU reference rounds its double accumulator; kernels round fp32.
// Call it with a float or a double: an integer argument is ambiguous on the host by design.
#include <cmath>
#include <cstdint>

#include "harness/host_device.hpp"

namespace klab {

KLAB_HD std::uint8_t saturate_round_u8(float value) {
    const float clamped = fminf(fmaxf(value, 0.0f), 255.0f);  // NaN becomes 0
#if defined(__CUDA_ARCH__)
    return static_cast<std::uint8_t>(__float2int_rn(clamped));
#else
    return static_cast<std::uint8_t>(std::nearbyint(clamped));  // default mode: half to even
#endif
}

inline std::uint8_t saturate_round_u8(double value) {
    const double clamped = std::fmin(std::fmax(value, 0.0), 255.0);  // NaN becomes 0
    return static_cast<std::uint8_t>(std::nearbyint(clamped));
}

}  // namespace klab

namespace klab {

// BT.709 luma of an 8-bit RGB pixel, 0.2126 R + 0.7152 G + 0.0722 B, rounded half to even.
// Computed exactly in integers (the weights are multiples of 1/10000), so the reference and every
// kernel agree bit for bit.
KLAB_HD std::uint8_t gray_bt709(std::uint8_t r, std::uint8_t g, std::uint8_t b) {
    const int scaled = 2126 * r + 7152 * g + 722 * b;  // luma * 10000, at most 2,550,000
    int quotient = scaled / 10000;
    const int remainder = scaled - quotient * 10000;
    if (remainder > 5000 || (remainder == 5000 && (quotient & 1) != 0)) ++quotient;
    return static_cast<std::uint8_t>(quotient);
}

}  // namespace klab
