// PNG through libpng's simplified API (png_image_*): it reports errors in png_image::message
// instead of longjmp-ing, and does the palette / gray+alpha expansion for us.
//
// Read: the stored sample values, whatever colour space the file declares (gAMA, cHRM, iCCP, sRGB
// and cICP chunks are ignored). 8-bit (or fewer) gray -> 1 channel, RGB and RGB palette -> 3, anything with alpha (gray+alpha,
// RGBA, palette or gray/RGB with tRNS) -> 4 (RGBA, not premultiplied). 16-bit files are refused,
// and so is a file whose compressed data is too short for the size its header declares, before
// the pixels are allocated, or one with a chunk that declares more data than the file holds.
// Write: 1 (gray), 3 (RGB) or 4 (RGBA) channels, 8-bit.
#include <png.h>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/io/image_codec.hpp"

namespace klab::io::detail {
namespace {

// Frees libpng's state on every exit path (png_image_free is a no-op once it has run).
struct PngImage {
    png_image image{};
    PngImage() { image.version = PNG_IMAGE_VERSION; }
    PngImage(const PngImage&) = delete;
    PngImage& operator=(const PngImage&) = delete;
    ~PngImage() { png_image_free(&image); }
};

const char* png_message(const png_image& image) { return image.message[0] != '\0' ? image.message : "no details"; }

struct ChunkWalk {
    std::vector<std::uint8_t> bytes;  // the file without its colour-space chunks
    std::size_t idat_bytes = 0;       // the compressed image data: every IDAT chunk's length
};

// The simplified API converts samples whenever a file declares a colour space other than sRGB
// (a gAMA of 1.0, an ICC profile, ...): a pixel stored as 64 would come back as 136. klab filters
// the stored values, so these ancillary chunks are dropped before decoding.
// A chunk before IEND that declares more data than the file still holds is refused here: libpng
// allocates a text chunk's declared length before it reads the data, so a 200-byte file declaring
// a 1.5 GB tEXt chunk would cost 1.5 GB (found by fuzz/png). Other malformed chunk lists are passed
// on unchanged from that point, for libpng to report; bytes after IEND are passed on unread.
ChunkWalk without_colour_space_chunks(const std::vector<std::uint8_t>& bytes, const std::string& name) {
    constexpr std::size_t kSignature = 8;
    if (bytes.size() < kSignature) return {bytes, 0};
    ChunkWalk walk;
    std::vector<std::uint8_t>& out = walk.bytes;
    out.assign(bytes.begin(), bytes.begin() + kSignature);
    std::size_t at = kSignature;
    while (at + 12 <= bytes.size()) {
        const std::size_t length = (std::size_t{bytes[at]} << 24) | (std::size_t{bytes[at + 1]} << 16) |
                                   (std::size_t{bytes[at + 2]} << 8) | std::size_t{bytes[at + 3]};
        const std::size_t chunk_size = 12 + length;  // length, type, data, CRC
        const std::string type(reinterpret_cast<const char*>(&bytes[at + 4]), 4);
        if (at + chunk_size > bytes.size()) {
            throw Error(fmt::format("{}: the PNG data is corrupt or truncated: chunk '{}' at byte {} declares {} bytes of "
                                    "data, but the file ends {} bytes after its type",
                                    name, printable(type), at, length, bytes.size() - at - 8),
                        "a complete, valid PNG file");
        }
        if (type == "IDAT") walk.idat_bytes += length;
        if (type != "gAMA" && type != "cHRM" && type != "iCCP" && type != "sRGB" && type != "cICP") {
            out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at),
                       bytes.begin() + static_cast<std::ptrdiff_t>(at + chunk_size));
        }
        at += chunk_size;
        if (type == "IEND") break;
    }
    out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.end());
    return walk;
}

// The fewest bytes of compressed data that can hold the image the header describes: deflate
// expands at most 1032 times (a 258-byte match in 2 bits), and the filtered scanlines hold at
// least width * height * bits per pixel. A file with less is truncated (or a header lying about
// a huge size), refused before gigabytes of pixels are allocated for it.
std::uint64_t minimum_idat_bytes(const std::vector<std::uint8_t>& bytes) {
    // After png_image_begin_read_from_memory succeeded, IHDR's data starts at byte 16: width,
    // height (4 bytes each), bit depth, colour type.
    const auto u32 = [&](std::size_t at) {
        return (std::uint64_t{bytes[at]} << 24) | (std::uint64_t{bytes[at + 1]} << 16) | (std::uint64_t{bytes[at + 2]} << 8) |
               std::uint64_t{bytes[at + 3]};
    };
    const std::uint64_t bit_depth = bytes[24];
    const std::uint8_t colour_type = bytes[25];
    const std::uint64_t samples = colour_type == 2 ? 3 : colour_type == 4 ? 2 : colour_type == 6 ? 4 : 1;  // 0, 3: 1
    return u32(16) * u32(20) * samples * bit_depth / 8 / 1032;
}

