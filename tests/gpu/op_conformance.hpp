#pragma once
// What the exact suites of the sobel, integral and box variants share (test_conformance_ops.cpp,
// test_conformance_box_exact.cpp, test_plans_on_two_streams.cpp, test_ops_large_images.cpp): the
// problem tables of the sobel and integral ops, pitches and formats, input images, the run of a
// variant that checks its row padding, and the exact check of an integral image.
//
// The tables cover tiny images (1x1, 1x7, 7x1, 2x3, 5x5), sizes that are no multiple of any
// block or tile side, 1/3/4 channels, AoS and SoA, tight / odd / allocator pitches for input and
// output (an odd output pitch misaligns vector stores), the variant's default launch shape and an
// awkward one, every border for sobel and the box. The integral table adds the u32 -> u64
// switch: all-255 images of 4104x4104 (255*W*H just below 2^32: u32, the largest sums u32 holds)
// and 4105x4104 (just above: u64), run on the device and compared exactly.
//
// KLAB_CONFORMANCE_TABLE=reduced selects small tables for compute-sanitizer runs.
// Case names start with the variant's file stem and "__", so that tests/CMakeLists.txt runs them
// as gpu.conformance.<stem> together with the convolution suite's cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/device_image.hpp"
#include "harness/reference/reference.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"
#include "tests/common/test_util.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab::op_conformance {

inline bool reduced_table() {
    const char* value = std::getenv("KLAB_CONFORMANCE_TABLE");
    return value != nullptr && std::string(value) == "reduced";
}

enum class PitchKind { tight, odd, allocator };
inline const char* to_string(PitchKind kind) {
    switch (kind) {
        case PitchKind::tight: return "tight";
        case PitchKind::odd: return "odd";
        case PitchKind::allocator: return "alloc";
    }
    return "?";
}
constexpr PitchKind kPitches[] = {PitchKind::tight, PitchKind::odd, PitchKind::allocator};

// The pitch in bytes for elements of `element_bytes`: a tight row, a row plus 13 elements (odd for
// u8, misaligned to 16 bytes for u32 and u64), or 0 for cudaMallocPitch's choice.
inline std::size_t pitch_for(PitchKind kind, const ImageShape& shape, std::size_t element_bytes) {
    const std::size_t row = static_cast<std::size_t>(shape.row_elements()) * element_bytes;
    switch (kind) {
        case PitchKind::tight: return row;
        case PitchKind::odd: return row + 13 * element_bytes;
        case PitchKind::allocator: return 0;
    }
    return 0;
}

struct Format {
    int channels;
    Layout layout;
};
const Format kFormats[] = {{1, Layout::aos}, {3, Layout::aos}, {4, Layout::aos},
                           {1, Layout::soa}, {3, Layout::soa}, {4, Layout::soa}};

inline std::vector<Border> all_borders() {
    return {Border{BorderMode::constant, 0}, Border{BorderMode::constant, 77}, Border{BorderMode::replicate, 0},
            Border{BorderMode::mirror, 0},   Border{BorderMode::reflect, 0},   Border{BorderMode::wrap, 0}};
}

// white: every byte 255, the largest sums. near_white: 255 but for sparse dimples of 254 - c at
// positions that differ per channel c, so that every channel's sums stay close to the largest while
// the channels differ from one another (on a white image a channel mixed up with another is invisible).
enum class Fill { random, white, near_white };

struct OpCase {
    Problem problem;
    PitchKind input_pitch = PitchKind::allocator;
    PitchKind output_pitch = PitchKind::allocator;
    bool awkward_shape = false;
    Fill fill = Fill::random;
    std::uint32_t seed = 0;
};

// Rotates pitches and shape kinds over the cases so that every format meets each of them.
inline void add_case(std::vector<OpCase>& table, Problem problem, Fill fill = Fill::random) {
    const std::size_t n = table.size();
    OpCase c;
    c.problem = std::move(problem);
    c.input_pitch = kPitches[(n + n / 6) % 3];
    c.output_pitch = kPitches[(n + n / 18 + 1) % 3];
    c.awkward_shape = (n + n / 6) % 2 == 1;
    c.fill = fill;
    c.seed = static_cast<std::uint32_t>(5000 + n);
    table.push_back(std::move(c));
}

inline Problem op_problem(Operation op, int w, int h, Format f, Border border = {}) {
    Problem p;
    p.op = op;
    p.shape = ImageShape{w, h, f.channels, f.layout};
    p.border = border;
    return p;
}

