// The CPU reference convolution on hand-computed cases, and against a naive twin written
// straight from the definition (one border_index() call per tap, no tables).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "harness/numeric.hpp"
#include "harness/reference/reference.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

constexpr BorderMode kModes[] = {BorderMode::constant, BorderMode::replicate, BorderMode::mirror,
                                 BorderMode::reflect, BorderMode::wrap};

ImageU8 naive_convolve(const ImageU8& in, const Mask& m, Border border) {
    ImageU8 out(in.shape());
    for (int y = 0; y < in.height(); ++y)
        for (int x = 0; x < in.width(); ++x)
            for (int c = 0; c < in.channels(); ++c) {
                double acc = 0.0;
                for (int j = 0; j < m.height(); ++j)
                    for (int i = 0; i < m.width(); ++i) {
                        const int sx = border_index(x + i - m.radius_x(), in.width(), border.mode);
                        const int sy = border_index(y + j - m.radius_y(), in.height(), border.mode);
                        const double v = (sx < 0 || sy < 0) ? border.value : in.at(sx, sy, c);
                        acc += static_cast<double>(m.at(i, j)) * v;
                    }
                out.at(x, y, c) = saturate_round_u8(acc);
            }
    return out;
}

Mask random_mask(int w, int h, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<float> c;
    for (int n = 0; n < w * h; ++n) c.push_back(static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 1000.0f / (w * h) * 4.0f);
    return Mask(w, h, c, "random");
}

TEST(ReferenceConvolve, IdentityMaskCopiesTheImage) {
    const Mask delta3(3, 3, {0, 0, 0, 0, 1, 0, 0, 0, 0});
    for (int channels : {1, 3, 4}) {
        for (Layout layout : {Layout::aos, Layout::soa}) {
            const ImageU8 in = test::random_image({13, 7, channels, layout}, 11);
            for (BorderMode mode : kModes) {
                EXPECT_TRUE(same_pixels(reference::convolve(in, delta3, {mode, 9}), in));
                EXPECT_TRUE(same_pixels(reference::convolve(in, Mask(1, 1, {1.0f}), {mode, 9}), in));
            }
        }
    }
}

TEST(ReferenceConvolve, BoxOnAConstantImageIsConstant) {
    ImageU8 in(9, 6, 3);
    for (int y = 0; y < 6; ++y)
        for (int x = 0; x < 9; ++x)
            for (int c = 0; c < 3; ++c) in.at(x, y, c) = static_cast<std::uint8_t>(40 + 50 * c);
    for (BorderMode mode : {BorderMode::replicate, BorderMode::mirror, BorderMode::reflect, BorderMode::wrap}) {
        for (int k : {3, 5, 9, 15}) {
            EXPECT_TRUE(same_pixels(reference::convolve(in, masks::box(k), {mode, 0}), in)) << k;
        }
    }
    // Constant border: the interior stays, a corner mixes in the border value (box 3: 4 of 9 inside).
    const ImageU8 gray = test::gray_image(5, 5, std::vector<int>(25, 90));
    const ImageU8 out = reference::convolve(gray, masks::box(3), {BorderMode::constant, 0});
    EXPECT_EQ(out.at(2, 2, 0), 90);
    EXPECT_EQ(out.at(0, 0, 0), 40);  // 90*4/9 = 40
    EXPECT_EQ(out.at(2, 0, 0), 60);  // 90*6/9
}

// A single bright pixel reproduces the mask, mirrored: out(cx + rx - i, cy + ry - j) = m(i, j) * v.
// This pins the orientation: the mask is applied unflipped (correlation).
TEST(ReferenceConvolve, DeltaImageShowsTheMaskMirrored) {
    std::vector<float> c;
    for (int n = 1; n <= 15; ++n) c.push_back(static_cast<float>(n) / 100.0f);  // 5 wide, 3 high
    const Mask m(5, 3, c);
    ImageU8 in(11, 9, 1);
    const int cx = 5, cy = 4;
    in.at(cx, cy, 0) = 100;
    const ImageU8 out = reference::convolve(in, m, {BorderMode::constant, 0});
    for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 5; ++i) EXPECT_EQ(out.at(cx + 2 - i, cy + 1 - j, 0), j * 5 + i + 1) << i << "," << j;
    // Everything else is zero.
    int nonzero = 0;
    for (int v : test::values(out)) nonzero += v != 0;
    EXPECT_EQ(nonzero, 15);
}

// A mask with a single 1 at (i, j) reads in(x + i - 1, y + j - 1): every corner of the output then
// equals the padded image, for every border mode (pad() is pinned by the seed's tables).
TEST(ReferenceConvolve, EveryBorderAtEveryCornerMatchesThePaddedImage) {
    const ImageU8 in = test::gray_image(3, 3, {165, 95, 215, 222, 144, 199, 255, 172, 83});
    for (BorderMode mode : kModes) {
        const Border border{mode, 17};
        const ImageU8 padded = reference::pad(in, 1, 1, border);
        for (int j = 0; j < 3; ++j)
            for (int i = 0; i < 3; ++i) {
                std::vector<float> c(9, 0.0f);
                c[j * 3 + i] = 1.0f;
                const ImageU8 out = reference::convolve(in, Mask(3, 3, c), border);
                for (int y = 0; y < 3; ++y)
                    for (int x = 0; x < 3; ++x)
                        EXPECT_EQ(out.at(x, y, 0), padded.at(x + i, y + j, 0))
                            << to_string(border) << " tap " << i << "," << j << " at " << x << "," << y;
            }
    }
}

