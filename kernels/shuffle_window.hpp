// The register window of the shuffle variants (conv.shuffle_window in fp32 up to 3x3,
// conv.packed_window in 16-bit integer lanes up to 5x5): how a thread walks its strip, whatever
// arithmetic it does on the way, for a mask of radius R (1 or 2: a 3x3 or 5x5 window).
//
// Each thread owns 16 consecutive bytes (elements) of a stored row and walks down (or up: strips
// alternate, so that two strips read the rows they share at about the same time, the second from
// L2) a strip of `rows` rows. A row of the strip is one 16-byte load, issued K = 2R + 1 rows ahead
// of the row being computed; interior walks also ask L2 for the row four further on. The R S
// elements the mask reaches beyond the thread's 16 on each side (S = 1 gray or SoA, 3 RGB, 4 RGBA;
// at most 8) come from the neighbouring lanes' words by shuffles (one word each side, two where
// R S > 4); lanes at the ends of a warp's run read theirs from memory, R chunks of S elements, each
// from the aligned words holding it, at a column the border rule maps once per strip (per pixel:
// at the image's edges the R pixels beyond it need not lie side by side in memory, as under the
// mirror rule). K rows of accumulators rotate by renaming over an unrolled step of K rows; outputs
// are 16-byte streaming stores (evict-first in L2, so that the input rows a neighbouring strip
// reads stay there). Strips the window cannot take (odd pitches, rows of no multiple of 16 bytes,
// a warp with one lane inside the row) compute each output from its K x K samples in fp32.
//
// The arithmetic is a policy type A<S> (S the element stride) with:
//   kRadius                     R
//   Taps                        the kernel argument (the mask as the arithmetic applies it)
//   Walk(taps, down)            the taps in walk order (row 0 is the one an output row meets first)
//   Row                         one input row as the arithmetic reads it
//   Accumulators                the K output rows being summed
//   window_row(raw, before, after, row)              the thread's 16 bytes and its R S-element halos
//   accumulate<Phase, First, Last>(acc, row, walk)  for d = First .. Last, acc row (P + d) mod K takes
//                               walk-tap row K - 1 - d: d = 0 completes its output row, d = 2R
//                               starts one (the walk asks for the d its output rows need)
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
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/numeric.hpp"
#include "harness/row_stream.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"
#include "harness/warp_strips.hpp"

