// conv.separable_fused — separable correlation, row pass and column pass in one kernel.
//
// Technique (issue 6): a rank-1 mask m(i,j) = col[j] * row[i] (klab::separate()) is applied as a
// row pass followed by a column pass, both inside one block, so that the image is read once and
// written once. A block of 256 threads owns a tile of 256 elements x 32 rows of the output, where
// an "element" is one byte of a stored row (AoS: a row of width*channels bytes whose horizontal
// neighbours are `channels` bytes apart; SoA: one plane's row, neighbours 1 byte apart; the grid's
// z is the plane). Phase 1, the row pass: each thread takes 16 consecutive elements of one of the
// 32 + 2R tile rows (R = the larger mask radius), reads them with the bytes around them as aligned
// 16-byte loads (three for a 9x9 RGB mask; the neighbours' loads hit L1), converts each needed
// byte to fp32 once (byte permute into 2^23 + p, minus 2^23: no slow I2F) and keeps 16 fp32 row
// sums, stored to shared memory (XOR-swizzled float4s: no bank conflicts). Phase 2, the column
// pass: each thread reads a float4 column of 8 + 2R rows from shared memory and writes 4 x 8 u8
// outputs (4-byte stores, a warp's 32 stores contiguous). R and the element stride are template
// parameters, so every tap index is a compile-time constant: the factors are FFMA operands
// straight from the kernel-parameter bank and the byte windows stay in registers. A mask with
// rx != ry is zero-padded to the larger radius (exact: a zero tap adds +0).
// Border: resolved while loading phase 1's windows (the row mapped by border_index, the bytes
// of an edge window one by one); a constant border's outside rows are rows of the value.
// Precision: the intermediate is fp32 in shared memory, never u8. The factors are
// klab::separable_variant_factors() and coefficient_error() is klab::separable_coefficient_error()
// (harness/mask.hpp derives the bound), both shared with conv.separable_2pass.
// Preconditions: a rank-1 mask (others are "not supported", with the reason). Every border, 1/3/4
// channels, AoS and SoA, any pitch (rows whose address is not 16-byte aligned take the byte-by-
// byte path: correct, slower), any size. The block is fixed at 256x1 threads (nothing to tune);
// shared memory (32 + 2R) * 256 * 4 bytes, 40 KiB for a 9x9 mask, 62 KiB for 31x31.
// Deliberately not done: no sliding window down the image (the 2R halo rows are row-filtered
// again by the next tile: 25% more row-pass work for 9x9), no use of mask symmetry, no
// asynchronous copies (TMA / cp.async); the factors come from the problem's host mask, not the
// device mask buffer.
// Measured on an NVIDIA H200, 8K RGB AoS, replicate, block 256x1, one kernel, L2 flushed, by
// Nsight Compute (`KLAB=build/sep/klab VARIANTS=conv.separable_fused bash scripts/kernel-times.sh
// gaussian:3 gaussian:9 box:31`): gauss3 103.7 us, gauss9 179.0 us, box31 575.7 us. A 16-byte
// copy kernel over the same 99.5 MB, timed the same way, took 47.6-50.1 us (BASELINES.md: 57.9 us),
// so gauss9 is 3.6-3.8x the copy floor, not the issue's 1.3x. Nsight Compute on gauss9: issue
// bound, not memory bound — issue slots 77.8% busy (IPC 3.29 at 1.95 GHz), FMA pipe 47%, DRAM
// 21% of peak, occupancy 47% (64 registers and 41 KB shared memory: 4 blocks per SM); IPC x
// active cycles x SMs gives about 143 M warp instructions, where the PTX's FFMAs, byte conversions
// and shared accesses count about 90 M: addressing, border checks and rounding make the rest.
// For scale (BASELINES.md, not this run): NPP's Gaussian takes 144 us (3x3) and 614 us (9x9).
// Verified against the CPU reference over the conformance table and on this 8K image (reflect).
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/border.hpp"
#include "harness/image.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/numeric.hpp"
#include "harness/variant.hpp"
#include "kernels/separable_factors.hpp"

