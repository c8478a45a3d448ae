// The README's results table (klab report --readme-table): the block between README.md's marker
// lines is the command's output on the committed H200 run, so that the front page cannot go
// stale; on synthetic JSON the table ladders the seeds' fastest variant to klab's with the
// report's figures; --update rewrites the block and nothing else, and refuses a README without
// its marker lines.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tests/common/run_command.hpp"
#include "tests/common/synthetic_bench_json.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;

const std::string kBegin = "<!-- klab report --readme-table: begin -->";
const std::string kEnd = "<!-- klab report --readme-table: end -->";
const std::string kCommittedRun = "results/nvidia-h200/bench.json";
const std::string kRegenerate = "./build/release/klab report --readme-table " + kCommittedRun + " --update README.md";

// The text between the line `kBegin` and the line `kEnd`; nullopt without both, in that order.
std::optional<std::string> readme_block(const std::string& readme) {
    const std::size_t begin = readme.find(kBegin + "\n");
    const std::size_t end = readme.find("\n" + kEnd);
    if (begin == std::string::npos || end == std::string::npos || end < begin) return std::nullopt;
    const std::size_t body = begin + kBegin.size() + 1;
    return readme.substr(body, end + 1 - body);
}

test::CommandResult klab_in_source_tree(const std::string& arguments) {
    return test::run_command("cd '" + std::string(KLAB_SOURCE_DIR) + "' && " + KLAB_CLI_PATH + " report " + arguments);
}

TEST(ReadmeTable, ReadmeHoldsTheCommittedRunsTable) {
    const std::string readme = test::read_text(fs::path(KLAB_SOURCE_DIR) / "README.md");
    const std::optional<std::string> block = readme_block(readme);
    ASSERT_TRUE(block) << "README.md has no results table between the lines\n  " << kBegin << "\n  " << kEnd
                       << "\nPut those two lines in README.md where the table belongs, then run from the source tree:\n  "
                       << kRegenerate << "\n(or paste the output of the command without --update between them).";
    const test::CommandResult r = klab_in_source_tree("--readme-table " + kCommittedRun);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(*block, r.output) << "README.md's results table is not what `klab report --readme-table " << kCommittedRun
                                << "` prints (a new committed run, or a changed table). Run from the source tree:\n  "
                                << kRegenerate << "\n(or paste the output of the command without --update between the lines "
                                << kBegin << " and " << kEnd << ").";
}

class ReadmeTableOf : public ::testing::Test {
protected:
    void SetUp() override {
        dir = test::fresh_test_dir("readme_table");
        bench = dir / "bench.json";
        std::ofstream(bench) << test::bench_json(test::gpu_rows(true), test::gpu_context()).dump(2);
    }
    void TearDown() override { fs::remove_all(dir); }
    static test::CommandResult klab(const std::string& arguments) {
        return test::run_command(std::string(KLAB_CLI_PATH) + " report " + arguments);
    }
    static void expect_has(const std::string& text, const std::string& fragment) {
        EXPECT_NE(text.find(fragment), std::string::npos) << "missing: " << fragment << "\nin:\n" << text;
    }

    fs::path dir;
    fs::path bench;
};

