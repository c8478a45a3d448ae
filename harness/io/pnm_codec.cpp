// PNM (Netpbm): P5 (binary gray), P6 (binary RGB) and their ASCII forms P2, P3, which are handy for
// hand-written fixtures.
//
// Header: magic, width, height, maxval as decimal numbers separated by whitespace; '#' starts a
// comment that runs to the end of the line. A binary raster starts after exactly one whitespace
// byte following maxval; bytes after the raster are ignored. maxval must be 1..255 (above 255
// the samples are 16-bit, which klab does not read). Samples above maxval are refused. If maxval
// is below 255, samples are scaled to 0..255 as round(v * 255 / maxval), halves rounded up, so
// 0 stays 0 and maxval becomes 255.
// Write: P5 for 1 channel, P6 for 3, always maxval 255.
#include <algorithm>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/io/image_codec.hpp"

namespace klab::io::detail {
namespace {

bool is_pnm_space(std::uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
bool is_digit(std::uint8_t c) { return c >= '0' && c <= '9'; }

// "'x'" for printable bytes, "byte 0x07" otherwise.
std::string describe_byte(std::uint8_t c) {
    if (c >= 0x21 && c < 0x7F) return fmt::format("'{}'", static_cast<char>(c));
    return fmt::format("byte 0x{:02X}", c);
}

// Walks the header and the ASCII raster.
class PnmParser {
public:
    PnmParser(const std::vector<std::uint8_t>& bytes, const std::string& name) : bytes_(bytes), name_(name) {}

    std::size_t position() const { return pos_; }
    void skip(std::size_t count) { pos_ += count; }
    bool at_end() const { return pos_ >= bytes_.size(); }
    std::uint8_t peek() const { return bytes_[pos_]; }

    void skip_space_and_comments() {
        while (pos_ < bytes_.size()) {
            if (is_pnm_space(bytes_[pos_])) {
                ++pos_;
            } else if (bytes_[pos_] == '#') {
                while (pos_ < bytes_.size() && bytes_[pos_] != '\n' && bytes_[pos_] != '\r') ++pos_;
            } else {
                break;
            }
        }
    }

    // The next decimal number after whitespace and comments; `what` names it in messages. A value
    // past kHuge, more than any limit allows, is refused as written in the file (not overflowed),
    // with `allowed` as the values the field takes.
    static constexpr std::int64_t kHuge = std::int64_t{1} << 40;
    std::int64_t number(const char* what, const char* allowed) {
        skip_space_and_comments();
        if (at_end()) {
            throw Error(fmt::format("{}: the PNM file ends where the {} should be", name_, what),
                        "a PNM header of magic, width, height and maxval, then the samples");
        }
        if (!is_digit(peek())) {
            throw Error(
                fmt::format("{}: the PNM file has {} where the {} should be", name_, describe_byte(peek()), what),
                "a decimal number");
        }
        const std::size_t start = pos_;
        std::int64_t value = 0;
        while (!at_end() && is_digit(peek())) {
            value = std::min(kHuge, value * 10 + (peek() - '0'));
            ++pos_;
        }
        if (value >= kHuge) {
            const std::size_t digits = pos_ - start;
            const std::string text(reinterpret_cast<const char*>(bytes_.data()) + start, std::min<std::size_t>(digits, 24));
            throw Error(fmt::format("{}: the PNM {} {}{} is too large", name_, what, text,
                                    digits > 24 ? fmt::format("... ({} digits)", digits) : ""),
                        allowed);
        }
        return value;
    }

private:
    const std::vector<std::uint8_t>& bytes_;
    const std::string& name_;
    std::size_t pos_ = 0;
};

}  // namespace

ImageU8 decode_pnm(const std::vector<std::uint8_t>& bytes, const std::string& name, std::int64_t max_pixels) {
    // decode_image only sends buffers that start with P2, P3, P5 or P6.
    const char kind = static_cast<char>(bytes.at(1));
    const bool binary = kind == '5' || kind == '6';
    const int channels = kind == '2' || kind == '5' ? 1 : 3;
    const std::string magic = fmt::format("P{}", kind);

    PnmParser parser(bytes, name);
    parser.skip(2);
    if (!parser.at_end() && !is_pnm_space(parser.peek()) && parser.peek() != '#') {
        throw Error(fmt::format("{}: the PNM magic {} is followed by {}", name, magic, describe_byte(parser.peek())),
                    "whitespace after P2, P3, P5 or P6");
    }
    constexpr const char* kSizeAllowed = "a width and height of at most 2^30 pixels in all";
    const std::int64_t width = parser.number("width", kSizeAllowed);
    const std::int64_t height = parser.number("height", kSizeAllowed);
    const std::int64_t maxval = parser.number("maxval", "maxval 1 to 255");
    validate_size(width, height, name, max_pixels);
    if (maxval > 255 && maxval <= 65535) {
        throw Error(fmt::format("{}: 16-bit PNM samples (maxval {}) are not supported", name, maxval),
                    "maxval 1 to 255 (8-bit samples)");
    }
    if (maxval < 1 || maxval > 255) {
        throw Error(fmt::format("{}: PNM maxval {} is invalid", name, maxval), "maxval 1 to 255");
    }

    const int w = static_cast<int>(width);
    const int h = static_cast<int>(height);
    const std::size_t sample_count = static_cast<std::size_t>(width * height) * static_cast<std::size_t>(channels);
    const auto checked_sample = [&](std::int64_t value, std::size_t index) {
        if (value > maxval) {
            const std::size_t pixel = index / static_cast<std::size_t>(channels);
            throw Error(fmt::format("{}: sample value {} at pixel ({}, {}) exceeds the maxval {}", name, value,
                                    pixel % static_cast<std::size_t>(w), pixel / static_cast<std::size_t>(w), maxval),
                        "samples from 0 to maxval");
        }
        // Scale to 0..255, rounding halves up; exact when maxval is 255.
        return static_cast<std::uint8_t>((value * 255 + maxval / 2) / maxval);
    };

    if (binary) {
        // Exactly one whitespace byte ends the header: the raster may begin with a byte that looks
        // like whitespace or '#'.
        if (!parser.at_end()) {
            if (!is_pnm_space(parser.peek())) {
                throw Error(fmt::format("{}: the PNM maxval is followed by {}", name, describe_byte(parser.peek())),
                            "exactly one whitespace byte between maxval and the pixel data");
            }
            parser.skip(1);
        }
        const std::size_t available = bytes.size() - std::min(bytes.size(), parser.position());
        if (available < sample_count) {
            throw Error(fmt::format("{}: the {} pixel data is truncated: {}x{} {} needs {} bytes, the file has {}",
                                    name, magic, w, h, channels_name(channels), sample_count, available),
                        "a complete file");
        }
        ImageU8 image(w, h, channels);
        const std::uint8_t* raster = bytes.data() + parser.position();
        std::uint8_t* out = image.data();  // packed AoS: samples in file order
        for (std::size_t i = 0; i < sample_count; ++i) out[i] = checked_sample(raster[i], i);
        return image;
    }

    // ASCII: samples are decimal numbers separated by whitespace (comments allowed too). A first
    // pass checks and counts them without storing, so that a header claiming a huge image over a
    // short raster fails before the image is allocated; the second pass stores them.
    const auto read_ascii_raster = [&](std::uint8_t* out) {
        PnmParser raster = parser;  // both passes start right after maxval
        for (std::size_t i = 0; i < sample_count; ++i) {
            raster.skip_space_and_comments();
            if (raster.at_end()) {
                throw Error(
                    fmt::format("{}: the {} pixel data is truncated: {}x{} {} needs {} samples, the file has {}",
                                name, magic, w, h, channels_name(channels), sample_count, i),
                    "a complete file");
            }
            if (!is_digit(raster.peek())) {
                throw Error(fmt::format("{}: the {} pixel data has {} where sample {} should be", name, magic,
                                        describe_byte(raster.peek()), i),
                            "decimal numbers from 0 to maxval separated by whitespace");
            }
            const std::uint8_t value = checked_sample(raster.number("sample", "samples from 0 to maxval"), i);
            // A sample ends at whitespace, a comment or the file's end: "3.5" or "8x" is no sample
            // 3 or 8.
            if (!raster.at_end() && !is_pnm_space(raster.peek()) && raster.peek() != '#') {
                throw Error(fmt::format("{}: the {} pixel data has {} right after sample {}", name, magic,
                                        describe_byte(raster.peek()), i),
                            "decimal numbers from 0 to maxval separated by whitespace");
            }
            if (out != nullptr) out[i] = value;
        }
    };
    read_ascii_raster(nullptr);
    ImageU8 image(w, h, channels);
    read_ascii_raster(image.data());  // packed AoS: samples in file order
    return image;
}

std::vector<std::uint8_t> encode_pnm(const ImageU8& image, const std::string& name) {
    if (image.channels() != 1 && image.channels() != 3) {
        throw Error(fmt::format("{}: PNM cannot store an image with {} channels ({})", name, image.channels(),
                                channels_name(image.channels())),
                    "1 (gray, written as P5) or 3 (RGB, written as P6) channels; write RGBA images as PNG");
    }
    const std::string header =
        fmt::format("{}\n{} {}\n255\n", image.channels() == 1 ? "P5" : "P6", image.width(), image.height());
    std::vector<std::uint8_t> out(header.begin(), header.end());
    const std::vector<std::uint8_t> pixels = packed_interleaved(image);
    out.insert(out.end(), pixels.begin(), pixels.end());
    return out;
}

}  // namespace klab::io::detail
