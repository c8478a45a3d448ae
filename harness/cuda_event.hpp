#pragma once
// A CUDA event and a CUDA stream owned by RAII; events time work on the GPU's own clock or
// order one stream after another.
#include <cuda_runtime_api.h>

#include "harness/cuda_check.hpp"

namespace klab {

class CudaEvent {
public:
    // cudaEventDisableTiming for an event that only orders streams (lighter to record and wait on).
    explicit CudaEvent(unsigned flags = cudaEventDefault) { KLAB_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags)); }
    ~CudaEvent() { KLAB_CUDA_CHECK_NOTHROW(cudaEventDestroy(event_)); }
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;
    cudaEvent_t get() const { return event_; }

private:
    cudaEvent_t event_ = nullptr;
};

// A non-blocking CUDA stream owned by RAII: it does not wait for the legacy default stream.
class CudaStream {
public:
    CudaStream() { KLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
    ~CudaStream() { KLAB_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_)); }
    CudaStream(const CudaStream&) = delete;
    CudaStream& operator=(const CudaStream&) = delete;
    cudaStream_t get() const { return stream_; }

private:
    cudaStream_t stream_ = nullptr;
};

}  // namespace klab
