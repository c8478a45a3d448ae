// Probe: a box filter of 3x3, 9x9 or 31x31 on 8K RGB AoS (replicate rows) whose column sums are
// made by narrow lanes that keep the box's whole window on chip, and whose row sums are
// conv.box_pixel_lanes's (16 whole pixels a lane, slid along the lane: kernels/box_pixel_rows.hpp)
// or, in the runs forms, slid the same way along column sums kept as 32-bit words.
// The question: does a window held on chip (each input byte read from memory once) bring the 31x31
// box to the speed of the 3x3 one? conv.box_pixel_lanes reads the 31x31 box's input about 2.2 times
// from DRAM, as its warps' windows (32 rows of 1536 bytes each, 2096 warps) do not fit the L2. Not a
// variant: the columns within 48 bytes of a row's ends are not right (the loads there are clamped),
// and the box is fixed at compile time.
//
// Three kinds of form; in each, a block owns the 1536-byte span of one of conv.box_pixel_lanes's warps (512
// pixels, the middle 480 written) and walks down a strip of rows, a batch of rows at a time:
//   columns: each thread owns 4 or 8 consecutive bytes of the span; each row it takes its loaded
//            words (a batch's loaded in one go, ahead), the leaving row's words from a ring of
//            2 ry + 2 rows (rounded up to whole batches) in shared memory, puts the entering ones
//            there, slides V (two 16-bit lanes to a word) and writes V to a buffer of the batch's
//            rows in shared memory;
//   rows:    warp j takes row j of the batch: each lane reads its 16 pixels' V (48 elements, six
//            16-byte loads) and works out the row as conv.box_pixel_lanes does, staging the row's
//            bytes for 512-byte stores.
// `phases/12` and `phases/6` (box_column_ring): the block's 12 warps (4 bytes a column thread, 2
// blocks per SM) or 6 warps (8 bytes, 3 or 4 blocks per SM) do both in turn, batches of as many
// rows as warps, a block barrier after the columns and one after the rows (the rows staged over
// their own V row); the next batch's loads are issued after the first barrier. `specialized`
// (box_specialized): 12 column warps and 12 row warps, a double buffer of V rows between them,
// named barriers (full, empty) instead of the block's, 1 block per SM; the column warps' loads run
// two batches ahead. `runs/12` and `runs/6` (box_column_ring with Runs): the phases forms with
// cheaper row sums (row_runs): the columns write V one 32-bit word per element (6.5 KB a row
// instead of 3), so that a lane slides S along its 48 elements with one three-input add each,
// reading the entering and leaving elements as 16-byte pieces of its neighbours' runs instead of
// taking them by shuffles and 16-bit halves.
// So each byte of the image is loaded once per strip (plus the strip's first 2 ry + 1 rows), and
// the on-chip window is 32 bytes per column for the 31x31 box: 55 KB of ring per block.
// `columns` mode stores V's low bytes instead of the box (wrong pixels): the structure's floor.
//
// Measured on an NVIDIA H200 (2026-12-01, `bash scripts/gpu-probe.sh box_column_ring`, the file as
// it is; each run timed by CUDA events after an L2 flush, medians of at least 20; every interior
// byte of 11 rows checked equal to a CPU box sum, 0 of 251328 differ in every configuration; the
// copy of the image 47.2 us), the best strips of each form (rows):
//                 phases/12 (270)     phases/6 (135; 270)   specialized (540)   runs/12 (270; 540)  runs/6 (180; 270)
//   box  3x3:      73.9 us (1.56x)     71.6 us (1.52x)       82.1 us (1.74x)     72.8 us (1.54x)     75.5 us (1.60x)
//   box  9x9:      76.9 us (1.63x)     73.4 us (1.55x)       83.1 us (1.76x)     84.4 us (1.79x)     80.1 us (1.70x)
//   box 31x31:     85.3 us (1.81x)     84.5 us (1.79x; 270)  87.4 us (1.85x)     97.3 us (2.06x; 540) 96.2 us (2.04x; 270)
//   columns only:  58.4, 58.9, 61.4    57.1, 58.8, 67.7      75.1, 75.3, 73.8    66.7, 66.9, 77.3    68.6, 69.8, 76.7
//                  (1.24x to 1.30x)    (1.21x to 1.43x)      (1.56x to 1.59x)    (1.41x to 1.64x)    (1.45x to 1.62x)
// (specialized at 33, 66, 135 rows: box3 107.9, 93.9, 87.3 us; box9 111.4, 97.1, 89.9; box31
// 122.5, 107.3, 97.0. runs/12's box9 kernel spills 52 bytes at the 80 registers of 2 blocks per
// SM.) conv.box_pixel_lanes in the committed run of the same day (62b0952, klab-bench, copy floor
// 47.62 us): box3 61.97 us, box9 74.56, box31 89.51; conv.box_warp_ring box9 73.96.
// Nsight Compute (clocks unlocked, `PROFILE='box_' PROFILE_LAUNCHES=5 PROFILE_CLOCKS=unlocked bash
// scripts/gpu-probe.sh box_column_ring profile`), box31:
//   phases/12: 85.1 us, 35.6 M warp instructions, issue slots 41% busy, 80 registers (37.5%
//   theoretical occupancy), DRAM 46.1% of peak: about 188 MB moved for the 199 MB that the image's
//   read and write take (conv.box_pixel_lanes: about 307 MB, 2026-12-01, in its notes), L2 hit rate
//   52%; stall samples 27% short scoreboard (shared memory and shuffles), 14% MIO throttle. Its
//   columns alone: 61.0 us, 15.2 M instructions, DRAM 64.6% (about 189 MB), stall samples 36% short
//   and 28% long scoreboard, 10% barrier;
//   specialized: 86.3 us, 37.3 M instructions, issue slots 42%, DRAM 43.5% (about 180 MB); the row
//   warps' row, 353 instructions a warp, is 65% of the instructions; stall samples 17% barrier;
//   runs/12 (540 rows): 96.9 us, 30.8 M instructions (14% fewer than phases/12), issue slots 31%
//   busy, 18.75% theoretical occupancy (its 135 KB of ring and V rows leave 1 block per SM), DRAM
//   38.9% (about 181 MB); stall samples 44% short scoreboard; runs/6 (270 rows): 95.9 us, 30.0 M
//   instructions, issue slots 31%, 18.75% (2 blocks of 6 warps, 96 registers), 43% short scoreboard.
// So the window on chip does what it was for: the 31x31 box reads its input once (188 MB moved
// against 307), and its columns alone run at 1.30x the copy. But the row sums, about 350
// instructions per warp and row (conv.box_pixel_lanes's whole loop, columns included: about 405),
// no longer hide under the loads: in the phases forms a block's warps all wait at the barriers
// while one phase runs, and 2 to 4 blocks per SM overlap them only in part (box31 84.5 us, 6%
// below conv.box_pixel_lanes's 89.51; box9 73.4, level with the variants; box3 slower); the
// specialized form overlaps them by design, but its one block per SM keeps one span's loads in
// flight, and its columns alone run at 1.56x. The runs forms cut the instructions by 14%, but their
// V rows of 32-bit words halve the blocks per SM: the columns alone slow from 1.30x to 1.64x, the
// stalls on shared memory grow (44% of the samples) and the whole is 14% slower on box31, 9 to 10%
// on box9 (whose runs/12 kernel keeps 2 blocks per SM but spills); box3 gains 1.5% in runs/12 and
// loses 5% in runs/6.
// None reaches the 1.3x target: that needs the row sums under ~60 us at the issue rates seen here
// (40 to 45% of the slots), about 25 M instructions for the 8K image, against ~35 M, without giving
// up the occupancy that hides the shared-memory latency.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "autotune/timing.hpp"
#include "harness/cuda_check.hpp"
#include "harness/mask.hpp"
#include "kernels/box_pixel_rows.hpp"
#include "kernels/box_sums.hpp"
#include "probes/box9_probe.hpp"
#include "probes/probe_main.hpp"

