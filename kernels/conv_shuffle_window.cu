// conv.shuffle_window — masks up to 3x3: 16 bytes x a strip of rows per thread, the window in
// registers, the halo by warp shuffle, no shared memory.
//
// Technique (issue 14, over conv.register_window, which passes every fp32 row through shared
// memory behind a barrier): each thread owns 16 consecutive bytes (elements) of a stored row and
// walks down (or up: strips alternate, so that two strips read the rows they share at about the
// same time, the second from L2) a strip of `rows` rows (tuned). A row of the strip is one 16-byte
// load, issued three rows ahead of the row being computed; interior walks also ask L2 for the row
// four further on. The S elements the mask reaches beyond the thread's 16 on each side (S = 1 gray
// or SoA, 3 RGB, 4 RGBA) come from the neighbouring lanes' words by two shuffles; lanes at the ends
// of a warp's run read theirs from the aligned word(s) holding them, at a column the border rule
// maps once per strip. Every byte is converted to fp32 once (a byte permute and a subtraction, no
// conversion instruction) and multiplied, while it is in registers, into the three output rows it
// touches: three rows of 16 accumulators rotate by renaming over an unrolled step of three rows.
// Taps are in registers, rows flipped for strips that walk up. Per element: 9 FMAs; 5 for a cross
// (the four corner taps zero: sharpen, Laplacian, every 1x3 and 3x1 mask); 3 + 3 for other rank-1
// masks (klab::separable_variant_factors: a row pass on the register row, then the column pass into
// the accumulators), 2 + 3 where the row factor is symmetric (r, s, r: Gaussians, boxes), whose
// row pass is (left + right) + (s / r) x with r moved into the column factors; coefficient_error()
// says what the factors cost. Outputs: cvt.rni.sat.u8.f32 (the store rule in one instruction), one
// 16-byte streaming store per row (evict-first in L2, so that the input rows a neighbouring strip
// reads stay there).
// Preconditions: masks up to 3x3 (a smaller mask is zero-padded: a zero tap adds +0); every border,
// 1/3/4 channels, AoS and SoA, any pitch and size. The window needs 16-byte aligned rows of a
// multiple of 16 bytes and at least two lanes of a warp inside the row; other strips (odd pitches,
// odd widths) compute each output from its nine samples (elementwise_strip, the same taps,
// border_index for every sample). Block: 32k x m threads, at most 512 (a warp's lanes lie along a
// row), `rows` = 3n + 2 (the rotation of three accumulator rows ends where it began).
// Measured on an NVIDIA H200 (device runs of 2026-11-24, klab-bench, L2 flushed, tuned shapes,
// medians of 3): 8K RGB AoS sharpen 63.0 us (1.33x the copy floor of 47.8 us; NPP's
// nppiFilterBorder32f 174.9 us: 2.8x faster; conv.register_window_async 189 us), gaussian 3x3
// 64.0 us (1.35x; 67.2 us before the symmetric row pass; conv.separable_fused 105 us, NPP 141 us),
// box 3x3 64.1 us (NPP 302 us), HD gaussian 3x3 9.9 us (NPP 14.0 us), HD sharpen 9.8 us (NPP
// 19.0 us), 480p gaussian 3x3 5.5 us (1.38x). Nsight Compute, 8K sharpen: 40.4 M warp
// instructions, issue slots 64% busy, 122 registers, occupancy 22%, DRAM 63% of peak; gaussian
// 3x3: 41.1 M (44.6 M before), 64%, 128 registers, DRAM 62%. Both are bound by issue and load
// latency together: the three rows in flight are all 128 registers leave room for (an L2 prefetch
// four rows further on gained 2-4%), and the byte conversions and the rounding are 28% of the
// instructions.
// Deliberately not done: no cp.async or TMA staging (the rows go straight to registers), no
// packed-integer arithmetic for integer masks.
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

