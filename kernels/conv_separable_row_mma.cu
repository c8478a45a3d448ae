// conv.separable_row_mma — separable correlation: the row pass on the integer tensor cores (the
// bytes as they are, the row factor as three signed 8-bit digits, exact 32-bit sums), the column
// pass in fp32 from a ring of row results that each warp keeps in shared memory.
//
// Technique (issue 14, the separable ladder's step over conv.separable_column_first, which runs
// 37.6 instructions per output element against the 18 FMAs of a 9x9 mask): the row factor r
// becomes integers Q = round(r * 2^e) in three balanced base-256 digits, as conv.integer_mma does
// with a whole mask (kernels/integer_digits.hpp); the row pass of 8 consecutive output elements of
// 16 rows is then one mma.sync.m16n8k32 per digit, and costs about 6 instructions per element
// instead of 9 FMAs and a conversion. Each warp owns a band of 64 output elements and walks down a
// strip in chunks of 16 rows:
//   - the input rows of chunk k + 1 (the band, 16 bytes left of it, the row factor's reach right)
//     are loaded into registers (16-byte loads) while chunk k is filtered, and stored into the
//     warp's input buffer in shared memory when chunk k + 1 starts;
//   - row pass: 24 MMAs per chunk (8 tiles of 8 elements x 3 digits; 48 for RGBA 9x9, whose tiles
//     take two 32-byte windows each), each digit's sum starting at the bits of 1.5 * 2^23, so
//     that the float with the accumulator's bits is 1.5 * 2^23 + S; the three sums become
//     S2 * 2^16 + S1 * 2^8 + S0 in three fp32 instructions (two roundings) and go into the warp's
//     ring of row results: three slots of 8 rows, the chunk's rows g into slot
//     2k mod 3, rows g + 8 into slot 2k + 1 mod 3, so that no lane's address wraps;
//   - column pass, 2R rows behind: each lane owns 2 columns of the band, reads the 16 + 2R ring rows
//     that the chunk's outputs take (one 8-byte load each: every row result read once per chunk)
//     and computes 16 rows x 2 columns with the column factor scaled by 2^-e (exact), 2R + 1 FMAs
//     each, rounded by cvt.rni.sat.u8.f32 and stored as one 2-byte streaming store per row.
// Warps never wait for one another: the ring and the buffer are the warp's own (__syncwarp only).
// What it adds over conv.separable_column_first: the row pass leaves the FMA pipe, no byte is
// converted to fp32, and a strip's halo rows are filtered once per strip, not once per group.
// Exactness: every product of a byte and a digit, and every s32 sum (at most 9 * 255 * 128 <
// 2^19 per digit), is exact; combining the three sums rounds twice. The result differs from the
// mask's exact correlation by at most gamma_h * sum |m p| + E * sum p, with E from
// coefficient_error() (derived at row_digits() below), about 2^-23 of the largest coefficient.
// Preconditions: rank-1 masks up to 9x9 (R = max(rx, ry) <= 4, zero-padded to 2R+1 taps each way),
// every border, 1/3/4 channels, AoS and SoA (one grid layer per plane), any pitch, any size. The
// 8-bit mma.sync needs compute capability 8.0 or later (enqueue refuses older GPUs). Masks whose
// scaled column factor would lose bits (subnormal floats) are refused.
// Block: 32W x 1 threads (W = 2, 4 or 8 warps side by side, each its own band), strips of
// 16 * `chunks` rows.
// Measured on an NVIDIA H200 (device run of 2026-11-28: klab tune, then klab-bench, L2 flushed,
// medians of 3; the committed run in results/nvidia-h200/ has the current figures): 8K RGB AoS
// gauss9 135.2 us at 128x1 chunks=4, 2.46x its roofline (the FMA floor, 55.1 us; 2.85x the copy
// floor), against conv.separable_column_first's 158.2 us in the same run; HD gauss9 23.1 us at 64x1
// chunks=1 (column_first 36.1 us); 8K RGB SoA gauss9 160.9 us untuned (column_first 185.9 us).
// Nsight Compute on the 8K gauss9 launch: 81.5 M warp instructions, 26.2 per output element, issue
// slots 66% busy, 80 registers (37.5% theoretical occupancy, 33% achieved). What is left to the
// roofline is the instruction count: 26 per output where the FMAs are 9 column taps and the row
// pass's 4.
// Measurements, profiles and every form tried and dropped: kernels/notes/conv_separable_row_mma.md.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "harness/image.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/integer_digits.hpp"
#include "kernels/radius_dispatch.hpp"
#include "kernels/separable_factors.hpp"

