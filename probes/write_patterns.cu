// Probe: how long the H200 takes to write an 8K u64 summed-area table's 265 MB with nothing else to
// do, in integral.tile_gather's tile pattern and in others — the floor under that variant's output
// kernel, and whether its write pattern costs anything.
//
// Every kernel writes each 16-byte chunk of the table once with streaming stores (__stcs, as the
// variant does); a warp writes 512 contiguous bytes per store instruction.
// Measured on an NVIDIA H200 by this probe's first version (2026-11-25; each run timed by CUDA events
// after a 200 MB memset that flushes L2, the median of 15 after 5 warm-up runs): cudaMemsetAsync 61.5 us
// (4.32 TB/s); address order 66.0 us (132 x 8 blocks of 256) and 67.0 us (132 x 4 of 512); tiles
// of 256 pixels x 256 rows (the variant's 32x8 tiles, 2 KB a row) 68.4 us, x 128 rows 68.0 us;
// 512 x 128 67.4 us; 960 x 64 72.2 us; full rows 71.9 us. The tile pattern costs about 2 us over
// address order; integral.tile_gather's output kernel takes about 86 us.
#include <cstdint>
#include <cstdio>

#include <cuda_runtime.h>

#include "autotune/timing.hpp"
#include "harness/cuda_check.hpp"
#include "probes/probe_main.hpp"

namespace {

constexpr int kWidth = 7680, kHeight = 4320;
constexpr std::size_t kPitch = static_cast<std::size_t>(kWidth) * 8, kBytes = kPitch * kHeight;

// Every 16-byte chunk in address order, grid-stride.
__global__ void address_order(uint4* out, std::size_t chunks) {
    const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < chunks; i += step) {
        __stcs(out + i, make_uint4(static_cast<unsigned>(i), 1u, 2u, 3u));
    }
}

// Tiles of TilePixels x (RowsPerWarp x warps) rows in row-major tile order, one block each; warp w
// writes its RowsPerWarp rows of the tile one after another, a row as TilePixels * 8 / 512 stores
// of 512 contiguous bytes (lane l: chunk 32 k + l).
template <int TilePixels, int RowsPerWarp>
__global__ void tiles(unsigned char* out) {
    static_assert(TilePixels * 8 % 512 == 0 && kWidth % TilePixels == 0, "whole 512-byte stores, whole tiles");
    const int lane = static_cast<int>(threadIdx.x), warp = static_cast<int>(threadIdx.y);
    const int tile_x = static_cast<int>(blockIdx.x) % (kWidth / TilePixels), tile_y = static_cast<int>(blockIdx.x) / (kWidth / TilePixels);
    const int y0 = (tile_y * static_cast<int>(blockDim.y) + warp) * RowsPerWarp;
    for (int r = 0; r < RowsPerWarp && y0 + r < kHeight; ++r) {
        uint4* row = reinterpret_cast<uint4*>(out + static_cast<std::size_t>(y0 + r) * kPitch + static_cast<std::size_t>(tile_x) * TilePixels * 8);
#pragma unroll
        for (int k = 0; k < TilePixels * 8 / 512; ++k) __stcs(row + k * 32 + lane, make_uint4(static_cast<unsigned>(y0), static_cast<unsigned>(r), static_cast<unsigned>(k), static_cast<unsigned>(lane)));
    }
}

template <int TilePixels, int RowsPerWarp>
void launch_tiles(unsigned char* out, int warps, cudaStream_t stream) {
    const int tile_rows = RowsPerWarp * warps;
    const int blocks = kWidth / TilePixels * ((kHeight + tile_rows - 1) / tile_rows);
    tiles<TilePixels, RowsPerWarp><<<blocks, dim3(32, static_cast<unsigned>(warps)), 0, stream>>>(out);
    KLAB_CUDA_CHECK_LAUNCH(stream);
}

int run() {
    using namespace klab;
    unsigned char* out = nullptr;
    KLAB_CUDA_CHECK(cudaMalloc(&out, kBytes));
    autotune::L2Flusher flusher;
    autotune::TimingOptions options;
    options.min_samples = 15;
    const auto report = [&](const char* what, const autotune::Work& work) {
        const double us = autotune::measure(work, flusher, nullptr, options).us.median;
        std::printf("%-52s %6.1f us  %.2f TB/s\n", what, us, static_cast<double>(kBytes) / us / 1e6);
    };
    std::printf("writing %zu bytes (7680 x 4320 u64)\n", kBytes);
    report("cudaMemsetAsync", [&](cudaStream_t s) { KLAB_CUDA_CHECK(cudaMemsetAsync(out, 7, kBytes, s)); });
    report("address order, 132 x 8 blocks of 256 threads", [&](cudaStream_t s) {
        address_order<<<132 * 8, 256, 0, s>>>(reinterpret_cast<uint4*>(out), kBytes / 16);
        KLAB_CUDA_CHECK_LAUNCH(s);
    });
    report("address order, 132 x 4 blocks of 512 threads", [&](cudaStream_t s) {
        address_order<<<132 * 4, 512, 0, s>>>(reinterpret_cast<uint4*>(out), kBytes / 16);
        KLAB_CUDA_CHECK_LAUNCH(s);
    });
    report("tiles of 256 px x 256 rows (32x8), 2 KB a row", [&](cudaStream_t s) { launch_tiles<256, 32>(out, 8, s); });
    report("tiles of 256 px x 128 rows (32x4), 2 KB a row", [&](cudaStream_t s) { launch_tiles<256, 32>(out, 4, s); });
    report("tiles of 512 px x 128 rows (32x8, 16 rows a warp)", [&](cudaStream_t s) { launch_tiles<512, 16>(out, 8, s); });
    report("tiles of 960 px x 64 rows (32x8, 8 rows a warp)", [&](cudaStream_t s) { launch_tiles<960, 8>(out, 8, s); });
    report("full rows, 8 a block (32x8)", [&](cudaStream_t s) { launch_tiles<7680, 1>(out, 8, s); });
    KLAB_CUDA_CHECK(cudaFree(out));
    return 0;
}

}  // namespace

int main() { return klab::probes::run_probe(&run); }
