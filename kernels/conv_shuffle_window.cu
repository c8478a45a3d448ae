// conv.shuffle_window — masks up to 3x3: 16 bytes x a strip of rows per thread, the window in
// registers, the halo by warp shuffle, no shared memory.
//
// Technique (issue 14, over conv.register_window, which passes every fp32 row through shared
// memory behind a barrier): each thread owns 16 consecutive bytes (elements) of a stored row and
// walks a strip of `rows` rows (tuned), the rows loaded three ahead, the S elements beyond its 16 on
// each side (S = 1 gray or SoA, 3 RGB, 4 RGBA) from the neighbouring lanes by two shuffles: the
// walk in kernels/shuffle_window.hpp, shared with conv.packed_window. Every byte is converted to
// fp32 once (a byte permute and a subtraction, no conversion instruction) and multiplied, while it
// is in registers, into the three output rows it touches: three rows of 16 accumulators.
// Taps are in registers, rows flipped for strips that walk up. Per element: 9 FMAs; 5 for a cross
// (the four corner taps zero: sharpen, Laplacian, every 1x3 and 3x1 mask); 3 + 3 for other rank-1
// masks (klab::separable_variant_factors: a row pass on the register row, then the column pass into
// the accumulators), 2 + 3 where the row factor is symmetric (r, s, r: Gaussians, boxes), whose
// row pass is (left + right) + (s / r) x with r moved into the column factors; coefficient_error()
// says what the factors cost. Outputs: cvt.rni.sat.u8.f32 (the store rule in one instruction), one
// 16-byte streaming store per row.
// Preconditions: masks up to 3x3 (a smaller mask is zero-padded: a zero tap adds +0); every border,
// 1/3/4 channels, AoS and SoA, any pitch and size. The window needs 16-byte aligned rows of a
// multiple of 16 bytes and at least two lanes of a warp inside the row; other strips (odd pitches,
// odd widths) compute each output from its nine samples (the header's elementwise_strip, the same
// taps, border_index for every sample). Block: 32k x m threads, at most 512 (a warp's lanes lie along a
// row), `rows` = 3n + 2 (the rotation of three accumulator rows ends where it began).
// Measured on an NVIDIA H200 (device runs of 2026-11-24, klab-bench, L2 flushed, tuned shapes,
// medians of 3): 8K RGB AoS sharpen 63.0 us (1.33x the copy floor of 47.8 us; NPP's
// nppiFilterBorder32f 174.9 us: 2.8x faster; conv.register_window_async 189 us), gaussian 3x3
// 64.0 us (1.35x; 67.2 us before the symmetric row pass; conv.separable_fused 105 us, NPP 141 us),
// box 3x3 64.1 us (NPP 302 us), HD gaussian 3x3 9.9 us (NPP 14.0 us), HD sharpen 9.8 us (NPP
// 19.0 us), 480p gaussian 3x3 5.5 us (1.38x). Nsight Compute, 8K sharpen: 40.4 M warp
// instructions, issue slots 64% busy, 122 registers, occupancy 22%, DRAM 63% of peak; gaussian
// 3x3: 41.1 M (44.6 M before), 64%, 128 registers, DRAM 62%. Both are bound by issue and load
// latency together: the three rows in flight are all 128 registers leave room for (an L2 prefetch
// four rows further on gained 2-4%), and the byte conversions and the rounding are 28% of the
// instructions.
// Deliberately not done: no cp.async or TMA staging (the rows go straight to registers); packed
// integer arithmetic is conv.packed_window's step, for the masks it can take exactly.
#include <algorithm>
#include <cstdint>
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


// The mask zero-padded to 3x3 around its centre (row-major) and, for a rank-1 mask, its row and
// column factors padded the same way.
struct Taps3x3 {
    float m[9];
    float row[3];
    float column[3];
};

// How a step multiplies: all nine taps; a cross (the four corner taps zero, as in sharpen and the
// Laplacian: five FMAs per element); a rank-1 mask's row and column factors (six); or, where the
// row factor is symmetric (r, s, r: Gaussians, boxes), the row pass as (left + right) + (s / r) x
// with r moved into the column factors (five).
enum class Arithmetic { full, cross, separable, symmetric };

// The taps in walk order: row 0 is the one an output row meets first (mask row 0 walking down,
// row 2 walking up).
template <Arithmetic A>
struct WalkTaps {
    float m[3][3];
    __device__ __forceinline__ WalkTaps(const Taps3x3& taps, bool down) {
#pragma unroll
        for (int j = 0; j < 3; ++j)
#pragma unroll
            for (int i = 0; i < 3; ++i) m[j][i] = down ? taps.m[3 * j + i] : taps.m[3 * (2 - j) + i];
    }
};

