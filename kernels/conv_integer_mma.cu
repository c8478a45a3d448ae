// conv.integer_mma — 2D correlation on the integer tensor cores: the bytes as they are, the mask as
// three signed 8-bit digits, exact 32-bit sums, one fp32 rounding step at the end.
//
// Technique (issue 14, the general-mask ladder's step over conv.register_tile, which is bound by
// its 81 FFMAs per output of a 9x9 mask): each coefficient c becomes an integer multiple of 2^-e,
// Q = round(c * 2^e), with e chosen so that the largest |Q| just fits three balanced base-256
// digits, Q = q2 * 65536 + q1 * 256 + q0 (each q in -128..127). A mask row is then three banded
// (Toeplitz) 32 x 8 matrices of digits, and eight consecutive output elements of 16 rows are
// mma.sync.m16n8k32 products of 16 x 32 input bytes (u8, straight from shared memory: no
// conversion) by those matrices, one per digit, accumulated exactly in s32 over the mask rows.
// The output is (S2 * 65536 + S1 * 256 + S0) * 2^-e, two fp32 roundings, then the store rule.
// A 32-byte window holds the 8 outputs and the mask's reach R*S elements on both sides (S: 1 gray
// or SoA, 3 RGB, 4 RGBA) while R*S <= 12; where R*S <= 4 (gray and SoA up to 9x9, RGB and RGBA 3x3) a
// 16-byte window does, and two mask rows share one product; RGBA 9x9 takes two windows per row.
// Block: warps_x x warps_y warps (the block 32*warps_x x warps_y, tuned); each warp computes 16 rows
// x 32 elements (four 8-wide tiles) of the block's tile of 16*warps_y rows x 32*warps_x elements,
// and the block walks down a strip of `tiles` such tiles (tuned). Input tiles (the tile, R rows
// above and below, 16 bytes left and at least 16 right) are copied by cp.async one tile ahead
// into two buffers; rows outside the image are mapped once per row, and tiles whose columns cross
// the left or right edge (or rows not 16-byte aligned) map every byte by the border rule. Results
// go through a per-warp staging area to 16-byte streaming stores. The digit matrices, in the
// lanes' fragment order, are computed from the device mask by a small kernel launched first (a
// thread per table entry, blocks of 128; into the plan's scratch memory) and read into shared
// memory by every block.
// Exactness: every product of a byte and a digit, and every s32 sum (at most 81 * 255 * 128 < 2^22
// per digit), is exact. Each sum S starts at the bit pattern of 1.5 * 2^23, so the float with the
// accumulator's bits is 1.5 * 2^23 + S exactly (integer_digits.hpp's combine_digits() recombines the
// three with two roundings, the bias folded into its first FMA). The result differs from
// the mask's exact correlation by at most E * (the sum of the pixels under the mask), E =
// max |c - Q 2^-e| (about 2^-24 of the largest |c|) plus the two roundings' share (2^-23 of
// it): coefficient_error() returns E, and verification widens its tie bound by it
// (docs/numeric-contract.md).
// Preconditions: masks up to 9x9 (R = max(rx, ry) <= 4, zero-padded to (2R+1)x(2R+1)), every border,
// 1/3/4 channels, AoS and SoA (one grid layer per plane), any pitch, any size. Needs the 8-bit
// mma.sync of compute capability 8.0 or later (enqueue refuses older GPUs).
// Measured on an NVIDIA H200 (device run of 2026-11-25: klab tune on 8K/9x9/c3/aos, then klab-bench,
// L2 flushed, medians of 3): 8K RGB AoS random 9x9 352.4 us at 64x2 tiles=4, 1.42x its roofline
// (conv.register_tile 494.2 us in the same run; npp.filter32f 1553 us in the committed run at
// 73b708f: 4.4x faster). Nsight Compute on it: 178 M warp instructions (1.8 per output element;
// a step is 12 IMMAs, 12 shared word reads, 3 digit-fragment reads and 16 moves that put the
// overlapping windows into each MMA's four operand registers), issue slots 54% busy, the tensor
// pipe 38%, 111 registers: 16 warps per SM (24.5% achieved occupancy), stalled mostly on the
// IMMA chains' fixed latency.
// 2026-11-28: the three digit sums recombined by integer_digits.hpp's combine_digits(), shared with
// conv.separable_row_mma: 5 fp32 instructions per output instead of 7, then 4 with the
// accumulators' bias folded into its first FMA (the same values up to the bound in the header);
// not timed on their own, the committed runs have the figures.
// Tried and dropped: ldmatrix (one instruction per operand) from two copies of the tile shifted
// by 8 bytes, fed by 4-byte cp.async since a 9x9 RGB window starts 4 bytes off a 16-byte boundary:
// 430 us, 236 M instructions (the copies cost more than ldmatrix saves); with its steps unrolled
// by 2, 447 us.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_pipeline.h>

