#pragma once
// A CUDA event owned by RAII, for timing on the GPU's own clock.
#include <cuda_runtime_api.h>

#include "harness/cuda_check.hpp"

namespace klab {

class CudaEvent {
public:
    CudaEvent() { KLAB_CUDA_CHECK(cudaEventCreate(&event_)); }
    ~CudaEvent() { KLAB_CUDA_CHECK_NOTHROW(cudaEventDestroy(event_)); }
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;
    cudaEvent_t get() const { return event_; }

private:
    cudaEvent_t event_ = nullptr;
};

}  // namespace klab
