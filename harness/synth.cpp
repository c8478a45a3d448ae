#include "harness/synth.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/parallel.hpp"

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
    if (cross != std::string::npos && parse_side(key.substr(0, cross), width) &&
        parse_side(key.substr(cross + 1), height)) {
        return {fmt::format("{}x{}", width, height), width, height};
    }
    std::string names;
    for (const Resolution& r : named_resolutions()) names += fmt::format("{} ({}x{}), ", r.name, r.width, r.height);
    throw Error(fmt::format("unknown resolution '{}'", text),
                fmt::format("{}or WxH with W and H from 1 to {} (e.g. 17x13)", names, kMaxResolutionSide));
}

int checker_square_side(int width, int height) { return std::max(1, std::min(width, height) / 16); }

// ---------------------------------------------------------------------------------------------
// Integer building blocks: hashing, value noise, shapes
// ---------------------------------------------------------------------------------------------

namespace {

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
std::uint64_t stream_key(std::uint64_t seed, Stream stream) { return hash(mix64(seed), stream); }

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
std::uint64_t isqrt(std::uint64_t n) {
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

Shape make_rect(int x0, int y0, int x1, int y1, Rgb colour, int shade = 0) {
    Shape s;
    s.kind = Shape::rect;
    s.x0 = x0; s.y0 = y0; s.x1 = x1; s.y1 = y1;
    s.colour = colour; s.shade = shade;
    return s;
}
Shape make_ellipse(int cx, int cy, int rx, int ry, Rgb colour, int shade = 0) {
    Shape s;
    s.kind = Shape::ellipse;
    s.cx = cx; s.cy = cy; s.rx = std::max(rx, 0); s.ry = std::max(ry, 1);
    s.y0 = cy - s.ry; s.y1 = cy + s.ry;
    s.colour = colour; s.shade = shade;
    return s;
}
Shape make_triangle(int apex_x, int apex_y, int base_y, int half_base, Rgb colour, int shade = 0) {
    Shape s;
    s.kind = Shape::triangle;
    s.cx = apex_x; s.y0 = apex_y; s.y1 = std::max(base_y, apex_y); s.rx = half_base;
    s.colour = colour; s.shade = shade;
    return s;
}

// Runs body(y_begin, y_end) over bands of rows on up to `threads` threads. Every row is computed
// from (seed, x, y) alone, so the split never changes the result.
void for_row_bands(int height, int threads, const std::function<void(int, int)>& body) {
    // Bands of at least 16 rows: tiny images are not worth a thread.
    parallel_for(height, std::min(resolve_threads(threads), std::max(1, height / 16)), body);
}

// Writes one RGB row (ints, any range) into row y of an AoS image of 1, 3 or 4 channels.
void store_row(ImageU8& image, int y, const std::vector<Rgb>& rgb) {
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

// ---------------------------------------------------------------------------------------------
// Patterns
// ---------------------------------------------------------------------------------------------

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

// --- natural: a landscape ----------------------------------------------------------------------
//
// Back to front: sky (vertical gradient + fBm clouds, a sun disc behind the clouds); a far
// mountain range with snow caps; nearer hills; a straight horizon; a meadow (gradient + fBm
// patches) with a lake, houses (wall, roof, door, window) and trees (disc or triangle crowns on
// trunks), painted far to near so nearer objects overlap farther ones; finally luma grain.
// Region borders and shapes have hard, unantialiased edges; inside them all is smooth but grain.

struct Scene {
    int width = 0, height = 0;
    int horizon = 0;                  // first ground row
    std::vector<int> far_top;         // per x: first row of the far range
    std::vector<int> near_top;        // per x: first row of the near hills
    std::vector<int> far_tone;        // per x: light (+) or shadow (-) side of the far range
    int snow_line = 0;
    Shape sun;
    std::vector<Shape> shapes;        // ground objects, painted in order
    std::uint64_t grain_key = 0;
};

// Ridge line from a 1-D slice of a noise field: for each x, the first row of the range, which
// rises `min_pct`..`max_pct` percent of the image height above the horizon.
std::vector<int> ridge(const NoiseField& field, const Scene& s, int min_pct, int max_pct) {
    std::vector<std::uint32_t> values(static_cast<std::size_t>(s.width));
    std::vector<std::uint32_t> lattice;
    field.row(0, values, lattice);
    std::vector<int> top(static_cast<std::size_t>(s.width));
    for (int x = 0; x < s.width; ++x) {
        // A mild stretch: fBm almost never leaves 4000..61000; clamping more would cut flat peaks.
        const std::int64_t v = stretch16(static_cast<int>(values[x]), 4000, 61000);
        const std::int64_t pct_x1000 = min_pct * 1000 + (max_pct - min_pct) * 1000 * v / 65535;
        top[x] = s.horizon - static_cast<int>(s.height * pct_x1000 / 100000);
    }
    return top;
}

Scene build_scene(int width, int height, std::uint64_t seed) {
    Scene s;
    s.width = width;
    s.height = height;
    Rng rng(stream_key(seed, kSceneStream));
    const int side = std::min(width, height);
    s.horizon = height * rng.range(55, 66) / 100;
    const int ground = std::max(1, height - s.horizon);

    const std::uint64_t far_key = stream_key(seed, kFarRidge);
    s.far_top = ridge(NoiseField(far_key, width, height, 2, 1, 7), s, 4, 42);
    s.near_top = ridge(NoiseField(stream_key(seed, kNearRidge), width, height, 3, 1, 6), s, 0, 17);
    s.snow_line = s.horizon - height * 26 / 100;
    // Lit or shaded flank, light from the left: the slope of the same ridge without its fine
    // octaves, so that the faces are broad instead of streaky.
    const std::vector<int> coarse = ridge(NoiseField(far_key, width, height, 2, 1, 2), s, 4, 42);
    s.far_tone.assign(static_cast<std::size_t>(width), 0);
    const int reach = std::max(1, width / 100);
    for (int x = 0; x < width; ++x) {
        const int a = coarse[std::max(0, x - reach)];
        const int b = coarse[std::min(width - 1, x + reach)];
        s.far_tone[x] = std::clamp((b - a) * 200 / std::max(1, height), -20, 20);
    }

    // Every draw gets its own statement: the evaluation order of function arguments is
    // unspecified (GCC and Clang differ), and the draws must happen in a fixed order.
    const int sun_r = std::max(1, side * rng.range(4, 7) / 100);
    const int sun_x = width * rng.range(12, 88) / 100;
    const int sun_y = height * rng.range(8, 26) / 100;
    s.sun = make_ellipse(sun_x, sun_y, sun_r, sun_r, {255, 238, 185});

    // Depth below the horizon, 0 (far) .. 256 (bottom edge): sizes grow towards the viewer.
    auto depth_of = [&](int base) { return std::clamp((base - s.horizon) * 256 / ground, 0, 256); };

    if (rng.range(0, 99) < 75) {
        const int cy = s.horizon + ground * rng.range(12, 40) / 100;
        const int ry = std::max(1, ground * rng.range(5, 9) / 100);
        const int rx = std::max(1, width * rng.range(12, 24) / 100);
        s.shapes.push_back(make_ellipse(width * rng.range(15, 85) / 100, cy, rx, ry, {78, 118, 165}, -30));
    }

    struct Object {
        int base;
        std::vector<Shape> parts;
    };
    std::vector<Object> objects;
    const int houses = rng.range(1, 2);
    for (int i = 0; i < houses; ++i) {
        Object o;
        o.base = s.horizon + ground * rng.range(15, 75) / 100;
        const int d = depth_of(o.base);
        const int wall_h = std::max(2, side * (4 + 14 * d / 256) / 100);
        const int wall_w = std::max(2, wall_h * rng.range(130, 190) / 100);
        const int x0 = width * rng.range(5, 85) / 100;
        const int top = o.base - wall_h;
        static const Rgb walls[] = {{220, 205, 175}, {200, 190, 180}, {235, 225, 200}};
        static const Rgb roofs[] = {{150, 52, 40}, {95, 62, 52}, {70, 72, 80}};
        o.parts.push_back(make_rect(x0, top, x0 + wall_w - 1, o.base, walls[rng.range(0, 2)], 20));
        const int roof_h = std::max(1, wall_h * rng.range(45, 70) / 100);
        const Rgb roof = roofs[rng.range(0, 2)];
        o.parts.push_back(make_triangle(x0 + wall_w / 2, top - roof_h, top - 1, wall_w / 2 + wall_w / 10, roof, 25));
        const int door_w = std::max(1, wall_w / 6);
        const int door_x = x0 + wall_w * rng.range(15, 70) / 100;
        o.parts.push_back(make_rect(door_x, o.base - wall_h * 3 / 5, door_x + door_w - 1, o.base, {90, 58, 38}));
        const int win = std::max(1, wall_h / 4);
        // The window goes right of the door where it fits, else near the left corner.
        const int right_of_door = door_x + door_w + win / 2 + 1;
        const int win_x = right_of_door + win < x0 + wall_w ? right_of_door : x0 + win / 2;
        const Rgb glass = rng.range(0, 2) == 0 ? Rgb{250, 228, 150} : Rgb{62, 82, 112};
        o.parts.push_back(make_rect(win_x, top + wall_h / 4, win_x + win - 1, top + wall_h / 4 + win - 1, glass));
        objects.push_back(std::move(o));
    }
    const int trees = rng.range(4, 9);
    for (int i = 0; i < trees; ++i) {
        Object o;
        o.base = s.horizon + ground * rng.range(3, 95) / 100;
        const int d = depth_of(o.base);
        const int tree_h = std::max(3, side * (5 + 32 * d / 256) / 100);
        const int cx = width * rng.range(0, 100) / 100;
        const int leaf_r = rng.range(28, 60);
        const int leaf_g = rng.range(78, 118);
        const int leaf_b = rng.range(24, 44);
        const Rgb leaves{leaf_r, leaf_g, leaf_b};
        const int trunk_half = std::max(0, tree_h / 24);
        if (rng.range(0, 1) == 0) {
            // Broadleaf: round crown on a visible trunk.
            const int r = std::max(1, tree_h * rng.range(28, 38) / 100);
            o.parts.push_back(make_rect(cx - trunk_half, o.base - tree_h + r, cx + trunk_half, o.base, {88, 60, 36}));
            o.parts.push_back(make_ellipse(cx, o.base - tree_h + r, r, r, leaves, 45));
        } else {
            // Conifer: a tall triangle over a short trunk.
            const int trunk_h = std::max(1, tree_h / 6);
            o.parts.push_back(make_rect(cx - trunk_half, o.base - trunk_h, cx + trunk_half, o.base, {80, 55, 34}));
            const Rgb dark{leaves.r - 12, leaves.g - 25, leaves.b - 8};
            o.parts.push_back(make_triangle(cx, o.base - tree_h, o.base - trunk_h, std::max(1, tree_h / 5), dark, 30));
        }
        objects.push_back(std::move(o));
    }
    std::stable_sort(objects.begin(), objects.end(), [](const Object& a, const Object& b) { return a.base < b.base; });
    for (Object& o : objects) {
        for (Shape& part : o.parts) s.shapes.push_back(part);
    }
    s.grain_key = stream_key(seed, kGrain);
    return s;
}

void natural(ImageU8& image, std::uint64_t seed, int threads) {
    const int w = image.width(), h = image.height();
    const Scene scene = build_scene(w, h, seed);
    // One 2-D field serves clouds, mountain shading and meadow patches (they never overlap);
    // twice the cells vertically stretches its blobs horizontally, like clouds and fields seen
    // from the ground.
    const NoiseField field(stream_key(seed, kSkyField), w, h, 3, 6, 6);
    const Rgb sky_top{38, 84, 162}, sky_low{178, 202, 226}, cloud{242, 243, 247};
    const Rgb far_rock{132, 148, 178}, snow{236, 240, 248}, hills{74, 98, 84};
    const Rgb meadow_far{128, 148, 100}, meadow_near{56, 108, 38};
    const int ground = std::max(1, h - scene.horizon);
    const int snow_jitter = std::max(1, h / 40);

    for_row_bands(h, threads, [&](int y_begin, int y_end) {
        std::vector<std::uint32_t> n(static_cast<std::size_t>(w)), lattice;
        std::vector<Rgb> rgb(static_cast<std::size_t>(w));
        std::vector<std::uint8_t> grain(static_cast<std::size_t>(w));  // grain strength per pixel
        for (int y = y_begin; y < y_end; ++y) {
            field.row(y, n, lattice);
            const Rgb sky = mix(sky_top, sky_low, std::clamp(y * 256 / std::max(1, scene.horizon), 0, 256));
            const Rgb meadow = mix(meadow_far, meadow_near, std::clamp((y - scene.horizon) * 256 / ground, 0, 256));
            // The sun's span on this row (empty when it misses): drawn into the sky, so the
            // mountains hide it and clouds drift in front of it.
            int sun_a = 0, sun_b = -1;
            scene.sun.span(y, sun_a, sun_b);
            for (int x = 0; x < w; ++x) {
                const int v = static_cast<int>(n[x]) - 32768;  // -32768..32767, smooth
                Rgb c;
                if (y >= scene.horizon) {
                    const int p = v / 512;  // lighter and darker patches of grass
                    c = {meadow.r + p / 2, meadow.g + p * 3 / 4, meadow.b + p / 4};
                    grain[x] = 2;
                } else if (y >= scene.near_top[x]) {
                    const int p = v / 1024;
                    c = {hills.r + p, hills.g + p, hills.b + p};
                    grain[x] = 2;
                } else if (y >= scene.far_top[x]) {
                    // Snow caps on the peaks above the snow line; their lower edge follows the
                    // ridge at a quarter of its relief, roughened by the field.
                    const int cap = scene.snow_line - (scene.snow_line - scene.far_top[x]) / 4;
                    if (y + v * snow_jitter / 32768 < cap) {
                        c = snow;
                    } else {
                        const int p = v / 1024 + scene.far_tone[x];
                        c = {far_rock.r + p, far_rock.g + p, far_rock.b + p};
                    }
                    grain[x] = 1;
                } else {
                    // Clouds where the field is high; full cover over a band of 8192 values.
                    const int cover = std::clamp((v - 2500) / 32, 0, 256);
                    c = mix(x >= sun_a && x <= sun_b ? scene.sun.colour : sky, cloud, cover);
                    grain[x] = 1;
                }
                rgb[x] = c;
            }
            int xa = 0, xb = 0;
            for (const Shape& shape : scene.shapes) {
                if (!shape.span(y, xa, xb)) continue;
                const Rgb c = shape.colour_at(y);
                for (int x = std::max(xa, 0); x <= std::min(xb, w - 1); ++x) {
                    rgb[x] = c;
                    grain[x] = 1;
                }
            }
            // Luma grain: +-4 on smooth sky and shapes, +-8 on grass and hills.
            const std::uint64_t row_key = hash(scene.grain_key, static_cast<std::uint64_t>(y));
            for (int x = 0; x < w; ++x) {
                const int g = (static_cast<int>(hash(row_key, static_cast<std::uint64_t>(x)) & 15) - 8) * grain[x] / 2;
                rgb[x] = {rgb[x].r + g, rgb[x].g + g, rgb[x].b + g};
            }
            store_row(image, y, rgb);
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
        case Pattern::natural: natural(image, seed, threads); break;
    }
    return image;
}

}  // namespace klab::synth
