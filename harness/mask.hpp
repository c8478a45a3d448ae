#pragma once
// Convolution masks: odd width and height from 1 to 31, float coefficients, applied unflipped
// (correlation, like OpenCV filter2D): out(x,y) = sum over (i,j) of at(i,j) * in(x+i-rx, y+j-ry).
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
// default sigma with k <= 7 the fixed binomial tables (1 2 1)/4, (1 4 6 4 1)/16, (1 6 15 20 15 6 1)/64.
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

}  // namespace klab
