// Probe: a separable Gaussian 9x9 on 8K RGB AoS on the FMA pipe alone, row pass first, each
// thread a register block of 8 output elements (issue 14's gauss9 target). Why: the kernels that
// issue the integer tensor cores' MMAs kept the H200's SMs at about 1.80 GHz, the FFMA ones at
// 1.96 (kernels/notes/conv_separable_row_mma.md), so a design without them has 9% more cycles to
// spend; conv.separable_column_first, the FFMA design in the study, spent 37.6 instructions per
// output element in its profiled first version, with 44% more column-pass work than its outputs
// need (strips of 18 rows).
//
// A block of 192 threads owns a span of 1536 bytes of a row (15 spans a row) and walks down a strip
// of `strip` output rows, one input row at a time (strip + 8 of them):
//   - the input row's bytes come into a ring of 5 raw rows in shared memory by cp.async, 4 rows
//     ahead (8 bytes a thread, and the 16 bytes either side by threads 0 to 3), so no register
//     holds a row in flight; each thread converts the bytes it copied to fp32 (`Magic`: a byte
//     permute into 2^23 + b and a subtraction; else a cast) into one of two float rows, then a
//     barrier (the only one per row: the float rows alternate);
//   - row pass: each thread reads its 8 elements and 12 either side (8 float4s) and computes 8 row
//     results, 9 FMAs each, the factor from the constant bank;
//   - column pass: each row result is added to the 9 output rows it belongs to, 8 accumulators each
//     (72 registers), a ring renamed by unrolling 9 rows; the output row the row completes is
//     rounded (cvt.rni.sat.u8.f32), packed and stored as 8 bytes.
// Per 8 outputs and row, by design: 144 FMAs, 8 conversions (16 by permute), 8 roundings and 6
// permutes, 8 shared loads and 2 stores, a barrier, the copy and the store (measured below: 213.6
// in the loop's block, the rounding and the store apart); a strip's first 8 input rows are
// filtered but output nothing.
// Interior only: the span's 16 bytes beyond the image's left and right edges are clamped to bytes
// inside it, so the outputs within 12 bytes of those edges are wrong and are not checked; rows
// outside the image are replicated (correct). Checked against a double computation with the same
// fp32 factors on 10 rows: a byte may differ by 1 only where the sum lies near a rounding tie.
// Measured on an NVIDIA H200 (2026-12-02, scripts/gpu-probe.sh gauss9_ffma_rows; L2 flushed, medians
// of 20 or more; the copy of the image 47.4 us): 194.7 us at best (strips of 255 rows, one wave of
// 255 blocks, permute conversion; 4.11x the copy, 1.46 times conv.separable_row_mma's committed
// 133.31 us), 212.1 to 228.7 at strips of 64 to 144; the cast conversion 200.8 to 228.5; at 3
// blocks per SM (96 registers, 192 bytes spilled) 225.6 to 256.8. 5 of 230080 checked bytes off by
// 1 from the double computation, none by more. A second run, after the check moved to
// gauss9_probe.hpp: 195.3 us at best, the same bytes off. (The asm statements' "memory" clobbers,
// which keep the compiler from moving the slot's reads above the wait, were added after these runs;
// the profiled code already read the slot after the wait.)
// Nsight Compute (PROFILE=gauss9_ffma_rows PROFILE_CLOCKS=unlocked: the first launch, strips of 64
// rows, 210.9 us under the profiler): the SM clock 1.97 GHz; 109.2 M warp instructions, 35.1 per
// output element (conv.separable_row_mma: 25.0): the loop's block 1922 instructions per 9 rows a
// warp (26.7 per output row and element, 18.7 of them FFMA and FMUL; besides the FMAs 64 a row: 8
// each of the permutes, the subtractions and LDS.128, and 40 of moves, address arithmetic,
// branches, the barrier and the copies) times 72 input rows for 64 outputs, 30.3 per output; the
// rounding, packing and stores 2.6; threads 0 to 3's halo copies and conversions 1.5; the rest
// 0.7. Issue slots 49.7% busy at 18.75% occupancy (159 registers: 12 warps per SM), the stall
// samples on shared-memory loads (short scoreboard) 32% and at the barrier 18%. What it shows: the
// FMA pipe's design keeps the clock but not the count: at strips of 255 rows about 32
// instructions per output element (the loop 27.6, the stores 2.6, the halo 1.4, the rest about
// 0.5, scaled from the profile's counts), so 88 us (1.6x the roofline) would need 109% of the issue
// slots at 1.97 GHz: more than all of them, where it gets half.
#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>

#include "autotune/timing.hpp"
#include "harness/cuda_check.hpp"
#include "harness/row_stream.hpp"
#include "probes/box9_probe.hpp"
#include "probes/gauss9_probe.hpp"
#include "probes/probe_main.hpp"

