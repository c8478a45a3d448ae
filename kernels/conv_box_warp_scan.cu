// conv.box_warp_scan — box filter of any odd size by exact integer sums, a warp per column span:
// column sums slide down in registers, row sums come from a warp-wide prefix exchanged by shuffles;
// no shared-memory round trip, no block barrier.
//
// Technique: out = round(m * S), S the integer sum under the box (kernels/box_sums.hpp), and S
// separates into column sums V (the box's height) summed along the row (its width). A warp owns a
// span of 512 bytes of a stored row (16 per lane) and writes the tile in its middle (the lanes
// whose 16 bytes lie at least rx + 1 pixels from the span's start and rx from its end), walking
// down a strip of `rows` rows (tuned; every other strip walks up, below):
//   columns: V slides down one row at a time in registers, two to a 32-bit word (16-bit lanes:
//            V <= 31 * 255 < 2^16, and V + new - old never borrows because V holds old): one
//            16-byte load of the entering row, one of the leaving row (read 2 * ry + 1 rows earlier:
//            an L1 or L2 hit), sixteen byte permutes and eight three-input adds per lane and row.
//            The next row's two loads are issued before this row's sums are worked out;
//   prefix:  P(j), the sum of V over the span's bytes up to j of j's channel: each lane's prefix of
//            its own 16 values (elements E apart, E the pixel's bytes), then the lanes' carries by
//            one warp scan of the lanes' per-channel totals (gray: one 32-bit value; RGB: three
//            21-bit fields of a 64-bit value, as a span's channel sums to at most 171 * 7905 < 2^21;
//            RGBA: two 64-bit values of two 32-bit fields);
//   rows:    S(j) = P(j + rx * E) - P(j - (rx + 1) * E), two shuffles per output byte whatever the
//            box's width. The offsets' in-lane part ((rx * E) mod 16) is a template argument (a
//            kernel per pixel size and in-lane offset: 16 + 16 + 4), so each shuffle reads a
//            register known when compiling; the lanes part is the shuffle's runtime source lane.
// The normalized box rounds with one multiply-high; other coefficients take the exact integer form
// of the reference's rounding (kernels/box_sums.hpp proves both exact), out of line.
// What it adds over conv.box_sliding_sums (the same column sums, but a block's warps meet at two
// barriers per group of rows, each group waiting for its slowest warp's loads, and every segment of
// the row pass starts with 2 * rx + 1 reads per channel) and conv.box_running_sums (a warp scan
// too, but its running sums go through a shared-memory row between two barriers, a kernel per rx,
// 100 registers): a warp needs no other warp and no shared memory on its way down, the row sums
// cost the same for every box width, and the next row's loads are in flight meanwhile.
// A strip's first 2 * ry + 1 rows (V of the row before its first) are read 8 at a time and added two
// rows per word, through the same loads as the walk's entering rows.
// Borders: rows outside the image are mapped per row (strips away from the top and bottom take a
// copy of the walk, first rows included, that steps row pointers instead); lanes whose 16 bytes
// reach outside the row, or all lanes where rows are not aligned for 16-byte loads, read byte by
// byte from offsets the border rule gives, worked out once per warp into shared memory (2 KB per
// warp).
// The strips share the image's rows evenly, none left short. Warps are numbered edge tiles first
// (box_span::warp_place: the first and the last tile of each strip, then the others), so that the
// slower warps whose lanes reach past the row's ends start in the grid's first wave, not its last.
// Odd strips walk up: walk row y is image row height - 1 - y, and the row pointers step by minus
// the pitch. A strip and its neighbour below then read the rows they share (2 * ry or 2 * ry + 2 of
// them, alternately) at about the same time, both at the ends of their walks or both at their
// starts, rather than one at its start and the other at its end, so that the second read is more
// often an L2 hit.
// Preconditions: box masks only — every coefficient equal (any odd width and height up to 31, any
// value; others are refused with that reason). Every border, 1/3/4 channels, AoS or SoA (one grid
// layer per plane), any pitch, any size. The block is 32 x N threads (N = 2, 4 or 8 warps, tuned),
// at most 80 registers (3 blocks of 8 warps per SM; 12 of the 36 kernels spill 4 to 12 bytes
// there, among them box9's, RGB of in-lane offset 12, but not box31's, offset 13). The span's
// helpers (the column slide, the bordered lanes' bytes, the stores, the other boxes' rounding, the
// tuning space) are kernels/box_span.hpp, shared with conv.box_warp_ring.
// The committed klab run at b793855 (results/nvidia-h200/, H200, L2 flushed, medians of 5): 8K RGB
// AoS box31 122.56 us at 32x4 rows=32 (2.58x the copy floor; npp.box 135x slower), box9 96.58 us
// (32x4 rows=32; conv.box_warp_ring 74.36), box3 90.94 us (32x2 rows=16).
// Where the time goes (Nsight Compute at the clocks klab-bench runs at, H200, 2026-11-30, 8K RGB
// box31, 32x4 rows=32, before odd strips walked up): 72.3 M warp instructions, issue slots 54% busy;
// at 100% of the issue slots those instructions would take 71 us: 1.3x needs both fewer
// instructions and the loads' latency hidden.
// Measurements, profiles and every form tried and dropped: kernels/notes/conv_box_warp_scan.md.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/box_span.hpp"
#include "kernels/box_sums.hpp"
#include "kernels/warp_scan.hpp"

