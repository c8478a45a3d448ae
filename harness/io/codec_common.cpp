// Checks and conversions shared by the PNG, JPEG and PNM codecs (image_codec.hpp).
#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/io/image_codec.hpp"

namespace klab::io::detail {

void check_image_to_encode(const ImageU8& image, const std::string& name) {
    // A constructed image is within the size limits already; only a default-constructed one is not.
    if (image.empty()) {
        throw Error(fmt::format("{}: the image to write holds no pixels", name), "an image of at least 1x1 pixels");
    }
}

std::vector<std::uint8_t> packed_interleaved(const ImageU8& image) {
    const int width = image.width();
    const int channels = image.channels();
    std::vector<std::uint8_t> packed(image.shape().pixels() * static_cast<std::size_t>(channels));
    std::size_t i = 0;
    if (image.layout() == Layout::aos) {
        // Row by row: skips the pitch padding.
        for (int y = 0; y < image.height(); ++y) {
            const std::uint8_t* row = image.row(y);
            for (int e = 0; e < width * channels; ++e) packed[i++] = row[e];
        }
    } else {
        for (int y = 0; y < image.height(); ++y) {
            for (int x = 0; x < width; ++x) {
                for (int c = 0; c < channels; ++c) packed[i++] = image.at(x, y, c);
            }
        }
    }
    return packed;
}

const char* channels_name(int channels) {
    switch (channels) {
        case 1: return "gray";
        case 3: return "RGB";
        case 4: return "RGBA";
        default: return "unknown-channel";
    }
}

}  // namespace klab::io::detail
