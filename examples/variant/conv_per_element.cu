// conv.per_element — direct 2D correlation, one thread per stored element (a pixel's channel).
//
// This file is the worked example of docs/adding-a-variant.md: a minimal but real variant, built
// in every build and verified by the conformance suite in a test executable of its own
// (examples/variant/CMakeLists.txt). It is not in kernels/, so `klab list`, the tuner and the
// benchmark study do not see it; moved into kernels/ it would be an ordinary variant.
//
// Technique: the grid covers the image as it is stored (rows() rows of row_elements() bytes), so
// neighbouring threads write neighbouring bytes in either layout: the three channels of an AoS
// RGB pixel go to three threads, where conv.global gives one thread all three. Each thread reads
// the mask and the mask-sized neighbourhood of its element from global memory, one FMA per tap.
// Preconditions: none beyond the harness's (any mask up to 31x31, every border, 1/3/4 channels,
// AoS or SoA, any pitch, any size); borders are handled per tap by sample().
// Deliberately not done: no reuse of neighbouring threads' reads, no shared memory, no
// separability; it shows the shape of a variant file, not a fast convolution.
// Measured: nothing; an example is not in the study. A variant in kernels/ states its figure here
// (GPU, problem, tool), as kernels/conv_global.cu does.
#include <cstdint>

#include "harness/kernel_launch.hpp"
#include "harness/numeric.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

__global__ void conv_per_element_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out,
                                        const float* __restrict__ mask, int mask_width, int mask_height,
                                        Border border) {
    const ImageShape& shape = in.shape;
    const int element = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);  // within a stored row
    const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);      // stored row
    if (element >= shape.row_elements() || row >= shape.rows()) return;
    // Which pixel and channel this stored byte is (harness/image.hpp describes both layouts).
    const bool aos = shape.layout == Layout::aos;
    const int x = aos ? element / shape.channels : element;
    const int y = aos ? row : row % shape.height;
    const int c = aos ? element % shape.channels : row / shape.height;

    const int rx = mask_width / 2;
    const int ry = mask_height / 2;
    float acc = 0.0f;  // fp32 accumulation, as the numeric contract allows (docs/numeric-contract.md)
    for (int j = 0; j < mask_height; ++j) {
        for (int i = 0; i < mask_width; ++i) {
            const float pixel = static_cast<float>(sample(in, x + i - rx, y + j - ry, c, border));
            acc = fmaf(mask[j * mask_width + i], pixel, acc);
        }
    }
    out.at(x, y, c) = saturate_round_u8(acc);  // round half to even, saturate to 0..255
}

class ConvPerElement final : public Variant {
public:
    std::string name() const override { return "conv.per_element"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override { return "one thread per stored element, mask and pixels from global memory"; }

    // Every convolution the harness accepts. A variant that cannot run a problem says why here,
    // e.g. Support::no("masks up to 9x9"); the conformance suite then holds it to that promise.
    Support supports(const Problem&) const override { return Support::yes(); }

    // The tuner tries the standard block sides around this default (harness/variant.hpp).
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{128, 2, {}}); }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const dim3 grid(grid_side(problem.shape.row_elements(), shape.block_x), grid_side(problem.shape.rows(), shape.block_y));
        return {make_launch(&conv_per_element_kernel, "conv_per_element_kernel", grid, block_of(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        enqueue_kernel(plan.kernels[0], stream, &conv_per_element_kernel, b.input.view<const std::uint8_t>(),
                       b.output.view<std::uint8_t>(), b.mask.data, b.mask.width, b.mask.height, plan.problem.border);
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvPerElement)
