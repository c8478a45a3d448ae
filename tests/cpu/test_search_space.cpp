// The search space of a variant and its exclusion reasons, with a variant made for the test.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/common/test_util.hpp"
#include "tests/cpu/autotune_fixtures.hpp"

namespace klab::autotune {
namespace {

using namespace fixtures;

// ---------------------------------------------------------------------------------------------
// The search space, with SpaceVariant (autotune_fixtures.hpp): two kernels, the second with 40
// registers when the block is wider than 128; blocks narrower than 8 refused.

std::optional<KernelResources> space_resources(const std::string& kernel) {
    if (kernel == "first_kernel" || kernel == "narrow_kernel") return resources(32);
    if (kernel == "wide_kernel") return resources(40);
    return std::nullopt;
}

TEST(SearchSpace, ExcludesWhatItShouldWithReasons) {
    const SpaceVariant variant;
    const SearchSpace space = search_space(variant, hd_problem(), 1.0, offline_oracle(model("H200"), space_resources));
    // 9 widths x 9 heights x 2 parameter values.
    ASSERT_EQ(space.candidates.size(), 9u * 9u * 2u);
    int included = 0;
    for (const Candidate& c : space.candidates) {
        const int t = c.shape.block_x * c.shape.block_y;
        SCOPED_TRACE(to_string(c.shape));
        if (t < 64 || t > 1024) {
            EXPECT_EQ(c.excluded_because.rfind("outside 64..1024 threads", 0), 0u) << c.excluded_because;
        } else if (c.shape.block_x < 8) {
            EXPECT_EQ(c.excluded_because, "refused by the variant: blocks at least 8 wide");
        } else if (c.shape.block_x > 128) {
            // The 40-register kernel caps the variant's occupancy.
            EXPECT_EQ(c.excluded_because.rfind("below 100% occupancy", 0), 0u) << c.excluded_because;
            EXPECT_NE(c.excluded_because.find("registers"), std::string::npos);
            ASSERT_TRUE(c.occupancy);
            EXPECT_LT(c.occupancy->fraction, 1.0);
        } else {
            EXPECT_TRUE(c.included()) << c.excluded_because;
            EXPECT_EQ(c.kernels.size(), 2u);
            EXPECT_EQ(c.occupancy->fraction, 1.0);
            ++included;
        }
    }
    EXPECT_EQ(static_cast<int>(space.included().size()), included);
    EXPECT_GT(included, 0);
    EXPECT_NE(space.summary().find("outside 64..1024 threads"), std::string::npos) << space.summary();

    // --min-occupancy 0.5 admits the 40-register shapes (75% or 50%).
    const SearchSpace wide = search_space(variant, hd_problem(), 0.5, offline_oracle(model("H200"), space_resources));
    EXPECT_GT(wide.included().size(), space.included().size());
    for (const Candidate* c : wide.included()) EXPECT_GE(c->occupancy->fraction, 0.5);
}

TEST(SearchSpace, KernelsWithoutRecordedResourcesAndBadArgumentsAreReported) {
    const SpaceVariant variant;
    const SearchSpace space = search_space(variant, hd_problem(), 1.0, offline_oracle(model("H200"), [](const std::string&) {
                                               return std::optional<KernelResources>();
                                           }));
    EXPECT_TRUE(space.included().empty());
    bool said = false;
    for (const Candidate& c : space.candidates) said = said || c.excluded_because.find("no recorded registers") != std::string::npos;
    EXPECT_TRUE(said);
    const auto oracle = offline_oracle(model("H200"), space_resources);
    test::expect_error([&] { search_space(variant, hd_problem(), 0.0, oracle); }, "minimum occupancy");
    test::expect_error([&] { search_space(variant, hd_problem(), 1.5, oracle); }, "minimum occupancy");
    test::expect_error([&] { search_space(variant, hd_problem(4), 1.0, oracle); }, "no RGBA");
}

TEST(SearchSpace, ShapesWhoseGridExceedsCudasLimitsAreExcluded) {
    const Variant& global = Registry::instance().get("conv.global");
    const Problem tall = convolve_problem({64, kMaxImageSide, 1, Layout::aos}, masks::box(3), Border{});
    const auto any = [](const std::string&) { return std::optional<KernelResources>(resources(32)); };
    const SearchSpace space = search_space(global, tall, 1.0, offline_oracle(model("H200"), any));
    bool wide_excluded = false;
    for (const Candidate& c : space.candidates) {
        if (c.shape.block_x == 64 && c.shape.block_y == 1) {
            wide_excluded = true;
            EXPECT_EQ(c.excluded_because, "cannot run: kernel conv_global_kernel needs a 1x131072x1 grid; CUDA allows at most "
                                          "2147483647x65535x65535");
        }
        if (c.included()) {
            EXPECT_GE(c.shape.block_y, 2) << to_string(c.shape);
        }
    }
    EXPECT_TRUE(wide_excluded);
    EXPECT_FALSE(space.included().empty());
}

// Every registered convolution variant's default shape lies in the standard space's block sides.
TEST(SearchSpace, EveryVariantDeclaresItsDefaultShapeInItsSpace) {
    for (const Variant* v : Registry::instance().for_op(Operation::convolve)) {
        const TuningSpace s = v->tuning_space();
        const LaunchShape d = v->default_shape(hd_problem());
        EXPECT_NE(std::find(s.block_x.begin(), s.block_x.end(), d.block_x), s.block_x.end()) << v->name();
        EXPECT_NE(std::find(s.block_y.begin(), s.block_y.end(), d.block_y), s.block_y.end()) << v->name();
    }
}

}  // namespace
}  // namespace klab::autotune
