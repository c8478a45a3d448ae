// The tuning cache on disk: round trip, merge, concurrent writers and the files it rejects.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "tests/common/test_util.hpp"
#include "tests/cpu/autotune_fixtures.hpp"

namespace klab::autotune {
namespace {

using namespace fixtures;

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// The cache

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

// A directory where the cache file should be is a warning like any unreadable cache, not a crash.
TEST_F(Cache, ADirectoryInPlaceOfTheCacheIsIgnoredWithAWarning) {
    fs::create_directories(h200_file());
    std::vector<std::string> warnings;
    const TuningCache cache = TuningCache::load_directory(dir, warnings);
    EXPECT_TRUE(cache.records().empty());
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings.front().find("ignoring the tuning cache: " + h200_file().string() + " is a directory"), std::string::npos)
        << warnings.front();
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
            EXPECT_EQ(to_string(r.top.front().shape), "128x2 outputs=1");
            ++replaced;
        }
    }
    EXPECT_EQ(replaced, 1);
}

// klab tune --missing-only's restamp on the file: only this GPU identity's records of the full-text
// hash take the code hash, the rest of the file stays as it is, and nothing is written when there is
// nothing to restamp or the file is missing or unusable.
TEST_F(Cache, RestampingRewritesOnlyThisGpusRecordsOfTheFullTextHash) {
    const auto hashes_of = [](const std::string& name) -> std::optional<SourceHashes> {
        if (name == "conv.test") return SourceHashes{"code", "full-text"};
        return std::nullopt;
    };
    EXPECT_EQ(restamp_with_code_hash(dir, h200(), hashes_of), 0);  // no file
    EXPECT_FALSE(fs::exists(dir));

    std::vector<std::string> warnings;
    store(dir,
          {record(h200(), "conv.test", "HD/3x3/c3/aos", 64, 4, "full-text"), record(h200(), "conv.test", "8K/3x3/c3/aos", 128, 2, "code"),
           record(h200(14000), "conv.test", "HD/3x3/c3/aos", 8, 8, "full-text")},
          warnings);
    EXPECT_EQ(restamp_with_code_hash(dir, h200(), hashes_of), 1);
    const TuningCache cache = TuningCache::load_file(h200_file(), warnings);
    EXPECT_TRUE(warnings.empty());
    ASSERT_EQ(cache.records().size(), 3u);
    for (const TuningRecord& r : cache.records()) {
        const std::string which = to_string(r.problem_class) + " on " + r.gpu.key();
        if (r.gpu.driver_version != 13000) {
            EXPECT_EQ(r.source_hash, "full-text") << which;  // another GPU identity: left alone
        } else {
            EXPECT_EQ(r.source_hash, "code") << which;
        }
    }
    EXPECT_EQ(to_string(cache.records().front().top.front().shape), "64x4 outputs=1");

    const std::string after = read(h200_file());
    EXPECT_EQ(restamp_with_code_hash(dir, h200(), hashes_of), 0);  // nothing left to restamp
    EXPECT_EQ(read(h200_file()), after);

    write(h200_file(), "{ not a cache");
    EXPECT_EQ(restamp_with_code_hash(dir, h200(), hashes_of), 0);
    EXPECT_EQ(read(h200_file()), "{ not a cache");  // left as it is, not set aside
    int files = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(h200_file().parent_path())) ++files;
    EXPECT_EQ(files, 2);  // the file and its lock
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
        {"{\"format\": \"" + std::string(5000, 'x'), " bytes left out) ... "},  // the parser's quote of the string, shortened
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

}  // namespace
}  // namespace klab::autotune