namespace klab {
namespace {

using namespace integer_digits;

constexpr int kMaxRadius = 4;
constexpr int kChunkRows = 16;          // rows of a chunk: the MMA's M
constexpr int kBandTiles = 8;           // 8-element MMA tiles side by side in a warp's band
constexpr int kBand = 8 * kBandTiles;   // output elements of a warp's band: 2 per lane in the column pass
constexpr int kMarginLeft = 16;         // input bytes loaded left of the band
constexpr int kSlotRows = 8;            // ring rows per slot: half a chunk
constexpr int kRingStride = kBand + 8;  // floats per ring row: the fragments' 8-byte stores spread over the banks
constexpr std::array<int, 3> kBlockSides = {64, 128, 256};
constexpr std::array<int, 5> kStripChunks = {1, 2, 4, 8, 16};

template <int R, int S>
struct Geometry {
    static constexpr int K = 2 * R + 1;
    static constexpr int kReach = R * S;                 // elements between an output and its farthest tap
    static constexpr int kLead = (kReach + 3) / 4 * 4;  // a tile's window starts this far left of it, on a word
    static constexpr int kChunks = (kLead + 8 + kReach + 31) / 32;  // 32-byte windows (MMAs per digit) per tile
    // Bytes loaded per input row: from kMarginLeft left of the band to the end of the last tile's
    // last window, in 16-byte pieces; the buffer's row stride = 16 mod 32, so that the A operands'
    // word reads (rows g and g + 8, words t + ...) hit 32 different banks.
    static constexpr int kInputBytes = (kMarginLeft - kLead + 8 * (kBandTiles - 1) + 32 * kChunks + 15) / 16 * 16;
    static constexpr int kInputStride = kInputBytes + (48 - kInputBytes % 32) % 32;
    static constexpr int kPieces = kInputBytes / 16 * kChunkRows;  // 16-byte pieces of a chunk's input
    static constexpr int kLanePieces = (kPieces + 31) / 32;         // of them, per lane
    static constexpr int kRingBytes = 3 * kSlotRows * kRingStride * 4;
    static constexpr int kWarpSharedBytes = kChunkRows * kInputStride + kRingBytes;
    // The digit bytes of the B operands, spread: byte 16 + p of digit d's array is digit d of the tap
    // whose element lies p bytes into a tile's window past its output 0's reach (p = i * S for tap i),
    // zero elsewhere; each lane's operand word is 4 consecutive bytes of it (see b_operands()).
    static constexpr int kSpreadWords = (16 + 32 * kChunks) / 4 + 1;
};

template <int R, int S>
struct RowMmaArgs {
    std::uint32_t spread[kDigits][Geometry<R, S>::kSpreadWords];
    float col[2 * R + 1];  // the column factor times 2^-e (exact)
};

// The lane's B operands: for window c and digit d, window bytes 4t .. 4t+3 (x) and 16+4t .. 16+4t+3
// (y) of output n = lane / 4 of the tile (mma.m16n8k32's col-major 32 x 8 B, t = lane % 4).
template <int R, int S>
__device__ __forceinline__ void b_operands(const RowMmaArgs<R, S>& args, int lane, uint2 (&b)[Geometry<R, S>::kChunks][kDigits]) {
    using G = Geometry<R, S>;
    const int n = lane / 4, t = lane % 4;
#pragma unroll
    for (int c = 0; c < G::kChunks; ++c) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            // Window byte k = 32c + 16h + 4t + j takes tap i where k - kLead - n + kReach = i * S.
            const int p = 16 + 32 * c + 16 * h + 4 * t - G::kLead - n + G::kReach;  // from 16 - 3 - 7 to 32 c + 28
            const int word = p / 4, shift = 8 * (p % 4);
#pragma unroll
            for (int d = 0; d < kDigits; ++d) {
                const std::uint32_t v = __funnelshift_r(args.spread[d][word], args.spread[d][word + 1], shift);
                if (h == 0) {
                    b[c][d].x = v;
                } else {
                    b[c][d].y = v;
                }
            }
        }
    }
}

