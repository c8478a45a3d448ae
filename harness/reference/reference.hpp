#pragma once
// The CPU reference: the one implementation every GPU variant is judged against
// (docs/numeric-contract.md). Simple loops, double accumulation, the contract's rounding, the
// shared border_index(). Every function takes a thread count (1 = sequential, 0 =
// one per hardware thread); the result is bit-identical for every count.
#include <cstdint>
#include <functional>

#include "harness/border.hpp"
#include "harness/image.hpp"
#include "harness/mask.hpp"

namespace klab::reference {

// Reports progress of a long computation: called from worker threads as output rows complete,
// with the rows done so far and the total. It must be thread-safe and cheap.
using Progress = std::function<void(int rows_done, int rows_total)>;

// Correlation with `mask`: out(x,y,c) = saturate_round_u8(sum m(i,j) * in(x+i-rx, y+j-ry, c)),
// accumulated in double. `in` and `out` have the same shape (any layout, any pitch) and are
// distinct images (in-place is refused).
void convolve(ImageView<const std::uint8_t> in, ImageView<std::uint8_t> out, const Mask& mask, Border border,
              int threads = 1, const Progress& progress = {});
ImageU8 convolve(const ImageU8& in, const Mask& mask, Border border, int threads = 1, const Progress& progress = {});

// One output element of convolve() in exact terms, for the verifier (harness/verify.hpp): the
// double sum itself, before rounding, and the sum of the magnitudes of its terms |m(i,j)*in|,
// which scales the fp32 accumulation error of a kernel.
struct ConvolutionSum {
    double value = 0.0;       // sum_k m_k * p_k
    double magnitude = 0.0;   // sum_k |m_k * p_k|
    double pixel_sum = 0.0;   // sum_k p_k, the pixels under the mask
};
ConvolutionSum convolve_sum_at(ImageView<const std::uint8_t> in, const Mask& mask, Border border, int x, int y, int c);

// BT.709 luma (gray_bt709 in numeric.hpp); 1-channel input is copied, alpha is ignored.
// The output is 1-channel AoS.
ImageU8 grayscale(const ImageU8& in, int threads = 1);

// 3x3 Sobel gradients of a 1-channel image: gx with masks::sobel_x(), gy with masks::sobel_y().
struct SobelGradients {
    HostImage<std::int16_t> gx;
    HostImage<std::int16_t> gy;
};
SobelGradients sobel_gradients(const ImageU8& gray, Border border, int threads = 1);

// Gradient magnitude: grayscale, gradients, then saturate_round_u8(sqrt(gx^2 + gy^2)).
// sqrt(integer) is never exactly halfway between integers, so an fp32 sqrt rounds the same way.
ImageU8 sobel(const ImageU8& in, Border border, int threads = 1);

// Inclusive summed-area table per channel. u32 suffices while 255*W*H < 2^32 (W*H <= 16843009).
enum class IntegralType { u32, u64 };
IntegralType integral_type(int width, int height);
const char* to_string(IntegralType type);
// T is std::uint32_t or std::uint64_t; std::uint32_t for an image that needs u64 is refused.
// The output has the input's shape and layout.
template <class T>
HostImage<T> integral(const ImageU8& in, int threads = 1);

// The same pixels in the other layout (AoS <-> SoA); tightly packed rows.
ImageU8 to_layout(const ImageU8& in, Layout layout);

// The image grown by pad_x columns left and right and pad_y rows top and bottom, filled by `border`.
ImageU8 pad(const ImageU8& in, int pad_x, int pad_y, Border border);

}  // namespace klab::reference
