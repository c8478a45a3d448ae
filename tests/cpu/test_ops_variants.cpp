// Host-side checks of the sobel, integral and box variants (no GPU needed): what they
// support and refuse, the shapes they accept, the launches they describe, and grids within CUDA's
// limits on the largest images klab accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "harness/problem.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

Problem op_problem(Operation op, ImageShape shape, Border border = {}) {
    Problem p;
    p.op = op;
    p.shape = shape;
    p.border = border;
    return p;
}

TEST(OpsVariants, AreRegisteredForTheirOps) {
    for (const char* name : {"sobel.fused", "sobel.3kernel", "sobel.register_window"}) {
        EXPECT_EQ(Registry::instance().get(name).op(), Operation::sobel);
    }
    for (const char* name : {"integral.scan", "integral.lookback", "integral.tile_gather"}) {
        EXPECT_EQ(Registry::instance().get(name).op(), Operation::integral);
    }
    for (const char* name :
         {"conv.box_integral", "conv.box_running_sums", "conv.box_sliding_sums", "conv.box_warp_scan", "conv.box_warp_ring",
          "conv.box_pixel_lanes"}) {
        EXPECT_EQ(Registry::instance().get(name).op(), Operation::convolve);
    }
}

TEST(OpsVariants, SupportEveryFormatAndBorderWithTheirDefaultShape) {
    for (const char* name :
         {"sobel.fused", "sobel.3kernel", "sobel.register_window", "integral.scan", "integral.lookback", "integral.tile_gather"}) {
        const Variant* variant = &Registry::instance().get(name);
        for (int channels : {1, 3, 4})
            for (Layout layout : {Layout::aos, Layout::soa})
                for (BorderMode mode : {BorderMode::constant, BorderMode::replicate, BorderMode::mirror,
                                        BorderMode::reflect, BorderMode::wrap}) {
                    const Problem p = op_problem(variant->op(), {33, 7, channels, layout}, {mode, 3});
                    ASSERT_TRUE(variant->supports(p)) << variant->name();
                    const LaunchShape shape = variant->default_shape(p);
                    EXPECT_TRUE(variant->check_shape(p, shape)) << variant->name() << " " << to_string(shape);
                    EXPECT_FALSE(variant->kernels(p, shape).empty()) << variant->name();
                }
    }
}

TEST(OpsVariants, BoxVariantsTakeFlatMasksOnlyAndSayWhy) {
    for (const char* name :
         {"conv.box_integral", "conv.box_running_sums", "conv.box_sliding_sums", "conv.box_warp_scan", "conv.box_pixel_lanes"}) {
        SCOPED_TRACE(name);
        const Variant& variant = Registry::instance().get(name);
        const ImageShape image{64, 48, 3, Layout::aos};
        for (const Mask& mask : {masks::box(1), masks::box(9), masks::box(31), Mask(3, 7, std::vector<float>(21, 1.0f), "ones"),
                                 Mask(5, 1, std::vector<float>(5, -0.5f), "negative")}) {
            EXPECT_TRUE(variant.supports(convolve_problem(image, mask, Border{}))) << mask.name();
        }
        for (const Mask& mask : {masks::gaussian(3), masks::sharpen(), masks::laplacian()}) {
            const Support refused = variant.supports(convolve_problem(image, mask, Border{}));
            EXPECT_FALSE(refused) << mask.name();
            EXPECT_EQ(refused.reason(), "box masks only (all coefficients equal); " + mask.name() + " has unequal coefficients");
        }
        // A box whose last coefficient differs by one ulp is not a box.
        std::vector<float> almost(9, 1.0f / 9);
        almost.back() = std::nextafter(almost.back(), 1.0f);
        EXPECT_FALSE(variant.supports(convolve_problem(image, Mask(3, 3, almost, "almost"), Border{})));
    }
}

