#include <cmath>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/numeric.hpp"
#include "harness/parallel.hpp"
#include "harness/reference/border_table.hpp"
#include "harness/reference/reference.hpp"

namespace klab::reference {

ImageU8 grayscale(const ImageU8& in, int threads) {
    ImageU8 gray(in.width(), in.height(), 1);
    parallel_for(in.height(), threads, [&](int y_begin, int y_end) {
        for (int y = y_begin; y < y_end; ++y) {
            for (int x = 0; x < in.width(); ++x) {
                gray.at(x, y, 0) = in.channels() == 1
                                       ? in.at(x, y, 0)
                                       : gray_bt709(in.at(x, y, 0), in.at(x, y, 1), in.at(x, y, 2));
            }
        }
    });
    return gray;
}

SobelGradients sobel_gradients(const ImageU8& gray, Border border, int threads) {
    if (gray.channels() != 1) {
        throw Error(fmt::format("Sobel gradients of a {}-channel image", gray.channels()),
                    "a 1-channel (gray) image; sobel() converts colour first");
    }
    const Mask kx = masks::sobel_x();
    const Mask ky = masks::sobel_y();
    const detail::BorderTable xs(gray.width(), 1, 1, border.mode);
    const detail::BorderTable ys(gray.height(), 1, 1, border.mode);
    SobelGradients g{HostImage<std::int16_t>(gray.width(), gray.height(), 1),
                     HostImage<std::int16_t>(gray.width(), gray.height(), 1)};
    parallel_for(gray.height(), threads, [&](int y_begin, int y_end) {
        for (int y = y_begin; y < y_end; ++y) {
            for (int x = 0; x < gray.width(); ++x) {
                int gx = 0, gy = 0;
                for (int j = 0; j < 3; ++j) {
                    for (int i = 0; i < 3; ++i) {
                        const int sx = xs[x + i - 1];
                        const int sy = ys[y + j - 1];
                        const int v = (sx < 0 || sy < 0) ? border.value : gray.at(sx, sy, 0);
                        gx += static_cast<int>(kx.at(i, j)) * v;
                        gy += static_cast<int>(ky.at(i, j)) * v;
                    }
                }
                g.gx.at(x, y, 0) = static_cast<std::int16_t>(gx);
                g.gy.at(x, y, 0) = static_cast<std::int16_t>(gy);
            }
        }
    });
    return g;
}

ImageU8 sobel(const ImageU8& in, Border border, int threads) {
    const SobelGradients g = sobel_gradients(grayscale(in, threads), border, threads);
    ImageU8 out(in.width(), in.height(), 1);
    parallel_for(in.height(), threads, [&](int y_begin, int y_end) {
        for (int y = y_begin; y < y_end; ++y) {
            for (int x = 0; x < in.width(); ++x) {
                const int gx = g.gx.at(x, y, 0);
                const int gy = g.gy.at(x, y, 0);
                out.at(x, y, 0) = saturate_round_u8(std::sqrt(static_cast<double>(gx * gx + gy * gy)));
            }
        }
    });
    return out;
}

}  // namespace klab::reference
