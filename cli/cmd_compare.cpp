// klab compare OLD NEW: the regression gate. For each benchmark in both klab-bench files, a
// noise-aware verdict from the repetitions (bench/compare.hpp has the rule). Exit code 0 when
// nothing is slower beyond noise and threshold, 1 when something is (the table first, then one
// verdict line), 2 for refused input (files of different GPUs, unreadable files, bad options).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_json.hpp"
#include "bench/compare.hpp"
#include "cli/commands.hpp"
#include "harness/error.hpp"

namespace klab::cli {

namespace {

struct CompareCliOptions {
    std::string old_path;
    std::string new_path;
    double threshold_percent = 5.0;
    double alpha = 0.05;
    bool json = false;
};

nlohmann::json optional_number(const std::optional<double>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const bench::Comparison& c) {
    nlohmann::json rows = nlohmann::json::array();
    for (const bench::CompareRow& r : c.rows) {
        rows.push_back({{"name", r.name},
                        {"verdict", bench::to_string(r.verdict)},
                        {"old_repetitions", r.old_repetitions},
                        {"new_repetitions", r.new_repetitions},
                        {"old_median_us", optional_number(r.old_median_us)},
                        {"new_median_us", optional_number(r.new_median_us)},
                        {"change", optional_number(r.change)},
                        {"p_value", optional_number(r.p_value)},
                        {"note", r.note}});
    }
    return {{"old", c.old_source},
            {"new", c.new_source},
            {"gpu_key", c.gpu_key},
            {"threshold_percent", 100.0 * c.options.threshold},
            {"alpha", c.options.alpha},
            {"warnings", c.warnings},
            {"regressed", c.regressed()},
            {"rows", rows}};
}

void run_compare(const CompareCliOptions& o) {
    // Checked here rather than with CLI11 validators: a bad value is refused input (exit 2).
    if (!(o.threshold_percent >= 0.0 && o.threshold_percent < 1e6)) {
        throw Error(fmt::format("--threshold {}", o.threshold_percent), "a percentage >= 0, e.g. 5");
    }
    if (!(o.alpha > 0.0 && o.alpha < 1.0)) throw Error(fmt::format("--alpha {}", o.alpha), "a significance level between 0 and 1, e.g. 0.05");
    const bench::BenchFile old_file = bench::load_bench_file(o.old_path);
    const bench::BenchFile new_file = bench::load_bench_file(o.new_path);
    bench::CompareOptions options;
    options.threshold = o.threshold_percent / 100.0;
    options.alpha = o.alpha;
    const bench::Comparison c = bench::compare(old_file, new_file, options);

    if (o.json) {
        fmt::print("{}\n", to_json(c).dump(2));
    } else {
        fmt::print("{}\n{}\n", bench::format_table(c), bench::verdict_line(c));
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
        "Compare two klab-bench JSON files of the same GPU: per benchmark faster, slower, same or ambiguous from the "
        "repetitions (Mann-Whitney U); exit 1 when anything is slower beyond noise and threshold");
    cmd->add_option("OLD", o->old_path, "The baseline: Google Benchmark JSON written by klab-bench or klab run")->required();
    cmd->add_option("NEW", o->new_path, "The run to judge, from the same GPU model (klab_gpu_key)")->required();
    cmd->add_option("--threshold", o->threshold_percent,
                    "PERCENT: a median change at most this large is never a regression")
        ->capture_default_str();
    cmd->add_option("--alpha", o->alpha, "Significance level of the two-sided Mann-Whitney U test")->capture_default_str();
    cmd->add_flag("--json", o->json, "Print the comparison as JSON instead of the table (same exit codes)");
    cmd->callback([o] { run_compare(*o); });
}

}  // namespace klab::cli
