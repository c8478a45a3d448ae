// conv.packed_window — masks up to 3x3 whose taps are non-negative multiples of 1/256 summing to at
// most 1 (the 3x3 Gaussian, 1-2-1 smoothing): conv.shuffle_window's register window in exact 16-bit
// integer lanes, two to a register, instead of fp32.
//
// Technique (over conv.shuffle_window, whose fp32 window spends 28% of its instructions converting
// bytes to floats and rounding them back, and holds 16 floats per accumulator row): the same walk
// (kernels/shuffle_window.hpp: 16 bytes x a strip of rows per thread, the halo by warp shuffle, three
// accumulator rows rotating by renaming, 16-byte streaming stores), with every value an integer:
// - a row's 16 bytes become 8 words of two 16-bit lanes (one byte permute per word: element pairs
//   2j, 2j + 1); the neighbours S elements to the left and right are words too, one byte permute of
//   two adjacent words each (S odd), or whole words (S = 4);
// - the taps are integers n = 256 x tap, so that an output is sum(n x p) / 256 exactly; one IMAD
//   multiplies both lanes of a word by a tap (no lane can carry into the next: every partial sum is
//   at most 255 x 256 + 127 < 2^16);
// - rank-1 masks (the Gaussian: n = (16, 32, 16) x (1, 2, 1)) run a row pass (left + right + 2
//   centre) and a column pass (three IMADs), like conv.shuffle_window's separable arithmetic; other
//   masks take nine IMADs per word;
// - the fresh accumulator row starts at 127 in each lane, so that the rounding half to even is one
//   shift-and-mask (bit 8, the quotient's parity) and one add per word, after which the output
//   byte is each lane's high byte: one byte permute packs four outputs.
// Per 16 elements of an RGB Gaussian row the interior loop runs 120 instructions, where
// conv.shuffle_window runs 191 (16 of them on the quarter-rate conversion pipe).
// Exactness: every tap is n / 256 with integer n >= 0 and sum(n) <= 256, so the reference's double
// sum is exactly sum(n x p) / 256, and round-half-even of it is what the lanes compute: identical
// results, not merely within the fp32 tie bound (the conformance suites hold it to verify_exact).
// Preconditions: such masks only (others are refused with the reason: negative taps, taps that are
// no multiple of 1/256, or a sum above 1 would need a sign or a saturation in each lane); every
// border, 1/3/4 channels, AoS and SoA, any pitch and size (odd pitches and rows of no multiple of
// 16 bytes take shuffle_window.hpp's element-wise fp32 path, exact for these masks too). Block: 32k x
// m threads, at most 512; `rows` = 3n + 2.
// Measured on an NVIDIA H200 (device runs of 2026-11-24, klab tune then klab-bench, L2 flushed,
// medians of 3): 8K RGB AoS gaussian 3x3 59.1 us, 1.24x the copy floor of 48.0 us, tuned 128x4
// rows=62 (conv.shuffle_window 64.1 us with strips of at most 32 rows; this variant 63.2 us at
// rows=20, before the taller strips joined the tuning space); HD gaussian 3x3 9.6 us, 1.0x its copy
// floor; 480p 5.5 us. Nsight Compute, 8K at 64x2 rows=20: 26.8 M warp instructions (conv.shuffle_window
// 41.1 M), issue slots 42% busy, 118 registers, occupancy 22%, DRAM 66% of peak, 65% of the stalls
// waiting on loads: latency-bound, which is why taller strips (fewer cold starts, fewer waves) paid
// and a higher occupancy bought with spills did not (80 registers: 67.8 us).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/shuffle_window.hpp"

