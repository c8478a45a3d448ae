// Probe: a box 9x9 on 8K RGB AoS (replicate rows) by one warp per column span, its row sums slid
// along each lane's own bytes (no warp scan), its rows loaded several rows ahead or through a ring
// in shared memory — how fast that design can be before borders, sizes and layouts are added
// (conv.box_warp_ring is the variant built on it). Not a variant: the columns
// within 16 bytes of a row's ends are not right (the warps at a row's ends clamp their loads), and
// the box size is fixed at compile time.
//
// Design (box_warp_prefix.cu's warp and columns, other row sums): a warp owns 512 consecutive bytes
// of a row (16 per lane) and writes the 480 in the middle (lanes 1 to 30), walking down a strip of
// rows. Column sums V (9 rows) slide down in registers as 16-bit pairs (word w: bytes 2w, 2w + 1).
// Row sums: a lane takes the 12 bytes of V on each side of its 16 from its neighbours (6 words
// each, by shuffle), so that it holds V of 40 consecutive bytes as 20 words A; the words one byte
// off, B(i) = the high half of A(i) and the low half of A(i + 1), are one byte permute each. The
// sum of the 9 bytes 3 apart around output word w is then 9 whole words (A and B alternate), and
// S(w + 3) = S(w) + B(w + 13) + A(w + 15) - A(w) - B(w + 1): two three-input adds per 2 output
// bytes. The sums stay in 16-bit lanes (81 * 255 + 40 < 2^16), the rounding's +40 added once.
// Output byte: round(S / 81) by a multiply-high of the lane's half (kernels/box_sums.hpp's rule).
// Entering rows are loaded `Ahead` rows ahead (a queue of registers), the leaving row one row ahead
// (read 9 rows after it entered: an L1 hit).
// It also times the loop without the row sums (the columns only, wrong pixels): the floor of the
// structure at each depth of loads in flight. And both again with every row copied once into a
// per-warp ring in shared memory (box_lane_ring), which gives the entering and the leaving row, or
// into one ring per block filled by bulk copies (box_block_ring), or loaded into registers and
// stored into the ring for their second use (box_lane_queue). And, first, copies of the image
// (time_copies): in address order; walking down strips in 512-byte spans; the same with the 9
// rows above each strip, and with each row's edges exchanged between the warps of a block; in the
// box's tiles (512 bytes loaded, the middle 480 stored; also 448, 384 and 256); and through the
// warps' rings. And last the box by warps that store every byte they load (box_span_exchange), their
// edge columns' sums exchanged through shared memory (`exchange`: that and the warps' rings only;
// `exchange-profile`: those launched once each, for Nsight Compute).
// Measured on an NVIDIA H200 (2026-11-26, `bash scripts/gpu-probe.sh box_lane_slide`; each run timed
// by CUDA events after an L2 flush, medians of at least 20; copy of the image 47.3 us); every
// interior byte checked equal to a CPU box sum:
//   leaving row read again from global memory: the 9x9 box 86.8 us at 32-row strips, blocks of 128,
//   50 registers (1.83x the copy; box_warp_prefix.cu's warp scan: 90.1); the columns only 80.7 us
//   at 32-row strips and 64.2 us at 64 (1.71x, 1.36x). More rows of loads in flight made it slower
//   in this probe's first version, which loaded the leaving rows that far ahead too (2 rows 88.6,
//   4 rows 91.5, 6 rows 95.7 us). Nsight Compute (`probe profile` of that version, clocks locked)
//   says why: the leaving row misses L1 (L1 hit rate 12 to 20%) and often L2 (38 to 53% hits):
//   DRAM reads are 201 MB for the 99.5 MB image at 32-row strips (130 MB at 64), 166 MB with 4 rows
//   ahead at 64;
//   through the ring (cp.async 2 to 6 rows ahead, 40 registers, 22 to 61 KB of shared memory per
//   block): the 9x9 box 73.6 us (4 ahead, 32-row strips, blocks of 128; 1.56x the copy), 73.9 to
//   85.2 us over the other shapes; the columns only 60.7 to 71.2 us (1.28x to 1.50x). DRAM reads
//   113 MB at 64-row strips (1.14x the image), 126 MB at 32; the box at 32-row strips issues
//   39.3 M warp instructions (12.6 per output byte) with 61% of issue slots busy at 39% achieved
//   occupancy.
// The copies, and the other ways in (H200, 2026-11-30, the file as it is; copy 47.3 us; every
// copy's output checked equal to the image, every box byte to the CPU sum):
//   in address order (a grid-stride loop of 16-byte pieces): 48.2 to 50.7 us, 1.02x to 1.07x;
//   walking down strips in 512-byte spans (45 a row, each warp storing what it loads; 1 to 8 rows
//   of loads in flight): 50.7 to 52.6 us at strips of 32 and 64 rows (1.07x to 1.11x), 53.4 to
//   62.1 at 128 (1.13x to 1.31x); with the 9 rows above each strip read too: 53.9 to 58.1 us
//   (1.14x to 1.23x);
//   in the box's tiles (8 rows ahead): 54.1 to 61.0 us (1.14x to 1.29x) for tiles of 480, 448 and
//   384 bytes alike, 1.24x to 1.38x with the 9 rows above; 256-byte tiles, whose loads start on
//   128-byte lines and read every byte twice: 1.17x to 1.18x, 1.22x to 1.29x with the rows above.
//   Loading 512 bytes to store fewer costs 0.08x to 0.24x (the most at 64-row strips) against the
//   512-byte spans of the same strips, whatever the tile's alignment or the share of bytes read
//   twice (which L2 serves);
//   through the warps' rings, each row copied instead of summed: 60.4 to 65.6 us (1.28x to 1.39x);
//   the 512-byte spans with the 9 rows above and each row's edges exchanged through shared memory
//   between two block barriers (blocks of 8 warps, the next call; copy 47.6 us): 56.0 us at 64-row
//   strips (1.18x, against 1.13x without the exchange in that run), 59.2 at 32 (1.24x), 62.8 at
//   128 (1.32x, 204 blocks);
//   the columns only: 60.7 us through the warps' rings (1.28x), 60.2 through one ring per block
//   (4 or 8 warps side by side, each row one bulk copy of the TMA unit, mbarriers for full and
//   emptied slots, thread 0 refilling a slot once every warp has released it; 16 rows ahead,
//   99-row strips: one wave), 60.3 with the rows loaded into registers 4 ahead and stored into a
//   9-slot ring for their second use (box_lane_queue). The 9x9 box: 74.1 us through the warps'
//   rings (1.57x), 75.0 through the block's (where each slot waits for the block's slowest warp),
//   83.6 through the registers (not analysed).
//   So the loop without the row sums runs at the copy of its own access pattern, whatever carries
//   the rows (cp.async, bulk copies, registers and st.shared) and with its slide: the rings cost
//   nothing of their own, and the structure's floor is its tiles and halo rows, some 1.24x to 1.28x.
//   Nsight Compute (clocks locked) on the block ring's columns at 16 ahead, 99-row strips: one
//   wave, 23.4% achieved occupancy of 25%, DRAM 61% of peak (the warps' rings, 4 ahead, 64-row
//   strips: 35% and 57%).
// Warps that store what they load (box_span_exchange; H200, 2026-11-30, `exchange`, copy 47.5 us;
// every box byte checked, 0 of 345120 differ but where the exchange is not synchronized): the
// structure gets cheaper, the box does not. At 32-row strips:
//   columns only: 59.4 us at blocks of 9 warps (1.25x), 61.3 at 5 warps, 62.5 at 15, with a block
//   barrier a row; the warps' rings (tiles of 480) 63.5 to 66.2 in the same runs (32 and 64 rows);
//   the 9x9 box: 86.3 us at blocks of 5 warps (1.82x), 95.8 at 9, 96.1 at 15, against 73.8 to
//   74.2 us (1.55x to 1.56x) for the warps' rings; with each warp waiting only for its neighbours'
//   flags instead of the barrier 93.7, 101.2 and 102.9 us; with no synchronization at all (wrong
//   edge bytes) still 81.9 us at 5 warps.
//   Nsight Compute (`exchange-profile`, clocks locked, blocks of 5 warps) says why: the exchange
//   adds instructions, 47.2 M warp instructions against the rings' 39.3 M, though its warps cover
//   45 spans a row against the rings' 48: the end warps' slide and refill of their outer pieces
//   (about 3 M), the refill split off the row loop (15 instructions on 7 rows of 8, 2.6 M), a
//   longer set-up (1 M), the edges' stores and loads (the row loop 193 per warp and row against
//   178); 62 registers against 40; and a barrier a row, at which 30% of the stall samples fall
//   (Nsight attributes most of them to the shuffles after it), issue slots 54% busy. The rings'
//   box is held by its integer work instead: the ALU pipe 64% busy, stall samples 22% on the math
//   pipe's throttle, 25% not selected, 18% on fixed-latency dependencies, issue slots 57% busy. So
//   the structure's 0.1x is not worth its exchange: 1.3x needs cheaper row sums, whatever the tiles
//   (and fewer instructions alone did not pay in conv.box_warp_ring at the benchmark's clock:
//   kernels/notes/conv_box_warp_ring.md). At the clocks the timings run at
//   (PROFILE_CLOCKS=unlocked, the SM at 1.92 to 1.97 GHz) the reading holds: the rings' box 73.5 us, issue slots 53% busy, the ALU pipe 59%,
//   stall samples 23% not selected, 21% on the math pipe's throttle, 16% on fixed-latency
//   dependencies; the exchange's structure 59.1 us with DRAM 71% of peak.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include "autotune/timing.hpp"
#include "harness/cuda_check.hpp"
#include "kernels/box_span.hpp"
#include "probes/box9_probe.hpp"
#include "probes/probe_main.hpp"

