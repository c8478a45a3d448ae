// Probe: a separable Gaussian 9x9 on 8K RGB AoS with both passes on the tensor cores, chained in
// registers (issue 14's gauss9 target; conv.separable_row_mma keeps its column pass on the FMA
// pipe, 26 instructions per output, 14.2 of them the column pass).
//
// The row pass is turned against conv.separable_row_mma's: A = the row factor's digit band (M = 16
// output elements, K = 32 window bytes), B = the pixels (K = window bytes, N = 8 rows), so that each
// lane's accumulators hold elements g and g + 8 of rows 2t and 2t + 1 (g = lane / 4, t = lane % 4).
// That is the A operand layout of mma.m16n8k16 (M = elements, K = rows): the row results go to the
// column MMA without a shuffle or a trip through shared memory. The row factor is three balanced
// 8-bit digits (exact s32 sums, combined in fp32 as conv.separable_row_mma does); the column pass
// splits each fp32 row result into fp16 hi + lo and the column factor likewise, and adds hi*hi,
// hi*lo and lo*hi in the fp32 accumulators (lo*lo, about 2^-22 of the product, is dropped).
// The error bound of that accumulation would rest on how the tensor cores round, which NVIDIA does
// not document: this probe only times the design and counts the bytes that differ from a double
// computation.
//
// A warp owns a band of 64 output bytes (4 tiles of 16) and walks down a strip in groups of 8 rows:
// per group, per lane, 7 word loads, 24 integer MMAs, 16 row results combined and split, 12 fp16
// MMAs and 16 one-byte stores. Interior only: bands 1 .. 358 of the 360 and rows 8 .. 4311; other
// bytes stay as written before (zeros). `Splits`: 3 (the form above) or 1 (hi*hi only: the cost of
// the split's two extra MMAs, wrong pixels).
// Measured on an NVIDIA H200 (2026-11-30, scripts/gpu-probe.sh gauss9_mma_chain; L2 flushed, medians
// of 20 or more; the copy of the image 47.2 us): 200.8 to 240.6 us over strips of 32 to 128 rows and
// blocks of 64 or 128 (4.25x the copy at best), 108 registers, no spills; 1 of 206208 checked bytes
// off by 1 from the double computation, none by more. hi*hi only: 203.7 to 212.3 us (80 registers;
// 2006 bytes off by 1). conv.separable_row_mma runs the same image in 133.67 us (the committed run
// at 83880fa): the chain is 1.5x slower, and dropping two of its three column MMAs does not make it
// faster, so the tensor pipe's throughput is not what holds it.
// Nsight Compute (PROFILE=gauss9_mma_chain PROFILE_SKIP=1: the split form at strips of 32 rows,
// blocks of 64; 293.8 us under the profiler's clocks): 102.4 M warp instructions, 33 per output,
// against conv.separable_row_mma's 26. The loop takes 316 instructions per warp and group of 8 rows
// (19.8 per output): the digits' combination and the split's subtractions (64 FADD, 16 FMUL, 32
// FFMA), 24 IMMA, 12 HMMA, 16 each of the fp16 packs, unpacks, output scalings (FMUL), roundings
// and one-byte stores, 23 moves and 17 constant loads. Each warp's set-up, the digit operands built from the taps and the
// first rows, takes 859 (40% of the instructions at 32-row strips). Issue slots 48% busy; 108
// registers, 25% theoretical occupancy (24.2% achieved, 0.84 eligible warps per scheduler); the
// IMMAs hold 21% of the stall samples (their results feed the combination at once); L1 hit rate
// 68%, DRAM 12.9% of peak. What would have to change: fewer instructions per row result around the
// MMAs (the combination in 3, as conv.separable_row_mma does; no split), stores of whole words, and
// registers for 24 or more warps. With the split, the chain does not reach the count it was meant to
// save; the column pass stays on the FMA pipe.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "autotune/timing.hpp"
#include "harness/cuda_check.hpp"
#include "probes/box9_probe.hpp"
#include "probes/gauss9_probe.hpp"
#include "probes/probe_main.hpp"

