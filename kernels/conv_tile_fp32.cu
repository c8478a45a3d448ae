// conv.tile_fp32 — 2D correlation from an fp32 shared-memory tile, the mask radius a template
// parameter.
//
// Technique (issue 14, step 1 of the general-mask ladder, over conv.tiled_2batch): the same shape
// — a block of BX x BY threads computes a BX x BY tile of output pixels (all channels) from the
// (BX+2R) x (BY+2R) input tile in shared memory — with three changes: (1) the tile is converted
// to fp32 once while loading (tiled_2batch converts each byte again for every tap that reads it),
// stored channel-planar so that consecutive threads read consecutive words; (2) the radius R is a
// template parameter and the taps are a kernel parameter (rows::Taps2D), so the tap loops unroll
// and each coefficient is an FFMA operand from the parameter bank, not a load; (3) the border is
// resolved only in the tiles that reach past an image edge (a block-uniform test): the others
// read their bytes with plain row addressing. What it does not fix is the ratio of shared-memory
// reads to FMAs: every tap of every output is one shared load (conv.register_window keeps a row
// in registers and reuses it for 2R+1 output rows).
// Preconditions: every mask (R = max(rx, ry) <= 15, zero-padded to (2R+1)x(2R+1), exact since a
// zero tap adds +0); masks up to 15x15 unroll both tap loops, larger ones unroll the inner one.
// Every border, 1/3/4 channels, AoS or SoA, any pitch, any size. Shared memory:
// (BX+2R)(BY+2R) x channels x 4 bytes (61.5 KB for a 32x32 block, 31x31 mask and 4 channels:
// such shapes opt in above 48 KB where the device allows, and are refused where it does not).
// Deliberately not done: no register blocking, no vector loads.
// Measured on an NVIDIA H200 (klab-bench, L2 flushed, default block 32x8, untuned, medians of 3;
// device run of 2026-11-24): 8K RGB AoS gauss3 468 us (9.75x the copy floor), sharpen 468 us,
// random9 1146 us (4.62x its roofline, the 81-FMA floor); HD random9 77.9 us. The step over
// conv.tiled_2batch, in the committed klab run at b793855 (results/nvidia-h200/, tuned): 8K RGB AoS gauss3
// 467 us against 530 (1.1x), gauss9 1145 us against 1902 (1.7x).
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/numeric.hpp"
#include "harness/row_stream.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

constexpr int kMaxRadius = Mask::kMaxSide / 2;  // 15

template <int R, int C>
__global__ void conv_tile_fp32_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, rows::Taps2D<R> taps,
                                      Border border) {
    constexpr int K = 2 * R + 1;
    extern __shared__ float tile[];  // C planes of tile_h rows of tile_w floats
    const int bx = static_cast<int>(blockDim.x);
    const int by = static_cast<int>(blockDim.y);
    const int tile_w = bx + 2 * R;
    const int tile_h = by + 2 * R;
    const int plane_size = tile_w * tile_h;
    const int x0 = static_cast<int>(blockIdx.x) * bx - R;  // the tile's first pixel
    const int y0 = static_cast<int>(blockIdx.y) * by - R;
    const bool inside = x0 >= 0 && y0 >= 0 && x0 + tile_w <= in.shape.width && y0 + tile_h <= in.shape.height;
    const int threads = bx * by;
    for (int p = static_cast<int>(threadIdx.y) * bx + static_cast<int>(threadIdx.x); p < plane_size; p += threads) {
        const int ty = p / tile_w;
        const int tx = p - ty * tile_w;
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const std::uint8_t v = inside ? in.at(x0 + tx, y0 + ty, c) : sample(in, x0 + tx, y0 + ty, c, border);
            tile[c * plane_size + p] = static_cast<float>(v);
        }
    }
    __syncthreads();

    const int x = x0 + R + static_cast<int>(threadIdx.x);
    const int y = y0 + R + static_cast<int>(threadIdx.y);
    if (x >= in.shape.width || y >= in.shape.height) return;
    float acc[C] = {};
#pragma unroll(R <= 7 ? K : 1)
    for (int j = 0; j < K; ++j) {
        const float* row = tile + (static_cast<int>(threadIdx.y) + j) * tile_w + static_cast<int>(threadIdx.x);
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const float m = taps.m[j * K + i];
#pragma unroll
            for (int c = 0; c < C; ++c) acc[c] = fmaf(m, row[c * plane_size + i], acc[c]);
        }
    }
#pragma unroll
    for (int c = 0; c < C; ++c) out.at(x, y, c) = saturate_round_u8(acc[c]);
}

template <int R, int C>
const void* kernel_address() {
    return reinterpret_cast<const void*>(&conv_tile_fp32_kernel<R, C>);
}

// f(integral_constant<R>, integral_constant<C>) for the problem's radius 0..15 and channel count.
template <class F, int... Rs>
decltype(auto) dispatch_radius(int radius, int channels, F&& f, std::integer_sequence<int, Rs...>) {
    using Result = decltype(f(std::integral_constant<int, 0>{}, std::integral_constant<int, 1>{}));
    Result result{};
    const auto try_radius = [&](auto r) {
        if (radius != decltype(r)::value) return false;
        if (channels == 1) result = f(r, std::integral_constant<int, 1>{});
        else if (channels == 3) result = f(r, std::integral_constant<int, 3>{});
        else result = f(r, std::integral_constant<int, 4>{});
        return true;
    };
    (try_radius(std::integral_constant<int, Rs>{}) || ...);
    return result;
}

template <class F>
decltype(auto) dispatch(const Problem& problem, F&& f) {
    const int radius = std::max(problem.mask->radius_x(), problem.mask->radius_y());
    return dispatch_radius(radius, problem.shape.channels, std::forward<F>(f), std::make_integer_sequence<int, kMaxRadius + 1>{});
}

class ConvTileFp32 final : public Variant {
public:
    std::string name() const override { return "conv.tile_fp32"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "fp32 shared tile converted once, compile-time radius, border only in edge tiles; one output pixel per thread";
    }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{32, 8, {}}); }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const int radius = std::max(problem.mask->radius_x(), problem.mask->radius_y());
        const std::size_t tile = static_cast<std::size_t>(shape.block_x + 2 * radius) * static_cast<std::size_t>(shape.block_y + 2 * radius) *
                                 static_cast<std::size_t>(problem.shape.channels) * sizeof(float);
        const void* kernel = dispatch(problem, [](auto r, auto c) { return kernel_address<decltype(r)::value, decltype(c)::value>(); });
        return {KernelLaunch{kernel, "conv_tile_fp32_kernel", covering_grid(problem.shape, shape), block_of(shape), tile}};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        dispatch(plan.problem, [&](auto r, auto c) {
            constexpr int R = decltype(r)::value;
            enqueue_kernel(plan.kernels[0], stream, &conv_tile_fp32_kernel<R, decltype(c)::value>, b.input.view<const std::uint8_t>(),
                           b.output.view<std::uint8_t>(), rows::taps_2d<R>(*plan.problem.mask), plan.problem.border);
            return 0;
        });
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvTileFp32)
