// integral.lookback — inclusive summed-area table per channel in one pass: decoupled look-back
// across tiles, in two directions.
//
// Technique: a block of 32 x N threads (N warps, tuned) owns a tile of 32 * P pixels (P = 8 gray,
// 4 colour: 256 or 128 pixels) by 32 * N rows, warp w its rows 32w ... 32w + 31. Tiles take their
// index from an atomic counter when their block starts (row-major in each plane, planes one after
// another), so that every tile a block waits for belongs to a block that started earlier (CUB's
// single-pass scan, Merrill and Garland, "Single-pass Parallel Prefix Scan with Decoupled
// Look-back", 2016, applied along rows and along columns). For out(x, y) with x in the tile's
// columns and y in its rows:
//     out(x, y) = out(x, y0 - 1) + sum over y0 <= y' <= y of R(x, y'),
//     R(x, y') = rowleft(y') + (the row prefix of row y' inside the tile, up to x),
// where rowleft(y') is the sum of row y' left of the tile and out(x, y0 - 1) the row above the tile.
// Each block:
//   1. reads its tile (pass 1): each row's sum and each column's sum;
//   2. publishes its row sums (the horizontal aggregate) and looks back along its tile row for
//      rowleft: the tiles to the left, nearest first, adding their aggregates until one has
//      published its inclusive row prefixes (rowleft + row sums), which it adds and stops;
//   3. publishes its inclusive row prefixes, then its vertical aggregate: the column sums of R
//      over its rows (sum of rowleft over the rows plus the prefix along x of the column sums);
//   4. looks back up its tile column the same way for out(x, y0 - 1) and publishes the inclusive
//      row out(x, y0 + 32N - 1) = that + its aggregate;
//   5. reads its tile again (pass 2, from L2) and writes the output rows: per row a warp scan of
//      the lanes' sums plus rowleft, added into a running column carry; each row is staged through
//      shared memory so that a store instruction writes 512 contiguous bytes, as streaming stores
//      (evict-first in L2, so that the 265 MB of an 8K u64 table do not push the image out of L2
//      before pass 2 reads it again).
// A look-back reads the status flags of up to 32 predecessor tiles at once (one per lane of warp 0,
// each waiting until its tile has published at least an aggregate), then every thread adds the
// values of its rows or columns from those tiles: one round trip to L2 for a window of 32 tiles.
// Publishing: values stored, __threadfence, __syncthreads, then one thread stores the flag with
// release semantics; reading: the flags with acquire semantics, __syncthreads, then the values
// through L2 (ld.global.cg). A small first kernel clears the counter and the flags (CUB's tile-status
// initialisation kernel does the same).
// Traffic: the image is read from DRAM once (pass 2 finds it in L2) and the output written once;
// each tile writes 2 * E * (32N * 4 + 32P * sizeof(T)) bytes of status values (E channels: its
// row aggregates and inclusive rows, u32, and its column aggregates and last output row, T), read
// back by the look-backs of the tiles after it: 6 KB against a tile's 512 KB of output for gray
// u64 with N = 8.
// Exactness: every value is an integer sum; row sums and row prefixes fit u32 (at most 2^17 * 255);
// the vertical values and the carries use the output's type, which the numeric contract's rule
// picks so that no sum of the image overflows it (docs/numeric-contract.md).
// Preconditions: 1, 3 or 4 channels, AoS or SoA (each SoA plane is a gray image), any pitch (vector
// loads and staged stores only where rows are aligned for them), any size. Block 32 x N, N from 1
// to 16. Scratch: the counter, two flags per tile, the status values (scratch_bytes()).
// Concurrency: each plan owns its scratch, so plans on different streams may run at once; two
// launches of one plan share it and must not overlap (launch a plan on one stream at a time).
// What it adds over integral.scan (three kernels: tile sums, scans of the sums, tile scans): one
// pass, no separate scan of the aggregates (its 37.7 us aux kernel on 8K gray), the image read
// from DRAM once.
// Deliberately not done: no tile kept in shared memory between the passes (pass 2 reads L2), no
// TMA stores.
// Where its time goes (globaltimer per block, 8K gray, H200, 2026-11-25): a tile's reads end at
// 11.8 us on average, its look-backs at 18.4 and 27.5 us, and only then does it start writing; the
// look-backs' round trips to L2 wait behind the other tiles' output. integral.tile_gather drops
// them. Pass 1 and pass 2 live in kernels/integral_tiles.hpp, shared with integral.tile_gather.
// Measured on an NVIDIA H200 (bash scripts/gpu-ops.sh, device run of 2026-11-24; klab-bench, L2
// flushed, tuned blocks, medians of 3): 8K gray u64 109 us (1.55x the copy floor of its 298 MB;
// npp.integral 1048 us: 9.6x faster; integral.scan 138 us), 4K gray u32 33.7 us (2.3x), 4096x4096
// gray u32 39.4 us (npp 521 us: 13x), 8K RGB AoS u64 343 us (1.6x). Nsight Compute, 8K gray: 62 MB
// read, 239 MB written, 32 M warp instructions, issue slots 32% busy, 64 registers, occupancy 45%.
// With the shared pass 1 (dp4a row sums, 16-bit column sums; 2026-11-25): 8K gray 108.5 us.
// Pass 2 steps a pointer where the warp lies inside the image (for_each_row, 2026-11-26); pass 1
// maps every row, as the stepped copy of it spills in the gray u64 kernel. results/nvidia-h200/ has
// the committed run's figures.
#include <cstddef>
#include <cstdint>

