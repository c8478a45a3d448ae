// The host side of the separable variants (conv.separable_2pass, conv.separable_fused), without a
// GPU: the factors they multiply by (klab::separable_variant_factors) and the coefficient error
// they report (klab::separable_coefficient_error, harness/mask.hpp), which masks they take and why
// they refuse the others, and that this error really covers their arithmetic (a CPU emulation of
// the fp32 row pass and column pass always verifies with it, and reaches ties, so the check has
// teeth).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "harness/mask.hpp"
#include "harness/numeric.hpp"
#include "harness/reference/reference.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

const char* const kSeparable[] = {"conv.separable_2pass", "conv.separable_fused"};

Problem problem_with(const Mask& mask) { return convolve_problem(ImageShape{64, 48, 3, Layout::aos}, mask, Border{}); }

// float(col[j] * row[i]) of seeded random factors in [-1, 1]: rank 1 up to the float rounding.
Mask random_separable(int width, int height, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    std::vector<double> row(static_cast<std::size_t>(width)), column(static_cast<std::size_t>(height));
    for (double& v : row) v = uniform(rng);
    for (double& v : column) v = uniform(rng);
    std::vector<float> c;
    for (double cj : column)
        for (double ri : row) c.push_back(static_cast<float>(cj * ri));
    return Mask(width, height, c, "random_separable");
}

double largest_magnitude(const Mask& mask) {
    double largest = 0.0;
    for (float c : mask.coefficients()) largest = std::max(largest, std::fabs(static_cast<double>(c)));
    return largest;
}

TEST(SeparableVariantFactors, AMaskOnePixelTallOrWideIsItsOwnFactor) {
    const Mask tall = random_separable(1, 9, 21);
    const std::optional<SeparableFactors> t = separable_variant_factors(tall);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->row, std::vector<float>{1.0f});
    EXPECT_EQ(t->column, tall.coefficients());
    const Mask wide = random_separable(9, 1, 22);
    const std::optional<SeparableFactors> w = separable_variant_factors(wide);
    ASSERT_TRUE(w.has_value());
    EXPECT_EQ(w->row, wide.coefficients());
    EXPECT_EQ(w->column, std::vector<float>{1.0f});
    const std::optional<SeparableFactors> single = separable_variant_factors(Mask(1, 1, {0.3f}, "single"));
    ASSERT_TRUE(single.has_value());
    EXPECT_EQ(single->row, std::vector<float>{0.3f});
    EXPECT_EQ(single->column, std::vector<float>{1.0f});
}

TEST(SeparableVariantFactors, OtherMasksAreFactoredBySeparate) {
    for (const Mask& mask : {masks::gaussian(9), masks::box(5), random_separable(7, 5, 23), random_separable(31, 3, 24)}) {
        const std::optional<SeparableFactors> f = separable_variant_factors(mask);
        const std::optional<SeparableFactors> expected = separate(mask);
        ASSERT_TRUE(f.has_value()) << mask.name();
        ASSERT_TRUE(expected.has_value()) << mask.name();
        EXPECT_EQ(f->row, expected->row) << mask.name();
        EXPECT_EQ(f->column, expected->column) << mask.name();
        ASSERT_EQ(f->row.size(), static_cast<std::size_t>(mask.width()));
        ASSERT_EQ(f->column.size(), static_cast<std::size_t>(mask.height()));
    }
    for (const Mask& mask : {masks::sharpen(), masks::laplacian(), masks::emboss(), masks::unsharp(5, 0.0, 1.5)}) {
        EXPECT_FALSE(separable_variant_factors(mask).has_value()) << mask.name();
    }
}

// A mask that separate() would call rank 1 (within 1e-6 of its largest coefficient) but that
// differs from every outer product by more than a few fp32 ulps is another filter: refused.
TEST(SeparableVariantFactors, ANearlyRank1MaskIsRefused) {
    const Mask gauss = masks::gaussian(5);
    std::vector<float> c = gauss.coefficients();
    const float largest = *std::max_element(c.begin(), c.end());
    c[0] += 5e-7f * largest;  // about 8 ulps of the largest coefficient off one coefficient
    const Mask nearly(5, 5, c, "nearly");
    ASSERT_TRUE(separate(nearly).has_value());
    EXPECT_FALSE(separable_variant_factors(nearly).has_value());
    EXPECT_TRUE(separable_variant_factors(gauss).has_value());
}

