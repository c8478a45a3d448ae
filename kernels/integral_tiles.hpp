// The tiles of the single-kernel-per-pass integral variants (integral.lookback, integral.tile_gather):
// how a warp reads its 32 rows of a tile and how it writes its output rows, whatever way the tile
// learns the sums left of it and above it.
//
// A block of 32 x N threads owns a tile of 32 * P pixels (P = 8 gray, 4 colour: 256 or 128 pixels)
// by 32 * N rows, warp w its rows 32w ... 32w + 31; lane l holds pixels l*P ... l*P + P - 1 of a
// row. Pass 1 (for_each_row) visits the rows with the next kRowGroup rows' loads in flight. Pass 2
// (write_output_row) turns a row into output: the lane's own prefix, a warp scan across the lanes,
// the row's sum left of the tile, added into a running column carry; it stores the row through
// shared memory so that one store instruction writes 512 contiguous bytes, as streaming stores
// (evict-first in L2, so that the output does not push the image out of L2 before pass 2 reads
// it again).
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every kernel
// file that includes it, so editing it invalidates their tuning records.
#pragma once

#include <cstddef>
#include <cstdint>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/reference/reference.hpp"
#include "harness/variant.hpp"
#include "kernels/warp_scan.hpp"

namespace klab::integral_tiles {

constexpr int kWarp = 32;
constexpr int kMaxWarps = 16;
constexpr int kRowGroup = 2;  // rows loaded ahead of the one summed or scanned
constexpr unsigned kFullMask = 0xffffffffu;

// Pixels per lane: 8 for gray (8 bytes a row), 4 for RGB and RGBA (12 and 16 bytes).
template <int E>
constexpr int kPixelsPerLane = E == 1 ? 8 : 4;
inline int pixels_per_lane(int elements) { return elements == 1 ? 8 : 4; }

// The problem as the kernels see it: `planes` images of `elements` interleaved channels (SoA:
// channels planes of 1; AoS: 1 plane of channels), cut into tiles.
struct Grid {
    int width = 0;
    int height = 0;
    int planes = 1;
    int elements = 1;
    int tile_width = 0;   // pixels
    int tile_height = 0;  // rows
    int tiles_x = 0;
    int tiles_y = 0;
    __host__ __device__ int tiles() const { return tiles_x * tiles_y * planes; }
};

inline Grid grid_of(const ImageShape& shape, int warps) {
    Grid g;
    g.width = shape.width;
    g.height = shape.height;
    g.planes = shape.layout == Layout::soa ? shape.channels : 1;
    g.elements = shape.layout == Layout::soa ? 1 : shape.channels;
    g.tile_width = kWarp * pixels_per_lane(g.elements);
    g.tile_height = kWarp * warps;
    g.tiles_x = static_cast<int>(grid_side(shape.width, g.tile_width));
    g.tiles_y = static_cast<int>(grid_side(shape.height, g.tile_height));
    return g;
}

// The output type by DESIGN.md's rule: u64 where a sum of the image could overflow u32.
inline bool needs_u64(const Problem& problem) {
    return reference::integral_type(problem.shape.width, problem.shape.height) == reference::IntegralType::u64;
}

inline std::size_t round_up_256(std::size_t n) { return (n + 255) / 256 * 256; }

// The blocks both tiled variants take: 32 x N threads, one warp per 32 rows of the tile.
inline TuningSpace tile_tuning_space() {
    TuningSpace space;
    space.block_x = {kWarp};
    space.block_y = {2, 4, 8, 16};
    space.default_shape = LaunchShape{kWarp, 8, {}};
    return space;
}

inline Support check_tile_shape(const LaunchShape& shape) {
    if (shape.block_x != kWarp || shape.block_y < 1 || shape.block_y > kMaxWarps) {
        return Support::no(fmt::format("block {}x{}: the block is 32xN, one warp per 32 rows of the tile, N from 1 to {}",
                                       shape.block_x, shape.block_y, kMaxWarps));
    }
    return Support::yes();
}

// The bytes of a lane's P pixels (P * E bytes) of one row, little-endian in P * E / 4 words; zero
// beyond the image. Word loads where the run lies inside the row and is aligned for them.
template <int E>
struct LaneRow {
    static constexpr int kBytes = kPixelsPerLane<E> * E;
    std::uint32_t w[kBytes / 4];
    __device__ __forceinline__ std::uint32_t byte(int j) const { return (w[j / 4] >> (8 * (j % 4))) & 0xffu; }
};

template <int E>
__device__ __forceinline__ void load_lane_row(const ImageView<const std::uint8_t>& in, int plane, int y, int x0, LaneRow<E>& row) {
    constexpr int P = kPixelsPerLane<E>;
    constexpr int kBytes = LaneRow<E>::kBytes;
#pragma unroll
    for (int i = 0; i < kBytes / 4; ++i) row.w[i] = 0;
    if (y >= in.shape.height || x0 >= in.shape.width) return;
    const std::uint8_t* src = in.row(y, plane) + static_cast<std::size_t>(x0) * E;
    const auto address = reinterpret_cast<std::uintptr_t>(src);
    if (x0 + P <= in.shape.width) {
        if constexpr (kBytes == 16) {
            if (address % 16 == 0) {
                const uint4 v = __ldg(reinterpret_cast<const uint4*>(src));
                row.w[0] = v.x, row.w[1] = v.y, row.w[2] = v.z, row.w[3] = v.w;
                return;
            }
        } else if constexpr (kBytes == 8) {
            if (address % 8 == 0) {
                const uint2 v = __ldg(reinterpret_cast<const uint2*>(src));
                row.w[0] = v.x, row.w[1] = v.y;
                return;
            }
        }
        if (address % 4 == 0) {
#pragma unroll
            for (int i = 0; i < kBytes / 4; ++i) row.w[i] = __ldg(reinterpret_cast<const std::uint32_t*>(src) + i);
            return;
        }
    }
#pragma unroll
    for (int j = 0; j < kBytes; ++j) {
        if (x0 + j / E < in.shape.width) row.w[j / 4] |= static_cast<std::uint32_t>(__ldg(src + j)) << (8 * (j % 4));
    }
}

// Calls visit(r, row) for the warp's rows r = 0 ... 31 of the tile (row y0 + r), in order, with the
// lane's bytes of that row; the next Group rows' loads are in flight while a group is visited.
template <int E, int Group = kRowGroup, class Visit>
__device__ __forceinline__ void for_each_row(const ImageView<const std::uint8_t>& in, int plane, int y0, int x0, Visit visit) {
    static_assert(kWarp % Group == 0, "whole groups of rows");
    LaneRow<E> group[Group], next[Group];
#pragma unroll
    for (int k = 0; k < Group; ++k) load_lane_row<E>(in, plane, y0 + k, x0, group[k]);
    for (int r0 = 0; r0 < kWarp; r0 += Group) {
#pragma unroll
        for (int k = 0; k < Group; ++k) {
            if (r0 + Group < kWarp) load_lane_row<E>(in, plane, y0 + r0 + Group + k, x0, next[k]);
        }
#pragma unroll
        for (int k = 0; k < Group; ++k) visit(r0 + k, group[k]);
#pragma unroll
        for (int k = 0; k < Group; ++k) group[k] = next[k];
    }
}

// The dp4a selector of channel c in word i of a lane's row: 1 in each byte that holds channel c.
template <int E>
__host__ __device__ constexpr std::uint32_t channel_bytes(int c, int i) {
    std::uint32_t selector = 0;
    for (int k = 0; k < 4; ++k) {
        if ((4 * i + k) % E == c) selector |= 1u << (8 * k);
    }
    return selector;
}

// Pass 1 of a warp: the sums of its 32 rows (lane r keeps row r's, per channel) and of its lane's
// columns over those rows (per lane element), Group rows' loads in flight. Few instructions per
// row: a lane's sum of a channel is one dp4a per word; the warp sums two rows at once, one in each
// 16-bit half (a row's sum in a tile is at most 256 * 255 < 2^16); the column sums are kept in
// 16-bit halves too, bytes 0 and 2 of each word in one register and bytes 1 and 3 in another (at
// most 32 * 255 each).
template <int E, int Group = kRowGroup>
__device__ __forceinline__ void sum_rows_and_columns(const ImageView<const std::uint8_t>& in, int plane, int y0, int x0, int lane,
                                                     std::uint32_t (&row_sum)[E],
                                                     std::uint32_t (&column_sum)[kPixelsPerLane<E> * E]) {
    constexpr int kWords = LaneRow<E>::kBytes / 4;
    constexpr std::uint32_t kEvenBytes = 0x00ff00ffu;
    std::uint32_t even[kWords], odd[kWords];
    std::uint32_t pending[E];  // an even row's lane sums, until the odd row after it
#pragma unroll
    for (int i = 0; i < kWords; ++i) even[i] = 0, odd[i] = 0;
#pragma unroll
    for (int c = 0; c < E; ++c) row_sum[c] = 0, pending[c] = 0;
    for_each_row<E, Group>(in, plane, y0, x0, [&](int r, const LaneRow<E>& row) {
#pragma unroll
        for (int i = 0; i < kWords; ++i) {
            even[i] += row.w[i] & kEvenBytes;
            odd[i] += (row.w[i] >> 8) & kEvenBytes;
        }
#pragma unroll
        for (int c = 0; c < E; ++c) {
            std::uint32_t s = 0;  // at most 8 * 255
#pragma unroll
            for (int i = 0; i < kWords; ++i) s = __dp4a(row.w[i], channel_bytes<E>(c, i), s);
            if (r % 2 == 0) {
                pending[c] = s;
            } else {
                const std::uint32_t both = warp::sum(pending[c] | s << 16);  // rows r - 1 and r
                if (lane == r - 1) row_sum[c] = both & 0xffffu;
                if (lane == r) row_sum[c] = both >> 16;
            }
        }
    });
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
        column_sum[4 * i] = even[i] & 0xffffu;
        column_sum[4 * i + 1] = odd[i] & 0xffffu;
        column_sum[4 * i + 2] = even[i] >> 16;
        column_sum[4 * i + 3] = odd[i] >> 16;
    }
}

