// What the box variants that give a warp a 512-byte span of a row (conv.box_warp_scan,
// conv.box_warp_ring) share: the span's geometry, the column sums' slide in 16-bit lanes, the
// byte-by-byte path of the lanes whose bytes reach outside the row (the border rule per byte,
// worked out once per warp), the order of the warps (edge tiles first), the stores, the rounding
// of a box that is not the normalized one, and their tuning space (blocks of warps, strips of rows).
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every kernel
// file that includes it, so a change to its code makes their tuning records stale (its comment-only
// lines do not count).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "harness/border.hpp"
#include "harness/image.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/box_sums.hpp"

namespace klab::box_span {

constexpr int kWarp = 32;
constexpr int kLaneBytes = 16;                  // one 16-byte load per lane and row
constexpr int kSpanBytes = kWarp * kLaneBytes;  // 512: a warp's span of a row
constexpr unsigned kFullMask = 0xffffffffu;

// Bytes 2w and 2w + 1 of a lane's 16 bytes, each in a 16-bit half of a word (w = 0 ... 7; the
// column sums' layout: word w of V holds the sums of those two bytes' columns).
__device__ __forceinline__ std::uint32_t byte_pair(uint4 bytes, int w) {
    const std::uint32_t words[4] = {bytes.x, bytes.y, bytes.z, bytes.w};
    return __byte_perm(words[w >> 1], 0u, (w & 1) ? 0x4342u : 0x4140u);
}

// V += entering - leaving, two bytes per 16-bit lane of each word (word w: bytes 2w and 2w + 1).
// V <= 31 * 255 < 2^16, and V + new - old never borrows because V holds old.
__device__ __forceinline__ void slide_columns(std::uint32_t (&v)[8], uint4 enter, uint4 leave) {
#pragma unroll
    for (int w = 0; w < 8; ++w) v[w] = v[w] + byte_pair(enter, w) - byte_pair(leave, w);
}

// Four bytes (each in the low byte of a word) to one word, the first lowest.
__device__ __forceinline__ std::uint32_t pack_bytes(std::uint32_t b0, std::uint32_t b1, std::uint32_t b2, std::uint32_t b3) {
    return __byte_perm(__byte_perm(b0, b1, 0x0040u), __byte_perm(b2, b3, 0x0040u), 0x5410u);
}

// Where each of a lane's 16 bytes comes from in a stored row, for the lanes whose bytes reach
// outside the row (all lanes where rows are not aligned for 16-byte loads, or the border is
// constant): its byte offset, or -1 for the constant border's value. The border rule per byte,
// worked out once per warp into shared memory (byte b of lane l at word 32 * b + l: a warp's
// reads fall in distinct banks).
template <int E>
__device__ __forceinline__ void column_sources(int* sources, int e, int width, BorderMode mode) {
#pragma unroll 1
    for (int b = 0; b < kLaneBytes; ++b) {
        const int element = e + b;
        const int x = element >= 0 ? element / E : -((-element + E - 1) / E);  // floor(element / E)
        const int sx = border_index(x, width, mode);
        sources[kWarp * b] = sx < 0 ? -1 : sx * E + (element - x * E);
    }
}

// The 16 bytes [e, e + 16) of stored row `row` (null: a constant border's row outside the image):
// one 16-byte load where `vector` (the bytes lie inside the row, rows 16-byte aligned), otherwise
// byte by byte from `sources`.
__device__ __forceinline__ uint4 span_bytes(const std::uint8_t* row, int e, bool vector, const int* sources, Border border) {
    if (vector && row != nullptr) return __ldg(reinterpret_cast<const uint4*>(row + e));
    std::uint32_t words[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        std::uint32_t bytes[4];
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            const int offset = sources[kWarp * (4 * w + b)];
            bytes[b] = row == nullptr || offset < 0 ? border.value : __ldg(row + offset);
        }
        words[w] = pack_bytes(bytes[0], bytes[1], bytes[2], bytes[3]);
    }
    return make_uint4(words[0], words[1], words[2], words[3]);
}

