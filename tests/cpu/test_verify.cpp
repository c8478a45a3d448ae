// The verifier: exact results pass, a difference of 1 passes only next to a rounding tie within
// the fp32 bound, everything else fails with the first differing element; and the bound really
// covers fp32 accumulation (an fp32 emulation of the kernels' arithmetic, summed forwards and
// backwards, always verifies).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "harness/numeric.hpp"
#include "harness/reference/reference.hpp"
#include "harness/sampling.hpp"
#include "harness/verify.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

Mask single(float coefficient) { return Mask(1, 1, {coefficient}, "single"); }

TEST(Verify, EqualImagesPass) {
    const ImageU8 image = test::random_image({17, 5, 3, Layout::soa}, 1);
    const Verification v = verify_exact(image, image);
    EXPECT_TRUE(v.ok());
    EXPECT_EQ(v.compared, 17u * 5 * 3);
    EXPECT_EQ(v.summary(), "ok: 255 values equal");
}

TEST(Verify, ReportsTheFirstDifferenceInRowMajorOrderAndTheCount) {
    const ImageU8 reference = test::random_image({6, 4, 3, Layout::aos}, 2);
    ImageU8 actual = reference;
    actual.at(4, 3, 0) ^= 1;
    actual.at(1, 2, 2) ^= 8;  // earlier in (y, x, c) order
    actual.at(5, 2, 1) ^= 2;
    const Verification v = verify_exact(reference, actual);
    EXPECT_FALSE(v.ok());
    EXPECT_EQ(v.differing, 3u);
    ASSERT_TRUE(v.first.has_value());
    EXPECT_EQ(v.first->x, 1);
    EXPECT_EQ(v.first->y, 2);
    EXPECT_EQ(v.first->c, 2);
    EXPECT_EQ(v.first->expected, reference.at(1, 2, 2));
    EXPECT_EQ(v.first->value, actual.at(1, 2, 2));
    EXPECT_NE(v.summary().find("3 of 72 values differ; first at x=1 y=2 c=2"), std::string::npos) << v.summary();
}

TEST(Verify, RefusesImagesOfDifferentShapes) {
    const ImageU8 a(4, 4, 1), b(4, 4, 1, Layout::soa), c(4, 5, 1);
    test::expect_error([&] { verify_exact(a, c); }, "a result of the reference's shape");
    test::expect_error([&] { verify_convolution(a, single(1.0f), Border{}, a, c); }, "reference's shape");
    EXPECT_TRUE(verify_exact(a, ImageU8(4, 4, 1, Layout::aos, 64)).ok());  // the pitch does not matter
}

TEST(Verify, ToleratesOneAtAnExactTie) {
    const ImageU8 input = test::gray_image(1, 1, {1});
    const Mask half = single(0.5f);  // exact sum 0.5: the reference rounds to 0 (half to even)
    const ImageU8 reference = reference::convolve(input, half, Border{});
    ASSERT_EQ(reference.at(0, 0, 0), 0);
    const Verification v = verify_convolution(input, half, Border{}, reference, test::gray_image(1, 1, {1}));
    EXPECT_TRUE(v.ok()) << v.summary();
    EXPECT_EQ(v.tolerated, 1u);
    EXPECT_EQ(v.summary(), "ok: 1 values equal, 1 within the fp32 tie bound");
    // Two away from the tie's neighbours is a bug.
    EXPECT_FALSE(verify_convolution(input, half, Border{}, reference, test::gray_image(1, 1, {2})).ok());
}

TEST(Verify, RefusesOneAwayFromATie) {
    const ImageU8 input = test::gray_image(2, 1, {5, 200});
    const Mask identity = single(1.0f);
    const ImageU8 reference = reference::convolve(input, identity, Border{});
    const Verification v = verify_convolution(input, identity, Border{}, reference, test::gray_image(2, 1, {5, 201}));
    EXPECT_FALSE(v.ok());
    EXPECT_EQ(v.tolerated, 0u);
    EXPECT_NE(v.summary().find("1 of 2 values differ; first at x=1 y=0 c=0: 201, reference 200"), std::string::npos);
}