namespace klab {
namespace {

constexpr int kMaxRadius = Mask::kMaxSide / 2;  // 15
constexpr int kThreads = 256;                   // threads per block, fixed
constexpr int kGroup = 16;                      // elements per phase-1 work item: one 16-byte load
constexpr int kTileElements = 256;              // 16 groups: one tile row is 64 float4 in shared memory
constexpr int kTileRows = 32;                   // output rows per tile
constexpr int kRowsPerThread = 8;               // phase 2: 4 elements x 8 rows per thread
static_assert(kTileElements / 4 * (kTileRows / kRowsPerThread) == kThreads, "phase 2 gives each thread one strip");

// The factors as the kernel applies them: tap t of 2R+1 is offset t - R from the centre; the
// factors of a mask narrower (or shorter) than 2R+1 sit in the middle, zeros around them.
// Passed by value: with compile-time tap indices the kernel reads them as FFMA constant operands.
struct Factors {
    float row[2 * kMaxRadius + 1];
    float col[2 * kMaxRadius + 1];
};

// The fp32 value of byte `b` (0..3) of `word`: the byte permute builds the float 2^23 + byte
// (exponent 0x4B, the byte in the low mantissa bits), then subtracting 2^23 is exact.
__device__ __forceinline__ float byte_to_float(std::uint32_t word, int b) {
    return __int_as_float(static_cast<int>(__byte_perm(word, 0x4B000000u, 0x7440u | static_cast<unsigned>(b)))) -
           8388608.0f;
}

// Elements [start, start + 16) of `row` (a stored row of `elements` bytes, `width` pixels of
// `Stride` elements), border resolved element by element: the edge windows' path.
template <int Stride>
__device__ __noinline__ uint4 load_chunk_bytes(const std::uint8_t* row, int start, int width, Border border) {
    std::uint32_t w[4] = {0, 0, 0, 0};
    for (int b = 0; b < 16; ++b) {
        const int e = start + b;
        const int x = e >= 0 ? e / Stride : -((-e + Stride - 1) / Stride);  // floor(e / Stride)
        const int c = e - x * Stride;
        const int sx = border_index(x, width, border.mode);
        const std::uint32_t byte = sx < 0 ? border.value : row[sx * Stride + c];
        w[b / 4] |= byte << (8 * (b % 4));
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

// Phase 1's window of work item `item` (tile row item / 16, group item % 16): kChunks 16-byte
// chunks of the (border-mapped) input row around the group's 16 elements, as 32-bit words.
// Aligned chunks inside the row are one 16-byte load each; the others go byte by byte.
template <int R, int Stride, int kChunks, int kSideChunks>
__device__ __forceinline__ void load_window(ImageView<const std::uint8_t> in, int plane, int e0, int y0, int item,
                                            Border border, std::uint32_t (&w)[4 * kChunks]) {
    const int r = item / (kTileElements / kGroup);
    const int g = item % (kTileElements / kGroup);
    const int first = e0 + g * kGroup - kSideChunks * kGroup;  // the window's first element
    const int elements = in.shape.width * Stride;
    // A group past the end of the row (in the last tile of a row whose length is no multiple of
    // 256) is never stored: load nothing, rather than take the byte-by-byte path for its whole
    // window, which made the edge tiles outlast all others (HD 3x3: 31 us, 19 us without).
    if (e0 + g * kGroup >= elements) {
#pragma unroll
        for (int k = 0; k < 4 * kChunks; ++k) w[k] = 0;
        return;
    }
    const int sy = border_index(y0 - R + r, in.shape.height, border.mode);
    if (sy < 0) {  // a constant border's row outside the image
#pragma unroll
        for (int k = 0; k < 4 * kChunks; ++k) w[k] = border.value * 0x01010101u;
        return;
    }
    const std::uint8_t* row = in.row(sy, plane);
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
        const int start = first + k * kGroup;
        const std::uint8_t* p = row + start;
        uint4 v;
        if (start >= 0 && start + kGroup <= elements && (reinterpret_cast<std::uintptr_t>(p) & 15) == 0) {
            v = __ldg(reinterpret_cast<const uint4*>(p));
        } else {
            v = load_chunk_bytes<Stride>(row, start, in.shape.width, border);
        }
        w[4 * k] = v.x, w[4 * k + 1] = v.y, w[4 * k + 2] = v.z, w[4 * k + 3] = v.w;
    }
}

// At least 4 blocks (1024 threads) per SM: at most 64 registers, which radii up to 8 need without
// spilling; larger radii keep more window bytes live and get up to 128.
template <int R, int Stride>
__global__ void __launch_bounds__(kThreads, R <= 8 ? 4 : 2)
    conv_separable_fused_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Factors f, Border border) {
    constexpr int kTaps = 2 * R + 1;
    constexpr int kSideChunks = (R * Stride + kGroup - 1) / kGroup;  // 16-byte chunks each side of a group
    constexpr int kChunks = 2 * kSideChunks + 1;
    constexpr int kMidRows = kTileRows + 2 * R;
    extern __shared__ float4 mid[];  // kMidRows rows of 64 float4: the row sums, swizzled

    const int width = in.shape.width;
    const int height = in.shape.height;
    const int elements = width * Stride;  // of a stored row
    const int plane = static_cast<int>(blockIdx.z);
    const int e0 = static_cast<int>(blockIdx.x) * kTileElements;
    const int y0 = static_cast<int>(blockIdx.y) * kTileRows;

    // Phase 1: row sums of tile rows y0 - R ... y0 + kTileRows + R - 1, 16 elements per item. The
    // next item's window is loaded before this one is computed, so that each thread has two
    // items' loads in flight (one was too few to cover the memory latency at this occupancy).
    constexpr int kItems = kMidRows * (kTileElements / kGroup);
    std::uint32_t next[4 * kChunks];
    if (static_cast<int>(threadIdx.x) < kItems) {
        load_window<R, Stride, kChunks, kSideChunks>(in, plane, e0, y0, static_cast<int>(threadIdx.x), border, next);
    }
    for (int item = static_cast<int>(threadIdx.x); item < kItems; item += kThreads) {
        const int r = item / (kTileElements / kGroup);
        const int g = item % (kTileElements / kGroup);
        std::uint32_t w[4 * kChunks];
#pragma unroll
        for (int k = 0; k < 4 * kChunks; ++k) w[k] = next[k];
        if (item + kThreads < kItems) {
            load_window<R, Stride, kChunks, kSideChunks>(in, plane, e0, y0, item + kThreads, border, next);
        }
        float acc[kGroup];
#pragma unroll
        for (int k = 0; k < kGroup; ++k) acc[k] = 0.0f;
#pragma unroll
        for (int t = 0; t < kTaps; ++t) {
#pragma unroll
            for (int k = 0; k < kGroup; ++k) {
                const int b = kSideChunks * kGroup + k + (t - R) * Stride;  // byte of the window
                acc[k] = fmaf(f.row[t], byte_to_float(w[b / 4], b % 4), acc[k]);
            }
        }
        // Swizzle: float4 q of group g goes to slot 4g + (q ^ ((g >> 1) & 3)) of its row, so that
        // 8 consecutive groups storing their q-th float4 hit 8 different 16-byte bank groups.
        float4* dst = mid + r * (kTileElements / 4);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            dst[4 * g + (q ^ ((g >> 1) & 3))] = make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
        }
    }
    __syncthreads();

