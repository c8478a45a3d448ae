// Mask factories, the user-mask parser and the separability test.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>

#include <unistd.h>

#include "harness/filter_spec.hpp"
#include "harness/mask.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

double sum_of(const Mask& m) { return std::accumulate(m.coefficients().begin(), m.coefficients().end(), 0.0); }

TEST(MaskFactories, GaussianSumsToOneForEverySize) {
    for (int k = 1; k <= 31; k += 2) {
        EXPECT_NEAR(sum_of(masks::gaussian(k)), 1.0, 1e-6) << "k=" << k;
        EXPECT_NEAR(sum_of(masks::gaussian(k, 2.5)), 1.0, 1e-6) << "k=" << k;
    }
}

TEST(MaskFactories, GaussianDefaultSigmaFollowsOpenCv) {
    // k <= 7 with the default sigma: OpenCV's fixed binomial tables.
    EXPECT_EQ(gaussian_kernel_1d(3), (std::vector<double>{0.25, 0.5, 0.25}));
    EXPECT_EQ(gaussian_kernel_1d(5), (std::vector<double>{0.0625, 0.25, 0.375, 0.25, 0.0625}));
    EXPECT_EQ(gaussian_kernel_1d(7), (std::vector<double>{0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125}));
    // k = 9: sigma = 0.3*((9-1)*0.5 - 1) + 0.8 = 1.7, the values OpenCV's getGaussianKernel(9, 0) returns.
    const std::vector<double> expected = {0.0148394538, 0.0498172892, 0.1183225062, 0.1988289965, 0.2363835085,
                                          0.1988289965, 0.1183225062, 0.0498172892, 0.0148394538};
    const std::vector<double> g9 = gaussian_kernel_1d(9);
    ASSERT_EQ(g9.size(), expected.size());
    for (std::size_t i = 0; i < g9.size(); ++i) EXPECT_NEAR(g9[i], expected[i], 1e-10) << i;
    // An explicit sigma bypasses the binomial tables even for k <= 7.
    EXPECT_NE(gaussian_kernel_1d(3, 0.5), gaussian_kernel_1d(3));
    // 3x3 gaussian is (1 2 1)^T (1 2 1) / 16.
    const Mask m = masks::gaussian(3);
    EXPECT_FLOAT_EQ(m.at(0, 0), 1.0f / 16);
    EXPECT_FLOAT_EQ(m.at(1, 0), 2.0f / 16);
    EXPECT_FLOAT_EQ(m.at(1, 1), 4.0f / 16);
}

TEST(MaskFactories, FixedMasksHaveTheirCoefficients) {
    EXPECT_EQ(masks::sharpen().coefficients(), (std::vector<float>{0, -1, 0, -1, 5, -1, 0, -1, 0}));
    EXPECT_EQ(masks::laplacian().coefficients(), (std::vector<float>{0, 1, 0, 1, -4, 1, 0, 1, 0}));
    EXPECT_EQ(masks::emboss().coefficients(), (std::vector<float>{-2, -1, 0, -1, 1, 1, 0, 1, 2}));
    // sobel_x responds positively to brightness increasing with x; sobel_y with y.
    EXPECT_EQ(masks::sobel_x().at(2, 1), 2.0f);
    EXPECT_EQ(masks::sobel_x().at(0, 1), -2.0f);
    EXPECT_EQ(masks::sobel_y().at(1, 2), 2.0f);
    EXPECT_EQ(masks::sobel_y().at(1, 0), -2.0f);
    EXPECT_NEAR(sum_of(masks::box(7)), 1.0, 1e-6);
    EXPECT_FLOAT_EQ(masks::box(3).at(2, 2), 1.0f / 9);
}

