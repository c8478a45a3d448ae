#include "harness/image.hpp"

#include <fmt/format.h>

#include "harness/error.hpp"

namespace klab {

const char* to_string(Layout layout) { return layout == Layout::aos ? "aos" : "soa"; }

Layout parse_layout(const std::string& text) {
    if (text == "aos") return Layout::aos;
    if (text == "soa") return Layout::soa;
    throw Error(fmt::format("unknown layout '{}'", printable(text)), "aos (interleaved), soa (planar)");
}

std::string to_string(const ImageShape& shape) {
    return fmt::format("{}x{}x{} {}", shape.width, shape.height, shape.channels, to_string(shape.layout));
}

void validate_size(std::int64_t width, std::int64_t height, const std::string& context, std::int64_t max_pixels) {
    const std::string prefix = context.empty() ? std::string() : context + ": ";
    if (width < 1 || height < 1) {
        throw Error(fmt::format("{}image size {}x{} is empty", prefix, width, height), "width and height of at least 1");
    }
    // Compare sides first: with both sides <= 2^17 the product cannot overflow.
    if (width > kMaxImageSide || height > kMaxImageSide || width * height > max_pixels) {
        throw Error(fmt::format("{}image size {}x{} exceeds klab's size limit", prefix, width, height),
                    fmt::format("width and height up to {} and at most {} pixels in all", kMaxImageSide, max_pixels));
    }
}

void validate_shape(const ImageShape& shape) {
    validate_size(shape.width, shape.height);
    if (shape.channels != 1 && shape.channels != 3 && shape.channels != 4) {
        throw Error(fmt::format("image has {} channels", shape.channels), "1 (gray), 3 (RGB), 4 (RGBA)");
    }
}

template <class T>
HostImage<T>::HostImage(ImageShape shape, std::size_t pitch_bytes) : shape_(shape) {
    validate_shape(shape);
    const std::size_t row_bytes = static_cast<std::size_t>(shape.row_elements()) * sizeof(T);
    if (pitch_bytes == 0) pitch_bytes = row_bytes;
    if (pitch_bytes < row_bytes || pitch_bytes % sizeof(T) != 0) {
        throw Error(fmt::format("row pitch of {} bytes for a {} image of {}-byte elements", pitch_bytes,
                                to_string(shape), sizeof(T)),
                    fmt::format("a multiple of {} that is at least {}", sizeof(T), row_bytes));
    }
    pitch_bytes_ = pitch_bytes;
    storage_.assign(pitch_bytes / sizeof(T) * static_cast<std::size_t>(shape.rows()), T{});
}

template <class T>
bool same_pixels(const HostImage<T>& a, const HostImage<T>& b) {
    if (a.shape() != b.shape()) return false;
    for (int c = 0; c < (a.layout() == Layout::soa ? a.channels() : 1); ++c) {
        for (int y = 0; y < a.height(); ++y) {
            const T* ra = a.row(y, c);
            const T* rb = b.row(y, c);
            for (int i = 0; i < a.shape().row_elements(); ++i) {
                if (ra[i] != rb[i]) return false;
            }
        }
    }
    return true;
}

template class HostImage<std::uint8_t>;
template class HostImage<std::int16_t>;
template class HostImage<std::uint32_t>;
template class HostImage<std::uint64_t>;
template bool same_pixels(const HostImage<std::uint8_t>&, const HostImage<std::uint8_t>&);
template bool same_pixels(const HostImage<std::int16_t>&, const HostImage<std::int16_t>&);
template bool same_pixels(const HostImage<std::uint32_t>&, const HostImage<std::uint32_t>&);
template bool same_pixels(const HostImage<std::uint64_t>&, const HostImage<std::uint64_t>&);

}  // namespace klab