namespace {

namespace gauss9 = klab::probes::gauss9;
using namespace gauss9;  // the image, its timer, kTaps and kReach
constexpr int kThreads = 192, kLaneElements = 8, kSpan = kThreads * kLaneElements;  // 1536
constexpr int kSpans = kRowBytes / kSpan;                                          // 15
static_assert(kRowBytes % kSpan == 0, "whole spans");
constexpr int kHalo = 16;                      // bytes (and floats) kept either side of the span
constexpr int kRowLength = kSpan + 2 * kHalo;  // 1568
constexpr int kAhead = 4, kRawSlots = kAhead + 1;

__constant__ float c_row[kTaps], c_col[kTaps];

__device__ __forceinline__ unsigned shared_address(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// Where halo piece t (threads 0 to 3: two 8-byte pieces left of the span, two right) lies in a row
// slot, raw or float.
__device__ __forceinline__ int halo_offset(int t) { return t < 2 ? 8 * t : kHalo + kSpan + 8 * (t - 2); }

// This thread's 8-byte pieces of input row `i` (image row y0 - 4 + i, replicated past the image)
// into raw slot i mod kRawSlots: its own 8 bytes, and for threads 0 to 3 the halo's.
__device__ __forceinline__ void copy_row(const std::uint8_t* in, int y0, int i, std::uint8_t* raw, int span0, int t) {
    const int y = min(max(y0 - 4 + i, 0), kHeight - 1);
    const std::uint8_t* row = in + static_cast<std::size_t>(y) * Buffers::pitch;
    std::uint8_t* slot = raw + (i % kRawSlots) * kRowLength;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(shared_address(slot + kHalo + 8 * t)), "l"(row + span0 + 8 * t)
                 : "memory");
    if (t < 4) {
        // Left halo (t = 0, 1), right halo (t = 2, 3), clamped inside the row at the image's edges.
        int x = t < 2 ? span0 - kHalo + 8 * t : span0 + kSpan + 8 * (t - 2);
        x = min(max(x, 0), kRowBytes - 8);
        const int at = halo_offset(t);
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(shared_address(slot + at)), "l"(row + x) : "memory");
    }
}

template <bool Magic>
__device__ __forceinline__ float to_float(std::uint32_t word, int k) {
    if constexpr (Magic) {
        return __int_as_float(static_cast<int>(__byte_perm(word, 0x4B000000u, 0x7540u | static_cast<unsigned>(k)))) - 8388608.0f;
    } else {
        return __uint2float_rn((word >> (8 * k)) & 0xFFu);
    }
}

// 8 bytes at `raw` to 8 floats at `floats`.
template <bool Magic>
__device__ __forceinline__ void convert8(const std::uint8_t* raw, float* floats) {
    const uint2 b = *reinterpret_cast<const uint2*>(raw);
    float4 lo, hi;
    lo.x = to_float<Magic>(b.x, 0), lo.y = to_float<Magic>(b.x, 1), lo.z = to_float<Magic>(b.x, 2), lo.w = to_float<Magic>(b.x, 3);
    hi.x = to_float<Magic>(b.y, 0), hi.y = to_float<Magic>(b.y, 1), hi.z = to_float<Magic>(b.y, 2), hi.w = to_float<Magic>(b.y, 3);
    reinterpret_cast<float4*>(floats)[0] = lo;
    reinterpret_cast<float4*>(floats)[1] = hi;
}

