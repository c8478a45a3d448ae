// klab compare OLD NEW: the regression gate. For each benchmark in both klab-bench files, a
// verdict from the change of its median, its allowance and the repetitions (bench/compare.hpp has
// the rule). Exit code 0 when nothing gated is slower, 1 when something is (the table first, then
// one verdict line), 2 for refused input (files of different GPUs, unreadable files, bad options).
// klab compare --learn-noise OUT RUN RUN...: the noise file the gate reads with --noise.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_json.hpp"
#include "bench/compare.hpp"
#include "cli/commands.hpp"
#include "harness/error.hpp"
#include "harness/io/image_io.hpp"

namespace klab::cli {

namespace {

namespace fs = std::filesystem;

// The rule's defaults live in bench::CompareOptions; the flags show them as percentages.
const bench::CompareOptions kDefaults;

struct CompareCliOptions {
    std::vector<std::string> files;
    double threshold_percent = 100.0 * kDefaults.threshold;
    double threshold_us = kDefaults.threshold_us;
    double e2e_threshold_percent = 100.0 * kDefaults.e2e_threshold;
    double min_us = kDefaults.min_us;
    double alpha = kDefaults.alpha;
    std::string noise_path;
    std::string learn_noise_path;
    std::string format = "table";
    bool json = false;
};

nlohmann::json optional_number(const std::optional<double>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const bench::Comparison& c) {
    nlohmann::json rows = nlohmann::json::array();
    for (const bench::CompareRow& r : c.rows) {
        rows.push_back({{"name", r.name},
                        {"class", bench::to_string(r.row_class)},
                        {"verdict", bench::to_string(r.verdict)},
                        {"old_repetitions", r.old_repetitions},
                        {"new_repetitions", r.new_repetitions},
                        {"old_median_us", optional_number(r.old_median_us)},
                        {"new_median_us", optional_number(r.new_median_us)},
                        {"change", optional_number(r.change)},
                        {"allowance", optional_number(r.allowance)},
                        {"noise", optional_number(r.noise)},
                        {"p_value", optional_number(r.p_value)},
                        {"gated", r.gated},
                        {"fails_gate", r.fails_gate},
                        {"note", r.note}});
    }
    const bench::CompareOptions& o = c.options;
    return {{"old", c.old_source},
            {"new", c.new_source},
            {"noise", c.noise_source.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.noise_source)},
            {"gpu_key", c.gpu_key},
            {"threshold_percent", 100.0 * o.threshold},
            {"threshold_us", o.threshold_us},
            {"e2e_threshold_percent", 100.0 * o.e2e_threshold},
            {"min_us", o.min_us},
            {"noise_margin", o.noise_margin},
            {"alpha", o.alpha},
            {"warnings", c.warnings},
            {"regressed", c.regressed()},
            {"rows", rows}};
}

// Checked here rather than with CLI11 validators: a bad value is refused input (exit 2).
bench::CompareOptions checked_options(const CompareCliOptions& o) {
    const auto check = [](double value, const char* flag, const char* allowed) {
        if (!(value >= 0.0 && value < 1e6)) throw Error(fmt::format("{} {}", flag, value), allowed);
    };
    check(o.threshold_percent, "--threshold", "a percentage from 0 to below 1000000, e.g. 5");
    check(o.threshold_us, "--threshold-us", "a duration in microseconds from 0 to below 1000000, e.g. 2");
    check(o.e2e_threshold_percent, "--e2e-threshold", "a percentage from 0 to below 1000000, e.g. 50");
    check(o.min_us, "--min-us", "a duration in microseconds from 0 to below 1000000, e.g. 5");
    if (!(o.alpha > 0.0 && o.alpha < 1.0)) throw Error(fmt::format("--alpha {}", o.alpha), "a significance level between 0 and 1, e.g. 0.05");
    if (o.format != "table" && o.format != "md" && o.format != "json") {
        throw Error(fmt::format("--format {}", o.format), "table, md (Markdown for a pull request) or json");
    }
    if (o.json && o.format == "md") throw Error("--json with --format md", "one of them (--json is --format json)");
    bench::CompareOptions options;
    options.threshold = o.threshold_percent / 100.0;
    options.threshold_us = o.threshold_us;
    options.e2e_threshold = o.e2e_threshold_percent / 100.0;
    options.min_us = o.min_us;
    options.alpha = o.alpha;
    return options;
}

// Before any file is read: OUT may be a new file or replace an earlier noise file, nothing else (taking
// --learn-noise for a flag, "--learn-noise A.json B.json C.json", would otherwise replace the run
// A.json), and no run may be given twice (its noise against itself would read as none).
void check_learn_noise_files(const CompareCliOptions& o) {
    const std::string allowed =
        "--learn-noise OUT RUN RUN...: OUT a new file or an earlier noise file, the RUNs two or more different klab-bench files";
    const fs::path out = o.learn_noise_path;
    for (std::size_t i = 0; i < o.files.size(); ++i) {
        if (io::output_replaces_input(o.files[i], out)) {
            throw Error(fmt::format("--learn-noise '{}' is also a run to learn from: writing it would replace that run",
                                    printable(o.learn_noise_path)),
                        allowed);
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (io::file_identity(o.files[j]) == io::file_identity(o.files[i])) {
                const std::string also = o.files[j] == o.files[i] ? "" : fmt::format(" (also as '{}')", printable(o.files[i]));
                throw Error(fmt::format("the run '{}' is given twice{}", printable(o.files[j]), also), allowed);
            }
        }
    }
    io::check_file_writable(out);  // a directory, a missing or read-only folder: said as such
    std::error_code ec;
    if (fs::exists(out, ec)) {
        try {
            (void)bench::load_noise_file(o.learn_noise_path);
        } catch (const Error&) {
            throw Error(fmt::format("--learn-noise '{}' exists and is not a noise file klab reads (a run?), so writing it "
                                    "would destroy it",
                                    printable(o.learn_noise_path)),
                        allowed + " (remove an old one first)");
        }
    }
}

void run_learn_noise(const CompareCliOptions& o) {
    if (!o.noise_path.empty()) throw Error("--noise with --learn-noise", "--learn-noise OUT RUN RUN... (learning reads no noise file)");
    check_learn_noise_files(o);
    std::vector<bench::BenchFile> runs;
    for (const std::string& path : o.files) runs.push_back(bench::load_bench_file(path));
    const bench::LearnedNoise learned = bench::learn_noise(runs);
    const std::string text = bench::noise_json(learned.noise);
    io::write_file_atomically(o.learn_noise_path, std::vector<std::uint8_t>(text.begin(), text.end()));
    for (const std::string& w : learned.warnings) fmt::print("warning: {}\n", w);
    fmt::print("klab compare: the noise of {} rows from {} runs ({}) written to {}\n", learned.noise.medians_us.size(), runs.size(),
               learned.noise.gpu_key, o.learn_noise_path);
}

void run_compare(const CompareCliOptions& o) {
    const bench::CompareOptions options = checked_options(o);
    if (!o.learn_noise_path.empty()) {
        run_learn_noise(o);
        return;
    }
    if (o.files.size() != 2) {
        throw Error(fmt::format("{} file(s) given to compare", o.files.size()),
                    "OLD NEW (two klab-bench files), or --learn-noise OUT RUN RUN...");
    }
    const bench::BenchFile old_file = bench::load_bench_file(o.files[0]);
    const bench::BenchFile new_file = bench::load_bench_file(o.files[1]);
    std::optional<bench::NoiseFile> noise;
    if (!o.noise_path.empty()) noise = bench::load_noise_file(o.noise_path);
    const bench::Comparison c = bench::compare(old_file, new_file, options, noise ? &*noise : nullptr);

    const std::string format = o.json ? "json" : o.format;
    if (format == "json") {
        fmt::print("{}\n", to_json(c).dump(2));
    } else if (format == "md") {
        fmt::print("{}", bench::format_markdown(c));
    } else {
        const std::string failures = bench::failures_text(c);
        fmt::print("{}\n{}{}{}\n", bench::format_table(c), failures, failures.empty() ? "" : "\n", bench::verdict_line(c));
    }
    std::fflush(stdout);
    // CLI11's RuntimeError leaves main() with this exit code and prints nothing more.
    if (c.regressed()) throw CLI::RuntimeError(1);
}

}  // namespace

