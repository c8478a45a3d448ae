#pragma once
// The integer building blocks of the synthetic images (harness/synth.cpp, harness/synth_natural.cpp):
// a counter-based hash and its streams, value noise, hard-edged shapes and row bands. Internal to
// the generator: only integer arithmetic, so every image is the same on every platform.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <vector>

#include "harness/image.hpp"
#include "harness/parallel.hpp"

namespace klab::synth::detail {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;  // 2^64 / golden ratio, odd

// splitmix64's finaliser: every output bit depends on every input bit. Used as a counter-based
// hash (key + index * kGolden), so any sample can be computed alone, in any order, on any thread.
inline std::uint64_t mix64(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
inline std::uint64_t hash(std::uint64_t key, std::uint64_t index) { return mix64(key + index * kGolden); }

// Independent keys for the different random streams of one seed.
enum Stream : std::uint64_t { kNoiseStream = 1, kSceneStream, kSkyField, kFarRidge, kNearRidge, kGrain };
inline std::uint64_t stream_key(std::uint64_t seed, Stream stream) { return hash(mix64(seed), stream); }

// A sequential generator for the scene layout (positions and sizes of shapes).
class Rng {
public:
    explicit Rng(std::uint64_t key) : key_(key) {}
    // Uniform-enough integer in [lo, hi]: the top 32 bits scaled, no modulo bias worth noting.
    int range(int lo, int hi) {
        const std::uint64_t r = hash(key_, counter_++) >> 32;
        return lo + static_cast<int>((r * static_cast<std::uint64_t>(hi - lo + 1)) >> 32);
    }

private:
    std::uint64_t key_;
    std::uint64_t counter_ = 0;
};

inline int clamp255(int v) { return v < 0 ? 0 : (v > 255 ? 255 : v); }

// Exact floor(sqrt(n)); std::sqrt only gives the first guess (IEEE sqrt is correctly rounded
// anyway), the integer fix-up makes the result independent of it.
inline std::uint64_t isqrt(std::uint64_t n) {
    std::uint64_t r = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(n)));
    while (r > 0 && r * r > n) --r;
    while ((r + 1) * (r + 1) <= n) ++r;
    return r;
}

// Smoothstep 3t^2 - 2t^3 on a 16-bit fraction: 0..65535 -> 0..65535, flat at both ends so value
// noise has no visible creases at lattice lines.
inline std::uint32_t smooth16(std::uint32_t t) {
    const std::uint64_t t2 = (static_cast<std::uint64_t>(t) * t) >> 16;
    return static_cast<std::uint32_t>((t2 * (3u * 65536u - 2u * t)) >> 16);
}
inline std::uint32_t lerp16(std::uint32_t a, std::uint32_t b, std::uint32_t w) {
    return (a * (65536u - w) + b * w) >> 16;  // a, b < 2^16: fits in 32 bits
}

constexpr int kMaxOctaves = 8;

// Multi-octave value noise (fBm) with 16-bit lattice values, evaluated a row at a time.
// Lattice coordinates are 32.32 fixed point: pixel x sits at (x + 0.5) * step cells, where
// step = cells per shorter image side / shorter side, so the picture scales with the image.
class NoiseField {
public:
    NoiseField(std::uint64_t key, int width, int height, int cells_x, int cells_y, int octaves)
        : key_(key), width_(width), octaves_(std::clamp(octaves, 1, kMaxOctaves)) {
        const std::int64_t side = std::min(width, height);
        std::uint32_t weight_sum = 0;
        for (int o = 0; o < octaves_; ++o) {
            step_x_[o] = (static_cast<std::int64_t>(cells_x) << (32 + o)) / side;
            step_y_[o] = (static_cast<std::int64_t>(cells_y) << (32 + o)) / side;
            weight_[o] = 1u << (octaves_ - 1 - o);  // each octave half as strong as the last
            weight_sum += weight_[o];
        }
        recip_ = (std::uint64_t{1} << 32) / weight_sum;
    }

