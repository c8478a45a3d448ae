// conv.shuffle_window's paths, which the conformance table meets in its window only at 640x480 and
// 1920x1080: warps with 2 to 32 lanes inside a row (the last lane inside the row, or lane 31,
// reads its right halo from memory, lane 0 its left one), a warp with one lane inside the row
// (the element-wise path), rows of no multiple of 16 bytes and odd pitches (the element-wise path
// too), strips at the image's top and bottom and inside it, walking down and up, with every row
// count it tunes over. Every border, 1/3/4 channels, AoS and SoA, general and rank-1 masks; each
// result is verified against the CPU reference with the numeric contract's rule.
#include <gtest/gtest.h>

#include <cstdint>
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

class ShuffleWindowPaths : public test::GpuTest {};

// Rows (in bytes; a lane holds 16) of gray and SoA planes: 32 (two lanes), 48, 512 (one whole warp),
// 528 (a second warp with one lane: element-wise), 560 (a second warp with three) and 100 (no
// multiple of 16: element-wise); RGB: 96, 528, 576 and 300; RGBA: 32, 528, 2080 and 400.
std::vector<int> widths_for(const Format& f) {
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

TEST_F(ShuffleWindowPaths, MatchTheReference) {
    const Variant* variant = Registry::instance().find("conv.shuffle_window");
    ASSERT_NE(variant, nullptr);
    const std::vector<Mask> masks = masks_3x3();
    const std::vector<Border> borders = all_borders();
    const LaunchShape shapes[] = {{32, 1, {{"rows", 2}}}, {64, 2, {{"rows", 5}}}, {32, 4, {{"rows", 8}}}, {128, 1, {{"rows", 14}}}};
    const int heights[] = {1, 2, 7, 12, 31};
    int n = 0, failed = 0;
    for (const Format& f : kFormats) {
        for (int width : widths_for(f)) {
            for (int height : heights) {
                for (const Border& border : borders) {
                    ++n;
                    const Mask& mask = masks[static_cast<std::size_t>(n + n / 6) % masks.size()];  // meets every border
                    const LaunchShape& shape = shapes[static_cast<std::size_t>(n / 7) % std::size(shapes)];
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
                    const Verification v = verify_convolution(input, mask, border, reference::convolve(input, mask, border, 0),
                                                              out.download(), variant->coefficient_error(problem));
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

}  // namespace
}  // namespace klab
