#pragma once
// Device helpers of the row-streaming convolution kernels (conv.register_window,
// conv.register_window_async, conv.separable_sliding): a block of T threads walks down a strip of
// the image one stored row at a time; each thread owns G consecutive elements (bytes) of the row
// (elements_per_thread: 16 up to 5x5 masks, 8 above), converts them to fp32 once into a row buffer
// in shared memory, and reads the neighbours' values it needs (the mask's horizontal reach) from
// there.
//
// "Elements" are the bytes of a stored row: AoS rows hold width*channels elements whose
// horizontal neighbours are `channels` apart (the element stride S); SoA rows one plane's pixels
// (S = 1). A thread's first element e is a multiple of G.
//
// Only nvcc compiles this header (it is included by kernels/*.cu only).
//
// One header over ~400 lines: its parts (the row load and its fp32 conversion, the strip driver with
// its cp.async ring, the 2D register window, and the host side's launch geometry that sizes the
// strips the driver walks) are layers of one row-streaming machine, each built on the one before.
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <cuda_pipeline.h>

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "harness/border.hpp"
#include "harness/image.hpp"
#include "harness/kernel_launch.hpp"
#include "harness/variant.hpp"

namespace klab::rows {

// Elements per thread: 16 for masks up to 5x5, 8 for larger ones, whose 2R+1 rows of
// accumulators would not fit in the registers at 16.
constexpr int elements_per_thread(int radius) { return radius <= 2 ? 16 : 8; }

// The fp32 value of byte `b` (0..3) of `word`, exactly: the byte permute builds the float
// 2^23 + byte (exponent 0x4B, the byte in the low mantissa bits), and subtracting 2^23 is exact.
// Two full-rate instructions, where I2F would take the slower conversion pipe.
__device__ __forceinline__ float byte_to_float(std::uint32_t word, int b) {
    return __int_as_float(static_cast<int>(__byte_perm(word, 0x4B000000u, 0x7440u | static_cast<unsigned>(b)))) -
           8388608.0f;
}

// The numeric contract's store rule (harness/numeric.hpp: clamp to [0, 255], NaN to 0, round half
// to even) in one instruction per value: PTX cvt.rni.sat.u8.f32 rounds to nearest even, then
// saturates to 0..255, and maps NaN to 0 — the same byte as saturate_round_u8() for every float
// (rounding before or after the clamp gives the same result at both ends). Four values packed
// into a word, byte 0 first.
__device__ __forceinline__ std::uint32_t round_pack4(float a, float b, float c, float d) {
    std::uint32_t ua, ub, uc, ud;
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(ua) : "f"(a));
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(ub) : "f"(b));
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(uc) : "f"(c));
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(ud) : "f"(d));
    return __byte_perm(__byte_perm(ua, ub, 0x0040), __byte_perm(uc, ud, 0x0040), 0x5410);
}

// G bytes of a thread, as G/4 words (byte 0 of word 0 first).
template <int G>
struct Bytes {
    std::uint32_t w[G / 4];
};

// Elements [e, e + G) of stored row `row` (a row of `width` pixels of S elements), each mapped
// through the border: for the threads whose elements cross the image's left or right edge, and
// for rows whose address is not aligned (odd pitches). `row` is null for a constant border's row
// outside the image (every element is the border value).
template <int S, int G>
__device__ __noinline__ Bytes<G> load_bytes_bordered(const std::uint8_t* row, int e, int width, Border border) {
    Bytes<G> bytes{};
    for (int b = 0; b < G; ++b) {
        std::uint32_t byte = border.value;
        if (row != nullptr) {
            const int element = e + b;
            const int x = element >= 0 ? element / S : -((-element + S - 1) / S);  // floor(element / S)
            const int c = element - x * S;
            const int sx = border_index(x, width, border.mode);
            if (sx >= 0) byte = row[sx * S + c];
        }
        bytes.w[b / 4] |= byte << (8 * (b % 4));
    }
    return bytes;
}