// Chunk rows y_top ... y_top + 15, bytes [first_byte, first_byte + G::kInputBytes) of each, into
// `buffer` by the border rule, byte by byte: for the bands that cross the left or right edge of the
// image and for rows not aligned for 16-byte loads. Each lane maps its columns (lane, lane + 32, ...)
// once, then loads them from 4 rows at a time, so that a chunk waits for 4 rounds of loads, not 16
// times the columns (a byte at a time, such a band took longer than the rest of its strip and ended
// the grid). Not inlined: the interior bands never run it.
template <int R, int S>
__device__ __noinline__ void load_chunk_bordered(ImageView<const std::uint8_t> in, Border border, int plane, int y_top,
                                                 int first_byte, std::uint8_t* buffer, int lane) {
    using G = Geometry<R, S>;
    constexpr int kLaneColumns = (G::kInputBytes + 31) / 32;
    constexpr int kRowsAtOnce = 4;
    int source[kLaneColumns];  // the byte of a stored row that column lane + 32c reads; < 0: the constant border
#pragma unroll
    for (int c = 0; c < kLaneColumns; ++c) source[c] = source_element<S>(first_byte + lane + 32 * c, in.shape.width, border.mode);
#pragma unroll 1
    for (int r0 = 0; r0 < kChunkRows; r0 += kRowsAtOnce) {
        std::uint8_t bytes[kRowsAtOnce][kLaneColumns];
#pragma unroll
        for (int r = 0; r < kRowsAtOnce; ++r) {
            const int sy = rows::row_index(y_top + r0 + r, in.shape.height, border.mode);
            const std::uint8_t* const row = sy < 0 ? nullptr : in.row(sy, plane);
#pragma unroll
            for (int c = 0; c < kLaneColumns; ++c) bytes[r][c] = row != nullptr && source[c] >= 0 ? row[source[c]] : border.value;
        }
#pragma unroll
        for (int r = 0; r < kRowsAtOnce; ++r) {
#pragma unroll
            for (int c = 0; c < kLaneColumns; ++c) {
                if (lane + 32 * c < G::kInputBytes) buffer[(r0 + r) * G::kInputStride + lane + 32 * c] = bytes[r][c];
            }
        }
    }
}

// Row u of the rows from `first` on, `pitch` bytes apart: one IMAD.WIDE, where the compiler would
// step a 64-bit pointer with two adds per row.
__device__ __forceinline__ std::uint8_t* row_address(std::uint8_t* first, std::uint32_t pitch, int u) {
    std::uint64_t address;
    asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(address) : "r"(pitch), "r"(u), "l"(reinterpret_cast<std::uint64_t>(first)));
    return reinterpret_cast<std::uint8_t*>(address);
}

// The lane's 2 outputs of a row (byte 0 first in `pair`) where they are not both inside the row or
// the row is not aligned for a 2-byte store: the first `bytes` of them (<= 0: none).
__device__ __noinline__ void store_pair_bordered(std::uint8_t* dst, int bytes, std::uint32_t pair) {
    for (int e = 0; e < min(bytes, 2); ++e) dst[e] = static_cast<std::uint8_t>(pair >> (8 * e));
}

