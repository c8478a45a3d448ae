#include "bench/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "harness/error.hpp"

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

std::string percent(double fraction) { return fmt::format("{:+.1f}%", 100.0 * fraction); }

std::string context_or_absent(const BenchFile& file, const std::string& key) {
    const std::string value = file.context_value(key);
    return value.empty() ? std::string("(absent)") : value;
}

// The verdict of a benchmark present in both files.
CompareRow compare_run(const BenchRun& old_run, const BenchRun& new_run, const CompareOptions& options) {
    CompareRow row;
    row.name = new_run.name;
    row.old_repetitions = static_cast<int>(old_run.samples_us.size());
    row.new_repetitions = static_cast<int>(new_run.samples_us.size());
    // A failure is reported, not judged: there is nothing to compare.
    std::vector<std::string> failures;
    if (!old_run.error.empty()) failures.push_back("failed in OLD: " + old_run.error);
    else if (old_run.samples_us.empty()) failures.push_back("no samples in OLD");
    if (!new_run.error.empty()) failures.push_back("failed in NEW: " + new_run.error);
    else if (new_run.samples_us.empty()) failures.push_back("no samples in NEW");
    if (!failures.empty()) {
        row.verdict = Verdict::error;
        for (const std::string& f : failures) row.note += (row.note.empty() ? "" : "; ") + f;
        return row;
    }
    row.old_median_us = old_run.median_us();
    row.new_median_us = new_run.median_us();
    if (!(*row.old_median_us > 0.0)) {
        row.verdict = Verdict::error;
        row.note = "old median is 0 us: no relative change";
        return row;
    }
    row.change = *row.new_median_us / *row.old_median_us - 1.0;
    row.p_value = mann_whitney_p(old_run.samples_us, new_run.samples_us);

    const bool significant = *row.p_value < options.alpha;
    const bool beyond = std::abs(*row.change) > options.threshold;
    if (significant && beyond) {
        row.verdict = *row.change > 0.0 ? Verdict::slower : Verdict::faster;
    } else if (significant) {
        row.verdict = Verdict::same;
        row.note = "within threshold (the change is significant but small)";
    } else if (!beyond) {
        row.verdict = Verdict::same;
    } else {
        row.verdict = Verdict::ambiguous;
        row.note = "within the noise: run more repetitions";
    }
    // With too few repetitions no p-value can reach alpha: say why rather than let "same" or
    // "ambiguous" look like a measured result.
    const double floor = smallest_p_value(row.old_repetitions, row.new_repetitions);
    if (floor >= options.alpha) {
        row.note = fmt::format("too few repetitions to judge the noise ({} and {}: the smallest possible p is {:.3g} >= alpha "
                               "{:g}); run with --benchmark_repetitions=5 or more",
                               row.old_repetitions, row.new_repetitions, floor, options.alpha);
    }
    return row;
}

}  // namespace

const char* to_string(Verdict verdict) {
    switch (verdict) {
        case Verdict::same: return "same";
        case Verdict::faster: return "faster";
        case Verdict::slower: return "slower";
        case Verdict::ambiguous: return "ambiguous";
        case Verdict::added: return "added";
        case Verdict::removed: return "removed";
        case Verdict::error: return "error";
    }
    return "?";
}

int Comparison::count(Verdict verdict) const {
    return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const CompareRow& r) { return r.verdict == verdict; }));
}

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

