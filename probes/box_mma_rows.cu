// Probe: a box 9x9 on 8K RGB AoS (replicate rows) whose row sums run on the integer tensor cores —
// how fast box_lane_slide.cu's ring design gets when the row sums, its most expensive part, cost a
// few mma.sync per row instead of shuffles, byte permutes and adds. Not a variant: the columns
// within 16 bytes of a row's ends are not right (the warps at a row's ends clamp their loads), and
// the box size is fixed at compile time.
//
// Design: box_lane_slide.cu's warp, span and ring (a warp owns 512 consecutive bytes of a row, 16
// per lane, writes the 480 in the middle, walks down a strip; each row is copied once by cp.async
// into a per-warp ring that gives the entering and the leaving row; column sums V slide down in
// registers as 16-bit pairs). Row sums: each row's V (at most 9 * 255 = 2295) is split into its
// low and high bytes, two planes of the span in shared memory (double-buffered, one __syncwarp per
// row). Window m is the 32 bytes at span offset 8m; its 8 outputs are the bytes 12 ... 19 of it,
// whose 9 taps of a channel lie 3 bytes apart, all inside the window. One
// mma.sync.m16n8k32.u8.u8.s32 takes 16 windows (rows of A) times the banded 32 x 8 matrix B of
// the taps (B(k, n) = 1 where window byte k is a tap of output n), so S = lo * B + hi * 255B +
// hi * B: three MMAs per 16 windows, exact, the rounding's +40 in the accumulator's start. The K
// order is permuted (thread t's bytes k = 4t..4t+3 and 16+4t..16+4t+3 are window bytes 8t..8t+7),
// so that a thread's four A words of a group are at fixed offsets from one address. 61 windows cover the
// 480 output bytes (4 groups of 16; the last group's surplus windows read the planes' zero padding
// and are not stored). Output: round(S / 81) by a multiply-high per byte, two bytes per 2-byte store
// (a thread holds outputs 2t and 2t + 1 of windows g and g + 8).
// Estimated before measuring: about 6 instructions per output byte (slide 1, planes 0.6, the MMAs
// and their operands 1.75, rounding and stores 2, ring and loop 0.4), about 90 per warp and row,
// against box_lane_slide.cu's 12.6 per byte.
// Measured on an NVIDIA H200 (2026-11-26, `bash scripts/gpu-probe.sh box_mma_rows`; L2 flushed,
// medians of at least 20; copy of the image 47.4 us); every interior byte checked equal to a CPU box
// sum: 92.5 us at 32-row strips and blocks of 64 (1.95x the copy; 64 registers, 17.3 KB of shared
// memory per block), 99.0 at 64-row strips, 102.9 at 128; box_lane_slide.cu's ring 73.9 us the same
// day. Slower, not faster: Nsight Compute (the 32-row launch, clocks locked) counts 47.1 M warp
// instructions, the row loop 213 per warp and row (box_lane_slide.cu's: 178), issue slots 56%
// busy: besides the 12 IMMAs and 16 shared reads, 47 register moves (mma.sync wants a window's two
// halves and window g + 8's in four consecutive registers in another order than the 8-byte reads
// give them, and each group's accumulators start at the rounding's +40), 16 multiply-highs, 24 byte
// permutes and 8 two-byte stores. The first version, with a 64-bit address and a bounds test per
// store, ran 310 per row (124.0 us). What would be left to try: a shared-memory layout in which one
// 16-byte read gives the four A registers in mma.sync's order (it costs bank conflicts on the
// planes' stores), accumulators started at zero (RZ) with the +40 folded into the rounding.
// The other order, as a whole variant (2026-11-28, not landed): conv.separable_row_mma's walk with
// the row sums first, on the input bytes (a warp per 64-element band in 16-row chunks, one
// u8 x s8 MMA per 32-byte window against a 0/1 band, 1 to 4 windows for boxes up to 31x31), the
// row sums as 16-bit halves into a per-warp ring, the column sums slid down it (V + entering -
// leaving, packed two to a word where the area is at most 256), every box, border and format. It
// passed the conformance and exact box suites (1015 GPU tests) but ran, tuned (klab tune, then
// klab-bench, L2 flushed, medians of 3; copy 47.5 us): box3 120.8 us, box9 120.4 us, box31 271.9 us,
// against conv.box_warp_ring's 66.1 and 77.0 and conv.box_warp_scan's 132.4 in the same run (a
// first form with 32-bit row sums and a wrapping ring: 134.4, 134.3, 297.6). Nsight Compute on box9
// (128x1, 4 chunks): 53.6 M warp instructions, 551 per chunk of 1024 outputs (the column pass 194,
// the row pass 175: per pair of tiles 8 shared reads, 2 IMMAs, 4 packs and 8 shared stores for the
// entering rows and the ring, plus their addresses), issue slots 49% busy, 1.4 eligible warps of 5.5
// per scheduler, the memory pipes 82% busy: each row sum makes a round trip through shared memory
// between the MMA's layout and the column pass's, and that traffic, not the arithmetic the tensor
// cores take over, sets the time. 80 registers and 8.7 KB of shared memory per warp left 37.5%
// occupancy; box31's four windows per tile quadruple the row pass's shared reads.
// A third design, the running sums in the MMA accumulators (three forms, 2026-11-29, not landed:
// 154 us or more on box9, 258 us or more on box31), is in docs/adding-a-variant.md.
#include <cstdint>
#include <cstdio>

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

