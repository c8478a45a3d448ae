#pragma once
// Small helpers shared by the CPU tests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "harness/error.hpp"
#include "harness/image.hpp"

namespace klab::test {

// `text` with every character but letters and digits replaced by '_': a GoogleTest parameter name
// (the conformance suites name their cases "<variant>__..." and CTest filters on the file stem).
inline std::string test_name(std::string text) {
    for (char& ch : text) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    return text;
}

// A fresh, empty directory for the running test: <temp>/klab_<what>_<pid>_<suite>_<test> (a
// parameterised name's '/' as '_'), emptied first if a killed run left it behind. The pid keeps two
// test runs at once (two build trees) apart.
inline std::filesystem::path fresh_test_dir(const std::string& what) {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "klab_" + what + "_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

// Expects `action` to throw klab::Error whose message contains `fragment`.
inline void expect_error(const std::function<void()>& action, const std::string& fragment) {
    try {
        action();
        ADD_FAILURE() << "expected klab::Error containing \"" << fragment << "\", nothing was thrown";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
            << "message \"" << e.what() << "\" lacks \"" << fragment << "\"";
    }
}

// A 1-channel AoS image from row-major values.
inline ImageU8 gray_image(int width, int height, const std::vector<int>& values) {
    ImageU8 image(width, height, 1);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) image.at(x, y, 0) = static_cast<std::uint8_t>(values.at(y * width + x));
    return image;
}

// Every value, row by row, pixel by pixel, channel by channel: (y, x, c) order.
template <class T>
std::vector<long long> values_of(const HostImage<T>& image) {
    std::vector<long long> out;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x)
            for (int c = 0; c < image.channels(); ++c) out.push_back(static_cast<long long>(image.at(x, y, c)));
    return out;
}
inline std::vector<int> values(const ImageU8& image) {
    std::vector<int> out;
    for (long long v : values_of(image)) out.push_back(static_cast<int>(v));
    return out;
}

// Seeded random pixels (std::mt19937's raw output is specified by the standard).
inline ImageU8 random_image(ImageShape shape, std::uint32_t seed, std::size_t pitch_bytes = 0) {
    ImageU8 image(shape, pitch_bytes);
    std::mt19937 rng(seed);
    for (int y = 0; y < shape.height; ++y)
        for (int x = 0; x < shape.width; ++x)
            for (int c = 0; c < shape.channels; ++c) image.at(x, y, c) = static_cast<std::uint8_t>(rng() >> 24);
    return image;
}

// A file's bytes ("" when it cannot be read): outputs compared byte for byte.
inline std::string file_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace klab::test
