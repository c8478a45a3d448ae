// conv.box_sliding_sums — box filter of any odd size by two exact integer sliding sums, one pass.
//
// Technique: a box mask has one coefficient m, so out = round(m * S) with S the integer sum of the
// pixels under the box, and S separates into column sums V (the box's height) summed along the row
// (its width). A block owns a tile of a stored row (tile_bytes output bytes: what the block's span of
// 8 bytes per thread holds besides the box's halo) and walks down a strip of `rows` rows (tuned), G
// rows (`group`, tuned) at a time, in two passes that meet in shared memory:
//   column pass: each thread keeps V for 8 columns of the tile and its halo in registers, two to a
//           32-bit word (16-bit lanes: V <= 31 * 255 < 2^16, and V + new - old never borrows
//           because V holds old), and slides it down one row at a time: one 8-byte load of the
//           entering row, one of the leaving row (read 2 * ry + 1 rows earlier: an L1 or L2 hit),
//           eight byte permutes and four three-input adds per 8 columns (a thread and row). It
//           writes V of each of the G rows to shared memory.
//   row pass: each thread owns one of the G rows and a segment of the tile (an odd number of
//           4-pixel chunks, so that the segments' shared-memory reads fall in distinct banks) and
//           slides S along it, per channel: S += V(e + rx * E) - V(e - (rx + 1) * E), two
//           shared-memory reads and one add per output byte whatever the box's width; the segment's
//           first S costs 2 * rx + 1 reads per channel.
//   out:    round(S), four bytes to a word in a shared output tile, which the block then
//           writes to the image with 16-byte stores.
// The normalized box rounds with one multiply-high; other coefficients take the exact integer form
// of the reference's rounding (kernels/box_sums.hpp proves both exact).
// What it adds over conv.box_running_sums (the same column sums, but turned into row sums by a
// warp scan and two shared-memory reads at fixed offsets, each warp's rows one dependent chain,
// 100 registers, 26 instructions per output byte, 28% of issue slots busy on 8K box 9x9): the row
// sums slide along each thread's own segment, so a block's rows and segments are independent
// chains, the column pass needs no scan, and the registers are few (62 or 63, which allow 32 warps
// per SM; at group=16 shared memory, up to 48 KB per block, allows fewer).
// Borders: rows outside the image are mapped per row; a thread whose 8 columns reach outside the
// row, or whose rows are not 8-byte aligned, reads byte by byte from offsets the border rule gives
// once per group. Groups whose rows and box rows lie inside the image take, in threads with 8-byte
// loads, a copy of the column pass without row mapping, loads of 8 rows in flight. A strip's first
// 2 * ry + 1 rows (the sums before its first output) are loaded 4 rows at a time through the border
// rule (a second, unbordered copy of that loop spilled). The strips share the image's rows evenly,
// none left short.
// Preconditions: box masks only — every coefficient equal (any odd width and height up to 31, any
// value; others are refused with that reason). Every border, 1/3/4 channels, AoS or SoA (one grid
// layer per plane), any pitch, any size. The block is 32 x N threads (N = 2, 4 or 8 warps, tuned).
// Measured on an NVIDIA H200 (device run of 2026-11-25, scripts/gpu-experiment.sh: klab tune on the
// 8K RGB AoS replicate box classes, then klab-bench, L2 flushed, medians of 5; the tuner chose 32x4
// group=8 rows=32 for all three): box3 109.5 us (2.27x the 48.2 us copy floor), box9 121.5 us
// (2.52x; npp.box 1719 us), box31 187.6 us (3.89x; npp.box 16597 us), against 110.1 / 124.8 /
// 208.4 us in the same run before that day's two changes: a strip's first rows loaded 4 at a time
// (they were one dependent load after another: a fifth of the stall samples on box31), and a copy
// out that works out its destination and its store width once per group (27 -> 19 instructions
// per 16 bytes). Nsight Compute on box9 after them: 53 M warp instructions (17 per output byte: the
// row pass 5.3, the column pass 2.9, the rest the segments' first sums, the copy out and the
// strips' first rows), 47% of issue slots busy, 43% achieved occupancy (62 registers: 8 blocks of 4
// warps per SM), DRAM 27% of peak; stall samples: the column pass's loads 17%, the barrier after
// the column pass 17%, fixed-latency dependencies 17%. Still above the 1.3x target: each group
// waits at a barrier for its slowest warp's loads, and the issue slots are under half busy. Hiding
// those loads needs them in flight across the row pass: registers this occupancy does not have, or
// a ring of input rows in shared memory filled ahead, which costs more occupancy than it hides
// (measured, below).
// Tried and dropped: a copy of the strip's first sums with plain loads under a 4-block register
// bound (64): spills, box31 185 us, box9 129 us, box3 120 us (2026-11-24); strip heights in steps
// of 16 from 32 to 256 (so that a grid can fill whole waves of 8 blocks per SM): the tuner still
// chose 32 rows for box3 and box9, and box31 moved by under 1% (2026-11-25); a ring of input rows
// in shared memory (2026-11-26, scripts/gpu-experiment.sh, tuned on 8K RGB box9 and box31, medians
// of 5; its conformance cases passed): in strips away from the image's edges each thread copies
// its own 8 bytes of every row into its slots of the ring with 8-byte cp.async, one group ahead,
// and takes the entering and the leaving rows from there (no loads wait in the column pass):
// box9 143.9 us, box31 246.5 us against 122.6 and 189.1 us for this variant in the same run; two
// groups ahead 193.2 and 273.2 us. The ring (2 * ry + 1 rows and the group twice, 8 bytes a
// thread each: 25 KB for box9 at 32x4 group=8) and 110 registers (62 here) left the tuned shapes
// at 25% and 18.7% theoretical occupancy.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/box_sums.hpp"

