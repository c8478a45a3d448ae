// integral.scan — inclusive summed-area table per channel by reduce-then-scan over tiles.
//
// Technique (the "reduce, scan the aggregates, scan again" form of a parallel prefix sum, applied
// in 2D, cf. Nehab et al., "GPU-efficient recursive filtering and summed-area tables", 2011): the
// image is cut into tiles of one warp's strip of pixels (256 gray or 128 colour pixels wide) by
// 32 rows. out(x,y) for x in tile column I and y in tile row K splits into four sums:
//     out(x,y) = corner(I,K)                     pixels left of the tile and above it
//              + prefix_x(columns above)(x)      in the tile's columns, above the tile
//              + rowleft(I, y)                   in row y, left of the tile (added per row)
//              + the tile's own 2D prefix        walking down the tile with a column carry
// Three kernels compute them:
//   1. integral_tile_sums: per tile, each row's sum and each column's sum (reads the image once);
//   2. integral_scan_aux: exclusive scans of those small arrays (row sums across tile columns,
//      column sums down tile rows) and a 2D exclusive scan of the tile totals (the corners);
//   3. integral_tile_scan: per tile, a warp walks its 32 rows: each lane prefixes its own pixels,
//      a shuffle scan across the warp gives the row's prefix, the column carry accumulates the
//      rows, and the row is stored through shared memory so that each store instruction writes
//      512 contiguous bytes (reads the image a second time, writes the output once). Staging the
//      stores halved this kernel's time on 8K gray u64 (186.9 -> 91.6 us, same GPU and method).
// Traffic: 2 reads of the u8 image + 1 write of the u32/u64 output + a few percent of aggregates,
// against the floor of 1 read + 1 write: 6 vs 5 bytes per gray pixel (u32), 10 vs 9 (u64).
// Exactness: every value is an integer sum; the aggregates fit u32 (a row sum of one tile is at
// most 256*255, a row prefix at most 2^17*255 < 2^25, a column sum at most 2^17*255); the carry and
// the corners use the output's type, which the numeric contract picks so that no sum overflows
// (docs/numeric-contract.md).
// Preconditions: 1, 3 or 4 channels, AoS or SoA (each SoA plane is a gray image), any pitch (vector
// loads and stores are used only where a row is aligned for them), any size. The block is 32 x N:
// one warp per tile, N tiles side by side; the tile scan takes (32*P*E*sizeof(T)*9/8 + 16) bytes of
// shared memory per warp (P pixels per lane: 8 gray, 4 colour), 2.3 KB for gray u64.
// Scratch memory: the aggregates (about 1/30 of a u32 output; see ScratchLayout) are the plan's
// scratch (scratch_bytes(); prepare() allocates it, enqueue() allocates nothing).
// Concurrency: each plan owns its scratch, so plans on different streams may run at once; two
// launches of one plan share it and must not overlap (launch a plan on one stream at a time).
// Deliberately not done: no single-pass decoupled look-back (it would save the second read of the
// image, 1 byte per pixel).
// Known cost: integral_scan_aux scans the column sums one warp per line, so a warp's loads lie a
// line's stride apart (30 KB on 8K gray, uncoalesced); a thread per line reads them coalesced and
// is the next thing to measure.
// Measured on an NVIDIA H200 (before the aggregates moved into the plan's scratch; the kernels are
// unchanged), default block 32x4, by Nsight Compute (`bash scripts/op-times.sh`:
// gpu__time_duration, L2 flushed before each kernel, clocks not locked):
//   8K gray 7680x4320 -> u64: tile sums 18.9 us + aux scans 37.7 us + tile scan 91.6 us = 148.2 us;
//     floor 1 + 8 bytes per pixel = 298.6 MB, 86.9 us at BASELINES.md's 8K-copy rate (99.5 MB
//     copied in 57.9 us, 3.44 TB/s): 1.7x the floor (2.1x at the 4.2 TB/s of a 2 GiB copy).
//   4096x4096 gray -> u32: 10.8 + 19.7 + 24.2 = 54.7 us; floor 1 + 4 bytes per pixel = 83.9 MB,
//     24.4 us: 2.2x, the aux scans the largest excess (Nsight's L2 flush makes them read the
//     aggregates from DRAM; in a launch the first kernel has just written them to L2).
// For scale (BASELINES.md, not this run): NPP's 8K gray integral (u32) takes 1004 us.
#include <cstddef>
#include <cstdint>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/reference/reference.hpp"
#include "harness/variant.hpp"
#include "kernels/warp_scan.hpp"