namespace {

using namespace klab::probes::box9;
using klab::box_span::slide_columns;

// A lane's V words of the bytes [-12, 28) around its 16 (the preamble's A): its own 8 and its
// neighbours' 6 on each side, by shuffle (lanes 0 and 31 get their own warp's words, unless the
// caller replaces them).
__device__ __forceinline__ void neighbour_words(const std::uint32_t (&v)[8], std::uint32_t (&a)[20]) {
#pragma unroll
    for (int i = 0; i < 6; ++i) a[i] = __shfl_up_sync(kFullMask, v[i + 2], 1);
#pragma unroll
    for (int i = 0; i < 8; ++i) a[6 + i] = v[i];
#pragma unroll
    for (int i = 0; i < 6; ++i) a[14 + i] = __shfl_down_sync(kFullMask, v[i], 1);
}

// The 16 output bytes of a lane from its 20 words A (see the preamble).
__device__ __forceinline__ uint4 box_of_words(const std::uint32_t (&a)[20]) {
    std::uint32_t b[19];
#pragma unroll
    for (int i = 0; i < 19; ++i) b[i] = __byte_perm(a[i], a[i + 1], 0x5432u);
    constexpr std::uint32_t kHalf = (kCount - 1) / 2 * 0x10001u;  // +40 in both lanes
    std::uint32_t s[8];
#pragma unroll
    for (int w = 0; w < 3; ++w) {
        s[w] = a[w] + b[w + 1] + kHalf + a[w + 3] + b[w + 4] + a[w + 6] + b[w + 7] + a[w + 9] + b[w + 10] + a[w + 12];
    }
#pragma unroll
    for (int w = 3; w < 8; ++w) s[w] = s[w - 3] + b[w + 10] + a[w + 12] - a[w - 3] - b[w - 2];
    const auto inverse = static_cast<std::uint32_t>(((1ull << 32) + kCount - 1) / kCount);
    std::uint32_t q[16];
#pragma unroll
    for (int w = 0; w < 8; ++w) q[2 * w] = __umulhi(s[w] & 0xffffu, inverse), q[2 * w + 1] = __umulhi(s[w] >> 16, inverse);
    std::uint32_t words[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) words[w] = q[4 * w] | q[4 * w + 1] << 8 | q[4 * w + 2] << 16 | q[4 * w + 3] << 24;
    return make_uint4(words[0], words[1], words[2], words[3]);
}

// The 16 output bytes of a lane from V of its bytes and its neighbours' (see the preamble).
__device__ __forceinline__ uint4 box_bytes(const std::uint32_t (&v)[8]) {
    std::uint32_t a[20];
    neighbour_words(v, a);
    return box_of_words(a);
}

// What a lane stores for output row y: the box (RowSums), or the column sums' low bytes (wrong
// pixels: the structure alone).
template <bool RowSums>
__device__ __forceinline__ uint4 lane_output(const std::uint32_t (&v)[8]) {
    if constexpr (RowSums) {
        return box_bytes(v);
    } else {
        return make_uint4(__byte_perm(v[0], v[1], 0x6420u), __byte_perm(v[2], v[3], 0x6420u), __byte_perm(v[4], v[5], 0x6420u),
                          __byte_perm(v[6], v[7], 0x6420u));
    }
}

// Where a lane of the box's warps works: its warp's strip, rows [y_begin, y_end) (empty for the
// last block's spare warps), and its 16 bytes of a row at x (clamped at the row's ends).
struct LaneSpan {
    int lane, y_begin, y_end, x;

    // The lane's 16 bytes of image row y.
    __device__ const std::uint8_t* row(const std::uint8_t* in, std::size_t pitch, int y) const { return clamped_row(in, pitch, y, x); }
    // The lane's slot 0 of its warp's ring of `slots` rows of 512 bytes in `shared` (slot k: [32 k]).
    __device__ uint4* ring(uint4* shared, int slots) const { return shared + static_cast<int>(threadIdx.x >> 5) * slots * 32 + lane; }
};

__device__ __forceinline__ LaneSpan lane_span(int strip_rows) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int y_begin = warp / kWarpsPerRow * strip_rows;
    return {lane, y_begin, min(y_begin + strip_rows, kHeight), min(max(warp % kWarpsPerRow * kWarpOutput - 16 + 16 * lane, 0), kRowBytes - 16)};
}

// RowSums false: the column sums' low bytes are stored instead of the box (wrong pixels, not
// checked): the cost of the loads, the slide and the stores alone, this structure's floor.
template <int Ahead, bool RowSums>
__global__ void __launch_bounds__(256) box_lane_slide(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, std::size_t pitch,
                                                      int strip_rows) {
    const LaneSpan span = lane_span(strip_rows);
    const auto [lane, y_begin, y_end, x] = span;
    if (y_begin >= kHeight) return;
    const auto row = [&](int y) { return span.row(in, pitch, y); };

    std::uint32_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // V of row y_begin - 1
    for (int y = y_begin - kRadius - 1; y < y_begin + kRadius; ++y) slide_columns(v, load16(row(y)), make_uint4(0, 0, 0, 0));
    uint4 enter[Ahead];  // the entering rows of the next Ahead output rows, in flight
#pragma unroll
    for (int k = 0; k < Ahead; ++k) enter[k] = load16(row(y_begin + k + kRadius));
    uint4 leave = load16(row(y_begin - kRadius - 1));

    for (int y = y_begin; y < y_end; ++y) {
        const uint4 e = enter[0], l = leave;
#pragma unroll
        for (int k = 0; k + 1 < Ahead; ++k) enter[k] = enter[k + 1];
        enter[Ahead - 1] = load16(row(y + Ahead + kRadius));
        leave = load16(row(y + 1 - kRadius - 1));
        slide_columns(v, e, l);
        const uint4 bytes = lane_output<RowSums>(v);
        if (lane >= 1 && lane <= 30) __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y) * pitch + x), bytes);
    }
}