TEST(ReferenceConvolve, TinyImagesAndMasksLargerThanTheImage) {
    const ImageU8 one = test::gray_image(1, 1, {77});
    for (BorderMode mode : {BorderMode::replicate, BorderMode::mirror, BorderMode::reflect, BorderMode::wrap}) {
        // Every tap reads the single pixel, and the box sums to 1.
        EXPECT_EQ(reference::convolve(one, masks::box(31), {mode, 0}).at(0, 0, 0), 77) << to_string(mode);
    }
    EXPECT_EQ(reference::convolve(one, masks::box(3), {BorderMode::constant, 0}).at(0, 0, 0), 9);  // 77/9 = 8.56
    const ImageShape shapes[] = {{1, 7, 1, Layout::aos}, {7, 1, 3, Layout::aos}, {2, 3, 4, Layout::soa},
                                 {5, 5, 3, Layout::aos}, {1, 1, 3, Layout::soa}};
    const Mask masks_to_try[] = {masks::gaussian(9), random_mask(31, 31, 5), random_mask(3, 7, 6), masks::sharpen()};
    for (const ImageShape& shape : shapes) {
        const ImageU8 in = test::random_image(shape, 3);
        for (const Mask& m : masks_to_try)
            for (BorderMode mode : kModes) {
                const Border border{mode, 200};
                EXPECT_TRUE(same_pixels(reference::convolve(in, m, border), naive_convolve(in, m, border)))
                    << to_string(shape) << " " << m.name() << " " << to_string(border);
            }
    }
}

TEST(ReferenceConvolve, MatchesTheNaiveTwinOnRandomImages) {
    const Mask masks_to_try[] = {masks::gaussian(5), masks::unsharp(7, 1.2, 0.8), masks::emboss(), random_mask(9, 3, 8)};
    for (int channels : {1, 3, 4})
        for (Layout layout : {Layout::aos, Layout::soa}) {
            const ImageU8 in = test::random_image({17, 13, channels, layout}, 100 + channels);
            for (const Mask& m : masks_to_try)
                for (BorderMode mode : kModes)
                    EXPECT_TRUE(same_pixels(reference::convolve(in, m, {mode, 31}), naive_convolve(in, m, {mode, 31})))
                        << channels << " " << to_string(layout) << " " << m.name() << " " << to_string(mode);
        }
}

TEST(ReferenceConvolve, RoundsHalfToEvenAndSaturates) {
    const ImageU8 in = test::gray_image(8, 1, {1, 3, 5, 7, 2, 0, 255, 254});
    const ImageU8 half = reference::convolve(in, Mask(1, 1, {0.5f}), {});
    // 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, 3.5 -> 4, 1 -> 1, 0, 127.5 -> 128, 127
    EXPECT_EQ(test::values(half), (std::vector<int>{0, 2, 2, 4, 1, 0, 128, 127}));
    const ImageU8 doubled = reference::convolve(in, Mask(1, 1, {2.0f}), {});
    EXPECT_EQ(test::values(doubled), (std::vector<int>{2, 6, 10, 14, 4, 0, 255, 255}));
    const ImageU8 negated = reference::convolve(in, Mask(1, 1, {-1.0f}), {});
    EXPECT_EQ(test::values(negated), (std::vector<int>(8, 0)));
    // A tie reached by a sum: (1 + 2) / 2 with a 3-tap mask (0.5 0.5 0) -> 1.5 -> 2; (2+3)/2 = 2.5 -> 2.
    const ImageU8 pairs = test::gray_image(3, 1, {1, 2, 3});
    EXPECT_EQ(test::values(reference::convolve(pairs, Mask(3, 1, {0.5f, 0.5f, 0.0f}), {BorderMode::replicate, 0})),
              (std::vector<int>{1, 2, 2}));  // (1+1)/2, (1+2)/2 = 1.5 -> 2, (2+3)/2 = 2.5 -> 2
}

TEST(ReferenceConvolve, PitchAndLayoutDoNotChangeTheResult) {
    const ImageU8 tight = test::random_image({33, 31, 3, Layout::aos}, 9);
    ImageU8 pitched({33, 31, 3, Layout::aos}, 33 * 3 + 29);
    for (int y = 0; y < 31; ++y)
        for (int x = 0; x < 33; ++x)
            for (int c = 0; c < 3; ++c) pitched.at(x, y, c) = tight.at(x, y, c);
    const Mask m = masks::gaussian(7);
    const ImageU8 expected = reference::convolve(tight, m, {BorderMode::mirror, 0});
    ImageU8 pitched_out({33, 31, 3, Layout::aos}, 33 * 3 + 7);
    reference::convolve(pitched.view(), pitched_out.view(), m, {BorderMode::mirror, 0});
    EXPECT_TRUE(same_pixels(pitched_out, expected));
    const ImageU8 soa = reference::convolve(reference::to_layout(tight, Layout::soa), m, {BorderMode::mirror, 0});
    EXPECT_TRUE(same_pixels(reference::to_layout(soa, Layout::aos), expected));
}

TEST(ReferenceConvolve, RefusesMismatchedShapes) {
    const ImageU8 in(4, 4, 3);
    ImageU8 out(4, 4, 1);
    test::expect_error([&] { reference::convolve(in.view(), out.view(), masks::box(3), {}); },
                       "convolve from a 4x4x3 aos image into a 4x4x1 aos image");
    ImageU8 same(4, 4, 3);
    test::expect_error([&] { reference::convolve(same.view(), same.view(), masks::box(3), {}); }, "convolve in place");
}

}  // namespace
}  // namespace klab
