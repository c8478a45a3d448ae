// The row sums of the box variants whose lane holds 16 whole pixels of a row's column sums V
// (conv.box_pixel_lanes; probes/box_column_ring.cu): S slid along each channel of the lane's own
// pixels, the first S of each channel from the previous lane's last rx + 1 pixels and this lane's
// first rx (a shuffle), the neighbours' columns by shuffle, rounded four bytes to a word. For RGB
// rows of a normalized box of area up to 256, row_bytes_paired holds S two elements to a word.
//
// This header is device code: kernels/CMakeLists.txt puts it into the source hash of every kernel
// file that includes it, so a change to its code makes their tuning records stale (its comment-only
// lines do not count).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "kernels/box_span.hpp"
#include "kernels/box_sums.hpp"
#include "kernels/box_word_rounding.hpp"

namespace klab::box_pixel_rows {

using box_span::kFullMask;
using box_span::pack_bytes;
using box_span::rounded_word;
using box_sums::Rounding;

constexpr int kLanePixels = 16;               // pixels per lane: rx <= 15 reaches one lane each way
constexpr std::uint32_t kBias = 0x80008000u;  // 2^15 in each 16-bit half: V(enter) - V(leave) + 2^15 >= 0
// The largest normalized box whose sums row_bytes_paired holds two to a word: every S + half
// <= 255 * n + (n - 1) / 2 < 2^16, and the multiply-high of a whole word rounds its high half
// (kernels/box_word_rounding.hpp; tests/cpu/test_box_word_rounding.cpp checks every such box).
constexpr int kMaxPairedArea = 256;

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

// The pairs of V that enter and leave the boxes of word w's two elements, for w = 0, 1, ... in
// turn: the entering pair is words w + kLead / 2 (and the one after it, kLead odd) of the elements
// from this lane's first on; the leaving pair words w - kTrailWord (and the one after it, kTrail
// odd), kTrailWord = ceil(kTrail / 2). With an odd offset each word serves two pairs: it is carried
// to the next w, so that every neighbour's word is shuffled once.
template <int E, int Rx>
struct ColumnPairs {
    static constexpr int kWords = 8 * E;
    static constexpr int kLead = Rx * E;         // elements from an output to its box's entering column
    static constexpr int kTrail = (Rx + 1) * E;  // and back to the column that leaves
    static constexpr int kLeadWord = kLead / 2;
    static constexpr int kTrailWord = (kTrail + 1) / 2;
    std::uint32_t enter_low;
    std::uint32_t leave_low;

    __device__ __forceinline__ explicit ColumnPairs(const std::uint32_t (&v)[E][8])
        : enter_low(ahead_word<E>(v, kLeadWord)), leave_low(behind_word<E>(v, -kTrailWord)) {}