// Two outputs by the numeric contract's store rule (rows::round_pack4's cvt.rni.sat.u8.f32), byte 0
// first in the low half of the word.
__device__ __forceinline__ std::uint32_t round_pack2(float a, float b) {
    std::uint32_t ua, ub;
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(ua) : "f"(a));
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(ub) : "f"(b));
    return __byte_perm(ua, ub, 0x0040);
}

template <int R, int S>
__global__ void __launch_bounds__(kBlockSides.back(), 3)
    conv_separable_row_mma_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out,
                                  const __grid_constant__ RowMmaArgs<R, S> args, Border border, int strip_chunks) {
    using G = Geometry<R, S>;
    extern __shared__ uint4 shared_words[];
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int plane = static_cast<int>(blockIdx.z);
    const int row_elements = in.shape.row_elements(), height = in.shape.height;
    const int x0 = (static_cast<int>(blockIdx.x) * (static_cast<int>(blockDim.x) / 32) + warp) * kBand;  // the band
    const int y0 = static_cast<int>(blockIdx.y) * strip_chunks * kChunkRows;                           // the strip
    if (x0 >= row_elements || y0 >= height) return;  // the whole warp: nothing below waits for other warps
    const int y_end = min(y0 + strip_chunks * kChunkRows, height);
    // Row-pass chunk k holds image rows y0 + R - 16 + 16k ... + 15, and the column pass after it the
    // output rows y0 - 16 + 16k ... + 15: chunk 0 holds only the 2R rows above the strip that chunk 1's
    // outputs take (none: chunk 0 is skipped for R = 0), chunks 1 ... last the strip's outputs.
    const int first = R == 0 ? 1 : 0, last = (y_end - y0 + kChunkRows - 1) / kChunkRows;
    const auto chunk_top = [&](int k) { return y0 + R - kChunkRows + kChunkRows * k; };

    std::uint8_t* const buffer = reinterpret_cast<std::uint8_t*>(shared_words) + warp * G::kWarpSharedBytes;  // chunk input
    float* const ring = reinterpret_cast<float*>(buffer + kChunkRows * G::kInputStride);  // 3 slots of 8 rows

    // The chunk's input: 16-byte pieces where the band's bytes lie inside the row and rows are
    // 16-byte aligned (piece p of a chunk: row p / (kInputBytes / 16), its 16-byte column p % ...),
    // each lane the same pieces of every chunk, loaded a chunk ahead into registers; rows stepped from
    // the strip's first where they all lie inside the image, mapped by the border rule otherwise (a
    // constant border's row outside the image is its value). Byte by byte by the border rule where
    // the band crosses the left or right edge.
    const int first_byte = x0 - kMarginLeft;
    const bool pieces_inside = ((reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % 16) == 0 && first_byte >= 0 &&
                               first_byte + G::kInputBytes <= row_elements;
    const bool rows_inside = chunk_top(first) >= 0 && chunk_top(last) + kChunkRows <= height;
    const std::uint8_t* const in_band = in.row(0, plane) + first_byte;
    const int pitch_pieces = static_cast<int>(in.pitch_bytes / 16);
    uint4 pieces[G::kLanePieces];
    const auto load_pieces = [&](int k) {
        const int y_top = chunk_top(k);
        if (rows_inside) {
            const uint4* const top = reinterpret_cast<const uint4*>(in_band + static_cast<std::size_t>(y_top) * in.pitch_bytes);
#pragma unroll
            for (int i = 0; i < G::kLanePieces; ++i) {
                const int p = lane + 32 * i, r = p / (G::kInputBytes / 16), q = p % (G::kInputBytes / 16);
                if (G::kPieces % 32 != 0 && p >= G::kPieces) break;
                pieces[i] = __ldg(top + (r * pitch_pieces + q));
            }
            return;
        }
#pragma unroll
        for (int i = 0; i < G::kLanePieces; ++i) {
            const int p = lane + 32 * i, r = p / (G::kInputBytes / 16), q = p % (G::kInputBytes / 16);
            if (G::kPieces % 32 != 0 && p >= G::kPieces) break;
            const int sy = rows::row_index(y_top + r, height, border.mode);
            if (sy >= 0) {
                pieces[i] = __ldg(reinterpret_cast<const uint4*>(in_band + static_cast<std::size_t>(sy) * in.pitch_bytes) + q);
            } else {
                const std::uint32_t v = 0x01010101u * border.value;
                pieces[i] = make_uint4(v, v, v, v);
            }
        }
    };
    const auto store_pieces = [&]() {
#pragma unroll
        for (int i = 0; i < G::kLanePieces; ++i) {
            const int p = lane + 32 * i, r = p / (G::kInputBytes / 16), q = p % (G::kInputBytes / 16);
            if (G::kPieces % 32 != 0 && p >= G::kPieces) break;
            *reinterpret_cast<uint4*>(buffer + r * G::kInputStride + 16 * q) = pieces[i];
        }
    };

    uint2 b[G::kChunks][kDigits];
    b_operands<R, S>(args, lane, b);

    const int g = lane / 4, t = lane % 4;
    constexpr int kStrideWords = G::kInputStride / 4;
    const int word0 = (kMarginLeft - G::kLead) / 4 + t;  // the lane's word of tile 0's window in a buffer row
    const int x_out = x0 + 2 * lane;                     // the lane's 2 output elements in the column pass
    const int out_bytes = min(2, row_elements - x_out);  // of them, those inside the row (<= 0: none)
    const bool out_aligned = ((reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % 2) == 0 && out_bytes == 2;
    std::uint8_t* const out_band = out.row(0, plane) + x_out;
    const std::uint32_t out_pitch = static_cast<std::uint32_t>(out.pitch_bytes);  // rows are at most 2^31 bytes

    if (pieces_inside) load_pieces(first);
    int slot = 2 * first % 3;  // 2k mod 3: the ring slot of chunk k's rows g (its rows g + 8 go to the next)
#pragma unroll 1
    for (int k = first; k <= last; ++k) {
        if (pieces_inside) {
            store_pieces();
            if (k < last) load_pieces(k + 1);
        } else {
            load_chunk_bordered<R, S>(in, border, plane, chunk_top(k), first_byte, buffer, lane);
        }
        __syncwarp();  // chunk k's input is in the buffer, and the column pass before is done with the ring

        // Row pass of chunk k: 16 rows x 64 elements, rows g into ring slot `slot`, rows g + 8 into the
        // next; two tiles at a time (24 accumulators live).
        {
            const std::uint32_t* const words = reinterpret_cast<const std::uint32_t*>(buffer);
            float* const rows_of[2] = {ring + slot * kSlotRows * kRingStride, ring + (slot == 2 ? 0 : slot + 1) * kSlotRows * kRingStride};
#pragma unroll
            for (int pair = 0; pair < kBandTiles / 2; ++pair) {
                int acc[2][kDigits][4];
#pragma unroll
                for (int c = 0; c < G::kChunks; ++c) {
                    // Tile j's window starts 8 bytes after tile j-1's: its second half is tile j+2's first.
                    std::uint32_t v[2][4];
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
#pragma unroll
                        for (int q = 0; q < 4; ++q) v[h][q] = words[(g + 8 * h) * kStrideWords + word0 + 8 * c + 2 * (2 * pair + q)];
                    }
#pragma unroll
                    for (int j = 0; j < 2; ++j) {
                        const std::uint32_t a[4] = {v[0][j], v[1][j], v[0][j + 2], v[1][j + 2]};
#pragma unroll
                        for (int d = 0; d < kDigits; ++d) {
                            if (c == 0) {
                                mma_u8s8_from(acc[j][d], a, b[c][d], kBiasBits);
                            } else {
                                mma_u8s8(acc[j][d], a, b[c][d]);
                            }
                        }
                    }
                }
                // acc[j][d][q]: row g (q < 2) or g + 8 of the chunk, element 8 (2 pair + j) + 2t + q % 2 of the band.
#pragma unroll
                for (int j = 0; j < 2; ++j) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        float2 values;
                        values.x = combine_digits(acc[j][2][2 * h], acc[j][1][2 * h], acc[j][0][2 * h]);
                        values.y = combine_digits(acc[j][2][2 * h + 1], acc[j][1][2 * h + 1], acc[j][0][2 * h + 1]);
                        *reinterpret_cast<float2*>(rows_of[h] + g * kRingStride + 8 * (2 * pair + j) + 2 * t) = values;
                    }
                }
            }
        }
        __syncwarp();  // the row results are in the ring

        // Column pass: output rows y0 - 16 + 16k + u (u < 16) of the lane's 2 columns, from ring rows
        // 16k - 8 ... 16k + 15 (slots 2k - 1, 2k, 2k + 1 mod 3; output u takes rows 8 - 2R + u ... + 2R).
        if (k > 0) {
            const float* const slots[3] = {ring + (slot == 0 ? 2 : slot - 1) * kSlotRows * kRingStride + 2 * lane,
                                           ring + slot * kSlotRows * kRingStride + 2 * lane,
                                           ring + (slot == 2 ? 0 : slot + 1) * kSlotRows * kRingStride + 2 * lane};
            const int y_first = y0 - kChunkRows + kChunkRows * k;
            std::uint8_t* const dst = out_band + static_cast<std::ptrdiff_t>(y_first) * static_cast<std::ptrdiff_t>(out.pitch_bytes);
            // The pass compiled twice: every output stored by one 2-byte store (the chunk's rows all
            // in the strip, the lane's 2 columns in the row, aligned), or each row checked (the strip's
            // last chunk at the image's bottom, the band at its right edge, odd pitches).
            const auto column_pass = [&](auto all_inside) {
                float2 acc[kChunkRows];
#pragma unroll
                for (int m = kSlotRows - 2 * R; m < 3 * kSlotRows; ++m) {
                    const float2 in2 = *reinterpret_cast<const float2*>(slots[m / kSlotRows] + (m % kSlotRows) * kRingStride);
#pragma unroll
                    for (int u = 0; u < kChunkRows; ++u) {
                        const int tap = m - (kSlotRows - 2 * R) - u;  // row m is tap `tap` of output u
                        if (tap < 0 || tap > 2 * R) continue;
                        if (tap == 0) {
                            acc[u].x = args.col[0] * in2.x, acc[u].y = args.col[0] * in2.y;
                        } else {
                            acc[u].x = fmaf(args.col[tap], in2.x, acc[u].x), acc[u].y = fmaf(args.col[tap], in2.y, acc[u].y);
                        }
                        if (tap < 2 * R) continue;
                        // Output u is complete.
                        const std::uint32_t pair = round_pack2(acc[u].x, acc[u].y);
                        if constexpr (decltype(all_inside)::value) {
                            __stcs(reinterpret_cast<unsigned short*>(row_address(dst, out_pitch, u)), static_cast<unsigned short>(pair));
                        } else {
                            if (y_first + u < y_end) {
                                if (out_aligned) {
                                    __stcs(reinterpret_cast<unsigned short*>(row_address(dst, out_pitch, u)), static_cast<unsigned short>(pair));
                                } else {
                                    store_pair_bordered(row_address(dst, out_pitch, u), out_bytes, pair);
                                }
                            }
                        }
                    }
                }
            };
            if (out_aligned && y_first + kChunkRows <= y_end) {
                column_pass(std::true_type{});
            } else {
                column_pass(std::false_type{});
            }
        }
        slot = slot == 0 ? 2 : slot - 1;  // 2 (k + 1) mod 3
    }
}

