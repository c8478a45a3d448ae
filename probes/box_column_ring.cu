// Probe: a box filter of 3x3, 9x9 or 31x31 on 8K RGB AoS (replicate rows) whose column sums are
// made by narrow lanes that keep the box's whole window on chip, and whose row sums are
// conv.box_pixel_lanes's (16 whole pixels a lane, slid along the lane: kernels/box_pixel_rows.hpp).
// The question: does a window held on chip (each input byte read from memory once) bring the 31x31
// box to the speed of the 3x3 one? conv.box_pixel_lanes reads the 31x31 box's input about 2.2 times
// from DRAM, as its warps' windows (32 rows of 1536 bytes each, 2096 warps) do not fit the L2. Not a
// variant: the columns within 48 bytes of a row's ends are not right (the loads there are clamped),
// and the box is fixed at compile time.
//
// Two forms; in both, a block owns the 1536-byte span of one of conv.box_pixel_lanes's warps (512
// pixels, the middle 480 written) and walks down a strip of rows, a batch of 12 rows at a time:
//   columns: thread t of 384 owns bytes 4t ... 4t + 3 of the span; each row it takes one loaded
//            word (a batch's 12 words loaded in one go, ahead), the leaving row's word from a ring
//            of 2 ry + 2 rows (rounded up to whole batches) in shared memory, puts the entering one
//            there, slides V (two 16-bit lanes to a word) and writes V to a buffer of the batch's
//            rows in shared memory;
//   rows:    warp j takes row j of the batch: each lane reads its 16 pixels' V (48 elements, six
//            16-byte loads) and works out the row as conv.box_pixel_lanes does, staging the row's
//            bytes for 512-byte stores.
// `phases` (box_column_ring): 12 warps do both in turn, a block barrier after the columns and one
// after the rows (the rows staged over their own V row), 2 blocks per SM; the next batch's loads
// are issued after the first barrier. `specialized` (box_specialized): 12 column warps and 12 row
// warps, a double buffer of V rows between them, named barriers (full, empty) instead of the
// block's, 1 block per SM; the column warps' loads run two batches ahead.
// So each byte of the image is loaded once per strip (plus the strip's first 2 ry + 1 rows), and
// the on-chip window is 32 bytes per column for the 31x31 box: 55 KB of ring per block.
// `columns` mode stores V's low bytes instead of the box (wrong pixels): the structure's floor.
//
// Measured on an NVIDIA H200 (2026-12-01, `bash scripts/gpu-probe.sh box_column_ring`; each run
// timed by CUDA events after an L2 flush, medians of at least 20; every interior byte of 11 rows
// checked equal to a CPU box sum, 0 of 251328 differ in every configuration):
//                 phases (strips of 270 rows)    specialized (strips of 540 rows; of 33, 66, 135, 540)
//   box  3x3:      73.9 us (1.56x the copy)       82.2 us (1.74x; 107.9, 93.9, 87.8, 82.2)
//   box  9x9:      76.7 us (1.62x)                83.0 us (1.76x; 111.3, 96.9, 89.7, 83.0)
//   box 31x31:     85.6 us (1.81x)                87.2 us (1.85x; 121.7, 106.7, 97.6, 87.2)
//   columns only:  58.5, 58.9 and 61.4 us         75.0, 75.3 and 73.7 us (3x3, 9x9, 31x31)
//                  (1.24x, 1.25x, 1.30x)          (1.59x, 1.59x, 1.56x)
// against the copy of the image, 47.2 us; conv.box_pixel_lanes in the committed run of the same
// day (62b0952, klab-bench, copy floor 47.62 us): box3 61.97 us, box9 74.56, box31 89.51.
// Nsight Compute (clocks unlocked, `PROFILE='box_' PROFILE_LAUNCHES=3 PROFILE_CLOCKS=unlocked bash
// scripts/gpu-probe.sh box_column_ring profile`), box31:
//   phases: 86.0 us, 35.5 M warp instructions, issue slots 40% busy, 80 registers (37.5%
//   theoretical occupancy), DRAM 45.6% of peak: about 188 MB moved for the 199 MB that the image's
//   read and write take (conv.box_pixel_lanes: about 307 MB, 2026-12-01, in its notes); stall
//   samples 28% short scoreboard (shared memory and shuffles), 13% MIO throttle. Its
//   columns alone: 60.5 us, 15.0 M instructions, DRAM 65.2% (about 189 MB), stall samples 34% short
//   and 29% long scoreboard, 13% barrier;
//   specialized: 86.6 us, 37.3 M instructions, issue slots 42%, DRAM 43.3% (about 180 MB); the row
//   warps' row, 353 instructions a warp, is 65% of the instructions; stall samples 15% barrier.
// So the window on chip does what it was for: the 31x31 box reads its input once (188 MB moved
// against 307), and its columns alone run at 1.30x the copy. But the row sums, about 350
// instructions per warp and row (conv.box_pixel_lanes's whole loop, columns included: about 405),
// no longer hide under the loads: in the phases form a block's warps all wait at the barriers
// while one phase runs, and 2 blocks per SM overlap them only in part (box31 85.6 us, 4% below
// conv.box_pixel_lanes's 89.51, the smaller boxes slower than it); the specialized form overlaps them by design, but its one block per SM keeps one span's
// loads in flight, and its columns alone run at 1.56x. Neither reaches the 1.3x target: that needs
// the row sums under ~60 us at the issue rates seen here (40 to 45% of the slots), about 25 M
// instructions for the 8K image, against ~35 M.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "autotune/timing.hpp"
#include "harness/cuda_check.hpp"
#include "kernels/box_pixel_rows.hpp"
#include "kernels/box_sums.hpp"
#include "probes/box9_probe.hpp"
#include "probes/probe_main.hpp"