inline std::vector<OpCase> sobel_table(bool reduced) {
    std::vector<OpCase> table;
    const std::vector<Border> borders = all_borders();
    if (reduced) {
        std::size_t k = 0;
        for (auto [w, h] : {std::pair{1, 1}, std::pair{5, 5}, std::pair{17, 13}, std::pair{67, 33}})
            for (const Border& b : borders) add_case(table, op_problem(Operation::sobel, w, h, kFormats[k++ % 6], b));
        return table;
    }
    // 512 = 2 x 256 colour pixels = 512 gray pixels: sobel.register_window's warps (8 pixels a lane,
    // gray 16) cover the width exactly, so that its word-load window meets the right edge (at the
    // other widths a warp reaches past it: the edge walk); 37 rows end a 16-row strip early.
    for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 7}, std::pair{7, 1}, std::pair{2, 3}, std::pair{5, 5},
                        std::pair{17, 13}, std::pair{33, 31}, std::pair{127, 65}, std::pair{512, 37}, std::pair{640, 480}})
        for (const Border& b : borders)
            for (const Format& f : kFormats) add_case(table, op_problem(Operation::sobel, w, h, f, b));
    std::size_t k = 0;
    for (const Border& b : borders) add_case(table, op_problem(Operation::sobel, 1920, 1080, kFormats[k++ % 6], b));
    return table;
}

inline std::vector<OpCase> integral_table(bool reduced) {
    std::vector<OpCase> table;
    if (reduced) {
        std::size_t k = 0;
        for (auto [w, h] : {std::pair{1, 1}, std::pair{5, 5}, std::pair{33, 31}, std::pair{300, 70}})
            for (int i = 0; i < 3; ++i) add_case(table, op_problem(Operation::integral, w, h, kFormats[k++ % 6]));
        return table;
    }
    // Tiles are 256 (gray) or 128 (colour) pixels wide and 64 rows tall: sizes around those sides.
    for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 7}, std::pair{7, 1}, std::pair{2, 3}, std::pair{5, 5},
                        std::pair{17, 13}, std::pair{33, 31}, std::pair{127, 65}, std::pair{128, 64},
                        std::pair{129, 63}, std::pair{256, 128}, std::pair{257, 129}, std::pair{600, 200},
                        std::pair{640, 480}, std::pair{1920, 1080}})
        for (const Format& f : kFormats) add_case(table, op_problem(Operation::integral, w, h, f));
    // The u32 -> u64 switch, on white images, whose sums are the largest possible.
    add_case(table, op_problem(Operation::integral, 4104, 4104, kFormats[0]), Fill::white);
    add_case(table, op_problem(Operation::integral, 4105, 4104, kFormats[0]), Fill::white);
    add_case(table, op_problem(Operation::integral, 4105, 4104, kFormats[2]), Fill::white);
    return table;
}

inline const std::vector<OpCase>& table_of(Operation op) {
    static const std::vector<OpCase> sobel = sobel_table(reduced_table());
    static const std::vector<OpCase> integral = integral_table(reduced_table());
    return op == Operation::sobel ? sobel : integral;
}

inline ImageU8 input_of(const OpCase& c) {
    if (c.fill == Fill::random) return test::random_image(c.problem.shape, c.seed);
    ImageU8 image(c.problem.shape);
    std::fill(image.data(), image.data() + image.size_bytes(), std::uint8_t{255});
    if (c.fill == Fill::near_white) {
        const ImageShape& s = c.problem.shape;
        for (int y = 0; y < s.height; ++y)
            for (int x = 0; x < s.width; ++x)
                for (int ch = 0; ch < s.channels; ++ch)
                    if ((x + 3 * y + 5 * ch) % 97 == 0) image.at(x, y, ch) = static_cast<std::uint8_t>(254 - ch);
    }
    return image;
}

// The sum of channel c over the whole image, by a plain loop (independent of reference::integral).
inline unsigned long long channel_total(const ImageU8& image, int c) {
    unsigned long long total = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) total += image.at(x, y, c);
    return total;
}

// An awkward launch shape the variant accepts (no power of two), else its default.
inline LaunchShape awkward_shape(const Variant& variant, const Problem& problem) {
    if (!variant.tuning_space().parameters.empty()) return variant.default_shape(problem);
    for (const LaunchShape& shape : {LaunchShape{24, 5, {}}, LaunchShape{40, 3, {}}, LaunchShape{13, 19, {}},
                                     LaunchShape{32, 3, {}}, LaunchShape{32, 1, {}}}) {
        if (variant.check_shape(problem, shape)) return shape;
    }
    return variant.default_shape(problem);
}

constexpr std::uint8_t kSentinel = 0xA5;