namespace {

namespace gauss9 = klab::probes::gauss9;
using namespace gauss9;  // the image, its timer, kTaps and kReach
constexpr int kBand = 64, kBands = kRowBytes / kBand;  // 360
constexpr int kFirstRow = 8, kLastRow = kHeight - 8;   // output rows [8, 4312)

struct Factors {
    std::array<double, kTaps> row;  // the Gaussian's factor (both ways), gauss9_probe.hpp
    int digit[3][kTaps];  // row factor * 2^e in balanced base-256 digits, lowest first
    double scale;         // 2^-e
};

Factors make_factors() {
    Factors f{};
    f.row = gauss9::factor();  // fp32 factors, as a variant gets them
    const int e = 23 - static_cast<int>(std::ceil(std::log2(f.row[4])));  // |Q| < 2^23
    f.scale = std::ldexp(1.0, -e);
    for (int i = 0; i < kTaps; ++i) {
        long q = std::lround(std::ldexp(f.row[i], e));
        for (int d = 0; d < 3; ++d) {
            long digit = ((q % 256) + 256) % 256;
            if (digit >= 128) digit -= 256;
            f.digit[d][i] = static_cast<int>(digit);
            q = (q - digit) / 256;
        }
    }
    return f;
}

__constant__ int c_digit[3][kTaps];
__constant__ float c_col_hi[kTaps], c_col_lo[kTaps];  // the column factor times 2^10 (lo stays normal), fp16 hi + lo

__device__ __forceinline__ void mma_s8u8(int (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_f16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ std::uint32_t half2_bits(__half2 h) { return *reinterpret_cast<std::uint32_t*>(&h); }

// The row results of one tile and group, fp16 hi and lo: [0] elements g, rows 2t and 2t+1; [1] g + 8.
struct Split {
    std::uint32_t hi[2], lo[2];
};

template <int Splits>
__global__ void __launch_bounds__(128) gauss9_mma_chain(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out,
                                                        int pitch, int strip_rows, float row_scale, float scale) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
    const int band = 1 + warp % (kBands - 2);
    const int y0 = kFirstRow + (warp / (kBands - 2)) * strip_rows;
    if (y0 >= kLastRow) return;
    const int y_end = min(y0 + strip_rows, kLastRow);
    const int g = lane / 4, t = lane % 4;
    const int b0 = band * kBand;

    // A operands of the row pass: digit d of the tap whose byte lies k + 32 c - m bytes right of
    // output element m's first tap, for chunks c = 0, 1 (k + 32 c = m + 3 i).
    std::uint32_t a_row[3][2][4];
#pragma unroll
    for (int d = 0; d < 3; ++d) {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int m = g + 8 * (r & 1);
                const int k0 = 4 * t + 16 * (r >> 1) + 32 * c;
                std::uint32_t word = 0;
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int offset = k0 + j - m;  // = 3 i
                    int digit = 0;
                    if (offset >= 0 && offset % 3 == 0 && offset / 3 < kTaps) digit = c_digit[d][offset / 3];
                    word |= (static_cast<std::uint32_t>(digit) & 0xffu) << (8 * j);
                }
                a_row[d][c][r] = word;
            }
        }
    }
    // B operands of the column pass: C[k][n] = column tap k - n (k input row of the 16, n output
    // row of the 8), rows k = 2t, 2t + 1 (b0) and 2t + 8, 2t + 9 (b1) of output row n = g.
    std::uint32_t b_hi[2], b_lo[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int k = 2 * t + 8 * h;
        const auto tap = [&](int kk, const float* table) { return (kk - g >= 0 && kk - g < kTaps) ? table[kk - g] : 0.0f; };
        b_hi[h] = half2_bits(__floats2half2_rn(tap(k, c_col_hi), tap(k + 1, c_col_hi)));
        b_lo[h] = half2_bits(__floats2half2_rn(tap(k, c_col_lo), tap(k + 1, c_col_lo)));
    }

    // Row pass of the 8 rows starting at image row `top` (lane's row top + g), all 4 tiles.
    const auto row_pass = [&](int top, Split (&split)[4]) {
        const std::uint8_t* src = in + static_cast<std::size_t>(top + g) * pitch + b0 - kReach + 4 * t;
        std::uint32_t w[7];
#pragma unroll
        for (int h = 0; h < 7; ++h) w[h] = __ldg(reinterpret_cast<const unsigned int*>(src + 16 * h));
#pragma unroll
        for (int m = 0; m < 4; ++m) {
            int s[3][4];
#pragma unroll
            for (int d = 0; d < 3; ++d) {
#pragma unroll
                for (int r = 0; r < 4; ++r) s[d][r] = 0x4B400000;  // the float 1.5 * 2^23: + S stays exact
                mma_s8u8(s[d], a_row[d][0], w[m], w[m + 1]);
                mma_s8u8(s[d], a_row[d][1], w[m + 2], w[m + 3]);
            }
            float r[4];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const float s0 = __int_as_float(s[0][q]) - 12582912.0f, s1 = __int_as_float(s[1][q]) - 12582912.0f,
                            s2 = __int_as_float(s[2][q]) - 12582912.0f;
                r[q] = fmaf(s2, 65536.0f * row_scale, fmaf(s1, 256.0f * row_scale, s0 * row_scale));  // <= 255: fp16 range
            }
#pragma unroll
            for (int p = 0; p < 2; ++p) {
                const __half2 hi = __floats2half2_rn(r[2 * p], r[2 * p + 1]);
                const float2 back = __half22float2(hi);
                split[m].hi[p] = half2_bits(hi);
                split[m].lo[p] = half2_bits(__floats2half2_rn(r[2 * p] - back.x, r[2 * p + 1] - back.y));
            }
        }
    };

    Split upper[4], lower[4];
    row_pass(y0 - 4, upper);
    for (int y = y0; y < y_end; y += 8) {
        row_pass(y + 4, lower);
#pragma unroll
        for (int m = 0; m < 4; ++m) {
            float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            const std::uint32_t a_hi[4] = {upper[m].hi[0], upper[m].hi[1], lower[m].hi[0], lower[m].hi[1]};
            mma_f16(acc, a_hi, b_hi[0], b_hi[1]);
            if constexpr (Splits == 3) {
                const std::uint32_t a_lo[4] = {upper[m].lo[0], upper[m].lo[1], lower[m].lo[0], lower[m].lo[1]};
                mma_f16(acc, a_hi, b_lo[0], b_lo[1]);
                mma_f16(acc, a_lo, b_hi[0], b_hi[1]);
            }
            // acc: elements g (0, 1) and g + 8 (2, 3) of output rows y + 2t and y + 2t + 1.
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int row = y + 2 * t + (q & 1);
                if (row < y_end) {
                    unsigned v;
                    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(v) : "f"(acc[q] * scale));
                    out[static_cast<std::size_t>(row) * pitch + b0 + 16 * m + g + 8 * (q >> 1)] = static_cast<std::uint8_t>(v);
                }
            }
            upper[m] = lower[m];
        }
    }
}