namespace {

using klab::probes::box9::Buffers;
using klab::probes::box9::kHeight;
using klab::probes::box9::kRowBytes;
using klab::probes::box9::Timer;
using klab::box_sums::Rounding;

constexpr int E = 3;
constexpr int kWarpsPerBlock = 12;
constexpr int kThreads = 32 * kWarpsPerBlock;   // 384: 4 bytes each, the 1536-byte span
constexpr int kSpanBytes = 4 * kThreads;        // 1536 = 512 pixels
constexpr int kTileBytes = 1440;                // 480 pixels written
constexpr int kHaloBytes = 48;                  // the 16 pixels on each side
constexpr int kTiles = kRowBytes / kTileBytes;  // 16 on 8K
constexpr int kBatch = kWarpsPerBlock;          // rows per batch: a warp per row in the rows' phase
static_assert(kRowBytes % kTileBytes == 0, "8K RGB is 16 tiles");

// ---- the kernel

__device__ __forceinline__ std::uint32_t low_pair(std::uint32_t word) { return __byte_perm(word, 0u, 0x4140u); }
__device__ __forceinline__ std::uint32_t high_pair(std::uint32_t word) { return __byte_perm(word, 0u, 0x4342u); }

// The ring's rows: 2 ry + 2 at least, rounded up to whole batches, so that every slot a batch
// reads or writes is known at compile time (the kernels' loops are unrolled over a ring's turn).
template <int R>
struct Ring {
    static constexpr int kSlots = (2 * R + 2 + kBatch - 1) / kBatch * kBatch;
    static constexpr int kCycle = kSlots / kBatch;  // batches per turn of the ring
    static_assert(kCycle <= 3, "the phases kernel's loop unrolls three batches at most");
    static_assert(2 * R < kSlots, "the first rows fill distinct slots");
};

// What a column thread carries from batch to batch.
struct Walk {
    int y0, y_end, column;        // the batch's first output row, the strip's end, the thread's byte of a row
    std::uint32_t v_low, v_high;  // V of the thread's 4 bytes, two 16-bit lanes to a word
};

// The entering words of output rows y0 ... y0 + kBatch - 1 (image rows y0 + R ...): one pointer,
// rows a pitch apart as immediate offsets, unless the batch reaches past the image's last row.
template <int R>
__device__ __forceinline__ void load_batch(const std::uint8_t* __restrict__ in, int y0, int column, std::uint32_t (&words)[kBatch]) {
    constexpr std::size_t pitch = Buffers::pitch;
    if (y0 + R + kBatch <= kHeight) {
        const std::uint8_t* const row = in + static_cast<std::size_t>(y0 + R) * pitch + column;
#pragma unroll
        for (int j = 0; j < kBatch; ++j) words[j] = __ldg(reinterpret_cast<const std::uint32_t*>(row + j * pitch));
    } else {
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
            words[j] = __ldg(reinterpret_cast<const std::uint32_t*>(in + static_cast<std::size_t>(min(y0 + R + j, kHeight - 1)) * pitch + column));
        }
    }
}

