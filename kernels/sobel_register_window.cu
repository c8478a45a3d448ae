// sobel.register_window — gray conversion, 3x3 Sobel gradients and magnitude, the window in registers.
//
// Technique: each thread owns a strip of P consecutive pixels of a row (P = 8 colour, 16 gray; see
// below) and walks down (or up: strips alternate, so that two strips read the rows they share at
// the same time, the second from L2) a tuned number of rows of it (4 to 32), holding the 3x3
// window of its strip in registers: no shared memory, no barrier. A row of the strip is one word
// load per plane (16 bytes gray, 24 bytes RGB, 32 bytes RGBA, as 8- and 16-byte loads), issued two
// rows ahead of the row being computed; interior walks also ask L2 for the row four further on (a
// prefetch holds no register). A register cap (80; 88 for RGBA AoS) leaves colour walks room for 24
// warps per SM. Interior walks step the lane's own pointers (its strip's first byte, its halo
// pixel's) by one pitch per row. Outputs are P-byte streaming stores (evict-first in L2). The two
// halo columns come from the neighbouring lanes by warp shuffle (a warp's 32 lanes hold 32 P
// consecutive pixels); lanes 0 and 31 read their outer neighbour themselves, at a column the border
// rule maps once per strip. Per pixel:
//   gray    (colour input) T = 1063 r + 3576 g + 361 b as two __dp2a dot products (16-bit weights
//           times bytes), then round-half-to-even of T / 5000 by a multiply-high:
//           u = floor((T + 2500) / 5000) = umulhi(T + 2500, 858994), and T / 5000 is a tie (T + 2500
//           a multiple of 5000) exactly when the low word (T + 2500) * 858994 < 858994, where the
//           result is u & ~1. gray_bt709 rounds (2126 r + 7152 g + 722 b) / 10000 = 2T / 10000 the
//           same way: the same value for all 2^24 colours (checked on the host while writing this,
//           and on the device by tests/gpu/test_sobel_register_window_arithmetic.cu).
//   window  gray values become exact floats 32768 + g by one byte permute (0x47000000 | g << 8);
//           down the strip c = a(y) + a(y+1), s = c(y-1) + c(y) = a(y-1) + 2 a(y) + a(y+1) and
//           d = c(y) - c(y-1) = a(y+1) - a(y-1); across it gx = s(x+1) - s(x-1) and
//           gy = d(x-1) + 2 d(x) + d(x+1). The biases cancel and every value is an integer below
//           2^18, exact in fp32, as is n = gx^2 + gy^2 <= 2 * 1020^2 < 2^24.
//   output  r = sqrt.approx(n), and r + 1.5 * 2^23 rounds r to the nearest integer in the float's
//           low 16 bits (the FADD rounds to nearest at ulp 1; r <= 1443). Two pixels' low halves
//           go into one word by a byte permute and are saturated to 255 together by one min.u16x2
//           (__vminu2, a 16-bit pair minimum on sm_90), and a last byte permute packs four outputs
//           into a word.
//           No integer/float conversion instruction runs (they issue at a quarter of the FMA rate).
// Exactness: gray and the gradients are exact integers (above). sqrt(n) of an integer n <= 65280
// lies at least 0.25 / 511 = 4.9e-4 from any k + 1/2 ((k + 1/2)^2 is 1/4 from every integer), far
// more than sqrt.approx's error there, so r rounds like the reference's double sqrt; every
// n >= 65281 has a root of at least 255.5015, 1.5e-3 above 255.5, far more than sqrt.approx's error,
// so r rounds to 256 or more and saturates to 255, as the reference's does. tests/gpu/test_sobel_register_window_arithmetic.cu checks every n from 0 to
// 2 * 1020^2 on the device, through the same saturation.
// Borders: a row outside the image is mapped once per row by border_index (a constant border's row
// is the value in every byte, which is also the gray value of the colour (v, v, v)); strips whose
// rows all lie inside the image skip that. The halo column of lanes 0 and 31 is mapped once per
// strip. A warp whose 32 P pixels reach past the row's end (the last of a row whose width is no
// multiple of 32 P) walks its strips with the same word loads, but reads no byte past the row's
// end: the lane that holds the row's last pixel reads its words inside the row one by one and the
// word that holds the row's end byte by byte, lanes wholly past the end read nothing, every column
// from the row's end on takes the value of column `width` under the border rule (lane 31's halo
// pixel, shuffled to the others), and the lane that holds the row's last pixel stores its outputs
// inside the row byte by byte. Rows not aligned for the word loads and stores (an
// odd pitch) take pixelwise_strip: each output pixel from its nine gray values, the border rule for
// every sample.
// Gray strips of 16 pixels (2026-11-25): a row of a strip costs about 27 instructions besides its
// pixels' arithmetic (the loads, the halo shuffles, the store, the loop) and two halo columns of
// window sums, so 16 pixels take 15.0 instructions each where 8 took 17.4 (Nsight, the walk's loop).
// They need 128 registers (ptxas spills at 96 and 104), so gray walks run 16 warps per SM: the
// tuner's rule then finds 25% occupancy the highest this problem reaches. Where 16 pixels would
// leave more lanes idle at a row's end than 8 (widths 1920 and 3840), gray strips keep 8. At 16
// warps per SM the L2 prefetch of the row four on pays for gray walks too.
// Preconditions: 1 (gray), 3 (RGB) or 4 (RGBA, alpha ignored) channels, AoS or SoA (SoA reads only
// the R, G and B planes), any pitch, any size, every border. The block is 32k x m threads, at most
// 512 (a warp's lanes lie along a row; k and m tuned); each thread computes P x rows output pixels.
// What it adds over sobel.fused (4 rows per thread, one byte load and one shared-memory gray value
// per pixel, about 100 instructions per pixel by Nsight): word loads, 8 pixels x 16 rows per
// thread, no shared memory, float arithmetic without conversions: 19 instructions per gray pixel
// and 30.5 per colour pixel by Nsight (the window's arithmetic is 13.5 of them).
// Deliberately not done: no asynchronous copies (TMA / cp.async), no packed half-precision math
// (the squares need fp32, and converting back costs what the packing saves), no 64-register cap
// (ptxas spills this loop below 80).
// Fewer instructions per row (2026-11-26): the rounded roots saturated two at a time (min.u16x2 on
// 16-bit halves instead of a float minimum per pixel before the root: 16 fewer instructions
// per two rows of 16 gray pixels) and the interior walk stepping the lane's own strip and halo
// pointers instead of one row pointer that every load offset again (8 fewer). Copies of this file on
// the H200 (scripts/gpu-experiment.sh, klab tune on 8K gray and 8K RGB AoS, then klab-bench, L2
// flushed, medians of 5), 8K gray / 8K RGB AoS: before 26.5 / 47.9 us; saturation 26.2 / 47.9;
// pointers 26.3 / 47.7; both 25.8 / 47.2 us (1.47x / 1.46x the copy floors of that run, 17.6 and
// 32.4 us). Nsight (8K gray, 32x2, rows=22): 15.75 M warp instructions against 16.42 M; the loop 446
// per two rows of 16 pixels (204 FADD, 64 FFMA, 56 byte permutes, 32 FMUL, 32 MUFU.SQRT, 16 VIMNMX,
// 42 others); issue slots 66% busy. The walk is issue-bound, not load-bound.
// The committed klab run at b793855 (results/nvidia-h200/, H200, L2 flushed, medians of 5): 8K gray
// 25.70 us at 32x2 rows=22 (1.46x the copy floor; npp.sobel 4.10x slower), 8K RGB AoS 47.22 us
// (1.45x), HD gray 7.73 us (1.21x; npp.sobel 1.94x slower).
// Measurements, profiles and every form tried and dropped: kernels/notes/sobel_register_window.md.
#include <array>
#include <cstddef>
#include <cstdint>

