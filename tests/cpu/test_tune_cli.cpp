// `klab tune` on the command line without a GPU: the refusal, bad arguments, a plan for another GPU;
// and what `klab list` says of the tuning caches.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "autotune/problem_class.hpp"
#include "bench/study.hpp"
#include "harness/device_info.hpp"
#include "tests/common/run_command.hpp"
#include "tests/cpu/autotune_fixtures.hpp"

namespace klab::autotune {
namespace {

using namespace fixtures;

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// The command line without a GPU

test::CommandResult klab_cli(const std::string& arguments) {
    return test::run_command(std::string(KLAB_CLI_PATH) + " " + arguments);
}

// A command line klab refuses, with a message that holds `fragment`.
void expect_failure(const std::string& arguments, const std::string& fragment) {
    const test::CommandResult r = klab_cli(arguments);
    EXPECT_NE(r.exit_code, 0) << arguments;
    EXPECT_NE(r.output.find(fragment), std::string::npos) << arguments << "\n" << r.output;
}

// The head lines of `klab tune --plan-for H200 ARGUMENTS`: "  <variant> <class>" and "  skipped
// <variant> <class>: why" (a job's space follows its head, indented further).
std::vector<std::string> plan_heads(const std::string& arguments) {
    const test::CommandResult r = klab_cli("tune --plan-for H200 " + arguments);
    EXPECT_EQ(r.exit_code, 0) << arguments << "\n" << r.output;
    std::vector<std::string> heads;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind("  ", 0) == 0 && line.rfind("   ", 0) != 0) heads.push_back(line);
    return heads;
}

TEST(TuneCli, WithoutAGpuItSaysSoAndOffersThePlan) {
    if (cuda_device_available()) GTEST_SKIP() << "a CUDA device is present";
    const test::CommandResult r = klab_cli("tune --size HD");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.output.find("--plan-for"), std::string::npos) << r.output;
}

TEST(TuneCli, BadArgumentsNameThemselves) {
    expect_failure("tune --plan-for X100", "A100, L4, H100, H200, RTX 4090");
    expect_failure("tune --plan-for H200 --size 9K", "9K");
    expect_failure("tune --plan-for H200 --size 100x100", "resolution buckets");
    // The message offers the buckets only, not the WxH sizes that are refused next.
    const test::CommandResult two_k = klab_cli("tune --plan-for H200 --size 2K");
    EXPECT_NE(two_k.output.find("--size 2K: not a resolution bucket; allowed: 480p, 720p, HD, 4K or 8K"), std::string::npos)
        << two_k.output;
    EXPECT_EQ(two_k.output.find("e.g. 17x13"), std::string::npos) << two_k.output;
    expect_failure("tune --plan-for H200 --variant conv.nothing", "conv.nothing");
    expect_failure("tune --plan-for H200 --min-occupancy 0", "--min-occupancy");
    expect_failure("tune --plan-for H200 --layout planar", "--layout");
    expect_failure("tune --plan-for H200 --channels 2", "--channels");
    // A variant of another operation than every class to tune: refused, not an empty plan.
    expect_failure("tune --plan-for H200 --op sobel --variant conv.halo_tiled",
                   "--variant conv.halo_tiled is a convolve variant, but no class to tune is a convolve class");
    expect_failure("tune --plan-for H200 --class sobel/8K/c1/aos --variant conv.halo_tiled", "is a convolve variant");
    // A class names its operation: an --op beside it would be ignored, so it is refused.
    expect_failure("tune --plan-for H200 --class HD/3x3/c3/aos --op sobel", "excludes");
}

// A value given twice (a size, a class, a variant, a mask size) is tuned once.
TEST(TuneCli, RepeatedValuesAreTunedOnce) {
    const std::vector<std::string> once = plan_heads("--size HD --op sobel --variant sobel.fused");
    ASSERT_EQ(once.size(), 2u) << "RGB AoS and SoA";
    EXPECT_EQ(plan_heads("--size HD --size HD --op sobel --variant sobel.fused --variant sobel.fused"), once);
    EXPECT_EQ(plan_heads("--class sobel/HD/c3/aos --class sobel/HD/c3/soa --class sobel/HD/c3/aos --variant sobel.fused"), once);
    EXPECT_EQ(plan_heads("--size HD --mask-size 3 --mask-size 3 --variant conv.halo_tiled --channels 3 --layout aos").size(), 1u);
}

