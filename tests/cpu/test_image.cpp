// The image model: shapes, pitch, addressing, validation.
#include <gtest/gtest.h>

#include "harness/image.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

TEST(Image, ShapesPitchAndAddressing) {
    ImageU8 aos(5, 2, 3, Layout::aos, 20);
    EXPECT_EQ(aos.pitch_bytes(), 20u);
    EXPECT_EQ(aos.size_bytes(), 40u);
    aos.at(4, 1, 2) = 7;
    EXPECT_EQ(aos.data()[20 + 4 * 3 + 2], 7);
    ImageU8 soa(5, 2, 3, Layout::soa, 8);
    EXPECT_EQ(soa.size_bytes(), 8u * 6);  // 3 planes of 2 rows
    soa.at(4, 1, 2) = 9;
    EXPECT_EQ(soa.data()[(2 * 2 + 1) * 8 + 4], 9);
    HostImage<std::uint32_t> wide(3, 3, 1, Layout::aos, 16);
    wide.at(2, 2, 0) = 123456;
    EXPECT_EQ(wide.row(2)[2], 123456u);
    const ImageView<const std::uint32_t> view = wide.view();
    EXPECT_EQ(view.at(2, 2, 0), 123456u);
}

TEST(Image, RejectsBadShapesWithTheirOwnMessage) {
    test::expect_error([] { ImageU8(0, 5, 1); }, "image size 0x5 is empty");
    test::expect_error([] { ImageU8(5, 5, 2); }, "image has 2 channels; allowed: 1 (gray), 3 (RGB), 4 (RGBA)");
    test::expect_error([] { ImageU8(5, 5, 3, Layout::aos, 14); }, "row pitch of 14 bytes");
    test::expect_error([] { HostImage<std::uint32_t>(5, 5, 1, Layout::aos, 22); }, "a multiple of 4 that is at least 20");
    test::expect_error([] { parse_layout("planar"); }, "unknown layout 'planar'");
    // Refused before any allocation: 2^30 pixels is the limit.
    test::expect_error([] { ImageU8(40000, 40000, 3); }, "image size 40000x40000 exceeds klab's size limit");
    test::expect_error([] { ImageU8(200000, 1, 1); }, "width and height up to 131072");
}

TEST(Image, SamePixelsIgnoresPaddingButNotValues) {
    ImageU8 a(4, 2, 1, Layout::aos, 4);
    ImageU8 b(4, 2, 1, Layout::aos, 12);
    b.data()[5] = 99;  // padding byte of b's first row
    EXPECT_TRUE(same_pixels(a, b));
    b.at(3, 1, 0) = 1;
    EXPECT_FALSE(same_pixels(a, b));
}

}  // namespace
}  // namespace klab