#include <fmt/format.h>

#include "harness/kernel_launch.hpp"
#include "harness/variant.hpp"

namespace klab {
namespace {

// Output rows per thread (tuned, even: the walk's loop is unrolled by two rows). The strip height
// sets how many warps a grid has, and so how evenly its last wave fills the GPU.
constexpr std::array<int, 11> kWalkRows = {4, 6, 8, 12, 14, 16, 20, 22, 24, 28, 32};
constexpr int kDefaultWalkRows = 16;
constexpr int kWarp = 32;
constexpr int kMaxBlockThreads = 512;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr std::uint32_t kBiasBits = 0x47000000u;  // the float 32768; | g << 8 makes 32768 + g
constexpr float kRoundMagic = 12582912.0f;        // 1.5 * 2^23: x + it holds round(x) in its low bits
constexpr std::uint32_t kLargestOutputPair = 0x00FF00FFu;  // 255 in each 16-bit half

// How a layout is read: SoA colour reads the R, G and B planes (alpha is not needed), one byte per
// pixel each; AoS reads one plane of Channels bytes per pixel.
template <int Channels, bool Soa, int P>
struct Reading {
    static constexpr int kPlanes = Soa && Channels > 1 ? 3 : 1;
    static constexpr int kStride = Soa ? 1 : Channels;  // bytes per pixel in a plane
    static constexpr int kBytes = P * kStride;          // bytes of a strip's row in a plane
    static constexpr int kWords = kBytes / 4;
    static constexpr std::uintptr_t kAlign = kBytes % 16 == 0 ? 16 : 8;  // of the vector loads
};

// One row of a thread's strip: the words of each plane, and the outer neighbour's pixel for lanes
// 0 (left of the strip) and 31 (right of it), as r | g << 8 | b << 16 (gray: the byte).
template <int Channels, bool Soa, int P>
struct RawRow {
    using R = Reading<Channels, Soa, P>;
    std::uint32_t w[R::kPlanes][R::kWords];
    std::uint32_t halo;
};

// The input as the window reads it: plane 0's rows, the distance from one SoA plane to the next.
struct Source {
    const std::uint8_t* data;
    std::size_t pitch;
    std::size_t plane_bytes;  // height * pitch
    int width;
    int height;
    Border border;
};

// The pixel word of a constant border's value v: v for gray input, the colour (v, v, v) (whose
// gray value is v) for colour input.
template <int Channels>
__device__ __forceinline__ std::uint32_t constant_pixel(Border border) {
    return Channels == 1 ? border.value : border.value * 0x010101u;
}

// The pixel whose first byte (plane 0) is at `pixel`, as r | g << 8 | b << 16.
template <int Channels, bool Soa>
__device__ __forceinline__ std::uint32_t pixel_here(const std::uint8_t* pixel, std::size_t plane_bytes) {
    if constexpr (Channels == 1) {
        return __ldg(pixel);
    } else if constexpr (Soa) {
        return __ldg(pixel) | (__ldg(pixel + plane_bytes) << 8) | (__ldg(pixel + 2 * plane_bytes) << 16);
    } else {
        return __ldg(pixel) | (__ldg(pixel + 1) << 8) | (__ldg(pixel + 2) << 16);
    }
}

// The outer neighbour of lanes 0 and 31 (the pixel left or right of the warp's run). Its column is
// the same in every row, so the border rule maps it once per strip: `column` is the pixel read in
// each row, or -1 where no pixel is read (lanes 1 to 30, and a constant border's column, whose
// pixel is `fill`). In a warp that reaches past the row's end, lane 31's outer neighbour feeds no
// output inside the row, so it reads the column right of the row's end instead (image column
// `width`, mapped by the border rule), which the warp's lanes past the end then use (gray_row).
struct HaloColumn {
    int column;
    std::uint32_t fill;
};

template <int Channels, int P>
__device__ __forceinline__ HaloColumn halo_column(const Source& in, int lane, int x0) {
    if (lane != 0 && lane != kWarp - 1) return {-1, 0u};
    const int x = lane == 0 ? x0 - 1 : min(x0 + P, in.width);
    const int sx = border_index(x, in.width, in.border.mode);
    return {sx, sx < 0 ? constant_pixel<Channels>(in.border) : 0u};
}

// Loads the strip's bytes of a row (rows aligned for the vector loads), `strip` its first byte in
// plane 0, and the lane's halo pixel, whose first byte is at `halo_pixel` (read where halo.column >= 0).
// Edge: a lane of a warp that reaches past the row's end has `valid` bytes of its strip inside the
// row and reads no byte after them, since the bytes after the row's end may be padding that nothing
// wrote (compute-sanitizer's initcheck reports such reads). The lane that holds the row's last pixel
// reads its words wholly inside the row one by one and the word that holds the row's end byte by
// byte; a lane wholly past the end (valid 0) reads nothing. Words past the end hold whatever is at
// hand (zero or a word inside): they feed no output (gray_row).
template <bool Edge, int Channels, bool Soa, int P>
__device__ __forceinline__ void load_row(const Source& in, const std::uint8_t* strip, const std::uint8_t* halo_pixel, int valid,
                                         HaloColumn halo, RawRow<Channels, Soa, P>& raw) {
    using R = Reading<Channels, Soa, P>;
#pragma unroll
    for (int p = 0; p < R::kPlanes; ++p) {
        const std::uint8_t* src = strip + p * in.plane_bytes;
        if (Edge && valid < R::kBytes) {
            const int whole = valid / 4;  // words wholly inside the row
            std::uint32_t end_word = 0;   // word `whole`: its bytes inside the row, then the last one repeated
            if (valid > 0) {
#pragma unroll
                for (int b = 0; b < 4; ++b) end_word |= static_cast<std::uint32_t>(__ldg(src + min(4 * whole + b, valid - 1))) << (8 * b);
            }
            const auto* words = reinterpret_cast<const std::uint32_t*>(src);
#pragma unroll
            for (int i = 0; i < R::kWords; ++i) raw.w[p][i] = i < whole ? __ldg(words + i) : end_word;
        } else if constexpr (R::kBytes % 16 == 0) {
#pragma unroll
            for (int i = 0; i < R::kBytes / 16; ++i) {
                const uint4 v = __ldg(reinterpret_cast<const uint4*>(src) + i);
                raw.w[p][4 * i] = v.x, raw.w[p][4 * i + 1] = v.y, raw.w[p][4 * i + 2] = v.z, raw.w[p][4 * i + 3] = v.w;
            }
        } else {
#pragma unroll
            for (int i = 0; i < R::kBytes / 8; ++i) {
                const uint2 v = __ldg(reinterpret_cast<const uint2*>(src) + i);
                raw.w[p][2 * i] = v.x, raw.w[p][2 * i + 1] = v.y;
            }
        }
    }
    raw.halo = halo.column >= 0 ? pixel_here<Channels, Soa>(halo_pixel, in.plane_bytes) : halo.fill;
}

// A row outside the image under a constant border: the value in every byte (and the colour (v, v, v)
// for the halo pixel, whose gray value is also v).
template <int Channels, bool Soa, int P>
__device__ __forceinline__ void constant_row(const Source& in, RawRow<Channels, Soa, P>& raw) {
    using R = Reading<Channels, Soa, P>;
#pragma unroll
    for (int p = 0; p < R::kPlanes; ++p)
#pragma unroll
        for (int i = 0; i < R::kWords; ++i) raw.w[p][i] = in.border.value * 0x01010101u;
    raw.halo = constant_pixel<Channels>(in.border);
}

// The rows of a walk, in walk order. Interior walks (every row inside the image) step the lane's
// own pointers (its strip's first byte and its halo pixel's) by one pitch per row; the others map
// each row by the border rule. `strip_offset` and `halo_offset` are the bytes from a row's start
// (plane 0) to the lane's strip and to its halo pixel (column 0's where it reads none).
template <bool Interior>
struct RowCursor;

template <>
struct RowCursor<true> {
    const std::uint8_t* strip;
    const std::uint8_t* halo_pixel;
    std::ptrdiff_t delta;  // +-pitch
    __device__ __forceinline__ RowCursor(const Source& in, int y, int step, int strip_offset, int halo_offset)
        : strip(in.data + static_cast<std::size_t>(y) * in.pitch + strip_offset),
          halo_pixel(in.data + static_cast<std::size_t>(y) * in.pitch + halo_offset),
          delta(step > 0 ? static_cast<std::ptrdiff_t>(in.pitch) : -static_cast<std::ptrdiff_t>(in.pitch)) {}
    template <bool Edge, class Row>
    __device__ __forceinline__ void load_next(const Source& in, int valid, HaloColumn halo, Row& raw) {
        static_assert(!Edge, "warps that reach past the row's end walk with border-mapped rows");
        load_row<false>(in, strip, halo_pixel, valid, halo, raw);
        strip += delta;
        halo_pixel += delta;
    }
    // Asks L2 for the strip's bytes of the row `rows` after the next one (no register waits for it).
    template <int Channels, bool Soa, int P>
    __device__ __forceinline__ void prefetch(const Source& in, int rows) const {
        using R = Reading<Channels, Soa, P>;
#pragma unroll
        for (int p = 0; p < R::kPlanes; ++p) {
            const std::uint8_t* src = strip + rows * delta + p * in.plane_bytes;
            asm volatile("prefetch.global.L2 [%0];" ::"l"(src));
        }
    }
};

template <>
struct RowCursor<false> {
    int y;
    int step;
    int strip_offset;
    // halo_offset is not kept: the halo pixel's address comes from HaloColumn in each row (keeping
    // the offset made ptxas spill more in the colour walks).
    __device__ __forceinline__ RowCursor(const Source&, int y_, int step_, int strip_offset_, int /*halo_offset*/)
        : y(y_), step(step_), strip_offset(strip_offset_) {}
    template <bool Edge, int Channels, bool Soa, int P>
    __device__ __forceinline__ void load_next(const Source& in, int valid, HaloColumn halo, RawRow<Channels, Soa, P>& raw) {
        const int sy = border_index(y, in.height, in.border.mode);
        if (sy < 0) {
            constant_row(in, raw);
        } else {
            const std::uint8_t* row = in.data + static_cast<std::size_t>(sy) * in.pitch;
            load_row<Edge>(in, row + strip_offset, row + max(halo.column, 0) * Reading<Channels, Soa, P>::kStride, valid, halo, raw);
        }
        y += step;
    }
};

// round-half-to-even((1063 r + 3576 g + 361 b) / 5000) = gray_bt709(r, g, b) for px = r | g << 8 | b << 16
// (byte 3 ignored); see the preamble. tests/gpu/test_sobel_register_window_arithmetic.cu repeats it.
__device__ __forceinline__ std::uint32_t gray_of(std::uint32_t px) {
    // T + 2500 = 1063 r + 3576 g (16-bit weights times bytes 0 and 1) + 361 b (times byte 2; byte 3 times 0) + 2500
    const std::uint32_t x = __dp2a_lo(0x0DF80427u, px, __dp2a_hi(0x00000169u, px, 2500u));
    const std::uint32_t u = __umulhi(x, 858994u);
    return x * 858994u < 858994u ? (u & ~1u) : u;
}

__device__ __forceinline__ float biased(std::uint32_t gray) { return __uint_as_float(gray * 256u + kBiasBits); }  // = kBiasBits | gray << 8

// Pixel k of the strip as r | g << 8 | b << 16 (byte 3 arbitrary), from the row's words.
template <int Channels, bool Soa, int P>
__device__ __forceinline__ std::uint32_t strip_pixel(const RawRow<Channels, Soa, P>& raw, int k) {
    if constexpr (Soa) {
        const int i = k / 4, b = k % 4;
        const std::uint32_t rg = __byte_perm(raw.w[0][i], raw.w[1][i], static_cast<unsigned>(b | (4 + b) << 4));
        return __byte_perm(rg, raw.w[2][i], static_cast<unsigned>(0x10 | (4 + b) << 8));
    } else {
        constexpr int kWords = Reading<Channels, Soa, P>::kWords;
        const int i = k * Channels / 4, s = k * Channels % 4;
        const std::uint32_t next = i + 1 < kWords ? raw.w[0][i + 1] : raw.w[0][i];
        return s == 0 ? raw.w[0][i] : __byte_perm(raw.w[0][i], next, static_cast<unsigned>(s | (s + 1) << 4 | (s + 2) << 8));
    }
}

// The row's gray values as 32768 + g: g[1 .. P] the strip, g[0] and g[P + 1] its neighbours (from
// the adjacent lanes, or the lane's own halo pixel at the warp's ends).
// Edge: the warp reaches past the row's end. Every column from `width` on takes the value of column
// `width` under the border rule (lane 31's halo pixel there, see halo_column): the last pixel inside
// the row needs it as its right neighbour, in its own strip or from the next lane's first pixel, and
// the other columns past the end feed no output inside the row. `inside` is the lane's pixels inside
// the row.
template <bool Edge, int Channels, bool Soa, int P>
__device__ __forceinline__ void gray_row(const RawRow<Channels, Soa, P>& raw, int lane, int inside, float (&g)[P + 2]) {
#pragma unroll
    for (int k = 0; k < P; ++k) {
        if constexpr (Channels == 1) {
            g[k + 1] = __uint_as_float(__byte_perm(raw.w[0][k / 4], kBiasBits, static_cast<unsigned>(0x7504 | (k % 4) << 4)));
        } else {
            g[k + 1] = biased(gray_of(strip_pixel(raw, k)));
        }
    }
    const float halo = biased(Channels == 1 ? raw.halo : gray_of(raw.halo));
    if constexpr (Edge) {
        const float past_end = __shfl_sync(kFullMask, halo, kWarp - 1);
#pragma unroll
        for (int k = 0; k < P; ++k) g[k + 1] = k < inside ? g[k + 1] : past_end;
    }
    const float left = __shfl_up_sync(kFullMask, g[P], 1);
    const float right = __shfl_down_sync(kFullMask, g[1], 1);
    g[0] = lane == 0 ? halo : left;
    g[P + 1] = lane == kWarp - 1 ? halo : right;
}

__device__ __forceinline__ float sqrt_approx(float x) {
    float r;
    asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

// A float whose low 16 bits are round(sqrt(gx^2 + gy^2)), at most 1443 (see the preamble).
// tests/gpu/test_sobel_register_window_arithmetic.cu repeats it and saturated_pair.
__device__ __forceinline__ std::uint32_t root_bits(float gx, float gy) {
    return __float_as_uint(sqrt_approx(fmaf(gy, gy, gx * gx)) + kRoundMagic);
}

// Two pixels' root_bits as one word of two 16-bit outputs, each saturated to 255: __vminu2 is one
// min.u16x2 for the pair on sm_90 and later (several instructions on earlier GPUs).
__device__ __forceinline__ std::uint32_t saturated_pair(std::uint32_t low_pixel, std::uint32_t high_pixel) {
    return __vminu2(__byte_perm(low_pixel, high_pixel, 0x5410u), kLargestOutputPair);
}

// One output row: the window (a, c) advances by the gray row g of the next row in the walk, and
// the row's P outputs go to dst (one P-byte streaming store, the output's rows aligned for it:
// evict-first in L2, so that the input rows a neighbouring strip reads again stay there).
// Walking up instead of down swaps the rows above and below: d and gy change sign, n does not.
// Edge: in a warp that reaches past the row's end, a lane that holds the row's last pixel stores its
// first `inside` outputs byte by byte, and a lane wholly past the end stores nothing.
template <int P, bool Edge>
__device__ __forceinline__ void window_step(float (&a)[P + 2], float (&c)[P + 2], const float (&g)[P + 2], std::uint8_t* dst,
                                            int inside) {
    std::uint32_t roots[P];  // root_bits of each output pixel
    float s_left = 0.0f, s_mid = 0.0f, d_left = 0.0f, d_mid = 0.0f;
#pragma unroll
    for (int j = 0; j < P + 2; ++j) {
        const float c_next = a[j] + g[j];
        const float s = c[j] + c_next;  // a(y-1) + 2 a(y) + a(y+1)
        const float d = c_next - c[j];  // a(y+1) - a(y-1)
        c[j] = c_next;
        a[j] = g[j];
        if (j >= 2) roots[j - 2] = root_bits(s - s_left, fmaf(2.0f, d_mid, d_left) + d);  // pixel j - 1
        s_left = s_mid, s_mid = s;
        d_left = d_mid, d_mid = d;
    }
    std::uint32_t word[P / 4];  // four outputs each
#pragma unroll
    for (int i = 0; i < P / 4; ++i) {
        const std::uint32_t low = saturated_pair(roots[4 * i], roots[4 * i + 1]);
        const std::uint32_t high = saturated_pair(roots[4 * i + 2], roots[4 * i + 3]);
        word[i] = __byte_perm(low, high, 0x6420u);
    }
    if (Edge && inside < P) {
#pragma unroll
        for (int k = 0; k < P; ++k) {
            if (k < inside) dst[k] = static_cast<std::uint8_t>(word[k / 4] >> (8 * (k % 4)));
        }
    } else {
        if constexpr (P == 16) {
            __stcs(reinterpret_cast<uint4*>(dst), make_uint4(word[0], word[1], word[2], word[3]));
        } else {
            __stcs(reinterpret_cast<uint2*>(dst), make_uint2(word[0], word[1]));
        }
    }
}

// The register window over `rows` output rows of the strip at x0, from y_first walking by step (+1
// down, -1 up). Interior: every row the walk reads (one beyond each end) lies inside the image, and
// then rows is the walk's full length. Strips walk down and up in turn, so that two strips read the
// rows they share at about the same time, both at the start of their walks or both at the end (the
// second read finds them in L2).
// Edge: the warp reaches past the row's end (see gray_row and window_step).
template <int Channels, bool Soa, int P, bool Interior, bool Edge>
__device__ __forceinline__ void window_strip(const Source& in, const ImageView<std::uint8_t>& out, int lane, int x0, int y_first,
                                             int rows, int step) {
    using Raw = RawRow<Channels, Soa, P>;
    const int inside = min(max(in.width - x0, 0), P);  // the lane's pixels inside the row (Edge)
    // The bytes of the strip's row inside the image, in each plane (load_row).
    const int valid = inside * Reading<Channels, Soa, P>::kStride;
    const HaloColumn halo = halo_column<Channels, P>(in, lane, x0);
    constexpr int kStride = Reading<Channels, Soa, P>::kStride;
    RowCursor<Interior> cursor(in, y_first - step, step, x0 * kStride, max(halo.column, 0) * kStride);
    std::uint8_t* dst = out.data + static_cast<std::size_t>(y_first) * out.pitch_bytes + x0;
    const std::ptrdiff_t dst_delta = step > 0 ? static_cast<std::ptrdiff_t>(out.pitch_bytes) : -static_cast<std::ptrdiff_t>(out.pitch_bytes);
    // The window per column (strip and halo): a = the current row's 32768 + gray, c = the sum of
    // the previous row of the walk and the current row.
    float a[P + 2], c[P + 2];
    {
        Raw raw;
        float g[P + 2];
        cursor.template load_next<Edge>(in, valid, halo, raw);
        gray_row<Edge>(raw, lane, inside, g);
        cursor.template load_next<Edge>(in, valid, halo, raw);
        gray_row<Edge>(raw, lane, inside, a);
#pragma unroll
        for (int j = 0; j < P + 2; ++j) c[j] = g[j] + a[j];
    }
    // Rows in flight: ahead[r] holds the row after output row i + r of the walk and is refilled
    // kAhead rows further on once it has been used. The loop body is unrolled by kAhead (even, so
    // that the window's registers come back to where they started). Two rows, so that the walk fits
    // kRegisterCap: more warps per SM hide the loads better than more rows per warp (gray: four
    // rows at 98 registers, 31.9 us on 8K; two at 80, 30.8 us). One row in the walks that reach
    // past the row's end: their selects and byte stores need registers too, and where they ran out,
    // ptxas also spilled in the interior walks (the kernel's registers are allocated as a whole).
    constexpr int kAhead = Edge ? 1 : 2;
    // Rows further ahead are only asked of L2 (see the preamble: gray walks gain from it since they
    // run 16 warps per SM).
    constexpr int kPrefetch = 4;
    static_assert(Edge || kAhead == 2, "whole unrolled steps per strip of an even number of rows (kWalkRows)");
    Raw ahead[kAhead];
#pragma unroll
    for (int r = 0; r < kAhead; ++r) {
        if (Interior || r < rows) cursor.template load_next<Edge>(in, valid, halo, ahead[r]);
    }
#pragma unroll 1
    for (int i = 0; i < rows; i += kAhead) {
#pragma unroll
        for (int r = 0; r < kAhead; ++r) {
            if (!Interior && i + r >= rows) break;
            float g[P + 2];
            gray_row<Edge>(ahead[r], lane, inside, g);
            if constexpr (Interior && !Edge && kPrefetch > 0) {  // the row for output i + r + kAhead + kPrefetch, if the walk reads it
                if (i + r + kAhead + kPrefetch < rows) cursor.template prefetch<Channels, Soa, P>(in, kPrefetch);
            }
            if (i + r + kAhead < rows) cursor.template load_next<Edge>(in, valid, halo, ahead[r]);
            window_step<P, Edge>(a, c, g, dst, inside);
            dst += dst_delta;
        }
    }
}

// The gray value of pixel (x, y), border included.
template <int Channels, bool Soa>
__device__ __forceinline__ std::uint32_t gray_at(const ImageView<const std::uint8_t>& in, int x, int y, Border border) {
    const int sx = border_index(x, in.shape.width, border.mode);
    const int sy = border_index(y, in.shape.height, border.mode);
    if (sx < 0 || sy < 0) return border.value;
    std::uint32_t px;
    if constexpr (Channels == 1) {
        px = in.row(sy)[sx];
    } else if constexpr (Soa) {
        px = in.row(sy, 0)[sx] | (in.row(sy, 1)[sx] << 8) | (in.row(sy, 2)[sx] << 16);
    } else {
        const std::uint8_t* p = in.row(sy) + static_cast<std::size_t>(sx) * Channels;
        px = p[0] | (p[1] << 8) | (p[2] << 16);
    }
    return Channels == 1 ? px : gray_of(px);
}

// The strip of rows not aligned for the word loads and stores: each output pixel from its nine gray
// values, the border rule for each (no window).
template <int Channels, bool Soa, int P>
__device__ __noinline__ void pixelwise_strip(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Border border,
                                             int x0, int y_begin, int y_end) {
    for (int y = y_begin; y < y_end; ++y) {
#pragma unroll 1
        for (int x = x0; x < min(x0 + P, in.shape.width); ++x) {
            int g[3][3];
#pragma unroll
            for (int j = 0; j < 3; ++j)
#pragma unroll
                for (int i = 0; i < 3; ++i) g[j][i] = static_cast<int>(gray_at<Channels, Soa>(in, x + i - 1, y + j - 1, border));
            const int gx = (g[0][2] + 2 * g[1][2] + g[2][2]) - (g[0][0] + 2 * g[1][0] + g[2][0]);
            const int gy = (g[2][0] + 2 * g[2][1] + g[2][2]) - (g[0][0] + 2 * g[0][1] + g[0][2]);
            out.row(y)[x] = static_cast<std::uint8_t>(min(root_bits(static_cast<float>(gx), static_cast<float>(gy)) & 0xFFFFu, 255u));
        }
    }
}

// Registers per thread: as few as the walk takes without spilling (ptxas -v), so that more warps fit
// an SM (80 registers: 24 warps in blocks of 4 or 8 warps, where 96 and 98 left 20 and 16). RGBA AoS
// rows (32 bytes a lane) need 88; gray strips of 16 pixels 128 (the preamble).
template <int Channels, bool Soa, int P>
constexpr int kRegisterCap = P == 16 ? 128 : Channels == 4 && !Soa ? 88 : 80;

template <int Channels, bool Soa, int P>
__global__ void __launch_bounds__(kMaxBlockThreads) __maxnreg__((kRegisterCap<Channels, Soa, P>))
    sobel_register_window_kernel(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, Border border, int walk_rows) {
    using R = Reading<Channels, Soa, P>;
    const int lane = static_cast<int>(threadIdx.x) % kWarp;
    const int x0 = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * P;
    const int y_begin = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y) * walk_rows;
    const int height = in.shape.height;
    if (y_begin >= height) return;  // the whole warp (its lanes share threadIdx.y)
    const int y_end = min(y_begin + walk_rows, height);
    // The window needs input rows aligned for the vector loads and output rows for the P-byte
    // stores, the same for every warp. A warp whose 32 P pixels reach past the row's end walks like
    // the others, all its lanes kept for the shuffles (window_strip's Edge); a warp wholly past the
    // end has nothing to do.
    const int warp_begin = x0 - lane * P;
    if (warp_begin >= in.shape.width) return;
    const bool edge = warp_begin + kWarp * P > in.shape.width;
    const bool windowed = (reinterpret_cast<std::uintptr_t>(in.data) | in.pitch_bytes) % R::kAlign == 0 &&
                          (reinterpret_cast<std::uintptr_t>(out.data) | out.pitch_bytes) % P == 0;
    if (!windowed) {
        if (x0 < in.shape.width) pixelwise_strip<Channels, Soa, P>(in, out, border, x0, y_begin, y_end);
        return;
    }
    const Source source{in.data, in.pitch_bytes, static_cast<std::size_t>(height) * in.pitch_bytes, in.shape.width, height, border};
    const bool down = (y_begin / walk_rows) % 2 == 0;  // strips walk down and up in turn
    const int y_first = down ? y_begin : y_end - 1;
    const int step = down ? 1 : -1;
    const bool interior = y_begin >= 1 && y_end + 1 <= height;
    if (edge) {
        window_strip<Channels, Soa, P, false, true>(source, out, lane, x0, y_first, y_end - y_begin, step);
    } else if (interior) {
        window_strip<Channels, Soa, P, true, false>(source, out, lane, x0, y_first, walk_rows, step);
    } else {
        window_strip<Channels, Soa, P, false, false>(source, out, lane, x0, y_first, y_end - y_begin, step);
    }
}

using Kernel = void (*)(ImageView<const std::uint8_t>, ImageView<std::uint8_t>, Border, int);

// Pixels per thread: 16 for gray input, unless the warp that reaches past a row's end (it walks the
// edge form) would then hold more of the row's pixels than with 8: a row of width % 512 >= 256
// pixels (1920 or 3840 pixels: 8); colour strips take 8 (two rows of 48 bytes in flight would not
// fit the registers).
int strip_pixels(const ImageShape& shape) {
    if (shape.channels != 1) return 8;
    return shape.width % (kWarp * 16) <= shape.width % (kWarp * 8) ? 16 : 8;
}

// One channel is the same memory in either layout.
Kernel kernel_for(const Problem& problem) {
    if (strip_pixels(problem.shape) == 16) return &sobel_register_window_kernel<1, false, 16>;
    if (problem.shape.layout == Layout::soa) {
        return by_channels<Kernel>(problem.shape.channels, &sobel_register_window_kernel<1, false, 8>,
                                   &sobel_register_window_kernel<3, true, 8>, &sobel_register_window_kernel<4, true, 8>);
    }
    return by_channels<Kernel>(problem.shape.channels, &sobel_register_window_kernel<1, false, 8>,
                               &sobel_register_window_kernel<3, false, 8>, &sobel_register_window_kernel<4, false, 8>);
}

class SobelRegisterWindow final : public Variant {
public:
    std::string name() const override { return "sobel.register_window"; }
    Operation op() const override { return Operation::sobel; }
    std::string technique() const override {
        return "one kernel: 8 pixels (gray: 16) x 4 to 32 rows (tuned) per thread, the 3x3 window in registers, word loads, "
               "halo by warp shuffle";
    }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override {
        TuningSpace space;
        space.block_x = {32, 64, 128, 256, 512};
        space.block_y = {1, 2, 4, 8, 16};
        space.parameters = {{"rows", std::vector<int>(kWalkRows.begin(), kWalkRows.end()), "output rows per thread (an even number)"}};
        space.default_shape = LaunchShape{64, 4, {{"rows", kDefaultWalkRows}}};
        return space;
    }
    // The listed heights are checked by prepare() (check_parameters), before this.
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        if (shape.block_x % kWarp != 0 || shape.block_x * shape.block_y > kMaxBlockThreads) {
            return Support::no(fmt::format("block {}x{}: the block is 32k x m threads, at most {} (a warp's lanes lie along "
                                           "a row and trade their edge pixels by shuffle)",
                                           shape.block_x, shape.block_y, kMaxBlockThreads));
        }
        return Support::yes();
    }

    std::vector<KernelLaunch> kernels(const Problem& problem, const LaunchShape& shape) const override {
        const dim3 grid(grid_side(problem.shape.width, shape.block_x * strip_pixels(problem.shape)),
                        grid_side(problem.shape.height, shape.block_y * shape.parameter("rows")));
        return {make_launch(kernel_for(problem), "sobel_register_window_kernel", grid, block_of(shape))};
    }

    void enqueue(const LaunchPlan& plan, cudaStream_t stream) const override {
        enqueue_kernel(plan.kernels[0], stream, kernel_for(plan.problem), plan.buffers.input.view<const std::uint8_t>(),
                       plan.buffers.output.view<std::uint8_t>(), plan.problem.border, plan.shape.parameter("rows"));
    }
};

}  // namespace
}  // namespace klab

KLAB_REGISTER_VARIANT(klab::SobelRegisterWindow)
