#pragma once
// What the end-to-end tests of the klab executable share (test_cli.cpp, test_cli_batch.cpp): the
// CLI run as CI runs it, and the Cli fixture, a fresh folder per test holding a small input image.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "harness/io/image_io.hpp"
#include "tests/common/run_command.hpp"
#include "tests/common/test_util.hpp"

namespace klab::cli_fixtures {

namespace fs = std::filesystem;

using Result = test::CommandResult;

inline Result klab_cli(const std::string& arguments) { return test::run_command(std::string(KLAB_CLI_PATH) + " " + arguments); }

class Cli : public ::testing::Test {
protected:
    void SetUp() override {
        dir = test::fresh_test_dir("cli");
        input = (dir / "in.png").string();
        io::write_image(input, test::random_image({23, 17, 3, Layout::aos}, 3));
    }
    void TearDown() override { fs::remove_all(dir); }
    void expect_failure(const std::string& arguments, const std::string& fragment) {
        const Result r = klab_cli(arguments);
        EXPECT_NE(r.exit_code, 0) << arguments;
        EXPECT_NE(r.output.find(fragment), std::string::npos) << arguments << "\n" << r.output;
    }
    fs::path dir;
    std::string input;
};

}  // namespace klab::cli_fixtures
