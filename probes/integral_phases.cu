// Probe: the floors under integral.tile_gather's two kernels on 8K gray u64, each phase alone and
// both together, so that the variant's 95 us can be split into what its traffic costs and what its
// structure adds.
//
// Each kernel below does only the memory traffic of a phase of the variant, in its pattern (tiles
// of 256 pixels x 256 rows, a block of 32x8 threads per tile, warp w its rows 32w ... 32w + 31, 8
// bytes a lane and row; kernels/integral_tiles.hpp's walk; at most 64 registers, 4 blocks per SM, as
// the variant's tuned shape) and nothing of its arithmetic but what keeps the loads alive:
//   - the tile sums' read: the image once, as the first kernel reads it (8 rows in flight, L2
//     evict_last), against the same bytes read in address order, and against the first kernel's
//     real loop (sum_rows_and_columns: the row and column sums, no prefix, no barrier, no stores);
//   - the output: the 265 MB table written in the tile pattern (2 KB a warp and row, 512 bytes a
//     store instruction, streaming), alone and with each row of the image read again first (2 rows
//     in flight, evict_first), as the second kernel does; with more rows in flight, or an L2 prefetch
//     some rows ahead;
//   - both phases one after the other, as a run times them (L2 flushed before the first only), and
//     the same in 2 to 4 bands of tile rows, each band summed and then written before the next.
// Every run is timed by CUDA events after a 200 MB memset that flushes L2 (autotune::measure, as
// klab-bench times a row), the median of at least 15.
//
// Measured on an NVIDIA H200 (2026-11-29, bash scripts/gpu-probe.sh integral_phases; the variant's
// row was 95.1 us in the committed run of the same day, its copy floor 70.5 us here):
//   the tile sums' read: address order 11.8 us, the tile pattern 11.3 us (8 or 4 rows in flight),
//     the first kernel's loop 12.0 us. Nsight Compute timed the variant's first kernel at 12.4 to
//     12.7 us: no slower than a plain read of the same 33 MB in address order right after the
//     flush (2.8 TB/s, where the copy moves 4.2; not analysed further).
//   the output: the table alone 64.1 us; with the image read again from DRAM 81.8 us, 79.5 with 4
//     rows in flight, 79.6 to 81.5 with an L2 prefetch 4, 8 or 16 rows ahead. Read among the
//     writes, the image's 33 MB cost 15 to 18 us, more than the 11.8 us they take alone.
//   both phases: 87.8 us with the second read (86.8 with the prefetch 8 rows ahead), 74.9 us
//     without it; in 2, 3 or 4 bands 92.6, 102.4 and 102.6 us (a band's tiles fill a fraction of
//     the SMs, and each band adds a phase boundary).
// What that says about the variant: its traffic in its pattern takes 87.8 us, 1.25x the copy
// floor, of which the second read costs about 13 us (the L2 keeps less than half of the image
// between the two kernels: Nsight read 19.4 MB from DRAM in the second, its sums included). The
// rest of the 95.1 us, about 7 us, is the variant's own work: the gather before the first write,
// the scans and the staged stores. Its 1.3x target (91.6 us at this floor) needs half of that
// 7 us gone, or no second read.
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include <cuda_runtime.h>

#include "autotune/timing.hpp"
#include "harness/cuda_check.hpp"
#include "harness/image.hpp"
#include "kernels/integral_tiles.hpp"
#include "probes/probe_main.hpp"

namespace {

using klab::ImageView;
using klab::integral_tiles::L2Hint;
using klab::integral_tiles::LaneRow;

constexpr int kWidth = 7680, kHeight = 4320;
constexpr int kTileWidth = 256, kWarps = 8, kTileHeight = 32 * kWarps;
constexpr int kTilesX = kWidth / kTileWidth, kTilesY = (kHeight + kTileHeight - 1) / kTileHeight;  // 30 x 17
constexpr std::size_t kImageBytes = static_cast<std::size_t>(kWidth) * kHeight;
constexpr std::size_t kTablePitch = static_cast<std::size_t>(kWidth) * 8, kTableBytes = kTablePitch * kHeight;
constexpr unsigned kNever = 0x9e3779b9u;  // a sink value the loads never produce (the stores stay unexecuted)

struct Tile {
    int y0, x0;  // the warp's first row, the lane's first pixel
    __device__ explicit Tile(int first_tile = 0) {
        const int tile = first_tile + static_cast<int>(blockIdx.x);
        const int tile_x = tile % kTilesX, tile_y = tile / kTilesX;
        y0 = tile_y * kTileHeight + static_cast<int>(threadIdx.y) * 32;
        x0 = tile_x * kTileWidth + static_cast<int>(threadIdx.x) * 8;
    }
};

__global__ void read_address_order(const uint4* in, std::size_t chunks, unsigned* sink) {
    unsigned acc = 0;
    const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < chunks; i += step) {
        const uint4 v = __ldg(in + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == kNever) sink[0] = acc;
}

// The variant's blocks: 32x8 threads, at most 64 registers (4 blocks, half the SM's warps).
constexpr int kThreads = 32 * kWarps, kBlocksPerSm = 4;

template <int Group, L2Hint Hint>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) read_tiles(ImageView<const std::uint8_t> in, unsigned* sink) {
    const Tile t;
    unsigned acc = 0;
    klab::integral_tiles::for_each_row<1, Group, Hint>(in, 0, t.y0, t.x0, [&](int, const LaneRow<1>& row) { acc ^= row.w[0] ^ row.w[1]; });
    if (acc == kNever) sink[0] = acc;
}

