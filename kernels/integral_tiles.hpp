// The tiles of the single-kernel-per-pass integral variants (integral.lookback, integral.tile_gather):
// how a warp reads its 32 rows of a tile and how it writes its output rows, whatever way the tile
// learns the sums left of it and above it.
//
// A block of 32 x N threads owns a tile of 32 * P pixels (P = 8 gray, 4 colour: 256 or 128 pixels)
// by 32 * N rows, warp w its rows 32w ... 32w + 31; lane l holds pixels l*P ... l*P + P - 1 of a
// row. Pass 1 (for_each_row) visits the rows with the next kRowGroup rows' loads in flight (a warp
// whose 32 rows and lanes all lie inside the image steps one pointer per lane; the others map each
// row and word), each load under an L2 eviction hint that the variant picks, and may take a warp's
// last rows from a copy in shared memory made when its block started (copy_rows_to_shared). Pass 2
// (write_output_row) turns a row into output: the lane's own prefix, a warp scan across the lanes,
// the row's sum left of the tile, added into a running column carry; it stores the row through
// shared memory so that one store instruction writes 512 contiguous bytes, as streaming stores
// (evict-first in L2, so that the output does not push the image out of L2 before pass 2 reads
// it again).
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every kernel
// file that includes it, so a change to its code makes their tuning records stale (its comment-only
// lines do not count).
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

// How long the image's lines should stay in L2 after a load (the load's eviction priority).
// integral.tile_gather reads the image twice, once per kernel: the tile sums load it as `keep`
// (evict_last), so that the 33 MB of 8K gray are still in L2 for the gather's second read, which
// loads them as `last_use` (evict_first). On the H200 the pair took 8K gray u64 from 99.8 to 95.8
// us (the output's streaming stores no longer push the image out first). A walk may hint only its
// first rows (for_each_row's hinted_rows): integral.tile_gather keeps the lines of the rows that its
// gather loads again (each warp's first 16) and copies the others into shared memory as soon as it
// starts (copy_rows_to_shared).
enum class L2Hint {
    none,      // the default policy
    keep,      // evict_last: a later kernel reads the same lines again
    last_use,  // evict_first: nothing reads them again
    normal,    // evict_normal, as a policy value: the rows of a walk past its hinted ones
};

// The cache policy of a hint, made once per thread (createpolicy; sm_80 and later).
template <L2Hint Hint>
__device__ __forceinline__ std::uint64_t l2_policy() {
    std::uint64_t policy = 0;
#if __CUDA_ARCH__ >= 800
    if constexpr (Hint == L2Hint::keep) asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    if constexpr (Hint == L2Hint::last_use) asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    if constexpr (Hint == L2Hint::normal) asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
#endif
    return policy;
}

// Read-only loads of 4, 8 or 16 bytes under a policy from l2_policy<Hint>() (plain __ldg for none,
// or before sm_80).
template <L2Hint Hint>
__device__ __forceinline__ std::uint32_t load_hinted(const std::uint32_t* p, std::uint64_t policy) {
#if __CUDA_ARCH__ >= 800
    if constexpr (Hint != L2Hint::none) {
        std::uint32_t v;
        asm("ld.global.nc.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(policy));
        return v;
    }
#endif
    return __ldg(p);
}
template <L2Hint Hint>
__device__ __forceinline__ uint2 load_hinted(const uint2* p, std::uint64_t policy) {
#if __CUDA_ARCH__ >= 800
    if constexpr (Hint != L2Hint::none) {
        uint2 v;
        asm("ld.global.nc.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(v.x), "=r"(v.y) : "l"(p), "l"(policy));
        return v;
    }
#endif
    return __ldg(p);
}
template <L2Hint Hint>
__device__ __forceinline__ uint4 load_hinted(const uint4* p, std::uint64_t policy) {
#if __CUDA_ARCH__ >= 800
    if constexpr (Hint != L2Hint::none) {
        uint4 v;
        asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p), "l"(policy));
        return v;
    }
#endif
    return __ldg(p);
}

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

