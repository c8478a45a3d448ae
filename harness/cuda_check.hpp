#pragma once
// Every CUDA runtime call goes through KLAB_CUDA_CHECK, which throws klab::Error naming the
// file, the line, the call text and the CUDA error. Destructors use KLAB_CUDA_CHECK_NOTHROW,
// which reports to stderr instead. Every kernel launch is followed by KLAB_CUDA_CHECK_LAUNCH;
// with KLAB_SYNC_AFTER_LAUNCH (the `debug` preset) it also synchronises the stream, so that an
// asynchronous fault is reported at the launch that caused it.
#include <string>

#include <cuda_runtime_api.h>

namespace klab {

// After a failure: clears an error that does not stick, then asks the device. A non-empty answer
// ("cudaErrorIllegalAddress: an illegal memory access was encountered") means the CUDA context is
// lost (a kernel fault): nothing more can run on the device in this process.
std::string sticky_cuda_error();

}  // namespace klab

namespace klab::detail {

// Throws klab::Error when `status` is not cudaSuccess.
void cuda_check(cudaError_t status, const char* call, const char* file, int line);
// Prints to stderr when `status` is not cudaSuccess; returns whether it was cudaSuccess.
bool cuda_check_nothrow(cudaError_t status, const char* call, const char* file, int line) noexcept;
// Checks the last launch error and, in synchronising builds, the stream's completion.
void cuda_check_launch(cudaStream_t stream, const char* file, int line);

}  // namespace klab::detail

#define KLAB_CUDA_CHECK(call) ::klab::detail::cuda_check((call), #call, __FILE__, __LINE__)
#define KLAB_CUDA_CHECK_NOTHROW(call) \
    ::klab::detail::cuda_check_nothrow((call), #call, __FILE__, __LINE__)
#define KLAB_CUDA_CHECK_LAUNCH(stream) ::klab::detail::cuda_check_launch((stream), __FILE__, __LINE__)
