#pragma once
// Comparing two klab-bench files (`klab compare OLD NEW`, the CI regression gate): for each
// benchmark in both, a noise-aware verdict from the repetitions (one sample per repetition,
// BenchRun::samples_us).
//
// The test is the two-sided Mann-Whitney U test, as Google Benchmark's tools/compare.py uses it:
// for at most 40 samples in all its exact permutation distribution (average ranks for ties, so it
// is exact given the ties), above that the normal approximation with tie and continuity correction.
// change = new median / old median - 1. With p the test's p-value and T the threshold:
//
//   p <  alpha, |change| >  T  -> slower (change > 0) or faster (change < 0)
//   p <  alpha, |change| <= T  -> same ("within threshold": real, but small)
//   p >= alpha, |change| <= T  -> same
//   p >= alpha, |change| >  T  -> ambiguous (the noise hides it: run more repetitions)
//
// Only "slower" is a regression. With n and m repetitions the smallest two-sided p-value is
// 2 / C(n+m, n): 2/252 ~ 0.008 for 5 and 5, but 0.1 for 3 and 3, so with too few repetitions no
// change can ever be significant; the row's note says so.
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_json.hpp"

namespace klab::bench {

enum class Verdict {
    same,       // no change beyond noise or threshold
    faster,     // significant and beyond the threshold
    slower,     // significant and beyond the threshold: a regression
    ambiguous,  // beyond the threshold but within the noise
    added,      // only in NEW
    removed,    // only in OLD
    error,      // failed (Google Benchmark's error_message) or without samples in either file
};
const char* to_string(Verdict verdict);

struct CompareOptions {
    double threshold = 0.05;  // relative change of the median that counts (0.05 = 5%)
    double alpha = 0.05;      // significance level of the Mann-Whitney U test
};

struct CompareRow {
    std::string name;  // run name without the time suffix
    Verdict verdict = Verdict::same;
    int old_repetitions = 0;
    int new_repetitions = 0;
    std::optional<double> old_median_us;  // absent for an added row or a failed one
    std::optional<double> new_median_us;
    std::optional<double> change;   // new median / old median - 1
    std::optional<double> p_value;  // two-sided Mann-Whitney U
    std::string note;               // why, in words (errors, too few repetitions, within threshold)
    // What fails the gate: a klab row (not a baseline) slower beyond noise and threshold, gone
    // from NEW, or failed in NEW.
    bool fails_gate = false;
};

struct Comparison {
    std::string old_source;
    std::string new_source;
    std::string gpu_key;
    CompareOptions options;
    std::vector<std::string> warnings;  // e.g. CUDA driver or runtime differ
    std::vector<CompareRow> rows;       // NEW's order, then the removed ones in OLD's order

    int count(Verdict verdict) const;
    int gate_failures() const;
    bool regressed() const { return gate_failures() > 0; }
};

// Throws klab::Error when the files' klab_gpu_key differ or either lacks it (naming both), when
// NEW has no benchmark with a time (an empty or aggregates-only file), or when the options are out
// of range. Differing cuda_driver / cuda_runtime / klab_study become warnings.
Comparison compare(const BenchFile& old_file, const BenchFile& new_file, const CompareOptions& options = {});

// NPP, copy-floor and CPU-reference rows (npp.*, baseline.*, cpu.*): compared and shown, never
// gated, since they measure the machine rather than klab's code.
bool is_baseline_row(const std::string& name);

// The two-sided p-value of the Mann-Whitney U test of samples `a` against `b`; 1 when either is
// empty.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

// The smallest two-sided p-value the exact test can give with n and m samples: 2 / C(n+m, n).
double smallest_p_value(int n, int m);

// The table, one row per benchmark, after a header naming the files, the rule's parameters and the
// warnings.
std::string format_table(const Comparison& comparison);
// One line: the counts per verdict and whether anything regressed.
std::string verdict_line(const Comparison& comparison);

}  // namespace klab::bench
