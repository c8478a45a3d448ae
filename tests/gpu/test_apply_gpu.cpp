// `klab apply --backend gpu` end to end (issue 7): the strip pipeline (the default path) under a
// small device-memory budget (KLAB_DEVICE_MEMORY_BUDGET), which cuts a 1000x700 image into many
// strips, writes the same file as the synchronous one-shot path (--sync) byte for byte, for every
// border mode and Sobel; --strips (one strip, more strips than rows) likewise; a batch goes through
// the same paths, one pipeline per image size; and
// `--variant auto` says which variant it took and why, from a tuning cache written here.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autotune/problem_class.hpp"
#include "autotune/tuner.hpp"
#include "autotune/tuning_cache.hpp"
#include "harness/io/image_io.hpp"
#include "harness/mask.hpp"
#include "harness/problem.hpp"
#include "harness/synth.hpp"
#include "harness/variant.hpp"
#include "tests/common/run_command.hpp"
#include "tests/common/test_util.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;

std::string file_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t count = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
    return count;
}

constexpr int kWidth = 1000;
constexpr int kHeight = 700;
// Far below the one-shot need of a 1000x700 RGB image (2.1 MB in, 2.1 MB out): many strips.
constexpr const char* kSmallBudget = "KLAB_DEVICE_MEMORY_BUDGET=2M ";

class ApplyGpu : public test::GpuTest {
protected:
    void SetUp() override {
        test::GpuTest::SetUp();
        if (IsSkipped()) return;
        dir = test::fresh_test_dir("apply_gpu");
        fs::create_directories(dir / "no-results");
        input = dir / "in.png";
        io::write_image(input, synth::generate(synth::Pattern::natural, kWidth, kHeight, 3, 5));
    }
    void TearDown() override {
        if (!dir.empty()) fs::remove_all(dir);
    }
    // klab with `environment` ("NAME=value " or ""); an empty tuning cache unless --results is given,
    // so that the variant does not depend on the machine's committed caches.
    test::CommandResult klab(const std::string& arguments, const std::string& environment = "") const {
        const std::string results =
            arguments.find("--results") == std::string::npos ? " --results " + (dir / "no-results").string() : "";
        return test::run_command(environment + KLAB_CLI_PATH + " " + arguments + results);
    }
    fs::path dir;
    fs::path input;
};

TEST_F(ApplyGpu, StripsEqualTheSynchronousPathByteForByte) {
    const struct {
        std::string filter, border, layout;
    } cases[] = {{"gaussian:9", "replicate", "aos"}, {"gaussian:9", "mirror", "aos"},   {"gaussian:9", "reflect", "aos"},
                 {"gaussian:9", "wrap", "aos"},      {"gaussian:9", "constant:7", "aos"}, {"sharpen", "wrap", "soa"},
                 {"box:31", "constant:7", "aos"},    {"sobel", "wrap", "aos"},          {"sobel", "constant:7", "aos"}};
    for (const auto& c : cases) {
        SCOPED_TRACE(c.filter + " " + c.border + " " + c.layout);
        const std::string options = fmt::format("apply --backend gpu --filter {} --border {} --layout {} ", c.filter, c.border, c.layout);
        const fs::path sync = dir / "sync.png";
        const test::CommandResult one_shot = klab(options + "--sync " + input.string() + " " + sync.string());
        ASSERT_EQ(one_shot.exit_code, 0) << one_shot.output;
        EXPECT_NE(one_shot.output.find("gpu path: one shot, synchronous (--sync"), std::string::npos) << one_shot.output;

        const fs::path strips = dir / "strips.png";
        fs::remove(strips);
        const test::CommandResult r = klab(options + "--verify " + input.string() + " " + strips.string(), kSmallBudget);
        ASSERT_EQ(r.exit_code, 0) << r.output;
        EXPECT_NE(r.output.find("gpu path: strip pipeline from pinned host memory ("), std::string::npos) << r.output;
        EXPECT_NE(r.output.find(" strips, 3 in flight; the whole image would need"), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("verified against the CPU reference: ok"), std::string::npos) << r.output;
        EXPECT_EQ(file_bytes(strips), file_bytes(sync));
    }
}

