// The factors of a rank-1 mask as the fixed-radius separable variants (conv.separable_sliding,
// conv.separable_column_first) take them: both factors sized for radius R, the mask's own taps in
// the middle and zeros around them (a zero tap adds exactly 0, so a mask narrower than 2R+1 in
// either direction is applied exactly as it is).
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every
// kernel file that includes it, so editing it invalidates their tuning records.
#pragma once

#include <cstddef>

#include "harness/mask.hpp"

namespace klab::separable {

// Tap t of 2R+1 is offset t - R, along the row (row) and down the column (col).
template <int R>
struct Factors {
    float row[2 * R + 1];
    float col[2 * R + 1];
};

// Precondition: `mask` is rank-1 (separable_variant_factors() has factors for it) and neither of
// its radii exceeds R.
template <int R>
Factors<R> factors_of(const Mask& mask) {
    const SeparableFactors rc = *separable_variant_factors(mask);
    Factors<R> f{};  // zeros around the mask's own taps
    for (int i = 0; i < mask.width(); ++i) f.row[R - mask.radius_x() + i] = rc.row[static_cast<std::size_t>(i)];
    for (int j = 0; j < mask.height(); ++j) f.col[R - mask.radius_y() + j] = rc.column[static_cast<std::size_t>(j)];
    return f;
}

}  // namespace klab::separable
