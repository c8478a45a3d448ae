// conv.packed_window — masks up to 5x5 whose taps are non-negative multiples of 1/256 summing to at
// most 1 (the 3x3 and 5x5 binomial Gaussians, 1-2-1 smoothing): conv.shuffle_window's register
// window in exact 16-bit integer lanes, two to a register, instead of fp32.
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
// 5x5 masks (2026-12-01) take the same walk at radius 2: five accumulator rows renamed over an
// unrolled step of five rows, the halo two pixels a side (up to 8 bytes: two shuffled words, or
// two chunks from memory at a warp's ends), the taps K = 5 wide (the binomial (1 4 6 4 1) rows as
// ends + three IMADs, the column pass five); every partial sum stays below 2^16 as before.
// Exactness: every tap is n / 256 with integer n >= 0 and sum(n) <= 256, so the reference's double
// sum is exactly sum(n x p) / 256, and round-half-even of it is what the lanes compute: identical
// results, not merely within the fp32 tie bound (the conformance suites hold it to verify_exact).
// Preconditions: such masks only, up to 5x5 (others are refused with the reason: negative taps, taps
// that are no multiple of 1/256, or a sum above 1 would need a sign or a saturation in each lane);
// every border, 1/3/4 channels, AoS and SoA, any pitch and size (odd pitches and rows of no multiple
// of 16 bytes take shuffle_window.hpp's element-wise fp32 path, exact for these masks too). Block:
// 32k x m threads, at most 512 up to 3x3 and `rows` = 3n + 2; for 5x5 at most 128 (three blocks per
// SM at up to 168 registers) and `rows` = 5n + 4.
// Measured on an NVIDIA H200 (device runs of 2026-11-24, klab tune then klab-bench, L2 flushed,
// medians of 3): 8K RGB AoS gaussian 3x3 59.1 us, 1.24x the copy floor of 48.0 us, tuned 128x4
// rows=62 (conv.shuffle_window 64.1 us with strips of at most 32 rows; this variant 63.2 us at
// rows=20, before the taller strips joined the tuning space); HD gaussian 3x3 9.6 us, 1.0x its copy
// floor; 480p 5.5 us. Nsight Compute, 8K at 64x2 rows=20: 26.8 M warp instructions (conv.shuffle_window
// 41.1 M), issue slots 42% busy, 118 registers, occupancy 22%, DRAM 66% of peak, 65% of the stalls
// waiting on loads: latency-bound, which is why taller strips (fewer cold starts, fewer waves) paid
// and a higher occupancy bought with spills did not (80 registers: 67.8 us).
// 5x5, measured on the H200 (the committed full klab run of 2026-12-01 at commit bc1100e, L2
// flushed, medians of 5, results/nvidia-h200/): 8K RGB AoS gaussian 5x5 66.9 us, 1.39x the copy
// floor (48.0 us), tuned 64x1 rows=64, 5.42x faster than NPP (363 us; conv.separable_row_mma
// 119 us); HD 12.1 us, 2.20x faster than NPP (26.6 us). In that run the 3x3: 8K 59.6 us (1.24x),
// HD 9.10, 480p 5.73. Uncapped (212 registers, 8 warps
// per SM) 75.1 us; Nsight Compute on that: 36.2 M warp instructions, 3.79 cycles per issued
// instruction, DRAM 55% of peak: latency-bound, hence the cap. The radius-generic walk left the 3x3
// kernels within 2.4% of the 3x3-only one in the same run (8K gauss3 60.7 us against 59.3, HD 9.2
// against 9.2). Measurements and the forms tried: kernels/notes/conv_packed_window.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <type_traits>
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

// How the lanes multiply: all K x K taps, or a rank-1 mask's integer factors (n = column x row),
// with a row (1, ..., 1) as left end + right end + the inner taps' products.
enum class Packed { full, rank1, rank1_unit_ends };

// The mask as integers n = 256 x tap, zero-padded to K x K around its centre (row-major, K = 2R + 1),
// and the factors of a rank-1 mask.
template <int R>
struct IntTaps {
    static constexpr int K = 2 * R + 1;
    std::uint32_t m[K * K];
    std::uint32_t row[K];
    std::uint32_t column[K];
};

// Kernel arguments: the integer taps and, for the element-wise path, the mask's own fp32 taps.
template <int R>
struct PackedTaps {
    IntTaps<R> n;
    float m[kSteps<R> * kSteps<R>];
};