// Once an element breaks the rule the verdict is made: later differences of 1 are counted as
// unchecked, not each held to the tie bound (which recomputes the element's exact sum: minutes on
// a wrong 8K result under a 31x31 mask). A tie before the first failure is still tolerated; one
// after it is unchecked: element 3 below, within the bound, which the tie check would tolerate.
TEST(Verify, DifferencesOfOneAfterTheFirstFailureAreCountedUnchecked) {
    const ImageU8 input = test::gray_image(5, 1, {1, 5, 7, 9, 11});
    const Mask half = single(0.5f);  // the reference rounds 0.5 to 0: 1 there is within the tie bound
    const ImageU8 reference = reference::convolve(input, half, Border{});
    ASSERT_EQ(reference.at(0, 0, 0), 0);
    ImageU8 actual = reference;
    actual.at(0, 0, 0) = 1;                                                     // a tie: tolerated
    actual.at(1, 0, 0) = static_cast<std::uint8_t>(reference.at(1, 0, 0) + 2);  // breaks the rule
    actual.at(2, 0, 0) = static_cast<std::uint8_t>(reference.at(2, 0, 0) + 1);  // unchecked
    actual.at(3, 0, 0) = static_cast<std::uint8_t>(reference.at(3, 0, 0) + 1);  // a tie (4.5), unchecked
    actual.at(4, 0, 0) = static_cast<std::uint8_t>(reference.at(4, 0, 0) + 3);  // breaks the rule
    const Verification v = verify_convolution(input, half, Border{}, reference, actual);
    EXPECT_FALSE(v.ok());
    EXPECT_EQ(v.tolerated, 1u);
    EXPECT_EQ(v.differing, 2u);
    EXPECT_EQ(v.unchecked, 2u);
    ASSERT_TRUE(v.first.has_value());
    EXPECT_EQ(v.first->x, 1);
    EXPECT_NE(v.summary().find("2 of 5 values differ; first at x=1 y=0 c=0"), std::string::npos) << v.summary();
    EXPECT_NE(v.summary().find("; 2 more differ by 1, not checked against the tie bound after the first"), std::string::npos)
        << v.summary();
    // Exact comparison has no tie to check: every difference counts.
    const Verification exact = verify_exact(reference, actual);
    EXPECT_EQ(exact.differing, 5u);
    EXPECT_EQ(exact.unchecked, 0u);
}

TEST(Verify, RefusesOneJustOutsideTheBound) {
    // 0.5 + 2^-24 is one fp32 step above the tie: more than the bound for one tap (~3e-8) away.
    const ImageU8 input = test::gray_image(1, 1, {1});
    const Mask above = single(std::nextafter(0.5f, 1.0f));
    const ImageU8 reference = reference::convolve(input, above, Border{});
    ASSERT_EQ(reference.at(0, 0, 0), 1);
    EXPECT_GT(std::nextafter(0.5f, 1.0f) - 0.5, fp32_tie_bound(1, 0.5));
    EXPECT_FALSE(verify_convolution(input, above, Border{}, reference, test::gray_image(1, 1, {0})).ok());
}

TEST(Verify, SaturatedValuesHaveNoTie) {
    const ImageU8 input = test::gray_image(2, 1, {255, 1});
    const Mask m = single(1.0019608f);  // 255 * m = 255.5: above 255, saturation decides, not rounding
    const ImageU8 reference = reference::convolve(input, m, Border{});
    ASSERT_EQ(reference.at(0, 0, 0), 255);
    EXPECT_FALSE(verify_convolution(input, m, Border{}, reference, test::gray_image(2, 1, {254, 1})).ok());
}

// A variant whose effective coefficients differ from the mask's by up to e (a separable one)
// gets e * (the sum of the pixels under the mask) more room around a tie, and only that much.
TEST(Verify, CoefficientErrorWidensTheTieBoundByItsShareAndNoMore) {
    // 0.5 + 2^-20 on a pixel of 1: the reference rounds to 1; 0 is 2^-20 from the tie, far outside
    // the fp32 bound for one tap (~3e-8).
    const ImageU8 input = test::gray_image(1, 1, {1});
    const Mask above = single(0.5f + std::ldexp(1.0f, -20));
    const ImageU8 reference = reference::convolve(input, above, Border{});
    ASSERT_EQ(reference.at(0, 0, 0), 1);
    const ImageU8 zero = test::gray_image(1, 1, {0});
    const double distance = std::ldexp(1.0, -20);
    ASSERT_GT(distance, fp32_tie_bound(1, 0.5));
    EXPECT_FALSE(verify_convolution(input, above, Border{}, reference, zero).ok());
    EXPECT_FALSE(verify_convolution(input, above, Border{}, reference, zero, 0.5 * distance).ok());
    const Verification widened = verify_convolution(input, above, Border{}, reference, zero, distance);
    EXPECT_TRUE(widened.ok()) << widened.summary();
    EXPECT_EQ(widened.tolerated, 1u);
    // The slack never excuses a difference of 2, nor one on the far side of the tie.
    EXPECT_FALSE(verify_convolution(input, above, Border{}, reference, test::gray_image(1, 1, {2}), 1.0).ok());
    // It scales with the pixels: 3 pixels of 1 under a 3x1 mask of (0.5 + 2^-20) / 3 each.
    const ImageU8 row = test::gray_image(3, 1, {1, 1, 1});
    const float third = (0.5f + std::ldexp(1.0f, -20)) / 3.0f;
    const Mask spread(3, 1, {third, third, third}, "spread");
    const ImageU8 spread_reference = reference::convolve(row, spread, Border{BorderMode::constant, 0});
    ASSERT_EQ(spread_reference.at(1, 0, 0), 1);
    ImageU8 spread_actual = spread_reference;
    spread_actual.at(1, 0, 0) = 0;
    const double tie_distance = 3.0 * static_cast<double>(third) - 0.5;
    EXPECT_FALSE(verify_convolution(row, spread, Border{BorderMode::constant, 0}, spread_reference, spread_actual,
                                    0.8 * tie_distance / 3)
                     .ok());
    EXPECT_TRUE(verify_convolution(row, spread, Border{BorderMode::constant, 0}, spread_reference, spread_actual,
                                   1.0 * tie_distance / 3)
                    .ok());
}

