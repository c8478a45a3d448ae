// The normalized box's rounding of a word that holds two box sums in its 16-bit halves (the layout
// of conv.box_warp_ring's sums, and of conv.box_pixel_lanes's paired row sums, which round only
// high halves), in three instructions instead of four: the low half's quotient by a multiply-high
// of the half alone, the high half's by a multiply-high of the whole word.
//
// Why the whole word will do: word = x1 * 2^16 + x0, and word * inverse / 2^48 = x1 * inverse / 2^32
// + x0 * inverse / 2^48. The first term's floor is floor(x1 / n) (kernels/box_sums.hpp: exact for
// sums below 2^18). The second term is below x0 / (n * 2^16) plus a little, less than what the first
// term leaves to the next integer, for every sum a box of area n <= 256 can give (x0, x1 <= 255 * n
// + (n - 1) / 2, the sum and its rounding's half). tests/cpu/test_box_word_rounding.cpp checks it
// for every box of area up to 256 and every x1, at the least and the greatest x0 (the floor only
// grows with x0). So floor(word * inverse / 2^48) = floor(x1 / n) <= 255: byte 2 of the multiply-high.
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every kernel
// file that includes it, so a change to its code makes their tuning records stale (its comment-only
// lines do not count).
#pragma once

#include <cstdint>

#include "harness/host_device.hpp"

namespace klab::box_word {

// The high 32 bits of a * b: one multiply-high on the GPU (written as a 64-bit product, nvcc makes
// a wide multiply of it, and moves).
KLAB_HD std::uint32_t multiply_high(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __umulhi(a, b);
#else
    return static_cast<std::uint32_t>(static_cast<std::uint64_t>(a) * b >> 32);
#endif
}

// Where the two output bytes of a word land: the low half's in byte 0 of `low`, the high half's in
// byte 2 of `high`.
struct HalfQuotients {
    std::uint32_t low;
    std::uint32_t high;
};

// The output bytes of the two sums in `word` (each sum with the rounding's half (n - 1) / 2 added),
// for the normalized box of area n (2 <= n <= 256): `inverse` = ceil(2^32 / n),
// box_sums::Rounding::inverse.
KLAB_HD HalfQuotients half_quotients(std::uint32_t word, std::uint32_t inverse) {
    return {multiply_high(word & 0xffffu, inverse), multiply_high(word, inverse)};
}

}  // namespace klab::box_word
