// AoS <-> SoA conversion on the device equals the reference's to_layout(), for every channel
// count, awkward sizes and pitches, and refuses mismatched shapes and in-place conversion.
#include <gtest/gtest.h>


#include "harness/device_layout.hpp"
#include "harness/reference/reference.hpp"
#include "tests/common/test_util.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

class DeviceLayout : public test::GpuTest {};

TEST_F(DeviceLayout, ConvertsBothWaysLikeTheReference) {
    std::uint32_t seed = 1;
    for (auto [w, h] : {std::pair{1, 1}, std::pair{17, 13}, std::pair{33, 1}, std::pair{641, 479}}) {
        for (int channels : {1, 3, 4}) {
            for (Layout from : {Layout::aos, Layout::soa}) {
                const Layout to = from == Layout::aos ? Layout::soa : Layout::aos;
                const ImageU8 host = test::random_image(ImageShape{w, h, channels, from}, seed++);
                const DeviceImage<std::uint8_t> device(host);
                const DeviceImage<std::uint8_t> converted = to_layout(device, to);
                EXPECT_EQ(converted.shape().layout, to);
                EXPECT_TRUE(same_pixels(converted.download(), reference::to_layout(host, to)))
                    << w << "x" << h << "x" << channels << " " << to_string(from);
                // An odd pitch on the way back.
                ImageShape back_shape = host.shape();
                DeviceImage<std::uint8_t> back(back_shape, static_cast<std::size_t>(back_shape.row_elements()) + 7);
                convert_layout(converted.view(), back.view());
                EXPECT_TRUE(same_pixels(back.download(), host));
            }
        }
    }
}

TEST_F(DeviceLayout, RefusesMismatchedShapesAndInPlace) {
    DeviceImage<std::uint8_t> a(ImageShape{8, 4, 3, Layout::aos});
    DeviceImage<std::uint8_t> b(ImageShape{8, 5, 3, Layout::soa});
    EXPECT_THROW(convert_layout(a.view(), b.view()), Error);
    DeviceImage<std::uint8_t> c(ImageShape{8, 4, 4, Layout::soa});
    EXPECT_THROW(convert_layout(a.view(), c.view()), Error);
    EXPECT_THROW(convert_layout(a.view(), a.view()), Error);
}

}  // namespace
}  // namespace klab
