// The Mann-Whitney U test of `klab compare` (bench/compare.hpp): the exact permutation
// distribution for small samples, the normal approximation with tie and continuity corrections
// above that, and the smallest p-value a pair of sample counts can reach.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/compare.hpp"

namespace klab::bench {

namespace {

// Up to this many samples in all, the exact permutation distribution; C(40, 20) ~ 1.4e11 ways
// still count exactly in a double (below 2^53).
constexpr int kExactLimit = 40;

// Ranks of the pooled samples, doubled so that average ranks of ties stay integers.
struct PooledRanks {
    std::vector<std::int64_t> doubled;  // doubled rank of every pooled sample, a's first
    double tie_term = 0.0;              // sum over tie groups of t^3 - t
};

PooledRanks pooled_ranks(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<std::pair<double, std::size_t>> pooled;  // value, index in a then b
    for (std::size_t i = 0; i < a.size(); ++i) pooled.emplace_back(a[i], i);
    for (std::size_t i = 0; i < b.size(); ++i) pooled.emplace_back(b[i], a.size() + i);
    std::sort(pooled.begin(), pooled.end());
    PooledRanks r;
    r.doubled.resize(pooled.size());
    for (std::size_t i = 0; i < pooled.size();) {
        std::size_t j = i;
        while (j + 1 < pooled.size() && pooled[j + 1].first == pooled[i].first) ++j;
        // Positions i..j (ranks i+1..j+1) share the average rank (i + j + 2) / 2.
        for (std::size_t k = i; k <= j; ++k) r.doubled[pooled[k].second] = static_cast<std::int64_t>(i + j + 2);
        const double t = static_cast<double>(j - i + 1);
        r.tie_term += t * t * t - t;
        i = j + 1;
    }
    return r;
}

// Exact: every way of choosing which n of the N pooled ranks belong to a is equally likely under
// the null hypothesis; count them by the sum of their (doubled) ranks.
double exact_p(const PooledRanks& r, std::size_t n, std::int64_t observed) {
    const std::size_t total = r.doubled.size();
    std::int64_t max_sum = 0;
    for (std::int64_t d : r.doubled) max_sum += d;
    // ways[k][s]: subsets of k ranks seen so far whose doubled sum is s.
    std::vector<std::vector<double>> ways(n + 1, std::vector<double>(static_cast<std::size_t>(max_sum) + 1, 0.0));
    ways[0][0] = 1.0;
    for (std::size_t i = 0; i < total; ++i) {
        const auto rank = static_cast<std::size_t>(r.doubled[i]);
        for (std::size_t k = std::min(n, i + 1); k >= 1; --k) {
            for (std::size_t s = static_cast<std::size_t>(max_sum); s >= rank; --s) ways[k][s] += ways[k - 1][s - rank];
        }
    }
    // Two-sided: every arrangement at least as far from the mean rank sum as the observed one.
    const auto mean = static_cast<std::int64_t>(n * (total + 1));  // doubled
    const std::int64_t distance = std::abs(observed - mean);
    double extreme = 0.0;
    double all = 0.0;
    for (std::size_t s = 0; s < ways[n].size(); ++s) {
        all += ways[n][s];
        if (std::abs(static_cast<std::int64_t>(s) - mean) >= distance) extreme += ways[n][s];
    }
    return std::min(1.0, extreme / all);
}

// Normal approximation with tie correction and continuity correction (as scipy's default).
double normal_p(const PooledRanks& r, std::size_t n, std::size_t m, std::int64_t observed) {
    const double dn = static_cast<double>(n);
    const double dm = static_cast<double>(m);
    const double total = dn + dm;
    const double u = static_cast<double>(observed) / 2.0 - dn * (dn + 1.0) / 2.0;
    const double mean = dn * dm / 2.0;
    const double variance = dn * dm / 12.0 * ((total + 1.0) - r.tie_term / (total * (total - 1.0)));
    if (!(variance > 0.0)) return 1.0;  // every sample equal
    const double z = std::max(0.0, std::abs(u - mean) - 0.5) / std::sqrt(variance);
    return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

}  // namespace

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.empty() || b.empty()) return 1.0;
    const PooledRanks r = pooled_ranks(a, b);
    std::int64_t observed = 0;  // doubled rank sum of a
    for (std::size_t i = 0; i < a.size(); ++i) observed += r.doubled[i];
    if (static_cast<int>(a.size() + b.size()) <= kExactLimit) return exact_p(r, a.size(), observed);
    return normal_p(r, a.size(), b.size(), observed);
}

double smallest_p_value(int n, int m) {
    if (n <= 0 || m <= 0) return 1.0;
    // C(n+m, n), computed as a running product (exact enough for a threshold check).
    double ways = 1.0;
    for (int i = 1; i <= std::min(n, m); ++i) ways = ways * (std::max(n, m) + i) / i;
    return std::min(1.0, 2.0 / ways);
}

}  // namespace klab::bench
