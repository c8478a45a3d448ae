#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/reference/border_table.hpp"
#include "harness/reference/reference.hpp"

namespace klab::reference {

ImageU8 to_layout(const ImageU8& in, Layout layout) {
    ImageU8 out(in.width(), in.height(), in.channels(), layout);
    for (int y = 0; y < in.height(); ++y) {
        for (int x = 0; x < in.width(); ++x) {
            for (int c = 0; c < in.channels(); ++c) out.at(x, y, c) = in.at(x, y, c);
        }
    }
    return out;
}

ImageU8 pad(const ImageU8& in, int pad_x, int pad_y, Border border) {
    if (pad_x < 0 || pad_y < 0) {
        throw Error(fmt::format("padding of {}x{}", pad_x, pad_y), "non-negative padding");
    }
    ImageU8 out(in.width() + 2 * pad_x, in.height() + 2 * pad_y, in.channels(), in.layout());
    const detail::BorderTable xs(in.width(), pad_x, pad_x, border.mode);
    const detail::BorderTable ys(in.height(), pad_y, pad_y, border.mode);
    for (int y = 0; y < out.height(); ++y) {
        for (int x = 0; x < out.width(); ++x) {
            const int sx = xs[x - pad_x];
            const int sy = ys[y - pad_y];
            for (int c = 0; c < in.channels(); ++c) {
                out.at(x, y, c) = (sx < 0 || sy < 0) ? border.value : in.at(sx, sy, c);
            }
        }
    }
    return out;
}

}  // namespace klab::reference