constexpr int kElements = 16;  // consecutive bytes of a row per thread: one 16-byte load
constexpr int kWarp = 32;
constexpr int kMaxBlockThreads = 512;
constexpr int kSteps = 3;      // rows per unrolled step: the accumulator rows and the rows in flight
constexpr int kPrefetch = 4;   // interior walks also ask L2 for the row this many beyond those in flight
constexpr unsigned kFullMask = 0xffffffffu;

// The mask zero-padded to 3x3 around its centre (row-major) and, for a rank-1 mask, its row and
// column factors padded the same way.
struct Taps3x3 {
    float m[9];
    float row[3];
    float column[3];
};

// How a step multiplies: all nine taps; a cross (the four corner taps zero, as in sharpen and the
// Laplacian: five FMAs per element); a rank-1 mask's row and column factors (six); or, where the
// row factor is symmetric (r, s, r: Gaussians, boxes), the row pass as (left + right) + (s / r) x
// with r moved into the column factors (five).
enum class Arithmetic { full, cross, separable, symmetric };

// The taps in walk order: row 0 is the one an output row meets first (mask row 0 walking down,
// row 2 walking up).
template <Arithmetic A>
struct WalkTaps {
    float m[3][3];
    __device__ __forceinline__ WalkTaps(const Taps3x3& taps, bool down) {
#pragma unroll
        for (int j = 0; j < 3; ++j)
#pragma unroll
            for (int i = 0; i < 3; ++i) m[j][i] = down ? taps.m[3 * j + i] : taps.m[3 * (2 - j) + i];
    }
};

template <>
struct WalkTaps<Arithmetic::separable> {
    float row[3], column[3];
    __device__ __forceinline__ WalkTaps(const Taps3x3& taps, bool down) {
#pragma unroll
        for (int i = 0; i < 3; ++i) {
            row[i] = taps.row[i];
            column[i] = down ? taps.column[i] : taps.column[2 - i];
        }
    }
};

// The same factors; row[0] and row[2] are 1.
template <>
struct WalkTaps<Arithmetic::symmetric> : WalkTaps<Arithmetic::separable> {
    using WalkTaps<Arithmetic::separable>::WalkTaps;
};

// One plane of the input as the window reads it.
struct Source {
    const std::uint8_t* data;  // row 0 of the plane
    std::size_t pitch;
    int height;
    int width;
    int elements;  // of a stored row
    Border border;
};

// Where a lane's outer halo comes from in every row: lane 0 needs the S elements left of its 16,
// the last lane inside the row (or lane 31) the S right of them; the others get theirs by shuffle.
// The border rule maps the column once per strip: the halo bytes start at bit `shift` of the
// aligned words at bytes `lo` and `hi` of each row (hi = lo + 4 where the bytes reach into the next
// word), masked by `keep` and or-ed with `fill` (a constant border's pixel: keep 0, fill its value).
// Every lane reads both words of every row (lanes without a memory halo their own first word, an
// L1 hit), so that the loads need no branch.
struct HaloSource {
    bool left, right;  // the lane takes its left / right halo from memory
    int lo, hi;
    int shift;
    std::uint32_t keep, fill;
};

template <int S>
__device__ __forceinline__ HaloSource halo_source(const Source& in, int lane, int e, int e_load, bool active) {
    HaloSource h{false, false, e_load, e_load, 0, ~0u, 0u};
    h.left = active && lane == 0;
    h.right = active && !h.left && (lane == kWarp - 1 || e + kElements >= in.elements);
    if (!h.left && !h.right) return h;
    int first;  // the halo's first byte in the row
    if (h.left ? e > 0 : e + kElements < in.elements) {
        first = h.left ? e - S : e + kElements;  // S elements inside the row
    } else {
        // The pixel left of the row (e == 0) or right of it (the row has a multiple of 16 bytes).
        const int sx = border_index(h.left ? -1 : in.width, in.width, in.border.mode);
        if (sx < 0) {
            h.keep = 0u, h.fill = in.border.value * 0x01010101u;
            return h;
        }
        first = sx * S;
    }
    h.lo = first & ~3;
    h.hi = (first & 3) + S > 4 ? h.lo + 4 : h.lo;
    h.shift = 8 * (first & 3);
    return h;
}