    // out[x] = field value at (x, y), 0..65535, for x in [0, width). `lattice` is scratch.
    void row(int y, std::vector<std::uint32_t>& out, std::vector<std::uint32_t>& lattice) const {
        std::vector<std::uint32_t>& acc = out;
        std::fill(acc.begin(), acc.begin() + width_, 0u);
        for (int o = 0; o < octaves_; ++o) {
            const std::uint64_t octave_key = hash(key_, static_cast<std::uint64_t>(o));
            const std::int64_t sy = step_y_[o];
            const std::int64_t ypos = y * sy + sy / 2;
            const std::uint64_t iy = static_cast<std::uint64_t>(ypos >> 32);
            const std::uint32_t wy = smooth16(static_cast<std::uint32_t>(ypos >> 16) & 0xFFFFu);
            const std::uint64_t key0 = hash(octave_key, iy);
            const std::uint64_t key1 = hash(octave_key, iy + 1);
            // Interpolate vertically once per lattice column, then horizontally per pixel.
            const std::int64_t sx = step_x_[o];
            const std::size_t columns = static_cast<std::size_t>(((width_ - 1) * sx + sx / 2) >> 32) + 2;
            if (lattice.size() < columns) lattice.resize(columns);
            for (std::size_t ix = 0; ix < columns; ++ix) {
                const auto a = static_cast<std::uint32_t>(hash(key0, ix) >> 48);
                const auto b = static_cast<std::uint32_t>(hash(key1, ix) >> 48);
                lattice[ix] = lerp16(a, b, wy);
            }
            const std::uint32_t weight = weight_[o];
            for (int x = 0; x < width_; ++x) {
                const std::int64_t xpos = x * sx + sx / 2;
                const auto ix = static_cast<std::size_t>(xpos >> 32);
                const std::uint32_t wx = smooth16(static_cast<std::uint32_t>(xpos >> 16) & 0xFFFFu);
                acc[x] += weight * lerp16(lattice[ix], lattice[ix + 1], wx);
            }
        }
        for (int x = 0; x < width_; ++x) acc[x] = static_cast<std::uint32_t>((acc[x] * recip_) >> 32);
    }

private:
    std::uint64_t key_;
    int width_;
    int octaves_;
    std::int64_t step_x_[kMaxOctaves] = {};
    std::int64_t step_y_[kMaxOctaves] = {};
    std::uint32_t weight_[kMaxOctaves] = {};
    std::uint64_t recip_ = 0;
};

// Maps lo..hi of a 16-bit value onto 0..65535 (clamped): fBm values bunch around the middle.
inline int stretch16(int v, int lo, int hi) {
    return std::clamp(static_cast<int>((static_cast<std::int64_t>(v - lo) * 65535) / (hi - lo)), 0, 65535);
}

struct Rgb {
    int r = 0, g = 0, b = 0;
};
inline Rgb mix(Rgb a, Rgb b, int t256) {  // t256 in 0..256
    return {a.r + (b.r - a.r) * t256 / 256, a.g + (b.g - a.g) * t256 / 256, a.b + (b.b - a.b) * t256 / 256};
}

// A filled shape with hard edges. Coordinates are pixels; y0..y1 is the inclusive row range.
struct Shape {
    enum Kind { rect, ellipse, triangle } kind = rect;
    int x0 = 0, x1 = 0, y0 = 0, y1 = 0;  // rect: the box; triangle: y0 apex row, y1 base row
    int cx = 0, cy = 0, rx = 0, ry = 0;  // ellipse: centre and semi-axes; triangle: apex x, half base rx
    Rgb colour;
    int shade = 0;  // subtracted in proportion to depth into the shape: darker towards its bottom

