// sobel.fused — gray conversion, 3x3 Sobel gradients and magnitude in one kernel.
//
// Technique: a block of BX x BY threads computes an output tile BX wide and BY*4 tall (each thread
// four rows of one column). It first converts the tile's input pixels plus a one-pixel halo to
// BT.709 gray (gray_bt709, exact integer arithmetic) into shared memory, resolving the border
// while loading; after one barrier each thread slides down its column, keeping the 3x3 window's
// gray values in registers, and writes saturate_round_u8(sqrt(gx^2 + gy^2)). The image is read
// once (plus the halo, 2/(4*BY) + 2/BX of it, mostly from cache) and the gray magnitude written
// once: no intermediate image in device memory (compare sobel.3kernel).
// Exactness: gray and gradients are integers; gx^2 + gy^2 < 2^24 is exact in fp32, and below the
// saturation point its square root stays at least 4.9e-4 away from a rounding tie (k + 1/2), far
// more than the error of n * rsqrtf(n), so the result rounds like the reference's double sqrt
// (magnitude_u8 gives the argument).
// Preconditions: 1 (gray), 3 (RGB) or 4 (RGBA, alpha ignored) channels, AoS or SoA, any pitch, any
// size, every border (a constant border's value is the gray value outside the image, as in the
// reference). Shared memory: (BX + 2) * (4*BY + 2) bytes.
// Tiles inside the image (all but the edge ones) skip the border rule while loading.
// Deliberately not done: no vector loads (every load is one byte), no register tiling across x.
// Measured on an NVIDIA H200, 8K RGB AoS (7680x4320) -> gray magnitude, replicate, default block
// 32x8, by Nsight Compute (`bash scripts/op-times.sh`: gpu__time_duration, L2 flushed, clocks not
// locked): 134.7 us, 99.6 MB read + 24.6 MB written. The floor for its 132.7 MB (3 + 1 bytes per
// pixel) at BASELINES.md's 8K-copy rate (3.44 TB/s) is 38.6 us: 3.5x, short of the 1.3x target.
// Nsight counts 105.5 M warp instructions (about 100 per pixel) at 95% achieved occupancy: the
// kernel is bound by instruction issue, not by memory. What would close it: several pixels per
// thread, word loads of the RGB bytes, four gray values per shared-memory word.
// For scale: sobel.3kernel takes 535.1 us on the same problem in the same run; NPP's gray Sobel
// (horizontal + vertical, BASELINES.md) 110 us.
#include <cstddef>
#include <cstdint>

#include "harness/kernel_launch.hpp"
#include "harness/numeric.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

constexpr int kRowsPerThread = 4;

// The gray value of image pixel (x, y), which lies inside the image. The addressing is spelled
// out per layout (a template parameter) so that the inner loops carry no layout test.
template <int Channels, bool Soa>
__device__ __forceinline__ std::uint8_t gray_inside(const ImageView<const std::uint8_t>& in, int x, int y) {
    const std::uint8_t* row = in.data + static_cast<std::size_t>(y) * in.pitch_bytes;
    if constexpr (Channels == 1) {
        return row[x];
    } else if constexpr (Soa) {
        const std::size_t plane = static_cast<std::size_t>(in.shape.height) * in.pitch_bytes;
        return gray_bt709(row[x], row[plane + x], row[2 * plane + x]);
    } else {
        const std::uint8_t* pixel = row + x * Channels;
        return gray_bt709(pixel[0], pixel[1], pixel[2]);
    }
}

// The gray value of image pixel (x, y), border included.
template <int Channels, bool Soa>
__device__ __forceinline__ std::uint8_t gray_at(const ImageView<const std::uint8_t>& in, int x, int y, Border border) {
    const int sx = border_index(x, in.shape.width, border.mode);
    const int sy = border_index(y, in.shape.height, border.mode);
    if (sx < 0 || sy < 0) return border.value;
    return gray_inside<Channels, Soa>(in, sx, sy);
}

// saturate_round_u8(sqrt(n)) for n = gx^2 + gy^2, exactly. sqrt(n) is never closer than
// 0.25 / (2 * 255.5) ~ 4.9e-4 to a rounding tie k + 1/2 below 255.5 (where the result does not
// saturate): (k + 1/2)^2 = k^2 + k + 1/4 lies 1/4 from any integer n. rsqrtf is within 2 ulps
// (CUDA Programming Guide, single-precision accuracy table), so n * rsqrtf(n) is within 3 ulps of
// sqrt(n), under 8e-5 below 256: it rounds to the same integer as the exact root.
// n = 0 gives 0 * inf = NaN, which saturate_round_u8 maps to 0 = sqrt(0).
__device__ __forceinline__ std::uint8_t magnitude_u8(int n) {
    const float f = static_cast<float>(n);
    return saturate_round_u8(f * rsqrtf(f));
}