#include "harness/kernel_launch.hpp"
#include "harness/variant.hpp"
#include "kernels/integral_tiles.hpp"
#include "kernels/warp_scan.hpp"

namespace klab {
namespace {

using namespace integral_tiles;

constexpr int kInitBlock = 256;

// Tile status flags.
constexpr unsigned kNothing = 0;    // not published yet (what the initialisation kernel writes)
constexpr unsigned kAggregate = 1;  // the tile's own sums
constexpr unsigned kInclusive = 2;  // its sums plus everything before it along the line

// The plan's scratch, each array at a multiple of 256 bytes:
//   counter   u32                          tile tickets
//   flags     u32 [2][tiles]               horizontal, then vertical status per tile
//   row_agg   u32 [tiles][tile_height][E]  row sums;            row_inc: rowleft + row sums
//   col_agg   T   [tiles][tile_width][E]   vertical aggregates; col_inc: the tile's last output row
struct ScratchLayout {
    std::size_t flags = 0, row_agg = 0, row_inc = 0, col_agg = 0, col_inc = 0, bytes = 0;
    std::size_t clear_words = 0;  // the counter and the flags, cleared before every launch
};

ScratchLayout scratch_layout(const Grid& g, std::size_t value_bytes) {
    const auto tiles = static_cast<std::size_t>(g.tiles());
    const std::size_t rows = tiles * g.tile_height * g.elements;
    const std::size_t columns = tiles * g.tile_width * g.elements;
    ScratchLayout s;
    s.flags = 256;
    s.row_agg = s.flags + round_up_256(2 * tiles * sizeof(std::uint32_t));
    s.row_inc = s.row_agg + round_up_256(rows * sizeof(std::uint32_t));
    s.col_agg = s.row_inc + round_up_256(rows * sizeof(std::uint32_t));
    s.col_inc = s.col_agg + round_up_256(columns * value_bytes);
    s.bytes = s.col_inc + round_up_256(columns * value_bytes);
    s.clear_words = s.row_agg / sizeof(std::uint32_t);
    return s;
}

template <class T>
struct Status {
    unsigned* counter;
    unsigned* flags;  // [0, tiles): horizontal; [tiles, 2 tiles): vertical
    std::uint32_t* row_agg;
    std::uint32_t* row_inc;
    T* col_agg;
    T* col_inc;
};

// ---------------------------------------------------------------------------------------------
// Device helpers

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void store_release(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// The decoupled look-back of one tile along a line of `count` predecessors (nearest first,
// predecessor j's status flag at flags[index(j)]). Warp 0 finds how many predecessors to add: up to
// and including the nearest inclusive one, or all of them; the result goes through shared memory
// to every thread (the call holds a __syncthreads for all threads of the block).
template <class Index>
__device__ int lookback_depth(const unsigned* flags, int count, Index index, bool& last_inclusive, int* shared) {
    if (threadIdx.y == 0) {
        const int lane = static_cast<int>(threadIdx.x);
        int depth = count;
        bool inclusive = false;
        for (int first = 0; first < count; first += kWarp) {
            const int j = first + lane;
            unsigned flag = kInclusive;  // beyond the line's start: nothing to wait for
            if (j < count) {
                while ((flag = load_acquire(flags + index(j))) == kNothing) __nanosleep(64);
            }
            const unsigned found = __ballot_sync(kFullMask, j < count && flag == kInclusive);
            if (found != 0) {
                depth = first + __ffs(static_cast<int>(found));  // up to and including the nearest inclusive one
                inclusive = true;
                break;
            }
        }
        if (lane == 0) shared[0] = depth, shared[1] = inclusive;
    }
    __syncthreads();
    last_inclusive = shared[1] != 0;
    return shared[0];
}

// The value of predecessor j (of `depth`) for one element: its inclusive value for the last one
// when that is inclusive, else its aggregate.
template <class V, class Index>
__device__ __forceinline__ V lookback_sum(const V* agg, const V* inc, int depth, bool last_inclusive, Index offset) {
    V sum = 0;
    for (int j = 0; j < depth; ++j) sum += __ldcg((j + 1 == depth && last_inclusive ? inc : agg) + offset(j));
    return sum;
}

// Publishes a tile's status: every thread has stored its values; after the fence and the barrier
// one thread raises the flag with release semantics.
__device__ __forceinline__ void publish(unsigned* flag, unsigned value) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) store_release(flag, value);
}

// ---------------------------------------------------------------------------------------------
// The kernels

__global__ void integral_lookback_clear(unsigned* words, std::size_t count) {
    const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < count) words[i] = 0;
}

