// Every malformed input klab knows of (data/fuzz/<target>/ and its regressions/, fuzz/README.md)
// through the `klab` command that reads it: one line naming the file, what was wrong and what is
// allowed; a non-zero exit; no output file, no partial file, no changed cache.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autotune/tuning_cache.hpp"
#include "bench/bench_json.hpp"
#include "cli/apply_batch.hpp"
#include "harness/error.hpp"
#include "harness/io/image_io.hpp"
#include "harness/mask.hpp"
#include "harness/synth.hpp"
#include "tests/common/run_command.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

namespace fs = std::filesystem;

std::string text_of(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class MalformedInputs : public ::testing::Test {
protected:
    void SetUp() override {
        dir = test::fresh_test_dir("malformed");
        fs::create_directories(dir / "out");
        image = dir / "in.png";
        io::write_image(image, synth::generate(synth::Pattern::noise, 8, 8, 3));
    }
    void TearDown() override { fs::remove_all(dir); }

    // Runs `klab ARGUMENTS` for every file of data/fuzz/<target> (recursively) that `refuses`
    // (klab's own parser, in this process) refuses, and checks the promise; the count checked.
    int check_refused(const std::string& target, const std::function<bool(const fs::path&)>& refuses,
                      const std::function<std::string(const fs::path&)>& arguments) {
        int checked = 0;
        for (const fs::directory_entry& entry : fs::recursive_directory_iterator(fs::path(KLAB_SOURCE_DIR) / "data" / "fuzz" / target)) {
            if (!entry.is_regular_file() || !refuses(entry.path())) continue;
            ++checked;
            const std::string name = entry.path().string();
            const test::CommandResult r = test::run_command(fmt::format("{} {}", KLAB_CLI_PATH, arguments(entry.path())));
            EXPECT_EQ(r.exit_code, 2) << name << "\n" << r.output;
            EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << name << ": not one line:\n" << r.output;
            EXPECT_NE(r.output.find(name), std::string::npos) << name << ": the file is not named:\n" << r.output;
            EXPECT_NE(r.output.find("; allowed: "), std::string::npos) << name << ": nothing allowed is said:\n" << r.output;
            EXPECT_TRUE(fs::is_empty(dir / "out")) << name << ": something was written";
        }
        return checked;
    }
    fs::path dir;
    fs::path image;
};

template <class Parse>
bool refused(Parse parse) {
    try {
        parse();
    } catch (const Error&) {
        return true;
    }
    return false;
}

// A quoted text longer than head + tail + 40 bytes keeps its ends around the count left out.
TEST(ErrorText, ShortenedKeepsBothEndsOfALongTextAndShortTextsWhole) {
    EXPECT_EQ(shortened("short"), "short");
    const std::string limit = std::string(160, 'h') + std::string(40, '-') + std::string(80, 't');
    EXPECT_EQ(shortened(limit), limit);
    const std::string text = std::string(160, 'h') + std::string(1000, '-') + std::string(80, 't');
    EXPECT_EQ(shortened(text), std::string(160, 'h') + " ... (1000 bytes left out) ... " + std::string(80, 't'));
    EXPECT_EQ(shortened("abcdefghij", 2, 3), "abcdefghij");  // 10 <= 2 + 3 + 40
    EXPECT_EQ(shortened(std::string(50, 'x') + "END", 2, 3), "xx ... (48 bytes left out) ... END");
}

TEST_F(MalformedInputs, ImagesAreRefusedAndNothingIsWritten) {
    int checked = 0;
    for (const char* target : {"png", "jpeg", "pnm"}) {
        checked += check_refused(
            target, [](const fs::path& file) { return refused([&] { io::read_image(file); }); },
            [&](const fs::path& file) { return fmt::format("apply --filter box:3 '{}' '{}'", file.string(), (dir / "out" / "out.png").string()); });
    }
    EXPECT_GE(checked, 15);
}

TEST_F(MalformedInputs, MaskFilesAreRefusedAndNothingIsWritten) {
    const int checked = check_refused(
        "mask", [](const fs::path& file) { return refused([&] { read_mask_file(file); }); },
        [&](const fs::path& file) {
            return fmt::format("apply --filter 'mask:{}' '{}' '{}'", file.string(), image.string(), (dir / "out" / "out.png").string());
        });
    EXPECT_GE(checked, 8);
}

TEST_F(MalformedInputs, ListFilesAreRefusedAndNothingIsWritten) {
    const int checked = check_refused(
        "apply_list", [](const fs::path& file) { return refused([&] { cli::parse_input_list(text_of(file), file.string()); }); },
        [&](const fs::path& file) { return fmt::format("apply --filter box:3 --out-dir '{}' --list '{}'", (dir / "out").string(), file.string()); });
    EXPECT_GE(checked, 1);
}

TEST_F(MalformedInputs, BenchmarkFilesAreRefusedAndNoReportIsWritten) {
    const int checked = check_refused(
        "bench_json", [](const fs::path& file) { return refused([&] { bench::load_bench_file(file); }); },
        [&](const fs::path& file) { return fmt::format("report --no-plots --out '{}' '{}'", (dir / "out").string(), file.string()); });
    EXPECT_GE(checked, 8);
}

// A damaged tuning cache is not an error (klab runs without it): one warning line naming the file
// and what is allowed, and the file left as it was.
TEST_F(MalformedInputs, TuningCachesAreIgnoredWithOneWarningAndLeftAsTheyWere) {
    int checked = 0;
    for (const fs::directory_entry& entry :
         fs::recursive_directory_iterator(fs::path(KLAB_SOURCE_DIR) / "data" / "fuzz" / "tuning_cache")) {
        if (!entry.is_regular_file()) continue;
        const std::string text = text_of(entry.path());
        if (!refused([&] { autotune::TuningCache::parse(text, "cache", "nvidia-h200"); })) continue;
        ++checked;
        const fs::path cache = dir / "results" / "nvidia-h200" / "autotune.json";
        fs::create_directories(cache.parent_path());
        std::ofstream(cache, std::ios::binary) << text;
        const test::CommandResult r = test::run_command(
            fmt::format("{} tune --plan-for H200 --variant conv.global --size HD --mask-size 3 --results '{}'", KLAB_CLI_PATH,
                        (dir / "results").string()));
        EXPECT_EQ(r.exit_code, 0) << entry.path() << "\n" << r.output;
        const std::string warning = "klab tune: warning: ignoring the tuning cache: " + cache.string();
        const std::size_t at = r.output.find(warning);
        ASSERT_NE(at, std::string::npos) << entry.path() << "\n" << r.output;
        const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
        EXPECT_NE(line.find("; allowed: "), std::string::npos) << entry.path() << ": " << line;
        EXPECT_EQ(text_of(cache), text) << entry.path() << ": the cache changed";
    }
    EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace klab
