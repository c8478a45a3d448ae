// conv.register_tile — 2D correlation, each thread a 4 x 4 register tile of outputs at a time from
// an fp32 ring of input rows in shared memory, fed by cp.async: no accumulator moves, no row tests.
//
// Technique (issue 14, the general-mask ladder's step over conv.register_window_async): a block of
// T threads (tuned) walks down a strip of `rows` output rows (tuned) of 4T consecutive elements of
// a stored row, 4 output rows (a step) at a time. Its input rows come in groups of 4: each group's
// bytes (the block's 4T elements and 16 more on each side, whole 16-byte chunks) are copied by
// cp.async two groups ahead into a staging area, then converted to fp32 (a byte permute and a
// subtraction per byte) by the same thread that copied them, into a ring of groups: the step's
// 4 + 2R input rows and the group converted while it computes. One barrier per step. Each thread
// reads, for each input row under its 4 x 4 outputs, a window of 4 + 2 * lead floats (lead = R*S
// rounded up to 4; S = 1 gray or SoA, 3 RGB, 4 RGBA) with 16-byte shared reads and multiplies it
// into every accumulator row it touches. The step is fully unrolled: each tap is an FFMA with a
// compile-time coefficient operand, and the 16 accumulators stay in place (a 9x9 RGB step is 1296
// FFMAs, 84 16-byte shared reads and a few dozen others, about 23 KB of code); the walk over steps
// is a loop.
// What it adds over conv.register_window_async (129 instructions per output element at 8K random
// 9x9 by Nsight Compute, against 81 FMAs: 64 moves per row to shift the accumulator rows, a test
// per mask row whether its output row is in the strip, a barrier per input row): no moves, no
// tests in the FMA loop, a barrier per 4 rows.
// Borders: strips whose input reaches past an image edge (or whose rows are not 16-byte aligned)
// map every element of their input groups by the border rule instead of copying chunks.
// Preconditions: masks up to 9x9 (R = max(rx, ry) <= 4; a smaller or non-square mask is
// zero-padded to (2R+1)x(2R+1), exact since a zero tap adds +0); every border, 1/3/4 channels, AoS
// and SoA (one grid layer per plane), any pitch, any size. Block: T = 32, 64 or 128 threads in x;
// shared memory (4T + 32) x 4 x (ring groups x 4 + 2) bytes: 39 KB at 9x9 and T = 128.
// Measured on an NVIDIA H200 (device runs of 2026-11-25, klab tune then klab-bench, L2 flushed,
// medians of 3): 8K RGB AoS random 9x9 494 us, 128x1 rows=16 (2.00x its roofline; npp.filter32f
// 1555 us: 3.1x faster; conv.register_window_async 520 us in the same session), 8K SoA 525 us, HD
// 78 us. Nsight Compute, 8K random 9x9: 362 M warp instructions (116 per output element: the
// step's 92, then the conversions, the prologue of each 16-row strip, the stores and the edge
// strips' per-element border mapping), issue slots 74% busy, 80 registers, 30% of warps active
// (shared memory allows 5 blocks of 128). Among the stall reasons, waiting for an instruction
// fetch is a sixth of the total at this code size.
// Tried and dropped: 4 x 8 outputs per thread (half the shared reads per FMA, but 2592 FFMAs of
// code per step): 619 us, warps stalled on instruction fetch four times as long; a tile per block
// without the ring (every tile reloads its 2R halo rows, synchronous loads): 535 us; three groups in
// flight instead of two: the same as two.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_pipeline.h>

#include <fmt/format.h>

#include "harness/image.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/row_stream.hpp"
#include "harness/variant.hpp"
#include "kernels/radius_dispatch.hpp"

