// integral.tile_gather — inclusive summed-area table per channel in two kernels: every tile's sums,
// then every tile gathers the sums of the tiles before it, with nothing to wait for.
//
// Technique: the tiles of integral.lookback (kernels/integral_tiles.hpp: a block of 32 x N threads
// owns 32 * P pixels by 32 * N rows, warp w its rows 32w ... 32w + 31; P = 8 gray, 4 colour). For
// out(x, y) with x in tile column X and y in tile row Y (tile rows start at y0):
//     out(x, y0 - 1) = corner + above(x),
//         corner   = the sum of the totals of the tiles (X' < X, Y' < Y),
//         above(x) = the sum over the tiles (X, Y' < Y) of their column prefix at x,
//     rowleft(y)   = the sum of the row sums of row y in the tiles (X' < X, Y),
// where a tile's column prefix at x is the sum of its pixels in columns up to x (its last entry is
// its total). Two kernels:
//   1. integral_tile_sums: each block reads its tile once and stores its rows' sums and, per warp
//      w, the column prefix of the tile's rows above warp w + 1 (the last one is the tile's);
//   2. integral_tile_gather: each block sums those values of its predecessors (loads only: the
//      first kernel has finished, so there are no status flags and no waiting), then each warp
//      starts its column carry at out(x, 32w + y0 - 1) and writes its rows as integral.lookback's
//      pass 2 does (the image again, from L2; staged 512-byte streaming stores).
// Cached rows (gray and SoA planes, u64 output): each warp whose rows lie inside the image copies
// the last 16 of its 32 rows of the image into shared memory by cp.async as soon as its block
// starts, while they are still in L2, and its walk reads them from there (integral_tiles.hpp:
// copy_rows_to_shared, for_each_row); the tile sums keep only the first 16 rows' lines in L2
// (evict_last), the others load under the default policy (all 32 kept where the image's rows are
// not 8-byte aligned, as no warp copies then). A warp reads its rows one by one while the tiles
// write 265 MB of output, and its late rows had mostly left L2 by then: Nsight Compute read 19.5 MB
// from DRAM in the second kernel without the cache, 7.9 MB with it. The gray kernels (SoA planes
// included) prefer the largest shared-memory carveout (prefer_shared_memory_for_gray() says why).
// H200, 2026-11-29 (copies of this file, scripts/gpu-experiment.sh, klab tune, then klab-bench, L2
// flushed, medians of 5; this file before in brackets, from the same run): 8K gray u64 with all
// three 86.2 us (94.4), 1.23x the copy floor; the same with the other rows' lines under evict_first
// 87.0 (94.4); without the split hints 90.7 (94.4); in an earlier run the cache alone 93.4 and with
// the carveout 90.9 (94.3). 4K gray u32, not cached, 21.3 (20.9).
// What it adds over integral.lookback: no look-back. The look-back's round trips to L2 (publish,
// wait on the predecessors' flags, read their values, publish again: twice per tile) ran while
// other tiles were already writing their output. Here a tile starts writing as soon as its gather's
// loads return. It costs one more launch and a second read of the row and column sums (L2, about
// 1/30 of a u32 output). The second kernel is a programmatic dependent launch (where its code is
// compiled for sm_90 or later): its blocks are placed on the SMs once every block of the first has
// started, and wait (griddepcontrol.wait) only where they first read the sums, so the launch gap
// between the kernels is gone.
// Traffic: the image read twice (the second time from L2 where it fits: gray 8K is 33 MB), the
// output written once, the sums written once and read by the tiles to the right and below.
// Exactness: every value is an integer sum; row sums, rowleft and the column prefixes fit u32
// (at most 2^17 * 255, 32 * 2^17 * 255 and 256 * 512 * 255); corner, above and the carries use the
// output's type, which the numeric contract's rule picks so that no sum of the image overflows it
// (docs/numeric-contract.md).
// Preconditions: 1, 3 or 4 channels, AoS or SoA (each SoA plane is a gray image), any pitch (vector
// loads, cached rows and staged stores only where rows are aligned for them), any size. Block 32 x N,
// N from 1 to 16 (gray u64 at 32x16 needs 104 KB of shared memory a block: prepare() refuses it on
// GPUs that give a block less). Scratch: the sums (scratch_bytes()). Shared memory: the staging
// areas, and 4 KB a warp of cached rows for gray u64 (4 blocks of 32x8 fit an SM of 228 KB; code
// built for GPUs before sm_80 reserves them unused).
// Concurrency: each plan owns its scratch, so plans on different streams may run at once; two
// launches of one plan share it and must not overlap (launch a plan on one stream at a time).
// Cost of the gather: a tile reads X row sums per row and Y column prefixes per column, and X * Y
// totals, so it grows with the image's side in tiles (30 x 17 tiles on 8K gray).
// The committed klab run at b793855 (results/nvidia-h200/, H200, L2 flushed, medians of 5): 8K gray
// u64 86.92 us at 32x8 (1.24x the copy floor; npp.integral 12.1x slower), 8K RGB AoS u64 304 us
// (1.44x), 4K gray u32 21.4 us (1.40x; npp.integral 11.4x slower).
// Measurements, profiles and every form tried and dropped: kernels/notes/integral_tile_gather.md.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/variant.hpp"
#include "kernels/integral_tiles.hpp"
#include "kernels/warp_scan.hpp"

