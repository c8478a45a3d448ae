// The row sums of the box variants whose lane holds 16 whole pixels of a row's column sums V
// (conv.box_pixel_lanes; probes/box_column_ring.cu): S slid along each channel of the lane's own
// pixels, the first S of each channel from the previous lane's last rx + 1 pixels and this lane's
// first rx (a shuffle), the neighbours' columns by shuffle, rounded four bytes to a word.
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every kernel
// file that includes it, so a change to its code makes their tuning records stale (its comment-only
// lines do not count).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/box_span.hpp"
#include "kernels/box_sums.hpp"

namespace klab::box_pixel_rows {

using box_span::kFullMask;
using box_span::pack_bytes;
using box_span::rounded_word;
using box_sums::Rounding;

constexpr int kLanePixels = 16;               // pixels per lane: rx <= 15 reaches one lane each way
constexpr std::uint32_t kBias = 0x80008000u;  // 2^15 in each 16-bit half: V(enter) - V(leave) + 2^15 >= 0

// Word w of the lane's column sums V (elements 2w and 2w + 1 in its low and high half), held as E
// rows of 8 words (word w = v[w / 8][w % 8], the 16-byte piece w / 8).
template <int E>
__device__ __forceinline__ std::uint32_t word_of(const std::uint32_t (&v)[E][8], int w) {
    return v[w / 8][w % 8];
}

// Word k of the elements from this lane's first onward, k >= 8E in the next lane (its word k - 8E).
template <int E>
__device__ __forceinline__ std::uint32_t ahead_word(const std::uint32_t (&v)[E][8], int k) {
    return k < 8 * E ? word_of<E>(v, k) : __shfl_down_sync(kFullMask, word_of<E>(v, k - 8 * E), 1);
}

// Word k of the elements from this lane's first onward, k < 0 in the previous lane (its word k + 8E).
template <int E>
__device__ __forceinline__ std::uint32_t behind_word(const std::uint32_t (&v)[E][8], int k) {
    return k >= 0 ? word_of<E>(v, k) : __shfl_up_sync(kFullMask, word_of<E>(v, k + 8 * E), 1);
}

// The pair of elements (2w + offset, 2w + offset + 1) from words `low` and `high` (those of
// element 2w + offset rounded down to a word, and the word after it).
template <int Offset>
__device__ __forceinline__ std::uint32_t pair_at(std::uint32_t low, std::uint32_t high) {
    if constexpr (Offset % 2 == 0) {
        return low;
    } else {
        return __byte_perm(low, high, 0x5432u);  // the high half of `low`, the low half of `high`
    }
}

// The sums of V over the lane's elements [Begin, End), per channel: words added in 16-bit lanes,
// one accumulator per word phase (words E apart hold the same channels; at most 8 words each, so
// a half sums at most 8 * 7905 < 2^16), the half words at the range's ends on their own.
template <int E, int Begin, int End>
__device__ __forceinline__ void channel_sums(const std::uint32_t (&v)[E][8], std::uint32_t (&sums)[E]) {
    std::uint32_t phase[E];
    std::uint32_t loose[E];
#pragma unroll
    for (int c = 0; c < E; ++c) phase[c] = 0u, loose[c] = 0u;
#pragma unroll
    for (int w = 0; w < 8 * E; ++w) {
        const int low = 2 * w, high = 2 * w + 1;
        const bool has_low = low >= Begin && low < End, has_high = high >= Begin && high < End;
        if (has_low && has_high) {
            phase[w % E] += word_of<E>(v, w);
        } else if (has_low) {
            loose[low % E] += word_of<E>(v, w) & 0xffffu;
        } else if (has_high) {
            loose[high % E] += word_of<E>(v, w) >> 16;
        }
    }
    // Word phase r holds channel 2r mod E in its low half and 2r + 1 mod E in its high half.
#pragma unroll
    for (int c = 0; c < E; ++c) sums[c] = loose[c];
#pragma unroll
    for (int r = 0; r < E; ++r) {
        sums[(2 * r) % E] += phase[r] & 0xffffu;
        sums[(2 * r + 1) % E] += phase[r] >> 16;
    }
}

// The lane's 16E output bytes of one row, given V: S slid along each channel from the sum over the
// previous lane's last rx + 1 pixels and this lane's first rx, rounded, four bytes to a word, each
// 16 bytes handed to store(piece, bytes) as soon as they are done.
template <int E, int Rx, bool Normalized, class Store>
__device__ __forceinline__ void row_bytes_of(const std::uint32_t (&v)[E][8], const Rounding& rounding, const Store& store) {
    constexpr int kWords = 8 * E;
    constexpr int kLead = Rx * E;           // elements from an output to its box's entering column
    constexpr int kTrail = (Rx + 1) * E;    // and back to the column that leaves
    std::uint32_t before[E], after[E];
    channel_sums<E, 0, Rx * E>(v, after);                        // this lane's first rx pixels
    channel_sums<E, (kLanePixels - 1 - Rx) * E, 16 * E>(v, before);  // its last rx + 1, for the next lane
    std::uint32_t s[E];
#pragma unroll
    for (int c = 0; c < E; ++c) s[c] = __shfl_up_sync(kFullMask, before[c], 1) + after[c] + (Normalized ? rounding.half : 0u);

    // The entering pair of word w: words w + kLead / 2 (and the one after it, kLead odd) of the
    // elements from this lane's first on; the leaving pair: words w - kTrailWord (and the one after
    // it, kTrail odd), kTrailWord = ceil(kTrail / 2). With an odd offset each word serves two pairs:
    // it is carried to the next w, so that every neighbour's word is shuffled once.
    constexpr int kLeadWord = kLead / 2;
    constexpr int kTrailWord = (kTrail + 1) / 2;
    std::uint32_t enter_low = ahead_word<E>(v, kLeadWord);
    std::uint32_t leave_low = behind_word<E>(v, -kTrailWord);
    std::uint32_t bytes[4];
    std::uint32_t words[4];
#pragma unroll
    for (int w = 0; w < kWords; ++w) {
        std::uint32_t enter = enter_low, leave = leave_low;
        if constexpr (kLead % 2 == 1) {
            const std::uint32_t enter_high = ahead_word<E>(v, w + kLeadWord + 1);
            enter = pair_at<kLead>(enter_low, enter_high);
            enter_low = enter_high;
        } else if (w + 1 < kWords) {
            enter_low = ahead_word<E>(v, w + 1 + kLeadWord);
        }
        if constexpr (kTrail % 2 == 1) {
            const std::uint32_t leave_high = behind_word<E>(v, w - kTrailWord + 1);
            leave = pair_at<kTrail>(leave_low, leave_high);
            leave_low = leave_high;
        } else if (w + 1 < kWords) {
            leave_low = behind_word<E>(v, w + 1 - kTrailWord);
        }
        const std::uint32_t difference = enter + kBias - leave;  // each half: V(enter) - V(leave) + 2^15
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int element = 2 * w + h;
            const int channel = element % E;
            s[channel] += (h ? difference >> 16 : difference & 0xffffu) - 0x8000u;
            bytes[element % 4] = Normalized ? __umulhi(s[channel], rounding.inverse) : s[channel];
            if (element % 4 == 3) {
                words[element / 4 % 4] = Normalized ? pack_bytes(bytes[0], bytes[1], bytes[2], bytes[3])
                                                    : rounded_word(bytes[0], bytes[1], bytes[2], bytes[3], rounding);
                if (element % 16 == 15) store(element / 16, make_uint4(words[0], words[1], words[2], words[3]));
            }
        }
    }
}

}  // namespace klab::box_pixel_rows
