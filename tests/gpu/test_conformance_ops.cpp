// Conformance suites of the sobel and integral operations, and the exact test of conv.box_integral:
// every registered variant of the op × a table of problems, each result compared element for
// element with the CPU reference (verify_exact: these results are integers, or, for box masks,
// exactly reproducible; DESIGN.md).
//
// The tables cover tiny images (1x1, 1x7, 7x1, 2x3, 5x5), sizes that are no multiple of any
// block or tile side, 1/3/4 channels, AoS and SoA, tight / odd / allocator pitches for input and
// output (an odd output pitch misaligns vector stores), the variant's default launch shape and an
// awkward one, every border for sobel and the box. The integral table adds the u32 -> u64
// switch: all-255 images of 4104x4104 (255*W*H just below 2^32: u32, the largest sums u32 holds)
// and 4105x4104 (just above: u64), run on the device and compared exactly.
// Variants with scratch memory also run two plans at once on two streams (PlansOnTwoStreams).
// OpConformanceTables.EveryVariantSupportsEveryCaseOfItsOp (CPU only) holds every sobel and integral
// variant to every case of its op's table, so that a supports() refusing problems cannot shrink the
// suite silently. Large images are checked in OpsLargeImages (not on the reduced table): each
// variant once on 8K, the integral variants past u32 on 3 channels AoS and SoA, integral.lookback's
// look-back over more than one window of tiles, and conv.box_integral where its u32 summed-area
// table wraps.
// sobel.fused's square-root rounding is checked for every possible sum in test_conformance_ops_sqrt.cu,
// sobel.register_window's arithmetic in test_sobel_register_window_arithmetic.cu.
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