namespace klab {
namespace {

using namespace shuffle_window;

constexpr int kScaleBits = 8;  // taps are multiples of 2^-8
constexpr std::uint32_t kLanes = 0x00010001u;  // 1 in each 16-bit lane
constexpr std::uint32_t kHalfBelow = 127u * kLanes;  // 2^7 - 1: round-half-even adds it and the quotient's parity

// How the lanes multiply: all nine taps, or a rank-1 mask's integer factors (n = column x row),
// with a row (1, s, 1) as left + right + s x centre.
enum class Packed { full, rank1, rank1_unit_ends };

// The mask as integers n = 256 x tap, zero-padded to 3x3 around its centre (row-major), and the
// factors of a rank-1 mask.
struct IntTaps {
    std::uint32_t m[9];
    std::uint32_t row[3];
    std::uint32_t column[3];
};

// Kernel arguments: the integer taps and, for the element-wise path, the mask's own fp32 taps.
struct PackedTaps {
    IntTaps n;
    float m[9];
};

template <Packed A>
struct PackedWalk {
    std::uint32_t m[3][3];  // row 0: the one an output row meets first
    __device__ __forceinline__ PackedWalk(const PackedTaps& taps, bool down) {
#pragma unroll
        for (int j = 0; j < 3; ++j)
#pragma unroll
            for (int i = 0; i < 3; ++i) m[j][i] = down ? taps.n.m[3 * j + i] : taps.n.m[3 * (2 - j) + i];
    }
};

template <>
struct PackedWalk<Packed::rank1> {
    std::uint32_t row[3], column[3];
    __device__ __forceinline__ PackedWalk(const PackedTaps& taps, bool down) {
#pragma unroll
        for (int i = 0; i < 3; ++i) {
            row[i] = taps.n.row[i];
            column[i] = down ? taps.n.column[i] : taps.n.column[2 - i];
        }
    }
};

template <>
struct PackedWalk<Packed::rank1_unit_ends> : PackedWalk<Packed::rank1> {
    using PackedWalk<Packed::rank1>::PackedWalk;
};

// Bytes b and b + 1 of `word` (b = 0 or 2) as two 16-bit lanes.
__device__ __forceinline__ std::uint32_t lanes_of(std::uint32_t word, int b) { return __byte_perm(word, 0u, b == 0 ? 0x4140u : 0x4342u); }

// The high lane of `low` and the low lane of `high`: the pair of elements one to the right of `low`'s.
__device__ __forceinline__ std::uint32_t straddle(std::uint32_t low, std::uint32_t high) { return __byte_perm(low, high, 0x5432u); }

template <int S, Packed A>
struct PackedWindow {
    using Taps = PackedTaps;
    using Walk = PackedWalk<A>;
    // Word j (0 .. 7) holds elements 2j and 2j + 1 of the thread's 16 (lane 0 the first); left[j] and
    // right[j] the elements S to the left and S to the right of them.
    struct Row {
        std::uint32_t centre[8], left[8], right[8];
    };
    struct Accumulators {
        std::uint32_t acc[kSteps][8];
    };

    static __device__ __forceinline__ void window_row(const RawRow& raw, std::uint32_t before, std::uint32_t after, Row& row) {
        // x[j + 2] holds elements 2j and 2j + 1, for j = -2 .. 9: the before word is elements -4 .. -1,
        // the after word 16 .. 19.
        const std::uint32_t w[4] = {raw.w.x, raw.w.y, raw.w.z, raw.w.w};
        std::uint32_t x[12];
        x[0] = lanes_of(before, 0);
        x[1] = lanes_of(before, 2);
#pragma unroll
        for (int j = 0; j < 8; ++j) x[j + 2] = lanes_of(w[j / 2], 2 * (j % 2));
        x[10] = lanes_of(after, 0);
        x[11] = lanes_of(after, 2);
        // For odd S, the pairs one element to the right of x's: o[k] = elements 2k - 3 and 2k - 2
        // (k = 0 .. 10); left[j] is o[j + 2 - (S + 1) / 2], right[j] o[j + 2 + (S - 1) / 2], so that each
        // straddling pair is built once, whichever side uses it.
        std::uint32_t o[11];
#pragma unroll
        for (int k = 0; k < 11; ++k) o[k] = straddle(x[k], x[k + 1]);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            row.centre[j] = x[j + 2];
            if constexpr (S % 2 == 0) {  // S = 4: elements 2j - 4 .. and 2j + 4 .. are words j - 2 and j + 2
                row.left[j] = x[j];
                row.right[j] = x[j + 4];
            } else {
                row.left[j] = o[j + 2 - (S + 1) / 2];
                row.right[j] = o[j + 2 + (S - 1) / 2];
            }
        }
    }

