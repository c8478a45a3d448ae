// conv.separable_column_first — separable correlation, the column pass first as a register window
// down a strip, then the row pass from shared memory; each input byte converted to fp32 once.
//
// Technique (issue 14, the separable ladder's step over conv.separable_fused): a block of T
// threads (128 or 256, tuned) walks down a strip of `groups` x (2R+1) output rows (tuned). In the
// column pass each thread owns one 4-byte word of the block's span of a stored row and keeps the
// last 2R+1 input rows of its 4 elements in registers as fp32 (a ring, renamed by unrolling 2R+1
// rows: no moves); an entering row is one 4-byte load and four conversions, and the thread's 4
// column sums (2R+1 FMAs each) go to shared memory as one float4. The next group's input words are
// loaded while this group is computed (2R+1 rows in flight per thread). After 2R+1 rows (a group)
// a barrier, then the row pass: each item is 16 consecutive output elements of one of the group's
// rows, read as 4 + 2H float4s (H = ceil(R*S/4): the mask's reach in words), 2R+1 FMAs per output,
// rounded by cvt.rni.sat.u8.f32 and written as one 16-byte streaming store; a second barrier
// before the next group overwrites the sums.
// What it adds over conv.separable_fused (row pass first, 46 instructions per output element by
// Nsight Compute on the 8K Gaussian 9x9): no input byte is converted twice (conv.separable_fused
// converts the 2*R*S bytes around each 16-element group again, 2.5 conversions per output for
// 9x9 RGB) and no row of a strip is filtered twice (the rows slide through the ring; the fused
// kernel filters each 32-row tile's 2R halo rows again); over conv.separable_sliding (each row
// filtered once, but one barrier per row and 2R+1 rows of accumulators per element: 122
// registers) the barriers come twice per 2R+1 rows and the ring holds 4 elements per thread.
// Shared memory: a row of column sums holds a padding float4 after every 8, so that both the
// column pass's consecutive float4s and the row pass's reads 4 slots apart spread over the 16-byte
// bank groups (at most two accesses of a quarter warp to one group).
// Border: rows outside the image are mapped once per row (blocks whose rows and words all lie
// inside the image step a pointer instead); a word that crosses the left or right edge of the row,
// or a row not aligned for word loads (an odd pitch), is read byte by byte through border_index.
// Outputs past the row's end, or rows not aligned for 16-byte stores, are written byte by byte.
// Precision: the factors are klab::separable_variant_factors() and coefficient_error() is
// klab::separable_coefficient_error(), as for the other separable variants; the intermediate is
// fp32 (never rounded to u8).
// Preconditions: rank-1 masks up to 9x9 (R = max(rx, ry) <= 4; the narrower factor is zero-padded,
// exact; larger masks are refused: the ring of 2R+1 rows of 4 floats is sized for R <= 4). Every
// border, 1/3/4 channels, AoS and SoA (one grid layer per plane), any pitch, any size.
// Measured on an NVIDIA H200 (device runs of 2026-11-25, klab tune then klab-bench, L2 flushed,
// medians of 3): 8K RGB AoS gauss9 158.3 us, 2.88x its roofline (conv.separable_fused 180.2 us in
// the same run), tuned 128x1 groups=2; 8K gauss3 106.5 us (fused 105.4); HD gauss9 35.7 us, slower
// than the fused kernel's 24.6. The first version, two alternating buffers and one barrier per
// group, ran 166 us: its 41 KB of shared memory per 128-thread block held 5 blocks per SM, the
// single buffer (21 KB) 6, as the 80 registers allow. Nsight Compute on that version: 116.8 M warp
// instructions (37.6 per output element, against 46 for conv.separable_fused), issue slots 68%
// busy, achieved occupancy 28%, DRAM 22% of peak. Why not at the roofline: the tuner picks strips
// of 2 groups (18 rows), the fastest despite their cost: each strip first reads and converts 2R
// rows that it does not output (44% more column-pass work at 18 rows), and the longer strips
// measured slower: 193 us at 8 groups (Nsight: 8% fewer instructions, but issue slots 53% busy and
// the SMs' active cycles 22% apart, 3.6 waves), 259 us at 16, 376 us at 30 (one wave of 768
// blocks); the time grows with the strip even when every block takes the bordered path (208 us at
// 4 groups, 375 us at 30), so the edge blocks are not the cause (a guess, not measured: the
// resident blocks of long walks spread over the whole image instead of a band of it); the ring's
// 36 floats and the rows in flight hold 80 registers, so at most 24 warps per SM; and the row
// pass's items (9 rows x 30 chunks for 128 threads) give some threads 3 items and most 2, which
// the barrier after it waits for.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/image.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/separable_factors.hpp"