TEST(OpsVariants, IntegralScanRunsOneWarpPerTileAndPicksTheOutputType) {
    const Variant& variant = Registry::instance().get("integral.scan");
    const Problem small = op_problem(Operation::integral, {4096, 4096, 1, Layout::aos});
    const Problem large = op_problem(Operation::integral, {7680, 4320, 1, Layout::aos});
    EXPECT_TRUE(variant.check_shape(small, LaunchShape{32, 1, {}}));
    const Support refused = variant.check_shape(small, LaunchShape{16, 8, {}});
    EXPECT_FALSE(refused);
    EXPECT_NE(refused.reason().find("the block is 32xN, one warp per tile"), std::string::npos) << refused.reason();
    const std::vector<KernelLaunch> u32 = variant.kernels(small, variant.default_shape(small));
    const std::vector<KernelLaunch> u64 = variant.kernels(large, variant.default_shape(large));
    ASSERT_EQ(u32.size(), 3u);
    ASSERT_EQ(u64.size(), 3u);
    EXPECT_EQ(u32[2].kernel_name, "integral_tile_scan<u32>");
    EXPECT_EQ(u64[2].kernel_name, "integral_tile_scan<u64>");
    // 7680 gray pixels are 30 tiles of 256; 4320 rows are 135 tiles of 32.
    const LaunchShape shape = variant.default_shape(large);
    EXPECT_EQ(u64[0].grid.x, static_cast<unsigned>((30 + shape.block_y - 1) / shape.block_y));
    EXPECT_EQ(u64[0].grid.y, 135u);
    // SoA: one grid layer per plane.
    EXPECT_EQ(variant.kernels(op_problem(Operation::integral, {300, 70, 4, Layout::soa}), shape)[0].grid.z, 4u);
}

// The scratch memory each variant asks prepare() for (LaunchPlan::scratch), computed here by hand
// from the layouts the kernel files describe; sub-buffers start at multiples of 256 bytes.
TEST(OpsVariants, ScratchBytesAreWhatTheKernelsUse) {
    const Registry& r = Registry::instance();
    const auto bytes = [&](const char* name, const Problem& p) {
        const Variant& v = r.get(name);
        return v.scratch_bytes(p, v.default_shape(p));
    };
    // sobel.3kernel, 33x7: gray 231 B -> 256, gx and gy 462 B -> 512 each.
    EXPECT_EQ(bytes("sobel.3kernel", op_problem(Operation::sobel, {33, 7, 3, Layout::aos})), 256u + 512u + 512u);
    // integral.scan, 300x70 gray: 2 x 3 tiles of 256 x 32. Row sums 2*70 u32 (560 B -> 768), column
    // sums 3*300 u32 (3600 B -> 3840), tile totals 6 u64 (48 B -> 256).
    EXPECT_EQ(bytes("integral.scan", op_problem(Operation::integral, {300, 70, 1, Layout::aos})), 768u + 3840u + 256u);
    // 300x70 RGB AoS: 3 x 3 tiles of 128 pixels x 32, 3 elements. Row sums 3*70*3 u32 (2520 B ->
    // 2560), column sums 3*300*3 u32 (10800 B -> 11008), tile totals 9*3 u64 (216 B -> 256).
    EXPECT_EQ(bytes("integral.scan", op_problem(Operation::integral, {300, 70, 3, Layout::aos})), 2560u + 11008u + 256u);
    // conv.box_integral, 64x48x3, box 9x9: the padded 72x56 table of u32 per channel.
    EXPECT_EQ(bytes("conv.box_integral", convolve_problem({64, 48, 3, Layout::aos}, masks::box(9), Border{})),
              72u * 56u * 3u * 4u);
    // conv.separable_2pass: an fp32 row per stored row, its elements rounded up to 32.
    EXPECT_EQ(bytes("conv.separable_2pass", convolve_problem({64, 48, 3, Layout::aos}, masks::gaussian(5), Border{})),
              48u * 192u * 4u);
    EXPECT_EQ(bytes("conv.separable_2pass", convolve_problem({50, 48, 3, Layout::soa}, masks::gaussian(5), Border{})),
              144u * 64u * 4u);
    // The single-kernel variants need none.
    EXPECT_EQ(bytes("sobel.fused", op_problem(Operation::sobel, {33, 7, 3, Layout::aos})), 0u);
    EXPECT_EQ(bytes("conv.separable_fused", convolve_problem({64, 48, 3, Layout::aos}, masks::gaussian(5), Border{})), 0u);
}