// The digits of a mask's row factor and its column factor scaled by 2^-e, with the coefficient
// error E of docs/numeric-contract.md. Why E bounds the error (r, c: the fp32 factors; e_sep:
// max |r_i c_j - m_ij|; Q_i = round(r_i 2^e), d = max |Q_i 2^-e - r_i|; p: the pixels):
//   the row pass computes V_j = sum_i Q_i p_ij exactly; the two roundings of its combination give
//   v_j with |v_j - V_j| <= 1.002 * 2^-23 sum_i (|Q_i| + 128) p_ij (combine_digits()' bound:
//   |S2 2^16 + S1 2^8| and |V_j| are at most sum (|Q_i| + 128) p_ij);
//   the column pass out = sum_j c_j 2^-e v_j (1 + b_j), |b_j| <= gamma_h (an h-tap FMA chain);
//   so out - sum m p = sum_j c_j 2^-e (v_j - V_j)(1 + b_j) + sum_j c_j 2^-e V_j b_j
//                      + sum_ij (c_j Q_i 2^-e - m_ij) p_ij,
//   where |c_j Q_i 2^-e - m_ij| <= max|c| d + e_sep and sum_j |c_j 2^-e V_j| <= sum |m p| +
//   (max|c| d + e_sep) sum p. With gamma_h <= gamma_{wh} (the verifier's term for sum |m p|):
//   E = (1 + gamma_h) (e_sep + max|c| (d + 1.002 * 2^-23 2^-e (max|Q| + 128))).
template <int R, int S>
struct RowDigits {
    RowMmaArgs<R, S> args{};
    double coefficient_error = 0.0;
    bool column_exact = true;  // the scaled column factor lost no bit (no subnormal)
};