namespace klab {
namespace {

using separable::Factors;
using separable::factors_of;

constexpr int kMaxRadius = 4;
constexpr int kChunkWords = 4;  // output words (16 elements) per row-pass item: one 16-byte store
constexpr std::array<int, 2> kBlockSides = {128, 256};
constexpr std::array<int, 8> kStripGroups = {2, 3, 4, 5, 6, 8, 12, 16};
constexpr int kMinBlocksPerSm = 3;  // at 256 threads: up to 85 registers

template <int R, int S>
struct Geometry {
    static constexpr int K = 2 * R + 1;                                // taps per pass, and rows per group
    static constexpr int kHaloWords = (R * S + 3) / 4;                 // span words each side of the tile
    static constexpr int kWindowSlots = kChunkWords + 2 * kHaloWords;  // float4s a row-pass item reads
};

// Output words of the tile of a block of `threads` threads (whole row-pass items).
__host__ __device__ constexpr int tile_words(int threads, int halo_words) {
    return (threads - 2 * halo_words) / kChunkWords * kChunkWords;
}

// Shared rows hold one padding slot after every 8 (slot L at L + L / 8), so that both the column
// pass's consecutive float4s and the row pass's reads 4 slots apart spread over the 8 16-byte bank
// groups of a quarter warp (at most 2 to one group).
__host__ __device__ constexpr int padded(int slot) { return slot + slot / 8; }

// How a thread reads its word of a row: one 4-byte load, byte by byte through the border rule, or
// not at all (a word past every element the tile's outputs reach).
enum class WordPath { load, bordered, none };

// The thread's words of the rows a strip reads, top to bottom. Fast: every row lies inside the
// image and every word of the block's span inside its row, aligned: one load and a pointer step
// per row. Otherwise each row is mapped by the border rule (a constant border's row outside the
// image is the value in every byte) and each word takes its WordPath.
template <int S, bool Fast>
struct WordSource;

template <int S>
struct WordSource<S, true> {
    const std::uint32_t* word;
    std::size_t pitch_words;
    __device__ __forceinline__ WordSource(const ImageView<const std::uint8_t>& in, int plane, int y, int e, Border)
        : word(reinterpret_cast<const std::uint32_t*>(in.row(y, plane) + e)), pitch_words(in.pitch_bytes / 4) {}
    __device__ __forceinline__ std::uint32_t next() {
        const std::uint32_t w = __ldg(word);
        word += pitch_words;
        return w;
    }
};

template <int S>
struct WordSource<S, false> {
    const ImageView<const std::uint8_t>& in;
    int plane, y, e;
    WordPath path;
    Border border;
    __device__ __forceinline__ WordSource(const ImageView<const std::uint8_t>& in_, int plane_, int y_, int e_, Border border_)
        : in(in_), plane(plane_), y(y_), e(e_), border(border_) {
        const int elements = in.shape.width * S;
        const bool aligned = ((reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) & 3) == 0;
        path = e >= elements + kMaxRadius * S ? WordPath::none  // never needed, whatever R
               : (e >= 0 && e + 4 <= elements && aligned) ? WordPath::load
                                                           : WordPath::bordered;
    }
    __device__ __forceinline__ std::uint32_t next() {
        const int sy = rows::row_index(y++, in.shape.height, border.mode);
        const std::uint8_t* row = sy < 0 ? nullptr : in.row(sy, plane);
        if (path == WordPath::none) return 0u;
        if (path == WordPath::load && row != nullptr) return __ldg(reinterpret_cast<const std::uint32_t*>(row + e));
        return rows::load_bytes_bordered<S, 4>(row, e, in.shape.width, border).w[0];
    }
};

__device__ __forceinline__ void to_floats(std::uint32_t word, float (&v)[4]) {
#pragma unroll
    for (int b = 0; b < 4; ++b) v[b] = rows::byte_to_float(word, b);
}

// The row pass of one item: output elements [16c, 16c + 16) of the tile, from shared row `sums`.
// Slot 4c + s of the row lies at padded(4c + s) = A + s (s < 4), B + s (4 <= s < 8) or A + 1 + s
// (s >= 8), with A = padded(4c) = 4c + c / 2 and B = A + c % 2: immediate offsets from two bases.
template <int R, int S>
__device__ __forceinline__ void row_item(const float4* sums, int c, const Factors<R>& f, std::uint8_t* dst, int remaining,
                                         bool aligned) {
    using Geo = Geometry<R, S>;
    static_assert(Geo::kWindowSlots <= 12, "the two-base addressing covers 12 slots");
    const float4* a = sums + 4 * c + c / 2;
    const float4* b = a + c % 2;
    float w[4 * Geo::kWindowSlots];
#pragma unroll
    for (int s = 0; s < Geo::kWindowSlots; ++s) {
        const float4 v = s < 4 ? a[s] : s < 8 ? b[s] : a[s + 1];
        w[4 * s] = v.x, w[4 * s + 1] = v.y, w[4 * s + 2] = v.z, w[4 * s + 3] = v.w;
    }
    std::uint32_t words[kChunkWords];
#pragma unroll
    for (int q = 0; q < kChunkWords; ++q) {
        float acc[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int o = 4 * Geo::kHaloWords + 4 * q + k;  // the output's element in the window
            acc[k] = f.row[0] * w[o - R * S];
#pragma unroll
            for (int i = 1; i < Geo::K; ++i) acc[k] = fmaf(f.row[i], w[o + (i - R) * S], acc[k]);
        }
        words[q] = rows::round_pack4(acc[0], acc[1], acc[2], acc[3]);
    }
    if (remaining >= 4 * kChunkWords && aligned) {
        __stcs(reinterpret_cast<uint4*>(dst), make_uint4(words[0], words[1], words[2], words[3]));
    } else {
        for (int k = 0; k < min(remaining, 4 * kChunkWords); ++k) dst[k] = static_cast<std::uint8_t>(words[k / 4] >> (8 * (k % 4)));
    }
}

template <int R, int S, bool Fast>
__device__ __forceinline__ void column_first_strip(const ImageView<const std::uint8_t>& in, const ImageView<std::uint8_t>& out,
                                                   const Factors<R>& f, Border border, float4* sums, int e_tile, int y0,
                                                   int y_end) {
    using Geo = Geometry<R, S>;
    constexpr int K = Geo::K;
    const int threads = static_cast<int>(blockDim.x);
    const int row_slots = padded(threads);  // a shared row of column sums
    const int t = static_cast<int>(threadIdx.x);
    const int plane = static_cast<int>(blockIdx.z);
    const int elements = in.shape.width * S;
    const int tile = tile_words(threads, Geo::kHaloWords);
    const int groups = (y_end - y0 + K - 1) / K;
    WordSource<S, Fast> source(in, plane, y0 - R, e_tile + 4 * (t - Geo::kHaloWords), border);

    // The ring: slot i % K holds input row i (image row y0 - R + i) of the thread's 4 elements.
    float ring[K][4];
#pragma unroll
    for (int i = 0; i < 2 * R; ++i) to_floats(source.next(), ring[i]);
    std::uint32_t ahead[K];  // the words of the group's entering rows, loaded a group ahead
#pragma unroll
    for (int u = 0; u < K; ++u) ahead[u] = source.next();

    // The row pass's items: (row r of the group, chunk c of the tile), thread t's first one, and
    // the step between a thread's items.
    const int chunks = tile / kChunkWords;
    const int step_rows = threads / chunks, step_chunks = threads % chunks;
    const bool out_aligned = ((reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) & 15) == 0;

#pragma unroll 1
    for (int g = 0; g < groups; ++g) {
#pragma unroll
        for (int u = 0; u < K; ++u) {
            // Input row g*K + u + 2R enters slot (u + 2R) % K; output row g*K + u takes slots u ... u + 2R.
            float(&entering)[4] = ring[(u + 2 * R) % K];
            to_floats(ahead[u], entering);
            if (g + 1 < groups) ahead[u] = source.next();
            float col[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                col[k] = f.col[0] * ring[u % K][k];
#pragma unroll
                for (int j = 1; j < K; ++j) col[k] = fmaf(f.col[j], ring[(u + j) % K][k], col[k]);
            }
            sums[u * row_slots + padded(t)] = make_float4(col[0], col[1], col[2], col[3]);
        }
        __syncthreads();
        const int rows_here = min(K, y_end - (y0 + g * K));
        std::uint8_t* const group_out = out.row(y0 + g * K, plane) + e_tile;
        int r = t / chunks, c = t % chunks;
        while (r < rows_here) {
            const int e_out = e_tile + 4 * kChunkWords * c;
            if (e_out < elements) {
                std::uint8_t* dst = group_out + static_cast<std::size_t>(r) * out.pitch_bytes + 4 * kChunkWords * c;
                row_item<R, S>(sums + r * row_slots, c, f, dst, elements - e_out, out_aligned);
            }
            r += step_rows, c += step_chunks;
            if (c >= chunks) c -= chunks, ++r;
        }
        __syncthreads();  // the next group's column pass overwrites the sums
    }
}

template <int R, int S>
__global__ void __launch_bounds__(kBlockSides.back(), kMinBlocksPerSm)
    conv_separable_column_first_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Factors<R> f, Border border,
                                       int strip_groups) {
    extern __shared__ float4 shared[];  // (2R+1) padded rows of T float4 column sums
    using Geo = Geometry<R, S>;
    constexpr int K = Geo::K;
    const int height = in.shape.height;
    const int y0 = static_cast<int>(blockIdx.y) * strip_groups * K;
    if (y0 >= height) return;
    const int y_end = min(y0 + strip_groups * K, height);
    const int threads = static_cast<int>(blockDim.x);
    const int e_tile = static_cast<int>(blockIdx.x) * tile_words(threads, Geo::kHaloWords) * 4;  // first output element
    // Fast: every input row the strip reads (whole groups included) lies inside the image, and the
    // block's span of words inside the row, aligned for word loads.
    const int rows_read = (y_end - y0 + K - 1) / K * K + 2 * R;
    const int span_begin = e_tile - 4 * Geo::kHaloWords;
    const bool fast = y0 - R >= 0 && y0 - R + rows_read <= height && span_begin >= 0 &&
                      span_begin + 4 * threads <= in.shape.width * S &&
                      ((reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) & 3) == 0;
    if (fast) {
        column_first_strip<R, S, true>(in, out, f, border, shared, e_tile, y0, y_end);
    } else {
        column_first_strip<R, S, false>(in, out, f, border, shared, e_tile, y0, y_end);
    }
}

int radius_of(const Problem& problem) { return std::max(problem.mask->radius_x(), problem.mask->radius_y()); }

int halo_words_of(const Problem& problem) {
    return (radius_of(problem) * rows::element_stride(problem.shape) + 3) / 4;
}

std::size_t shared_bytes_of(const Problem& problem, int threads) {
    return static_cast<std::size_t>(2 * radius_of(problem) + 1) * static_cast<std::size_t>(padded(threads)) * sizeof(float4);
}

dim3 grid_of(const Problem& problem, int threads, int strip_groups) {
    const ImageShape& s = problem.shape;
    const int rows = strip_groups * (2 * radius_of(problem) + 1);
    return dim3(grid_side(s.row_elements(), 4 * tile_words(threads, halo_words_of(problem))), grid_side(s.height, rows),
                s.layout == Layout::aos ? 1u : static_cast<unsigned>(s.channels));
}

class ConvSeparableColumnFirst final : public Variant {
public:
    std::string name() const override { return "conv.separable_column_first"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "separable mask: column pass first as a register window down a strip, row pass from shared fp32, each byte "
               "converted once";
    }
    Support supports(const Problem& problem) const override {
        const Mask& mask = *problem.mask;
        if (const Support rank1 = separable::rank1_masks_only(mask); !rank1) return rank1;
        if (radius_of(problem) > kMaxRadius) {
            return Support::no(fmt::format("masks up to 9x9: {} ({}x{}) needs a ring of more than 9 rows per thread "
                                           "(conv.separable_fused takes every size)",
                                           mask.name(), mask.width(), mask.height()));
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x.assign(kBlockSides.begin(), kBlockSides.end());
        space.block_y = {1};
        space.parameters = {{"groups", std::vector<int>(kStripGroups.begin(), kStripGroups.end()),
                             "groups of 2R+1 output rows per block (a strip read top to bottom)"}};
        space.default_shape = LaunchShape{128, 1, {{"groups", 2}}};  // the tuned shape of 8K and HD 9x9 on the H200
        return space;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        if (shape.block_y != 1 || std::find(kBlockSides.begin(), kBlockSides.end(), shape.block_x) == kBlockSides.end()) {
            return Support::no(fmt::format("block {}x{}: a block of 128 or 256 threads in x and 1 in y", shape.block_x, shape.block_y));
        }
        return Support::yes();
    }
    double coefficient_error(const Problem& problem) const override {
        return separable::coefficient_error_of(name(), *problem.mask);
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const void* kernel = rows::dispatch_radius_stride(radius_of(problem), rows::element_stride(problem.shape), [](auto r, auto s) {
            return reinterpret_cast<const void*>(&conv_separable_column_first_kernel<decltype(r)::value, decltype(s)::value>);
        });
        return {KernelLaunch{kernel, "conv_separable_column_first_kernel", grid_of(problem, shape.block_x, shape.parameter("groups")),
                             block_of(shape), shared_bytes_of(problem, shape.block_x)}};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        rows::dispatch_radius_stride(radius_of(plan.problem), rows::element_stride(plan.problem.shape), [&](auto r, auto s) {
            constexpr int R = decltype(r)::value;
            enqueue_kernel(plan.kernels[0], stream, &conv_separable_column_first_kernel<R, decltype(s)::value>,
                           b.input.view<const std::uint8_t>(), b.output.view<std::uint8_t>(), factors_of<R>(*plan.problem.mask),
                           plan.problem.border, plan.shape.parameter("groups"));
            return 0;
        });
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvSeparableColumnFirst)
