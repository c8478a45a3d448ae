// conv.global — direct 2D correlation, one thread per output pixel, mask in global memory.
//
// Technique (seeds 000 and 001, the "naive" kernels): each thread reads the mask and the
// mask-sized neighbourhood of its pixel straight from global memory (through L1/L2) and
// accumulates all channels of the pixel in fp32 registers, one FMA per tap and channel.
// Preconditions: none beyond the harness's (any mask up to 31x31, every border, 1/3/4 channels,
// AoS or SoA, any pitch, any size). Border handling is per tap through border_index().
// Deliberately not done: no reuse of neighbouring threads' reads, no vector loads, no
// separability — it is the baseline the other variants are measured against.
// Measured on an NVIDIA H200, 8K RGB AoS, replicate, default block, one kernel,
// L2 flushed, by Nsight Compute (`bash scripts/kernel-times.sh gaussian:3 gaussian:9 box:31`):
// gauss3 1296 us, gauss9 10145 us, box31 116008 us. For scale (BASELINES.md, not this run): NPP's
// Gaussian takes 144 us (3x3) and 614 us (9x9); the 8K RGB copy floor is 57.9 us. Verified
// against the CPU reference over the conformance table (tests/gpu/test_conformance.cpp).
#include <cstdint>

#include "harness/kernel_launch.hpp"
#include "harness/numeric.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

template <int Channels>
__global__ void conv_global_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out,
                                   const float* __restrict__ mask, int mask_width, int mask_height, Border border) {
    const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= in.shape.width || y >= in.shape.height) return;
    const int rx = mask_width / 2;
    const int ry = mask_height / 2;
    float acc[Channels] = {};
    for (int j = 0; j < mask_height; ++j) {
        for (int i = 0; i < mask_width; ++i) {
            const float m = mask[j * mask_width + i];
            for (int c = 0; c < Channels; ++c) {
                acc[c] = fmaf(m, static_cast<float>(sample(in, x + i - rx, y + j - ry, c, border)), acc[c]);
            }
        }
    }
    for (int c = 0; c < Channels; ++c) out.at(x, y, c) = saturate_round_u8(acc[c]);
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, const float*, int, int, Border);

Kernel kernel_for(const Problem& problem) {
    return by_channels<Kernel>(problem.shape.channels, &conv_global_kernel<1>, &conv_global_kernel<3>,
                               &conv_global_kernel<4>);
}

class ConvGlobal final : public Variant {
public:
    std::string name() const override { return "conv.global"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override { return "one thread per pixel, mask and pixels read from global memory"; }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{32, 8, {}}); }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        return {make_launch(kernel_for(problem), "conv_global_kernel", covering_grid(problem.shape, shape), block_of(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), b.input.view<const std::uint8_t>(),
                       b.output.view<std::uint8_t>(), b.mask.data, b.mask.width, b.mask.height, plan.problem.border);
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvGlobal)