TEST(SeparableCoefficientError, IsZeroExactlyWhenTheFactorsReproduceTheMask) {
    for (const Mask& mask : {random_separable(1, 9, 25), random_separable(9, 1, 26), masks::gaussian(3), masks::gaussian(5)}) {
        EXPECT_EQ(separable_coefficient_error(mask, *separable_variant_factors(mask)), 0.0) << mask.name();
    }
    // Hand-made factors off by one coefficient: E is that difference times (1 + gamma_{w+h}),
    // rounded up, so just above it.
    const Mask mask(3, 3, {1, 2, 1, 2, 4, 2, 1, 2, 1}, "binomial_ints");
    SeparableFactors f{{1.0f, 2.0f, 1.0f}, {1.0f, 2.0f, 1.0f}};
    EXPECT_EQ(separable_coefficient_error(mask, f), 0.0);
    f.row[2] = 1.25f;  // row_2 * column_j differs from the mask by 0.25, 0.5, 0.25
    const double e = separable_coefficient_error(mask, f);
    const double gamma = 6 * std::ldexp(1.0, -24) / (1 - 6 * std::ldexp(1.0, -24));
    EXPECT_GE(e, 0.5 * (1 + gamma));
    EXPECT_LT(e, 0.5 * (1 + 2 * gamma));
}

TEST(SeparableCoefficientError, IsAFewUlpsOfTheLargestCoefficientOfARoundedMask) {
    for (const Mask& mask : {masks::gaussian(9), masks::box(5), random_separable(7, 5, 27), random_separable(31, 31, 28)}) {
        const double e = separable_coefficient_error(mask, *separable_variant_factors(mask));
        EXPECT_GT(e, 0.0) << mask.name() << ": float factors cannot reproduce every coefficient";
        EXPECT_LT(e, largest_magnitude(mask) * std::ldexp(1.0, -21)) << mask.name();
    }
    // Large coefficients, whose differences exceed 1: E is still rounded up, never down.
    const Mask gauss9 = masks::gaussian(9);
    std::vector<float> big;
    for (float c : gauss9.coefficients()) big.push_back(c * 1e9f);
    const Mask large(9, 9, big, "gauss9_times_1e9");
    const SeparableFactors f = *separable_variant_factors(large);
    double largest_difference = 0.0;
    for (int j = 0; j < 9; ++j)
        for (int i = 0; i < 9; ++i)
            largest_difference =
                std::max(largest_difference, std::fabs(static_cast<double>(f.row[static_cast<std::size_t>(i)]) *
                                                           f.column[static_cast<std::size_t>(j)] -
                                                       large.at(i, j)));
    ASSERT_GT(largest_difference, 1.0) << "the test wants a difference above 1";
    const double n_u = 18 * std::ldexp(1.0, -24);
    const double bound = largest_difference * (1.0 + n_u / (1.0 - n_u));
    EXPECT_GT(separable_coefficient_error(large, f), bound);
    EXPECT_LE(separable_coefficient_error(large, f), std::nextafter(bound, 2 * bound));
}

TEST(SeparableCoefficientError, RefusesFactorsOfTheWrongSize) {
    test::expect_error([] { separable_coefficient_error(masks::gaussian(3), SeparableFactors{{1.0f}, {1.0f, 2.0f, 1.0f}}); },
                       "a row factor of the mask's width");
}

TEST(Separable, RefusesANonSeparableMaskSayingWhy) {
    for (const char* name : kSeparable) {
        const Variant& variant = Registry::instance().get(name);
        for (const Mask& mask : {masks::sharpen(), masks::laplacian(), masks::emboss(), masks::unsharp(5, 0.0, 1.5)}) {
            const Support s = variant.supports(problem_with(mask));
            EXPECT_FALSE(s) << name << " " << mask.name();
            EXPECT_NE(s.reason().find("separable (rank-1) masks only: " + mask.name()), std::string::npos) << s.reason();
        }
        test::expect_error([&] { variant.coefficient_error(problem_with(masks::sharpen())); }, "a separable mask");
    }
}

TEST(Separable, TakesEverySeparableMaskShape) {
    for (const char* name : kSeparable) {
        const Variant& variant = Registry::instance().get(name);
        for (const Mask& mask : {masks::box(1), masks::box(31), masks::gaussian(3), masks::gaussian(9),
                                 masks::gaussian(31, 4.0), random_separable(1, 9, 1), random_separable(9, 1, 2),
                                 random_separable(3, 31, 3), random_separable(31, 31, 4)}) {
            EXPECT_TRUE(variant.supports(problem_with(mask))) << name << " " << mask.name() << " " << mask.width() << "x"
                                                              << mask.height();
        }
    }
}

TEST(Separable, CoefficientErrorIsZeroWhereTheFactorsAreExact) {
    for (const char* name : kSeparable) {
        const Variant& variant = Registry::instance().get(name);
        // A mask one pixel wide or tall is its own factor (the other is exactly 1).
        EXPECT_EQ(variant.coefficient_error(problem_with(random_separable(1, 9, 5))), 0.0) << name;
        EXPECT_EQ(variant.coefficient_error(problem_with(random_separable(9, 1, 6))), 0.0) << name;
        EXPECT_EQ(variant.coefficient_error(problem_with(Mask(1, 1, {0.3f}, "single"))), 0.0) << name;
        // Binomial gaussians and power-of-two boxes factor into exact dyadic fractions.
        EXPECT_EQ(variant.coefficient_error(problem_with(masks::gaussian(3))), 0.0) << name;
        EXPECT_EQ(variant.coefficient_error(problem_with(masks::gaussian(5))), 0.0) << name;
    }
}

