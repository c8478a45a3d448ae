// conv.separable_2pass — separable correlation as seed 002 describes it: a row kernel, then a
// column kernel, with the intermediate in device memory.
//
// Technique: a rank-1 mask m(i,j) = col[j] * row[i] (klab::separate()) is applied as two 1-D
// passes. The row kernel gives each thread one element of a stored row (AoS: one byte of a row
// of width*channels bytes, its horizontal neighbours `channels` bytes apart; SoA: one byte of a
// plane's row) and writes sum_i row[i] * in(x+i-rx) as fp32 to the intermediate; the column
// kernel gives each thread 8 outputs down one element column, sum_j col[j] * mid(y+j-ry), and
// stores them rounded to u8. Borders: the row
// kernel maps x with border_index, the column kernel maps y (a constant border's outside row is
// sum_i row[i] * value, computed the same way), which is the 2-D border exactly.
// Precision: the intermediate is fp32 (not u8 as NPP's separable filters keep it), so the result
// passes the same verification as the 2-D variants. The kernels multiply by the factors, not
// by the mask (klab::separable_variant_factors(): a mask one pixel wide or tall is its own
// factor); coefficient_error() is klab::separable_coefficient_error(), whose bound on this
// row-then-column FMA arithmetic is derived in harness/mask.hpp.
// Scratch memory: the intermediate, rows x (row elements rounded up to 32) floats (398 MB for
// 8K RGB), is the plan's scratch (scratch_bytes(); prepare() allocates it, so an allocation
// failure is a klab::Error from prepare(), and enqueue() allocates nothing).
// Concurrency: each plan owns its scratch, so plans on different streams may run at once; two
// launches of one plan share it and must not overlap (launch a plan on one stream at a time).
// Preconditions: a rank-1 mask (others are "not supported", with the reason). Every border,
// 1/3/4 channels, AoS and SoA, any pitch, any size (the grid steps down rows beyond 65535 blocks).
// Any block shape. Deliberately not done: no shared memory, no vector loads, no fusion
// (conv.separable_fused is the fused one); the factors come from the problem's host mask.
// Measured on an NVIDIA H200 (before the intermediate moved into the plan's scratch; the kernels
// are unchanged), 8K RGB AoS, replicate, default block 128x2, both kernels summed,
// L2 flushed, by Nsight Compute (`KLAB=build/sep/klab VARIANTS=conv.separable_2pass bash
// scripts/kernel-times.sh gaussian:3 gaussian:9 box:31`): gauss3 1013.2 us, gauss9 1577.4 us,
// box31 3844.4 us. The intermediate alone is 398 MB written and read (about 190 us at the copy
// rate); the rest is not yet explained (an earlier version, one column output per thread and
// I2F conversions, took 1000 us in the row kernel and 1323 us in the column kernel for gauss9).
// For scale (BASELINES.md, not this run): NPP's separable 9x9 (row + column) takes 731 us, its
// Gaussian 144 us (3x3) and 614 us (9x9); the 8K RGB copy floor is 57.9 us.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/border.hpp"
#include "harness/image.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/mask.hpp"
#include "harness/numeric.hpp"
#include "harness/variant.hpp"
#include "kernels/separable_factors.hpp"

namespace klab {
namespace {

constexpr int kMaxTaps = Mask::kMaxSide;
constexpr unsigned kMaxGridY = 65535;

struct Factors {
    float row[kMaxTaps];  // width entries used
    float col[kMaxTaps];  // height entries used
    int width;
    int height;
};

// Stored row `r` of an image (AoS: row r; SoA: row r % height of plane r / height).
__device__ __forceinline__ const std::uint8_t* stored_row(ImageView<const std::uint8_t> image, int r) {
    return image.data + static_cast<std::size_t>(r) * image.pitch_bytes;
}

// mid(r, e) = sum_i row[i] * in(x + i - rx) for element e = x * Stride + c of stored row r.
template <int Stride>
__global__ void row_pass_kernel(ImageView<const std::uint8_t> in, float* mid, std::size_t mid_pitch, Factors f,
                                Border border) {
    __shared__ float row_factors[kMaxTaps];
    for (int i = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x); i < f.width;
         i += static_cast<int>(blockDim.x * blockDim.y)) {
        row_factors[i] = f.row[i];
    }
    __syncthreads();
    const int width = in.shape.width;
    const int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (e >= width * Stride) return;
    const int x = e / Stride;
    const int c = e - x * Stride;
    const int rx = f.width / 2;
    const bool inside = x - rx >= 0 && x + rx < width;  // no border mapping needed
    for (int r = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y); r < in.shape.rows();
         r += static_cast<int>(gridDim.y * blockDim.y)) {
        const std::uint8_t* src = stored_row(in, r);
        float acc = 0.0f;
        for (int i = 0; i < f.width; ++i) {
            unsigned p;
            if (inside) {
                p = __ldg(src + e + (i - rx) * Stride);
            } else {
                const int sx = border_index(x + i - rx, width, border.mode);
                p = sx < 0 ? border.value : __ldg(src + sx * Stride + c);
            }
            // The float 2^23 + p minus 2^23: exactly p, without the I2F conversion (1/8 of the FMA rate).
            acc = fmaf(row_factors[i], __uint_as_float(0x4B000000u | p) - 8388608.0f, acc);
        }
        mid[static_cast<std::size_t>(r) * mid_pitch + e] = acc;
    }
}

// out(y, e) of plane p = sum_j col[j] * mid(y + j - ry, e) of that plane. Each thread computes a
// group of kColumnRows outputs down one element column: it reads kColumnRows + h - 1 intermediate
// rows instead of h per output (9 reads per output for a 9x9 mask came from L2, not L1).
constexpr int kColumnRows = 8;