// sobel.register_window: a warp's lanes lie along a row, at most 512 threads; each thread 8 colour or
// 16 gray pixels of a row (8 where that leaves less of the row to the edge walk) down a
// tuned, even number of rows.
TEST(OpsVariants, SobelRegisterWindowShapesAndGrid) {
    const Variant& variant = Registry::instance().get("sobel.register_window");
    const Problem p = op_problem(Operation::sobel, {7680, 4320, 3, Layout::aos});
    const auto rows = [](int n) { return std::vector<std::pair<std::string, int>>{{"rows", n}}; };
    for (const LaunchShape& shape :
         {LaunchShape{32, 1, rows(16)}, LaunchShape{64, 8, rows(8)}, LaunchShape{512, 1, rows(32)}, LaunchShape{96, 5, rows(22)}}) {
        EXPECT_TRUE(variant.check_shape(p, shape)) << to_string(shape);
    }
    for (const LaunchShape& shape : {LaunchShape{16, 8, rows(16)}, LaunchShape{48, 4, rows(16)}, LaunchShape{256, 4, rows(16)}}) {
        const Support refused = variant.check_shape(p, shape);
        EXPECT_FALSE(refused) << to_string(shape);
        EXPECT_NE(refused.reason().find("32k x m threads, at most 512"), std::string::npos) << refused.reason();
    }
    // Every listed height is even: the walk's loop is unrolled by two rows (prepare() refuses the
    // unlisted ones).
    const TuningSpace space = variant.tuning_space();
    ASSERT_EQ(space.parameters.size(), 1u);
    for (int n : space.parameters[0].values) EXPECT_EQ(n % 2, 0) << n;
    EXPECT_EQ(space.default_shape.parameter("rows"), 16);
    const std::vector<KernelLaunch> k = variant.kernels(p, LaunchShape{64, 4, rows(16)});
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].grid.x, 7680u / (64 * 8));             // 15 blocks of 512 pixels
    EXPECT_EQ(k[0].grid.y, (4320u + 63) / 64);             // 68 blocks of 4 x 16 rows
    EXPECT_EQ(variant.kernels(p, LaunchShape{64, 4, rows(22)})[0].grid.y, (4320u + 87) / 88);  // 50 blocks of 4 x 22 rows
    EXPECT_EQ(variant.scratch_bytes(p, LaunchShape{64, 4, rows(16)}), 0u);
    // Gray: 16 pixels a thread (8K: 7.5 blocks of 1024), but 8 where 16 leave more of a row to the
    // warps that reach past its end (the edge walk) (1920 = 3 x 512 + 384 = 7 x 256 + 128; 3840 = 15 x 256).
    const auto blocks_across = [&](int width, int channels, Layout layout) {
        return variant.kernels(op_problem(Operation::sobel, {width, 64, channels, layout}), LaunchShape{64, 4, rows(16)})[0].grid.x;
    };
    EXPECT_EQ(blocks_across(7680, 1, Layout::aos), 8u);
    EXPECT_EQ(blocks_across(7680, 1, Layout::soa), 8u);
    EXPECT_EQ(blocks_across(640, 1, Layout::aos), 1u);   // 640 = 512 + 128 = 2 x 256 + 128: 16
    EXPECT_EQ(blocks_across(1920, 1, Layout::aos), 4u);  // 8 pixels: 4 blocks of 512
    EXPECT_EQ(blocks_across(3840, 1, Layout::aos), 8u);  // 8 pixels
    EXPECT_EQ(blocks_across(4096, 1, Layout::aos), 4u);  // 16 pixels
    EXPECT_EQ(blocks_across(1920, 4, Layout::soa), 4u);  // colour: 8 pixels
}

// integral.lookback: the clearing kernel, then one block per tile of (32 P) x (32 N); the scratch
// holds the counter, two flags per tile and the status values, each array at a multiple of 256 bytes.
TEST(OpsVariants, IntegralLookbackTilesLaunchesAndScratch) {
    const Variant& variant = Registry::instance().get("integral.lookback");
    EXPECT_TRUE(variant.check_shape(op_problem(Operation::integral, {10, 10, 1, Layout::aos}), LaunchShape{32, 3, {}}));
    const Support refused = variant.check_shape(op_problem(Operation::integral, {10, 10, 1, Layout::aos}), LaunchShape{64, 4, {}});
    EXPECT_FALSE(refused);
    EXPECT_NE(refused.reason().find("the block is 32xN"), std::string::npos) << refused.reason();
    // 8K gray with 8 warps: tiles of 256 x 256, 30 x 17 of them; u64.
    const Problem gray = op_problem(Operation::integral, {7680, 4320, 1, Layout::aos});
    const LaunchShape eight{32, 8, {}};
    const std::vector<KernelLaunch> k = variant.kernels(gray, eight);
    ASSERT_EQ(k.size(), 2u);
    EXPECT_EQ(k[0].kernel_name, "integral_lookback_clear");
    EXPECT_EQ(k[1].kernel_name, "integral_lookback_kernel<u64>");
    EXPECT_EQ(k[1].grid.x, 30u * 17u);
    EXPECT_EQ(k[1].block.y, 8u);
    // Counter 256 B; flags 2 x 510 u32 = 4080 -> 4096; row values 510 x 256 u32 = 522240 (a multiple
    // of 256) twice; column values 510 x 256 u64 = 1044480 twice.
    EXPECT_EQ(variant.scratch_bytes(gray, eight), 256u + 4096u + 2u * 522240u + 2u * 1044480u);
    EXPECT_EQ(k[0].grid.x, 5u);  // clears 1088 words: 64 for the counter's 256 bytes, 1024 for the flags' 4096
    // 300x70 RGB SoA with 2 warps: three planes of 2 x 2 tiles of 256 x 64, u32.
    const Problem soa = op_problem(Operation::integral, {300, 70, 3, Layout::soa});
    const std::vector<KernelLaunch> planes = variant.kernels(soa, LaunchShape{32, 2, {}});
    EXPECT_EQ(planes[1].kernel_name, "integral_lookback_kernel<u32>");
    EXPECT_EQ(planes[1].grid.x, 3u * 2u * 2u);
}

