#pragma once
// Convolution masks: odd width and height from 1 to 31, float coefficients, applied unflipped
// (correlation, like OpenCV filter2D): out(x,y) = sum over (i,j) of at(i,j) * in(x+i-rx, y+j-ry).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace klab {

class Mask {
public:
    static constexpr int kMaxSide = 31;

    // Throws klab::Error unless both sides are odd in 1..31, the coefficient count is
    // width*height, and every coefficient is finite. Coefficients are row-major.
    Mask(int width, int height, std::vector<float> coefficients, std::string name = "custom");

    int width() const { return width_; }
    int height() const { return height_; }
    int radius_x() const { return width_ / 2; }
    int radius_y() const { return height_ / 2; }
    // Coefficient at column i (0..width-1) and row j (0..height-1).
    float at(int i, int j) const { return coefficients_[static_cast<std::size_t>(j) * width_ + i]; }
    const std::vector<float>& coefficients() const { return coefficients_; }
    const std::string& name() const { return name_; }

private:
    int width_;
    int height_;
    std::vector<float> coefficients_;
    std::string name_;
};

// OpenCV's getGaussianKernel: sigma <= 0 means sigma = 0.3*((k-1)*0.5 - 1) + 0.8, and for such a
// default sigma with k <= 7 its fixed tables (1 2 1)/4, (1 4 6 4 1)/16 and (2 7 14 18 14 7 2)/64.
// Normalised to sum 1 in double precision.
std::vector<double> gaussian_kernel_1d(int k, double sigma = 0.0);

namespace masks {
// Names: "box5", "gauss9", "gauss9_s2.5" (a sigma given), "unsharp5_s1_a1.5", "sharpen", ...
Mask box(int k);                                  // k x k, every coefficient 1/k^2
Mask gaussian(int k, double sigma = 0.0);         // outer product of gaussian_kernel_1d(k, sigma)
Mask sharpen();                                   // [0 -1 0; -1 5 -1; 0 -1 0]
Mask laplacian();                                 // [0 1 0; 1 -4 1; 0 1 0]
Mask emboss();                                    // [-2 -1 0; -1 1 1; 0 1 2]
Mask unsharp(int k, double sigma, double amount); // (1 + amount) * identity - amount * gaussian
Mask sobel_x();                                   // [-1 0 1; -2 0 2; -1 0 1]: positive where it brightens rightwards
Mask sobel_y();                                   // sobel_x transposed: positive where it brightens downwards
// k x k coefficients drawn from a fixed generator (the same on every machine and compiler), in
// [-0.75, 1.25] before scaling to sum 1: a general mask, not separable, with negative taps.
// Named "random<k>" (seed 1) or "random<k>_s<seed>".
Mask random(int k, std::uint32_t seed = 1);
}  // namespace masks

// Parses a user mask. The text holds rows of numbers separated by spaces, tabs or commas; '#'
// starts a comment that runs to the end of its line; blank lines are ignored; one optional line
// "divisor: D" divides every coefficient by D. Errors name `source` and the line.
Mask parse_mask(std::string_view text, const std::string& source);
Mask read_mask_file(const std::filesystem::path& path);

// A rank-1 mask factored as mask(i, j) = column[j] * row[i], the two factors scaled to the
// same largest magnitude.
struct SeparableFactors {
    std::vector<float> row;     // width entries, applied along x
    std::vector<float> column;  // height entries, applied along y
};

// Returns the factors when every coefficient is reproduced within `relative_tolerance` times
// the largest magnitude in the mask, std::nullopt otherwise.
std::optional<SeparableFactors> separate(const Mask& mask, double relative_tolerance = 1e-6);

// The fp32 factors a separable GPU variant multiplies by (conv.separable_2pass,
// conv.separable_fused): a mask one pixel tall is its own row factor with the column factor {1},
// a mask one pixel wide its own column factor with the row factor {1} (multiplying by 1 and
// adding to 0 are exact, so such a mask is applied exactly as a 2-D variant applies it); any
// other mask is factored by separate() within kSeparableVariantTolerance (8 fp32 ulps of the
// largest coefficient: a nearly rank-1 mask is refused). std::nullopt when it finds no factors.
inline constexpr double kSeparableVariantTolerance = 8.0 / (1 << 24);
std::optional<SeparableFactors> separable_variant_factors(const Mask& mask);

// The coefficient error (Variant::coefficient_error) of a variant that applies `mask` as an fp32
// row pass with `factors.row` followed by an fp32 column pass with `factors.column`, each an FMA
// chain: E = e * (1 + gamma_{w+h}), rounded up, where e = max |row_i * column_j - m(i,j)| (the
// product of two floats, exact in double) and gamma_n = n u / (1 - n u), u = 2^-24. 0 when the
// factors reproduce every coefficient exactly.
// Why E is enough: the row pass gives t_j = sum_i row_i p_ij (1 + a_ij) with |a_ij| <= gamma_w,
// the column pass out = sum_j col_j t_j (1 + b_j) with |b_j| <= gamma_h (Higham, section 3.1).
// Since (1 + a)(1 + b) = 1 + c with |c| <= gamma_{w+h}, with S' = sum row_i col_j p_ij and
// S = sum m_ij p_ij (the reference's sum):
//   |out - S| <= gamma_{w+h} sum |row_i col_j p_ij| + |S' - S|
//             <= gamma_{w+h} sum |m_ij p_ij| + (1 + gamma_{w+h}) e sum p_ij.
// verify_convolution() allows gamma_{wh} sum |m p| + E sum p (p: the pixels under the mask),
// plus the reference's own error: for w, h >= 3, w + h <= wh, and E sum p is the second term. A
// mask one pixel wide or tall has e = 0 with separable_variant_factors(): its accumulation is
// the single w- or h-tap chain of a 2-D variant.
// Throws klab::Error unless the factors have the mask's width and height.
double separable_coefficient_error(const Mask& mask, const SeparableFactors& factors);

}  // namespace klab