// The same walk with every row copied once into a ring in shared memory (cp.async, 16 bytes a
// lane, `Ahead` rows ahead), the entering and the leaving row read from there: each lane reads
// only the slots it wrote, so nothing but its own cp.async waits. Ring: 2 * kRadius + 1 + Ahead
// slots of 512 bytes per warp; slot k holds the rows k, k + kSlots, ... of the strip.
// Copy true: no sums at all, each output row is its own image row read from the ring (the slot
// between the leaving and the entering row): the ring's traffic and waits alone (time_copies).
template <int Ahead, bool RowSums, bool Copy = false>
__global__ void __launch_bounds__(256) box_lane_ring(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, std::size_t pitch,
                                                     int strip_rows) {
    constexpr int kSlots = 2 * kRadius + 1 + Ahead;
    extern __shared__ uint4 shared_ring[];
    const LaneSpan span = lane_span(strip_rows);
    const auto [lane, y_begin, y_end, x] = span;
    if (y_begin >= kHeight) return;
    uint4* const ring = span.ring(shared_ring, kSlots);  // the lane's slot k: ring[32 k]
    const auto row = [&](int y) { return span.row(in, pitch, y); };
    // Ring row i is image row y_begin - kRadius - 1 + i, in slot i % kSlots.
    const int first = y_begin - kRadius - 1;
#pragma unroll
    for (int i = 0; i < 2 * kRadius + 1 + Ahead; ++i) {
        __pipeline_memcpy_async(ring + 32 * i, row(first + i), 16);
        __pipeline_commit();
    }
    __pipeline_wait_prior(Ahead);  // the first 2 * kRadius + 1 rows have arrived
    std::uint32_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // V of row y_begin - 1: ring rows 0 ... 2 * kRadius
#pragma unroll
    for (int i = 0; i <= 2 * kRadius; ++i) {
        if (!Copy) slide_columns(v, ring[32 * i], make_uint4(0, 0, 0, 0));
    }

    int leaving = 0, entering = 2 * kRadius + 1;  // slots of the output row's leaving and entering rows
    for (int y = y_begin; y < y_end; ++y) {
        __pipeline_wait_prior(Ahead - 1);  // the entering row has arrived
        const int middle = (leaving + kRadius + 1) % kSlots;  // image row y
        uint4 own = make_uint4(0, 0, 0, 0);
        if (Copy) {
            own = ring[32 * middle];
        } else {
            slide_columns(v, ring[32 * entering], ring[32 * leaving]);
        }
        // The leaving row's slot takes the row kSlots after it: the entering row of output y + Ahead.
        if (y + Ahead < y_end) __pipeline_memcpy_async(ring + 32 * leaving, row(y + Ahead + kRadius), 16);
        __pipeline_commit();
        leaving = leaving + 1 == kSlots ? 0 : leaving + 1;
        entering = entering + 1 == kSlots ? 0 : entering + 1;
        const uint4 bytes = Copy ? own : lane_output<RowSums>(v);
        if (lane >= 1 && lane <= 30) __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y) * pitch + x), bytes);
    }
}

// The rows loaded into registers `Ahead` rows ahead (a queue, as strip_copy), and each row, when it
// enters the column sums, also stored into the warp's ring in shared memory (st.shared, not
// cp.async), from which it is read back 2 * kRadius + 1 rows later as the leaving row: the ring
// holds 2 * kRadius + 1 slots (a row leaves from the slot the entering row then takes). Nothing
// waits on shared memory but the leaving row's own read.
template <int Ahead, bool RowSums>
__global__ void __launch_bounds__(256) box_lane_queue(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, std::size_t pitch,
                                                      int strip_rows) {
    constexpr int kSlots = 2 * kRadius + 1;
    extern __shared__ uint4 shared_ring[];
    const LaneSpan span = lane_span(strip_rows);
    const auto [lane, y_begin, y_end, x] = span;
    if (y_begin >= kHeight) return;
    uint4* const ring = span.ring(shared_ring, kSlots);  // the lane's slot k: ring[32 k]
    const auto row = [&](int y) { return span.row(in, pitch, y); };
    const int first = y_begin - kRadius - 1;  // ring row i: image row first + i, in slot i % kSlots
    std::uint32_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // V of row y_begin - 1: ring rows 0 ... 2 * kRadius
    {
        uint4 rows_in[kSlots];
#pragma unroll
        for (int i = 0; i < kSlots; ++i) rows_in[i] = load16(row(first + i));
#pragma unroll
        for (int i = 0; i < kSlots; ++i) ring[32 * i] = rows_in[i], slide_columns(v, rows_in[i], make_uint4(0, 0, 0, 0));
    }
    uint4 queue[Ahead];  // the entering rows of the next Ahead output rows
#pragma unroll
    for (int k = 0; k < Ahead; ++k) queue[k] = load16(row(first + kSlots + k));
    int slot = 0;  // the slot of the output row's leaving row, which its entering row takes
    for (int y = y_begin; y < y_end; ++y) {
        const uint4 entering = queue[0];
#pragma unroll
        for (int k = 0; k + 1 < Ahead; ++k) queue[k] = queue[k + 1];
        queue[Ahead - 1] = load16(row(y + Ahead + kRadius));
        const uint4 leaving = ring[32 * slot];
        ring[32 * slot] = entering;
        slot = slot + 1 == kSlots ? 0 : slot + 1;
        slide_columns(v, entering, leaving);
        const uint4 bytes = lane_output<RowSums>(v);
        if (lane >= 1 && lane <= 30) __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y) * pitch + x), bytes);
    }
}

// The block's ring: one ring per block, shared by its warps, each row copied once by one thread
// with a bulk copy (cp.async.bulk: the copy engine, 16-byte aligned, a multiple of 16 bytes),
// instead of 16 bytes per lane by cp.async into each warp's own ring. The warps of a block own
// consecutive spans (a warp writes 480 bytes, reads the 512 around them from the ring), so a ring
// row is the block's 480 * warps bytes and 16 on each side, and the 32 bytes the warps' spans
// overlap by are read once per block, not once per warp (whose second read L2 serves). Each slot has two
// mbarriers: `full` (the bulk copy's bytes have arrived) and `empty` (every warp is done with the
// row). Thread 0 issues the copies: at output row k it waits until every warp has released ring
// row k - kLag, and refills that slot with ring row k - kLag + kSlots (needed Ahead - kLag rows
// later). A block's warps are thus never more than about Ahead rows apart.
__device__ __forceinline__ unsigned shared_address(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void barrier_init(std::uint64_t* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void barrier_arrive(std::uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
}
__device__ __forceinline__ void barrier_wait(std::uint64_t* bar, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred ready;\n"
        "wait_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n"
        "@!ready bra wait_%=;\n"
        "}\n" ::"r"(shared_address(bar)),
        "r"(parity)
        : "memory");
}
// Copies `bytes` from global memory into shared memory; `bar`'s current phase completes when they are there.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(shared_address(dst)),
                 "l"(src), "r"(bytes), "r"(shared_address(bar))
                 : "memory");
}

