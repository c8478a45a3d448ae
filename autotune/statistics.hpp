#pragma once
// Order statistics of timing samples: median and quartiles, as the tuner and benchmarks report.
#include <vector>

namespace klab::autotune {

struct Quartiles {
    double q1 = 0.0;
    double median = 0.0;
    double q3 = 0.0;
    // (q3 - q1) / median: the spread the tuner stops on (0 for a single sample).
    double relative_spread() const { return median > 0.0 ? (q3 - q1) / median : 0.0; }
};

// Quantiles by linear interpolation between order statistics (numpy's default, "type 7").
// Throws klab::Error for an empty sample.
double quantile(std::vector<double> samples, double q);
Quartiles quartiles(const std::vector<double>& samples);

}  // namespace klab::autotune