// The output type by the numeric contract's rule (docs/numeric-contract.md): u64 where a sum of
// the image could overflow u32.
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

// The lane's P * E bytes at `src` (inside the row, aligned for the loads: 16 bytes RGBA, 8 gray,
// 4 RGB).
template <int E, L2Hint Hint>
__device__ __forceinline__ void load_words(const std::uint8_t* src, LaneRow<E>& row, std::uint64_t policy) {
    constexpr int kBytes = LaneRow<E>::kBytes;
    if constexpr (kBytes == 16) {
        const uint4 v = load_hinted<Hint>(reinterpret_cast<const uint4*>(src), policy);
        row.w[0] = v.x, row.w[1] = v.y, row.w[2] = v.z, row.w[3] = v.w;
    } else if constexpr (kBytes == 8) {
        const uint2 v = load_hinted<Hint>(reinterpret_cast<const uint2*>(src), policy);
        row.w[0] = v.x, row.w[1] = v.y;
    } else {
#pragma unroll
        for (int i = 0; i < kBytes / 4; ++i) row.w[i] = load_hinted<Hint>(reinterpret_cast<const std::uint32_t*>(src) + i, policy);
    }
}
template <int E>
constexpr unsigned kWordsAlignment = LaneRow<E>::kBytes == 12 ? 4u : static_cast<unsigned>(LaneRow<E>::kBytes);

// The lane's bytes of row y, wherever it lies: zero past the image, word loads where the run lies
// inside the row and is aligned for them, byte loads otherwise.
template <int E, L2Hint Hint>
__device__ __forceinline__ void load_lane_row(const ImageView<const std::uint8_t>& in, int plane, int y, int x0, LaneRow<E>& row,
                                              std::uint64_t policy) {
    constexpr int P = kPixelsPerLane<E>;
    constexpr int kBytes = LaneRow<E>::kBytes;
#pragma unroll
    for (int i = 0; i < kBytes / 4; ++i) row.w[i] = 0;
    if (y >= in.shape.height || x0 >= in.shape.width) return;
    const std::uint8_t* src = in.row(y, plane) + static_cast<std::size_t>(x0) * E;
    const auto address = reinterpret_cast<std::uintptr_t>(src);
    if (x0 + P <= in.shape.width) {
        if (address % kWordsAlignment<E> == 0) {
            load_words<E, Hint>(src, row, policy);
            return;
        }
        if (address % 4 == 0) {
#pragma unroll
            for (int i = 0; i < kBytes / 4; ++i) row.w[i] = load_hinted<Hint>(reinterpret_cast<const std::uint32_t*>(src) + i, policy);
            return;
        }
    }
#pragma unroll
    for (int j = 0; j < kBytes; ++j) {
        if (x0 + j / E < in.shape.width) row.w[j / 4] |= static_cast<std::uint32_t>(__ldg(src + j)) << (8 * (j % 4));
    }
}

// Calls load(r, row) for rows r = 0 ... 31 in order and visit(r, row) for each, the next Group
// rows' loads in flight while a group is visited.
template <int E, int Group, class Load, class Visit>
__device__ __forceinline__ void visit_rows(Load load, Visit visit) {
    static_assert(kWarp % Group == 0, "whole groups of rows");
    LaneRow<E> group[Group], next[Group];
#pragma unroll
    for (int k = 0; k < Group; ++k) load(k, group[k]);
    for (int r0 = 0; r0 < kWarp; r0 += Group) {
#pragma unroll
        for (int k = 0; k < Group; ++k) {
            if (r0 + Group < kWarp) load(r0 + Group + k, next[k]);
        }
#pragma unroll
        for (int k = 0; k < Group; ++k) visit(r0 + k, group[k]);
#pragma unroll
        for (int k = 0; k < Group; ++k) group[k] = next[k];
    }
}