constexpr int kBarrierBytes = 512;  // the block ring's mbarriers, before the ring
constexpr int kLag = 2;  // the ring row a step's refill waits for: kLag rows behind the row released

template <int Ahead, bool RowSums>
__global__ void __launch_bounds__(256) box_block_ring(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, std::size_t pitch,
                                                      int strip_rows) {
    constexpr int kSlots = 2 * kRadius + 1 + Ahead;
    static_assert(Ahead > kLag, "a refill must land before the row that needs it");
    extern __shared__ __align__(128) std::uint8_t shared_bytes[];
    std::uint64_t* const full = reinterpret_cast<std::uint64_t*>(shared_bytes);
    std::uint64_t* const empty = full + kSlots;
    static_assert(2 * kSlots * sizeof(std::uint64_t) <= kBarrierBytes, "the barriers fit before the ring");
    std::uint8_t* const ring = shared_bytes + kBarrierBytes;
    const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
    const int warps = static_cast<int>(blockDim.x >> 5);
    const int ring_row = warps * kWarpOutput + 32;  // bytes of a ring row
    const int tiles = kRowBytes / (warps * kWarpOutput);
    const int tile = static_cast<int>(blockIdx.x) % tiles;
    const int y_begin = static_cast<int>(blockIdx.x) / tiles * strip_rows;
    if (y_begin >= kHeight) return;  // the whole block: no barrier is waited for
    const int y_end = min(y_begin + strip_rows, kHeight);
    const int first = y_begin - kRadius - 1;  // ring row i is image row first + i (clamped), in slot i % kSlots
    const int x_nominal = tile * warps * kWarpOutput - 16;                     // image byte of ring byte 0, unclamped
    const int x_copy = min(max(x_nominal, 0), kRowBytes - ring_row);           // the ends' tiles copy inside the row
    const int offset = min(max(x_nominal - x_copy + warp * kWarpOutput + 16 * lane, 0), ring_row - 16);  // as box_lane_slide clamps
    const auto row = [&](int y) { return clamped_row(in, pitch, y, x_copy); };
    const auto slot = [&](int i) { return reinterpret_cast<const uint4*>(ring + (i % kSlots) * ring_row + offset); };
    const int total = y_end - y_begin + 2 * kRadius + 1;  // ring rows the strip reads

    if (threadIdx.x == 0) {
        for (int s = 0; s < kSlots; ++s) barrier_init(full + s, 1), barrier_init(empty + s, static_cast<unsigned>(warps));
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the barriers, as the bulk copies will see them
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 0; i < kSlots && i < total; ++i) bulk_copy(ring + i * ring_row, row(first + i), static_cast<unsigned>(ring_row), full + i);
    }
    std::uint32_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // V of row y_begin - 1: ring rows 0 ... 2 * kRadius
    for (int i = 0; i <= 2 * kRadius; ++i) {
        barrier_wait(full + i % kSlots, static_cast<unsigned>(i / kSlots) & 1u);
        slide_columns(v, *slot(i), make_uint4(0, 0, 0, 0));
    }
    const int x = x_nominal + warp * kWarpOutput + 16 * lane;  // the lane's output bytes (lanes 1 to 30)
    for (int k = 0; k < y_end - y_begin; ++k) {
        const int entering = k + 2 * kRadius + 1;
        barrier_wait(full + entering % kSlots, static_cast<unsigned>(entering / kSlots) & 1u);
        slide_columns(v, *slot(entering), *slot(k));
        __syncwarp();
        if (lane == 0) barrier_arrive(empty + k % kSlots);  // ring row k is done with (its last use)
        if (threadIdx.x == 0 && k >= kLag && k - kLag + kSlots < total) {
            const int done = k - kLag, refill = done + kSlots;
            barrier_wait(empty + done % kSlots, static_cast<unsigned>(done / kSlots) & 1u);
            bulk_copy(ring + (refill % kSlots) * ring_row, row(first + refill), static_cast<unsigned>(ring_row), full + refill % kSlots);
        }
        const uint4 bytes = lane_output<RowSums>(v);
        if (lane >= 1 && lane <= 30) __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y_begin + k) * pitch + x), bytes);
    }
}

// The box's warps storing every byte they load (the design that docs/adding-a-variant.md asked for
// after the copies): a block of W warps owns W * 512 consecutive bytes of a row (45 spans a row: W = 5, 9
// or 15 leave no warp idle), each warp all 512 of its lanes' bytes; each lane's rows come through
// its warp's ring as in box_lane_ring. The 12 bytes of V that lanes 0 and 31 need from beyond their
// warp come from the neighbouring warp through shared memory: after each row's slide, lane 0
// publishes its words 0 to 5 and lane 31 its words 2 to 7; lane 0 then reads the left warp's and
// lane 31 the right warp's. The block's own edges: lane 0 of warp 0 and lane 31 of warp W - 1 also
// slide the 16 bytes beyond the block (their outer pieces, through a ring of their own) and publish
// those. Sync::barrier: one block barrier a row between the writes and the reads (two sets of
// slots, by row parity). Sync::flags: no block barrier; each warp marks the row it has published (a
// flag in shared memory, release and acquire) and waits only for its two neighbours' flags, before
// reading their edges (and, as a guard, before writing over a slot of kEdgeDepth rows ago, which the
// previous row's wait already ensures: a neighbour that has published row k - 1 has read row k - 2).
// Sync::none: no wait at all (a warp's edge bytes are wrong where it reads a slot before
// its neighbour writes it): what the exchange costs without its synchronization.
// RowSums false: the slide, the exchange and the stores only (wrong pixels): the structure.
constexpr int kExchangeAhead = 4;
constexpr int kEdgeSlotWords = 8;  // a published edge: 6 words of V, in a slot of 32 bytes
constexpr int kEdgeDepth = 4;      // rows of edge slots

__host__ __device__ constexpr int exchange_slots() { return 2 * kRadius + 1 + kExchangeAhead; }
template <int W>
constexpr std::size_t exchange_shared_bytes() {
    return (static_cast<std::size_t>(W) * exchange_slots() * 32 + 2 * exchange_slots()) * sizeof(uint4) +
           static_cast<std::size_t>(kEdgeDepth * 2 * (W + 2) * kEdgeSlotWords + (W + 3) / 4 * 4) * sizeof(std::uint32_t);
}

// Blocks per SM that the shared memory allows (227 KB of the H200's 228 per SM), for the register budget.
template <int W>
constexpr int exchange_blocks_per_sm() {
    return static_cast<int>((227u * 1024u) / (exchange_shared_bytes<W>() + 1024u));
}