constexpr int kAhead = 4;                        // rows copied into the ring ahead of use
constexpr int kSlots = 2 * kRadius + 1 + kAhead;  // ring slots of 512 bytes per warp
constexpr int kPlaneBytes = 544;                  // a plane of the span and the padding the surplus windows read
constexpr int kGroups = 4;                        // groups of 16 windows: 64 >= 61
constexpr int kWarpUint4 = kSlots * 32 + 2 * 2 * kPlaneBytes / 16;  // shared memory per warp, in 16-byte units

// D += A * B for 16 windows: A 16 x 32 unsigned bytes, B 32 x 8 unsigned bytes, D s32.
__device__ __forceinline__ void mma_u8u8(int (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap();
#endif
}

__global__ void __launch_bounds__(256) box_mma_rows(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, std::size_t pitch,
                                                    int strip_rows) {
    extern __shared__ uint4 shared_memory[];
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int g = lane >> 2, t = lane & 3;
    const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    uint4* const warp_shared = shared_memory + static_cast<int>(threadIdx.x >> 5) * kWarpUint4;
    uint4* const ring = warp_shared + lane;  // the lane's slot k: ring[32 k]
    std::uint8_t* const planes = reinterpret_cast<std::uint8_t*>(warp_shared + kSlots * 32);  // [buffer][lo, hi][kPlaneBytes]
    const int y_begin = warp / kWarpsPerRow * strip_rows;
    if (y_begin >= kHeight) return;
    const int y_end = min(y_begin + strip_rows, kHeight);
    const int span = warp % kWarpsPerRow * kWarpOutput - 16;                   // the span's first byte in the row
    const int x = min(max(span + 16 * lane, 0), kRowBytes - 16);               // clamped at the ends
    const auto row = [&](int y) { return clamped_row(in, pitch, y, x); };

    // The planes' padding (bytes 512 ... 543 of each) is read by the surplus windows only: zeros.
    reinterpret_cast<std::uint32_t*>(planes + lane / 8 * kPlaneBytes + 512)[lane % 8] = 0u;  // 4 planes x 8 words
    // B of this lane: column n = g, window bytes 8t ... 8t + 7 (k = 4t..4t+3, then 16+4t..16+4t+3).
    std::uint32_t ones[2] = {0u, 0u}, scaled[2] = {0u, 0u};
#pragma unroll
    for (int b = 0; b < 8; ++b) {
        const int d = 8 * t + b - g;  // window byte minus the output's first tap (byte g)
        if (d >= 0 && d % 3 == 0 && d / 3 < 2 * kRadius + 1) {
            ones[b / 4] |= 1u << (8 * (b % 4));
            scaled[b / 4] |= 255u << (8 * (b % 4));
        }
    }

    const int first = y_begin - kRadius - 1;  // ring row i is image row first + i, in slot i % kSlots
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
        __pipeline_memcpy_async(ring + 32 * i, row(first + i), 16);
        __pipeline_commit();
    }
    __pipeline_wait_prior(kAhead);
    std::uint32_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i <= 2 * kRadius; ++i) slide_columns(v, ring[32 * i], make_uint4(0, 0, 0, 0));
    __syncwarp();  // the padding

    constexpr std::uint32_t kHalf = (kCount - 1) / 2;
    const auto inverse = static_cast<std::uint32_t>(((1ull << 32) + kCount - 1) / kCount);
    int leaving = 0, entering = 2 * kRadius + 1;
    for (int y = y_begin; y < y_end; ++y) {
        __pipeline_wait_prior(kAhead - 1);
        slide_columns(v, ring[32 * entering], ring[32 * leaving]);
        if (y + kAhead < y_end) __pipeline_memcpy_async(ring + 32 * leaving, row(y + kAhead + kRadius), 16);
        __pipeline_commit();
        leaving = leaving + 1 == kSlots ? 0 : leaving + 1;
        entering = entering + 1 == kSlots ? 0 : entering + 1;

        // The planes of this row: low and high bytes of V, the lane's 16 bytes each.
        std::uint8_t* const lo = planes + (y & 1) * 2 * kPlaneBytes;
        std::uint8_t* const hi = lo + kPlaneBytes;
        reinterpret_cast<uint4*>(lo)[lane] = make_uint4(__byte_perm(v[0], v[1], 0x6420u), __byte_perm(v[2], v[3], 0x6420u),
                                                        __byte_perm(v[4], v[5], 0x6420u), __byte_perm(v[6], v[7], 0x6420u));
        reinterpret_cast<uint4*>(hi)[lane] = make_uint4(__byte_perm(v[0], v[1], 0x7531u), __byte_perm(v[2], v[3], 0x7531u),
                                                        __byte_perm(v[4], v[5], 0x7531u), __byte_perm(v[6], v[7], 0x7531u));
        __syncwarp();
        // This lane's bytes of A's row g in group 0: window g, bytes 8t ... 8t + 7; row g + 8 is 64
        // bytes on, group q 128 q bytes on. Its outputs: span offset 8 g + 12 + 2 t, the same steps.
        const std::uint8_t* const lo_t = lo + 8 * (g + t);
        const std::uint8_t* const hi_t = hi + 8 * (g + t);
        // (In a row's first warp, lanes 0 and 1's dst lies up to 4 bytes before the row; they store
        // nothing at dst itself (o < 16 there) and at dst + 64 or further otherwise: inside the row.)
        std::uint8_t* const dst = out + static_cast<std::size_t>(y) * pitch + span + 8 * g + 12 + 2 * t;
        const int o_t = 8 * g + 12 + 2 * t;
#pragma unroll
        for (int q = 0; q < kGroups; ++q) {
            const auto word = [&](const std::uint8_t* plane, int offset) { return *reinterpret_cast<const std::uint32_t*>(plane + 128 * q + offset); };
            const std::uint32_t a_lo[4] = {word(lo_t, 0), word(lo_t, 64), word(lo_t, 4), word(lo_t, 68)};
            const std::uint32_t a_hi[4] = {word(hi_t, 0), word(hi_t, 64), word(hi_t, 4), word(hi_t, 68)};
            int s[4] = {kHalf, kHalf, kHalf, kHalf};
            mma_u8u8(s, a_lo, ones);
            mma_u8u8(s, a_hi, scaled);
            mma_u8u8(s, a_hi, ones);
            // Outputs 2t and 2t + 1 of windows 16q + g (s[0], s[1]) and 16q + g + 8 (s[2], s[3]).
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int o = o_t + 128 * q + 64 * h;
                const std::uint32_t pair = __umulhi(static_cast<std::uint32_t>(s[2 * h]), inverse) |
                                           __umulhi(static_cast<std::uint32_t>(s[2 * h + 1]), inverse) << 8;
                if ((q > 0 || o >= 16) && (q < kGroups - 1 || o < 16 + kWarpOutput)) {
                    *reinterpret_cast<std::uint16_t*>(dst + 128 * q + 64 * h) = static_cast<std::uint16_t>(pair);
                }
            }
        }
    }
}