// Gray tiles fit 64 registers (two blocks of 512 threads per SM); colour ones hold 12 or 16
// carries per lane, twice that in registers for u64, and may take up to 128.
template <int E, class T>
__global__ void __launch_bounds__(kWarp* kMaxWarps, E == 1 ? 2 : 1)
    integral_lookback_kernel(ImageView<const std::uint8_t> in, ImageView<T> out, Status<T> status, Grid g) {
    constexpr int P = kPixelsPerLane<E>;
    constexpr int kLaneElements = P * E;
    extern __shared__ uint4 shared_chunks[];
    __shared__ int ticket;
    __shared__ int lookback[2];

    const int lane = static_cast<int>(threadIdx.x);
    const int warp = static_cast<int>(threadIdx.y);
    const int warps = static_cast<int>(blockDim.y);
    const int threads = kWarp * warps;
    const int thread = warp * kWarp + lane;
    T* warp_values = reinterpret_cast<T*>(shared_chunks + warp * kWarpSharedChunks<E, T>);

    if (thread == 0) ticket = static_cast<int>(atomicAdd(status.counter, 1u));
    __syncthreads();
    const int tile = ticket;
    const int tiles_per_plane = g.tiles_x * g.tiles_y;
    const int plane = tile / tiles_per_plane;
    const int tile_y = tile % tiles_per_plane / g.tiles_x;
    const int tile_x = tile % g.tiles_x;
    const int x0 = tile_x * g.tile_width + lane * P;                // the lane's first pixel
    const int y0 = tile_y * g.tile_height + warp * kWarp;           // the warp's first row
    const int row_in_tile = warp * kWarp + lane;                    // the row this lane speaks for
    unsigned* const flags_h = status.flags;
    unsigned* const flags_v = status.flags + g.tiles();
    const int tile_rows = g.tile_height * E;  // row values per tile
    const int tile_columns = g.tile_width * E;

    // 1. Pass 1: row sums (lane r keeps row r's) and column sums (per lane element).
    std::uint32_t row_sum[E];
    std::uint32_t column_sum[kLaneElements];
    // Every warp maps its rows here: with the stepped walk's second copy of pass 1 the gray u64 kernel
    // spills at its 64-register cap (60 bytes); pass 2 below steps where the warp lies inside.
    sum_rows_and_columns<E, kRowGroup, L2Hint::none, false>(in, plane, y0, x0, lane, row_sum, column_sum);

    // 2. Row sums out, then rowleft from the tiles to the left.
    const std::size_t row_base = static_cast<std::size_t>(tile) * tile_rows + static_cast<std::size_t>(row_in_tile) * E;
#pragma unroll
    for (int c = 0; c < E; ++c) status.row_agg[row_base + c] = row_sum[c];
    std::uint32_t rowleft[E] = {};
    if (tile_x == 0) {
#pragma unroll
        for (int c = 0; c < E; ++c) status.row_inc[row_base + c] = row_sum[c];
        publish(flags_h + tile, kInclusive);
    } else {
        publish(flags_h + tile, kAggregate);
        bool last_inclusive = false;
        const int depth = lookback_depth(flags_h, tile_x, [&](int j) { return tile - 1 - j; }, last_inclusive, lookback);
#pragma unroll
        for (int c = 0; c < E; ++c) {
            rowleft[c] = lookback_sum(status.row_agg, status.row_inc, depth, last_inclusive, [&](int j) {
                return static_cast<std::size_t>(tile - 1 - j) * tile_rows + static_cast<std::size_t>(row_in_tile) * E + c;
            });
            status.row_inc[row_base + c] = rowleft[c] + row_sum[c];
        }
        publish(flags_h + tile, kInclusive);
    }

    // 3. The warp's vertical aggregate: sum of rowleft over its rows plus the prefix along x of its
    //    column sums, into shared memory; then the block's, column by column.
    {
        T prefix[kLaneElements];
#pragma unroll
        for (int c = 0; c < E; ++c) {
            const T left_total = static_cast<T>(warp::sum(rowleft[c]));  // at most 32 * 2^17 * 255 < 2^32
            std::uint32_t run = 0;
#pragma unroll
            for (int p = 0; p < P; ++p) {
                run += column_sum[p * E + c];
                prefix[p * E + c] = run;
            }
            const std::uint32_t before = warp::exclusive_scan(run, lane);  // at most 2^8 * 32 * 255 < 2^22
#pragma unroll
            for (int p = 0; p < P; ++p) prefix[p * E + c] += static_cast<T>(before) + left_total;
        }
#pragma unroll
        for (int j = 0; j < kLaneElements; ++j) warp_values[lane * kLaneElements + j] = prefix[j];
    }
    __syncthreads();
    const std::size_t column_base = static_cast<std::size_t>(tile) * tile_columns;
    for (int e = thread; e < tile_columns; e += threads) {
        T run = 0;  // warp w's entry becomes the sum of the warps above it
        for (int w = 0; w < warps; ++w) {
            T* v = reinterpret_cast<T*>(shared_chunks + w * kWarpSharedChunks<E, T>) + e;
            const T own = *v;
            *v = run;
            run += own;
        }
        status.col_agg[column_base + e] = run;
        if (tile_y == 0) status.col_inc[column_base + e] = run;
    }

    // 4. The row above the tile from the tiles above; the tile's last row out.
    if (tile_y == 0) {
        publish(flags_v + tile, kInclusive);
    } else {
        publish(flags_v + tile, kAggregate);
        bool last_inclusive = false;
        const int depth = lookback_depth(flags_v, tile_y, [&](int j) { return tile - (1 + j) * g.tiles_x; }, last_inclusive, lookback);
        for (int e = thread; e < tile_columns; e += threads) {
            const T above = lookback_sum(status.col_agg, status.col_inc, depth, last_inclusive, [&](int j) {
                return static_cast<std::size_t>(tile - (1 + j) * g.tiles_x) * tile_columns + e;
            });
            status.col_inc[column_base + e] = above + status.col_agg[column_base + e];
            for (int w = 0; w < warps; ++w) reinterpret_cast<T*>(shared_chunks + w * kWarpSharedChunks<E, T>)[e] += above;
        }
        publish(flags_v + tile, kInclusive);  // (its __syncthreads also orders the shared updates)
    }

    // 5. Pass 2: the warp's output rows. carry = out(x, y - 1) for the lane's elements.
    T carry[kLaneElements];
#pragma unroll
    for (int j = 0; j < kLaneElements; ++j) carry[j] = warp_values[lane * kLaneElements + j];
    __syncwarp();  // the warp's shared area becomes its staging area
    uint4* stage = shared_chunks + warp * kWarpSharedChunks<E, T>;
    const bool strip_inside = (tile_x + 1) * g.tile_width <= g.width;
    for_each_row<E>(in, plane, y0, x0, [&](int r, const LaneRow<E>& row) {
        const int y = y0 + r;
        if (y >= g.height) return;  // the same for the whole warp
        write_output_row<E, T>(row, r, rowleft, carry, out, plane, y, tile_x, g, lane, stage, strip_inside);
    });
}