// The stored row that image row `r` reads (border_index, whose divisions only rows outside the
// image pay): -1 for a constant border's row outside the image.
static __device__ __noinline__ int row_outside(int r, int height, BorderMode mode) { return border_index(r, height, mode); }
__device__ __forceinline__ int row_index(int r, int height, BorderMode mode) {
    return (r >= 0 && r < height) ? r : row_outside(r, height, mode);
}

// The fp32 row buffer in shared memory holds G/4 float4 slots per thread, thread t's elements in
// logical slots t*G/4 ... A quarter warp reading or writing slots t*G/4 + c (any constant c) would
// hit only two 16-byte bank groups; slot L is stored at L ^ ((L >> 3) & (G/4 - 1)), so that eight
// consecutive threads touch eight different bank groups.
template <int G>
__device__ __forceinline__ int swizzled(int slot) { return slot ^ ((slot >> 3) & (G / 4 - 1)); }

// ---------------------------------------------------------------------------------------------
// The strip driver. Block b.x covers the output elements [b.x * (T - 2H) * G, ...) of a stored
// row (H = halo threads at each end: they load and convert the elements the mask reaches beyond
// the block's outputs, and compute nothing), block b.y the output rows [b.y * strip_rows, ...),
// block b.z the plane (SoA). It reads the strip's input rows y0 - R ... y_end - 1 + R top to
// bottom; for each, every thread converts its G bytes into the row buffer, one barrier, then each
// computing thread gets its window (G + 2P elements, P >= R*S) and calls
//   consume(phase, window, r)     r the image row; phase = k mod Consume::kPhases, a compile-time
//                                 constant (the driver unrolls kPhases steps)
// so that a consumer can keep 2R+1 rows of accumulators in registers and rotate them by renaming
// (kPhases = 2R+1) rather than by moves (kPhases = 1). The consumer stores finished rows itself.
// Depth > 0: every thread keeps `Depth` rows of its G bytes in flight with cp.async, into a ring
// of per-thread slots in shared memory (no barrier needed: each thread reads back only its own
// copies). Depth == 0: a synchronous load of the next row, issued before the current row is
// converted (one row of prefetch).
// Shared memory: 2 row buffers of T*G floats, then Depth x T x G bytes of ring.

template <int R, int S>
struct StripLayout {
    static constexpr int K = 2 * R + 1;
    static constexpr int G = elements_per_thread(R);
    static constexpr int kSlots = G / 4;                          // float4 slots per thread
    static constexpr int kHaloThreads = (R * S + G - 1) / G;
    static constexpr int P = (R * S + 3) / 4 * 4;                 // window elements each side: whole slots
    static constexpr int kWindow = G + 2 * P;
};

// Where a thread's outputs go: its first element e of stored row 0 of its plane, and the strip.
struct StripOutput {
    std::uint8_t* column;  // out.row(0, plane) + e; row y is y * pitch further
    std::size_t pitch;
    int e, elements, y0, y_end;

    // Stores G results of output row y at elements [e, e + G) (those inside the row): one aligned
    // store where the row allows it, else byte by byte.
    template <int G>
    __device__ __forceinline__ void store(int y, const float (&acc)[G]) const {
        std::uint32_t w[G / 4];
#pragma unroll
        for (int q = 0; q < G / 4; ++q) w[q] = round_pack4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]);
        std::uint8_t* p = column + static_cast<std::size_t>(y) * pitch;
        if (e + G <= elements && (reinterpret_cast<std::uintptr_t>(p) & (G - 1)) == 0) {
            if constexpr (G == 16) {
                *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
            } else {
                *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
            }
            return;
        }
        for (int b = 0; b < G && e + b < elements; ++b) p[b] = static_cast<std::uint8_t>(w[b / 4] >> (8 * (b % 4)));
    }
};