namespace klab {
namespace {

using namespace integral_tiles;

// Rows in flight per warp in the tile sums. Gray (8 bytes a row per lane): 2 rows 106.6 us on 8K,
// 4 rows 103.9, 8 rows 100.5 (4K gray 25.8 -> 24.6 us); colour rows are 12 or 16 bytes a lane, and
// 8 of them (315.2 us on 8K RGB against 310.1 for 4) cost more in registers than they gain.
template <int E>
constexpr int kSumsRowGroup = E == 1 ? 8 : 4;
constexpr int kGatherBatch = 8;  // predecessors' values loaded at once (independent loads in flight)
constexpr int kMaxTileColumns = kWarp * 4 * 4;  // column values of the widest tile: 128 RGBA pixels
// Gray tiles with a u64 output copy the last kCachedRows of each warp's 32 rows of the image into
// shared memory as soon as their block starts, so that the walk does not read them late, after the
// output's writes have pushed them out of L2. 16 rows is what fits beside the staging areas with 4
// blocks of 32x8 per SM. A u32 output means a plane of at most 2^32 / 255 pixels (16.8 MB), which L2
// keeps between the two reads without help: 4K gray u32 with its rows cached too (and the carveout)
// ran 21.8 us against 21.0 for this file before (H200, same run). SoA colour u32 (3 or 4 such
// planes) was not measured.
template <int E, class T>
constexpr int kCachedRows = E == 1 && sizeof(T) == 8 ? 16 : 0;
template <int E, class T>
constexpr std::size_t kCacheBytesPerWarp = static_cast<std::size_t>(kCachedRows<E, T>) * kWarp * LaneRow<E>::kBytes;

// The plan's scratch, each array at a multiple of 256 bytes:
//   row_sums        u32 [tiles][tile_height][E]       each row's sum inside the tile
//   column_prefixes u32 [tiles][N][tile_width][E]     entry w: the column prefix of the tile's rows
//                                                     of warps 0 ... w (entry N - 1: the whole tile)
struct ScratchLayout {
    std::size_t row_sums = 0, column_prefixes = 0, bytes = 0;
};

ScratchLayout scratch_layout(const Grid& g, int warps) {
    const auto tiles = static_cast<std::size_t>(g.tiles());
    ScratchLayout s;
    s.row_sums = 0;
    s.column_prefixes = round_up_256(tiles * g.tile_height * g.elements * sizeof(std::uint32_t));
    s.bytes = s.column_prefixes + round_up_256(tiles * warps * g.tile_width * g.elements * sizeof(std::uint32_t));
    return s;
}

struct Sums {
    std::uint32_t* row_sums;
    std::uint32_t* column_prefixes;
};

// The tile a block owns (blocks in row-major tile order, planes one after another).
struct Tile {
    int index, plane, x, y;
    __device__ explicit Tile(const Grid& g) : index(static_cast<int>(blockIdx.x)) {
        const int per_plane = g.tiles_x * g.tiles_y;
        plane = index / per_plane;
        y = index % per_plane / g.tiles_x;
        x = index % g.tiles_x;
    }
};

__device__ __forceinline__ void shared_add(std::uint32_t* target, std::uint32_t v) { atomicAdd(target, v); }
__device__ __forceinline__ void shared_add(std::uint64_t* target, std::uint64_t v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(target), static_cast<unsigned long long>(v));
}

// ---------------------------------------------------------------------------------------------
// Kernel 1: the tile's sums

// hinted_rows: the rows of each warp's 32 that the image's L2 lines are kept for (the gather reads
// them again from L2); the others load under the default policy (the gather copies them early).
template <int E>
__global__ void __launch_bounds__(kWarp* kMaxWarps)
    integral_tile_sums_kernel(ImageView<const std::uint8_t> in, Sums sums, Grid g, int hinted_rows) {
    constexpr int P = kPixelsPerLane<E>;
    constexpr int kLaneElements = P * E;
    extern __shared__ std::uint32_t warp_prefix[];  // [warps][tile_columns]
    const int lane = static_cast<int>(threadIdx.x);
    const int warp = static_cast<int>(threadIdx.y);
    const int warps = static_cast<int>(blockDim.y);
    const Tile tile(g);
    const int tile_rows = g.tile_height * E;
    const int tile_columns = g.tile_width * E;
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // the gather kernel may start its blocks
#endif

    std::uint32_t row_sum[E];
    std::uint32_t column_sum[kLaneElements];
    // The hinted rows' lines stay in L2 for the gather kernel, which reads them again (it copies the
    // others into shared memory as it starts: kCachedRows).
    sum_rows_and_columns<E, kSumsRowGroup<E>, L2Hint::keep>(in, tile.plane, tile.y * g.tile_height + warp * kWarp,
                                                             tile.x * g.tile_width + lane * P, lane, row_sum, column_sum, hinted_rows);
    const std::size_t row_base = static_cast<std::size_t>(tile.index) * tile_rows + static_cast<std::size_t>(warp * kWarp + lane) * E;
#pragma unroll
    for (int c = 0; c < E; ++c) sums.row_sums[row_base + c] = row_sum[c];

    // The warp's column prefix along x (at most 256 pixels * 32 rows * 255 < 2^22), then the
    // running sum over the warps, column by column.
#pragma unroll
    for (int c = 0; c < E; ++c) {
        std::uint32_t run = 0;
#pragma unroll
        for (int p = 0; p < P; ++p) column_sum[p * E + c] = (run += column_sum[p * E + c]);
        const std::uint32_t before = warp::exclusive_scan(run, lane);
#pragma unroll
        for (int p = 0; p < P; ++p) warp_prefix[warp * tile_columns + (lane * P + p) * E + c] = column_sum[p * E + c] + before;
    }
    __syncthreads();
    std::uint32_t* prefixes = sums.column_prefixes + static_cast<std::size_t>(tile.index) * warps * tile_columns;
    for (int e = warp * kWarp + lane; e < tile_columns; e += warps * kWarp) {
        std::uint32_t run = 0;
        for (int w = 0; w < warps; ++w) prefixes[static_cast<std::size_t>(w) * tile_columns + e] = (run += warp_prefix[w * tile_columns + e]);
    }
}

// ---------------------------------------------------------------------------------------------
// Kernel 2: the gather and the output

// sum over j < count of load(j), kGatherBatch loads in flight at a time.
template <class V, class Load>
__device__ __forceinline__ V gather_sum(int count, Load load) {
    V sum = 0;
    for (int first = 0; first < count; first += kGatherBatch) {
        V value[kGatherBatch];
#pragma unroll
        for (int k = 0; k < kGatherBatch; ++k) value[k] = first + k < count ? static_cast<V>(load(first + k)) : V{0};
#pragma unroll
        for (int k = 0; k < kGatherBatch; ++k) sum += value[k];
    }
    return sum;
}

// Gray tiles fit 64 registers (two blocks of 512 threads per SM); colour ones hold 12 or 16
// carries per lane, twice that in registers for u64, and may take up to 128.
template <int E, class T>
__global__ void __launch_bounds__(kWarp* kMaxWarps, E == 1 ? 2 : 1)
    integral_tile_gather_kernel(ImageView<const std::uint8_t> in, ImageView<T> out, Sums sums, Grid g) {
    constexpr int P = kPixelsPerLane<E>;
    constexpr int kLaneElements = P * E;
    extern __shared__ uint4 shared_chunks[];  // the warps' staging areas
    __shared__ T above[kMaxTileColumns];      // above(x) per element of a tile row (the corner comes in through left_above)
    __shared__ T corner[E];
    __shared__ std::uint32_t left_of_warp[kMaxWarps][E];  // sum of rowleft over the warp's rows

    const int lane = static_cast<int>(threadIdx.x);
    const int warp = static_cast<int>(threadIdx.y);
    const int warps = static_cast<int>(blockDim.y);
    const int thread = warp * kWarp + lane;
    const int threads = warps * kWarp;
    const Tile tile(g);
    const int tile_rows = g.tile_height * E;
    const int tile_columns = g.tile_width * E;
    const std::size_t prefixes_per_tile = static_cast<std::size_t>(warps) * tile_columns;
    const std::uint32_t* tile_prefixes = sums.column_prefixes + prefixes_per_tile * tile.index;
    // Entry w of a tile's column prefixes: its rows of warps 0 ... w. The whole tile's is entry N - 1.
    const std::size_t whole_tile = static_cast<std::size_t>(warps - 1) * tile_columns;

    if (thread < E) corner[thread] = 0;

    // The warp's last kCachedRows rows of the image into shared memory (copy_rows_to_shared) before
    // the wait: the image is not the sums kernel's output.
    constexpr int kCached = kCachedRows<E, T>;
    const int y0 = tile.y * g.tile_height + warp * kWarp;
    const int x0 = tile.x * g.tile_width + lane * P;
    uint2* const lane_cache =
        kCached > 0 ? reinterpret_cast<uint2*>(shared_chunks + warps * kWarpSharedChunks<E, T>) + warp * kCached * kWarp + lane : nullptr;
    copy_rows_to_shared<E, kCached, L2Hint::last_use>(in, tile.plane, y0, x0, lane_cache);
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");  // the sums kernel has finished and its sums are visible
#endif

    // rowleft of the lane's row: the row sums of the tiles to the left, nearest first.
    std::uint32_t rowleft[E];
    const int row_in_tile = warp * kWarp + lane;
#pragma unroll
    for (int c = 0; c < E; ++c) {
        rowleft[c] = gather_sum<std::uint32_t>(tile.x, [&](int j) {
            return __ldcg(sums.row_sums + static_cast<std::size_t>(tile.index - 1 - j) * tile_rows + row_in_tile * E + c);
        });
        const std::uint32_t warp_left = warp::sum(rowleft[c]);  // at most 32 * 2^17 * 255 < 2^32
        if (lane == 0) left_of_warp[warp][c] = warp_left;
    }
    __syncthreads();  // corner cleared

    // above(x): the whole-tile column prefixes of the tiles above, nearest first.
    for (int e = thread; e < tile_columns; e += threads) {
        above[e] = gather_sum<T>(tile.y, [&](int j) {
            return __ldcg(tile_prefixes - prefixes_per_tile * g.tiles_x * (1 + j) + whole_tile + e);
        });
    }
    // corner: the totals (last column of the whole-tile prefix) of the tiles left of and above it.
    {
        T part[E];
        const int count = tile.x * tile.y;
#pragma unroll
        for (int c = 0; c < E; ++c) {
            part[c] = gather_sum<T>(count > thread ? (count - thread + threads - 1) / threads : 0, [&](int k) {
                const int i = thread + k * threads;
                const int predecessor = tile.index - (1 + i / tile.x) * g.tiles_x - (1 + i % tile.x);
                return __ldcg(sums.column_prefixes + prefixes_per_tile * predecessor + whole_tile + tile_columns - E + c);
            });
            part[c] = warp::sum(part[c]);
            if (lane == 0 && part[c] != 0) shared_add(&corner[c], part[c]);
        }
    }
    __syncthreads();

    // The carry of each lane element starts at out(x, y - 1) for the warp's first row y.
    T carry[kLaneElements];
    {
        T left_above[E];  // rowleft summed over the tile's rows of the warps above this one
#pragma unroll
        for (int c = 0; c < E; ++c) {
            left_above[c] = corner[c];
            for (int w = 0; w < warp; ++w) left_above[c] += left_of_warp[w][c];
        }
#pragma unroll
        for (int j = 0; j < kLaneElements; ++j) {
            const int e = lane * kLaneElements + j;
            const std::uint32_t inside = warp > 0 ? __ldcg(tile_prefixes + static_cast<std::size_t>(warp - 1) * tile_columns + e) : 0u;
            carry[j] = above[e] + left_above[j % E] + inside;
        }
    }

    uint4* stage = shared_chunks + warp * kWarpSharedChunks<E, T>;
    const bool strip_inside = (tile.x + 1) * g.tile_width <= g.width;
    const auto write_row = [&](int r, const LaneRow<E>& row) {
        const int y = y0 + r;
        if (y >= g.height) return;  // the same for the whole warp
        write_output_row<E, T>(row, r, rowleft, carry, out, tile.plane, y, tile.x, g, lane, stage, strip_inside);
    };
    for_each_row<E, kRowGroup, L2Hint::last_use, true, kCached>(in, tile.plane, y0, x0, write_row, kWarp, lane_cache);
}

// ---------------------------------------------------------------------------------------------
// The variant

using SumsKernel = void (*)(ImageView<const std::uint8_t>, Sums, Grid, int);
template <class T>
using GatherKernel = void (*)(ImageView<const std::uint8_t>, ImageView<T>, Sums, Grid);

// Whether the gather kernel's code for this GPU holds griddepcontrol.wait: compiled for sm_90 or
// later (not, e.g., PTX for compute_80 JIT-compiled on an H100). Only then may it be launched as a
// programmatic dependent, or it could read the sums before the sums kernel's writes are visible.
// Asked of the runtime once per kernel instance.
template <int E, class T>
bool gather_waits_for_sums() {
    static const bool waits = [] {
        cudaFuncAttributes attributes{};
        KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, &integral_tile_gather_kernel<E, T>));
        return attributes.ptxVersion >= 90;
    }();
    return waits;
}