namespace klab {
namespace {

using box_span::bordered_row;
using box_span::byte_pair;
using box_span::check_warp_span_shape;
using box_span::column_sources;
using box_span::kFullMask;
using box_span::kLaneBytes;
using box_span::kSpanBytes;
using box_span::kStripRows;
using box_span::kWarp;
using box_span::pack_bytes;
using box_span::rounded_word;
using box_span::slide_columns;
using box_span::span_bytes;
using box_span::store_span_bytes;
using box_span::warp_place;
using box_span::warp_span_tuning_space;
using box_sums::box_support;
using box_sums::planes_of;
using box_sums::rounding_of;
using box_sums::Rounding;

constexpr int kFirstBatch = 8;                // a strip's first rows: the loads of 8 rows at a time

// How a launch divides the image, the same for every warp.
struct Tiling {
    int first_lane;     // the first lane whose 16 bytes are output bytes: ceil((rx + 1) * E / 16)
    int tile_bytes;     // output bytes per warp and row: 16 * (its output lanes)
    int tiles;          // warps per stored row (the last one's tile may reach past the row)
    int strip_rows;     // output rows each warp walks down
    int strips;         // strips of the image
    int ry;             // the box's vertical radius
    int lead, trail;    // rx * E and (rx + 1) * E: S(j) = P(j + lead) - P(j - trail)
};

// Each warp's column sources (column_sources): 16 words per lane.
std::size_t shared_bytes(const LaunchShape& shape) { return static_cast<std::size_t>(shape.block_y) * kWarp * kLaneBytes * sizeof(int); }

Tiling tiling_of(int stride, int row_bytes, int height, int rx, int ry, int strip_rows) {
    Tiling t{};
    t.ry = ry;
    t.lead = rx * stride;
    t.trail = (rx + 1) * stride;
    t.first_lane = (t.trail + kLaneBytes - 1) / kLaneBytes;  // P(j - trail) of every output byte j lies in the span
    const int end_lane = (kSpanBytes - t.lead) / kLaneBytes;  // >= 28: rx * E <= 60
    t.tile_bytes = kLaneBytes * (end_lane - t.first_lane);
    t.tiles = static_cast<int>(grid_side(row_bytes, t.tile_bytes));
    t.strips = static_cast<int>(grid_side(height, strip_rows));
    t.strip_rows = static_cast<int>(grid_side(height, t.strips));  // the strips share the rows evenly
    return t;
}

// ---------------------------------------------------------------------------------------------
// The prefix

// P of the lane's 16 bytes, given its V: the lane's own prefix along each chain of elements E
// apart, plus the sums of the chain's channel over the lanes before it. `phase` is the channel of
// the lane's first byte (RGB only: a lane's 16 bytes start at a different channel in each of 3
// lanes; gray and RGBA spans start at channel 0).
template <int E>
__device__ __forceinline__ void span_prefix(const std::uint32_t (&v)[8], int lane, int phase, std::uint32_t (&p)[16]) {
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        const std::uint32_t value = (k & 1) ? v[k >> 1] >> 16 : v[k >> 1] & 0xffffu;
        p[k] = k >= E ? p[k - E] + value : value;
    }
    std::uint32_t carry[E];
    if constexpr (E == 1) {
        carry[0] = warp::exclusive_scan(p[15], lane);
    } else if constexpr (E == 3) {
        // Chain c (elements k = c mod 3) has channel (phase + c) mod 3; its total is p[15], p[13] or p[14].
        const unsigned long long t0 = p[15], t1 = p[13], t2 = p[14];
        const unsigned long long totals = phase == 0   ? t0 | t1 << 21 | t2 << 42
                                          : phase == 1 ? t2 | t0 << 21 | t1 << 42
                                                       : t1 | t2 << 21 | t0 << 42;
        const unsigned long long before = warp::exclusive_scan(totals, lane);
        const auto field = [&](int channel) { return static_cast<std::uint32_t>(before >> (21 * channel) & 0x1fffffu); };
        carry[0] = field(phase);
        carry[1] = field(phase == 2 ? 0 : phase + 1);
        carry[2] = field(phase == 0 ? 2 : phase - 1);
    } else {
        static_assert(E == 4, "1, 3 or 4 bytes per pixel");
        const unsigned long long low = warp::exclusive_scan(static_cast<unsigned long long>(p[12]) | static_cast<unsigned long long>(p[13]) << 32, lane);
        const unsigned long long high = warp::exclusive_scan(static_cast<unsigned long long>(p[14]) | static_cast<unsigned long long>(p[15]) << 32, lane);
        carry[0] = static_cast<std::uint32_t>(low), carry[1] = static_cast<std::uint32_t>(low >> 32);
        carry[2] = static_cast<std::uint32_t>(high), carry[3] = static_cast<std::uint32_t>(high >> 32);
    }
#pragma unroll
    for (int k = 0; k < 16; ++k) p[k] += carry[k % E];
}

// ---------------------------------------------------------------------------------------------
// The kernel

// V += a + b, two bytes per 16-bit lane of each word as slide_columns (a strip's first rows, where
// nothing leaves yet): a byte permute per word and row, a three-input add per word and two rows.
__device__ __forceinline__ void add_two_rows(std::uint32_t (&v)[8], uint4 a, uint4 b) {
#pragma unroll
    for (int w = 0; w < 8; ++w) v[w] = v[w] + byte_pair(a, w) + byte_pair(b, w);
}

// The output bytes of the lane's 16 bytes, S = P(j + rx * E) - P(j - (rx + 1) * E) rounded, four to
// a word.
template <int Lead, int TrailUp, bool Normalized>
__device__ __forceinline__ uint4 output_bytes(const std::uint32_t (&p)[16], int lead_lane, int trail_lane, const Rounding& rounding) {
    std::uint32_t words[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        std::uint32_t bytes[4];
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            const std::uint32_t lead = __shfl_sync(kFullMask, p[(4 * w + b + Lead) % 16], 4 * w + b + Lead < 16 ? lead_lane : lead_lane + 1);
            const std::uint32_t trail =
                __shfl_sync(kFullMask, p[(4 * w + b + TrailUp) % 16], 4 * w + b + TrailUp < 16 ? trail_lane : trail_lane + 1);
            bytes[b] = Normalized ? __umulhi(lead - trail + rounding.half, rounding.inverse) : lead - trail;
        }
        words[w] = Normalized ? pack_bytes(bytes[0], bytes[1], bytes[2], bytes[3]) : rounded_word(bytes[0], bytes[1], bytes[2], bytes[3], rounding);
    }
    return make_uint4(words[0], words[1], words[2], words[3]);
}

