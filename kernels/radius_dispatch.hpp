// What the register-tiled and tensor-core convolutions (conv.register_tile, conv.integer_mma,
// conv.separable_row_mma) share on the host: the kernel instance for a problem's mask radius and
// element stride, and the check of a tuning parameter against the values a variant lists.
//
// kernels/CMakeLists.txt puts this header into the source hash of every kernel file that includes
// it, so a change to its code makes their tuning records stale (its comment-only lines do not
// count).
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>

#include "harness/problem.hpp"
#include "harness/row_stream.hpp"

namespace klab {

// f(integral_constant<R>, integral_constant<S>) for the problem's radius R = max(rx, ry) (0..4) and
// element stride S (1 gray or SoA, 3 RGB, 4 RGBA).
template <class F>
decltype(auto) dispatch_radius_stride(const Problem& problem, F&& f) {
    return rows::dispatch_radius_stride(rows::StripVariant::radius(problem), rows::element_stride(problem.shape), std::forward<F>(f));
}

// Whether `value` is one of `values` (a tuning parameter's allowed values).
template <std::size_t N>
bool listed(const std::array<int, N>& values, int value) {
    return std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace klab
