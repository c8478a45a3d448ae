// conv.tiled_2batch — 2D correlation from a shared-memory input tile loaded in batches.
//
// Technique (seed 004's "2-batch loading", seed 001's shared-memory kernel): a block of BX x BY
// threads computes a BX x BY output tile. It first copies the input tile those outputs need,
// (BX + 2rx) x (BY + 2ry) pixels with all channels, into shared memory, every thread loading one
// tile pixel per batch; after one barrier each thread reads its mask-sized neighbourhood from
// shared memory instead of global memory. The seeds load in exactly two batches, which is right
// only while the halo has no more pixels than the block (a 16x16 block with a 5x5 mask: 400 tile
// pixels, 256 threads). Here the count is computed: load_batches = ceil(tile pixels / threads),
// e.g. 3 for 16x16 threads and a 9x9 mask (576 tile pixels), 23 for 8x8 threads and a 31x31 mask
// (1444 tile pixels).
// Borders are resolved while loading (border_index per tile pixel), so the inner loop has none.
// Preconditions: the tile must fit in shared memory: (BX+2rx)*(BY+2ry)*channels bytes, checked
// by the harness against the device (kernels above 48 KiB opt in). Every border, 1/3/4 channels,
// AoS or SoA, any pitch, any size. The mask is read through the read-only data cache.
// Deliberately not done: no register blocking (one output per thread), no vector loads (every
// load is one byte).
// Measured on an NVIDIA H200, 8K RGB AoS, replicate, default block, one kernel,
// L2 flushed, by Nsight Compute (`bash scripts/kernel-times.sh gaussian:3 gaussian:9 box:31`):
// gauss3 537 us, gauss9 1997 us, box31 16731 us. For scale (BASELINES.md, not this run): NPP's
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
__global__ void conv_tiled_2batch_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out,
                                         const float* __restrict__ mask, int mask_width, int mask_height,
                                         Border border) {
    extern __shared__ std::uint8_t tile[];  // tile_height rows of tile_width pixels of Channels bytes
    const int rx = mask_width / 2;
    const int ry = mask_height / 2;
    const int tile_width = static_cast<int>(blockDim.x) + 2 * rx;
    const int tile_height = static_cast<int>(blockDim.y) + 2 * ry;
    const int tile_pixels = tile_width * tile_height;
    const int threads = static_cast<int>(blockDim.x * blockDim.y);
    const int thread = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
    // Image coordinates of the tile's top-left pixel: the block's first output minus the halo.
    const int tile_x0 = static_cast<int>(blockIdx.x * blockDim.x) - rx;
    const int tile_y0 = static_cast<int>(blockIdx.y * blockDim.y) - ry;

    const int load_batches = (tile_pixels + threads - 1) / threads;
    for (int batch = 0; batch < load_batches; ++batch) {
        const int t = batch * threads + thread;
        if (t < tile_pixels) {
            const int tx = t % tile_width;
            const int ty = t / tile_width;
            for (int c = 0; c < Channels; ++c) tile[t * Channels + c] = sample(in, tile_x0 + tx, tile_y0 + ty, c, border);
        }
    }
    __syncthreads();

    const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= in.shape.width || y >= in.shape.height) return;
    float acc[Channels] = {};
    for (int j = 0; j < mask_height; ++j) {
        const std::uint8_t* row = tile + ((static_cast<int>(threadIdx.y) + j) * tile_width + threadIdx.x) * Channels;
        for (int i = 0; i < mask_width; ++i) {
            const float m = mask[j * mask_width + i];
            for (int c = 0; c < Channels; ++c) acc[c] = fmaf(m, static_cast<float>(row[i * Channels + c]), acc[c]);
        }
    }
    for (int c = 0; c < Channels; ++c) out.at(x, y, c) = saturate_round_u8(acc[c]);
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, const float*, int, int, Border);

Kernel kernel_for(const Problem& problem) {
    return by_channels<Kernel>(problem.shape.channels, &conv_tiled_2batch_kernel<1>, &conv_tiled_2batch_kernel<3>,
                               &conv_tiled_2batch_kernel<4>);
}

class ConvTiled2Batch final : public Variant {
public:
    std::string name() const override { return "conv.tiled_2batch"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "block-sized output tile, input tile + halo loaded into shared memory in batches";
    }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{32, 8, {}}); }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Mask& mask = *problem.mask;
        const std::size_t tile_bytes = static_cast<std::size_t>(shape.block_x + 2 * mask.radius_x()) *
                                       static_cast<std::size_t>(shape.block_y + 2 * mask.radius_y()) *
                                       static_cast<std::size_t>(problem.shape.channels);
        return {make_launch(kernel_for(problem), "conv_tiled_2batch_kernel", covering_grid(problem.shape, shape),
                            block_of(shape), tile_bytes)};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), b.input.view<const std::uint8_t>(),
                       b.output.view<std::uint8_t>(), b.mask.data, b.mask.width, b.mask.height, plan.problem.border);
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvTiled2Batch)
