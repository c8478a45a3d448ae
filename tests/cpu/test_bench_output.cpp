// klab-bench's --benchmark_out file and --benchmark_repetitions, and klab run around them: a run
// that fails or runs nothing leaves the named output as it was, and says why. Without a GPU
// klab-bench benchmarks the CPU reference, so these run anywhere.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "tests/common/run_command.hpp"
#include "tests/common/synthetic_bench_json.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;

class BenchOutput : public ::testing::Test {
protected:
    void SetUp() override {
        dir = fs::temp_directory_path() / fmt::format("klab_bench_output_{}", getpid());
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    void TearDown() override { fs::remove_all(dir); }

    int files_in_dir() const { return static_cast<int>(std::distance(fs::directory_iterator(dir), fs::directory_iterator())); }

    fs::path dir;
};

TEST_F(BenchOutput, ARunOfNoBenchmarkLeavesTheOutputFileAsItWas) {
    const fs::path out = dir / "bench.json";
    { std::ofstream(out) << "{\"earlier\": true}"; }
    const test::CommandResult r = test::run_command(
        fmt::format("{} --klab_study=smoke --benchmark_filter=no-such-row --benchmark_out={}", KLAB_BENCH_PATH, out.string()));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(fmt::format("klab-bench: {} is unchanged", out.string())), std::string::npos) << r.output;
    EXPECT_EQ(test::read_text(out), "{\"earlier\": true}");
    EXPECT_EQ(files_in_dir(), 1) << "the file written beside it is gone";
}

TEST_F(BenchOutput, ARunThatRanReplacesTheOutputFile) {
    // The smoke study's first row (the CPU reference's without a GPU, a kernel's with one).
    const test::CommandResult list = test::run_command(fmt::format("{} --klab_study=smoke --benchmark_list_tests=true", KLAB_BENCH_PATH));
    ASSERT_EQ(list.exit_code, 0) << list.output;
    std::istringstream lines(list.output);
    std::string row;
    while (std::getline(lines, row) && row.find("_time") == std::string::npos) {
    }  // klab-bench's own messages first; a row's name ends in /real_time or /manual_time
    ASSERT_NE(row.find("_time"), std::string::npos) << list.output;
    const fs::path out = dir / "bench.json";
    { std::ofstream(out) << "{\"earlier\": true}"; }
    const test::CommandResult r = test::run_command(fmt::format(
        "{} --klab_study=smoke '--benchmark_filter=^{}$' --benchmark_repetitions=1 --benchmark_out={} --benchmark_out_format=json",
        KLAB_BENCH_PATH, row, out.string()));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(test::read_text(out).find(fmt::format("\"name\": \"{}\"", row)), std::string::npos) << test::read_text(out);
    EXPECT_EQ(files_in_dir(), 1);
}

// A listing writes no results, a directory is no output file, and the last --benchmark_out counts
// (an empty one: no output), as in Google Benchmark.
TEST_F(BenchOutput, AListingADirectoryOrAnEmptyLastOutputLeaveTheFileAsItWas) {
    const fs::path out = dir / "bench.json";
    { std::ofstream(out) << "{\"earlier\": true}"; }
    const test::CommandResult listing =
        test::run_command(fmt::format("{} --klab_study=smoke --benchmark_list_tests --benchmark_out={}", KLAB_BENCH_PATH, out.string()));
    EXPECT_EQ(listing.exit_code, 0) << listing.output;
    for (const std::string& target : {dir.string(), dir.string() + "/"}) {
        const test::CommandResult r =
            test::run_command(fmt::format("{} --klab_study=smoke --benchmark_out={}", KLAB_BENCH_PATH, target));
        EXPECT_EQ(r.exit_code, 2) << r.output;
        EXPECT_NE(r.output.find(fmt::format("--benchmark_out={}: a directory, not a file", target)), std::string::npos) << r.output;
    }
    const test::CommandResult emptied = test::run_command(fmt::format(
        "{} --klab_study=smoke --benchmark_filter=no-such-row --benchmark_out={} --benchmark_out=", KLAB_BENCH_PATH, out.string()));
    EXPECT_EQ(emptied.exit_code, 2) << emptied.output;
    EXPECT_EQ(emptied.output.find("cannot put the output"), std::string::npos) << emptied.output;
    EXPECT_EQ(test::read_text(out), "{\"earlier\": true}");
    EXPECT_EQ(files_in_dir(), 1);
}