// The check of the named variants looks at the whole list of classes: `--device all` hands each
// process a share (--class-share K/N) that may hold classes of one operation only. A class that no
// named variant takes is listed as skipped.
TEST(TuneCli, NamedVariantsAreCheckedOnTheWholeListNotOneShare) {
    for (const char* share : {"1/2", "2/2"}) {
        const test::CommandResult r = klab_cli(fmt::format("tune --plan-for H200 --class HD/3x3/c3/aos --class sobel/8K/c1/aos "
                                                           "--variant conv.global --variant sobel.fused --class-share {}",
                                                           share));
        EXPECT_EQ(r.exit_code, 0) << share << "\n" << r.output;
    }
    const test::CommandResult one = klab_cli("tune --plan-for H200 --class HD/3x3/c3/aos --class sobel/8K/c1/aos --variant conv.global");
    EXPECT_EQ(one.exit_code, 0) << one.output;
    EXPECT_NE(one.output.find("sobel/8K/c1/aos: no --variant named is a sobel variant"), std::string::npos) << one.output;
}

// --study: the classes klab run tunes first (bench::tuned_classes), each planned or listed as
// skipped, nothing else; --op and --variant narrow them to their operations; the options of the
// product of sizes and masks, and --class, are refused beside it.
TEST(TuneCli, AStudyPlansTheClassesKlabRunTunes) {
    for (const char* study : {"smoke", "quick", "full"}) {
        std::set<std::string> planned;  // the class of each head line
        for (const std::string& line : plan_heads(fmt::format("--study {}", study))) {
            std::istringstream words(line);
            std::string first, second, third;
            words >> first >> second >> third;
            std::string problem_class = first == "skipped" ? third : second;
            if (!problem_class.empty() && problem_class.back() == ':') problem_class.pop_back();
            planned.insert(problem_class);
        }
        std::set<std::string> expected;
        for (const ProblemClass& c : bench::tuned_classes(bench::parse_study(study))) expected.insert(to_string(c));
        EXPECT_EQ(planned, expected) << study;
    }
    const test::CommandResult sobel = klab_cli("tune --plan-for H200 --study full --op sobel");
    EXPECT_EQ(sobel.exit_code, 0) << sobel.output;
    EXPECT_NE(sobel.output.find("  sobel.fused sobel/8K/c1/aos\n"), std::string::npos) << sobel.output;
    EXPECT_EQ(sobel.output.find("conv."), std::string::npos) << sobel.output;
    const test::CommandResult packed = klab_cli("tune --plan-for H200 --study full --variant conv.packed_window");
    EXPECT_EQ(packed.exit_code, 0) << packed.output;
    EXPECT_NE(packed.output.find("  conv.packed_window 8K/5x5/c3/aos\n"), std::string::npos) << packed.output;
    EXPECT_EQ(packed.output.find("sobel/"), std::string::npos) << packed.output;
    expect_failure("tune --plan-for H200 --study weekly", "weekly not in {full,quick,smoke}");
    expect_failure("tune --plan-for H200 --study full --size HD", "--size excludes --study");
    expect_failure("tune --plan-for H200 --study full --class HD/3x3/c3/aos", "--class excludes --study");
    expect_failure("tune --plan-for H200 --study full --mask-size 5", "--mask-size excludes --study");
    expect_failure("tune --plan-for H200 --study full --layout aos", "--layout excludes --study");
    expect_failure("tune --plan-for H200 --study smoke --op integral --variant conv.global", "is a convolve variant");
}

// A variant whose shapes all stay below the requested occupancy is planned as the tuner tunes it:
// at the highest occupancy any shape reaches, said so, not as "0 included".
TEST(TuneCli, APlanBelowTheMinimumOccupancyShowsTheShapesTheTunerTakes) {
    const test::CommandResult plan = klab_cli(fmt::format("tune --plan-for H200 --variant conv.packed_window --class HD/3x3/c3/aos "
                                                          "--results {}/results",
                                                          KLAB_SOURCE_DIR));
    EXPECT_EQ(plan.exit_code, 0) << plan.output;
    EXPECT_NE(plan.output.find("no shape reaches 100% occupancy: the tuner takes the shapes at the highest reached, 25%\n    72 "
                               "included"),
              std::string::npos)
        << plan.output;
}