    template <int Phase, bool Done, bool Mid, bool Fresh>
    static __device__ __forceinline__ void accumulate(Accumulators& a, const Row& row, const Walk& t) {
        std::uint32_t(&done)[8] = a.acc[Phase % kSteps];
        std::uint32_t(&mid)[8] = a.acc[(Phase + 1) % kSteps];
        std::uint32_t(&fresh)[8] = a.acc[(Phase + 2) % kSteps];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const std::uint32_t l = row.left[j], c = row.centre[j], r = row.right[j];
            if constexpr (A == Packed::full) {
                if (Done) done[j] += t.m[2][0] * l + t.m[2][1] * c + t.m[2][2] * r;
                if (Mid) mid[j] += t.m[1][0] * l + t.m[1][1] * c + t.m[1][2] * r;
                if (Fresh) fresh[j] = t.m[0][0] * l + t.m[0][1] * c + t.m[0][2] * r + kHalfBelow;
            } else {
                const std::uint32_t h = A == Packed::rank1_unit_ends ? l + r + t.row[1] * c : t.row[0] * l + t.row[1] * c + t.row[2] * r;
                if (Done) done[j] += t.column[2] * h;
                if (Mid) mid[j] += t.column[1] * h;
                if (Fresh) fresh[j] = t.column[0] * h + kHalfBelow;
            }
        }
    }

    // Each lane holds 256 x the exact output + 127: adding the quotient's parity (bit 8) makes the
    // high byte the output rounded half to even (a remainder of 128 then carries only for odd
    // quotients; the parity cannot change the outcome at any other remainder).
    template <int Phase>
    static __device__ __forceinline__ void store_row(const Accumulators& a, bool active, std::uint8_t* dst) {
        const std::uint32_t(&acc)[8] = a.acc[Phase];
        std::uint32_t rounded[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) rounded[j] = acc[j] + ((acc[j] & (kLanes << kScaleBits)) >> kScaleBits);
        uint4 v;
        v.x = __byte_perm(rounded[0], rounded[1], 0x7531u);
        v.y = __byte_perm(rounded[2], rounded[3], 0x7531u);
        v.z = __byte_perm(rounded[4], rounded[5], 0x7531u);
        v.w = __byte_perm(rounded[6], rounded[7], 0x7531u);
        if (active) __stcs(reinterpret_cast<uint4*>(dst), v);
    }
};

template <int S, Packed A>
__global__ void __launch_bounds__(kMaxBlockThreads, 1)
    conv_packed_window_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, PackedTaps taps, Border border, int rows) {
    run_strip<S, PackedWindow<S, A>>(in, out, taps.m, taps, border, rows);
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, PackedTaps, Border, int);

template <Packed A>
Kernel kernel_by_stride(int stride) {
    return by_channels<Kernel>(stride, &conv_packed_window_kernel<1, A>, &conv_packed_window_kernel<3, A>,
                               &conv_packed_window_kernel<4, A>);
}

// The mask as the lanes apply it, or why they cannot.
struct MaskPlan {
    Packed arithmetic;
    PackedTaps taps;
};

constexpr int kScale = 1 << kScaleBits;