#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"
#include "harness/image.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/integer_digits.hpp"
#include "kernels/radius_dispatch.hpp"

namespace klab {
namespace {

using namespace integer_digits;

constexpr int kMaxRadius = 4;
constexpr int kTilesPerWarp = 4;      // 8-element output tiles side by side per warp
constexpr int kWarpColumns = 8 * kTilesPerWarp;  // output elements of a row per warp
constexpr int kWarpRows = 16;         // output rows per warp (the MMA's M)
constexpr int kMarginLeft = 16;       // input bytes loaded left of the block's first output
constexpr int kStagingStride = 48;    // bytes per staged output row: 16-byte aligned, banks spread
constexpr std::array<int, 3> kBlockX = {64, 128, 256};
constexpr std::array<int, 3> kBlockY = {1, 2, 4};
constexpr std::array<int, 4> kStripTiles = {1, 2, 4, 8};

// The K dimension for radius R and element stride S: an output tile's window of input bytes starts
// kLead bytes left of its first output; a step is one MMA per digit.
template <int R, int S>
struct Geometry {
    static constexpr int kReach = R * S;                 // elements between an output and its farthest tap
    static constexpr bool kTwoRows = kReach <= 4;        // two mask rows of 16-byte windows per step
    static constexpr int kLead = (kReach + 3) / 4 * 4;  // a whole word, so that windows start on one
    static constexpr int kChunks = kTwoRows ? 1 : (kLead + kReach + 8 + 31) / 32;  // 32-byte windows per mask row
    static constexpr int kSteps = kTwoRows ? R + 1 : (2 * R + 1) * kChunks;
    // Input bytes loaded right of the block's last output: the last tile's window, in 16-byte chunks.
    static constexpr int kMarginRight = kTwoRows ? 16 : (32 * kChunks - kLead - 8 + 15) / 16 * 16;
    static constexpr int kTableEntries = kSteps * kDigits * 32;  // one uint2 per lane, digit and step
    // Input bytes loaded per row for a block of warps_x warps (whole 16-byte chunks), and the row
    // stride in shared memory: = 16 mod 32, so that a warp's word reads hit 32 banks. The kernel
    // and shared_bytes() both take them from here.
    __host__ __device__ static constexpr int input_bytes(int warps_x) { return kMarginLeft + kWarpColumns * warps_x + kMarginRight; }
    __host__ __device__ static constexpr int input_stride(int warps_x) {
        return input_bytes(warps_x) + (48 - input_bytes(warps_x) % 32) % 32;
    }
};

// The exponent e of a mask's digits, 2^-e, and the coefficient error E of docs/numeric-contract.md.
struct MaskDigits {
    DigitScale digits;
    double coefficient_error = 0.0;
};
MaskDigits mask_digits(const Mask& mask) {
    const DigitScale scale = digit_scale(mask.coefficients().data(), static_cast<int>(mask.coefficients().size()));
    const int e = scale.exponent;
    double digit_error = 0.0, largest_q = 0.0;
    for (float c : mask.coefficients()) {
        const int q = tap_multiple(c, e);
        digit_error = std::max(digit_error, std::fabs(static_cast<double>(c) - std::ldexp(static_cast<double>(q), -e)));
        largest_q = std::max(largest_q, std::fabs(static_cast<double>(q)));
    }
    if (largest_q == 0.0) return {scale, 0.0};  // a mask of zeros: every sum is exactly 0
    // combine_digits(): two roundings, at most 1.002 * 2^-23 of the larger of |S2 2^16 + S1 2^8| and
    // |S|, each at most (|Q| + 128) times the sum of the pixels; then the exact product by 2^-e.
    const double rounding_error = std::ldexp(1.002 * (largest_q + 128.0) * 0x1p-23, -e);
    return {scale, digit_error + rounding_error};
}

// The digit matrices in fragment order: entry (step, digit, lane) is the 8 bytes lane holds of the
// 32 x 8 B operand of mma.m16n8k32 (rows 4t..4t+3 and 16+4t..16+4t+3 of column lane/4, t = lane%4).
// B(k, n) is the digit of the tap that takes window byte k to output n of the tile.
template <int R, int S>
__global__ void conv_integer_mma_digits_kernel(DeviceMaskView mask, int exponent, uint2* table) {
    using G = Geometry<R, S>;
    const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= G::kTableEntries) return;
    const int lane = i % 32, digit = (i / 32) % kDigits, step = i / (32 * kDigits);
    const int n = lane / 4, t = lane % 4;
    std::uint32_t word[2] = {0u, 0u};
    for (int b = 0; b < 8; ++b) {
        const int k = 4 * t + b % 4 + 16 * (b / 4);
        const int dy = G::kTwoRows ? 2 * step + k / 16 : step / G::kChunks;                // mask row
        const int offset = G::kTwoRows ? k % 16 : k + 32 * (step % G::kChunks);            // window byte
        const int reach = offset - G::kLead - n + G::kReach;                               // tap index times S
        int value = 0;
        if (dy <= 2 * R && reach >= 0 && reach % S == 0 && reach / S <= 2 * R) {
            const int mx = reach / S - (R - mask.width / 2), my = dy - (R - mask.height / 2);
            if (mx >= 0 && mx < mask.width && my >= 0 && my < mask.height) {
                value = digit_of(tap_multiple(mask.data[my * mask.width + mx], exponent), digit);
            }
        }
        word[b / 4] |= static_cast<std::uint32_t>(value & 0xFF) << (8 * (b % 4));
    }
    table[i] = make_uint2(word[0], word[1]);
}

template <int R, int S>
__global__ void __launch_bounds__(256)
    conv_integer_mma_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, const uint2* __restrict__ digits,
                            float scale, Border border, int tiles) {
    using G = Geometry<R, S>;
    extern __shared__ uint4 shared_words[];
    const int warps_x = static_cast<int>(blockDim.x) / 32, warps_y = static_cast<int>(blockDim.y);
    const int threads = static_cast<int>(blockDim.x * blockDim.y);
    const int tid = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
    const int tile_w = kWarpColumns * warps_x, tile_h = kWarpRows * warps_y;  // output elements and rows of a tile
    const int in_rows = tile_h + 2 * R;
    const int in_bytes = G::input_bytes(warps_x), stride = G::input_stride(warps_x);
    uint2* const table = reinterpret_cast<uint2*>(shared_words);
    std::uint8_t* const buffers = reinterpret_cast<std::uint8_t*>(table + G::kTableEntries);  // two input tiles
    std::uint8_t* const staging = buffers + 2 * in_rows * stride;  // 16 rows per warp

    const int plane = static_cast<int>(blockIdx.z);
    const int row_elements = in.shape.row_elements(), height = in.shape.height;
    const int xb = static_cast<int>(blockIdx.x) * tile_w;  // the block's first output element
    const int strip_y = static_cast<int>(blockIdx.y) * tiles * tile_h;
    const int strip_tiles = min(tiles, (height - strip_y + tile_h - 1) / tile_h);
    const bool chunks_inside = ((reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % 16) == 0 && xb - kMarginLeft >= 0 &&
                               xb + tile_w + G::kMarginRight <= row_elements;

    for (int i = tid; i < G::kTableEntries; i += threads) table[i] = digits[i];

    // Tile k's input rows into buffer k % 2: 16-byte copies where the columns lie inside the image,
    // every byte by the border rule where they do not; rows outside the image mapped once each.
    const auto load_tile = [&](int k) {
        const int y_top = strip_y + k * tile_h - R;  // the image row of buffer row 0
        std::uint8_t* const buffer = buffers + (k % 2) * in_rows * stride;
        if (chunks_inside) {
            const int chunks = in_bytes / 16;
            for (int c = tid; c < chunks * in_rows; c += threads) {
                const int r = c / chunks, q = c - r * chunks;
                const int sy = border_index(y_top + r, height, border.mode);
                std::uint8_t* const dst = buffer + r * stride + 16 * q;
                if (sy >= 0) {
                    __pipeline_memcpy_async(dst, in.row(sy, plane) + xb - kMarginLeft + 16 * q, 16);
                } else {
                    const std::uint32_t v = 0x01010101u * border.value;
                    *reinterpret_cast<uint4*>(dst) = make_uint4(v, v, v, v);
                }
            }
        } else {
            for (int c = tid; c < in_bytes * in_rows; c += threads) {
                const int r = c / in_bytes, b = c - r * in_bytes;
                buffer[r * stride + b] =
                    bordered_byte<S>(in, xb - kMarginLeft + b, border_index(y_top + r, height, border.mode), plane, border);
            }
        }
        __pipeline_commit();
    };

    const int lane = static_cast<int>(threadIdx.x) % 32, warp_x = static_cast<int>(threadIdx.x) / 32, warp_y = static_cast<int>(threadIdx.y);
    const int g = lane / 4, t = lane % 4;
    const int stride_words = stride / 4;
    const int row0 = kWarpRows * warp_y + g;                                    // buffer row of A's row g at mask row 0
    const int word0 = (kMarginLeft + kWarpColumns * warp_x - G::kLead) / 4 + t;  // this lane's word of tile 0's window
    std::uint8_t* const my_staging = staging + (warp_y * warps_x + warp_x) * kWarpRows * kStagingStride;
    const bool out_aligned = ((reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % 16) == 0;

    if (strip_tiles > 0) load_tile(0);
#pragma unroll 1
    for (int k = 0; k < strip_tiles; ++k) {
        if (k + 1 < strip_tiles) {
            load_tile(k + 1);
        } else {
            __pipeline_commit();
        }
        __pipeline_wait_prior(1);
        __syncthreads();
        const std::uint32_t* const words = reinterpret_cast<const std::uint32_t*>(buffers + (k % 2) * in_rows * stride);
        int acc[kTilesPerWarp][kDigits][4];
#pragma unroll
        for (int j = 0; j < kTilesPerWarp; ++j) {
#pragma unroll
            for (int d = 0; d < kDigits; ++d) {
#pragma unroll
                for (int q = 0; q < 4; ++q) acc[j][d][q] = kBiasBits;
            }
        }
#pragma unroll 1
        for (int step = 0; step < G::kSteps; ++step) {
            uint2 b[kDigits];
#pragma unroll
            for (int d = 0; d < kDigits; ++d) b[d] = table[(step * kDigits + d) * 32 + lane];
            if constexpr (G::kTwoRows) {
                // k < 16: mask row 2 step, k >= 16: mask row 2 step + 1 (past the mask: B is zero there).
                const int dy0 = 2 * step, dy1 = min(2 * step + 1, 2 * R);
#pragma unroll
                for (int j = 0; j < kTilesPerWarp; ++j) {
                    const int w = word0 + 2 * j;
                    const std::uint32_t a[4] = {words[(row0 + dy0) * stride_words + w], words[(row0 + 8 + dy0) * stride_words + w],
                                                words[(row0 + dy1) * stride_words + w], words[(row0 + 8 + dy1) * stride_words + w]};
#pragma unroll
                    for (int d = 0; d < kDigits; ++d) mma_u8s8(acc[j][d], a, b[d]);
                }
            } else {
                // Window bytes k of rows g and g + 8; tile j's window starts 8 bytes after tile j-1's,
                // so its second half is tile j+2's first: 2 (kTilesPerWarp + 2) word reads per step.
                const int dy = step / G::kChunks, w = word0 + 8 * (step % G::kChunks);
                std::uint32_t v[2][kTilesPerWarp + 2];
#pragma unroll
                for (int h = 0; h < 2; ++h) {
#pragma unroll
                    for (int q = 0; q < kTilesPerWarp + 2; ++q) v[h][q] = words[(row0 + 8 * h + dy) * stride_words + w + 2 * q];
                }
#pragma unroll
                for (int j = 0; j < kTilesPerWarp; ++j) {
                    const std::uint32_t a[4] = {v[0][j], v[1][j], v[0][j + 2], v[1][j + 2]};
#pragma unroll
                    for (int d = 0; d < kDigits; ++d) mma_u8s8(acc[j][d], a, b[d]);
                }
            }
        }
        // acc[j][d][q]: output row g (q < 2) or g + 8, element 8j + 2t + q % 2 of the warp's 32.
#pragma unroll
        for (int j = 0; j < kTilesPerWarp; ++j) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                std::uint32_t pair = 0;
#pragma unroll
                for (int q = 0; q < 2; ++q) {
                    const float value = combine_digits(acc[j][2][2 * h + q], acc[j][1][2 * h + q], acc[j][0][2 * h + q]) * scale;
                    std::uint32_t byte;
                    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(byte) : "f"(value));  // the store rule, as rows::round_pack4
                    pair |= byte << (8 * q);
                }
                *reinterpret_cast<std::uint16_t*>(my_staging + (g + 8 * h) * kStagingStride + 8 * j + 2 * t) =
                    static_cast<std::uint16_t>(pair);
            }
        }
        __syncwarp();
        {
            const int r = lane / 2, c = 16 * (lane % 2);
            const uint4 v = *reinterpret_cast<const uint4*>(my_staging + r * kStagingStride + c);
            const int y = strip_y + k * tile_h + kWarpRows * warp_y + r;
            const int x = xb + kWarpColumns * warp_x + c;
            if (y < height && x < row_elements) {
                std::uint8_t* const dst = out.row(y, plane) + x;
                if (out_aligned && x + 16 <= row_elements) {
                    __stcs(reinterpret_cast<uint4*>(dst), v);
                } else {
                    for (int b = 0; b < 16 && x + b < row_elements; ++b) {
                        const std::uint32_t w = b < 8 ? (b < 4 ? v.x : v.y) : (b < 12 ? v.z : v.w);
                        dst[b] = static_cast<std::uint8_t>(w >> (8 * (b % 4)));
                    }
                }
            }
        }
        __syncthreads();  // the buffer just read is the one the next iteration loads (and the staging area is free)
    }
}

