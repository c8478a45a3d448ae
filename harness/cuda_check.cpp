#include "harness/cuda_check.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "harness/error.hpp"

namespace klab {

std::string sticky_cuda_error() {
    (void)cudaGetLastError();
    const cudaError_t sticky = cudaDeviceSynchronize();
    if (sticky == cudaSuccess) return "";
    return std::string(cudaGetErrorName(sticky)) + ": " + cudaGetErrorString(sticky);
}

}  // namespace klab

namespace klab::detail {

namespace {
std::string describe(cudaError_t status, const char* call, const char* file, int line) {
    return fmt::format("CUDA error {} ({}) at {}:{} in `{}`", cudaGetErrorName(status),
                       cudaGetErrorString(status), file, line, call);
}
}  // namespace

void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
    if (status != cudaSuccess) {
        throw Error(describe(status, call, file, line));
    }
}

bool cuda_check_nothrow(cudaError_t status, const char* call, const char* file, int line) noexcept {
    if (status == cudaSuccess) return true;
    try {
        std::fprintf(stderr, "klab: %s\n", describe(status, call, file, line).c_str());
    } catch (...) {
        std::fprintf(stderr, "klab: CUDA error %d at %s:%d\n", static_cast<int>(status), file, line);
    }
    return false;
}

void cuda_check_launch(cudaStream_t stream, const char* file, int line) {
    cuda_check(cudaGetLastError(), "kernel launch", file, line);
#if defined(KLAB_SYNC_AFTER_LAUNCH)
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize after launch", file, line);
#else
    (void)stream;
#endif
}

}  // namespace klab::detail
