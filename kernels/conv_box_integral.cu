// conv.box_integral — box filter of any odd size from a summed-area table of the padded image.
//
// Technique: a box mask has one coefficient m everywhere, so out(x,y,c) = m * S where S is the sum
// of the pixels under the box. The variant builds the summed-area table (integral image) of the
// input grown by the mask's radius on every side, the border rule filling the margin (so every
// border mode, and boxes larger than the image, cost the same), then reads each box sum from four
// table entries: S = I(x1,y1) - I(x0-1,y1) - I(x1,y0-1) + I(x0-1,y0-1). Three kernels:
//   1. box_row_prefix:    one warp per padded row (all channels), running sums along the row;
//   2. box_column_prefix: one thread per padded column and channel, running sums down the column;
//   3. box_from_integral: one thread per output pixel, four reads per channel, m * S, rounded.
// The cost per output pixel does not depend on the box's size.
// Exactness: the table is u32 and may wrap modulo 2^32 on large images; a box sum is below
// 31*31*255 < 2^32, so the four-term difference in modular arithmetic is the exact S. The
// reference sums m * p in double; with m = M * 2^e (M < 2^24) every partial sum is M * n * 2^e with
// n < 2^18, exact in double, so the reference computes m * S exactly. The kernel computes the same
// product in double (exact again: M * S < 2^42) and rounds it half to even with saturation, the
// reference's rule: results are identical, not merely within the fp32 tie bound.
// Preconditions: box masks only — every coefficient equal (any odd width and height, any value);
// other masks are refused with that reason. Every border, 1/3/4 channels, AoS or SoA, any pitch,
// any size.
// Scratch memory: the table, (W+2rx)*(H+2ry)*channels u32, is the plan's scratch
// (scratch_bytes(); prepare() allocates it, enqueue() allocates nothing).
// Concurrency: each plan owns its scratch, so plans on different streams may run at once; two
// launches of one plan share it and must not overlap (launch a plan on one stream at a time).
// Deliberately not done: the table is built by a plain rows-then-columns pass (integral.scan's
// tiled reduce-then-scan would move fewer bytes); no fusion of the output pass with the table.
// Measured on an NVIDIA H200 (before the table moved into the plan's scratch; the kernels are
// unchanged), 8K RGB AoS (7680x4320), box 9x9, replicate, default block 32x8, by
// Nsight Compute (`bash scripts/op-times.sh`: gpu__time_duration, L2 flushed before each kernel,
// clocks not locked): rows 359.6 us + columns 431.3 us + output 343.7 us = 1134.6 us. The column
// pass (a thread per padded column walking 4328 rows) reaches 12% achieved occupancy and is bound
// by memory latency. For scale (BASELINES.md, not this run): NPP's 8K RGB box 9x9 takes 1732 us;
// the 8K RGB copy floor is 57.9 us.
#include <cstddef>
#include <cstdint>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/sampling.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

constexpr int kWarp = 32;
constexpr int kRowWarps = 8;        // warps per block of the row pass
constexpr int kColumnBlock = 256;   // threads per block of the column pass
constexpr unsigned kFullMask = 0xffffffffu;

// The table: `channels` planes of padded_height rows of padded_width u32, tightly packed.
struct Table {
    std::uint32_t* data;
    int padded_width;
    int padded_height;
    __device__ std::uint32_t* row(int c, int y) const {
        return data + (static_cast<std::size_t>(c) * padded_height + y) * padded_width;
    }
};

// 1. Running sums along each padded row: row yp of channel c holds, at xp, the sum of the padded
// pixels 0..xp of that row. The padded pixel (xp, yp) is the image's (xp - rx, yp - ry) under the
// border rule. One warp per padded row, all channels (a pixel's channels are read together).
template <int Channels>
__global__ void box_row_prefix(ImageView<const std::uint8_t> in, Table table, int rx, int ry, Border border) {
    const int yp = static_cast<int>(blockIdx.x * blockDim.y + threadIdx.y);
    if (yp >= table.padded_height) return;  // the whole warp leaves together
    const int lane = static_cast<int>(threadIdx.x);
    std::uint32_t carry[Channels] = {};  // the sums of the chunks before this one (wrapping harmlessly)
    for (int x0 = 0; x0 < table.padded_width; x0 += kWarp) {
        const int xp = x0 + lane;
#pragma unroll
        for (int c = 0; c < Channels; ++c) {
            std::uint32_t v = xp < table.padded_width ? sample(in, xp - rx, yp - ry, c, border) : 0u;
#pragma unroll
            for (int offset = 1; offset < kWarp; offset *= 2) {
                const std::uint32_t other = __shfl_up_sync(kFullMask, v, offset);
                if (lane >= offset) v += other;
            }
            if (xp < table.padded_width) table.row(c, yp)[xp] = carry[c] + v;
            carry[c] += __shfl_sync(kFullMask, v, kWarp - 1);
        }
    }
}

