#include <atomic>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/numeric.hpp"
#include "harness/parallel.hpp"
#include "harness/sampling.hpp"
#include "harness/reference/border_table.hpp"
#include "harness/reference/reference.hpp"

namespace klab::reference {

void convolve(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, const Mask& mask, Border border,
              int threads, const Progress& progress) {
    if (in.shape != out.shape) {
        throw Error(fmt::format("convolve from a {} image into a {} image", to_string(in.shape), to_string(out.shape)),
                    "an output of the input's shape and layout");
    }
    if (static_cast<const void*>(in.data) == static_cast<const void*>(out.data)) {
        throw Error("convolve in place (input and output share memory)", "distinct input and output images");
    }
    const ImageShape shape = in.shape;
    const int rx = mask.radius_x();
    const int ry = mask.radius_y();
    const detail::BorderTable xs(shape.width, rx, rx, border.mode);
    const detail::BorderTable ys(shape.height, ry, ry, border.mode);
    // Stepping one pixel along a row moves `channels` elements in AoS and one in SoA.
    const int step = shape.layout == Layout::aos ? shape.channels : 1;
    const double outside = border.value;
    std::atomic<int> rows_done{0};

    parallel_for(shape.height, threads, [&](int y_begin, int y_end) {
        std::vector<double> acc(static_cast<std::size_t>(shape.width));
        for (int y = y_begin; y < y_end; ++y) {
            for (int c = 0; c < shape.channels; ++c) {
                std::fill(acc.begin(), acc.end(), 0.0);
                const int offset = shape.layout == Layout::aos ? c : 0;
                for (int j = 0; j < mask.height(); ++j) {
                    const int sy = ys[y + j - ry];
                    const std::uint8_t* src = sy < 0 ? nullptr : in.row(sy, c) + offset;
                    for (int x = 0; x < shape.width; ++x) {
                        double sum = 0.0;
                        for (int i = 0; i < mask.width(); ++i) {
                            const int sx = xs[x + i - rx];
                            const double v = (src == nullptr || sx < 0) ? outside : src[sx * step];
                            sum += static_cast<double>(mask.at(i, j)) * v;
                        }
                        acc[static_cast<std::size_t>(x)] += sum;
                    }
                }
                for (int x = 0; x < shape.width; ++x) out.at(x, y, c) = saturate_round_u8(acc[static_cast<std::size_t>(x)]);
            }
            if (progress) progress(++rows_done, shape.height);
        }
    });
}

ConvolutionSum convolve_sum_at(ImageView<const std::uint8_t> in, const Mask& mask, Border border, int x, int y,
                               int c) {
    ConvolutionSum sum;
    for (int j = 0; j < mask.height(); ++j) {
        for (int i = 0; i < mask.width(); ++i) {
            const double v = sample(in, x + i - mask.radius_x(), y + j - mask.radius_y(), c, border);
            const double term = static_cast<double>(mask.at(i, j)) * v;
            sum.value += term;
            sum.magnitude += std::fabs(term);
            sum.pixel_sum += v;
        }
    }
    return sum;
}

ImageU8 convolve(const ImageU8& in, const Mask& mask, Border border, int threads, const Progress& progress) {
    ImageU8 out(in.shape());
    convolve(in.view(), out.view(), mask, border, threads, progress);
    return out;
}

}  // namespace klab::reference