Comparison compare(const BenchFile& old_file, const BenchFile& new_file, const CompareOptions& options) {
    if (!(options.threshold >= 0.0) || !std::isfinite(options.threshold)) {
        throw Error(fmt::format("threshold {}", options.threshold), "a relative change >= 0 (0.05 = 5%)");
    }
    if (!(options.alpha > 0.0 && options.alpha < 1.0)) {
        throw Error(fmt::format("alpha {}", options.alpha), "a significance level between 0 and 1, e.g. 0.05");
    }
    const std::string old_key = old_file.gpu_key();
    const std::string new_key = new_file.gpu_key();
    if (old_key.empty() || new_key.empty() || old_key != new_key) {
        const auto shown = [](const std::string& key) { return key.empty() ? std::string("no klab_gpu_key") : "'" + key + "'"; };
        throw Error(fmt::format("refusing to compare {} (GPU key {}) with {} (GPU key {}): timings from different GPUs, or "
                                "from a file without a GPU key, say nothing about a change in the code",
                                old_file.source, shown(old_key), new_file.source, shown(new_key)),
                    "two klab-bench files whose context has the same klab_gpu_key");
    }
    Comparison c;
    c.old_source = old_file.source;
    c.new_source = new_file.source;
    c.gpu_key = new_key;
    c.options = options;
    const bool new_has_times =
        std::any_of(new_file.runs.begin(), new_file.runs.end(), [](const BenchRun& r) { return !r.samples_us.empty(); });
    if (!new_has_times) {
        throw Error(fmt::format("{} holds no benchmark with a time (empty, all failed, or aggregates only): nothing to compare",
                                new_file.source),
                    "a klab-bench file with per-repetition entries (not --benchmark_report_aggregates_only)");
    }
    for (const char* key : {"cuda_driver", "cuda_runtime", "klab_study"}) {
        const std::string old_value = context_or_absent(old_file, key);
        const std::string new_value = context_or_absent(new_file, key);
        if (old_value != new_value) {
            c.warnings.push_back(fmt::format("{} differs: {} in OLD, {} in NEW; a change may come from it", key, old_value, new_value));
        }
    }
    for (const BenchRun& run : new_file.runs) {
        if (const BenchRun* old_run = old_file.find(run.name)) {
            c.rows.push_back(compare_run(*old_run, run, options));
            continue;
        }
        CompareRow row;
        row.name = run.name;
        row.verdict = Verdict::added;
        row.new_repetitions = static_cast<int>(run.samples_us.size());
        if (!run.samples_us.empty()) row.new_median_us = run.median_us();
        row.note = run.error.empty() ? "only in NEW" : "only in NEW, failed: " + run.error;
        c.rows.push_back(std::move(row));
    }
    for (const BenchRun& run : old_file.runs) {
        if (new_file.find(run.name) != nullptr) continue;
        CompareRow row;
        row.name = run.name;
        row.verdict = Verdict::removed;
        row.old_repetitions = static_cast<int>(run.samples_us.size());
        if (!run.samples_us.empty()) row.old_median_us = run.median_us();
        row.note = "only in OLD";
        c.rows.push_back(std::move(row));
    }
    int baselines_moved = 0;
    for (CompareRow& row : c.rows) {
        const BenchRun* in_new = new_file.find(row.name);
        const bool failed_in_new = in_new != nullptr && (!in_new->error.empty() || in_new->samples_us.empty());
        row.fails_gate = row.verdict == Verdict::slower || row.verdict == Verdict::removed || failed_in_new;
        // NPP, the copy floor and the CPU reference measure the machine, not klab's code: their
        // verdicts are shown, and a moved baseline is a warning about the comparison itself.
        if (is_baseline_row(row.name)) {
            if (row.fails_gate) row.note += std::string(row.note.empty() ? "" : "; ") + "a baseline: not gated";
            baselines_moved += row.verdict == Verdict::slower || row.verdict == Verdict::faster;
            row.fails_gate = false;
        }
    }
    if (baselines_moved > 0) {
        c.warnings.push_back(fmt::format("{} baseline row(s) (NPP, copy, host-device link, CPU reference) moved beyond noise and threshold: the two "
                                         "runs' machines or conditions differ, so read the other verdicts with care",
                                         baselines_moved));
    }
    return c;
}

bool is_baseline_row(const std::string& name) {
    for (const char* prefix : {"npp.", "baseline.", "cpu."}) {
        if (name.rfind(prefix, 0) == 0) return true;
    }
    return is_link_row(name.substr(0, name.find('/')));
}

int Comparison::gate_failures() const {
    return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const CompareRow& r) { return r.fails_gate; }));
}

std::string format_table(const Comparison& c) {
    std::size_t name_width = std::string_view("benchmark").size();
    for (const CompareRow& r : c.rows) name_width = std::max(name_width, r.name.size());
    const auto us = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("-"); };
    std::string out = fmt::format("OLD {}\nNEW {}\nGPU {}; threshold {:g}%, alpha {:g}, two-sided Mann-Whitney U over the repetitions\n",
                                  c.old_source, c.new_source, c.gpu_key, 100.0 * c.options.threshold, c.options.alpha);
    for (const std::string& w : c.warnings) out += "warning: " + w + "\n";
    out += "\n";
    out += fmt::format("{:<{}}  {:>5}  {:>11}  {:>11}  {:>8}  {:>6}  {:<9}  {}\n", "benchmark", name_width, "reps", "old us", "new us",
                       "change", "p", "verdict", "note");
    for (const CompareRow& r : c.rows) {
        const std::string reps = fmt::format("{}/{}", r.old_repetitions, r.new_repetitions);
        std::string line = fmt::format("{:<{}}  {:>5}  {:>11}  {:>11}  {:>8}  {:>6}  {:<9}  {}", r.name, name_width, reps,
                                       us(r.old_median_us), us(r.new_median_us), r.change ? percent(*r.change) : std::string("-"),
                                       r.p_value ? fmt::format("{:.3f}", *r.p_value) : std::string("-"), to_string(r.verdict), r.note);
        line.erase(line.find_last_not_of(' ') + 1);  // no trailing blanks when the note is empty
        out += line + "\n";
    }
    return out;
}

std::string verdict_line(const Comparison& c) {
    const int slower = c.count(Verdict::slower);
    const std::string counts =
        fmt::format("{} slower, {} faster, {} same, {} ambiguous, {} failed, {} added, {} removed", slower, c.count(Verdict::faster),
                    c.count(Verdict::same), c.count(Verdict::ambiguous), c.count(Verdict::error), c.count(Verdict::added),
                    c.count(Verdict::removed));
    if (c.regressed()) {
        return fmt::format("REGRESSION: {} benchmark(s) slower beyond noise (alpha {:g}) and the {:g}% threshold, gone from NEW "
                           "or failed in NEW ({})",
                           c.gate_failures(), c.options.alpha, 100.0 * c.options.threshold, counts);
    }
    return fmt::format("no regression ({})", counts);
}

}  // namespace klab::bench