// integral.tile_gather: the tile sums, then the gather, one block per tile of (32 P) x (32 N) each;
// the scratch holds the row sums and N column prefixes per tile, each array at a multiple of 256 bytes.
TEST(OpsVariants, IntegralTileGatherTilesLaunchesAndScratch) {
    const Variant& variant = Registry::instance().get("integral.tile_gather");
    const Support refused = variant.check_shape(op_problem(Operation::integral, {10, 10, 1, Layout::aos}), LaunchShape{32, 17, {}});
    EXPECT_FALSE(refused);
    EXPECT_NE(refused.reason().find("N from 1 to 16"), std::string::npos) << refused.reason();
    // 8K gray with 8 warps: tiles of 256 x 256, 30 x 17 of them; u64.
    const Problem gray = op_problem(Operation::integral, {7680, 4320, 1, Layout::aos});
    const LaunchShape eight{32, 8, {}};
    const std::vector<KernelLaunch> k = variant.kernels(gray, eight);
    ASSERT_EQ(k.size(), 2u);
    EXPECT_EQ(k[0].kernel_name, "integral_tile_sums_kernel");
    EXPECT_EQ(k[1].kernel_name, "integral_tile_gather_kernel<u64>");
    for (const KernelLaunch& launch : k) {
        EXPECT_EQ(launch.grid.x, 30u * 17u);
        EXPECT_EQ(launch.block.y, 8u);
    }
    EXPECT_EQ(k[0].dynamic_shared_bytes, 8u * 256u * 4u);  // each warp's column prefixes, u32
    // Row sums 510 x 256 u32 = 522240 (a multiple of 256); column prefixes 510 x 8 x 256 u32.
    EXPECT_EQ(variant.scratch_bytes(gray, eight), 522240u + 510u * 8u * 256u * 4u);
    // 300x70 RGB AoS with 2 warps: 3 x 2 tiles of 128 x 64, 384 column values each, u32.
    const Problem rgb = op_problem(Operation::integral, {300, 70, 3, Layout::aos});
    const std::vector<KernelLaunch> colour = variant.kernels(rgb, LaunchShape{32, 2, {}});
    EXPECT_EQ(colour[1].kernel_name, "integral_tile_gather_kernel<u32>");
    EXPECT_EQ(colour[1].grid.x, 3u * 2u);
    EXPECT_EQ(colour[0].dynamic_shared_bytes, 2u * 384u * 4u);
    EXPECT_EQ(variant.scratch_bytes(rgb, LaunchShape{32, 2, {}}), 6u * 64u * 3u * 4u + 6u * 2u * 384u * 4u);
}

