// conv.packed_window's host side, without a GPU: the masks its 16-bit lanes take (up to 5x5, taps
// that are non-negative multiples of 1/256 summing to at most 1), the reasons it gives for the
// others, and the shapes and launches it describes for 3x3 and 5x5 windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/mask.hpp"
#include "harness/problem.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

const Variant& packed() { return Registry::instance().get("conv.packed_window"); }

Support support_for(const Mask& mask) { return packed().supports(convolve_problem(ImageShape{64, 48, 3, Layout::aos}, mask, Border{})); }

TEST(PackedWindow, TakesNonNegativeMasksInSteps256thsSummingToAtMostOne) {
    const std::vector<Mask> taken = {
        masks::gaussian(3),                                                          // (1 2 1) x (1 2 1) / 16
        Mask(3, 1, {0.25f, 0.5f, 0.25f}, "row121"),                                  // rank 1, a zero-padded row
        Mask(1, 3, {0.125f, 0.75f, 0.125f}, "column161"),                            // rank 1, a column
        Mask(3, 3, {3 / 256.f, 2 / 256.f, 3 / 256.f, 0, 0, 0, 6 / 256.f, 4 / 256.f, 6 / 256.f}, "rank1_ends3"),
        Mask(3, 3, {1 / 16.f, 2 / 16.f, 1 / 16.f, 2 / 16.f, 0, 2 / 16.f, 1 / 16.f, 3 / 16.f, 4 / 16.f}, "full"),
        Mask(3, 3, std::vector<float>(9, 1 / 256.f), "small"),                       // sums to 9/256
        masks::box(1),                                                               // 1.0: n = 256
        Mask(3, 3, std::vector<float>(9, 0.0f), "zero"),
        masks::gaussian(5),                                                          // (1 4 6 4 1) x (1 4 6 4 1) / 256
        Mask(5, 1, {1 / 16.f, 4 / 16.f, 6 / 16.f, 4 / 16.f, 1 / 16.f}, "row14641"),  // rank 1, a zero-padded row
        Mask(3, 5, std::vector<float>(15, 1 / 16.f), "tall"),                        // 3x5, sums to 15/16
        Mask(5, 5, std::vector<float>(25, 0.0f), "zero5"),
    };
    for (const Mask& mask : taken) EXPECT_TRUE(support_for(mask)) << mask.name() << ": " << support_for(mask).reason();
}

TEST(PackedWindow, RefusesOtherMasksAndSaysWhy) {
    const struct {
        Mask mask;
        std::string reason;
    } refused[] = {
        {masks::gaussian(7), "masks up to 5x5: gauss7 is 7x7"},
        {Mask(7, 1, std::vector<float>(7, 1 / 8.f), "row7"), "masks up to 5x5: row7 is 7x1"},
        {masks::box(3), "taps that are non-negative multiples of 1/256: box3 has"},
        {masks::box(5), "taps that are non-negative multiples of 1/256: box5 has 0.04 at row 1, column 1 (conv.shuffle_ring takes any "
                        "mask up to 9x9 in fp32)"},
        {Mask(5, 5, std::vector<float>(25, 11 / 256.f), "heavy5"), "taps summing to at most 1 (each 16-bit lane holds up to 255 x "
                                                                   "256): heavy5's sum to 275/256"},
        {masks::sharpen(), "taps that are non-negative multiples of 1/256: sharpen has -1 at row 1, column 2"},
        {Mask(3, 1, {0.5f, 0.5f, 0.5f}, "heavy"), "taps summing to at most 1 (each 16-bit lane holds up to 255 x 256): heavy's sum to 384/256"},
        {Mask(1, 1, {2.0f}, "double"), "taps that are non-negative multiples of 1/256: double has 2 at row 1, column 1"},
        {Mask(3, 5, {0, 0, 0, 0, 0, 0, 0, -0.5f, 0, 0, 0, 0, 0, 0, 0}, "negative"),
         "taps that are non-negative multiples of 1/256: negative has -0.5 at row 3, column 2"},
        {Mask(1, 1, {1.0f / 512}, "fine"), "taps that are non-negative multiples of 1/256: fine has"},
    };
    for (const auto& r : refused) {
        const Support support = support_for(r.mask);
        EXPECT_FALSE(support) << r.mask.name();
        EXPECT_EQ(support.reason().rfind(r.reason, 0), 0u) << support.reason();
    }
}

TEST(PackedWindow, DescribesOneLaunchOfItsShape) {
    const Problem problem = convolve_problem(ImageShape{1920, 1080, 3, Layout::aos}, masks::gaussian(3), Border{});
    const LaunchShape shape = packed().default_shape(problem);
    ASSERT_TRUE(packed().check_shape(problem, shape));
    EXPECT_FALSE(packed().check_shape(problem, LaunchShape{64, 2, {{"rows", 4}}}));  // rows are 3n + 2
    const std::vector<KernelLaunch> launches = packed().kernels(problem, LaunchShape{64, 2, {{"rows", 5}}});
    ASSERT_EQ(launches.size(), 1u);
    EXPECT_EQ(launches[0].grid.x, 6u);    // 5760 bytes a row, 64 threads x 16 bytes a block
    EXPECT_EQ(launches[0].grid.y, 108u);  // 1080 rows, 2 x 5 a block
    EXPECT_EQ(launches[0].grid.z, 1u);
}

// 5x5 masks take strips of 5n + 4 rows (five accumulator rows) and blocks of at most 128 threads;
// the default shape is one of them.
TEST(PackedWindow, TakesShapesOfItsWindowFor5x5Masks) {
    const Problem problem = convolve_problem(ImageShape{7680, 4320, 3, Layout::aos}, masks::gaussian(5), Border{});
    const LaunchShape shape = packed().default_shape(problem);
    EXPECT_TRUE(packed().check_shape(problem, shape)) << to_string(shape);
    EXPECT_EQ(shape.parameter("rows"), 24);  // the tallest up to 24 that still fills a 132-SM GPU
    EXPECT_TRUE(packed().check_shape(problem, LaunchShape{128, 1, {{"rows", 9}}}));
    const Support rows = packed().check_shape(problem, LaunchShape{64, 2, {{"rows", 5}}});
    EXPECT_FALSE(rows);
    EXPECT_NE(rows.reason().find("5n + 4"), std::string::npos) << rows.reason();
    const Support block = packed().check_shape(problem, LaunchShape{128, 2, {{"rows", 9}}});
    EXPECT_FALSE(block);
    EXPECT_NE(block.reason().find("at most 128 threads"), std::string::npos) << block.reason();
    // Both windows' heights are in the tuning space; each problem's check_shape() keeps its own.
    const std::vector<int> heights = packed().tuning_space().parameters.at(0).values;
    for (int rows_5x5 : {4, 9, 24, 94}) EXPECT_NE(std::find(heights.begin(), heights.end(), rows_5x5), heights.end()) << rows_5x5;
    for (int rows_3x3 : {2, 5, 62, 92}) EXPECT_NE(std::find(heights.begin(), heights.end(), rows_3x3), heights.end()) << rows_3x3;
}

}  // namespace
}  // namespace klab