__global__ void __launch_bounds__(kThreads, kBlocksPerSm) sum_tiles(ImageView<const std::uint8_t> in, unsigned* sink, int first_tile = 0) {
    const Tile t(first_tile);
    std::uint32_t row_sum[1];
    std::uint32_t column_sum[8];
    klab::integral_tiles::sum_rows_and_columns<1, 8, L2Hint::keep>(in, 0, t.y0, t.x0, static_cast<int>(threadIdx.x), row_sum, column_sum);
    unsigned acc = row_sum[0];
    for (int j = 0; j < 8; ++j) acc ^= column_sum[j] << j;
    if (acc == kNever) sink[0] = acc;
}

// The warp's 32 rows of the table, 2 KB each: store k of a row writes chunks 32k ... 32k + 31 of
// it (lane l chunk 32k + l). WithRows: each row of the image is read again first (its 8 bytes a lane
// go into the stored values).
// Ahead > 0: lane 0 also prefetches the image row Ahead rows further into L2 (one bulk prefetch of
// its 256 bytes per row; no register holds it).
template <bool WithRows, int Group = 2, int Ahead = 0>
__global__ void __launch_bounds__(kThreads, kBlocksPerSm) write_tiles(ImageView<const std::uint8_t> in, unsigned char* table, int first_tile = 0) {
    const Tile t(first_tile);
    const int lane = static_cast<int>(threadIdx.x);
    const auto prefetch = [&](int y) {
        if (Ahead > 0 && lane == 0 && y < kHeight) {
            const std::uint8_t* p = in.row(y) + t.x0;
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], 256;" ::"l"(p) : "memory");
        }
    };
    if constexpr (Ahead > 0) {
        for (int r = 0; r < Ahead; ++r) prefetch(t.y0 + r);
    }
    unsigned char* warp_first = table + static_cast<std::size_t>(t.x0 - 8 * lane) * 8;
    const auto write_row = [&](int r, std::uint32_t a, std::uint32_t b) {
        const int y = t.y0 + r;
        if (y >= kHeight) return;
        uint4* row = reinterpret_cast<uint4*>(warp_first + static_cast<std::size_t>(y) * kTablePitch);
#pragma unroll
        for (int k = 0; k < 4; ++k) __stcs(row + 32 * k + lane, make_uint4(a, b, static_cast<unsigned>(r), static_cast<unsigned>(k)));
    };
    if constexpr (WithRows) {
        klab::integral_tiles::for_each_row<1, Group, L2Hint::last_use>(in, 0, t.y0, t.x0, [&](int r, const LaneRow<1>& row) {
            if (Ahead > 0 && r + Ahead < 32) prefetch(t.y0 + r + Ahead);
            write_row(r, row.w[0], row.w[1]);
        });
    } else {
        for (int r = 0; r < 32; ++r) write_row(r, static_cast<std::uint32_t>(t.y0), static_cast<std::uint32_t>(lane));
    }
}