// conv.box_running_sums: a warp's output lanes along a row segment (the halo lanes feed them), 64
// rows per block, a grid layer per SoA plane.
TEST(OpsVariants, BoxRunningSumsSegmentsAndGrid) {
    const Variant& variant = Registry::instance().get("conv.box_running_sums");
    const Problem rgb9 = convolve_problem({7680, 4320, 3, Layout::aos}, masks::box(9), Border{});
    EXPECT_FALSE(variant.check_shape(rgb9, LaunchShape{64, 4, {}}));
    EXPECT_FALSE(variant.check_shape(rgb9, LaunchShape{32, 32, {}}));
    const LaunchShape walk64{32, 4, {{"rows", 64}}};
    EXPECT_FALSE(variant.check_shape(rgb9, LaunchShape{32, 4, {{"rows", 12}}}));  // rows: 8, 16, 32 or 64
    EXPECT_TRUE(variant.check_shape(rgb9, walk64));
    // RGB, 24 bytes per lane; box 9: 15 bytes on the left (1 lane), 12 on the right (1 lane): 30
    // output lanes, 720 bytes per segment, 32 segments for a row of 23040 bytes.
    const std::vector<KernelLaunch> k = variant.kernels(rgb9, walk64);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].grid.x, 32u / 4);
    EXPECT_EQ(k[0].grid.y, (4320u + 63) / 64);
    EXPECT_EQ(k[0].grid.z, 1u);
    EXPECT_EQ(variant.kernels(rgb9, LaunchShape{32, 4, {{"rows", 16}}})[0].grid.y, 4320u / 16);
    // The default walk: the tallest that still gives 132 * 32 warps: 32 segments x 135 bands of 32
    // rows at 8K; a 480p image (3 segments) gets the shortest, 8.
    EXPECT_EQ(variant.default_shape(rgb9).parameter("rows"), 32);
    const Problem small = convolve_problem({640, 480, 3, Layout::aos}, masks::box(9), Border{});
    EXPECT_EQ(variant.default_shape(small).parameter("rows"), 8);
    // Box 31: 48 bytes on the left and 45 on the right, 2 lanes each: 28 output lanes, 672 bytes, 35
    // segments, 9 blocks of 4.
    const Problem rgb31 = convolve_problem({7680, 4320, 3, Layout::aos}, masks::box(31), Border{});
    EXPECT_EQ(variant.kernels(rgb31, walk64)[0].grid.x, 9u);
    const Problem soa = convolve_problem({300, 70, 4, Layout::soa}, masks::box(5), Border{});
    EXPECT_EQ(variant.kernels(soa, LaunchShape{32, 2, {{"rows", 8}}})[0].grid.z, 4u);
    EXPECT_EQ(variant.scratch_bytes(rgb9, walk64), 0u);
}

// conv.box_warp_scan: a warp's 512-byte span and the tile in its middle (the lanes whose bytes
// lie at least rx + 1 pixels from its start and rx from its end), a warp per tile and strip, 2 KB
// of shared memory per warp, a layer per SoA plane.
TEST(OpsVariants, BoxWarpScanTilesAndGrid) {
    const Variant& variant = Registry::instance().get("conv.box_warp_scan");
    const Problem rgb9 = convolve_problem({7680, 4320, 3, Layout::aos}, masks::box(9), Border{});
    EXPECT_FALSE(variant.check_shape(rgb9, LaunchShape{64, 4, {{"rows", 32}}}));
    EXPECT_FALSE(variant.check_shape(rgb9, LaunchShape{32, 16, {{"rows", 32}}}));
    EXPECT_FALSE(variant.check_shape(rgb9, LaunchShape{32, 4, {{"rows", 24}}}));  // rows: 16, 32 or 64
    const LaunchShape walk32{32, 4, {{"rows", 32}}};
    EXPECT_TRUE(variant.check_shape(rgb9, walk32));
    // RGB box 9: 15 bytes on the left, 12 on the right, lanes 1 ... 30 write: 480 bytes per tile, 48
    // tiles of a 23040-byte row, 135 strips of 32 rows: 6480 warps in blocks of 4.
    const std::vector<KernelLaunch> k = variant.kernels(rgb9, walk32);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].grid.x, 48u * 135u / 4u);
    EXPECT_EQ(k[0].grid.z, 1u);
    EXPECT_EQ(k[0].dynamic_shared_bytes, 4u * 32u * 16u * 4u);  // each lane's 16 column sources
    EXPECT_EQ(variant.default_shape(rgb9).parameter("rows"), 32);
    // RGB box 31: 48 and 45 bytes, lanes 3 ... 28: 416 bytes, 56 tiles; 64-row strips
    // share 4320 rows as 68 strips of 64 (the last one short by 32).
    const Problem rgb31 = convolve_problem({7680, 4320, 3, Layout::aos}, masks::box(31), Border{});
    EXPECT_EQ(variant.kernels(rgb31, LaunchShape{32, 8, {{"rows", 64}}})[0].grid.x, (56u * 68u + 7) / 8);
    // RGB box 11: 18 bytes on the left take two lanes (lanes 2 ... 30 write).
    const Problem rgb11 = convolve_problem({7680, 4320, 3, Layout::aos}, masks::box(11), Border{});
    EXPECT_EQ(variant.kernels(rgb11, walk32)[0].grid.x, (50u * 135u + 3) / 4);  // 464 bytes per tile
    // Gray box 31: 16 and 15 bytes, lanes 1 ... 30 again; the strips share 1080 rows evenly (68 of 16).
    const Problem gray31 = convolve_problem({1920, 1080, 1, Layout::aos}, masks::box(31), Border{});
    EXPECT_EQ(variant.kernels(gray31, LaunchShape{32, 2, {{"rows", 16}}})[0].grid.x, 4u * 68u / 2);
    // A small image takes the shortest strips; SoA planes are grid layers.
    const Problem soa = convolve_problem({300, 70, 4, Layout::soa}, masks::box(5), Border{});
    EXPECT_EQ(variant.default_shape(soa).parameter("rows"), 16);
    EXPECT_EQ(variant.kernels(soa, variant.default_shape(soa))[0].grid.z, 4u);
    EXPECT_EQ(variant.scratch_bytes(rgb9, walk32), 0u);
}

