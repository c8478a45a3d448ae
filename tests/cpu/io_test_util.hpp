#pragma once
// What the image I/O tests share (test_io_formats.cpp, test_io_malformed.cpp, test_io_write.cpp):
// bytes of files, the committed fixtures' folder, image comparisons and test images, a PNG chunk's
// CRC, and IoTempDir, a fresh directory per test that checks a failed read leaves nothing behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
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

namespace klab::io_fixtures {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

inline const fs::path kFixtures = fs::path(KLAB_SOURCE_DIR) / "data" / "fixtures";

inline Bytes read_bytes(const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    EXPECT_TRUE(file.good()) << "cannot open " << path;
    return Bytes(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

inline void write_bytes(const fs::path& path, const Bytes& bytes) {
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(file.good()) << "cannot write " << path;
}

inline Bytes text_bytes(const std::string& text) { return Bytes(text.begin(), text.end()); }

// The names in `dir`, sorted; what a failed write must leave unchanged.
inline std::vector<std::string> entries(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// The klab::Error message of `action`, or a test failure if it throws none.
inline std::string error_message(const std::function<void()>& action) {
    try {
        action();
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected a klab::Error, nothing was thrown";
    return {};
}

// The errno that `action`'s klab::FileSystemError keeps; 0 (and a test failure) if it throws
// another klab::Error or nothing.
inline int file_system_errno(const std::function<void()>& action) {
    try {
        action();
    } catch (const FileSystemError& e) {
        return e.error_number();
    } catch (const Error& e) {
        ADD_FAILURE() << "expected a klab::FileSystemError, got a klab::Error: " << e.what();
        return 0;
    }
    ADD_FAILURE() << "expected a klab::FileSystemError, nothing was thrown";
    return 0;
}

inline void expect_contains(const std::string& message, const std::string& fragment) {
    EXPECT_NE(message.find(fragment), std::string::npos)
        << "message \"" << message << "\" lacks \"" << fragment << "\"";
}

// Largest |a - b| over all samples; the shapes must match (b is compared through at()).
inline int max_difference(const ImageU8& a, const ImageU8& b) {
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
inline ImageU8 smooth_image(ImageShape shape, std::size_t pitch_bytes = 0) {
    ImageU8 image(shape, pitch_bytes);
    for (int y = 0; y < shape.height; ++y)
        for (int x = 0; x < shape.width; ++x)
            for (int c = 0; c < shape.channels; ++c)
                image.at(x, y, c) = static_cast<std::uint8_t>(std::min(255, 20 + 3 * x + 2 * y + 40 * c));
    return image;
}

// Fills every byte of row padding with 0xAB, so that a writer that copied padding would be caught.
inline void poison_padding(ImageU8& image) {
    const std::size_t row_bytes = static_cast<std::size_t>(image.shape().row_elements());
    const int planes = image.layout() == Layout::soa ? image.channels() : 1;
    for (int c = 0; c < planes; ++c)
        for (int y = 0; y < image.height(); ++y)
            for (std::size_t i = row_bytes; i < image.pitch_bytes(); ++i) image.row(y, c)[i] = 0xAB;
}

// CRC-32 as PNG chunks use it (ISO 3309), for patching a PNG header in a test.
inline std::uint32_t crc32(const std::uint8_t* data, std::size_t size) {
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < size; ++i) {
        crc ^= data[i];
        for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return crc ^ 0xFFFFFFFFu;
}

inline void put_be32(Bytes& bytes, std::size_t at, std::uint32_t value) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<std::uint8_t>(value >> (24 - 8 * i));
}

// A fresh directory per test under the system temp directory, removed afterwards.
class IoTempDir : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = test::fresh_test_dir("io");
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

}  // namespace klab::io_fixtures