// ---------------------------------------------------------------------------------------------
// The variant

template <class T>
using MainKernel = void (*)(ImageView<const std::uint8_t>, ImageView<T>, Status<T>, Grid);

template <class T>
MainKernel<T> main_kernel(int elements) {
    return by_channels<MainKernel<T>>(elements, &integral_lookback_kernel<1, T>, &integral_lookback_kernel<3, T>,
                                      &integral_lookback_kernel<4, T>);
}

template <class T>
Status<T> status_of(const LaunchPlan& plan, const ScratchLayout& s) {
    auto* base = plan.scratch_as<unsigned char>();  // s.bytes, allocated by prepare()
    return {reinterpret_cast<unsigned*>(base), reinterpret_cast<unsigned*>(base + s.flags),
            reinterpret_cast<std::uint32_t*>(base + s.row_agg), reinterpret_cast<std::uint32_t*>(base + s.row_inc),
            reinterpret_cast<T*>(base + s.col_agg), reinterpret_cast<T*>(base + s.col_inc)};
}

class IntegralLookback final : public Variant {
public:
    std::string name() const override { return "integral.lookback"; }
    Operation op() const override { return Operation::integral; }
    std::string technique() const override {
        return "one pass: tiles in ticket order, decoupled look-back along rows and down columns, the output written once";
    }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override { return tile_tuning_space(); }
    Support check_shape(const Problem&, const LaunchShape& shape) const override { return check_tile_shape(shape); }