// conv.box_warp_ring: boxes up to 9 wide (a lane's neighbours hold its row sums' bytes) and of area
// up to 256 (S in 16 bits), whatever the channels; other masks are refused with the reason.
TEST(OpsVariants, BoxWarpRingTakesNarrowBoxesOfSmallAreaAndSaysWhy) {
    const Variant& variant = Registry::instance().get("conv.box_warp_ring");
    for (int channels : {1, 3, 4}) {
        SCOPED_TRACE(channels);
        const ImageShape image{64, 48, channels, Layout::aos};
        for (const Mask& mask : {masks::box(1), masks::box(3), masks::box(9), Mask(9, 27, std::vector<float>(243, 1.0f / 243), "box9x27"),
                                 Mask(1, 31, std::vector<float>(31, 1.0f), "ones1x31"), Mask(5, 1, std::vector<float>(5, -0.5f), "negative")}) {
            EXPECT_TRUE(variant.supports(convolve_problem(image, mask, Border{}))) << mask.name();
        }
        for (const Mask& mask : {masks::box(11), masks::box(31), Mask(9, 29, std::vector<float>(261, 1.0f / 261), "box9x29")}) {
            const Support refused = variant.supports(convolve_problem(image, mask, Border{}));
            EXPECT_FALSE(refused) << mask.name();
            EXPECT_EQ(refused.reason(), fmt::format("boxes up to 9 wide and of area up to 256 ({}: {}x{}): the row sums take a lane's "
                                                    "neighbours' bytes only and keep S in 16 bits (conv.box_warp_scan takes every box)",
                                                    mask.name(), mask.width(), mask.height()));
        }
        EXPECT_FALSE(variant.supports(convolve_problem(image, masks::gaussian(3), Border{})));
    }
}

// conv.box_warp_ring: the tiles of lanes 1 ... 30 (480 bytes), a warp per tile and strip; shared
// memory per warp: 2 KB of column sources and a ring of 2 * ry + 1 + 4 rows of 512 bytes.
TEST(OpsVariants, BoxWarpRingTilesGridAndRing) {
    const Variant& variant = Registry::instance().get("conv.box_warp_ring");
    const Problem rgb9 = convolve_problem({7680, 4320, 3, Layout::aos}, masks::box(9), Border{});
    EXPECT_FALSE(variant.check_shape(rgb9, LaunchShape{64, 4, {{"rows", 32}}}));
    EXPECT_FALSE(variant.check_shape(rgb9, LaunchShape{32, 4, {{"rows", 24}}}));
    const LaunchShape walk32{32, 4, {{"rows", 32}}};
    ASSERT_TRUE(variant.check_shape(rgb9, walk32));
    // 48 tiles of a 23040-byte row, 135 strips of 32 rows: 6480 warps in blocks of 4.
    const std::vector<KernelLaunch> k = variant.kernels(rgb9, walk32);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].grid.x, 48u * 135u / 4u);
    EXPECT_EQ(k[0].grid.z, 1u);
    EXPECT_EQ(k[0].dynamic_shared_bytes, 4u * (32u * 16u * 4u + 13u * 512u));
    // A 9x27 box: a ring of 31 rows; SoA planes are grid layers; the strips share 1080 rows evenly.
    const Problem soa = convolve_problem({1920, 1080, 4, Layout::soa}, Mask(9, 27, std::vector<float>(243, 1.0f / 243), "box9x27"), Border{});
    const std::vector<KernelLaunch> s = variant.kernels(soa, LaunchShape{32, 2, {{"rows", 16}}});
    EXPECT_EQ(s[0].grid.x, 4u * 68u / 2u);  // 1920 bytes: 4 tiles; 68 strips of at most 16 rows
    EXPECT_EQ(s[0].grid.z, 4u);
    EXPECT_EQ(s[0].dynamic_shared_bytes, 2u * (32u * 16u * 4u + 31u * 512u));
    EXPECT_EQ(variant.scratch_bytes(rgb9, walk32), 0u);
    for (const ImageShape& image : {ImageShape{8192, kMaxImageSide, 1, Layout::aos}, ImageShape{kMaxImageSide, 8192, 4, Layout::soa}}) {
        for (const KernelLaunch& launch : variant.kernels(convolve_problem(image, masks::box(9), Border{}), walk32)) {
            EXPECT_LE(launch.grid.x, 2147483647u);
            EXPECT_LE(launch.grid.z, 65535u);
        }
    }
}

