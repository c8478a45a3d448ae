// The CPU reference's grayscale, Sobel, integral and layout conversion on hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/numeric.hpp"
#include "harness/reference/reference.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

ImageU8 image_from(int w, int h, int (*f)(int, int)) {
    ImageU8 image(w, h, 1);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) image.at(x, y, 0) = static_cast<std::uint8_t>(f(x, y));
    return image;
}

TEST(Grayscale, Bt709OfPrimaries) {
    EXPECT_EQ(gray_bt709(255, 0, 0), 54);   // 54.213
    EXPECT_EQ(gray_bt709(0, 255, 0), 182);  // 182.376
    EXPECT_EQ(gray_bt709(0, 0, 255), 18);   // 18.411
    EXPECT_EQ(gray_bt709(255, 255, 255), 255);
    EXPECT_EQ(gray_bt709(0, 0, 0), 0);
}

// Every RGB triple against an independent oracle: the exact quotient in double, rounded half to
// even by nearbyint (a tie k + 0.5 is exact in double; a non-tie is at least 1e-4 away from one).
TEST(Grayscale, ExhaustiveAgainstDoubleOracleIncludingTies) {
    int ties = 0;
    for (int r = 0; r < 256; ++r)
        for (int g = 0; g < 256; ++g)
            for (int b = 0; b < 256; ++b) {
                const int scaled = 2126 * r + 7152 * g + 722 * b;
                const auto expected = static_cast<int>(std::nearbyint(scaled / 10000.0));
                ties += scaled % 10000 == 5000;
                if (gray_bt709(static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(g), static_cast<std::uint8_t>(b)) != expected) {
                    FAIL() << r << "," << g << "," << b;
                }
            }
    EXPECT_GT(ties, 0);  // the ties exist and are covered
}

TEST(Grayscale, ImageConversion) {
    ImageU8 rgba(2, 1, 4);
    rgba.at(0, 0, 0) = 255;
    rgba.at(0, 0, 3) = 9;  // alpha is ignored
    rgba.at(1, 0, 1) = 255;
    EXPECT_EQ(test::values(reference::grayscale(rgba)), (std::vector<int>{54, 182}));
    const ImageU8 gray = test::gray_image(2, 1, {5, 6});
    EXPECT_TRUE(same_pixels(reference::grayscale(gray), gray));
}

TEST(Sobel, VerticalStepEdge) {
    // Columns 0..3 are 0, 4..7 are 50: Gx = (50 - 0) * (1 + 2 + 1) = 200 on columns 3 and 4.
    const ImageU8 in = image_from(8, 5, [](int x, int) { return x >= 4 ? 50 : 0; });
    const auto g = reference::sobel_gradients(in, {BorderMode::replicate, 0});
    for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 8; ++x) {
            EXPECT_EQ(g.gx.at(x, y, 0), (x == 3 || x == 4) ? 200 : 0) << x << "," << y;
            EXPECT_EQ(g.gy.at(x, y, 0), 0);
        }
    const ImageU8 magnitude = reference::sobel(in, {BorderMode::replicate, 0});
    EXPECT_EQ(magnitude.at(3, 2, 0), 200);
    EXPECT_EQ(magnitude.at(0, 2, 0), 0);
    // A taller step saturates: 100 * 4 = 400 -> 255.
    const ImageU8 tall = image_from(8, 5, [](int x, int) { return x >= 4 ? 100 : 0; });
    EXPECT_EQ(reference::sobel(tall, {BorderMode::replicate, 0}).at(4, 1, 0), 255);
}

TEST(Sobel, HorizontalStepEdge) {
    const ImageU8 in = image_from(5, 8, [](int, int y) { return y >= 4 ? 30 : 0; });
    const auto g = reference::sobel_gradients(in, {BorderMode::mirror, 0});
    for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 5; ++x) {
            EXPECT_EQ(g.gy.at(x, y, 0), (y == 3 || y == 4) ? 120 : 0) << x << "," << y;
            EXPECT_EQ(g.gx.at(x, y, 0), 0);
        }
}

TEST(Sobel, DiagonalStepEdge) {
    // 30 strictly above the diagonal (x > y). At (3,3): Gx = in(4,2) + 2 in(4,3) = 90,
    // Gy = -2 in(3,2) - in(4,2) = -90, magnitude sqrt(2) * 90 = 127.28 -> 127.
    const ImageU8 in = image_from(7, 7, [](int x, int y) { return x > y ? 30 : 0; });
    const auto g = reference::sobel_gradients(in, {BorderMode::replicate, 0});
    EXPECT_EQ(g.gx.at(3, 3, 0), 90);
    EXPECT_EQ(g.gy.at(3, 3, 0), -90);
    EXPECT_EQ(reference::sobel(in, {BorderMode::replicate, 0}).at(3, 3, 0), 127);
    // Far from the edge: flat.
    EXPECT_EQ(reference::sobel(in, {BorderMode::replicate, 0}).at(6, 0, 0), 0);
    // A diagonal ramp 10 (x + y): Gx = Gy = 80 inside, magnitude 113.14 -> 113.
    const ImageU8 ramp = image_from(6, 6, [](int x, int y) { return 10 * (x + y); });
    EXPECT_EQ(reference::sobel(ramp, {BorderMode::replicate, 0}).at(2, 3, 0), 113);
}

