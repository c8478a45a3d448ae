// Probe: a box 9x9 on 8K RGB AoS (replicate rows) by one warp per column span, no shared memory,
// no barrier — how fast the design behind a future box variant can be before borders, sizes and
// layouts are added. Not a variant: the columns within 16 bytes of a row's ends are not right
// (the warps at a row's ends clamp their loads), and the box size is fixed at compile time.
//
// Design: a warp owns 512 consecutive bytes of a row (16 per lane) and writes the 480 in the middle
// (lanes 1 to 30), walking down a strip of rows. Column sums V (9 rows) slide down in registers as
// 16-bit pairs: one 16-byte load of the entering row and one of the leaving row per row. The row
// sums come from a prefix P along each channel over the warp's 512 bytes: each lane's prefix of its
// own 16 values (elements 3 apart), then the lanes' carries by one warp scan of the lanes'
// per-channel totals (three 21-bit fields of a u64), then S(e) = P(e + 12) - P(e - 15), the far
// values from the neighbouring lanes by shuffle, and the output byte round(S / 81) by a
// multiply-high (kernels/box_sums.hpp's rounding).
// It also times the loop without the row sums (the columns only, wrong pixels): the floor of a warp
// per span that slides column sums and stores 16 bytes per lane and row.
// Measured on an NVIDIA H200 by this probe's first version (2026-11-25; each run timed by CUDA events
// after a 200 MB memset that flushes L2, the median of 20 after 5 warm-up runs): 95.0 us at 32-row
// strips and 64 registers (101 at 64 rows, 112 at 128: fewer warps hide less latency; two rows
// of loads in flight: 76 registers, 99 to 113 us), 1.88x the 50.7 us device-to-device copy of the
// image, exact on every interior byte checked; conv.box_sliding_sums takes 123 us. Nsight
// Compute (clocks locked): 50.7 M warp instructions (16.3 per output byte), issue slots 62% busy,
// achieved occupancy 39% of the 50% the registers allow, DRAM 41% of peak.
// Its committed form on the H200 (2026-11-25, the same timing; `bash scripts/gpu-probe.sh
// box_warp_prefix`): copy 47.5 us; 90.1 us at 32-row strips and blocks of 128 (1.90x; 94.4 at
// 64 rows, 105.1 at 128; two rows of loads in flight 95.6 to 112.4 us); the columns only 80.5 us
// at 32-row strips and 64.2 us at 64 (1.69x and 1.35x the copy): without any row sum, the structure
// is already above 1.3x the copy.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "autotune/timing.hpp"
#include "harness/cuda_check.hpp"
#include "kernels/box_span.hpp"
#include "probes/box9_probe.hpp"
#include "probes/probe_main.hpp"

namespace {

using namespace klab::probes::box9;
using klab::box_span::slide_columns;

constexpr int kLead = kRadius * kStride, kTrail = (kRadius + 1) * kStride;  // 12 and 15 bytes

// RowSums false: the column sums' low bytes are stored instead of the box (wrong pixels, not
// checked): the cost of the loads, the slide and the stores alone, this structure's floor.
template <int RowsAhead, bool RowSums = true>
__global__ void __launch_bounds__(256) box_warp_prefix(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out,
                                                       std::size_t pitch, int strip_rows) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int y_begin = warp / kWarpsPerRow * strip_rows;
    if (y_begin >= kHeight) return;
    const int y_end = min(y_begin + strip_rows, kHeight);
    const int x = min(max(warp % kWarpsPerRow * kWarpOutput - 16 + 16 * lane, 0), kRowBytes - 16);  // clamped at the ends
    const int phase = lane % 3;  // the channel of the lane's first byte, counted from the span's first (16 = 1 mod 3)
    const std::uint32_t half = (kCount - 1) / 2;
    const auto inverse = static_cast<std::uint32_t>(((1ull << 32) + kCount - 1) / kCount);
    const auto row = [&](int y) { return clamped_row(in, pitch, y, x); };

