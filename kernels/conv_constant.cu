// conv.constant — direct 2D correlation, one thread per output pixel, mask in __constant__ memory.
//
// Technique (seeds 000, 001 and 004): as conv.global, but the mask lives in the 64 KiB constant
// bank. Every thread of a warp reads the same coefficient at the same time, which the constant
// cache serves as one broadcast instead of a load per thread. Room for the largest mask, 31x31
// floats (3844 bytes), is reserved statically; each launch first copies the problem's mask from
// the device mask buffer into it (device to device, on the launch's stream).
// Preconditions: masks up to 31x31 (all klab masks); every border, 1/3/4 channels, AoS or SoA,
// any pitch, any size. The constant bank is one per device: launches with different masks on
// different streams must not overlap (klab's tests, tuner and benchmarks use one stream).
// Deliberately not done: no shared-memory reuse of pixels — that is what the tiled variants add.
// Measured on an NVIDIA H200, 8K RGB AoS, replicate, default block, one kernel,
// L2 flushed, by Nsight Compute (`bash scripts/kernel-times.sh gaussian:3 gaussian:9 box:31`):
// gauss3 1247 us, gauss9 9829 us, box31 113797 us. For scale (BASELINES.md, not this run): NPP's
// Gaussian takes 144 us (3x3) and 614 us (9x9); the 8K RGB copy floor is 57.9 us. Verified
// against the CPU reference over the conformance table (tests/gpu/test_conformance.cpp).
#include <cstdint>

#include "harness/kernel_launch.hpp"
#include "harness/numeric.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

constexpr int kMaxTaps = Mask::kMaxSide * Mask::kMaxSide;
__constant__ float constant_mask[kMaxTaps];

template <int Channels>
__global__ void conv_constant_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, int mask_width,
                                     int mask_height, Border border) {
    const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= in.shape.width || y >= in.shape.height) return;
    const int rx = mask_width / 2;
    const int ry = mask_height / 2;
    float acc[Channels] = {};
    for (int j = 0; j < mask_height; ++j) {
        for (int i = 0; i < mask_width; ++i) {
            const float m = constant_mask[j * mask_width + i];
            for (int c = 0; c < Channels; ++c) {
                acc[c] = fmaf(m, static_cast<float>(sample(in, x + i - rx, y + j - ry, c, border)), acc[c]);
            }
        }
    }
    for (int c = 0; c < Channels; ++c) out.at(x, y, c) = saturate_round_u8(acc[c]);
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, int, int, Border);

Kernel kernel_for(const Problem& problem) {
    return by_channels<Kernel>(problem.shape.channels, &conv_constant_kernel<1>, &conv_constant_kernel<3>,
                               &conv_constant_kernel<4>);
}

class ConvConstant final : public Variant {
public:
    std::string name() const override { return "conv.constant"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override { return "one thread per pixel, mask broadcast from __constant__ memory"; }
    Support supports(const Problem& problem) const override {
        if (problem.mask->width() * problem.mask->height() > kMaxTaps) return Support::no("masks up to 31x31");
        return Support::yes();
    }
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{32, 8, {}}); }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        return {make_launch(kernel_for(problem), "conv_constant_kernel", covering_grid(problem.shape, shape), block_of(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        const std::size_t mask_bytes = static_cast<std::size_t>(b.mask.width) * b.mask.height * sizeof(float);
        KLAB_CUDA_CHECK(cudaMemcpyToSymbolAsync(constant_mask, b.mask.data, mask_bytes, 0, cudaMemcpyDeviceToDevice, stream));
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), b.input.view<const std::uint8_t>(),
                       b.output.view<std::uint8_t>(), b.mask.width, b.mask.height, plan.problem.border);
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvConstant)