    // Phase 2: column sums. Thread t: elements 16g + 4q ... +3 of rows 8s ... 8s+7 of the tile;
    // a quarter warp reads 8 consecutive slots (conflict-free) and a warp stores 128 contiguous bytes.
    const int t = static_cast<int>(threadIdx.x);
    const int q = t % 4;
    const int g = (t / 4) % (kTileElements / kGroup);
    const int strip = t / (kTileElements / 4);
    const float4* src = mid + strip * kRowsPerThread * (kTileElements / 4) + 4 * g + (q ^ ((g >> 1) & 3));
    float4 acc[kRowsPerThread];
#pragma unroll
    for (int o = 0; o < kRowsPerThread; ++o) acc[o] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int s = 0; s < kRowsPerThread + 2 * R; ++s) {
        const float4 v = src[s * (kTileElements / 4)];
#pragma unroll
        for (int o = 0; o < kRowsPerThread; ++o) {
            const int j = s - o;  // tap of this input row for output row o
            if (j >= 0 && j < kTaps) {
                acc[o].x = fmaf(f.col[j], v.x, acc[o].x);
                acc[o].y = fmaf(f.col[j], v.y, acc[o].y);
                acc[o].z = fmaf(f.col[j], v.z, acc[o].z);
                acc[o].w = fmaf(f.col[j], v.w, acc[o].w);
            }
        }
    }
    const int e = e0 + g * kGroup + 4 * q;
    if (e >= elements) return;
#pragma unroll
    for (int o = 0; o < kRowsPerThread; ++o) {
        const int y = y0 + strip * kRowsPerThread + o;
        if (y >= height) break;
        std::uint8_t* p = out.row(y, plane) + e;
        const std::uint8_t b0 = saturate_round_u8(acc[o].x), b1 = saturate_round_u8(acc[o].y),
                           b2 = saturate_round_u8(acc[o].z), b3 = saturate_round_u8(acc[o].w);
        if (e + 4 <= elements && (reinterpret_cast<std::uintptr_t>(p) & 3) == 0) {
            *reinterpret_cast<std::uint32_t*>(p) = b0 | (b1 << 8) | (b2 << 16) | (static_cast<std::uint32_t>(b3) << 24);
        } else {
            p[0] = b0;
            if (e + 1 < elements) p[1] = b1;
            if (e + 2 < elements) p[2] = b2;
            if (e + 3 < elements) p[3] = b3;
        }
    }
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, Factors, Border);

