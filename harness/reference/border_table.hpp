#pragma once
// Internal to the CPU reference: border_index() precomputed for every coordinate an axis of
// length n is read at, from -before to n-1+after, so the inner loops only look indices up.
#include <vector>

#include "harness/border.hpp"

namespace klab::reference::detail {

class BorderTable {
public:
    BorderTable(int n, int before, int after, BorderMode mode) : before_(before) {
        indices_.reserve(static_cast<std::size_t>(n + before + after));
        for (int i = -before; i < n + after; ++i) indices_.push_back(border_index(i, n, mode));
    }
    // Source index for coordinate i (-before <= i < n+after); -1 means "the constant value".
    int operator[](int i) const { return indices_[static_cast<std::size_t>(i + before_)]; }

private:
    int before_;
    std::vector<int> indices_;
};

}  // namespace klab::reference::detail