namespace {

using klab::probes::box9::Buffers;
using klab::probes::box9::differing_bytes;
using klab::probes::box9::kHeight;
using klab::probes::box9::kRowBytes;
using klab::probes::box9::Timer;
using klab::box_sums::Rounding;

constexpr int E = 3;
constexpr int kSpanBytes = 1536;                // 512 pixels
constexpr int kSpanWords = kSpanBytes / 4;      // 384
constexpr int kTileBytes = 1440;                // 480 pixels written
constexpr int kHaloBytes = 48;                  // the 16 pixels on each side
constexpr int kTiles = kRowBytes / kTileBytes;  // 16 on 8K
static_assert(kRowBytes % kTileBytes == 0, "8K RGB is 16 tiles");

// A block of W warps over the span: in the columns, thread t owns words t * kWords ... of the span
// (4 or 8 bytes); a batch is W rows, warp j takes row j in the rows.
template <int W>
struct Block {
    static constexpr int kThreads = 32 * W;
    static constexpr int kWords = kSpanWords / kThreads;  // 1 (12 warps) or 2 (6 warps)
    static constexpr int kBatch = W;
    static_assert(kWords * kThreads == kSpanWords && (kWords == 1 || kWords == 2), "12 or 6 warps");
};

// ---- the kernel

__device__ __forceinline__ std::uint32_t low_pair(std::uint32_t word) { return __byte_perm(word, 0u, 0x4140u); }
__device__ __forceinline__ std::uint32_t high_pair(std::uint32_t word) { return __byte_perm(word, 0u, 0x4342u); }

// The ring's rows: 2 ry + 2 at least, rounded up to whole batches, so that every slot a batch
// reads or writes is known at compile time (the kernels' loops are unrolled over a ring's turn).
template <int R, int W>
struct Ring {
    static constexpr int kBatch = Block<W>::kBatch;
    static constexpr int kSlots = (2 * R + 2 + kBatch - 1) / kBatch * kBatch;
    static constexpr int kCycle = kSlots / kBatch;  // batches per turn of the ring
    static_assert(kCycle <= 6, "the phases kernel's loop unrolls six batches at most");
    static_assert(2 * R < kSlots, "the first rows fill distinct slots");
};

// What a column thread carries from batch to batch.
template <int W>
struct Walk {
    int y0, y_end, column;  // the batch's first output row, the strip's end, the thread's first byte of a row
    std::uint32_t v_low[Block<W>::kWords], v_high[Block<W>::kWords];  // V of its bytes, two 16-bit lanes to a word
};

// A column thread's words of a row at `p` (its first byte).
template <int W>
__device__ __forceinline__ void load_words(const std::uint8_t* p, std::uint32_t (&words)[Block<W>::kWords]) {
    if constexpr (Block<W>::kWords == 1) {
        words[0] = __ldg(reinterpret_cast<const std::uint32_t*>(p));
    } else {
        const uint2 pair = __ldg(reinterpret_cast<const uint2*>(p));
        words[0] = pair.x;
        words[1] = pair.y;
    }
}

// The entering words of output rows y0 ... y0 + kBatch - 1 (image rows y0 + R ...): one pointer,
// rows a pitch apart as immediate offsets, unless the batch reaches past the image's last row.
template <int R, int W>
__device__ __forceinline__ void load_batch(const std::uint8_t* __restrict__ in, int y0, int column,
                                           std::uint32_t (&words)[Block<W>::kBatch][Block<W>::kWords]) {
    constexpr std::size_t pitch = Buffers::pitch;
    constexpr int kBatch = Block<W>::kBatch;
    if (y0 + R + kBatch <= kHeight) {
        const std::uint8_t* const row = in + static_cast<std::size_t>(y0 + R) * pitch + column;
#pragma unroll
        for (int j = 0; j < kBatch; ++j) load_words<W>(row + j * pitch, words[j]);
    } else {
#pragma unroll
        for (int j = 0; j < kBatch; ++j) load_words<W>(in + static_cast<std::size_t>(min(y0 + R + j, kHeight - 1)) * pitch + column, words[j]);
    }
}

// A column thread's start of its strip [y_begin, y_end) of the span at byte `span` of a row: V of
// the row before the strip's first, the sum of rows y_begin - R - 1 ... y_begin + R - 1 (local rows
// 0 ... 2R), each put into ring slot (local row). Ring slot k holds word q of thread t at
// (k * kWords + q) * kThreads + t.
template <int R, int W>
__device__ __forceinline__ Walk<W> first_rows(const std::uint8_t* __restrict__ in, std::uint32_t* ring, int y_begin, int y_end, int span) {
    using B = Block<W>;
    const int t = static_cast<int>(threadIdx.x);
    Walk<W> w{y_begin, y_end, min(max(span + 4 * B::kWords * t, 0), kRowBytes - 4 * B::kWords), {}, {}};
#pragma unroll
    for (int q = 0; q < B::kWords; ++q) w.v_low[q] = 0u, w.v_high[q] = 0u;
#pragma unroll
    for (int r = 0; r <= 2 * R; ++r) {
        const int y = min(max(y_begin - R - 1 + r, 0), kHeight - 1);
        std::uint32_t words[B::kWords];
        load_words<W>(in + static_cast<std::size_t>(y) * Buffers::pitch + w.column, words);
#pragma unroll
        for (int q = 0; q < B::kWords; ++q) {
            ring[(r * B::kWords + q) * B::kThreads + t] = words[q];
            w.v_low[q] += low_pair(words[q]);
            w.v_high[q] += high_pair(words[q]);
        }
    }
    return w;
}

// The `runs` form of the V rows: one 32-bit word per element, lane l's 48 elements (its 16 pixels)
// at words 52 l ... 52 l + 47: 4 words of padding a lane, so that a quarter warp's 16-byte loads
// of 8 lanes' pieces fall in 32 distinct banks.
constexpr int kRunElements = 48;
constexpr int kRunStride = 52;
constexpr int kRunRowWords = 32 * kRunStride;  // 1664 words a row
__host__ __device__ constexpr int run_word(int element) { return element + 4 * (element / kRunElements); }

// The columns of a batch (ring turn Phase): output row y0 + j, local step i = Phase * kBatch + j
// (mod kSlots), whose leaving row is local row i and entering row local row i + 2R + 1 (its words
// words[j]); V of each row into row j of `vrows` (768 words a row: V of element 2k and 2k + 1 in
// word k).
template <int R, int W, int Phase, bool Runs = false>
__device__ __forceinline__ void column_batch(std::uint32_t* ring, std::uint32_t* vrows, Walk<W>& w,
                                             const std::uint32_t (&words)[Block<W>::kBatch][Block<W>::kWords]) {
    using B = Block<W>;
    constexpr int kSlots = Ring<R, W>::kSlots;
    constexpr int kBase = Phase * B::kBatch;
    const int t = static_cast<int>(threadIdx.x);
    const bool full = w.y0 + B::kBatch <= w.y_end;
#pragma unroll
    for (int j = 0; j < B::kBatch; ++j) {
        if (full || w.y0 + j < w.y_end) {
            constexpr int kLeave = 0, kEnter = 2 * R + 1;
            std::uint32_t v[2 * B::kWords];
#pragma unroll
            for (int q = 0; q < B::kWords; ++q) {
                const std::uint32_t enter = words[j][q];
                const std::uint32_t leave = ring[(((kBase + j + kLeave) % kSlots) * B::kWords + q) * B::kThreads + t];
                ring[(((kBase + j + kEnter) % kSlots) * B::kWords + q) * B::kThreads + t] = enter;
                w.v_low[q] = w.v_low[q] + low_pair(enter) - low_pair(leave);
                w.v_high[q] = w.v_high[q] + high_pair(enter) - high_pair(leave);
                v[2 * q] = w.v_low[q];
                v[2 * q + 1] = w.v_high[q];
            }
            if constexpr (Runs) {
#pragma unroll
                for (int q = 0; q < B::kWords; ++q) {
                    const int element = 4 * (t * B::kWords + q);
                    *reinterpret_cast<uint4*>(vrows + j * kRunRowWords + run_word(element)) =
                        make_uint4(v[2 * q] & 0xffffu, v[2 * q] >> 16, v[2 * q + 1] & 0xffffu, v[2 * q + 1] >> 16);
                }
            } else if constexpr (B::kWords == 1) {
                reinterpret_cast<uint2*>(vrows)[j * kSpanWords + t] = make_uint2(v[0], v[1]);
            } else {
                reinterpret_cast<uint4*>(vrows)[j * (kSpanWords / 2) + t] = make_uint4(v[0], v[1], v[2], v[3]);
            }
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

// The `runs` row sums: lane l owns the 48 elements of its 16 pixels and slides S along them with
// one three-input add per element, S += V(x + rx E) - V(x - (rx + 1) E), both read from the V row
// as 16-byte pieces (its own, the previous lane's and the next lane's: no shuffle but one per
// channel), rounded by one multiply-high, four bytes packed to a word. Its first S per channel: the
// previous lane's last rx + 1 pixels (a shuffle) and its own first rx. Lanes 0 and 31 only hand
// their sums over (their bytes are not stored).
template <int R, bool RowSums>
__device__ __forceinline__ void row_runs(std::uint32_t* vrow, uint4* stage, std::uint8_t* dst, int lane, const Rounding& rounding) {
    constexpr int kLead = R * E, kTrail = (R + 1) * E;
    static_assert(kTrail <= kRunElements, "the leaving element lies in the previous lane's run");
    const uint4* const pieces = reinterpret_cast<const uint4*>(vrow);
    constexpr int kLanePieces = kRunStride / 4;  // 13
    const int lanes[3] = {max(lane - 1, 0), lane, min(lane + 1, 31)};
    // The four elements e ... e + 3 of the lane's run (e = -48 ... 92, a multiple of 4: the previous
    // lane's, its own or the next lane's), loaded where they are used, so that few are live at once.
    const auto piece = [&](int e, std::uint32_t (&four)[4]) {
        const uint4 q = pieces[kLanePieces * lanes[(e + 48) / 48] + (e + 48) % 48 / 4];
        four[0] = q.x, four[1] = q.y, four[2] = q.z, four[3] = q.w;
    };
    // Element o of the lane's run (any o = -48 ... 95).
    const auto element = [&](int o) {
        std::uint32_t four[4];
        piece((o + 48) / 4 * 4 - 48, four);
        return four[(o + 48) % 4];
    };
    std::uint32_t words[kRunElements / 4];
    if constexpr (RowSums) {
        std::uint32_t before[E] = {0u, 0u, 0u}, after[E] = {0u, 0u, 0u};
#pragma unroll
        for (int o = 0; o < kLead; ++o) after[o % E] += element(o);                             // own first rx pixels
#pragma unroll
        for (int o = kRunElements - kTrail; o < kRunElements; ++o) before[o % E] += element(o);  // own last rx + 1, for the next lane
        std::uint32_t s[E];
#pragma unroll
        for (int c = 0; c < E; ++c) s[c] = __shfl_up_sync(0xffffffffu, before[c], 1) + after[c] + rounding.half;
#pragma unroll
        for (int g = 0; g < kRunElements / 4; ++g) {
            std::uint32_t bytes[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int o = 4 * g + i;
                s[o % E] += element(o + kLead) - element(o - kTrail);
                bytes[i] = __umulhi(s[o % E], rounding.inverse);
            }
            words[g] = klab::box_span::pack_bytes(bytes[0], bytes[1], bytes[2], bytes[3]);
        }
    } else {
#pragma unroll
        for (int k = 0; k < kRunElements / 4; ++k) {
            std::uint32_t four[4];
            piece(4 * k, four);
            words[k] = klab::box_span::pack_bytes(four[0], four[1], four[2], four[3]);
        }
    }
    __syncwarp();  // every lane has read its V before the row's bytes are staged over them
#pragma unroll
    for (int p = 0; p < E; ++p) stage[E * lane + p] = make_uint4(words[4 * p], words[4 * p + 1], words[4 * p + 2], words[4 * p + 3]);
    __syncwarp();
#pragma unroll
    for (int q = 0; q < E; ++q) {
        const int byte = 16 * (32 * q + lane);
        if (byte >= kHaloBytes && byte < kHaloBytes + kTileBytes) __stcs(reinterpret_cast<uint4*>(dst + byte), stage[32 * q + lane]);
    }
}

// ---- the phases form: W warps (12 or 6), columns then rows, two block barriers a batch

// Batches S ... of the phases loop, unrolled over a turn of the ring: batch s at ring turn s. Each:
// the columns from `words`, a barrier, the next batch's loads into `words`, warp j's row j staged
// over its own V row, a barrier. Whether rows are left.
template <int R, int W, bool RowSums, bool Runs, int S>
__device__ __forceinline__ bool phases_batches(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, std::uint32_t* ring,
                                               std::uint32_t* vrows, Walk<W>& w, std::uint32_t (&words)[Block<W>::kBatch][Block<W>::kWords],
                                               int span, const Rounding& rounding) {
    if constexpr (S == Ring<R, W>::kCycle) {
        return true;
    } else {
        using B = Block<W>;
        const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
        column_batch<R, W, S, Runs>(ring, vrows, w, words);
        __syncthreads();
        if (w.y0 + B::kBatch < w.y_end) load_batch<R, W>(in, w.y0 + B::kBatch, w.column, words);
        const int y = w.y0 + warp;
        if (Runs && y < w.y_end) {
            std::uint32_t* const row = vrows + warp * kRunRowWords;
            row_runs<R, RowSums>(row, reinterpret_cast<uint4*>(row), out + static_cast<std::size_t>(y) * Buffers::pitch + span, lane, rounding);
        } else if (y < w.y_end) {
            uint4* const row = reinterpret_cast<uint4*>(vrows) + warp * (kSpanWords * 2 / 4);  // 192 pieces of 16 bytes
            std::uint32_t v[E][8];
            lane_columns(row, lane, v);
            __syncwarp();  // every lane has its V before the row's bytes are staged over them
            row_output<R, RowSums>(v, row, out + static_cast<std::size_t>(y) * Buffers::pitch + span, lane, rounding);
        }
        __syncthreads();
        w.y0 += B::kBatch;
        if (w.y0 >= w.y_end) return false;
        return phases_batches<R, W, RowSums, Runs, S + 1>(in, out, ring, vrows, w, words, span, rounding);
    }
}

template <int R, int W, bool RowSums, bool Runs>
__global__ void __launch_bounds__(Block<W>::kThreads, W == 12 ? 2 : (Runs ? 3 : 4))
    box_column_ring(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, int strip_rows, Rounding rounding) {
    extern __shared__ __align__(16) std::uint32_t shared[];
    std::uint32_t* const ring = shared;                                    // kSlots rows of the span's words
    std::uint32_t* const vrows = shared + Ring<R, W>::kSlots * kSpanWords;  // kBatch rows of 768 words (V, 16-bit) or 1664 (runs)
    const int tile = static_cast<int>(blockIdx.x) % kTiles, strip = static_cast<int>(blockIdx.x) / kTiles;
    const int y_begin = strip * strip_rows, y_end = min(y_begin + strip_rows, kHeight);
    const int span = tile * kTileBytes - kHaloBytes;
    Walk<W> w = first_rows<R, W>(in, ring, y_begin, y_end, span);
    std::uint32_t words[Block<W>::kBatch][Block<W>::kWords];
    load_batch<R, W>(in, w.y0, w.column, words);
    while (phases_batches<R, W, RowSums, Runs, 0>(in, out, ring, vrows, w, words, span, rounding)) {
    }
}

// ---- the warp-specialized form: 12 column warps and 12 row warps per block, a double buffer of V
// rows between them, named barriers instead of the block's

constexpr int kColumnWarps = 12;
using Columns = Block<kColumnWarps>;
constexpr int kBatch = Columns::kBatch;
constexpr int kSpecializedThreads = 2 * Columns::kThreads;  // 768
constexpr int kFull0 = 1, kEmpty0 = 3;                       // named barriers: full[b] = 1 + b, empty[b] = 3 + b

__device__ __forceinline__ void bar_sync(int id) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(kSpecializedThreads) : "memory"); }
__device__ __forceinline__ void bar_arrive(int id) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(kSpecializedThreads) : "memory"); }

