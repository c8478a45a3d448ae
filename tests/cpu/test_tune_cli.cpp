// `klab tune` on the command line without a GPU: the refusal, bad arguments, a plan for another GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

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
