#pragma once
// Comparing two klab-bench files (`klab compare OLD NEW`, the CI regression gate): for each
// benchmark in both, a verdict that must not fail on identical code and must catch a real slowdown.
// bench/README.md ("Comparing runs") gives the rule with the measurements behind its parameters.
//
// Each row is judged by its change (new median / old median - 1; for a pinned end-to-end row the
// change of its ratio to the same run's e2e.upload row) against an allowance:
//
//   allowance = max(threshold, threshold_us / old median, noise_margin * the row's noise)
//               (end-to-end rows: max(e2e_threshold, noise_margin * the row's noise))
//
// where the row's noise, when a noise file is given, is the largest relative change of its median
// between identical-code runs of this GPU model. The two-sided Mann-Whitney U test over the
// repetitions (exact up to 40 samples, else the normal approximation) must also tell the runs
// apart: the repetitions of one run share one machine-minute, so their spread says nothing of the
// minutes and machines between two runs; the test only keeps a change that the repetitions
// themselves blur from counting. With p the test's p-value:
//
//   p <  alpha, |change| >  allowance -> slower (change > 0) or faster (change < 0)
//   p <  alpha, |change| <= allowance -> same ("within the allowance")
//   p >= alpha, |change| <= allowance -> same
//   p >= alpha, |change| >  allowance -> ambiguous (the repetitions overlap: run more)
//
// A slower row fails the gate when it is gated: not a baseline, and its old median at least
// min_us. A row gone from NEW or failed in NEW fails it too (baselines excepted).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_json.hpp"

namespace klab::bench {

enum class Verdict {
    same,       // no change beyond the allowance, or not separable from the repetitions' noise
    faster,     // significant and beyond the allowance
    slower,     // significant and beyond the allowance: a regression when the row is gated
    ambiguous,  // beyond the allowance but the repetitions overlap
    added,      // only in NEW
    removed,    // only in OLD
    error,      // failed (Google Benchmark's error_message) or without samples in either file
};
const char* to_string(Verdict verdict);

// What a row measures, which decides how it is judged.
enum class RowClass {
    kernel,      // a klab GPU row (conv.*, sobel.*, integral.*, ...): judged on its own median
    end_to_end,  // a pinned end-to-end row (e2e.one_shot, e2e.pipelined[.strips<N>]): judged on its
                 // ratio to the same run's e2e.upload, with the wide e2e allowance
    baseline,    // NPP, the copy floor, the CPU reference, the link floors (e2e.upload, e2e.download,
                 // e2e.bidirectional) and the pageable end-to-end rows: shown, never gated
};
const char* to_string(RowClass row_class);
RowClass row_class(const std::string& name);

struct CompareOptions {
    double threshold = 0.05;      // smallest relative change that counts (0.05 = 5%)
    double threshold_us = 1.8;    // smallest absolute change of the median that counts, in us
    double e2e_threshold = 0.50;  // the end-to-end rows' allowance (a broken pipeline, not drift)
    double min_us = 5.0;          // a row whose old median is below this is shown, not gated
    double noise_margin = 2.0;    // the allowance is at least this many times the row's noise
    double alpha = 0.05;          // significance level of the Mann-Whitney U test
};

// The run-to-run noise of one GPU model: each row's medians in identical-code runs
// (`klab compare --learn-noise`, kept as results/<gpu-slug>/noise.json).
struct NoiseRun {
    std::string file;
    std::string git_commit;
    std::string date;
    std::string host_name;
};
struct NoiseFile {
    std::string source;  // the path, for messages
    std::string gpu_key;
    std::vector<NoiseRun> runs;
    // Per row, its median in each run (same order as `runs`), absent where the run lacks the row.
    std::map<std::string, std::vector<std::optional<double>>> medians_us;

    // The row's largest median over its smallest, minus 1; nullopt when fewer than two runs have it.
    std::optional<double> largest_change(const std::string& row) const;
};

struct LearnedNoise {
    NoiseFile noise;
    std::vector<std::string> warnings;  // runs of different commits or studies, kernel rows that moved far
};
// Throws klab::Error for fewer than two files or files of different (or no) GPU keys.
LearnedNoise learn_noise(const std::vector<BenchFile>& runs);
std::string noise_json(const NoiseFile& noise);
// Throws klab::Error naming `source` when `text` is not a noise file klab wrote.
NoiseFile parse_noise_json(const std::string& text, const std::string& source);
NoiseFile load_noise_file(const std::string& path);

struct CompareRow {
    std::string name;  // run name without the time suffix
    RowClass row_class = RowClass::kernel;
    Verdict verdict = Verdict::same;
    int old_repetitions = 0;
    int new_repetitions = 0;
    std::optional<double> old_median_us;  // absent for an added row or a failed one
    std::optional<double> new_median_us;
    std::optional<double> change;     // new / old median - 1; end-to-end rows: of the ratio to e2e.upload
    std::optional<double> allowance;  // the |change| a verdict needs to be slower or faster
    std::optional<double> noise;      // the row's learned noise, when the noise file has it
    std::optional<double> p_value;    // two-sided Mann-Whitney U
    std::string note;                 // why, in words
    bool failed_in_new = false;       // NEW holds the row with an error or without samples
    bool gated = false;               // whether its slowdown fails the gate (see above)
    bool fails_gate = false;          // slower and gated, removed from NEW, or failed in NEW
};

struct Comparison {
    std::string old_source;
    std::string new_source;
    std::string noise_source;  // empty without a noise file
    std::string gpu_key;
    CompareOptions options;
    std::vector<std::string> warnings;  // e.g. CUDA driver or runtime differ
    std::vector<CompareRow> rows;       // NEW's order, then the removed ones in OLD's order

    int count(Verdict verdict) const;
    int gate_failures() const;
    bool regressed() const { return gate_failures() > 0; }
};

// Throws klab::Error when the files' klab_gpu_key differ or either lacks it (naming both), when
// the noise file is of another GPU key, when NEW has no benchmark with a time (an empty or
// aggregates-only file), or when the options are out of range. Differing cuda_driver /
// cuda_runtime / klab_study become warnings.
Comparison compare(const BenchFile& old_file, const BenchFile& new_file, const CompareOptions& options = {},
                   const NoiseFile* noise = nullptr);

// The two-sided p-value of the Mann-Whitney U test of samples `a` against `b`; 1 when either is
// empty.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

// The smallest two-sided p-value the exact test can give with n and m samples: 2 / C(n+m, n).
double smallest_p_value(int n, int m);

// The table, one row per benchmark, after a header naming the files, the rule's parameters and the
// warnings.
std::string format_table(const Comparison& comparison);
// The same as Markdown for a pull request: the verdict line, the warnings, the rows that fail the
// gate, then the other changes, then the unchanged rows folded away.
std::string format_markdown(const Comparison& comparison);
// One line: the counts per verdict and whether anything regressed.
std::string verdict_line(const Comparison& comparison);
// The rows failing the gate, one line each under "failing the gate:" ("" when none): what the
// plain table prints again above its verdict line, so that a long table does not hide them.
std::string failures_text(const Comparison& comparison);

}  // namespace klab::bench
