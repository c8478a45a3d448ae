// Every input under data/fuzz/<target>/ — the seeds and, in regressions/, what the fuzzers found
// (fuzz/README.md) — through its fuzz target's body (fuzz/targets.hpp) in an ordinary test: each is
// accepted or refused with a proper message, and nothing else escapes. Under the asan preset the
// sanitizers watch these runs too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/targets.hpp"
#include "tests/common/test_util.hpp"

namespace klab::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> bytes_of(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class FuzzInputs : public ::testing::TestWithParam<Target> {};

}  // namespace

// GoogleTest names a parameter by its target.
void PrintTo(const Target& target, std::ostream* out) { *out << target.name; }

namespace {

TEST_P(FuzzInputs, AreAcceptedOrRefusedWithAProperMessage) {
    const fs::path folder = fs::path(KLAB_SOURCE_DIR) / "data" / "fuzz" / GetParam().name;
    int inputs = 0;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(folder)) {
        if (!entry.is_regular_file()) continue;
        ++inputs;
        const std::vector<std::uint8_t> bytes = bytes_of(entry.path());
        try {
            GetParam().function(bytes.data(), bytes.size());
        } catch (const Violation& broken) {
            ADD_FAILURE() << entry.path().string() << ": " << broken.what();
        }
    }
    EXPECT_GE(inputs, 3) << "the seeds of " << folder.string() << " are missing";
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzInputs, ::testing::ValuesIn(targets()),
                         [](const ::testing::TestParamInfo<Target>& target) { return test::test_name(target.param.name); });

}  // namespace
}  // namespace klab::fuzz
