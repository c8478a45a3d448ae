// What the separable variants (conv.separable_2pass, conv.separable_fused, conv.separable_sliding,
// conv.separable_column_first, conv.separable_row_mma) share: the refusal of masks that are not
// rank-1, the coefficient error they declare (all but conv.separable_row_mma, whose integer digits
// have their own), and, for the fixed-radius ones, the factors sized for radius R: the mask's own
// taps in the middle and zeros around them (a zero tap adds exactly 0, so a mask narrower than 2R+1
// in either direction is applied exactly as it is).
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every kernel
// file that includes it, so a change to its code makes their tuning records stale (its comment-only
// lines do not count).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/mask.hpp"
#include "harness/variant.hpp"

namespace klab::separable {

// Support::yes() for the masks that separable_variant_factors() factors, else the refusal.
inline Support rank1_masks_only(const Mask& mask) {
    if (separable_variant_factors(mask)) return Support::yes();
    return Support::no(fmt::format("separable (rank-1) masks only: {} ({}x{}) is no outer product of a row and a "
                                   "column (klab::separate)",
                                   mask.name(), mask.width(), mask.height()));
}

// Variant::coefficient_error() of a separable variant named `variant`: the error of applying the
// mask as its two factors.
inline double coefficient_error_of(const std::string& variant, const Mask& mask) {
    const std::optional<SeparableFactors> f = separable_variant_factors(mask);
    if (!f) throw Error(fmt::format("{}: coefficient error of a non-separable mask", variant), "a separable mask");
    return separable_coefficient_error(mask, *f);
}

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