TEST(TuneCli, APlanWithoutAResultsDirectorySaysSo) {
    const test::CommandResult plan = klab_cli("tune --plan-for H100 --variant conv.global --size HD --mask-size 3 --channels 3 "
                                              "--layout aos --results /nonexistent/klab-results");
    EXPECT_EQ(plan.exit_code, 0) << plan.output;
    EXPECT_NE(plan.output.find("klab tune: warning: no results directory /nonexistent/klab-results"), std::string::npos) << plan.output;
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

// `klab list` reads the caches under --results without a GPU: per variant and GPU model, the classes
// recorded (one however many occupancy rules and drivers) and those with no record of this build's
// sources (a record of the files' whole text counts as current, as the lookup takes it).
TEST(TuneCli, ListSaysWhichRecordsAreOfThisBuildsSources) {
    const fs::path dir = fs::temp_directory_path() / fmt::format("klab_list_tuned_{}", ::getpid());
    fs::remove_all(dir);
    const SourceHashes global = source_hashes(Registry::instance().get("conv.global"));
    ASSERT_FALSE(global.full_text.empty());
    TuningRecord relaxed = record(h200(), "conv.global", "HD/3x3/c3/aos", 32, 8, "0123456789abcdef");  // stale, another rule
    relaxed.requested_min_occupancy = relaxed.min_occupancy = 0.5;
    std::vector<std::string> warnings;
    store(dir,
          {record(h200(), "conv.global", "HD/3x3/c3/aos", 32, 8, global.code), relaxed,
           record(h200(), "conv.global", "8K/3x3/c3/aos", 32, 8, "0123456789abcdef"),
           record(h200(), "conv.global", "8K/9x9/c3/aos", 32, 8, global.full_text),
           record(h200(12080), "conv.global", "4K/3x3/c3/aos", 32, 8, "fedcba9876543210"),  // another driver, same model
           record(h200(), "conv.constant", "HD/3x3/c3/aos", 32, 8, source_hash(Registry::instance().get("conv.constant")))},
          warnings);
    ASSERT_TRUE(warnings.empty()) << warnings.front();

    const test::CommandResult text = klab_cli(fmt::format("list --results {}", dir.string()));
    ASSERT_EQ(text.exit_code, 0) << text.output;
    const auto block_of = [&](const std::string& name) {
        const std::size_t at = text.output.find("\n" + name + " (");
        return at == std::string::npos ? std::string() : text.output.substr(at, text.output.find("\n\n", at + 1) - at);
    };
    EXPECT_NE(block_of("conv.global").find("tuned:         NVIDIA H200: 4 classes, 2 of them tuned on other sources of the variant, "
                                           "which the lookup skips until they are tuned again on that GPU (klab run, or klab "
                                           "tune --missing-only --class CLASS): 4K/3x3/c3/aos, 8K/3x3/c3/aos"),
              std::string::npos)
        << block_of("conv.global");
    EXPECT_NE(block_of("conv.constant").find("tuned:         NVIDIA H200: 1 class, tuned on this build's sources"), std::string::npos)
        << block_of("conv.constant");
    EXPECT_NE(block_of("conv.halo_tiled").find(fmt::format("tuned:         no record under {}", dir.string())), std::string::npos)
        << block_of("conv.halo_tiled");

    const test::CommandResult json = klab_cli(fmt::format("list --json --results {}", dir.string()));
    ASSERT_EQ(json.exit_code, 0) << json.output;
    const nlohmann::json parsed = nlohmann::json::parse(json.output);
    EXPECT_EQ(parsed.at("results_found"), true);
    for (const auto& v : parsed.at("variants")) {
        const std::string name = v.at("name").get<std::string>();
        if (name == "conv.global") {
            EXPECT_EQ(v.at("tuned"), nlohmann::json::parse(R"([{"gpu": "NVIDIA H200", "folder": "nvidia-h200", "classes": 4,
                                                               "current": 2, "stale_classes": ["4K/3x3/c3/aos", "8K/3x3/c3/aos"]}])"));
        } else if (name == "conv.constant") {
            EXPECT_EQ(v.at("tuned").at(0).at("current"), 1);
        } else {
            EXPECT_TRUE(v.at("tuned").empty()) << name;
        }
    }

    // No such directory: said once, every variant without a record, not an error.
    const test::CommandResult missing = klab_cli(fmt::format("list --results {}", (dir / "nothing").string()));
    EXPECT_EQ(missing.exit_code, 0) << missing.output;
    EXPECT_NE(missing.output.find("\"tuned\": no results directory"), std::string::npos) << missing.output;
    EXPECT_EQ(missing.output.find("tuned:         NVIDIA"), std::string::npos) << missing.output;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace klab::autotune
