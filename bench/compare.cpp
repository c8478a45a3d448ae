// klab compare (bench/compare.hpp): the regression gate in one file, on purpose over ~400 lines:
// the Mann-Whitney test, the noise file and the verdicts with their table and Markdown share the
// row classes, the allowance and a few formatting helpers, and each part is short (under 150
// lines); split apart they would need an internal header for those helpers and nothing else.
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

// The gate promises to catch a 10% slowdown; a kernel row that moved more than this between runs
// meant to be identical makes that promise void for it, so learning says so.
constexpr double kSuspiciousNoise = 0.10;

std::string percent(double fraction) { return fmt::format("{:+.1f}%", 100.0 * fraction); }

std::string context_or_absent(const BenchFile& file, const std::string& key) {
    const std::string value = file.context_value(key);
    return value.empty() ? std::string("(absent)") : value;
}

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
        why = fmt::format("too few repetitions to judge the noise ({} and {}: the smallest possible p is {:.3g} >= alpha "
                          "{:g}); run with --benchmark_repetitions=5 or more",
                          row.old_repetitions, row.new_repetitions, floor, options.alpha);
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

std::string shown_key(const std::string& key) { return key.empty() ? std::string("no klab_gpu_key") : "'" + key + "'"; }

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

std::optional<double> NoiseFile::largest_change(const std::string& row) const {
    const auto it = medians_us.find(row);
    if (it == medians_us.end()) return std::nullopt;
    std::vector<double> present;
    for (const std::optional<double>& m : it->second)
        if (m && *m > 0.0) present.push_back(*m);
    if (present.size() < 2) return std::nullopt;
    const auto [low, high] = std::minmax_element(present.begin(), present.end());
    return *high / *low - 1.0;
}

LearnedNoise learn_noise(const std::vector<BenchFile>& runs) {
    if (runs.size() < 2) {
        throw Error(fmt::format("{} run(s) to learn the noise from", runs.size()),
                    "two or more klab-bench files of identical code on one GPU model");
    }
    const std::string key = runs.front().gpu_key();
    for (const BenchFile& file : runs) {
        if (file.gpu_key().empty() || file.gpu_key() != key) {
            throw Error(fmt::format("refusing to learn one GPU model's noise from {} (GPU key {}) and {} (GPU key {})",
                                    runs.front().source, shown_key(key), file.source, shown_key(file.gpu_key())),
                        "klab-bench files whose context has the same klab_gpu_key");
        }
    }
    LearnedNoise out;
    NoiseFile& noise = out.noise;
    noise.gpu_key = key;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const BenchFile& file = runs[i];
        noise.runs.push_back({file.source, file.context_value("git_commit"), file.context_value("date"), file.context_value("host_name")});
        for (const BenchRun& run : file.runs) {
            if (!run.error.empty() || run.samples_us.empty()) continue;
            std::vector<std::optional<double>>& medians = noise.medians_us[run.name];
            medians.resize(runs.size());
            medians[i] = run.median_us();
        }
    }
    for (auto it = noise.medians_us.begin(); it != noise.medians_us.end();) {
        it = noise.largest_change(it->first) ? std::next(it) : noise.medians_us.erase(it);
    }
    for (const char* context_key : {"git_commit", "klab_study"}) {
        std::set<std::string> values;
        for (const BenchFile& file : runs) values.insert(context_or_absent(file, context_key));
        if (values.size() > 1) {
            std::string listed;
            for (const std::string& v : values) listed += (listed.empty() ? "" : ", ") + v;
            out.warnings.push_back(fmt::format("the runs differ in {} ({}): learn only from runs that time the same code", context_key, listed));
        }
    }
    std::string moved;
    int moved_count = 0;
    for (const auto& [name, medians] : noise.medians_us) {
        const double change = *noise.largest_change(name);
        if (row_class(name) != RowClass::kernel || change <= kSuspiciousNoise) continue;
        if (++moved_count <= 5) moved += fmt::format("{}{} {}", moved.empty() ? "" : ", ", name, percent(change));
    }
    if (moved_count > 0) {
        out.warnings.push_back(fmt::format("{} kernel row(s) moved more than {:g}% between these runs ({}{}): were they of identical "
                                           "code? A row's allowance grows with its noise",
                                           moved_count, 100.0 * kSuspiciousNoise, moved, moved_count > 5 ? ", ..." : ""));
    }
    return out;
}

