#include "autotune/statistics.hpp"

#include <algorithm>
#include <cmath>

#include "harness/error.hpp"

namespace klab::autotune {

double quantile(std::vector<double> samples, double q) {
    if (samples.empty()) throw Error("a quantile of no samples", "at least one sample");
    if (!(q >= 0.0 && q <= 1.0)) throw Error("a quantile outside 0..1", "q from 0 to 1");
    std::sort(samples.begin(), samples.end());
    const double position = q * static_cast<double>(samples.size() - 1);
    const auto below = static_cast<std::size_t>(std::floor(position));
    const std::size_t above = std::min(below + 1, samples.size() - 1);
    const double weight = position - static_cast<double>(below);
    return samples[below] + weight * (samples[above] - samples[below]);
}

Quartiles quartiles(const std::vector<double>& samples) {
    return {quantile(samples, 0.25), quantile(samples, 0.5), quantile(samples, 0.75)};
}

}  // namespace klab::autotune