// One row of a thread: its 16 bytes and the two words of its memory halo.
struct RawRow {
    uint4 w;
    std::uint32_t lo, hi;
};

// Unconditional loads (a lane outside the row reads the row's first 16 bytes): a predicated load
// would make the compiler copy the old registers around it.
__device__ __forceinline__ void load_row(const std::uint8_t* row, int e_load, const HaloSource& halo, RawRow& raw) {
    raw.w = __ldg(reinterpret_cast<const uint4*>(row + e_load));
    raw.lo = __ldg(reinterpret_cast<const std::uint32_t*>(row + halo.lo));
    raw.hi = __ldg(reinterpret_cast<const std::uint32_t*>(row + halo.hi));
}

// A constant border's row outside the image: the value in every byte.
__device__ __forceinline__ void constant_row(const Source& in, RawRow& raw) {
    const std::uint32_t v = in.border.value * 0x01010101u;
    raw.w = make_uint4(v, v, v, v);
    raw.lo = raw.hi = v;  // the halo too: v shifted is v in every byte it keeps
}

// The rows of a walk, in walk order. Interior walks (every row inside the image) move a pointer by
// one pitch per row; the others map each row by the border rule.
template <bool Interior>
struct RowCursor;

template <>
struct RowCursor<true> {
    const std::uint8_t* row;
    std::ptrdiff_t delta;  // +-pitch
    __device__ __forceinline__ RowCursor(const Source& in, int y, int step)
        : row(in.data + static_cast<std::size_t>(y) * in.pitch),
          delta(step > 0 ? static_cast<std::ptrdiff_t>(in.pitch) : -static_cast<std::ptrdiff_t>(in.pitch)) {}
    __device__ __forceinline__ void load_next(const Source&, int e_load, const HaloSource& halo, RawRow& raw) {
        load_row(row, e_load, halo, raw);
        row += delta;
    }
    // Asks L2 for the thread's 16 bytes of the row `rows_on` after the next one (no register waits for it).
    __device__ __forceinline__ void prefetch(int e_load, int rows_on) const {
        asm volatile("prefetch.global.L2 [%0];" ::"l"(row + rows_on * delta + e_load));
    }
};

template <>
struct RowCursor<false> {
    int y, step;
    __device__ __forceinline__ RowCursor(const Source&, int y_, int step_) : y(y_), step(step_) {}
    __device__ __forceinline__ void load_next(const Source& in, int e_load, const HaloSource& halo, RawRow& raw) {
        const int sy = rows::row_index(y, in.height, in.border.mode);
        if (sy < 0) {
            constant_row(in, raw);
        } else {
            load_row(in.data + static_cast<std::size_t>(sy) * in.pitch, e_load, halo, raw);
        }
        y += step;
    }
};

// The row's elements as fp32: x[S + k] = byte k of the thread's 16, x[0 .. S) the S before them,
// x[16 + S ..] the S after them (from the neighbouring lanes, or the lane's memory halo).
template <int S>
__device__ __forceinline__ void window_row(const RawRow& raw, const HaloSource& halo, float (&x)[kElements + 2 * S]) {
    const std::uint32_t w[4] = {raw.w.x, raw.w.y, raw.w.z, raw.w.w};
    const std::uint32_t before_lane = __shfl_up_sync(kFullMask, w[3], 1);  // its top S bytes
    const std::uint32_t after_lane = __shfl_down_sync(kFullMask, w[0], 1);  // its low S bytes
    const std::uint32_t bytes =
        (static_cast<std::uint32_t>((static_cast<std::uint64_t>(raw.hi) << 32 | raw.lo) >> halo.shift) & halo.keep) | halo.fill;
    const std::uint32_t before = halo.left ? bytes << (8 * (4 - S)) : before_lane;
    const std::uint32_t after = halo.right ? bytes : after_lane;
#pragma unroll
    for (int k = 0; k < S; ++k) x[k] = rows::byte_to_float(before, 4 - S + k);
#pragma unroll
    for (int k = 0; k < kElements; ++k) x[S + k] = rows::byte_to_float(w[k / 4], k % 4);
#pragma unroll
    for (int k = 0; k < S; ++k) x[kElements + S + k] = rows::byte_to_float(after, k);
}