namespace klab {
namespace {

using box_sums::box_support;
using box_sums::listed;
using box_sums::planes_of;
using box_sums::round_sum;
using box_sums::rounding_of;
using box_sums::Rounding;

constexpr int kWarp = 32;
constexpr int kColumnsPerThread = 8;  // the column pass's 8-byte loads
constexpr int kBatchRows = 8;         // the column pass issues the loads of 8 rows before it slides
constexpr int kFirstBatch = 4;        // a strip's first rows: the loads of 4 rows at a time
constexpr std::array<int, 3> kWarpsPerBlock = {2, 4, 8};
constexpr std::array<int, 2> kGroupRows = {8, 16};
constexpr std::array<int, 4> kStripRows = {32, 64, 128, 256};
constexpr std::size_t kMaxSharedBytes = 48 * 1024;  // without opting in to more per block
// u16 elements after each shared row of column sums: the row stride is an odd number of words, so
// that the rows of a warp's row pass fall in different banks.
constexpr int kSumsPad = 2;

// How a launch divides its tiles, the same for every block.
struct Tiling {
    int group_rows;     // G: rows of column sums in shared memory at a time
    int segments;       // lanes per row in the row pass: threads / G
    int segment_bytes;  // output bytes each lane of the row pass slides over: an odd number of 4-pixel chunks
    int tile_bytes;     // output bytes of a block's tile of a row: segments * segment_bytes
    int sums_stride;    // u16 elements per shared row of column sums: the span (8 per thread) + kSumsPad
    int out_stride;     // bytes per shared row of outputs: 16-byte rows, (out_stride / 4) % 32 == 16
    int copy_rows;      // output rows the block writes to the image at once: threads / (tile_bytes / 16)
    int strip_rows;     // output rows each block walks down
    int rx, ry;         // the box's radii
};

// The tiling of `threads` threads, `group_rows` rows at a time, for pixels of `stride` bytes; its
// segment_bytes is 0 when the span of 8 bytes per thread cannot hold the box's halo and one chunk
// per segment.
Tiling tiling_of(int stride, int rx, int ry, int threads, int group_rows, int strip_rows) {
    Tiling t{};
    t.group_rows = group_rows;
    t.segments = threads / group_rows;
    t.strip_rows = strip_rows;
    t.rx = rx;
    t.ry = ry;
    const int span = kColumnsPerThread * threads;
    const int chunk = 4 * stride;  // 4 pixels: whole output words
    // The span holds the tile, (rx + 1) pixels on its left (the first sum's trailing reads), rx on
    // its right, and up to 7 bytes of alignment of its start.
    const int room = span - (2 * rx + 1) * stride - 7;
    int chunks = room / (t.segments * chunk);
    if (chunks % 2 == 0) --chunks;
    if (chunks < 1) return t;
    t.segment_bytes = chunks * chunk;
    t.tile_bytes = t.segments * t.segment_bytes;
    t.sums_stride = span + kSumsPad;
    const int words = t.tile_bytes / 4;
    t.out_stride = 4 * (words + ((16 - words % 32) + 32) % 32);
    t.copy_rows = threads / (t.tile_bytes / 16);
    return t;
}

std::size_t shared_bytes(const Tiling& t) {
    return static_cast<std::size_t>(t.group_rows) * (static_cast<std::size_t>(t.sums_stride) * sizeof(std::uint16_t) + t.out_stride);
}

// ---------------------------------------------------------------------------------------------
// The column pass

// V += new - old, two bytes per 16-bit lane (word i holds bytes 2i and 2i+1).
__device__ __forceinline__ void slide_columns(std::uint32_t (&v)[4], uint2 add, uint2 remove) {
    v[0] = v[0] + __byte_perm(add.x, 0u, 0x4140u) - __byte_perm(remove.x, 0u, 0x4140u);
    v[1] = v[1] + __byte_perm(add.x, 0u, 0x4342u) - __byte_perm(remove.x, 0u, 0x4342u);
    v[2] = v[2] + __byte_perm(add.y, 0u, 0x4140u) - __byte_perm(remove.y, 0u, 0x4140u);
    v[3] = v[3] + __byte_perm(add.y, 0u, 0x4342u) - __byte_perm(remove.y, 0u, 0x4342u);
}

// Writes V, 4 u32 words of two sums, to this thread's words of a shared row of column sums.
__device__ __forceinline__ void store_sums(const std::uint32_t (&v)[4], std::uint32_t* row) {
    row[0] = v[0], row[1] = v[1], row[2] = v[2], row[3] = v[3];
}

// The inner form: every row the slides read lies inside the image and this thread's bytes inside
// the row, so plain 8-byte loads, those of 8 rows issued before the first slide.
__device__ __forceinline__ void inner_column_pass(const ImageView<const std::uint8_t>& in, int plane, int y, int rows, int ry, int e0,
                                                  std::uint32_t (&v)[4], std::uint32_t* sums, int sums_words) {
    const std::size_t pitch = in.pitch_bytes;
    const std::uint8_t* add_row = in.row(y + ry, plane) + e0;
    const std::uint8_t* remove_row = in.row(y - ry - 1, plane) + e0;
    int j = 0;
    for (; j + kBatchRows <= rows; j += kBatchRows) {
        uint2 add[kBatchRows], remove[kBatchRows];
#pragma unroll
        for (int k = 0; k < kBatchRows; ++k) {
            add[k] = __ldg(reinterpret_cast<const uint2*>(add_row + k * pitch));
            remove[k] = __ldg(reinterpret_cast<const uint2*>(remove_row + k * pitch));
        }
#pragma unroll
        for (int k = 0; k < kBatchRows; ++k) {
            slide_columns(v, add[k], remove[k]);
            store_sums(v, sums + (j + k) * sums_words);
        }
        add_row += kBatchRows * pitch;
        remove_row += kBatchRows * pitch;
    }
    for (; j < rows; ++j, add_row += pitch, remove_row += pitch) {  // the strip's last rows, fewer than 8
        slide_columns(v, __ldg(reinterpret_cast<const uint2*>(add_row)), __ldg(reinterpret_cast<const uint2*>(remove_row)));
        store_sums(v, sums + j * sums_words);
    }
}

// Where each of a thread's 8 columns comes from in a stored row: its byte offset, or -1 for the
// constant border's value. The border rule per byte, worked out once per group of rows.
struct ColumnSources {
    int offset[kColumnsPerThread];
};

template <int E>
__device__ __forceinline__ ColumnSources column_sources(int width, int e0, BorderMode mode) {
    ColumnSources sources;
#pragma unroll
    for (int b = 0; b < kColumnsPerThread; ++b) {
        const int e = e0 + b;
        const int x = e >= 0 ? e / E : -((-e + E - 1) / E);  // floor(e / E)
        const int sx = border_index(x, width, mode);
        sources.offset[b] = sx < 0 ? -1 : sx * E + (e - x * E);
    }
    return sources;
}

// 8 bytes of stored row y with the border rule for rows and, through `sources` (unless `vector`:
// the thread's bytes lie inside the row and the rows are 8-byte aligned), for columns.
__device__ __forceinline__ uint2 bordered_columns(const ImageView<const std::uint8_t>& in, int plane, int y, int e0, bool vector,
                                                  const ColumnSources& sources, Border border) {
    const int sy = border_index(y, in.shape.height, border.mode);
    if (sy < 0) {
        const std::uint32_t word = border.value * 0x01010101u;
        return make_uint2(word, word);
    }
    const std::uint8_t* row = in.row(sy, plane);
    if (vector) return __ldg(reinterpret_cast<const uint2*>(row + e0));
    std::uint32_t bytes[kColumnsPerThread];
#pragma unroll
    for (int b = 0; b < kColumnsPerThread; ++b) bytes[b] = sources.offset[b] < 0 ? border.value : __ldg(row + sources.offset[b]);
    return make_uint2(__byte_perm(__byte_perm(bytes[0], bytes[1], 0x0040u), __byte_perm(bytes[2], bytes[3], 0x0040u), 0x5410u),
                      __byte_perm(__byte_perm(bytes[4], bytes[5], 0x0040u), __byte_perm(bytes[6], bytes[7], 0x0040u), 0x5410u));
}

// The bordered form: groups whose box rows reach past the image's top or bottom, and threads at
// the row's ends or on rows not aligned for 8-byte loads. A row at a time.
template <int E>
__device__ __forceinline__ void bordered_column_pass(const ImageView<const std::uint8_t>& in, int plane, int y, int rows, int ry, int e0,
                                                  bool vector, Border border, std::uint32_t (&v)[4], std::uint32_t* sums,
                                                  int sums_words) {
    const ColumnSources sources = column_sources<E>(in.shape.width, e0, border.mode);
    for (int j = 0; j < rows; ++j) {
        slide_columns(v, bordered_columns(in, plane, y + j + ry, e0, vector, sources, border),
                      bordered_columns(in, plane, y + j - ry - 1, e0, vector, sources, border));
        store_sums(v, sums + j * sums_words);
    }
}

// ---------------------------------------------------------------------------------------------
// The row pass

// Slides S along `chunks` chunks of 4 pixels of one shared row: `sums` points at the column sum of
// the segment's first byte, `out` at its first output word.
template <int E, bool Normalized>
__device__ __forceinline__ void row_pass(const std::uint16_t* sums, std::uint32_t* out, int chunks, int rx,
                                         const Rounding& rounding) {
    const std::uint16_t* lead = sums + rx * E;          // the column entering the box
    const std::uint16_t* trail = sums - (rx + 1) * E;   // the column leaving it
    // S of the byte before each channel's first: columns -(rx + 1) ... rx - 1 of the channel. The
    // normalized box's S carries the rounding's half from here on.
    std::uint32_t s[E];
#pragma unroll
    for (int c = 0; c < E; ++c) s[c] = Normalized ? rounding.half : 0u;
    for (int i = 0; i < 2 * rx + 1; ++i) {
#pragma unroll
        for (int c = 0; c < E; ++c) s[c] += trail[i * E + c];
    }
    for (int chunk = 0; chunk < chunks; ++chunk) {
        std::uint32_t bytes[4 * E];
#pragma unroll
        for (int b = 0; b < 4 * E; ++b) {
            s[b % E] += static_cast<std::uint32_t>(lead[b]) - static_cast<std::uint32_t>(trail[b]);
            bytes[b] = Normalized ? __umulhi(s[b % E], rounding.inverse) : round_sum<false>(s[b % E], rounding);
        }
#pragma unroll
        for (int w = 0; w < E; ++w) {
            out[w] = __byte_perm(__byte_perm(bytes[4 * w], bytes[4 * w + 1], 0x0040u),
                                 __byte_perm(bytes[4 * w + 2], bytes[4 * w + 3], 0x0040u), 0x5410u);
        }
        out += E;
        lead += 4 * E;
        trail += 4 * E;
    }
}

// ---------------------------------------------------------------------------------------------
// The kernel

template <int E, bool Normalized>
__device__ __forceinline__ void box_tile(const ImageView<const std::uint8_t>& in, const ImageView<std::uint8_t>& out,
                                         Border border, const Rounding& rounding, const Tiling& t) {
    extern __shared__ uint4 shared[];
    const int tid = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
    const int plane = static_cast<int>(blockIdx.z);
    const int row_bytes = in.shape.width * E;
    const int height = in.shape.height;
    const int x0 = static_cast<int>(blockIdx.x) * t.tile_bytes;  // the tile's first output byte
    const int xs = (x0 - (t.rx + 1) * E) & ~7;                   // the span's first byte, 8-byte aligned
    const int y_begin = static_cast<int>(blockIdx.y) * t.strip_rows;
    const int y_end = min(y_begin + t.strip_rows, height);
    const int G = t.group_rows;

    std::uint16_t* const sums = reinterpret_cast<std::uint16_t*>(shared);                       // G x sums_stride
    std::uint8_t* const outs = reinterpret_cast<std::uint8_t*>(sums + G * t.sums_stride);        // G x out_stride
    const int sums_words = t.sums_stride / 2;

    // The column pass: this thread's 8 columns of the span.
    const int e0 = xs + kColumnsPerThread * tid;
    const bool aligned = ((reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % 8) == 0;  // SoA planes: height * pitch apart
    const bool vector = aligned && e0 >= 0 && e0 + kColumnsPerThread <= row_bytes;
    std::uint32_t* const my_sums = reinterpret_cast<std::uint32_t*>(sums) + kColumnsPerThread / 2 * tid;
    // V of the row before the strip's first: rows y_begin - ry - 1 ... y_begin + ry - 1.
    std::uint32_t v[4] = {0u, 0u, 0u, 0u};
    {
        const ColumnSources sources = column_sources<E>(in.shape.width, e0, border.mode);
        for (int y = y_begin - t.ry - 1; y < y_begin + t.ry; y += kFirstBatch) {
            uint2 add[kFirstBatch];
#pragma unroll
            for (int k = 0; k < kFirstBatch; ++k) {
                add[k] = y + k < y_begin + t.ry ? bordered_columns(in, plane, y + k, e0, vector, sources, border) : make_uint2(0u, 0u);
            }
#pragma unroll
            for (int k = 0; k < kFirstBatch; ++k) slide_columns(v, add[k], make_uint2(0u, 0u));
        }
    }

    // The row pass: row g of the group, segment q of the tile.
    const int g = tid / t.segments, q = tid - g * t.segments;
    const int chunks = t.segment_bytes / (4 * E);
    const std::uint16_t* const row_sums = sums + g * t.sums_stride + (x0 + q * t.segment_bytes - xs);
    std::uint32_t* const row_out = reinterpret_cast<std::uint32_t*>(outs + g * t.out_stride + q * t.segment_bytes);

    // The copy to the image: row copy_g (+ copy_rows ...) of the group, 16 bytes at copy_x; whether
    // this thread's 16 bytes go out in one store is the same for every row.
    const int quads = t.tile_bytes / 16;
    const int copy_g = tid / quads, copy_x = (tid - copy_g * quads) * 16;
    const int out_x = x0 + copy_x;
    const bool copies = copy_g < t.copy_rows && out_x < row_bytes;
    const bool out_vector = ((reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % 16) == 0 && out_x + 16 <= row_bytes;
    const std::size_t copy_step = static_cast<std::size_t>(t.copy_rows) * out.pitch_bytes;
    const std::uint8_t* const copy_src = outs + copy_g * t.out_stride + copy_x;
    const int copy_src_step = t.copy_rows * t.out_stride;

    for (int y = y_begin; y < y_end; y += G) {
        const int rows = min(G, y_end - y);
        if (y - t.ry - 1 >= 0 && y + rows - 1 + t.ry < height && vector) {
            inner_column_pass(in, plane, y, rows, t.ry, e0, v, my_sums, sums_words);
        } else {
            bordered_column_pass<E>(in, plane, y, rows, t.ry, e0, vector, border, v, my_sums, sums_words);
        }
        __syncthreads();  // the group's column sums are in shared memory; the last group's copy is done
        if (g < rows) row_pass<E, Normalized>(row_sums, row_out, chunks, t.rx, rounding);
        __syncthreads();  // the group's outputs are in shared memory
        if (copies && copy_g < rows) {
            std::uint8_t* dst = out.row(y + copy_g, plane) + out_x;
            const std::uint8_t* src = copy_src;
            for (int r = copy_g; r < rows; r += t.copy_rows, dst += copy_step, src += copy_src_step) {
                const uint4 value = *reinterpret_cast<const uint4*>(src);
                if (out_vector) {
                    __stcs(reinterpret_cast<uint4*>(dst), value);  // streaming (evict-first): not read again
                } else {
                    for (int b = 0; b < 16 && out_x + b < row_bytes; ++b) {
                        const std::uint32_t word = b < 8 ? (b < 4 ? value.x : value.y) : (b < 12 ? value.z : value.w);
                        dst[b] = static_cast<std::uint8_t>(word >> (8 * (b % 4)));
                    }
                }
            }
        }
        // No barrier here: the next column pass writes the sums, not the outputs, and the barrier
        // after it keeps the next row pass from overwriting outputs this copy still reads.
    }
}

// The normalized box's rounding (one multiply-high) and any other coefficient's each get their own
// copy of the loops, so that the choice costs nothing per output.
template <int E>
__global__ void __launch_bounds__(kWarp * 8)
    conv_box_sliding_sums_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Border border, Rounding rounding,
                                 Tiling tiling) {
    if (rounding.normalized) {
        box_tile<E, true>(in, out, border, rounding, tiling);
    } else {
        box_tile<E, false>(in, out, border, rounding, tiling);
    }
}

// ---------------------------------------------------------------------------------------------
// The variant

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, Border, Rounding, Tiling);

Kernel kernel_for(const Problem& problem) {
    return by_channels<Kernel>(rows::element_stride(problem.shape), &conv_box_sliding_sums_kernel<1>, &conv_box_sliding_sums_kernel<3>,
                               &conv_box_sliding_sums_kernel<4>);
}

Tiling tiling_of(const Problem& problem, const LaunchShape& shape) {
    // The strips share the image's rows evenly: at most `rows` each, none left short.
    const int rows = shape.parameter("rows"), height = problem.shape.height;
    const int strips = (height + rows - 1) / rows;
    return tiling_of(rows::element_stride(problem.shape), problem.mask->radius_x(), problem.mask->radius_y(), shape.block_x * shape.block_y,
                     shape.parameter("group"), (height + strips - 1) / strips);
}

class ConvBoxSlidingSums final : public Variant {
public:
    std::string name() const override { return "conv.box_sliding_sums"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "box filter by exact integer sliding sums: column sums slide down in registers, row sums slide along shared memory";
    }
    Support supports(const Problem& problem) const override { return box_support(problem); }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x = {kWarp};
        space.block_y = std::vector<int>(kWarpsPerBlock.begin(), kWarpsPerBlock.end());
        space.parameters = {
            {"group", std::vector<int>(kGroupRows.begin(), kGroupRows.end()), "rows of column sums in shared memory at a time"},
            {"rows", std::vector<int>(kStripRows.begin(), kStripRows.end()), "output rows each block walks down, at most (the strips share the rows evenly)"}};
        space.default_shape = LaunchShape{kWarp, 4, {{"group", 16}, {"rows", 64}}};
        return space;
    }
    // 32x4 blocks, 16 rows at a time (8 where 16 take more than 48 KB of shared memory: 1-byte
    // elements and boxes up to 25 wide), and the tallest strips that still give every SM of a 132-SM
    // GPU 4 blocks (what 48 KB of shared memory per block allows): 128 rows at 8K RGB AoS (27 tiles
    // x 34 strips); 32 on small images.
    LaunchShape default_shape(const Problem& problem) const override {
        LaunchShape shape = tuning_space().default_shape;
        int group = 16;
        if (!check_shape(problem, shape)) group = 8;  // 1-byte elements, boxes up to 25 wide: over 48 KB
        shape.parameters = {{"group", group}, {"rows", kStripRows.front()}};
        const Tiling t = tiling_of(problem, shape);
        const long long tiles = static_cast<long long>(grid_side(problem.shape.width * rows::element_stride(problem.shape), std::max(t.tile_bytes, 1))) *
                                planes_of(problem.shape);
        int rows = kStripRows.front();
        for (int candidate : kStripRows) {
            if (tiles * grid_side(problem.shape.height, candidate) >= 132 * 4) rows = candidate;
        }
        shape.parameters = {{"group", group}, {"rows", rows}};
        return shape;
    }
    Support check_shape(const Problem& problem, const LaunchShape& shape) const override {
        if (shape.block_x != kWarp || !listed(kWarpsPerBlock, shape.block_y)) {
            return Support::no(fmt::format("block {}x{}: the block is 32xN with N = 2, 4 or 8 warps", shape.block_x, shape.block_y));
        }
        const int group = shape.parameter("group"), rows = shape.parameter("rows");
        if (!listed(kGroupRows, group)) return Support::no(fmt::format("group={}: 8 or 16 rows at a time", group));
        if (!listed(kStripRows, rows)) return Support::no(fmt::format("rows={}: a block walks 32, 64, 128 or 256 rows", rows));
        const int threads = shape.block_x * shape.block_y;
        if (threads / group < 4) {
            return Support::no(fmt::format("group={} with {} threads: the row pass needs at least 4 threads per row", group, threads));
        }
        const Tiling t = tiling_of(problem, shape);
        if (t.segment_bytes == 0) {
            return Support::no(fmt::format("{} threads hold {} columns: too few for a {}-pixel halo and one 4-pixel chunk per segment",
                                           threads, kColumnsPerThread * threads, 2 * problem.mask->radius_x() + 1));
        }
        if (shared_bytes(t) > kMaxSharedBytes) {
            return Support::no(fmt::format("{} threads x group={}: {} bytes of shared memory, more than {}", threads, group,
                                           shared_bytes(t), kMaxSharedBytes));
        }
        return Support::yes();
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Tiling t = tiling_of(problem, shape);
        const dim3 grid(grid_side(problem.shape.width * rows::element_stride(problem.shape), t.tile_bytes), grid_side(problem.shape.height, t.strip_rows),
                        planes_of(problem.shape));
        return {make_launch(kernel_for(problem), "conv_box_sliding_sums_kernel", grid, block_of(shape), shared_bytes(t))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), plan.problem.border, rounding_of(*plan.problem.mask),
                       tiling_of(plan.problem, plan.shape));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvBoxSlidingSums)