template <int R, Packed A>
struct PackedWalk {
    static constexpr int K = 2 * R + 1;
    std::uint32_t m[K][K];  // row 0: the one an output row meets first
    __device__ __forceinline__ PackedWalk(const PackedTaps<R>& taps, bool down) {
#pragma unroll
        for (int j = 0; j < K; ++j)
#pragma unroll
            for (int i = 0; i < K; ++i) m[j][i] = down ? taps.n.m[K * j + i] : taps.n.m[K * (K - 1 - j) + i];
    }
};

template <int R>
struct PackedWalk<R, Packed::rank1> {
    static constexpr int K = 2 * R + 1;
    std::uint32_t row[K], column[K];
    __device__ __forceinline__ PackedWalk(const PackedTaps<R>& taps, bool down) {
#pragma unroll
        for (int i = 0; i < K; ++i) {
            row[i] = taps.n.row[i];
            column[i] = down ? taps.n.column[i] : taps.n.column[K - 1 - i];
        }
    }
};

template <int R>
struct PackedWalk<R, Packed::rank1_unit_ends> : PackedWalk<R, Packed::rank1> {
    using PackedWalk<R, Packed::rank1>::PackedWalk;
};

// Bytes b and b + 1 of `word` (b = 0 or 2) as two 16-bit lanes.
__device__ __forceinline__ std::uint32_t lanes_of(std::uint32_t word, int b) { return __byte_perm(word, 0u, b == 0 ? 0x4140u : 0x4342u); }

// The high lane of `low` and the low lane of `high`: the pair of elements one to the right of `low`'s.
__device__ __forceinline__ std::uint32_t straddle(std::uint32_t low, std::uint32_t high) { return __byte_perm(low, high, 0x5432u); }

template <int S, int R, Packed A>
struct PackedWindow {
    static constexpr int kRadius = R;
    static constexpr int K = 2 * R + 1;
    using Taps = PackedTaps<R>;
    using Walk = PackedWalk<R, A>;
    using Bits = HaloBits<S, R>;
    static constexpr int kHaloWords = sizeof(Bits) / 4;  // words of halo on each side: 1, or 2 where R S > 4
    // Word j (0 .. 7) of tap[c] holds elements 2j + (c - R) S and the one after it (lane 0 the
    // first): tap[R] the thread's own elements, tap[R - 1] and tap[R + 1] those S to the left and
    // right of them, and so on.
    struct Row {
        std::uint32_t tap[K][8];
    };
    struct Accumulators {
        std::uint32_t acc[K][8];
    };

    static __device__ __forceinline__ void window_row(const RawRow<R>& raw, Bits before, Bits after, Row& row) {
        // x[j + 2H] holds elements 2j and 2j + 1, for j = -2H .. 7 + 2H (H halo words a side): the
        // before words are elements -4H .. -1, the after words 16 .. 15 + 4H.
        constexpr int H = kHaloWords;
        const std::uint32_t w[4] = {raw.w.x, raw.w.y, raw.w.z, raw.w.w};
        std::uint32_t x[8 + 4 * H];
#pragma unroll
        for (int h = 0; h < H; ++h) {
            const std::uint32_t b = static_cast<std::uint32_t>(before >> (32 * h));
            x[2 * h] = lanes_of(b, 0);
            x[2 * h + 1] = lanes_of(b, 2);
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) x[j + 2 * H] = lanes_of(w[j / 2], 2 * (j % 2));
#pragma unroll
        for (int h = 0; h < H; ++h) {
            const std::uint32_t a = static_cast<std::uint32_t>(after >> (32 * h));
            x[8 + 2 * H + 2 * h] = lanes_of(a, 0);
            x[8 + 2 * H + 2 * h + 1] = lanes_of(a, 2);
        }
        // o[k] holds the pair one element to the right of x[k]'s (elements 2(k - 2H) + 1 and the one
        // after it), each straddling pair built once, whichever taps use it.
        std::uint32_t o[7 + 4 * H];
#pragma unroll
        for (int k = 0; k < 7 + 4 * H; ++k) o[k] = straddle(x[k], x[k + 1]);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
#pragma unroll
            for (int c = 0; c < K; ++c) {
                const int q = 2 * j + (c - R) * S;  // the pair's element offset
                row.tap[c][j] = q % 2 == 0 ? x[q / 2 + 2 * H] : o[(q - 1) / 2 + 2 * H];
            }
        }
    }

    template <int Phase, int First, int Last>
    static __device__ __forceinline__ void accumulate(Accumulators& a, const Row& row, const Walk& t) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            std::uint32_t h = 0;  // rank 1: the row pass
            if constexpr (A == Packed::rank1_unit_ends) {
                h = row.tap[0][j] + row.tap[K - 1][j];
#pragma unroll
                for (int c = 1; c < K - 1; ++c) h += t.row[c] * row.tap[c][j];
            } else if constexpr (A == Packed::rank1) {
#pragma unroll
                for (int c = 0; c < K; ++c) h += t.row[c] * row.tap[c][j];
            }
