// conv.halo_tiled — 2D correlation with one thread per input pixel of the tile (halo threads).
//
// Technique (seed 002's Gaussian blur, seed 004's "block = O_TILE_WIDTH + MASK_WIDTH - 1"): the
// block is as large as the input tile, output tile plus halo. Every thread loads exactly one
// input pixel (all its channels) into shared memory, with the border resolved while loading;
// after one barrier only the inner threads — (BX - 2rx) x (BY - 2ry) of them — compute an
// output, the halo threads idle. Loading is one simple step; the price is idle threads, a
// large share for big masks (a 32x32 block with a 9x9 mask computes 24x24 outputs: 56%).
// Preconditions: the block must be wider than 2rx and taller than 2ry (check_shape() says so);
// a 31x31 mask therefore needs at least 31x31 threads (the default is 32x32). A grid has at
// most 65535 blocks in y, so with the default block the image may be at most 65535 output tiles
// tall (131070 rows for a 31x31 mask, whose 32x32 block computes 2 rows): supports() refuses
// taller ones. (Stepping blocks down through further tiles in a loop measured 1.2-2.5x slower
// on an H200, so the kernel stays a single pass.) Every border, 1/3/4 channels, AoS or SoA, any
// pitch. Shared memory: BX*BY*channels bytes. The mask is read through the read-only data cache.
// Deliberately not done: no reuse of the idle halo threads for computing.
// Measured on an NVIDIA H200, 8K RGB AoS, replicate, default blocks 32x8 / 32x16 / 32x32, one
// kernel, L2 flushed, by Nsight Compute (`bash scripts/kernel-times.sh gaussian:3 gaussian:9 box:31`):
// gauss3 456 us, gauss9 2346 us, box31 1008732 us — with a 31x31 mask a 32x32 block computes
// only 2x2 outputs, so each input pixel is loaded 256 times. For scale (BASELINES.md, not this run): NPP's
// Gaussian takes 144 us (3x3) and 614 us (9x9); the 8K RGB copy floor is 57.9 us. Verified
// against the CPU reference over the conformance table (tests/gpu/test_conformance.cpp).
#include <cstdint>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/numeric.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

template <int Channels>
__global__ void conv_halo_tiled_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out,
                                       const float* __restrict__ mask, int mask_width, int mask_height,
                                       Border border) {
    extern __shared__ std::uint8_t tile[];  // blockDim.y rows of blockDim.x pixels of Channels bytes
    const int rx = mask_width / 2;
    const int ry = mask_height / 2;
    const int tx = static_cast<int>(threadIdx.x);
    const int ty = static_cast<int>(threadIdx.y);
    const int block_w = static_cast<int>(blockDim.x);
    const int block_h = static_cast<int>(blockDim.y);
    // This thread's input pixel; for an inner thread it is also its output pixel.
    const int x = static_cast<int>(blockIdx.x) * (block_w - 2 * rx) + tx - rx;
    const int y = static_cast<int>(blockIdx.y) * (block_h - 2 * ry) + ty - ry;
    for (int c = 0; c < Channels; ++c) tile[(ty * block_w + tx) * Channels + c] = sample(in, x, y, c, border);
    __syncthreads();

    const bool inner = tx >= rx && tx < block_w - rx && ty >= ry && ty < block_h - ry;
    if (!inner || x >= in.shape.width || y >= in.shape.height) return;
    float acc[Channels] = {};
    for (int j = 0; j < mask_height; ++j) {
        const std::uint8_t* row = tile + ((ty - ry + j) * block_w + (tx - rx)) * Channels;
        for (int i = 0; i < mask_width; ++i) {
            const float m = mask[j * mask_width + i];
            for (int c = 0; c < Channels; ++c) acc[c] = fmaf(m, static_cast<float>(row[i * Channels + c]), acc[c]);
        }
    }
    for (int c = 0; c < Channels; ++c) out.at(x, y, c) = saturate_round_u8(acc[c]);
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, const float*, int, int, Border);

Kernel kernel_for(const Problem& problem) {
    return by_channels<Kernel>(problem.shape.channels, &conv_halo_tiled_kernel<1>, &conv_halo_tiled_kernel<3>,
                               &conv_halo_tiled_kernel<4>);
}

constexpr unsigned kMaxGridY = 65535;  // CUDA's limit on grid.y

// The smallest of 8, 16 and 32 that exceeds 2 * radius (a radius is at most 15).
int block_side_for(int radius) {
    for (int side : {8, 16, 32}) {
        if (side > 2 * radius) return side;
    }
    return 32;
}

class ConvHaloTiled final : public Variant {
public:
    std::string name() const override { return "conv.halo_tiled"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "block = output tile + halo, one input pixel per thread, inner threads compute";
    }
    Support supports(const Problem& problem) const override {
        const LaunchShape shape = default_shape(problem);
        const int out_h = shape.block_y - 2 * problem.mask->radius_y();
        if (grid_side(problem.shape.height, out_h) > kMaxGridY) {
            return Support::no(fmt::format("images up to {} rows for a {}-row mask (65535 blocks of {} output rows)",
                                           kMaxGridY * static_cast<unsigned>(out_h), problem.mask->height(), out_h));
        }
        return Support::yes();
    }
    // default_shape() picks the block height by mask (32x8, 32x16 or 32x32); the space's default
    // is the middle one.
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{32, 16, {}}); }
    LaunchShape default_shape(const Problem& problem) const override {
        return LaunchShape{32, block_side_for(problem.mask->radius_y()), {}};
    }
    Support check_shape(const Problem& problem, const LaunchShape& shape) const override {
        const Mask& mask = *problem.mask;
        if (shape.block_x <= 2 * mask.radius_x() || shape.block_y <= 2 * mask.radius_y()) {
            return Support::no(fmt::format("a {}x{} mask needs a block wider than {} and taller than {}", mask.width(),
                                           mask.height(), 2 * mask.radius_x(), 2 * mask.radius_y()));
        }
        return Support::yes();
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Mask& mask = *problem.mask;
        const int out_w = shape.block_x - 2 * mask.radius_x();
        const int out_h = shape.block_y - 2 * mask.radius_y();
        const dim3 grid(grid_side(problem.shape.width, out_w), grid_side(problem.shape.height, out_h));
        const std::size_t tile_bytes = static_cast<std::size_t>(shape.block_x) * static_cast<std::size_t>(shape.block_y) *
                                       static_cast<std::size_t>(problem.shape.channels);
        return {make_launch(kernel_for(problem), "conv_halo_tiled_kernel", grid, block_of(shape), tile_bytes)};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), b.input.view<const std::uint8_t>(),
                       b.output.view<std::uint8_t>(), b.mask.data, b.mask.width, b.mask.height, plan.problem.border);
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvHaloTiled)