int run() {
    using namespace klab;
    const Buffers buffers;
    Timer timer;
    const double copy_us = timer.copy_us(buffers);
    cudaFuncAttributes attributes{};
    KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&box_mma_rows)));
    for (int strip_rows : {32, 64, 128}) {
        for (int block : {64, 128, 256}) {
            const std::size_t shared = static_cast<std::size_t>(block / 32) * kWarpUint4 * sizeof(uint4);
            KLAB_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(&box_mma_rows), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(shared)));
            const int warps = kWarpsPerRow * ((kHeight + strip_rows - 1) / strip_rows);
            const int grid = (warps * 32 + block - 1) / block;
            const autotune::Work work = [&](cudaStream_t s) {
                box_mma_rows<<<grid, block, shared, s>>>(buffers.in, buffers.out, Buffers::pitch, strip_rows);
                KLAB_CUDA_CHECK_LAUNCH(s);
            };
            long checked = 0;
            const long differing = differing_bytes(buffers.image, buffers.output_of(work),
                                                   {0, 1, 3, 4, 5, 31, 32, 33, 63, 64, 127, 128, 1000, 2047, 2048, 4315, 4319}, checked);
            const double us = timer.median_us(work);
            std::printf("box 9x9, row sums by mma.sync, strips of %3d rows, blocks of %3d: %6.1f us, %.2fx the copy (%d registers, %zu B shared); "
                        "%ld of %ld interior bytes differ\n",
                        strip_rows, block, us, us / copy_us, attributes.numRegs, shared, differing, checked);
        }
    }
    return 0;
}

}  // namespace

int main() { return klab::probes::run_probe(&run); }