TEST_F(BenchOutput, RepetitionsBelowOneAreRefusedBeforeTheRun) {
    const fs::path out = dir / "bench.json";
    { std::ofstream(out) << "{\"earlier\": true}"; }
    for (const char* repetitions : {"-3", "0", "two", ""}) {
        const test::CommandResult r = test::run_command(fmt::format("{} --klab_study=smoke --benchmark_repetitions={} --benchmark_out={}",
                                                                    KLAB_BENCH_PATH, repetitions, out.string()));
        EXPECT_EQ(r.exit_code, 2) << repetitions << "\n" << r.output;
        EXPECT_NE(r.output.find(fmt::format("--benchmark_repetitions={}: not a number of repetitions; allowed: a whole number of 1 or "
                                            "more",
                                            repetitions)),
                  std::string::npos)
            << r.output;
    }
    EXPECT_EQ(test::read_text(out), "{\"earlier\": true}");
    EXPECT_EQ(files_in_dir(), 1);
}

// Google Benchmark answers a value outside a flag's list with its usage and exit status 0, as if
// the run had succeeded: klab-bench refuses it first.
TEST_F(BenchOutput, AFlagValueOutsideItsListIsRefusedNotAnsweredWithTheUsage) {
    const fs::path out = dir / "bench.json";
    { std::ofstream(out) << "{\"earlier\": true}"; }
    const std::pair<const char*, const char*> cases[] = {
        {"--benchmark_time_unit=parsec", "--benchmark_time_unit=parsec: 'parsec' is not one of its values; allowed: ns, us, ms or s"},
        {"--benchmark_format=xml", "--benchmark_format=xml: 'xml' is not one of its values; allowed: console, json or csv"},
        {"--benchmark_out_format=JSON", "--benchmark_out_format=JSON: 'JSON' is not one of its values; allowed: console, json or csv"},
        {"--benchmark_color=", "--benchmark_color=: no value; allowed: auto, true or false"},
    };
    for (const auto& [flag, message] : cases) {
        const test::CommandResult r =
            test::run_command(fmt::format("{} --klab_study=smoke {} --benchmark_out={}", KLAB_BENCH_PATH, flag, out.string()));
        EXPECT_EQ(r.exit_code, 2) << flag << "\n" << r.output;
        EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    }
    EXPECT_EQ(test::read_text(out), "{\"earlier\": true}");
    EXPECT_EQ(files_in_dir(), 1);
}