namespace klab {
namespace {

constexpr int kMaxRadius = 4;
constexpr int kColumns = 4;    // consecutive output elements of a row per thread: one 16-byte shared read
constexpr int kStepRows = 4;   // output rows per step: a 4 x 4 tile of accumulators; also the rows of a load group
constexpr int kMargin = 16;    // shared columns each side of the block's outputs: >= R*S, a whole 16-byte chunk
constexpr int kAheadGroups = 2;  // groups of input rows in flight (cp.async) beyond the one being converted
constexpr std::array<int, 3> kBlockThreads = {32, 64, 128};
constexpr std::array<int, 3> kStripRows = {16, 32, 64};

// Shared columns of the window left of a thread's first output: the mask's reach R*S rounded up to
// a whole 16-byte word, so that every window starts on one.
__host__ __device__ constexpr int lead_of(int r, int s) { return (r * s + 3) / 4 * 4; }
// Groups of 4 input rows a step reads (its 4 output rows and R rows above and below), and the
// groups of the fp32 ring: those plus the one converted while the step computes.
__host__ __device__ constexpr int step_groups_of(int r) { return (kStepRows + 2 * r + kStepRows - 1) / kStepRows; }
__host__ __device__ constexpr int ring_groups_of(int r) { return step_groups_of(r) + 1; }

std::size_t shared_bytes(int threads, int r) {
    const std::size_t row = static_cast<std::size_t>(kColumns * threads + 2 * kMargin);  // elements
    return row * kStepRows * (ring_groups_of(r) * sizeof(float) + kAheadGroups);
}

// Element e of stored row y (plane `plane`), both mapped by the border rule; e counts elements of
// a row of pixels of S elements each. (rows::load_bytes_bordered maps the same way, but it is a
// __noinline__ function: called from the step loop's conversion, the 8K random 9x9 took 667 us,
// against 494 us with this inline copy.)
template <int S>
__device__ __forceinline__ float bordered_element(const ImageView<const std::uint8_t>& in, int e, int y, int plane, Border border) {
    const int x = e >= 0 ? e / S : -((-e + S - 1) / S);  // floor(e / S)
    const int sx = border_index(x, in.shape.width, border.mode);
    const int sy = border_index(y, in.shape.height, border.mode);
    if (sx < 0 || sy < 0) return static_cast<float>(border.value);
    return static_cast<float>(__ldg(in.row(sy, plane) + sx * S + (e - x * S)));
}

// 16 bytes as 16 exact floats, written as four 16-byte shared stores.
__device__ __forceinline__ void convert_chunk(uint4 bytes, float4* dst) {
    const std::uint32_t w[4] = {bytes.x, bytes.y, bytes.z, bytes.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        dst[i] = make_float4(rows::byte_to_float(w[i], 0), rows::byte_to_float(w[i], 1), rows::byte_to_float(w[i], 2),
                             rows::byte_to_float(w[i], 3));
    }
}

template <int R, int S>
__global__ void __launch_bounds__(128)
    conv_register_tile_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, rows::Taps2D<R> taps, Border border,
                              int strip_rows) {
    constexpr int K = 2 * R + 1;
    constexpr int kLead = lead_of(R, S);
    constexpr int kWindow = kColumns + 2 * kLead;  // floats of a shared row each thread reads
    constexpr int kStepGroups = step_groups_of(R);
    constexpr int kRingGroups = ring_groups_of(R);
    static_assert(R * S <= kMargin, "the margin holds the mask's reach");
    extern __shared__ float4 shared[];
    const int threads = static_cast<int>(blockDim.x);
    const int tid = static_cast<int>(threadIdx.x);
    const int plane = static_cast<int>(blockIdx.z);
    const int row_elements = in.shape.row_elements();
    const int height = in.shape.height;
    const int x0 = static_cast<int>(blockIdx.x) * kColumns * threads;  // the block's first output element
    const int y0 = static_cast<int>(blockIdx.y) * strip_rows;
    const int width = kColumns * threads + 2 * kMargin;  // elements of a shared row, from element x0 - kMargin
    const int group_floats = kStepRows * width;
    float* const ring = reinterpret_cast<float*>(shared);                                          // kRingGroups groups of fp32 rows
    std::uint8_t* const staging = reinterpret_cast<std::uint8_t*>(ring + kRingGroups * group_floats);  // kAheadGroups groups of bytes
    const int y_end = min(strip_rows, height - y0);  // output rows of this strip
    const int steps = (y_end + kStepRows - 1) / kStepRows;
    // Groups of input rows: group g holds image rows y0 - R + kStepRows * g ... + kStepRows - 1; step
    // s reads groups s ... s + kStepGroups - 1.
    const int groups = steps + kStepGroups - 1;

    // Interior strips read whole 16-byte chunks by cp.async, a thread always the same chunks
    // of a group, which it then converts itself: no barrier between the copy and the conversion.
    const int chunks = width / 16;  // per row
    const bool interior = ((reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % 16) == 0 && x0 - kMargin >= 0 &&
                          x0 + kColumns * threads + kMargin <= row_elements && y0 - R >= 0 && y0 - R + kStepRows * groups <= height;
    // Chunk slot i of this thread is chunk tid + i * threads of a group (kStepRows x chunks of them).
    constexpr int kSlots = kStepRows / 4 + 1;  // enough for T >= 32: kStepRows * (T / 4 + 2) <= kSlots * T
    int chunk_row[kSlots], chunk_col[kSlots];
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
        const int c = tid + i * threads;
        chunk_row[i] = c < kStepRows * chunks ? c / chunks : -1;  // -1: no such chunk
        chunk_col[i] = c - (c / chunks) * chunks;
    }
    const auto copy_group = [&](int g) {
        if (g < groups) {
#pragma unroll
            for (int i = 0; i < kSlots; ++i) {
                if (chunk_row[i] < 0) break;
                const std::uint8_t* src = in.row(y0 - R + kStepRows * g + chunk_row[i], plane) + x0 - kMargin + 16 * chunk_col[i];
                __pipeline_memcpy_async(staging + (g % kAheadGroups) * kStepRows * width + chunk_row[i] * width + 16 * chunk_col[i], src, 16);
            }
        }
        __pipeline_commit();
    };
    // Makes group g's fp32 rows: from this thread's staged chunks (interior), or element by element.
    const auto convert_group = [&](int g) {
        float* const dst = ring + (g % kRingGroups) * group_floats;
        if (interior) {
#pragma unroll
            for (int i = 0; i < kSlots; ++i) {
                if (chunk_row[i] < 0) break;
                const int offset = chunk_row[i] * width + 16 * chunk_col[i];
                const uint4 bytes = *reinterpret_cast<const uint4*>(staging + (g % kAheadGroups) * kStepRows * width + offset);
                convert_chunk(bytes, reinterpret_cast<float4*>(dst + offset));
            }
        } else {
            for (int r = 0; r < kStepRows; ++r) {
                for (int k = tid; k < width; k += threads) {
                    dst[r * width + k] = bordered_element<S>(in, x0 - kMargin + k, y0 - R + kStepRows * g + r, plane, border);
                }
            }
        }
    };

    // Prologue: the first step's groups converted, the next kAheadGroups in flight. Batches are
    // committed in group order, so waiting until kAheadGroups - 1 remain in flight waits for group g.
    if (interior) {
        for (int g = 0; g < kAheadGroups; ++g) copy_group(g);
        for (int g = 0; g < kStepGroups; ++g) {
            __pipeline_wait_prior(kAheadGroups - 1);
            convert_group(g);
            copy_group(g + kAheadGroups);  // into the staging slot just converted
        }
    } else {
        for (int g = 0; g < kStepGroups; ++g) convert_group(g);
    }
    __syncthreads();

    // This thread's outputs: elements e ... e + 3 of each row; its window in a shared row starts at
    // element e - kLead.
    const int e = x0 + kColumns * tid;
    const bool stores = e < row_elements;
    const bool out_aligned = ((reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % 4) == 0 && e + kColumns <= row_elements;
    const int window_offset = kMargin + kColumns * tid - kLead;
#pragma unroll 1
    for (int step = 0; step < steps; ++step) {
        // The group the step after this one needs last: copied kAheadGroups groups ago, converted
        // now into the ring slot the previous step read (the barrier below that step has passed).
        const int next = step + kStepGroups;
        if (next < groups) {
            if (interior) {
                __pipeline_wait_prior(kAheadGroups - 1);
                convert_group(next);
                copy_group(next + kAheadGroups);
            } else {
                convert_group(next);
            }
        }
        if (stores) {
            float acc[kStepRows][kColumns] = {};
#pragma unroll
            for (int r = 0; r < kStepRows + 2 * R; ++r) {  // the input rows under the step's outputs
                const float* row = ring + ((step + r / kStepRows) % kRingGroups) * group_floats + (r % kStepRows) * width + window_offset;
                float window[kWindow];
#pragma unroll
                for (int q = 0; q < kWindow / 4; ++q) {
                    const float4 v = reinterpret_cast<const float4*>(row)[q];
                    window[4 * q] = v.x, window[4 * q + 1] = v.y, window[4 * q + 2] = v.z, window[4 * q + 3] = v.w;
                }
#pragma unroll
                for (int h = 0; h < kStepRows; ++h) {
                    const int j = r - h;  // the mask row input row r gives output row h
                    if (j < 0 || j >= K) continue;
#pragma unroll
                    for (int i = 0; i < K; ++i) {
                        const float m = taps.m[j * K + i];
#pragma unroll
                        for (int w = 0; w < kColumns; ++w) acc[h][w] = fmaf(m, window[kLead - R * S + w + i * S], acc[h][w]);
                    }
                }
            }
#pragma unroll
            for (int h = 0; h < kStepRows; ++h) {
                const int y = y0 + step * kStepRows + h;
                if (y >= y0 + y_end) break;
                const std::uint32_t word = rows::round_pack4(acc[h][0], acc[h][1], acc[h][2], acc[h][3]);
                std::uint8_t* dst = out.row(y, plane) + e;
                if (out_aligned) {
                    __stcs(reinterpret_cast<std::uint32_t*>(dst), word);
                } else {
                    for (int w = 0; w < kColumns && e + w < row_elements; ++w) dst[w] = static_cast<std::uint8_t>(word >> (8 * w));
                }
            }
        }
        __syncthreads();  // the step's reads are done before the next iteration overwrites their oldest group
    }
}

class ConvRegisterTile final : public Variant {
public:
    std::string name() const override { return "conv.register_tile"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "each thread 4x4 outputs at a time, fully unrolled FFMAs, from a shared fp32 ring of input rows fed ahead by cp.async";
    }
    Support supports(const Problem& problem) const override {
        const Mask& mask = *problem.mask;
        if (rows::StripVariant::radius(problem) > kMaxRadius) {
            return Support::no(fmt::format("masks up to 9x9: {} ({}x{}) would unroll past what the instruction cache holds "
                                           "(conv.tile_fp32 takes every size)",
                                           mask.name(), mask.width(), mask.height()));
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x = std::vector<int>(kBlockThreads.begin(), kBlockThreads.end());
        space.block_y = {1};
        space.parameters = {{"rows", std::vector<int>(kStripRows.begin(), kStripRows.end()), "output rows of a block's strip"}};
        space.default_shape = LaunchShape{64, 1, {{"rows", 32}}};
        return space;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        if (shape.block_y != 1 || !listed(kBlockThreads, shape.block_x)) return Support::no("a block of 32, 64 or 128 threads in x and 1 in y");
        if (!listed(kStripRows, shape.parameter("rows"))) return Support::no("rows = 16, 32 or 64");
        return Support::yes();
    }
    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const int threads = shape.block_x;
        const int strip_rows = shape.parameter("rows");
        const dim3 grid(grid_side(problem.shape.row_elements(), kColumns * threads), grid_side(problem.shape.height, strip_rows),
                        problem.shape.layout == Layout::aos ? 1u : static_cast<unsigned>(problem.shape.channels));
        const void* kernel = dispatch_radius_stride(problem, [](auto r, auto s) {
            return reinterpret_cast<const void*>(&conv_register_tile_kernel<decltype(r)::value, decltype(s)::value>);
        });
        return {KernelLaunch{kernel, "conv_register_tile_kernel", grid, block_of(shape),
                             shared_bytes(threads, rows::StripVariant::radius(problem))}};
    }
    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const DeviceBuffers& b = plan.buffers;
        dispatch_radius_stride(plan.problem, [&](auto r, auto s) {
            constexpr int R = decltype(r)::value;
            enqueue_kernel(plan.kernels[0], stream, &conv_register_tile_kernel<R, decltype(s)::value>, b.input.view<const std::uint8_t>(),
                           b.output.view<std::uint8_t>(), rows::taps_2d<R>(*plan.problem.mask), plan.problem.border,
                           plan.shape.parameter("rows"));
            return 0;
        });
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvRegisterTile)