// Steps S ... of the column warps' loop, unrolled over P = lcm(ring turn, 2) batches; step s at
// ring turn s % kCycle with the entering words of array s % 2. Batch k waits until the row warps
// have read V buffer k % 2's last contents (batch k - 2), writes the batch's V there, tells the row
// warps, then loads batch k + 2's entering words into its array (batch k + 1's, in the other
// array, are in flight already: no register is copied while its load is pending). Whether rows
// are left.
template <int R, int S, int P>
__device__ __forceinline__ bool column_steps(const std::uint8_t* __restrict__ in, std::uint32_t* ring, std::uint32_t* vbuffers,
                                             Walk<kColumnWarps>& w, std::uint32_t (&even)[kBatch][1], std::uint32_t (&odd)[kBatch][1], int& k,
                                             int batches) {
    if constexpr (S == P) {
        return true;
    } else {
        std::uint32_t(&words)[kBatch][1] = S % 2 == 0 ? even : odd;
        const int b = k & 1;
        if (k >= 2) bar_sync(kEmpty0 + b);
        column_batch<R, kColumnWarps, S % Ring<R, kColumnWarps>::kCycle>(ring, vbuffers + b * kBatch * 2 * kSpanWords, w, words);
        bar_arrive(kFull0 + b);
        if (w.y0 + 2 * kBatch < w.y_end) load_batch<R, kColumnWarps>(in, w.y0 + 2 * kBatch, w.column, words);
        w.y0 += kBatch;
        if (++k == batches) return false;
        return column_steps<R, S + 1, P>(in, ring, vbuffers, w, even, odd, k, batches);
    }
}