TEST_F(ApplyGpu, ForcedStripCountsEqualTheSynchronousPath) {
    const std::string options = "apply --backend gpu --filter gaussian:7 --border wrap ";
    const fs::path sync = dir / "sync.png";
    ASSERT_EQ(klab(options + "--sync " + input.string() + " " + sync.string()).exit_code, 0);
    // One strip, a few one at a time, more strips than rows (one row each).
    const std::pair<const char*, const char*> runs[] = {{"--strips 1", "(--strips: 1 strip, 1 in flight;"},
                                                        {"--strips 7 --in-flight 1", "(--strips: 7 strips, 1 in flight;"},
                                                        {"--strips 1000 --in-flight 5", "(--strips: 700 strips, 5 in flight;"}};
    for (const auto& [strips, expected] : runs) {
        const fs::path out = dir / "out.png";
        fs::remove(out);
        const test::CommandResult r = klab(options + strips + " " + input.string() + " " + out.string());
        ASSERT_EQ(r.exit_code, 0) << strips << "\n" << r.output;
        EXPECT_NE(r.output.find(std::string("gpu path: strip pipeline from pinned host memory ") + expected), std::string::npos)
            << r.output;
        EXPECT_EQ(file_bytes(out), file_bytes(sync)) << strips;
    }
    // Without --strips: the automatic split, one strip for an image of about 2 MiB.
    const test::CommandResult fits = klab(options + input.string() + " " + (dir / "fits.png").string());
    ASSERT_EQ(fits.exit_code, 0) << fits.output;
    EXPECT_NE(fits.output.find("gpu path: strip pipeline from pinned host memory (1 strip, 1 in flight;"), std::string::npos)
        << fits.output;
    EXPECT_EQ(file_bytes(dir / "fits.png"), file_bytes(sync));
    // --sync does not go beyond the budget: it says so and writes nothing.
    const test::CommandResult refused = klab(options + "--sync " + input.string() + " " + (dir / "no.png").string(), kSmallBudget);
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.output.find("--sync: the image needs"), std::string::npos) << refused.output;
    EXPECT_FALSE(fs::exists(dir / "no.png"));
}

TEST_F(ApplyGpu, BatchGoesThroughTheSamePaths) {
    fs::create_directories(dir / "in");
    fs::copy_file(input, dir / "in" / "large.png");
    // A second image of the same size reuses the first one's pipeline (and its choices are not
    // printed again); the small one needs its own.
    io::write_image(dir / "in" / "large2.png", synth::generate(synth::Pattern::natural, kWidth, kHeight, 3, 6));
    io::write_image(dir / "in" / "small.jpg", synth::generate(synth::Pattern::checkerboard, 300, 200, 3));
    const std::string options = "apply --backend gpu --filter gaussian:5 --border reflect ";
    const test::CommandResult r = klab(options + "--out-dir " + (dir / "out").string() + " " + (dir / "in").string(), kSmallBudget);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("3 of 3 written"), std::string::npos) << r.output;
    EXPECT_EQ(occurrences(r.output, "gpu path: strip pipeline"), 2u) << r.output;
    // Without the variable the budget is read from the free memory, which the kept pipeline
    // lowers: the line must not change for the second large image either.
    const test::CommandResult free = klab(options + "--out-dir " + (dir / "out2").string() + " " + (dir / "in").string());
    ASSERT_EQ(free.exit_code, 0) << free.output;
    EXPECT_EQ(occurrences(free.output, "gpu path: strip pipeline"), 2u) << free.output;
    for (const char* name : {"large.png", "large2.png", "small.jpg"}) {
        const fs::path sync = dir / fmt::format("sync-{}", name);
        ASSERT_EQ(klab(options + "--sync " + (dir / "in" / name).string() + " " + sync.string()).exit_code, 0);
        EXPECT_EQ(file_bytes(dir / "out" / name), file_bytes(sync)) << name;
    }
}

// A record of `variant` for `problem`'s class (or `resolution`) on this GPU, at its default shape.
autotune::TuningRecord fake_record(const Variant& variant, const Problem& problem, double median_us, const std::string& resolution = "") {
    autotune::TuningRecord r;
    r.gpu = autotune::current_gpu_identity();
    r.variant = variant.name();
    r.source_hash = autotune::source_hash(variant);
    r.problem_class = autotune::problem_class(problem);
    if (!resolution.empty()) r.problem_class.resolution = resolution;
    r.problem = to_string(problem);
    autotune::MeasuredCandidate best;
    best.shape = variant.default_shape(problem);
    best.us = {median_us * 0.99, median_us, median_us * 1.01};
    best.samples = 10;
    best.occupancy.fraction = 1.0;
    best.occupancy.blocks_per_sm = 8;
    best.kernels.push_back({"k", {}, 0});
    r.top = {best};
    r.candidates_measured = 1;
    r.tuned_at = "2026-11-22T00:00:00Z";
    r.klab_version = "test";
    return r;
}