__device__ __forceinline__ int load_acquire(const int* p) {
    int value;
    asm volatile("ld.acquire.cta.shared.b32 %0, [%1];" : "=r"(value) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))) : "memory");
    return value;
}
__device__ __forceinline__ void store_release(int* p, int value) {
    asm volatile("st.release.cta.shared.b32 [%0], %1;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "r"(value) : "memory");
}

enum class Sync { barrier, flags, none };

template <int W, Sync How, bool RowSums>
__global__ void __launch_bounds__(32 * W, exchange_blocks_per_sm<W>()) box_span_exchange(const std::uint8_t* __restrict__ in,
                                                                                          std::uint8_t* __restrict__ out, std::size_t pitch,
                                                                                          int strip_rows) {
    constexpr int kSlots = exchange_slots(), kBlocksPerRow = kRowBytes / (512 * W);
    static_assert(kRowBytes % (512 * W) == 0, "whole blocks a row");
    extern __shared__ uint4 shared_exchange[];
    const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
    const int y_begin = static_cast<int>(blockIdx.x) / kBlocksPerRow * strip_rows;
    if (y_begin >= kHeight) return;  // the whole block
    const int y_end = min(y_begin + strip_rows, kHeight);
    const int x_block = static_cast<int>(blockIdx.x) % kBlocksPerRow * 512 * W;
    const int x = x_block + 512 * warp + 16 * lane;
    // The outer pieces (clamped at the row's ends, whose 16 bytes the check leaves out).
    const bool outer = (warp == 0 && lane == 0) || (warp == W - 1 && lane == 31);
    const int side = lane == 0 ? 0 : 1;
    const int x_outer = side == 0 ? max(x_block - 16, 0) : min(x_block + 512 * W, kRowBytes - 16);
    uint4* const ring = shared_exchange + warp * kSlots * 32 + lane;  // the lane's slot k: ring[32 k]
    uint4* const outer_ring = shared_exchange + W * kSlots * 32 + side * kSlots;
    auto* const edges = reinterpret_cast<std::uint32_t*>(shared_exchange + W * kSlots * 32 + 2 * kSlots);
    int* const flags = reinterpret_cast<int*>(edges + kEdgeDepth * 2 * (W + 2) * kEdgeSlotWords);  // the last row each warp published
    // Edge slot (row, s, k): s 0 the left edge (V words 0 to 5 of lane 0), s 1 the right edge
    // (words 2 to 7 of lane 31) of warp k - 1; k = 0 and W + 1 are the outer pieces'.
    const auto edge_slot = [&](int row, int s, int k) { return edges + ((row * 2 + s) * (W + 2) + k) * kEdgeSlotWords; };
    const auto publish = [](std::uint32_t* slot, const std::uint32_t* words) {
        *reinterpret_cast<uint4*>(slot) = make_uint4(words[0], words[1], words[2], words[3]);
        *reinterpret_cast<uint2*>(slot + 4) = make_uint2(words[4], words[5]);
    };
    const auto row = [&](int y, int column) { return clamped_row(in, pitch, y, column); };
    // The neighbours' flags as last read (a warp at the block's end has no neighbour on that side).
    int left_flag = warp == 0 ? INT_MAX : -1, right_flag = warp == W - 1 ? INT_MAX : -1;
    const auto wait_for_neighbours = [&](int k) {  // until both have published row k
        while (left_flag < k) left_flag = load_acquire(flags + warp - 1);
        while (right_flag < k) right_flag = load_acquire(flags + warp + 1);
    };
    if (lane == 0) flags[warp] = -1;
    __syncthreads();

    const int first = y_begin - kRadius - 1;  // ring row i: image row first + i, in slot i % kSlots
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
        __pipeline_memcpy_async(ring + 32 * i, row(first + i, x), 16);
        if (outer) __pipeline_memcpy_async(outer_ring + i, row(first + i, x_outer), 16);
        __pipeline_commit();
    }
    __pipeline_wait_prior(kExchangeAhead);
    std::uint32_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0}, vx[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // V of row y_begin - 1
#pragma unroll
    for (int i = 0; i <= 2 * kRadius; ++i) {
        slide_columns(v, ring[32 * i], make_uint4(0, 0, 0, 0));
        if (outer) slide_columns(vx, outer_ring[i], make_uint4(0, 0, 0, 0));
    }
    int leaving = 0, entering = 2 * kRadius + 1;
    for (int y = y_begin; y < y_end; ++y) {
        __pipeline_wait_prior(kExchangeAhead - 1);
        slide_columns(v, ring[32 * entering], ring[32 * leaving]);
        if (outer) slide_columns(vx, outer_ring[entering], outer_ring[leaving]);
        if (y + kExchangeAhead < y_end) {
            __pipeline_memcpy_async(ring + 32 * leaving, row(y + kExchangeAhead + kRadius, x), 16);
            if (outer) __pipeline_memcpy_async(outer_ring + leaving, row(y + kExchangeAhead + kRadius, x_outer), 16);
        }
        __pipeline_commit();
        leaving = leaving + 1 == kSlots ? 0 : leaving + 1;
        entering = entering + 1 == kSlots ? 0 : entering + 1;

        constexpr bool kFlags = How == Sync::flags;
        const int k = y - y_begin, slot_row = How == Sync::barrier ? k & 1 : k % kEdgeDepth;
        if (kFlags) wait_for_neighbours(k - kEdgeDepth);  // the slots' last row, k - kEdgeDepth, has been read (a guard: see above)
        if (lane == 0) publish(edge_slot(slot_row, 0, warp + 1), v);
        if (lane == 31) publish(edge_slot(slot_row, 1, warp + 1), v + 2);
        if (outer && side == 0) publish(edge_slot(slot_row, 1, 0), vx + 2);  // the right edge of the piece left of the block
        if (outer && side == 1) publish(edge_slot(slot_row, 0, W + 1), vx);   // the left edge of the piece right of it
        if (kFlags) {
            __syncwarp();  // lane 31's edge, before lane 0's release
            if (lane == 0) store_release(flags + warp, k);
            wait_for_neighbours(k);
        } else if (How == Sync::barrier) {
            __syncthreads();  // the next row's edges go to the other slots: one barrier a row
        }
        std::uint32_t a[20];
        if (RowSums) neighbour_words(v, a);
        if (lane == 0) {
            const std::uint32_t* left = edge_slot(slot_row, 1, warp);  // the right edge of warp - 1
            const uint4 p = *reinterpret_cast<const uint4*>(left);
            const uint2 q = *reinterpret_cast<const uint2*>(left + 4);
            a[0] = p.x, a[1] = p.y, a[2] = p.z, a[3] = p.w, a[4] = q.x, a[5] = q.y;
        }
        if (lane == 31) {
            const std::uint32_t* right = edge_slot(slot_row, 0, warp + 2);  // the left edge of warp + 1
            const uint4 p = *reinterpret_cast<const uint4*>(right);
            const uint2 q = *reinterpret_cast<const uint2*>(right + 4);
            a[14] = p.x, a[15] = p.y, a[16] = p.z, a[17] = p.w, a[18] = q.x, a[19] = q.y;
        }
        uint4 bytes;
        if constexpr (RowSums) {
            bytes = box_of_words(a);
        } else {
            bytes = lane_output<false>(v);
            if (lane == 0) bytes.x ^= a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5];
            if (lane == 31) bytes.x ^= a[14] ^ a[15] ^ a[16] ^ a[17] ^ a[18] ^ a[19];
        }
        __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y) * pitch + x), bytes);
    }
}