// Runs `variant` on `input` (already in the problem's layout) with outputs of element type T,
// checks that no byte of the row padding was written, and returns the result.
template <class T>
HostImage<T> run_variant(const Variant& variant, const Problem& problem, const ImageU8& input, PitchKind input_pitch,
                         PitchKind output_pitch, const LaunchShape& shape) {
    DeviceImage<std::uint8_t> in(problem.shape, pitch_for(input_pitch, problem.shape, 1));
    in.upload(input);
    const ImageShape out_shape = output_shape(problem);
    DeviceImage<T> out(out_shape, pitch_for(output_pitch, out_shape, sizeof(T)));
    KLAB_CUDA_CHECK(cudaMemset(out.view().data, kSentinel, out.capacity_bytes()));
    run(variant, problem, DeviceBuffers{device_buffer(in), device_buffer(out), {}}, shape);

    std::vector<std::uint8_t> raw(out.capacity_bytes());
    KLAB_CUDA_CHECK(cudaMemcpy(raw.data(), out.view().data, raw.size(), cudaMemcpyDeviceToHost));
    const std::size_t row_bytes = static_cast<std::size_t>(out_shape.row_elements()) * sizeof(T);
    std::size_t padding_written = 0;
    for (int r = 0; r < out_shape.rows(); ++r)
        for (std::size_t b = row_bytes; b < out.pitch_bytes(); ++b) padding_written += raw[r * out.pitch_bytes() + b] != kSentinel;
    EXPECT_EQ(padding_written, 0u) << "bytes written into the row padding";
    return out.download();
}

struct OpParam {
    const Variant* variant;
    std::size_t index;
};

inline std::vector<OpParam> params_for(Operation op) {
    std::vector<OpParam> params;
    for (const Variant* variant : Registry::instance().for_op(op)) {
        for (std::size_t i = 0; i < table_of(op).size(); ++i) {
            if (variant->supports(table_of(op)[i].problem)) params.push_back({variant, i});
        }
    }
    return params;
}

inline std::string case_name(const Variant& variant, std::size_t index, const OpCase& c) {
    const Problem& p = c.problem;
    std::string name = fmt::format("{}__{:04}_{}x{}x{}_{}_{}_{}_{}", variant.name(), index, p.shape.width,
                                   p.shape.height, p.shape.channels, to_string(p.shape.layout), to_string(p.border),
                                   to_string(c.input_pitch), to_string(c.output_pitch));
    return test::test_name(std::move(name));
}

template <class T>
void check_integral(const Variant& variant, const OpCase& c, const LaunchShape& shape) {
    const ImageU8 input = input_of(c);
    const HostImage<T> expected = reference::integral<T>(input, 0);
    const HostImage<T> actual = run_variant<T>(variant, c.problem, input, c.input_pitch, c.output_pitch, shape);
    const Verification v = verify_exact(expected, actual);
    EXPECT_TRUE(v.ok()) << v.summary();
    if (c.fill != Fill::random) {  // every channel's bottom-right sum, independently of the reference
        const ImageShape& s = c.problem.shape;
        for (int ch = 0; ch < s.channels; ++ch) {
            const unsigned long long total =
                c.fill == Fill::white ? 255ull * s.width * s.height : channel_total(input, ch);
            EXPECT_EQ(static_cast<unsigned long long>(actual.at(s.width - 1, s.height - 1, ch)), total) << "channel " << ch;
        }
    }
}

// The variants that promise the reference's box results exactly.
inline constexpr const char* kExactBoxVariants[] = {"conv.box_integral", "conv.box_running_sums", "conv.box_sliding_sums",
                                                     "conv.box_warp_scan", "conv.box_warp_ring", "conv.box_pixel_lanes"};

// Whether an exact box variant takes every box (up to 31x31, any coefficient) on every format.
// conv.box_warp_ring takes boxes up to 9 wide and of area up to 256, conv.box_pixel_lanes every
// format but RGBA AoS (their supports() say why); the suites run them on those and hold the others
// to every box. tests/gpu/test_conformance_box_exact.cpp checks that they refuse exactly that on
// the box suite's cases.
inline bool takes_every_box(const std::string& name) { return name != "conv.box_warp_ring" && name != "conv.box_pixel_lanes"; }

// conv.box_warp_ring's boxes: row sums from a lane's neighbours only (rx <= 4) and in 16-bit lanes
// (area <= 256).
inline bool up_to_9_wide_area_256(const Mask& mask) { return mask.width() <= 9 && mask.width() * mask.height() <= 256; }

// The formats a variant refuses whatever the mask: conv.box_pixel_lanes holds 16 whole pixels a
// lane, and RGBA AoS would be 64 bytes of them (more registers than the kernel has).
inline bool refuses_format(const std::string& variant, int channels, Layout layout) {
    return variant == "conv.box_pixel_lanes" && channels == 4 && layout == Layout::aos;
}

inline Mask flat_mask(int w, int h, float value, const std::string& name) {
    return Mask(w, h, std::vector<float>(static_cast<std::size_t>(w * h), value), name);
}

}  // namespace klab::op_conformance