// A column thread's start of its strip [y_begin, y_end) of the span at byte `span` of a row: V of
// the row before the strip's first, the sum of rows y_begin - R - 1 ... y_begin + R - 1 (local rows
// 0 ... 2R), each put into ring slot (local row).
template <int R>
__device__ __forceinline__ Walk first_rows(const std::uint8_t* __restrict__ in, std::uint32_t* ring, int y_begin, int y_end, int span) {
    const int t = static_cast<int>(threadIdx.x);
    Walk w{y_begin, y_end, min(max(span + 4 * t, 0), kRowBytes - 4), 0u, 0u};
#pragma unroll
    for (int q = 0; q <= 2 * R; ++q) {
        const int y = min(max(y_begin - R - 1 + q, 0), kHeight - 1);
        const std::uint32_t word = __ldg(reinterpret_cast<const std::uint32_t*>(in + static_cast<std::size_t>(y) * Buffers::pitch + w.column));
        ring[q * kThreads + t] = word;
        w.v_low += low_pair(word);
        w.v_high += high_pair(word);
    }
    return w;
}

// The columns of a batch (ring turn Phase): output row y0 + j, local step i = Phase * kBatch + j
// (mod kSlots), whose leaving row is local row i and entering row local row i + 2R + 1 (its word
// words[j]); V of each row into row j of `vrows`.
template <int R, int Phase>
__device__ __forceinline__ void column_batch(std::uint32_t* ring, std::uint32_t* vrows, Walk& w, const std::uint32_t (&words)[kBatch]) {
    constexpr int kSlots = Ring<R>::kSlots;
    constexpr int kBase = Phase * kBatch;
    const int t = static_cast<int>(threadIdx.x);
    const bool full = w.y0 + kBatch <= w.y_end;
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
        if (full || w.y0 + j < w.y_end) {
            const std::uint32_t enter = words[j];
            const std::uint32_t leave = ring[((kBase + j) % kSlots) * kThreads + t];
            ring[((kBase + j + 2 * R + 1) % kSlots) * kThreads + t] = enter;
            w.v_low = w.v_low + low_pair(enter) - low_pair(leave);
            w.v_high = w.v_high + high_pair(enter) - high_pair(leave);
            reinterpret_cast<uint2*>(vrows)[j * kThreads + t] = make_uint2(w.v_low, w.v_high);
        }
    }
}

// A row warp's lane takes V of its 16 pixels (48 elements) from row `vrow` of the V buffer.
__device__ __forceinline__ void lane_columns(const uint4* vrow, int lane, std::uint32_t (&v)[E][8]) {
#pragma unroll
    for (int p = 0; p < 6; ++p) {
        const uint4 piece = vrow[6 * lane + p];
        v[p / 2][4 * (p % 2) + 0] = piece.x;
        v[p / 2][4 * (p % 2) + 1] = piece.y;
        v[p / 2][4 * (p % 2) + 2] = piece.z;
        v[p / 2][4 * (p % 2) + 3] = piece.w;
    }
}

// A row warp's output row at `dst` (the span's first byte) from its lanes' V: the box (RowSums;
// kernels/box_pixel_rows.hpp) or V's low bytes, staged in `stage` (96 pieces of 16 bytes), stored
// 512 consecutive bytes at a time (the 1440 of lanes 1 to 30).
template <int R, bool RowSums>
__device__ __forceinline__ void row_output(const std::uint32_t (&v)[E][8], uint4* stage, std::uint8_t* dst, int lane, const Rounding& rounding) {
    if constexpr (RowSums) {
        klab::box_pixel_rows::row_bytes_of<E, R, true>(v, rounding, [&](int piece, uint4 bytes) { stage[E * lane + piece] = bytes; });
    } else {
#pragma unroll
        for (int c = 0; c < E; ++c) {
            stage[E * lane + c] = make_uint4(__byte_perm(v[c][0], v[c][1], 0x6420u), __byte_perm(v[c][2], v[c][3], 0x6420u),
                                             __byte_perm(v[c][4], v[c][5], 0x6420u), __byte_perm(v[c][6], v[c][7], 0x6420u));
        }
    }
    __syncwarp();
#pragma unroll
    for (int q = 0; q < E; ++q) {
        const int byte = 16 * (32 * q + lane);
        if (byte >= kHaloBytes && byte < kHaloBytes + kTileBytes) __stcs(reinterpret_cast<uint4*>(dst + byte), stage[32 * q + lane]);
    }
}