TEST(MaskFactories, UnsharpIsIdentityPlusAmountTimesDetail) {
    const Mask u = masks::unsharp(3, 0.0, 1.5);
    EXPECT_NEAR(sum_of(u), 1.0, 1e-6);  // (1 + a) - a * 1
    EXPECT_FLOAT_EQ(u.at(1, 1), static_cast<float>(2.5 - 1.5 * 0.25));
    EXPECT_FLOAT_EQ(u.at(0, 0), static_cast<float>(-1.5 / 16));
    // At the largest amount allowed the fp32 taps still sum to 1 closely enough that a flat image
    // comes back as it was: 255 x the sum stays within 0.01 of 255 at every size.
    for (int k : {3, 15, 31}) EXPECT_NEAR(255.0 * sum_of(masks::unsharp(k, 0.0, 1000.0)), 255.0, 0.01) << k;
}

TEST(MaskFactories, RejectBadSizesWithTheirOwnMessage) {
    test::expect_error([] { masks::box(4); }, "box size 4 is not supported; allowed: odd width and height from 1 to 31");
    test::expect_error([] { masks::gaussian(33); }, "gaussian size 33");
    test::expect_error([] { masks::gaussian(0); }, "gaussian size 0");
    test::expect_error([] { Mask(3, 3, {1, 2, 3}); }, "has 3 coefficients");
    test::expect_error([] { Mask(2, 3, std::vector<float>(6, 1.0f)); }, "is 2x3");
    test::expect_error([] { Mask(1, 1, {std::numeric_limits<float>::quiet_NaN()}); }, "is nan; allowed: finite");
    test::expect_error([] { Mask(1, 3, {0, std::numeric_limits<float>::infinity(), 0}); }, "row 2, column 1 is inf");
    test::expect_error([] { masks::unsharp(3, 0.0, -1.0); }, "unsharp amount -1");
    test::expect_error([] { masks::gaussian(3, 1e-200); }, "gaussian sigma 1e-200 is too small; allowed: a finite sigma");
    test::expect_error([] { masks::gaussian(3, std::numeric_limits<double>::infinity()); }, "gaussian sigma inf is not finite");
}

TEST(MaskFactories, NamesTellMasksApart) {
    EXPECT_EQ(masks::gaussian(9).name(), "gauss9");
    EXPECT_EQ(masks::gaussian(9, 2.5).name(), "gauss9_s2.5");
    EXPECT_EQ(masks::unsharp(5, 1.0, 1.5).name(), "unsharp5_s1_a1.5");
    EXPECT_EQ(masks::unsharp(5, 0.0, 1.0).name(), "unsharp5_a1");
    EXPECT_EQ(masks::box(3).name(), "box3");
}

TEST(MaskParser, ReadsRowsCommentsCommasAndDivisor) {
    const Mask m = parse_mask("# a gaussian\n1 2 1\n2, 4, 2\n\t1\t2\t1\r\ndivisor: 16\n", "g.txt");
    EXPECT_EQ(m.width(), 3);
    EXPECT_EQ(m.height(), 3);
    EXPECT_FLOAT_EQ(m.at(1, 1), 0.25f);
    EXPECT_FLOAT_EQ(m.at(0, 2), 1.0f / 16);
    const Mask commented = parse_mask("+1 -2 +1   # a second derivative\n", "c.txt");
    EXPECT_EQ(commented.coefficients(), (std::vector<float>{1, -2, 1}));
    const Mask tall = parse_mask("1\n-2.5\n1e-1\n", "tall");
    EXPECT_EQ(tall.width(), 1);
    EXPECT_EQ(tall.height(), 3);
    EXPECT_FLOAT_EQ(tall.at(0, 1), -2.5f);
}

