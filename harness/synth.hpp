#pragma once
// Synthetic test images, generated on demand (never committed).
//
// Every image is a pure function of (pattern, width, height, channels, seed): the generator uses
// only integer arithmetic and its own counter-based hash, never <random> distributions or libm,
// so the same arguments give the same bytes on every platform, compiler and thread count.
#include <cstdint>
#include <string>
#include <vector>

#include "harness/image.hpp"

namespace klab::synth {

enum class Pattern {
    gradient,      // smooth ramps: channel 0 horizontal, 1 vertical, 2 diagonal
    checkerboard,  // two colours in squares of ~1/16 of the shorter side: sharp edges everywhere
    noise,         // i.i.d. uniform 0..255 per sample
    natural,       // a landscape: smooth sky and terrain, hard-edged shapes, fine grain
};

const char* to_string(Pattern pattern);
// "gradient", "checkerboard", "noise" or "natural"; anything else throws klab::Error.
Pattern parse_pattern(const std::string& text);
// All patterns, in declaration order.
const std::vector<Pattern>& all_patterns();

struct Resolution {
    std::string name;  // "HD" for a named resolution, "WxH" (e.g. "17x13") otherwise
    int width = 0;
    int height = 0;
};

// 480p 640x480, 720p 1280x720, HD 1920x1080, 4K 3840x2160, 8K 7680x4320 (smallest first).
const std::vector<Resolution>& named_resolutions();
// A named resolution (any case) or "WxH" with W and H from 1 to kMaxResolutionSide and at most
// kMaxImagePixels pixels (harness/image.hpp); anything
// else throws klab::Error naming the allowed forms. A named one keeps its canonical name.
Resolution parse_resolution(const std::string& text);
inline constexpr int kMaxResolutionSide = 65536;

// The two colours of the checkerboard: the square holding pixel (0,0) has colour A.
// Gray images use the *_gray values; RGBA images add alpha 255.
inline constexpr std::uint8_t kCheckerA[3] = {235, 210, 60};
inline constexpr std::uint8_t kCheckerB[3] = {25, 50, 140};
inline constexpr std::uint8_t kCheckerAGray = 204;
inline constexpr std::uint8_t kCheckerBGray = 51;
// Side of a checkerboard square: 1/16 of the shorter side, at least 1 pixel.
int checker_square_side(int width, int height);

// A tightly packed AoS image with 1 (gray), 3 (RGB) or 4 (RGBA, alpha 255) channels.
// `seed` changes noise and natural; gradient and checkerboard do not depend on it.
// `threads` = 0 uses every hardware thread; the result never depends on it.
// Throws klab::Error for an empty size or a channel count other than 1, 3, 4.
ImageU8 generate(Pattern pattern, int width, int height, int channels, std::uint64_t seed = 1,
                 int threads = 0);

}  // namespace klab::synth