int run() {
    using namespace klab;
    std::uint8_t* image = nullptr;
    unsigned char* table = nullptr;
    unsigned* sink = nullptr;
    KLAB_CUDA_CHECK(cudaMalloc(&image, kImageBytes));
    KLAB_CUDA_CHECK(cudaMalloc(&table, kTableBytes));
    KLAB_CUDA_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
    KLAB_CUDA_CHECK(cudaMemset(image, 0x5a, kImageBytes));
    const ImageView<const std::uint8_t> in(image, ImageShape{kWidth, kHeight, 1, Layout::aos}, kWidth);
    const dim3 tiles(kTilesX * kTilesY), block(32, kWarps);

    autotune::L2Flusher flusher;
    autotune::TimingOptions options;
    options.min_samples = 15;
    const auto report = [&](const char* what, double bytes, const autotune::Work& work) {
        const double us = autotune::measure(work, flusher, nullptr, options).us.median;
        std::printf("%-68s %6.1f us  %.2f TB/s\n", what, us, bytes / us / 1e6);
    };
    const auto check = [](cudaStream_t s) { KLAB_CUDA_CHECK_LAUNCH(s); };
    // The phases as launches: the first kernel's loop, and the table (written_by: a write_tiles
    // instance) over the same tiles.
    const auto sums = [&](cudaStream_t s, int first = 0, int count = kTilesX * kTilesY) {
        sum_tiles<<<count, block, 0, s>>>(in, sink, first);
        check(s);
    };
    using TableKernel = void (*)(ImageView<const std::uint8_t>, unsigned char*, int);
    const auto table_of = [&](cudaStream_t s, TableKernel written_by, int first = 0, int count = kTilesX * kTilesY) {
        written_by<<<count, block, 0, s>>>(in, table, first);
        check(s);
    };
    const double image_bytes = static_cast<double>(kImageBytes), table_bytes = static_cast<double>(kTableBytes);
    std::printf("8K gray (%zu bytes) -> u64 table (%zu bytes), tiles %d x %d of 256 px x 256 rows\n", kImageBytes, kTableBytes, kTilesX, kTilesY);

    std::printf("the tile sums' read:\n");
    report("  address order, 132 x 8 blocks of 256 threads, 16 bytes a lane", image_bytes, [&](cudaStream_t s) {
        read_address_order<<<132 * 8, 256, 0, s>>>(reinterpret_cast<const uint4*>(image), kImageBytes / 16, sink);
        check(s);
    });
    report("  tile pattern, 8 rows in flight, evict_last (the first kernel's loads)", image_bytes, [&](cudaStream_t s) {
        read_tiles<8, L2Hint::keep><<<tiles, block, 0, s>>>(in, sink);
        check(s);
    });
    report("  tile pattern, 4 rows in flight, evict_last", image_bytes, [&](cudaStream_t s) {
        read_tiles<4, L2Hint::keep><<<tiles, block, 0, s>>>(in, sink);
        check(s);
    });
    report("  the first kernel's loop (sum_rows_and_columns), no prefix or stores", image_bytes, [&](cudaStream_t s) { sums(s); });

    const double both_bytes = table_bytes + image_bytes;
    std::printf("the output:\n");
    report("  the table in the tile pattern, nothing read", table_bytes, [&](cudaStream_t s) { table_of(s, write_tiles<false>); });
    report("  the table, each image row read first (from DRAM: L2 flushed)", both_bytes, [&](cudaStream_t s) { table_of(s, write_tiles<true>); });
    report("  the same, 4 rows in flight", both_bytes, [&](cudaStream_t s) { table_of(s, write_tiles<true, 4>); });
    report("  the same, 2 rows in flight and an L2 prefetch 4 rows ahead", both_bytes, [&](cudaStream_t s) { table_of(s, write_tiles<true, 2, 4>); });
    report("  the same, 2 rows in flight and an L2 prefetch 8 rows ahead", both_bytes, [&](cudaStream_t s) { table_of(s, write_tiles<true, 2, 8>); });
    report("  the same, 2 rows in flight and an L2 prefetch 16 rows ahead", both_bytes, [&](cudaStream_t s) { table_of(s, write_tiles<true, 2, 16>); });

    std::printf("both phases, one after the other (L2 flushed before the first):\n");
    report("  the first kernel's loop, then the table with each image row read again", both_bytes, [&](cudaStream_t s) {
        sums(s);
        table_of(s, write_tiles<true>);
    });
    report("  the same, the second read with an L2 prefetch 8 rows ahead", both_bytes, [&](cudaStream_t s) {
        sums(s);
        table_of(s, write_tiles<true, 2, 8>);
    });
    // Bands of tile rows, each summed and then written before the next is read: each band's second
    // read finds more of it in L2.
    for (int bands : {2, 3, 4}) {
        char what[96];
        std::snprintf(what, sizeof what, "  the same in %d bands of tile rows (sums, table; sums, table; ...)", bands);
        report(what, both_bytes, [&](cudaStream_t s) {
            for (int b = 0; b < bands; ++b) {
                const int first = kTilesY * b / bands * kTilesX, end = kTilesY * (b + 1) / bands * kTilesX;
                sums(s, first, end - first);
                table_of(s, write_tiles<true>, first, end - first);
            }
        });
    }
    report("  the first kernel's loop, then the table alone (no second read)", both_bytes, [&](cudaStream_t s) {
        sums(s);
        table_of(s, write_tiles<false>);
    });
    // The copy floor of klab-bench's row: a copy of half the bytes that the row reads and writes.
    constexpr std::size_t kCopyBytes = (kTableBytes + kImageBytes) / 2;
    unsigned char *copy_from = nullptr, *copy_to = nullptr;
    KLAB_CUDA_CHECK(cudaMalloc(&copy_from, kCopyBytes));
    KLAB_CUDA_CHECK(cudaMalloc(&copy_to, kCopyBytes));
    report("device-to-device copy of (table + image) / 2 bytes: the row's copy floor", both_bytes, [&](cudaStream_t s) {
        KLAB_CUDA_CHECK(cudaMemcpyAsync(copy_to, copy_from, kCopyBytes, cudaMemcpyDeviceToDevice, s));
    });
    KLAB_CUDA_CHECK(cudaFree(copy_to));
    KLAB_CUDA_CHECK(cudaFree(copy_from));
    KLAB_CUDA_CHECK(cudaFree(sink));
    KLAB_CUDA_CHECK(cudaFree(table));
    KLAB_CUDA_CHECK(cudaFree(image));
    return 0;
}

}  // namespace

int main() { return klab::probes::run_probe(&run); }
