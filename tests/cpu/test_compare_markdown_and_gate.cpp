// `klab compare`'s Markdown form, and the CI gate (scripts/ci-compare.sh) that compares a commit's
// bench.json files with their previous versions, on synthetic Google Benchmark JSON
// (compare_bench_json.hpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tests/common/run_command.hpp"
#include "tests/cpu/compare_bench_json.hpp"

namespace klab {
namespace {

using namespace compare_fixtures;

namespace fs = std::filesystem;

TEST_F(CompareCli, TheMarkdownPutsTheRegressionsFirst) {
    std::vector<Bench> changed = three_benches();
    changed[0].samples = scaled(changed[0].samples, 0.80);  // halo faster
    changed[1].samples = scaled(changed[1].samples, 1.10);  // sobel slower: the regression
    const std::string old_text = bench_json(kH200, three_benches());
    const std::string new_text = bench_json(kH200, changed);
    const test::CommandResult md = compare_table(old_text, new_text, "--format md");
    EXPECT_EQ(md.exit_code, 1) << md.output;
    EXPECT_EQ(md.output.rfind("**klab compare**: REGRESSION: 1 benchmark(s) slower", 0), 0u) << md.output;
    const std::size_t failing = md.output.find("Failing the gate:");
    const std::size_t sobel = md.output.find(std::string("`") + kSobel + "`");
    const std::size_t other = md.output.find("Other changes");
    const std::size_t halo = md.output.find(std::string("`") + kHalo + "`");
    const std::size_t folded = md.output.find("<details><summary>1 row(s) the same</summary>");
    const std::size_t copy = md.output.find(std::string("`") + kCopy + "`");
    for (std::size_t at : {failing, sobel, other, halo, folded, copy}) ASSERT_NE(at, std::string::npos) << md.output;
    EXPECT_TRUE(failing < sobel && sobel < other && other < halo && halo < folded && folded < copy) << md.output;
    EXPECT_NE(md.output.find("| **slower** |"), std::string::npos) << md.output;
    EXPECT_NE(md.output.find("| faster |"), std::string::npos) << md.output;

    const test::CommandResult same = compare_table(old_text, old_text, "--format md");
    EXPECT_EQ(same.exit_code, 0) << same.output;
    EXPECT_EQ(same.output.rfind("**klab compare**: no regression", 0), 0u) << same.output;
    EXPECT_NE(same.output.find("No row moved beyond its allowance."), std::string::npos) << same.output;

    // --json is --format json; an unknown format is refused.
    EXPECT_EQ(compare_table(old_text, new_text, "--json").output, compare_table(old_text, new_text, "--format json").output);
    const test::CommandResult unknown = compare_table(old_text, new_text, "--format xml");
    EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
    EXPECT_NE(unknown.output.find("--format xml"), std::string::npos) << unknown.output;
}

// scripts/ci-compare.sh in a throwaway git repository laid out like klab's: a changed
// results/<gpu>/bench.json is compared with its previous version; a regression fails, the
// "klab-compare: accept" trailer accepts it, a new file and an unchanged one pass.
TEST_F(CompareCli, TheCiGateComparesTheCommitsBenchFiles) {
    if (test::run_command("git --version").exit_code != 0) GTEST_SKIP() << "git is not installed";
    const fs::path repo = dir_ / "repo";
    fs::create_directories(repo / "scripts");
    fs::create_directories(repo / "results" / "nvidia-h200");
    fs::copy_file(fs::path(KLAB_SOURCE_DIR) / "scripts" / "ci-compare.sh", repo / "scripts" / "ci-compare.sh");
    const std::string git = fmt::format("git -C {} -c user.name=klab -c user.email=klab@example.com", repo.string());
    const auto commit = [&](const std::string& bench_text, const std::string& message) {
        std::ofstream(repo / "results" / "nvidia-h200" / "bench.json") << bench_text;
        ASSERT_EQ(test::run_command(git + " add -A").exit_code, 0);
        const test::CommandResult r = test::run_command(fmt::format("{} commit -q -m '{}'", git, message));
        ASSERT_EQ(r.exit_code, 0) << r.output;
    };
    const auto gate = [&] {
        return test::run_command(fmt::format("bash {} {}", (repo / "scripts" / "ci-compare.sh").string(), KLAB_CLI_PATH));
    };
    ASSERT_EQ(test::run_command(fmt::format("git init -q {}", repo.string())).exit_code, 0);

    commit(bench_json(kH200, three_benches()), "first results");
    test::CommandResult r = gate();
    EXPECT_EQ(r.exit_code, 0) << r.output;  // the first commit: no base
    EXPECT_NE(r.output.find("nothing compared"), std::string::npos) << r.output;

    std::ofstream(repo / "README") << "docs\n";  // a commit that leaves bench.json alone
    ASSERT_EQ(test::run_command(git + " add -A").exit_code, 0);
    ASSERT_EQ(test::run_command(git + " commit -q -m docs").exit_code, 0);
    r = gate();
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("no results/*/bench.json changed"), std::string::npos) << r.output;

    std::vector<Bench> slower = three_benches();
    slower[0].samples = scaled(slower[0].samples, 1.10);
    commit(bench_json(kH200, slower), "slower");
    r = gate();
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("REGRESSION"), std::string::npos) << r.output;

    commit(bench_json(kH200, three_benches()), "faster again");  // back to the first: passes
    EXPECT_EQ(gate().exit_code, 0);
    commit(bench_json(kH200, slower), "slower on purpose\n\nThe new kernel trades speed for exactness.\n\nklab-compare: accept");
    r = gate();
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("accepted"), std::string::npos) << r.output;

    // HEAD's results/<gpu>/noise.json widens a noisy row's allowance: the halo row moved 6% between
    // identical-code runs, so +10% is within its 12%. KLAB_COMPARE_MARKDOWN collects the Markdown.
    commit(bench_json(kH200, three_benches()), "faster again");
    std::vector<Bench> moved = three_benches();
    moved[0].samples = scaled(moved[0].samples, 1.06);
    const test::CommandResult learned =
        klab(fmt::format("compare --learn-noise {} {} {}", (repo / "results" / "nvidia-h200" / "noise.json").string(),
                         write("run1.json", bench_json(kH200, three_benches())), write("run2.json", bench_json(kH200, moved))));
    ASSERT_EQ(learned.exit_code, 0) << learned.output;
    commit(bench_json(kH200, slower), "slower within the learned noise");
    const std::string markdown = (dir_ / "compare.md").string();
    r = test::run_command(fmt::format("KLAB_COMPARE_MARKDOWN={} bash {} {}", markdown, (repo / "scripts" / "ci-compare.sh").string(),
                                      KLAB_CLI_PATH));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("noise file results/nvidia-h200/noise.json"), std::string::npos) << r.output;
    std::ifstream md(markdown);
    const std::string md_text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
    EXPECT_NE(md_text.find("**klab compare**: no regression"), std::string::npos) << md_text;
}

}  // namespace
}  // namespace klab
