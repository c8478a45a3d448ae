#pragma once
// klab report's plots: plot-data.json (the plots' series, already selected and computed, so that
// scripts/plot_bench.py parses no names) and the run of the script that draws them as PNGs.
// Internal to klab_bench: bench/report.hpp is the interface.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "bench/report.hpp"
#include "bench/report_figures.hpp"

namespace klab::bench::report {

// plot-data.json's document (format: bench/README.md, "Report"); only plots with rows.
nlohmann::json plot_data(const BenchFile& file, const Rows& rows);

// Runs request.plot_script on `data` (written at `data_path`) to draw its PNGs into `out_dir`, a
// folder with no PNG in it yet; says which were drawn, and why not the rest.
PlotOutcome draw_plots(const ReportRequest& request, const nlohmann::json& data, const std::filesystem::path& data_path,
                       const std::filesystem::path& out_dir);

}  // namespace klab::bench::report