template <int R, bool RowSums>
__global__ void __launch_bounds__(kSpecializedThreads, 1)
    box_specialized(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, int strip_rows, Rounding rounding) {
    using ColumnRing = Ring<R, kColumnWarps>;
    extern __shared__ __align__(16) std::uint32_t shared[];
    std::uint32_t* const ring = shared;                                                     // kSlots rows of the span's words
    std::uint32_t* const vbuffers = shared + ColumnRing::kSlots * kSpanWords;               // 2 x kBatch rows of 768 words
    uint4* const stages = reinterpret_cast<uint4*>(vbuffers + 2 * kBatch * 2 * kSpanWords);  // a row of 96 pieces per row warp
    const int tile = static_cast<int>(blockIdx.x) % kTiles, strip = static_cast<int>(blockIdx.x) / kTiles;
    const int y_begin = strip * strip_rows, y_end = min(y_begin + strip_rows, kHeight);
    const int batches = (y_end - y_begin + kBatch - 1) / kBatch;
    const int span = tile * kTileBytes - kHaloBytes;
    const int warp = static_cast<int>(threadIdx.x) >> 5;

    if (warp < kColumnWarps) {  // column warps
        Walk<kColumnWarps> w = first_rows<R, kColumnWarps>(in, ring, y_begin, y_end, span);
        std::uint32_t even[kBatch][1], odd[kBatch][1];
        load_batch<R, kColumnWarps>(in, y_begin, w.column, even);
        if (y_begin + kBatch < y_end) load_batch<R, kColumnWarps>(in, y_begin + kBatch, w.column, odd);
        constexpr int kPeriod = ColumnRing::kCycle % 2 == 0 ? ColumnRing::kCycle : 2 * ColumnRing::kCycle;
        for (int k = 0; column_steps<R, 0, kPeriod>(in, ring, vbuffers, w, even, odd, k, batches);) {
        }
        return;
    }

    // Row warps: warp r takes row r of each batch, and releases the V buffer once it has its V.
    const int r = warp - kColumnWarps, lane = static_cast<int>(threadIdx.x) & 31;
    uint4* const stage = stages + r * (E * 32);
    for (int k = 0; k < batches; ++k) {
        const int b = k & 1;
        const int y = y_begin + k * kBatch + r;
        bar_sync(kFull0 + b);
        std::uint32_t v[E][8];
        if (y < y_end) lane_columns(reinterpret_cast<const uint4*>(vbuffers + b * kBatch * 2 * kSpanWords) + r * (2 * kSpanWords / 4), lane, v);
        if (k + 2 < batches) bar_arrive(kEmpty0 + b);
        if (y >= y_end) continue;
        __syncwarp();  // the last row's stores have read the stage
        row_output<R, RowSums>(v, stage, out + static_cast<std::size_t>(y) * Buffers::pitch + span, lane, rounding);
    }
}