template <>
struct WalkTaps<Arithmetic::separable> {
    float row[3], column[3];
    __device__ __forceinline__ WalkTaps(const Taps3x3& taps, bool down) {
#pragma unroll
        for (int i = 0; i < 3; ++i) {
            row[i] = taps.row[i];
            column[i] = down ? taps.column[i] : taps.column[2 - i];
        }
    }
};

// The same factors; row[0] and row[2] are 1.
template <>
struct WalkTaps<Arithmetic::symmetric> : WalkTaps<Arithmetic::separable> {
    using WalkTaps<Arithmetic::separable>::WalkTaps;
};


// The fp32 arithmetic of the window (kernels/shuffle_window.hpp walks it): each byte converted
// once (a byte permute and a subtraction, no conversion instruction) and multiplied, while it is in
// registers, into the three output rows it touches; cvt.rni.sat.u8.f32 stores.
template <int S, Arithmetic A>
struct FloatWindow {
    static constexpr int kRadius = 1;
    using Taps = Taps3x3;
    using Walk = WalkTaps<A>;
    // x[S + k] = byte k of the thread's 16, x[0 .. S) the S before them, x[16 + S ..] the S after them.
    struct Row {
        float x[kElements + 2 * S];
    };
    struct Accumulators {
        float acc[kSteps<1>][kElements];
    };

    static __device__ __forceinline__ void window_row(const RawRow<1>& raw, std::uint32_t before, std::uint32_t after, Row& row) {
        const std::uint32_t w[4] = {raw.w.x, raw.w.y, raw.w.z, raw.w.w};
        float(&x)[kElements + 2 * S] = row.x;
#pragma unroll
        for (int k = 0; k < S; ++k) x[k] = rows::byte_to_float(before, 4 - S + k);
#pragma unroll
        for (int k = 0; k < kElements; ++k) x[S + k] = rows::byte_to_float(w[k / 4], k % 4);
#pragma unroll
        for (int k = 0; k < S; ++k) x[kElements + S + k] = rows::byte_to_float(after, k);
    }

    // d = 0 (done: walk-tap row 2), 1 (mid) and 2 (fresh: row 0) from First to Last.
    template <int Phase, int First, int Last>
    static __device__ __forceinline__ void accumulate(Accumulators& a, const Row& row, const Walk& t) {
        constexpr bool Done = First == 0, Mid = First <= 1 && Last >= 1, Fresh = Last == 2;
        float(&done)[kElements] = a.acc[Phase % kSteps<1>];
        float(&mid)[kElements] = a.acc[(Phase + 1) % kSteps<1>];
        float(&fresh)[kElements] = a.acc[(Phase + 2) % kSteps<1>];
        const float(&x)[kElements + 2 * S] = row.x;
#pragma unroll
        for (int k = 0; k < kElements; ++k) {
            if constexpr (A == Arithmetic::separable || A == Arithmetic::symmetric) {
                const float h = A == Arithmetic::symmetric ? fmaf(t.row[1], x[k + S], x[k] + x[k + 2 * S])
                                                           : fmaf(t.row[2], x[k + 2 * S], fmaf(t.row[1], x[k + S], t.row[0] * x[k]));
                if (Done) done[k] = fmaf(t.column[2], h, done[k]);
                if (Mid) mid[k] = fmaf(t.column[1], h, mid[k]);
                if (Fresh) fresh[k] = t.column[0] * h;
            } else if constexpr (A == Arithmetic::cross) {
                if (Done) done[k] = fmaf(t.m[2][1], x[k + S], done[k]);
                if (Mid) mid[k] = fmaf(t.m[1][2], x[k + 2 * S], fmaf(t.m[1][1], x[k + S], fmaf(t.m[1][0], x[k], mid[k])));
                if (Fresh) fresh[k] = t.m[0][1] * x[k + S];
            } else {
                if (Done) done[k] = fmaf(t.m[2][2], x[k + 2 * S], fmaf(t.m[2][1], x[k + S], fmaf(t.m[2][0], x[k], done[k])));
                if (Mid) mid[k] = fmaf(t.m[1][2], x[k + 2 * S], fmaf(t.m[1][1], x[k + S], fmaf(t.m[1][0], x[k], mid[k])));
                if (Fresh) fresh[k] = fmaf(t.m[0][2], x[k + 2 * S], fmaf(t.m[0][1], x[k + S], t.m[0][0] * x[k]));
            }
        }
    }

    template <int Phase>
    static __device__ __forceinline__ void store_row(const Accumulators& a, bool active, std::uint8_t* dst) {
        const float(&acc)[kElements] = a.acc[Phase];
        uint4 v;
        v.x = rows::round_pack4(acc[0], acc[1], acc[2], acc[3]);
        v.y = rows::round_pack4(acc[4], acc[5], acc[6], acc[7]);
        v.z = rows::round_pack4(acc[8], acc[9], acc[10], acc[11]);
        v.w = rows::round_pack4(acc[12], acc[13], acc[14], acc[15]);
        if (active) __stcs(reinterpret_cast<uint4*>(dst), v);
    }
};

