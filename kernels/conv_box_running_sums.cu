// conv.box_running_sums — box filter of any odd size by exact integer running sums, one pass.
//
// Technique: a box mask has one coefficient m, so out = round(m * S) with S the integer sum of the
// pixels under the box. A warp owns a segment of 32 * P consecutive bytes of a stored row (P = 16
// gray or SoA, 24 RGB, 32 RGBA: whole pixels, one or a few vector loads per lane) and walks down
// `rows` output rows of it (tuned: 8 to 64):
//   down:   each lane keeps the column sums V of the box's height for its P bytes, two to a 32-bit
//           word (16-bit lanes: V <= 31 * 255 < 2^16, and V + new - old never borrows because V
//           holds old): per row one entering and one leaving row, 1.5 instructions per byte. The
//           leaving row was read kh rows earlier and comes from L2.
//   across: the lane turns its V into running sums per channel, a warp scan adds the lanes before
//           it, and the running sums go to a shared-memory row; then S(e) = run(e + rx*E) -
//           run(e - (rx+1)*E) (E = bytes per pixel) takes two reads whatever the box's width.
//           rx is a template parameter, so every read is an aligned 16-byte load at a fixed offset.
//   out:    for the normalized box (m is the float nearest 1/(kw*kh), what masks::box builds)
//           round(S / n) = floor((S + (n-1)/2) / n) with n = kw*kh, one multiply-high (exact for
//           S < 2^18); for any other coefficient the exact integer form of the reference's rounding
//           (below).
// Lanes at the segment's ends only feed their neighbours (rx*E bytes on the right, (rx+1)*E on the
// left, in whole lanes): segments overlap by those lanes. The cost per output byte does not depend
// on the box's width and only through the kh - 1 rows each warp reads before its first output row
// on its height (kh - 1 of rows + kh - 1 rows).
// Exactness: S is an exact integer and its rounding is the reference's, exactly (kernels/box_sums.hpp
// says why).
// Borders: a row outside the image is mapped once per row (a constant border's row is the value in
// every byte); a lane whose bytes reach outside the row, or whose row is not aligned for its vector
// load, reads byte by byte through border_index.
// Preconditions: box masks only — every coefficient equal (any odd width and height up to 31, any
// value; others are refused with that reason). Every border, 1/3/4 channels, AoS or SoA, any pitch,
// any size. The block is 32 x N threads (N warps side by side, tuned).
// What it adds over conv.box_integral (a u32 summed-area table of the padded image in device
// memory, three kernels, four table reads per output) and conv.separable_fused (fp32 taps, its cost
// grows with the box): one read and one write of the image, integer work independent of the box's
// width.
// Deliberately not done: no sharing of the kh - 1 starting rows between vertically adjacent warps.
// Tried and dropped (device runs of 2026-11-24, same rows): loading two rows ahead instead of one
// (124 registers, box9 275 us, box3 226 us: slower) and capping the registers at 64 for 50%
// occupancy (the loop spills to local memory, 10 M spill requests: box9 302 us).
// Measured on an NVIDIA H200 (klab tune + klab-bench on the 8K box rows, device run of 2026-11-24;
// L2 flushed, tuned shapes, medians of 3): 8K RGB AoS replicate box3 186 us (3.9x the copy floor;
// 32x2 rows=8), box9 269 us (5.6x; 32x4 rows=16; npp.box 1718 us: 6.4x faster), box31 426 us
// (8.9x; rows=16; npp.box 16580 us: 39x faster); conv.separable_fused 106 / 180 / 589 us. Tuning
// the walk's rows took these from 505 / 535 / 642 us (64-row walks: 9% achieved occupancy, issue
// slots 25% busy, latency-bound). Still far above the 1.3x target: 100 registers leave 25%
// theoretical occupancy, and each row's scan, shared-memory exchange and stores form one
// dependent chain per warp.
#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/box_sums.hpp"

