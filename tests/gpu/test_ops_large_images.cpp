// Each sobel, integral and box variant once on an 8K image, the integral variants past u32 on 3
// channels AoS and SoA and on gray with aligned and odd pitches, integral.lookback's look-back over
// more than one window of tiles (and integral.tile_gather's gathers over as many tiles), and
// conv.box_integral where its u32 summed-area table wraps; verified exactly.
#include <gtest/gtest.h>

#include <cstddef>
#include <tuple>

#include "tests/gpu/op_conformance.hpp"

namespace klab {
namespace {

using namespace op_conformance;

// --- 8K images ---------------------------------------------------------------------------------
// Each variant once on an 8K image (7680x4320), verified exactly: the sizes where tiles, grids and
// 64-bit sums are largest. scripts/op-times.sh runs these under Nsight Compute for the kernels'
// times. Skipped on the reduced table (sanitizer runs).

class OpsLargeImages : public test::GpuTest {
protected:
    void SetUp() override {
        test::GpuTest::SetUp();
        if (!IsSkipped() && reduced_table()) GTEST_SKIP() << "8K images are not run on the reduced table";
    }
};

constexpr int k8KWidth = 7680;
constexpr int k8KHeight = 4320;

TEST_F(OpsLargeImages, IntegralScanOn8KGrayAndA4096SquareGray) {
    const Variant& variant = Registry::instance().get("integral.scan");
    OpCase c8k;
    c8k.problem = op_problem(Operation::integral, k8KWidth, k8KHeight, kFormats[0]);
    c8k.seed = 8;
    check_integral<std::uint64_t>(variant, c8k, variant.default_shape(c8k.problem));  // 8K needs u64
    OpCase c4k;
    c4k.problem = op_problem(Operation::integral, 4096, 4096, kFormats[0]);
    c4k.seed = 4;
    check_integral<std::uint32_t>(variant, c4k, variant.default_shape(c4k.problem));  // 16.8 M pixels: u32
}

TEST_F(OpsLargeImages, SobelOn8KRgbAndGray) {
    for (int channels : {3, 1}) {
        const Problem problem = op_problem(Operation::sobel, k8KWidth, k8KHeight, kFormats[channels == 3 ? 1 : 0],
                                           Border{BorderMode::replicate, 0});
        const ImageU8 input = test::random_image(problem.shape, 81);
        const ImageU8 expected = reference::sobel(input, problem.border, 0);
        for (const char* name : {"sobel.register_window", "sobel.fused", "sobel.3kernel"}) {
            const Variant& variant = Registry::instance().get(name);
            const ImageU8 actual = run_variant<std::uint8_t>(variant, problem, input, PitchKind::allocator,
                                                             PitchKind::allocator, variant.default_shape(problem));
            const Verification v = verify_exact(expected, actual);
            EXPECT_TRUE(v.ok()) << name << " on " << to_string(problem) << ": " << v.summary();
        }
    }
}

// The tiled integral variants on the study's problems: 8K gray (u64), 4096x4096 gray (u32) and 8K
// RGB AoS (u64, 796 MB of output).
TEST_F(OpsLargeImages, IntegralTiledVariantsOn8KGrayRgbAndA4096SquareGray) {
    for (const char* name : {"integral.lookback", "integral.tile_gather"}) {
        SCOPED_TRACE(name);
        const Variant& variant = Registry::instance().get(name);
        OpCase gray;
        gray.problem = op_problem(Operation::integral, k8KWidth, k8KHeight, kFormats[0]);
        gray.seed = 8;
        check_integral<std::uint64_t>(variant, gray, variant.default_shape(gray.problem));
        OpCase square;
        square.problem = op_problem(Operation::integral, 4096, 4096, kFormats[0]);
        square.seed = 4;
        check_integral<std::uint32_t>(variant, square, variant.default_shape(square.problem));
        OpCase rgb;
        rgb.problem = op_problem(Operation::integral, k8KWidth, k8KHeight, kFormats[1]);
        rgb.seed = 3;
        check_integral<std::uint64_t>(variant, rgb, variant.default_shape(rgb.problem));
    }
}

// integral.lookback's look-back reads up to 32 predecessor tiles at a time: tiles of 32 rows
// (block 32x1) make columns of more than 32 and 64 tiles, so that a look-back needs a second and a
// third window of predecessors when none of the first window has published its inclusive values.
// integral.tile_gather on the same tiles: its 32 threads gather up to 65 tiles above and hundreds
// of totals of the tiles above and to the left, in several batches of loads each.
// Gray AoS and RGB SoA (three planes of tiles one after another), odd pitches.
TEST_F(OpsLargeImages, IntegralTiledVariantsAcrossMoreThanOneWindowOfTiles) {
    for (const char* name : {"integral.lookback", "integral.tile_gather"}) {
        const Variant& variant = Registry::instance().get(name);
        const LaunchShape one_warp{32, 1, {}};
        for (const auto& [format, width, height] : {std::tuple{kFormats[0], 1500, 2100}, std::tuple{kFormats[4], 700, 1100}}) {
            OpCase c;
            c.problem = op_problem(Operation::integral, width, height, format);
            c.input_pitch = PitchKind::odd;
            c.output_pitch = PitchKind::tight;
            c.seed = static_cast<std::uint32_t>(width);
            SCOPED_TRACE(fmt::format("{} on {} with block 32x1", variant.name(), to_string(c.problem)));
            check_integral<std::uint32_t>(variant, c, one_warp);
        }
    }
}

TEST_F(OpsLargeImages, BoxVariantsOn8KRgbBox9And31) {
    for (int k : {9, 31}) {
        const Problem problem = convolve_problem(ImageShape{k8KWidth, k8KHeight, 3, Layout::aos}, masks::box(k),
                                                 Border{BorderMode::replicate, 0});
        const ImageU8 input = test::random_image(problem.shape, static_cast<std::uint32_t>(k));
        const ImageU8 expected = reference::convolve(input, *problem.mask, problem.border, 0);
        DeviceImage<std::uint8_t> in(input);
        const DeviceMask mask(*problem.mask);
        for (const char* name : kExactBoxVariants) {
            const Variant& variant = Registry::instance().get(name);
            if (!takes_every_box(name) && !variant.supports(problem)) continue;
            DeviceImage<std::uint8_t> out(problem.shape);
            run(variant, problem, DeviceBuffers{device_buffer(in), device_buffer(out), mask.view()}, variant.default_shape(problem));
            const Verification v = verify_exact(expected, out.download());
            EXPECT_TRUE(v.ok()) << name << " box" << k << ": " << v.summary();
        }
    }
}

// The u64 integral runs below: 4105x4104 images (255*W*H just above 2^32, so u64 by the size rule),
// one format, fill, pair of pitches and block kind per run.
constexpr int kU64Width = 4105;
constexpr int kU64Height = 4104;

struct U64Run {
    Format format;
    Fill fill;
    PitchKind input_pitch;
    PitchKind output_pitch;
    bool awkward_shape;
};

OpCase u64_case(const U64Run& r) {
    OpCase c;
    c.problem = op_problem(Operation::integral, kU64Width, kU64Height, r.format);
    c.input_pitch = r.input_pitch;
    c.output_pitch = r.output_pitch;
    c.fill = r.fill;
    c.seed = kU64Width;
    return c;
}

// Each integral variant on each run, verified exactly; check_input(run, case) first checks what the
// case's input must be (a fatal failure there ends the test).
template <std::size_t N, class CheckInput>
void check_integral_variants_on(const U64Run (&runs)[N], CheckInput check_input) {
    ASSERT_EQ(reference::integral_type(kU64Width, kU64Height), reference::IntegralType::u64);
    for (const char* name : {"integral.scan", "integral.lookback", "integral.tile_gather"}) {
        const Variant& variant = Registry::instance().get(name);
        for (const U64Run& r : runs) {
            const OpCase c = u64_case(r);
            const LaunchShape shape = r.awkward_shape ? awkward_shape(variant, c.problem) : variant.default_shape(c.problem);
            const char* fill = c.fill == Fill::white ? "white" : c.fill == Fill::near_white ? "near white" : "random";
            SCOPED_TRACE(fmt::format("{} on {} ({}) with block {}, pitches {}/{}", variant.name(), to_string(c.problem), fill,
                                     to_string(shape), to_string(c.input_pitch), to_string(c.output_pitch)));
            check_input(r, c);
            if (::testing::Test::HasFatalFailure()) return;
            check_integral<std::uint64_t>(variant, c, shape);
        }
    }
}

// The integral variants past u32 on colour images, both layouts: 3 channels AoS (the kernels'
// 3-element path) and SoA (three gray planes); the table's u64 cases are gray and RGBA AoS.
// All-255 images give the largest sums; near-white ones keep every channel past 2^32 while the
// channels differ, so that mixed-up channels show. Each 4105x4104x3 u64 output is 404 MB on the
// device and on the host; one run at a time, freed before the next.
TEST_F(OpsLargeImages, IntegralVariantsU64OnRgbAosAndSoa) {
    const U64Run runs[] = {{kFormats[1], Fill::white, PitchKind::allocator, PitchKind::allocator, false},
                           {kFormats[4], Fill::white, PitchKind::odd, PitchKind::tight, true},
                           {kFormats[1], Fill::near_white, PitchKind::tight, PitchKind::odd, true},
                           {kFormats[4], Fill::near_white, PitchKind::allocator, PitchKind::odd, false}};
    check_integral_variants_on(runs, [](const U64Run& r, const OpCase& c) {
        // every channel's sum is past u32 (so the case needs u64 in each), and the channels differ
        const ImageU8 input = input_of(c);
        std::vector<unsigned long long> totals;
        for (int ch = 0; ch < 3; ++ch) {
            totals.push_back(channel_total(input, ch));
            ASSERT_GT(totals.back(), 0xffffffffull) << "channel " << ch;
        }
        if (r.fill == Fill::near_white) {
            ASSERT_TRUE(totals[0] != totals[1] && totals[1] != totals[2] && totals[0] != totals[2]);
        }
    });
}

// The integral variants past u32 on gray AoS images, with rows aligned for integral.tile_gather's
// cached rows (8-byte copies of each warp's last 16 rows; the partial tiles of the last tile column
// and row walk from global memory) and with a misaligned pitch (PitchKind::odd: no warp caches, and
// the tile sums keep all 32 rows of each warp in L2), on the default block and on an awkward one (a
// different count of staging areas before the cache in shared memory). White images give the
// largest sums; a random one on the awkward aligned block, so that a row or lane read from the
// wrong slot of the cache shows.
TEST_F(OpsLargeImages, IntegralVariantsU64OnGrayWithAlignedAndOddPitches) {
    const U64Run runs[] = {{kFormats[0], Fill::white, PitchKind::allocator, PitchKind::odd, false},
                           {kFormats[0], Fill::random, PitchKind::allocator, PitchKind::tight, true},
                           {kFormats[0], Fill::white, PitchKind::odd, PitchKind::allocator, false},
                           {kFormats[0], Fill::near_white, PitchKind::odd, PitchKind::tight, true}};
    check_integral_variants_on(runs, [](const U64Run&, const OpCase&) {});
}

// conv.box_integral where its summed-area table wraps. The table is u32 (kernels/conv_box_integral.cu:
// struct Table, box_row_prefix's carry, box_column_prefix's running sum) and wraps modulo 2^32 once
// a channel's running sum passes 2^32; each box sum is still exact only because the four-term
// difference is taken in u32 arithmetic before it is converted (box_from_integral; the preamble's
// "Exactness"). A table made float, signed, or converted to double before the difference fails
// here. Images of 4608x4608 pixels in [192, 255] (mean 223.5: each channel sums to about 4.7e9 >
// 2^32, asserted below; the padded table's last entry is at least that sum), so the box means
// (192..255) rarely saturate and a wrong sum shows. The convolution suite's images are too small to
// wrap the table, and 8K random images (mean 127.5) stay just below 2^32.
TEST_F(OpsLargeImages, BoxIntegralExactWhereItsU32TableWraps) {
    const Variant& variant = Registry::instance().get("conv.box_integral");
    struct Run {
        Problem problem;
        PitchKind input_pitch;
        PitchKind output_pitch;
    };
    const Run runs[] = {
        {convolve_problem(ImageShape{4608, 4608, 1, Layout::aos}, masks::box(5), Border{BorderMode::wrap, 0}),
         PitchKind::odd, PitchKind::tight},
        {convolve_problem(ImageShape{4608, 4608, 3, Layout::aos}, flat_mask(3, 7, 1.0f / 21, "box3x7"),
                          Border{BorderMode::reflect, 0}),
         PitchKind::allocator, PitchKind::odd}};
    std::uint32_t seed = 4608;
    for (const Run& r : runs) {
        const Problem& problem = r.problem;
        const LaunchShape shape = variant.default_shape(problem);
        SCOPED_TRACE(fmt::format("{} on {} with block {}", variant.name(), to_string(problem), to_string(shape)));
        ASSERT_TRUE(variant.supports(problem)) << variant.supports(problem).reason();
        ImageU8 input = test::random_image(problem.shape, seed++);
        for (std::size_t i = 0; i < input.size_bytes(); ++i) input.data()[i] = static_cast<std::uint8_t>(192 + input.data()[i] / 4);
        for (int ch = 0; ch < problem.shape.channels; ++ch)
            ASSERT_GT(channel_total(input, ch), 0xffffffffull) << "channel " << ch << ": the table would not wrap";
        DeviceImage<std::uint8_t> in(problem.shape, pitch_for(r.input_pitch, problem.shape, 1));
        in.upload(input);
        DeviceImage<std::uint8_t> out(problem.shape, pitch_for(r.output_pitch, problem.shape, 1));
        KLAB_CUDA_CHECK(cudaMemset(out.view().data, kSentinel, out.capacity_bytes()));
        const DeviceMask mask(*problem.mask);
        run(variant, problem, DeviceBuffers{device_buffer(in), device_buffer(out), mask.view()}, shape);
        const Verification v = verify_exact(reference::convolve(input, *problem.mask, problem.border, 0), out.download());
        EXPECT_TRUE(v.ok()) << v.summary();
    }
}

}  // namespace
}  // namespace klab
