// `klab compare OLD NEW` (bench/compare.hpp): the verdict of every row, the gate's rule, and the
// comparison as a table, as Markdown and in one line. The Mann-Whitney test is in
// bench/mann_whitney.cpp, the noise file in bench/noise_file.cpp.
#include "bench/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/compare_text.hpp"
#include "harness/error.hpp"

namespace klab::bench {

namespace {

void append_note(CompareRow& row, const std::string& text) {
    if (!text.empty()) row.note += (row.note.empty() ? "" : "; ") + text;
}

// The e2e.upload row of the same size and format as an end-to-end row, when it has a time.
const BenchRun* upload_row_for(const BenchFile& file, const BenchRun& run) {
    if (!run.parts) return nullptr;
    const BenchRun* upload = file.find("e2e.upload/" + run.parts->size + "/" + run.parts->format + "/copy/none");
    if (upload == nullptr || !upload->error.empty() || !(upload->median_us() > 0.0)) return nullptr;
    return upload;
}

std::vector<double> divided(std::vector<double> samples, double by) {
    for (double& s : samples) s /= by;
    return samples;
}

// The verdict of a benchmark present in both files.
CompareRow compare_run(const BenchFile& old_file, const BenchRun& old_run, const BenchFile& new_file, const BenchRun& new_run,
                       const CompareOptions& options, const NoiseFile* noise) {
    CompareRow row;
    row.name = new_run.name;
    row.row_class = row_class(row.name);
    row.old_repetitions = static_cast<int>(old_run.samples_us.size());
    row.new_repetitions = static_cast<int>(new_run.samples_us.size());
    // A failure is reported, not judged: there is nothing to compare.
    if (!old_run.error.empty()) append_note(row, "failed in OLD: " + old_run.error);
    else if (old_run.samples_us.empty()) append_note(row, "no samples in OLD");
    row.failed_in_new = !new_run.error.empty() || new_run.samples_us.empty();
    if (!new_run.error.empty()) append_note(row, "failed in NEW: " + new_run.error);
    else if (new_run.samples_us.empty()) append_note(row, "no samples in NEW");
    if (!row.note.empty()) {
        row.verdict = Verdict::error;
        return row;
    }
    row.old_median_us = old_run.median_us();
    row.new_median_us = new_run.median_us();
    if (!(*row.old_median_us > 0.0)) {
        row.verdict = Verdict::error;
        row.note = "old median is 0 us: no relative change";
        return row;
    }

    // An end-to-end row is mostly host-link time: each run's samples are divided by that run's
    // upload median, so that a faster or slower link between two machines cancels.
    std::vector<double> old_samples = old_run.samples_us;
    std::vector<double> new_samples = new_run.samples_us;
    double old_scale = 1.0;
    double new_scale = 1.0;
    if (row.row_class == RowClass::end_to_end) {
        const BenchRun* old_upload = upload_row_for(old_file, old_run);
        const BenchRun* new_upload = upload_row_for(new_file, new_run);
        if (old_upload != nullptr && new_upload != nullptr) {
            old_scale = old_upload->median_us();
            new_scale = new_upload->median_us();
            old_samples = divided(std::move(old_samples), old_scale);
            new_samples = divided(std::move(new_samples), new_scale);
            append_note(row, fmt::format("change of its ratio to e2e.upload (which moved {})", percent(new_scale / old_scale - 1.0)));
        } else {
            append_note(row, "no e2e.upload row in both files: the change of its own median");
        }
    }
    row.change = (*row.new_median_us / new_scale) / (*row.old_median_us / old_scale) - 1.0;
    row.p_value = mann_whitney_p(old_samples, new_samples);

    double allowance = row.row_class == RowClass::end_to_end
                           ? options.e2e_threshold
                           : std::max(options.threshold, options.threshold_us / *row.old_median_us);
    if (noise != nullptr) {
        row.noise = noise->largest_change(row.name);
        if (row.noise) allowance = std::max(allowance, options.noise_margin * *row.noise);
    }
    row.allowance = allowance;

    const bool significant = *row.p_value < options.alpha;
    const bool beyond = std::abs(*row.change) > allowance;
    std::string why;
    if (significant && beyond) {
        row.verdict = *row.change > 0.0 ? Verdict::slower : Verdict::faster;
    } else if (significant) {
        row.verdict = Verdict::same;
        if (*row.change != 0.0) why = "within the allowance";
    } else if (!beyond) {
        row.verdict = Verdict::same;
    } else {
        row.verdict = Verdict::ambiguous;
        why = "the repetitions overlap: run more repetitions";
    }
    // With too few repetitions no p-value can reach alpha: say why rather than let "same" or
    // "ambiguous" look like a measured result.
    const double floor = smallest_p_value(row.old_repetitions, row.new_repetitions);
    if (floor >= options.alpha) {
        int enough = 2;  // the fewest repetitions, as many in each file, whose smallest p is below alpha
        while (enough < 100 && smallest_p_value(enough, enough) >= options.alpha) ++enough;
        why = fmt::format("too few repetitions to judge the noise ({} and {}: the smallest possible p is {:.3g} >= alpha "
                          "{:g}); run with {} or more repetitions (klab run --repetitions, klab-bench "
                          "--benchmark_repetitions)",
                          row.old_repetitions, row.new_repetitions, floor, options.alpha, enough);
    }
    append_note(row, why);
    return row;
}

void check_options(const CompareOptions& o) {
    const auto check = [](double value, const char* what, const char* allowed) {
        if (!(value >= 0.0) || !std::isfinite(value)) throw Error(fmt::format("{} {}", what, value), allowed);
    };
    check(o.threshold, "threshold", "a relative change >= 0 (0.05 = 5%)");
    check(o.threshold_us, "threshold_us", "an absolute change >= 0 in us");
    check(o.e2e_threshold, "e2e_threshold", "a relative change >= 0 (0.5 = 50%)");
    check(o.min_us, "min_us", "a duration >= 0 in us");
    check(o.noise_margin, "noise_margin", "a factor >= 0");
    if (!(o.alpha > 0.0 && o.alpha < 1.0)) {
        throw Error(fmt::format("alpha {}", o.alpha), "a significance level between 0 and 1, e.g. 0.05");
    }
}

// Markdown cells: a '|' would end the cell.
std::string md_cell(const std::string& text) {
    std::string out;
    for (char ch : text) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return out;
}

std::string us_text(const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("-"); }
std::string change_text(const std::optional<double>& v) { return v ? percent(*v) : std::string("-"); }
std::string allowance_text(const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", 100.0 * *v) : std::string("-"); }
std::string p_text(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string("-"); }

// The rule in one sentence, for the headers of the table and the Markdown.
std::string rule_text(const Comparison& c) {
    const CompareOptions& o = c.options;
    return fmt::format("slower or faster when the Mann-Whitney U test over the repetitions gives p < {:g} and the median moved "
                       "beyond the row's allowance: the largest of {:g}%, {:g} us and {:g}x its noise ({}); end-to-end rows "
                       "{:g}% of their ratio to e2e.upload; baselines and rows under {:g} us are shown, not gated",
                       o.alpha, 100.0 * o.threshold, o.threshold_us, o.noise_margin,
                       c.noise_source.empty() ? std::string("no noise file") : "noise file " + c.noise_source,
                       100.0 * o.e2e_threshold, o.min_us);
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

const char* to_string(RowClass row_class) {
    switch (row_class) {
        case RowClass::kernel: return "kernel";
        case RowClass::end_to_end: return "end_to_end";
        case RowClass::baseline: return "baseline";
    }
    return "?";
}

RowClass row_class(const std::string& name) {
    for (const char* prefix : {"npp.", "baseline.", "cpu."}) {
        if (name.rfind(prefix, 0) == 0) return RowClass::baseline;
    }
    const std::string row = name.substr(0, name.find('/'));
    if (row.rfind("e2e.", 0) != 0) return RowClass::kernel;
    // Pageable rows copy through the host's own memory and move with whatever else it does.
    const bool pageable = row.find(".pageable") != std::string::npos;
    return is_link_row(row) || pageable ? RowClass::baseline : RowClass::end_to_end;
}

int Comparison::count(Verdict verdict) const {
    return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const CompareRow& r) { return r.verdict == verdict; }));
}

Comparison compare(const BenchFile& old_file, const BenchFile& new_file, const CompareOptions& options, const NoiseFile* noise) {
    check_options(options);
    const std::string old_key = old_file.gpu_key();
    const std::string new_key = new_file.gpu_key();
    if (old_key.empty() || new_key.empty() || old_key != new_key) {
        throw Error(fmt::format("refusing to compare {} (GPU key {}) with {} (GPU key {}): timings from different GPUs, or "
                                "from a file without a GPU key, say nothing about a change in the code",
                                old_file.source, shown_key(old_key), new_file.source, shown_key(new_key)),
                    "two klab-bench files whose context has the same klab_gpu_key");
    }
    if (noise != nullptr && noise->gpu_key != new_key) {
        throw Error(fmt::format("the noise file {} is of GPU key {}, the runs of {}", noise->source, shown_key(noise->gpu_key),
                                shown_key(new_key)),
                    "a noise file learned from runs of the same GPU model (klab compare --learn-noise)");
    }
    Comparison c;
    c.old_source = old_file.source;
    c.new_source = new_file.source;
    c.noise_source = noise != nullptr ? noise->source : std::string();
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
            c.rows.push_back(compare_run(old_file, *old_run, new_file, run, options, noise));
            continue;
        }
        CompareRow row;
        row.name = run.name;
        row.row_class = row_class(run.name);
        row.new_repetitions = static_cast<int>(run.samples_us.size());
        if (!run.samples_us.empty()) row.new_median_us = run.median_us();
        row.failed_in_new = !run.error.empty() || run.samples_us.empty();
        // A new row that failed is a failure (counted and gating as one), not an addition.
        row.verdict = row.failed_in_new ? Verdict::error : Verdict::added;
        row.note = run.error.empty() ? (run.samples_us.empty() ? "only in NEW, no samples" : "only in NEW")
                                     : "only in NEW, failed: " + run.error;
        c.rows.push_back(std::move(row));
    }
    for (const BenchRun& run : old_file.runs) {
        if (new_file.find(run.name) != nullptr) continue;
        CompareRow row;
        row.name = run.name;
        row.row_class = row_class(run.name);
        row.verdict = Verdict::removed;
        row.old_repetitions = static_cast<int>(run.samples_us.size());
        if (!run.samples_us.empty()) row.old_median_us = run.median_us();
        row.note = "only in OLD";
        c.rows.push_back(std::move(row));
    }
    int baselines_moved = 0;
    int unjudgeable = 0;  // gated rows of both files whose repetitions no change can pass the test with
    for (CompareRow& row : c.rows) {
        const bool failed_in_new = row.failed_in_new;
        const bool baseline = row.row_class == RowClass::baseline;
        const bool slower = row.verdict == Verdict::slower;
        row.gated = !baseline && row.old_median_us && *row.old_median_us >= options.min_us;
        // A removal or a failure is no timing noise: it fails the gate whatever the row's duration.
        row.fails_gate = !baseline && ((slower && row.gated) || row.verdict == Verdict::removed || failed_in_new);
        // NPP, the copy floor, the host link and the CPU reference measure the machine, not klab's
        // code: their verdicts are shown, and a moved baseline is a warning about the comparison.
        if (baseline && (slower || row.verdict == Verdict::removed || failed_in_new)) append_note(row, "a baseline: not gated");
        if (!baseline && slower && !row.gated) {
            append_note(row, fmt::format("under {:g} us, mostly launch and event overhead: not gated", options.min_us));
        }
        baselines_moved += baseline && (slower || row.verdict == Verdict::faster);
        unjudgeable += row.gated && row.old_repetitions > 0 && row.new_repetitions > 0 &&
                       smallest_p_value(row.old_repetitions, row.new_repetitions) >= options.alpha;
    }
    if (unjudgeable > 0) {
        // Said once, up front: each row's note says it too, but a verdict of "no regression" alone
        // would read as a pass of the gate.
        c.warnings.push_back(fmt::format("{} gated row(s) have too few repetitions for the test to find any change, so they "
                                         "cannot fail the gate (their notes say how many are needed)",
                                         unjudgeable));
    }
    if (baselines_moved > 0) {
        c.warnings.push_back(fmt::format("{} baseline row(s) (NPP, copy, host-device link, CPU reference) moved beyond noise and allowance: the two "
                                         "runs' machines or conditions differ, so read the other verdicts with care",
                                         baselines_moved));
    }
    return c;
}

