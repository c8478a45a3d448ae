#include "harness/mask.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/io/image_io.hpp"

namespace klab {

namespace {

constexpr const char* kAllowedSides = "odd width and height from 1 to 31";

void require_odd_side(int k, const char* what) {
    if (k < 1 || k > Mask::kMaxSide || k % 2 == 0) {
        throw Error(fmt::format("{} size {} is not supported", what, k), kAllowedSides);
    }
}

}  // namespace

Mask::Mask(int width, int height, std::vector<float> coefficients, std::string name)
    : width_(width), height_(height), coefficients_(std::move(coefficients)), name_(std::move(name)) {
    if (width < 1 || height < 1 || width > kMaxSide || height > kMaxSide || width % 2 == 0 || height % 2 == 0) {
        throw Error(fmt::format("mask '{}' is {}x{}", name_, width, height), kAllowedSides);
    }
    if (coefficients_.size() != static_cast<std::size_t>(width) * height) {
        throw Error(fmt::format("mask '{}' is {}x{} but has {} coefficients", name_, width, height,
                                coefficients_.size()),
                    "exactly width*height coefficients");
    }
    for (std::size_t n = 0; n < coefficients_.size(); ++n) {
        if (!std::isfinite(coefficients_[n])) {
            throw Error(fmt::format("mask '{}' coefficient at row {}, column {} is {}", name_, n / width + 1,
                                    n % width + 1, coefficients_[n]),
                        "finite numbers");
        }
    }
}

std::vector<double> gaussian_kernel_1d(int k, double sigma) {
    require_odd_side(k, "gaussian");
    constexpr const char* kAllowedSigma = "a finite sigma of at least 0.001, or <= 0 for OpenCV's default";
    if (!std::isfinite(sigma)) throw Error(fmt::format("gaussian sigma {} is not finite", sigma), kAllowedSigma);
    // Below this, 2*sigma^2 can underflow and the kernel becomes 0/0; it is a delta long before.
    if (sigma > 0.0 && sigma < 1e-3) throw Error(fmt::format("gaussian sigma {} is too small", sigma), kAllowedSigma);
    // OpenCV uses these exact tables when the caller leaves sigma to its default.
    static const std::vector<std::vector<double>> kBinomial = {
        {1.0}, {0.25, 0.5, 0.25}, {0.0625, 0.25, 0.375, 0.25, 0.0625},
        {0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125}};
    if (sigma <= 0.0 && k <= 7) return kBinomial[static_cast<std::size_t>(k / 2)];
    if (sigma <= 0.0) sigma = 0.3 * ((k - 1) * 0.5 - 1.0) + 0.8;
    std::vector<double> kernel(static_cast<std::size_t>(k));
    double sum = 0.0;
    for (int i = 0; i < k; ++i) {
        const double x = i - (k - 1) * 0.5;
        kernel[static_cast<std::size_t>(i)] = std::exp(-(x * x) / (2.0 * sigma * sigma));
        sum += kernel[static_cast<std::size_t>(i)];
    }
    for (double& v : kernel) v /= sum;
    return kernel;
}

namespace masks {

Mask box(int k) {
    require_odd_side(k, "box");
    return Mask(k, k, std::vector<float>(static_cast<std::size_t>(k) * k, static_cast<float>(1.0 / (k * k))),
                fmt::format("box{}", k));
}

Mask gaussian(int k, double sigma) {
    const std::vector<double> g = gaussian_kernel_1d(k, sigma);
    std::vector<float> c;
    c.reserve(static_cast<std::size_t>(k) * k);
    for (double gy : g) {
        for (double gx : g) c.push_back(static_cast<float>(gy * gx));
    }
    return Mask(k, k, std::move(c), sigma > 0.0 ? fmt::format("gauss{}_s{:g}", k, sigma) : fmt::format("gauss{}", k));
}

Mask sharpen() { return Mask(3, 3, {0, -1, 0, -1, 5, -1, 0, -1, 0}, "sharpen"); }
Mask laplacian() { return Mask(3, 3, {0, 1, 0, 1, -4, 1, 0, 1, 0}, "laplacian"); }
Mask emboss() { return Mask(3, 3, {-2, -1, 0, -1, 1, 1, 0, 1, 2}, "emboss"); }
Mask sobel_x() { return Mask(3, 3, {-1, 0, 1, -2, 0, 2, -1, 0, 1}, "sobel_x"); }
Mask sobel_y() { return Mask(3, 3, {-1, -2, -1, 0, 0, 0, 1, 2, 1}, "sobel_y"); }

Mask random(int k, std::uint32_t seed) {
    if (k < 1 || k > Mask::kMaxSide || k % 2 == 0) {
        throw Error(fmt::format("random mask side {}", k), "an odd side from 1 to 31");
    }
    // SplitMix64: portable, unlike the standard library's distributions.
    std::uint64_t state = seed;
    const auto next_unit = [&state] {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        return static_cast<double>(z >> 11) / 9007199254740992.0;  // [0, 1), 53 bits
    };
    std::vector<double> values(static_cast<std::size_t>(k) * k);
    double sum = 0.0;
    for (double& v : values) sum += (v = 2.0 * next_unit() - 0.75);
    std::vector<float> c;
    c.reserve(values.size());
    for (double v : values) c.push_back(static_cast<float>(v / sum));
    return Mask(k, k, std::move(c), seed == 1 ? fmt::format("random{}", k) : fmt::format("random{}_s{}", k, seed));
}

Mask unsharp(int k, double sigma, double amount) {
    // The taps sum to 1 only while fp32 holds (1 + amount) and amount x the Gaussian's taps closely
    // enough: a flat image then comes back as it was (up to about 1e5 at every size; 1e7 turns
    // gray 128 into 160). 1000 leaves a wide margin over any sharpening anyone asks for.
    constexpr double kMaxAmount = 1000.0;
    if (!std::isfinite(amount) || amount < 0.0 || amount > kMaxAmount) {
        throw Error(fmt::format("unsharp amount {} is not supported", amount), fmt::format("a finite amount from 0 to {:g}", kMaxAmount));
    }
    const std::vector<double> g = gaussian_kernel_1d(k, sigma);
    std::vector<float> c;
    c.reserve(static_cast<std::size_t>(k) * k);
    for (int j = 0; j < k; ++j) {
        for (int i = 0; i < k; ++i) {
            const double identity = (i == k / 2 && j == k / 2) ? 1.0 : 0.0;
            c.push_back(static_cast<float>((1.0 + amount) * identity - amount * g[j] * g[i]));
        }
    }
    return Mask(k, k, std::move(c),
                sigma > 0.0 ? fmt::format("unsharp{}_s{:g}_a{:g}", k, sigma, amount) : fmt::format("unsharp{}_a{:g}", k, amount));
}

}  // namespace masks

Mask parse_mask(std::string_view text, const std::string& source) {
    std::vector<std::vector<double>> rows;
    std::optional<double> divisor;
    std::istringstream lines{std::string(text)};
    std::string line;
    int line_number = 0;
    while (std::getline(lines, line)) {
        ++line_number;
        if (const auto comment = line.find('#'); comment != std::string::npos) line.resize(comment);  // to the end of the line
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos) continue;
        std::replace(line.begin(), line.end(), ',', ' ');
        std::replace(line.begin(), line.end(), '\t', ' ');
        std::replace(line.begin(), line.end(), '\r', ' ');

        std::string_view rest(line);
        rest.remove_prefix(first);
        bool is_divisor = false;
        if (rest.substr(0, 8) == "divisor:") {
            if (divisor) throw Error(fmt::format("{}:{}: a second divisor line", source, line_number), "at most one 'divisor: D' line");
            rest.remove_prefix(8);
            is_divisor = true;
        }
        std::vector<double> numbers;
        while (true) {
            const auto start = rest.find_first_not_of(' ');
            if (start == std::string_view::npos) break;
            rest.remove_prefix(start);
            const auto length = std::min(rest.find(' '), rest.size());
            const std::string_view token = rest.substr(0, length);
            // from_chars takes no leading '+'; a user may well write one.
            const std::string_view digits = token.size() > 1 && token[0] == '+' ? token.substr(1) : token;
            double value = 0.0;
            const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
            if (ec != std::errc{} || end != digits.data() + digits.size()) {
                throw Error(fmt::format("{}:{}: '{}' is not a number", source, line_number, printable(token)),
                            "rows of decimal numbers separated by spaces or commas, '#' comments, one 'divisor: D' line");
            }
            if (!std::isfinite(value) || std::fabs(value) > 3.4e38) {
                throw Error(fmt::format("{}:{}: '{}' is not a finite number", source, line_number, printable(token)), "finite coefficients");
            }
            numbers.push_back(value);
            rest.remove_prefix(length);
        }
        if (is_divisor) {
            if (numbers.size() != 1 || numbers[0] == 0.0) {
                throw Error(fmt::format("{}:{}: bad divisor line", source, line_number), "'divisor: D' with one finite, non-zero D");
            }
            divisor = numbers[0];
            continue;
        }
        if (!rows.empty() && numbers.size() != rows.front().size()) {
            throw Error(fmt::format("{}:{}: this row has {} numbers but the first row has {}", source, line_number,
                                    numbers.size(), rows.front().size()),
                        "every row with the same count of numbers");
        }
        rows.push_back(std::move(numbers));
    }
    if (rows.empty()) throw Error(fmt::format("{}: the mask has no rows", source), "rows of numbers");
    const int height = static_cast<int>(rows.size());
    const int width = static_cast<int>(rows.front().size());
    if (width % 2 == 0 || height % 2 == 0 || width > Mask::kMaxSide || height > Mask::kMaxSide) {
        throw Error(fmt::format("{}: the mask is {}x{} (width x height)", source, width, height), kAllowedSides);
    }
    std::vector<float> coefficients;
    for (const auto& row : rows) {
        for (double v : row) coefficients.push_back(static_cast<float>(divisor ? v / *divisor : v));
    }
    return Mask(width, height, std::move(coefficients), source);
}