std::string noise_json(const NoiseFile& noise) {
    // Written by hand around nlohmann's dumps so that each run and each row keeps to one line.
    const auto text = [](const std::string& s) { return nlohmann::json(s).dump(); };
    std::string out = "{\n \"klab_noise\": 1,\n";
    out += " \"about\": " +
           text("each row's median (us) in identical-code runs of one GPU model, written by klab compare --learn-noise; "
                "klab compare --noise gives each row an allowance of at least noise_margin (default 2) times its largest "
                "change between them (bench/README.md, Comparing runs)") +
           ",\n";
    out += " \"gpu_key\": " + text(noise.gpu_key) + ",\n \"runs\": [\n";
    for (std::size_t i = 0; i < noise.runs.size(); ++i) {
        const NoiseRun& r = noise.runs[i];
        const nlohmann::ordered_json run = {{"file", r.file}, {"git_commit", r.git_commit}, {"date", r.date}, {"host_name", r.host_name}};
        out += "  " + run.dump() + (i + 1 < noise.runs.size() ? ",\n" : "\n");
    }
    out += " ],\n \"medians_us\": {\n";
    std::size_t written = 0;
    for (const auto& [name, values] : noise.medians_us) {
        std::string row;
        // To the nanosecond: the file stays readable, and no noise is below that.
        for (const std::optional<double>& v : values) {
            row += (row.empty() ? "" : ", ") + (v ? nlohmann::json(std::round(*v * 1e3) / 1e3).dump() : std::string("null"));
        }
        out += "  " + text(name) + ": [" + row + "]" + (++written < noise.medians_us.size() ? ",\n" : "\n");
    }
    return out + " }\n}\n";
}

NoiseFile parse_noise_json(const std::string& text, const std::string& source) {
    const std::string allowed = "a noise file written by klab compare --learn-noise";
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) throw Error(source + " is not JSON", allowed);
    const auto text_of = [](const nlohmann::json& object, const char* key) {
        return object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : std::string();
    };
    if (!doc.is_object() || !doc.contains("klab_noise") || doc["klab_noise"] != 1 || !doc.contains("gpu_key") || !doc["gpu_key"].is_string() ||
        !doc.contains("runs") || !doc["runs"].is_array() || !doc.contains("medians_us") || !doc["medians_us"].is_object()) {
        throw Error(source + " is not a klab noise file (version 1: klab_noise, gpu_key, runs, medians_us)", allowed);
    }
    NoiseFile noise;
    noise.source = source;
    noise.gpu_key = doc["gpu_key"].get<std::string>();
    for (const nlohmann::json& r : doc["runs"]) {
        if (!r.is_object()) throw Error(source + ": a run that is not an object", allowed);
        noise.runs.push_back({text_of(r, "file"), text_of(r, "git_commit"), text_of(r, "date"), text_of(r, "host_name")});
    }
    for (const auto& [name, values] : doc["medians_us"].items()) {
        if (!values.is_array() || values.size() != noise.runs.size()) {
            throw Error(fmt::format("{}: row {} has no array of {} medians (one per run)", source, name, noise.runs.size()), allowed);
        }
        std::vector<std::optional<double>>& medians = noise.medians_us[name];
        for (const nlohmann::json& v : values) {
            if (v.is_null()) {
                medians.emplace_back();
            } else if (v.is_number() && v.get<double>() > 0.0) {
                medians.emplace_back(v.get<double>());
            } else {
                throw Error(fmt::format("{}: row {} has a median that is neither a positive number nor null", source, name), allowed);
            }
        }
    }
    return noise;
}

NoiseFile load_noise_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + path, "a readable noise file (klab compare --learn-noise)");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_noise_json(text.str(), path);
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
        row.row_class = row_class(run.name);
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

std::string verdict_line(const Comparison& c) {
    const int slower = c.count(Verdict::slower);
    const std::string counts =
        fmt::format("{} slower, {} faster, {} same, {} ambiguous, {} failed, {} added, {} removed", slower, c.count(Verdict::faster),
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
