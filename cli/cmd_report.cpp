// klab report BENCH_JSON: report.md (the seeds' tables from one klab-bench JSON file) and PNG plots
// drawn by scripts/plot_bench.py (bench/report.hpp does the work).
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "bench/report.hpp"
#include "cli/commands.hpp"

namespace klab::cli {

namespace {

struct ReportCliOptions {
    std::string bench_json;
    std::string out;
    std::string plot_script = KLAB_SOURCE_DIR "/scripts/plot_bench.py";
    bool no_plots = false;
};

void run_report(const ReportCliOptions& o) {
    bench::ReportRequest request;
    request.bench_json = o.bench_json;
    request.out_dir = o.out;
    request.plot_script = o.plot_script;
    request.draw_plots = !o.no_plots;
    const bench::ReportResult result = bench::write_report(request);
    std::string plots;
    for (const std::string& p : result.plots.drawn) plots += (plots.empty() ? "" : ", ") + (result.report.parent_path() / p).string();
    fmt::print("wrote {} and {}{}\n", result.report.string(), result.plot_data.string(),
               plots.empty() ? std::string() : "; plots: " + plots);
    if (o.no_plots) {
        fmt::print("plots not drawn (--no-plots); draw them with: {}\n", result.draw_later);
    } else if (!result.plots.not_drawn.empty()) {
        fmt::print(stderr, "klab report: warning: plots not drawn: {}; draw them later with: {}\n", result.plots.not_drawn,
                   result.draw_later);
    }
}

}  // namespace

void add_report_command(CLI::App& app) {
    auto o = std::make_shared<ReportCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "report", "Write report.md (tables against the copy floor, NPP and the CPU) and PNG plots from a klab-bench JSON file");
    cmd->add_option("BENCH_JSON", o->bench_json, "klab-bench's JSON, e.g. results/<gpu-slug>/bench.json")->required();
    cmd->add_option("--out", o->out, "Folder for report.md, plot-data.json and the PNGs (default: the JSON's folder)");
    cmd->add_option("--plot-script", o->plot_script, "The script that draws the plots from plot-data.json (needs python3 with matplotlib)")
        ->capture_default_str();
    cmd->add_flag("--no-plots", o->no_plots, "Write report.md and plot-data.json without drawing the plots");
    cmd->callback([o] { run_report(*o); });
}

}  // namespace klab::cli
