// The autotuner's CPU-side parts: the offline occupancy calculator against hand-computed values,
// the search space and its exclusion reasons, ranking, statistics, problem classes, the cache
// (round trip, merge, concurrent writers, rejected files) and the run-time lookup levels.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "autotune/gpu_model.hpp"
#include "autotune/occupancy.hpp"
#include "autotune/problem_class.hpp"
#include "autotune/search_space.hpp"
#include "autotune/statistics.hpp"
#include "autotune/tuner.hpp"
#include "autotune/tuning_cache.hpp"
#include "harness/device_info.hpp"
#include "tests/common/run_command.hpp"
#include "tests/common/test_util.hpp"

namespace klab::autotune {
namespace {

namespace fs = std::filesystem;

GpuModel model(const char* name) {
    const std::optional<GpuModel> m = find_gpu_model(name);
    if (!m) throw std::runtime_error(std::string("no model ") + name);
    return *m;
}

KernelResources resources(int registers, std::size_t static_shared = 0) {
    KernelResources r;
    r.registers_per_thread = registers;
    r.static_shared_bytes = static_shared;
    return r;
}

// ---------------------------------------------------------------------------------------------
// Offline occupancy (cuda_occupancy.h) on H100/H200 properties, against hand-computed values:
// an SM holds 2048 threads, 32 blocks, 64 K registers (allocated per warp in units of 256) and
// 228 KiB of shared memory (1 KiB reserved per block).

TEST(Occupancy, SixtyFourToTenTwentyFourThreadBlocksAtUpTo32RegistersReachFullOccupancy) {
    for (const char* name : {"H100", "H200"}) {
        for (int threads : {64, 128, 256, 512, 1024}) {
            for (int registers : {16, 24, 32}) {
                const Occupancy o = occupancy(model(name), resources(registers), threads, 0);
                EXPECT_EQ(o.fraction, 1.0) << name << " " << threads << " threads " << registers << " registers";
                EXPECT_EQ(o.blocks_per_sm, 2048 / threads);
                EXPECT_EQ(o.limited_by, "");
            }
        }
    }
}

TEST(Occupancy, ThirtyTwoThreadBlocksReachHalfBecauseAnSmHoldsThirtyTwoBlocks) {
    for (const char* name : {"H100", "H200"}) {
        const Occupancy o = occupancy(model(name), resources(32), 32, 0);
        EXPECT_EQ(o.blocks_per_sm, 32) << name;
        EXPECT_EQ(o.fraction, 0.5) << name;
        EXPECT_NE(o.limited_by.find("blocks"), std::string::npos) << o.limited_by;
    }
}

TEST(Occupancy, FortyRegistersCannotReachFullOccupancy) {
    // 40 registers x 32 threads = 1280 per warp; 65536 / 1280 = 51 warps -> whole blocks of 8
    // warps (256 threads): 6 blocks = 1536 threads = 75%.
    for (int threads : {64, 128, 256, 512, 1024}) {
        const Occupancy o = occupancy(model("H100"), resources(40), threads, 0);
        EXPECT_LT(o.fraction, 1.0) << threads;
        EXPECT_NE(o.limited_by.find("registers"), std::string::npos) << o.limited_by;
    }
    EXPECT_EQ(occupancy(model("H100"), resources(40), 256, 0).fraction, 0.75);
    EXPECT_EQ(occupancy(model("H100"), resources(40), 1024, 0).fraction, 0.5);  // one 1024-thread block fits
}

TEST(Occupancy, SharedMemoryLimitsBlocks) {
    // 64 KiB + 1 KiB reserved per block: three blocks fit in 228 KiB -> 3 x 256 = 768 threads.
    const Occupancy o = occupancy(model("H200"), resources(32), 256, 64 * 1024);
    EXPECT_EQ(o.blocks_per_sm, 3);
    EXPECT_EQ(o.fraction, 768.0 / 2048.0);
    EXPECT_NE(o.limited_by.find("shared memory"), std::string::npos);
}

TEST(Occupancy, AdaSmsHold1536ThreadsSoTenTwentyFourThreadBlocksReachTwoThirds) {
    for (const char* name : {"L4", "RTX 4090"}) {
        EXPECT_NEAR(occupancy(model(name), resources(32), 1024, 0).fraction, 1024.0 / 1536.0, 1e-12) << name;
        EXPECT_EQ(occupancy(model(name), resources(32), 512, 0).fraction, 1.0) << name;
    }
    EXPECT_EQ(occupancy(model("A100"), resources(32), 1024, 0).fraction, 1.0);
}

TEST(Occupancy, BlocksThatCannotRunAreErrorsNamingTheLimit) {
    test::expect_error([] { occupancy(model("H200"), resources(32), 2048, 0); }, "threads per block");
    test::expect_error([] { occupancy(model("H200"), resources(32), 256, 300 * 1024); }, "bytes of shared memory");
    test::expect_error([] { occupancy(model("H200"), resources(255), 1024, 0); }, "not one block fits");
    KernelResources limited = resources(32);
    limited.max_threads_per_block = 256;
    test::expect_error([&] { occupancy(model("H200"), limited, 512, 0); }, "1 to 256 threads");
}

TEST(Occupancy, PercentTextNeverRoundsUpToFull) {
    EXPECT_EQ(percent_text(1.0), "100%");
    EXPECT_EQ(percent_text(0.75), "75%");
    EXPECT_EQ(percent_text(0.9995), "99.9%");
    EXPECT_EQ(percent_text(2.0 / 3.0), "66.6%");
}

TEST(GpuModels, NamesAliasesAndSlugs) {
    EXPECT_EQ(model("H200").name, "NVIDIA H200");
    EXPECT_EQ(model("h100").cc_major, 9);
    EXPECT_EQ(model("a100").sm_count, 108);
    EXPECT_EQ(model("RTX 4090").max_threads_per_sm, 1536);
    EXPECT_EQ(model("NVIDIA L4").cc_minor, 9);
    EXPECT_FALSE(find_gpu_model("H1000"));
    EXPECT_FALSE(find_gpu_model("X100"));
    EXPECT_FALSE(find_gpu_model(""));
    EXPECT_EQ(gpu_slug("NVIDIA H200"), "nvidia-h200");
    EXPECT_EQ(gpu_slug("NVIDIA GeForce RTX 4090"), "nvidia-geforce-rtx-4090");
    EXPECT_EQ(gpu_slug("  NVIDIA  H100 80GB HBM3 "), "nvidia-h100-80gb-hbm3");
    test::expect_error([] { gpu_slug("--"); }, "GPU name");
}

// ---------------------------------------------------------------------------------------------
// The search space, with a variant made for the test (never registered): two kernels, the
// second with 40 registers when the block is wider than 128; blocks narrower than 8 refused.

class SpaceVariant : public Variant {
public:
    std::string name() const override { return "test.space"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override { return "test"; }
    Support supports(const Problem& p) const override {
        return p.shape.channels == 4 ? Support::no("no RGBA") : Support::yes();
    }
    TuningSpace tuning_space() const override {
        TuningSpace s = block_tuning_space(LaunchShape{32, 8, {{"outputs", 1}}});
        s.parameters.push_back({"outputs", {1, 2}, "outputs per thread"});
        return s;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        return shape.block_x < 8 ? Support::no("blocks at least 8 wide") : Support::yes();
    }
    std::vector<KernelLaunch> kernels(const Problem&, const LaunchShape& shape) const override {
        const dim3 block(shape.block_x, shape.block_y);
        const std::string second = shape.block_x > 128 ? "wide_kernel" : "narrow_kernel";
        return {KernelLaunch{nullptr, "first_kernel", dim3(1), block, 0}, KernelLaunch{nullptr, second, dim3(1), block, 0}};
    }
    void enqueue(const LaunchPlan&, cudaStream_t) const override {}
};

std::optional<KernelResources> space_resources(const std::string& kernel) {
    if (kernel == "first_kernel" || kernel == "narrow_kernel") return resources(32);
    if (kernel == "wide_kernel") return resources(40);
    return std::nullopt;
}

Problem hd_problem(int channels = 3) {
    return convolve_problem({1920, 1080, channels, Layout::aos}, masks::gaussian(3), Border{BorderMode::replicate, 0});
}

TEST(SearchSpace, ExcludesWhatItShouldWithReasons) {
    const SpaceVariant variant;
    const SearchSpace space = search_space(variant, hd_problem(), 1.0, offline_oracle(model("H200"), space_resources));
    // 9 widths x 9 heights x 2 parameter values.
    ASSERT_EQ(space.candidates.size(), 9u * 9u * 2u);
    int included = 0;
    for (const Candidate& c : space.candidates) {
        const int t = c.shape.block_x * c.shape.block_y;
        SCOPED_TRACE(to_string(c.shape));
        if (t < 64 || t > 1024) {
            EXPECT_EQ(c.excluded_because.rfind("outside 64..1024 threads", 0), 0u) << c.excluded_because;
        } else if (c.shape.block_x < 8) {
            EXPECT_EQ(c.excluded_because, "refused by the variant: blocks at least 8 wide");
        } else if (c.shape.block_x > 128) {
            // The 40-register kernel caps the variant's occupancy.
            EXPECT_EQ(c.excluded_because.rfind("below 100% occupancy", 0), 0u) << c.excluded_because;
            EXPECT_NE(c.excluded_because.find("registers"), std::string::npos);
            ASSERT_TRUE(c.occupancy);
            EXPECT_LT(c.occupancy->fraction, 1.0);
        } else {
            EXPECT_TRUE(c.included()) << c.excluded_because;
            EXPECT_EQ(c.kernels.size(), 2u);
            EXPECT_EQ(c.occupancy->fraction, 1.0);
            ++included;
        }
    }
    EXPECT_EQ(static_cast<int>(space.included().size()), included);
    EXPECT_GT(included, 0);
    EXPECT_NE(space.summary().find("outside 64..1024 threads"), std::string::npos) << space.summary();

    // --min-occupancy 0.5 admits the 40-register shapes (75% or 50%).
    const SearchSpace wide = search_space(variant, hd_problem(), 0.5, offline_oracle(model("H200"), space_resources));
    EXPECT_GT(wide.included().size(), space.included().size());
    for (const Candidate* c : wide.included()) EXPECT_GE(c->occupancy->fraction, 0.5);
}

TEST(SearchSpace, KernelsWithoutRecordedResourcesAndBadArgumentsAreReported) {
    const SpaceVariant variant;
    const SearchSpace space = search_space(variant, hd_problem(), 1.0, offline_oracle(model("H200"), [](const std::string&) {
                                               return std::optional<KernelResources>();
                                           }));
    EXPECT_TRUE(space.included().empty());
    bool said = false;
    for (const Candidate& c : space.candidates) said = said || c.excluded_because.find("no recorded registers") != std::string::npos;
    EXPECT_TRUE(said);
    const auto oracle = offline_oracle(model("H200"), space_resources);
    test::expect_error([&] { search_space(variant, hd_problem(), 0.0, oracle); }, "minimum occupancy");
    test::expect_error([&] { search_space(variant, hd_problem(), 1.5, oracle); }, "minimum occupancy");
    test::expect_error([&] { search_space(variant, hd_problem(4), 1.0, oracle); }, "no RGBA");
}

TEST(SearchSpace, ShapesWhoseGridExceedsCudasLimitsAreExcluded) {
    const Variant& global = Registry::instance().get("conv.global");
    const Problem tall = convolve_problem({64, kMaxImageSide, 1, Layout::aos}, masks::box(3), Border{});
    const auto any = [](const std::string&) { return std::optional<KernelResources>(resources(32)); };
    const SearchSpace space = search_space(global, tall, 1.0, offline_oracle(model("H200"), any));
    bool wide_excluded = false;
    for (const Candidate& c : space.candidates) {
        if (c.shape.block_x == 64 && c.shape.block_y == 1) {
            wide_excluded = true;
            EXPECT_EQ(c.excluded_because, "cannot run: kernel conv_global_kernel needs a 1x131072x1 grid; CUDA allows at most "
                                          "2147483647x65535x65535");
        }
        if (c.included()) {
            EXPECT_GE(c.shape.block_y, 2) << to_string(c.shape);
        }
    }
    EXPECT_TRUE(wide_excluded);
    EXPECT_FALSE(space.included().empty());
}

// Every registered convolution variant's default shape lies in the standard space's block sides.
TEST(SearchSpace, EveryVariantDeclaresItsDefaultShapeInItsSpace) {
    for (const Variant* v : Registry::instance().for_op(Operation::convolve)) {
        const TuningSpace s = v->tuning_space();
        const LaunchShape d = v->default_shape(hd_problem());
        EXPECT_NE(std::find(s.block_x.begin(), s.block_x.end(), d.block_x), s.block_x.end()) << v->name();
        EXPECT_NE(std::find(s.block_y.begin(), s.block_y.end(), d.block_y), s.block_y.end()) << v->name();
    }
}

// ---------------------------------------------------------------------------------------------

TEST(Statistics, QuartilesInterpolateLikeNumpy) {
    const Quartiles q = quartiles({4.0, 1.0, 3.0, 2.0});
    EXPECT_DOUBLE_EQ(q.q1, 1.75);
    EXPECT_DOUBLE_EQ(q.median, 2.5);
    EXPECT_DOUBLE_EQ(q.q3, 3.25);
    EXPECT_DOUBLE_EQ(q.relative_spread(), 1.5 / 2.5);
    EXPECT_DOUBLE_EQ(quantile({7.0}, 0.5), 7.0);
    EXPECT_DOUBLE_EQ(quantile({1.0, 2.0, 3.0, 4.0, 5.0}, 0.5), 3.0);
    test::expect_error([] { quantile({}, 0.5); }, "no samples");
}

MeasuredCandidate measured(int x, int y, double median_us, double occupancy_fraction = 1.0) {
    MeasuredCandidate m;
    m.shape = LaunchShape{x, y, {}};
    m.us = {median_us * 0.99, median_us, median_us * 1.02};
    m.samples = 10;
    m.occupancy.fraction = occupancy_fraction;
    m.kernels.push_back({"k", resources(30, 16), 1024});
    return m;
}

TEST(Ranking, TiesWithinOnePercentPreferTheDefaultThenFewerThreadsThenNarrower) {
    const std::vector<MeasuredCandidate> m = {measured(64, 8, 100.5), measured(32, 4, 100.9), measured(16, 8, 100.0),
                                              measured(32, 8, 100.8), measured(8, 8, 99.0 * 1.5)};
    // Fastest 100.0; all but the last within 1%. Default 32x8 first; then 128 threads (16x8 before
    // 32x4: narrower), then 512.
    const std::vector<std::size_t> order = rank_candidates(m, LaunchShape{32, 8, {}}, 0.01);
    EXPECT_EQ(order, (std::vector<std::size_t>{3, 2, 1, 0, 4}));
    // Without the default among them: fewer threads first.
    EXPECT_EQ(rank_candidates(m, LaunchShape{4, 4, {}}, 0.01), (std::vector<std::size_t>{2, 1, 3, 0, 4}));
    // With no tolerance and no floor, by median alone.
    EXPECT_EQ(rank_candidates(m, LaunchShape{32, 8, {}}, 0.0, 0.0), (std::vector<std::size_t>{2, 0, 3, 1, 4}));
}

// At a few microseconds, 1% is below the CUDA events' 0.5 us resolution: the tie window never
// shrinks below twice that.
TEST(Ranking, ShortKernelsTieWithinTwiceTheEventResolution) {
    const std::vector<MeasuredCandidate> m = {measured(64, 4, 10.0), measured(32, 8, 10.9), measured(16, 4, 11.1)};
    EXPECT_EQ(rank_candidates(m, LaunchShape{32, 8, {}}, 0.01), (std::vector<std::size_t>{1, 0, 2}));
    EXPECT_EQ(rank_candidates(m, LaunchShape{32, 8, {}}, 0.01, 0.0), (std::vector<std::size_t>{0, 1, 2}));
}

TEST(RuleCost, IsTheFastestAtTheMinimumOverTheFastestOverall) {
    const std::vector<MeasuredCandidate> at_minimum = {measured(32, 8, 104.0), measured(64, 4, 110.0)};
    const std::vector<MeasuredCandidate> below = {measured(128, 4, 100.0, 0.75), measured(8, 8, 120.0, 0.5)};
    EXPECT_NEAR(*rule_cost(at_minimum, below, true), 0.04, 1e-12);
    // Nothing faster below the minimum: it costs nothing, whatever the tie-break picked.
    EXPECT_EQ(*rule_cost(at_minimum, {measured(8, 8, 120.0, 0.5)}, true), 0.0);
    EXPECT_EQ(*rule_cost(at_minimum, {}, true), 0.0);
    // No wider set to compare with, or nothing at the minimum: no figure.
    EXPECT_FALSE(rule_cost(at_minimum, below, false));
    EXPECT_FALSE(rule_cost({}, below, true));
}

TEST(AppliedMinimum, IsTheRequestedOneOrTheHighestReached) {
    const SpaceVariant variant;
    const auto forty = [](const std::string&) { return std::optional<KernelResources>(resources(40)); };
    // Every shape at 40 registers: at most 75% on an H200.
    const SearchSpace space = search_space(variant, hd_problem(), 0.5, offline_oracle(model("H200"), forty));
    EXPECT_EQ(applied_min_occupancy(space, 1.0), 0.75);
    EXPECT_EQ(applied_min_occupancy(space, 0.6), 0.6);
    const SearchSpace none = search_space(variant, hd_problem(), 0.9, offline_oracle(model("H200"), forty));
    test::expect_error([&] { applied_min_occupancy(none, 1.0); }, "no candidate reaches 90% occupancy");
}

// ---------------------------------------------------------------------------------------------

TEST(ProblemClasses, TextRoundTripsAndBucketsAreNearestByPixels) {
    const ProblemClass c = parse_problem_class("8K/9x9/c3/soa");
    EXPECT_EQ(c.resolution, "8K");
    EXPECT_EQ(c.mask_width, 9);
    EXPECT_EQ(c.layout, Layout::soa);
    EXPECT_EQ(to_string(c), "8K/9x9/c3/soa");
    for (const char* bad : {"8K/9x9/c3", "9K/9x9/c3/aos", "HD/4x4/c3/aos", "HD/3x3/c2/aos", "HD/3x3/3/aos", "HD/3x3/c3/xyz",
                            "HD/3x3x/c3/aos", "HD/33x33/c3/aos", "HD/3x3/c3x/aos"}) {
        test::expect_error([&] { parse_problem_class(bad); }, "HD/3x3/c3/aos");
    }
    EXPECT_EQ(resolution_bucket(1920, 1080), "HD");
    EXPECT_EQ(resolution_bucket(2000, 1000), "HD");
    EXPECT_EQ(resolution_bucket(1, 1), "480p");
    EXPECT_EQ(resolution_bucket(100000, 10000), "8K");
    EXPECT_EQ(resolution_bucket(3840, 2160), "4K");
    EXPECT_EQ(problem_class(convolve_problem({3000, 2000, 1, Layout::soa}, masks::box(5), Border{})).resolution, "4K");
    const Problem p = representative_problem(c);
    EXPECT_EQ(p.shape.width, 7680);
    EXPECT_EQ(p.shape.height, 4320);
    EXPECT_EQ(p.mask->name(), "gauss9");
    EXPECT_EQ(representative_problem(parse_problem_class("480p/1x7/c1/aos")).mask->height(), 7);
}

Problem op_problem(Operation op, ImageShape shape) {
    Problem p;
    p.op = op;
    p.shape = shape;
    p.border = Border{BorderMode::replicate, 0};
    return p;
}

TEST(ProblemClasses, SobelAndIntegralClassesRoundTripBesideTheConvolutionForm) {
    for (const char* text : {"sobel/8K/c1/aos", "sobel/HD/c3/soa", "integral/8K/c1/aos/u64", "integral/8K/c1/aos/u32",
                             "integral/4K/c3/aos/u32", "integral/480p/c4/soa/u32", "HD/3x3/c3/aos"}) {
        EXPECT_EQ(to_string(parse_problem_class(text)), text);
    }
    const ProblemClass sobel = parse_problem_class("sobel/8K/c3/aos");
    EXPECT_EQ(sobel.op, Operation::sobel);
    EXPECT_EQ(sobel.mask_width, 0);
    EXPECT_FALSE(sobel == parse_problem_class("8K/3x3/c3/aos"));
    EXPECT_FALSE(parse_problem_class("integral/8K/c1/aos/u32") == parse_problem_class("integral/8K/c1/aos/u64"));
    // Malformed, or a u64 class below 8K (every smaller bucket's sums fit u32).
    for (const char* bad : {"sobel/8K/c1", "sobel/8K/3x3/c1/aos", "sobel/8K/c2/aos", "integral/8K/c1/aos", "integral/8K/c1/aos/u16",
                            "integral/HD/c1/aos/u64", "integral/4K/c1/aos/u64", "median/8K/c1/aos", "sobel/9K/c1/aos"}) {
        test::expect_error([&] { parse_problem_class(bad); }, "sobel/RESOLUTION/cC/LAYOUT");
    }
}

TEST(ProblemClasses, SobelAndIntegralProblemsFallIntoTheirClasses) {
    EXPECT_EQ(to_string(problem_class(op_problem(Operation::sobel, {7680, 4320, 1, Layout::aos}))), "sobel/8K/c1/aos");
    EXPECT_EQ(to_string(problem_class(op_problem(Operation::sobel, {2000, 1000, 3, Layout::soa}))), "sobel/HD/c3/soa");
    EXPECT_EQ(to_string(problem_class(op_problem(Operation::integral, {7680, 4320, 3, Layout::aos}))), "integral/8K/c3/aos/u64");
    EXPECT_EQ(to_string(problem_class(op_problem(Operation::integral, {3840, 2160, 1, Layout::aos}))), "integral/4K/c1/aos/u32");
    // 4096x4096 is nearer 8K than 4K by pixel count, and its sums still fit u32.
    EXPECT_EQ(to_string(problem_class(op_problem(Operation::integral, {4096, 4096, 1, Layout::aos}))), "integral/8K/c1/aos/u32");
}

TEST(ProblemClasses, SobelAndIntegralClassesAreMeasuredOnTheirBucketsImage) {
    const Problem sobel = representative_problem(parse_problem_class("sobel/HD/c3/soa"));
    EXPECT_EQ(sobel.op, Operation::sobel);
    EXPECT_EQ(sobel.shape, (ImageShape{1920, 1080, 3, Layout::soa}));
    EXPECT_FALSE(sobel.mask);
    EXPECT_EQ(sobel.border.mode, BorderMode::replicate);
    const Problem wide = representative_problem(parse_problem_class("integral/8K/c1/aos/u64"));
    EXPECT_EQ(wide.shape, (ImageShape{7680, 4320, 1, Layout::aos}));
    // The 8K bucket's u32 class: the largest square whose sums fit u32, itself in the 8K bucket.
    const Problem narrow = representative_problem(parse_problem_class("integral/8K/c1/aos/u32"));
    EXPECT_EQ(narrow.shape, (ImageShape{4096, 4096, 1, Layout::aos}));
    EXPECT_EQ(to_string(problem_class(narrow)), "integral/8K/c1/aos/u32");
    for (const char* text : {"integral/480p/c3/aos/u32", "integral/4K/c1/soa/u32", "sobel/8K/c4/aos"}) {
        EXPECT_EQ(to_string(problem_class(representative_problem(parse_problem_class(text)))), text);
    }
}

class BoxOnlyVariant : public SpaceVariant {
public:
    Support supports(const Problem& p) const override {
        return p.mask->name().rfind("box", 0) == 0 ? Support::yes() : Support::no("box masks only");
    }
};

TEST(ProblemClasses, AVariantThatTakesBoxMasksOnlyIsTunedOnABox) {
    const ProblemClass c = parse_problem_class("HD/9x9/c3/aos");
    EXPECT_EQ(representative_problem(c, SpaceVariant()).mask->name(), "gauss9");
    EXPECT_EQ(representative_problem(c, BoxOnlyVariant()).mask->name(), "box9");
}

// ---------------------------------------------------------------------------------------------
// The cache

GpuIdentity h200(int driver = 13000) { return {"NVIDIA H200", 9, 0, 132, driver, 13000}; }
GpuIdentity h100() { return {"NVIDIA H100 80GB HBM3", 9, 0, 132, 13000, 13000}; }

TuningRecord record(const GpuIdentity& gpu, const std::string& variant, const std::string& problem_class, int x, int y,
                    const std::string& hash = "hash") {
    TuningRecord r;
    r.gpu = gpu;
    r.variant = variant;
    r.source_hash = hash;
    r.problem_class = parse_problem_class(problem_class);
    r.problem = "convolve ...";
    MeasuredCandidate best = measured(x, y, 10.0);
    best.kernels = {{"k", resources(30, 16), 1024}};
    best.occupancy.blocks_per_sm = 8;
    r.top = {best, measured(x, y * 2 <= 256 ? y * 2 : 1, 10.5)};
    r.best_relaxed = best;
    r.rule_cost = 0.0;
    r.default_shape = measured(32, 8, 12.0);
    r.kernels_seen = {{"k", resources(30, 16), 0}, {"k2", resources(40), 0}};
    r.candidates_measured = 30;
    r.candidates_excluded = 51;
    r.invalid.push_back({LaunchShape{8, 8, {}}, "differs from the CPU reference"});
    r.tuned_at = "2026-11-21T22:00:00Z";
    r.klab_version = "abc";
    return r;
}

// `text` with the first `from` replaced by `to`; fails the test when `from` is absent.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << "no " << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

class Cache : public ::testing::Test {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / fmt::format("klab_cache_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                                                      ::getpid());
        fs::remove_all(dir);
    }
    void TearDown() override { fs::remove_all(dir); }
    fs::path h200_file() const { return dir / "nvidia-h200" / "autotune.json"; }
    void write(const fs::path& file, const std::string& text) {
        fs::create_directories(file.parent_path());
        std::ofstream(file) << text;
    }
    std::string read(const fs::path& file) {
        std::ifstream in(file);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    fs::path dir;
};

TEST_F(Cache, RoundTripsEveryField) {
    std::vector<std::string> warnings;
    TuningRecord r = record(h200(), "conv.global", "HD/3x3/c3/aos", 64, 4);
    r.top.front().shape.parameters = {{"outputs", 2}};
    r.min_occupancy = 0.75;
    r.note = "no shape reaches 100% occupancy; tuned at the highest reached, 75%";
    store(dir, {r}, warnings);
    EXPECT_TRUE(warnings.empty());
    ASSERT_TRUE(fs::exists(h200_file()));
    const TuningCache cache = TuningCache::load_directory(dir, warnings);
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    ASSERT_EQ(cache.records().size(), 1u);
    const TuningRecord& back = cache.records().front();
    EXPECT_EQ(back.gpu.key(), r.gpu.key());
    EXPECT_EQ(back.variant, r.variant);
    EXPECT_EQ(back.source_hash, r.source_hash);
    EXPECT_EQ(back.requested_min_occupancy, 1.0);
    EXPECT_EQ(back.min_occupancy, 0.75);
    EXPECT_EQ(back.note, r.note);
    EXPECT_EQ(back.problem_class, r.problem_class);
    ASSERT_EQ(back.top.size(), 2u);
    EXPECT_EQ(to_string(back.top[0].shape), "64x4 outputs=2");
    EXPECT_EQ(back.top[0].us.median, 10.0);
    EXPECT_EQ(back.top[0].occupancy.blocks_per_sm, 8);
    ASSERT_EQ(back.top[0].kernels.size(), 1u);
    EXPECT_EQ(back.top[0].kernels[0].resources.registers_per_thread, 30);
    EXPECT_EQ(back.top[0].kernels[0].resources.static_shared_bytes, 16u);
    EXPECT_EQ(back.top[0].kernels[0].dynamic_shared_bytes, 1024u);
    ASSERT_TRUE(back.default_shape);
    EXPECT_EQ(back.default_shape->us.median, 12.0);
    EXPECT_EQ(back.rule_cost, 0.0);
    EXPECT_EQ(back.candidates_excluded, 51);
    ASSERT_EQ(back.invalid.size(), 1u);
    EXPECT_EQ(back.invalid[0].reason, "differs from the CPU reference");
    EXPECT_EQ(back.tuned_at, r.tuned_at);
    EXPECT_EQ(back.klab_version, "abc");
    // Every field: the record read back and stored again gives the same file, byte for byte.
    std::vector<std::string> again_warnings;
    store(dir / "again", cache.records(), again_warnings);
    EXPECT_EQ(read(dir / "again" / "nvidia-h200" / "autotune.json"), read(h200_file()));
    // No temporary or rejected file is left beside it.
    for (const auto& entry : fs::directory_iterator(h200_file().parent_path())) {
        const std::string name = entry.path().filename().string();
        EXPECT_TRUE(name == "autotune.json" || name == "autotune.json.lock") << name;
    }
}

// A cache holding the first form of class ("HD/3x3/c3/aos") and the Sobel and integral forms reads
// back whole: the format version did not change, so caches written before these classes stay valid.
TEST_F(Cache, KeepsConvolutionSobelAndIntegralRecordsTogether) {
    std::vector<std::string> warnings;
    store(dir, {record(h200(), "conv.global", "HD/3x3/c3/aos", 64, 4), record(h200(), "sobel.fused", "sobel/8K/c1/aos", 32, 8),
                record(h200(), "integral.scan", "integral/8K/c1/aos/u64", 32, 4)},
          warnings);
    EXPECT_TRUE(warnings.empty());
    EXPECT_NE(read(h200_file()).find("\"version\": 1"), std::string::npos);
    const TuningCache cache = TuningCache::load_directory(dir, warnings);
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    ASSERT_EQ(cache.records().size(), 3u);
    EXPECT_EQ(to_string(cache.records()[1].problem_class), "sobel/8K/c1/aos");
    EXPECT_EQ(to_string(cache.records()[2].problem_class), "integral/8K/c1/aos/u64");
}

TEST_F(Cache, MergesReplacingOnlyTheSameGpuVariantAndClass) {
    std::vector<std::string> warnings;
    store(dir, {record(h200(), "conv.global", "HD/3x3/c3/aos", 64, 4), record(h200(), "conv.global", "8K/3x3/c3/aos", 64, 4)},
          warnings);
    store(dir, {record(h200(), "conv.global", "HD/3x3/c3/aos", 128, 2), record(h200(), "conv.constant", "HD/3x3/c3/aos", 16, 16)},
          warnings);
    store(dir, {record(h200(14000), "conv.global", "HD/3x3/c3/aos", 8, 8)}, warnings);  // another driver: another key
    TuningRecord relaxed = record(h200(), "conv.global", "HD/3x3/c3/aos", 16, 16);
    relaxed.requested_min_occupancy = 0.5;  // another rule: kept beside the 100% record
    store(dir, {relaxed}, warnings);
    const TuningCache cache = TuningCache::load_file(h200_file(), warnings);
    EXPECT_TRUE(warnings.empty());
    ASSERT_EQ(cache.records().size(), 5u);
    int replaced = 0;
    for (const TuningRecord& r : cache.records()) {
        if (r.variant == "conv.global" && to_string(r.problem_class) == "HD/3x3/c3/aos" && r.gpu.driver_version == 13000 &&
            r.requested_min_occupancy == 1.0) {
            EXPECT_EQ(to_string(r.top.front().shape), "128x2");
            ++replaced;
        }
    }
    EXPECT_EQ(replaced, 1);
}

TEST_F(Cache, TwoWritersAtOnceLoseNothing) {
    const auto writer = [&](const std::string& variant) {
        for (int i = 0; i < 12; ++i) {
            std::vector<std::string> warnings;
            store(dir, {record(h200(), variant, fmt::format("HD/{}x{}/c3/aos", 2 * i + 1, 2 * i + 1), 32, 8)}, warnings);
        }
    };
    std::thread a(writer, "conv.a");
    std::thread b(writer, "conv.b");
    a.join();
    b.join();
    std::vector<std::string> warnings;
    const TuningCache cache = TuningCache::load_file(h200_file(), warnings);
    EXPECT_TRUE(warnings.empty());
    EXPECT_EQ(cache.records().size(), 24u);
}

TEST_F(Cache, CorruptTruncatedForeignAndOtherFormatsAreRejectedWithAWarningAndNeverUsed) {
    std::vector<std::string> warnings;
    store(dir, {record(h200(), "conv.global", "HD/3x3/c3/aos", 64, 4)}, warnings);
    const std::string good = read(h200_file());
    std::string foreign = good;
    foreign.replace(foreign.find("NVIDIA H200"), 11, "NVIDIA H100");
    std::string wrong_type = good;
    wrong_type.replace(wrong_type.find("\"samples\": 10"), 13, "\"samples\": \"ten\"");
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"garbage {{{", "corrupt or truncated"},
        {good.substr(0, good.size() / 2), "corrupt or truncated"},
        {"", "corrupt or truncated"},
        {foreign, "holds a record of NVIDIA H100"},
        {wrong_type, "corrupt or truncated"},
        {R"({"format": "something-else", "version": 1, "records": []})", "not a klab tuning cache"},
        {R"({"format": "klab-autotune", "version": 99, "records": []})", "version 99"},
        {R"({"format": "klab-autotune", "version": 1, "records": [{"gpu": {}}]})", "corrupt or truncated"},
        {replaced(good, "\"block\": [\n            64,\n            4\n          ]", "\"block\": [64, 64]"), "impossible values"},
        {replaced(good, "\"median_us\": 10.0", "\"median_us\": -1.0"), "impossible values"},
        {replaced(good, "\"class\": \"HD/3x3/c3/aos\"", "\"class\": \"HD/4x4/c3/aos\""), "is corrupt"},
    };
    const SpaceVariant variant;
    for (const auto& [text, fragment] : cases) {
        SCOPED_TRACE(text.substr(0, 60));
        write(h200_file(), text);
        warnings.clear();
        const TuningCache cache = TuningCache::load_directory(dir, warnings);
        EXPECT_TRUE(cache.records().empty());
        ASSERT_EQ(warnings.size(), 1u);
        EXPECT_NE(warnings[0].find(fragment), std::string::npos) << warnings[0];
        EXPECT_NE(warnings[0].find("ignoring the tuning cache"), std::string::npos);
    }
    // A tuner storing into a rejected file sets it aside (nothing is lost) and starts anew.
    write(h200_file(), "garbage {{{");
    warnings.clear();
    store(dir, {record(h200(), "conv.global", "HD/3x3/c3/aos", 64, 4)}, warnings);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("set it aside as autotune.json.rejected-"), std::string::npos) << warnings[0];
    int rejected = 0;
    for (const auto& entry : fs::directory_iterator(h200_file().parent_path())) {
        if (entry.path().filename().string().rfind("autotune.json.rejected-", 0) == 0) {
            ++rejected;
            EXPECT_EQ(read(entry.path()), "garbage {{{");
        }
    }
    EXPECT_EQ(rejected, 1);
    warnings.clear();
    EXPECT_EQ(TuningCache::load_file(h200_file(), warnings).records().size(), 1u);
    EXPECT_TRUE(warnings.empty());
}

TEST_F(Cache, AMissingDirectoryIsAnEmptyCacheWithoutWarnings) {
    std::vector<std::string> warnings;
    EXPECT_TRUE(TuningCache::load_directory(dir / "nothing", warnings).records().empty());
    EXPECT_TRUE(warnings.empty());
}

// ---------------------------------------------------------------------------------------------
// Lookup levels, with SpaceVariant (blocks narrower than 8 refused) named as the records say.

class LookupVariant : public SpaceVariant {
public:
    std::string name() const override { return "conv.test"; }
};

TEST(Lookup, ExactThenNearestSizeThenSameComputeCapabilityThenDefault) {
    TuningCache cache;
    cache.merge(record(h200(), "conv.test", "HD/3x3/c3/aos", 64, 4));
    cache.merge(record(h200(), "conv.test", "8K/3x3/c3/aos", 128, 2));
    cache.merge(record(h100(), "conv.test", "720p/5x5/c3/aos", 16, 16));
    cache.merge(record(h200(), "conv.test", "HD/7x7/c3/aos", 64, 2, "old-hash"));  // another source
    cache.merge(record(h200(), "conv.test", "HD/9x9/c3/aos", 4, 64));              // a shape the variant refuses
    cache.merge(record(h200(), "conv.other", "HD/11x11/c3/aos", 64, 4));
    const LookupVariant v;
    const auto problem = [](int w, int h, int k) {
        return convolve_problem({w, h, 3, Layout::aos}, masks::gaussian(k), Border{BorderMode::replicate, 0});
    };
    const auto check = [&](const Problem& p, const GpuIdentity& gpu, LookupLevel level, const std::string& shape) {
        const Lookup l = lookup(cache, v, "hash", p, gpu);
        EXPECT_EQ(l.level, level) << to_string(p) << ": " << l.explanation;
        EXPECT_EQ(to_string(l.shape), shape) << to_string(p) << ": " << l.explanation;
        return l;
    };
    const Lookup exact = check(problem(1920, 1080, 3), h200(), LookupLevel::exact, "64x4");
    EXPECT_NE(exact.explanation.find("exact problem class on this GPU"), std::string::npos) << exact.explanation;
    ASSERT_NE(exact.record, nullptr);
    check(problem(1280, 720, 3), h200(), LookupLevel::nearest_size, "64x4");      // 720p: HD is nearest
    check(problem(3840, 2160, 3), h200(), LookupLevel::nearest_size, "128x2");    // 4K: HD and 8K tie, larger wins
    check(problem(7000, 4000, 3), h200(), LookupLevel::exact, "128x2");           // in the 8K bucket
    check(problem(1280, 720, 5), h200(), LookupLevel::same_compute_capability, "16x16");  // only the H100 has 5x5
    check(problem(1920, 1080, 3), h200(14000), LookupLevel::same_compute_capability, "64x4");  // another driver
    GpuIdentity ada{"NVIDIA L4", 8, 9, 58, 13000, 13000};
    check(problem(1920, 1080, 3), ada, LookupLevel::variant_default, "32x8 outputs=1");
    const Lookup stale = check(problem(1920, 1080, 7), h200(), LookupLevel::variant_default, "32x8 outputs=1");
    EXPECT_NE(stale.explanation.find("another source"), std::string::npos) << stale.explanation;
    check(problem(1920, 1080, 9), h200(), LookupLevel::variant_default, "32x8 outputs=1");  // 4x64 refused
    check(problem(1920, 1080, 11), h200(), LookupLevel::variant_default, "32x8 outputs=1");  // another variant's
    const Problem rgba = convolve_problem({1920, 1080, 4, Layout::aos}, masks::gaussian(3), Border{});
    check(rgba, h200(), LookupLevel::variant_default, "32x8 outputs=1");  // channels differ
}

TEST(Lookup, AtTheComputeCapabilityLevelTheSameModelComesFirst) {
    TuningCache cache;
    cache.merge(record(h100(), "conv.test", "HD/3x3/c3/aos", 64, 4));   // another model, exact class
    cache.merge(record(h200(), "conv.test", "4K/3x3/c3/aos", 16, 16));  // this model, older driver, nearest size
    const LookupVariant v;
    const Problem p = convolve_problem({1920, 1080, 3, Layout::aos}, masks::gaussian(3), Border{});
    const Lookup l = lookup(cache, v, "hash", p, h200(14000));
    EXPECT_EQ(l.level, LookupLevel::same_compute_capability);
    EXPECT_EQ(to_string(l.shape), "16x16") << l.explanation;
}

TEST(Lookup, ARefusedBestShapeFallsBackToTheRecordsNextOne) {
    TuningCache cache;
    TuningRecord r = record(h200(), "conv.test", "HD/3x3/c3/aos", 4, 64);  // refused: narrower than 8
    r.top[1].shape = LaunchShape{8, 32, {}};
    cache.merge(r);
    TuningRecord stale = record(h200(), "conv.test", "HD/3x3/c3/aos", 32, 4, "old-hash");
    stale.requested_min_occupancy = 0.5;  // kept beside the first (another rule)
    cache.merge(stale);
    ASSERT_EQ(cache.records().size(), 2u);
    const LookupVariant v;
    const Problem p = convolve_problem({1920, 1080, 3, Layout::aos}, masks::gaussian(3), Border{});
    const Lookup l = lookup(cache, v, "hash", p, h200());
    EXPECT_EQ(l.level, LookupLevel::exact);
    EXPECT_EQ(to_string(l.shape), "8x32") << l.explanation;
    EXPECT_NE(l.explanation.find("minimum occupancy 100%"), std::string::npos) << l.explanation;
    // The stale record of this class is named, and only it.
    EXPECT_NE(l.explanation.find("1 record(s) of this class were tuned with another source"), std::string::npos) << l.explanation;
}

class SobelLookupVariant : public SpaceVariant {
public:
    std::string name() const override { return "sobel.test"; }
    Operation op() const override { return Operation::sobel; }
    Support supports(const Problem&) const override { return Support::yes(); }
};

// Sobel and integral records go through the same ladder as convolutions', beside them in one cache,
// and a record of one operation is never taken for another's problem.
TEST(Lookup, SobelAndIntegralRecordsFollowTheSameLadder) {
    TuningCache cache;
    cache.merge(record(h200(), "sobel.test", "sobel/8K/c1/aos", 128, 2));
    cache.merge(record(h200(), "sobel.test", "sobel/HD/c3/aos", 64, 4));
    cache.merge(record(h200(), "sobel.test", "HD/3x3/c1/aos", 16, 16));  // a convolution class of the same name: never used
    const SobelLookupVariant v;
    const auto check = [&](ImageShape shape, LookupLevel level, const std::string& expected) {
        const Lookup l = lookup(cache, v, "hash", op_problem(Operation::sobel, shape), h200());
        EXPECT_EQ(l.level, level) << l.explanation;
        EXPECT_EQ(to_string(l.shape), expected) << l.explanation;
    };
    check({7680, 4320, 1, Layout::aos}, LookupLevel::exact, "128x2");
    check({3840, 2160, 1, Layout::aos}, LookupLevel::nearest_size, "128x2");  // 4K: the gray records are 8K only
    check({1920, 1080, 3, Layout::aos}, LookupLevel::exact, "64x4");
    check({1920, 1080, 1, Layout::soa}, LookupLevel::variant_default, "32x8 outputs=1");  // no gray SoA record
}

// ---------------------------------------------------------------------------------------------
// The command line without a GPU

test::CommandResult klab_cli(const std::string& arguments) {
    return test::run_command(std::string(KLAB_CLI_PATH) + " " + arguments);
}

TEST(TuneCli, WithoutAGpuItSaysSoAndOffersThePlan) {
    if (cuda_device_available()) GTEST_SKIP() << "a CUDA device is present";
    const test::CommandResult r = klab_cli("tune --size HD");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("--plan-for"), std::string::npos) << r.output;
}