// ---- the host side

bool g_profile = false;  // `profile`: each configuration launched once, untimed, for Nsight Compute

// The kernels: the phases form of W warps (W = 12 or 6; with Runs, its rows by row_runs), or the
// specialized form (W = 0).
template <int R, int W, bool Runs = false>
void time_box(Timer& timer, const Buffers& buffers, double copy_us, bool row_sums, const std::vector<int>& strip_heights) {
    constexpr bool kSpecialized = W == 0;
    constexpr int kWarps = kSpecialized ? kColumnWarps : W;
    using B = Block<kWarps>;
    const auto kernel = [&] {
        if constexpr (kSpecialized) {
            return row_sums ? &box_specialized<R, true> : &box_specialized<R, false>;
        } else {
            return row_sums ? &box_column_ring<R, W, true, Runs> : &box_column_ring<R, W, false, Runs>;
        }
    }();
    const int threads = kSpecialized ? kSpecializedThreads : B::kThreads;
    const std::size_t ring_bytes = static_cast<std::size_t>(Ring<R, kWarps>::kSlots) * kSpanBytes;
    const std::size_t vrow_bytes = static_cast<std::size_t>(B::kBatch) * (Runs ? kRunRowWords * 4 : kSpanBytes * 2);
    const std::size_t shared = kSpecialized ? ring_bytes + 2 * vrow_bytes + static_cast<std::size_t>(kColumnWarps) * kSpanBytes : ring_bytes + vrow_bytes;
    KLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
    int per_sm = 0;
    KLAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared));
    cudaFuncAttributes attributes{};
    KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    const Rounding rounding = klab::box_sums::rounding_of(klab::masks::box(2 * R + 1));  // the normalized box: one multiply-high
    const std::string form = kSpecialized ? "specialized" : (Runs ? "runs/" : "phases/") + std::to_string(W);
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
            const long differing = differing_bytes(buffers.image, buffers.output_of(work),
                                                   {0, 1, 2, R, R + 1, strip_rows - 1, strip_rows, strip_rows + 5, 2001, kHeight - 2, kHeight - 1},
                                                   checked, R, 2 * kHaloBytes);
            check = std::to_string(differing) + " of " + std::to_string(checked) + " interior bytes differ";
        }
        const double us = timer.median_us(work);
        std::printf("%-11s box %2dx%-2d %-8s strips of %4d rows (%4d blocks, %d per SM, %3d registers, %6zu B shared): %7.1f us (%.2fx the copy); %s\n",
                    form.c_str(), 2 * R + 1, 2 * R + 1, row_sums ? "box" : "columns", strip_rows, grid, per_sm, attributes.numRegs, shared, us,
                    us / copy_us, check.c_str());
        std::fflush(stdout);
    }
}