TEST(MaskParser, RejectsEachBadInputWithItsOwnMessage) {
    test::expect_error([] { parse_mask("1 2 1\n1 2\n1 2 1\n", "ragged.txt"); },
                       "ragged.txt:2: this row has 2 numbers but the first row has 3");
    test::expect_error([] { parse_mask("1 1\n1 1\n", "even.txt"); }, "even.txt: the mask is 2x2");
    test::expect_error([] { parse_mask("1 nan 1\n", "nan.txt"); }, "nan.txt:1: 'nan' is not a finite number");
    test::expect_error([] { parse_mask("1 inf 1\n", "inf.txt"); }, "'inf' is not a finite number");
    test::expect_error([] { parse_mask("1 1e39 1\n", "big.txt"); }, "'1e39' is not a finite number");
    test::expect_error([] { parse_mask("1 x 1\n", "word.txt"); }, "word.txt:1: 'x' is not a number");
    test::expect_error([] { parse_mask("# nothing\n\n", "empty.txt"); }, "empty.txt: the mask has no rows");
    test::expect_error([] { parse_mask("1\ndivisor: 0\n", "zero.txt"); }, "zero.txt:2: bad divisor line");
    test::expect_error([] { parse_mask("1\ndivisor: 2\ndivisor: 2\n", "two.txt"); }, "a second divisor line");
    std::string wide;
    for (int i = 0; i < 33; ++i) wide += "1 ";
    test::expect_error([&] { parse_mask(wide, "wide.txt"); }, "the mask is 33x1");
    test::expect_error([] { read_mask_file("/nonexistent/klab/mask.txt"); }, "cannot open mask file");
}

TEST(MaskParser, ReadsAFile) {
    const auto path = std::filesystem::temp_directory_path() / ("klab_test_mask_" + std::to_string(getpid()) + ".txt");
    {
        std::ofstream f(path);
        f << "0 1 0\n1 -4 1\n0 1 0\n";
    }
    const Mask m = read_mask_file(path);
    std::filesystem::remove(path);
    EXPECT_EQ(m.coefficients(), masks::laplacian().coefficients());
}

TEST(Separability, GaussianAndBoxAreSeparableLaplacianIsNot) {
    for (int k : {1, 3, 5, 9, 31}) {
        const auto g = separate(masks::gaussian(k));
        ASSERT_TRUE(g.has_value()) << "gaussian " << k;
        const std::vector<double> g1 = gaussian_kernel_1d(k);
        for (int i = 0; i < k; ++i) {
            EXPECT_NEAR(g->row[i], g1[i], 1e-6);
            EXPECT_NEAR(g->column[i], g1[i], 1e-6);
        }
        const auto b = separate(masks::box(k));
        ASSERT_TRUE(b.has_value()) << "box " << k;
        EXPECT_NEAR(b->row[0] * b->column[0], 1.0 / (k * k), 1e-7);
    }
    EXPECT_FALSE(separate(masks::laplacian()).has_value());
    EXPECT_FALSE(separate(masks::sharpen()).has_value());
    EXPECT_FALSE(separate(masks::emboss()).has_value());
    EXPECT_TRUE(separate(masks::sobel_x()).has_value());  // (1 2 1)^T (-1 0 1)
}

TEST(Separability, FactorsReproduceANonSquareMask) {
    const std::vector<float> row = {1, -2, 3, 0.5f, 4, -1, 2};  // 7 wide
    const std::vector<float> column = {2, 1, -3};               // 3 high
    std::vector<float> c;
    for (float cy : column)
        for (float rx : row) c.push_back(cy * rx);
    const Mask m(7, 3, c);
    const auto f = separate(m);
    ASSERT_TRUE(f.has_value());
    for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 7; ++i) EXPECT_NEAR(f->column[j] * f->row[i], m.at(i, j), 1e-5);
    // A small disturbance beyond the tolerance makes it non-separable.
    c[10] += 0.01f;
    EXPECT_FALSE(separate(Mask(7, 3, c)).has_value());
}