namespace klab::shuffle_window {

constexpr int kElements = 16;  // consecutive bytes of a row per thread: one 16-byte load
constexpr int kWarp = 32;
constexpr int kMaxBlockThreads = 512;
constexpr int kMaxRadius = 2;
// Rows per unrolled step of a radius-R window: the accumulator rows and the rows in flight.
template <int R>
constexpr int kSteps = 2 * R + 1;
constexpr int kPrefetch = 4;   // interior walks also ask L2 for the row this many beyond those in flight
constexpr unsigned kFullMask = 0xffffffffu;

// The R S halo elements on one side of a thread's 16 as one value: a word, or two where they need
// more than four bytes (R = 2 and S > 2).
template <int S, int R>
using HaloBits = std::conditional_t<(R * S <= 4), std::uint32_t, std::uint64_t>;

// One plane of the input as the window reads it.
struct Source {
    const std::uint8_t* data;  // row 0 of the plane
    std::size_t pitch;
    int height;
    int width;
    int elements;  // of a stored row
    Border border;
};

// Where a lane's outer halo comes from in every row: lane 0 needs the R S elements left of its 16,
// the last lane inside the row (or lane 31) the R S right of them; the others get theirs by shuffle.
// The halo is R chunks of S elements (chunk 0 the leftmost), each found once per strip: inside the
// row, the S elements beside the previous chunk; beyond the row's ends, the pixel the border rule
// maps the column to (under mirror or reflect the chunks then lie in the opposite order in memory).
// Chunk k's bytes start at bit `shift[k]` of the aligned words at bytes `lo[k]` and `hi[k]` of each
// row (hi = lo + 4 where the bytes reach into the next word), masked by `keep[k]` (its S bytes) and
// or-ed with `fill[k]` (a constant border's pixel: keep 0, fill its value). Every lane reads every
// chunk's words in every row (lanes without a memory halo their own first word, an L1 hit), so
// that the loads need no branch.
template <int R>
struct HaloSource {
    bool left, right;  // the lane takes its left / right halo from memory
    int lo[R], hi[R];
    int shift[R];
    std::uint32_t keep[R], fill[R];
};

// The halo set-up below is written without loops (pack expansions instead): with a loop around the
// constant border's early exit, or around the first assignment of the chunks, ptxas gave the 3x3
// kernels 5 to 7 more registers and a different schedule, and they ran 8% slower (H200; see
// kernels/notes/conv_packed_window.md).

// A lane's halo source before the lane is known to need one: every chunk its own first word.
// ((void)K, value) repeats the value once per chunk: the pack gives the count, and the cast says that
// K's own value is not used.
template <int R, int... K>
__device__ __forceinline__ HaloSource<R> unread_halo(int e_load, std::uint32_t keep, std::integer_sequence<int, K...>) {
    return HaloSource<R>{false, false, {((void)K, e_load)...}, {((void)K, e_load)...}, {((void)K, 0)...}, {((void)K, keep)...},
                         {((void)K, 0u)...}};
}

// A constant border's halo: every chunk the border's value.
template <int R, int... K>
__device__ __forceinline__ void constant_halo(HaloSource<R>& h, std::uint32_t value, std::integer_sequence<int, K...>) {
    ((h.keep[K] = 0u, h.fill[K] = value), ...);
}

// Where chunk k of the lane's memory halo comes from (left: the R S elements before its 16; right:
// those after them). False where the border is constant: no chunk beyond the row's end is then
// read, and every one takes the border's value.
template <int S, int R>
__device__ __forceinline__ bool chunk_source(const Source& in, int e, int k, std::uint32_t chunk_bytes, HaloSource<R>& h) {
    int first;  // the chunk's first byte in the row
    if (h.left ? e > 0 : e + kElements < in.elements) {
        first = h.left ? e - S * (R - k) : e + kElements + S * k;  // R S elements inside the row
    } else {
        // A pixel left of the row (e == 0) or right of it (the row has a multiple of 16 bytes).
        const int sx = border_index(h.left ? k - R : in.width + k, in.width, in.border.mode);
        if (sx < 0) {
            constant_halo(h, in.border.value * 0x01010101u & chunk_bytes, std::make_integer_sequence<int, R>{});
            return false;
        }
        first = sx * S;
    }
    h.lo[k] = first & ~3;
    h.hi[k] = (first & 3) + S > 4 ? h.lo[k] + 4 : h.lo[k];
    h.shift[k] = 8 * (first & 3);
    return true;
}

// Chunks K... in order, until the border turns out constant.
template <int S, int R, int... K>
__device__ __forceinline__ void chunk_sources(const Source& in, int e, std::uint32_t chunk_bytes, HaloSource<R>& h,
                                              std::integer_sequence<int, K...>) {
    static_cast<void>((chunk_source<S, R>(in, e, K, chunk_bytes, h) && ...));
}

template <int S, int R>
__device__ __forceinline__ HaloSource<R> halo_source(const Source& in, int lane, int e, int e_load, bool active) {
    // A chunk's S bytes; a single chunk's bytes beyond them are never read, so it is not masked.
    constexpr std::uint32_t kChunkBytes = R == 1 || S == 4 ? ~0u : (1u << (8 * S)) - 1u;
    HaloSource<R> h = unread_halo<R>(e_load, kChunkBytes, std::make_integer_sequence<int, R>{});
    h.left = active && lane == 0;
    h.right = active && !h.left && (lane == kWarp - 1 || e + kElements >= in.elements);
    if (!h.left && !h.right) return h;
    chunk_sources<S, R>(in, e, kChunkBytes, h, std::make_integer_sequence<int, R>{});
    return h;
}

// One row of a thread: its 16 bytes and the two words of each chunk of its memory halo.
template <int R>
struct RawRow {
    uint4 w;
    std::uint32_t lo[R], hi[R];
};

// Unconditional loads (a lane outside the row reads the row's first 16 bytes): a predicated load
// would make the compiler copy the old registers around it.
template <int R>
__device__ __forceinline__ void load_row(const std::uint8_t* row, int e_load, const HaloSource<R>& halo, RawRow<R>& raw) {
    raw.w = __ldg(reinterpret_cast<const uint4*>(row + e_load));
#pragma unroll
    for (int k = 0; k < R; ++k) {
        raw.lo[k] = __ldg(reinterpret_cast<const std::uint32_t*>(row + halo.lo[k]));
        raw.hi[k] = __ldg(reinterpret_cast<const std::uint32_t*>(row + halo.hi[k]));
    }
}

// A constant border's row outside the image: the value in every byte.
template <int R>
__device__ __forceinline__ void constant_row(const Source& in, RawRow<R>& raw) {
    const std::uint32_t v = in.border.value * 0x01010101u;
    raw.w = make_uint4(v, v, v, v);
#pragma unroll
    for (int k = 0; k < R; ++k) raw.lo[k] = raw.hi[k] = v;  // the halo too: v shifted is v in every byte it keeps
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
    template <int R>
    __device__ __forceinline__ void load_next(const Source&, int e_load, const HaloSource<R>& halo, RawRow<R>& raw) {
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
    template <int R>
    __device__ __forceinline__ void load_next(const Source& in, int e_load, const HaloSource<R>& halo, RawRow<R>& raw) {
        const int sy = rows::row_index(y, in.height, in.border.mode);
        if (sy < 0) {
            constant_row(in, raw);
        } else {
            load_row(in.data + static_cast<std::size_t>(sy) * in.pitch, e_load, halo, raw);
        }
        y += step;
    }
};

// The elements around the thread's 16 bytes: `before` holds the R S elements left of them in its top
// R S bytes, `after` the R S right of them in its low R S bytes (from the neighbouring lanes by
// shuffle, or from the lane's memory halo).
template <int S, int R>
__device__ __forceinline__ void halo_words(const RawRow<R>& raw, const HaloSource<R>& halo, HaloBits<S, R>& before,
                                           HaloBits<S, R>& after) {
    using Bits = HaloBits<S, R>;
    Bits before_lane, after_lane;  // the neighbouring lanes' top and low words
    if constexpr (sizeof(Bits) == 4) {
        before_lane = __shfl_up_sync(kFullMask, raw.w.w, 1);
        after_lane = __shfl_down_sync(kFullMask, raw.w.x, 1);
    } else {
        before_lane = static_cast<Bits>(__shfl_up_sync(kFullMask, raw.w.w, 1)) << 32 | __shfl_up_sync(kFullMask, raw.w.z, 1);
        after_lane = static_cast<Bits>(__shfl_down_sync(kFullMask, raw.w.y, 1)) << 32 | __shfl_down_sync(kFullMask, raw.w.x, 1);
    }
    Bits bytes = 0;  // the memory halo's chunks side by side, chunk 0 in the low bytes
#pragma unroll
    for (int k = 0; k < R; ++k) {
        const std::uint32_t chunk =
            (static_cast<std::uint32_t>((static_cast<std::uint64_t>(raw.hi[k]) << 32 | raw.lo[k]) >> halo.shift[k]) & halo.keep[k]) |
            halo.fill[k];
        bytes |= static_cast<Bits>(chunk) << (8 * S * k);
    }
    before = halo.left ? bytes << (8 * (static_cast<int>(sizeof(Bits)) - R * S)) : before_lane;
    after = halo.right ? bytes : after_lane;
}

// Steps P .. K - 1 of an unrolled group, in order; false, before the step, where `goes_on` says the
// walk has ended.
template <int P, int K, class Step, class GoesOn>
__device__ __forceinline__ bool group_steps(const Step& step, const GoesOn& goes_on) {
    step(std::integral_constant<int, P>{});
    if constexpr (P + 1 < K) {
        if (!goes_on(P + 1)) return false;
        return group_steps<P + 1, K>(step, goes_on);
    } else {
        return true;
    }
}

// Calls f(std::integral_constant<int, P>) for P = 0, 1, ... in order while it returns true.
template <class F, int... P>
__device__ __forceinline__ void phases(F&& f, std::integer_sequence<int, P...>) {
    (f(std::integral_constant<int, P>{}) && ...);
}

// The register window over `rows` output rows of the thread's column, from y_first walking by step
// (+1 down, -1 up). Input row i of the walk (i = -R .. rows - 1 + R) adds to output rows i - R ..
// i + R: it completes row i - R and starts row i + R. Its phase is (i - R) mod K, so that the
// unrolled steps of K rows start at i = R, the first to complete an output row. Interior: every
// row the walk reads lies inside the image, also row rows + R, which the last group loads without
// a test (and nobody uses), and rows = K n + 2R, so that the steps i = R .. rows - 1 - R are whole
// unrolled groups and the last 2R (which complete the strip and start nothing) end the walk at
// phase 2R - 1. Other walks (the strips at the top and bottom, any row count) run whole groups,
// load what they use and stop after row rows - 1 + R.
template <int S, class A, bool Interior>
__device__ __forceinline__ void window_strip(const Source& in, std::uint8_t* out_column, std::size_t out_pitch,
                                             const typename A::Taps& taps, int lane, int e, int y_first, int rows, int step) {
    constexpr int R = A::kRadius;
    constexpr int K = kSteps<R>;
    const bool active = e < in.elements;
    const int e_load = active ? e : 0;
    const HaloSource<R> halo = halo_source<S, R>(in, lane, e, e_load, active);
    const typename A::Walk t(taps, step > 0);
    RowCursor<Interior> cursor(in, y_first - R * step, step);
    std::uint8_t* dst = out_column + static_cast<std::size_t>(y_first) * out_pitch;
    const std::ptrdiff_t dst_delta = step > 0 ? static_cast<std::ptrdiff_t>(out_pitch) : -static_cast<std::ptrdiff_t>(out_pitch);
    const auto row_of = [&](const RawRow<R>& raw, typename A::Row& x) {
        HaloBits<S, R> before, after;
        halo_words<S, R>(raw, halo, before, after);
        A::window_row(raw, before, after, x);
    };
    const int last_input = rows - 1 + R;  // the last input row i of the walk
    typename A::Accumulators acc;
    // i = -R .. R - 1 (q = i + R): phases 1 .. 2R, adding to the output rows from 0 on.
    phases(
        [&](auto q) {
            constexpr int Q = decltype(q)::value;
            RawRow<R> raw{};
            typename A::Row x;
            cursor.load_next(in, e_load, halo, raw);
            row_of(raw, x);
            A::template accumulate<Q + 1, 2 * R - Q, 2 * R>(acc, x, t);
            return true;
        },
        std::make_integer_sequence<int, 2 * R>{});
    RawRow<R> ahead[K] = {};  // ahead[p] holds input row i of the step at phase p; refilled K rows on
#pragma unroll
    for (int p = 0; p < K; ++p) {
        if (Interior || R + p <= last_input) cursor.load_next(in, e_load, halo, ahead[p]);
    }
    const int full_steps_end = Interior ? rows - 1 - R : last_input;  // the last i of the unrolled groups
#pragma unroll 1
    for (int i = R; i <= full_steps_end; i += K) {
        const auto step = [&](auto phase) {
            constexpr int P = decltype(phase)::value;
            typename A::Row x;
            row_of(ahead[P], x);
            if constexpr (Interior) {  // asks L2 for row i + P + K + kPrefetch, if the walk reads it
                if (i + P + K + kPrefetch <= last_input) cursor.prefetch(e_load, kPrefetch);
            }
            if (Interior || i + P + K <= last_input) cursor.load_next(in, e_load, halo, ahead[P]);
            A::template accumulate<P, 0, 2 * R>(acc, x, t);
            A::template store_row<P>(acc, active, dst);
            dst += dst_delta;
        };
        // Other walks end where their last input row is (a fold of the steps here instead cost the
        // 3x3 kernels 6 registers).
        if (!group_steps<0, K>(step, [&](int p) { return Interior || i + p <= last_input; })) break;
    }
    if constexpr (Interior) {  // i = rows - R .. rows - 1 + R: phases 0 .. 2R - 1, completing rows only
        phases(
            [&](auto q) {
                constexpr int Q = decltype(q)::value;
                typename A::Row x;
                row_of(ahead[Q], x);
                A::template accumulate<Q, 0, 2 * R - 1 - Q>(acc, x, t);
                A::template store_row<Q>(acc, active, dst);
                dst += dst_delta;
                return true;
            },
            std::make_integer_sequence<int, 2 * R>{});
    }
}

// A strip the window cannot take (rows not aligned for the 16-byte accesses, a row length that is
// no multiple of 16 bytes, a warp with one lane inside the row): each output element from its K x K
// samples in fp32, the border rule for each (the mask's own taps, zero-padded to K x K).
template <int S, int R>
__device__ __noinline__ void elementwise_strip(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out,
                                               const float (&m)[kSteps<R> * kSteps<R>], Border border, int plane, int e, int y_begin,
                                               int y_end) {
    constexpr int K = kSteps<R>;
    const int elements = in.shape.row_elements();
    for (int y = y_begin; y < y_end; ++y) {
#pragma unroll 1
        for (int k = e; k < min(e + kElements, elements); ++k) {
            const int x = k / S;
            const int c = S == 1 ? plane : k % S;
            float sum = 0.0f;
#pragma unroll
            for (int j = 0; j < K; ++j)
#pragma unroll
                for (int i = 0; i < K; ++i) sum = fmaf(m[K * j + i], static_cast<float>(sample(in, x + i - R, y + j - R, c, border)), sum);
            out.row(y, plane)[k] = saturate_round_u8(sum);
        }
    }
}

// The body of a kernel: thread (x, y) of the grid owns bytes 16x .. 16x + 15 of the rows of strip y
// of plane blockIdx.z.
template <int S, class A>
__device__ __forceinline__ void run_strip(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out,
                                          const float (&mask)[kSteps<A::kRadius> * kSteps<A::kRadius>], const typename A::Taps& taps,
                                          Border border, int rows) {
    constexpr int R = A::kRadius;
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
        if (e < elements) elementwise_strip<S, R>(in, out, mask, border, plane, e, y_begin, y_end);
        return;
    }
    const Source source{in.row(0, plane), in.pitch_bytes, height, in.shape.width, elements, border};
    std::uint8_t* out_column = out.row(0, plane) + e;
    const bool down = strip % 2 == 0;  // strips walk down and up in turn
    const int y_first = down ? y_begin : y_end - 1;
    const int step = down ? 1 : -1;
    // Interior: rows y_begin - R - 1 and y_end + R (the one loaded without a test) inside the image.
    if (y_begin >= R + 1 && y_end + R + 1 <= height && y_end - y_begin == rows) {
        window_strip<S, A, true>(source, out_column, out.pitch_bytes, taps, lane, e, y_first, rows, step);
    } else {
        window_strip<S, A, false>(source, out_column, out.pitch_bytes, taps, lane, e, y_first, y_end - y_begin, step);
    }
}

// Host side: the strip heights the variants tune over (K n + 2R for radius R, so that the K
// accumulator rows end where they began) and the launch geometry.
inline std::vector<int> strip_rows(int radius) {
    if (radius == 1) return {2, 5, 8, 14, 20, 32, 44, 62, 92};  // 3n + 2
    return {4, 9, 14, 19, 24, 34, 44, 64, 94};                  // 5n + 4
}

// The strip heights of every radius up to `max_radius`: each shape that check_shape() refuses for
// a problem's radius is left out of its tuning.
inline TuningSpace tuning_space(int max_radius) {
    std::vector<int> rows;
    for (int radius = 1; radius <= max_radius; ++radius) {
        const std::vector<int> r = strip_rows(radius);
        rows.insert(rows.end(), r.begin(), r.end());
    }
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    TuningSpace space;
    space.block_x = {32, 64, 128};
    space.block_y = {1, 2, 4};
    space.parameters = {{"rows", rows,
                         max_radius == 1 ? "output rows per thread (3n + 2), walked top to bottom or bottom to top"
                                         : "output rows per thread (3n + 2 for masks up to 3x3, 5n + 4 for 5x5), walked top to "
                                           "bottom or bottom to top"}};
    space.default_shape = LaunchShape{64, 2, {{"rows", 20}}};
    return space;
}

// The radius of the window a mask takes: 1 up to 3x3, 2 for 4 or 5 rows or columns.
inline int window_radius(const Mask& mask) { return std::max(mask.width(), mask.height()) > 3 ? 2 : 1; }

// 64x2 threads, and the tallest strips (up to 20 rows for 3x3, 24 for 5x5) that still give every SM
// of a 132-SM GPU 16 warps: 8K takes 20 rows, HD 5, 480p 2 (5x5: 24, 4, 4).
inline LaunchShape default_shape(const Problem& problem) {
    LaunchShape shape{64, 2, {}};
    const int radius = window_radius(*problem.mask);
    const int rows = warp_strips::filling_strip_rows(problem.shape, kElements, strip_rows(radius), radius == 1 ? 20 : 24);
    shape.parameters = {{"rows", rows}};
    return shape;
}

inline Support check_shape(const Problem& problem, const LaunchShape& shape) {
    if (Support block = warp_strips::check_block(shape, kMaxBlockThreads); !block) return block;
    const int rows = shape.parameter("rows");
    const int radius = window_radius(*problem.mask);
    const int steps = 2 * radius + 1;
    if (rows < 2 * radius || rows % steps != 2 * radius) {
        const int first = 2 * radius;
        return Support::no(fmt::format("rows={}: output rows per thread are {}n + {} ({}, {}, {}, {}, ...) for {} masks, so that the "
                                       "{} accumulator rows end where they began",
                                       rows, steps, first, first, first + steps, first + 2 * steps, first + 3 * steps,
                                       radius == 1 ? "3x3 and smaller" : "5x5", steps));
    }
    return Support::yes();
}

inline dim3 grid(const ImageShape& s, const LaunchShape& shape) {
    return dim3(grid_side(s.row_elements(), shape.block_x * kElements), grid_side(s.height, shape.block_y * shape.parameter("rows")),
                s.layout == Layout::aos ? 1u : static_cast<unsigned>(s.channels));
}

}  // namespace klab::shuffle_window