// The three accumulator rows of a thread: at phase P, acc[P] is the output row this input row
// completes (it takes walk-tap row 2), acc[P + 1] the one it continues (row 1), acc[P + 2] the one
// it starts (row 0). The next phase's roles are the same registers shifted by one.
template <int S, Arithmetic A, int Phase, bool Done, bool Mid, bool Fresh>
__device__ __forceinline__ void accumulate(float (&acc)[kSteps][kElements], const float (&x)[kElements + 2 * S],
                                           const WalkTaps<A>& t) {
    float(&done)[kElements] = acc[Phase % kSteps];
    float(&mid)[kElements] = acc[(Phase + 1) % kSteps];
    float(&fresh)[kElements] = acc[(Phase + 2) % kSteps];
#pragma unroll
    for (int k = 0; k < kElements; ++k) {
        if constexpr (A == Arithmetic::separable || A == Arithmetic::symmetric) {
            const float h = A == Arithmetic::symmetric ? fmaf(t.row[1], x[k + S], x[k] + x[k + 2 * S])
                                                       : fmaf(t.row[2], x[k + 2 * S], fmaf(t.row[1], x[k + S], t.row[0] * x[k]));
            if (Done) done[k] = fmaf(t.column[2], h, done[k]);
            if (Mid) mid[k] = fmaf(t.column[1], h, mid[k]);
            if (Fresh) fresh[k] = t.column[0] * h;
        } else if constexpr (A == Arithmetic::cross) {
            if (Done) done[k] = fmaf(t.m[2][1], x[k + S], done[k]);
            if (Mid) mid[k] = fmaf(t.m[1][2], x[k + 2 * S], fmaf(t.m[1][1], x[k + S], fmaf(t.m[1][0], x[k], mid[k])));
            if (Fresh) fresh[k] = t.m[0][1] * x[k + S];
        } else {
            if (Done) done[k] = fmaf(t.m[2][2], x[k + 2 * S], fmaf(t.m[2][1], x[k + S], fmaf(t.m[2][0], x[k], done[k])));
            if (Mid) mid[k] = fmaf(t.m[1][2], x[k + 2 * S], fmaf(t.m[1][1], x[k + S], fmaf(t.m[1][0], x[k], mid[k])));
            if (Fresh) fresh[k] = fmaf(t.m[0][2], x[k + 2 * S], fmaf(t.m[0][1], x[k + S], t.m[0][0] * x[k]));
        }
    }
}

__device__ __forceinline__ void store_row(const float (&acc)[kElements], bool active, std::uint8_t* dst) {
    uint4 v;
    v.x = rows::round_pack4(acc[0], acc[1], acc[2], acc[3]);
    v.y = rows::round_pack4(acc[4], acc[5], acc[6], acc[7]);
    v.z = rows::round_pack4(acc[8], acc[9], acc[10], acc[11]);
    v.w = rows::round_pack4(acc[12], acc[13], acc[14], acc[15]);
    if (active) __stcs(reinterpret_cast<uint4*>(dst), v);
}

