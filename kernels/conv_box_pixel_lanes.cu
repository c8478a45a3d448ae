// conv.box_pixel_lanes — box filter of any odd size up to 31x31 by exact integer sums, a warp per
// span of 512 pixels, 16 whole pixels per lane: the box's row never reaches past the two
// neighbouring lanes, so the row sums slide along each lane's own pixels with no warp scan.
//
// Technique: out = round(m * S), S the integer sum under the box (kernels/box_sums.hpp), and S
// separates into column sums V (the box's height) summed along the row (its width). A warp owns a
// span of 512 pixels of a stored row, 16 consecutive pixels per lane (16 * E bytes: one, or for
// RGB three, 16-byte loads), and writes the 480 pixels of lanes 1 to 30, walking down a strip of
// `rows` rows (tuned; every other strip walks up, as in conv.box_warp_scan):
//   columns: V slides down one row at a time in registers, two to a 32-bit word (16-bit lanes:
//            V <= 31 * 255 < 2^16), one load of the entering row and one of the leaving row (read
//            2 * ry + 1 rows earlier: an L1 or L2 hit) per 16 bytes, the next row's loads issued
//            before this row's sums are worked out; a strip's first 2 ry + 1 rows two at a time.
//            In the fast walk (below) the RGB loads are coalesced: the warp's load q reads pieces
//            32 q + lane of the span (512 consecutive bytes where every lane is inside the row),
//            and the pieces reach the lanes that own them through shared memory. Piece k of
//            neighbouring lanes lies 48 bytes apart: loading each lane's own pieces would read
//            half of 32 sectors per instruction. With `loads=1` (tuned; RGB rows, boxes up to 15
//            rows high) that walk keeps the box's window in shared memory, a ring of 2 ry + 1 rows
//            of the span per warp (13.5 KB for box9, which 16 warps per SM still have): each row is
//            loaded once per strip and dealt into the ring, the leaving row read from there a row
//            ahead, and the row's output staged in the slot it frees. So the leaving rows no longer
//            come back from the L2 or DRAM, and longer strips pay (fewer first rows per output).
//            An L2 prefetch of each entering row two rows before its load (a tuning parameter
//            `ahead` from abf9fe6 to ea75ae2: box3 61.35 -> 59.80 us) stopped paying once the row
//            sums were paired (the retune at cd8b93d chose no prefetch in all 16 classes), and was
//            removed at 027f785;
//   rows:    (kernels/box_pixel_rows.hpp) along each channel, S(i) = S(i - E) + V(i + rx * E) -
//            V(i - (rx + 1) * E), element by element. As rx <= 15 < 16 pixels, the entering column
//            lies in this lane or the next one, the leaving column in this lane or the one before:
//            a shuffle per word taken from a neighbour (at most rx * E + 2 of them), and the
//            difference of the two words in one add per word (both 16-bit halves biased by 2^15,
//            so that none borrows from the other). The first S of each channel is the sum of V
//            over the previous lane's last rx + 1 pixels and this lane's first rx: each lane adds
//            its words in 16-bit lanes, a word per channel phase, and shuffles its suffix's sums to
//            the lane after it. RGB rows of a normalized box up to 15 wide and of area up to 256
//            (box3, box9; a kernel of their own, `Paired`) hold S two elements to a word as V is:
//            word w = (S(2w - 3), S(2w - 2)) + the entering pair - the leaving pair, one add and one
//            byte permute per two elements instead of a half taken out and added for each
//            (kernels/box_pixel_rows.hpp, row_bytes_paired: 8K box9 65.0 -> 62.1 us, its rows loop
//            396 -> 327 instructions a warp and row), and their first S two to a word too
//            (channel_pair_sums: 327 -> 318, box9 62.1 -> 61.9 us);
//   out:     the normalized box rounds with one multiply-high (the half added into the first S;
//            paired, of a whole word whose high half is the sum, kernels/box_word_rounding.hpp);
//            other coefficients take the exact integer form of the reference's rounding
//            (kernels/box_sums.hpp proves both exact), out of line. The lanes' 16-byte pieces lie
//            16E bytes apart, so the fast walk stages a row's output in shared memory and the warp
//            stores it 512 consecutive bytes at a time (each store instruction writing whole
//            32-byte sectors, not halves of many).
// What it adds over conv.box_warp_scan (16 bytes a lane, whatever the pixel: a box row of up to 93
// bytes crosses up to 6 lanes, so its row sums need a warp scan of per-channel prefixes, carried
// in 21-bit fields selected by each lane's channel phase, and two shuffles per output byte, 228
// instructions per warp and row for 416 output bytes): the lane holds whole pixels, so no phase and
// no scan, a shuffle per 16-bit pair instead of two per byte, and 480 of the span's 512 pixels are
// output (6.25% of the reads are halo instead of 19%): 405 instructions per warp and row for 1440
// output bytes on box31 in its first form (0.28 per byte against the scan's 0.55; 424 with the
// stores staged, before the loads were coalesced).
// Borders: rows outside the image mapped per row (strips away from the top and bottom take a copy
// of the fast walk that steps row pointers instead). Where the width is a multiple of 16 pixels,
// input and output rows are 16-byte aligned and the box is the normalized one, the lanes wholly
// outside the row also load 16 bytes at a time under a replicate, wrap or constant border
// (EdgeLane: the row's end pixel repeated by byte permutes, the row's other end, the border's
// value), so that the edge tiles walk as fast as the others. Else (reflect, mirror, other widths or
// pitches, other coefficients) the lanes whose bytes reach outside the row read byte by byte from
// offsets the border rule gives, worked out once per warp into shared memory (as
// conv.box_warp_scan does, kernels/box_span.hpp).
// Preconditions: box masks only — every coefficient equal (any odd width and height up to 31, any
// value; others are refused with that reason). 1 or 3 bytes per pixel: gray, RGB AoS and every SoA
// plane; RGBA AoS is refused (16 pixels a lane would be 64 bytes: V and the next row's loads would
// need more registers than the kernel's 128; conv.box_warp_scan takes it). Every border, any
// pitch, any size. The block is 32 x N threads (N = 2, 4 or 8 warps, tuned), at most 128 registers
// (2 blocks of 8 warps per SM), 2 KB of shared memory per warp and byte of the pixel, or with
// loads=1 1.5 KB per row of the ring if that is more (box31's 46.5 KB a warp is refused, with that
// reason; so are gray rows and SoA planes, whose walk has no ring).
// Measured on an NVIDIA H200. The committed klab run at 94c22da (results/nvidia-h200/, L2 flushed,
// medians of 5; the 8K RGB rows' copy floor 47.77 us): 8K RGB AoS replicate box9 61.91 us (1.296x;
// 32x2 loads=1 rows=33, paired; npp.box 1720: 27.8x faster), box3 58.92 (1.23x; 32x2 loads=1
// rows=33, paired), box31 90.22 (1.89x; 32x2 loads=2 rows=33; npp.box 16592: 184x). The run at
// 336b588, before the paired first sums: box9 62.13 (1.301x), box3 59.09, box31 90.86
// (conv.box_warp_ring box9 73.96); before the paired row sums (run at 04ec75b, copy floor 48.02):
// box9 65.42, box3 59.80, box31 90.39; before the prefetch (run at 34f9597): box9 64.84, box3
// 61.35; before the ring (run at 06ff4d7): box9 74.56 (rows=11), box3 61.97.
// Where the time goes (Nsight Compute, clocks unlocked, H200, 8K RGB): box9 paired (2026-12-02,
// at 027f785, 61.7 us under the profiler) runs 26.1 M warp instructions (unpaired: 33.3 M) with
// issue slots 42% busy at 25% occupancy (126 registers, and 13.5 KB of ring per warp), DRAM 59% of
// its peak (about 174 MB, the image's read and write), 35% of the stall samples on global loads
// (long scoreboard) and 25% at the put of the entering row into the ring: what holds it now is the
// entering rows' latency. Neither prefetching the entering rows into the L2 nor loading them
// earlier moved it before (notes).
// box31 (loads=2, 2026-11-30) reads 224.6 MB from DRAM, 2.26 times the 99.5 MB input: each warp's
// window (2 ry + 2 rows of 1536 bytes) over the 2096 warps of the single wave of 33-row strips is
// about 103 MB, more than the L2's 60 MB, so leaving rows come back from DRAM; its ring would need
// 46.5 KB a warp, and its sums (up to 961 * 255) do not fit the paired form's 16 bits.
// Measurements, profiles and every form tried and dropped: kernels/notes/conv_box_pixel_lanes.md.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/box_pixel_rows.hpp"
#include "kernels/box_span.hpp"
#include "kernels/box_sums.hpp"