template <int Channels, bool Soa>
__global__ void sobel_fused_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Border border) {
    extern __shared__ std::uint8_t tile[];  // tile_height rows of tile_width gray values
    const int block_w = static_cast<int>(blockDim.x);
    const int out_h = static_cast<int>(blockDim.y) * kRowsPerThread;
    const int tile_width = block_w + 2;
    const int tile_height = out_h + 2;
    const int tile_x0 = static_cast<int>(blockIdx.x) * block_w - 1;
    const int tile_y0 = static_cast<int>(blockIdx.y) * out_h - 1;
    // Threads step over the tile in 2D, without a division per pixel: the first block_w columns
    // one per thread in x, then the last two columns. A tile that lies inside the image (most of
    // them) skips the border rule; the test is the same for the whole block.
    const bool inside = tile_x0 >= 0 && tile_y0 >= 0 && tile_x0 + tile_width <= in.shape.width &&
                        tile_y0 + tile_height <= in.shape.height;
    const auto load = [&](int tx, int ty) {
        tile[ty * tile_width + tx] = inside ? gray_inside<Channels, Soa>(in, tile_x0 + tx, tile_y0 + ty)
                                            : gray_at<Channels, Soa>(in, tile_x0 + tx, tile_y0 + ty, border);
    };
    for (int ty = static_cast<int>(threadIdx.y); ty < tile_height; ty += static_cast<int>(blockDim.y)) {
        load(static_cast<int>(threadIdx.x), ty);
    }
    const int threads = block_w * static_cast<int>(blockDim.y);
    for (int t = static_cast<int>(threadIdx.y) * block_w + static_cast<int>(threadIdx.x); t < 2 * tile_height; t += threads) {
        load(block_w + (t & 1), t >> 1);
    }
    __syncthreads();

    const int x = static_cast<int>(blockIdx.x) * block_w + static_cast<int>(threadIdx.x);
    if (x >= in.shape.width) return;
    const int first_row = static_cast<int>(threadIdx.y) * kRowsPerThread;  // within the output tile
    const std::uint8_t* column = tile + first_row * tile_width + threadIdx.x;  // left column of the window
    // The window's three rows: left, middle and right gray values.
    int l0 = column[0], m0 = column[1], r0 = column[2];
    int l1 = column[tile_width], m1 = column[tile_width + 1], r1 = column[tile_width + 2];
#pragma unroll
    for (int k = 0; k < kRowsPerThread; ++k) {
        const int y = static_cast<int>(blockIdx.y) * out_h + first_row + k;
        const std::uint8_t* below = column + (k + 2) * tile_width;
        const int l2 = below[0], m2 = below[1], r2 = below[2];
        if (y < in.shape.height) {
            const int gx = (r0 + 2 * r1 + r2) - (l0 + 2 * l1 + l2);
            const int gy = (l2 + 2 * m2 + r2) - (l0 + 2 * m0 + r0);
            out.row(y)[x] = magnitude_u8(gx * gx + gy * gy);
        }
        l0 = l1, m0 = m1, r0 = r1;
        l1 = l2, m1 = m2, r1 = r2;
    }
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, Border);

// One channel is the same memory in either layout.
Kernel kernel_for(const Problem& problem) {
    if (problem.shape.layout == Layout::soa) {
        return by_channels<Kernel>(problem.shape.channels, &sobel_fused_kernel<1, false>, &sobel_fused_kernel<3, true>,
                                   &sobel_fused_kernel<4, true>);
    }
    return by_channels<Kernel>(problem.shape.channels, &sobel_fused_kernel<1, false>, &sobel_fused_kernel<3, false>,
                               &sobel_fused_kernel<4, false>);
}

class SobelFused final : public Variant {
public:
    std::string name() const override { return "sobel.fused"; }
    Operation op() const override { return Operation::sobel; }
    std::string technique() const override {
        return "one kernel: gray tile + halo in shared memory, 3x3 gradients and magnitude, 4 rows per thread";
    }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{32, 8, {}}); }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const int out_h = shape.block_y * kRowsPerThread;
        const dim3 grid(grid_side(problem.shape.width, shape.block_x), grid_side(problem.shape.height, out_h));
        const std::size_t tile_bytes =
            static_cast<std::size_t>(shape.block_x + 2) * static_cast<std::size_t>(out_h + 2);
        return {make_launch(kernel_for(problem), "sobel_fused_kernel", grid, block_of(shape), tile_bytes)};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), plan.problem.border);
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::SobelFused)