Mask read_mask_file(const std::filesystem::path& path) {
    std::ifstream file(path);
    if (!file) {
        throw Error(fmt::format("cannot open mask file '{}'", printable(path.string())), "a readable text file of mask rows");
    }
    const std::string name = fmt::format("mask file '{}'", printable(path.string()));
    return parse_mask(io::read_all(file, path, io::kMaxTextFileBytes, name, "a readable text file of mask rows"), printable(path.string()));
}

std::optional<SeparableFactors> separate(const Mask& mask, double relative_tolerance) {
    const int w = mask.width();
    const int h = mask.height();
    // Pivot on the largest coefficient: for a rank-1 mask its row and column span the mask.
    int pivot_i = 0, pivot_j = 0;
    double largest = 0.0;
    for (int j = 0; j < h; ++j) {
        for (int i = 0; i < w; ++i) {
            if (std::fabs(mask.at(i, j)) > largest) {
                largest = std::fabs(mask.at(i, j));
                pivot_i = i;
                pivot_j = j;
            }
        }
    }
    std::vector<double> column(static_cast<std::size_t>(h)), row(static_cast<std::size_t>(w));
    if (largest == 0.0) {  // the zero mask: 1s times 0s
        return SeparableFactors{std::vector<float>(static_cast<std::size_t>(w), 0.0f),
                                std::vector<float>(static_cast<std::size_t>(h), 1.0f)};
    }
    const double pivot = mask.at(pivot_i, pivot_j);
    for (int j = 0; j < h; ++j) column[j] = mask.at(pivot_i, j);
    for (int i = 0; i < w; ++i) row[i] = mask.at(i, pivot_j) / pivot;
    for (int j = 0; j < h; ++j) {
        for (int i = 0; i < w; ++i) {
            if (std::fabs(mask.at(i, j) - column[j] * row[i]) > relative_tolerance * largest) return std::nullopt;
        }
    }
    // Balance the factors: scale so both have the same largest magnitude (for a gaussian both
    // become the 1-D gaussian).
    const auto max_abs = [](const std::vector<double>& v) {
        double m = 0.0;
        for (double x : v) m = std::max(m, std::fabs(x));
        return m;
    };
    const double scale = std::sqrt(max_abs(column) / max_abs(row));
    SeparableFactors factors;
    for (double r : row) factors.row.push_back(static_cast<float>(r * scale));
    for (double c : column) factors.column.push_back(static_cast<float>(c / scale));
    return factors;
}

