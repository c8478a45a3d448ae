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
// per-warp ring in shared memory (box_lane_ring), which gives the entering and the leaving row.
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
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
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

// The 16 output bytes of a lane from V of its bytes and its neighbours' (see the preamble).
__device__ __forceinline__ uint4 box_bytes(const std::uint32_t (&v)[8]) {
    std::uint32_t a[20];
#pragma unroll
    for (int i = 0; i < 6; ++i) a[i] = __shfl_up_sync(kFullMask, v[i + 2], 1);
#pragma unroll
    for (int i = 0; i < 8; ++i) a[6 + i] = v[i];
#pragma unroll
    for (int i = 0; i < 6; ++i) a[14 + i] = __shfl_down_sync(kFullMask, v[i], 1);
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

// RowSums false: the column sums' low bytes are stored instead of the box (wrong pixels, not
// checked): the cost of the loads, the slide and the stores alone, this structure's floor.
template <int Ahead, bool RowSums>
__global__ void __launch_bounds__(256) box_lane_slide(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, std::size_t pitch,
                                                      int strip_rows) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int y_begin = warp / kWarpsPerRow * strip_rows;
    if (y_begin >= kHeight) return;
    const int y_end = min(y_begin + strip_rows, kHeight);
    const int x = min(max(warp % kWarpsPerRow * kWarpOutput - 16 + 16 * lane, 0), kRowBytes - 16);  // clamped at the ends
    const auto row = [&](int y) { return in + static_cast<std::size_t>(min(max(y, 0), kHeight - 1)) * pitch + x; };

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
        const uint4 bytes = RowSums ? box_bytes(v)
                                    : make_uint4(__byte_perm(v[0], v[1], 0x6420u), __byte_perm(v[2], v[3], 0x6420u),
                                                 __byte_perm(v[4], v[5], 0x6420u), __byte_perm(v[6], v[7], 0x6420u));
        if (lane >= 1 && lane <= 30) __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y) * pitch + x), bytes);
    }
}

// The same walk with every row copied once into a ring in shared memory (cp.async, 16 bytes a
// lane, `Ahead` rows ahead), the entering and the leaving row read from there: each lane reads
// only the slots it wrote, so nothing but its own cp.async waits. Ring: 2 * kRadius + 1 + Ahead
// slots of 512 bytes per warp; slot k holds the rows k, k + kSlots, ... of the strip.
template <int Ahead, bool RowSums>
__global__ void __launch_bounds__(256) box_lane_ring(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out, std::size_t pitch,
                                                     int strip_rows) {
    constexpr int kSlots = 2 * kRadius + 1 + Ahead;
    extern __shared__ uint4 shared_ring[];
    const int lane = static_cast<int>(threadIdx.x & 31);
    const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    uint4* const ring = shared_ring + static_cast<int>(threadIdx.x >> 5) * kSlots * 32 + lane;  // the lane's slot k: ring[32 k]
    const int y_begin = warp / kWarpsPerRow * strip_rows;
    if (y_begin >= kHeight) return;
    const int y_end = min(y_begin + strip_rows, kHeight);
    const int x = min(max(warp % kWarpsPerRow * kWarpOutput - 16 + 16 * lane, 0), kRowBytes - 16);  // clamped at the ends
    const auto row = [&](int y) { return in + static_cast<std::size_t>(min(max(y, 0), kHeight - 1)) * pitch + x; };
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
    for (int i = 0; i <= 2 * kRadius; ++i) slide_columns(v, ring[32 * i], make_uint4(0, 0, 0, 0));

    int leaving = 0, entering = 2 * kRadius + 1;  // slots of the output row's leaving and entering rows
    for (int y = y_begin; y < y_end; ++y) {
        __pipeline_wait_prior(Ahead - 1);  // the entering row has arrived
        slide_columns(v, ring[32 * entering], ring[32 * leaving]);
        // The leaving row's slot takes the row kSlots after it: the entering row of output y + Ahead.
        if (y + Ahead < y_end) __pipeline_memcpy_async(ring + 32 * leaving, row(y + Ahead + kRadius), 16);
        __pipeline_commit();
        leaving = leaving + 1 == kSlots ? 0 : leaving + 1;
        entering = entering + 1 == kSlots ? 0 : entering + 1;
        const uint4 bytes = RowSums ? box_bytes(v)
                                    : make_uint4(__byte_perm(v[0], v[1], 0x6420u), __byte_perm(v[2], v[3], 0x6420u),
                                                 __byte_perm(v[4], v[5], 0x6420u), __byte_perm(v[6], v[7], 0x6420u));
        if (lane >= 1 && lane <= 30) __stcs(reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y) * pitch + x), bytes);
    }
}

using Kernel = void (*)(const std::uint8_t*, std::uint8_t*, std::size_t, int);