// 16-byte chunks per lane of a staged output row, and the staging area's size in chunks: one pad
// chunk after every 8, so that the lanes' writes of their own chunks spread over the banks.
template <int E, class T>
constexpr int kLaneChunks = kPixelsPerLane<E> * E * static_cast<int>(sizeof(T)) / 16;
__device__ __forceinline__ int padded(int chunk) { return chunk + chunk / 8; }

template <int E, class T>
constexpr int kWarpSharedChunks = kWarp * kLaneChunks<E, T> * 9 / 8 + 1;

// Per warp: the staging area of its output rows (and whatever the variant keeps there before).
template <int E, class T>
constexpr std::size_t kWarpSharedBytes = static_cast<std::size_t>(kWarpSharedChunks<E, T>) * 16;

template <class T>
std::size_t shared_bytes(int elements, int warps) {
    const std::size_t per_warp =
        by_channels<std::size_t>(elements, kWarpSharedBytes<1, T>, kWarpSharedBytes<3, T>, kWarpSharedBytes<4, T>);
    return per_warp * static_cast<std::size_t>(warps);
}

// Pass 2 for one row r of the warp's 32 (image row y): carry[j] holds out(x, y - 1) for the lane's
// elements and becomes out(x, y), which is stored. rowleft[c] of lane r is row r's sum left of the
// tile. `stage` is the warp's staging area; `strip_inside`: the tile lies inside the image's width.
template <int E, class T>
__device__ __forceinline__ void write_output_row(const LaneRow<E>& row, int r, const std::uint32_t (&rowleft)[E],
                                                 T (&carry)[kPixelsPerLane<E> * E], const ImageView<T>& out, int plane, int y,
                                                 int tile_x, const Grid& g, int lane, uint4* stage, bool strip_inside) {
    constexpr int P = kPixelsPerLane<E>;
    constexpr int kLaneElements = P * E;
#pragma unroll
    for (int c = 0; c < E; ++c) {
        std::uint32_t own[P];
        std::uint32_t run = 0;
#pragma unroll
        for (int p = 0; p < P; ++p) own[p] = (run += row.byte(p * E + c));
        const std::uint32_t before = warp::exclusive_scan(run, lane) + __shfl_sync(kFullMask, rowleft[c], r);
#pragma unroll
        for (int p = 0; p < P; ++p) carry[p * E + c] += static_cast<T>(before + own[p]);
    }
    T* dst = out.row(y, plane) + static_cast<std::size_t>(tile_x) * g.tile_width * E;
    if (strip_inside && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0) {
        // Staged: each lane writes its chunks, then each store instruction takes 32 consecutive chunks.
        constexpr int kChunks = kLaneChunks<E, T>;
        constexpr int kPerChunk = 16 / static_cast<int>(sizeof(T));
        static_assert(kPerChunk * kChunks == kLaneElements, "a lane's elements fill whole chunks");
#pragma unroll
        for (int q = 0; q < kChunks; ++q) {
            uint4 chunk;
            if constexpr (sizeof(T) == 4) {
                chunk = make_uint4(carry[q * 4], carry[q * 4 + 1], carry[q * 4 + 2], carry[q * 4 + 3]);
            } else {
                chunk = make_uint4(static_cast<unsigned>(carry[q * 2]), static_cast<unsigned>(carry[q * 2] >> 32),
                                   static_cast<unsigned>(carry[q * 2 + 1]), static_cast<unsigned>(carry[q * 2 + 1] >> 32));
            }
            stage[padded(lane * kChunks + q)] = chunk;
        }
        __syncwarp();
#pragma unroll
        for (int q = 0; q < kChunks; ++q) __stcs(reinterpret_cast<uint4*>(dst) + q * kWarp + lane, stage[padded(q * kWarp + lane)]);
        __syncwarp();  // the stage is read before the next row overwrites it
    } else {
        const int x0 = tile_x * g.tile_width + lane * P;
        T* mine = out.row(y, plane) + static_cast<std::size_t>(x0) * E;
#pragma unroll
        for (int p = 0; p < P; ++p)
#pragma unroll
            for (int c = 0; c < E; ++c)
                if (x0 + p < g.width) mine[p * E + c] = carry[p * E + c];
    }
}

}  // namespace klab::integral_tiles
