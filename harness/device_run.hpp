#pragma once
// The simple path from a host image to a variant's result, for tools (`klab apply`, `klab run`):
// upload, convert to the problem's layout on the device, run, convert back, download.
// Timed loops (tuner, benchmarks) use prepare()/launch() on buffers they keep.
#include "harness/image.hpp"
#include "harness/variant.hpp"

namespace klab {

struct DeviceRun {
    ImageU8 output;              // AoS, the input's width, height and channels
    float launch_milliseconds;   // one launch after one warm-up launch, CUDA events around it
};

// `input` is AoS; problem.shape gives the layout the variant runs in. Convolve problems only.
DeviceRun run_on_device(const Variant& variant, const Problem& problem, const ImageU8& input, const LaunchShape& shape);

}  // namespace klab