// The register window over `rows` output rows of the thread's column, from y_first walking by step
// (+1 down, -1 up). Input row i of the walk (i = -1 .. rows) starts output row i + 1, continues
// row i and completes row i - 1. Interior: every row the walk reads lies inside the image, also
// row rows + 1, which the last group loads without a test (and nobody uses), and rows = 3n + 2, so
// that the steps i = 1 .. rows - 2 are whole unrolled groups of three and the last two (which
// complete the strip and start nothing) end the walk at phase 2. Other walks (the strips at the top
// and bottom, any row count) run whole groups, load what they use and stop after row `rows`.
template <int S, Arithmetic A, bool Interior>
__device__ __forceinline__ void window_strip(const Source& in, std::uint8_t* out_column, std::size_t out_pitch,
                                             const Taps3x3& taps, int lane, int e, int y_first, int rows, int step) {
    const bool active = e < in.elements;
    const int e_load = active ? e : 0;
    const HaloSource halo = halo_source<S>(in, lane, e, e_load, active);
    const WalkTaps<A> t(taps, step > 0);
    RowCursor<Interior> cursor(in, y_first - step, step);
    std::uint8_t* dst = out_column + static_cast<std::size_t>(y_first) * out_pitch;
    const std::ptrdiff_t dst_delta = step > 0 ? static_cast<std::ptrdiff_t>(out_pitch) : -static_cast<std::ptrdiff_t>(out_pitch);
    float acc[kSteps][kElements];
    {
        RawRow raw{};
        float x[kElements + 2 * S];
        cursor.load_next(in, e_load, halo, raw);  // i = -1
        window_row<S>(raw, halo, x);
        accumulate<S, A, 1, false, false, true>(acc, x, t);
        cursor.load_next(in, e_load, halo, raw);  // i = 0
        window_row<S>(raw, halo, x);
        accumulate<S, A, 2, false, true, true>(acc, x, t);
    }
    RawRow ahead[kSteps] = {};  // ahead[p] holds input row i of the step at phase p; refilled 3 rows on
#pragma unroll
    for (int p = 0; p < kSteps; ++p) {
        if (Interior || p + 1 <= rows) cursor.load_next(in, e_load, halo, ahead[p]);
    }
    const int full_steps_end = Interior ? rows - 2 : rows;  // the last i of the unrolled groups
#pragma unroll 1
    for (int i = 1; i <= full_steps_end; i += kSteps) {
        const auto one_step = [&](auto phase) {
            constexpr int P = decltype(phase)::value;
            float x[kElements + 2 * S];
            window_row<S>(ahead[P], halo, x);
            if constexpr (Interior) {  // asks L2 for row i + P + 3 + kPrefetch, if the walk reads it
                if (i + P + kSteps + kPrefetch <= rows) cursor.prefetch(e_load, kPrefetch);
            }
            if (Interior || i + P + kSteps <= rows) cursor.load_next(in, e_load, halo, ahead[P]);
            accumulate<S, A, P, true, true, true>(acc, x, t);
            store_row(acc[P], active, dst);
            dst += dst_delta;
        };
        one_step(std::integral_constant<int, 0>{});
        if (!Interior && i + 1 > rows) break;
        one_step(std::integral_constant<int, 1>{});
        if (!Interior && i + 2 > rows) break;
        one_step(std::integral_constant<int, 2>{});
    }
    if constexpr (Interior) {  // i = rows - 1 (phase 0) and i = rows (phase 1)
        float x[kElements + 2 * S];
        window_row<S>(ahead[0], halo, x);
        accumulate<S, A, 0, true, true, false>(acc, x, t);
        store_row(acc[0], active, dst);
        dst += dst_delta;
        window_row<S>(ahead[1], halo, x);
        accumulate<S, A, 1, true, false, false>(acc, x, t);
        store_row(acc[1], active, dst);
    }
}

// A strip the window cannot take (rows not aligned for the 16-byte accesses, a row length that is
// no multiple of 16 bytes, a warp with one lane inside the row): each output element from its nine
// samples, the border rule for each (the mask's own taps: within the tie bound of either path).
template <int S>
__device__ __noinline__ void elementwise_strip(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, const Taps3x3& taps,
                                               Border border, int plane, int e, int y_begin, int y_end) {
    const int elements = in.shape.row_elements();
    for (int y = y_begin; y < y_end; ++y) {
#pragma unroll 1
        for (int k = e; k < min(e + kElements, elements); ++k) {
            const int x = k / S;
            const int c = S == 1 ? plane : k % S;
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < 3; ++j)
#pragma unroll
                for (int i = 0; i < 3; ++i) sum = fmaf(taps.m[3 * j + i], static_cast<float>(sample(in, x + i - 1, y + j - 1, c, border)), sum);
            out.row(y, plane)[k] = saturate_round_u8(sum);
        }
    }
}

