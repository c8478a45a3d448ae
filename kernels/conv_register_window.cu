// conv.register_window — 2D correlation, register blocking over a sliding window of output rows.
//
// Technique (issue 14, step 2 of the general-mask ladder, over conv.tile_fp32): a block of T
// threads walks down a strip of `rows` output rows (tuned) one input row at a time. Each thread
// owns G consecutive elements of the row and keeps 2R+1 rows x G fp32 accumulators in registers;
// G = 16 for masks up to 5x5, 8 for larger ones, whose 2R+1 rows of 16 accumulators would not fit
// in the registers (harness/row_stream.hpp: elements_per_thread). An input row, converted to fp32
// once (per block, into a row buffer in shared memory), is multiplied into every output row it
// touches while it is in registers, so each input element is converted once and read from shared
// memory once per thread that needs it, instead of (2R+1)^2 times. The taps are kernel parameters
// at compile-time indices (FFMA operands straight from the parameter bank), the radius a template
// parameter. Up to 5x5 the accumulator rows are rotated by unrolling 2R+1 steps (no moves); for
// larger masks 2R+1 unrolled steps would be too long for the instruction cache, so one step is
// unrolled and the rows move down by one after each (2R rows of 8 values moved per input row).
// Loads: the thread's G bytes of a row, read as a Bytes<G> (words, 4-byte aligned), so as G/4
// synchronous 4-byte loads (four up to 5x5, two above), issued a row ahead. Stores: one 16-byte
// store per thread and output row up to 5x5, one 8-byte store above. The border is resolved only
// by the threads whose elements cross the image's left or right edge (and for rows outside the
// image), halo threads at the ends of the block's segment load what the mask reaches beyond it
// (harness/row_stream.hpp: stream_strip, SlidingWindow2D).
// Preconditions: masks up to 9x9 (R = max(rx, ry) <= 4; a non-square mask is zero-padded to
// (2R+1)x(2R+1), exact since a zero tap adds +0); every border, 1/3/4 channels, AoS and SoA, any
// pitch (unless the input image's address and pitch are both multiples of G bytes, 16 up to 5x5
// and 8 above, every row is read element by element; an output row whose address is not G-byte
// aligned is stored byte by byte), any size.
// Block: 64, 128 or 256 threads in x; shared memory T x 128 bytes up to 5x5, T x 64 bytes above
// (two fp32 row buffers of G floats per thread).
// Deliberately not done: one row of prefetch only (conv.register_window_async keeps 8 in
// flight), no skipping of zero taps.
// Measured on an NVIDIA H200 (klab-bench, L2 flushed, default shape 128x1 rows=32 (3x3) or 64 (9x9) at 8K and
// rows=4 at HD, untuned, medians of 3; device run of 2026-11-24): 8K RGB AoS random9 567 us (2.29x
// its roofline; conv.tile_fp32 1146 us), sharpen 244 us (5.1x the copy floor), HD sharpen 44.5 us.
#include <cstdint>
#include <utility>

#include "harness/image.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

template <int R, int S>
__global__ void __launch_bounds__(256)
    conv_register_window_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, rows::Taps2D<R> taps,
                                Border border, int strip_rows) {
    extern __shared__ float4 shared[];
    rows::SlidingWindow2D<R, S> window{taps, rows::strip_output<R, S>(out, strip_rows)};
    rows::stream_strip<R, S, 0>(in, border, strip_rows, shared, window);
}

class ConvRegisterWindow final : public rows::StripVariant {
public:
    std::string name() const override { return "conv.register_window"; }
    std::string technique() const override {
        return "register blocking: 16 elements (8 above 5x5) x a sliding window of output rows per thread, "
               "fp32 rows in shared memory";
    }
    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        dispatch(plan.problem, [&](auto r, auto s) {
            constexpr int R = decltype(r)::value;
            enqueue_kernel(plan.kernels[0], stream, &conv_register_window_kernel<R, decltype(s)::value>,
                           b.input.view<const std::uint8_t>(), b.output.view<std::uint8_t>(), rows::taps_2d<R>(*plan.problem.mask),
                           plan.problem.border, plan.shape.parameter("rows"));
            return 0;
        });
    }

protected:
    int ring_depth() const override { return 0; }
    std::string kernel_name() const override { return "conv_register_window_kernel"; }
    const void* kernel(const Problem& problem) const override {
        return dispatch(problem, [](auto r, auto s) {
            return reinterpret_cast<const void*>(&conv_register_window_kernel<decltype(r)::value, decltype(s)::value>);
        });
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvRegisterWindow)