// conv.box_pixel_lanes: 16 whole pixels a lane, lanes 1 ... 30 write (480 pixels a tile), a warp per
// tile and strip, shared memory of 2 KB per warp and byte of the pixel, or with the ring (RGB rows,
// boxes up to 15 rows high) 2 ry + 1 rows of 1536 bytes per warp if that is more; every box, but not
// RGBA AoS (64 bytes a lane), which is refused with the reason.
TEST(OpsVariants, BoxPixelLanesTilesGridAndFormats) {
    const Variant& variant = Registry::instance().get("conv.box_pixel_lanes");
    const Problem rgb31 = convolve_problem({7680, 4320, 3, Layout::aos}, masks::box(31), Border{});
    const LaunchShape walk33{32, 8, {{"loads", 2}, {"rows", 33}}};
    ASSERT_TRUE(variant.check_shape(rgb31, walk33));
    // A value its tuning space does not list is refused by the harness (prepare() and the tuning
    // lookup call parameter_mismatch), which names the listed values.
    const std::optional<ParameterMismatch> rows32 = parameter_mismatch(variant.tuning_space(), LaunchShape{32, 8, {{"loads", 2}, {"rows", 32}}});
    ASSERT_TRUE(rows32);
    EXPECT_EQ(rows32->allowed.rfind("rows from {8, 11, 16, 17, 22, 24, 33, 48, 66}", 0), 0u) << rows32->allowed;
    EXPECT_FALSE(variant.check_shape(rgb31, LaunchShape{64, 4, {{"loads", 2}, {"rows", 33}}}));
    EXPECT_FALSE(variant.check_shape(rgb31, LaunchShape{32, 16, {{"loads", 2}, {"rows", 33}}}));
    // 16 tiles of 480 pixels, 131 strips of 33 rows: 2096 warps (one wave of 16 warps on each of 132
    // SMs) in blocks of 8; 48 KB of shared memory per block.
    const std::vector<KernelLaunch> k = variant.kernels(rgb31, walk33);
    ASSERT_EQ(k.size(), 1u);
    EXPECT_EQ(k[0].grid.x, 16u * 131u / 8u);
    EXPECT_EQ(k[0].grid.z, 1u);
    EXPECT_EQ(k[0].dynamic_shared_bytes, 8u * 3u * 32u * 16u * 4u);
    // The tallest strips that leave 16 warps per SM on 132 SMs: 24 rows (2880 warps; 33 would give 2096).
    EXPECT_EQ(variant.default_shape(rgb31).parameter("rows"), 24);
    EXPECT_EQ(variant.default_shape(rgb31).parameter("loads"), 2);
    // loads=1, the ring: 2 ry + 1 rows of 1536 bytes per warp (box9: 9, 13.5 KB; box3: 3, less than
    // the 4 slots of 1536 bytes the walk has anyway); refused where it would need more than 15 slots
    // (box31: 31, 46.5 KB a warp) and for gray rows and SoA planes (no coalesced RGB walk), each with
    // the reason; a value other than 1 or 2 by the harness.
    const LaunchShape ring33{32, 8, {{"loads", 1}, {"rows", 33}}};
    const Problem rgb9 = convolve_problem({7680, 4320, 3, Layout::aos}, masks::box(9), Border{});
    ASSERT_TRUE(variant.check_shape(rgb9, ring33));
    EXPECT_EQ(variant.kernels(rgb9, ring33)[0].dynamic_shared_bytes, 8u * 9u * 1536u);
    EXPECT_EQ(variant.kernels(convolve_problem({7680, 4320, 3, Layout::aos}, masks::box(3), Border{}), ring33)[0].dynamic_shared_bytes,
              8u * 4u * 1536u);
    const Support tall = variant.check_shape(rgb31, ring33);
    EXPECT_FALSE(tall);
    EXPECT_NE(tall.reason().find("loads=1: the ring of a box 31 rows high would need 46.5 KB of shared memory per warp"), std::string::npos) << tall.reason();
    EXPECT_TRUE(variant.check_shape(convolve_problem({7680, 4320, 3, Layout::aos}, masks::box(15), Border{}), ring33));
    for (const ImageShape& image : {ImageShape{1920, 1080, 1, Layout::aos}, ImageShape{1920, 1080, 3, Layout::soa}}) {
        const Support flat = variant.check_shape(convolve_problem(image, masks::box(9), Border{}), ring33);
        EXPECT_FALSE(flat);
        EXPECT_NE(flat.reason().find("loads=1: the ring of the window's rows holds the RGB walk's rows"), std::string::npos) << flat.reason();
    }
    EXPECT_TRUE(parameter_mismatch(variant.tuning_space(), LaunchShape{32, 8, {{"loads", 3}, {"rows", 33}}}));
    // The L2 prefetch parameter `ahead` is gone (1 won every class of the retune at cd8b93d): a
    // shape that still sets it, as a record tuned between abf9fe6 and 027f785 does, is refused with the
    // declared parameters.
    const std::optional<ParameterMismatch> old_shape =
        parameter_mismatch(variant.tuning_space(), LaunchShape{32, 8, {{"ahead", 1}, {"loads", 1}, {"rows", 33}}});
    ASSERT_TRUE(old_shape);
    EXPECT_EQ(old_shape->allowed, "exactly the declared parameters: loads, rows");
    // The tuning space's own default lists only listed values (default_shape() picks the rows per problem).
    EXPECT_FALSE(parameter_mismatch(variant.tuning_space(), variant.tuning_space().default_shape));
    // Gray: 1920 pixels in 4 tiles of 480; a small image takes the shortest strips; SoA planes are layers.
    const Problem gray5 = convolve_problem({1920, 1080, 1, Layout::aos}, masks::box(5), Border{});
    EXPECT_EQ(variant.kernels(gray5, LaunchShape{32, 2, {{"loads", 2}, {"rows", 16}}})[0].grid.x, 4u * 68u / 2u);
    const Problem soa = convolve_problem({300, 70, 3, Layout::soa}, masks::box(5), Border{});
    EXPECT_EQ(variant.default_shape(soa).parameter("rows"), 8);
    EXPECT_EQ(variant.kernels(soa, variant.default_shape(soa))[0].grid.z, 3u);
    for (const Mask& mask : {masks::box(1), masks::box(31), Mask(31, 3, std::vector<float>(93, 2.0f), "twos31x3")}) {
        EXPECT_TRUE(variant.supports(convolve_problem({64, 48, 3, Layout::aos}, mask, Border{}))) << mask.name();
        EXPECT_TRUE(variant.supports(convolve_problem({64, 48, 4, Layout::soa}, mask, Border{}))) << mask.name();
        const Support refused = variant.supports(convolve_problem({64, 48, 4, Layout::aos}, mask, Border{}));
        EXPECT_FALSE(refused) << mask.name();
        EXPECT_NE(refused.reason().find("RGBA AoS: 16 pixels a lane would be 64 bytes"), std::string::npos) << refused.reason();
    }
    EXPECT_EQ(variant.scratch_bytes(rgb31, walk33), 0u);
}

