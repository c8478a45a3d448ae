// Problem classes: their text, the resolution buckets and the problem each class is tuned on.
#include <gtest/gtest.h>

#include <string>

#include "tests/common/test_util.hpp"
#include "tests/cpu/autotune_fixtures.hpp"

namespace klab::autotune {
namespace {

using namespace fixtures;

// ---------------------------------------------------------------------------------------------

TEST(ProblemClasses, TextRoundTripsAndBucketsAreNearestByPixels) {
    const ProblemClass c = parse_problem_class("8K/9x9/c3/soa");
    EXPECT_EQ(c.resolution, "8K");
    EXPECT_EQ(c.mask_width, 9);
    EXPECT_EQ(c.layout, Layout::soa);
    EXPECT_EQ(to_string(c), "8K/9x9/c3/soa");
    for (const char* bad : {"8K/9x9/c3", "9K/9x9/c3/aos", "HD/4x4/c3/aos", "HD/3x3/c2/aos", "HD/3x3/3/aos", "HD/3x3/c3/xyz",
                            "HD/3x3x/c3/aos", "HD/33x33/c3/aos", "HD/3x3/c3x/aos"}) {
        test::expect_error([&] { parse_problem_class(bad); }, "HD/3x3/c3/aos");
    }
    EXPECT_EQ(resolution_bucket(1920, 1080), "HD");
    EXPECT_EQ(resolution_bucket(2000, 1000), "HD");
    EXPECT_EQ(resolution_bucket(1, 1), "480p");
    EXPECT_EQ(resolution_bucket(100000, 10000), "8K");
    EXPECT_EQ(resolution_bucket(3840, 2160), "4K");
    EXPECT_EQ(problem_class(convolve_problem({3000, 2000, 1, Layout::soa}, masks::box(5), Border{})).resolution, "4K");
    const Problem p = representative_problem(c);
    EXPECT_EQ(p.shape.width, 7680);
    EXPECT_EQ(p.shape.height, 4320);
    EXPECT_EQ(p.mask->name(), "gauss9");
    EXPECT_EQ(representative_problem(parse_problem_class("480p/1x7/c1/aos")).mask->height(), 7);
}

TEST(ProblemClasses, SobelAndIntegralClassesRoundTripBesideTheConvolutionForm) {
    for (const char* text : {"sobel/8K/c1/aos", "sobel/HD/c3/soa", "integral/8K/c1/aos/u64", "integral/8K/c1/aos/u32",
                             "integral/4K/c3/aos/u32", "integral/480p/c4/soa/u32", "HD/3x3/c3/aos"}) {
        EXPECT_EQ(to_string(parse_problem_class(text)), text);
    }
    const ProblemClass sobel = parse_problem_class("sobel/8K/c3/aos");
    EXPECT_EQ(sobel.op, Operation::sobel);
    EXPECT_EQ(sobel.mask_width, 0);
    EXPECT_FALSE(sobel == parse_problem_class("8K/3x3/c3/aos"));
    EXPECT_FALSE(parse_problem_class("integral/8K/c1/aos/u32") == parse_problem_class("integral/8K/c1/aos/u64"));
    // Malformed, or a u64 class below 8K (every smaller bucket's sums fit u32).
    for (const char* bad : {"sobel/8K/c1", "sobel/8K/3x3/c1/aos", "sobel/8K/c2/aos", "integral/8K/c1/aos", "integral/8K/c1/aos/u16",
                            "integral/HD/c1/aos/u64", "integral/4K/c1/aos/u64", "median/8K/c1/aos", "sobel/9K/c1/aos"}) {
        test::expect_error([&] { parse_problem_class(bad); }, "sobel/RESOLUTION/cC/LAYOUT");
    }
}

TEST(ProblemClasses, SobelAndIntegralProblemsFallIntoTheirClasses) {
    EXPECT_EQ(to_string(problem_class(op_problem(Operation::sobel, {7680, 4320, 1, Layout::aos}))), "sobel/8K/c1/aos");
    EXPECT_EQ(to_string(problem_class(op_problem(Operation::sobel, {2000, 1000, 3, Layout::soa}))), "sobel/HD/c3/soa");
    EXPECT_EQ(to_string(problem_class(op_problem(Operation::integral, {7680, 4320, 3, Layout::aos}))), "integral/8K/c3/aos/u64");
    EXPECT_EQ(to_string(problem_class(op_problem(Operation::integral, {3840, 2160, 1, Layout::aos}))), "integral/4K/c1/aos/u32");
    // 4096x4096 is nearer 8K than 4K by pixel count, and its sums still fit u32.
    EXPECT_EQ(to_string(problem_class(op_problem(Operation::integral, {4096, 4096, 1, Layout::aos}))), "integral/8K/c1/aos/u32");
}

TEST(ProblemClasses, SobelAndIntegralClassesAreMeasuredOnTheirBucketsImage) {
    const Problem sobel = representative_problem(parse_problem_class("sobel/HD/c3/soa"));
    EXPECT_EQ(sobel.op, Operation::sobel);
    EXPECT_EQ(sobel.shape, (ImageShape{1920, 1080, 3, Layout::soa}));
    EXPECT_FALSE(sobel.mask);
    EXPECT_EQ(sobel.border.mode, BorderMode::replicate);
    const Problem wide = representative_problem(parse_problem_class("integral/8K/c1/aos/u64"));
    EXPECT_EQ(wide.shape, (ImageShape{7680, 4320, 1, Layout::aos}));
    // The 8K bucket's u32 class: the largest square whose sums fit u32, itself in the 8K bucket.
    const Problem narrow = representative_problem(parse_problem_class("integral/8K/c1/aos/u32"));
    EXPECT_EQ(narrow.shape, (ImageShape{4096, 4096, 1, Layout::aos}));
    EXPECT_EQ(to_string(problem_class(narrow)), "integral/8K/c1/aos/u32");
    for (const char* text : {"integral/480p/c3/aos/u32", "integral/4K/c1/soa/u32", "sobel/8K/c4/aos"}) {
        EXPECT_EQ(to_string(problem_class(representative_problem(parse_problem_class(text)))), text);
    }
}

class BoxOnlyVariant : public SpaceVariant {
public:
    Support supports(const Problem& p) const override {
        return p.mask->name().rfind("box", 0) == 0 ? Support::yes() : Support::no("box masks only");
    }
};

TEST(ProblemClasses, AVariantThatTakesBoxMasksOnlyIsTunedOnABox) {
    const ProblemClass c = parse_problem_class("HD/9x9/c3/aos");
    EXPECT_EQ(representative_problem(c, SpaceVariant()).mask->name(), "gauss9");
    EXPECT_EQ(representative_problem(c, BoxOnlyVariant()).mask->name(), "box9");
}

}  // namespace
}  // namespace klab::autotune