template <int R, int S>
__device__ __forceinline__ StripOutput strip_output(ImageView<std::uint8_t> out, int strip_rows) {
    using L = StripLayout<R, S>;
    const int threads = static_cast<int>(blockDim.x);
    const int e = (static_cast<int>(blockIdx.x) * (threads - 2 * L::kHaloThreads) + static_cast<int>(threadIdx.x) - L::kHaloThreads) * L::G;
    const int y0 = static_cast<int>(blockIdx.y) * strip_rows;
    return {out.row(0, static_cast<int>(blockIdx.z)) + e, out.pitch_bytes, e, out.shape.row_elements(), y0,
            min(y0 + strip_rows, out.shape.height)};
}

// step(k0 + I, integral_constant<I>) for I = 0, 1, ... until one returns false: the driver's
// unrolled steps with a compile-time phase each.
template <class Step, int... I>
__device__ __forceinline__ void unrolled_steps(Step& step, int k0, std::integer_sequence<int, I...>) {
    (step(k0 + I, std::integral_constant<int, I>{}) && ...);
}

template <int R, int S, int Depth, class Consume>
__device__ __forceinline__ void stream_strip(ImageView<const std::uint8_t> in, Border border, int strip_rows,
                                             float4* shared, Consume& consume) {
    using L = StripLayout<R, S>;
    constexpr int G = L::G;
    const int threads = static_cast<int>(blockDim.x);
    const int t = static_cast<int>(threadIdx.x);
    const int height = in.shape.height;
    const int elements = in.shape.row_elements();
    const int plane = static_cast<int>(blockIdx.z);
    const int e = (static_cast<int>(blockIdx.x) * (threads - 2 * L::kHaloThreads) + t - L::kHaloThreads) * G;
    const int y0 = static_cast<int>(blockIdx.y) * strip_rows;
    const int r_first = y0 - R;
    const int count = min(y0 + strip_rows, height) - y0 + 2 * R;  // input rows of the strip
    const bool computes = t >= L::kHaloThreads && t < threads - L::kHaloThreads && e < elements;
    // Whether this thread reads every row inside the image with one aligned G-byte load: its
    // elements lie inside the row, and every row starts G-byte aligned. Otherwise (the image's
    // left and right edges, odd pitches) load_bytes_bordered() reads them.
    const bool aligned = (reinterpret_cast<std::uintptr_t>(in.data) % G) == 0 && in.pitch_bytes % G == 0 && e >= 0 &&
                         e + G <= elements;
    const std::uint8_t* column = in.row(0, plane) + e;  // row sy is sy * pitch further
    const std::size_t pitch = in.pitch_bytes;
    std::uint8_t* ring = reinterpret_cast<std::uint8_t*>(shared + 2 * L::kSlots * threads) + t * G;
    const int ring_stride = threads * G;
    // The row buffer's slots this thread writes and reads: the same in every row.
    int own[L::kSlots], left[L::P / 4 + 1], right[L::P / 4 + 1];  // (+1: R = 0 has no halo)
#pragma unroll
    for (int q = 0; q < L::kSlots; ++q) own[q] = swizzled<G>(L::kSlots * t + q);
#pragma unroll
    for (int q = 0; q < L::P / 4; ++q) {
        left[q] = swizzled<G>(L::kSlots * t - L::P / 4 + q);
        right[q] = swizzled<G>(L::kSlots * (t + 1) + q);
    }

    [[maybe_unused]] Bytes<G> next{};
    const auto fetch = [&](int k) {  // Depth > 0: asks for row k; Depth == 0: loads it into `next`
        if (k < count && aligned) {
            const int sy = row_index(r_first + k, height, border.mode);
            if (sy >= 0) {
                const std::uint8_t* src = column + static_cast<std::size_t>(sy) * pitch;
                if constexpr (Depth > 0) {
                    __pipeline_memcpy_async(ring + (k % Depth) * ring_stride, src, G);
                } else {
                    next = *reinterpret_cast<const Bytes<G>*>(src);
                }
            }
        }
        if constexpr (Depth > 0) __pipeline_commit();  // an empty group keeps the count uniform
    };
    if constexpr (Depth > 0) {
        for (int k = 0; k < Depth - 1; ++k) fetch(k);
    } else {
        fetch(0);
    }

    // One input row; returns false past the strip's last row (uniform across the block).
    const auto step = [&](int k, auto phase) {
        if (k >= count) return false;
        const int sy = row_index(r_first + k, height, border.mode);
        Bytes<G> bytes;
        if constexpr (Depth > 0) {
            fetch(k + Depth - 1);
            __pipeline_wait_prior(Depth - 1);  // this thread's copy of row k has landed
            if (aligned && sy >= 0) bytes = *reinterpret_cast<const Bytes<G>*>(ring + (k % Depth) * ring_stride);
        } else {
            bytes = next;
            fetch(k + 1);
        }
        if (!aligned || sy < 0) {
            bytes = load_bytes_bordered<S, G>(sy < 0 ? nullptr : column - e + static_cast<std::size_t>(sy) * pitch, e, in.shape.width, border);
        }
        float window[L::kWindow];
#pragma unroll
        for (int b = 0; b < G; ++b) window[L::P + b] = byte_to_float(bytes.w[b / 4], b % 4);
        float4* buffer = shared + (k & 1) * L::kSlots * threads;
#pragma unroll
        for (int q = 0; q < L::kSlots; ++q) {
            buffer[own[q]] = make_float4(window[L::P + 4 * q], window[L::P + 4 * q + 1], window[L::P + 4 * q + 2], window[L::P + 4 * q + 3]);
        }
        __syncthreads();  // the neighbours' values are in; the buffer of row k - 2 is free
        if (computes) {
#pragma unroll
            for (int q = 0; q < L::P / 4; ++q) {
                const float4 l = buffer[left[q]];
                const float4 r = buffer[right[q]];
                window[4 * q] = l.x, window[4 * q + 1] = l.y, window[4 * q + 2] = l.z, window[4 * q + 3] = l.w;
                window[L::P + G + 4 * q] = r.x, window[L::P + G + 4 * q + 1] = r.y;
                window[L::P + G + 4 * q + 2] = r.z, window[L::P + G + 4 * q + 3] = r.w;
            }
            consume(phase, window, r_first + k);
        }
        return true;
    };
    for (int k0 = 0; k0 < count; k0 += Consume::kPhases) {
        unrolled_steps(step, k0, std::make_integer_sequence<int, Consume::kPhases>{});
    }
    if constexpr (Depth > 0) __pipeline_wait_prior(0);
}

