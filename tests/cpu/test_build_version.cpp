// cmake/KlabVersion.cmake, which writes the commit every build (and so every tuning record and
// benchmark file) names: the commit a GPU machine's copy is given in KLAB_GIT_COMMIT, else git's,
// else "unknown" — never an empty name (an empty KLAB_GIT_COMMIT once gave records version "").
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "tests/common/run_command.hpp"
#include "tests/common/test_util.hpp"

namespace klab {
namespace {

// Runs the script in `dir` (no git repository: the search for one stops at dir's parent) with the
// environment assignments `env` (KLAB_GIT_COMMIT and KLAB_GIT_DIRTY unset first) and returns the
// version the generated file defines, as its source text: "{"commit", dirty}".
std::string version_written(const std::filesystem::path& dir, const std::string& env) {
    const std::filesystem::path output = dir / "version.cpp";
    const test::CommandResult r = test::run_command(
        fmt::format("env -u KLAB_GIT_COMMIT -u KLAB_GIT_DIRTY GIT_CEILING_DIRECTORIES='{}' {} '{}' -DSOURCE_DIR='{}' -DOUTPUT='{}' -P '{}'",
                    dir.parent_path().string(), env, KLAB_CMAKE_COMMAND, dir.string(), output.string(),
                    std::string(KLAB_SOURCE_DIR) + "/cmake/KlabVersion.cmake"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(output);
    std::stringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    const std::size_t begin = source.find("return {");
    if (begin == std::string::npos) return "no version in: " + source;
    return source.substr(begin + 7, source.find(';', begin) - begin - 7);
}

TEST(BuildVersion, NamesTheGivenCommitElseUnknownNeverNothing) {
    const std::filesystem::path dir = test::fresh_test_dir("version");
    EXPECT_EQ(version_written(dir, "KLAB_GIT_COMMIT=03f495bb8c37 KLAB_GIT_DIRTY=0"), "{\"03f495bb8c37\", false}");
    EXPECT_EQ(version_written(dir, "KLAB_GIT_COMMIT=03f495bb8c37 KLAB_GIT_DIRTY=1"), "{\"03f495bb8c37\", true}");
    EXPECT_EQ(version_written(dir, "KLAB_GIT_COMMIT='ab;c-1'"), "{\"abc1\", false}");  // only letters and digits
    EXPECT_EQ(version_written(dir, ""), "{\"unknown\", false}");                       // no git, nothing given
    EXPECT_EQ(version_written(dir, "KLAB_GIT_COMMIT="), "{\"unknown\", false}");        // given empty
    EXPECT_EQ(version_written(dir, "KLAB_GIT_COMMIT=--"), "{\"unknown\", false}");      // nothing left of it
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace klab