// A configuration: the row reads (global: the leaving row read again; ring: shared memory), whether
// the row sums are worked out, and the rows of loads in flight.
struct Config {
    bool ring, row_sums;
    int ahead;
};

template <bool RowSums>
Kernel global_kernel(int ahead) {
    switch (ahead) {
        case 1: return &box_lane_slide<1, RowSums>;
        default: return &box_lane_slide<4, RowSums>;
    }
}

template <bool RowSums>
Kernel ring_kernel(int ahead) {
    switch (ahead) {
        case 2: return &box_lane_ring<2, RowSums>;
        case 4: return &box_lane_ring<4, RowSums>;
        default: return &box_lane_ring<6, RowSums>;
    }
}

Kernel kernel_of(const Config& c) {
    if (c.ring) return c.row_sums ? ring_kernel<true>(c.ahead) : ring_kernel<false>(c.ahead);
    return c.row_sums ? global_kernel<true>(c.ahead) : global_kernel<false>(c.ahead);
}

// Dynamic shared memory of a launch (the ring kernels' rings), allowed for the kernel.
std::size_t shared_bytes_of(const Config& c, int block) {
    if (!c.ring) return 0;
    const std::size_t bytes = static_cast<std::size_t>(block / 32) * (2 * kRadius + 1 + c.ahead) * 32 * sizeof(uint4);
    KLAB_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel_of(c)), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes)));
    return bytes;
}

// `profile`: each configuration of kProfiled launched once, untimed (for Nsight Compute, which
// flushes the caches before each kernel it profiles).
struct Profiled {
    Config config;
    int strip_rows, block;
};
constexpr Profiled kProfiled[] = {{{false, false, 1}, 32, 128}, {{false, true, 1}, 32, 128}, {{true, false, 4}, 64, 256},
                                  {{true, true, 4}, 32, 128},   {{true, true, 4}, 64, 128}};
bool g_profile = false;

int run() {
    using namespace klab;
    const Buffers buffers;
    constexpr std::size_t pitch = Buffers::pitch;
    std::uint8_t* const in = buffers.in;
    std::uint8_t* const out = buffers.out;

    if (g_profile) {
        for (const Profiled& p : kProfiled) {
            const int warps = kWarpsPerRow * ((kHeight + p.strip_rows - 1) / p.strip_rows);
            const std::size_t shared = shared_bytes_of(p.config, p.block);
            kernel_of(p.config)<<<(warps * 32 + p.block - 1) / p.block, p.block, shared>>>(in, out, pitch, p.strip_rows);
            KLAB_CUDA_CHECK_LAUNCH(nullptr);
        }
        KLAB_CUDA_CHECK(cudaDeviceSynchronize());
        return 0;
    }
    Timer timer;
    const double copy_us = timer.copy_us(buffers);

    const Config configs[] = {{false, false, 1}, {false, false, 4}, {false, true, 1}, {false, true, 4}, {true, false, 2}, {true, false, 4},
                              {true, false, 6},  {true, true, 2},   {true, true, 4},  {true, true, 6}};
    for (const Config& c : configs) {
        const Kernel kernel = kernel_of(c);
        cudaFuncAttributes attributes{};
        KLAB_CUDA_CHECK(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
        for (int strip_rows : {32, 64, 128}) {
            for (int block : {128, 256}) {
                const int warps = kWarpsPerRow * ((kHeight + strip_rows - 1) / strip_rows);
                const int grid = (warps * 32 + block - 1) / block;
                const std::size_t shared = shared_bytes_of(c, block);
                const autotune::Work work = [&](cudaStream_t s) {
                    kernel<<<grid, block, shared, s>>>(in, out, pitch, strip_rows);
                    KLAB_CUDA_CHECK_LAUNCH(s);
                };
                long checked = 0, differing = 0;
                if (c.row_sums) {
                    differing = differing_bytes(buffers.image, buffers.output_of(work),
                                                {0, 1, 3, 4, 5, 31, 32, 33, 63, 64, 1000, 2047, 2048, 4315, 4319}, checked);
                }
                const double us = timer.median_us(work);
                std::printf("%-13s %-6s rows ahead %d, strips of %3d rows, blocks of %3d: %6.1f us, %.2fx the copy (%d registers, %zu B shared)",
                            c.row_sums ? "box 9x9" : "columns only", c.ring ? "ring" : "global", c.ahead, strip_rows, block, us, us / copy_us,
                            attributes.numRegs, shared);
                if (c.row_sums) std::printf("; %ld of %ld interior bytes differ", differing, checked);
                std::printf("\n");
            }
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    g_profile = argc > 1 && std::string(argv[1]) == "profile";
    return klab::probes::run_probe(&run);
}
