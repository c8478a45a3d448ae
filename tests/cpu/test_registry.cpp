// The variant registry and the host side of every variant, without a GPU: one variant per
// kernels/*.cu file, names that follow their files, default shapes each variant accepts, launch
// descriptions that match their shapes, and the harness's checks of problems and shapes.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include "harness/filter_spec.hpp"
#include "harness/problem.hpp"
#include "harness/variant.hpp"
#include "tests/common/named_variant.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::stringstream stream(text);
    for (std::string part; std::getline(stream, part, separator);) {
        if (!part.empty()) parts.push_back(part);
    }
    return parts;
}

// Every mask shape the variants must accept: squares 1..31 and non-square ones.
std::vector<Mask> mask_shapes() {
    std::vector<Mask> masks;
    for (int k = 1; k <= Mask::kMaxSide; k += 2) masks.push_back(masks::box(k));
    for (auto [w, h] : {std::pair{3, 7}, {7, 3}, {1, 31}, {31, 1}, {31, 15}}) {
        masks.emplace_back(w, h, std::vector<float>(static_cast<std::size_t>(w * h), 1.0f / (w * h)), "flat");
    }
    return masks;
}

TEST(Registry, HoldsOneVariantPerKernelFile) {
    std::vector<std::string> files = split(KLAB_KERNEL_STEMS, ',');
    std::vector<std::string> registered;
    for (const RegisteredVariant& entry : Registry::instance().entries()) {
        registered.push_back(std::filesystem::path(entry.source_file).stem().string());
    }
    std::sort(files.begin(), files.end());
    std::sort(registered.begin(), registered.end());
    EXPECT_FALSE(files.empty());
    // Name the files that differ, not two lists of thirty to compare by eye.
    std::vector<std::string> unregistered, twice_or_unknown;
    std::set_difference(files.begin(), files.end(), registered.begin(), registered.end(), std::back_inserter(unregistered));
    std::set_difference(registered.begin(), registered.end(), files.begin(), files.end(), std::back_inserter(twice_or_unknown));
    EXPECT_TRUE(unregistered.empty()) << "kernels/*.cu files that register no variant (no KLAB_REGISTER_VARIANT line?): "
                                      << fmt::format("{}", fmt::join(unregistered, ", "));
    EXPECT_TRUE(twice_or_unknown.empty()) << "registrations beyond one per kernels/*.cu file: "
                                          << fmt::format("{}", fmt::join(twice_or_unknown, ", "));
    EXPECT_EQ(registered.size(), files.size()) << "each kernels/*.cu file registers exactly one variant";
    EXPECT_TRUE(Registry::instance().errors().empty()) << fmt::format("{}", fmt::join(Registry::instance().errors(), "\n"));
}