TEST(Sobel, RgbInputGoesThroughBt709AndConstantBorderCounts) {
    ImageU8 rgb(3, 3, 3);
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 3; ++x) rgb.at(x, y, 1) = 100;  // gray = round(71.52) = 72 everywhere
    const auto g = reference::sobel_gradients(reference::grayscale(rgb), {BorderMode::constant, 0});
    // At the left edge the constant 0 border gives Gx = 72 * 4 at the middle row.
    EXPECT_EQ(g.gx.at(0, 1, 0), 288);
    EXPECT_EQ(g.gx.at(1, 1, 0), 0);
    test::expect_error([&] { reference::sobel_gradients(rgb, {}); }, "Sobel gradients of a 3-channel image");
}

template <class T>
HostImage<std::uint64_t> brute_force_integral(const ImageU8& in) {
    HostImage<std::uint64_t> out(in.width(), in.height(), in.channels(), in.layout());
    for (int y = 0; y < in.height(); ++y)
        for (int x = 0; x < in.width(); ++x)
            for (int c = 0; c < in.channels(); ++c) {
                std::uint64_t sum = 0;
                for (int yy = 0; yy <= y; ++yy)
                    for (int xx = 0; xx <= x; ++xx) sum += in.at(xx, yy, c);
                out.at(x, y, c) = sum;
            }
    return out;
}

TEST(Integral, MatchesBruteForceSums) {
    for (int channels : {1, 3, 4})
        for (Layout layout : {Layout::aos, Layout::soa}) {
            const ImageU8 in = test::random_image({19, 11, channels, layout}, 40 + channels);
            const auto expected = brute_force_integral<std::uint64_t>(in);
            const auto u32 = reference::integral<std::uint32_t>(in);
            const auto u64 = reference::integral<std::uint64_t>(in);
            EXPECT_EQ(test::values_of(u64), test::values_of(expected));
            EXPECT_EQ(test::values_of(u32), test::values_of(expected));
            EXPECT_EQ(u32.layout(), layout);
        }
    const ImageU8 tiny = test::gray_image(2, 2, {1, 2, 3, 4});
    EXPECT_EQ(test::values_of(reference::integral<std::uint32_t>(tiny)), (std::vector<long long>{1, 3, 4, 10}));
}

// 255 * W * H < 2^32 holds up to W*H = 16843009 = 257 * 65537, where the sum is exactly 2^32 - 1.
TEST(Integral, TypeSwitchesToU64AtTheOverflowBoundary) {
    EXPECT_EQ(reference::integral_type(257, 65537), reference::IntegralType::u32);
    EXPECT_EQ(reference::integral_type(65537, 257), reference::IntegralType::u32);
    EXPECT_EQ(reference::integral_type(1, 16843009), reference::IntegralType::u32);
    EXPECT_EQ(reference::integral_type(1, 16843010), reference::IntegralType::u64);
    EXPECT_EQ(reference::integral_type(258, 65537), reference::IntegralType::u64);
    EXPECT_EQ(reference::integral_type(3840, 2160), reference::IntegralType::u32);  // 4K
    EXPECT_EQ(reference::integral_type(7680, 4320), reference::IntegralType::u64);  // 8K: 33.2 M pixels
    EXPECT_EQ(reference::integral_type(65536, 65536), reference::IntegralType::u64);
}

TEST(Integral, AllWhiteImagesOnBothSidesOfTheBoundaryStayExact) {
    ImageU8 largest_u32(257, 65537, 1);
    std::fill(largest_u32.data(), largest_u32.data() + largest_u32.size_bytes(), std::uint8_t{255});
    const auto u32 = reference::integral<std::uint32_t>(largest_u32, 2);
    EXPECT_EQ(u32.at(256, 65536, 0), 4294967295u);
    EXPECT_EQ(u32.at(0, 65536, 0), 255u * 65537u);

    ImageU8 first_u64(258, 65537, 1);
    std::fill(first_u64.data(), first_u64.data() + first_u64.size_bytes(), std::uint8_t{255});
    test::expect_error([&] { reference::integral<std::uint32_t>(first_u64); }, "u32 while 255*W*H < 2^32");
    const auto u64 = reference::integral<std::uint64_t>(first_u64, 2);
    EXPECT_EQ(u64.at(257, 65536, 0), 255ull * 258 * 65537);  // 4311744030 > 2^32
}

TEST(Layout, AosSoaRoundTripAndAddressing) {
    const ImageU8 aos = test::random_image({5, 3, 3, Layout::aos}, 1);
    const ImageU8 soa = reference::to_layout(aos, Layout::soa);
    EXPECT_EQ(soa.layout(), Layout::soa);
    // Plane c, row y starts at (c * height + y) * pitch.
    EXPECT_EQ(soa.data()[(2 * 3 + 1) * 5 + 4], aos.at(4, 1, 2));
    EXPECT_EQ(aos.data()[(1 * 5 + 4) * 3 + 2], aos.at(4, 1, 2));
    EXPECT_TRUE(same_pixels(reference::to_layout(soa, Layout::aos), aos));
    EXPECT_FALSE(same_pixels(soa, aos));  // shapes differ in layout
}

}  // namespace
}  // namespace klab