void add_compare_command(CLI::App& app) {
    auto o = std::make_shared<CompareCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "compare",
        "Compare two klab-bench JSON files of the same GPU: per benchmark faster, slower, same or ambiguous from the change "
        "of its median against its allowance and the repetitions (Mann-Whitney U); exit 1 when a gated row is slower. "
        "With --learn-noise: record identical-code runs' noise for --noise");
    cmd->add_option("FILES", o->files,
                    "OLD NEW: the baseline and the run to judge (Google Benchmark JSON from klab-bench or klab run, one GPU "
                    "model); with --learn-noise: two or more runs of identical code")
        ->required()
        ->expected(1, CLI::detail::expected_max_vector_size);  // counted in run_compare, so that a wrong count is refused input (exit 2)
    cmd->add_option("--threshold", o->threshold_percent, "PERCENT: a median change at most this large never counts")
        ->capture_default_str();
    cmd->add_option("--threshold-us", o->threshold_us, "US: a median change at most this many microseconds never counts")
        ->capture_default_str();
    cmd->add_option("--e2e-threshold", o->e2e_threshold_percent,
                    "PERCENT: the allowance of the pinned end-to-end rows (change of their ratio to e2e.upload)")
        ->capture_default_str();
    cmd->add_option("--min-us", o->min_us, "US: rows faster than this in OLD are compared and shown, not gated")
        ->capture_default_str();
    cmd->add_option("--alpha", o->alpha, "Significance level of the two-sided Mann-Whitney U test")->capture_default_str();
    cmd->add_option("--noise", o->noise_path,
                    fmt::format("FILE: the GPU model's noise (results/<gpu-slug>/noise.json): each row's allowance is at "
                                "least {:g} times its largest change between identical-code runs",
                                kDefaults.noise_margin));
    cmd->add_option("--learn-noise", o->learn_noise_path,
                    "OUT: write the noise file of the runs given (two or more of identical code, one GPU model) instead "
                    "of comparing");
    cmd->add_option("--format", o->format, "table, md (Markdown for a pull request: regressions first) or json (same exit codes)")
        ->capture_default_str();
    cmd->add_flag("--json", o->json, "The same as --format json");
    cmd->callback([o] { run_compare(*o); });
}

}  // namespace klab::cli