std::size_t table_bytes(const Problem& problem) {
    return dispatch_radius_stride(problem, [](auto r, auto s) {
        return static_cast<std::size_t>(Geometry<decltype(r)::value, decltype(s)::value>::kTableEntries) * sizeof(uint2);
    });
}

std::size_t shared_bytes(const Problem& problem, const LaunchShape& shape) {
    const int warps_x = shape.block_x / 32, warps_y = shape.block_y;
    const int radius = rows::StripVariant::radius(problem);
    const int stride = dispatch_radius_stride(
        problem, [&](auto r, auto s) { return Geometry<decltype(r)::value, decltype(s)::value>::input_stride(warps_x); });
    const std::size_t buffers = 2 * static_cast<std::size_t>(kWarpRows * warps_y + 2 * radius) * stride;
    return table_bytes(problem) + buffers + static_cast<std::size_t>(warps_x * warps_y) * kWarpRows * kStagingStride;
}

class ConvIntegerMma final : public Variant {
public:
    std::string name() const override { return "conv.integer_mma"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "integer tensor cores: bytes times the mask's three 8-bit digits by mma.sync, exact s32 sums, one fp32 step at the end";
    }
    Support supports(const Problem& problem) const override {
        const Mask& mask = *problem.mask;
        if (rows::StripVariant::radius(problem) > kMaxRadius) {
            return Support::no(fmt::format("masks up to 9x9: {} ({}x{}) is wider or taller than the radii (up to 4) the kernel "
                                           "is compiled for (conv.tile_fp32 takes every size)",
                                           mask.name(), mask.width(), mask.height()));
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x = std::vector<int>(kBlockX.begin(), kBlockX.end());
        space.block_y = std::vector<int>(kBlockY.begin(), kBlockY.end());
        space.parameters = {{"tiles", std::vector<int>(kStripTiles.begin(), kStripTiles.end()), "tiles of a block's strip"}};
        space.default_shape = LaunchShape{128, 2, {{"tiles", 4}}};
        return space;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        if (!listed(kBlockX, shape.block_x) || !listed(kBlockY, shape.block_y) || shape.block_x * shape.block_y > 256) {
            return Support::no("a block of 64, 128 or 256 threads in x and 1, 2 or 4 in y, at most 256 in all");
        }
        if (!listed(kStripTiles, shape.parameter("tiles"))) return Support::no("tiles = 1, 2, 4 or 8");
        return Support::yes();
    }
    std::size_t scratch_bytes(const Problem& problem, const LaunchShape&) const override { return table_bytes(problem); }
    double coefficient_error(const Problem& problem) const override { return mask_digits(*problem.mask).coefficient_error; }
    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const int tile_w = kWarpColumns * (shape.block_x / 32), tile_h = kWarpRows * shape.block_y;
        const dim3 grid(grid_side(problem.shape.row_elements(), tile_w), grid_side(problem.shape.height, tile_h * shape.parameter("tiles")),
                        problem.shape.layout == Layout::aos ? 1u : static_cast<unsigned>(problem.shape.channels));
        const int entries = static_cast<int>(table_bytes(problem) / sizeof(uint2));
        const void* digits = dispatch_radius_stride(problem, [](auto r, auto s) {
            return reinterpret_cast<const void*>(&conv_integer_mma_digits_kernel<decltype(r)::value, decltype(s)::value>);
        });
        const void* kernel = dispatch_radius_stride(problem, [](auto r, auto s) {
            return reinterpret_cast<const void*>(&conv_integer_mma_kernel<decltype(r)::value, decltype(s)::value>);
        });
        return {KernelLaunch{digits, "conv_integer_mma_digits_kernel", dim3(grid_side(entries, 128)), dim3(128), 0},
                KernelLaunch{kernel, "conv_integer_mma_kernel", grid, block_of(shape), shared_bytes(problem, shape)}};
    }
    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        require_integer_mma(plan.device, name());
        const DeviceBuffers& b = plan.buffers;
        const DigitScale digits = mask_digits(*plan.problem.mask).digits;
        uint2* const table = plan.scratch_as<uint2>();
        dispatch_radius_stride(plan.problem, [&](auto r, auto s) {
            constexpr int R = decltype(r)::value, S = decltype(s)::value;
            enqueue_kernel(plan.kernels[0], stream, &conv_integer_mma_digits_kernel<R, S>, b.mask, digits.exponent, table);
            enqueue_kernel(plan.kernels[1], stream, &conv_integer_mma_kernel<R, S>, b.input.view<const std::uint8_t>(),
                           b.output.view<std::uint8_t>(), static_cast<const uint2*>(table), digits.scale, plan.problem.border,
                           plan.shape.parameter("tiles"));
            return 0;
        });
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvIntegerMma)