#pragma unroll
            for (int d = First; d <= Last; ++d) {
                std::uint32_t& acc = a.acc[(Phase + d) % K][j];
                const int tap_row = K - 1 - d;  // walk-tap row: d = 0 completes the output row, d = 2R starts it
                std::uint32_t sum;
                if constexpr (A == Packed::full) {
                    sum = 0;
#pragma unroll
                    for (int c = 0; c < K; ++c) sum += t.m[tap_row][c] * row.tap[c][j];
                } else {
                    sum = t.column[tap_row] * h;
                }
                acc = d == 2 * R ? sum + kHalfBelow : acc + sum;
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

// Up to 3x3: one block of up to 512 threads per SM at least (up to 128 registers). 5x5: five
// accumulator rows and five rows in flight; left alone ptxas takes about 212 registers (8 warps per
// SM), so blocks of up to 128 threads, 3 per SM: at most 168 registers, no spills (check_shape()).
template <int R>
constexpr int kBlockThreads = R == 1 ? kMaxBlockThreads : 128;

template <int S, int R, Packed A>
__global__ void __launch_bounds__(kBlockThreads<R>, R == 1 ? 1 : 3)
    conv_packed_window_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, PackedTaps<R> taps, Border border, int rows) {
    run_strip<S, PackedWindow<S, R, A>>(in, out, taps.m, taps, border, rows);
}

template <int R>
using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, PackedTaps<R>, Border, int);

template <int R, Packed A>
Kernel<R> kernel_by_stride(int stride) {
    return by_channels<Kernel<R>>(stride, &conv_packed_window_kernel<1, R, A>, &conv_packed_window_kernel<3, R, A>,
                                  &conv_packed_window_kernel<4, R, A>);
}

// The mask as the lanes apply it, zero-padded to the window of radius R, or why they cannot.
template <int R>
struct MaskPlan {
    Packed arithmetic;
    PackedTaps<R> taps;
};

constexpr int kScale = 1 << kScaleBits;

// The mask's refusal, if any: larger than 5x5, or taps the 16-bit lanes cannot hold exactly.
template <int R>
std::optional<MaskPlan<R>> plan_mask(const Mask& mask, std::string* why = nullptr) {
    constexpr int K = 2 * R + 1;
    const auto refuse = [&](std::string reason) -> std::optional<MaskPlan<R>> {
        if (why) *why = std::move(reason);
        return std::nullopt;
    };
    const char* const fp32_peer = R == 1 ? "conv.shuffle_window takes any 3x3 mask in fp32" : "conv.shuffle_ring takes any mask up to 9x9 in fp32";
    if (mask.width() > K || mask.height() > K) {
        return refuse(fmt::format("masks up to {0}x{0}: {1} is {2}x{3} ({0} rows of 8 words per thread)", K, mask.name(), mask.width(),
                                  mask.height()));
    }
    MaskPlan<R> plan{Packed::full, {}};
    const rows::Taps2D<R> padded = rows::taps_2d<R>(mask);  // zero-padded to K x K around the centre
    std::copy(padded.m, padded.m + K * K, plan.taps.m);
    int sum = 0;
    for (int k = 0; k < K * K; ++k) {
        const double scaled = std::ldexp(static_cast<double>(padded.m[k]), kScaleBits);
        if (!(scaled >= 0.0) || scaled != std::floor(scaled) || scaled > kScale) {
            // Rows and columns counted in the mask itself, not in the padding.
            const int row = k / K - (R - mask.radius_y()) + 1, column = k % K - (R - mask.radius_x()) + 1;
            return refuse(fmt::format("taps that are non-negative multiples of 1/256: {} has {} at row {}, column {} ({})",
                                      mask.name(), padded.m[k], row, column, fp32_peer));
        }
        plan.taps.n.m[k] = static_cast<std::uint32_t>(scaled);
        sum += static_cast<int>(scaled);
    }
    if (sum > kScale) {
        return refuse(fmt::format("taps summing to at most 1 (each 16-bit lane holds up to 255 x 256): {}'s sum to {}/256 ({})",
                                  mask.name(), sum, fp32_peer));
    }
    // Rank 1 in integers: the first non-zero row divided by the gcd of its taps is the row factor;
    // every row must be an integer multiple of it.
    const std::uint32_t* n = plan.taps.n.m;
    const auto row_is_zero = [&](int j) { return std::all_of(n + K * j, n + K * j + K, [](std::uint32_t v) { return v == 0; }); };
    int first = 0;
    while (first < K && row_is_zero(first)) ++first;
    if (first == K) return plan;  // the zero mask: K x K zero taps
    std::uint32_t g = 0;
    for (int i = 0; i < K; ++i) g = std::gcd(g, n[K * first + i]);
    std::uint32_t row[K], column[K];
    for (int i = 0; i < K; ++i) row[i] = n[K * first + i] / g;
    int pivot = 0;
    while (row[pivot] == 0) ++pivot;
    for (int j = 0; j < K; ++j) {
        column[j] = n[K * j + pivot] / row[pivot];
        for (int i = 0; i < K; ++i) {
            if (column[j] * row[i] != n[K * j + i]) return plan;
        }
    }
    std::copy(row, row + K, plan.taps.n.row);
    std::copy(column, column + K, plan.taps.n.column);
    plan.arithmetic = row[0] == 1 && row[K - 1] == 1 ? Packed::rank1_unit_ends : Packed::rank1;
    return plan;
}