TEST(OpsVariants, GridsStayWithinTheLimitsOnTheLargestImages) {
    for (const char* name : {"sobel.fused", "sobel.3kernel", "sobel.register_window", "integral.scan", "integral.lookback",
                             "integral.tile_gather", "conv.box_integral", "conv.box_running_sums", "conv.box_sliding_sums",
                             "conv.box_warp_scan"}) {
        const Variant& variant = Registry::instance().get(name);
        for (const ImageShape& image : {ImageShape{8192, kMaxImageSide, 1, Layout::aos},
                                        ImageShape{kMaxImageSide, 8192, 4, Layout::soa},
                                        ImageShape{1, kMaxImageSide, 3, Layout::aos}}) {
            const Problem problem = variant.op() == Operation::convolve ? convolve_problem(image, masks::box(31), Border{})
                                                                        : op_problem(variant.op(), image);
            ASSERT_TRUE(variant.supports(problem)) << name;
            for (const KernelLaunch& k : variant.kernels(problem, variant.default_shape(problem))) {
                EXPECT_GE(k.grid.x, 1u) << name << " " << k.kernel_name;
                EXPECT_LE(k.grid.x, 2147483647u) << name << " " << k.kernel_name;
                EXPECT_LE(k.grid.y, 65535u) << name << " " << k.kernel_name << " " << to_string(problem);
                EXPECT_LE(k.grid.z, 65535u) << name << " " << k.kernel_name;
            }
        }
    }
}

}  // namespace
}  // namespace klab