// klab run with a filter that matches no row: its error says klab-bench wrote nothing and how to
// list the names, no bench.failed.json is left to inspect, and no folder it made for the run.
TEST_F(BenchOutput, KlabRunOfNoRowSaysSoAndLeavesNoFailedFile) {
    const test::CommandResult r = test::run_command(
        fmt::format("{} run --study smoke --no-tune --no-report --out {} --filter no-such-row", KLAB_CLI_PATH, dir.string()));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("klab-bench failed (exit 2, it wrote no output: its messages above say why), and no bench.json was "
                            "written; allowed: a --filter that matches some benchmark name (klab run --list --filter RE shows "
                            "which do)"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(files_in_dir(), 0) << r.output;
    const fs::path made = dir / "made" / "for" / "the-run";
    const test::CommandResult in_new = test::run_command(
        fmt::format("{} run --study smoke --no-tune --no-report --out {} --filter no-such-row", KLAB_CLI_PATH, made.string()));
    EXPECT_EQ(in_new.exit_code, 2) << in_new.output;
    EXPECT_EQ(files_in_dir(), 0) << "the folders made for the run are left behind";
    // The path's normal form decides: "made/../kept/new/" makes kept/new only, and kept stays.
    fs::create_directory(dir / "kept");
    const test::CommandResult odd_path = test::run_command(fmt::format("{} run --study smoke --no-tune --no-report --out {} --filter no-such-row",
                                                                       KLAB_CLI_PATH, (dir / "made" / ".." / "kept" / "new" / "").string()));
    EXPECT_EQ(odd_path.exit_code, 2) << odd_path.output;
    EXPECT_TRUE(fs::is_directory(dir / "kept"));
    EXPECT_EQ(files_in_dir(), 1) << "only kept/, empty";
    EXPECT_TRUE(fs::is_empty(dir / "kept"));
}

// An --out that cannot hold the results is refused before any step (the tuning can take minutes),
// as klab-bench refuses such a --benchmark_out before it runs anything.
TEST_F(BenchOutput, AnOutThatCannotHoldTheResultsIsRefusedFirst) {
    std::ofstream(dir / "file") << "a file, not a folder";
    const std::string under_a_file = (dir / "file" / "results").string();
    const test::CommandResult run =
        test::run_command(fmt::format("{} run --study smoke --no-report --out {}", KLAB_CLI_PATH, under_a_file));
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_NE(run.output.find(fmt::format("cannot write the results into {}: {} is not a directory", under_a_file,
                                          (dir / "file").string())),
              std::string::npos)
        << run.output;
    EXPECT_EQ(run.output.find("== "), std::string::npos) << "refused before any step\n" << run.output;
    fs::create_directories(dir / "taken" / "bench.json");
    const test::CommandResult taken =
        test::run_command(fmt::format("{} run --study smoke --no-report --out {}", KLAB_CLI_PATH, (dir / "taken").string()));
    EXPECT_EQ(taken.exit_code, 2) << taken.output;
    EXPECT_NE(taken.output.find("it is an existing directory"), std::string::npos) << taken.output;
    const test::CommandResult bench = test::run_command(
        fmt::format("{} --klab_study=smoke --benchmark_out={}", KLAB_BENCH_PATH, (dir / "no-such-dir" / "x.json").string()));
    EXPECT_EQ(bench.exit_code, 2) << bench.output;
    EXPECT_NE(bench.output.find("does not exist"), std::string::npos) << bench.output;
    // A link to nothing is no folder to make: refused as such, before any step.
    fs::create_symlink(dir / "nowhere", dir / "dangling");
    const test::CommandResult dangling =
        test::run_command(fmt::format("{} run --study smoke --no-report --out {}", KLAB_CLI_PATH, (dir / "dangling").string()));
    EXPECT_EQ(dangling.exit_code, 2) << dangling.output;
    EXPECT_NE(dangling.output.find("is not a directory (a link that leads to none"), std::string::npos) << dangling.output;
    EXPECT_EQ(dangling.output.find("== "), std::string::npos) << "refused before any step\n" << dangling.output;
    // Only klab-bench's last --benchmark_out counts, as in Google Benchmark: an earlier one is not checked.
    const test::CommandResult last = test::run_command(
        fmt::format("{} --klab_study=smoke --benchmark_filter=no-such-row --benchmark_out={} --benchmark_out={}", KLAB_BENCH_PATH,
                    (dir / "no-such-dir" / "x.json").string(), (dir / "x.json").string()));
    EXPECT_NE(last.output.find("no benchmark ran"), std::string::npos) << last.output;
    EXPECT_EQ(files_in_dir(), 3) << "only file, taken/ and the link";
}

// --list prints the study's names (those --filter matches) and runs nothing; a malformed --filter
// is refused before anything runs.
TEST_F(BenchOutput, KlabRunListsTheStudyAndRefusesAMalformedFilter) {
    const test::CommandResult list = test::run_command(fmt::format("{} run --list --study smoke", KLAB_CLI_PATH));
    ASSERT_EQ(list.exit_code, 0) << list.output;
    std::istringstream lines(list.output);
    std::string row, first;
    while (std::getline(lines, row))
        if (first.empty() && row.find("_time") != std::string::npos) first = row;
    ASSERT_FALSE(first.empty()) << list.output;
    const std::string name = first.substr(0, first.find('/'));  // the row, e.g. cpu.reference or conv.global
    const test::CommandResult filtered =
        test::run_command(fmt::format("{} run --list --study smoke --filter '^{}/'", KLAB_CLI_PATH, name));
    ASSERT_EQ(filtered.exit_code, 0) << filtered.output;
    EXPECT_NE(filtered.output.find(first), std::string::npos) << filtered.output;
    const test::CommandResult none = test::run_command(fmt::format("{} run --list --study smoke --filter no-such-row", KLAB_CLI_PATH));
    EXPECT_EQ(none.exit_code, 2) << none.output;
    const test::CommandResult malformed =
        test::run_command(fmt::format("{} run --study smoke --out {} --filter '['", KLAB_CLI_PATH, dir.string()));
    EXPECT_EQ(malformed.exit_code, 2) << malformed.output;
    EXPECT_NE(malformed.output.find("--filter '[' is not a regular expression"), std::string::npos) << malformed.output;
    EXPECT_EQ(malformed.output.find("== "), std::string::npos) << "refused before any step\n" << malformed.output;
    EXPECT_EQ(files_in_dir(), 0);
}

}  // namespace
}  // namespace klab