// Where a warp works: its strip of rows and its tile (its span's place along the row). Warps are
// numbered edge tiles first: the first and the last tile of every strip, then the tiles between
// them, strip by strip. An edge tile's lanes whose bytes reach past the row's ends take the
// byte-by-byte path (span_bytes) for every row while its other lanes wait, so such a warp issues
// about 1.8x an inner warp's instructions (Nsight Compute on conv.box_warp_ring, 8K RGB box 9x9,
// H200, 2026-11-26). Numbered among the others, the edge warps of the grid's last strips started
// last and finished long after the rest (the SMs were active for 75 to 89% of the kernel's time).
// Numbered first, they start in the first wave and finish while the inner warps still run (the
// variants' notes in kernels/notes/ give the gain). strip >= strips for the last block's spare
// warps.
struct WarpPlace {
    int strip;
    int tile;
};

__device__ __forceinline__ WarpPlace warp_place(int warp, int tiles, int strips) {
    const int edge_tiles = tiles < 2 ? tiles : 2;
    const int edge_warps = edge_tiles * strips;
    if (warp < edge_warps) return {warp / edge_tiles, warp % edge_tiles == 0 ? 0 : tiles - 1};
    const int inner_tiles = tiles - edge_tiles;
    if (inner_tiles == 0) return {strips, 0};
    const int inner = warp - edge_warps;
    return {inner / inner_tiles, 1 + inner % inner_tiles};
}

// Stored row y of the image through the border rule for rows (null: a constant border's row).
__device__ __forceinline__ const std::uint8_t* bordered_row(const ImageView<const std::uint8_t>& in, int plane, int y, BorderMode mode) {
    const int sy = rows::row_index(y, in.shape.height, mode);
    return sy < 0 ? nullptr : in.row(sy, plane);
}

// A lane's 16 output bytes into row `dst` (its first byte e of a row of row_bytes): one streaming
// 16-byte store where `vector` (inside the row, rows 16-byte aligned), else byte by byte up to the
// row's end.
__device__ __forceinline__ void store_span_bytes(std::uint8_t* dst, uint4 value, int e, int row_bytes, bool vector) {
    if (vector) {
        __stcs(reinterpret_cast<uint4*>(dst), value);  // streaming (evict-first): not read again
        return;
    }
    for (int b = 0; b < kLaneBytes && e + b < row_bytes; ++b) {
        const std::uint32_t word = b < 8 ? (b < 4 ? value.x : value.y) : (b < 12 ? value.z : value.w);
        dst[b] = static_cast<std::uint8_t>(word >> (8 * (b % 4)));
    }
}

// Four sums of a box that is not the normalized one, rounded (64-bit arithmetic, out of line: the
// registers it needs do not weigh on the normalized box's loop), four bytes to a word.
inline __device__ __noinline__ std::uint32_t rounded_word(std::uint32_t s0, std::uint32_t s1, std::uint32_t s2, std::uint32_t s3,
                                                          box_sums::Rounding rounding) {
    return pack_bytes(box_sums::round_sum<false>(s0, rounding), box_sums::round_sum<false>(s1, rounding),
                      box_sums::round_sum<false>(s2, rounding), box_sums::round_sum<false>(s3, rounding));
}

// ---------------------------------------------------------------------------------------------
// Host: the tuning space

constexpr std::array<int, 3> kWarpsPerBlock = {2, 4, 8};
constexpr std::array<int, 3> kStripRows = {16, 32, 64};

// Blocks of 32 x N threads (N warps, a warp per tile and strip) and strips of at most `rows` rows;
// 32x4 rows=32 by default.
inline TuningSpace warp_span_tuning_space() {
    TuningSpace space;
    space.block_x = {kWarp};
    space.block_y = std::vector<int>(kWarpsPerBlock.begin(), kWarpsPerBlock.end());
    space.parameters = {
        {"rows", std::vector<int>(kStripRows.begin(), kStripRows.end()), "output rows each warp walks down, at most (the strips share the rows evenly)"}};
    space.default_shape = LaunchShape{kWarp, 4, {{"rows", 32}}};
    return space;
}

inline Support check_warp_span_shape(const LaunchShape& shape) {
    if (shape.block_x != kWarp || !box_sums::listed(kWarpsPerBlock, shape.block_y)) {
        return Support::no(fmt::format("block {}x{}: the block is 32xN with N = 2, 4 or 8 warps", shape.block_x, shape.block_y));
    }
    const int rows = shape.parameter("rows");
    if (!box_sums::listed(kStripRows, rows)) return Support::no(fmt::format("rows={}: a warp walks 16, 32 or 64 rows", rows));
    return Support::yes();
}

}  // namespace klab::box_span
