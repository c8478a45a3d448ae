// AoS <-> SoA conversion: one thread per pixel moves its channels. Reads and writes are
// byte-wide; this is a utility for tests and `klab apply`, not a measured variant.
#include "harness/device_layout.hpp"

#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"

namespace klab {

namespace {

__global__ void convert_layout_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out) {
    const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= in.shape.width || y >= in.shape.height) return;
    for (int c = 0; c < in.shape.channels; ++c) out.at(x, y, c) = in.at(x, y, c);
}

}  // namespace

void convert_layout(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, cudaStream_t stream) {
    validate_shape(in.shape);
    if (in.shape.width != out.shape.width || in.shape.height != out.shape.height ||
        in.shape.channels != out.shape.channels) {
        throw Error(fmt::format("layout conversion from {} to {}", to_string(in.shape), to_string(out.shape)),
                    "images of the same width, height and channels");
    }
    if (static_cast<const void*>(in.data) == static_cast<const void*>(out.data)) {
        throw Error("layout conversion in place", "distinct input and output images");
    }
    const dim3 block(32, 8);
    const dim3 grid((in.shape.width + 31) / 32, (in.shape.height + 7) / 8);
    convert_layout_kernel<<<grid, block, 0, stream>>>(in, out);
    KLAB_CUDA_CHECK_LAUNCH(stream);
}

DeviceImage<std::uint8_t> to_layout(const DeviceImage<std::uint8_t>& in, Layout layout, cudaStream_t stream) {
    ImageShape shape = in.shape();
    shape.layout = layout;
    DeviceImage<std::uint8_t> out(shape);
    convert_layout(in.view(), out.view(), stream);
    return out;
}

}  // namespace klab