    std::uint32_t v[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // V of row y_begin - 1
    for (int y = y_begin - kRadius - 1; y < y_begin + kRadius; ++y) slide_columns(v, load16(row(y)), make_uint4(0, 0, 0, 0));
    uint4 enter[RowsAhead], leave[RowsAhead];  // the rows of the next RowsAhead output rows, in flight
#pragma unroll
    for (int k = 0; k < RowsAhead; ++k) enter[k] = load16(row(y_begin + k + kRadius)), leave[k] = load16(row(y_begin + k - kRadius - 1));

    for (int y = y_begin; y < y_end; ++y) {
        const uint4 e = enter[0], l = leave[0];
#pragma unroll
        for (int k = 0; k + 1 < RowsAhead; ++k) enter[k] = enter[k + 1], leave[k] = leave[k + 1];
        enter[RowsAhead - 1] = load16(row(y + RowsAhead + kRadius));
        leave[RowsAhead - 1] = load16(row(y + RowsAhead - kRadius - 1));
        slide_columns(v, e, l);
        if (RowSums) {
            // The lane's prefix along each chain of elements 3 apart (chain c: elements k = c mod 3).
            std::uint32_t p[16];
#pragma unroll
            for (int k = 0; k < 16; ++k) {
                const std::uint32_t value = (k & 1) ? v[k >> 1] >> 16 : v[k >> 1] & 0xffffu;
                p[k] = k >= 3 ? p[k - 3] + value : value;
            }
            // The chains' totals by channel (chain c has channel (phase + c) mod 3), scanned across the
            // warp as three 21-bit fields (a warp's 512 bytes sum to at most 171 * 9 * 255 < 2^21).
            const unsigned long long chain0 = p[15], chain1 = p[13], chain2 = p[14];
            const unsigned long long total = phase == 0   ? chain0 | chain1 << 21 | chain2 << 42
                                             : phase == 1 ? chain2 | chain0 << 21 | chain1 << 42
                                                          : chain1 | chain2 << 21 | chain0 << 42;
            unsigned long long scan = total;
#pragma unroll
            for (int d = 1; d < 32; d *= 2) {
                const unsigned long long below = __shfl_up_sync(kFullMask, scan, d);
                if (lane >= d) scan += below;
            }
            const unsigned long long before = scan - total;
            const auto field = [&](int channel) { return static_cast<std::uint32_t>(before >> (21 * channel) & 0x1fffffu); };
            const std::uint32_t carry[3] = {field(phase), field((phase + 1) % 3), field((phase + 2) % 3)};  // by chain
#pragma unroll
            for (int k = 0; k < 16; ++k) p[k] += carry[k % 3];

            // S(k) = P(k + 12) - P(k - 15): from lane + 1 where k + 12 >= 16, from lane - 1 where k < 15.
            std::uint32_t bytes[16];
#pragma unroll
            for (int k = 0; k < 16; ++k) {
                const int lead = k + kLead, trail = k - kTrail;
                const std::uint32_t a = lead < 16 ? p[lead] : __shfl_down_sync(kFullMask, p[lead - 16], 1);
                const std::uint32_t b = trail >= 0 ? p[trail] : __shfl_up_sync(kFullMask, p[trail + 16], 1);
                bytes[k] = __umulhi(a - b + half, inverse);
            }
            std::uint32_t words[4];
#pragma unroll
            for (int w = 0; w < 4; ++w) {
                words[w] = __byte_perm(__byte_perm(bytes[4 * w], bytes[4 * w + 1], 0x0040u), __byte_perm(bytes[4 * w + 2], bytes[4 * w + 3], 0x0040u),
                                       0x5410u);
            }
            if (lane >= 1 && lane <= 30) {
                __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y) * pitch + x), make_uint4(words[0], words[1], words[2], words[3]));
            }
        } else {
            if (lane >= 1 && lane <= 30) {
                __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y) * pitch + x),
                       make_uint4(__byte_perm(v[0], v[1], 0x6420u), __byte_perm(v[2], v[3], 0x6420u), __byte_perm(v[4], v[5], 0x6420u),
                                  __byte_perm(v[6], v[7], 0x6420u)));
            }
        }
    }
}

int run() {
    using namespace klab;
    const Buffers buffers;
    constexpr std::size_t pitch = Buffers::pitch;
    std::uint8_t* const in = buffers.in;
    std::uint8_t* const out = buffers.out;
    Timer timer;
    const double copy_us = timer.copy_us(buffers);

    for (int strip_rows : {32, 64}) {  // the structure's floor: loads, slide and stores, no row sums
        const int warps = kWarpsPerRow * ((kHeight + strip_rows - 1) / strip_rows);
        const int grid = (warps * 32 + 255) / 256;
        const double us = timer.median_us([&](cudaStream_t s) {
            box_warp_prefix<1, false><<<grid, 256, 0, s>>>(in, out, pitch, strip_rows);
            KLAB_CUDA_CHECK_LAUNCH(s);
        });
        std::printf("columns only (no row sums, wrong pixels), strips of %d rows, blocks of 256: %6.1f us, %.2fx the copy\n", strip_rows, us,
                    us / copy_us);
    }
    for (int rows_ahead : {1, 2}) {
        for (int strip_rows : {32, 64, 128}) {
            for (int block : {64, 128, 256}) {
                const int warps = kWarpsPerRow * ((kHeight + strip_rows - 1) / strip_rows);
                const int grid = (warps * 32 + block - 1) / block;
                const autotune::Work run = [&](cudaStream_t s) {
                    if (rows_ahead == 1) {
                        box_warp_prefix<1><<<grid, block, 0, s>>>(in, out, pitch, strip_rows);
                    } else {
                        box_warp_prefix<2><<<grid, block, 0, s>>>(in, out, pitch, strip_rows);
                    }
                    KLAB_CUDA_CHECK_LAUNCH(s);
                };
                long checked = 0;
                const long differing = differing_bytes(buffers.image, buffers.output_of(run),
                                                       {0, 1, 3, 4, 5, 31, 32, 33, 1000, 2047, 2048, 4315, 4319}, checked);
                const double us = timer.median_us(run);
                cudaFuncAttributes attributes{};
                KLAB_CUDA_CHECK(cudaFuncGetAttributes(
                    &attributes, rows_ahead == 1 ? reinterpret_cast<const void*>(&box_warp_prefix<1>) : reinterpret_cast<const void*>(&box_warp_prefix<2>)));
                std::printf("rows ahead %d, strips of %3d rows, blocks of %3d: %6.1f us, %.2fx the copy (%d registers); %ld of %ld interior bytes differ\n",
                            rows_ahead, strip_rows, block, us, us / copy_us, attributes.numRegs, differing, checked);
            }
        }
    }
    return 0;
}

}  // namespace

int main() { return klab::probes::run_probe(&run); }