template <class T>
bool gather_waits_for_sums(int elements) {
    return by_channels<bool (*)()>(elements, &gather_waits_for_sums<1, T>, &gather_waits_for_sums<3, T>, &gather_waits_for_sums<4, T>)();
}

// enqueue_kernel() with the launch marked, where `overlap_allowed`, as a programmatic dependent of the
// kernel before it on the stream: its blocks may start once every block of that kernel has started,
// and wait (griddepcontrol.wait) for its completion and its memory only where they first read it.
template <class... Params>
void enqueue_dependent_kernel(const KernelLaunch& launch, cudaStream_t stream, bool overlap_allowed, void (*kernel)(Params...),
                              typename detail::exactly<Params>::type... args) {
    if (reinterpret_cast<const void*>(kernel) != launch.kernel) {
        throw Error(fmt::format("enqueue of a kernel other than the planned {}", launch.kernel_name),
                    "the kernel that Variant::kernels() put in the plan");
    }
    cudaLaunchAttribute overlap{};
    overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    overlap.val.programmaticStreamSerializationAllowed = overlap_allowed ? 1 : 0;
    cudaLaunchConfig_t config{};
    config.gridDim = launch.grid;
    config.blockDim = launch.block;
    config.dynamicSmemBytes = launch.dynamic_shared_bytes;
    config.stream = stream;
    config.attrs = &overlap;
    config.numAttrs = 1;
    KLAB_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
    KLAB_CUDA_CHECK_LAUNCH(stream);
}

