// conv.box_warp_ring — box filter by exact integer sums, a warp per column span, its rows through
// a ring in shared memory filled by cp.async ahead of use, its row sums slid along each lane's own
// bytes.
//
// Technique: out = round(m * S), S the integer sum under the box (kernels/box_sums.hpp), and S
// separates into column sums V (the box's height) summed along the row (its width). A warp owns a
// span of 512 bytes of a stored row (16 per lane; kernels/box_span.hpp) and writes the 480 of
// lanes 1 to 30, walking down a strip of `rows` rows (tuned):
//   ring:    each lane copies its 16 bytes of every row the strip reads, once, into its slot of the
//            warp's ring in shared memory (2 * ry + 1 + 4 slots of 512 bytes): by a 16-byte
//            cp.async 4 rows ahead of the row that needs it, or (lanes whose bytes reach outside
//            the row, or rows outside the image) by the border rule and a store. The entering and
//            the leaving row of each output row are read from there. A lane reads only its own
//            slots, so nothing waits but its own copies: no barrier;
//   columns: V slides down in registers, two to a 32-bit word (16-bit lanes), sixteen byte
//            permutes and eight three-input adds per lane and row;
//   rows:    a lane takes V of the rx * E bytes on each side of its 16 from its neighbours (a
//            shuffle per word), so that it holds V of 16 + 2 * rx * E consecutive bytes; the words
//            one byte off are a byte permute each. S of an output word is the sum of 2 * rx + 1 such
//            words, and S of the word a step further (a step: the fewest bytes that are whole
//            pixels and whole words: 2 gray, 6 RGB, 4 RGBA) adds the pixels that enter and takes
//            off those that leave: one or two three-input adds per word. S stays in 16-bit lanes
//            (the box's area is at most 256: 256 * 255 + 127 < 2^16);
//   out:     the normalized box rounds a word of two sums with a mask and two multiply-highs, one
//            of the low half, one of the whole word (kernels/box_word_rounding.hpp says why the
//            whole word will do); other coefficients take the exact integer form of the reference's
//            rounding (kernels/box_sums.hpp proves both exact).
// What it adds over conv.box_warp_scan (the same warp and span, but every row read from global
// memory twice, entering and, 2 * ry + 1 rows later, leaving, and the row sums from a warp scan of
// per-channel prefixes): the leaving row comes from shared memory instead of a second global load,
// which probes/box_lane_slide.cu measured missing L1 (hit rate 12 to 20%; DRAM reads 1.3 to 2.0x
// the image on 8K RGB box 9x9, 1.14x through the ring), and the row sums take no scan (151
// instructions per warp and row, 203 with the scan).
// Preconditions: box masks (every coefficient equal, any value) up to 9 wide and of area up to 256
// (rx * E <= 16: the row sums' bytes come from the neighbouring lane alone; S fits 16 bits);
// larger boxes are refused with that reason (conv.box_warp_scan takes them). Every border,
// 1/3/4 channels, AoS or SoA (one grid layer per plane), any pitch, any size. The block is 32 x N
// threads (N = 2, 4 or 8 warps, tuned); shared memory per warp: 2 KB of column sources and the ring
// (6.5 KB for a 9-row box).
// Warps are now numbered edge tiles first (box_span::warp_place), so that they start in the first
// wave. Interior strips step a pointer: the strips whose ring rows all lie inside the image copy
// them through a pointer stepped by one pitch instead of mapping each row by the border rule. The
// walk compiled twice: once for interior strips, once for the others, so that each loop holds one
// form of the copy.
// Two sums per multiply-high (2026-11-29): the high half's output byte taken from the multiply-high
// of the whole word instead of the half shifted down: the rounding of a lane's 16 bytes takes 36
// instructions instead of 44 (8 shifts fewer). scripts/gpu-experiment.sh on the H200 (klab tune
// on 8K RGB AoS box3 and box9, then klab-bench, L2 flushed, medians of 5): box3 65.6 -> 64.4 us,
// box9 76.7 -> 73.7 us, both tuned to 32x2 rows=16.
// The committed klab run at b793855 (results/nvidia-h200/, H200, L2 flushed, medians of 5): 8K RGB
// AoS box9 74.36 us at 32x2 rows=16 (1.57x the copy floor; npp.box 23.1x slower), box3 64.90 us
// (1.37x), against conv.box_pixel_lanes's 74.90 and 62.56 in the same run.
// Still about 1.55x on box9, above the 1.3x target: the row loop's ~150 instructions per warp and
// row, issued at 55 to 60% of the slots, are most of it (the probe, with nothing but box 9, is at
// 1.56x), and the structure alone is near the target: the probe's loop without the row sums (the
// ring, the column slide and the stores: wrong pixels) runs at 1.28x to 1.50x the copy.
// Measurements, profiles and every form tried and dropped: kernels/notes/conv_box_warp_ring.md.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_pipeline.h>
#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/box_span.hpp"
#include "kernels/box_sums.hpp"
#include "kernels/box_word_rounding.hpp"

