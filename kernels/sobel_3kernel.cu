// sobel.3kernel — seed 001's Sobel pipeline: gray, gradients, magnitude as three kernels.
//
// Technique (seed 001, "naive parallel version"): one thread per pixel in each of three kernels,
// with device-memory images between them:
//   1. sobel_gray_kernel:      BT.709 gray (gray_bt709, exact integers) of every pixel -> gray u8;
//   2. sobel_gradient_kernel:  the 3x3 Sobel gx and gy of the gray image, border resolved with the
//                              shared sample() rule -> two int16 images;
//   3. sobel_magnitude_kernel: saturate_round_u8(sqrt(gx^2 + gy^2)) -> the output.
// It moves 3 + 1 (gray) + 1 + 4 (gradients) + 4 + 1 bytes per RGB pixel where sobel.fused moves
// 3 + 1: the pair measures what fusion gains.
// Exactness: as sobel.fused — integer gray and gradients, an fp32 square root that never lands
// within half an ulp of a rounding tie, so results equal the reference.
// Preconditions: 1, 3 or 4 channels (alpha ignored), AoS or SoA, any pitch, any size, every
// border.
// Scratch memory: the gray image and the two gradient images (5 bytes per pixel; see
// IntermediateLayout) are the plan's scratch (scratch_bytes(); prepare() allocates it, enqueue()
// allocates nothing).
// Concurrency: each plan owns its scratch, so plans on different streams may run at once; two
// launches of one plan share it and must not overlap (launch a plan on one stream at a time).
// Deliberately not done: no shared-memory tiling, no fusion (that is sobel.fused).
// Measured on an NVIDIA H200 (before the intermediates moved into the plan's scratch; the kernels
// are unchanged), 8K RGB AoS (7680x4320) -> gray magnitude, replicate, default block
// 32x8, by Nsight Compute (`bash scripts/op-times.sh`: gpu__time_duration, L2 flushed before each
// kernel, clocks not locked): gray 115.9 us + gradients 308.7 us + magnitude 110.5 us = 535.1 us,
// 421.4 MB of DRAM traffic; sobel.fused takes 134.7 us and 124.2 MB in the same run (4.0x).
#include <cstddef>
#include <cstdint>

#include "harness/kernel_launch.hpp"
#include "harness/numeric.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

// The intermediate images, tightly packed, width*height elements each.
struct Intermediates {
    std::uint8_t* gray;
    std::int16_t* gx;
    std::int16_t* gy;
};

// Where the intermediates lie in the plan's scratch block: gray, then gx, then gy, each starting
// at a multiple of 256 bytes (the block itself is 256-byte aligned).
struct IntermediateLayout {
    std::size_t gx_offset = 0, gy_offset = 0, bytes = 0;  // gray at offset 0
};

std::size_t round_up_256(std::size_t n) { return (n + 255) / 256 * 256; }

IntermediateLayout intermediate_layout(const ImageShape& shape) {
    const std::size_t pixels = shape.pixels();
    IntermediateLayout layout;
    layout.gx_offset = round_up_256(pixels * sizeof(std::uint8_t));
    layout.gy_offset = layout.gx_offset + round_up_256(pixels * sizeof(std::int16_t));
    layout.bytes = layout.gy_offset + round_up_256(pixels * sizeof(std::int16_t));
    return layout;
}

template <int Channels>
__global__ void sobel_gray_kernel(ImageView<const std::uint8_t> in, Intermediates mid) {
    const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= in.shape.width || y >= in.shape.height) return;
    std::uint8_t gray;
    if constexpr (Channels == 1) {
        gray = in.at(x, y, 0);
    } else {
        gray = gray_bt709(in.at(x, y, 0), in.at(x, y, 1), in.at(x, y, 2));
    }
    mid.gray[static_cast<std::size_t>(y) * in.shape.width + x] = gray;
}

__global__ void sobel_gradient_kernel(ImageView<const std::uint8_t> gray, Intermediates mid, Border border) {
    const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= gray.shape.width || y >= gray.shape.height) return;
    int p[3][3];  // p[j][i]: gray at (x + i - 1, y + j - 1)
    for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 3; ++i) p[j][i] = sample(gray, x + i - 1, y + j - 1, 0, border);
    const int gx = (p[0][2] + 2 * p[1][2] + p[2][2]) - (p[0][0] + 2 * p[1][0] + p[2][0]);
    const int gy = (p[2][0] + 2 * p[2][1] + p[2][2]) - (p[0][0] + 2 * p[0][1] + p[0][2]);
    const std::size_t i = static_cast<std::size_t>(y) * gray.shape.width + x;
    mid.gx[i] = static_cast<std::int16_t>(gx);
    mid.gy[i] = static_cast<std::int16_t>(gy);
}

__global__ void sobel_magnitude_kernel(Intermediates mid, ImageView<std::uint8_t> out) {
    const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= out.shape.width || y >= out.shape.height) return;
    const std::size_t i = static_cast<std::size_t>(y) * out.shape.width + x;
    const int gx = mid.gx[i];
    const int gy = mid.gy[i];
    out.at(x, y, 0) = saturate_round_u8(__fsqrt_rn(static_cast<float>(gx * gx + gy * gy)));
}

using GrayKernel = void (*)(ImageView<const std::uint8_t>, Intermediates);

GrayKernel gray_kernel(const Problem& problem) {
    return by_channels<GrayKernel>(problem.shape.channels, &sobel_gray_kernel<1>, &sobel_gray_kernel<3>,
                                   &sobel_gray_kernel<4>);
}

class Sobel3Kernel final : public Variant {
public:
    std::string name() const override { return "sobel.3kernel"; }
    Operation op() const override { return Operation::sobel; }
    std::string technique() const override {
        return "seed 001's pipeline: gray, gradients, magnitude as three kernels with images in device memory";
    }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{32, 8, {}}); }
    std::size_t scratch_bytes(const Problem& problem, const LaunchShape&) const override {
        return intermediate_layout(problem.shape).bytes;
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const dim3 grid = covering_grid(problem.shape, shape);
        const dim3 block = block_of(shape);
        return {make_launch(gray_kernel(problem), "sobel_gray_kernel", grid, block),
                make_launch(&sobel_gradient_kernel, "sobel_gradient_kernel", grid, block),
                make_launch(&sobel_magnitude_kernel, "sobel_magnitude_kernel", grid, block)};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const ImageShape& shape = plan.problem.shape;
        const IntermediateLayout layout = intermediate_layout(shape);
        auto* base = plan.scratch_as<unsigned char>();  // layout.bytes, allocated by prepare()
        const Intermediates mid{base, reinterpret_cast<std::int16_t*>(base + layout.gx_offset),
                                reinterpret_cast<std::int16_t*>(base + layout.gy_offset)};
        const ImageView<const std::uint8_t> gray(mid.gray, ImageShape{shape.width, shape.height, 1, Layout::aos},
                                                 static_cast<std::size_t>(shape.width));
        enqueue_kernel(plan.kernels[0], stream, gray_kernel(plan.problem), plan.buffers.input.view<const std::uint8_t>(), mid);
        enqueue_kernel(plan.kernels[1], stream, &sobel_gradient_kernel, gray, mid, plan.problem.border);
        enqueue_kernel(plan.kernels[2], stream, &sobel_magnitude_kernel, mid, plan.buffers.output.view<std::uint8_t>());
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::Sobel3Kernel)