TEST_F(ReadmeTableOf, LaddersTheSeedsFastestToKlabsFastestWithTheReportsFigures) {
    const test::CommandResult r = klab("--readme-table " + bench.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_has(r.output, "NVIDIA H200, CUDA 13.0, NPP 13.0: medians of `" + bench.string() + "` (commit abc1234)");
    expect_has(r.output, "| problem | seeds' fastest | µs | klab's fastest | µs | × copy floor | × roofline | NPP µs | klab vs NPP |");
    // conv.halo_tiled (a seed's technique) is the fastest of all: 100 / 40 copy floor, NPP 300 / 100.
    expect_has(r.output, "| 8K RGB Gaussian 3×3 | conv.halo_tiled | 100 | conv.halo_tiled | 100 | 2.50× | 2.50× | 300 | 3.00× |");
    // conv.separable_fused beats the seeds' conv.halo_tiled (150): 120 / 40, NPP 614 / 120.
    expect_has(r.output, "| 8K RGB Gaussian 9×9 | conv.halo_tiled | 150 | conv.separable_fused | 120 | 3.00× | — | 614 | 5.12× |");
    // No seed variant ran random9: the seeds' columns are empty; 318 / 265 roofline; NPP 1553 / 318.
    expect_has(r.output, "| 8K RGB random 9×9 | — | — | conv.register_window_async | 318 | 7.95× | 1.20× | 1553 | 4.88× |");
    expect_has(r.output, "| HD RGB Gaussian 3×3 | conv.halo_tiled | 10.5 | conv.halo_tiled | 10.5 | — | — | — | — |");
    expect_has(r.output, "| 8K gray Sobel | — | — | sobel.fused | 44.0 | — | — | 110 | 2.50× |");
    expect_has(r.output, "| 8K gray integral image | — | — | integral.scan | 40.0 | — | — | 1004 | 25.1× |");
    EXPECT_EQ(r.output.find("sharpen"), std::string::npos) << "no sharpen rows in the file: no line for them\n" << r.output;
    expect_has(r.output, "Seeds' fastest: the fastest of the variants built on the seeds' techniques");
    EXPECT_EQ(r.output.find("Below 1.00×"), std::string::npos) << "no row ran faster than its copy floor\n" << r.output;
}

// A copy floor of a few µs can come out slower than a kernel that moves the same bytes: the table
// says which rows ran faster than their copy, and why that can happen.
TEST_F(ReadmeTableOf, SaysWhichRowsRanFasterThanTheirCopyFloor) {
    const std::vector<test::Bench> rows = {
        {"conv.halo_tiled/HD/rgb.aos/gauss3/replicate", {9.1}, {{"copy_floor_us", 9.65}, {"roofline_us", 9.65}}, "64x2 tuned"},
        {"conv.halo_tiled/8K/rgb.aos/gauss3/replicate", {60}, {{"copy_floor_us", 48}, {"roofline_us", 48}}, "128x4 tuned"},
    };
    std::ofstream(bench) << test::bench_json(rows, test::gpu_context()).dump(2);
    const test::CommandResult r = klab("--readme-table " + bench.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_has(r.output, "| HD RGB Gaussian 3×3 | conv.halo_tiled | 9.10 | conv.halo_tiled | 9.10 | 0.94× | 0.94× |");
    expect_has(r.output, "Below 1.00× copy floor (HD RGB Gaussian 3×3: copy 9.65 µs): the row ran faster than the "
                         "device-to-device copy it is divided by");
    EXPECT_EQ(r.output.find("8K RGB Gaussian 3×3: copy"), std::string::npos) << "the 8K row is above its floor\n" << r.output;
}

TEST_F(ReadmeTableOf, AFileWithoutTheProblemsGivesAClearError) {
    const std::vector<test::Bench> cpu_only = {{"cpu.reference/8K/rgb.aos/gauss3/replicate", {50000}, {}, "1 thread"}};
    std::ofstream(bench) << test::bench_json(cpu_only, {{"klab_gpu_key", "none"}}).dump(2);
    const test::CommandResult r = klab("--readme-table " + bench.string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    expect_has(r.output, "holds no klab variant row of the README's problems");
}

TEST_F(ReadmeTableOf, UpdateRewritesTheBlockAndNothingElse) {
    const fs::path readme = dir / "README.md";
    const std::string before = "# klab\n\nintro\n\n" + kBegin + "\nan old table\n" + kEnd + "\n\nthe rest\n";
    std::ofstream(readme) << before;
    const test::CommandResult printed = klab("--readme-table " + bench.string());
    ASSERT_EQ(printed.exit_code, 0) << printed.output;
    const test::CommandResult r = klab("--readme-table " + bench.string() + " --update " + readme.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_has(r.output, "updated the results table of " + readme.string());
    EXPECT_EQ(test::read_text(readme), "# klab\n\nintro\n\n" + kBegin + "\n" + printed.output + kEnd + "\n\nthe rest\n");
    // Again: the table is already there, and the file is not written (its time stamp stays).
    const fs::file_time_type written = fs::last_write_time(readme) - std::chrono::hours(1);
    fs::last_write_time(readme, written);
    const test::CommandResult again = klab("--readme-table " + bench.string() + " --update " + readme.string());
    ASSERT_EQ(again.exit_code, 0) << again.output;
    expect_has(again.output, "the results table of " + readme.string() + " is already this file's: left as it was");
    EXPECT_EQ(fs::last_write_time(readme), written);

    // Without its end line, or with two begin lines, the README is refused and left as it was.
    for (const std::string& broken : {"intro\n" + kBegin + "\nold\n", kBegin + "\n" + kBegin + "\nold\n" + kEnd + "\n",
                                      kEnd + "\nold\n" + kBegin + "\n"}) {
        std::ofstream(readme) << broken;
        const test::CommandResult refused = klab("--readme-table " + bench.string() + " --update " + readme.string());
        EXPECT_EQ(refused.exit_code, 2) << refused.output;
        expect_has(refused.output, "klab: " + readme.string() + ": ");
        expect_has(refused.output, "allowed: the README's table between the lines " + kBegin + " and " + kEnd);
        EXPECT_EQ(test::read_text(readme), broken);
    }

    // --update belongs to --readme-table; the report's options do not.
    EXPECT_NE(klab(bench.string() + " --update " + readme.string()).exit_code, 0);
    EXPECT_NE(klab("--readme-table --no-plots " + bench.string()).exit_code, 0);
}

}  // namespace
}  // namespace klab
