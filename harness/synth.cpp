#include "harness/synth.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/synth_blocks.hpp"

namespace klab::synth {

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

const char* to_string(Pattern pattern) {
    switch (pattern) {
        case Pattern::gradient: return "gradient";
        case Pattern::checkerboard: return "checkerboard";
        case Pattern::noise: return "noise";
        case Pattern::natural: return "natural";
    }
    return "?";
}

const std::vector<Pattern>& all_patterns() {
    static const std::vector<Pattern> patterns = {Pattern::gradient, Pattern::checkerboard, Pattern::noise,
                                                  Pattern::natural};
    return patterns;
}

Pattern parse_pattern(const std::string& text) {
    for (Pattern p : all_patterns()) {
        if (text == to_string(p)) return p;
    }
    throw Error(fmt::format("unknown pattern '{}'", text), "gradient, checkerboard, noise, natural");
}

const std::vector<Resolution>& named_resolutions() {
    static const std::vector<Resolution> list = {
        {"480p", 640, 480}, {"720p", 1280, 720}, {"HD", 1920, 1080}, {"4K", 3840, 2160}, {"8K", 7680, 4320},
    };
    return list;
}

namespace {

std::string lower(std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

// Parses a decimal side length of 1..kMaxResolutionSide; false for anything else (a sign, spaces,
// trailing characters, overflow).
bool parse_side(const std::string& digits, int& out) {
    int value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || digits[0] == '-' || ec != std::errc{} || end != digits.data() + digits.size()) return false;
    if (value < 1 || value > kMaxResolutionSide) return false;
    out = value;
    return true;
}

}  // namespace

Resolution parse_resolution(const std::string& text) {
    const std::string key = lower(text);
    for (const Resolution& r : named_resolutions()) {
        if (key == lower(r.name)) return r;
    }
    const std::size_t cross = key.find('x');
    int width = 0;
    int height = 0;
    const bool sides = cross != std::string::npos && parse_side(key.substr(0, cross), width) &&
                       parse_side(key.substr(cross + 1), height);
    if (sides && std::int64_t{width} * height <= kMaxImagePixels) return {fmt::format("{}x{}", width, height), width, height};
    std::string names;
    for (const Resolution& r : named_resolutions()) names += fmt::format("{} ({}x{}), ", r.name, r.width, r.height);
    throw Error(fmt::format(sides ? "resolution '{}' has more pixels than an image klab makes" : "unknown resolution '{}'", text),
                fmt::format("{}or WxH with W and H from 1 to {} and at most {} pixels in all (e.g. 17x13)", names,
                            kMaxResolutionSide, kMaxImagePixels));
}

int checker_square_side(int width, int height) { return std::max(1, std::min(width, height) / 16); }

// ---------------------------------------------------------------------------------------------
// Patterns (the natural one in harness/synth_natural.cpp)
// ---------------------------------------------------------------------------------------------

namespace {

using namespace detail;

// Rounded i * 255 / (n - 1): 0 at the first sample, 255 at the last.
inline std::uint8_t ramp(int i, int n) {
    if (n <= 1) return 0;
    return static_cast<std::uint8_t>((static_cast<std::int64_t>(i) * 510 + (n - 1)) / (2 * (n - 1)));
}

void gradient(ImageU8& image, int threads) {
    const int w = image.width(), h = image.height(), ch = image.channels();
    // Ramps as tables: one division per entry instead of three per pixel.
    std::vector<std::uint8_t> horizontal(static_cast<std::size_t>(w)), diagonal(static_cast<std::size_t>(w + h - 1));
    for (int i = 0; i < w; ++i) horizontal[i] = ramp(i, w);
    for (int i = 0; i < w + h - 1; ++i) diagonal[i] = ramp(i, w + h - 1);  // top-left to bottom-right
    for_row_bands(h, threads, [&](int y0, int y1) {
        for (int y = y0; y < y1; ++y) {
            std::uint8_t* out = image.row(y);
            const std::uint8_t vertical = ramp(y, h);
            for (int x = 0; x < w; ++x) {
                std::uint8_t* px = out + x * ch;
                px[0] = horizontal[x];
                if (ch >= 3) {
                    px[1] = vertical;
                    px[2] = diagonal[x + y];
                }
                if (ch == 4) px[3] = 255;
            }
        }
    });
}

void checkerboard(ImageU8& image, int threads) {
    const int w = image.width(), h = image.height(), ch = image.channels();
    const int side = checker_square_side(w, h);
    for_row_bands(h, threads, [&](int y0, int y1) {
        for (int y = y0; y < y1; ++y) {
            std::uint8_t* out = image.row(y);
            for (int x = 0; x < w; ++x) {
                const bool b = ((x / side + y / side) & 1) != 0;
                std::uint8_t* px = out + x * ch;
                if (ch == 1) {
                    px[0] = b ? kCheckerBGray : kCheckerAGray;
                } else {
                    const std::uint8_t* c = b ? kCheckerB : kCheckerA;
                    px[0] = c[0]; px[1] = c[1]; px[2] = c[2];
                    if (ch == 4) px[3] = 255;
                }
            }
        }
    });
}

void noise(ImageU8& image, std::uint64_t seed, int threads) {
    const int w = image.width(), h = image.height(), ch = image.channels();
    const std::uint64_t key = stream_key(seed, kNoiseStream);
    const int colour_channels = ch == 4 ? 3 : ch;
    for_row_bands(h, threads, [&](int y0, int y1) {
        for (int y = y0; y < y1; ++y) {
            std::uint8_t* out = image.row(y);
            for (int x = 0; x < w; ++x) {
                // One 64-bit hash per pixel gives up to 8 independent uniform bytes.
                const std::uint64_t r = hash(key, static_cast<std::uint64_t>(y) * w + x);
                std::uint8_t* px = out + x * ch;
                for (int c = 0; c < colour_channels; ++c) px[c] = static_cast<std::uint8_t>(r >> (8 * c));
                if (ch == 4) px[3] = 255;
            }
        }
    });
}

}  // namespace

ImageU8 generate(Pattern pattern, int width, int height, int channels, std::uint64_t seed, int threads) {
    if (width < 1 || height < 1 || width > kMaxResolutionSide || height > kMaxResolutionSide) {
        throw Error(fmt::format("synthetic image size {}x{}", width, height),
                    fmt::format("width and height from 1 to {}", kMaxResolutionSide));
    }
    if (channels != 1 && channels != 3 && channels != 4) {
        throw Error(fmt::format("synthetic image with {} channels", channels), "1 (gray), 3 (RGB), 4 (RGBA)");
    }
    ImageU8 image(width, height, channels, Layout::aos);
    switch (pattern) {
        case Pattern::gradient: gradient(image, threads); break;
        case Pattern::checkerboard: checkerboard(image, threads); break;
        case Pattern::noise: noise(image, seed, threads); break;
        case Pattern::natural: detail::natural(image, seed, threads); break;
    }
    return image;
}

}  // namespace klab::synth
