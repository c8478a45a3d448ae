// The register window of the 3x3 shuffle variants (conv.shuffle_window in fp32, conv.packed_window
// in 16-bit integer lanes): how a thread walks its strip, whatever arithmetic it does on the way.
//
// Each thread owns 16 consecutive bytes (elements) of a stored row and walks down (or up: strips
// alternate, so that two strips read the rows they share at about the same time, the second from
// L2) a strip of `rows` rows. A row of the strip is one 16-byte load, issued three rows ahead of
// the row being computed; interior walks also ask L2 for the row four further on. The S elements
// the mask reaches beyond the thread's 16 on each side (S = 1 gray or SoA, 3 RGB, 4 RGBA) come from
// the neighbouring lanes' words by two shuffles; lanes at the ends of a warp's run read theirs from
// the aligned word(s) holding them, at a column the border rule maps once per strip. Three rows of
// accumulators rotate by renaming over an unrolled step of three rows; outputs are 16-byte
// streaming stores (evict-first in L2, so that the input rows a neighbouring strip reads stay
// there). Strips the window cannot take (odd pitches, rows of no multiple of 16 bytes, a warp with
// one lane inside the row) compute each output from its nine samples in fp32.
//
// The arithmetic is a policy type A<S> (S the element stride) with:
//   Taps                        the kernel argument (the mask as the arithmetic applies it)
//   Walk(taps, down)            the taps in walk order (row 0 is the one an output row meets first)
//   Row                         one input row as the arithmetic reads it
//   Accumulators                the three output rows being summed
//   window_row(raw, before, after, row)              the thread's 16 bytes and its S-element halos
//   accumulate<Phase, Done, Mid, Fresh>(acc, row, walk)  at phase P, acc row P takes walk-tap row 2
//                               (it completes), row P + 1 row 1, row P + 2 row 0 (it starts)
//   store_row<Phase>(acc, active, dst)               round acc row P to bytes and store them
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every kernel
// file that includes it, so a change to its code makes their tuning records stale (its comment-only
// lines do not count).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/numeric.hpp"
#include "harness/row_stream.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"
#include "harness/warp_strips.hpp"

namespace klab::shuffle_window {

constexpr int kElements = 16;  // consecutive bytes of a row per thread: one 16-byte load
constexpr int kWarp = 32;
constexpr int kMaxBlockThreads = 512;
constexpr int kSteps = 3;      // rows per unrolled step: the accumulator rows and the rows in flight
constexpr int kPrefetch = 4;   // interior walks also ask L2 for the row this many beyond those in flight
constexpr unsigned kFullMask = 0xffffffffu;

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

// The words around the thread's 16 bytes: `before` holds the S elements left of them in its top S
// bytes, `after` the S right of them in its low S bytes (from the neighbouring lanes by shuffle, or
// from the lane's memory halo).
template <int S>
__device__ __forceinline__ void halo_words(const RawRow& raw, const HaloSource& halo, std::uint32_t& before, std::uint32_t& after) {
    const std::uint32_t before_lane = __shfl_up_sync(kFullMask, raw.w.w, 1);  // its top S bytes
    const std::uint32_t after_lane = __shfl_down_sync(kFullMask, raw.w.x, 1);  // its low S bytes
    const std::uint32_t bytes =
        (static_cast<std::uint32_t>((static_cast<std::uint64_t>(raw.hi) << 32 | raw.lo) >> halo.shift) & halo.keep) | halo.fill;
    before = halo.left ? bytes << (8 * (4 - S)) : before_lane;
    after = halo.right ? bytes : after_lane;
}

// The register window over `rows` output rows of the thread's column, from y_first walking by step
// (+1 down, -1 up). Input row i of the walk (i = -1 .. rows) starts output row i + 1, continues
// row i and completes row i - 1. Interior: every row the walk reads lies inside the image, also
// row rows + 1, which the last group loads without a test (and nobody uses), and rows = 3n + 2, so
// that the steps i = 1 .. rows - 2 are whole unrolled groups of three and the last two (which
// complete the strip and start nothing) end the walk at phase 2. Other walks (the strips at the top
// and bottom, any row count) run whole groups, load what they use and stop after row `rows`.
template <int S, class A, bool Interior>
__device__ __forceinline__ void window_strip(const Source& in, std::uint8_t* out_column, std::size_t out_pitch,
                                             const typename A::Taps& taps, int lane, int e, int y_first, int rows, int step) {
    const bool active = e < in.elements;
    const int e_load = active ? e : 0;
    const HaloSource halo = halo_source<S>(in, lane, e, e_load, active);
    const typename A::Walk t(taps, step > 0);
    RowCursor<Interior> cursor(in, y_first - step, step);
    std::uint8_t* dst = out_column + static_cast<std::size_t>(y_first) * out_pitch;
    const std::ptrdiff_t dst_delta = step > 0 ? static_cast<std::ptrdiff_t>(out_pitch) : -static_cast<std::ptrdiff_t>(out_pitch);
    const auto row_of = [&](const RawRow& raw, typename A::Row& x) {
        std::uint32_t before, after;
        halo_words<S>(raw, halo, before, after);
        A::window_row(raw, before, after, x);
    };
    typename A::Accumulators acc;
    {
        RawRow raw{};
        typename A::Row x;
        cursor.load_next(in, e_load, halo, raw);  // i = -1
        row_of(raw, x);
        A::template accumulate<1, false, false, true>(acc, x, t);
        cursor.load_next(in, e_load, halo, raw);  // i = 0
        row_of(raw, x);
        A::template accumulate<2, false, true, true>(acc, x, t);
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
            typename A::Row x;
            row_of(ahead[P], x);
            if constexpr (Interior) {  // asks L2 for row i + P + 3 + kPrefetch, if the walk reads it
                if (i + P + kSteps + kPrefetch <= rows) cursor.prefetch(e_load, kPrefetch);
            }
            if (Interior || i + P + kSteps <= rows) cursor.load_next(in, e_load, halo, ahead[P]);
            A::template accumulate<P, true, true, true>(acc, x, t);
            A::template store_row<P>(acc, active, dst);
            dst += dst_delta;
        };
        one_step(std::integral_constant<int, 0>{});
        if (!Interior && i + 1 > rows) break;
        one_step(std::integral_constant<int, 1>{});
        if (!Interior && i + 2 > rows) break;
        one_step(std::integral_constant<int, 2>{});
    }
    if constexpr (Interior) {  // i = rows - 1 (phase 0) and i = rows (phase 1)
        typename A::Row x;
        row_of(ahead[0], x);
        A::template accumulate<0, true, true, false>(acc, x, t);
        A::template store_row<0>(acc, active, dst);
        dst += dst_delta;
        row_of(ahead[1], x);
        A::template accumulate<1, true, false, false>(acc, x, t);
        A::template store_row<1>(acc, active, dst);
    }
}