template <int R, int S>
RowDigits<R, S> row_digits(const Mask& mask) {
    using G = Geometry<R, S>;
    const separable::Factors<R> f = separable::factors_of<R>(mask);
    const DigitScale scale = digit_scale(f.row, 2 * R + 1);
    RowDigits<R, S> out;
    std::uint8_t spread[kDigits][4 * G::kSpreadWords] = {};
    double largest_q = 0.0, digit_error = 0.0;
    for (int i = 0; i < G::K; ++i) {
        const int q = tap_multiple(f.row[i], scale.exponent);
        largest_q = std::max(largest_q, std::fabs(static_cast<double>(q)));
        digit_error = std::max(digit_error, std::fabs(static_cast<double>(f.row[i]) - std::ldexp(static_cast<double>(q), -scale.exponent)));
        for (int d = 0; d < kDigits; ++d) spread[d][16 + i * S] = static_cast<std::uint8_t>(digit_of(q, d) & 0xFF);
    }
    for (int d = 0; d < kDigits; ++d) {
        for (int w = 0; w < G::kSpreadWords; ++w) {
            std::uint32_t word = 0;
            for (int b = 0; b < 4; ++b) word |= static_cast<std::uint32_t>(spread[d][4 * w + b]) << (8 * b);
            out.args.spread[d][w] = word;
        }
    }
    double largest_c = 0.0;
    for (int j = 0; j < G::K; ++j) {
        out.args.col[j] = std::ldexp(f.col[j], -scale.exponent);
        if (std::ldexp(out.args.col[j], scale.exponent) != f.col[j]) out.column_exact = false;
        largest_c = std::max(largest_c, std::fabs(static_cast<double>(f.col[j])));
    }
    const SeparableFactors factors = *separable_variant_factors(mask);
    const double e_sep = separable_coefficient_error(mask, factors);
    const double h_u = mask.height() * std::ldexp(1.0, -24);
    const double rounding = 1.002 * std::ldexp(1.0, -23) * std::ldexp(largest_q + 128.0, -scale.exponent);
    const double e = (1.0 + h_u / (1.0 - h_u)) * (e_sep + largest_c * (digit_error + rounding));
    out.coefficient_error = e == 0.0 ? 0.0 : std::nextafter(e, std::numeric_limits<double>::infinity());
    return out;
}

