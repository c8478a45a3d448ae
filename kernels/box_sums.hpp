// What the exact box-filter variants (conv.box_running_sums, conv.box_sliding_sums,
// conv.box_warp_scan, conv.box_warp_ring) share: which masks are boxes (and the refusal of other
// masks), how an exact integer box sum S becomes the reference's output byte, and two helpers of
// their host code.
//
// Exactness (every one of them relies on it): S is an exact integer (< 31 * 31 * 255 < 2^18). The
// reference sums m * p in double, which is exact (m = M * 2^-t with M < 2^24, every partial sum
// M * k * 2^-t with k < 2^18), and rounds m * S half to even, then saturates.
// - For the normalized box (m is the float nearest 1/n, n = kw * kh, what masks::box builds)
//   round(S / n) = floor((S + (n-1)/2) / n), one multiply-high (exact for S < 2^18): n is odd, so
//   S / n lies at least 1 / (2n) >= 1/1922 from every half-integer (2S - (2k+1) n is odd), while
//   |m*S - S/n| <= 2^-24 * S/n <= 1.6e-5: both round to the same integer, at most 255.
// - For any other m, m = M * 2^-t (M < 2^24, or 0 for m <= 0, or 256 for m >= 256, where every
//   S > 0 saturates), and round-half-even(M * S / 2^t) is computed exactly in 64-bit integers.
// Results are identical to the reference, not merely within the fp32 tie bound (the conformance
// suites hold these variants to verify_exact).
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every kernel
// file that includes it, so a change to its code makes their tuning records stale (its comment-only
// lines do not count).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "harness/mask.hpp"
#include "harness/variant.hpp"

namespace klab::box_sums {

// How a box sum becomes a pixel: normalized, floor((S + half) * inverse / 2^32); otherwise
// round-half-even(S * multiplier / 2^shift), saturated.
struct Rounding {
    bool normalized;
    std::uint32_t half;        // (n - 1) / 2
    std::uint32_t inverse;     // ceil(2^32 / n), n > 1 (a 1x1 box of 1.0 takes the other form: S itself)
    std::uint32_t multiplier;  // M: m = M / 2^shift, 0 for m <= 0
    int shift;                 // 0 ... 42
};

// The output byte of a box sum S. The normalized form is one multiply-high.
template <bool Normalized>
__host__ __device__ __forceinline__ std::uint32_t round_sum(std::uint32_t sum, const Rounding& r) {
    if constexpr (Normalized) {
        return static_cast<std::uint32_t>(static_cast<unsigned long long>(sum + r.half) * r.inverse >> 32);
    } else {
        const unsigned long long q = static_cast<unsigned long long>(r.multiplier) * sum;  // < 2^42
        if (r.shift == 0) return static_cast<std::uint32_t>(q < 255 ? q : 255);
        const unsigned long long floor = q >> r.shift;
        const unsigned long long rest = q & ((1ull << r.shift) - 1);
        const unsigned long long half = 1ull << (r.shift - 1);
        const unsigned long long rounded = floor + (rest > half || (rest == half && (floor & 1) != 0) ? 1 : 0);
        return static_cast<std::uint32_t>(rounded < 255 ? rounded : 255);
    }
}

// Whether every coefficient equals the first (a box of any size and value).
inline bool is_box(const Mask& mask) {
    for (float c : mask.coefficients()) {
        if (c != mask.coefficients().front()) return false;
    }
    return true;
}

// Whether a box variant takes the problem's mask, and why not.
inline Support box_support(const Problem& problem) {
    if (!is_box(*problem.mask)) {
        return Support::no(fmt::format("box masks only (all coefficients equal); {} has unequal coefficients", problem.mask->name()));
    }
    return Support::yes();
}

inline Rounding rounding_of(const Mask& mask) {
    const int n = mask.width() * mask.height();
    const float m = mask.coefficients().front();
    Rounding r{};
    if (n > 1 && m == static_cast<float>(1.0 / n)) {  // the normalized box (masks::box, a mask file "1 ... / divisor: n")
        r.normalized = true;
        r.half = static_cast<std::uint32_t>((n - 1) / 2);
        r.inverse = static_cast<std::uint32_t>(((1ull << 32) + n - 1) / static_cast<unsigned long long>(n));  // < 2^32 for n > 1
        return r;
    }
    r.normalized = false;
    if (!(m > 0.0f)) return r;  // m <= 0: every m * S <= 0 rounds to 0 (multiplier 0)
    if (m >= 256.0f) {          // every S >= 1 saturates
        r.multiplier = 256;
        return r;
    }
    int exponent = 0;
    const double fraction = std::frexp(static_cast<double>(m), &exponent);  // m = fraction * 2^exponent, fraction in [0.5, 1)
    const auto mantissa = static_cast<std::uint32_t>(std::ldexp(fraction, 24));  // exact: m is a float
    int shift = 24 - exponent;                                                 // m = mantissa / 2^shift
    std::uint32_t multiplier = mantissa;
    while (shift > 0 && multiplier % 2 == 0) multiplier /= 2, --shift;  // the smallest exact form
    if (shift > 42) return r;  // M * S < 2^42: below 1/2, every S rounds to 0
    r.multiplier = multiplier;
    r.shift = shift;
    return r;
}

// Whether `value` is one of `values` (a tuning parameter's allowed values).
template <std::size_t N>
bool listed(const std::array<int, N>& values, int value) {
    return std::find(values.begin(), values.end(), value) != values.end();
}

// The grid's layers: one for an AoS image, one per plane of an SoA image.
inline unsigned planes_of(const ImageShape& s) { return s.layout == Layout::aos ? 1u : static_cast<unsigned>(s.channels); }

}  // namespace klab::box_sums