std::optional<MaskPlan> plan_mask(const Mask& mask, std::string* why = nullptr) {
    const auto refuse = [&](std::string reason) -> std::optional<MaskPlan> {
        if (why) *why = std::move(reason);
        return std::nullopt;
    };
    if (mask.width() > 3 || mask.height() > 3) {
        return refuse(fmt::format("masks up to 3x3: {} is {}x{} (three rows of 8 words per thread)", mask.name(), mask.width(),
                                  mask.height()));
    }
    MaskPlan plan{Packed::full, {}};
    const rows::Taps2D<1> padded = rows::taps_2d<1>(mask);  // zero-padded to 3x3 around the centre
    std::copy(padded.m, padded.m + 9, plan.taps.m);
    int sum = 0;
    for (int k = 0; k < 9; ++k) {
        const double scaled = std::ldexp(static_cast<double>(padded.m[k]), kScaleBits);
        if (!(scaled >= 0.0) || scaled != std::floor(scaled) || scaled > kScale) {
            return refuse(fmt::format("taps that are non-negative multiples of 1/256: {} has {} at row {}, column {} "
                                      "(conv.shuffle_window takes any 3x3 mask in fp32)",
                                      mask.name(), padded.m[k], k / 3 + 1, k % 3 + 1));
        }
        plan.taps.n.m[k] = static_cast<std::uint32_t>(scaled);
        sum += static_cast<int>(scaled);
    }
    if (sum > kScale) {
        return refuse(fmt::format("taps summing to at most 1 (each 16-bit lane holds up to 255 x 256): {}'s sum to {}/256 "
                                  "(conv.shuffle_window takes any 3x3 mask in fp32)",
                                  mask.name(), sum));
    }
    // Rank 1 in integers: the first non-zero row divided by the gcd of its taps is the row factor;
    // every row must be an integer multiple of it.
    const std::uint32_t* n = plan.taps.n.m;
    int first = 0;
    while (first < 3 && n[3 * first] == 0 && n[3 * first + 1] == 0 && n[3 * first + 2] == 0) ++first;
    if (first == 3) return plan;  // the zero mask: nine zero taps
    const std::uint32_t g = std::gcd(std::gcd(n[3 * first], n[3 * first + 1]), n[3 * first + 2]);
    std::uint32_t row[3], column[3];
    for (int i = 0; i < 3; ++i) row[i] = n[3 * first + i] / g;
    const int pivot = row[0] != 0 ? 0 : row[1] != 0 ? 1 : 2;
    for (int j = 0; j < 3; ++j) {
        column[j] = n[3 * j + pivot] / row[pivot];
        for (int i = 0; i < 3; ++i) {
            if (column[j] * row[i] != n[3 * j + i]) return plan;
        }
    }
    std::copy(row, row + 3, plan.taps.n.row);
    std::copy(column, column + 3, plan.taps.n.column);
    plan.arithmetic = row[0] == 1 && row[2] == 1 ? Packed::rank1_unit_ends : Packed::rank1;
    return plan;
}

Kernel kernel_for(const Problem& problem, Packed arithmetic) {
    const int stride = rows::element_stride(problem.shape);
    switch (arithmetic) {
        case Packed::rank1: return kernel_by_stride<Packed::rank1>(stride);
        case Packed::rank1_unit_ends: return kernel_by_stride<Packed::rank1_unit_ends>(stride);
        case Packed::full: break;
    }
    return kernel_by_stride<Packed::full>(stride);
}

MaskPlan accepted_plan(const Mask& mask) {
    std::string why;
    std::optional<MaskPlan> plan = plan_mask(mask, &why);
    if (!plan) throw Error(fmt::format("conv.packed_window cannot apply {}", mask.name()), why);
    return *plan;
}

class ConvPackedWindow final : public Variant {
public:
    std::string name() const override { return "conv.packed_window"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "masks up to 3x3 with taps k/256 (k >= 0, sum <= 1): conv.shuffle_window's register window in exact 16-bit "
               "integer lanes, two per register; rank-1 masks as row and column passes";
    }
    Support supports(const Problem& problem) const override {
        std::string why;
        if (!plan_mask(*problem.mask, &why)) return Support::no(why);
        return Support::yes();
    }
    TuningSpace tuning_space() const override { return shuffle_window::tuning_space(); }
    LaunchShape default_shape(const Problem& problem) const override { return shuffle_window::default_shape(problem); }
    Support check_shape(const Problem&, const LaunchShape& shape) const override { return shuffle_window::check_shape(shape); }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        return {make_launch(kernel_for(problem, accepted_plan(*problem.mask).arithmetic), "conv_packed_window_kernel",
                            shuffle_window::grid(problem.shape, shape), block_of(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const MaskPlan mask = accepted_plan(*plan.problem.mask);
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem, mask.arithmetic), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), mask.taps, plan.problem.border, plan.shape.parameter("rows"));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvPackedWindow)