// 2. Running sums down each padded column, in place. Rows are read in batches, so that a thread
// waits for memory once per batch.
__global__ void box_column_prefix(Table table, int channels) {
    constexpr int kBatch = 32;
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= static_cast<long long>(channels) * table.padded_width) return;
    const int c = static_cast<int>(i / table.padded_width);
    const int xp = static_cast<int>(i % table.padded_width);
    std::uint32_t* column = table.row(c, 0) + xp;
    const std::size_t stride = static_cast<std::size_t>(table.padded_width);
    std::uint32_t sum = 0;
    for (int y0 = 0; y0 < table.padded_height; y0 += kBatch) {
        std::uint32_t v[kBatch];
#pragma unroll
        for (int k = 0; k < kBatch; ++k) v[k] = y0 + k < table.padded_height ? column[(y0 + k) * stride] : 0u;
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
            if (y0 + k < table.padded_height) column[(y0 + k) * stride] = (sum += v[k]);
        }
    }
}

// 3. Each output pixel from four table entries per channel. Output (x, y) covers the padded
// pixels [x, x + 2rx] x [y, y + 2ry].
template <int Channels>
__global__ void box_from_integral(Table table, ImageView<std::uint8_t> out, int rx, int ry, float coefficient) {
    const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= out.shape.width || y >= out.shape.height) return;
    const int x1 = x + 2 * rx;
    const int y1 = y + 2 * ry;
    for (int c = 0; c < Channels; ++c) {
        const std::uint32_t* bottom = table.row(c, y1);
        std::uint32_t sum = bottom[x1] - (x > 0 ? bottom[x - 1] : 0u);
        if (y > 0) {
            const std::uint32_t* top = table.row(c, y - 1);
            sum -= top[x1] - (x > 0 ? top[x - 1] : 0u);
        }
        // m * S in double is exact (see the preamble); round half to even, saturate.
        const double value = static_cast<double>(coefficient) * static_cast<double>(sum);
        out.at(x, y, c) = static_cast<std::uint8_t>(__double2int_rn(fmin(fmax(value, 0.0), 255.0)));
    }
}

using RowKernel = void (*)(ImageView<const std::uint8_t>, Table, int, int, Border);
using OutputKernel = void (*)(Table, ImageView<std::uint8_t>, int, int, float);

RowKernel row_kernel(int channels) {
    return by_channels<RowKernel>(channels, &box_row_prefix<1>, &box_row_prefix<3>, &box_row_prefix<4>);
}

OutputKernel output_kernel(int channels) {
    return by_channels<OutputKernel>(channels, &box_from_integral<1>, &box_from_integral<3>, &box_from_integral<4>);
}

// Whether every coefficient equals the first (a box of any size and value).
bool is_box(const Mask& mask) {
    for (float c : mask.coefficients()) {
        if (c != mask.coefficients().front()) return false;
    }
    return true;
}

struct Padded {
    int width;
    int height;
};
Padded padded_of(const Problem& problem) {
    return {problem.shape.width + 2 * problem.mask->radius_x(), problem.shape.height + 2 * problem.mask->radius_y()};
}

// The plan's scratch: the table (one block, 256-byte aligned; the kernels need 4).
std::size_t table_bytes(const Problem& problem) {
    const Padded padded = padded_of(problem);
    return static_cast<std::size_t>(problem.shape.channels) * padded.width * padded.height * sizeof(std::uint32_t);
}

class ConvBoxIntegral final : public Variant {
public:
    std::string name() const override { return "conv.box_integral"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "summed-area table of the border-padded image, each box sum from four entries (any box size, same cost)";
    }
    Support supports(const Problem& problem) const override {
        if (!is_box(*problem.mask)) {
            return Support::no(fmt::format("box masks only (all coefficients equal); {} has unequal coefficients",
                                           problem.mask->name()));
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{32, 8, {}}); }
    std::size_t scratch_bytes(const Problem& problem, const LaunchShape&) const override { return table_bytes(problem); }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const Padded padded = padded_of(problem);
        const int channels = problem.shape.channels;
        const long long columns = static_cast<long long>(channels) * padded.width;
        return {make_launch(row_kernel(channels), "box_row_prefix", dim3(grid_side(padded.height, kRowWarps)),
                            dim3(kWarp, kRowWarps)),
                make_launch(&box_column_prefix, "box_column_prefix",
                            dim3(static_cast<unsigned>((columns + kColumnBlock - 1) / kColumnBlock)), dim3(kColumnBlock)),
                make_launch(output_kernel(channels), "box_from_integral", covering_grid(problem.shape, shape),
                            block_of(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const Problem& problem = plan.problem;
        const Padded padded = padded_of(problem);
        const int channels = problem.shape.channels;
        const Table table{plan.scratch_as<std::uint32_t>(), padded.width, padded.height};  // table_bytes(), from prepare()
        const int rx = problem.mask->radius_x();
        const int ry = problem.mask->radius_y();
        enqueue_kernel(plan.kernels[0], stream, row_kernel(channels), plan.buffers.input.view<const std::uint8_t>(), table,
                       rx, ry, problem.border);
        enqueue_kernel(plan.kernels[1], stream, &box_column_prefix, table, channels);
        enqueue_kernel(plan.kernels[2], stream, output_kernel(channels), table, plan.buffers.output.view<std::uint8_t>(),
                       rx, ry, problem.mask->coefficients().front());
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvBoxIntegral)