// The dynamic shared memory of a gather block: the warps' staging areas and their cached rows.
template <class T>
std::size_t gather_shared_bytes(int elements, int warps) {
    const std::size_t cache = by_channels<std::size_t>(elements, kCacheBytesPerWarp<1, T>, kCacheBytesPerWarp<3, T>, kCacheBytesPerWarp<4, T>);
    return shared_bytes<T>(elements, warps) + cache * static_cast<std::size_t>(warps);
}

// The rows of each warp's 32 whose lines the tile sums keep in L2 for the gather: those it does not
// cache. Where the image's rows are not aligned for the copies (copy_rows_to_shared), no warp caches,
// so all 32 are kept.
template <class T>
int rows_kept_in_l2(const ImageView<const std::uint8_t>& in, int elements) {
    const bool copies_aligned = ((reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % sizeof(uint2)) == 0;
    if (!copies_aligned) return kWarp;
    return kWarp - by_channels<int>(elements, kCachedRows<1, T>, kCachedRows<3, T>, kCachedRows<4, T>);
}

SumsKernel sums_kernel(int elements) {
    return by_channels<SumsKernel>(elements, &integral_tile_sums_kernel<1>, &integral_tile_sums_kernel<3>, &integral_tile_sums_kernel<4>);
}

template <class T>
GatherKernel<T> gather_kernel(int elements) {
    return by_channels<GatherKernel<T>>(elements, &integral_tile_gather_kernel<1, T>, &integral_tile_gather_kernel<3, T>,
                                        &integral_tile_gather_kernel<4, T>);
}

// The gray kernels (SoA colour planes included) run with the largest shared-memory carveout. With
// the cached rows the gather needs more shared memory than the carveout the driver picks for the
// tile sums (Nsight Compute: 196 KB against 100 KB). On the H200, in a trial that cached u32 rows
// too, at the driver's carveouts, 4K gray u32 ran 34.7 us against 21.0 for this file before, and
// 34.6 with the shared memory reserved but unused (8K gray u64: 96.9 against 94.3): our reading is
// that the gather, a programmatic dependent, cannot place its blocks on an SM running the sums until
// the SM changes its carveout. Both kernels at the largest: 21.8 and 90.9 us (same run). The u32
// gather takes it too, like the sums kernel it shares: a copy with the largest carveout and no cache
// ran 4K gray u32 in 21.0 us against 21.3 for the file without either (same run). Colour AoS keeps
// the driver's choice (8K RGB 300.8 -> 317.2 us at the largest). Set by configure_kernels(), once
// per plan (prepare()), not per launch; kernels() stays free of CUDA calls (the CPU tests call it).
void prefer_shared_memory_for_gray() {
    for (const void* kernel : {reinterpret_cast<const void*>(&integral_tile_sums_kernel<1>),
                               reinterpret_cast<const void*>(&integral_tile_gather_kernel<1, std::uint32_t>),
                               reinterpret_cast<const void*>(&integral_tile_gather_kernel<1, std::uint64_t>)}) {
        KLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    }
}

class IntegralTileGather final : public Variant {
public:
    std::string name() const override { return "integral.tile_gather"; }
    Operation op() const override { return Operation::integral; }
    std::string technique() const override {
        return "two kernels: every tile's row sums and column prefixes, then each tile gathers its predecessors' (no look-back) and writes";
    }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override { return tile_tuning_space(); }
    Support check_shape(const Problem&, const LaunchShape& shape) const override { return check_tile_shape(shape); }

    std::size_t scratch_bytes(const Problem& problem, const LaunchShape& shape) const override {
        return scratch_layout(grid_of(problem.shape, shape.block_y), shape.block_y).bytes;
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Grid g = grid_of(problem.shape, shape.block_y);
        const dim3 tiles(static_cast<unsigned>(g.tiles()));
        const std::size_t prefix_bytes = static_cast<std::size_t>(shape.block_y) * g.tile_width * g.elements * sizeof(std::uint32_t);
        KernelLaunch sums = make_launch(sums_kernel(g.elements), "integral_tile_sums_kernel", tiles, block_of(shape), prefix_bytes);
        if (needs_u64(problem)) {
            return {sums, make_launch(gather_kernel<std::uint64_t>(g.elements), "integral_tile_gather_kernel<u64>", tiles, block_of(shape),
                                      gather_shared_bytes<std::uint64_t>(g.elements, shape.block_y))};
        }
        return {sums, make_launch(gather_kernel<std::uint32_t>(g.elements), "integral_tile_gather_kernel<u32>", tiles, block_of(shape),
                                  gather_shared_bytes<std::uint32_t>(g.elements, shape.block_y))};
    }

    void configure_kernels(const Problem& problem) const override {
        if (grid_of(problem.shape, 1).elements == 1) prefer_shared_memory_for_gray();  // gray, or SoA planes
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const Grid g = grid_of(plan.problem.shape, plan.shape.block_y);
        const ScratchLayout s = scratch_layout(g, plan.shape.block_y);
        auto* base = plan.scratch_as<unsigned char>();  // s.bytes, allocated by prepare()
        const Sums sums{reinterpret_cast<std::uint32_t*>(base + s.row_sums), reinterpret_cast<std::uint32_t*>(base + s.column_prefixes)};
        const auto in = plan.buffers.input.view<const std::uint8_t>();
        const bool u64 = needs_u64(plan.problem);
        enqueue_kernel(plan.kernels[0], stream, sums_kernel(g.elements), in, sums, g,
                       u64 ? rows_kept_in_l2<std::uint64_t>(in, g.elements) : rows_kept_in_l2<std::uint32_t>(in, g.elements));
        if (u64) {
            enqueue_dependent_kernel(plan.kernels[1], stream, gather_waits_for_sums<std::uint64_t>(g.elements),
                                     gather_kernel<std::uint64_t>(g.elements), in, plan.buffers.output.view<std::uint64_t>(), sums, g);
        } else {
            enqueue_dependent_kernel(plan.kernels[1], stream, gather_waits_for_sums<std::uint32_t>(g.elements),
                                     gather_kernel<std::uint32_t>(g.elements), in, plan.buffers.output.view<std::uint32_t>(), sums, g);
        }
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::IntegralTileGather)
