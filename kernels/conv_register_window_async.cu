// conv.register_window_async — 2D correlation, register blocking over a sliding window of output
// rows, input rows streamed ahead into shared memory by asynchronous copies (cp.async).
//
// Technique (issue 14, step 3 of the general-mask ladder): conv.register_window with a deeper
// supply of input. Each thread still owns G consecutive elements of a row and keeps 2R+1 rows of
// G fp32 accumulators in registers (G = 16 for masks up to 5x5, 8 for larger ones:
// harness/row_stream.hpp, elements_per_thread), the mask's taps as compile-time-indexed kernel
// parameters; what changes is how its bytes arrive. Instead of conv.register_window's synchronous
// 4-byte loads of the next row, every thread keeps kDepth = 8 rows of its G bytes in flight with
// cp.async (one 16-byte copy per row up to 5x5, one 8-byte copy above, into a ring of per-thread
// slots in shared memory, no registers held while the copies fly), so that a block keeps
// 8 x T x G bytes of DRAM requests outstanding: the memory-level parallelism that
// conv.register_window's single-row prefetch lacks at the occupancy its registers allow.
// Unchanged from conv.register_window: the fp32 row buffer (each element converted once per
// block, neighbours read from the swizzled buffer, harness/row_stream.hpp), the border resolved
// only by threads whose bytes cross an image edge (and for unaligned rows), halo threads at both
// ends of the block's row segment, strips of `rows` output rows per block (tuned).
// Preconditions: masks up to 9x9 (R = max(rx, ry) <= 4; a non-square mask is zero-padded to
// (2R+1)x(2R+1), exact since a zero tap adds +0); every border, 1/3/4 channels, AoS and SoA, any
// pitch (unless the input image's address and pitch are both multiples of G bytes, 16 up to 5x5
// and 8 above, every row is read element by element; an output row whose address is not G-byte
// aligned is stored byte by byte), any size.
// Block: T = 64, 128 or 256 threads in x (one row of threads); shared memory T x 256 bytes up to
// 5x5, T x 128 bytes above (per thread: two fp32 row buffers of G floats, the ring's 8 x G bytes).
// Deliberately not done: no skipping of zero taps (sharpen's four zeros are multiplied), no TMA.
// Measured on an NVIDIA H200 (klab-bench, L2 flushed, default shape 128x1 rows=32 (3x3) or 64 (9x9) at 8K and
// rows=4 at HD, untuned, medians of 3; device run of 2026-11-24): 8K RGB AoS random9 551 us (2.22x
// its roofline, 2.8x faster than npp.filter32f's 1553 us), sharpen 212 us (4.4x the copy floor;
// NPP 177 us), HD sharpen 43.8 us (NPP 15.7 us). Nsight Compute, 8K random9: 402 M warp
// instructions (129 per output element against 81 FMAs), issue slots 83% busy, FMA pipe 60%,
// 128 registers, achieved occupancy 23%; sharpen: issue 49% busy, 23% of warp time at the per-row
// barrier, occupancy 20%. The deeper ring buys 3% at 9x9 and 13% at 3x3 over conv.register_window.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "harness/image.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

constexpr int kDepth = 8;  // rows of each thread's bytes in flight

template <int R, int S>
__global__ void __launch_bounds__(256)
    conv_register_window_async_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, rows::Taps2D<R> taps,
                                      Border border, int strip_rows) {
    extern __shared__ float4 shared[];
    rows::SlidingWindow2D<R, S> window{taps, rows::strip_output<R, S>(out, strip_rows)};
    rows::stream_strip<R, S, kDepth>(in, border, strip_rows, shared, window);
}

class ConvRegisterWindowAsync final : public rows::StripVariant {
public:
    std::string name() const override { return "conv.register_window_async"; }
    std::string technique() const override {
        return "register blocking: 16 elements (8 above 5x5) x a sliding window of output rows per thread, "
               "rows streamed ahead by cp.async";
    }
    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        dispatch(plan.problem, [&](auto r, auto s) {
            constexpr int R = decltype(r)::value;
            enqueue_kernel(plan.kernels[0], stream, &conv_register_window_async_kernel<R, decltype(s)::value>,
                           b.input.view<const std::uint8_t>(), b.output.view<std::uint8_t>(), rows::taps_2d<R>(*plan.problem.mask),
                           plan.problem.border, plan.shape.parameter("rows"));
            return 0;
        });
    }

protected:
    int ring_depth() const override { return kDepth; }
    std::string kernel_name() const override { return "conv_register_window_async_kernel"; }
    const void* kernel(const Problem& problem) const override {
        return dispatch(problem, [](auto r, auto s) {
            return reinterpret_cast<const void*>(&conv_register_window_async_kernel<decltype(r)::value, decltype(s)::value>);
        });
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvRegisterWindowAsync)