    std::size_t scratch_bytes(const Problem& problem, const LaunchShape& shape) const override {
        return layout(problem, shape).bytes;
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Grid g = grid_of(problem.shape, shape.block_y);
        const ScratchLayout s = layout(problem, shape);
        const dim3 tiles(static_cast<unsigned>(g.tiles()));
        KernelLaunch clear = make_launch(&integral_lookback_clear, "integral_lookback_clear",
                                         dim3(grid_side(static_cast<int>(s.clear_words), kInitBlock)), dim3(kInitBlock));
        if (needs_u64(problem)) {
            return {clear, make_launch(main_kernel<std::uint64_t>(g.elements), "integral_lookback_kernel<u64>", tiles, block_of(shape),
                                       shared_bytes<std::uint64_t>(g.elements, shape.block_y))};
        }
        return {clear, make_launch(main_kernel<std::uint32_t>(g.elements), "integral_lookback_kernel<u32>", tiles, block_of(shape),
                                   shared_bytes<std::uint32_t>(g.elements, shape.block_y))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const Grid g = grid_of(plan.problem.shape, plan.shape.block_y);
        const ScratchLayout s = layout(plan.problem, plan.shape);
        const auto in = plan.buffers.input.view<const std::uint8_t>();
        enqueue_kernel(plan.kernels[0], stream, &integral_lookback_clear, plan.scratch_as<unsigned>(), s.clear_words);
        if (needs_u64(plan.problem)) {
            enqueue_kernel(plan.kernels[1], stream, main_kernel<std::uint64_t>(g.elements), in,
                           plan.buffers.output.view<std::uint64_t>(), status_of<std::uint64_t>(plan, s), g);
        } else {
            enqueue_kernel(plan.kernels[1], stream, main_kernel<std::uint32_t>(g.elements), in,
                           plan.buffers.output.view<std::uint32_t>(), status_of<std::uint32_t>(plan, s), g);
        }
    }

private:
    static ScratchLayout layout(const Problem& problem, const LaunchShape& shape) {
        return scratch_layout(grid_of(problem.shape, shape.block_y), needs_u64(problem) ? 8 : 4);
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::IntegralLookback)
