#pragma once
// Helpers for the Python module (python/src/module.cpp) that need the CUDA runtime: the module
// calls CUDA only through libklab, so that one runtime serves both. Not installed.
#include <cuda_runtime_api.h>

namespace klab::interop {

// Makes `waiting` wait (on the device, not the host) for the work enqueued on `producer` so far:
// what __cuda_array_interface__ v3 asks of a consumer whose producer names a stream.
void wait_for(cudaStream_t waiting, cudaStream_t producer);

}  // namespace klab::interop