namespace klab {
namespace {

constexpr int kWarp = 32;
constexpr int kBandRows = 32;        // rows per tile: one per lane (row aggregates travel by shuffle)
constexpr int kRowGroup = 4;         // rows loaded ahead of the one being scanned
constexpr int kAuxBlock = 256;       // threads per block of the aggregate scans
constexpr unsigned kFullMask = 0xffffffffu;

// Pixels per lane: 8 for gray (an 8-byte load per row), 4 for RGB and RGBA (12 and 16 bytes).
template <int E>
constexpr int kPixelsPerLane = E == 1 ? 8 : 4;
int pixels_per_lane(int elements) { return elements == 1 ? 8 : 4; }
int tile_width(int elements) { return kWarp * pixels_per_lane(elements); }

// The shape of the problem as the kernels see it: `planes` images of `elements` interleaved
// channels (SoA: channels planes of 1 element; AoS: 1 plane of `channels` elements).
struct Geometry {
    int width = 0;
    int height = 0;
    int planes = 1;
    int elements = 1;
    int tiles_x = 0;
    int tiles_y = 0;
};

Geometry geometry_of(const ImageShape& shape) {
    Geometry g;
    g.width = shape.width;
    g.height = shape.height;
    g.planes = shape.layout == Layout::soa ? shape.channels : 1;
    g.elements = shape.layout == Layout::soa ? 1 : shape.channels;
    g.tiles_x = static_cast<int>(grid_side(shape.width, tile_width(g.elements)));
    g.tiles_y = static_cast<int>(grid_side(shape.height, kBandRows));
    return g;
}

// The scratch arrays, carved out of the plan's one scratch block, each starting at a multiple of
// 256 bytes (the block itself is 256-byte aligned), so every array is aligned for any access:
//   rows    u32 [tiles_x][planes][height][elements]  row sums of each tile, then their exclusive
//                                                   scan across tile columns (rowleft)
//   columns u32 [tiles_y][planes][width*elements]    column sums of each tile, then their exclusive
//                                                   scan down tile rows
//   corners u64 [tiles_y][tiles_x][planes][elements] tile totals, then their 2D exclusive scan
struct ScratchLayout {
    std::size_t rows_offset = 0, columns_offset = 0, corners_offset = 0, bytes = 0;
};

std::size_t round_up_256(std::size_t n) { return (n + 255) / 256 * 256; }

ScratchLayout scratch_layout(const Geometry& g) {
    const std::size_t rows = static_cast<std::size_t>(g.tiles_x) * g.planes * g.height * g.elements;
    const std::size_t columns = static_cast<std::size_t>(g.tiles_y) * g.planes * g.width * g.elements;
    const std::size_t corners = static_cast<std::size_t>(g.tiles_x) * g.tiles_y * g.planes * g.elements;
    ScratchLayout s;
    s.rows_offset = 0;
    s.columns_offset = round_up_256(rows * sizeof(std::uint32_t));
    s.corners_offset = s.columns_offset + round_up_256(columns * sizeof(std::uint32_t));
    s.bytes = s.corners_offset + round_up_256(corners * sizeof(std::uint64_t));
    return s;
}

// ---------------------------------------------------------------------------------------------
// Device helpers (the warp sums and scans are kernels/warp_scan.hpp's)

// The P pixels (P*E bytes) of this lane in row y of plane p, packed little-endian into P*E/4 words
// (zero beyond the image's width): plain 4-byte loads where the run is inside the row and 4-byte
// aligned, byte loads otherwise. P*E is 8, 12 or 16.
template <int E, int P>
__device__ __forceinline__ void load_words(const ImageView<const std::uint8_t>& in, int plane, int y, int x0,
                                           unsigned (&w)[P * E / 4]) {
    const std::uint8_t* src = in.row(y, plane) + static_cast<std::size_t>(x0) * E;
    if (x0 + P <= in.shape.width && reinterpret_cast<std::uintptr_t>(src) % 4 == 0) {
#pragma unroll
        for (int i = 0; i < P * E / 4; ++i) w[i] = __ldg(reinterpret_cast<const unsigned*>(src) + i);
        return;
    }
#pragma unroll
    for (int i = 0; i < P * E / 4; ++i) w[i] = 0;
#pragma unroll
    for (int j = 0; j < P * E; ++j)
        if (x0 + j / E < in.shape.width) w[j / 4] |= static_cast<unsigned>(__ldg(src + j)) << (8 * (j % 4));
}

// Byte j of a lane's packed pixels (j = pixel * E + channel).
template <int N>
__device__ __forceinline__ unsigned byte_of(const unsigned (&w)[N], int j) {
    return (w[j / 4] >> (8 * (j % 4))) & 0xffu;
}

// Stores this lane's P pixels of row y; 16-byte vector stores where the row is 16-byte aligned
// (a lane's run starts at a multiple of 16 bytes within the row).
template <int E, int P, class T>
__device__ __forceinline__ void store_pixels(const ImageView<T>& out, int plane, int y, int x0, const T (&v)[P * E]) {
    T* dst = out.row(y, plane) + static_cast<std::size_t>(x0) * E;
    constexpr int kPerVector = 16 / static_cast<int>(sizeof(T));
    if (x0 + P <= out.shape.width && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0) {
#pragma unroll
        for (int w = 0; w < P * E / kPerVector; ++w) {
            uint4 word;
            if constexpr (sizeof(T) == 4) {
                word = make_uint4(v[w * 4], v[w * 4 + 1], v[w * 4 + 2], v[w * 4 + 3]);
            } else {
                word = make_uint4(static_cast<unsigned>(v[w * 2]), static_cast<unsigned>(v[w * 2] >> 32),
                                  static_cast<unsigned>(v[w * 2 + 1]), static_cast<unsigned>(v[w * 2 + 1] >> 32));
            }
            reinterpret_cast<uint4*>(dst)[w] = word;
        }
        return;
    }
#pragma unroll
    for (int k = 0; k < P; ++k)
#pragma unroll
        for (int c = 0; c < E; ++c)
            if (x0 + k < out.shape.width) dst[k * E + c] = v[k * E + c];
}

// 16-byte chunks a lane stores per row, and the per-warp staging area in shared memory for them:
// 32 lanes' chunks plus one pad chunk per 8 (which spreads a lane's chunks over the banks).
template <int E, class T>
constexpr int kChunksPerLane = kPixelsPerLane<E> * E * static_cast<int>(sizeof(T)) / 16;
template <int E, class T>
constexpr int kStageChunks = kWarp * kChunksPerLane<E, T> * 9 / 8 + 1;
__device__ __forceinline__ int padded_chunk(int i) { return i + i / 8; }

// Stores the warp's row of a tile through shared memory, so that each store instruction writes
// 512 contiguous bytes (the lanes' own runs are 32 to 128 bytes apart). For a warp whose strip
// lies inside the image and a row that is 16-byte aligned; `row` is the strip's first element.
template <int E, int P, class T>
__device__ __forceinline__ void store_row_staged(T* row, uint4* stage, int lane, const T (&v)[P * E]) {
    constexpr int kChunks = kChunksPerLane<E, T>;
    __syncwarp();  // the previous row's reads of the stage are done
#pragma unroll
    for (int w = 0; w < kChunks; ++w) {
        uint4 word;
        if constexpr (sizeof(T) == 4) {
            word = make_uint4(v[w * 4], v[w * 4 + 1], v[w * 4 + 2], v[w * 4 + 3]);
        } else {
            word = make_uint4(static_cast<unsigned>(v[w * 2]), static_cast<unsigned>(v[w * 2] >> 32),
                              static_cast<unsigned>(v[w * 2 + 1]), static_cast<unsigned>(v[w * 2 + 1] >> 32));
        }
        stage[padded_chunk(lane * kChunks + w)] = word;
    }
    __syncwarp();
#pragma unroll
    for (int w = 0; w < kChunks; ++w) {
        reinterpret_cast<uint4*>(row)[w * kWarp + lane] = stage[padded_chunk(w * kWarp + lane)];
    }
}

struct Aggregates {
    std::uint32_t* rows;
    std::uint32_t* columns;
    std::uint64_t* corners;
};

// ---------------------------------------------------------------------------------------------
// Kernel 1: each tile's row sums, column sums and total.

template <int E>
__global__ void integral_tile_sums(ImageView<const std::uint8_t> in, Aggregates agg, int tiles_x) {
    constexpr int P = kPixelsPerLane<E>;
    const int tile_x = static_cast<int>(blockIdx.x * blockDim.y + threadIdx.y);
    if (tile_x >= tiles_x) return;  // the whole warp leaves together
    const int lane = static_cast<int>(threadIdx.x);
    const int tile_y = static_cast<int>(blockIdx.y);
    const int plane = static_cast<int>(blockIdx.z);
    const int planes = static_cast<int>(gridDim.z);
    const int width = in.shape.width;
    const int height = in.shape.height;
    const int x0 = tile_x * kWarp * P + lane * P;
    const int y0 = tile_y * kBandRows;
    const int y1 = min(y0 + kBandRows, height);

    constexpr int W = P * E / 4;  // words per lane per row
    std::uint32_t column[P * E] = {};
    std::uint32_t my_row[E] = {};  // lane r keeps row y0 + r's sums, stored together at the end
    // Rows in groups of kRowGroup, the next group's loads in flight while this one is summed.
    unsigned group[kRowGroup][W];
    unsigned next[kRowGroup][W];
#pragma unroll
    for (int g = 0; g < kRowGroup; ++g)
        if (y0 + g < y1) load_words<E, P>(in, plane, y0 + g, x0, group[g]);
    for (int yg = y0; yg < y1; yg += kRowGroup) {
#pragma unroll
        for (int g = 0; g < kRowGroup; ++g)
            if (yg + kRowGroup + g < y1) load_words<E, P>(in, plane, yg + kRowGroup + g, x0, next[g]);
#pragma unroll
        for (int g = 0; g < kRowGroup; ++g) {
            if (yg + g >= y1) break;
#pragma unroll
            for (int c = 0; c < E; ++c) {
                std::uint32_t s = 0;
#pragma unroll
                for (int k = 0; k < P; ++k) s += byte_of(group[g], k * E + c);
                s = warp::sum(s);
                if (lane == yg + g - y0) my_row[c] = s;
            }
#pragma unroll
            for (int j = 0; j < P * E; ++j) column[j] += byte_of(group[g], j);
        }
#pragma unroll
        for (int g = 0; g < kRowGroup; ++g)
#pragma unroll
            for (int i = 0; i < W; ++i) group[g][i] = next[g][i];
    }
    if (y0 + lane < y1) {
#pragma unroll
        for (int c = 0; c < E; ++c)
            agg.rows[((static_cast<std::size_t>(tile_x) * planes + plane) * height + y0 + lane) * E + c] = my_row[c];
    }
    std::uint32_t* columns = agg.columns + (static_cast<std::size_t>(tile_y) * planes + plane) * width * E;
#pragma unroll
    for (int k = 0; k < P; ++k)
#pragma unroll
        for (int c = 0; c < E; ++c)
            if (x0 + k < width) columns[static_cast<std::size_t>(x0 + k) * E + c] = column[k * E + c];
#pragma unroll
    for (int c = 0; c < E; ++c) {
        std::uint32_t s = 0;  // at most 256 * 32 * 255 < 2^22
#pragma unroll
        for (int k = 0; k < P; ++k) s += column[k * E + c];
        s = warp::sum(s);
        if (lane == 0) agg.corners[((static_cast<std::size_t>(tile_y) * tiles_x + tile_x) * planes + plane) * E + c] = s;
    }
}

// ---------------------------------------------------------------------------------------------
// Kernel 2: exclusive scans of the aggregates.

// data[0], data[stride], ... data[(count-1)*stride] becomes its exclusive prefix sum. Loads go in
// batches of 32, so that one thread waits for memory once per batch, not once per element.
template <class V>
__device__ void exclusive_scan_strided(V* data, int count, std::size_t stride) {
    constexpr int kBatch = 32;
    V sum = 0;
    for (int i0 = 0; i0 < count; i0 += kBatch) {
        V v[kBatch];
#pragma unroll
        for (int k = 0; k < kBatch; ++k) v[k] = i0 + k < count ? data[(i0 + k) * stride] : V{0};
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
            if (i0 + k < count) {
                data[(i0 + k) * stride] = sum;
                sum += v[k];
            }
        }
    }
}

// The same for a long line, by one warp: each lane takes 8 consecutive elements of a pass of 256,
// so that a line of up to 256 elements costs one wait for memory.
template <class V>
__device__ void warp_exclusive_scan_strided(V* data, int count, std::size_t stride) {
    constexpr int kPerLane = 8;
    const int lane = static_cast<int>(threadIdx.x % kWarp);
    V carry = 0;
    for (int base = 0; base < count; base += kWarp * kPerLane) {
        const int first = base + lane * kPerLane;
        V v[kPerLane];
#pragma unroll
        for (int k = 0; k < kPerLane; ++k) v[k] = first + k < count ? data[(first + k) * stride] : V{0};
        V run = 0;  // this lane's elements become their exclusive prefix within the lane
#pragma unroll
        for (int k = 0; k < kPerLane; ++k) {
            const V x = v[k];
            v[k] = run;
            run += x;
        }
        const V before = carry + warp::exclusive_scan(run, lane);
#pragma unroll
        for (int k = 0; k < kPerLane; ++k)
            if (first + k < count) data[(first + k) * stride] = before + v[k];
        carry = __shfl_sync(kFullMask, before + run, kWarp - 1);
    }
}

// Blocks [0, row_blocks): the row sums of each (plane, row, element), scanned across tile columns,
// one thread per line. Blocks [row_blocks, row_blocks + column_blocks): the column sums, scanned
// down tile rows, one warp per line (the lines are longer). The last block: the tile totals,
// scanned across tile columns (a thread per line), then down tile rows (a warp per line).
__global__ void __launch_bounds__(kAuxBlock) integral_scan_aux(Aggregates agg, int width, int height, int planes,
                                                               int elements, int tiles_x, int tiles_y, int row_blocks,
                                                               int column_blocks) {
    const int block = static_cast<int>(blockIdx.x);
    const int t = static_cast<int>(threadIdx.x);
    constexpr int kWarpsPerBlock = kAuxBlock / kWarp;
    if (block < row_blocks) {
        const std::size_t lines = static_cast<std::size_t>(planes) * height * elements;
        const std::size_t i = static_cast<std::size_t>(block) * blockDim.x + t;
        if (i < lines) exclusive_scan_strided(agg.rows + i, tiles_x, lines);
        return;
    }
    if (block < row_blocks + column_blocks) {
        const std::size_t lines = static_cast<std::size_t>(planes) * width * elements;
        const std::size_t i = static_cast<std::size_t>(block - row_blocks) * kWarpsPerBlock + t / kWarp;
        if (i < lines) warp_exclusive_scan_strided(agg.columns + i, tiles_y, lines);  // i is the same for the warp
        return;
    }
    const int channels = planes * elements;
    for (int m = t; m < tiles_y * channels; m += static_cast<int>(blockDim.x)) {
        const int ty = m / channels;
        const int pc = m % channels;
        exclusive_scan_strided(agg.corners + static_cast<std::size_t>(ty) * tiles_x * channels + pc, tiles_x,
                               static_cast<std::size_t>(channels));
    }
    __syncthreads();
    for (int m = t / kWarp; m < tiles_x * channels; m += kWarpsPerBlock) {
        warp_exclusive_scan_strided(agg.corners + m, tiles_y, static_cast<std::size_t>(tiles_x) * channels);
    }
}

// ---------------------------------------------------------------------------------------------
// Kernel 3: each tile's output, from the image and the scanned aggregates.

template <int E, class T>
__global__ void integral_tile_scan(ImageView<const std::uint8_t> in, ImageView<T> out, Aggregates agg, int tiles_x) {
    constexpr int P = kPixelsPerLane<E>;
    extern __shared__ uint4 stages[];  // kStageChunks<E, T> per warp of the block
    const int tile_x = static_cast<int>(blockIdx.x * blockDim.y + threadIdx.y);
    if (tile_x >= tiles_x) return;  // the whole warp leaves together
    const int lane = static_cast<int>(threadIdx.x);
    const int tile_y = static_cast<int>(blockIdx.y);
    const int plane = static_cast<int>(blockIdx.z);
    const int planes = static_cast<int>(gridDim.z);
    const int width = in.shape.width;
    const int height = in.shape.height;
    const int x0 = tile_x * kWarp * P + lane * P;
    const int y0 = tile_y * kBandRows;
    const int y1 = min(y0 + kBandRows, height);

    // The carry starts as out(x, y0 - 1): the corner plus the prefix, along the tile's columns,
    // of the column sums above the tile.
    T carry[P * E];
    {
        const std::uint32_t* above = agg.columns + (static_cast<std::size_t>(tile_y) * planes + plane) * width * E;
        const std::uint64_t* corner =
            agg.corners + ((static_cast<std::size_t>(tile_y) * tiles_x + tile_x) * planes + plane) * E;
#pragma unroll
        for (int c = 0; c < E; ++c) {
            T run = 0;
#pragma unroll
            for (int k = 0; k < P; ++k) {
                run += x0 + k < width ? above[static_cast<std::size_t>(x0 + k) * E + c] : 0u;
                carry[k * E + c] = run;
            }
            const T before = warp::exclusive_scan(run, lane) + static_cast<T>(corner[c]);
#pragma unroll
            for (int k = 0; k < P; ++k) carry[k * E + c] += before;
        }
    }

    // The band's row-left sums, one row per lane, loaded once and broadcast by shuffle.
    std::uint32_t rowleft[E] = {};
    if (y0 + lane < y1) {
        const std::uint32_t* rows = agg.rows + ((static_cast<std::size_t>(tile_x) * planes + plane) * height + y0 + lane) * E;
#pragma unroll
        for (int c = 0; c < E; ++c) rowleft[c] = rows[c];
    }

    // A strip wholly inside the image stores its rows through shared memory (store_row_staged).
    const bool strip_inside = (tile_x + 1) * kWarp * P <= width;
    uint4* stage = stages + threadIdx.y * kStageChunks<E, T>;

    constexpr int W = P * E / 4;  // words per lane per row
    unsigned group[kRowGroup][W];
    unsigned next[kRowGroup][W];
#pragma unroll
    for (int g = 0; g < kRowGroup; ++g)
        if (y0 + g < y1) load_words<E, P>(in, plane, y0 + g, x0, group[g]);
    for (int yg = y0; yg < y1; yg += kRowGroup) {
        // The next group's loads are in flight while this group is scanned and stored.
#pragma unroll
        for (int g = 0; g < kRowGroup; ++g)
            if (yg + kRowGroup + g < y1) load_words<E, P>(in, plane, yg + kRowGroup + g, x0, next[g]);
#pragma unroll
        for (int g = 0; g < kRowGroup; ++g) {
            const int y = yg + g;
            if (y >= y1) break;
#pragma unroll
            for (int c = 0; c < E; ++c) {
                // Row prefix: rowleft + lanes below + this lane's own pixels (fits u32: at most W * 255).
                std::uint32_t run = 0;
                std::uint32_t own[P];
#pragma unroll
                for (int k = 0; k < P; ++k) own[k] = (run += byte_of(group[g], k * E + c));
                const std::uint32_t before =
                    warp::exclusive_scan(run, lane) + __shfl_sync(kFullMask, rowleft[c], y - y0);
#pragma unroll
                for (int k = 0; k < P; ++k) carry[k * E + c] += static_cast<T>(before + own[k]);
            }
            T* row = out.row(y, plane) + static_cast<std::size_t>(tile_x) * kWarp * P * E;
            if (strip_inside && reinterpret_cast<std::uintptr_t>(row) % 16 == 0) {
                store_row_staged<E, P, T>(row, stage, lane, carry);
            } else {
                store_pixels<E, P, T>(out, plane, y, x0, carry);
            }
        }
#pragma unroll
        for (int g = 0; g < kRowGroup; ++g)
#pragma unroll
            for (int i = 0; i < W; ++i) group[g][i] = next[g][i];
    }
}

// ---------------------------------------------------------------------------------------------
// The variant

using SumsKernel = void (*)(ImageView<const std::uint8_t>, Aggregates, int);
template <class T>
using ScanKernel = void (*)(ImageView<const std::uint8_t>, ImageView<T>, Aggregates, int);

SumsKernel sums_kernel(int elements) {
    return by_channels<SumsKernel>(elements, &integral_tile_sums<1>, &integral_tile_sums<3>, &integral_tile_sums<4>);
}
template <class T>
ScanKernel<T> scan_kernel(int elements) {
    return by_channels<ScanKernel<T>>(elements, &integral_tile_scan<1, T>, &integral_tile_scan<3, T>,
                                      &integral_tile_scan<4, T>);
}

// The scan kernel's shared memory: one staging area per warp.
template <class T>
std::size_t stage_bytes(int elements, int warps) {
    const int chunks = by_channels<int>(elements, kStageChunks<1, T>, kStageChunks<3, T>, kStageChunks<4, T>);
    return static_cast<std::size_t>(chunks) * sizeof(uint4) * static_cast<std::size_t>(warps);
}

bool needs_u64(const Problem& problem) {
    return reference::integral_type(problem.shape.width, problem.shape.height) == reference::IntegralType::u64;
}

class IntegralScan final : public Variant {
public:
    std::string name() const override { return "integral.scan"; }
    Operation op() const override { return Operation::integral; }
    std::string technique() const override {
        return "reduce-then-scan over warp-wide tiles: tile sums, scans of the sums, tile scans with carries";
    }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x = {32};
        space.block_y = {1, 2, 4, 8, 16, 32};
        space.default_shape = LaunchShape{32, 4, {}};
        return space;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        if (shape.block_x != kWarp || shape.block_y < 1 || shape.block_y > 32) {
            return Support::no(fmt::format("block {}x{}: the block is 32xN, one warp per tile, N from 1 to 32",
                                           shape.block_x, shape.block_y));
        }
        return Support::yes();
    }