// One block of up to 512 threads per SM at least: up to 128 registers, so that three accumulator
// rows, the row being converted and three rows in flight never spill.
template <int S, Arithmetic A>
__global__ void __launch_bounds__(kMaxBlockThreads, 1)
    conv_shuffle_window_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Taps3x3 taps, Border border, int rows) {
    run_strip<S, FloatWindow<S, A>>(in, out, taps.m, taps, border, rows);
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, Taps3x3, Border, int);

template <Arithmetic A>
Kernel kernel_by_stride(int stride) {
    return by_channels<Kernel>(stride, &conv_shuffle_window_kernel<1, A>, &conv_shuffle_window_kernel<3, A>,
                               &conv_shuffle_window_kernel<4, A>);
}

// The cheapest arithmetic that applies `mask`: a cross where the corners are zero (also every 1x3
// and 3x1 mask, exactly), the factors of a rank-1 mask (1, s / r, 1 for a symmetric row r, s, r),
// else all nine taps.
struct MaskPlan {
    Arithmetic arithmetic;
    Taps3x3 taps;
    double coefficient_error;
};

MaskPlan plan_mask(const Mask& mask) {
    MaskPlan plan{Arithmetic::full, {}, 0.0};
    const rows::Taps2D<1> padded = rows::taps_2d<1>(mask);  // zero-padded to 3x3 around the centre
    const float* m = padded.m;
    std::copy(m, m + 9, plan.taps.m);
    if (m[0] == 0.0f && m[2] == 0.0f && m[6] == 0.0f && m[8] == 0.0f) {
        plan.arithmetic = Arithmetic::cross;
        return plan;
    }
    std::optional<SeparableFactors> factors = separable_variant_factors(mask);
    if (!factors) return plan;
    // Corners are not all zero: the mask is 3x3 and so are its factors.
    std::vector<float>& row = factors->row;
    std::vector<float>& column = factors->column;
    plan.arithmetic = Arithmetic::separable;
    if (row[0] == row[2] && row[0] != 0.0f) {
        plan.arithmetic = Arithmetic::symmetric;
        for (float& c : column) c *= row[0];
        row = {1.0f, row[1] / row[0], 1.0f};
    }
    std::copy(row.begin(), row.end(), plan.taps.row);
    std::copy(column.begin(), column.end(), plan.taps.column);
    // The factors as applied (for symmetric rows: 1, s / r, 1 and the columns times r), each an
    // FMA chain (left + right is the chain 1 * left + 1 * right).
    plan.coefficient_error = separable_coefficient_error(mask, *factors);
    return plan;
}

Kernel kernel_for(const Problem& problem, Arithmetic arithmetic) {
    const int stride = rows::element_stride(problem.shape);
    switch (arithmetic) {
        case Arithmetic::cross: return kernel_by_stride<Arithmetic::cross>(stride);
        case Arithmetic::separable: return kernel_by_stride<Arithmetic::separable>(stride);
        case Arithmetic::symmetric: return kernel_by_stride<Arithmetic::symmetric>(stride);
        case Arithmetic::full: break;
    }
    return kernel_by_stride<Arithmetic::full>(stride);
}

class ConvShuffleWindow final : public Variant {
public:
    std::string name() const override { return "conv.shuffle_window"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "masks up to 3x3: 16 bytes x a strip of rows per thread, the window in registers, halo by warp shuffle, "
               "no shared memory; zero corner taps skipped, rank-1 masks as row and column passes";
    }
    Support supports(const Problem& problem) const override {
        const Mask& mask = *problem.mask;
        if (mask.width() > 3 || mask.height() > 3) {
            return Support::no(fmt::format("masks up to 3x3: {} is {}x{} (three rows of 16 accumulators per thread; "
                                           "conv.register_window takes up to 9x9)",
                                           mask.name(), mask.width(), mask.height()));
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override { return shuffle_window::tuning_space(1); }
    LaunchShape default_shape(const Problem& problem) const override { return shuffle_window::default_shape(problem); }
    Support check_shape(const Problem& problem, const LaunchShape& shape) const override {
        return shuffle_window::check_shape(problem, shape);
    }
    double coefficient_error(const Problem& problem) const override { return plan_mask(*problem.mask).coefficient_error; }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        return {make_launch(kernel_for(problem, plan_mask(*problem.mask).arithmetic), "conv_shuffle_window_kernel",
                            shuffle_window::grid(problem.shape, shape), block_of(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const MaskPlan mask = plan_mask(*plan.problem.mask);
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem, mask.arithmetic), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), mask.taps, plan.problem.border, plan.shape.parameter("rows"));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvShuffleWindow)