int Comparison::gate_failures() const {
    return static_cast<int>(std::count_if(rows.begin(), rows.end(), [](const CompareRow& r) { return r.fails_gate; }));
}

std::string format_table(const Comparison& c) {
    std::size_t name_width = std::string_view("benchmark").size();
    for (const CompareRow& r : c.rows) name_width = std::max(name_width, r.name.size());
    std::string out = fmt::format("OLD {}\nNEW {}\nGPU {}\nrule: {}\n", c.old_source, c.new_source, c.gpu_key, rule_text(c));
    for (const std::string& w : c.warnings) out += "warning: " + w + "\n";
    out += "\n";
    out += fmt::format("{:<{}}  {:>5}  {:>11}  {:>11}  {:>8}  {:>6}  {:>6}  {:<9}  {}\n", "benchmark", name_width, "reps", "old us",
                       "new us", "change", "allow", "p", "verdict", "note");
    for (const CompareRow& r : c.rows) {
        const std::string reps = fmt::format("{}/{}", r.old_repetitions, r.new_repetitions);
        std::string line = fmt::format("{:<{}}  {:>5}  {:>11}  {:>11}  {:>8}  {:>6}  {:>6}  {:<9}  {}", r.name, name_width, reps,
                                       us_text(r.old_median_us), us_text(r.new_median_us), change_text(r.change),
                                       allowance_text(r.allowance), p_text(r.p_value), to_string(r.verdict), r.note);
        line.erase(line.find_last_not_of(' ') + 1);  // no trailing blanks when the note is empty
        out += line + "\n";
    }
    return out;
}