// ---------------------------------------------------------------------------------------------
// The 2D register window (conv.register_window, conv.register_window_async).

// The mask, zero-padded to (2R+1)x(2R+1) around its centre, row-major. Passed by value: with
// compile-time indices every tap is an FFMA operand from the kernel-parameter bank.
template <int R>
struct Taps2D {
    float m[(2 * R + 1) * (2 * R + 1)];
};

// The rolling accumulators of one thread: 2R+1 output rows x G elements. For input row r, logical
// slot s holds output row r - R + s, which takes mask row 2R - s from it. Up to 5x5 the slot lives
// in register row (s + phase) % K and the driver unrolls K steps (no moves); above, the K^2 G
// FMAs of a step would make K unrolled steps too long for the instruction cache, so one step is
// unrolled and the rows move down by one after each.
template <int R, int S>
struct SlidingWindow2D {
    static constexpr int K = 2 * R + 1;
    static constexpr bool kRename = R <= 2;
    static constexpr int kPhases = kRename ? K : 1;
    using Layout = StripLayout<R, S>;
    static constexpr int G = Layout::G;
    const Taps2D<R>& taps;
    StripOutput out;
    float acc[K][G] = {};

    template <int Phase>
    __device__ __forceinline__ void operator()(std::integral_constant<int, Phase>, const float (&win)[Layout::kWindow], int r) {
#pragma unroll
        for (int s = 0; s < K; ++s) {
            const int y = r - R + s;
            if (y < out.y0 || y >= out.y_end) continue;  // a row of another strip, or outside the image
            const int j = K - 1 - s;
            float(&a)[G] = acc[kRename ? (s + Phase) % K : s];
#pragma unroll
            for (int i = 0; i < K; ++i) {
                const float c = taps.m[j * K + i];
#pragma unroll
                for (int g = 0; g < G; ++g) a[g] = fmaf(c, win[Layout::P - R * S + g + i * S], a[g]);
            }
        }
        const int y = r - R;  // logical slot 0 is complete
        float(&done)[G] = acc[kRename ? Phase : 0];
        if (y >= out.y0 && y < out.y_end) out.store<G>(y, done);
        if constexpr (kRename) {
#pragma unroll
            for (int g = 0; g < G; ++g) done[g] = 0.0f;  // becomes output row r + R + 1
        } else {
#pragma unroll
            for (int s = 0; s + 1 < K; ++s) {
#pragma unroll
                for (int g = 0; g < G; ++g) acc[s][g] = acc[s + 1][g];
            }
#pragma unroll
            for (int g = 0; g < G; ++g) acc[K - 1][g] = 0.0f;
        }
    }
};