template <int Stride, int... R>
std::array<Kernel, sizeof...(R)> kernels_by_radius(std::integer_sequence<int, R...>) {
    return {&conv_separable_fused_kernel<R, Stride>...};
}

// The instance for radius R = max(rx, ry) and element stride (channels for AoS, 1 for SoA).
Kernel kernel_for(const Problem& problem) {
    static const auto stride1 = kernels_by_radius<1>(std::make_integer_sequence<int, kMaxRadius + 1>{});
    static const auto stride3 = kernels_by_radius<3>(std::make_integer_sequence<int, kMaxRadius + 1>{});
    static const auto stride4 = kernels_by_radius<4>(std::make_integer_sequence<int, kMaxRadius + 1>{});
    const Mask& mask = *problem.mask;
    const int radius = std::max(mask.radius_x(), mask.radius_y());
    const int stride = problem.shape.layout == Layout::aos ? problem.shape.channels : 1;
    return by_channels(stride, stride1, stride3, stride4)[static_cast<std::size_t>(radius)];
}

class ConvSeparableFused final : public Variant {
public:
    std::string name() const override { return "conv.separable_fused"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "separable mask, row pass into shared fp32 then column pass, one kernel";
    }
    Support supports(const Problem& problem) const override { return separable::rank1_masks_only(*problem.mask); }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x = {kThreads};
        space.block_y = {1};
        space.default_shape = LaunchShape{kThreads, 1, {}};
        return space;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        if (shape.block_x == kThreads && shape.block_y == 1) return Support::yes();
        return Support::no(fmt::format("a block of {}x1 threads (the tile's work split assumes it)", kThreads));
    }
    double coefficient_error(const Problem& problem) const override {
        return separable::coefficient_error_of(name(), *problem.mask);
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Mask& mask = *problem.mask;
        const int radius = std::max(mask.radius_x(), mask.radius_y());
        const ImageShape& s = problem.shape;
        const dim3 grid(grid_side(s.row_elements(), kTileElements), grid_side(s.height, kTileRows),
                        s.layout == Layout::aos ? 1u : static_cast<unsigned>(s.channels));
        const std::size_t shared = static_cast<std::size_t>(kTileRows + 2 * radius) * kTileElements * sizeof(float);
        return {make_launch(kernel_for(problem), "conv_separable_fused_kernel", grid, block_of(shape), shared)};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const Mask& mask = *plan.problem.mask;
        const SeparableFactors rc = *separable_variant_factors(mask);
        const int radius = std::max(mask.radius_x(), mask.radius_y());
        Factors f{};  // zeros around the mask's own taps
        for (int i = 0; i < mask.width(); ++i) f.row[radius - mask.radius_x() + i] = rc.row[static_cast<std::size_t>(i)];
        for (int j = 0; j < mask.height(); ++j) f.col[radius - mask.radius_y() + j] = rc.column[static_cast<std::size_t>(j)];
        const DeviceBuffers& b = plan.buffers;
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), b.input.view<const std::uint8_t>(),
                       b.output.view<std::uint8_t>(), f, plan.problem.border);
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvSeparableFused)
