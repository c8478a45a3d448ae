#pragma once
// Runs a shell command for a test and captures what it printed (stdout and stderr together)
// and its exit code: the CLI tests run `klab`, the GPU listener tests run their own executable.
#include <array>
#include <cstdio>
#include <string>

#include <sys/wait.h>

namespace klab::test {

struct CommandResult {
    int exit_code = -1;  // -1 when the command could not be started or did not exit normally
    std::string output;
};

inline CommandResult run_command(const std::string& command) {
    CommandResult result;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    if (pipe == nullptr) return result;
    std::array<char, 4096> buffer{};
    while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) result.output += buffer.data();
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

}  // namespace klab::test
