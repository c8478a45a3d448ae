// Host-side launch rules shared by the variants whose threads each own a run of bytes of a row and
// walk a strip of rows, trading their edge bytes with the neighbouring lanes by warp shuffle
// (conv.shuffle_window, conv.shuffle_ring): the block they take and the strip height they start at.
// Not a device header: the kernels' code does not depend on it (kernels/CMakeLists.txt).
#pragma once

#include <algorithm>
#include <climits>
#include <vector>

#include <fmt/format.h>

#include "harness/image.hpp"
#include "harness/variant.hpp"

namespace klab::warp_strips {

constexpr int kWarp = 32;

// A block of 32k x m threads, at most `max_threads`: a warp's lanes must lie along one row.
inline Support check_block(const LaunchShape& shape, int max_threads) {
    if (shape.block_x % kWarp != 0 || shape.block_x * shape.block_y > max_threads) {
        return Support::no(fmt::format("block {}x{}: the block is 32k x m threads, at most {} (a warp's lanes lie along "
                                       "a row and trade their edge bytes by shuffle)",
                                       shape.block_x, shape.block_y, max_threads));
    }
    return Support::yes();
}

// The tallest strip of `candidates` (up to `tallest` rows) whose grid still gives every SM of a 132-SM GPU
// 16 warps, for threads that own `elements_per_thread` bytes of a row; the shortest if none does.
inline int filling_strip_rows(const ImageShape& s, int elements_per_thread, const std::vector<int>& candidates,
                              int tallest = INT_MAX) {
    const long long threads_per_row = static_cast<long long>(grid_side(s.row_elements(), elements_per_thread)) *
                                      (s.layout == Layout::aos ? 1 : s.channels);
    int rows = *std::min_element(candidates.begin(), candidates.end());
    for (int candidate : candidates) {
        if (candidate <= tallest && candidate > rows && threads_per_row * grid_side(s.height, candidate) >= 132LL * 16 * kWarp) {
            rows = candidate;
        }
    }
    return rows;
}

}  // namespace klab::warp_strips