// ---- the phases form: 12 warps, columns then rows, two block barriers a batch

// One batch from w.y0 (ring turn Phase): the columns from `words`, a barrier, the next batch's
// loads into `words`, warp j's row j staged over its own V row, a barrier. Whether rows are left.
template <int R, bool RowSums, int Phase>
__device__ __forceinline__ bool phases_batch(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, std::uint32_t* ring,
                                             std::uint32_t* vrows, Walk& w, std::uint32_t (&words)[kBatch], int span, const Rounding& rounding) {
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    column_batch<R, Phase>(ring, vrows, w, words);
    __syncthreads();
    if (w.y0 + kBatch < w.y_end) load_batch<R>(in, w.y0 + kBatch, w.column, words);
    const int y = w.y0 + warp;
    if (y < w.y_end) {
        uint4* const row = reinterpret_cast<uint4*>(vrows) + warp * (2 * kThreads / 4);  // 192 pieces of 16 bytes
        std::uint32_t v[E][8];
        lane_columns(row, lane, v);
        __syncwarp();  // every lane has its V before the row's bytes are staged over them
        row_output<R, RowSums>(v, row, out + static_cast<std::size_t>(y) * Buffers::pitch + span, lane, rounding);
    }
    __syncthreads();
    w.y0 += kBatch;
    return w.y0 < w.y_end;
}

template <int R, bool RowSums>
__global__ void __launch_bounds__(kThreads, 2)
    box_column_ring(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, int strip_rows, Rounding rounding) {
    extern __shared__ __align__(16) std::uint32_t shared[];
    std::uint32_t* const ring = shared;                                 // kSlots rows of kThreads words
    std::uint32_t* const vrows = shared + Ring<R>::kSlots * kThreads;  // kBatch rows of 2 kThreads words (V, 16-bit)
    const int tile = static_cast<int>(blockIdx.x) % kTiles, strip = static_cast<int>(blockIdx.x) / kTiles;
    const int y_begin = strip * strip_rows, y_end = min(y_begin + strip_rows, kHeight);
    const int span = tile * kTileBytes - kHaloBytes;
    Walk w = first_rows<R>(in, ring, y_begin, y_end, span);
    std::uint32_t words[kBatch];
    load_batch<R>(in, w.y0, w.column, words);
    for (;;) {
        if (!phases_batch<R, RowSums, 0>(in, out, ring, vrows, w, words, span, rounding)) break;
        if constexpr (Ring<R>::kCycle > 1) {
            if (!phases_batch<R, RowSums, 1>(in, out, ring, vrows, w, words, span, rounding)) break;
        }
        if constexpr (Ring<R>::kCycle > 2) {
            if (!phases_batch<R, RowSums, 2>(in, out, ring, vrows, w, words, span, rounding)) break;
        }
    }
}

// ---- the warp-specialized form: 12 column warps and 12 row warps per block, a double buffer of V
// rows between them, named barriers instead of the block's

constexpr int kSpecializedThreads = 2 * kThreads;  // 768
constexpr int kFull0 = 1, kEmpty0 = 3;              // named barriers: full[b] = 1 + b, empty[b] = 3 + b

__device__ __forceinline__ void bar_sync(int id) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(kSpecializedThreads) : "memory"); }
__device__ __forceinline__ void bar_arrive(int id) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(kSpecializedThreads) : "memory"); }

// Steps S ... of the column warps' loop, unrolled over P = lcm(ring turn, 2) batches; step s at
// ring turn s % kCycle with the entering words of array s % 2. Batch k waits until the row warps
// have read V buffer k % 2's last contents (batch k - 2), writes the batch's V there, tells the row
// warps, then loads batch k + 2's entering words into its array (batch k + 1's, in the other
// array, are in flight already: no register is copied while its load is pending). Whether rows
// are left.
template <int R, int S, int P>
__device__ __forceinline__ bool column_steps(const std::uint8_t* __restrict__ in, std::uint32_t* ring, std::uint32_t* vbuffers, Walk& w,
                                             std::uint32_t (&even)[kBatch], std::uint32_t (&odd)[kBatch], int& k, int batches) {
    if constexpr (S == P) {
        return true;
    } else {
        std::uint32_t(&words)[kBatch] = S % 2 == 0 ? even : odd;
        const int b = k & 1;
        if (k >= 2) bar_sync(kEmpty0 + b);
        column_batch<R, S % Ring<R>::kCycle>(ring, vbuffers + b * kBatch * 2 * kThreads, w, words);
        bar_arrive(kFull0 + b);
        if (w.y0 + 2 * kBatch < w.y_end) load_batch<R>(in, w.y0 + 2 * kBatch, w.column, words);
        w.y0 += kBatch;
        if (++k == batches) return false;
        return column_steps<R, S + 1, P>(in, ring, vbuffers, w, even, odd, k, batches);
    }
}