namespace klab {
namespace {

using box_sums::box_support;
using box_sums::planes_of;
using box_sums::round_sum;
using box_sums::rounding_of;
using box_sums::Rounding;

constexpr int kWarp = 32;
// Output rows per warp, the tuned parameter `rows`: short walks give more warps to hide the column
// walk's load latency, tall ones read fewer of the kh - 1 starting rows twice.
constexpr std::array<int, 4> kWalkRows = {8, 16, 32, 64};
constexpr int kMaxRadius = Mask::kMaxSide / 2;
constexpr int kMaxWarps = 16;        // warps per block
constexpr unsigned kFullMask = 0xffffffffu;

// Bytes per lane: whole pixels and a multiple of 8 (the vector loads).
template <int E>
constexpr int kLaneBytes = E == 1 ? 16 : E == 3 ? 24 : 32;
int lane_bytes(int stride) { return stride == 1 ? 16 : stride == 3 ? 24 : 32; }

// Lanes that only feed their neighbours: the left ones hold the (rx+1)*E bytes before the first
// output byte, the right ones the rx*E bytes after the last.
constexpr int halo_lanes(int bytes, int lane_bytes_) { return (bytes + lane_bytes_ - 1) / lane_bytes_; }
template <int E, int RX>
constexpr int kLeftLanes = halo_lanes((RX + 1) * E, kLaneBytes<E>);
template <int E, int RX>
constexpr int kRightLanes = halo_lanes(RX * E, kLaneBytes<E>);
int output_lanes(int stride, int rx) {
    return kWarp - halo_lanes((rx + 1) * stride, lane_bytes(stride)) - halo_lanes(rx * stride, lane_bytes(stride));
}

// The shared-memory row of running sums: each lane's P words, then 4 padding words (so that a
// quarter warp's 16-byte accesses, P + 4 words apart, fall in distinct banks); the segment's row
// starts after kGuardLanes lane regions, so that the halo lanes' reads below and above their
// neighbours stay inside the buffer.
constexpr int kGuardLanes = 2;
template <int E>
constexpr int kRegionWords = kLaneBytes<E> + 4;
template <int E>
constexpr int kWarpSharedWords = (kWarp + 2 * kGuardLanes) * kRegionWords<E>;
std::size_t shared_bytes(int stride, int warps) {
    const int words = by_channels<int>(stride, kWarpSharedWords<1>, kWarpSharedWords<3>, kWarpSharedWords<4>);
    return static_cast<std::size_t>(words) * sizeof(std::uint32_t) * static_cast<std::size_t>(warps);
}

// ---------------------------------------------------------------------------------------------
// Loading a lane's bytes of one row

template <int E>
struct LaneBytes {
    std::uint32_t w[kLaneBytes<E> / 4];
};

// Bytes e ... e + 3 of stored row `sy` (plane `plane`), whose pixels are E bytes each, with the
// border rule for every byte outside the row. Not inlined: only threads at a row's ends, or rows
// not aligned for the vector loads, take it.
template <int E>
__device__ __noinline__ std::uint32_t bordered_word(ImageView<const std::uint8_t> in, int plane, int sy, int e, Border border) {
    const std::uint8_t* row = in.row(sy, plane);
    std::uint32_t word = 0;
    for (int b = 0; b < 4; ++b, ++e) {
        const int x = e >= 0 ? e / E : -((-e + E - 1) / E);  // floor(e / E)
        const int sx = border_index(x, in.shape.width, border.mode);
        const std::uint32_t value = sx < 0 ? border.value : row[sx * E + (e - x * E)];
        word |= value << (8 * b);
    }
    return word;
}

// How a lane reads its bytes of a row, the same for every row: 16- or 8-byte loads where they lie
// inside the row and the rows are aligned for them (the data pointer and the pitch), else byte by
// byte with the border rule.
enum class LanePath { vector16, vector8, bytes };

template <int E>
__device__ __forceinline__ LanePath lane_path(const ImageView<const std::uint8_t>& in, int e0) {
    constexpr int P = kLaneBytes<E>;
    const std::uintptr_t rows = reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes;  // SoA planes: height * pitch apart
    if (e0 < 0 || e0 + P > in.shape.width * E) return LanePath::bytes;
    if (P % 16 == 0 && rows % 16 == 0) return LanePath::vector16;
    return rows % 8 == 0 ? LanePath::vector8 : LanePath::bytes;
}

template <int E>
__device__ __forceinline__ void load_bytes(const ImageView<const std::uint8_t>& in, int plane, int y, int e0, Border border,
                                           LanePath path, LaneBytes<E>& out) {
    constexpr int P = kLaneBytes<E>;
    const int sy = border_index(y, in.shape.height, border.mode);
    if (sy < 0) {
#pragma unroll
        for (int i = 0; i < P / 4; ++i) out.w[i] = border.value * 0x01010101u;
        return;
    }
    const std::uint8_t* src = in.row(sy, plane) + e0;
    if (path == LanePath::vector16) {
#pragma unroll
        for (int i = 0; i < P / 16; ++i) {
            const uint4 v = __ldg(reinterpret_cast<const uint4*>(src) + i);
            out.w[4 * i] = v.x, out.w[4 * i + 1] = v.y, out.w[4 * i + 2] = v.z, out.w[4 * i + 3] = v.w;
        }
    } else if (path == LanePath::vector8) {
#pragma unroll
        for (int i = 0; i < P / 8; ++i) {
            const uint2 v = __ldg(reinterpret_cast<const uint2*>(src) + i);
            out.w[2 * i] = v.x, out.w[2 * i + 1] = v.y;
        }
    } else {
#pragma unroll
        for (int i = 0; i < P / 4; ++i) out.w[i] = bordered_word<E>(in, plane, sy, e0 + 4 * i, border);
    }
}

// V += new - old, two bytes per 16-bit lane of each word of V (pair i holds bytes 2i and 2i+1).
template <int E>
__device__ __forceinline__ void slide(std::uint32_t (&v)[kLaneBytes<E> / 2], const LaneBytes<E>& add, const LaneBytes<E>& remove) {
#pragma unroll
    for (int i = 0; i < kLaneBytes<E> / 4; ++i) {
        const std::uint32_t add_low = __byte_perm(add.w[i], 0u, 0x4140u), add_high = __byte_perm(add.w[i], 0u, 0x4342u);
        const std::uint32_t rem_low = __byte_perm(remove.w[i], 0u, 0x4140u), rem_high = __byte_perm(remove.w[i], 0u, 0x4342u);
        v[2 * i] = v[2 * i] + add_low - rem_low;
        v[2 * i + 1] = v[2 * i + 1] + add_high - rem_high;
    }
}

template <int E>
__device__ __forceinline__ void accumulate(std::uint32_t (&v)[kLaneBytes<E> / 2], const LaneBytes<E>& add) {
#pragma unroll
    for (int i = 0; i < kLaneBytes<E> / 4; ++i) {
        v[2 * i] += __byte_perm(add.w[i], 0u, 0x4140u);
        v[2 * i + 1] += __byte_perm(add.w[i], 0u, 0x4342u);
    }
}

// The running sums of the lanes before this one, per channel: a warp scan of the lanes' totals
// (run[P - E + c] is a lane's total of channel c). RGB packs its three totals into 21-bit fields of
// one 64-bit word, one scan instead of three: a lane's total is at most 8 pixels * 31 * 255 = 63240,
// a warp's 32 times that, 2,023,680 < 2^21.
template <int E>
__device__ __forceinline__ void channel_offsets(const std::uint32_t (&run)[kLaneBytes<E>], int lane, std::uint32_t (&before)[E]) {
    constexpr int P = kLaneBytes<E>;
    if constexpr (E == 3) {
        static_assert(P / 3 * 31 * 255 * kWarp < (1 << 21), "21-bit fields hold a warp's sums");
        const unsigned long long own =
            run[P - 3] | static_cast<unsigned long long>(run[P - 2]) << 21 | static_cast<unsigned long long>(run[P - 1]) << 42;
        unsigned long long t = own;
#pragma unroll
        for (int offset = 1; offset < kWarp; offset *= 2) {
            const unsigned long long other = __shfl_up_sync(kFullMask, t, offset);
            if (lane >= offset) t += other;
        }
        t -= own;
        before[0] = static_cast<std::uint32_t>(t & 0x1fffff);
        before[1] = static_cast<std::uint32_t>(t >> 21 & 0x1fffff);
        before[2] = static_cast<std::uint32_t>(t >> 42);
    } else {
#pragma unroll
        for (int c = 0; c < E; ++c) {
            const std::uint32_t own = run[P - E + c];
            std::uint32_t t = own;
#pragma unroll
            for (int offset = 1; offset < kWarp; offset *= 2) {
                const std::uint32_t other = __shfl_up_sync(kFullMask, t, offset);
                if (lane >= offset) t += other;
            }
            before[c] = t - own;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The kernel

// One block: N warps, each its own segment of a row band. Segment s of the row starts at byte
// s * (32 - left - right) * P - left * P; its lanes [left, 32 - right) write outputs.
template <int E, int RX, bool Normalized>
__device__ __forceinline__ void box_segment(const ImageView<const std::uint8_t>& in, const ImageView<std::uint8_t>& out, int ry,
                                            Border border, const Rounding& rounding, int walk_rows) {
    constexpr int P = kLaneBytes<E>;
    constexpr int kLeft = kLeftLanes<E, RX>;
    constexpr int kRight = kRightLanes<E, RX>;
    constexpr int kOutputLanes = kWarp - kLeft - kRight;
    constexpr int kRegion = kRegionWords<E>;
    static_assert(kOutputLanes > 0, "a segment outputs something");
    extern __shared__ uint4 shared_rows[];  // kWarpSharedWords<E> words per warp

    const int lane = static_cast<int>(threadIdx.x);
    const int warp = static_cast<int>(threadIdx.y);
    const int segment = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.y) + warp;
    const int plane = static_cast<int>(blockIdx.z);
    const int row_bytes = in.shape.width * E;
    const int segment_start = segment * kOutputLanes * P - kLeft * P;
    if (segment_start + kLeft * P >= row_bytes) return;  // the whole warp: nothing of the row is its output
    const int e0 = segment_start + lane * P;              // the lane's first byte
    const int y_begin = static_cast<int>(blockIdx.y) * walk_rows;
    const int y_end = min(y_begin + walk_rows, in.shape.height);
    std::uint32_t* const warp_words = reinterpret_cast<std::uint32_t*>(shared_rows) + warp * kWarpSharedWords<E>;
    std::uint32_t* const row_sums = warp_words + kGuardLanes * kRegion;
    // The guard regions are read only by lanes that write nothing; zeroed so that no read is of
    // uninitialised memory.
    for (int i = lane; i < kGuardLanes * kRegion; i += kWarp) {
        warp_words[i] = 0;
        warp_words[kWarpSharedWords<E> - 1 - i] = 0;
    }
    const bool writes = lane >= kLeft && lane < kWarp - kRight && e0 < row_bytes;
    const LanePath path = lane_path<E>(in, e0);

    // The walk: bands walk down and up in turn (step 1, -1), so that two bands read the kh - 1 rows
    // they share at the same time, both at the start of their walks or both at the end: the second
    // read comes from L2, and the image is read from DRAM about once whatever the box's height.
    const int step = blockIdx.y % 2 == 0 ? 1 : -1;
    const int rows = y_end - y_begin;
    const int y_first = step > 0 ? y_begin : y_end - 1;
    // V for the first output row of the walk: rows y_first - ry ... y_first + ry.
    std::uint32_t v[P / 2] = {};
    for (int y = y_first - ry; y <= y_first + ry; ++y) {
        LaneBytes<E> row;
        load_bytes<E>(in, plane, y, e0, border, path, row);
        accumulate<E>(v, row);
    }
    // For the next slide, loaded a row ahead: the row entering the window and the one leaving it.
    LaneBytes<E> entering, leaving;
    load_bytes<E>(in, plane, y_first + step * (ry + 1), e0, border, path, entering);
    load_bytes<E>(in, plane, y_first - step * ry, e0, border, path, leaving);

    for (int i = 0; i < rows; ++i) {
        const int y = y_first + i * step;
        // Running sums per channel along the segment: the lane's own, then the lanes before it.
        std::uint32_t run[P];
        std::uint32_t total[E];  // the running sums of the lanes before this one, per channel
#pragma unroll
        for (int k = 0; k < P; ++k) {
            const std::uint32_t value = k % 2 == 0 ? (v[k / 2] & 0xffffu) : (v[k / 2] >> 16);
            run[k] = value + (k >= E ? run[k - E] : 0u);
        }
        channel_offsets<E>(run, lane, total);
        static_assert(P % E == 0, "a lane holds whole pixels: element k is of channel k % E");
#pragma unroll
        for (int k = 0; k < P; ++k) run[k] += total[k % E];
        std::uint32_t* mine = row_sums + lane * kRegion;
#pragma unroll
        for (int q = 0; q < P / 4; ++q) {
            reinterpret_cast<uint4*>(mine)[q] = make_uint4(run[4 * q], run[4 * q + 1], run[4 * q + 2], run[4 * q + 3]);
        }
        // Slide V to the next row of the walk while the running sums settle.
        if (i + 1 < rows) {
            slide<E>(v, entering, leaving);
            load_bytes<E>(in, plane, y + step * (ry + 2), e0, border, path, entering);
            load_bytes<E>(in, plane, y - step * (ry - 1), e0, border, path, leaving);
        }
        __syncwarp();
        // S(e) = run(e + RX*E) - run(e - (RX+1)*E): the words at fixed offsets from the lane's own.
        std::uint32_t sum[P];
#pragma unroll
        for (int k = 0; k < P; ++k) {
            const int hi = k + RX * E, lo = k - (RX + 1) * E;  // element offsets from the lane's first
            const int hi_lane = hi >= 0 ? hi / P : -((-hi + P - 1) / P), lo_lane = lo >= 0 ? lo / P : -((-lo + P - 1) / P);
            const std::uint32_t a = mine[hi_lane * kRegion + (hi - hi_lane * P)];
            const std::uint32_t b = mine[lo_lane * kRegion + (lo - lo_lane * P)];
            sum[k] = a - b;
        }
        __syncwarp();  // the row is read before the next one overwrites it
        if (writes) {
            std::uint32_t packed[P / 4];
#pragma unroll
            for (int q = 0; q < P / 4; ++q) {
                const std::uint32_t b0 = round_sum<Normalized>(sum[4 * q], rounding), b1 = round_sum<Normalized>(sum[4 * q + 1], rounding);
                const std::uint32_t b2 = round_sum<Normalized>(sum[4 * q + 2], rounding), b3 = round_sum<Normalized>(sum[4 * q + 3], rounding);
                packed[q] = __byte_perm(__byte_perm(b0, b1, 0x0040u), __byte_perm(b2, b3, 0x0040u), 0x5410u);
            }
            std::uint8_t* dst = out.row(y, plane) + e0;
            if (e0 + P <= row_bytes && reinterpret_cast<std::uintptr_t>(dst) % 8 == 0) {  // streaming (evict-first) stores
#pragma unroll
                for (int q = 0; q < P / 8; ++q) __stcs(reinterpret_cast<uint2*>(dst) + q, make_uint2(packed[2 * q], packed[2 * q + 1]));
            } else {
#pragma unroll
                for (int k = 0; k < P; ++k)
                    if (e0 + k < row_bytes) dst[k] = static_cast<std::uint8_t>(packed[k / 4] >> (8 * (k % 4)));
            }
        }
    }
}

// The normalized box's rounding (one multiply-high) and any other coefficient's each get their own
// copy of the loop, so that the choice costs nothing per output.
template <int E, int RX>
__global__ void __launch_bounds__(kWarp* kMaxWarps)
    conv_box_running_sums_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, int ry, Border border,
                                 Rounding rounding, int walk_rows) {
    if (rounding.normalized) {
        box_segment<E, RX, true>(in, out, ry, border, rounding, walk_rows);
    } else {
        box_segment<E, RX, false>(in, out, ry, border, rounding, walk_rows);
    }
}

// ---------------------------------------------------------------------------------------------
// The variant

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, int, Border, Rounding, int);

template <int E, int... RX>
std::array<Kernel, sizeof...(RX)> kernels_by_radius(std::integer_sequence<int, RX...>) {
    return {&conv_box_running_sums_kernel<E, RX>...};
}


Kernel kernel_for(const Problem& problem) {
    static const auto stride1 = kernels_by_radius<1>(std::make_integer_sequence<int, kMaxRadius + 1>{});
    static const auto stride3 = kernels_by_radius<3>(std::make_integer_sequence<int, kMaxRadius + 1>{});
    static const auto stride4 = kernels_by_radius<4>(std::make_integer_sequence<int, kMaxRadius + 1>{});
    return by_channels(rows::element_stride(problem.shape), stride1, stride3, stride4)[static_cast<std::size_t>(problem.mask->radius_x())];
}

// Warp segments along a stored row, and the planes (grid z: one for AoS, one per channel for SoA).
int segments_of(const Problem& problem) {
    const int stride = rows::element_stride(problem.shape);
    const int per_segment = output_lanes(stride, problem.mask->radius_x()) * lane_bytes(stride);
    return static_cast<int>(grid_side(problem.shape.width * stride, per_segment));
}
class ConvBoxRunningSums final : public Variant {
public:
    std::string name() const override { return "conv.box_running_sums"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "box filter by exact integer running sums: column sums down, a warp scan across, two reads per output";
    }
    Support supports(const Problem& problem) const override { return box_support(problem); }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x = {kWarp};
        space.block_y = {2, 4, 8, 16};
        space.parameters = {{"rows", std::vector<int>(kWalkRows.begin(), kWalkRows.end()),
                             "output rows each warp walks down"}};
        space.default_shape = LaunchShape{kWarp, 4, {{"rows", kWalkRows.back()}}};
        return space;
    }
    // 32x4 blocks and the tallest walks that still give every SM of a 132-SM GPU about 32 warps
    // (the kernel's registers allow about 20 at once): 32 rows at 8K RGB, 8 at 480p.
    LaunchShape default_shape(const Problem& problem) const override {
        LaunchShape shape = tuning_space().default_shape;
        const long long segments = segments_of(problem) * planes_of(problem.shape);
        int rows = kWalkRows.front();
        for (int candidate : kWalkRows) {
            if (segments * grid_side(problem.shape.height, candidate) >= 132 * 32) rows = candidate;
        }
        shape.parameters = {{"rows", rows}};
        return shape;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        if (shape.block_x != kWarp || shape.block_y < 1 || shape.block_y > kMaxWarps) {
            return Support::no(fmt::format("block {}x{}: the block is 32xN, one warp per row segment, N from 1 to {}",
                                           shape.block_x, shape.block_y, kMaxWarps));
        }
        const int rows = shape.parameter("rows");
        if (std::find(kWalkRows.begin(), kWalkRows.end(), rows) == kWalkRows.end()) {
            return Support::no(fmt::format("rows={}: a warp walks 8, 16, 32 or 64 output rows", rows));
        }
        return Support::yes();
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const dim3 grid(grid_side(segments_of(problem), shape.block_y), grid_side(problem.shape.height, shape.parameter("rows")),
                        planes_of(problem.shape));
        return {make_launch(kernel_for(problem), "conv_box_running_sums_kernel", grid, block_of(shape),
                            shared_bytes(rows::element_stride(problem.shape), shape.block_y))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const Mask& mask = *plan.problem.mask;
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), mask.radius_y(), plan.problem.border, rounding_of(mask),
                       plan.shape.parameter("rows"));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvBoxRunningSums)