namespace klab {
namespace {

bool reduced_table() {
    const char* value = std::getenv("KLAB_CONFORMANCE_TABLE");
    return value != nullptr && std::string(value) == "reduced";
}

enum class PitchKind { tight, odd, allocator };
const char* to_string(PitchKind kind) {
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
std::size_t pitch_for(PitchKind kind, const ImageShape& shape, std::size_t element_bytes) {
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

std::vector<Border> all_borders() {
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
void add_case(std::vector<OpCase>& table, Problem problem, Fill fill = Fill::random) {
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

Problem op_problem(Operation op, int w, int h, Format f, Border border = {}) {
    Problem p;
    p.op = op;
    p.shape = ImageShape{w, h, f.channels, f.layout};
    p.border = border;
    return p;
}

std::vector<OpCase> sobel_table(bool reduced) {
    std::vector<OpCase> table;
    const std::vector<Border> borders = all_borders();
    if (reduced) {
        std::size_t k = 0;
        for (auto [w, h] : {std::pair{1, 1}, std::pair{5, 5}, std::pair{17, 13}, std::pair{67, 33}})
            for (const Border& b : borders) add_case(table, op_problem(Operation::sobel, w, h, kFormats[k++ % 6], b));
        return table;
    }
    // 512 = 2 x 256: sobel.register_window's warps cover the width exactly, so that its register
    // window (not the pixel-by-pixel path) meets the right edge; 37 rows end a 16-row strip early.
    for (auto [w, h] : {std::pair{1, 1}, std::pair{1, 7}, std::pair{7, 1}, std::pair{2, 3}, std::pair{5, 5},
                        std::pair{17, 13}, std::pair{33, 31}, std::pair{127, 65}, std::pair{512, 37}, std::pair{640, 480}})
        for (const Border& b : borders)
            for (const Format& f : kFormats) add_case(table, op_problem(Operation::sobel, w, h, f, b));
    std::size_t k = 0;
    for (const Border& b : borders) add_case(table, op_problem(Operation::sobel, 1920, 1080, kFormats[k++ % 6], b));
    return table;
}

std::vector<OpCase> integral_table(bool reduced) {
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

const std::vector<OpCase>& table_of(Operation op) {
    static const std::vector<OpCase> sobel = sobel_table(reduced_table());
    static const std::vector<OpCase> integral = integral_table(reduced_table());
    return op == Operation::sobel ? sobel : integral;
}

ImageU8 input_of(const OpCase& c) {
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
unsigned long long channel_total(const ImageU8& image, int c) {
    unsigned long long total = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) total += image.at(x, y, c);
    return total;
}

// An awkward launch shape the variant accepts (no power of two), else its default.
LaunchShape awkward_shape(const Variant& variant, const Problem& problem) {
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

std::vector<OpParam> params_for(Operation op) {
    std::vector<OpParam> params;
    for (const Variant* variant : Registry::instance().for_op(op)) {
        for (std::size_t i = 0; i < table_of(op).size(); ++i) {
            if (variant->supports(table_of(op)[i].problem)) params.push_back({variant, i});
        }
    }
    return params;
}

std::string case_name(const Variant& variant, std::size_t index, const OpCase& c) {
    const Problem& p = c.problem;
    std::string name = fmt::format("{}__{:04}_{}x{}x{}_{}_{}_{}_{}", variant.name(), index, p.shape.width,
                                   p.shape.height, p.shape.channels, to_string(p.shape.layout), to_string(p.border),
                                   to_string(c.input_pitch), to_string(c.output_pitch));
    return test::test_name(std::move(name));
}

class OpConformance : public ::testing::TestWithParam<OpParam> {
protected:
    void SetUp() override {
        if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device found";
    }
    const OpCase& the_case() const { return table_of(GetParam().variant->op())[GetParam().index]; }
    LaunchShape the_shape() const {
        const Variant& v = *GetParam().variant;
        return the_case().awkward_shape ? awkward_shape(v, the_case().problem) : v.default_shape(the_case().problem);
    }
    std::string trace() const {
        const OpCase& c = the_case();
        return fmt::format("{} on {} with block {}, pitches {}/{}", GetParam().variant->name(), to_string(c.problem),
                           to_string(the_shape()), to_string(c.input_pitch), to_string(c.output_pitch));
    }
};

// --- sobel -------------------------------------------------------------------------------------

class SobelConformance : public OpConformance {};

TEST_P(SobelConformance, MatchesTheReferenceExactly) {
    const OpCase& c = the_case();
    SCOPED_TRACE(trace());
    const ImageU8 input = input_of(c);
    const ImageU8 expected = reference::sobel(input, c.problem.border, 0);
    const ImageU8 actual = run_variant<std::uint8_t>(*GetParam().variant, c.problem, input, c.input_pitch,
                                                     c.output_pitch, the_shape());
    const Verification v = verify_exact(expected, actual);
    EXPECT_TRUE(v.ok()) << v.summary();
}

std::string sobel_case_name(const ::testing::TestParamInfo<OpParam>& param) {
    return case_name(*param.param.variant, param.param.index, table_of(Operation::sobel)[param.param.index]);
}

INSTANTIATE_TEST_SUITE_P(Variants, SobelConformance, ::testing::ValuesIn(params_for(Operation::sobel)), sobel_case_name);

// --- integral ----------------------------------------------------------------------------------

class IntegralConformance : public OpConformance {};

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

TEST_P(IntegralConformance, MatchesTheReferenceExactly) {
    const OpCase& c = the_case();
    SCOPED_TRACE(trace());
    if (reference::integral_type(c.problem.shape.width, c.problem.shape.height) == reference::IntegralType::u32) {
        check_integral<std::uint32_t>(*GetParam().variant, c, the_shape());
    } else {
        check_integral<std::uint64_t>(*GetParam().variant, c, the_shape());
    }
}

std::string integral_case_name(const ::testing::TestParamInfo<OpParam>& param) {
    return case_name(*param.param.variant, param.param.index, table_of(Operation::integral)[param.param.index]);
}

INSTANTIATE_TEST_SUITE_P(Variants, IntegralConformance, ::testing::ValuesIn(params_for(Operation::integral)),
                         integral_case_name);

// The tables hold what the issue asks for, so that a shrunken table cannot pass unnoticed.
TEST(OpConformanceTables, CoverTheRequiredProblems) {
    if (reduced_table()) GTEST_SKIP() << "the reduced tables are for sanitizer runs";
    for (Operation op : {Operation::sobel, Operation::integral}) {
        std::map<std::string, int> seen;
        for (const OpCase& c : table_of(op)) {
            const Problem& p = c.problem;
            ++seen[fmt::format("format {} {}", p.shape.channels, to_string(p.shape.layout))];
            ++seen["border " + to_string(p.border)];
            ++seen[fmt::format("pitches {} {}", to_string(c.input_pitch), to_string(c.output_pitch))];
            ++seen[fmt::format("awkward {}", c.awkward_shape)];
            ++seen[fmt::format("size {}x{}", p.shape.width, p.shape.height)];
            if (c.fill == Fill::white) ++seen[reference::to_string(reference::integral_type(p.shape.width, p.shape.height))];
        }
        for (const Format& f : kFormats) EXPECT_GT((seen[fmt::format("format {} {}", f.channels, to_string(f.layout))]), 0);
        for (PitchKind in : kPitches)
            for (PitchKind out : kPitches) EXPECT_GT((seen[fmt::format("pitches {} {}", to_string(in), to_string(out))]), 0);
        EXPECT_GT(seen["awkward true"], 0);
        EXPECT_GT(seen["awkward false"], 0);
        for (const char* size : {"1x1", "1x7", "7x1", "2x3", "5x5", "17x13", "127x65", "640x480", "1920x1080"})
            EXPECT_GT(seen[fmt::format("size {}", size)], 0) << size;
        if (op == Operation::sobel) {
            for (const Border& b : all_borders()) EXPECT_GT(seen["border " + to_string(b)], 0) << to_string(b);
        } else {
            EXPECT_GT(seen["u32"], 0) << "a white image whose sums just fit u32";
            EXPECT_GT(seen["u64"], 0) << "a white image whose sums need u64";
        }
    }
    EXPECT_FALSE(params_for(Operation::sobel).empty());
    EXPECT_FALSE(params_for(Operation::integral).empty());
}

// Sobel and integral variants that by design refuse some problems of their op's table: which ones
// and why. None today: the sobel and integral variants compute every problem of their op (1/3/4
// channels, AoS/SoA, every border, any size; their supports() return yes). A variant that must
// refuse some problems gets an entry here, with the reason; it must then refuse exactly those.
struct OpRefusal {
    bool (*refuses)(const Problem&);
    const char* reason;
};
const std::map<std::string, OpRefusal> kOpRefusals = {};

// Every registered sobel and integral variant supports every case of its op's table, full and
// reduced, but for the refusals listed above (the convolution suite's coverage rule,
// test_conformance.cpp's ConformanceTable.CoversTheRequiredProblems, for these ops): a supports()
// that starts refusing problems would otherwise only make params_for() instantiate fewer cases.
// CPU only: the tables and supports() need no device.
TEST(OpConformanceTables, EveryVariantSupportsEveryCaseOfItsOp) {
    // The variants of the issue are registered under their ops (else the loops below pass vacuously).
    for (auto [name, op] : {std::pair{"sobel.3kernel", Operation::sobel}, std::pair{"sobel.fused", Operation::sobel},
                            std::pair{"sobel.register_window", Operation::sobel}, std::pair{"integral.scan", Operation::integral},
                            std::pair{"integral.lookback", Operation::integral}}) {
        const Variant* variant = Registry::instance().find(name);
        ASSERT_NE(variant, nullptr) << name << " is not registered";
        EXPECT_EQ(variant->op(), op) << name;
    }
    for (Operation op : {Operation::sobel, Operation::integral}) {
        ASSERT_FALSE(Registry::instance().for_op(op).empty());
        for (bool reduced : {false, true}) {
            const std::vector<OpCase> cases = op == Operation::sobel ? sobel_table(reduced) : integral_table(reduced);
            const char* table_name = reduced ? "reduced table" : "full table";
            for (const Variant* variant : Registry::instance().for_op(op)) {
                const auto refusal = kOpRefusals.find(variant->name());
                std::size_t takes = 0;
                for (const OpCase& c : cases) {
                    const Problem& p = c.problem;
                    const bool listed = refusal != kOpRefusals.end() && refusal->second.refuses(p);
                    const Support support = variant->supports(p);
                    if (listed) {
                        EXPECT_FALSE(support) << variant->name() << " takes " << to_string(p) << " (" << table_name
                                              << "), listed as refused: " << refusal->second.reason;
                    } else {
                        ++takes;
                        EXPECT_TRUE(support) << variant->name() << " refuses " << to_string(p) << " (" << table_name
                                             << "): " << support.reason();
                    }
                }
                // A listed refusal leaves the variant a good part of the table.
                EXPECT_GE(takes, cases.size() / 10) << variant->name() << " (" << table_name << ")";
            }
        }
    }
    // The suites instantiated for the table in use hold every supported case of every variant.
    for (Operation op : {Operation::sobel, Operation::integral}) {
        std::map<const Variant*, std::size_t> instantiated;
        for (const OpParam& param : params_for(op)) ++instantiated[param.variant];
        for (const Variant* variant : Registry::instance().for_op(op)) {
            const auto refusal = kOpRefusals.find(variant->name());
            const std::size_t listed =
                refusal == kOpRefusals.end()
                    ? 0
                    : static_cast<std::size_t>(std::count_if(table_of(op).begin(), table_of(op).end(), [&](const OpCase& c) {
                          return refusal->second.refuses(c.problem);
                      }));
            EXPECT_EQ(instantiated[variant], table_of(op).size() - listed) << variant->name();
        }
    }
}

// --- the box variants, exactly -----------------------------------------------------------------
// verify_convolution would accept an off-by-one next to an fp32 rounding tie; conv.box_integral
// and conv.box_running_sums promise identical results (their preambles prove why), so they are
// held to verify_exact, on every border, box sizes from 1x1 to 31x31 (larger than the images),
// non-square boxes, and boxes whose coefficient is not 1/n: saturating, negative, arbitrary, and
// 0.5 and 1/8, whose products m * S are exact ties at odd S (round half to even decides them).

struct BoxCase {
    Problem problem;
    PitchKind input_pitch;
    PitchKind output_pitch;
    bool awkward_shape;
    std::uint32_t seed;
};

Mask flat_mask(int w, int h, float value, const std::string& name) {
    return Mask(w, h, std::vector<float>(static_cast<std::size_t>(w * h), value), name);
}

std::vector<BoxCase> box_table(bool reduced) {
    std::vector<Mask> masks = {masks::box(1), masks::box(3), masks::box(9), masks::box(31), flat_mask(3, 7, 1.0f / 21, "box3x7"),
                               flat_mask(15, 1, 1.0f / 15, "box15x1"), flat_mask(5, 5, 1.0f, "ones5"),
                               flat_mask(7, 7, 0.0123f, "flat7_0_0123"), flat_mask(3, 3, -0.25f, "negative3"),
                               flat_mask(1, 1, 0.5f, "half1"), flat_mask(3, 3, 0.125f, "eighth3"),
                               flat_mask(5, 3, 300.0f, "saturating5x3")};
    std::vector<std::pair<int, int>> sizes = {{1, 1}, {2, 3}, {5, 5}, {17, 13}, {64, 48}, {127, 65}};
    if (reduced) {
        masks = {masks::box(3), masks::box(31), flat_mask(3, 7, 1.0f / 21, "box3x7"), flat_mask(3, 3, 0.125f, "eighth3")};
        sizes = {{2, 3}, {17, 13}};
    }
    std::vector<BoxCase> table;
    std::size_t n = 0;
    for (auto [w, h] : sizes)
        for (const Mask& mask : masks)
            for (const Border& border : all_borders()) {
                const Format f = kFormats[(n + n / 6) % 6];
                table.push_back({convolve_problem(ImageShape{w, h, f.channels, f.layout}, mask, border),
                                 kPitches[n % 3], kPitches[(n / 3 + 1) % 3], n % 2 == 1, static_cast<std::uint32_t>(9000 + n)});
                ++n;
            }
    return table;
}

const std::vector<BoxCase>& box_cases() {
    static const std::vector<BoxCase> cases = box_table(reduced_table());
    return cases;
}

// The variants that promise the reference's box results exactly.
constexpr const char* kExactBoxVariants[] = {"conv.box_integral", "conv.box_running_sums"};

std::vector<OpParam> box_params() {
    std::vector<OpParam> params;
    for (const char* name : kExactBoxVariants) {
        const Variant* variant = Registry::instance().find(name);
        if (variant == nullptr) continue;
        for (std::size_t i = 0; i < box_cases().size(); ++i) params.push_back({variant, i});
    }
    return params;
}

// Both are registered (else the suite would shrink without a failure).
TEST(BoxExactSuite, CoversBothBoxVariants) {
    for (const char* name : kExactBoxVariants) EXPECT_NE(Registry::instance().find(name), nullptr) << name;
}

class BoxExact : public ::testing::TestWithParam<OpParam> {
protected:
    void SetUp() override {
        if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device found";
    }
};

TEST_P(BoxExact, EqualsTheReference) {
    const Variant& variant = *GetParam().variant;
    const BoxCase& c = box_cases()[GetParam().index];
    const Problem& problem = c.problem;
    const LaunchShape shape = c.awkward_shape ? awkward_shape(variant, problem) : variant.default_shape(problem);
    SCOPED_TRACE(fmt::format("{} on {} with block {}", variant.name(), to_string(problem), to_string(shape)));
    ASSERT_TRUE(variant.supports(problem)) << variant.supports(problem).reason();
    const ImageU8 input = test::random_image(problem.shape, c.seed);
    DeviceImage<std::uint8_t> in(problem.shape, pitch_for(c.input_pitch, problem.shape, 1));
    in.upload(input);
    DeviceImage<std::uint8_t> out(problem.shape, pitch_for(c.output_pitch, problem.shape, 1));
    KLAB_CUDA_CHECK(cudaMemset(out.view().data, kSentinel, out.capacity_bytes()));
    const DeviceMask mask(*problem.mask);
    run(variant, problem, DeviceBuffers{device_buffer(in), device_buffer(out), mask.view()}, shape);
    const Verification v = verify_exact(reference::convolve(input, *problem.mask, problem.border, 0), out.download());
    EXPECT_TRUE(v.ok()) << v.summary();
}

std::string box_case_name(const ::testing::TestParamInfo<OpParam>& param) {
    const Problem& p = box_cases()[param.param.index].problem;
    std::string name = fmt::format("{}__exact_{:04}_{}x{}x{}_{}_{}_{}", param.param.variant->name(), param.param.index,
                                   p.shape.width, p.shape.height, p.shape.channels, to_string(p.shape.layout),
                                   to_string(p.border), p.mask->name());
    return test::test_name(std::move(name));
}

INSTANTIATE_TEST_SUITE_P(Variants, BoxExact, ::testing::ValuesIn(box_params()), box_case_name);

// --- plans on two streams ----------------------------------------------------------------------
// A variant with scratch memory gets it from its plan (LaunchPlan::scratch), never shared with
// another plan, so two plans of one variant launched on two streams at once must both give the
// reference's result. (When these variants kept one scratch allocation per device, two such
// launches overwrote each other's intermediates.) Every registered variant that asks for scratch
// on the problem of its op below is run; case names are <stem>__two_plans_on_two_streams.

Problem two_stream_problem(Operation op) {
    const ImageShape shape{640, 360, 3, Layout::aos};
    const Border border{BorderMode::reflect, 0};
    if (op == Operation::convolve) return convolve_problem(shape, masks::box(9), border);
    return op_problem(op, shape.width, shape.height, kFormats[1], border);
}

std::vector<const Variant*> variants_with_scratch() {
    std::vector<const Variant*> found;
    for (const Variant* v : Registry::instance().all()) {
        const Problem p = two_stream_problem(v->op());
        if (v->supports(p) && v->scratch_bytes(p, v->default_shape(p)) > 0) found.push_back(v);
    }
    return found;
}

// The reference's verdict on `actual`, the output of `variant` for `problem` on `input`.
template <class T>
Verification verify_against_reference(const Variant& variant, const Problem& problem, const ImageU8& input,
                                      const HostImage<T>& actual) {
    if constexpr (std::is_same_v<T, std::uint8_t>) {
        if (problem.op == Operation::sobel) return verify_exact(reference::sobel(input, problem.border, 0), actual);
        return verify_convolution(input, *problem.mask, problem.border,
                                  reference::convolve(input, *problem.mask, problem.border, 0), actual,
                                  variant.coefficient_error(problem));
    } else {
        return verify_exact(reference::integral<T>(input, 0), actual);
    }
}

// Two plans on two inputs, launched three times each, alternating between two streams, then
// both results verified.
template <class T>
void run_two_plans_on_two_streams(const Variant& variant, const Problem& problem) {
    const LaunchShape shape = variant.default_shape(problem);
    const ImageShape out_shape = output_shape(problem);
    const ImageU8 input_a = test::random_image(problem.shape, 71);
    const ImageU8 input_b = test::random_image(problem.shape, 72);
    DeviceImage<std::uint8_t> in_a(input_a), in_b(input_b);
    DeviceImage<T> out_a(out_shape), out_b(out_shape);
    std::unique_ptr<DeviceMask> mask;
    if (problem.mask) mask = std::make_unique<DeviceMask>(*problem.mask);
    const DeviceMaskView mask_view = mask ? mask->view() : DeviceMaskView{};
    const LaunchPlan a = prepare(variant, problem, DeviceBuffers{device_buffer(in_a), device_buffer(out_a), mask_view}, shape);
    const LaunchPlan b = prepare(variant, problem, DeviceBuffers{device_buffer(in_b), device_buffer(out_b), mask_view}, shape);
    ASSERT_EQ(a.scratch_bytes, variant.scratch_bytes(problem, shape));
    ASSERT_NE(a.scratch.get(), nullptr);
    ASSERT_NE(a.scratch.get(), b.scratch.get()) << "two plans share scratch memory";

    cudaStream_t streams[2] = {nullptr, nullptr};
    for (cudaStream_t& s : streams) KLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int repeat = 0; repeat < 3; ++repeat) {
        launch(a, streams[0]);
        launch(b, streams[1]);
    }
    for (cudaStream_t s : streams) {
        KLAB_CUDA_CHECK(cudaStreamSynchronize(s));
        KLAB_CUDA_CHECK(cudaStreamDestroy(s));
    }
    const Verification va = verify_against_reference(variant, problem, input_a, out_a.download());
    EXPECT_TRUE(va.ok()) << "plan a: " << va.summary();
    const Verification vb = verify_against_reference(variant, problem, input_b, out_b.download());
    EXPECT_TRUE(vb.ok()) << "plan b: " << vb.summary();
}

class PlansOnTwoStreams : public ::testing::TestWithParam<const Variant*> {
protected:
    void SetUp() override {
        if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device found";
    }
};

TEST_P(PlansOnTwoStreams, BothGiveTheReferenceResult) {
    const Variant& variant = *GetParam();
    const Problem problem = two_stream_problem(variant.op());
    SCOPED_TRACE(fmt::format("{} on {}", variant.name(), to_string(problem)));
    if (problem.op != Operation::integral) {
        run_two_plans_on_two_streams<std::uint8_t>(variant, problem);
    } else if (reference::integral_type(problem.shape.width, problem.shape.height) == reference::IntegralType::u32) {
        run_two_plans_on_two_streams<std::uint32_t>(variant, problem);
    } else {
        run_two_plans_on_two_streams<std::uint64_t>(variant, problem);
    }
}

// The four variants that need scratch are all found (a variant that stops asking for scratch, or a
// probe problem it stops supporting, would silently shrink the suite).
TEST(PlansOnTwoStreamsSuite, CoversTheVariantsWithScratch) {
    std::vector<std::string> names;
    for (const Variant* v : variants_with_scratch()) names.push_back(v->name());
    for (const char* name : {"conv.box_integral", "conv.separable_2pass", "integral.scan", "sobel.3kernel"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    }
}

std::string two_streams_case_name(const ::testing::TestParamInfo<const Variant*>& param) {
    std::string name = param.param->name() + "__two_plans_on_two_streams";
    return test::test_name(std::move(name));
}

INSTANTIATE_TEST_SUITE_P(Variants, PlansOnTwoStreams, ::testing::ValuesIn(variants_with_scratch()), two_streams_case_name);

// --- 8K images ---------------------------------------------------------------------------------
// Each variant once on an 8K image (7680x4320), verified exactly: the sizes where tiles, grids and
// 64-bit sums are largest. scripts/op-times.sh runs these under Nsight Compute for the kernels'
// times. Skipped on the reduced table (sanitizer runs).

class OpsLargeImages : public test::GpuTest {
protected:
    void SetUp() override {
        test::GpuTest::SetUp();
        if (!IsSkipped() && reduced_table()) GTEST_SKIP() << "8K images are not run on the reduced table";
    }
};

constexpr int k8KWidth = 7680;
constexpr int k8KHeight = 4320;

TEST_F(OpsLargeImages, IntegralScanOn8KGrayAndA4096SquareGray) {
    const Variant& variant = Registry::instance().get("integral.scan");
    OpCase c8k;
    c8k.problem = op_problem(Operation::integral, k8KWidth, k8KHeight, kFormats[0]);
    c8k.seed = 8;
    check_integral<std::uint64_t>(variant, c8k, variant.default_shape(c8k.problem));  // 8K needs u64
    OpCase c4k;
    c4k.problem = op_problem(Operation::integral, 4096, 4096, kFormats[0]);
    c4k.seed = 4;
    check_integral<std::uint32_t>(variant, c4k, variant.default_shape(c4k.problem));  // 16.8 M pixels: u32
}

TEST_F(OpsLargeImages, SobelOn8KRgbAndGray) {
    for (int channels : {3, 1}) {
        const Problem problem = op_problem(Operation::sobel, k8KWidth, k8KHeight, kFormats[channels == 3 ? 1 : 0],
                                           Border{BorderMode::replicate, 0});
        const ImageU8 input = test::random_image(problem.shape, 81);
        const ImageU8 expected = reference::sobel(input, problem.border, 0);
        for (const char* name : {"sobel.register_window", "sobel.fused", "sobel.3kernel"}) {
            const Variant& variant = Registry::instance().get(name);
            const ImageU8 actual = run_variant<std::uint8_t>(variant, problem, input, PitchKind::allocator,
                                                             PitchKind::allocator, variant.default_shape(problem));
            const Verification v = verify_exact(expected, actual);
            EXPECT_TRUE(v.ok()) << name << " on " << to_string(problem) << ": " << v.summary();
        }
    }
}

// integral.lookback on the study's problems: 8K gray (u64), 4096x4096 gray (u32) and 8K RGB AoS
// (u64, 796 MB of output).
TEST_F(OpsLargeImages, IntegralLookbackOn8KGrayRgbAndA4096SquareGray) {
    const Variant& variant = Registry::instance().get("integral.lookback");
    OpCase gray;
    gray.problem = op_problem(Operation::integral, k8KWidth, k8KHeight, kFormats[0]);
    gray.seed = 8;
    check_integral<std::uint64_t>(variant, gray, variant.default_shape(gray.problem));
    OpCase square;
    square.problem = op_problem(Operation::integral, 4096, 4096, kFormats[0]);
    square.seed = 4;
    check_integral<std::uint32_t>(variant, square, variant.default_shape(square.problem));
    OpCase rgb;
    rgb.problem = op_problem(Operation::integral, k8KWidth, k8KHeight, kFormats[1]);
    rgb.seed = 3;
    check_integral<std::uint64_t>(variant, rgb, variant.default_shape(rgb.problem));
}

// integral.lookback's look-back reads up to 32 predecessor tiles at a time: tiles of 32 rows
// (block 32x1) make columns of more than 32 and 64 tiles, so that a look-back needs a second and a
// third window of predecessors when none of the first window has published its inclusive values.
// Gray AoS and RGB SoA (three planes of tiles one after another in ticket order), odd pitches.
TEST_F(OpsLargeImages, IntegralLookbackAcrossMoreThanOneWindowOfTiles) {
    const Variant& variant = Registry::instance().get("integral.lookback");
    const LaunchShape one_warp{32, 1, {}};
    for (const auto& [format, width, height] : {std::tuple{kFormats[0], 1500, 2100}, std::tuple{kFormats[4], 700, 1100}}) {
        OpCase c;
        c.problem = op_problem(Operation::integral, width, height, format);
        c.input_pitch = PitchKind::odd;
        c.output_pitch = PitchKind::tight;
        c.seed = static_cast<std::uint32_t>(width);
        SCOPED_TRACE(fmt::format("{} on {} with block 32x1", variant.name(), to_string(c.problem)));
        check_integral<std::uint32_t>(variant, c, one_warp);
    }
}

TEST_F(OpsLargeImages, BoxVariantsOn8KRgbBox9And31) {
    for (int k : {9, 31}) {
        const Problem problem = convolve_problem(ImageShape{k8KWidth, k8KHeight, 3, Layout::aos}, masks::box(k),
                                                 Border{BorderMode::replicate, 0});
        const ImageU8 input = test::random_image(problem.shape, static_cast<std::uint32_t>(k));
        const ImageU8 expected = reference::convolve(input, *problem.mask, problem.border, 0);
        DeviceImage<std::uint8_t> in(input);
        const DeviceMask mask(*problem.mask);
        for (const char* name : kExactBoxVariants) {
            const Variant& variant = Registry::instance().get(name);
            DeviceImage<std::uint8_t> out(problem.shape);
            run(variant, problem, DeviceBuffers{device_buffer(in), device_buffer(out), mask.view()}, variant.default_shape(problem));
            const Verification v = verify_exact(expected, out.download());
            EXPECT_TRUE(v.ok()) << name << " box" << k << ": " << v.summary();
        }
    }
}

// The integral variants past u32 on colour images, both layouts: 4105x4104 (255*W*H just above 2^32, so
// u64; the table's u64 cases are gray and RGBA AoS), 3 channels AoS (the kernels' 3-element path)
// and SoA (three gray planes). All-255 images give the largest sums; near-white ones keep every
// channel past 2^32 while the channels differ, so that mixed-up channels show. Each 4105x4104x3
// u64 output is 404 MB on the device and on the host; one run at a time, freed before the next.
TEST_F(OpsLargeImages, IntegralVariantsU64OnRgbAosAndSoa) {
    for (const char* name : {"integral.scan", "integral.lookback"}) {
        const Variant& variant = Registry::instance().get(name);
        constexpr int kWidth = 4105;
        constexpr int kHeight = 4104;
        ASSERT_EQ(reference::integral_type(kWidth, kHeight), reference::IntegralType::u64);
        struct Run {
            Format format;
            Fill fill;
            PitchKind input_pitch;
            PitchKind output_pitch;
            bool awkward_shape;
        };
        const Run runs[] = {{kFormats[1], Fill::white, PitchKind::allocator, PitchKind::allocator, false},
                            {kFormats[4], Fill::white, PitchKind::odd, PitchKind::tight, true},
                            {kFormats[1], Fill::near_white, PitchKind::tight, PitchKind::odd, true},
                            {kFormats[4], Fill::near_white, PitchKind::allocator, PitchKind::odd, false}};
        for (const Run& r : runs) {
            OpCase c;
            c.problem = op_problem(Operation::integral, kWidth, kHeight, r.format);
            c.input_pitch = r.input_pitch;
            c.output_pitch = r.output_pitch;
            c.fill = r.fill;
            const LaunchShape shape = r.awkward_shape ? awkward_shape(variant, c.problem) : variant.default_shape(c.problem);
            SCOPED_TRACE(fmt::format("{} on {} ({}) with block {}, pitches {}/{}", variant.name(), to_string(c.problem),
                                     r.fill == Fill::white ? "white" : "near white", to_string(shape),
                                     to_string(c.input_pitch), to_string(c.output_pitch)));
            {  // every channel's sum is past u32 (so the case needs u64 in each), and the channels differ
                const ImageU8 input = input_of(c);
                std::vector<unsigned long long> totals;
                for (int ch = 0; ch < 3; ++ch) {
                    totals.push_back(channel_total(input, ch));
                    ASSERT_GT(totals.back(), 0xffffffffull) << "channel " << ch;
                }
                if (r.fill == Fill::near_white) {
                    ASSERT_TRUE(totals[0] != totals[1] && totals[1] != totals[2] && totals[0] != totals[2]);
                }
            }
            check_integral<std::uint64_t>(variant, c, shape);
        }
    }
}

// conv.box_integral where its summed-area table wraps. The table is u32 (kernels/conv_box_integral.cu:
// struct Table, box_row_prefix's carry, box_column_prefix's running sum) and wraps modulo 2^32 once
// a channel's running sum passes 2^32; each box sum is still exact only because the four-term
// difference is taken in u32 arithmetic before it is converted (box_from_integral; the preamble's
// "Exactness"). A table made float, signed, or converted to double before the difference fails
// here. Images of 4608x4608 pixels in [192, 255] (mean 223.5: each channel sums to about 4.7e9 >
// 2^32, asserted below; the padded table's last entry is at least that sum), so the box means
// (192..255) rarely saturate and a wrong sum shows. The convolution suite's images are too small to
// wrap the table, and 8K random images (mean 127.5) stay just below 2^32.
TEST_F(OpsLargeImages, BoxIntegralExactWhereItsU32TableWraps) {
    const Variant& variant = Registry::instance().get("conv.box_integral");
    struct Run {
        Problem problem;
        PitchKind input_pitch;
        PitchKind output_pitch;
    };
    const Run runs[] = {
        {convolve_problem(ImageShape{4608, 4608, 1, Layout::aos}, masks::box(5), Border{BorderMode::wrap, 0}),
         PitchKind::odd, PitchKind::tight},
        {convolve_problem(ImageShape{4608, 4608, 3, Layout::aos}, flat_mask(3, 7, 1.0f / 21, "box3x7"),
                          Border{BorderMode::reflect, 0}),
         PitchKind::allocator, PitchKind::odd}};
    std::uint32_t seed = 4608;
    for (const Run& r : runs) {
        const Problem& problem = r.problem;
        const LaunchShape shape = variant.default_shape(problem);
        SCOPED_TRACE(fmt::format("{} on {} with block {}", variant.name(), to_string(problem), to_string(shape)));
        ASSERT_TRUE(variant.supports(problem)) << variant.supports(problem).reason();
        ImageU8 input = test::random_image(problem.shape, seed++);
        for (std::size_t i = 0; i < input.size_bytes(); ++i) input.data()[i] = static_cast<std::uint8_t>(192 + input.data()[i] / 4);
        for (int ch = 0; ch < problem.shape.channels; ++ch)
            ASSERT_GT(channel_total(input, ch), 0xffffffffull) << "channel " << ch << ": the table would not wrap";
        DeviceImage<std::uint8_t> in(problem.shape, pitch_for(r.input_pitch, problem.shape, 1));
        in.upload(input);
        DeviceImage<std::uint8_t> out(problem.shape, pitch_for(r.output_pitch, problem.shape, 1));
        KLAB_CUDA_CHECK(cudaMemset(out.view().data, kSentinel, out.capacity_bytes()));
        const DeviceMask mask(*problem.mask);
        run(variant, problem, DeviceBuffers{device_buffer(in), device_buffer(out), mask.view()}, shape);
        const Verification v = verify_exact(reference::convolve(input, *problem.mask, problem.border, 0), out.download());
        EXPECT_TRUE(v.ok()) << v.summary();
    }
}

}  // namespace
}  // namespace klab