// One block of up to 512 threads per SM at least: up to 128 registers, so that three accumulator
// rows, the row being converted and three rows in flight never spill.
template <int S, Arithmetic A>
__global__ void __launch_bounds__(kMaxBlockThreads, 1)
    conv_shuffle_window_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Taps3x3 taps, Border border, int rows) {
    const int lane = static_cast<int>(threadIdx.x) % kWarp;
    const int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * kElements;
    const int strip = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    const int plane = static_cast<int>(blockIdx.z);
    const int height = in.shape.height;
    const int elements = in.shape.row_elements();
    const int y_begin = strip * rows;
    const int warp_e = e - lane * kElements;
    if (y_begin >= height || warp_e >= elements) return;  // the whole warp (its lanes share threadIdx.y)
    const int y_end = min(y_begin + rows, height);
    const bool windowed = elements % kElements == 0 && warp_e + kElements < elements &&
                          (reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % 16 == 0 &&
                          (reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % 16 == 0;
    if (!windowed) {
        if (e < elements) elementwise_strip<S>(in, out, taps, border, plane, e, y_begin, y_end);
        return;
    }
    const Source source{in.row(0, plane), in.pitch_bytes, height, in.shape.width, elements, border};
    std::uint8_t* out_column = out.row(0, plane) + e;
    const bool down = strip % 2 == 0;  // strips walk down and up in turn
    const int y_first = down ? y_begin : y_end - 1;
    const int step = down ? 1 : -1;
    if (y_begin >= 2 && y_end + 2 <= height && y_end - y_begin == rows) {
        window_strip<S, A, true>(source, out_column, out.pitch_bytes, taps, lane, e, y_first, rows, step);
    } else {
        window_strip<S, A, false>(source, out_column, out.pitch_bytes, taps, lane, e, y_first, y_end - y_begin, step);
    }
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, Taps3x3, Border, int);

template <Arithmetic A>
Kernel kernel_by_stride(int stride) {
    return by_channels<Kernel>(stride, &conv_shuffle_window_kernel<1, A>, &conv_shuffle_window_kernel<3, A>,
                               &conv_shuffle_window_kernel<4, A>);
}

constexpr int kStripRows[] = {2, 5, 8, 14, 20, 32};  // 3n + 2

// The cheapest arithmetic that applies `mask`: a cross where the corners are zero (also every 1x3
// and 3x1 mask, exactly), the factors of a rank-1 mask (1, s / r, 1 for a symmetric row r, s, r),
// else all nine taps.
struct MaskPlan {
    Arithmetic arithmetic;
    Taps3x3 taps;
    double coefficient_error;
};

MaskPlan plan_mask(const Mask& mask) {
    MaskPlan plan{Arithmetic::full, {}, 0.0};
    const rows::Taps2D<1> padded = rows::taps_2d<1>(mask);  // zero-padded to 3x3 around the centre
    const float* m = padded.m;
    std::copy(m, m + 9, plan.taps.m);
    if (m[0] == 0.0f && m[2] == 0.0f && m[6] == 0.0f && m[8] == 0.0f) {
        plan.arithmetic = Arithmetic::cross;
        return plan;
    }
    std::optional<SeparableFactors> factors = separable_variant_factors(mask);
    if (!factors) return plan;
    // Corners are not all zero: the mask is 3x3 and so are its factors.
    std::vector<float>& row = factors->row;
    std::vector<float>& column = factors->column;
    plan.arithmetic = Arithmetic::separable;
    if (row[0] == row[2] && row[0] != 0.0f) {
        plan.arithmetic = Arithmetic::symmetric;
        for (float& c : column) c *= row[0];
        row = {1.0f, row[1] / row[0], 1.0f};
    }
    std::copy(row.begin(), row.end(), plan.taps.row);
    std::copy(column.begin(), column.end(), plan.taps.column);
    // The factors as applied (for symmetric rows: 1, s / r, 1 and the columns times r), each an
    // FMA chain (left + right is the chain 1 * left + 1 * right).
    plan.coefficient_error = separable_coefficient_error(mask, *factors);
    return plan;
}

Kernel kernel_for(const Problem& problem, Arithmetic arithmetic) {
    const int stride = rows::element_stride(problem.shape);
    switch (arithmetic) {
        case Arithmetic::cross: return kernel_by_stride<Arithmetic::cross>(stride);
        case Arithmetic::separable: return kernel_by_stride<Arithmetic::separable>(stride);
        case Arithmetic::symmetric: return kernel_by_stride<Arithmetic::symmetric>(stride);
        case Arithmetic::full: break;
    }
    return kernel_by_stride<Arithmetic::full>(stride);
}

class ConvShuffleWindow final : public Variant {
public:
    std::string name() const override { return "conv.shuffle_window"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "masks up to 3x3: 16 bytes x a strip of rows per thread, the window in registers, halo by warp shuffle, "
               "no shared memory; zero corner taps skipped, rank-1 masks as row and column passes";
    }
    Support supports(const Problem& problem) const override {
        const Mask& mask = *problem.mask;
        if (mask.width() > 3 || mask.height() > 3) {
            return Support::no(fmt::format("masks up to 3x3: {} is {}x{} (three rows of 16 accumulators per thread; "
                                           "conv.register_window takes up to 9x9)",
                                           mask.name(), mask.width(), mask.height()));
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x = {32, 64, 128};
        space.block_y = {1, 2, 4};
        space.parameters = {{"rows", std::vector<int>(std::begin(kStripRows), std::end(kStripRows)),
                             "output rows per thread (3n + 2), walked top to bottom or bottom to top"}};
        space.default_shape = LaunchShape{64, 2, {{"rows", 20}}};
        return space;
    }
    // 64x2 threads, and the tallest strips (up to 20 rows) that still give every SM of a 132-SM GPU
    // 16 warps: 8K takes 20 rows, HD 5, 480p 2.
    LaunchShape default_shape(const Problem& problem) const override {
        LaunchShape shape = tuning_space().default_shape;
        const int rows = warp_strips::filling_strip_rows(problem.shape, kElements,
                                                         std::vector<int>(std::begin(kStripRows), std::end(kStripRows)), 20);
        shape.parameters = {{"rows", rows}};
        return shape;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        if (Support block = warp_strips::check_block(shape, kMaxBlockThreads); !block) return block;
        const int rows = shape.parameter("rows");
        if (rows < 2 || rows % 3 != 2) {
            return Support::no(fmt::format("rows={}: output rows per thread are 3n + 2 (2, 5, 8, 11, ...), so that the "
                                           "three accumulator rows end where they began",
                                           rows));
        }
        return Support::yes();
    }
    double coefficient_error(const Problem& problem) const override { return plan_mask(*problem.mask).coefficient_error; }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const ImageShape& s = problem.shape;
        const dim3 grid(grid_side(s.row_elements(), shape.block_x * kElements),
                        grid_side(s.height, shape.block_y * shape.parameter("rows")),
                        s.layout == Layout::aos ? 1u : static_cast<unsigned>(s.channels));
        return {make_launch(kernel_for(problem, plan_mask(*problem.mask).arithmetic), "conv_shuffle_window_kernel", grid,
                            block_of(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const MaskPlan mask = plan_mask(*plan.problem.mask);
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem, mask.arithmetic), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), mask.taps, plan.problem.border, plan.shape.parameter("rows"));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvShuffleWindow)
