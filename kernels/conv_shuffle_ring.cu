// conv.shuffle_ring — masks up to 9x9: 8 bytes x a strip of rows per thread, a ring of eight
// accumulator rows shifted by the FMA chains themselves, the halo from up to two lanes on each side
// by shuffle, no shared memory.
//
// Technique (issue 14; what it adds over conv.register_window_async, the general-mask ladder's
// previous step, and over conv.shuffle_window, which stops at 3x3): register_window_async keeps
// 2R + 1 rows of 8 accumulators per thread too, but shifts them by moves after every row (64 moves
// per row at 9x9), tests per mask row whether its output row lies in the strip, and passes every
// row through shared memory behind a barrier. Here each thread owns 8 consecutive bytes (elements)
// of a stored row and walks down a strip of `rows` rows (tuned). Each input row adds one mask row to
// each of the nine output rows it touches; the chain of FMAs for output row o starts from o's
// partial sum in ring register row j - 1 and ends in ring row j, which the chain of the row below
// has just read, so the ring shifts without a move and the walk needs no unrolling (nine unrolled
// steps of renamed rows, tried first, were ~130 KB of code, and warps spent half their cycles
// waiting for instruction fetch: 768 us at 8K random 9x9). Every input row is multiplied in unconditionally: the 2R rows a strip
// reads beyond its ends feed accumulators that are never stored (8 / rows of the FMAs; tall strips
// make it small). The R*S elements beyond the thread's 8 on each side (S = 1 gray or SoA, 3 RGB, 4
// RGBA; up to 16 bytes) come from the next D = ceil(R*S / 8) lanes by shuffle; the D lanes at each
// end of a warp also load the 8 bytes just beyond the warp's run and hand them round the ends of
// the warp by the same shuffles. A row is one 8-byte load per lane (two for the halo lanes),
// issued two rows ahead of its use, with an L2 prefetch two rows further on. The warps at a row's
// ends (some unit crossing the row's end) take a copy of the walk that maps those units per byte
// by the border rule. Every byte of the window is converted to fp32 (a byte permute and a
// subtraction); taps come from the kernel parameters (__grid_constant__: no copy, no registers).
// Per element: 81 FMAs (any mask); 9 + 9 for a rank-1 mask (klab::separable_variant_factors: a row
// pass on the register row, then the column pass into the ring; coefficient_error() says what the
// factors cost). Outputs: cvt.rni.sat.u8.f32 and one 8-byte streaming store per row.
// Preconditions: masks up to 9x9 (a smaller mask is zero-padded to 9x9: a zero tap adds +0); every
// border, 1/3/4 channels, AoS and SoA, any size. The window needs 8-byte aligned rows (data and
// pitch); other images compute each output from its samples (elementwise_strip, the same taps,
// border_index for every sample). Block: 32k x m threads, at most 512 (a warp's lanes lie along a
// row).
// Measured on an NVIDIA H200 (development run of 2026-11-24, klab-bench, L2 flushed, medians of 3,
// shape tuned on the Gaussian 9x9 when `rows` went from 8 to 192 in 7 steps: 32x4 rows=32; the
// committed full run, with the finer list below, is in results/nvidia-h200/report.md): 8K RGB AoS
// random 9x9 509 us (2.05x its roofline; conv.register_window_async 519 us), gaussian 9x9 244 us
// (4.4x; conv.separable_fused 181 us). Nsight Compute, 8K random 9x9: 432 M warp instructions (139
// per output element: the loop spends 113 per element of an input row, and a 32-row strip reads 40
// rows), issue slots 81% busy, 128 registers, occupancy 23%, DRAM 7% of peak. Of the loop's 113 per
// element: 81 FFMA, 5 uniform loads of tap pairs, 9 for the byte conversions, ~18 for loads,
// shuffles, rounding and the walk. The rank-1 path spends 45 instructions per element on 18 FMAs:
// the window's 32 bytes are converted for 8 outputs, so a row pass from registers costs more than
// it saves.
// Deliberately not done: no skipping of zero taps, no trimming of the FMAs into accumulators of
// rows outside the strip, no alternating walk directions.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/numeric.hpp"
#include "harness/row_stream.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"
#include "harness/warp_strips.hpp"

