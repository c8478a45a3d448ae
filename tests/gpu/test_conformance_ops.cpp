// Conformance suites of the sobel and integral operations: every registered variant of the op × a
// table of problems (op_conformance.hpp), each result compared element for element with the CPU
// reference (verify_exact: these results are integers; docs/numeric-contract.md).
// OpConformanceTables.EveryVariantSupportsEveryCaseOfItsOp (CPU only) holds every sobel and integral
// variant to every case of its op's table, so that a supports() refusing problems cannot shrink the
// suite silently. The exact test of the box variants is in test_conformance_box_exact.cpp, two plans
// on two streams in test_plans_on_two_streams.cpp, 8K images in test_ops_large_images.cpp.
// sobel.fused's square-root rounding is checked for every possible sum in test_conformance_ops_sqrt.cu,
// sobel.register_window's arithmetic in test_sobel_register_window_arithmetic.cu.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/gpu/op_conformance.hpp"

namespace klab {
namespace {

using namespace op_conformance;

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
                            std::pair{"integral.lookback", Operation::integral},
                            std::pair{"integral.tile_gather", Operation::integral}}) {
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

}  // namespace
}  // namespace klab