template <int R>
Kernel<R> kernel_for(const Problem& problem, Packed arithmetic) {
    const int stride = rows::element_stride(problem.shape);
    switch (arithmetic) {
        case Packed::rank1: return kernel_by_stride<R, Packed::rank1>(stride);
        case Packed::rank1_unit_ends: return kernel_by_stride<R, Packed::rank1_unit_ends>(stride);
        case Packed::full: break;
    }
    return kernel_by_stride<R, Packed::full>(stride);
}

// f(std::integral_constant<int, R>{}) for the radius R of the window the mask takes (1 or 2).
template <class F>
decltype(auto) with_window(const Mask& mask, F&& f) {
    if (window_radius(mask) == 1) return f(std::integral_constant<int, 1>{});
    return f(std::integral_constant<int, 2>{});
}

template <int R>
MaskPlan<R> accepted_plan(const Mask& mask) {
    std::string why;
    std::optional<MaskPlan<R>> plan = plan_mask<R>(mask, &why);
    if (!plan) throw Error(fmt::format("conv.packed_window cannot apply {}", mask.name()), why);
    return *plan;
}

class ConvPackedWindow final : public Variant {
public:
    std::string name() const override { return "conv.packed_window"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "masks up to 5x5 with taps k/256 (k >= 0, sum <= 1): conv.shuffle_window's register window in exact 16-bit "
               "integer lanes, two per register; rank-1 masks as row and column passes";
    }
    Support supports(const Problem& problem) const override {
        std::string why;
        const Mask& mask = *problem.mask;
        const bool planned = with_window(mask, [&](auto radius) { return plan_mask<decltype(radius)::value>(mask, &why).has_value(); });
        return planned ? Support::yes() : Support::no(why);
    }
    TuningSpace tuning_space() const override { return shuffle_window::tuning_space(kMaxRadius); }
    LaunchShape default_shape(const Problem& problem) const override { return shuffle_window::default_shape(problem); }
    Support check_shape(const Problem& problem, const LaunchShape& shape) const override {
        if (Support walk = shuffle_window::check_shape(problem, shape); !walk) return walk;
        if (window_radius(*problem.mask) == 2 && shape.block_x * shape.block_y > kBlockThreads<2>) {
            return Support::no(fmt::format("block {}x{}: a 5x5 mask takes blocks of at most {} threads (five accumulator rows and "
                                           "five rows in flight per thread: up to 168 registers)",
                                           shape.block_x, shape.block_y, kBlockThreads<2>));
        }
        return Support::yes();
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const dim3 grid = shuffle_window::grid(problem.shape, shape);
        const Mask& mask = *problem.mask;
        const KernelLaunch launch = with_window(mask, [&](auto radius) {
            constexpr int R = decltype(radius)::value;
            return make_launch(kernel_for<R>(problem, accepted_plan<R>(mask).arithmetic), "conv_packed_window_kernel", grid, block_of(shape));
        });
        return {launch};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        with_window(*plan.problem.mask, [&](auto radius) { enqueue_with<decltype(radius)::value>(plan, stream); });
    }

private:
    template <int R>
    static void enqueue_with(const LaunchPlan& plan, cudaStream_t stream) {
        const MaskPlan<R> mask = accepted_plan<R>(*plan.problem.mask);
        enqueue_kernel(plan.kernels[0], stream, kernel_for<R>(plan.problem, mask.arithmetic), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), mask.taps, plan.problem.border, plan.shape.parameter("rows"));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvPackedWindow)