std::string format_markdown(const Comparison& c) {
    std::string out = "**klab compare**: " + verdict_line(c) + "\n\n";
    out += fmt::format("OLD `{}`, NEW `{}`, GPU {}.<br>Rule: {}.\n\n", c.old_source, c.new_source, c.gpu_key, rule_text(c));
    for (const std::string& w : c.warnings) out += "- warning: " + w + "\n";
    if (!c.warnings.empty()) out += "\n";

    const std::string header = "| benchmark | old µs | new µs | change | allowance | p | verdict | note |\n"
                               "|---|--:|--:|--:|--:|--:|---|---|\n";
    const auto line = [](const CompareRow& r) {
        const std::string verdict = r.fails_gate ? fmt::format("**{}**", to_string(r.verdict)) : std::string(to_string(r.verdict));
        return fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", r.name, us_text(r.old_median_us), us_text(r.new_median_us),
                           change_text(r.change), allowance_text(r.allowance), p_text(r.p_value), verdict, md_cell(r.note));
    };
    // The failures first, then every other row that is not `same`, then the unchanged ones folded.
    std::string failing;
    std::string changed;
    std::string unchanged;
    int unchanged_count = 0;
    for (const CompareRow& r : c.rows) {
        if (r.fails_gate) failing += line(r);
        else if (r.verdict != Verdict::same) changed += line(r);
        else {
            unchanged += line(r);
            ++unchanged_count;
        }
    }
    if (!failing.empty()) out += "Failing the gate:\n\n" + header + failing + "\n";
    if (!changed.empty()) out += "Other changes (not failing the gate):\n\n" + header + changed + "\n";
    if (failing.empty() && changed.empty()) out += "No row moved beyond its allowance.\n\n";
    if (unchanged_count > 0) {
        out += fmt::format("<details><summary>{} row(s) the same</summary>\n\n{}{}\n</details>\n", unchanged_count, header, unchanged);
    }
    return out;
}