// A strip the window cannot take (rows not aligned for the 16-byte accesses, a row length that is
// no multiple of 16 bytes, a warp with one lane inside the row): each output element from its nine
// samples in fp32, the border rule for each (the mask's own taps, zero-padded to 3x3).
template <int S>
__device__ __noinline__ void elementwise_strip(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, const float (&m)[9],
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
                for (int i = 0; i < 3; ++i) sum = fmaf(m[3 * j + i], static_cast<float>(sample(in, x + i - 1, y + j - 1, c, border)), sum);
            out.row(y, plane)[k] = saturate_round_u8(sum);
        }
    }
}

// The body of a kernel: thread (x, y) of the grid owns bytes 16x .. 16x + 15 of the rows of strip y
// of plane blockIdx.z.
template <int S, class A>
__device__ __forceinline__ void run_strip(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, const float (&mask)[9],
                                          const typename A::Taps& taps, Border border, int rows) {
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
        if (e < elements) elementwise_strip<S>(in, out, mask, border, plane, e, y_begin, y_end);
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

// Host side: the strip heights both variants tune over and the launch geometry.
constexpr int kStripRows[] = {2, 5, 8, 14, 20, 32, 44, 62, 92};  // 3n + 2

inline TuningSpace tuning_space() {
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
inline LaunchShape default_shape(const Problem& problem) {
    LaunchShape shape = tuning_space().default_shape;
    const int rows = warp_strips::filling_strip_rows(problem.shape, kElements,
                                                     std::vector<int>(std::begin(kStripRows), std::end(kStripRows)), 20);
    shape.parameters = {{"rows", rows}};
    return shape;
}

inline Support check_shape(const LaunchShape& shape) {
    if (Support block = warp_strips::check_block(shape, kMaxBlockThreads); !block) return block;
    const int rows = shape.parameter("rows");
    if (rows < 2 || rows % 3 != 2) {
        return Support::no(fmt::format("rows={}: output rows per thread are 3n + 2 (2, 5, 8, 11, ...), so that the "
                                       "three accumulator rows end where they began",
                                       rows));
    }
    return Support::yes();
}

inline dim3 grid(const ImageShape& s, const LaunchShape& shape) {
    return dim3(grid_side(s.row_elements(), shape.block_x * kElements), grid_side(s.height, shape.block_y * shape.parameter("rows")),
                s.layout == Layout::aos ? 1u : static_cast<unsigned>(s.channels));
}

}  // namespace klab::shuffle_window
