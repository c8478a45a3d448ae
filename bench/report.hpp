#pragma once
// klab report: one klab-bench JSON file (bench/README.md) turned into report.md — the seeds'
// studies as tables of medians and of ratios to the copy floor, NPP and the CPU reference — and
// plot-data.json, the plots' series, which scripts/plot_bench.py (matplotlib) draws as PNGs.
// Every figure comes from the one file: medians over its repetitions, ratios of those medians.
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_json.hpp"

namespace klab::bench {

// What became of the plots.
struct PlotOutcome {
    std::vector<std::string> asked;  // PNG file names the plot script was to draw (none with --no-plots or no script)
    std::vector<std::string> drawn;  // of them, those it drew (report.md links these)
    std::string not_drawn;           // why some or all were not drawn; "" when all were
};

// The plots' series as JSON text (format: bench/README.md, "Report"); only plots with rows.
std::string plot_data_json(const BenchFile& file);
// report.md's text; it links only the PNGs in `plots.drawn`.
std::string report_markdown(const BenchFile& file, const PlotOutcome& plots);

// The README's results table: a caption naming the GPU and the file, a Markdown table of a few
// headline problems (the seeds' fastest variant, klab's fastest, × copy floor, × roofline, NPP)
// and a line saying what the columns are; klab::Error when the file has none of those problems.
std::string readme_table(const BenchFile& file);
// The lines that enclose the table in README.md (tests/cpu/test_readme_table.cpp checks them).
inline constexpr const char* kReadmeTableBegin = "<!-- klab report --readme-table: begin -->";
inline constexpr const char* kReadmeTableEnd = "<!-- klab report --readme-table: end -->";
// Replaces the text between the begin and end lines of the file at `readme` with `table`, and
// writes it atomically; false, the file not written, when it holds that table already;
// klab::Error, the file untouched, when it cannot be read, or its lines are missing, repeated or
// out of order.
bool update_readme_table(const std::filesystem::path& readme, const std::string& table);

struct ReportRequest {
    std::filesystem::path bench_json;
    std::filesystem::path out_dir;      // empty: the JSON's folder (created when missing)
    std::filesystem::path plot_script;  // scripts/plot_bench.py
    bool draw_plots = true;             // false: --no-plots (plot-data.json is still written)
    std::string python = "python3";     // looked up on PATH
};

struct ReportResult {
    std::filesystem::path report;     // <out>/report.md
    std::filesystem::path plot_data;  // <out>/plot-data.json
    PlotOutcome plots;
    std::string draw_later;  // the command that draws the plots, for a warning when they were not drawn

    // "; plots: <out>/a.png, <out>/b.png" for the plots drawn, "" when none was.
    std::string drawn_text() const;
};

// Loads the file (klab::Error when it is missing or not klab-bench JSON, or holds no row that
// ran), makes plot-data.json, the plots (the plot script) and report.md in a staging folder
// beside them, then renames them into place, report.md last: a failure while they are made
// leaves the earlier report as it was. One report at a time per process.
ReportResult write_report(const ReportRequest& request);

}  // namespace klab::bench