std::optional<SeparableFactors> separable_variant_factors(const Mask& mask) {
    if (mask.height() == 1) return SeparableFactors{mask.coefficients(), {1.0f}};
    if (mask.width() == 1) return SeparableFactors{{1.0f}, mask.coefficients()};
    // Within a few fp32 ulps of the largest coefficient, what rounding the factors of a true outer
    // product costs: a mask that is only nearly rank 1 is another filter, and the verifier's slack
    // for it (separable_coefficient_error) would grow with the difference.
    return separate(mask, kSeparableVariantTolerance);
}

double separable_coefficient_error(const Mask& mask, const SeparableFactors& factors) {
    if (factors.row.size() != static_cast<std::size_t>(mask.width()) ||
        factors.column.size() != static_cast<std::size_t>(mask.height())) {
        throw Error(fmt::format("separable factors of {} and {} entries for mask '{}' ({}x{})", factors.row.size(),
                                factors.column.size(), mask.name(), mask.width(), mask.height()),
                    "a row factor of the mask's width and a column factor of its height");
    }
    double e = 0.0;
    for (int j = 0; j < mask.height(); ++j) {
        for (int i = 0; i < mask.width(); ++i) {
            const double product = static_cast<double>(factors.row[static_cast<std::size_t>(i)]) *
                                   factors.column[static_cast<std::size_t>(j)];  // exact: 24 x 24 bits
            e = std::max(e, std::fabs(product - mask.at(i, j)));
        }
    }
    if (e == 0.0) return 0.0;
    const double n_u = (mask.width() + mask.height()) * std::ldexp(1.0, -24);
    // One step up, so that the rounding of this double arithmetic never makes E smaller than the
    // bound (towards +infinity: e may exceed 1 for a mask of large coefficients).
    return std::nextafter(e * (1.0 + n_u / (1.0 - n_u)), std::numeric_limits<double>::infinity());
}

}  // namespace klab