    // Word w's entering and leaving pairs (w = 0, 1, ..., kWords - 1, in turn).
    __device__ __forceinline__ void next(const std::uint32_t (&v)[E][8], int w, std::uint32_t& enter, std::uint32_t& leave) {
        enter = enter_low;
        leave = leave_low;
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
    }
};

// The lane's 16E output bytes of one row, given V: S slid along each channel from the sum over the
// previous lane's last rx + 1 pixels and this lane's first rx, rounded, four bytes to a word, each
// 16 bytes handed to store(piece, bytes) as soon as they are done.
template <int E, int Rx, bool Normalized, class Store>
__device__ __forceinline__ void row_bytes_of(const std::uint32_t (&v)[E][8], const Rounding& rounding, const Store& store) {
    std::uint32_t before[E], after[E];
    channel_sums<E, 0, Rx * E>(v, after);                        // this lane's first rx pixels
    channel_sums<E, (kLanePixels - 1 - Rx) * E, 16 * E>(v, before);  // its last rx + 1, for the next lane
    std::uint32_t s[E];
#pragma unroll
    for (int c = 0; c < E; ++c) s[c] = __shfl_up_sync(kFullMask, before[c], 1) + after[c] + (Normalized ? rounding.half : 0u);

    ColumnPairs<E, Rx> pairs(v);
    std::uint32_t bytes[4];
    std::uint32_t words[4];
#pragma unroll
    for (int w = 0; w < ColumnPairs<E, Rx>::kWords; ++w) {
        std::uint32_t enter, leave;
        pairs.next(v, w, enter, leave);
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

// The sums of V over the RGB lane's elements [Begin, End) (whole pixels), two channels to a word
// as the paired row sums hold S: `first` = (C0, C1) and `last` = (C1, C2), C the channels' sums.
// The words are added in 16-bit lanes, one accumulator per word phase as in channel_sums (phase 0
// holds channels (0, 1), phase 1 (2, 0), phase 2 (1, 2)), and the phases' halves meet by two byte
// permutes per word instead of being taken apart channel by channel. No half carries into the
// other: every partial sum is at most a box's sum (row_bytes_paired's bound).
template <int Begin, int End>
__device__ __forceinline__ void channel_pair_sums(const std::uint32_t (&v)[3][8], std::uint32_t& first, std::uint32_t& last) {
    std::uint32_t phase[3] = {0u, 0u, 0u};
    first = 0u;
    last = 0u;
    // A half word at the range's ends, x of channel c (in the low half): into C_c's halves.
    const auto add_loose = [&](int c, std::uint32_t x) {
        if (c == 0) first += x;
        if (c == 1) first += x << 16, last += x;
        if (c == 2) last += x << 16;
    };
#pragma unroll
    for (int w = 0; w < 24; ++w) {
        const int low = 2 * w, high = 2 * w + 1;
        const bool has_low = low >= Begin && low < End, has_high = high >= Begin && high < End;
        if (has_low && has_high) {
            phase[w % 3] += word_of<3>(v, w);
        } else if (has_low) {
            add_loose(low % 3, word_of<3>(v, w) & 0xffffu);
        } else if (has_high) {
            add_loose(high % 3, word_of<3>(v, w) >> 16);
        }
    }
    first += phase[0] + __byte_perm(phase[1], phase[2], 0x5432u);  // + (phase 1's C0, phase 2's C1)
    last += phase[2] + __byte_perm(phase[0], phase[1], 0x5432u);   // + (phase 0's C1, phase 1's C2)
}

// Four output bytes, each in byte 2 of a multiply-high's result (box_word::multiply_high of a
// word whose high half is the sum), to one word, the first lowest.
__device__ __forceinline__ std::uint32_t pack_high_quotients(std::uint32_t q0, std::uint32_t q1, std::uint32_t q2, std::uint32_t q3) {
    return __byte_perm(__byte_perm(q0, q1, 0x0062u), __byte_perm(q2, q3, 0x0062u), 0x5410u);
}

// row_bytes_of for RGB rows (E = 3) of a normalized box of area up to kMaxPairedArea, with S held two
// elements to a word as V is: word w = (S(2w), S(2w + 1)) = (S(2w - 3), S(2w - 2)) + the entering
// pair - the leaving pair, one add, where row_bytes_of takes a half out of the difference and adds
// it for each element. The first pair is the high half of word w - 2 and the low half of word w - 1
// (one byte permute), and no half borrows from the other: each half's result, S + half, lies in
// [0, 2^16). The first S are summed two to a word as well (channel_pair_sums). Each output byte is
// the high half of a word, rounded by one multiply-high of the whole word into its byte 2
// (kernels/box_word_rounding.hpp): word w gives S(2w + 1)'s byte, and the permute (S(2w - 1),
// S(2w)), which is word w + 1's first pair, gives S(2w)'s. On the H200 this took
// conv.box_pixel_lanes's rows loop from 396 to 327 instructions a warp and row on 8K RGB box9,
// and the first S two to a word (channel_pair_sums) to 318.
template <int Rx, class Store>
__device__ __forceinline__ void row_bytes_paired(const std::uint32_t (&v)[3][8], const Rounding& rounding, const Store& store) {
    constexpr int E = 3;
    std::uint32_t after_first, after_last, before_first, before_last;
    channel_pair_sums<0, Rx * E>(v, after_first, after_last);                      // this lane's first rx pixels
    channel_pair_sums<(kLanePixels - 1 - Rx) * E, 16 * E>(v, before_first, before_last);  // its last rx + 1, for the next lane
    const std::uint32_t halves = rounding.half * 0x10001u;  // the rounding's half in both halves
    // Word w's first pair (S(2w - 3), S(2w - 2)) and word w - 1 for w = 0: (S(-3), S(-2)) and
    // (S(-2), S(-1)), the sums of channels 0, 1 and 1, 2 before the lane's first pixel.
    std::uint32_t first_pair = __shfl_up_sync(kFullMask, before_first, 1) + after_first + halves;
    std::uint32_t last_word = __shfl_up_sync(kFullMask, before_last, 1) + after_last + halves;

    ColumnPairs<E, Rx> pairs(v);
    std::uint32_t quotients[4];  // the output byte of element 4k + i in byte 2 of quotients[i]
    std::uint32_t words[4];
#pragma unroll
    for (int w = 0; w < ColumnPairs<E, Rx>::kWords; ++w) {
        std::uint32_t enter, leave;
        pairs.next(v, w, enter, leave);
        const std::uint32_t word = first_pair + enter - leave;  // (S(2w), S(2w + 1))
        first_pair = __byte_perm(last_word, word, 0x5432u);     // (S(2w - 1), S(2w)): word w + 1's first pair
        last_word = word;
        quotients[(2 * w) % 4] = box_word::multiply_high(first_pair, rounding.inverse);
        quotients[(2 * w + 1) % 4] = box_word::multiply_high(word, rounding.inverse);
        const int element = 2 * w + 1;
        if (element % 4 == 3) {
            words[element / 4 % 4] = pack_high_quotients(quotients[0], quotients[1], quotients[2], quotients[3]);
            if (element % 16 == 15) store(element / 16, make_uint4(words[0], words[1], words[2], words[3]));
        }
    }
}

// The lane's output bytes of one row in the form the kernel was compiled for: Paired (RGB rows of
// a normalized box of area up to kMaxPairedArea, row_bytes_paired) or not (row_bytes_of).
template <int E, int Rx, bool Normalized, bool Paired, class Store>
__device__ __forceinline__ void row_output(const std::uint32_t (&v)[E][8], const Rounding& rounding, const Store& store) {
    if constexpr (Paired) {
        static_assert(E == 3 && Normalized, "the paired row sums take RGB rows of a normalized box");
        row_bytes_paired<Rx>(v, rounding, store);
    } else {
        row_bytes_of<E, Rx, Normalized>(v, rounding, store);
    }
}

}  // namespace klab::box_pixel_rows