namespace klab {
namespace {

using box_span::bordered_row;
using box_span::check_warp_span_shape;
using box_span::column_sources;
using box_span::kFullMask;
using box_span::kLaneBytes;
using box_span::kSpanBytes;
using box_span::kWarp;
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
using box_word::half_quotients;
using box_word::HalfQuotients;

constexpr int kAhead = 4;         // rows copied into the ring ahead of the row that needs them
constexpr int kMaxRadiusX = 4;    // rx * E <= 16 for every E: one neighbouring lane on each side
constexpr int kMaxArea = 256;     // 256 * 255 + 127 < 2^16: S and its rounding's half in a 16-bit lane
constexpr int kTileBytes = kSpanBytes - 2 * kLaneBytes;  // lanes 1 ... 30 write: 480 bytes

// How a launch divides the image, the same for every warp.
struct Tiling {
    int tiles;       // warps per stored row (the last one's tile may reach past the row)
    int strip_rows;  // output rows each warp walks down
    int strips;      // strips of the image
    int ry;          // the box's vertical radius
};

// Slots of a warp's ring: the 2 * ry + 1 rows under the box and the rows copied ahead.
__host__ __device__ constexpr int ring_slots(int ry) { return 2 * ry + 1 + kAhead; }

// Per warp: the column sources (16 words per lane), then the ring.
std::size_t shared_bytes(int warps, int ry) {
    return static_cast<std::size_t>(warps) * (kWarp * kLaneBytes * sizeof(int) + static_cast<std::size_t>(ring_slots(ry)) * kSpanBytes);
}

Tiling tiling_of(int row_bytes, int height, int ry, int strip_rows) {
    Tiling t{};
    t.ry = ry;
    t.tiles = static_cast<int>(grid_side(row_bytes, kTileBytes));
    t.strips = static_cast<int>(grid_side(height, strip_rows));
    t.strip_rows = static_cast<int>(grid_side(height, t.strips));  // the strips share the rows evenly
    return t;
}

// ---------------------------------------------------------------------------------------------
// The row sums

// Row sums of the lane's 16 bytes from V of its bytes and its neighbours', in 16-bit lanes (word w:
// bytes 2w and 2w + 1), `start` added to each. H words (2H >= rx * E bytes) come from each side:
// a[] holds V of the bytes [-2H, 16 + 2H) as words, b[i] the word of bytes 2i + 1 and 2i + 2.
template <int E, int RX>
__device__ __forceinline__ void row_sums(const std::uint32_t (&v)[8], std::uint32_t start, std::uint32_t (&s)[8]) {
    constexpr int H = (RX * E + 1) / 2;
    std::uint32_t a[8 + 2 * H];
#pragma unroll
    for (int i = 0; i < H; ++i) a[i] = __shfl_up_sync(kFullMask, v[8 - H + i], 1);
#pragma unroll
    for (int i = 0; i < 8; ++i) a[H + i] = v[i];
#pragma unroll
    for (int i = 0; i < H; ++i) a[H + 8 + i] = __shfl_down_sync(kFullMask, v[i], 1);
    std::uint32_t b[7 + 2 * H];
#pragma unroll
    for (int i = 0; i + 1 < 8 + 2 * H; ++i) b[i] = __byte_perm(a[i], a[i + 1], 0x5432u);
    // V of bytes 2w + k * E and the next, as one word (k: the pixel's offset in the box's row).
    const auto term = [&](int w, int k) {
        const int byte = 2 * w + k * E + 2 * H;
        return byte % 2 == 0 ? a[byte / 2] : b[byte / 2];
    };
    // A step: whole pixels and whole words (2 gray, 6 RGB, 4 RGBA bytes).
    constexpr int kStepBytes = E % 2 == 0 ? E : 2 * E;
    constexpr int kStepWords = kStepBytes / 2, kStepPixels = kStepBytes / E;
#pragma unroll
    for (int w = 0; w < kStepWords; ++w) {
        s[w] = start;
#pragma unroll
        for (int k = -RX; k <= RX; ++k) s[w] += term(w, k);
    }
#pragma unroll
    for (int w = kStepWords; w < 8; ++w) {
        s[w] = s[w - kStepWords];
#pragma unroll
        for (int p = 0; p < kStepPixels; ++p) s[w] += term(w - kStepWords, RX + 1 + p) - term(w - kStepWords, -RX + p);
    }
}

// The lane's 16 output bytes from its 8 words of S (the normalized box's half already added).
__device__ __forceinline__ uint4 output_bytes(const std::uint32_t (&s)[8], const Rounding& rounding) {
    std::uint32_t words[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        if (rounding.normalized) {
            // Bytes 0 and 2 of each word's quotients (kernels/box_word_rounding.hpp), four to a word.
            const HalfQuotients first = half_quotients(s[2 * w], rounding.inverse);
            const HalfQuotients second = half_quotients(s[2 * w + 1], rounding.inverse);
            words[w] = __byte_perm(__byte_perm(first.low, first.high, 0x0060u), __byte_perm(second.low, second.high, 0x0060u), 0x5410u);
        } else {
            words[w] = rounded_word(s[2 * w] & 0xffffu, s[2 * w] >> 16, s[2 * w + 1] & 0xffffu, s[2 * w + 1] >> 16, rounding);
        }
    }
    return make_uint4(words[0], words[1], words[2], words[3]);
}

// ---------------------------------------------------------------------------------------------
// The kernel

template <int E, int RX>
__global__ void __launch_bounds__(kWarp * 8)
    conv_box_warp_ring_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Border border, Rounding rounding, Tiling t) {
    const int lane = static_cast<int>(threadIdx.x);
    const int warp = static_cast<int>(blockIdx.x * blockDim.y + threadIdx.y);
    const auto [strip, tile] = warp_place(warp, t.tiles, t.strips);  // edge tiles first
    if (strip >= t.strips) return;  // the last block's spare warps (no block barrier follows)
    const int plane = static_cast<int>(blockIdx.z);
    const int y_begin = strip * t.strip_rows;
    const int y_end = min(y_begin + t.strip_rows, in.shape.height);
    if (y_begin >= y_end) return;

    const int e = tile * kTileBytes - kLaneBytes + kLaneBytes * lane;  // this lane's first byte of the row
    const int row_bytes = in.shape.width * E;
    const bool aligned = ((reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % 16) == 0;  // SoA planes: height * pitch apart
    const bool vector = aligned && e >= 0 && e + kLaneBytes <= row_bytes;
    extern __shared__ uint4 shared[];  // [warps][16 words per lane] column sources, then [warps][slots][lanes] rings
    int* const sources = reinterpret_cast<int*>(shared) + kWarp * kLaneBytes * static_cast<int>(threadIdx.y) + lane;
    const int slots = ring_slots(t.ry);
    uint4* const ring = shared + static_cast<int>(blockDim.y) * kWarp * kLaneBytes / 4 + static_cast<int>(threadIdx.y) * slots * kWarp + lane;
    // Only this lane reads them: lanes without 16-byte loads, and under a constant border every
    // lane, since span_bytes reads them for a row outside the image (whose bytes are the value).
    if (!vector || border.mode == BorderMode::constant) column_sources<E>(sources, e, in.shape.width, border.mode);

    // Ring row i is image row y_begin - ry - 1 + i, in slot i mod slots. One commit per row copied
    // (an empty one where none is left), so that "the row `kAhead` rows back has arrived" is one
    // wait on all but the last kAhead - 1 groups.
    int next_row = y_begin - t.ry - 1;
    // Strips whose ring rows all lie inside the image step a pointer to the lane's bytes instead of
    // mapping each row by the border rule. The ring takes 2 * ry + 1 + max(rows, kAhead) rows: a
    // strip shorter than kAhead rows still fills every slot.
    const bool interior = next_row >= 0 && y_begin + t.ry + max(y_end - y_begin, kAhead) <= in.shape.height;
    // The walk, compiled twice: strips inside the image (a stepped pointer) and strips at its edges.
    const auto walk = [&](auto interior_tag) {
        constexpr bool kInterior = decltype(interior_tag)::value;
        const std::uint8_t* next_bytes = in.row(kInterior ? next_row : 0, plane) + e;
        const auto copy_row = [&](int slot) {
            if constexpr (kInterior) {
                if (vector) {
                    __pipeline_memcpy_async(ring + kWarp * slot, next_bytes, kLaneBytes);
                } else {
                    ring[kWarp * slot] = span_bytes(next_bytes - e, e, false, sources, border);
                }
                next_bytes += in.pitch_bytes;
            } else {
                const std::uint8_t* row = bordered_row(in, plane, next_row++, border.mode);
                if (vector && row != nullptr) {
                    __pipeline_memcpy_async(ring + kWarp * slot, row + e, kLaneBytes);
                } else {
                    ring[kWarp * slot] = span_bytes(row, e, vector, sources, border);
                }
            }
            __pipeline_commit();
        };
        for (int i = 0; i < slots; ++i) copy_row(i);
        __pipeline_wait_prior(kAhead);  // ring rows 0 ... 2 * ry have arrived: V of row y_begin - 1
        std::uint32_t v[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
        for (int i = 0; i <= 2 * t.ry; ++i) slide_columns(v, ring[kWarp * i], make_uint4(0u, 0u, 0u, 0u));

        const bool output_lane = lane >= 1 && lane <= kWarp - 2 && e < row_bytes;
        const bool out_vector = ((reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % 16) == 0 && e + kLaneBytes <= row_bytes;
        const std::uint32_t start = rounding.normalized ? rounding.half * 0x10001u : 0u;  // the half, in both 16-bit lanes
        std::uint8_t* dst = out.row(y_begin, plane) + e;
        int leaving = 0, entering = 2 * t.ry + 1;  // the slots of output row y's leaving and entering rows
        for (int y = y_begin; y < y_end; ++y, dst += out.pitch_bytes) {
            __pipeline_wait_prior(kAhead - 1);  // the entering row has arrived
            slide_columns(v, ring[kWarp * entering], ring[kWarp * leaving]);
            // The leaving row's slot takes the entering row of output row y + kAhead (its value is in
            // registers already: the slide used it).
            if (y + kAhead < y_end) {
                copy_row(leaving);
            } else {
                __pipeline_commit();
            }
            leaving = leaving + 1 == slots ? 0 : leaving + 1;
            entering = entering + 1 == slots ? 0 : entering + 1;
            std::uint32_t s[8];
            row_sums<E, RX>(v, start, s);
            const uint4 value = output_bytes(s, rounding);
            if (output_lane) store_span_bytes(dst, value, e, row_bytes, out_vector);
        }
    };
    if (interior) {
        walk(std::true_type{});
    } else {
        walk(std::false_type{});
    }
}

// ---------------------------------------------------------------------------------------------
// The variant

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, Border, Rounding, Tiling);

// A kernel per pixel size E and horizontal radius rx (0 ... 4).
template <int E, int... RX>
std::array<Kernel, sizeof...(RX)> kernels_of(std::integer_sequence<int, RX...>) {
    return {&conv_box_warp_ring_kernel<E, RX>...};
}

Kernel kernel_for(const Problem& problem) {
    static const std::array<Kernel, kMaxRadiusX + 1> gray = kernels_of<1>(std::make_integer_sequence<int, kMaxRadiusX + 1>{});
    static const std::array<Kernel, kMaxRadiusX + 1> rgb = kernels_of<3>(std::make_integer_sequence<int, kMaxRadiusX + 1>{});
    static const std::array<Kernel, kMaxRadiusX + 1> rgba = kernels_of<4>(std::make_integer_sequence<int, kMaxRadiusX + 1>{});
    const int rx = problem.mask->radius_x();
    return by_channels<Kernel>(rows::element_stride(problem.shape), gray[rx], rgb[rx], rgba[rx]);
}

Tiling tiling_of(const Problem& problem, const LaunchShape& shape) {
    return tiling_of(problem.shape.width * rows::element_stride(problem.shape), problem.shape.height, problem.mask->radius_y(),
                     shape.parameter("rows"));
}

class ConvBoxWarpRing final : public Variant {
public:
    std::string name() const override { return "conv.box_warp_ring"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "box filter by exact integer sums, a warp per 512-byte span: rows through a per-warp shared-memory ring filled by "
               "cp.async, row sums slid along each lane's bytes";
    }
    Support supports(const Problem& problem) const override {
        if (const Support box = box_support(problem); !box) return box;
        const Mask& mask = *problem.mask;
        if (mask.radius_x() > kMaxRadiusX || mask.width() * mask.height() > kMaxArea) {
            return Support::no(fmt::format("boxes up to 9 wide and of area up to {} ({}: {}x{}): the row sums take a lane's "
                                           "neighbours' bytes only and keep S in 16 bits (conv.box_warp_scan takes every box)",
                                           kMaxArea, mask.name(), mask.width(), mask.height()));
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override { return warp_span_tuning_space(); }
    Support check_shape(const Problem& /*problem*/, const LaunchShape& shape) const override { return check_warp_span_shape(shape); }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Tiling t = tiling_of(problem, shape);
        const long long warps = static_cast<long long>(t.tiles) * t.strips;
        const dim3 grid(static_cast<unsigned>((warps + shape.block_y - 1) / shape.block_y), 1, planes_of(problem.shape));
        return {make_launch(kernel_for(problem), "conv_box_warp_ring_kernel", grid, block_of(shape), shared_bytes(shape.block_y, t.ry))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), plan.problem.border, rounding_of(*plan.problem.mask),
                       tiling_of(plan.problem, plan.shape));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvBoxWarpRing)