template <bool Magic, int MinBlocks>
__global__ void __launch_bounds__(kThreads, MinBlocks) gauss9_ffma_rows(const std::uint8_t* in, std::uint8_t* out, int strip) {
    __shared__ __align__(16) std::uint8_t raw[kRawSlots * kRowLength];
    __shared__ __align__(16) float rows[2][kRowLength];
    const int t = static_cast<int>(threadIdx.x);
    const int span0 = static_cast<int>(blockIdx.x) * kSpan;
    const int y0 = static_cast<int>(blockIdx.y) * strip;
    const int inputs = strip + 2 * 4;

    for (int i = 0; i < kAhead; ++i) {
        copy_row(in, y0, i, raw, span0, t);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    float acc[kTaps][kLaneElements];
#pragma unroll
    for (int k = 0; k < kTaps; ++k) {
#pragma unroll
        for (int j = 0; j < kLaneElements; ++j) acc[k][j] = 0.0f;  // the slots of rows above the strip: never stored
    }
#pragma unroll 1
    for (int i0 = 0; i0 < inputs; i0 += kTaps) {
#pragma unroll
        for (int u = 0; u < kTaps; ++u) {
            const int i = i0 + u;
            if (i >= inputs) break;
            if (i + kAhead < inputs) copy_row(in, y0, i + kAhead, raw, span0, t);
            asm volatile("cp.async.commit_group;" ::: "memory");
            asm volatile("cp.async.wait_group %0;" ::"n"(kAhead) : "memory");  // row i's copies (this thread's) are in
            const std::uint8_t* slot = raw + (i % kRawSlots) * kRowLength;
            float* const floats = rows[i & 1];
            convert8<Magic>(slot + kHalo + 8 * t, floats + kHalo + 8 * t);
            if (t < 4) {
                convert8<Magic>(slot + halo_offset(t), floats + halo_offset(t));
            }
            __syncthreads();  // row i's floats are in; every thread is done with row i - 1's, which row i + 1 takes

            float x[32];
            const float4* w = reinterpret_cast<const float4*>(floats + kHalo + 8 * t - kReach);
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                const float4 v = w[q];
                x[4 * q] = v.x, x[4 * q + 1] = v.y, x[4 * q + 2] = v.z, x[4 * q + 3] = v.w;
            }
            float h[kLaneElements];
#pragma unroll
            for (int j = 0; j < kLaneElements; ++j) {
                h[j] = c_row[0] * x[j];
#pragma unroll
                for (int k = 1; k < kTaps; ++k) h[j] = fmaf(c_row[k], x[j + 3 * k], h[j]);
            }
            // Input row i is tap m of output row i - m of the strip (slot (i - m) mod 9): m = 8 completes one.
            const int done = (u + 1) % kTaps;
#pragma unroll
            for (int j = 0; j < kLaneElements; ++j) acc[done][j] = fmaf(c_col[8], h[j], acc[done][j]);
            const int o = y0 + i - 8;
            if (i >= 8 && i - 8 < strip && o < kHeight) {
                uint2 packed;
                packed.x = klab::rows::round_pack4(acc[done][0], acc[done][1], acc[done][2], acc[done][3]);
                packed.y = klab::rows::round_pack4(acc[done][4], acc[done][5], acc[done][6], acc[done][7]);
                __stcs(reinterpret_cast<uint2*>(out + static_cast<std::size_t>(o) * Buffers::pitch + span0 + 8 * t), packed);
            }
#pragma unroll
            for (int m = 1; m < 8; ++m) {
                const int s = (u - m + kTaps) % kTaps;
#pragma unroll
                for (int j = 0; j < kLaneElements; ++j) acc[s][j] = fmaf(c_col[m], h[j], acc[s][j]);
            }
#pragma unroll
            for (int j = 0; j < kLaneElements; ++j) acc[u % kTaps][j] = c_col[0] * h[j];
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
}

int run() {
    using namespace klab;
    float factor[kTaps];
    const std::array<double, kTaps> exact = gauss9::factor();
    for (int i = 0; i < kTaps; ++i) factor[i] = static_cast<float>(exact[static_cast<std::size_t>(i)]);
    KLAB_CUDA_CHECK(cudaMemcpyToSymbol(c_row, factor, sizeof(factor)));
    KLAB_CUDA_CHECK(cudaMemcpyToSymbol(c_col, factor, sizeof(factor)));
    const Buffers buffers;
    Timer timer;
    const double copy_us = timer.copy_us(buffers);
    std::printf("conv.separable_row_mma's committed 8K RGB gauss9 (results/nvidia-h200, 94c22da): 133.31 us\n");
    const auto measure = [&](auto kernel, const char* form, std::initializer_list<int> strips) {
        cudaFuncAttributes attributes{};
        KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
        int blocks_per_sm = 0;
        KLAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kThreads, 0));
        for (int strip : strips) {
            const dim3 grid(kSpans, (kHeight + strip - 1) / strip);
            const autotune::Work work = [&](cudaStream_t s) {
                kernel<<<grid, kThreads, 0, s>>>(buffers.in, buffers.out, strip);
                KLAB_CUDA_CHECK_LAUNCH(s);
            };
            // 10 rows, the image's first and last among them; not the 16 bytes at a row's ends.
            const gauss9::Differences d = gauss9::count_differences(buffers.image, buffers.output_of(work), exact,
                                                                    {0, 3, 8, 100, 1000, 2047, 2048, 4300, 4316, kHeight - 1}, 16);
            const double us = timer.median_us(work);
            std::printf("gauss9 FFMA rows first (%s), strips of %3d rows (%4u blocks): %6.1f us, %.2fx the copy, %.3f of row_mma's"
                        " (%d registers, %d blocks per SM); %ld of %ld checked bytes differ from double, %ld by more than 1\n",
                        form, strip, grid.x * grid.y, us, us / copy_us, us / 133.31, attributes.numRegs, blocks_per_sm, d.differing, d.checked,
                        d.beyond_one);
        }
    };
    measure(&gauss9_ffma_rows<true, 2>, "permute conversion, 2 blocks/SM", {64, 96, 144, 255});
    measure(&gauss9_ffma_rows<false, 2>, "cast conversion, 2 blocks/SM", {64, 144, 255});
    measure(&gauss9_ffma_rows<true, 3>, "permute conversion, 3 blocks/SM", {64, 96, 170});
    return 0;
}

}  // namespace

int main() { return klab::probes::run_probe(&run); }