    std::size_t scratch_bytes(const Problem& problem, const LaunchShape&) const override {
        return scratch_layout(geometry_of(problem.shape)).bytes;
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Geometry g = geometry_of(problem.shape);
        const dim3 tiles(grid_side(g.tiles_x, shape.block_y), static_cast<unsigned>(g.tiles_y),
                         static_cast<unsigned>(g.planes));
        const dim3 block = block_of(shape);
        const AuxBlocks aux = aux_blocks(g);
        KernelLaunch scan =
            needs_u64(problem)
                ? make_launch(scan_kernel<std::uint64_t>(g.elements), "integral_tile_scan<u64>", tiles, block,
                              stage_bytes<std::uint64_t>(g.elements, shape.block_y))
                : make_launch(scan_kernel<std::uint32_t>(g.elements), "integral_tile_scan<u32>", tiles, block,
                              stage_bytes<std::uint32_t>(g.elements, shape.block_y));
        return {make_launch(sums_kernel(g.elements), "integral_tile_sums", tiles, block),
                make_launch(&integral_scan_aux, "integral_scan_aux", dim3(static_cast<unsigned>(aux.rows + aux.columns + 1)),
                            dim3(kAuxBlock)),
                scan};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const Geometry g = geometry_of(plan.problem.shape);
        const ScratchLayout layout = scratch_layout(g);
        auto* base = plan.scratch_as<unsigned char>();  // layout.bytes, allocated by prepare()
        const Aggregates agg{reinterpret_cast<std::uint32_t*>(base + layout.rows_offset),
                             reinterpret_cast<std::uint32_t*>(base + layout.columns_offset),
                             reinterpret_cast<std::uint64_t*>(base + layout.corners_offset)};
        const auto in = plan.buffers.input.view<const std::uint8_t>();
        const AuxBlocks aux = aux_blocks(g);
        enqueue_kernel(plan.kernels[0], stream, sums_kernel(g.elements), in, agg, g.tiles_x);
        enqueue_kernel(plan.kernels[1], stream, &integral_scan_aux, agg, g.width, g.height, g.planes, g.elements,
                       g.tiles_x, g.tiles_y, aux.rows, aux.columns);
        if (needs_u64(plan.problem)) {
            enqueue_kernel(plan.kernels[2], stream, scan_kernel<std::uint64_t>(g.elements), in,
                           plan.buffers.output.view<std::uint64_t>(), agg, g.tiles_x);
        } else {
            enqueue_kernel(plan.kernels[2], stream, scan_kernel<std::uint32_t>(g.elements), in,
                           plan.buffers.output.view<std::uint32_t>(), agg, g.tiles_x);
        }
    }

private:
    struct AuxBlocks {
        int rows;
        int columns;
    };
    static AuxBlocks aux_blocks(const Geometry& g) {
        const long long row_lines = static_cast<long long>(g.planes) * g.height * g.elements;
        const long long column_lines = static_cast<long long>(g.planes) * g.width * g.elements;
        constexpr int kWarpsPerBlock = kAuxBlock / kWarp;  // the column lines take a warp each
        return {static_cast<int>((row_lines + kAuxBlock - 1) / kAuxBlock),
                static_cast<int>((column_lines + kWarpsPerBlock - 1) / kWarpsPerBlock)};
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::IntegralScan)