TEST(Verify, RefusesANegativeOrNonFiniteCoefficientError) {
    const ImageU8 input = test::gray_image(1, 1, {1});
    const ImageU8 reference = reference::convolve(input, single(1.0f), Border{});
    test::expect_error([&] { verify_convolution(input, single(1.0f), Border{}, reference, reference, -1e-9); },
                       "a finite value >= 0");
    test::expect_error([&] { verify_convolution(input, single(1.0f), Border{}, reference, reference, std::nan("")); },
                       "a finite value >= 0");
    test::expect_error(
        [&] { verify_convolution(input, single(1.0f), Border{}, reference, reference, HUGE_VAL); },
        "a finite value >= 0");
    EXPECT_TRUE(verify_convolution(input, single(1.0f), Border{}, reference, reference, 0.0).ok());
}

TEST(Verify, TieBoundGrowsWithTapsAndMagnitude) {
    EXPECT_NEAR(fp32_tie_bound(961, 255.0), 961 * 255.0 * std::ldexp(1.0, -24), 1e-6);  // ~0.0146
    EXPECT_LT(fp32_tie_bound(9, 255.0), fp32_tie_bound(961, 255.0));
    EXPECT_EQ(fp32_tie_bound(9, 0.0), 0.0);
}

// The kernels' arithmetic on the CPU: fp32 products and FMAs, summed in a chosen order.
ImageU8 fp32_convolve(const ImageU8& in, const Mask& mask, Border border, bool backwards) {
    ImageU8 out(in.shape());
    const int taps = mask.width() * mask.height();
    for (int y = 0; y < in.height(); ++y)
        for (int x = 0; x < in.width(); ++x)
            for (int c = 0; c < in.channels(); ++c) {
                float acc = 0.0f;
                for (int k = 0; k < taps; ++k) {
                    const int t = backwards ? taps - 1 - k : k;
                    const int i = t % mask.width(), j = t / mask.width();
                    const float v = sample(in.view(), x + i - mask.radius_x(), y + j - mask.radius_y(), c, border);
                    acc = std::fma(mask.at(i, j), v, acc);
                }
                out.at(x, y, c) = saturate_round_u8(acc);
            }
    return out;
}

// A w x h mask whose coefficients are all float(1 / (2wh)): on a flat region of odd values v the
// exact sum is v/2 plus a little float error, right next to a tie.
Mask near_half(int w, int h) {
    const float c = 1.0f / static_cast<float>(2 * w * h);
    return Mask(w, h, std::vector<float>(static_cast<std::size_t>(w * h), c), "near_half");
}

TEST(Verify, Fp32AccumulationAlwaysPassesTheRule) {
    // Flat regions of odd values under near_half masks put many exact sums next to ties.
    std::mt19937 rng(7);
    std::size_t tolerated = 0;
    for (int k : {3, 5, 7, 9, 11, 15, 21, 31}) {
        for (const Mask& mask : {masks::box(k), masks::gaussian(k), masks::unsharp(k, 0.0, 1.5), near_half(k, 1),
                                 near_half(1, k), near_half(k, k)}) {
            ImageU8 input = test::random_image({23, 19, 1, Layout::aos}, rng());
            for (int y = 0; y < 10; ++y)
                for (int x = 0; x < 23; ++x) input.at(x, y, 0) = static_cast<std::uint8_t>(x < 12 ? 1 : 3);
            const ImageU8 reference = reference::convolve(input, mask, Border{BorderMode::constant, 2});
            for (bool backwards : {false, true}) {
                const ImageU8 actual = fp32_convolve(input, mask, Border{BorderMode::constant, 2}, backwards);
                const Verification v = verify_convolution(input, mask, Border{BorderMode::constant, 2}, reference, actual);
                EXPECT_TRUE(v.ok()) << mask.name() << (backwards ? " backwards: " : ": ") << v.summary();
                tolerated += v.tolerated;
            }
        }
    }
    EXPECT_GT(tolerated, 0u) << "the cases should reach a tie at least once, or this test proves little";
}

}  // namespace
}  // namespace klab