// The host's Taps2D of a mask (R >= the mask's radii).
template <int R>
Taps2D<R> taps_2d(const Mask& mask) {
    constexpr int K = 2 * R + 1;
    Taps2D<R> taps{};
    const int dx = R - mask.radius_x();
    const int dy = R - mask.radius_y();
    for (int j = 0; j < mask.height(); ++j) {
        for (int i = 0; i < mask.width(); ++i) taps.m[(j + dy) * K + i + dx] = mask.at(i, j);
    }
    return taps;
}

}  // namespace klab::rows

// ---------------------------------------------------------------------------------------------
// Host side: the launch geometry every strip kernel shares. Block: T = 64, 128 or 256 threads in
// x, 1 in y; parameter `rows`: the output rows of a strip (tuned).
namespace klab::rows {

inline constexpr std::array<int, 3> kBlockSides = {64, 128, 256};
inline constexpr std::array<int, 6> kStripRows = {4, 8, 16, 32, 64, 128};

inline int element_stride(const ImageShape& shape) { return shape.layout == Layout::aos ? shape.channels : 1; }

// Blocks along a stored row: each computes (T - 2H) x G output elements (H halo threads each side).
inline unsigned blocks_per_row(const ImageShape& shape, int threads, int radius) {
    const int g = elements_per_thread(radius);
    const int halo = (radius * element_stride(shape) + g - 1) / g;
    return grid_side(shape.row_elements(), (threads - 2 * halo) * g);
}

inline TuningSpace strip_tuning_space() {
    TuningSpace space;
    space.block_x.assign(kBlockSides.begin(), kBlockSides.end());
    space.block_y = {1};
    space.parameters = {{"rows", std::vector<int>(kStripRows.begin(), kStripRows.end()),
                         "output rows per block (a strip read top to bottom)"}};
    space.default_shape = LaunchShape{128, 1, {{"rows", 32}}};
    return space;
}

// 128 threads, and the tallest strips (up to 64 rows) that still give about eight blocks per SM
// of a 132-SM GPU: 8K gets 64-row strips, HD and smaller images 4-row ones.
inline LaunchShape strip_default_shape(const ImageShape& shape, int radius) {
    LaunchShape launch = strip_tuning_space().default_shape;
    const long long columns = static_cast<long long>(blocks_per_row(shape, launch.block_x, radius)) *
                              (shape.layout == Layout::aos ? 1 : shape.channels);
    int rows = kStripRows.front();
    for (int candidate : kStripRows) {
        if (candidate <= 64 && columns * grid_side(shape.height, candidate) >= 1056) rows = candidate;
    }
    launch.parameters = {{"rows", rows}};
    return launch;
}

inline Support check_strip_shape(const LaunchShape& shape) {
    if (shape.block_y != 1 || std::find(kBlockSides.begin(), kBlockSides.end(), shape.block_x) == kBlockSides.end()) {
        return Support::no("a block of 64, 128 or 256 threads in x and 1 in y");
    }
    return Support::yes();
}

inline dim3 strip_grid(const ImageShape& shape, const LaunchShape& launch, int radius) {
    return dim3(blocks_per_row(shape, launch.block_x, radius), grid_side(shape.height, launch.parameter("rows")),
                shape.layout == Layout::aos ? 1u : static_cast<unsigned>(shape.channels));
}

// Two row buffers of T x G floats, and the ring of `depth` rows of G bytes per thread.
inline std::size_t strip_shared_bytes(int threads, int depth, int radius) {
    const std::size_t g = static_cast<std::size_t>(elements_per_thread(radius));
    return static_cast<std::size_t>(threads) * (2 * g * sizeof(float) + static_cast<std::size_t>(depth) * g);
}

// Calls f(integral_constant<R>, integral_constant<S>) for radius 0..4 and element stride 1, 3 or 4.
template <class F>
decltype(auto) dispatch_radius_stride(int radius, int stride, F&& f) {
    const auto by_stride = [&](auto r) -> decltype(auto) {
        if (stride == 1) return f(r, std::integral_constant<int, 1>{});
        if (stride == 3) return f(r, std::integral_constant<int, 3>{});
        return f(r, std::integral_constant<int, 4>{});
    };
    switch (radius) {
        case 0: return by_stride(std::integral_constant<int, 0>{});
        case 1: return by_stride(std::integral_constant<int, 1>{});
        case 2: return by_stride(std::integral_constant<int, 2>{});
        case 3: return by_stride(std::integral_constant<int, 3>{});
        case 4: return by_stride(std::integral_constant<int, 4>{});
        default: throw Error(fmt::format("mask radius {}", radius), "radius 0..4 (masks up to 9x9)");
    }
}

// The part of Variant every strip kernel shares: masks up to 9x9, the tuning space, the default
// shape and the launch geometry. A variant names itself, says how deep its ring is, gives its
// kernel for a problem and enqueues it with its own (typed) mask argument.
class StripVariant : public Variant {
public:
    static constexpr int kMaxRadius = 4;
    static int radius(const Problem& problem) { return std::max(problem.mask->radius_x(), problem.mask->radius_y()); }

