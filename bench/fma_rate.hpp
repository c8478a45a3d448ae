#pragma once
// The GPU's fp32 FMA rate, measured: the second of the two floors a convolution row is measured
// against (bench/README.md, "Floors and the roofline"). A saturating kernel — every SM full of
// threads, eight independent FFMA chains per thread, nothing but FFMAs in its loop — timed with
// CUDA events; the median of several launches after a warm-up.
#include <cuda_runtime_api.h>

#include "harness/problem.hpp"

namespace klab::bench {

// FFMA instructions per second (one FFMA is two floating-point operations) on the current device.
double measure_ffma_per_second(cudaStream_t stream);

// FMAs per output element that the best algorithm for `problem` needs at the least: 4 for a box
// mask of any size (running sums: an add and a subtract per pass), width + height for another
// rank-1 mask of two sides above 1 (a row pass and a column pass), width x height for any other
// mask (a 1xN mask is its own single pass); 0 for the integer operations (Sobel, integral), whose
// floor is the copy floor alone.
double fma_per_output_element(const Problem& problem);

}  // namespace klab::bench