// The copy floors of the walk: the image copied by warps that each walk down a strip of rows in
// a 512-byte span (no halo rows, no overlap: 45 spans a row), `Ahead` rows of loads in flight, and
// by threads that copy 16-byte pieces in address order (a grid-stride loop). The difference between
// the two and cudaMemcpyAsync is what walking down strips costs before any filtering.
// Halo > 0: each strip also reads the Halo rows above it first (as the box reads 2 * kRadius + 1),
// folded into a value stored only where strip_rows < 0 (never), so that the loads stay.
// Tile < 512: the warps load 512 bytes and store the Tile in their middle (the box's warps: 480,
// lanes 1 to 30), tiles Tile bytes apart (the last one of a row cut at the row's end).
template <int Ahead, int Halo = 0, int Tile = 512>
__global__ void __launch_bounds__(256) strip_copy(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, std::size_t pitch,
                                                  int strip_rows) {
    constexpr int kSpans = (kRowBytes + Tile - 1) / Tile, kMargin = (512 - Tile) / 2;
    static_assert(kMargin % 16 == 0, "whole lanes on each side");
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int y_begin = warp / kSpans * strip_rows;
    if (y_begin >= kHeight) return;
    const int y_end = min(y_begin + strip_rows, kHeight);
    const int nominal = warp % kSpans * Tile - kMargin + 16 * lane;
    const auto x = static_cast<std::size_t>(min(max(nominal, 0), kRowBytes - 16));  // clamped at the ends
    const bool stores = lane >= kMargin / 16 && lane < 32 - kMargin / 16 && nominal < kRowBytes;
    const auto row = [&](int y) { return in + static_cast<std::size_t>(min(max(y, 0), y_end - 1)) * pitch + x; };
    const int y_first = y_begin - Halo;
    uint4 queue[Ahead];
#pragma unroll
    for (int k = 0; k < Ahead; ++k) queue[k] = load16(row(y_first + k));
    uint4 halo = make_uint4(0, 0, 0, 0);
    for (int y = y_first; y < y_end; ++y) {
        const uint4 bytes = queue[0];
#pragma unroll
        for (int k = 0; k + 1 < Ahead; ++k) queue[k] = queue[k + 1];
        queue[Ahead - 1] = load16(row(y + Ahead));
        if (y >= y_begin) {
            if (stores) __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y) * pitch + x), bytes);
        } else {
            halo.x ^= bytes.x, halo.y ^= bytes.y, halo.z ^= bytes.z, halo.w ^= bytes.w;
        }
    }
    if (strip_rows < 0) __stcs(reinterpret_cast<uint4*>(out + x), halo);
}

// strip_copy's 512-byte spans with the 9 rows above, in blocks of 8 warps on one strip (48 spans
// a row, the last 3 idle), each row's edges exchanged as a box design that stores what it loads
// would exchange its edge columns' sums: lanes 0 and 31 put 16 bytes into shared memory, a block
// barrier, and they read their neighbour warps' (folded into a value stored only where
// strip_rows < 0, never). The cost of that barrier on the copy.
template <int Ahead>
__global__ void __launch_bounds__(256) strip_copy_exchange(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out,
                                                           std::size_t pitch, int strip_rows) {
    constexpr int kSpans = kRowBytes / 512, kPadded = 48, kHalo = 2 * kRadius + 1;
    __shared__ uint4 edges[8][2];
    const int lane = static_cast<int>(threadIdx.x & 31), warp_in_block = static_cast<int>(threadIdx.x >> 5);
    const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int y_begin = warp / kPadded * strip_rows;
    if (y_begin >= kHeight) return;  // the whole block (8 warps of one strip)
    const int y_end = min(y_begin + strip_rows, kHeight);
    const bool active = warp % kPadded < kSpans;
    const std::size_t x = static_cast<std::size_t>(min(warp % kPadded, kSpans - 1)) * 512 + 16 * static_cast<std::size_t>(lane);
    const auto load = [&](int y) {
        return active ? load16(in + static_cast<std::size_t>(min(max(y, 0), y_end - 1)) * pitch + x) : make_uint4(0, 0, 0, 0);
    };
    const int y_first = y_begin - kHalo;
    uint4 queue[Ahead];
#pragma unroll
    for (int k = 0; k < Ahead; ++k) queue[k] = load(y_first + k);
    uint4 sink = make_uint4(0, 0, 0, 0);
    for (int y = y_first; y < y_end; ++y) {
        const uint4 bytes = queue[0];
#pragma unroll
        for (int k = 0; k + 1 < Ahead; ++k) queue[k] = queue[k + 1];
        queue[Ahead - 1] = load(y + Ahead);
        if (lane == 0 || lane == 31) edges[warp_in_block][lane == 0 ? 0 : 1] = bytes;
        __syncthreads();
        if (lane == 0 && warp_in_block > 0) sink.x ^= edges[warp_in_block - 1][1].x;
        if (lane == 31 && warp_in_block < 7) sink.y ^= edges[warp_in_block + 1][0].y;
        __syncthreads();  // the edges are read before the next row's are written
        if (y >= y_begin && active) {
            __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y) * pitch + x), bytes);
        } else {
            sink.z ^= bytes.z;
        }
    }
    if (strip_rows < 0) __stcs(reinterpret_cast<uint4*>(out + x), sink);
}

__global__ void __launch_bounds__(256) linear_copy(const uint4* __restrict__ in, uint4* __restrict__ out, std::size_t pieces) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < pieces;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        __stcs(out + i, __ldg(in + i));
    }
}

using Kernel = void (*)(const std::uint8_t*, std::uint8_t*, std::size_t, int);

// A configuration: the row reads (global: the leaving row read again; warp_ring: each warp's ring
// in shared memory, filled by cp.async; block_ring: the block's, filled by bulk copies; warp_queue:
// loads into registers, the leaving row from a ring the warp stores them to), whether the row sums
// are worked out, and the rows of loads in flight.
enum class Reads { global, warp_ring, block_ring, warp_queue };
struct Config {
    Reads reads;
    bool row_sums;
    int ahead;
};

// Every configuration the probe times, in that order, with its kernel.
struct Timed {
    Config config;
    Kernel kernel;
};
const Timed kTimed[] = {
    {{Reads::global, false, 1}, &box_lane_slide<1, false>},    {{Reads::global, false, 4}, &box_lane_slide<4, false>},
    {{Reads::global, true, 1}, &box_lane_slide<1, true>},      {{Reads::global, true, 4}, &box_lane_slide<4, true>},
    {{Reads::warp_ring, false, 2}, &box_lane_ring<2, false>},  {{Reads::warp_ring, false, 4}, &box_lane_ring<4, false>},
    {{Reads::warp_ring, false, 6}, &box_lane_ring<6, false>},  {{Reads::warp_ring, true, 2}, &box_lane_ring<2, true>},
    {{Reads::warp_ring, true, 4}, &box_lane_ring<4, true>},    {{Reads::warp_ring, true, 6}, &box_lane_ring<6, true>},
    {{Reads::block_ring, false, 4}, &box_block_ring<4, false>}, {{Reads::block_ring, false, 16}, &box_block_ring<16, false>},
    {{Reads::block_ring, true, 4}, &box_block_ring<4, true>},  {{Reads::block_ring, true, 16}, &box_block_ring<16, true>},
    {{Reads::warp_queue, false, 4}, &box_lane_queue<4, false>}, {{Reads::warp_queue, false, 8}, &box_lane_queue<8, false>},
    {{Reads::warp_queue, true, 4}, &box_lane_queue<4, true>},  {{Reads::warp_queue, true, 8}, &box_lane_queue<8, true>},
};

Kernel kernel_of(const Config& c) {
    for (const Timed& t : kTimed) {
        if (t.config.reads == c.reads && t.config.row_sums == c.row_sums && t.config.ahead == c.ahead) return t.kernel;
    }
    throw std::logic_error("box_lane_slide: a configuration with no kernel in kTimed");
}

