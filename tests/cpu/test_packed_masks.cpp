// conv.packed_window's host side, without a GPU: the masks its 16-bit lanes take (up to 3x3, taps
// that are non-negative multiples of 1/256 summing to at most 1), the reasons it gives for the
// others, and the shapes and launches it describes.
#include <gtest/gtest.h>

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
    };
    for (const Mask& mask : taken) EXPECT_TRUE(support_for(mask)) << mask.name() << ": " << support_for(mask).reason();
}

TEST(PackedWindow, RefusesOtherMasksAndSaysWhy) {
    const struct {
        Mask mask;
        std::string reason;
    } refused[] = {
        {masks::gaussian(5), "masks up to 3x3: gauss5 is 5x5"},
        {masks::box(3), "taps that are non-negative multiples of 1/256: box3 has"},
        {masks::sharpen(), "taps that are non-negative multiples of 1/256: sharpen has -1 at row 1, column 2"},
        {Mask(3, 1, {0.5f, 0.5f, 0.5f}, "heavy"), "taps summing to at most 1 (each 16-bit lane holds up to 255 x 256): heavy's sum to 384/256"},
        {Mask(1, 1, {2.0f}, "double"), "taps that are non-negative multiples of 1/256: double has 2 at row 2, column 2"},
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

}  // namespace
}  // namespace klab
