// The register-window variants' paths, which the conformance table meets in their windows only at
// 640x480 and 1920x1080. conv.shuffle_window (16 bytes a lane, masks up to 3x3) and
// conv.packed_window (its walk in 16-bit integer lanes, exactly, masks up to 5x5): warps with 2 to 32 lanes inside
// a row (the last lane inside the row, or lane 31, reads its right halo from memory, lane 0 its
// left one), a warp with one lane inside the row (the element-wise path), rows of no multiple of 16
// bytes and odd pitches (the element-wise path too); for conv.packed_window also white and striped
// images, whose sums reach its lanes' limit. conv.shuffle_ring (8 bytes a lane, masks up to 9x9,
// the halo from up to two lanes each side): rows of one lane to a warp and more, units that cross
// the row's end, the lanes at a warp's ends handing the next warp's bytes round, odd pitches
// (element-wise). All: strips at the image's top and bottom and inside it, short and tall; every
// border, 1/3/4 channels, AoS and SoA, every arithmetic each variant picks. sobel.register_window:
// widths around its warps' pixels, so that its edge walk (the last warp of a row) meets every
// border. Each result is verified against the CPU reference with the numeric contract's rule
// (conv.packed_window and sobel.register_window: byte for byte), and nothing may be written into a
// row's padding.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/device_image.hpp"
#include "harness/reference/reference.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"
#include "tests/common/test_util.hpp"
#include "tests/gpu/gpu_test.hpp"
#include "tests/gpu/op_conformance.hpp"