TEST(TuneCli, BadArgumentsNameThemselves) {
    const auto expect_failure = [](const std::string& arguments, const std::string& fragment) {
        const test::CommandResult r = klab_cli(arguments);
        EXPECT_NE(r.exit_code, 0) << arguments;
        EXPECT_NE(r.output.find(fragment), std::string::npos) << arguments << "\n" << r.output;
    };
    expect_failure("tune --plan-for X100", "A100, L4, H100, H200, RTX 4090");
    expect_failure("tune --plan-for H200 --size 9K", "9K");
    expect_failure("tune --plan-for H200 --size 100x100", "resolution buckets");
    expect_failure("tune --plan-for H200 --variant conv.nothing", "conv.nothing");
    expect_failure("tune --plan-for H200 --min-occupancy 0", "--min-occupancy");
    expect_failure("tune --plan-for H200 --layout planar", "--layout");
    expect_failure("tune --plan-for H200 --channels 2", "--channels");
}

TEST(TuneCli, PlansASpaceForAnotherGpuFromRecordedResources) {
    const fs::path dir = fs::temp_directory_path() / fmt::format("klab_tune_plan_{}", ::getpid());
    fs::remove_all(dir);
    // Records of conv.global's kernel as an H200 tune would write them: 32 registers.
    TuningRecord r = record(h200(), "conv.global", "HD/3x3/c3/aos", 32, 8, source_hash(Registry::instance().get("conv.global")));
    r.kernels_seen = {{"conv_global_kernel", resources(32), 0}};
    std::vector<std::string> warnings;
    store(dir, {r}, warnings);
    const test::CommandResult plan =
        klab_cli(fmt::format("tune --plan-for L4 --variant conv.global --size HD --mask-size 3 --layout aos --results {}", dir.string()));
    EXPECT_EQ(plan.exit_code, 0) << plan.output;
    EXPECT_NE(plan.output.find("NVIDIA L4"), std::string::npos) << plan.output;
    // On an L4 (1536 threads per SM) a 1024-thread block reaches 66.6%: excluded at 100%.
    EXPECT_EQ(plan.output.find(" 1024 threads  occupancy"), std::string::npos) << plan.output;
    EXPECT_NE(plan.output.find("512 threads  occupancy 100%"), std::string::npos) << plan.output;
    EXPECT_NE(plan.output.find("below 100% occupancy"), std::string::npos) << plan.output;
    const test::CommandResult verbose = klab_cli(
        fmt::format("tune --plan-for L4 --variant conv.global --size HD --mask-size 3 --layout aos --verbose --results {}", dir.string()));
    EXPECT_NE(verbose.output.find("excluded: below 100% occupancy: 66.6% (threads)"), std::string::npos) << verbose.output;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace klab::autotune