int radius_of(const Problem& problem) { return rows::StripVariant::radius(problem); }

std::size_t shared_bytes_of(const Problem& problem, int threads) {
    const int warp_bytes = dispatch_radius_stride(problem, [](auto r, auto s) {
        return Geometry<decltype(r)::value, decltype(s)::value>::kWarpSharedBytes;
    });
    return static_cast<std::size_t>(threads / 32) * static_cast<std::size_t>(warp_bytes);
}

class ConvSeparableRowMma final : public Variant {
public:
    std::string name() const override { return "conv.separable_row_mma"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "separable mask: row pass on the integer tensor cores (bytes times the row factor's 8-bit digits), column "
               "pass in fp32 from a per-warp ring";
    }
    Support supports(const Problem& problem) const override {
        const Mask& mask = *problem.mask;
        if (const Support rank1 = separable::rank1_masks_only(mask); !rank1) return rank1;
        if (radius_of(problem) > kMaxRadius) {
            return Support::no(fmt::format("masks up to 9x9: {} ({}x{}) reaches past the row windows and the ring the kernel "
                                           "is compiled for (conv.separable_fused takes every size)",
                                           mask.name(), mask.width(), mask.height()));
        }
        const bool exact = dispatch_radius_stride(problem, [&](auto r, auto s) {
            return row_digits<decltype(r)::value, decltype(s)::value>(mask).column_exact;
        });
        if (!exact) {
            return Support::no(fmt::format("{}: its column factor scaled by the row digits' 2^-e would be subnormal "
                                           "(factors within a factor of 2^100 of each other)",
                                           mask.name()));
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x.assign(kBlockSides.begin(), kBlockSides.end());
        space.block_y = {1};
        space.parameters = {{"chunks", std::vector<int>(kStripChunks.begin(), kStripChunks.end()),
                             "16-row chunks of a warp's strip (read top to bottom)"}};
        space.default_shape = LaunchShape{128, 1, {{"chunks", 4}}};
        return space;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        if (shape.block_y != 1 || !listed(kBlockSides, shape.block_x)) {
            return Support::no(fmt::format("block {}x{}: a block of 64, 128 or 256 threads in x and 1 in y", shape.block_x, shape.block_y));
        }
        if (!listed(kStripChunks, shape.parameter("chunks"))) return Support::no("chunks = 1, 2, 4, 8 or 16");
        return Support::yes();
    }
    double coefficient_error(const Problem& problem) const override {
        return dispatch_radius_stride(problem, [&](auto r, auto s) {
            return row_digits<decltype(r)::value, decltype(s)::value>(*problem.mask).coefficient_error;
        });
    }
    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const ImageShape& image = problem.shape;
        const dim3 grid(grid_side(image.row_elements(), kBand * (shape.block_x / 32)),
                        grid_side(image.height, kChunkRows * shape.parameter("chunks")),
                        image.layout == Layout::aos ? 1u : static_cast<unsigned>(image.channels));
        const void* kernel = dispatch_radius_stride(problem, [](auto r, auto s) {
            return reinterpret_cast<const void*>(&conv_separable_row_mma_kernel<decltype(r)::value, decltype(s)::value>);
        });
        return {KernelLaunch{kernel, "conv_separable_row_mma_kernel", grid, block_of(shape), shared_bytes_of(problem, shape.block_x)}};
    }
    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        require_integer_mma(plan.device, name());
        const DeviceBuffers& b = plan.buffers;
        dispatch_radius_stride(plan.problem, [&](auto r, auto s) {
            constexpr int R = decltype(r)::value, S = decltype(s)::value;
            enqueue_kernel(plan.kernels[0], stream, &conv_separable_row_mma_kernel<R, S>, b.input.view<const std::uint8_t>(),
                           b.output.view<std::uint8_t>(), row_digits<R, S>(*plan.problem.mask).args, plan.problem.border,
                           plan.shape.parameter("chunks"));
            return 0;
        });
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvSeparableRowMma)