namespace klab {
namespace {

using box_span::bordered_row;
using box_span::byte_pair;
using box_span::column_sources;
using box_span::kFullMask;
using box_span::kLaneBytes;
using box_span::kWarp;
using box_span::slide_columns;
using box_span::span_bytes;
using box_span::store_span_bytes;
using box_span::warp_place;
using box_sums::box_support;
using box_sums::planes_of;
using box_sums::rounding_of;
using box_sums::Rounding;
using box_pixel_rows::kLanePixels;
using box_pixel_rows::kMaxPairedArea;
using box_pixel_rows::row_output;

constexpr int kTilePixels = (kWarp - 2) * kLanePixels;  // 480: lanes 1 to 30 write, lanes 0 and 31 are halo
constexpr int kMaxRadius = kLanePixels - 1;
static_assert(Mask::kMaxSide / 2 <= kMaxRadius, "every mask's row radius reaches one lane each way at most (kernel_for's table)");
// Strip heights to tune among: a grid of 16 tiles (8K) fills the 16 warps per SM of 132 SMs in one
// wave at 33 rows (two waves: 17, three: 11); the tuner picks per GPU and size.
constexpr std::array<int, 9> kStripRows = {8, 11, 16, 17, 22, 24, 33, 48, 66};

// How a launch divides the image, the same for every warp.
struct Tiling {
    int tiles;       // warps per stored row
    int strip_rows;  // output rows each warp walks down
    int strips;      // strips of the image
    int ry;          // the box's vertical radius
    int ring_slots;  // the fast RGB walk's ring of the window's rows in shared memory: 2 ry + 1 slots, or 0 (none)
};

// Each warp's column sources (column_sources, for the bordered walk): 16 words per lane and 16-byte
// piece; the fast walk uses the same space as four slots of 512E bytes (two rows of its output
// staged, two rows of its coalesced loads dealt to their lanes), or, with the ring, its 2 ry + 1
// slots if that is more (13.5 KB for a box 9 rows high, as 16 warps per SM can have).
constexpr int kMaxRingRadius = 7;  // the ring of a box 15 rows high: 15 slots of 1536 bytes a warp, 180 KB for 8 warps
__host__ __device__ int warp_bytes(int stride, int ring_slots) {
    const int slots = ring_slots > 4 ? ring_slots : 4;
    return slots * kWarp * stride * kLaneBytes;
}

std::size_t shared_bytes(int stride, const LaunchShape& shape, int ring_slots) {
    return static_cast<std::size_t>(shape.block_y) * warp_bytes(stride, ring_slots);
}

Tiling tiling_of(int width, int height, int ry, int strip_rows, bool ring) {
    Tiling t{};
    t.ry = ry;
    t.ring_slots = ring ? 2 * ry + 1 : 0;
    t.tiles = static_cast<int>(grid_side(width, kTilePixels));
    t.strips = static_cast<int>(grid_side(height, strip_rows));
    t.strip_rows = static_cast<int>(grid_side(height, t.strips));  // the strips share the rows evenly
    return t;
}

// ---------------------------------------------------------------------------------------------
// The kernel

// A lane of the fast walk whose 16 pixels lie outside the row (the image's width a multiple of 16,
// so no lane straddles its end): under replicate, wrap and constant borders its bytes come from
// 16-byte loads too. Wrap: the row's other end (`offset` moved by a row). Replicate: the pixel at
// the row's end, repeated: for RGB three words (p0 p1 p2 p0, p1 p2 p0 p1, p2 p0 p1 p2) made by
// byte permutes of the loaded word that holds it. Constant: the border's value. Only the edge tiles
// have such lanes: the inner warps of the interior strips walk a copy compiled without the fill;
// at the top and bottom every warp's walk has it, and lanes without the fill return at once.
struct EdgeLane {
    bool edge_warp;         // some lane of the warp is outside the row
    bool repeat;            // this lane's bytes are one pixel (or the constant's byte) repeated
    bool last_word;         // the pixel is in the last loaded word (right end), else the first
    bool splat;             // the constant border's value, not a loaded pixel
    std::uint32_t select[3];  // byte selectors of the three repeated words
};

template <int E>
__device__ __forceinline__ void repeat_pixel(uint4 (&bytes)[E], const EdgeLane& edge, std::uint32_t value_word) {
    if (!edge.repeat) return;
    const std::uint32_t word = edge.splat ? value_word : (edge.last_word ? bytes[E - 1].w : bytes[0].x);
    const std::uint32_t a = __byte_perm(word, 0u, edge.select[0]);
    if constexpr (E == 1) {
        bytes[0] = make_uint4(a, a, a, a);
    } else {
        const std::uint32_t b = __byte_perm(word, 0u, edge.select[1]), c = __byte_perm(word, 0u, edge.select[2]);
        bytes[0] = make_uint4(a, b, c, a);
        bytes[1] = make_uint4(b, c, a, b);
        bytes[2] = make_uint4(c, a, b, c);
    }
}

// A row's 16E bytes at the lane's place, piece by piece (span_bytes: one 16-byte load each, or the
// bordered bytes).
template <int E>
__device__ __forceinline__ void load_pieces(const std::uint8_t* row, int e, bool vector, const int* sources, Border border, uint4 (&bytes)[E]) {
#pragma unroll
    for (int k = 0; k < E; ++k) bytes[k] = span_bytes(row, e + kLaneBytes * k, vector, sources + kWarp * kLaneBytes * k, border);
}

// V += a + b (a strip's first rows, where nothing leaves yet), two bytes per 16-bit lane.
template <int E>
__device__ __forceinline__ void add_two_rows(std::uint32_t (&v)[E][8], const uint4 (&a)[E], const uint4 (&b)[E]) {
#pragma unroll
    for (int k = 0; k < E; ++k) {
#pragma unroll
        for (int w = 0; w < 8; ++w) v[k][w] = v[k][w] + byte_pair(a[k], w) + byte_pair(b[k], w);
    }
}

// A warp's walk along its strip, walk rows [y_begin, y_end): image rows y_begin ... (down) or
// height - 1 - y_begin ... (up; the same walk over the image read bottom to top). Compiled four
// times: Fast (every lane's 16 pixels loaded 16 bytes at a time, inside the row or filled by
// EdgeLane, rows aligned, the normalized box; RGB rows loaded 512 consecutive bytes at a time and
// dealt to their lanes through shared memory; the output staged for 512-byte stores), with
// Interior (rows stepped by a pointer; EdgeWarp: with the edge lanes' fill, which the inner warps'
// copy leaves out) or not (rows mapped by the border rule, the fill where a lane needs it); and
// the general walk for the rest (the bordered lanes' bytes, both roundings; in the Paired kernels
// only the normalized one), whose registers the fast walks do not pay for.
template <int E, int Rx, bool Paired, bool Interior, bool Fast, bool EdgeWarp = false>
__device__ __forceinline__ void walk_strip(const ImageView<const std::uint8_t>& in, const ImageView<std::uint8_t>& out, int plane,
                                           Border border, const Rounding& rounding, const Tiling& t, int y_begin, int y_end,
                                           int e, int offset, const EdgeLane& edge, bool vector, const int* sources, uint4* stage, bool output_lane,
                                           bool up) {
    const int row_bytes = in.shape.width * E;
    const bool out_vector = ((reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % 16) == 0 && e + kLaneBytes * E <= row_bytes;
    const int last = in.shape.height - 1;
    const auto image_row = [&](int y) { return up ? last - y : y; };
    const std::ptrdiff_t in_pitch = up ? -static_cast<std::ptrdiff_t>(in.pitch_bytes) : static_cast<std::ptrdiff_t>(in.pitch_bytes);
    const std::ptrdiff_t out_pitch = up ? -static_cast<std::ptrdiff_t>(out.pitch_bytes) : static_cast<std::ptrdiff_t>(out.pitch_bytes);
    std::uint8_t* dst = out.row(image_row(y_begin), plane) + e;
    // The interior's rows: pointers that step along the walk a row at a time (down or up the image).
    const std::uint8_t* enter_row = Interior ? in.row(image_row(y_begin - t.ry - 1), plane) : nullptr;
    const std::uint8_t* leave_row = Interior ? in.row(image_row(y_begin - t.ry - 1), plane) : nullptr;
    const int lane = static_cast<int>(threadIdx.x);
    const int span_e = __shfl_sync(kFullMask, e, 0);  // the span's first byte of the row (lane 0's)
    // The fast walk's RGB loads are coalesced. Piece k of neighbouring lanes lies 48 bytes apart, so
    // a load of each lane's own piece k would read half of 32 sectors per instruction; instead the
    // warp's load q reads piece 32 q + lane of the span (512 consecutive bytes where every lane is
    // inside the row) from where that piece's lane, (32 q + lane) / 3, takes its bytes (`offset`,
    // the edge lanes' fill included), and the pieces reach their lanes through the warp's shared
    // memory (put_pieces, own_pieces).
    constexpr bool kCoalesced = Fast && E > 1;
    int piece_offset[E];  // where this lane's load k reads in a row
#pragma unroll
    for (int q = 0; q < E; ++q) {
        const int piece = kWarp * q + lane;
        piece_offset[q] = kCoalesced ? __shfl_sync(kFullMask, offset, piece / E) + kLaneBytes * (piece % E) : offset + kLaneBytes * q;
    }
    const std::uint32_t splat = border.value * 0x01010101u;
    const auto load = [&](const std::uint8_t*& interior_row, int y, uint4(&bytes)[E]) {
        const std::uint8_t* row = Interior ? interior_row : bordered_row(in, plane, image_row(y), border.mode);
        if constexpr (Interior) interior_row += in_pitch;
        if constexpr (Fast) {
            if (!Interior && row == nullptr) {  // a constant border's row outside the image
#pragma unroll
                for (int k = 0; k < E; ++k) bytes[k] = make_uint4(splat, splat, splat, splat);
                return;
            }
#pragma unroll
            for (int k = 0; k < E; ++k) bytes[k] = __ldg(reinterpret_cast<const uint4*>(row + piece_offset[k]));
            if constexpr (EdgeWarp && !kCoalesced) repeat_pixel<E>(bytes, edge, splat);
        } else {
            load_pieces<E>(row, e, vector, sources, border, bytes);
        }
    };
    // A coalesced row's pieces to the lanes that own them: written to slot `slot` of the warp's
    // shared memory (its four slots of 32E pieces: the stores' staging takes 0 and 1, the rows'
    // loop deals its entering and leaving rows through 2 and 3, a strip's first rows through 0 to
    // 3 in turn; with the ring, slots 0 ... K - 1 hold the window's rows, below), read back after a
    // __syncwarp, the edge lanes' fill applied then.
    const auto put_pieces = [&](int slot, const uint4(&bytes)[E]) {
        if constexpr (kCoalesced) {
#pragma unroll
            for (int q = 0; q < E; ++q) stage[kWarp * E * slot + kWarp * q + lane] = bytes[q];
        }
    };
    const auto own_pieces = [&](int slot, uint4(&bytes)[E]) {
        if constexpr (kCoalesced) {
#pragma unroll
            for (int k = 0; k < E; ++k) bytes[k] = stage[kWarp * E * slot + E * lane + k];
            if constexpr (EdgeWarp) repeat_pixel<E>(bytes, edge, splat);
        }
    };

    // V of the row before the strip's first: the sum of its 2 ry + 1 rows y_begin - ry - 1 ...
    // y_begin + ry - 1, the first alone, then kBatch rows at a time (RGB: six 16-byte loads in
    // flight; gray: eight rows, eight loads), the rest two at a time.
    constexpr int kBatch = E == 1 ? 8 : 2;
    static_assert(!kCoalesced || kBatch == 2, "the coalesced first rows come in pairs");
    // The ring (the coalesced walk, where the tuner chose it): the window's row j (the strip's
    // first rows are rows 0 ... 2 ry) lives in slot j mod K, K = 2 ry + 1, until it leaves, so each
    // row is loaded once per strip and the leaving row comes from shared memory instead of a second
    // load from the L2 or DRAM.
    const int ring = kCoalesced ? t.ring_slots : 0;
    std::uint32_t v[E][8];
    int y_first = y_begin - t.ry - 1;
    const int first_end = y_begin + t.ry;
    {
        uint4 row_in[E];
        load(enter_row, y_first++, row_in);
        const int slot = ring != 0 ? 0 : 2;  // ring: window row 0
        put_pieces(slot, row_in);
        if constexpr (kCoalesced) __syncwarp();
        own_pieces(slot, row_in);
#pragma unroll
        for (int k = 0; k < E; ++k) {
#pragma unroll
            for (int w = 0; w < 8; ++w) v[k][w] = byte_pair(row_in[k], w);
        }
    }
    for (int pair = 0; y_first + kBatch <= first_end; y_first += kBatch, ++pair) {
        uint4 rows_in[kBatch][E];
#pragma unroll
        for (int r = 0; r < kBatch; ++r) load(enter_row, y_first + r, rows_in[r]);
        if constexpr (kCoalesced) {  // RGB: kBatch = 2, through slots 0 and 1, then 2 and 3, in turn
            const int slot = ring != 0 ? 1 + 2 * pair : ((pair & 1) ? 2 : 0);  // ring: window rows 1 + 2 pair and 2 + 2 pair
            put_pieces(slot, rows_in[0]);
            put_pieces(slot + 1, rows_in[1]);
            __syncwarp();
            own_pieces(slot, rows_in[0]);
            own_pieces(slot + 1, rows_in[1]);
        }
#pragma unroll
        for (int r = 0; r < kBatch; r += 2) add_two_rows<E>(v, rows_in[r], rows_in[r + 1]);
    }
    if constexpr (kCoalesced) __syncwarp();  // every lane has read slots 2 and 3 before the rows' loop writes them
    if constexpr (kBatch > 2) {
        for (; y_first < first_end; y_first += 2) {
            uint4 a[E], b[E];
            load(enter_row, y_first, a);
            load(enter_row, y_first + 1, b);
            add_two_rows<E>(v, a, b);
        }
    }

    // With the ring, walk row i's leaving row is window row i, read from slot i mod K into `leave`
    // a row ahead; its entering row, window row i + K, then takes that slot, and the row's output is
    // staged in the slot of window row i + 1 once every lane has read that row (the next one's
    // leaving row).
    uint4 enter[E], leave[E];
    load(enter_row, y_begin + t.ry, enter);
    int slot = 0;  // with the ring: i mod K
    if (ring == 0) {
        load(leave_row, y_begin - t.ry - 1, leave);
    } else {
        own_pieces(0, leave);
    }
    for (int y = y_begin; y < y_end; ++y, dst += out_pitch) {
        if constexpr (kCoalesced) {
            if (ring != 0) {
                __syncwarp();  // the last row's stores have read the slot (their staging)
                put_pieces(slot, enter);
                __syncwarp();
                own_pieces(slot, enter);
                slot = slot + 1 == ring ? 0 : slot + 1;
            } else {  // slots 2 and 3: every lane read them before the last row's stores
                put_pieces(2, enter);
                put_pieces(3, leave);
                __syncwarp();
                own_pieces(2, enter);
                own_pieces(3, leave);
            }
        }
#pragma unroll
        for (int k = 0; k < E; ++k) slide_columns(v[k], enter[k], leave[k]);
        if (y + 1 < y_end) {  // the next row's loads, in flight while this row's sums are worked out
            load(enter_row, y + 1 + t.ry, enter);
            if (ring == 0) {
                load(leave_row, y - t.ry, leave);
            } else {
                own_pieces(slot, leave);
            }
        }
        if (ring != 0) __syncwarp();  // every lane has read the slot that stages this row
        if constexpr (Fast) {
            // The lanes' pieces lie 16E bytes apart: stored as they are, each store instruction of
            // the warp would write half of many 32-byte sectors. Staged in shared memory (two
            // buffers: a row's writes never meet the last row's reads; with the ring, the slot of
            // the next row's leaving row, read above), the warp stores 512 consecutive bytes at a
            // time: piece q * 32 + lane of the span.
            uint4* const buffer = stage + (ring != 0 ? slot : y & 1) * kWarp * E;
            const auto stage_piece = [&](int k, uint4 bytes) { buffer[E * lane + k] = bytes; };
            row_output<E, Rx, true, Paired>(v, rounding, stage_piece);
            __syncwarp();
            std::uint8_t* const span_dst = dst + (span_e - e);
#pragma unroll
            for (int q = 0; q < E; ++q) {
                const int byte = kLaneBytes * (kWarp * q + lane);  // in the span: lanes 1 to 30's, inside the row
                if (byte >= kLaneBytes * E && byte < kLaneBytes * E * (kWarp - 1) && span_e + byte + kLaneBytes <= row_bytes) {
                    __stcs(reinterpret_cast<uint4*>(span_dst + byte), buffer[kWarp * q + lane]);  // streaming: not read again
                }
            }
        } else {
            const auto store = [&](int k, uint4 bytes) {
                if (output_lane) store_span_bytes(dst + kLaneBytes * k, bytes, e + kLaneBytes * k, row_bytes, out_vector);
            };
            if (Paired || rounding.normalized) {  // the Paired kernels: a normalized box (kernel_for)
                row_output<E, Rx, true, Paired>(v, rounding, store);
            } else {
                row_output<E, Rx, false, false>(v, rounding, store);
            }
        }
    }
}

template <int E, int Rx, bool Paired>
__global__ void __launch_bounds__(kWarp * 8, 2)
    conv_box_pixel_lanes_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Border border, Rounding rounding, Tiling t) {
    const int lane = static_cast<int>(threadIdx.x);
    const int warp = static_cast<int>(blockIdx.x * blockDim.y + threadIdx.y);
    const auto [strip, tile] = warp_place(warp, t.tiles, t.strips);  // edge tiles first
    if (strip >= t.strips) return;  // the last block's spare warps (no block barrier follows)
    const int plane = static_cast<int>(blockIdx.z);
    const int height = in.shape.height;
    const int image_begin = strip * t.strip_rows;
    const int image_end = min(image_begin + t.strip_rows, height);
    if (image_begin >= image_end) return;
    // Odd strips walk up: two neighbouring strips read the rows they share at about the same time.
    const bool up = (strip & 1) != 0;
    const int y_begin = up ? height - image_end : image_begin;
    const int y_end = up ? height - image_begin : image_end;

    const int width = in.shape.width;
    const int first_pixel = kTilePixels * tile + kLanePixels * (lane - 1);  // lane 0: the 16 pixels left of the tile
    const int e = E * first_pixel;                                           // this lane's first byte of the row
    const int row_bytes = width * E;
    const bool aligned = ((reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % 16) == 0;  // SoA planes: height * pitch apart
    const bool vector = aligned && e >= 0 && e + kLaneBytes * E <= row_bytes;
    const bool output_lane = lane >= 1 && lane <= kWarp - 2 && first_pixel < width;
    const bool out_aligned = ((reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % 16) == 0;
    // Lanes outside the row that the fast walk fills from 16-byte loads (EdgeLane): the width a
    // multiple of 16 pixels, rows aligned, a replicate, wrap or constant border. Lanes past the
    // first one right of the row feed no output lane: any bytes of the row will do.
    const BorderMode mode = border.mode;
    const bool outside = first_pixel < 0 || first_pixel >= width;
    const bool edge_fills = aligned && width % kLanePixels == 0 &&
                            (mode == BorderMode::replicate || mode == BorderMode::wrap || mode == BorderMode::constant);
    EdgeLane edge{};
    int offset = e;  // where the fast walk loads the lane's bytes
    if (outside && edge_fills) {
        const bool left = first_pixel < 0, next = first_pixel == width;  // the lanes that feed output lanes
        edge.repeat = (left || next) && mode != BorderMode::wrap;
        edge.splat = mode == BorderMode::constant;
        edge.last_word = !left;
        if (mode == BorderMode::wrap && (left || next)) {
            offset = left ? e + row_bytes : e - row_bytes;  // the other end of the row
        } else {
            offset = left || !next ? 0 : row_bytes - kLaneBytes * E;  // the piece that holds the end pixel
        }
        // The pixel's bytes: the first E of the first word (left) or the last E of the last word.
        // Repeated words k = 0, 1, 2 start at channel k of the pixel (RGB); gray repeats one byte.
        const int first = left ? 0 : 4 - E;
        for (int k = 0; k < 3; ++k) {
            std::uint32_t select = 0u;
            for (int b = 0; b < 4; ++b) select |= static_cast<std::uint32_t>(edge.splat ? b : first + (k + b) % E) << (4 * b);
            edge.select[k] = select;
        }
    }
    edge.edge_warp = __any_sync(kFullMask, outside && edge_fills);
    // The fast walk: every lane's bytes loaded 16 at a time (inside the row, or filled as above),
    // rows aligned, the normalized box. The same for the whole warp.
    const bool fast = __all_sync(kFullMask, vector || (outside && edge_fills)) && out_aligned && rounding.normalized;
    const bool interior = y_begin - t.ry - 1 >= 0 && y_end - 1 + t.ry < height;
    extern __shared__ __align__(16) int shared_sources[];
    int* const sources = shared_sources + warp_bytes(E, t.ring_slots) / 4 * static_cast<int>(threadIdx.y) + lane;
    uint4* const stage = reinterpret_cast<uint4*>(sources - lane);  // the fast walk's store staging (2 x 32E pieces)
    if (fast) {
        // The interior's inner warps walk without the edge lanes' fill; the strips at the top and
        // bottom (a few) take one walk for both kinds of warp.
        if (interior && !edge.edge_warp) {
            walk_strip<E, Rx, Paired, true, true>(in, out, plane, border, rounding, t, y_begin, y_end, e, offset, edge, vector, sources, stage, output_lane, up);
        } else if (interior) {
            walk_strip<E, Rx, Paired, true, true, true>(in, out, plane, border, rounding, t, y_begin, y_end, e, offset, edge, vector, sources, stage, output_lane, up);
        } else {
            walk_strip<E, Rx, Paired, false, true, true>(in, out, plane, border, rounding, t, y_begin, y_end, e, offset, edge, vector, sources, stage, output_lane, up);
        }
        return;
    }
    // Only this lane reads them: lanes without 16-byte loads, and under a constant border every
    // lane, since span_bytes reads them for a row outside the image (whose bytes are the value).
    if (!vector || border.mode == BorderMode::constant) {
        for (int k = 0; k < E; ++k) column_sources<E>(sources + kWarp * kLaneBytes * k, e + kLaneBytes * k, width, border.mode);
    }
    walk_strip<E, Rx, Paired, false, false>(in, out, plane, border, rounding, t, y_begin, y_end, e, offset, edge, vector, sources, stage, output_lane, up);
}

// ---------------------------------------------------------------------------------------------
// The variant

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, Border, Rounding, Tiling);

// A kernel per pixel size E (1 or 3), horizontal radius rx (0 ... 15) and form of the row sums:
// Paired (row_bytes_paired, RGB rows of normalized boxes up to 15 wide and of area up to 256) or not.
template <int E, bool Paired, int... Rx>
std::array<Kernel, sizeof...(Rx)> kernels_of(std::integer_sequence<int, Rx...>) {
    return {&conv_box_pixel_lanes_kernel<E, Rx, Paired>...};
}

// The widest boxes that have a Paired kernel: eight more kernels, not sixteen (wider boxes of area
// up to 256, from 17x15 to 31x7, take the other form).
constexpr int kMaxPairedRadius = 7;

Kernel kernel_for(const Problem& problem, const Rounding& rounding) {
    static const std::array<Kernel, kMaxRadius + 1> gray = kernels_of<1, false>(std::make_integer_sequence<int, kMaxRadius + 1>{});
    static const std::array<Kernel, kMaxRadius + 1> rgb = kernels_of<3, false>(std::make_integer_sequence<int, kMaxRadius + 1>{});
    static const std::array<Kernel, kMaxPairedRadius + 1> rgb_paired =
        kernels_of<3, true>(std::make_integer_sequence<int, kMaxPairedRadius + 1>{});
    const Mask& mask = *problem.mask;
    const int rx = mask.radius_x();
    if (rows::element_stride(problem.shape) == 1) return gray[rx];
    const bool paired = rx <= kMaxPairedRadius && rounding.normalized && mask.width() * mask.height() <= kMaxPairedArea;
    return paired ? rgb_paired[rx] : rgb[rx];
}

Tiling tiling_of(const Problem& problem, const LaunchShape& shape) {
    return tiling_of(problem.shape.width, problem.shape.height, problem.mask->radius_y(), shape.parameter("rows"), shape.parameter("loads") == 1);
}

class ConvBoxPixelLanes final : public Variant {
public:
    std::string name() const override { return "conv.box_pixel_lanes"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "box filter by exact integer sums, a warp per 512-pixel span, 16 pixels a lane: column sums slide down in registers, "
               "row sums slide along each lane's pixels with its neighbours' columns by shuffle (no scan), "
               "each row's output staged in shared memory and stored 512 consecutive bytes at a time";
    }
    Support supports(const Problem& problem) const override {
        if (Support box = box_support(problem); !box) return box;
        if (rows::element_stride(problem.shape) == 4) {
            return Support::no("RGBA AoS: 16 pixels a lane would be 64 bytes, more registers than the kernel has (conv.box_warp_scan takes it)");
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override {
        TuningSpace space = box_span::warp_span_tuning_space();
        space.parameters = {{"loads", {1, 2},
                             "global loads per walked row: 2 (the entering and the leaving row) or 1 (the entering row; RGB rows of boxes "
                             "up to 15 rows high: the leaving row from a ring of the box's window in shared memory)"},
                            {"rows", std::vector<int>(kStripRows.begin(), kStripRows.end()),
                             "output rows each warp walks down, at most (the strips share the rows evenly)"}};
        space.default_shape.parameters = {{"loads", 2}, {"rows", 33}};
        return space;
    }
    // 32x4 blocks; the tallest strips that still give a 132-SM GPU 16 warps per SM (what 128
    // registers allow), 8 rows on small images.
    LaunchShape default_shape(const Problem& problem) const override {
        LaunchShape shape = tuning_space().default_shape;
        int rows = kStripRows.front();
        for (int candidate : kStripRows) {
            shape.parameters = {{"loads", 2}, {"rows", candidate}};
            const Tiling t = tiling_of(problem, shape);
            if (static_cast<long long>(t.tiles) * t.strips * planes_of(problem.shape) >= 132 * 16) rows = candidate;
        }
        shape.parameters = {{"loads", 2}, {"rows", rows}};
        return shape;
    }
    Support check_shape(const Problem& problem, const LaunchShape& shape) const override {
        if (shape.block_x != kWarp || !box_sums::listed(box_span::kWarpsPerBlock, shape.block_y)) {
            return Support::no(fmt::format("block {}x{}: the block is 32xN with N = 2, 4 or 8 warps", shape.block_x, shape.block_y));
        }
        // The parameters' values are among those listed (the harness refuses others: parameter_mismatch).
        const int loads = shape.parameter("loads");
        if (loads == 1 && rows::element_stride(problem.shape) != 3) {
            return Support::no("loads=1: the ring of the window's rows holds the RGB walk's rows; gray rows and SoA planes load the leaving row (loads=2)");
        }
        if (loads == 1 && problem.mask->radius_y() > kMaxRingRadius) {
            const double kilobytes = warp_bytes(3, 2 * problem.mask->radius_y() + 1) / 1024.0;
            return Support::no(fmt::format("loads=1: the ring of a box {} rows high would need {:.1f} KB of shared memory per warp; it takes boxes up to {} rows",
                                           problem.mask->height(), kilobytes, 2 * kMaxRingRadius + 1));
        }
        return Support::yes();
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Tiling t = tiling_of(problem, shape);
        const long long warps = static_cast<long long>(t.tiles) * t.strips;
        const dim3 grid(static_cast<unsigned>((warps + shape.block_y - 1) / shape.block_y), 1, planes_of(problem.shape));
        return {make_launch(kernel_for(problem, rounding_of(*problem.mask)), "conv_box_pixel_lanes_kernel", grid, block_of(shape),
                            shared_bytes(rows::element_stride(problem.shape), shape, t.ring_slots))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const Rounding rounding = rounding_of(*plan.problem.mask);
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem, rounding), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), plan.problem.border, rounding, tiling_of(plan.problem, plan.shape));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvBoxPixelLanes)