int run() {
    using namespace klab;
    const Factors f = make_factors();
    float col_hi[kTaps], col_lo[kTaps];
    for (int i = 0; i < kTaps; ++i) {
        // The column factor times 2^10, so that its lo part stays a normal fp16; the output takes
        // the 2^-10 back.
        const float c = static_cast<float>(f.row[i]) * 1024.0f;
        col_hi[i] = __half2float(__float2half_rn(c));
        col_lo[i] = __half2float(__float2half_rn(c - col_hi[i]));
    }
    KLAB_CUDA_CHECK(cudaMemcpyToSymbol(c_digit, f.digit, sizeof(f.digit)));
    KLAB_CUDA_CHECK(cudaMemcpyToSymbol(c_col_hi, col_hi, sizeof(col_hi)));
    KLAB_CUDA_CHECK(cudaMemcpyToSymbol(c_col_lo, col_lo, sizeof(col_lo)));
    const float row_scale = static_cast<float>(f.scale), scale = 1.0f / 1024.0f;

    const Buffers buffers;
    Timer timer;
    const double copy_us = timer.copy_us(buffers);
    std::printf("conv.separable_row_mma's committed 8K RGB gauss9 (results/nvidia-h200, 83880fa): 133.67 us\n");
    const auto measure = [&](auto kernel, const char* form) {
        cudaFuncAttributes attributes{};
        KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
        for (int strip_rows : {32, 64, 128}) {
            for (int block : {64, 128}) {
                const int warps = (kBands - 2) * ((kLastRow - kFirstRow + strip_rows - 1) / strip_rows);
                const int grid = (warps * 32 + block - 1) / block;
                const autotune::Work work = [&](cudaStream_t s) {
                    kernel<<<grid, block, 0, s>>>(buffers.in, buffers.out, static_cast<int>(Buffers::pitch), strip_rows, row_scale, scale);
                    KLAB_CUDA_CHECK_LAUNCH(s);
                };
                const gauss9::Differences d = gauss9::count_differences(buffers.image, buffers.output_of(work), f.row,
                                                                        {8, 9, 15, 16, 100, 1000, 2047, 4300, 4311}, kBand);
                const double us = timer.median_us(work);
                std::printf("gauss9 chained MMAs (%s), strips of %3d rows, blocks of %3d: %6.1f us, %.2fx the copy (%d registers); "
                            "%ld of %ld interior bytes differ from double, %ld by more than 1\n",
                            form, strip_rows, block, us, us / copy_us, attributes.numRegs, d.differing, d.checked, d.beyond_one);
            }
        }
    };
    measure(&gauss9_mma_chain<3>, "hi*hi + hi*lo + lo*hi");
    measure(&gauss9_mma_chain<1>, "hi*hi only");
    return 0;
}

}  // namespace

int main() { return klab::probes::run_probe(&run); }
