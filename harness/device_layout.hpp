#pragma once
// AoS <-> SoA conversion on the device: the GPU twin of reference::to_layout().
#include <cstdint>

#include <cuda_runtime_api.h>

#include "harness/device_image.hpp"
#include "harness/image.hpp"

namespace klab {

// Copies the pixels of `in` into `out`, which has the same width, height and channels and either
// layout; any pitches. Asynchronous on `stream`. Throws klab::Error on a shape mismatch or when
// the two share memory.
void convert_layout(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, cudaStream_t stream = nullptr);

// `in` in `layout`, in a new device image.
DeviceImage<std::uint8_t> to_layout(const DeviceImage<std::uint8_t>& in, Layout layout, cudaStream_t stream = nullptr);

}  // namespace klab
