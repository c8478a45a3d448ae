// conv.separable_sliding — separable correlation: each row filtered once, the column pass as a
// sliding window down a strip, input rows streamed ahead by asynchronous copies (cp.async).
//
// Technique (issue 14, the separable ladder's step over conv.separable_fused): a block of T
// threads walks down a strip of `rows` output rows (tuned). For each input row, every thread
// converts its G elements (G = 16 for masks up to 5x5, 8 for larger ones: harness/row_stream.hpp,
// elements_per_thread) to fp32 once into a row buffer in shared memory, takes its window of
// G + 2P elements from it, computes the row pass (2R+1 taps x G elements) in registers and adds
// the G row sums into the 2R+1 output rows they belong to (rolling column accumulators, rotated by
// unrolling 2R+1 steps, at every radius). So a row is row-filtered exactly once per strip, where
// conv.separable_fused row-filters the 2R halo rows of each 32-row tile again (25% more row work
// for 9x9), and no fp32 intermediate tile is written to or read back from shared memory: only the
// raw row goes through it. Input rows arrive through a ring of 8 rows per thread filled by
// cp.async (one 16-byte copy per row up to 5x5, one 8-byte copy above), so a block keeps 8 rows of
// requests in flight. The factors are those of conv.separable_2pass and conv.separable_fused
// (klab::separable_variant_factors(), the same coefficient_error()), as compile-time-indexed
// kernel parameters. Driver, border handling, halo threads and the row buffer:
// harness/row_stream.hpp (stream_strip).
// Preconditions: rank-1 masks up to 9x9 (R = max(rx, ry) <= 4; the narrower factor is zero-padded,
// exact); every border, 1/3/4 channels, AoS and SoA, any pitch (unless the input image's address
// and pitch are both multiples of G bytes, 16 up to 5x5 and 8 above, every row is read element by
// element; an output row whose address is not G-byte aligned is stored byte by byte), any size.
// Block: 64, 128 or 256 threads in x.
// Deliberately not done: no use of the mask's symmetry, no 16-byte accesses above 5x5, no TMA.
// Measured on an NVIDIA H200 (klab-bench, L2 flushed, default shape 128x1 rows=32 (3x3) or 64 (9x9) at 8K, untuned,
// medians of 3; device run of 2026-11-24): 8K RGB AoS gauss3 198 us (4.1x the copy floor), gauss9
// 372 us (6.8x its roofline) — slower than conv.separable_fused (106 and 181 us in the same run).
// Nsight Compute, gauss3: 78 M warp instructions (25 per output element), issue slots 48% busy,
// 24% of warp time stalled at the per-row barrier, 122 registers, achieved occupancy 20%: the
// per-row barrier and the occupancy the accumulators leave cost more than the halo rows saved.
#include <cstdint>
#include <type_traits>
#include <utility>

#include "harness/image.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/separable_factors.hpp"

namespace klab {
namespace {

using separable::Factors;
using separable::factors_of;

constexpr int kDepth = 8;  // rows of each thread's bytes in flight

// One thread's rolling column accumulators: for input row r, logical slot s holds output row
// r - R + s, which takes column tap 2R - s of the row sums; register row (s + phase) % K (the
// driver unrolls K steps, so no step moves accumulators).
template <int R, int S>
struct SlidingColumns {
    static constexpr int K = 2 * R + 1;
    static constexpr int kPhases = K;
    using Layout = rows::StripLayout<R, S>;
    static constexpr int G = Layout::G;
    const Factors<R>& f;
    rows::StripOutput out;
    float acc[K][G] = {};

    template <int Phase>
    __device__ __forceinline__ void operator()(std::integral_constant<int, Phase>, const float (&win)[Layout::kWindow], int r) {
        float sum[G];  // the row pass of row r at this thread's G elements
#pragma unroll
        for (int g = 0; g < G; ++g) sum[g] = 0.0f;
#pragma unroll
        for (int i = 0; i < K; ++i) {
#pragma unroll
            for (int g = 0; g < G; ++g) sum[g] = fmaf(f.row[i], win[Layout::P - R * S + g + i * S], sum[g]);
        }
#pragma unroll
        for (int s = 0; s < K; ++s) {
            const int y = r - R + s;
            if (y < out.y0 || y >= out.y_end) continue;  // a row of another strip, or outside the image
            float(&a)[G] = acc[(s + Phase) % K];
#pragma unroll
            for (int g = 0; g < G; ++g) a[g] = fmaf(f.col[K - 1 - s], sum[g], a[g]);
        }
        const int y = r - R;  // logical slot 0 is complete
        if (y >= out.y0 && y < out.y_end) out.store<G>(y, acc[Phase]);
#pragma unroll
        for (int g = 0; g < G; ++g) acc[Phase][g] = 0.0f;  // becomes output row r + R + 1
    }
};

template <int R, int S>
__global__ void __launch_bounds__(256)
    conv_separable_sliding_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Factors<R> f, Border border,
                                  int strip_rows) {
    extern __shared__ float4 shared[];
    SlidingColumns<R, S> columns{f, rows::strip_output<R, S>(out, strip_rows)};
    rows::stream_strip<R, S, kDepth>(in, border, strip_rows, shared, columns);
}

class ConvSeparableSliding final : public rows::StripVariant {
public:
    std::string name() const override { return "conv.separable_sliding"; }
    std::string technique() const override {
        return "separable mask: each row filtered once, sliding column window down a strip, rows streamed ahead by cp.async";
    }
    Support supports(const Problem& problem) const override {
        const Mask& mask = *problem.mask;
        if (const Support rank1 = separable::rank1_masks_only(mask); !rank1) return rank1;
        return StripVariant::supports(problem);
    }
    double coefficient_error(const Problem& problem) const override {
        return separable::coefficient_error_of(name(), *problem.mask);
    }
    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        dispatch(plan.problem, [&](auto r, auto s) {
            constexpr int R = decltype(r)::value;
            enqueue_kernel(plan.kernels[0], stream, &conv_separable_sliding_kernel<R, decltype(s)::value>,
                           b.input.view<const std::uint8_t>(), b.output.view<std::uint8_t>(), factors_of<R>(*plan.problem.mask),
                           plan.problem.border, plan.shape.parameter("rows"));
            return 0;
        });
    }

protected:
    int ring_depth() const override { return kDepth; }
    std::string kernel_name() const override { return "conv_separable_sliding_kernel"; }
    const void* kernel(const Problem& problem) const override {
        return dispatch(problem, [](auto r, auto s) {
            return reinterpret_cast<const void*>(&conv_separable_sliding_kernel<decltype(r)::value, decltype(s)::value>);
        });
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvSeparableSliding)