// A warp's walk along its strip, walk rows [y_begin, y_end): image rows y_begin ... (down) or
// height - 1 - y_begin ... (up; the same walk over the image read bottom to top). Lead = (rx * E) mod 16, the in-lane part of
// the offset from an output byte to the last byte of its box's row (the kernel's template argument).
template <int E, int Lead, bool Interior>
__device__ __forceinline__ void walk_strip(const ImageView<const std::uint8_t>& in, const ImageView<std::uint8_t>& out, int plane,
                                           Border border, const Rounding& rounding, const Tiling& t, int y_begin, int y_end,
                                           int e, bool vector, const int* sources, int lane, int phase, bool up) {
    // j + rx * E = j + 16 * lead_lanes + Lead, and j - (rx + 1) * E = j - 16 * trail_lanes + TrailUp,
    // trail_lanes = ceil((rx + 1) * E / 16) (no output byte reaches before the span: first_lane).
    constexpr int TrailUp = (16 - (Lead + E) % 16) % 16;
    const int lead_lanes = t.lead / kLaneBytes, trail_lanes = (t.trail + kLaneBytes - 1) / kLaneBytes;
    const int row_bytes = in.shape.width * E;
    const bool output_lane = lane >= t.first_lane && kLaneBytes * lane < kLaneBytes * t.first_lane + t.tile_bytes && e < row_bytes;
    const bool out_vector = ((reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % 16) == 0 && e + kLaneBytes <= row_bytes;
    // Walk rows y are image rows y (down) or height - 1 - y (up).
    const int last = in.shape.height - 1;
    const auto image_row = [&](int y) { return up ? last - y : y; };
    const std::ptrdiff_t in_pitch = up ? -static_cast<std::ptrdiff_t>(in.pitch_bytes) : static_cast<std::ptrdiff_t>(in.pitch_bytes);
    const std::ptrdiff_t out_pitch = up ? -static_cast<std::ptrdiff_t>(out.pitch_bytes) : static_cast<std::ptrdiff_t>(out.pitch_bytes);
    std::uint8_t* dst = out.row(image_row(y_begin), plane) + e;
    // The interior's rows: pointers that step along the walk a row at a time (down or up the image).
    const std::uint8_t* enter_row = Interior ? in.row(image_row(y_begin - t.ry - 1), plane) : nullptr;  // the first rows' loads step it first
    const std::uint8_t* leave_row = Interior ? in.row(image_row(y_begin - t.ry - 1), plane) : nullptr;
    const auto load = [&](const std::uint8_t*& interior_row, int y) {
        if constexpr (Interior) {
            const uint4 bytes = span_bytes(interior_row, e, vector, sources, border);
            interior_row += in_pitch;
            return bytes;
        } else {
            return span_bytes(bordered_row(in, plane, image_row(y), border.mode), e, vector, sources, border);
        }
    };

    // V of the row before the strip's first: the sum of rows y_begin - ry - 1 ... y_begin + ry - 1,
    // kFirstBatch rows in flight, two rows added per word (inside, enter_row then points at row
    // y_begin + ry).
    static_assert(kFirstBatch % 2 == 0, "the first rows are added in pairs");
    std::uint32_t v[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
    for (int y = y_begin - t.ry - 1; y < y_begin + t.ry; y += kFirstBatch) {
        uint4 rows_in[kFirstBatch];
#pragma unroll
        for (int k = 0; k < kFirstBatch; ++k) rows_in[k] = y + k < y_begin + t.ry ? load(enter_row, y + k) : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
        for (int k = 0; k < kFirstBatch; k += 2) add_two_rows(v, rows_in[k], rows_in[k + 1]);
    }

    uint4 enter = load(enter_row, y_begin + t.ry);
    uint4 leave = load(leave_row, y_begin - t.ry - 1);
    for (int y = y_begin; y < y_end; ++y, dst += out_pitch) {
        const uint4 entering = enter, leaving = leave;
        if (y + 1 < y_end) {  // the next row's loads, in flight while this row's sums are worked out
            enter = load(enter_row, y + 1 + t.ry);
            leave = load(leave_row, y - t.ry);
        }
        slide_columns(v, entering, leaving);
        std::uint32_t p[16];
        span_prefix<E>(v, lane, phase, p);
        const uint4 value = rounding.normalized ? output_bytes<Lead, TrailUp, true>(p, lane + lead_lanes, lane - trail_lanes, rounding)
                                                : output_bytes<Lead, TrailUp, false>(p, lane + lead_lanes, lane - trail_lanes, rounding);
        if (output_lane) store_span_bytes(dst, value, e, row_bytes, out_vector);
    }
}

template <int E, int Lead>
__global__ void __launch_bounds__(kWarp * 8, 3)
    conv_box_warp_scan_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Border border, Rounding rounding, Tiling t) {
    const int lane = static_cast<int>(threadIdx.x);
    const int warp = static_cast<int>(blockIdx.x * blockDim.y + threadIdx.y);
    const auto [strip, tile] = warp_place(warp, t.tiles, t.strips);  // edge tiles first
    if (strip >= t.strips) return;  // the last block's spare warps (no block barrier follows)
    const int plane = static_cast<int>(blockIdx.z);
    const int height = in.shape.height;
    const int image_begin = strip * t.strip_rows;
    const int image_end = min(image_begin + t.strip_rows, height);
    if (image_begin >= image_end) return;
    // Odd strips walk up: two neighbouring strips read the rows they share at about the same time
    // (both at their ends, or both at their starts), so the second read more often finds them in L2.
    const bool up = (strip & 1) != 0;
    const int y_begin = up ? height - image_end : image_begin;
    const int y_end = up ? height - image_begin : image_end;

    const int e = tile * t.tile_bytes - kLaneBytes * t.first_lane + kLaneBytes * lane;  // this lane's first byte of the row
    const int row_bytes = in.shape.width * E;
    const bool aligned = ((reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % 16) == 0;  // SoA planes: height * pitch apart
    const bool vector = aligned && e >= 0 && e + kLaneBytes <= row_bytes;
    const int phase = E == 3 ? ((e % 3) + 3) % 3 : 0;
    extern __shared__ int shared_sources[];
    int* const sources = shared_sources + kWarp * kLaneBytes * static_cast<int>(threadIdx.y) + lane;
    // Only this lane reads them: lanes without 16-byte loads, and under a constant border every
    // lane, since span_bytes reads them for a row outside the image (whose bytes are the value).
    if (!vector || border.mode == BorderMode::constant) column_sources<E>(sources, e, in.shape.width, border.mode);

    if (y_begin - t.ry - 1 >= 0 && y_end - 1 + t.ry < height) {
        walk_strip<E, Lead, true>(in, out, plane, border, rounding, t, y_begin, y_end, e, vector, sources, lane, phase, up);
    } else {
        walk_strip<E, Lead, false>(in, out, plane, border, rounding, t, y_begin, y_end, e, vector, sources, lane, phase, up);
    }
}

// ---------------------------------------------------------------------------------------------
// The variant

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, Border, Rounding, Tiling);

// A kernel per pixel size E and in-lane offset (rx * E) mod 16: all 16 offsets for 1 and 3 bytes
// per pixel, the multiples of 4 for 4.
template <int E, int... Index>
std::array<Kernel, sizeof...(Index)> kernels_of(std::integer_sequence<int, Index...>) {
    return {&conv_box_warp_scan_kernel<E, Index*(E == 4 ? 4 : 1)>...};
}

Kernel kernel_for(const Problem& problem) {
    static const std::array<Kernel, 16> gray = kernels_of<1>(std::make_integer_sequence<int, 16>{});
    static const std::array<Kernel, 16> rgb = kernels_of<3>(std::make_integer_sequence<int, 16>{});
    static const std::array<Kernel, 4> rgba = kernels_of<4>(std::make_integer_sequence<int, 4>{});
    const int stride = rows::element_stride(problem.shape);
    const int lead = problem.mask->radius_x() * stride % kLaneBytes;
    return by_channels<Kernel>(stride, gray[lead], rgb[lead], rgba[lead / 4]);
}

Tiling tiling_of(const Problem& problem, const LaunchShape& shape) {
    const int stride = rows::element_stride(problem.shape);
    return tiling_of(stride, problem.shape.width * stride, problem.shape.height, problem.mask->radius_x(), problem.mask->radius_y(),
                     shape.parameter("rows"));
}

class ConvBoxWarpScan final : public Variant {
public:
    std::string name() const override { return "conv.box_warp_scan"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "box filter by exact integer sums, a warp per 512-byte span: column sums slide down in registers, row sums from a warp-wide prefix";
    }
    Support supports(const Problem& problem) const override { return box_support(problem); }
    TuningSpace tuning_space() const override { return warp_span_tuning_space(); }
    // 32x4 blocks and the tallest strips that still give a 132-SM GPU 32 warps per SM (what 64
    // registers would allow; at the kernels' 80, 24 warps are resident, so at least 1.3 waves): 32
    // rows at 8K RGB (box 9x9: 48 tiles x 135 strips, 2 waves); 16 on small images.
    LaunchShape default_shape(const Problem& problem) const override {
        LaunchShape shape = tuning_space().default_shape;
        int rows = kStripRows.front();
        for (int candidate : kStripRows) {
            shape.parameters = {{"rows", candidate}};
            const Tiling t = tiling_of(problem, shape);
            if (static_cast<long long>(t.tiles) * t.strips * planes_of(problem.shape) >= 132 * 32) rows = candidate;
        }
        shape.parameters = {{"rows", rows}};
        return shape;
    }
    Support check_shape(const Problem& /*problem*/, const LaunchShape& shape) const override { return check_warp_span_shape(shape); }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Tiling t = tiling_of(problem, shape);
        const long long warps = static_cast<long long>(t.tiles) * t.strips;
        const dim3 grid(static_cast<unsigned>((warps + shape.block_y - 1) / shape.block_y), 1, planes_of(problem.shape));
        return {make_launch(kernel_for(problem), "conv_box_warp_scan_kernel", grid, block_of(shape), shared_bytes(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), plan.problem.border, rounding_of(*plan.problem.mask),
                       tiling_of(plan.problem, plan.shape));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvBoxWarpScan)