int run() {
    Buffers buffers;
    Timer timer;
    const double copy_us = timer.copy_us(buffers);
    if (g_profile) {  // box31 in each form at its best strips, and the phases/12 form's columns alone
        time_box<15, 12>(timer, buffers, copy_us, true, {270});
        time_box<15, 0>(timer, buffers, copy_us, true, {540});
        time_box<15, 12>(timer, buffers, copy_us, false, {270});
        time_box<15, 12, true>(timer, buffers, copy_us, true, {540});
        time_box<15, 6, true>(timer, buffers, copy_us, true, {270});
        return 0;
    }
    for (bool row_sums : {true, false}) {
        // 16 tiles x 16 strips of 270 rows: 256 blocks, one wave at 2 blocks per SM; with blocks of
        // 6 warps, 3 or 4 per SM: 396 or 528 blocks fill a wave (strips of 180 or 135 rows).
        time_box<1, 12>(timer, buffers, copy_us, row_sums, {270});
        time_box<4, 12>(timer, buffers, copy_us, row_sums, {270});
        time_box<15, 12>(timer, buffers, copy_us, row_sums, {270});
        time_box<1, 6>(timer, buffers, copy_us, row_sums, {135, 180, 270});
        time_box<4, 6>(timer, buffers, copy_us, row_sums, {135, 180, 270});
        time_box<15, 6>(timer, buffers, copy_us, row_sums, {135, 180, 270});
        // One block per SM: 132 blocks fill a wave; 16 tiles x 8 strips of 540 rows is 128.
        time_box<1, 0>(timer, buffers, copy_us, row_sums, {33, 66, 135, 540});
        time_box<4, 0>(timer, buffers, copy_us, row_sums, {33, 66, 135, 540});
        time_box<15, 0>(timer, buffers, copy_us, row_sums, {33, 66, 135, 540});
        // The runs rows: their V rows of 6.5 KB leave 1 or 2 blocks of 12 warps per SM, 2 or 3 of 6.
        time_box<1, 12, true>(timer, buffers, copy_us, row_sums, {270, 540});
        time_box<4, 12, true>(timer, buffers, copy_us, row_sums, {270, 540});
        time_box<15, 12, true>(timer, buffers, copy_us, row_sums, {270, 540});
        time_box<1, 6, true>(timer, buffers, copy_us, row_sums, {135, 180, 270});
        time_box<4, 6, true>(timer, buffers, copy_us, row_sums, {135, 180, 270});
        time_box<15, 6, true>(timer, buffers, copy_us, row_sums, {135, 180, 270});
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
