#pragma once
// Reading a pixel at any coordinate, inside the image or beyond its border: the one rule the CPU
// reference and every kernel share (border_index() maps the coordinate, Border::value fills
// BorderMode::constant).
#include <cstdint>

#include "harness/border.hpp"
#include "harness/host_device.hpp"
#include "harness/image.hpp"

namespace klab {

KLAB_HD std::uint8_t sample(ImageView<const std::uint8_t> in, int x, int y, int c, Border border) {
    const int sx = border_index(x, in.shape.width, border.mode);
    const int sy = border_index(y, in.shape.height, border.mode);
    return (sx < 0 || sy < 0) ? border.value : in.at(sx, sy, c);
}

}  // namespace klab