namespace klab {
namespace {

using namespace op_conformance;

class WindowPaths : public test::GpuTest {};

// conv.shuffle_window: rows (in bytes; a lane holds 16) of gray and SoA planes: 32 (two lanes), 48,
// 512 (one whole warp), 528 (a second warp with one lane: element-wise), 560 (a second warp with
// three) and 100 (no multiple of 16: element-wise); RGB: 96, 528, 576 and 300; RGBA: 32, 528, 2080
// and 400.
std::vector<int> window_widths(const Format& f) {
    if (f.layout == Layout::soa || f.channels == 1) return {32, 48, 512, 528, 560, 100};
    if (f.channels == 3) return {32, 176, 192, 100};
    return {8, 132, 520, 100};
}

// An outer product of a symmetric row (0.3, 0.7, 0.3) and a column (0.2, 0.5, -0.1), each product
// rounded to fp32: the variant's symmetric row pass applies 1, 7/3, 1 and the column times 0.3.
Mask symmetric_rank1() {
    const float row[3] = {0.3f, 0.7f, 0.3f}, column[3] = {0.2f, 0.5f, -0.1f};
    std::vector<float> m;
    for (float c : column)
        for (float r : row) m.push_back(c * r);
    return Mask(3, 3, m, "symmetric_rank1");
}

// Every arithmetic the variant picks: all nine taps (random, emboss), a cross (sharpen, and the
// 3x1 and 1x3 masks), rank-1 (gaussian, box and symmetric_rank1 with symmetric rows).
std::vector<Mask> masks_3x3() {
    return {masks::sharpen(), masks::gaussian(3), masks::random(3, 7), masks::emboss(), masks::box(3), symmetric_rank1(),
            Mask(3, 1, {0.25f, 0.5f, 0.25f}, "row3"), Mask(1, 3, {-1.0f, 2.5f, -0.5f}, "column3")};
}

// conv.shuffle_ring: rows (in bytes; a lane holds 8) of gray and SoA planes: 8 (one lane), 24,
// 256 (one whole warp), 264 (a second warp with one lane), 300 (a unit across the row's end) and
// 1; RGB (widths in pixels): 1, 3, 88 (264 bytes), 100; RGBA: 2, 64 (a whole warp), 66, 75.
std::vector<int> ring_widths(const Format& f) {
    if (f.layout == Layout::soa || f.channels == 1) return {8, 24, 256, 264, 300, 1};
    if (f.channels == 3) return {1, 3, 88, 100};
    return {2, 64, 66, 75};
}

// A 5x7 mask (5 wide) of the first 35 taps of a random 7x7 one.
Mask random_5x7() {
    std::vector<float> taps = masks::random(7, 5).coefficients();
    taps.resize(35);
    return Mask(5, 7, taps, "random5x7");
}

// Every arithmetic conv.shuffle_ring picks: all 81 taps (random 9x9, sharpen, a 5x7 random mask
// zero-padded), rank-1 (gaussian 9x9 and 5x5, box 7x7, a 1x9 and a 9x1 row).
std::vector<Mask> masks_9x9() {
    return {masks::random(9, 11), masks::gaussian(9), masks::sharpen(), masks::box(7), masks::gaussian(5),
            random_5x7(), Mask(9, 1, {0.1f, 0.1f, 0.1f, 0.1f, 0.2f, 0.1f, 0.1f, 0.1f, 0.1f}, "row9"),
            Mask(1, 9, {-0.5f, 0.25f, 0.0f, 0.5f, 1.0f, 0.5f, 0.0f, 0.25f, -1.0f}, "column9")};
}

// conv.packed_window (conv.shuffle_window's walk in 16-bit integer lanes): every arithmetic it
// picks up to 3x3, rank-1 with a (1, s, 1) row (gaussian, a 1x3 row), rank-1 with other rows (a 3x1
// column, rows (3, 2, 3)), all nine taps, a mask summing to less than 1 and the identity; all exact.
std::vector<Mask> masks_packed() {
    return {masks::gaussian(3),
            Mask(3, 1, {0.25f, 0.5f, 0.25f}, "row121"),
            Mask(1, 3, {0.125f, 0.75f, 0.125f}, "column161"),
            Mask(3, 3, {3 / 256.f, 2 / 256.f, 3 / 256.f, 0, 0, 0, 6 / 256.f, 4 / 256.f, 6 / 256.f}, "rank1_ends3"),
            Mask(3, 3, {1 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 0, 2 / 16.f, 1 / 16.f, 3 / 16.f, 4 / 16.f}, "full"),
            Mask(3, 3, {1 / 256.f, 17 / 256.f, 5 / 256.f, 30 / 256.f, 99 / 256.f, 1 / 256.f, 0, 2 / 256.f, 3 / 256.f}, "small"),
            masks::box(1)};
}

// The same for 5x5 masks (the window of radius 2: five accumulator rows, halos of 2 to 8 bytes):
// rank-1 with a (1, ..., 1) row (gaussian 5x5, a 5x1 row), rank-1 with other rows (a 1x5 column, a
// 5x3 mask whose rows are (2, 3, 6, 3, 2) x (1, 2, 1)), all 25 taps (and a 3x5 mask, zero-padded),
// a mask summing to less than 1; all exact.
std::vector<Mask> masks_packed_5x5() {
    std::vector<float> full(25), narrow(15), wide;
    for (int k = 0; k < 25; ++k) full[static_cast<std::size_t>(k)] = static_cast<float>((k * 7) % 19) / 256.0f;  // sums to 219/256
    for (int k = 0; k < 15; ++k) narrow[static_cast<std::size_t>(k)] = static_cast<float>((k * 5) % 13 + 1) / 256.0f;
    for (int j : {1, 2, 1})
        for (int i : {2, 3, 6, 3, 2}) wide.push_back(static_cast<float>(i * j) / 256.0f);
    return {masks::gaussian(5),
            Mask(5, 1, {1 / 16.f, 4 / 16.f, 6 / 16.f, 4 / 16.f, 1 / 16.f}, "row14641"),
            Mask(1, 5, {0.125f, 0.25f, 0.25f, 0.25f, 0.125f}, "column12221"),
            Mask(5, 3, wide, "rank1_ends2"),
            Mask(5, 5, full, "full5x5"),
            Mask(3, 5, narrow, "full3x5")};
}

// Strip heights 5n + 4, blocks of at most 128 threads: what conv.packed_window takes for 5x5.
const std::vector<LaunchShape> kShapes5x5 = {
    {32, 1, {{"rows", 4}}}, {64, 2, {{"rows", 9}}}, {32, 4, {{"rows", 14}}}, {128, 1, {{"rows", 19}}}, {32, 2, {{"rows", 44}}}};

// Runs `variant` on every format x width x height x border, cycling through the masks and shapes.
// `exact`: the output must equal the reference's, byte for byte (else the numeric contract's rule).
void check_paths(const std::string& name, const std::function<std::vector<int>(const Format&)>& widths_for,
                 const std::vector<Mask>& masks, const std::vector<LaunchShape>& shapes, const std::vector<int>& heights,
                 bool exact = false) {
    const Variant* variant = Registry::instance().find(name);
    ASSERT_NE(variant, nullptr);
    const std::vector<Border> borders = all_borders();
    int n = 0, failed = 0;
    for (const Format& f : kFormats) {
        for (int width : widths_for(f)) {
            for (int height : heights) {
                for (const Border& border : borders) {
                    ++n;
                    const Mask& mask = masks[static_cast<std::size_t>(n + n / 6) % masks.size()];  // meets every border
                    const LaunchShape& shape = shapes[static_cast<std::size_t>(n / 7) % shapes.size()];
                    const PitchKind pitch = n % 11 == 0 ? PitchKind::odd : (n % 2 == 0 ? PitchKind::tight : PitchKind::allocator);
                    const Problem problem = convolve_problem(ImageShape{width, height, f.channels, f.layout}, mask, border);
                    SCOPED_TRACE(fmt::format("{} with {} pitch {}", to_string(problem), to_string(shape), to_string(pitch)));
                    ASSERT_TRUE(variant->supports(problem));
                    ASSERT_TRUE(variant->check_shape(problem, shape));
                    const ImageU8 input = test::random_image(problem.shape, static_cast<std::uint32_t>(n));
                    DeviceImage<std::uint8_t> in(problem.shape, pitch_for(pitch, problem.shape, 1));
                    in.upload(input);
                    DeviceImage<std::uint8_t> out(problem.shape, pitch_for(pitch, problem.shape, 1));
                    KLAB_CUDA_CHECK(cudaMemset(out.view().data, 0xA5, out.capacity_bytes()));
                    const DeviceMask device_mask(mask);
                    run(*variant, problem, DeviceBuffers{device_buffer(in), device_buffer(out), device_mask.view()}, shape);
                    const ImageU8 expected = reference::convolve(input, mask, border, 0);
                    const Verification v = exact ? verify_exact(expected, out.download())
                                                 : verify_convolution(input, mask, border, expected, out.download(),
                                                                      variant->coefficient_error(problem));
                    EXPECT_TRUE(v.ok()) << v.summary();
                    // Nothing written into the rows' padding.
                    std::vector<std::uint8_t> raw(out.capacity_bytes());
                    KLAB_CUDA_CHECK(cudaMemcpy(raw.data(), out.view().data, raw.size(), cudaMemcpyDeviceToHost));
                    std::size_t padding_written = 0;
                    for (int r = 0; r < problem.shape.rows(); ++r)
                        for (std::size_t b = static_cast<std::size_t>(problem.shape.row_elements()); b < out.pitch_bytes(); ++b)
                            padding_written += raw[static_cast<std::size_t>(r) * out.pitch_bytes() + b] != 0xA5;
                    EXPECT_EQ(padding_written, 0u);
                    failed += v.ok() && padding_written == 0 ? 0 : 1;
                    ASSERT_LT(failed, 5) << "stopping after 5 failures";
                }
            }
        }
    }
    EXPECT_GT(n, 500);
}

TEST_F(WindowPaths, ShuffleWindowMatchesTheReference) {
    check_paths("conv.shuffle_window", window_widths, masks_3x3(),
                {{32, 1, {{"rows", 2}}}, {64, 2, {{"rows", 5}}}, {32, 4, {{"rows", 8}}}, {128, 1, {{"rows", 14}}}}, {1, 2, 7, 12, 31});
}

TEST_F(WindowPaths, PackedWindowMatchesTheReferenceExactly) {
    check_paths("conv.packed_window", window_widths, masks_packed(),
                {{32, 1, {{"rows", 2}}}, {64, 2, {{"rows", 5}}}, {32, 4, {{"rows", 8}}}, {128, 1, {{"rows", 14}}}, {32, 2, {{"rows", 44}}}},
                {1, 2, 7, 12, 31, 100}, true);
}

TEST_F(WindowPaths, PackedWindowMatchesTheReferenceExactlyOn5x5Masks) {
    check_paths("conv.packed_window", window_widths, masks_packed_5x5(), kShapes5x5, {1, 3, 9, 14, 31, 100}, true);
}

// The lanes at their limits: a white image (every lane's sum at 255 x 256 + 127) and stripes of 0
// and 255 (sums at every multiple of 1/16 of 255, ties among them), exactly; 3x3 and 5x5 masks.
TEST_F(WindowPaths, PackedWindowIsExactAtTheLaneLimits) {
    const Variant& variant = Registry::instance().get("conv.packed_window");
    int n = 0;
    for (const Format& f : kFormats) {
        for (const Mask& mask : {masks::gaussian(3), masks_packed()[4], masks::box(1), masks::gaussian(5), masks_packed_5x5()[4]}) {
            const Problem problem = convolve_problem(ImageShape{96, 40, f.channels, f.layout}, mask, Border{BorderMode::reflect, 0});
            for (int pattern = 0; pattern < 2; ++pattern) {
                ImageU8 input(problem.shape);
                for (int y = 0; y < problem.shape.height; ++y)
                    for (int x = 0; x < problem.shape.width; ++x)
                        for (int c = 0; c < problem.shape.channels; ++c) input.at(x, y, c) = pattern == 0 || (x / 3 + y) % 2 == 0 ? 255 : 0;
                DeviceImage<std::uint8_t> in(problem.shape);
                in.upload(input);
                DeviceImage<std::uint8_t> out(problem.shape);
                const DeviceMask device_mask(mask);
                run(variant, problem, DeviceBuffers{device_buffer(in), device_buffer(out), device_mask.view()},
                    LaunchShape{32, 2, {{"rows", mask.width() > 3 ? 9 : 8}}});
                const Verification v = verify_exact(reference::convolve(input, mask, problem.border, 0), out.download());
                EXPECT_TRUE(v.ok()) << to_string(problem) << " pattern " << pattern << ": " << v.summary();
                ++n;
            }
        }
    }
    EXPECT_EQ(n, 60);
}

TEST_F(WindowPaths, ShuffleRingMatchesTheReference) {
    check_paths("conv.shuffle_ring", ring_widths, masks_9x9(),
                {{32, 1, {{"rows", 8}}}, {64, 2, {{"rows", 16}}}, {32, 4, {{"rows", 8}}}, {128, 1, {{"rows", 32}}}, {32, 2, {{"rows", 16}}}},
                {1, 3, 9, 17, 40});
}

// sobel.register_window's row ends: widths around its warps' 32 x 16 gray and 32 x 8 colour pixels
// (a warp wholly inside, one lane or 31 lanes inside the row's last warp, a lane straddling the end,
// rows narrower than a lane), so that the edge walk meets every border (the column right of the
// row's end: a constant border's fill, or a pixel the rule maps), with strips at the top, bottom
// and inside, and launch shapes with blocks wholly past the row's end (512x1). Exact comparison;
// nothing written into the rows' padding. Allocator pitches take the window and the edge walk;
// every seventh case a tight pitch, which is aligned or not depending on the width.
TEST_F(WindowPaths, SobelRegisterWindowRowEndsMatchTheReferenceExactly) {
    const Variant* variant = Registry::instance().find("sobel.register_window");
    ASSERT_NE(variant, nullptr);
    const auto shape_of = [](int x, int y, int rows) { return LaunchShape{x, y, {{"rows", rows}}}; };
    const std::vector<LaunchShape> shapes = {shape_of(64, 4, 16), shape_of(32, 1, 8), shape_of(512, 1, 12), shape_of(96, 5, 22),
                                             shape_of(32, 2, 14)};
    int n = 0, failed = 0;
    for (const Format& f : kFormats) {
        for (int width : {1, 9, 17, 255, 256, 257, 500, 512, 513, 1000, 1920}) {
            for (int height : {1, 3, 37}) {
                for (const Border& border : all_borders()) {
                    ++n;
                    const Problem problem = op_problem(Operation::sobel, width, height, f, border);
                    const LaunchShape& shape = shapes[static_cast<std::size_t>(n / 5) % shapes.size()];
                    const PitchKind pitch = n % 7 == 0 ? PitchKind::tight : PitchKind::allocator;
                    SCOPED_TRACE(fmt::format("{} with {} pitch {}", to_string(problem), to_string(shape), to_string(pitch)));
                    ASSERT_TRUE(variant->check_shape(problem, shape));
                    const ImageU8 input = test::random_image(problem.shape, static_cast<std::uint32_t>(7000 + n));
                    const ImageU8 actual = run_variant<std::uint8_t>(*variant, problem, input, pitch, pitch, shape);
                    const Verification v = verify_exact(reference::sobel(input, border, 0), actual);
                    EXPECT_TRUE(v.ok()) << v.summary();
                    failed += v.ok() ? 0 : 1;
                    ASSERT_LT(failed, 5) << "stopping after 5 failures";
                }
            }
        }
    }
    EXPECT_EQ(n, 6 * 11 * 3 * 6);
}

}  // namespace
}  // namespace klab