    // The inclusive pixel span [xa, xb] of row y, before clipping; false when the row misses.
    bool span(int y, int& xa, int& xb) const {
        if (y < y0 || y > y1) return false;
        switch (kind) {
            case rect: xa = x0; xb = x1; return true;
            case ellipse: {
                // dx = rx * sqrt(1 - dy^2/ry^2); the scene keeps rx, ry below 2^15, so no overflow.
                const std::uint64_t dy = static_cast<std::uint64_t>(std::abs(y - cy));
                const std::uint64_t rx2 = static_cast<std::uint64_t>(rx) * rx;
                const std::uint64_t ry2 = static_cast<std::uint64_t>(ry) * ry;
                const int dx = static_cast<int>(isqrt(rx2 * (ry2 - dy * dy) / ry2));
                xa = cx - dx; xb = cx + dx;
                return true;
            }
            case triangle: {
                const int half = y1 == y0 ? rx : static_cast<int>(static_cast<std::int64_t>(rx) * (y - y0) / (y1 - y0));
                xa = cx - half; xb = cx + half;
                return true;
            }
        }
        return false;
    }
    Rgb colour_at(int y) const {
        const int depth = shade * (y - y0) / std::max(1, y1 - y0);
        return {colour.r - depth, colour.g - depth, colour.b - depth};
    }
};

inline Shape make_rect(int x0, int y0, int x1, int y1, Rgb colour, int shade = 0) {
    Shape s;
    s.kind = Shape::rect;
    s.x0 = x0; s.y0 = y0; s.x1 = x1; s.y1 = y1;
    s.colour = colour; s.shade = shade;
    return s;
}
inline Shape make_ellipse(int cx, int cy, int rx, int ry, Rgb colour, int shade = 0) {
    Shape s;
    s.kind = Shape::ellipse;
    s.cx = cx; s.cy = cy; s.rx = std::max(rx, 0); s.ry = std::max(ry, 1);
    s.y0 = cy - s.ry; s.y1 = cy + s.ry;
    s.colour = colour; s.shade = shade;
    return s;
}
inline Shape make_triangle(int apex_x, int apex_y, int base_y, int half_base, Rgb colour, int shade = 0) {
    Shape s;
    s.kind = Shape::triangle;
    s.cx = apex_x; s.y0 = apex_y; s.y1 = std::max(base_y, apex_y); s.rx = half_base;
    s.colour = colour; s.shade = shade;
    return s;
}

// Runs body(y_begin, y_end) over bands of rows on up to `threads` threads. Every row is computed
// from (seed, x, y) alone, so the split never changes the result.
inline void for_row_bands(int height, int threads, const std::function<void(int, int)>& body) {
    // Bands of at least 16 rows: tiny images are not worth a thread.
    parallel_for(height, std::min(resolve_threads(threads), std::max(1, height / 16)), body);
}

// Writes one RGB row (ints, any range) into row y of an AoS image of 1, 3 or 4 channels.
inline void store_row(ImageU8& image, int y, const std::vector<Rgb>& rgb) {
    std::uint8_t* out = image.row(y);
    const int channels = image.channels();
    for (int x = 0; x < image.width(); ++x) {
        const int r = clamp255(rgb[x].r), g = clamp255(rgb[x].g), b = clamp255(rgb[x].b);
        if (channels == 1) {
            // BT.709 luma in 8-bit fixed point (54 + 183 + 19 = 256).
            out[x] = static_cast<std::uint8_t>((54 * r + 183 * g + 19 * b + 128) >> 8);
        } else {
            std::uint8_t* px = out + x * channels;
            px[0] = static_cast<std::uint8_t>(r);
            px[1] = static_cast<std::uint8_t>(g);
            px[2] = static_cast<std::uint8_t>(b);
            if (channels == 4) px[3] = 255;
        }
    }
}

// The natural pattern, a landscape (harness/synth_natural.cpp).
void natural(ImageU8& image, std::uint64_t seed, int threads);

}  // namespace klab::synth::detail