// The build gives every variant two hashes (kernels/CMakeLists.txt): of its code, and of its files'
// whole text. Every kernel file has comment lines, so the two differ.
TEST(Registry, EveryVariantHasACodeHashAndAFullTextHash) {
    const auto hex16 = [](const std::string& h) {
        return h.size() == 16 && std::all_of(h.begin(), h.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
    };
    for (const RegisteredVariant& entry : Registry::instance().entries()) {
        EXPECT_TRUE(hex16(entry.source_hash)) << entry.variant->name() << ": " << entry.source_hash;
        EXPECT_TRUE(hex16(entry.full_text_hash)) << entry.variant->name() << ": " << entry.full_text_hash;
        EXPECT_NE(entry.source_hash, entry.full_text_hash) << entry.variant->name();
    }
}

TEST(Registry, NamesFollowTheirFiles) {
    for (const RegisteredVariant& entry : Registry::instance().entries()) {
        std::string expected = std::filesystem::path(entry.source_file).stem().string();
        const std::size_t underscore = expected.find('_');
        ASSERT_NE(underscore, std::string::npos) << entry.source_file << " is not named <op>_<technique>.cu";
        expected[underscore] = '.';  // kernels/conv_halo_tiled.cu registers conv.halo_tiled
        EXPECT_EQ(entry.variant->name(), expected);
        EXPECT_FALSE(entry.variant->technique().empty()) << expected;
        // The file's <op> part names the operation op() returns: conv_ a convolution, and so on.
        const std::map<std::string, Operation> op_of_prefix = {
            {"conv", Operation::convolve}, {"sobel", Operation::sobel}, {"integral", Operation::integral}};
        const auto op = op_of_prefix.find(expected.substr(0, underscore));
        ASSERT_NE(op, op_of_prefix.end()) << entry.source_file << ": <op> is conv, sobel or integral";
        EXPECT_EQ(entry.variant->op(), op->second) << entry.source_file << " registers a " << to_string(entry.variant->op())
                                                   << " variant";
    }
}

// Every tuning parameter lists its values: at least one, none twice, each 1 or more (a kernel
// computes with them: a 0 divides by zero in klab tune, a list of none leaves no shape to tune).
TEST(Registry, TuningParametersListPositiveDistinctValues) {
    for (const Variant* variant : Registry::instance().all()) {
        for (const TunableParameter& p : variant->tuning_space().parameters) {
            SCOPED_TRACE(variant->name() + " parameter " + p.name);
            EXPECT_FALSE(p.values.empty());
            std::vector<int> sorted = p.values;
            std::sort(sorted.begin(), sorted.end());
            EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "a value listed twice";
            EXPECT_TRUE(std::all_of(p.values.begin(), p.values.end(), [](int v) { return v >= 1; }))
                << fmt::format("values {}", fmt::join(p.values, ","));
        }
    }
}

TEST(Registry, HoldsTheSeedsConvolutionVariants) {
    for (const char* name : {"conv.global", "conv.constant", "conv.tiled_2batch", "conv.halo_tiled"}) {
        const Variant* variant = Registry::instance().find(name);
        ASSERT_NE(variant, nullptr) << name;
        EXPECT_EQ(variant->op(), Operation::convolve);
    }
}

TEST(Registry, UnknownNameListsTheRegisteredOnes) {
    test::expect_error([] { Registry::instance().get("conv.fast"); }, "no variant named \"conv.fast\"; allowed: ");
    // Each seed's name, not a run of them: a variant added between them must not break this test.
    for (const char* name : {"conv.constant", "conv.global", "conv.halo_tiled"}) {
        test::expect_error([] { Registry::instance().get("conv.fast"); }, name);
    }
}

using test::NamedVariant;

TEST(Registry, RefusesDuplicateAndEmptyNamesAndKeepsNamesSorted) {
    Registry registry;
    EXPECT_TRUE(registry.add(std::make_unique<NamedVariant>("conv.b"), "b.cu"));
    EXPECT_TRUE(registry.add(std::make_unique<NamedVariant>("conv.a"), "a.cu"));
    EXPECT_FALSE(registry.add(std::make_unique<NamedVariant>("conv.a"), "a2.cu"));
    EXPECT_FALSE(registry.add(std::make_unique<NamedVariant>(""), "empty.cu"));
    ASSERT_EQ(registry.all().size(), 2u);
    EXPECT_EQ(registry.all()[0]->name(), "conv.a");
    EXPECT_EQ(registry.entries()[0].source_file, "a.cu");
    ASSERT_EQ(registry.errors().size(), 2u);
    EXPECT_NE(registry.errors()[0].find("a2.cu: variant name conv.a is registered twice"), std::string::npos);
}

// The register-window variants keep 2R+1 rows of accumulators in registers: the largest mask side
// each takes, and how its refusal says so.
const std::map<std::string, int> kLargestSide = {{"conv.register_window", 9},
                                                 {"conv.register_window_async", 9},
                                                 {"conv.register_tile", 9},
                                                 {"conv.integer_mma", 9},
                                                 {"conv.separable_sliding", 9},
                                                 {"conv.separable_column_first", 9},
                                                 {"conv.separable_row_mma", 9},
                                                 {"conv.shuffle_window", 3},
                                                 {"conv.packed_window", 5},
                                                 {"conv.shuffle_ring", 9}};

// Variants that take only masks whose taps follow a rule (within the sides above), and what their
// refusal of the others says: conv.packed_window's 16-bit lanes, taps that are multiples of 1/256
// (of the flat masks here, box 1 only); conv.box_warp_ring's row sums from a lane's neighbours in
// 16-bit lanes, boxes up to 9 wide and of area up to 256.
struct TapsRule {
    bool (*takes)(const Mask&);
    std::string reason;
};
const std::map<std::string, TapsRule> kTapsRule = {
    {"conv.packed_window", {[](const Mask& m) { return m.width() * m.height() == 1; }, "multiples of 1/256"}},
    {"conv.box_warp_ring",
     {[](const Mask& m) { return m.width() <= 9 && m.width() * m.height() <= 256; }, "boxes up to 9 wide and of area up to 256"}}};

TEST(Variants, AcceptTheirDefaultShapeForEveryMask) {
    for (const Variant* variant : Registry::instance().for_op(Operation::convolve)) {
        const TuningSpace space = variant->tuning_space();
        EXPECT_FALSE(space.block_x.empty());
        EXPECT_FALSE(space.block_y.empty());
        for (const Mask& mask : mask_shapes()) {
            const Problem problem = convolve_problem(ImageShape{64, 48, 3, Layout::aos}, mask, Border{});
            const auto largest = kLargestSide.find(variant->name());
            if (largest != kLargestSide.end() && std::max(mask.width(), mask.height()) > largest->second) {
                const Support refused = variant->supports(problem);
                EXPECT_FALSE(refused) << variant->name() << " takes " << mask.width() << "x" << mask.height();
                const std::string limit = fmt::format("masks up to {0}x{0}", largest->second);
                EXPECT_NE(refused.reason().find(limit), std::string::npos) << refused.reason();
                continue;
            }
            const auto taps_rule = kTapsRule.find(variant->name());
            if (taps_rule != kTapsRule.end() && !taps_rule->second.takes(mask)) {
                const Support refused = variant->supports(problem);
                EXPECT_FALSE(refused) << variant->name() << " takes " << mask.name();
                EXPECT_NE(refused.reason().find(taps_rule->second.reason), std::string::npos) << refused.reason();
                continue;
            }
            ASSERT_TRUE(variant->supports(problem))
                << variant->name() << ": " << variant->supports(problem).reason()
                << " (a variant that refuses masks by design is named here: in kLargestSide with the largest side it takes, or in "
                   "kTapsRule with the rule of the masks it takes; docs/adding-a-variant.md, section 7)";
            const LaunchShape shape = variant->default_shape(problem);
            EXPECT_LE(shape.block_x * shape.block_y, 1024) << variant->name();
            // Each declared parameter set, in order, to one of its listed values: prepare() refuses
            // any other shape, so a default outside the list would fail every untuned launch.
            const std::optional<ParameterMismatch> mismatch = parameter_mismatch(space, shape);
            EXPECT_FALSE(mismatch) << variant->name() << " default " << to_string(shape) << ": "
                                   << (mismatch ? mismatch->problem + "; allowed: " + mismatch->allowed : "");
            const Support accepted = variant->check_shape(problem, shape);
            EXPECT_TRUE(accepted) << variant->name() << " " << to_string(shape) << " " << mask.width() << "x"
                                  << mask.height() << ": " << accepted.reason();
        }
    }
}

// The same for Sobel and the integral image, on gray and RGB.
TEST(Variants, SobelAndIntegralDefaultShapesSetTheirDeclaredParameters) {
    for (const Operation op : {Operation::sobel, Operation::integral}) {
        for (const Variant* variant : Registry::instance().for_op(op)) {
            for (const int channels : {1, 3}) {
                const Problem problem = make_problem(parse_filter_spec(to_string(op)), ImageShape{64, 48, channels, Layout::aos}, Border{});
                if (!variant->supports(problem)) continue;
                const LaunchShape shape = variant->default_shape(problem);
                const std::optional<ParameterMismatch> mismatch = parameter_mismatch(variant->tuning_space(), shape);
                EXPECT_FALSE(mismatch) << variant->name() << " default " << to_string(shape) << ": "
                                       << (mismatch ? mismatch->problem + "; allowed: " + mismatch->allowed : "");
                EXPECT_TRUE(variant->check_shape(problem, shape)) << variant->name() << " " << to_string(shape);
            }
        }
    }
}

// A variant declares its tuning parameters in name order, and its default shape sets them in that
// order: a tuning record keeps a shape's parameters as a JSON object, which reads them back by name,
// and prepare() takes them only in the declared order: a space declared out of order has every
// cached shape refused (a trial space of rows, then pixels: "launch shape 64x4 pixels=8 rows=16 names
// parameter pixels").
TEST(Variants, DeclareTheirParametersInNameOrder) {
    int with_parameters = 0;
    for (const Variant* variant : Registry::instance().all()) {
        const std::string name = variant->name();
        const TuningSpace space = variant->tuning_space();
        std::vector<std::string> declared, in_default;
        for (const TunableParameter& p : space.parameters) declared.push_back(p.name);
        for (const auto& [key, value] : space.default_shape.parameters) in_default.push_back(key);
        EXPECT_TRUE(std::is_sorted(declared.begin(), declared.end())) << name << ": " << fmt::format("{}", fmt::join(declared, ", "));
        EXPECT_EQ(in_default, declared) << name;
        with_parameters += declared.size() > 1 ? 1 : 0;
    }
    EXPECT_GE(with_parameters, 1);  // conv.box_sliding_sums (group, rows): the test can fail
}

// Each launch a variant describes names its kernel and has a block and grid the device can take;
// whether the launches cover the image is the conformance suite's business (a variant may give a
// thread several pixels, or launch a scan with a block of its own).
TEST(Variants, DescribeLaunchesWithAKernelABlockAndAGrid) {
    const ImageShape image{1921, 1079, 4, Layout::soa};
    for (const Variant* variant : Registry::instance().for_op(Operation::convolve)) {
        for (const Mask& mask : {masks::gaussian(3), masks::gaussian(9), masks::box(5)}) {
            const Problem problem = convolve_problem(image, mask, Border{});
            if (!variant->supports(problem)) continue;
            const LaunchShape shape = variant->default_shape(problem);
            const std::vector<KernelLaunch> launches = variant->kernels(problem, shape);
            ASSERT_FALSE(launches.empty()) << variant->name();
            for (const KernelLaunch& k : launches) {
                EXPECT_NE(k.kernel, nullptr) << variant->name();
                EXPECT_FALSE(k.kernel_name.empty()) << variant->name();
                const unsigned threads = k.block.x * k.block.y * k.block.z;
                EXPECT_GE(threads, 1u) << variant->name() << " " << k.kernel_name;
                EXPECT_LE(threads, 1024u) << variant->name() << " " << k.kernel_name;
                EXPECT_GE(static_cast<long long>(k.grid.x) * k.grid.y * k.grid.z, 1) << variant->name() << " " << k.kernel_name;
            }
        }
    }
}

// CUDA grids have at most 2^31-1 blocks in x and 65535 in y and z. A variant's default shape must
// stay within them on the largest images klab accepts, or supports() promises what prepare() refuses.
TEST(Variants, DefaultShapesStayWithinTheGridLimitsOnTheLargestImages) {
    for (const Variant* variant : Registry::instance().all()) {
        for (const ImageShape& image : {ImageShape{8192, kMaxImageSide, 1, Layout::aos},
                                        ImageShape{kMaxImageSide, 8192, 4, Layout::soa},
                                        ImageShape{1, kMaxImageSide, 3, Layout::aos}}) {
            std::vector<Problem> problems;
            if (variant->op() == Operation::convolve) {
                for (const Mask& mask : {masks::box(3), masks::box(15), masks::box(31), masks::gaussian(9)})
                    problems.push_back(convolve_problem(image, mask, Border{}));
            } else {
                problems.push_back(Problem{variant->op(), image, std::nullopt, Border{}});
            }
            for (const Problem& problem : problems) {
                if (!variant->supports(problem)) continue;
                for (const KernelLaunch& k : variant->kernels(problem, variant->default_shape(problem))) {
                    EXPECT_LE(k.grid.x, 2147483647u) << variant->name() << " " << to_string(problem);
                    EXPECT_LE(k.grid.y, 65535u) << variant->name() << " " << to_string(problem);
                    EXPECT_LE(k.grid.z, 65535u) << variant->name() << " " << to_string(problem);
                }
            }
        }
    }
}

TEST(Variants, HaloTiledGridHasOneBlockPerOutputTile) {
    const Variant& variant = Registry::instance().get("conv.halo_tiled");
    const Problem problem = convolve_problem(ImageShape{100, 50, 3, Layout::aos}, masks::gaussian(9), Border{});
    const std::vector<KernelLaunch> launches = variant.kernels(problem, LaunchShape{32, 16, {}});
    ASSERT_EQ(launches.size(), 1u);
    // 24x8 outputs per block: ceil(100/24) = 5 tiles across, ceil(50/8) = 7 down.
    EXPECT_EQ(launches[0].grid.x, 5u);
    EXPECT_EQ(launches[0].grid.y, 7u);
    // A 31x31 mask leaves 2x2 outputs per 32x32 block: 131070 rows fit in a grid's 65535 blocks
    // in y, 131072 rows do not, and supports() says so.
    const Problem fits = convolve_problem(ImageShape{64, 131070, 1, Layout::aos}, masks::box(31), Border{});
    EXPECT_TRUE(variant.supports(fits));
    EXPECT_EQ(variant.kernels(fits, variant.default_shape(fits))[0].grid.y, 65535u);
    const Support tall = variant.supports(convolve_problem(ImageShape{64, kMaxImageSide, 1, Layout::aos}, masks::box(31), Border{}));
    EXPECT_FALSE(tall);
    EXPECT_EQ(tall.reason(), "images up to 131070 rows for a 31-row mask (65535 blocks of 2 output rows)");
    EXPECT_EQ(launches[0].dynamic_shared_bytes, 32u * 16u * 3u);
}

TEST(Variants, HaloTiledRefusesABlockNoWiderThanTheHalo) {
    const Variant& variant = Registry::instance().get("conv.halo_tiled");
    const Problem problem = convolve_problem(ImageShape{64, 48, 1, Layout::aos}, masks::gaussian(9), Border{});
    const Support refused = variant.check_shape(problem, LaunchShape{8, 32, {}});
    EXPECT_FALSE(refused);
    EXPECT_NE(refused.reason().find("a 9x9 mask needs a block wider than 8 and taller than 8"), std::string::npos);
    EXPECT_TRUE(variant.check_shape(problem, LaunchShape{9, 9, {}}));
}

TEST(Problem, ValidateRefusesBadShapesAndMissingMasks) {
    const auto problem_with = [](ImageShape shape) { return convolve_problem(shape, masks::box(3), Border{}); };
    test::expect_error([&] { validate(problem_with({0, 5, 1, Layout::aos})); }, "image size 0x5 is empty");
    test::expect_error([&] { validate(problem_with({5, 0, 3, Layout::aos})); }, "image size 5x0 is empty");
    test::expect_error([&] { validate(problem_with({5, 5, 2, Layout::aos})); }, "image has 2 channels; allowed: 1 (gray), 3 (RGB), 4 (RGBA)");
    test::expect_error([&] { validate(problem_with({5, 5, 5, Layout::soa})); }, "image has 5 channels");
    Problem no_mask;
    no_mask.shape = {5, 5, 1, Layout::aos};
    test::expect_error([&] { validate(no_mask); }, "a convolve problem without a mask");
    Problem sobel_with_mask = problem_with({5, 5, 1, Layout::aos});
    sobel_with_mask.op = Operation::sobel;
    test::expect_error([&] { validate(sobel_with_mask); }, "a mask given to the sobel operation");
    EXPECT_NO_THROW(validate(problem_with({1, 1, 4, Layout::soa})));
}

TEST(Problem, EvenAndOversizedMasksAreRefusedWhenBuilt) {
    test::expect_error([] { Mask(4, 3, std::vector<float>(12, 0.1f)); }, "odd");
    test::expect_error([] { Mask(33, 33, std::vector<float>(33 * 33, 0.1f)); }, "1 to 31");
}

TEST(Problem, DescribesItself) {
    const Problem problem = convolve_problem({1920, 1080, 3, Layout::aos}, masks::gaussian(5), Border{});
    EXPECT_EQ(to_string(problem), "convolve 1920x1080x3 aos, gauss5 (5x5), replicate");
    Problem sobel;
    sobel.op = Operation::sobel;
    sobel.shape = {8, 4, 3, Layout::soa};
    EXPECT_EQ(output_shape(sobel), (ImageShape{8, 4, 1, Layout::aos}));
}

TEST(LaunchShape, ParsesAndPrints) {
    const LaunchShape shape = parse_block_shape("32x8");
    EXPECT_EQ(shape.block_x, 32);
    EXPECT_EQ(shape.block_y, 8);
    EXPECT_EQ(to_string(LaunchShape{16, 4, {{"outputs_per_thread", 2}}}), "16x4 outputs_per_thread=2");
    EXPECT_EQ(LaunchShape({16, 4, {{"outputs_per_thread", 2}}}).parameter("outputs_per_thread"), 2);
    test::expect_error([] { LaunchShape{}.parameter("outputs_per_thread"); }, "has no parameter outputs_per_thread");
    for (const char* bad : {"", "32", "32x", "x8", "0x8", "32x0", "2048x1", "32x8x1", "3 2x8", "-1x8"}) {
        test::expect_error([&] { parse_block_shape(bad); }, "allowed: XxY with 1 <= X, Y <= 1024");
    }
}

}  // namespace
}  // namespace klab