// Whether the warp's 32 rows from y0 lie inside the image and every lane's run of each row lies
// inside the row, aligned for word loads: then the warp steps one pointer per lane (for_each_row)
// and may keep rows in shared memory (copy_rows_to_shared). `src` becomes the lane's bytes of row y0
// (null outside). The same answer in every lane; every lane of the warp must call it.
template <int E>
__device__ __forceinline__ bool warp_steps_inside(const ImageView<const std::uint8_t>& in, int plane, int y0, int x0,
                                                  const std::uint8_t*& src) {
    const bool lane_inside = y0 + kWarp <= in.shape.height && x0 + kPixelsPerLane<E> <= in.shape.width;
    src = lane_inside ? in.row(y0, plane) + static_cast<std::size_t>(x0) * E : nullptr;
    const bool aligned = (reinterpret_cast<std::uintptr_t>(src) | in.pitch_bytes) % kWordsAlignment<E> == 0;
    return __all_sync(kFullMask, lane_inside && aligned);
}

// A warp's last CachedRows of its 32 rows (gray only: a lane's 8 bytes of a row are one 8-byte
// cp.async), copied into shared memory as its block starts, while they are still in L2, and read
// from there by for_each_row<..., CachedRows> instead of loaded late. `lane_cache` is the lane's
// first slot: row r >= 32 - CachedRows at lane_cache[(r - (32 - CachedRows)) * 32]. Each lane copies
// and reads only its own slots, so no barrier is needed. Only a warp that steps (warp_steps_inside)
// copies, and only code for sm_80 or later (cp.async): the others leave the slots unused, and
// for_each_row does not read them either. The copies load under `Hint`, keep or last_use (a
// cache_hint needs a policy that createpolicy made). The caller passes for_each_row the same in,
// plane, y0, x0 and lane_cache.
template <int E, int CachedRows, L2Hint Hint>
__device__ __forceinline__ void copy_rows_to_shared(const ImageView<const std::uint8_t>& in, int plane, int y0, int x0,
                                                    uint2* lane_cache) {
#if __CUDA_ARCH__ >= 800
    if constexpr (CachedRows > 0) {
        static_assert(LaneRow<E>::kBytes == sizeof(uint2), "a lane's bytes of a row are one 8-byte copy");
        static_assert(Hint == L2Hint::keep || Hint == L2Hint::last_use, "the copies' L2 policy: keep or last_use");
        const std::uint8_t* src = nullptr;
        if (!warp_steps_inside<E>(in, plane, y0, x0, src)) return;
        src += static_cast<std::size_t>(kWarp - CachedRows) * in.pitch_bytes;
        const std::uint64_t policy = l2_policy<Hint>();
#pragma unroll
        for (int k = 0; k < CachedRows; ++k) {
            const auto slot = static_cast<unsigned>(__cvta_generic_to_shared(lane_cache + k * kWarp));
            asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], 8, %2;" ::"r"(slot), "l"(src), "l"(policy) : "memory");
            src += in.pitch_bytes;
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
#endif
}

// Calls visit(r, row) for the warp's rows r = 0 ... 31 of the tile (row y0 + r), in order, with the
// lane's bytes of that row; the next Group rows' loads are in flight while a group is visited, under
// the L2 hint Hint. A warp whose 32 rows lie inside the image and whose lanes' runs lie inside the
// row, aligned for word loads, steps one pointer per lane: a load and a pointer step per row, where
// mapping each row through the border checks took about 23 instructions (Nsight Compute on the
// tile sums; H200, integral.tile_gather with its hints: 8K gray u64 95.8 -> 94.2 us, 4K gray u32
// 23.6 -> 20.4); the other warps map each row and word. StepInside = false: every warp maps (one copy
// of the walk's code, for a kernel that cannot spare the registers). Rows r >= hinted_rows load under
// the default policy instead of Hint. CachedRows > 0: a stepping warp takes its last CachedRows rows
// from the shared-memory copy that copy_rows_to_shared<E, CachedRows> made at `lane_cache`, after
// waiting for the lane's copies (code before sm_80 loads every row). Every lane of the warp must call it.
template <int E, int Group = kRowGroup, L2Hint Hint = L2Hint::none, bool StepInside = true, int CachedRows = 0, class Visit>
__device__ __forceinline__ void for_each_row(const ImageView<const std::uint8_t>& in, int plane, int y0, int x0, Visit visit,
                                             int hinted_rows = kWarp, const uint2* lane_cache = nullptr) {
    static_assert(CachedRows == 0 || LaneRow<E>::kBytes == sizeof(uint2), "cached rows: gray only (8 bytes a lane)");
    const std::uint64_t hinted = l2_policy<Hint>();
    const std::uint64_t later = Hint == L2Hint::none || hinted_rows >= kWarp ? hinted : l2_policy<L2Hint::normal>();
    const std::uint8_t* src = nullptr;
    if (StepInside && warp_steps_inside<E>(in, plane, y0, x0, src)) {
        const std::size_t pitch = in.pitch_bytes;
#if __CUDA_ARCH__ >= 800
        constexpr int kFirstCached = kWarp - CachedRows;  // copy_rows_to_shared copied the rows from here on
        if constexpr (CachedRows > 0) asm volatile("cp.async.wait_all;" ::: "memory");  // the lane's own copies have landed
#else
        constexpr int kFirstCached = kWarp;  // no copies without cp.async
#endif
        // visit_rows loads the rows in order, so one pointer stepped by the pitch follows them.
        visit_rows<E, Group>(
            [&](int r, LaneRow<E>& row) {
                if constexpr (kFirstCached < kWarp) {
                    if (r >= kFirstCached) {
                        const uint2 bytes = lane_cache[(r - kFirstCached) * kWarp];
                        row.w[0] = bytes.x, row.w[1] = bytes.y;
                        return;
                    }
                }
                load_words<E, Hint>(src, row, r < hinted_rows ? hinted : later);
                src += pitch;
            },
            visit);
    } else {
        visit_rows<E, Group>(
            [&](int r, LaneRow<E>& row) { load_lane_row<E, Hint>(in, plane, y0 + r, x0, row, r < hinted_rows ? hinted : later); },
            visit);
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
// columns over those rows (per lane element), through for_each_row<E, Group, Hint, StepInside> (rows
// from hinted_rows on under the default policy).
// Few instructions per row: a lane's sum of a channel is one dp4a per word; the warp sums two rows
// at once, one in each 16-bit half (a row's sum in a tile is at most 256 * 255 < 2^16); the column
// sums are kept in 16-bit halves too, bytes 0 and 2 of each word in one register and bytes 1 and 3
// in another (at most 32 * 255 each).
template <int E, int Group = kRowGroup, L2Hint Hint = L2Hint::none, bool StepInside = true>
__device__ __forceinline__ void sum_rows_and_columns(const ImageView<const std::uint8_t>& in, int plane, int y0, int x0, int lane,
                                                     std::uint32_t (&row_sum)[E],
                                                     std::uint32_t (&column_sum)[kPixelsPerLane<E> * E], int hinted_rows = kWarp) {
    constexpr int kWords = LaneRow<E>::kBytes / 4;
    constexpr std::uint32_t kEvenBytes = 0x00ff00ffu;
    std::uint32_t even[kWords], odd[kWords];
    std::uint32_t pending[E];  // an even row's lane sums, until the odd row after it
#pragma unroll
    for (int i = 0; i < kWords; ++i) even[i] = 0, odd[i] = 0;
#pragma unroll
    for (int c = 0; c < E; ++c) row_sum[c] = 0, pending[c] = 0;
    for_each_row<E, Group, Hint, StepInside>(in, plane, y0, x0, [&](int r, const LaneRow<E>& row) {
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
    }, hinted_rows);
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
