// Image I/O: round trips for every format and channel count it supports (from AoS, SoA and padded
// sources), the committed fixtures in data/fixtures, and each malformed or refused case with its
// own message. No failure may leave an output file (or a temporary file) behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/io/image_io.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;  // "...\x00..."s keeps embedded NULs
using Bytes = std::vector<std::uint8_t>;

const fs::path kFixtures = fs::path(KLAB_SOURCE_DIR) / "data" / "fixtures";

Bytes read_bytes(const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    EXPECT_TRUE(file.good()) << "cannot open " << path;
    return Bytes(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& path, const Bytes& bytes) {
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(file.good()) << "cannot write " << path;
}

Bytes text_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

// The names in `dir`, sorted; what a failed write must leave unchanged.
std::vector<std::string> entries(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// The klab::Error message of `action`, or a test failure if it throws none.
std::string error_message(const std::function<void()>& action) {
    try {
        action();
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected a klab::Error, nothing was thrown";
    return {};
}

void expect_contains(const std::string& message, const std::string& fragment) {
    EXPECT_NE(message.find(fragment), std::string::npos)
        << "message \"" << message << "\" lacks \"" << fragment << "\"";
}

// Largest |a - b| over all samples; the shapes must match (b is compared through at()).
int max_difference(const ImageU8& a, const ImageU8& b) {
    EXPECT_EQ(a.width(), b.width());
    EXPECT_EQ(a.height(), b.height());
    EXPECT_EQ(a.channels(), b.channels());
    if (a.width() != b.width() || a.height() != b.height() || a.channels() != b.channels()) return 256;
    int worst = 0;
    for (int y = 0; y < a.height(); ++y)
        for (int x = 0; x < a.width(); ++x)
            for (int c = 0; c < a.channels(); ++c) worst = std::max(worst, std::abs(a.at(x, y, c) - b.at(x, y, c)));
    return worst;
}

// A smooth pattern (gradients, no noise) for the lossy JPEG round trips.
ImageU8 smooth_image(ImageShape shape, std::size_t pitch_bytes = 0) {
    ImageU8 image(shape, pitch_bytes);
    for (int y = 0; y < shape.height; ++y)
        for (int x = 0; x < shape.width; ++x)
            for (int c = 0; c < shape.channels; ++c)
                image.at(x, y, c) = static_cast<std::uint8_t>(std::min(255, 20 + 3 * x + 2 * y + 40 * c));
    return image;
}

// Fills every byte of row padding with 0xAB, so that a writer that copied padding would be caught.
void poison_padding(ImageU8& image) {
    const std::size_t row_bytes = static_cast<std::size_t>(image.shape().row_elements());
    const int planes = image.layout() == Layout::soa ? image.channels() : 1;
    for (int c = 0; c < planes; ++c)
        for (int y = 0; y < image.height(); ++y)
            for (std::size_t i = row_bytes; i < image.pitch_bytes(); ++i) image.row(y, c)[i] = 0xAB;
}

// CRC-32 as PNG chunks use it (ISO 3309), for patching a PNG header in a test.
std::uint32_t crc32(const std::uint8_t* data, std::size_t size) {
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < size; ++i) {
        crc ^= data[i];
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return crc ^ 0xFFFFFFFFu;
}

void put_be32(Bytes& bytes, std::size_t at, std::uint32_t value) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<std::uint8_t>(value >> (24 - 8 * i));
}

// A fresh directory per test under the system temp directory, removed afterwards.
class IoTempDir : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        std::string name = fmt::format("klab-io-{}-{}-{}", ::getpid(), info->test_suite_name(), info->name());
        std::replace(name.begin(), name.end(), '/', '_');  // parameterised test names hold '/'
        dir_ = fs::temp_directory_path() / name;
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

    // Writes `bytes` as `file_name` in dir_, then expects read_image followed by write_image (what
    // the CLI does) to fail with a message naming the input and containing `fragment`, and to leave
    // no output file and nothing else behind.
    void expect_read_fails(const std::string& file_name, const Bytes& bytes, const std::string& fragment) {
        const fs::path input = dir_ / file_name;
        write_bytes(input, bytes);
        expect_existing_input_fails(input, fragment);
    }
    void expect_existing_input_fails(const fs::path& input, const std::string& fragment) {
        const std::vector<std::string> before = entries(dir_);
        const fs::path output = dir_ / "out.png";
        const std::string message = error_message([&] { io::write_image(output, io::read_image(input)); });
        expect_contains(message, input.string());
        expect_contains(message, fragment);
        EXPECT_FALSE(fs::exists(output));
        EXPECT_EQ(entries(dir_), before);
    }

    fs::path dir_;
};

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

// ---- malformed and refused inputs ----------------------------------------------------------

using IoMalformed = IoTempDir;

TEST_F(IoMalformed, TruncatedPng) {
    Bytes png = io::encode_image(test::random_image({16, 16, 3}, 7), io::ImageFormat::png, "x");
    png.resize(png.size() / 2);
    expect_read_fails("truncated.png", png, "the PNG data is corrupt or truncated (libpng: ");
    // Cut inside the header chunk: begin_read fails rather than finish_read.
    png.resize(20);
    expect_read_fails("header.png", png, "the PNG data is corrupt or truncated");
}

TEST_F(IoMalformed, CorruptPngChecksum) {
    Bytes png = io::encode_image(test::random_image({4, 4, 1}, 7), io::ImageFormat::png, "x");
    png[29] ^= 0xFF;  // inside IHDR's CRC
    expect_read_fails("crc.png", png, "the PNG data is corrupt or truncated (libpng: ");
}

TEST_F(IoMalformed, PngHeaderBeyondTheSizeLimit) {
    Bytes png = io::encode_image(test::random_image({1, 1, 1}, 7), io::ImageFormat::png, "x");
    // IHDR: length at 8, type at 12, width at 16, height at 20, CRC (over type + data) at 29.
    put_be32(png, 16, 200000);
    put_be32(png, 20, 200000);
    put_be32(png, 29, crc32(png.data() + 12, 17));
    expect_read_fails("huge.png", png,
                      "image size 200000x200000 exceeds klab's size limit; allowed: width and height up to 131072 "
                      "and at most 1073741824 pixels in all");
}

TEST_F(IoMalformed, SixteenBitPng) {
    const fs::path input = dir_ / "gray16.png";
    fs::copy_file(kFixtures / "gray16_2x2.png", input);
    expect_existing_input_fails(
        input, "16-bit samples are not supported; allowed: 8-bit gray, gray+alpha, RGB, RGBA or palette PNG");
}

TEST_F(IoMalformed, TruncatedJpeg) {
    Bytes jpeg = io::encode_image(smooth_image({32, 32, 3}), io::ImageFormat::jpeg, "x");
    jpeg.resize(jpeg.size() / 2);
    expect_read_fails("truncated.jpg", jpeg,
                      "the JPEG data is corrupt or truncated (libjpeg: Premature end of JPEG file)");
    jpeg.resize(40);  // inside the quantisation tables
    expect_read_fails("header.jpg", jpeg, "the JPEG data is corrupt or truncated (libjpeg: ");
}

TEST_F(IoMalformed, JpegHeaderBeyondTheSizeLimit) {
    Bytes jpeg = io::encode_image(smooth_image({8, 8, 1}), io::ImageFormat::jpeg, "x");
    // SOF0: FF C0, length (2), precision (1), height (2), width (2).
    std::size_t sof = 2;
    while (sof + 1 < jpeg.size() && !(jpeg[sof] == 0xFF && jpeg[sof + 1] == 0xC0)) ++sof;
    ASSERT_LT(sof + 8, jpeg.size());
    jpeg[sof + 5] = 0xFD, jpeg[sof + 6] = 0xE8;  // height 65000
    jpeg[sof + 7] = 0xFD, jpeg[sof + 8] = 0xE8;  // width 65000
    expect_read_fails("huge.jpg", jpeg, "image size 65000x65000 exceeds klab's size limit");
}

TEST_F(IoMalformed, CmykJpeg) {
    const fs::path input = dir_ / "cmyk.jpg";
    fs::copy_file(kFixtures / "cmyk_8x8.jpg", input);
    expect_existing_input_fails(input, "CMYK JPEG is not supported; allowed: gray or RGB (YCbCr) JPEG");
}

TEST_F(IoMalformed, P6WithTooFewBytes) {
    expect_read_fails("short.ppm", text_bytes("P6\n2 2\n255\n12345"),
                      "the P6 pixel data is truncated: 2x2 RGB needs 12 bytes, the file has 5");
    expect_read_fails("none.pgm", text_bytes("P5\n3 2\n255"),
                      "the P5 pixel data is truncated: 3x2 gray needs 6 bytes, the file has 0");
    expect_read_fails("short.pgm", text_bytes("P2\n2 2\n255\n1 2 3\n"),
                      "the P2 pixel data is truncated: 2x2 gray needs 4 samples, the file has 3");
}

TEST_F(IoMalformed, PnmHeaderClaimingAMillionByAMillion) {
    const std::string limit = "image size 1000000x1000000 exceeds klab's size limit; allowed:";
    expect_read_fails("huge.pgm", text_bytes("P5\n1000000 1000000\n255\n\x01\x02\x03"), limit);
    expect_read_fails("huge.ppm", text_bytes("P6\n1000000 1000000\n255\n\x01\x02\x03"), limit);
    // Numbers too long for any integer type saturate instead of wrapping into a small size.
    expect_read_fails("overflow.pgm", text_bytes("P5\n18446744073709551617 1\n255\n\x01"),
                      "exceeds klab's size limit");
}

TEST_F(IoMalformed, PnmWithSixteenBitMaxval) {
    expect_read_fails("deep.pgm", text_bytes("P5\n2 1\n65535\n\x01\x02\x03\x04"),
                      "16-bit PNM samples (maxval 65535) are not supported; allowed: maxval 1 to 255 (8-bit samples)");
    expect_read_fails("zero.pgm", text_bytes("P5\n2 1\n0\n\x01\x02"),
                      "PNM maxval 0 is invalid; allowed: maxval 1 to 255");
}

TEST_F(IoMalformed, PnmSyntaxErrors) {
    expect_read_fails("sample.pgm", text_bytes("P5\n2 1\n100\n\x32\xC8"s),
                      "sample value 200 at pixel (1, 0) exceeds the maxval 100");
    expect_read_fails("token.ppm", text_bytes("P3\n1 1\n255\n1 x 3\n"),
                      "the P3 pixel data has 'x' where sample 1 should be; allowed: decimal numbers from 0 to maxval "
                      "separated by whitespace");
    // A header claiming the largest image over a 3-sample raster fails before allocating 3 GiB.
    expect_read_fails("lying.ppm", text_bytes("P3\n32768 32768\n255\n1 2 3\n"),
                      "the P3 pixel data is truncated: 32768x32768 RGB needs 3221225472 samples, the file has 3");
    expect_read_fails("nosize.pgm", text_bytes("P5\n# only a comment\n"),
                      "the PNM file ends where the width should be");
    expect_read_fails("magic.pgm", text_bytes("P5x 1 1 255\n\x01"), "the PNM magic P5 is followed by 'x'");
    expect_read_fails("gap.pgm", text_bytes("P5\n1 1\n255#c\n\x01"),
                      "the PNM maxval is followed by '#'; allowed: exactly one whitespace byte");
    expect_read_fails("empty.pgm", text_bytes("P5\n0 4\n255\n"), "image size 0x4 is empty");
}

TEST_F(IoMalformed, UnknownFormat) {
    expect_read_fails("image.gif", text_bytes("GIF89a\x01\x00\x01\x00"s),
                      "unknown image format (first bytes 47 49 46 38 39 61 01 00); allowed: PNG, JPEG, or PNM (P2, P3, "
                      "P5, P6)");
    expect_read_fails("bitmap.pbm", text_bytes("P4\n1 1\n\x80"s), "unknown image format (first bytes 50 34 0A");
}

TEST_F(IoMalformed, EmptyFile) {
    expect_read_fails("empty.png", {}, "the file is empty; allowed: PNG, JPEG, or PNM");
}

TEST_F(IoMalformed, NonexistentInput) {
    const fs::path missing = dir_ / "missing.png";
    const std::string message = error_message([&] { io::read_image(missing); });
    expect_contains(message, fmt::format("cannot open '{}' for reading: No such file or directory", missing.string()));
    EXPECT_TRUE(entries(dir_).empty());
}

TEST_F(IoMalformed, InputIsADirectory) {
    fs::create_directory(dir_ / "sub.png");
    expect_contains(error_message([&] { io::read_image(dir_ / "sub.png"); }),
                    fmt::format("cannot read '{}': Is a directory", (dir_ / "sub.png").string()));
}

// ---- writing -------------------------------------------------------------------------------

using IoWrite = IoTempDir;

TEST_F(IoWrite, IntoADirectoryThatDoesNotExist) {
    const fs::path missing_dir = dir_ / "no-such-dir";
    const fs::path output = missing_dir / "out.png";
    const std::string message = error_message([&] { io::write_image(output, test::random_image({4, 4, 3}, 1)); });
    expect_contains(message, fmt::format("cannot write '{}': directory '{}' does not exist; allowed: a path in an "
                                         "existing, writable directory",
                                         output.string(), missing_dir.string()));
    EXPECT_FALSE(fs::exists(missing_dir));
    EXPECT_TRUE(entries(dir_).empty()) << "a temporary file was left";
}

TEST_F(IoWrite, UnderAPathWhoseParentIsAFile) {
    write_bytes(dir_ / "file", text_bytes("x"));
    const fs::path output = dir_ / "file" / "out.png";
    expect_contains(error_message([&] { io::write_image(output, test::random_image({4, 4, 3}, 1)); }),
                    fmt::format("cannot write '{}': ", output.string()));
    EXPECT_EQ(entries(dir_), std::vector<std::string>{"file"});
}

// Writes an unstorable image to `file_name`, first where no file exists, then over an existing
// file whose bytes must survive untouched.
void expect_write_refused(const fs::path& dir, const std::string& file_name, const ImageU8& image,
                          const io::WriteOptions& options, const std::string& fragment) {
    const fs::path output = dir / file_name;
    std::string message = error_message([&] { io::write_image(output, image, options); });
    expect_contains(message, output.string());
    expect_contains(message, fragment);
    EXPECT_FALSE(fs::exists(output));
    EXPECT_TRUE(entries(dir).empty());

    const Bytes original = text_bytes("previous contents, not an image");
    write_bytes(output, original);
    message = error_message([&] { io::write_image(output, image, options); });
    expect_contains(message, fragment);
    EXPECT_EQ(read_bytes(output), original);
    EXPECT_EQ(entries(dir), std::vector<std::string>{file_name});
    fs::remove(output);
}

TEST_F(IoWrite, FourChannelsToJpegIsRefused) {
    const ImageU8 rgba = test::random_image({5, 3, 4}, 2);
    for (const char* name : {"out.jpg", "out.JPEG"}) {
        expect_write_refused(
            dir_, name, rgba, {},
            "JPEG cannot store an image with 4 channels (RGBA); allowed: 1 (gray) or 3 (RGB) channels");
    }
}

TEST_F(IoWrite, FourChannelsToPnmIsRefused) {
    const ImageU8 rgba = test::random_image({5, 3, 4, Layout::soa}, 2);
    for (const char* name : {"out.pgm", "out.ppm", "out.pnm"}) {
        expect_write_refused(dir_, name, rgba, {},
                             "PNM cannot store an image with 4 channels (RGBA); allowed: 1 (gray, written as P5) or 3 "
                             "(RGB, written as P6) channels");
    }
}

TEST_F(IoWrite, JpegQualityOutOfRangeIsRefused) {
    const ImageU8 gray = test::random_image({5, 3, 1}, 2);
    io::WriteOptions options;
    options.jpeg_quality = 0;
    expect_write_refused(dir_, "q.jpg", gray, options, "JPEG quality 0 is out of range; allowed: 1 to 100");
    options.jpeg_quality = 101;
    expect_write_refused(dir_, "q.jpg", gray, options, "JPEG quality 101 is out of range; allowed: 1 to 100");
    options.jpeg_quality = 1;  // the ends of the range work
    io::write_image(dir_ / "q1.jpg", gray, options);
    EXPECT_EQ(io::read_image(dir_ / "q1.jpg").shape(), gray.shape());
}

TEST_F(IoWrite, UnknownExtensionAndEmptyImageAreRefused) {
    expect_write_refused(dir_, "out.gif", test::random_image({2, 2, 3}, 2), {},
                         "has the unknown image file extension '.gif'; allowed: .png, .jpg, .jpeg, .pgm, .ppm, .pnm");
    expect_write_refused(dir_, "out.png", ImageU8{}, {}, "the image to write holds no pixels");
}

TEST_F(IoWrite, ReplacesAnExistingFileAndLeavesNoTemporaryFile) {
    const fs::path output = dir_ / "out.png";
    write_bytes(output, text_bytes("old"));
    const ImageU8 image = test::random_image({6, 5, 3}, 3);
    io::write_image(output, image);
    EXPECT_TRUE(same_pixels(io::read_image(output), image));
    EXPECT_EQ(entries(dir_), std::vector<std::string>{"out.png"});
}

TEST_F(IoWrite, NewFilesGetTheUmaskPermissions) {
    const mode_t mask = ::umask(0);  // read the umask: set it and put it back
    ::umask(mask);
    io::write_file_atomically(dir_ / "plain.bin", text_bytes("abc"));
    EXPECT_EQ(read_bytes(dir_ / "plain.bin"), text_bytes("abc"));
    EXPECT_EQ(fs::status(dir_ / "plain.bin").permissions(), static_cast<fs::perms>(0666 & ~mask));
}

TEST_F(IoWrite, OntoADirectoryFailsBeforeWritingAnything) {
    fs::create_directory(dir_ / "taken.png");
    const fs::path output = dir_ / "taken.png";
    expect_contains(error_message([&] { io::write_image(output, test::random_image({2, 2, 1}, 4)); }),
                    fmt::format("cannot write '{}': it is an existing directory; allowed: a file path", output.string()));
    EXPECT_EQ(entries(dir_), std::vector<std::string>{"taken.png"});
    EXPECT_TRUE(fs::is_directory(output));
}

TEST_F(IoWrite, APathWithoutAFileName) {
    expect_contains(error_message([&] { io::write_file_atomically(dir_ / "", text_bytes("abc")); }),
                    "the path does not end in a file name");
    EXPECT_TRUE(entries(dir_).empty());
}

}  // namespace
}  // namespace klab
