// klab report (bench/report.hpp): loads the file, writes plot-data.json, draws the plots, writes
// report.md. The parts live in files of their own: report_figures.* (rows, figures, tables),
// report_markdown.cpp (report.md's sections), report_plots.* (plot-data.json and the plot script),
// readme_table.cpp (the README's results table).
#include "bench/report.hpp"

#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/report_figures.hpp"
#include "bench/report_plots.hpp"
#include "harness/error.hpp"
#include "harness/io/image_io.hpp"

namespace klab::bench {

namespace {

namespace fs = std::filesystem;

void write_text(const fs::path& path, const std::string& text) { io::write_file_atomically(path, std::vector<std::uint8_t>(text.begin(), text.end())); }

}  // namespace

std::string plot_data_json(const BenchFile& file) { return report::plot_data(file, report::Rows(file)).dump(2) + "\n"; }

ReportResult write_report(const ReportRequest& request) {
    const BenchFile file = load_bench_file(request.bench_json);
    const report::Rows rows(file);
    if (rows.all.empty()) {
        throw Error(fmt::format("{} holds no benchmark that ran ({} benchmarks: {} failed, {} with names klab-bench does not write)",
                                file.source, file.runs.size(), rows.failed.size(), rows.unnamed),
                    "the JSON that klab run or klab-bench --benchmark_out writes");
    }
    fs::path out_dir = request.out_dir.empty() ? request.bench_json.parent_path() : request.out_dir;
    if (out_dir.empty()) out_dir = ".";
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec || !fs::is_directory(out_dir)) {
        throw Error(fmt::format("--out {}: cannot create the directory{}", out_dir.string(), ec ? ": " + ec.message() : std::string()),
                    "a directory path");
    }
    ReportResult result;
    result.report = out_dir / "report.md";
    result.plot_data = out_dir / "plot-data.json";
    const nlohmann::json data = report::plot_data(file, rows);
    write_text(result.plot_data, data.dump(2) + "\n");
    result.plots = report::draw_plots(request, data, result.plot_data, out_dir);
    result.draw_later = fmt::format("{} {} {} {}", request.python, request.plot_script.string(), result.plot_data.string(),
                                    out_dir.string());
    write_text(result.report, report_markdown(file, result.plots));
    return result;
}

}  // namespace klab::bench