TEST(Separable, CoefficientErrorIsAFewUlpsOfTheLargestCoefficient) {
    for (const char* name : kSeparable) {
        const Variant& variant = Registry::instance().get(name);
        for (const Mask& mask : {masks::gaussian(9), masks::box(5), random_separable(7, 5, 7), random_separable(31, 31, 8)}) {
            const double e = variant.coefficient_error(problem_with(mask));
            double largest = 0.0;
            for (float c : mask.coefficients()) largest = std::max(largest, std::fabs(static_cast<double>(c)));
            EXPECT_GT(e, 0.0) << name << " " << mask.name() << ": float factors cannot reproduce every coefficient";
            EXPECT_LT(e, largest * std::ldexp(1.0, -21)) << name << " " << mask.name();
        }
    }
    // Both variants report the shared rule's error.
    for (const Mask& mask : {random_separable(7, 5, 9), masks::gaussian(31, 4.0), random_separable(1, 5, 10)}) {
        const double expected = separable_coefficient_error(mask, *separable_variant_factors(mask));
        for (const char* name : kSeparable) {
            EXPECT_EQ(Registry::instance().get(name).coefficient_error(problem_with(mask)), expected) << name << " " << mask.name();
        }
    }
}

// The separable variants' arithmetic on the CPU: the same factors (separable_variant_factors()),
// an fp32 FMA chain along x into an fp32 intermediate, then one along y.
ImageU8 fp32_separable(const ImageU8& in, const Mask& mask, Border border) {
    const std::optional<SeparableFactors> f = separable_variant_factors(mask);
    EXPECT_TRUE(f.has_value());
    const std::vector<float>& row = f->row;
    const std::vector<float>& column = f->column;
    ImageU8 out(in.shape());
    for (int c = 0; c < in.channels(); ++c)
        for (int y = 0; y < in.height(); ++y)
            for (int x = 0; x < in.width(); ++x) {
                float acc = 0.0f;
                for (int j = 0; j < mask.height(); ++j) {
                    float t = 0.0f;
                    for (int i = 0; i < mask.width(); ++i) {
                        const float p = sample(in.view(), x + i - mask.radius_x(), y + j - mask.radius_y(), c, border);
                        t = std::fma(row[static_cast<std::size_t>(i)], p, t);
                    }
                    acc = std::fma(column[static_cast<std::size_t>(j)], t, acc);
                }
                out.at(x, y, c) = saturate_round_u8(acc);
            }
    return out;
}

// A w x h mask whose coefficients are all float(1 / (2wh)): rank 1, and on a flat region of odd
// values v its exact sum is v/2 plus a little float error, right next to a tie.
Mask near_half(int w, int h) {
    const float c = 1.0f / static_cast<float>(2 * w * h);
    return Mask(w, h, std::vector<float>(static_cast<std::size_t>(w * h), c), "near_half");
}

TEST(Separable, CoefficientErrorCoversTheTwoPassArithmetic) {
    const Variant& variant = Registry::instance().get(kSeparable[0]);
    std::mt19937 rng(11);
    std::size_t tolerated = 0;
    for (int k : {1, 3, 5, 9, 15, 31}) {
        for (const Mask& mask : {masks::box(k), masks::gaussian(k), masks::gaussian(k, 2.5), random_separable(k, 3, rng()),
                                 random_separable(1, k, rng()), random_separable(k, 1, rng()), near_half(k, k),
                                 near_half(k, 3), near_half(1, k), near_half(k, 1)}) {
            ImageU8 input = test::random_image({29, 23, 1, Layout::aos}, rng());
            // Flat regions of odd values put box sums next to ties.
            for (int y = 0; y < 12; ++y)
                for (int x = 0; x < 29; ++x) input.at(x, y, 0) = static_cast<std::uint8_t>(x < 14 ? 1 : 3);
            for (const Border border : {Border{BorderMode::constant, 2}, Border{BorderMode::mirror, 0}}) {
                const ImageU8 reference = reference::convolve(input, mask, border);
                const ImageU8 actual = fp32_separable(input, mask, border);
                const Verification v = verify_convolution(input, mask, border, reference, actual,
                                                          variant.coefficient_error(problem_with(mask)));
                EXPECT_TRUE(v.ok()) << mask.name() << " " << mask.width() << "x" << mask.height() << ": " << v.summary();
                tolerated += v.tolerated;
            }
        }
    }
    EXPECT_GT(tolerated, 0u) << "the cases should reach a tie at least once, or this test proves little";
}

}  // namespace
}  // namespace klab