__global__ void column_pass_kernel(const float* mid, std::size_t mid_pitch, ImageView<std::uint8_t> out, Factors f,
                                   Border border) {
    __shared__ float column_factors[kMaxTaps];
    for (int j = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x); j < f.height;
         j += static_cast<int>(blockDim.x * blockDim.y)) {
        column_factors[j] = f.col[j];
    }
    __syncthreads();
    const int height = out.shape.height;
    const int elements = out.shape.row_elements();
    const int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (e >= elements) return;
    // A constant border's rows outside the image: the row kernel's sum over a row of the value.
    float outside = 0.0f;
    for (int i = 0; i < f.width; ++i) outside = fmaf(f.row[i], static_cast<float>(border.value), outside);
    const int ry = f.height / 2;
    const int groups_per_plane = (height + kColumnRows - 1) / kColumnRows;
    const int planes = out.shape.rows() / height;
    for (int group = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y); group < planes * groups_per_plane;
         group += static_cast<int>(gridDim.y * blockDim.y)) {
        const int plane_first = group / groups_per_plane * height;  // the plane's first stored row
        const int y0 = group % groups_per_plane * kColumnRows;
        float acc[kColumnRows] = {};
        for (int s = 0; s < f.height + kColumnRows - 1; ++s) {  // input row y0 - ry + s
            const int sy = border_index(y0 - ry + s, height, border.mode);
            const float t = sy < 0 ? outside : mid[static_cast<std::size_t>(plane_first + sy) * mid_pitch + e];
#pragma unroll
            for (int o = 0; o < kColumnRows; ++o) {
                const int j = s - o;  // the tap of row s for output y0 + o
                if (j >= 0 && j < f.height) acc[o] = fmaf(column_factors[j], t, acc[o]);
            }
        }
#pragma unroll
        for (int o = 0; o < kColumnRows; ++o) {
            if (y0 + o < height) {
                out.data[static_cast<std::size_t>(plane_first + y0 + o) * out.pitch_bytes + e] = saturate_round_u8(acc[o]);
            }
        }
    }
}

using RowKernel = void (*)(ImageView<const std::uint8_t>, float*, std::size_t, Factors, Border);

RowKernel row_kernel_for(const Problem& problem) {
    const int stride = problem.shape.layout == Layout::aos ? problem.shape.channels : 1;
    return by_channels<RowKernel>(stride, &row_pass_kernel<1>, &row_pass_kernel<3>, &row_pass_kernel<4>);
}

// Floats per intermediate row: the row's elements rounded up to 32 (128-byte rows).
std::size_t mid_pitch_of(const ImageShape& shape) {
    return (static_cast<std::size_t>(shape.row_elements()) + 31) / 32 * 32;
}

// The plan's scratch: the intermediate, one row of mid_pitch_of() floats per stored row. The
// scratch starts 256-byte aligned and each row is a multiple of 128 bytes.
std::size_t intermediate_bytes(const ImageShape& shape) {
    return static_cast<std::size_t>(shape.rows()) * mid_pitch_of(shape) * sizeof(float);
}

class ConvSeparable2Pass final : public Variant {
public:
    std::string name() const override { return "conv.separable_2pass"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override {
        return "separable mask, row kernel then column kernel, fp32 intermediate in device memory";
    }
    Support supports(const Problem& problem) const override { return separable::rank1_masks_only(*problem.mask); }
    TuningSpace tuning_space() const override { return block_tuning_space(LaunchShape{128, 2, {}}); }
    double coefficient_error(const Problem& problem) const override {
        return separable::coefficient_error_of(name(), *problem.mask);
    }
    std::size_t scratch_bytes(const Problem& problem, const LaunchShape&) const override {
        return intermediate_bytes(problem.shape);
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const ImageShape& s = problem.shape;
        const int planes = s.layout == Layout::aos ? 1 : s.channels;
        const int column_groups = planes * ((s.height + kColumnRows - 1) / kColumnRows);
        const dim3 row_grid(grid_side(s.row_elements(), shape.block_x),
                            std::min(grid_side(s.rows(), shape.block_y), kMaxGridY));
        const dim3 column_grid(row_grid.x, std::min(grid_side(column_groups, shape.block_y), kMaxGridY));
        return {make_launch(row_kernel_for(problem), "row_pass_kernel", row_grid, block_of(shape)),
                make_launch(&column_pass_kernel, "column_pass_kernel", column_grid, block_of(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        const Mask& mask = *plan.problem.mask;
        const SeparableFactors rc = *separable_variant_factors(mask);
        Factors f{};
        f.width = mask.width();
        f.height = mask.height();
        for (int i = 0; i < f.width; ++i) f.row[i] = rc.row[static_cast<std::size_t>(i)];
        for (int j = 0; j < f.height; ++j) f.col[j] = rc.column[static_cast<std::size_t>(j)];

        const std::size_t mid_pitch = mid_pitch_of(plan.problem.shape);
        float* mid = plan.scratch_as<float>();  // intermediate_bytes(), allocated by prepare()
        const DeviceBuffers& b = plan.buffers;
        enqueue_kernel(plan.kernels[0], stream, row_kernel_for(plan.problem), b.input.view<const std::uint8_t>(), mid,
                       mid_pitch, f, plan.problem.border);
        enqueue_kernel(plan.kernels[1], stream, &column_pass_kernel, static_cast<const float*>(mid), mid_pitch,
                       b.output.view<std::uint8_t>(), f, plan.problem.border);
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::ConvSeparable2Pass)