const char* reads_name(Reads reads) {
    switch (reads) {
        case Reads::warp_ring: return "ring";
        case Reads::block_ring: return "block";
        case Reads::warp_queue: return "queue";
        default: return "global";
    }
}

// Dynamic shared memory of a launch (the rings), allowed for the kernel.
std::size_t shared_bytes_of(const Config& c, int block) {
    const int slots = 2 * kRadius + 1 + c.ahead;
    std::size_t bytes = 0;
    if (c.reads == Reads::warp_ring) bytes = static_cast<std::size_t>(block / 32) * slots * 32 * sizeof(uint4);
    if (c.reads == Reads::warp_queue) bytes = static_cast<std::size_t>(block / 32) * (2 * kRadius + 1) * 32 * sizeof(uint4);
    if (c.reads == Reads::block_ring) bytes = kBarrierBytes + static_cast<std::size_t>(slots) * (block / 32 * kWarpOutput + 32);
    if (bytes == 0) return 0;
    KLAB_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_of(c)), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
    return bytes;
}

// Blocks of a launch: a warp per span and strip, or for the block ring a block per tile of
// block / 32 spans and strip.
int grid_of(const Config& c, int strip_rows, int block) {
    const int strips = (kHeight + strip_rows - 1) / strip_rows;
    if (c.reads == Reads::block_ring) return kRowBytes / (block / 32 * kWarpOutput) * strips;
    return (kWarpsPerRow * strips * 32 + block - 1) / block;
}

// The two copies of the image (see strip_copy), each checked once against the image, printed
// against the device-to-device copy.
void time_copies(Timer& timer, const Buffers& buffers, double copy_us) {
    int sms = 0;
    KLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const auto report = [&](const char* what, const klab::autotune::Work& work) {
        const bool equal = buffers.output_of(work) == buffers.image;
        const double us = timer.median_us(work);
        std::printf("%-58s %6.1f us, %.2fx the copy%s\n", what, us, us / copy_us, equal ? "" : " (THE OUTPUT DIFFERS FROM THE IMAGE)");
    };
    for (int blocks_per_sm : {8, 32, 128}) {
        const std::string what = "copy in address order, grid of " + std::to_string(blocks_per_sm) + " blocks of 256 per SM:";
        report(what.c_str(), [&](cudaStream_t stream) {
            linear_copy<<<sms * blocks_per_sm, 256, 0, stream>>>(reinterpret_cast<const uint4*>(buffers.in), reinterpret_cast<uint4*>(buffers.out),
                                                                 Buffers::bytes / sizeof(uint4));
            KLAB_CUDA_CHECK_LAUNCH(stream);
        });
    }
    for (int ahead : {1, 4, 8}) {
        const auto kernel = ahead == 1 ? &strip_copy<1> : ahead == 4 ? &strip_copy<4> : &strip_copy<8>;
        for (int strip_rows : {32, 64, 128}) {
            const int warps = kRowBytes / 512 * ((kHeight + strip_rows - 1) / strip_rows);
            const std::string what = "copy walking down strips of " + std::to_string(strip_rows) + " rows, " + std::to_string(ahead) + " rows ahead:";
            report(what.c_str(), [&](cudaStream_t stream) {
                kernel<<<(warps * 32 + 255) / 256, 256, 0, stream>>>(buffers.in, buffers.out, Buffers::pitch, strip_rows);
                KLAB_CUDA_CHECK_LAUNCH(stream);
            });
        }
    }
    // The same walk reading the box's 2 * kRadius + 1 rows above each strip too; then the box
    // warps' walk through their rings (spans of 512 bytes writing 480, the halo rows, cp.async)
    // with each row copied, not summed.
    for (int ahead : {4, 8}) {
        const auto kernel = ahead == 4 ? &strip_copy<4, 2 * kRadius + 1> : &strip_copy<8, 2 * kRadius + 1>;
        for (int strip_rows : {32, 64, 128}) {
            const int warps = kRowBytes / 512 * ((kHeight + strip_rows - 1) / strip_rows);
            const std::string what = "copy with the 9 rows above, strips of " + std::to_string(strip_rows) + ", " + std::to_string(ahead) + " ahead:";
            report(what.c_str(), [&](cudaStream_t stream) {
                kernel<<<(warps * 32 + 255) / 256, 256, 0, stream>>>(buffers.in, buffers.out, Buffers::pitch, strip_rows);
                KLAB_CUDA_CHECK_LAUNCH(stream);
            });
        }
    }
    // The box's tiles: 512 bytes loaded, the middle 480 stored (and 448, 384: 64- and 128-byte
    // multiples, loads still off the 128-byte lines; 256: loads on them, each byte read twice),
    // without and with the 9 rows above.
    using CopyKernel = void (*)(const std::uint8_t*, std::uint8_t*, std::size_t, int);
    constexpr int kHalo = 2 * kRadius + 1;
    const std::pair<int, CopyKernel> tiled[] = {{480, &strip_copy<8, 0, 480>},     {448, &strip_copy<8, 0, 448>},
                                                {384, &strip_copy<8, 0, 384>},     {256, &strip_copy<8, 0, 256>},
                                                {480, &strip_copy<8, kHalo, 480>}, {448, &strip_copy<8, kHalo, 448>},
                                                {384, &strip_copy<8, kHalo, 384>}, {256, &strip_copy<8, kHalo, 256>}};
    for (int t = 0; t < 8; ++t) {
        const int tile = tiled[t].first;
        const CopyKernel kernel = tiled[t].second;
        for (int strip_rows : {32, 64, 128}) {
            const int warps = (kRowBytes + tile - 1) / tile * ((kHeight + strip_rows - 1) / strip_rows);
            const std::string what = "copy in tiles of " + std::to_string(tile) + " bytes of 512" + (t >= 4 ? " with the 9 rows above" : "") +
                                     ", strips of " + std::to_string(strip_rows) + ", 8 ahead:";
            report(what.c_str(), [&](cudaStream_t stream) {
                kernel<<<(warps * 32 + 255) / 256, 256, 0, stream>>>(buffers.in, buffers.out, Buffers::pitch, strip_rows);
                KLAB_CUDA_CHECK_LAUNCH(stream);
            });
        }
    }
    for (int strip_rows : {32, 64, 128}) {
        const int blocks = (kHeight + strip_rows - 1) / strip_rows * 48 / 8;
        const std::string what = "copy with the 9 rows above, edges exchanged, strips of " + std::to_string(strip_rows) + ", 8 ahead:";
        report(what.c_str(), [&](cudaStream_t stream) {
            strip_copy_exchange<8><<<blocks, 256, 0, stream>>>(buffers.in, buffers.out, Buffers::pitch, strip_rows);
            KLAB_CUDA_CHECK_LAUNCH(stream);
        });
    }
    for (int ahead : {4, 6}) {
        const auto kernel = ahead == 4 ? &box_lane_ring<4, false, true> : &box_lane_ring<6, false, true>;
        for (int block : {128, 256}) {
            const auto shared = static_cast<std::size_t>(block / 32) * (2 * kRadius + 1 + ahead) * 32 * sizeof(uint4);
            KLAB_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(shared)));
            for (int strip_rows : {32, 64, 128}) {
                const int warps = kWarpsPerRow * ((kHeight + strip_rows - 1) / strip_rows);
                const std::string what = "copy through the warps' rings, strips of " + std::to_string(strip_rows) + ", " + std::to_string(ahead) +
                                         " ahead, blocks of " + std::to_string(block) + ":";
                report(what.c_str(), [&](cudaStream_t stream) {
                    kernel<<<(warps * 32 + block - 1) / block, block, shared, stream>>>(buffers.in, buffers.out, Buffers::pitch, strip_rows);
                    KLAB_CUDA_CHECK_LAUNCH(stream);
                });
            }
        }
    }
}

