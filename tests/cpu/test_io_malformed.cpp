// Image I/O on malformed and refused inputs: each case with its own message naming the input, and
// no output file (or temporary file) left behind.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cpu/io_test_util.hpp"

namespace klab {
namespace {

using namespace io_fixtures;
using namespace std::string_literals;  // "...\x00..."s keeps embedded NULs

// ---- malformed and refused inputs ----------------------------------------------------------

using IoMalformed = IoTempDir;

const std::string kIdat = "IDAT";

TEST_F(IoMalformed, TruncatedPng) {
    Bytes png = io::encode_image(test::random_image({16, 16, 3}, 7), io::ImageFormat::png, "x");
    // The first IDAT chunk: its length, then its type.
    const std::size_t idat = static_cast<std::size_t>(std::search(png.begin(), png.end(), kIdat.begin(), kIdat.end()) - png.begin()) - 4;
    const std::size_t idat_length = (std::size_t{png[idat]} << 24) | (std::size_t{png[idat + 1]} << 16) |
                                    (std::size_t{png[idat + 2]} << 8) | png[idat + 3];
    png.resize(png.size() / 2);
    ASSERT_LT(idat + 8, png.size());
    expect_read_fails("truncated.png", png,
                      fmt::format("the PNG data is corrupt or truncated: chunk 'IDAT' at byte {} declares {} bytes of data, "
                                  "but the file ends {} bytes after its type; allowed: a complete, valid PNG file",
                                  idat, idat_length, png.size() - idat - 8));
    // Cut inside the header chunk.
    png.resize(20);
    expect_read_fails("header.png", png, "the PNG data is corrupt or truncated: chunk 'IHDR' at byte 8 declares 13 bytes");
    // Cut inside a chunk's length: libpng reports it.
    png.resize(10);
    expect_read_fails("length.png", png, "the PNG data is corrupt or truncated (libpng: ");
}

// fuzz/png found it: libpng allocates a text chunk's declared length before reading its data, so a
// tiny file declaring a 1.5 GB tEXt chunk cost 1.5 GB. It is refused before libpng sees it.
TEST_F(IoMalformed, PngChunkLongerThanTheFileIsRefusedBeforeLibpng) {
    const Bytes image = io::encode_image(test::random_image({3, 1, 1}, 7), io::ImageFormat::png, "x");
    Bytes png(image.begin(), image.begin() + 33);  // signature and IHDR
    const Bytes text = {0x5D, 0, 0, 0, 't', 'E', 'X', 't', 'P', 0x01, 0x0D, 0x00};
    png.insert(png.end(), text.begin(), text.end());
    png.insert(png.end(), image.begin() + 33, image.end());
    expect_read_fails("text.png", png,
                      fmt::format("the PNG data is corrupt or truncated: chunk 'tEXt' at byte 33 declares "
                                  "1560281088 bytes of data, but the file ends {} bytes after its type",
                                  png.size() - 41));
    // The same chunk type with a lying length after IEND is never read: the image decodes.
    Bytes trailing = image;
    trailing.insert(trailing.end(), text.begin(), text.end());
    write_bytes(dir_ / "trailing.png", trailing);
    EXPECT_EQ(max_difference(io::read_image(dir_ / "trailing.png"), test::random_image({3, 1, 1}, 7)), 0);
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

// libpng's simplified API would decode an index past the palette's end as black, silently.
// A valid JPEG of a kind libjpeg's 8-bit interface does not decode is named as such, not as corrupt:
// the frame header of an 8-bit file turned into one of 12-bit samples (SOF1, precision 12).
TEST_F(IoMalformed, TwelveBitJpegIsAnUnsupportedKindNotCorrupt) {
    Bytes jpeg = io::encode_image(smooth_image({16, 16, 3}), io::ImageFormat::jpeg, "x");
    std::size_t sof = 0;
    for (std::size_t i = 2; i + 4 < jpeg.size() && sof == 0; ++i) {
        if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) sof = i;
    }
    ASSERT_NE(sof, 0u) << "no SOF0 marker";
    jpeg[sof + 1] = 0xC1;  // extended sequential
    jpeg[sof + 4] = 12;    // sample precision (after the marker's two-byte length)
    expect_read_fails("twelve.jpg", jpeg,
                      "a kind of JPEG klab does not decode (libjpeg: Unsupported JPEG data precision 12); allowed: 8-bit baseline "
                      "or progressive JPEG, gray or RGB");
}

TEST_F(IoMalformed, PngPaletteIndexPastThePaletteIsRefused) {
    // palette_3x1.png holds indices 0 1 2 over a 3-entry PLTE at byte 46 (after IHDR and sRGB):
    // cut the palette to 2 entries, so that pixel (2, 0) names entry 2, which is not there.
    const Bytes fixture = read_bytes(kFixtures / "palette_3x1.png");
    const std::size_t plte = 46;
    ASSERT_EQ(std::string(fixture.begin() + plte + 4, fixture.begin() + plte + 8), "PLTE");
    Bytes png(fixture.begin(), fixture.begin() + plte);
    const std::size_t chunk = png.size();
    png.resize(chunk + 4);
    put_be32(png, chunk, 6);
    png.insert(png.end(), fixture.begin() + plte + 4, fixture.begin() + plte + 8 + 6);  // the type and 2 entries
    png.resize(png.size() + 4);
    put_be32(png, png.size() - 4, crc32(png.data() + chunk + 4, 10));
    png.insert(png.end(), fixture.begin() + plte + 4 + 4 + 9 + 4, fixture.end());  // after the old chunk (length, type, 9 bytes, CRC)
    expect_read_fails("short_palette.png", png,
                      "the PNG pixel (2, 0) is palette entry 2, but the palette has 2 entries; allowed: a valid PNG file");
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
    // Numbers too long for any integer type are refused as the file writes them, not wrapped into a
    // small size.
    expect_read_fails("overflow.pgm", text_bytes("P5\n18446744073709551617 1\n255\n\x01"),
                      "overflow.pgm: the PNM width 18446744073709551617 is too large; allowed: a width and height of at "
                      "most 2^30 pixels in all");
    expect_read_fails("long.pgm", text_bytes("P5\n1 " + std::string(40, '9') + "\n255\n\x01"),
                      "long.pgm: the PNM height 999999999999999999999999... (40 digits) is too large");
    expect_read_fails("maxval.pgm", text_bytes("P5\n1 1\n99999999999999\n\x01"),
                      "the PNM maxval 99999999999999 is too large; allowed: maxval 1 to 255");
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
    // The last sample too must end at whitespace, a comment or the file's end: "3.5" is no 3.
    expect_read_fails("fraction.ppm", text_bytes("P3\n1 1\n255\n1 2 3.5\n"),
                      "the P3 pixel data has '.' right after sample 2; allowed: decimal numbers from 0 to maxval "
                      "separated by whitespace");
    expect_read_fails("suffix.pgm", text_bytes("P2\n2 1\n255\n7 8x"), "the P2 pixel data has 'x' right after sample 1");
    expect_read_fails("comma.pgm", text_bytes("P2\n2 1\n255\n7 8,9\n"), "the P2 pixel data has ',' right after sample 1");
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

TEST_F(IoMalformed, WhatTheFileSystemRefusesKeepsItsErrnoWhatTheContentsBreakIsAPlainError) {
    // The Python binding raises the OSError subclass of that errno (FileNotFoundError, ...).
    EXPECT_EQ(file_system_errno([&] { io::read_image(dir_ / "missing.png"); }), ENOENT);
    EXPECT_EQ(file_system_errno([&] { io::read_image(dir_); }), EISDIR);
    write_bytes(dir_ / "text.png", text_bytes("not an image"));
    try {
        io::read_image(dir_ / "text.png");
        ADD_FAILURE() << "a text file was read as an image";
    } catch (const FileSystemError& e) {
        ADD_FAILURE() << "the file was read; its contents are not the file system's error: " << e.what();
    } catch (const Error& e) {
        expect_contains(e.what(), "unknown image format");
    }
}

TEST_F(IoMalformed, AsciiSamplesMayEndAtACommentOrTheFilesEnd) {
    for (const char* text : {"P2\n2 1\n255\n7 8", "P2\n2 1\n255\n7 8# a comment\n", "P2\n2 1\n255\n7\t8\n9 (what follows is ignored)\n"}) {
        const fs::path path = dir_ / "fine.pgm";
        write_bytes(path, text_bytes(text));
        const ImageU8 image = io::read_image(path);
        ASSERT_EQ(image.width(), 2) << text;
        EXPECT_EQ(image.at(0, 0, 0), 7) << text;
        EXPECT_EQ(image.at(1, 0, 0), 8) << text;
    }
}

// A file larger than klab reads is refused by its size, before anything is allocated for it (a
// sparse file: no disk space taken).
TEST_F(IoMalformed, AnImageFileLargerThanKlabReadsIsRefusedByItsSize) {
    const fs::path huge = dir_ / "huge.png";
    { std::ofstream(huge, std::ios::binary).put('\x89'); }
    fs::resize_file(huge, io::kMaxImageFileBytes + 1);
    expect_contains(error_message([&] { io::read_image(huge); }),
                    fmt::format("'{}' is {} bytes, more than the 4 GiB klab reads of such a file; allowed: an existing, "
                                "readable image file of at most 4 GiB (1 GiB from a pipe or device)",
                                huge.string(), io::kMaxImageFileBytes + 1));
}

// Text files (masks, --list, JSON files of results) through io::read_all: a directory says so, and
// a device that never ends is read only as far as the limit.
TEST_F(IoMalformed, TextReadsRefuseADirectoryAndStopAtTheirLimit) {
    std::ifstream directory(dir_);
    expect_contains(error_message([&] { io::read_all(directory, dir_, 1 << 20, "the list", "a text file"); }),
                    "the list is a directory; allowed: a text file");
    std::ifstream zeros("/dev/zero", std::ios::binary);
    ASSERT_TRUE(zeros) << "/dev/zero";
    expect_contains(error_message([&] { io::read_all(zeros, "/dev/zero", 1 << 20, "'/dev/zero'", "a text file"); }),
                    "'/dev/zero' holds more than the 1 MiB klab reads of such a file; allowed: a text file");
    const fs::path big = dir_ / "big.txt";
    { std::ofstream(big).put('1'); }
    fs::resize_file(big, (1 << 20) + 1);
    std::ifstream file(big);
    expect_contains(error_message([&] { io::read_all(file, big, 1 << 20, "'big.txt'", "a text file"); }),
                    "'big.txt' is 1048577 bytes, more than the 1 MiB klab reads of such a file");
    // Exactly the limit is read whole, from a file and (no size to check first) from a pipe.
    fs::resize_file(big, 1 << 20);
    std::ifstream whole(big);
    EXPECT_EQ(io::read_all(whole, big, 1 << 20, "'big.txt'", "a text file").size(), std::size_t{1} << 20);
    const fs::path fifo = dir_ / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << std::string(std::size_t{1} << 20, 'x'); });
    std::ifstream piped(fifo, std::ios::binary);
    const std::size_t read = io::read_all(piped, fifo, 1 << 20, "'fifo'", "a text file").size();
    writer.join();
    EXPECT_EQ(read, std::size_t{1} << 20);
}

TEST_F(IoMalformed, InputIsADirectory) {
    fs::create_directory(dir_ / "sub.png");
    expect_contains(error_message([&] { io::read_image(dir_ / "sub.png"); }),
                    fmt::format("cannot read '{}': Is a directory", (dir_ / "sub.png").string()));
}

}  // namespace
}  // namespace klab
