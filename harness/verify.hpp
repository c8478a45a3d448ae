#pragma once
// Verification of a variant's output against the CPU reference (docs/numeric-contract.md).
//
// Integer results (integral images, Sobel) must match exactly: verify_exact().
//
// A convolution with a float mask is accumulated in double by the reference and in fp32 by a
// kernel, so the two may round differently, but only next to a rounding tie. verify_convolution()
// accepts a difference of exactly 1 at an element whose exact sum lies within
//     bound = (gamma_n(2^-24) + gamma_n(2^-53)) * sum_k |m_k * p_k|,   gamma_n(u) = n*u / (1 - n*u),
// of a tie (k + 1/2), where n is the number of mask taps and p_k the pixels under the mask. Why:
// each product m_k * p_k of an fp32 coefficient and an 8-bit pixel is exact in double and rounded
// at most once in fp32 (not at all with FMA); summing n terms in any order rounds each term at
// most n-1 more times, so the fp32 result is within gamma_n(2^-24) * sum|terms| of the exact sum
// (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., section 3.1), and the
// double reference within gamma_n(2^-53) * sum|terms|. Two results that round to different
// integers have a tie between them, so that tie lies within the sum of both bounds of the
// reference's value. Everything else — a difference of 2, or of 1 away from a tie — is a bug.
// For a 31x31 box on white pixels the bound is about 0.015; for masks with integer coefficients
// the exact sum is an integer, never near a tie, so those results must match exactly.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "harness/border.hpp"
#include "harness/image.hpp"
#include "harness/mask.hpp"
#include "harness/problem.hpp"
#include "harness/reference/reference.hpp"

namespace klab {

struct PixelMismatch {
    int x = 0;
    int y = 0;
    int c = 0;
    std::int64_t value = 0;     // the variant's
    std::int64_t expected = 0;  // the reference's
};

struct Verification {
    std::size_t compared = 0;   // elements compared
    std::size_t differing = 0;  // elements that break the rule (after the first, a convolution's off by 1 are unchecked)
    std::size_t tolerated = 0;  // off by 1 next to an fp32 rounding tie, before the first failure (convolution only)
    // Elements off by 1 after the first differing one, not checked against the tie bound: the
    // verdict is already made, and each check recomputes the element's exact sum (a 31x31 mask:
    // 961 terms), which on a wrong 8K result took minutes (convolution only).
    std::size_t unchecked = 0;
    std::optional<PixelMismatch> first;  // the first differing element in row-major (y, x, c) order

    bool ok() const { return differing == 0; }
    // "ok: 6220800 values equal, 3 within the fp32 tie bound" or
    // "12 of 6220800 values differ; first at x=5 y=0 c=2: 17, reference 18..." (with unchecked
    // ones: "...; 40 more differ by 1, not checked against the tie bound after the first")
    std::string summary() const;
};

// The bound above for a mask of `taps` coefficients and terms of total magnitude `magnitude`.
double fp32_tie_bound(int taps, double magnitude);

// `reference` is reference::convolve(input, mask, border); `actual` the variant's output.
// `coefficient_error` is Variant::coefficient_error(): for a variant whose effective coefficients
// differ from the mask's by up to e, the exact sum it approximates differs from the reference's by
// up to e * sum_k p_k (the pixels under the mask at that element), which is added to the tie
// bound. Throws klab::Error when the shapes differ or e is negative.
Verification verify_convolution(const ImageU8& input, const Mask& mask, Border border, const ImageU8& reference,
                                const ImageU8& actual, double coefficient_error = 0.0);

// Element-for-element equality; T is std::uint8_t, std::uint32_t or std::uint64_t.
template <class T>
Verification verify_exact(const HostImage<T>& reference, const HostImage<T>& actual);

// The CPU reference's verdict on `actual`, a variant's result for `problem` on `input` (an image of
// the problem's size and channels, any layout; `actual` in the layout the reference writes for it):
// a convolution by verify_convolution() with `coefficient_error` (Variant::coefficient_error()),
// Sobel exactly. `threads` and `progress` are the reference's. Throws klab::Error for an integral
// problem (its result is no u8 image: the overload below).
Verification verify_result(const Problem& problem, const ImageU8& input, const ImageU8& actual, double coefficient_error,
                           int threads = 1, const reference::Progress& progress = {});
// An integral problem's result (T is std::uint32_t or std::uint64_t), exactly.
template <class T>
Verification verify_result(const Problem& problem, const ImageU8& input, const HostImage<T>& actual, int threads = 1);

// Every stored byte of `image` inverted: what an output buffer starts as before a verified run,
// so that an element the variant never writes differs from the reference it is compared with.
template <class T>
HostImage<T> complement(HostImage<T> image) {
    auto* bytes = reinterpret_cast<std::uint8_t*>(image.data());
    for (std::size_t i = 0; i < image.size_bytes(); ++i) bytes[i] = static_cast<std::uint8_t>(~bytes[i]);
    return image;
}

}  // namespace klab
