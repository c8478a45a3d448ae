// Hostile image files (issue 17, fuzz/README.md): a header that declares far more pixels than the
// file can hold is refused before the pixels are allocated (a 109-byte PNG would otherwise take
// 900 MB), and a valid progressive JPEG of 1136 scans before it keeps the decoder busy.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "harness/io/image_io.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

std::vector<std::uint8_t> seed(const std::string& name) {
    std::ifstream in(std::filesystem::path(KLAB_SOURCE_DIR) / "data" / "fuzz" / name, std::ios::binary);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(HostileImages, APngTooShortForItsHeaderIsRefusedBeforeItsPixelsAreAllocated) {
    // 30000x30000 8-bit gray: 900 MB of samples need at least 900,000,000 / 1032 bytes of deflate data.
    const std::vector<std::uint8_t> bytes = seed("png/huge_header_tiny_data.png");
    ASSERT_EQ(bytes.size(), 109u);
    test::expect_error([&] { io::decode_image(bytes, "huge.png"); },
                       "huge.png: the PNG data is truncated: a 30000x30000 image needs at least 872093 bytes of compressed "
                       "data, the file has 52; allowed: a complete, valid PNG file");
}

TEST(HostileImages, AJpegTooShortForItsHeaderIsRefusedBeforeItsPixelsAreAllocated) {
    // 30000x30000: 3750 x 3750 luminance blocks of at least one bit each.
    test::expect_error([&] { io::decode_image(seed("jpeg/huge_header_short_file.jpg"), "huge.jpg"); },
                       "huge.jpg: the JPEG data is truncated: a 30000x30000 image needs at least 1757812 bytes, the file "
                       "has 839; allowed: a complete, valid JPEG file");
}

TEST(HostileImages, AJpegOfMoreThan500ScansIsRefused) {
    test::expect_error([&] { io::decode_image(seed("jpeg/many_scans.jpg"), "scans.jpg"); },
                       "scans.jpg: the JPEG has more than 500 scans; allowed: at most 500 scans");
}

TEST(HostileImages, AnArithmeticCodedJpegIsRefused) {
    // Its decoder would fill a cut-short file with zeros without a warning.
    test::expect_error([&] { io::decode_image(seed("jpeg/rgb_17x9_arithmetic.jpg"), "a.jpg"); },
                       "a.jpg: an arithmetic-coded JPEG, which klab does not decode: its decoder fills data cut short with "
                       "zeros and gives no warning, so a damaged file could not be told from a whole one; allowed: a "
                       "Huffman-coded (baseline or progressive) JPEG, gray or RGB");
}

TEST(HostileImages, TheSameKindsOfFilesAtTheirTrueSizeAreRead) {
    EXPECT_EQ(io::decode_image(seed("jpeg/rgb_17x9_progressive.jpg"), "p.jpg").width(), 17);
    EXPECT_EQ(io::decode_image(seed("png/rgb_5x5_adam7.png"), "i.png").width(), 5);
    EXPECT_EQ(io::decode_image(seed("png/gray_1bit_9x3.png"), "g.png").width(), 9);
}

}  // namespace
}  // namespace klab