// A palette file, read as its indices and its colour map and expanded here: libpng's own expansion
// decodes an index past the palette's end as black, without a warning, and such a file is refused.
void read_palette_pixels(PngImage& png, const std::string& name, ImageU8& image) {
    const int channels = image.channels();
    png.image.format = channels == 4 ? PNG_FORMAT_RGBA_COLORMAP : PNG_FORMAT_RGB_COLORMAP;
    std::vector<std::uint8_t> indices(PNG_IMAGE_SIZE(png.image));
    std::vector<std::uint8_t> colormap(PNG_IMAGE_COLORMAP_SIZE(png.image));
    if (!png_image_finish_read(&png.image, nullptr, indices.data(), 0, colormap.data())) {
        throw Error(fmt::format("{}: the PNG data is corrupt or truncated (libpng: {})", name, png_message(png.image)),
                    "a complete, valid PNG file");
    }
    const png_uint_32 entries = png.image.colormap_entries;
    const int width = image.width();
    for (int y = 0; y < image.height(); ++y) {
        std::uint8_t* row = image.data() + static_cast<std::size_t>(y) * image.pitch_bytes();
        for (int x = 0; x < width; ++x) {
            const std::uint8_t index = indices[static_cast<std::size_t>(y) * width + x];
            if (index >= entries) {
                throw Error(fmt::format("{}: the PNG pixel ({}, {}) is palette entry {}, but the palette has {} {}", name, x, y,
                                        index, entries, entries == 1 ? "entry" : "entries"),
                            "a valid PNG file (palette indices below the palette's size)");
            }
            std::memcpy(row + static_cast<std::size_t>(x) * channels, colormap.data() + static_cast<std::size_t>(index) * channels,
                        static_cast<std::size_t>(channels));
        }
    }
}

}  // namespace

ImageU8 decode_png(const std::vector<std::uint8_t>& file_bytes, const std::string& name, std::int64_t max_pixels) {
    const ChunkWalk walk = without_colour_space_chunks(file_bytes, name);
    const std::vector<std::uint8_t>& bytes = walk.bytes;
    PngImage png;
    // Reads the chunks before the pixel data: size and format, nothing allocated for pixels yet.
    if (!png_image_begin_read_from_memory(&png.image, bytes.data(), bytes.size())) {
        throw Error(fmt::format("{}: the PNG data is corrupt or truncated (libpng: {})", name, png_message(png.image)),
                    "a complete, valid PNG file");
    }
    const png_uint_32 file_format = png.image.format;
    if (file_format & PNG_FORMAT_FLAG_LINEAR) {
        throw Error(fmt::format("{}: 16-bit samples are not supported", name),
                    "8-bit gray, gray+alpha, RGB, RGBA or palette PNG");
    }
    validate_size(png.image.width, png.image.height, name, max_pixels);
    if (const std::uint64_t needed = minimum_idat_bytes(bytes); walk.idat_bytes < needed) {
        throw Error(fmt::format("{}: the PNG data is truncated: a {}x{} image needs at least {} bytes of compressed data, the "
                                "file has {}",
                                name, png.image.width, png.image.height, needed, walk.idat_bytes),
                    "a complete, valid PNG file");
    }

    // Ask for the file's own channels so that nothing is composited or converted; gray+alpha
    // becomes RGBA because klab images have 1, 3 or 4 channels.
    int channels = 1;
    png.image.format = PNG_FORMAT_GRAY;
    if (file_format & PNG_FORMAT_FLAG_ALPHA) {
        channels = 4;
        png.image.format = PNG_FORMAT_RGBA;
    } else if (file_format & PNG_FORMAT_FLAG_COLOR) {
        channels = 3;
        png.image.format = PNG_FORMAT_RGB;
    }
    ImageU8 image(static_cast<int>(png.image.width), static_cast<int>(png.image.height), channels);
    if (file_format & PNG_FORMAT_FLAG_COLORMAP) {
        read_palette_pixels(png, name, image);
        return image;
    }
    // The row stride is counted in components, which are bytes here.
    const auto row_stride = static_cast<png_int_32>(image.pitch_bytes());
    if (!png_image_finish_read(&png.image, nullptr, image.data(), row_stride, nullptr)) {
        throw Error(fmt::format("{}: the PNG data is corrupt or truncated (libpng: {})", name, png_message(png.image)),
                    "a complete, valid PNG file");
    }
    return image;
}

std::vector<std::uint8_t> encode_png(const ImageU8& image, const std::string& name) {
    const int channels = image.channels();
    if (channels != 1 && channels != 3 && channels != 4) {
        throw Error(fmt::format("{}: PNG cannot store an image with {} channels", name, channels),
                    "1 (gray), 3 (RGB) or 4 (RGBA) channels");
    }
    const std::vector<std::uint8_t> pixels = packed_interleaved(image);
    PngImage png;
    png.image.width = static_cast<png_uint_32>(image.width());
    png.image.height = static_cast<png_uint_32>(image.height());
    png.image.format = channels == 1 ? PNG_FORMAT_GRAY : channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
    const auto row_stride = static_cast<png_int_32>(image.width() * channels);

    // Most PNGs are smaller than their pixels; if this one is not, libpng reports the size it needs
    // and we encode again into a buffer of that size.
    std::vector<std::uint8_t> out(pixels.size() + pixels.size() / 8 + 1024);
    for (int attempt = 0; attempt < 2; ++attempt) {
        png_alloc_size_t size = out.size();
        if (png_image_write_to_memory(&png.image, out.data(), &size, 0, pixels.data(), row_stride, nullptr)) {
            out.resize(size);
            return out;
        }
        if (size <= out.size()) break;  // a real error, not a short buffer
        out.resize(size);
        png_image_free(&png.image);
        png.image.warning_or_error = 0;
        png.image.message[0] = '\0';
    }
    throw Error(fmt::format("{}: PNG encoding failed (libpng: {})", name, png_message(png.image)));
}

}  // namespace klab::io::detail
