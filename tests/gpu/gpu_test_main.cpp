// main() of the GPU suites, with a listener that fails any test leaving a CUDA error or
// unfinished work behind (docs/building.md, "Tests").
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include "harness/device_info.hpp"

namespace klab::test {
namespace {
const char* executable_path = "";
}
// Lets a test run this executable again in a child process (see test_hygiene_listener.cu).
const char* gpu_test_executable() { return executable_path; }
}  // namespace klab::test

namespace {

class CudaHygieneListener : public ::testing::EmptyTestEventListener {
public:
    explicit CudaHygieneListener(bool has_device) : has_device_(has_device) {}

    // GoogleTest calls OnTestEnd in reverse order of registration, so this runs before the
    // result printer and a failure added here shows in the test's own verdict.
    void OnTestEnd(const ::testing::TestInfo&) override {
        if (!has_device_) return;
        const cudaError_t pending = cudaStreamQuery(nullptr);
        if (pending == cudaErrorNotReady) {
            ADD_FAILURE() << "the test left unfinished work on the default stream";
        }
        const cudaError_t sync = cudaDeviceSynchronize();
        const cudaError_t last = cudaGetLastError();
        if (sync != cudaSuccess || last != cudaSuccess) {
            const cudaError_t error = sync != cudaSuccess ? sync : last;
            ADD_FAILURE() << "the test left a CUDA error behind: " << cudaGetErrorName(error) << " ("
                          << cudaGetErrorString(error) << ")";
        }
    }

private:
    bool has_device_;
};

}  // namespace

int main(int argc, char** argv) {
    klab::test::executable_path = argv[0];
    ::testing::InitGoogleTest(&argc, argv);
    // Listing tests (CTest's discovery) must not touch the device.
    if (!GTEST_FLAG_GET(list_tests)) {
        ::testing::UnitTest::GetInstance()->listeners().Append(new CudaHygieneListener(klab::cuda_device_available()));
    }
    return RUN_ALL_TESTS();
}
