// klab report BENCH_JSON: report.md (the seeds' tables from one klab-bench JSON file) and PNG plots
// drawn by scripts/plot_bench.py; with --readme-table, the README's results table instead, printed
// or written into the README with --update (bench/report.hpp does the work).
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
    bool readme_table = false;
    std::string update;  // with readme_table: the README whose table is replaced
};

void run_readme_table(const ReportCliOptions& o) {
    const std::string table = bench::readme_table(bench::load_bench_file(o.bench_json));
    if (o.update.empty()) {
        fmt::print("{}", table);
        return;
    }
    if (bench::update_readme_table(o.update, table)) {
        fmt::print("updated the results table of {}\n", o.update);
    } else {
        fmt::print("the results table of {} is already this file's: left as it was\n", o.update);
    }
}

void run_report(const ReportCliOptions& o) {
    if (o.readme_table) {
        run_readme_table(o);
        return;
    }
    bench::ReportRequest request;
    request.bench_json = o.bench_json;
    request.out_dir = o.out;
    request.plot_script = o.plot_script;
    request.draw_plots = !o.no_plots;
    const bench::ReportResult result = bench::write_report(request);
    fmt::print("wrote {} and {}{}\n", result.report.string(), result.plot_data.string(), result.drawn_text());
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
        "report", "Write report.md (tables against the copy floor, NPP and the CPU) and PNG plots from a klab-bench JSON file, or "
        "the README's results table (--readme-table)");
    cmd->add_option("BENCH_JSON", o->bench_json, "klab-bench's JSON, e.g. results/<gpu-slug>/bench.json")->required();
    CLI::Option* out = cmd->add_option("--out", o->out, "Folder for report.md, plot-data.json and the PNGs (default: the JSON's folder)");
    CLI::Option* plot_script =
        cmd->add_option("--plot-script", o->plot_script, "The script that draws the plots from plot-data.json (needs python3 with matplotlib)")
            ->capture_default_str()
            ->check(CLI::ExistingFile);  // one given that is not there is a typo: refused, not a warning
    CLI::Option* no_plots = cmd->add_flag("--no-plots", o->no_plots,
                                          "Write report.md and plot-data.json without drawing the plots (PNGs already in the "
                                          "folder are left as they are; report.md links none)");
    CLI::Option* readme_table =
        cmd->add_flag("--readme-table", o->readme_table,
                      "Print the README's results table (Markdown: the seeds' fastest variant against klab's on a few headline "
                      "problems) instead of writing the report")
            ->excludes(out, plot_script, no_plots);
    cmd->add_option("--update", o->update,
                    fmt::format("With --readme-table: write the table into this README, between its lines {} and {}",
                                bench::kReadmeTableBegin, bench::kReadmeTableEnd))
        ->needs(readme_table);
    cmd->callback([o] { run_report(*o); });
}

}  // namespace klab::cli