    Operation op() const override { return Operation::convolve; }
    Support supports(const Problem& problem) const override {
        const Mask& mask = *problem.mask;
        if (radius(problem) > kMaxRadius) {
            return Support::no(fmt::format("masks up to 9x9: {} ({}x{}) needs more rows of accumulators than the registers "
                                           "hold (conv.tile_fp32 takes every size)",
                                           mask.name(), mask.width(), mask.height()));
        }
        return Support::yes();
    }
    TuningSpace tuning_space() const override { return strip_tuning_space(); }
    LaunchShape default_shape(const Problem& problem) const override { return strip_default_shape(problem.shape, radius(problem)); }
    Support check_shape(const Problem&, const LaunchShape& shape) const override { return check_strip_shape(shape); }
    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        return {KernelLaunch{kernel(problem), kernel_name(), strip_grid(problem.shape, shape, radius(problem)), block_of(shape),
                             strip_shared_bytes(shape.block_x, ring_depth(), radius(problem))}};
    }

protected:
    // f(integral_constant<R>, integral_constant<S>) for the problem's radius and element stride.
    template <class F>
    static decltype(auto) dispatch(const Problem& problem, F&& f) {
        return dispatch_radius_stride(radius(problem), element_stride(problem.shape), std::forward<F>(f));
    }
    virtual int ring_depth() const = 0;  // rows in flight per thread (0: synchronous loads)
    virtual const void* kernel(const Problem& problem) const = 0;
    virtual std::string kernel_name() const = 0;
};

}  // namespace klab::rows