std::string failures_text(const Comparison& c) {
    std::string out;
    for (const CompareRow& r : c.rows) {
        if (!r.fails_gate) continue;
        std::string line = fmt::format("  {}  {} -> {} us  {}  {}  {}", r.name, us_text(r.old_median_us), us_text(r.new_median_us),
                                       change_text(r.change), to_string(r.verdict), r.note);
        line.erase(line.find_last_not_of(' ') + 1);
        out += line + "\n";
    }
    return out.empty() ? out : "failing the gate:\n" + out;
}

std::string verdict_line(const Comparison& c) {
    const int slower = c.count(Verdict::slower);
    int slower_gated = 0;
    for (const CompareRow& r : c.rows) slower_gated += r.verdict == Verdict::slower && r.fails_gate ? 1 : 0;
    // A slower row that is not gated (a baseline, a row under the minimum) is counted, and said so.
    const std::string slower_text =
        slower == slower_gated ? fmt::format("{} slower", slower) : fmt::format("{} slower ({} not gated)", slower, slower - slower_gated);
    const std::string counts =
        fmt::format("{}, {} faster, {} same, {} ambiguous, {} failed, {} added, {} removed", slower_text, c.count(Verdict::faster),
                    c.count(Verdict::same), c.count(Verdict::ambiguous), c.count(Verdict::error), c.count(Verdict::added),
                    c.count(Verdict::removed));
    if (c.regressed()) {
        return fmt::format("REGRESSION: {} benchmark(s) slower beyond the repetitions' noise and their allowance, gone from NEW "
                           "or failed in NEW ({})",
                           c.gate_failures(), counts);
    }
    return fmt::format("no regression ({})", counts);
}

}  // namespace klab::bench
