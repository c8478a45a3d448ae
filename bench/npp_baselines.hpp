#pragma once
// NVIDIA NPP on the study's problems: the library a user would pick instead of klab
// (../shared/BASELINES.md lists the calls). Built where CMake finds NPP (KLAB_HAVE_NPP); NPP 13
// has only the `_Ctx` calls, so the stream context is filled by hand from the device's properties.
//
// NPP computes its own answers — its Gaussian has NPP's fixed coefficients, its separable filter
// keeps a u8 intermediate, its Sobel writes two 16-bit gradients, its integral is 32-bit signed
// and (W+1)x(H+1) — so its rows are timed, never verified against klab's reference.
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "bench/study.hpp"
#include "harness/variant.hpp"

namespace klab::bench {

class NppBaseline {
public:
    virtual ~NppBaseline() = default;
    virtual std::string call() const = 0;   // "nppiFilterGaussBorder_8u_C3R_Ctx", for the row's label
    virtual Traffic traffic() const = 0;    // what NPP's own output format makes it read and write at the least
    virtual void enqueue(cudaStream_t stream) = 0;  // throws klab::Error on an NPP error status
};

bool npp_built();
std::string npp_version();  // "13.0.1", or "not built"

// `family`: npp.gauss, npp.filter32f, npp.separable32f, npp.box, npp.sobel, npp.integral.
// `input` holds the problem's input (u8, AoS). Allocates NPP's outputs and any device kernel.
// Throws klab::Error for a family or problem NPP has no call for here (another border than
// replicate, a channel count without a call, a mask size NPP's Gaussian lacks).
std::unique_ptr<NppBaseline> make_npp_baseline(const std::string& family, const Problem& problem, const DeviceBuffer& input);

}  // namespace klab::bench