namespace klab {
namespace {

constexpr int R = 4;                // the ring's radius: masks up to 9x9
constexpr int K = 2 * R + 1;        // mask rows: the output rows an input row touches
constexpr int kUnit = 8;            // consecutive bytes of a row per thread: one 8-byte load
constexpr int kWarp = 32;
constexpr int kMaxBlockThreads = 512;
constexpr int kAhead = 2;           // rows loaded into registers ahead of the row being computed
constexpr int kPrefetch = 2;        // and asked of L2 this many rows beyond those
constexpr unsigned kFullMask = 0xffffffffu;

// The mask zero-padded to 9x9 around its centre (row-major) and, for a rank-1 mask, its row and
// column factors padded the same way. Passed by value: the FMAs read the taps from the constant bank.
struct RingTaps {
    float m[K * K];
    float row[K];
    float column[K];
};

// Every tap, or a rank-1 mask's row and column factors.
enum class Arithmetic { full, separable };

// One plane of the input as the ring reads it.
struct Source {
    const std::uint8_t* data;  // row 0 of the plane
    std::size_t pitch;
    int height;
    int width;
    int elements;  // of a stored row
    Border border;
};

// The 8 bytes of a row from element k on (k may lie outside the row, by up to a warp's run), the
// border rule for each byte outside it (a constant border: its value).
template <int S>
__device__ __forceinline__ uint2 mapped_unit(const Source& in, const std::uint8_t* row, int k) {
    std::uint32_t w[2] = {0u, 0u};
#pragma unroll 1
    for (int b = 0; b < kUnit; ++b) {
        const int e = k + b;
        std::uint32_t v = in.border.value;
        if (e >= 0 && e < in.elements) {
            v = row[e];
        } else {
            const int x = e >= 0 ? e / S : -((-e + S - 1) / S);  // the pixel, rounded down
            const int sx = border_index(x, in.width, in.border.mode);
            if (sx >= 0) v = row[sx * S + (e - x * S)];
        }
        if (b < 4) {
            w[0] |= v << (8 * b);
        } else {
            w[1] |= v << (8 * (b - 4));
        }
    }
    return make_uint2(w[0], w[1]);
}

// A lane's two units of every row: its own 8 bytes and, for the D lanes at each end of the warp,
// the 8 bytes that the neighbouring warp's lanes would hold (lanes 32 - D .. 31 the units left of
// the warp's run, lanes 0 .. D - 1 those right of it). Mapped once per strip.
struct Units {
    int own, halo;                  // first element of each
    bool own_inside, halo_inside;   // the whole unit lies in the row: one 8-byte load
    bool has_halo;
};

template <int D>
__device__ __forceinline__ Units units_of(const Source& in, int lane, int e, int warp_e) {
    Units u;
    u.own = e;
    u.has_halo = lane < D || lane >= kWarp - D;
    u.halo = lane < D ? warp_e + (kWarp + lane) * kUnit : (lane >= kWarp - D ? warp_e - (kWarp - lane) * kUnit : e);
    u.own_inside = e + kUnit <= in.elements;
    u.halo_inside = u.halo >= 0 && u.halo + kUnit <= in.elements;
    return u;
}

struct RawRow {
    uint2 own, halo;
};

// Image row y of the walk into `raw`: the border rule maps the row; units inside the row are plain
// loads. In the warps at the row's ends (Edge), the others are mapped per byte.
template <int S, bool Edge>
__device__ __forceinline__ void load_row(const Source& in, const Units& u, int y, RawRow& raw) {
    const int sy = rows::row_index(y, in.height, in.border.mode);
    if (sy < 0) {  // a constant border's row outside the image
        const std::uint32_t v = in.border.value * 0x01010101u;
        raw.own = raw.halo = make_uint2(v, v);
        return;
    }
    const std::uint8_t* row = in.data + static_cast<std::size_t>(sy) * in.pitch;
    if constexpr (Edge) {
        raw.own = u.own_inside ? __ldg(reinterpret_cast<const uint2*>(row + u.own)) : mapped_unit<S>(in, row, u.own);
        raw.halo = u.halo_inside ? __ldg(reinterpret_cast<const uint2*>(row + u.halo))
                                 : (u.has_halo ? mapped_unit<S>(in, row, u.halo) : raw.own);
    } else {
        raw.own = __ldg(reinterpret_cast<const uint2*>(row + u.own));
        raw.halo = __ldg(reinterpret_cast<const uint2*>(row + u.halo));
    }
}

// Word h (0 or 1) of the unit d lanes away (d < 0 left, d > 0 right), by shuffle; the lanes at the
// warp's ends send their halo unit instead of their own, so that it arrives round the end.
template <int d>
__device__ __forceinline__ std::uint32_t neighbour_word(const RawRow& raw, int lane, int h) {
    const uint2 sent = (d < 0 ? lane >= kWarp + d : lane < d) ? raw.halo : raw.own;
    return __shfl_sync(kFullMask, h == 0 ? sent.x : sent.y, (lane + d) & (kWarp - 1));
}

// The row's elements as fp32: x[R*S + k] = byte k of the thread's 8, x[0 .. R*S) the R*S before
// them, x[8 + R*S ..] the R*S after them. Only the words that hold these bytes are shuffled.
template <int S>
__device__ __forceinline__ void window_row(const RawRow& raw, int lane, float (&x)[kUnit + 2 * R * S]) {
    constexpr int D = (R * S + kUnit - 1) / kUnit;  // lanes each side
    constexpr int kWords = 2 * (2 * D + 1);         // of the units from lane - D to lane + D
    constexpr int first = kUnit * D - R * S;        // the window's first byte in those words
    constexpr int last = first + kUnit + 2 * R * S; // one past its last
    std::uint32_t words[kWords];
#pragma unroll
    for (int wi = 0; wi < kWords; ++wi) {
        if (4 * wi + 4 <= first || 4 * wi >= last) {
            words[wi] = 0u;  // never read
            continue;
        }
        const int unit = wi / 2 - D, h = wi % 2;
        if (unit == 0) {
            words[wi] = h == 0 ? raw.own.x : raw.own.y;
        } else {
            // unit is a compile-time constant here; dispatch to the instantiation for it
            if (unit == -2) words[wi] = neighbour_word<-2>(raw, lane, h);
            if (unit == -1) words[wi] = neighbour_word<-1>(raw, lane, h);
            if (unit == 1) words[wi] = neighbour_word<1>(raw, lane, h);
            if (unit == 2) words[wi] = neighbour_word<2>(raw, lane, h);
        }
    }
#pragma unroll
    for (int k = 0; k < kUnit + 2 * R * S; ++k) x[k] = rows::byte_to_float(words[(first + k) / 4], (first + k) % 4);
}

// One input row x into the ring. Before it, ring[j] (j = 0 .. 2R - 1) holds output row i - 1 + R - j
// of the previous input row i - 1; after it, ring[j] holds output row i + R - j, and `done` output
// row i - R, which this row completes. Output row i + R - j takes mask row j from input row i, so
// each new ring[j] is the old ring[j - 1] plus one mask row: a chain of FMAs that ends in the
// register of the ring[j] before it, already read by the chain of ring[j + 1]. The ring shifts by
// one row without a move and without unrolling the walk (nine unrolled steps of renamed rows
// would be ~130 KB of code: the instruction cache would miss).
template <int S, Arithmetic A>
__device__ __forceinline__ void step_row(float (&ring)[K - 1][kUnit], float (&done)[kUnit], const float (&x)[kUnit + 2 * R * S],
                                         const RingTaps& t) {
    if constexpr (A == Arithmetic::separable) {
        float h[kUnit];  // the row pass, mask column by mask column
#pragma unroll
        for (int i = 0; i < K; ++i) {
#pragma unroll
            for (int k = 0; k < kUnit; ++k) h[k] = i == 0 ? t.row[0] * x[k] : fmaf(t.row[i], x[k + i * S], h[k]);
        }
#pragma unroll
        for (int k = 0; k < kUnit; ++k) done[k] = fmaf(t.column[K - 1], h[k], ring[K - 2][k]);
#pragma unroll
        for (int j = K - 2; j >= 1; --j) {
#pragma unroll
            for (int k = 0; k < kUnit; ++k) ring[j][k] = fmaf(t.column[j], h[k], ring[j - 1][k]);
        }
#pragma unroll
        for (int k = 0; k < kUnit; ++k) ring[0][k] = t.column[0] * h[k];
    } else {
        const auto mask_row = [&](int j, float start, int k) {
            float a = start;
#pragma unroll
            for (int i = 0; i < K; ++i) a = fmaf(t.m[j * K + i], x[k + i * S], a);
            return a;
        };
#pragma unroll
        for (int k = 0; k < kUnit; ++k) done[k] = mask_row(K - 1, ring[K - 2][k], k);
#pragma unroll
        for (int j = K - 2; j >= 1; --j) {
#pragma unroll
            for (int k = 0; k < kUnit; ++k) ring[j][k] = mask_row(j, ring[j - 1][k], k);
        }
#pragma unroll
        for (int k = 0; k < kUnit; ++k) ring[0][k] = mask_row(0, 0.0f, k);
    }
}

// Output row y from a finished accumulator row: one 8-byte streaming store, or byte stores for a
// unit that crosses the row's end; nothing beyond it.
__device__ __forceinline__ void store_row(const float (&acc)[kUnit], std::uint8_t* dst, int e, int elements) {
    const uint2 v = make_uint2(rows::round_pack4(acc[0], acc[1], acc[2], acc[3]), rows::round_pack4(acc[4], acc[5], acc[6], acc[7]));
    if (e + kUnit <= elements) {
        __stcs(reinterpret_cast<uint2*>(dst), v);
    } else {
#pragma unroll 1
        for (int b = 0; b < elements - e; ++b) dst[b] = static_cast<std::uint8_t>((b < 4 ? v.x >> (8 * b) : v.y >> (8 * (b - 4))) & 0xFFu);
    }
}

// The ring over output rows y_begin .. y_end - 1 of the thread's column: input rows y_begin - R ..
// y_end - 1 + R, top to bottom, each loaded kAhead rows before its step.
template <int S, Arithmetic A, bool Edge>
__device__ __forceinline__ void ring_strip(const Source& in, std::uint8_t* out_column, std::size_t out_pitch, const RingTaps& taps,
                                           const Units& u, int lane, int e, int y_begin, int y_end) {
    const bool active = e < in.elements;
    const int first = y_begin - R, last = y_end - 1 + R;
    const std::uint8_t* prefetch_column = in.data + (u.own_inside ? u.own : 0);
    float ring[K - 1][kUnit] = {};
    RawRow ahead[kAhead];
#pragma unroll
    for (int p = 0; p < kAhead; ++p) load_row<S, Edge>(in, u, min(first + p, last), ahead[p]);
#pragma unroll 1
    for (int y = first; y <= last; ++y) {
        float x[kUnit + 2 * R * S];
        window_row<S>(ahead[0], lane, x);
#pragma unroll
        for (int p = 0; p + 1 < kAhead; ++p) ahead[p] = ahead[p + 1];
        load_row<S, Edge>(in, u, min(y + kAhead, last), ahead[kAhead - 1]);
        const int prefetch_y = y + kAhead + kPrefetch;
        if (prefetch_y < in.height && prefetch_y <= last) {
            asm volatile("prefetch.global.L2 [%0];" ::"l"(prefetch_column + static_cast<std::size_t>(prefetch_y) * in.pitch));
        }
        float done[kUnit];
        step_row<S, A>(ring, done, x, taps);
        const int out_y = y - R;  // completed by this row
        if (active && out_y >= y_begin) store_row(done, out_column + static_cast<std::size_t>(out_y) * out_pitch, e, in.elements);
    }
}

// Images whose rows are not 8-byte aligned: each output element from its samples, the border
// rule for each (the mask's own taps: within the tie bound of either path).
template <int S>
__device__ __noinline__ void elementwise_strip(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, const RingTaps& taps,
                                               Border border, int plane, int e, int y_begin, int y_end) {
    const int elements = in.shape.row_elements();
#pragma unroll 1
    for (int y = y_begin; y < y_end; ++y) {
#pragma unroll 1
        for (int k = e; k < min(e + kUnit, elements); ++k) {
            const int x = k / S;
            const int c = S == 1 ? plane : k % S;
            float sum = 0.0f;
#pragma unroll 1
            for (int j = 0; j < K; ++j)
#pragma unroll
                for (int i = 0; i < K; ++i) sum = fmaf(taps.m[K * j + i], static_cast<float>(sample(in, x + i - R, y + j - R, c, border)), sum);
            out.row(y, plane)[k] = saturate_round_u8(sum);
        }
    }
}

// One block of up to 512 threads per SM at least: up to 128 registers, for the eight ring rows, the
// row being converted and the rows in flight (a few bytes of spill, outside the FMA chains).
template <int S, Arithmetic A>
__global__ void __launch_bounds__(kMaxBlockThreads, 1)
    conv_shuffle_ring_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, const __grid_constant__ RingTaps taps, Border border,
                             int rows) {
    const int lane = static_cast<int>(threadIdx.x) % kWarp;
    const int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * kUnit;
    const int strip = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    const int plane = static_cast<int>(blockIdx.z);
    const int height = in.shape.height;
    const int elements = in.shape.row_elements();
    const int y_begin = strip * rows;
    const int warp_e = e - lane * kUnit;
    if (y_begin >= height || warp_e >= elements) return;  // the whole warp (its lanes share threadIdx.y)
    const int y_end = min(y_begin + rows, height);
    const bool aligned = (reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % kUnit == 0 &&
                         (reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % kUnit == 0;
    if (!aligned) {
        if (e < elements) elementwise_strip<S>(in, out, taps, border, plane, e, y_begin, y_end);
        return;
    }
    const Source source{in.row(0, plane), in.pitch_bytes, height, in.shape.width, elements, border};
    const Units u = units_of<(R * S + kUnit - 1) / kUnit>(source, lane, e, warp_e);
    // The warps at a row's ends (some unit not wholly inside the row) take the border rule per byte.
    std::uint8_t* out_column = out.row(0, plane) + e;
    if (__any_sync(kFullMask, !u.own_inside || (u.has_halo && !u.halo_inside))) {
        ring_strip<S, A, true>(source, out_column, out.pitch_bytes, taps, u, lane, e, y_begin, y_end);
    } else {
        ring_strip<S, A, false>(source, out_column, out.pitch_bytes, taps, u, lane, e, y_begin, y_end);
    }
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, RingTaps, Border, int);

template <Arithmetic A>
Kernel kernel_by_stride(int stride) {
    return by_channels<Kernel>(stride, &conv_shuffle_ring_kernel<1, A>, &conv_shuffle_ring_kernel<3, A>, &conv_shuffle_ring_kernel<4, A>);
}

// Output rows per strip. Each strip also reads 2R = 8 rows beyond it and multiplies them into
// accumulators it never stores (8 / rows of the FMAs), so tall strips waste less; but the strips
// are the grid's work items, and their count decides how evenly the last wave fills the GPU.
constexpr int kStripRows[] = {8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256};

struct MaskPlan {
    Arithmetic arithmetic;
    RingTaps taps;
    double coefficient_error;
};

// All 81 taps, or the factors of a rank-1 mask (each zero-padded to 9 around its centre).
MaskPlan plan_mask(const Mask& mask) {
    MaskPlan plan{Arithmetic::full, {}, 0.0};
    const rows::Taps2D<R> padded = rows::taps_2d<R>(mask);
    std::copy(std::begin(padded.m), std::end(padded.m), plan.taps.m);
    const std::optional<SeparableFactors> factors = separable_variant_factors(mask);
    if (!factors) return plan;
    plan.arithmetic = Arithmetic::separable;
    std::copy(factors->row.begin(), factors->row.end(), plan.taps.row + R - mask.radius_x());
    std::copy(factors->column.begin(), factors->column.end(), plan.taps.column + R - mask.radius_y());
    plan.coefficient_error = separable_coefficient_error(mask, *factors);
    return plan;
}

Kernel kernel_for(const Problem& problem, Arithmetic arithmetic) {
    const int stride = rows::element_stride(problem.shape);
    return arithmetic == Arithmetic::separable ? kernel_by_stride<Arithmetic::separable>(stride) : kernel_by_stride<Arithmetic::full>(stride);
}

class ConvShuffleRing final : public Variant {
public:
    std::string name() const override { return "conv.shuffle_ring"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "masks up to 9x9: 8 bytes x a strip of rows per thread, eight accumulator rows shifted by the FMA chains, halo "
               "from up to two lanes each side by warp shuffle, no shared memory; rank-1 masks as row and column passes";
    }
    Support supports(const Problem& problem) const override {
        const Mask& mask = *problem.mask;
        if (mask.width() > K || mask.height() > K) {
            return Support::no(fmt::format("masks up to 9x9: {} is {}x{} (eight rows of 8 accumulators per thread)", mask.name(),
                                           mask.width(), mask.height()));
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x = {32, 64, 128};
        space.block_y = {1, 2, 4};
        space.parameters = {{"rows", std::vector<int>(std::begin(kStripRows), std::end(kStripRows)),
                             "output rows per thread, walked top to bottom (each strip also reads 8 rows beyond it)"}};
        space.default_shape = LaunchShape{64, 2, {{"rows", 96}}};
        return space;
    }
    // 64x2 threads, and the tallest strips that still give every SM of a 132-SM GPU 16 warps.
    LaunchShape default_shape(const Problem& problem) const override {
        LaunchShape shape = tuning_space().default_shape;
        const int rows = warp_strips::filling_strip_rows(problem.shape, kUnit,
                                                         std::vector<int>(std::begin(kStripRows), std::end(kStripRows)));
        shape.parameters = {{"rows", rows}};
        return shape;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        if (Support block = warp_strips::check_block(shape, kMaxBlockThreads); !block) return block;
        if (shape.parameter("rows") < 1) return Support::no(fmt::format("rows={}: at least one output row per thread", shape.parameter("rows")));
        return Support::yes();
    }
    double coefficient_error(const Problem& problem) const override { return plan_mask(*problem.mask).coefficient_error; }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const ImageShape& s = problem.shape;
        const dim3 grid(grid_side(s.row_elements(), shape.block_x * kUnit), grid_side(s.height, shape.block_y * shape.parameter("rows")),
                        s.layout == Layout::aos ? 1u : static_cast<unsigned>(s.channels));
        return {make_launch(kernel_for(problem, plan_mask(*problem.mask).arithmetic), "conv_shuffle_ring_kernel", grid, block_of(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const MaskPlan mask = plan_mask(*plan.problem.mask);
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem, mask.arithmetic), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), mask.taps, plan.problem.border, plan.shape.parameter("rows"));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvShuffleRing)