template <int R, bool RowSums>
__global__ void __launch_bounds__(kSpecializedThreads, 1)
    box_specialized(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, int strip_rows, Rounding rounding) {
    extern __shared__ __align__(16) std::uint32_t shared[];
    std::uint32_t* const ring = shared;                                                    // kSlots rows of kThreads words
    std::uint32_t* const vbuffers = shared + Ring<R>::kSlots * kThreads;                  // 2 x kBatch rows of 2 kThreads words
    uint4* const stages = reinterpret_cast<uint4*>(vbuffers + 2 * kBatch * 2 * kThreads);  // a row of 96 pieces per row warp
    const int tile = static_cast<int>(blockIdx.x) % kTiles, strip = static_cast<int>(blockIdx.x) / kTiles;
    const int y_begin = strip * strip_rows, y_end = min(y_begin + strip_rows, kHeight);
    const int batches = (y_end - y_begin + kBatch - 1) / kBatch;
    const int span = tile * kTileBytes - kHaloBytes;
    const int warp = static_cast<int>(threadIdx.x) >> 5;

    if (warp < kWarpsPerBlock) {  // column warps
        Walk w = first_rows<R>(in, ring, y_begin, y_end, span);
        std::uint32_t even[kBatch], odd[kBatch];
        load_batch<R>(in, y_begin, w.column, even);
        if (y_begin + kBatch < y_end) load_batch<R>(in, y_begin + kBatch, w.column, odd);
        constexpr int kPeriod = Ring<R>::kCycle % 2 == 0 ? Ring<R>::kCycle : 2 * Ring<R>::kCycle;
        for (int k = 0; column_steps<R, 0, kPeriod>(in, ring, vbuffers, w, even, odd, k, batches);) {
        }
        return;
    }

    // Row warps: warp r takes row r of each batch, and releases the V buffer once it has its V.
    const int r = warp - kWarpsPerBlock, lane = static_cast<int>(threadIdx.x) & 31;
    uint4* const stage = stages + r * (E * 32);
    for (int k = 0; k < batches; ++k) {
        const int b = k & 1;
        const int y = y_begin + k * kBatch + r;
        bar_sync(kFull0 + b);
        std::uint32_t v[E][8];
        if (y < y_end) lane_columns(reinterpret_cast<const uint4*>(vbuffers + b * kBatch * 2 * kThreads) + r * (2 * kThreads / 4), lane, v);
        if (k + 2 < batches) bar_arrive(kEmpty0 + b);
        if (y >= y_end) continue;
        __syncwarp();  // the last row's stores have read the stage
        row_output<R, RowSums>(v, stage, out + static_cast<std::size_t>(y) * Buffers::pitch + span, lane, rounding);
    }
}

// ---- the host side

long differing_bytes(const std::vector<std::uint8_t>& image, const std::vector<std::uint8_t>& result, int radius, const std::vector<int>& rows,
                     long& checked) {
    const long count = static_cast<long>(2 * radius + 1) * (2 * radius + 1);
    std::vector<std::uint32_t> columns(kRowBytes);
    long differing = 0;
    for (int y : rows) {
        std::fill(columns.begin(), columns.end(), 0u);
        for (int dy = -radius; dy <= radius; ++dy) {
            const std::size_t source = static_cast<std::size_t>(std::min(std::max(y + dy, 0), kHeight - 1)) * Buffers::pitch;
            for (int e = 0; e < kRowBytes; ++e) columns[e] += image[source + e];
        }
        for (int e = 2 * kHaloBytes; e < kRowBytes - 2 * kHaloBytes; ++e) {
            std::uint32_t sum = 0;
            for (int dx = -radius; dx <= radius; ++dx) sum += columns[e + dx * E];
            ++checked;
            if (result[static_cast<std::size_t>(y) * Buffers::pitch + e] != (sum + (count - 1) / 2) / count) ++differing;
        }
    }
    return differing;
}

bool g_profile = false;  // `profile`: each configuration launched once, untimed, for Nsight Compute