TEST_F(ApplyGpu, AutoSaysWhichVariantAndWhy) {
    const std::string gpu = autotune::current_gpu_identity().name;
    const Problem problem = convolve_problem({kWidth, kHeight, 3, Layout::aos}, masks::gaussian(9), Border{});
    const std::string wanted = autotune::to_string(autotune::problem_class(problem));
    const std::string args = " " + input.string() + " " + (dir / "out.png").string();

    // Without records: the defaults, and why.
    const test::CommandResult separable = klab("apply --backend gpu --filter gaussian:9" + args);
    ASSERT_EQ(separable.exit_code, 0) << separable.output;
    EXPECT_NE(separable.output.find(fmt::format("auto: no tuning records for this GPU/class ({} on {}): default choice "
                                                "conv.separable_fused (the mask is separable)",
                                                wanted, gpu)),
              std::string::npos)
        << separable.output;
    EXPECT_NE(separable.output.find("variant conv.separable_fused (auto)"), std::string::npos) << separable.output;
    const test::CommandResult sharpen = klab("apply --backend gpu --filter sharpen" + args);
    ASSERT_EQ(sharpen.exit_code, 0) << sharpen.output;
    EXPECT_NE(sharpen.output.find("default choice conv.halo_tiled (the mask is not separable)"), std::string::npos) << sharpen.output;
    const test::CommandResult sobel = klab("apply --backend gpu --filter sobel" + args);
    ASSERT_EQ(sobel.exit_code, 0) << sobel.output;
    EXPECT_NE(sobel.output.find("default choice sobel.register_window (one pass, the window in registers)"), std::string::npos)
        << sobel.output;

    // Records of this class: the fastest median wins, whatever the defaults would be (the times
    // are made up so that conv.halo_tiled, not the default, is the fastest).
    const Registry& registry = Registry::instance();
    std::vector<std::string> warnings;
    const fs::path exact = dir / "exact";
    autotune::store(exact,
                    {fake_record(registry.get("conv.halo_tiled"), problem, 50.0),
                     fake_record(registry.get("conv.separable_fused"), problem, 80.0),
                     fake_record(registry.get("conv.global"), problem, 500.0)},
                    warnings);
    const test::CommandResult fastest = klab("apply --backend gpu --filter gaussian:9 --results " + exact.string() + args);
    ASSERT_EQ(fastest.exit_code, 0) << fastest.output;
    EXPECT_NE(fastest.output.find(fmt::format("auto: conv.halo_tiled, fastest in the tuning cache for {} on {}: 50.0 us; next "
                                              "conv.separable_fused 80.0 us",
                                              wanted, gpu)),
              std::string::npos)
        << fastest.output;
    EXPECT_NE(fastest.output.find("variant conv.halo_tiled (auto)"), std::string::npos) << fastest.output;

    // Records of other sizes only: the nearest class is compared, a farther one is not.
    const fs::path nearest = dir / "nearest";
    autotune::store(nearest,
                    {fake_record(registry.get("conv.separable_fused"), problem, 30.0, "HD"),
                     fake_record(registry.get("conv.halo_tiled"), problem, 40.0, "HD"),
                     fake_record(registry.get("conv.global"), problem, 1.0, "8K")},
                    warnings);
    autotune::ProblemClass hd = autotune::problem_class(problem);
    hd.resolution = "HD";
    const test::CommandResult near = klab("apply --backend gpu --filter gaussian:9 --results " + nearest.string() + args);
    ASSERT_EQ(near.exit_code, 0) << near.output;
    EXPECT_NE(near.output.find(fmt::format("auto: conv.separable_fused, fastest in the tuning cache for {} (the nearest tuned "
                                           "size to {}) on {}: 30.0 us; next conv.halo_tiled 40.0 us",
                                           autotune::to_string(hd), wanted, gpu)),
              std::string::npos)
        << near.output;
    EXPECT_TRUE(warnings.empty()) << warnings.front();
}

}  // namespace
}  // namespace klab