// The study's general mask: the same coefficients on every machine (a fixed generator, not the
// standard library's distributions), summing to 1, with negative taps, and not separable.
TEST(MaskFactories, RandomMaskIsFixedGeneralAndNamedBySideAndSeed) {
    const Mask m = masks::random(9);
    EXPECT_EQ(m.name(), "random9");
    EXPECT_EQ(masks::random(9, 2).name(), "random9_s2");
    EXPECT_EQ(m.coefficients(), masks::random(9).coefficients());
    EXPECT_NE(m.coefficients(), masks::random(9, 2).coefficients());
    double sum = 0.0;
    int negative = 0;
    for (float c : m.coefficients()) {
        sum += c;
        negative += c < 0.0f;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_GT(negative, 0);
    EXPECT_FALSE(separate(m).has_value());
    // Pinned values: a change of generator changes the study's problem and must show here.
    EXPECT_FLOAT_EQ(m.at(0, 0), masks::random(9).coefficients().front());
    EXPECT_NEAR(m.at(0, 0), 0.0156766884, 1e-7);
    EXPECT_NEAR(m.at(8, 8), 0.0224710088, 1e-7);
}

TEST(FilterSpec, ParsesEveryFamily) {
    EXPECT_EQ(parse_filter_spec("box:5").mask->width(), 5);
    EXPECT_EQ(parse_filter_spec("gaussian:7").mask->coefficients(), masks::gaussian(7).coefficients());
    EXPECT_EQ(parse_filter_spec("gaussian:7:2.5").mask->coefficients(), masks::gaussian(7, 2.5).coefficients());
    EXPECT_EQ(parse_filter_spec("sharpen").mask->coefficients(), masks::sharpen().coefficients());
    EXPECT_EQ(parse_filter_spec("laplacian").mask->coefficients(), masks::laplacian().coefficients());
    EXPECT_EQ(parse_filter_spec("emboss").mask->coefficients(), masks::emboss().coefficients());
    EXPECT_EQ(parse_filter_spec("unsharp:5:1.0:0.5").mask->coefficients(), masks::unsharp(5, 1.0, 0.5).coefficients());
    EXPECT_EQ(parse_filter_spec("random:9").mask->coefficients(), masks::random(9).coefficients());
    EXPECT_EQ(parse_filter_spec("random:5:7").mask->coefficients(), masks::random(5, 7).coefficients());
    EXPECT_EQ(parse_filter_spec("sobel").operation, Operation::sobel);
    EXPECT_EQ(parse_filter_spec("integral").operation, Operation::integral);
}

TEST(FilterSpec, RejectsBadSpecsNamingThemAndTheAllowedForms) {
    test::expect_error([] { parse_filter_spec("blur:3"); }, "unknown filter 'blur:3'; allowed: box:K");
    test::expect_error([] { parse_filter_spec("box"); }, "filter 'box' has 0 argument(s)");
    test::expect_error([] { parse_filter_spec("box:x"); }, "size 'x' is not a number");
    test::expect_error([] { parse_filter_spec("box:4"); }, "box size 4 is not supported");
    test::expect_error([] { parse_filter_spec("sobel:3"); }, "filter 'sobel:3' has 1 argument(s)");
    test::expect_error([] { parse_filter_spec("mask:"); }, "names no file");
    test::expect_error([] { parse_filter_spec("random:8"); }, "random mask side 8; allowed: an odd side from 1 to 31");
    test::expect_error([] { parse_filter_spec("random:9:-1"); }, "seed '-1' is negative; allowed: a seed from 0 to 4294967295");
    // A number too large for its type is out of range, not "not a number".
    test::expect_error([] { parse_filter_spec("box:99999999999999"); }, "size '99999999999999' is out of range; allowed: box:K");
    test::expect_error([] { parse_filter_spec("random:5:4294967296"); },
                       "seed '4294967296' is out of range; allowed: a seed from 0 to 4294967295");
    test::expect_error([] { parse_filter_spec("gaussian:5:1e999"); }, "value '1e999' is out of range");
    test::expect_error([] { parse_filter_spec("unsharp:5:1:1e308"); },
                       "unsharp amount 1e+308 is not supported; allowed: a finite amount from 0 to 1000");
    test::expect_error([] { parse_filter_spec("unsharp:5:1:1000.5"); }, "unsharp amount 1000.5 is not supported");
    test::expect_error([] { parse_filter_spec("random"); }, "filter 'random' has 0 argument(s)");
}

}  // namespace
}  // namespace klab