template <int R>
void time_box(Timer& timer, const Buffers& buffers, double copy_us, bool row_sums, const std::vector<int>& strip_heights, bool specialized) {
    const auto kernel = specialized ? (row_sums ? &box_specialized<R, true> : &box_specialized<R, false>)
                                    : (row_sums ? &box_column_ring<R, true> : &box_column_ring<R, false>);
    const int threads = specialized ? kSpecializedThreads : kThreads;
    const std::size_t ring_bytes = static_cast<std::size_t>(Ring<R>::kSlots) * kSpanBytes;
    const std::size_t vrow_bytes = static_cast<std::size_t>(kBatch) * kSpanBytes * 2;
    const std::size_t shared = specialized ? ring_bytes + 2 * vrow_bytes + static_cast<std::size_t>(kWarpsPerBlock) * kSpanBytes : ring_bytes + vrow_bytes;
    KLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
    int per_sm = 0;
    KLAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared));
    cudaFuncAttributes attributes{};
    KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    const auto count = static_cast<std::uint32_t>((2 * R + 1) * (2 * R + 1));
    Rounding rounding{};  // the normalized box: round(S / count) as one multiply-high (kernels/box_sums.hpp)
    rounding.normalized = true;
    rounding.half = (count - 1) / 2;
    rounding.inverse = static_cast<std::uint32_t>(((1ull << 32) + count - 1) / count);
    for (int strip_rows : strip_heights) {
        const int strips = (kHeight + strip_rows - 1) / strip_rows;
        const int grid = kTiles * strips;
        const klab::autotune::Work work = [&, strip_rows, grid](cudaStream_t s) {
            kernel<<<grid, threads, shared, s>>>(buffers.in, buffers.out, strip_rows, rounding);
            KLAB_CUDA_CHECK(cudaGetLastError());
        };
        if (g_profile) {
            work(nullptr);
            KLAB_CUDA_CHECK(cudaDeviceSynchronize());
            continue;
        }
        std::string check = "not checked (wrong pixels)";
        if (row_sums) {
            long checked = 0;
            const long differing = differing_bytes(buffers.image, buffers.output_of(work), R, {0, 1, 2, R, R + 1, strip_rows - 1, strip_rows,
                                                   strip_rows + 5, 2001, kHeight - 2, kHeight - 1}, checked);
            check = std::to_string(differing) + " of " + std::to_string(checked) + " interior bytes differ";
        }
        const double us = timer.median_us(work);
        std::printf("%-11s box %2dx%-2d %-8s strips of %4d rows (%4d blocks, %d per SM, %3d registers, %6zu B shared): %7.1f us (%.2fx the copy); %s\n",
                    specialized ? "specialized" : "phases", 2 * R + 1, 2 * R + 1, row_sums ? "box" : "columns", strip_rows, grid, per_sm, attributes.numRegs, shared, us, us / copy_us,
                    check.c_str());
        std::fflush(stdout);
    }
}

int run() {
    Buffers buffers;
    Timer timer;
    const double copy_us = timer.copy_us(buffers);
    if (g_profile) {  // box31 in both forms at their best strips, then the phases form's columns alone
        time_box<15>(timer, buffers, copy_us, true, {270}, false);
        time_box<15>(timer, buffers, copy_us, true, {540}, true);
        time_box<15>(timer, buffers, copy_us, false, {270}, false);
        return 0;
    }
    for (bool row_sums : {true, false}) {
        time_box<1>(timer, buffers, copy_us, row_sums, {270}, false);
        time_box<4>(timer, buffers, copy_us, row_sums, {270}, false);
        time_box<15>(timer, buffers, copy_us, row_sums, {270}, false);
        // One block per SM: 132 blocks fill a wave; 16 tiles x 8 strips of 540 rows is 128.
        time_box<1>(timer, buffers, copy_us, row_sums, {33, 66, 135, 540}, true);
        time_box<4>(timer, buffers, copy_us, row_sums, {33, 66, 135, 540}, true);
        time_box<15>(timer, buffers, copy_us, row_sums, {33, 66, 135, 540}, true);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 2 || (argc == 2 && std::string(argv[1]) != "profile")) {
        std::fprintf(stderr, "klab-probe-box-column-ring: unknown arguments (from '%s'); give none (every configuration, timed) or profile\n", argv[1]);
        return 2;
    }
    g_profile = argc == 2;
    return klab::probes::run_probe(&run);
}
