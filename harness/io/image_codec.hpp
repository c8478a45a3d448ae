#pragma once
// Private to harness/io: the per-format codecs behind image_io.hpp and the checks they share.
// Callers outside harness/io use image_io.hpp (decode_image / encode_image pick the codec).
#include <cstdint>
#include <string>
#include <vector>

#include "harness/image.hpp"

namespace klab::io::detail {

// Decoders check the header's size with validate_size(width, height, name, max_pixels)
// (harness/image.hpp) before allocating pixels.

// Throws unless `image` holds pixels (a default-constructed HostImage does not).
void check_image_to_encode(const ImageU8& image, const std::string& name);

// The pixels of `image` (any layout and pitch) as tightly packed interleaved rows, which is what
// every encoder takes.
std::vector<std::uint8_t> packed_interleaved(const ImageU8& image);

// "gray", "RGB", "RGBA" (or "N-channel") for messages.
const char* channels_name(int channels);

ImageU8 decode_png(const std::vector<std::uint8_t>& bytes, const std::string& name, std::int64_t max_pixels);
std::vector<std::uint8_t> encode_png(const ImageU8& image, const std::string& name);

ImageU8 decode_jpeg(const std::vector<std::uint8_t>& bytes, const std::string& name, std::int64_t max_pixels);
std::vector<std::uint8_t> encode_jpeg(const ImageU8& image, const std::string& name, int quality);

ImageU8 decode_pnm(const std::vector<std::uint8_t>& bytes, const std::string& name, std::int64_t max_pixels);
std::vector<std::uint8_t> encode_pnm(const ImageU8& image, const std::string& name);

}  // namespace klab::io::detail
