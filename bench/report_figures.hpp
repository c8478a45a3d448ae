#pragma once
// What every part of klab report shares (report.md's sections, plot-data.json, the README's
// table): the rows that ran with their medians, the figures of a row (× copy floor, × roofline,
// speedup over NPP and the CPU), the Markdown table writer, the number formats and the studies'
// row selections. Internal to klab_bench: bench/report.hpp is the interface.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_json.hpp"
#include "bench/report.hpp"

namespace klab::bench::report {

inline const std::string kNone = "—";
inline const std::vector<std::string> kSizes = {"480p", "720p", "HD", "4K", "8K"};
inline const std::vector<int> kMasks = {3, 5, 7, 9};
inline const std::string kPlotResolution = "time_vs_resolution.png";
inline const std::string kPlotMask = "time_vs_mask.png";
inline const std::string kPlotBandwidth = "bandwidth_8K.png";

// What a row name's first part says it is.
bool starts_with(const std::string& text, std::string_view prefix);
bool is_npp(const std::string& row);
bool is_cpu(const std::string& row);
bool is_copy(const std::string& row);
bool is_end_to_end(const std::string& row);
// A klab implementation on device-resident data: neither NPP, nor a baseline, nor the CPU
// reference, nor an end-to-end (host to host) row.
bool is_variant(const std::string& row);
// "variant", "npp", "cpu", "copy", "end_to_end" or "baseline" (plot-data.json's roles).
std::string role_of(const std::string& row);

std::string gauss(int k);      // "gauss<k>"
std::string mask_text(int k);  // "k×k"
int mask_of(const std::string& filter);  // k of "gauss<k>" among the study's masks; 0 otherwise
// Megapixels of a size part ("8K", "4096x4096"); 0 for a size klab does not know.
double megapixels(const std::string& size);
std::optional<double> counter(const BenchRun& run, const std::string& key);

// Number formats: three significant digits or more for times, two decimals for ratios.
std::string us_text(double us);
std::string multiple_text(double x);
std::string pct_text(double pct);
std::string speedup_text(double x);

// ---------------------------------------------------------------------------------------------
// The rows that ran.

struct Row {
    const BenchRun* run;
    const BenchName* name;
    double us;  // median over the repetitions
};

class Rows {
public:
    explicit Rows(const BenchFile& file);

    // Rows without a block part that `keep` accepts, fastest first.
    std::vector<Row> plain(const std::function<bool(const BenchName&)>& keep) const;
    // The row named `row` on `problem`'s problem, without a block part; nullptr when absent.
    const Row* find(const std::string& row, const BenchName& problem) const;
    // The NPP row a klab variant's row is compared with: same size, format, filter and border
    // (NPP's Sobel row is gray: klab's RGB Sobel rows have no pair).
    const Row* npp_for(const BenchName& n) const;

    std::vector<Row> all;
    std::vector<const BenchRun*> failed;
    int unnamed = 0;
};

// Sorts by (size, then `second`), keeping the fastest-first order within equal keys.
void sort_by_size(std::vector<Row>& rows, const std::function<std::string(const Row&)>& second = {});

// ---------------------------------------------------------------------------------------------
// Markdown tables.

struct Table {
    std::vector<std::string> header;
    std::string align;  // 'l' or 'r' per column
    std::vector<std::vector<std::string>> rows;
};

std::string cell(const std::string& text);  // "—" for "", '|' escaped
std::string render(const Table& t);          // the table and a blank line

// "32x8 tuned (…)": the launch shape (block_x, block_y counters) and the label, which names the
// shape's source (or the NPP call); the shape is not repeated when the label starts with it.
std::string launch_text(const BenchRun& run);

// The columns every table shares, for one row, in kFigureHeader's order.
struct Figures {
    std::string us, copy_multiple, copy_pct, roofline_multiple, over_npp, over_cpu, launch;
    std::vector<std::string> cells() const { return {us, copy_multiple, copy_pct, roofline_multiple, over_npp, over_cpu, launch}; }
};
Figures figures(const Rows& rows, const Row& r);

// A table of `list` with leading columns from `lead`, then the shared figures.
std::string figure_table(const Rows& rows, const std::vector<Row>& list, const std::vector<std::string>& lead_header,
                         const std::function<std::vector<std::string>(const Row&)>& lead);
// A line when some klab rows of `list` have no NPP row to be compared with.
std::string npp_note(const Rows& rows, const std::vector<Row>& list, const BenchFile& file);
// Seed 000's form: one line per group, one column per klab variant, each cell the speedup over the
// CPU reference. Empty when no variant row has that counter.
std::string cpu_pivot(const std::vector<Row>& list, const std::string& group_header, const std::vector<std::string>& groups,
                      const std::function<std::string(const Row&)>& group_of);
// The Markdown image of `file` when it was drawn; "" otherwise.
std::string plot_link(const PlotOutcome& plots, const std::string& file, const std::string& alt);
std::string skipped(const std::string& what);  // "_Skipped: this file has no rows for <what>._"

// ---------------------------------------------------------------------------------------------
// The studies' row selections (shared by the tables and the plots).

bool is_aos_replicate(const BenchName& n);
// gauss3 on rgb.aos, replicate border, and the copy rows, at 480p … 8K, by size.
std::vector<Row> resolution_rows(const Rows& rows);
// gauss3 … gauss9 on rgb.aos, replicate border, at `size`, by mask.
std::vector<Row> mask_rows(const Rows& rows, const std::string& size);
// `filter` on rgb.aos, replicate border, at `size`, fastest first.
std::vector<Row> problem_rows(const Rows& rows, const std::string& size, const std::string& filter);

// The file's context value, or "not recorded".
std::string context_or_none(const BenchFile& file, const std::string& key);
// The GPU's name as the report's title says it ("no GPU" for a CPU-only file).
std::string gpu_title(const BenchFile& file);

}  // namespace klab::bench::report
