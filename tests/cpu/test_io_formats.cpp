// Image I/O round trips for every format and channel count it supports (from AoS, SoA and padded
// sources), what each codec writes and reads exactly, and the committed fixtures in data/fixtures.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/cpu/io_test_util.hpp"

namespace klab {
namespace {

using namespace io_fixtures;
using namespace std::string_literals;  // "...\x00..."s keeps embedded NULs

// ---- round trips ---------------------------------------------------------------------------

enum class Source { aos, aos_padded, soa, soa_padded };

struct RoundTripCase {
    std::string extension;  // picks the format
    int channels;
    Source source;
    int max_error;  // 0: lossless
    int quality = 95;
};

std::string source_name(Source source) {
    switch (source) {
        case Source::aos: return "aos";
        case Source::aos_padded: return "aos_padded";
        case Source::soa: return "soa";
        case Source::soa_padded: return "soa_padded";
    }
    return "?";
}

// Readable parameters in failure messages.
void PrintTo(const RoundTripCase& c, std::ostream* out) {
    *out << c.extension << " " << c.channels << " channels from " << source_name(c.source) << ", max error "
         << c.max_error << ", quality " << c.quality;
}

class IoRoundTrip : public IoTempDir, public ::testing::WithParamInterface<RoundTripCase> {};

TEST_P(IoRoundTrip, WritesAndReadsBackTheSamePixels) {
    const RoundTripCase& param = GetParam();
    // 37x23: no multiple of JPEG's 8/16-pixel blocks, so partial blocks are covered too.
    const bool soa = param.source == Source::soa || param.source == Source::soa_padded;
    const bool padded = param.source == Source::aos_padded || param.source == Source::soa_padded;
    const ImageShape shape{37, 23, param.channels, soa ? Layout::soa : Layout::aos};
    const std::size_t pitch = padded ? static_cast<std::size_t>(shape.row_elements()) + 13 : 0;
    ImageU8 source = param.max_error == 0 ? test::random_image(shape, 1234, pitch) : smooth_image(shape, pitch);
    poison_padding(source);

    const fs::path path = dir_ / ("image" + param.extension);
    io::WriteOptions options;
    options.jpeg_quality = param.quality;
    io::write_image(path, source, options);
    EXPECT_EQ(entries(dir_), std::vector<std::string>{path.filename().string()}) << "a temporary file was left";

    const ImageU8 back = io::read_image(path);
    EXPECT_EQ(back.layout(), Layout::aos);
    EXPECT_EQ(back.pitch_bytes(), static_cast<std::size_t>(shape.width * shape.channels));
    const int error = max_difference(back, source);
    EXPECT_LE(error, param.max_error);

    // The memory-level API gives the same bytes as the file.
    const Bytes encoded = io::encode_image(source, io::format_from_extension(path), "memory", options);
    EXPECT_EQ(encoded, read_bytes(path));
    EXPECT_TRUE(same_pixels(io::decode_image(encoded, "memory"), back));
}

std::vector<RoundTripCase> round_trip_cases() {
    std::vector<RoundTripCase> cases;
    for (Source source : {Source::aos, Source::aos_padded, Source::soa, Source::soa_padded}) {
        for (int channels : {1, 3, 4}) cases.push_back({".png", channels, source, 0});
        cases.push_back({".pgm", 1, source, 0});
        cases.push_back({".ppm", 3, source, 0});
        cases.push_back({".pnm", 1, source, 0});
        cases.push_back({".pnm", 3, source, 0});
        // Measured with libjpeg-turbo 2.1.5 on the smooth pattern: gray q100 comes back exact, RGB
        // q95 (4:2:0 chroma) off by at most 2. The bounds leave room for other libjpeg builds.
        cases.push_back({".jpg", 1, source, 1, 100});
        cases.push_back({".jpeg", 3, source, 4, 95});
    }
    return cases;
}

// The prefix starts with Io too, so that --gtest_filter='Io*' selects these.
INSTANTIATE_TEST_SUITE_P(IoAllFormats, IoRoundTrip, ::testing::ValuesIn(round_trip_cases()),
                         [](const ::testing::TestParamInfo<RoundTripCase>& case_info) {
                             const RoundTripCase& c = case_info.param;
                             return fmt::format("{}_{}ch_{}_{}", c.extension.substr(1), c.channels,
                                                source_name(c.source), case_info.index);
                         });

using IoCodec = IoTempDir;

TEST_F(IoCodec, PnmWritesTheExactBinaryForm) {
    ImageU8 gray = test::gray_image(3, 1, {0, 128, 255});
    EXPECT_EQ(io::encode_image(gray, io::ImageFormat::pnm, "g"), text_bytes("P5\n3 1\n255\n\x00\x80\xFF"s));
    ImageU8 rgb(1, 2, 3, Layout::soa);
    for (int c = 0; c < 3; ++c) {
        rgb.at(0, 0, c) = static_cast<std::uint8_t>(1 + c);
        rgb.at(0, 1, c) = 'A';
    }
    EXPECT_EQ(io::encode_image(rgb, io::ImageFormat::pnm, "c"), text_bytes("P6\n1 2\n255\n\x01\x02\x03"s + "AAA"));
}

TEST_F(IoCodec, PnmHeaderCommentsAndTheOneByteAfterMaxval) {
    // Comments between any header tokens; the raster's first byte is '\n' (10) and must not be
    // taken as part of the header's whitespace.
    const Bytes p5 = text_bytes("P5 # gray\n# size follows\n2 # width\n1\n# maxval\n255\n"s + "\n\x20");
    EXPECT_EQ(test::values(io::decode_image(p5, "p5")), (std::vector<int>{10, 32}));
    // Bytes after the raster (a second image, say) are ignored.
    const Bytes p6 = text_bytes("P6\n1 1\n255 \x07\x08\x09 trailing"s);
    EXPECT_EQ(test::values(io::decode_image(p6, "p6")), (std::vector<int>{7, 8, 9}));
}

TEST_F(IoCodec, PnmScalesSamplesBelowMaxval255WithRounding) {
    // maxval 2: 1 -> 255/2 = 127.5, rounded up to 128.
    EXPECT_EQ(test::values(io::decode_image(text_bytes("P2\n3 1\n2\n0 1 2\n"), "p2")), (std::vector<int>{0, 128, 255}));
    // maxval 1 (binary): 0 -> 0, 1 -> 255.
    EXPECT_EQ(test::values(io::decode_image(text_bytes("P5\n2 1\n1\n\x01\x00"s), "p5")), (std::vector<int>{255, 0}));
    // maxval 15: 7 -> 119.0, 8 -> 136.0 exactly.
    EXPECT_EQ(test::values(io::decode_image(text_bytes("P3\n1 1\n15\n7 8 15"), "p3")),
              (std::vector<int>{119, 136, 255}));
}

TEST_F(IoCodec, FormatFromExtensionIgnoresCase) {
    EXPECT_EQ(io::format_from_extension("a/b.png"), io::ImageFormat::png);
    EXPECT_EQ(io::format_from_extension("b.PNG"), io::ImageFormat::png);
    EXPECT_EQ(io::format_from_extension("b.jpg"), io::ImageFormat::jpeg);
    EXPECT_EQ(io::format_from_extension("b.JpEg"), io::ImageFormat::jpeg);
    EXPECT_EQ(io::format_from_extension("b.pgm"), io::ImageFormat::pnm);
    EXPECT_EQ(io::format_from_extension("b.PPM"), io::ImageFormat::pnm);
    EXPECT_EQ(io::format_from_extension("b.pnm"), io::ImageFormat::pnm);
    test::expect_error([] { io::format_from_extension("out.gif"); },
                       "'out.gif' has the unknown image file extension '.gif'; allowed: .png, .jpg, .jpeg, .pgm, "
                       ".ppm, .pnm (any case)");
    test::expect_error([] { io::format_from_extension("dir.png/out"); }, "'dir.png/out' has no file extension");
}

// ---- fixtures ------------------------------------------------------------------------------

using IoFixtures = IoTempDir;

TEST_F(IoFixtures, Seed000PgmHoldsTheGoldenExample) {
    const ImageU8 image = io::read_image(kFixtures / "seed000_3x3.pgm");
    EXPECT_EQ(image.shape(), (ImageShape{3, 3, 1, Layout::aos}));
    EXPECT_EQ(test::values(image), (std::vector<int>{165, 95, 215, 222, 144, 199, 255, 172, 83}));
}

TEST_F(IoFixtures, Rgb4x2PpmAndPngHoldTheSamePixels) {
    const ImageU8 ppm = io::read_image(kFixtures / "rgb_4x2.ppm");
    const ImageU8 png = io::read_image(kFixtures / "rgb_4x2.png");
    EXPECT_EQ(ppm.shape(), (ImageShape{4, 2, 3, Layout::aos}));
    for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 4; ++x)
            for (int c = 0; c < 3; ++c) EXPECT_EQ(ppm.at(x, y, c), 100 * c + 10 * y + x) << x << "," << y << "," << c;
    EXPECT_TRUE(same_pixels(ppm, png));
}

TEST_F(IoFixtures, Rgba2x2PngKeepsColourUnderTransparentAlpha) {
    const ImageU8 image = io::read_image(kFixtures / "rgba_2x2.png");
    EXPECT_EQ(image.shape(), (ImageShape{2, 2, 4, Layout::aos}));
    EXPECT_EQ(test::values(image), (std::vector<int>{255, 0, 0, 255, 0, 255, 0, 128, 0, 0, 255, 0, 10, 20, 30, 40}));
}

TEST_F(IoFixtures, GrayAlphaPngBecomesRgba) {
    const ImageU8 image = io::read_image(kFixtures / "gray_alpha_2x1.png");
    EXPECT_EQ(image.shape(), (ImageShape{2, 1, 4, Layout::aos}));
    EXPECT_EQ(test::values(image), (std::vector<int>{50, 50, 50, 255, 200, 200, 200, 100}));
}

TEST_F(IoFixtures, PalettePngExpandsToRgb) {
    const ImageU8 image = io::read_image(kFixtures / "palette_3x1.png");
    EXPECT_EQ(image.shape(), (ImageShape{3, 1, 3, Layout::aos}));
    EXPECT_EQ(test::values(image), (std::vector<int>{255, 0, 0, 0, 128, 255, 7, 8, 9}));
}

// A PNG that declares a colour space (here gAMA 1.0, i.e. linear) still reads back the stored
// values: libpng's simplified API would otherwise turn 64 into 136.
TEST_F(IoFixtures, PngGammaAndColourChunksDoNotChangeTheStoredValues) {
    const ImageU8 source = test::gray_image(4, 1, {0, 64, 128, 200});
    const Bytes plain = io::encode_image(source, io::ImageFormat::png, "x");
    // Insert gAMA (gamma 1.0 = 100000) and an sRGB chunk right after IHDR (8 + 25 bytes in).
    Bytes chunks;
    const auto add_chunk = [&](const char* type, const Bytes& data) {
        Bytes chunk(8 + data.size() + 4);
        put_be32(chunk, 0, static_cast<std::uint32_t>(data.size()));
        std::copy(type, type + 4, chunk.begin() + 4);
        std::copy(data.begin(), data.end(), chunk.begin() + 8);
        put_be32(chunk, 8 + data.size(), crc32(chunk.data() + 4, 4 + data.size()));
        chunks.insert(chunks.end(), chunk.begin(), chunk.end());
    };
    add_chunk("gAMA", Bytes{0x00, 0x01, 0x86, 0xA0});
    add_chunk("cHRM", Bytes(32, 0x01));
    Bytes tagged(plain.begin(), plain.begin() + 33);
    tagged.insert(tagged.end(), chunks.begin(), chunks.end());
    tagged.insert(tagged.end(), plain.begin() + 33, plain.end());
    write_bytes(dir_ / "gamma.png", tagged);
    EXPECT_EQ(test::values(io::read_image(dir_ / "gamma.png")), (std::vector<int>{0, 64, 128, 200}));
}

TEST_F(IoFixtures, GrayJpegQuality100IsWithinOneOfItsSource) {
    const ImageU8 image = io::read_image(kFixtures / "gray_8x8.jpg");
    EXPECT_EQ(image.shape(), (ImageShape{8, 8, 1, Layout::aos}));
    for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x) EXPECT_NEAR(image.at(x, y, 0), 16 + 24 * x + 4 * y, 1) << x << "," << y;
}

}  // namespace
}  // namespace klab