// `profile`: each configuration of kProfiled launched once, untimed (for Nsight Compute, which
// flushes the caches before each kernel it profiles).
struct Profiled {
    Config config;
    int strip_rows, block;
};
constexpr Profiled kProfiled[] = {{{Reads::global, false, 1}, 32, 128},    {{Reads::global, true, 1}, 32, 128},
                                  {{Reads::warp_ring, false, 4}, 64, 256}, {{Reads::warp_ring, true, 4}, 32, 128},
                                  {{Reads::warp_ring, true, 4}, 64, 128},  {{Reads::block_ring, false, 16}, 99, 256},
                                  {{Reads::block_ring, true, 4}, 49, 256}};
bool g_profile = false;
bool g_exchange_only = false;     // `exchange`: the copy floor, the warps' rings and box_span_exchange only
bool g_exchange_profile = false;  // `exchange-profile`: the warps' ring and three exchange kernels launched once each

int run() {
    using namespace klab;
    const Buffers buffers;
    constexpr std::size_t pitch = Buffers::pitch;
    std::uint8_t* const in = buffers.in;
    std::uint8_t* const out = buffers.out;

    if (g_exchange_profile) {  // the warps' ring and the exchange at blocks of 5 warps, strips of 32, once each
        const Config ring{Reads::warp_ring, true, 4};
        kernel_of(ring)<<<grid_of(ring, 32, 128), 128, shared_bytes_of(ring, 128)>>>(in, out, pitch, 32);
        KLAB_CUDA_CHECK_LAUNCH(nullptr);
        constexpr std::size_t shared = exchange_shared_bytes<5>();
        for (const Kernel kernel : {&box_span_exchange<5, Sync::barrier, true>, &box_span_exchange<5, Sync::none, true>,
                                    &box_span_exchange<5, Sync::barrier, false>}) {
            KLAB_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(shared)));
            kernel<<<kRowBytes / (512 * 5) * ((kHeight + 31) / 32), 160, shared>>>(in, out, pitch, 32);
            KLAB_CUDA_CHECK_LAUNCH(nullptr);
        }
        KLAB_CUDA_CHECK(cudaDeviceSynchronize());
        return 0;
    }
    if (g_profile) {
        for (const Profiled& p : kProfiled) {
            const std::size_t shared = shared_bytes_of(p.config, p.block);
            kernel_of(p.config)<<<grid_of(p.config, p.strip_rows, p.block), p.block, shared>>>(in, out, pitch, p.strip_rows);
            KLAB_CUDA_CHECK_LAUNCH(nullptr);
        }
        KLAB_CUDA_CHECK(cudaDeviceSynchronize());
        return 0;
    }
    Timer timer;
    const double copy_us = timer.copy_us(buffers);
    // One launch shape of a box kernel: checked against the CPU box where it sums, timed, printed.
    const auto time_launch = [&](const char* reads, bool row_sums, int ahead, Kernel kernel, int grid, int block, std::size_t shared,
                                 int strip_rows) {
        cudaFuncAttributes attributes{};
        KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
        const autotune::Work work = [&](cudaStream_t s) {
            kernel<<<grid, block, shared, s>>>(in, out, pitch, strip_rows);
            KLAB_CUDA_CHECK_LAUNCH(s);
        };
        long checked = 0, differing = 0;
        if (row_sums) {
            differing = differing_bytes(buffers.image, buffers.output_of(work), {0, 1, 3, 4, 5, 31, 32, 33, 63, 64, 1000, 2047, 2048, 4315, 4319},
                                        checked);
        }
        const double us = timer.median_us(work);
        std::printf("%-13s %-8s rows ahead %d, strips of %3d rows, blocks of %3d: %6.1f us, %.2fx the copy (%d registers, %zu B shared)",
                    row_sums ? "box 9x9" : "columns only", reads, ahead, strip_rows, block, us, us / copy_us, attributes.numRegs, shared);
        if (row_sums) std::printf("; %ld of %ld interior bytes differ", differing, checked);
        std::printf("\n");
    };
    const auto time_config = [&](const Config& c, Kernel kernel, const std::vector<int>& strip_heights, const std::vector<int>& blocks) {
        for (int strip_rows : strip_heights) {
            for (int block : blocks) {
                time_launch(reads_name(c.reads), c.row_sums, c.ahead, kernel, grid_of(c, strip_rows, block), block, shared_bytes_of(c, block),
                            strip_rows);
            }
        }
    };
    // The warps that store what they load, blocks of W warps, against the warps' rings (tiles of 480).
    const auto time_exchange = [&]() {
        for (bool row_sums : {false, true}) {
            const Config rings{Reads::warp_ring, row_sums, 4};
            time_config(rings, kernel_of(rings), {32, 64}, {128, 256});
        }
        const auto time_blocks = [&](auto warps_tag) {
            constexpr int W = decltype(warps_tag)::value;
            const std::size_t shared = exchange_shared_bytes<W>();
            struct Launch {
                const char* sync;
                bool row_sums;
                Kernel kernel;
            };
            const Launch launches[] = {{"barrier", false, &box_span_exchange<W, Sync::barrier, false>},
                                       {"barrier", true, &box_span_exchange<W, Sync::barrier, true>},
                                       {"flags", false, &box_span_exchange<W, Sync::flags, false>},
                                       {"flags", true, &box_span_exchange<W, Sync::flags, true>},
                                       {"no sync", false, &box_span_exchange<W, Sync::none, false>},
                                       {"no sync", true, &box_span_exchange<W, Sync::none, true>}};
            for (const auto& [sync, row_sums, kernel] : launches) {
                KLAB_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     static_cast<int>(shared)));
                for (int strip_rows : {32, 64, 128}) {
                    const int grid = kRowBytes / (512 * W) * ((kHeight + strip_rows - 1) / strip_rows);
                    time_launch(sync, row_sums, kExchangeAhead, kernel, grid, 32 * W, shared, strip_rows);
                }
            }
        };
        time_blocks(std::integral_constant<int, 5>{});
        time_blocks(std::integral_constant<int, 9>{});
        time_blocks(std::integral_constant<int, 15>{});
    };
    if (g_exchange_only) {
        time_exchange();
        return 0;
    }
    time_copies(timer, buffers, copy_us);
    for (const Timed& timed : kTimed) {
        // The block ring's strips: about 3, 2 and exactly 1 wave of blocks at 16 rows ahead (12 or 6
        // tiles a row, 4 or 2 blocks per SM as shared memory allows, 132 SMs: 44 strips a wave).
        const bool block_ring = timed.config.reads == Reads::block_ring;
        time_config(timed.config, timed.kernel, block_ring ? std::vector<int>{33, 49, 99} : std::vector<int>{32, 64, 128}, {128, 256});
    }
    time_exchange();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (argc > 2 || (argc > 1 && mode != "profile" && mode != "exchange" && mode != "exchange-profile")) {
        std::fprintf(stderr, "klab-probe-box-lane-slide: unknown arguments (from '%s'); give none (every configuration), profile, "
                             "exchange or exchange-profile\n", argv[1]);
        return 2;
    }
    g_profile = mode == "profile";
    g_exchange_only = mode == "exchange";
    g_exchange_profile = mode == "exchange-profile";
    return klab::probes::run_probe(&run);
}
