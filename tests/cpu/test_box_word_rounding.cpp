// kernels/box_word_rounding.hpp: conv.box_warp_ring (boxes up to 9 wide) and conv.box_pixel_lanes's
// paired row sums (kernels/box_pixel_rows.hpp, boxes up to 15 wide) round the high half of a word of
// two box sums by a multiply-high of the whole word. Checked here for every normalized box of area
// up to 256 (odd sides up to 31; kMaxPairedArea) and every sum such a box can give: byte 2 of the
// whole word's multiply-high is the high sum's output byte whatever the low half holds, and byte 0
// of the low half's is the low sum's.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "harness/mask.hpp"
#include "kernels/box_sums.hpp"
#include "kernels/box_word_rounding.hpp"

namespace klab {
namespace {

// The normalized box's exact rounding of a sum with its half added: floor((S + (n - 1) / 2) / n).
std::uint32_t expected_byte(std::uint32_t sum_and_half, std::uint32_t area) { return sum_and_half / area; }

TEST(BoxWordRounding, EveryBoxOfAreaUpTo256AndEverySum) {
    int boxes = 0;
    for (int width = 1; width <= Mask::kMaxSide; width += 2) {
        for (int height = 1; height <= Mask::kMaxSide; height += 2) {
            const int area = width * height;
            if (area < 2 || area > 256) continue;
            const Mask box(width, height, std::vector<float>(static_cast<std::size_t>(area), static_cast<float>(1.0 / area)));
            const box_sums::Rounding rounding = box_sums::rounding_of(box);
            ASSERT_TRUE(rounding.normalized) << width << "x" << height;
            const auto n = static_cast<std::uint32_t>(area);
            const std::uint32_t largest = 255u * n + rounding.half;  // a sum of 255s and its half
            ASSERT_LT(largest, 1u << 16) << width << "x" << height;
            ++boxes;
            for (std::uint32_t x = 0; x <= largest; ++x) {
                // The low half: alone (the mask clears the high one, whatever it holds).
                const box_word::HalfQuotients low = box_word::half_quotients((largest << 16) | x, rounding.inverse);
                ASSERT_EQ(low.low & 0xffu, expected_byte(x, n)) << width << "x" << height << " low sum " << x;
                // The high half, with the least and the greatest low half beside it: the quotient
                // grows with the low half, so these two bound every other.
                for (const std::uint32_t beside : {0u, largest}) {
                    const box_word::HalfQuotients q = box_word::half_quotients((x << 16) | beside, rounding.inverse);
                    ASSERT_EQ((q.high >> 16) & 0xffu, expected_byte(x, n))
                        << width << "x" << height << " high sum " << x << " beside " << beside;
                }
            }
        }
    }
    EXPECT_EQ(boxes, 153);  // the boxes of odd sides up to 31 and area up to 256, 1x1 aside (77 of them up to 9 wide)
}

}  // namespace
}  // namespace klab
