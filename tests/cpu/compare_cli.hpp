#pragma once
// What the `klab compare` tests share: a temporary folder per test, the CLI run as CI runs it, and
// the rows of `klab compare --json`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "tests/common/run_command.hpp"
#include "tests/common/test_util.hpp"

namespace klab::test {

class CompareTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = test::fresh_test_dir("compare");
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string write(const std::string& file_name, const std::string& text) const {
        const std::filesystem::path path = dir_ / file_name;
        std::ofstream(path) << text;
        return path.string();
    }

    static std::string read_text(const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }

    static CommandResult klab(const std::string& arguments) { return run_command(std::string(KLAB_CLI_PATH) + " " + arguments); }

    // `klab compare --json OLD NEW [extra]` on two files, parsed; the exit code through `exit_code`.
    static nlohmann::json compare_files(const std::string& old_path, const std::string& new_path, int& exit_code,
                                        const std::string& extra = "") {
        const CommandResult r = klab(fmt::format("compare --json {} {} {}", old_path, new_path, extra));
        exit_code = r.exit_code;
        const nlohmann::json doc = nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
        EXPECT_FALSE(doc.is_discarded()) << r.output;
        return doc;
    }

    std::filesystem::path dir_;
};

// The row named `name`; a failed expectation (and an empty object) when there is none.
inline nlohmann::json row_of(const nlohmann::json& doc, const std::string& name) {
    if (doc.contains("rows")) {
        for (const nlohmann::json& row : doc["rows"])
            if (row.value("name", "") == name) return row;
    }
    ADD_FAILURE() << "no row " << name << " in " << doc.dump(2);
    return nlohmann::json::object();
}

inline std::string verdict_of(const nlohmann::json& doc, const std::string& name) {
    return row_of(doc, name).value("verdict", "(none)");
}

}  // namespace klab::test
