#pragma once
// Border modes and the one index-mapping function that the CPU reference and every kernel use
// to read outside the image. For an image row "abcd":
//   constant(v)  vvv|abcd|vvv      replicate  aaa|abcd|ddd      mirror (reflect-101)  dcb|abcd|cba
//   reflect      cba|abcd|dcb      wrap       bcd|abcd|abc
// The mapping extends periodically, so it stays right when the mask is larger than the image.
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/host_device.hpp"

namespace klab {

enum class BorderMode : std::uint8_t { constant, replicate, mirror, reflect, wrap };

struct Border {
    BorderMode mode = BorderMode::replicate;
    std::uint8_t value = 0;  // the pixel value outside the image, for BorderMode::constant only
};

// Maps coordinate `i` along an axis of length `n` (n >= 1) into [0, n). Returns -1 for a
// coordinate outside the image under BorderMode::constant: the caller then uses Border::value.
KLAB_HD int border_index(int i, int n, BorderMode mode) {
    if (i >= 0 && i < n) return i;
    switch (mode) {
        case BorderMode::constant:
            return -1;
        case BorderMode::replicate:
            return i < 0 ? 0 : n - 1;
        case BorderMode::wrap: {
            const int r = i % n;
            return r < 0 ? r + n : r;
        }
        case BorderMode::reflect: {  // period 2n: abcd|dcba|abcd
            const int period = 2 * n;
            int r = i % period;
            if (r < 0) r += period;
            return r < n ? r : period - 1 - r;
        }
        case BorderMode::mirror: {  // period 2n-2: abcd|cb|abcd; a single pixel mirrors onto itself
            if (n == 1) return 0;
            const int period = 2 * n - 2;
            int r = i % period;
            if (r < 0) r += period;
            return r < n ? r : period - r;
        }
    }
    return -1;
}

// "constant", "constant:V" (V an integer 0..255), "replicate", "mirror", "reflect", "wrap".
Border parse_border(std::string_view text);
std::string to_string(Border border);
const char* to_string(BorderMode mode);

}  // namespace klab
