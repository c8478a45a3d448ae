// The hygiene listener itself must be able to fail a test. Two deliberately bad tests are kept
// DISABLED_ so that normal runs skip them; these checks run them in a child process and expect
// that process to fail with the listener's message.
#include <gtest/gtest.h>

#include <string>

#include "harness/cuda_check.hpp"
#include "tests/common/run_command.hpp"
#include "tests/gpu/gpu_test.hpp"

namespace klab::test {
const char* gpu_test_executable();  // argv[0], kept by gpu_test_main.cpp
}

namespace klab {
namespace {

__global__ void spin_kernel(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

using DeviceErrorPaths = test::GpuTest;

TEST_F(DeviceErrorPaths, DISABLED_LeavesUnfinishedWork) {
    spin_kernel<<<1, 1>>>(2'000'000'000LL);  // about a second at 2 GHz; never waited for
    KLAB_CUDA_CHECK_LAUNCH(nullptr);
}

TEST_F(DeviceErrorPaths, DISABLED_LeavesAnErrorBehind) {
    void* p = nullptr;
    (void)cudaMalloc(&p, std::size_t{1} << 62);  // fails, and the error is left for cudaGetLastError
}

test::CommandResult run_disabled_test(const std::string& name) {
    return test::run_command(std::string(test::gpu_test_executable()) +
                             " --gtest_also_run_disabled_tests --gtest_filter=DeviceErrorPaths.DISABLED_" + name);
}

TEST_F(DeviceErrorPaths, ListenerFailsATestThatLeavesUnfinishedWork) {
    const test::CommandResult run = run_disabled_test("LeavesUnfinishedWork");
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("left unfinished work on the default stream"), std::string::npos) << run.output;
}

TEST_F(DeviceErrorPaths, ListenerFailsATestThatLeavesAnErrorBehind) {
    const test::CommandResult run = run_disabled_test("LeavesAnErrorBehind");
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("left a CUDA error behind: cudaErrorMemoryAllocation"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace klab
