// What the Gaussian 9x9 probes share (gauss9_mma_chain.cu, gauss9_ffma_rows.cu), beside the 8K RGB
// AoS image, timer and copy floor of box9_probe.hpp: the Gaussian's factor and the check of a few
// rows against a double computation.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <vector>

#include "probes/box9_probe.hpp"

namespace klab::probes::gauss9 {

// The image, its timer and copy floor, as the box probes have them.
using box9::Buffers;
using box9::kHeight;
using box9::kRowBytes;
using box9::Timer;

constexpr int kTaps = 9;
constexpr int kReach = (kTaps / 2) * box9::kStride;  // 4 pixels of 3 bytes each side

// The Gaussian's factor (both ways), sigma 1.7 as OpenCV picks for 9 taps, each value rounded to
// fp32 as a variant gets it (held in double).
inline std::array<double, kTaps> factor() {
    std::array<double, kTaps> f{};
    double sum = 0;
    for (int i = 0; i < kTaps; ++i) sum += f[static_cast<std::size_t>(i)] = std::exp(-(i - 4) * (i - 4) / (2 * 1.7 * 1.7));
    for (double& r : f) r = static_cast<float>(r / sum);
    return f;
}

struct Differences {
    long checked = 0;     // bytes compared
    long differing = 0;   // of them, those that differ from the double computation
    long beyond_one = 0;  // and of those, the ones off by more than 1
};

// The bytes of `rows`, `margin` bytes or more from a row's ends, against the factor applied both
// ways in double (rows outside the image replicated), rounded half to even and saturated.
inline Differences count_differences(const std::vector<std::uint8_t>& image, const std::vector<std::uint8_t>& result,
                                     const std::array<double, kTaps>& f, std::initializer_list<int> rows, int margin) {
    Differences d;
    for (int y : rows) {
        for (int e = margin; e < kRowBytes - margin; ++e) {
            double sum = 0;
            for (int j = 0; j < kTaps; ++j) {
                const int sy = std::min(std::max(y + j - kTaps / 2, 0), kHeight - 1);
                double row = 0;
                for (int i = 0; i < kTaps; ++i) {
                    row += f[static_cast<std::size_t>(i)] * image[static_cast<std::size_t>(sy) * Buffers::pitch + static_cast<std::size_t>(e + box9::kStride * (i - kTaps / 2))];
                }
                sum += f[static_cast<std::size_t>(j)] * row;
            }
            const int expected = static_cast<int>(std::nearbyint(std::min(std::max(sum, 0.0), 255.0)));
            const int got = result[static_cast<std::size_t>(y) * Buffers::pitch + static_cast<std::size_t>(e)];
            ++d.checked;
            if (got != expected) ++d.differing;
            if (std::abs(got - expected) > 1) ++d.beyond_one;
        }
    }
    return d;
}

}  // namespace klab::probes::gauss9
