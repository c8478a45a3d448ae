// `klab tune` under faults (issue 17), on a GPU: SIGINT once the first job's record is stored
// ends the run with SIGINT, keeps every record the log says was stored (the cache loads without a
// warning) and leaves no temporary file; two `klab tune` at once into one results folder lose no
// record. The CPU tests (tests/cpu/test_faults.cpp) check the same of the cache writer without a GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autotune/tuning_cache.hpp"
#include "tests/common/child_process.hpp"
#include "tests/common/test_util.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;
using test::ChildProcess;

bool contains(const std::string& text, const std::string& fragment) { return text.find(fragment) != std::string::npos; }

class TuneUnderFaults : public test::GpuTest {
protected:
    void SetUp() override {
        test::GpuTest::SetUp();
        if (IsSkipped()) return;
        dir = test::fresh_test_dir("tune_faults");
    }
    void TearDown() override {
        if (!dir.empty()) fs::remove_all(dir);
    }
    // A short tune of `variant` on 480p RGB AoS, one job per mask size.
    std::unique_ptr<ChildProcess> tune(const std::string& variant, const std::vector<std::string>& mask_sizes) const {
        std::vector<std::string> argv = {KLAB_CLI_PATH, "tune", "--variant", variant, "--size", "480p", "--layout", "aos",
                                         "--budget-s", "0.02", "--min-samples", "3", "--results", dir.string(), "--mask-size"};
        argv.insert(argv.end(), mask_sizes.begin(), mask_sizes.end());
        return std::make_unique<ChildProcess>(argv);
    }
    std::vector<autotune::TuningRecord> records() const {
        std::vector<std::string> warnings;
        const autotune::TuningCache cache = autotune::TuningCache::load_directory(dir, warnings);
        EXPECT_TRUE(warnings.empty()) << fmt::format("{}", fmt::join(warnings, "\n"));
        return cache.records();
    }
    std::vector<std::string> temporary_files() const {
        std::vector<std::string> found;
        for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
            if (entry.path().extension() == ".tmp") found.push_back(entry.path().string());
        }
        return found;
    }
    fs::path dir;
};

TEST_F(TuneUnderFaults, SigintKeepsTheStoredRecordsAndEndsWithTheSignal) {
    const auto klab = tune("conv.global", {"3", "5", "7"});
    int stored = 0;
    ASSERT_TRUE(klab->read_until([&](const std::string& line) { return contains(line, ": best ") && ++stored == 1; }))
        << klab->output();
    klab->send(SIGINT);
    const int status = klab->wait();
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << test::describe_status(status) << "\n" << klab->output();
    stored = 0;
    for (std::size_t at = klab->output().find(": best "); at != std::string::npos; at = klab->output().find(": best ", at + 1)) {
        ++stored;
    }
    EXPECT_TRUE(contains(klab->output(), fmt::format("interrupted by SIGINT; {} of 3 job(s) tuned and stored", stored)))
        << klab->output();
    EXPECT_LT(stored, 3) << klab->output();
    EXPECT_EQ(records().size(), static_cast<std::size_t>(stored));
    EXPECT_TRUE(temporary_files().empty());
}

TEST_F(TuneUnderFaults, TwoTunersAtOnceIntoOneCacheLoseNoRecord) {
    const auto global = tune("conv.global", {"3", "5"});
    const auto constant = tune("conv.constant", {"3", "5"});
    const int status_global = global->wait();
    const int status_constant = constant->wait();
    ASSERT_EQ(status_global, 0) << global->output();
    ASSERT_EQ(status_constant, 0) << constant->output();
    std::vector<std::string> variants;
    for (const autotune::TuningRecord& r : records()) variants.push_back(r.variant + " " + to_string(r.problem_class));
    std::sort(variants.begin(), variants.end());
    EXPECT_EQ(variants, (std::vector<std::string>{"conv.constant 480p/3x3/c3/aos", "conv.constant 480p/5x5/c3/aos",
                                                  "conv.global 480p/3x3/c3/aos", "conv.global 480p/5x5/c3/aos"}));
    EXPECT_TRUE(temporary_files().empty());
}

}  // namespace
}  // namespace klab
