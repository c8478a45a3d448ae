// The natural pattern of the synthetic images: a landscape of smooth sky and terrain, hard-edged
// shapes and fine grain, built from the integer blocks of harness/synth_blocks.hpp.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "harness/synth.hpp"
#include "harness/synth_blocks.hpp"

namespace klab::synth::detail {

namespace {

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

}  // namespace

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

}  // namespace klab::synth::detail
