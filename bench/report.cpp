// klab report (bench/report.hpp). Rows come from bench_json.hpp (names already split); each study
// selects its rows by their parts, so a table holds whatever rows the file has and is skipped with
// a one-line note when it has none.
#include "bench/report.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spawn.h>
#include <sys/wait.h>

#include "harness/error.hpp"
#include "harness/io/image_io.hpp"
#include "harness/synth.hpp"

extern char** environ;

namespace klab::bench {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kNone = "—";
const std::vector<std::string> kSizes = {"480p", "720p", "HD", "4K", "8K"};
const std::vector<int> kMasks = {3, 5, 7, 9};
const std::string kPlotResolution = "time_vs_resolution.png";
const std::string kPlotMask = "time_vs_mask.png";
const std::string kPlotBandwidth = "bandwidth_8K.png";
constexpr int kExitNoMatplotlib = 3;  // scripts/plot_bench.py's exit status when matplotlib is missing

bool starts_with(const std::string& text, std::string_view prefix) { return text.rfind(prefix, 0) == 0; }
bool is_npp(const std::string& row) { return starts_with(row, "npp."); }
bool is_cpu(const std::string& row) { return starts_with(row, "cpu."); }
bool is_copy(const std::string& row) { return row == "baseline.copy"; }
bool is_end_to_end(const std::string& row) { return starts_with(row, "e2e."); }
// A klab implementation on device-resident data: neither NPP, nor a baseline, nor the CPU
// reference, nor an end-to-end (host to host) row.
bool is_variant(const std::string& row) {
    return !is_npp(row) && !is_cpu(row) && !starts_with(row, "baseline.") && !is_end_to_end(row);
}

std::string role_of(const std::string& row) {
    if (is_npp(row)) return "npp";
    if (is_cpu(row)) return "cpu";
    if (is_copy(row)) return "copy";
    if (is_end_to_end(row)) return "end_to_end";
    return is_variant(row) ? "variant" : "baseline";
}


std::string gauss(int k) { return fmt::format("gauss{}", k); }
std::string mask_text(int k) { return fmt::format("{0}×{0}", k); }
int mask_of(const std::string& filter) {  // k of "gauss<k>" among the study's masks; 0 otherwise
    for (int k : kMasks)
        if (filter == gauss(k)) return k;
    return 0;
}

// Megapixels of a size part ("8K", "4096x4096"); 0 for a size klab does not know.
double megapixels(const std::string& size) {
    try {
        const synth::Resolution r = synth::parse_resolution(size);
        return static_cast<double>(r.width) * r.height / 1e6;
    } catch (const Error&) {
        return 0.0;
    }
}

std::optional<double> counter(const BenchRun& run, const std::string& key) {
    const auto it = run.counters.find(key);
    if (it == run.counters.end()) return std::nullopt;
    return it->second;
}

// ---------------------------------------------------------------------------------------------
// Number formats: three significant digits or more for times, two decimals for ratios.

int decimals(double x) { return x >= 100 ? 0 : x >= 10 ? 1 : 2; }
std::string us_text(double us) { return fmt::format("{:.{}f}", us, decimals(us)); }
std::string multiple_text(double x) { return fmt::format("{:.2f}×", x); }
std::string pct_text(double pct) { return fmt::format("{:.1f}%", pct); }
std::string speedup_text(double x) { return fmt::format("{:.{}f}×", x, decimals(x)); }

// ---------------------------------------------------------------------------------------------
// The rows that ran.

struct Row {
    const BenchRun* run;
    const BenchName* name;
    double us;  // median over the repetitions
};

class Rows {
public:
    explicit Rows(const BenchFile& file) {
        for (const BenchRun& r : file.runs) {
            if (!r.parts) {
                ++unnamed;
            } else if (!r.error.empty() || r.samples_us.empty()) {
                failed.push_back(&r);
            } else {
                all.push_back({&r, &*r.parts, r.median_us()});
            }
        }
    }

    // Rows without a block part that `keep` accepts, fastest first.
    std::vector<Row> plain(const std::function<bool(const BenchName&)>& keep) const {
        std::vector<Row> out;
        for (const Row& r : all)
            if (r.name->block.empty() && keep(*r.name)) out.push_back(r);
        std::stable_sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.us < b.us; });
        return out;
    }

    const Row* find(const std::string& row, const BenchName& problem) const {
        for (const Row& r : all) {
            const BenchName& n = *r.name;
            if (n.row == row && n.block.empty() && n.problem() == problem.problem()) return &r;
        }
        return nullptr;
    }

    // The NPP row a klab variant's row is compared with: same size, format, filter and border
    // (NPP's Sobel row is gray: klab's RGB Sobel rows have no pair).
    const Row* npp_for(const BenchName& n) const {
        const std::string family = npp_family(n.filter);
        if (!is_variant(n.row) || family.empty()) return nullptr;
        for (const Row& r : all) {
            const BenchName& m = *r.name;
            if (m.row == family && m.block.empty() && m.size == n.size && m.filter == n.filter &&
                m.border == n.border && m.format == n.format) {
                return &r;
            }
        }
        return nullptr;
    }

    std::vector<Row> all;
    std::vector<const BenchRun*> failed;
    int unnamed = 0;
};

int size_rank(const std::string& size) {
    const auto it = std::find(kSizes.begin(), kSizes.end(), size);
    return it == kSizes.end() ? static_cast<int>(kSizes.size()) : static_cast<int>(it - kSizes.begin());
}

// Sorts by (size, then `second`), keeping the fastest-first order within equal keys.
void sort_by_size(std::vector<Row>& rows, const std::function<std::string(const Row&)>& second = {}) {
    std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
        const double ma = megapixels(a.name->size), mb = megapixels(b.name->size);
        if (size_rank(a.name->size) != size_rank(b.name->size)) return size_rank(a.name->size) < size_rank(b.name->size);
        if (ma != mb) return ma < mb;
        return second ? second(a) < second(b) : false;
    });
}

// ---------------------------------------------------------------------------------------------
// Markdown tables.

struct Table {
    std::vector<std::string> header;
    std::string align;  // 'l' or 'r' per column
    std::vector<std::vector<std::string>> rows;
};

std::string cell(const std::string& text) {
    if (text.empty()) return kNone;
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
}

std::string render(const Table& t) {
    std::string out = "|";
    for (const std::string& h : t.header) out += " " + cell(h) + " |";
    out += "\n|";
    for (char a : t.align) out += a == 'r' ? "---:|" : "---|";
    out += "\n";
    for (const auto& row : t.rows) {
        out += "|";
        for (const std::string& c : row) out += " " + cell(c) + " |";
        out += "\n";
    }
    return out + "\n";
}

// "32x8 tuned (…)": the launch shape (block_x, block_y counters) and the label, which names the
// shape's source (or the NPP call); the shape is not repeated when the label starts with it.
std::string launch_text(const BenchRun& run) {
    const auto x = counter(run, "block_x"), y = counter(run, "block_y");
    const std::string shape = x && y ? fmt::format("{}x{}", *x, *y) : std::string();
    if (shape.empty() || starts_with(run.label, shape)) return run.label;
    return run.label.empty() ? shape : shape + " " + run.label;
}

const std::vector<std::string> kFigureHeader = {"median µs", "× copy floor", "% copy floor", "× roofline", "speedup over NPP",
                                                "speedup over CPU", "block (source)"};
const std::string kFigureAlign = "rrrrrrl";

// The columns every table shares, for one row, in kFigureHeader's order.
struct Figures {
    std::string us, copy_multiple, copy_pct, roofline_multiple, over_npp, over_cpu, launch;
    std::vector<std::string> cells() const { return {us, copy_multiple, copy_pct, roofline_multiple, over_npp, over_cpu, launch}; }
};

// median / floor as "2.50×", or "—" without the counter.
std::string multiple_of(const Row& r, const std::string& floor_counter) {
    const auto floor = counter(*r.run, floor_counter);
    return floor && *floor > 0 ? multiple_text(r.us / *floor) : kNone;
}

Figures figures(const Rows& rows, const Row& r) {
    const auto pct = counter(*r.run, "pct_copy_floor");
    const auto cpu = counter(*r.run, "speedup_vs_cpu");
    const Row* npp = rows.npp_for(*r.name);
    return {us_text(r.us),
            multiple_of(r, "copy_floor_us"),
            pct ? pct_text(*pct) : kNone,
            multiple_of(r, "roofline_us"),
            npp ? speedup_text(npp->us / r.us) : kNone,
            cpu ? speedup_text(*cpu) : kNone,
            launch_text(*r.run)};
}

// A table of `list` with leading columns from `lead`, then the shared figures.
std::string figure_table(const Rows& rows, const std::vector<Row>& list, const std::vector<std::string>& lead_header,
                         const std::function<std::vector<std::string>(const Row&)>& lead) {
    Table t;
    t.header = lead_header;
    t.header.insert(t.header.end(), kFigureHeader.begin(), kFigureHeader.end());
    t.align = std::string(lead_header.size(), 'l') + kFigureAlign;
    for (const Row& r : list) {
        std::vector<std::string> cells = lead(r);
        const std::vector<std::string> f = figures(rows, r).cells();
        cells.insert(cells.end(), f.begin(), f.end());
        t.rows.push_back(std::move(cells));
    }
    return render(t);
}

// A line when some klab rows of `list` have no NPP row to be compared with.
std::string npp_note(const Rows& rows, const std::vector<Row>& list, const BenchFile& file) {
    int comparable = 0, paired = 0;
    for (const Row& r : list) {
        if (!is_variant(r.name->row) || npp_family(r.name->filter).empty()) continue;
        ++comparable;
        if (rows.npp_for(*r.name) != nullptr) ++paired;
    }
    if (comparable == paired) return "";
    if (paired == 0) {
        const std::string npp = file.context_value("npp");
        return fmt::format("No NPP rows for these problems (NPP in this build: {}): speedup over NPP is {}.\n\n",
                           npp.empty() ? "not recorded" : npp, kNone);
    }
    return fmt::format("Speedup over NPP is {} where this file has no NPP row for the problem.\n\n", kNone);
}

// Seed 000's form: one line per group, one column per klab variant, each cell the speedup over the
// CPU reference. Empty when no variant row has that counter.
std::string cpu_pivot(const std::vector<Row>& list, const std::string& group_header, const std::vector<std::string>& groups,
                      const std::function<std::string(const Row&)>& group_of) {
    std::set<std::string> variants;
    for (const Row& r : list)
        if (is_variant(r.name->row) && counter(*r.run, "speedup_vs_cpu")) variants.insert(r.name->row);
    if (variants.empty()) return "";
    Table t;
    t.header = {group_header};
    t.header.insert(t.header.end(), variants.begin(), variants.end());
    t.align = "l" + std::string(variants.size(), 'r');
    for (const std::string& g : groups) {
        std::vector<std::string> cells = {g};
        for (const std::string& v : variants) {
            std::string text = kNone;
            for (const Row& r : list) {
                const auto speedup = counter(*r.run, "speedup_vs_cpu");
                if (r.name->row == v && group_of(r) == g && speedup) text = speedup_text(*speedup);
            }
            cells.push_back(text);
        }
        t.rows.push_back(std::move(cells));
    }
    return "Speedup over the CPU reference (seed 000's table):\n\n" + render(t);
}

std::string plot_link(const PlotOutcome& plots, const std::string& file, const std::string& alt) {
    if (std::find(plots.drawn.begin(), plots.drawn.end(), file) == plots.drawn.end()) return "";
    return fmt::format("![{}]({})\n\n", alt, file);
}

std::string skipped(const std::string& what) { return "_Skipped: this file has no rows for " + what + "._\n\n"; }

// ---------------------------------------------------------------------------------------------
// The studies' row selections (shared by the tables and the plots).

bool is_aos_replicate(const BenchName& n) { return n.format == "rgb.aos" && n.border == "replicate"; }
bool in_sizes(const std::string& size) { return std::find(kSizes.begin(), kSizes.end(), size) != kSizes.end(); }

std::vector<Row> resolution_rows(const Rows& rows) {
    std::vector<Row> list = rows.plain([](const BenchName& n) {
        if (!in_sizes(n.size)) return false;
        return (is_aos_replicate(n) && n.filter == "gauss3") || (is_copy(n.row) && n.format == "rgb.aos" && n.filter == "copy");
    });
    sort_by_size(list);
    return list;
}

std::vector<Row> mask_rows(const Rows& rows, const std::string& size) {
    std::vector<Row> list = rows.plain([&](const BenchName& n) { return n.size == size && is_aos_replicate(n) && mask_of(n.filter) > 0; });
    std::stable_sort(list.begin(), list.end(), [](const Row& a, const Row& b) { return mask_of(a.name->filter) < mask_of(b.name->filter); });
    return list;
}

std::vector<Row> problem_rows(const Rows& rows, const std::string& size, const std::string& filter) {
    return rows.plain([&](const BenchName& n) { return n.size == size && n.filter == filter && is_aos_replicate(n); });
}

// ---------------------------------------------------------------------------------------------
// report.md's sections.

std::string context_or_none(const BenchFile& file, const std::string& key) {
    const std::string v = file.context_value(key);
    return v.empty() ? "not recorded" : v;
}

std::string gpu_title(const BenchFile& file) {
    std::string name = file.context_value("gpu_name");
    if (name.empty()) name = file.gpu_key();
    return name.empty() || name == "none" ? "no GPU" : name;
}

std::string header_section(const BenchFile& file, const Rows& rows, const PlotOutcome& plots) {
    std::size_t fewest = 0, most = 0;
    for (const Row& r : rows.all) {
        const std::size_t n = r.run->samples_us.size();
        fewest = fewest == 0 ? n : std::min(fewest, n);
        most = std::max(most, n);
    }
    const std::string dirty = file.context_value("git_dirty");
    std::string out = fmt::format("# klab benchmark report: {}\n\n", gpu_title(file));
    out += fmt::format(
        "Every figure is the median over the repetitions of one benchmark in `{}`, and every ratio is "
        "computed from those medians in this same file; nothing was edited by hand. Written by `klab report`.\n\n",
        file.source);
    Table t{{"context", "value"}, "ll", {}};
    t.rows.push_back({"GPU", context_or_none(file, "klab_gpu_key")});
    t.rows.push_back({"CUDA", fmt::format("driver {}, runtime {}", context_or_none(file, "cuda_driver"),
                                          context_or_none(file, "cuda_runtime"))});
    t.rows.push_back({"NPP", context_or_none(file, "npp")});
    t.rows.push_back({"commit", context_or_none(file, "git_commit") +
                                    (dirty == "true" ? " (uncommitted changes)" : dirty == "false" ? " (clean)" : "")});
    t.rows.push_back({"date", context_or_none(file, "date")});
    t.rows.push_back({"host", context_or_none(file, "host_name")});
    t.rows.push_back({"study", context_or_none(file, "klab_study")});
    t.rows.push_back({"CPU reference", context_or_none(file, "cpu_reference")});
    t.rows.push_back({"repetitions", fewest == most ? fmt::format("{} per benchmark", most)
                                                    : fmt::format("{} to {} per benchmark", fewest, most)});
    t.rows.push_back({"benchmarks", fmt::format("{} ran, {} failed", rows.all.size(), rows.failed.size())});
    out += render(t);
    out += "Columns: median µs; × copy floor = median / `copy_floor_us` (a device-to-device copy of the same traffic, "
           "1.00× is copy speed); % copy floor = `pct_copy_floor` (100 × floor / time); × roofline = median / "
           "`roofline_us`, the larger of the copy floor and the FMA floor (the problem's least FMAs — 4 per output element "
           "for a box mask, width + height for another separable mask, width × height for any other — at the FFMA rate measured in the same run, "
           "`gpu_ffma_per_second`; bench/README.md); speedup over NPP = the NPP "
           "row's median / this row's median (same size, format, filter and border); speedup over CPU = "
           "`speedup_vs_cpu`; block (source) = the launch shape and the row's label.\n\n";
    if (!plots.not_drawn.empty()) {
        out += fmt::format("**Plots not drawn:** {}. To draw them, run `python3 scripts/plot_bench.py <this folder>/plot-data.json "
                           "<this folder>` from klab's source tree, or `klab report` again where matplotlib is installed.\n\n",
                           plots.not_drawn);
    }
    return out;
}

std::string headline_section(const BenchFile& file, const Rows& rows, const PlotOutcome& plots) {
    std::string out = "## Headline: 8K RGB AoS, replicate border: Gaussian 3×3 and 9×9, sharpen 3×3, random 9×9\n\n";
    Table t{{"problem", "fastest klab variant", "median µs", "× copy floor", "% copy floor", "× roofline", "NPP µs",
             "speedup over NPP", "speedup over CPU", "block (source)"},
            "llrrrrrrrl",
            {}};
    std::string notes;
    std::vector<Row> shown;
    for (const std::string& filter : {gauss(3), gauss(9), std::string("sharpen"), std::string("random9")}) {
        const std::vector<Row> list = problem_rows(rows, "8K", filter);
        const auto best = std::find_if(list.begin(), list.end(), [](const Row& r) { return is_variant(r.name->row); });
        const std::string problem = "8K/rgb.aos/" + filter + "/replicate";
        if (best == list.end()) {
            std::string cpu;
            for (const Row& r : list)
                if (is_cpu(r.name->row)) cpu += fmt::format("{}{} {} µs", cpu.empty() ? "" : ", ", r.name->row, us_text(r.us));
            if (filter == gauss(3) || filter == gauss(9) || !cpu.empty()) {
                notes += fmt::format("{}: no klab variant row in this file (GPU: {}){}.\n\n", problem,
                                     context_or_none(file, "klab_gpu_key"), cpu.empty() ? "" : "; the CPU reference took " + cpu);
            }
            continue;
        }
        const long variants = std::count_if(list.begin(), list.end(), [](const Row& r) { return is_variant(r.name->row); });
        const Row* npp = rows.npp_for(*best->name);
        const Figures f = figures(rows, *best);
        t.rows.push_back({problem, fmt::format("{} (fastest of {})", best->name->row, variants), f.us, f.copy_multiple, f.copy_pct,
                          f.roofline_multiple, npp ? us_text(npp->us) : kNone, f.over_npp, f.over_cpu, f.launch});
        shown.push_back(*best);
    }
    if (!t.rows.empty()) out += render(t) + npp_note(rows, shown, file);
    out += notes;
    out += plot_link(plots, kPlotBandwidth, "achieved bandwidth at 8K against the copy floor");
    return out;
}

std::string resolution_section(const BenchFile& file, const Rows& rows, const PlotOutcome& plots) {
    std::string out = "## 1. Time against resolution: Gaussian 3×3, RGB AoS, replicate border\n\n";
    const std::vector<Row> list = resolution_rows(rows);
    if (list.empty()) return out + skipped("gauss3 on rgb.aos with replicate border at 480p … 8K");
    std::vector<std::string> sizes;
    for (const Row& r : list)
        if (std::find(sizes.begin(), sizes.end(), r.name->size) == sizes.end()) sizes.push_back(r.name->size);
    out += figure_table(rows, list, {"size", "row"}, [](const Row& r) { return std::vector<std::string>{r.name->size, r.name->row}; });
    out += npp_note(rows, list, file);
    out += cpu_pivot(list, "size", sizes, [](const Row& r) { return r.name->size; });
    return out + plot_link(plots, kPlotResolution, "time against resolution");
}

std::string mask_section(const BenchFile& file, const Rows& rows, const PlotOutcome& plots) {
    std::string out = "## 2. Time against mask size: Gaussian 3×3 … 9×9 at HD and 8K, RGB AoS, replicate border\n\n";
    std::vector<Row> list;
    std::vector<std::string> groups;
    const auto group_of = [](const Row& r) { return r.name->size + " " + mask_text(mask_of(r.name->filter)); };
    for (const std::string size : {"HD", "8K"}) {
        for (const Row& r : mask_rows(rows, size)) {
            list.push_back(r);
            if (std::find(groups.begin(), groups.end(), group_of(r)) == groups.end()) groups.push_back(group_of(r));
        }
    }
    if (list.empty()) return out + skipped("gauss3/5/7/9 on rgb.aos with replicate border at HD or 8K");
    out += figure_table(rows, list, {"size", "mask", "row"}, [](const Row& r) {
        return std::vector<std::string>{r.name->size, mask_text(mask_of(r.name->filter)), r.name->row};
    });
    out += npp_note(rows, list, file);
    out += cpu_pivot(list, "problem", groups, group_of);
    return out + plot_link(plots, kPlotMask, "time against mask size");
}

// Issue 14's general masks: every row of sharpen and random9 at HD and 8K (both layouts), fastest
// first per problem, with NPP's arbitrary-mask filter beside them.
std::string general_mask_section(const BenchFile& file, const Rows& rows) {
    std::string out = "## 2b. General masks (not separable): sharpen 3×3 and random 9×9 at HD and 8K, replicate border\n\n";
    std::vector<Row> list;
    for (const std::string size : {"HD", "8K"}) {
        for (const std::string format : {"rgb.aos", "rgb.soa"}) {
            for (const std::string filter : {"sharpen", "random9"}) {
                const std::vector<Row> part = rows.plain([&](const BenchName& n) {
                    return n.size == size && n.format == format && n.filter == filter && n.border == "replicate";
                });
                list.insert(list.end(), part.begin(), part.end());
            }
        }
    }
    if (list.empty()) return out + skipped("sharpen or random9 at HD or 8K");
    out += "× roofline: the FMA floor of a 9×9 mask that is not separable is 81 FMAs per output element, above the copy "
           "floor at 8K; for sharpen the copy floor is the roofline.\n\n";
    out += figure_table(rows, list, {"problem", "row"}, [](const Row& r) { return std::vector<std::string>{r.name->problem(), r.name->row}; });
    return out + npp_note(rows, list, file);
}

std::string memory_section(const Rows& rows) {
    std::string out = "## 3. Memory levels: global, constant and shared memory\n\n";
    const std::vector<std::pair<std::string, std::string>> levels = {{"conv.global", "global (image and mask)"},
                                                                     {"conv.constant", "constant (mask)"},
                                                                     {"conv.tiled_2batch", "shared (2-batch tile)"},
                                                                     {"conv.halo_tiled", "shared (halo threads)"}};
    Table t{{"problem", "row", "memory", "median µs", "× copy floor", "% copy floor", "speedup over conv.global",
             "speedup over NPP"},
            "lllrrrrr",
            {}};
    for (const auto& [size, k] : std::vector<std::pair<std::string, int>>{{"8K", 3}, {"8K", 9}, {"HD", 3}}) {
        const BenchName problem{"", size, "rgb.aos", gauss(k), "replicate", ""};
        const Row* global = rows.find("conv.global", problem);
        for (const auto& [row, memory] : levels) {
            const Row* r = rows.find(row, problem);
            if (r == nullptr) continue;
            const Figures f = figures(rows, *r);
            t.rows.push_back({problem.problem(), row, memory, f.us, f.copy_multiple, f.copy_pct,
                              global ? speedup_text(global->us / r->us) : kNone, f.over_npp});
        }
    }
    if (t.rows.empty()) return out + skipped("conv.global, conv.constant, conv.tiled_2batch or conv.halo_tiled at 8K or HD");
    return out + render(t);
}

std::string layout_section(const Rows& rows) {
    std::string out = "## 4. AoS against SoA: HD and 8K, Gaussian 3×3 and 9×9, replicate border\n\n";
    Table t{{"problem", "row", "AoS µs", "SoA µs", "SoA / AoS"}, "llrrr", {}};
    for (const std::string size : {"HD", "8K"}) {
        for (int k : {3, 9}) {
            const BenchName aos{"", size, "rgb.aos", gauss(k), "replicate", ""};
            BenchName soa = aos;
            soa.format = "rgb.soa";
            for (const Row& a : rows.plain([&](const BenchName& n) { return n.problem() == aos.problem(); })) {
                const Row* s = rows.find(a.name->row, soa);
                if (s == nullptr) continue;
                t.rows.push_back({size + "/" + gauss(k), a.name->row, us_text(a.us), us_text(s->us), multiple_text(s->us / a.us)});
            }
        }
    }
    if (t.rows.empty()) return out + skipped("one variant in both rgb.aos and rgb.soa at HD or 8K with gauss3 or gauss9");
    return out + "SoA / AoS below 1.00× means SoA is faster.\n\n" + render(t);
}

struct Shape {
    int x = 0;
    int y = 0;
};

// The forced shape: the row's block_x/block_y counters, else its block part ("32x8").
std::optional<Shape> shape_of(const Row& r) {
    const auto x = counter(*r.run, "block_x"), y = counter(*r.run, "block_y");
    if (x && y) return Shape{static_cast<int>(*x), static_cast<int>(*y)};
    Shape s;
    if (std::sscanf(r.name->block.c_str(), "%dx%d", &s.x, &s.y) == 2) return s;
    return std::nullopt;
}

std::string orientation(const Shape& s) { return s.x > s.y ? "wide" : s.x < s.y ? "tall" : "square"; }

std::string block_section(const Rows& rows) {
    std::string out = "## 5. Block shapes\n\n";
    std::vector<std::string> groups;  // "<row>/<problem>", in the file's order
    for (const Row& r : rows.all) {
        const std::string key = r.name->row + "/" + r.name->problem();
        if (!r.name->block.empty() && std::find(groups.begin(), groups.end(), key) == groups.end()) groups.push_back(key);
    }
    if (groups.empty()) return out + skipped("forced block shapes (names with /block:XxY)");
    for (const std::string& key : groups) {
        std::vector<Row> list;
        for (const Row& r : rows.all)
            if (!r.name->block.empty() && r.name->row + "/" + r.name->problem() == key) list.push_back(r);
        std::stable_sort(list.begin(), list.end(), [](const Row& a, const Row& b) { return a.us < b.us; });
        const BenchName& first = *list.front().name;
        out += fmt::format("### {} on {}\n\n", first.row, first.problem());
        const Row* plain = rows.find(first.row, first);
        std::optional<Shape> chosen;
        if (plain != nullptr) {
            chosen = shape_of(*plain);
            out += fmt::format("Without a forced shape this variant ran {} µs with {}.\n\n", us_text(plain->us), cell(launch_text(*plain->run)));
        } else {
            out += "No row of this variant and problem without a forced shape: its tuned or default shape is not in this file.\n\n";
        }
        Table t{{"block", "threads", "orientation", "median µs", "occupancy", "relative to best", "note"}, "lrlrrrl", {}};
        // Per thread count, the best wide and the best tall shape (seed 001's table 2).
        std::map<int, std::pair<const Row*, const Row*>> by_threads;
        for (const Row& r : list) {
            const std::optional<Shape> s = shape_of(r);
            const auto occupancy = counter(*r.run, "occupancy_pct");
            std::string note = &r == &list.front() ? "fastest" : "";
            if (s && chosen && s->x == chosen->x && s->y == chosen->y) note += std::string(note.empty() ? "" : "; ") + "the unforced row's shape";
            t.rows.push_back({r.name->block, s ? fmt::format("{}", s->x * s->y) : kNone, s ? orientation(*s) : kNone, us_text(r.us),
                              occupancy ? pct_text(*occupancy) : kNone, multiple_text(r.us / list.front().us), note});
            if (!s) continue;
            auto& [wide, tall] = by_threads[s->x * s->y];
            if (s->x > s->y && wide == nullptr) wide = &r;  // `list` is fastest first
            if (s->x < s->y && tall == nullptr) tall = &r;
        }
        out += render(t);
        Table w{{"threads", "best wide", "µs", "best tall", "µs", "tall / wide"}, "rlrlrr", {}};
        for (const auto& [threads, pair] : by_threads) {
            const auto& [wide, tall] = pair;
            if (wide == nullptr || tall == nullptr) continue;
            w.rows.push_back({fmt::format("{}", threads), wide->name->block, us_text(wide->us), tall->name->block, us_text(tall->us),
                              multiple_text(tall->us / wide->us)});
        }
        if (!w.rows.empty()) out += "Wide against tall at equal thread counts:\n\n" + render(w);
    }
    return out;
}

std::string others_section(const BenchFile& file, const Rows& rows) {
    std::string out = "## 6. The other operations at 8K\n\n";
    const auto lead = [](const Row& r) { return std::vector<std::string>{r.name->problem(), r.name->row}; };

    out += "### Separable Gaussian 9×9\n\n";
    const std::vector<std::string> separable = {"conv.separable_2pass", "conv.separable_fused", "npp.separable32f", "npp.filter32f",
                                                "npp.gauss"};
    std::vector<Row> list = rows.plain([&](const BenchName& n) {
        return n.size == "8K" && n.filter == "gauss9" && std::find(separable.begin(), separable.end(), n.row) != separable.end();
    });
    if (list.empty()) {
        out += skipped("the separable variants or NPP's separable, 32f and Gaussian calls with gauss9 at 8K");
    } else {
        Table t{{"problem", "row", "median µs", "× copy floor", "% copy floor", "speedup over npp.separable32f",
                 "speedup over npp.filter32f", "speedup over npp.gauss", "speedup over CPU"},
                "llrrrrrrr",
                {}};
        for (const Row& r : list) {
            const Figures f = figures(rows, r);
            std::vector<std::string> cells = {r.name->problem(), r.name->row, f.us, f.copy_multiple, f.copy_pct};
            for (const std::string npp : {"npp.separable32f", "npp.filter32f", "npp.gauss"}) {
                const Row* other = rows.find(npp, *r.name);
                cells.push_back(other && other->run != r.run ? speedup_text(other->us / r.us) : kNone);
            }
            cells.push_back(f.over_cpu);
            t.rows.push_back(std::move(cells));
        }
        out += render(t);
    }

    // Each table: the rows of its filters at its sizes, by size, then fastest first; the block
    // column shows every row's launch shape and where it came from (tuned, or why the default).
    struct Part {
        std::string title;
        std::vector<std::string> filters, sizes;
        std::string missing;
    };
    const std::vector<Part> parts = {
        {"Box filters 3×3, 9×9 and 31×31", {"box3", "box9", "box31"}, {"8K"}, "box3, box9 or box31 at 8K"},
        {"Sobel", {"sobel"}, {"8K"}, "sobel at 8K"},
        {"Integral image", {"integral"}, {"8K", "4K", "4096x4096"}, "integral at 8K, 4K or 4096x4096"}};
    const auto in = [](const std::vector<std::string>& values, const std::string& value) {
        return std::find(values.begin(), values.end(), value) != values.end();
    };
    for (const Part& p : parts) {
        out += "### " + p.title + "\n\n";
        list = rows.plain([&](const BenchName& n) { return in(p.filters, n.filter) && in(p.sizes, n.size); });
        sort_by_size(list, [&](const Row& r) {  // the filters in the part's order
            return fmt::format("{:02}{}", std::find(p.filters.begin(), p.filters.end(), r.name->filter) - p.filters.begin(),
                               r.name->format);
        });
        if (list.empty()) {
            out += skipped(p.missing);
            continue;
        }
        out += figure_table(rows, list, {"problem", "row"}, lead) + npp_note(rows, list, file);
    }
    return out;
}

// Host image to host image (issue 7): each row against the link's floors of its size, in the same
// file: the upload alone, and both directions at once (what the link carries both ways).
std::string end_to_end_section(const Rows& rows) {
    std::string out = "## 7. End to end: host to device to host\n\n";
    std::vector<Row> list = rows.plain([](const BenchName& n) { return is_end_to_end(n.row); });
    sort_by_size(list);
    if (list.empty()) return out + skipped("end-to-end paths (e2e.*)");
    out += "Host wall time of the whole path (upload, filter, download) per image. × upload = the row's median over the "
           "median of `e2e.upload` of the same size (the image's bytes host to device from pinned memory, nothing else); "
           "× both ways = over `e2e.bidirectional` (the image up and another down at once, one whole-image copy each way on "
           "two streams: what the link carries both ways; not a strict bound, since the pipeline's strips have come out "
           "ahead of it on some machines).\n\n";
    const auto floor_of = [&](const Row& r, const char* floor) -> const Row* {
        for (const Row& f : rows.all) {
            if (f.name->row == floor && f.name->size == r.name->size) return &f;
        }
        return nullptr;
    };
    Table t{{"size", "row", "median µs", "× upload", "× both ways", "GB/s (up + down)", "how"}, "llrrrrl", {}};
    for (const Row& r : list) {
        const Row* upload = floor_of(r, "e2e.upload");
        const Row* both = floor_of(r, "e2e.bidirectional");
        const std::optional<double> bandwidth = counter(*r.run, "bytes_per_second");
        t.rows.push_back({r.name->size, r.name->row, us_text(r.us), upload ? multiple_text(r.us / upload->us) : kNone,
                          both ? multiple_text(r.us / both->us) : kNone, bandwidth ? fmt::format("{:.1f}", *bandwidth / 1e9) : kNone,
                          r.run->label});
    }
    return out + render(t);
}

std::string failures_section(const Rows& rows) {
    std::string out;
    if (!rows.failed.empty()) {
        out += "## Benchmarks that failed\n\n";
        Table t{{"benchmark", "error"}, "ll", {}};
        for (const BenchRun* r : rows.failed) t.rows.push_back({r->name, r->error.empty() ? "no time recorded" : r->error});
        out += render(t);
    }
    if (rows.unnamed > 0) out += fmt::format("{} benchmark(s) with names klab-bench does not write were left out.\n\n", rows.unnamed);
    return out;
}

// ---------------------------------------------------------------------------------------------
// plot-data.json: series already selected, so that the script parses no names.

// The rows of `list` as one series per row name: variants by name, then NPP, copy and CPU.
json series_of(const std::vector<Row>& list, const std::function<double(const Row&)>& x_of) {
    std::vector<std::string> names;
    for (const Row& r : list)
        if (std::find(names.begin(), names.end(), r.name->row) == names.end()) names.push_back(r.name->row);
    const auto order = [](const std::string& name) {
        const std::string role = role_of(name);
        return std::make_pair(role == "variant" ? 0 : role == "npp" ? 1 : role == "copy" ? 2 : 3, name);
    };
    std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) { return order(a) < order(b); });
    json out = json::array();
    for (const std::string& name : names) {
        std::vector<std::pair<double, double>> points;
        for (const Row& r : list)
            if (r.name->row == name) points.emplace_back(x_of(r), r.us);
        std::sort(points.begin(), points.end());
        json p = json::array();
        for (const auto& [x, us] : points) p.push_back({{"x", x}, {"us", us}});
        out.push_back({{"name", name}, {"role", role_of(name)}, {"points", p}});
    }
    return out;
}

json plot_data(const BenchFile& file, const Rows& rows) {
    json plots = json::array();

    const std::vector<Row> by_size = resolution_rows(rows);
    if (!by_size.empty()) {
        json ticks = json::array();
        std::set<std::string> seen;
        for (const Row& r : by_size)
            if (seen.insert(r.name->size).second) ticks.push_back({{"x", megapixels(r.name->size)}, {"label", r.name->size}});
        plots.push_back({{"kind", "time_vs_resolution"},
                         {"file", kPlotResolution},
                         {"title", "Gaussian 3×3, RGB AoS, replicate border"},
                         {"x_ticks", ticks},
                         {"series", series_of(by_size, [](const Row& r) { return megapixels(r.name->size); })}});
    }

    json panels = json::array();
    for (const std::string size : {"8K", "HD"}) {
        const std::vector<Row> list = mask_rows(rows, size);
        if (!list.empty())
            panels.push_back({{"title", size}, {"series", series_of(list, [](const Row& r) { return mask_of(r.name->filter); })}});
    }
    if (!panels.empty()) {
        plots.push_back({{"kind", "time_vs_mask"}, {"file", kPlotMask}, {"title", "Gaussian k×k, RGB AoS, replicate border"},
                         {"x_ticks", json::array({{{"x", 3}, {"label", "3×3"}}, {{"x", 5}, {"label", "5×5"}},
                                                  {{"x", 7}, {"label", "7×7"}}, {{"x", 9}, {"label", "9×9"}}})},
                         {"panels", panels}});
    }

    panels = json::array();
    for (int k : {3, 9}) {
        json bars = json::array();
        std::optional<double> floor_gbps;
        std::vector<Row> list = problem_rows(rows, "8K", gauss(k));
        std::vector<std::pair<double, const Row*>> by_bandwidth;
        for (const Row& r : list) {
            const auto bps = counter(*r.run, "bytes_per_second");
            if (is_cpu(r.name->row) || !bps) continue;
            by_bandwidth.emplace_back(*bps / 1e9, &r);
            // The copy floor moves the same traffic in copy_floor_us.
            const auto read = counter(*r.run, "bytes_read"), written = counter(*r.run, "bytes_written"),
                       floor = counter(*r.run, "copy_floor_us");
            if (!floor_gbps && read && written && floor && *floor > 0) floor_gbps = (*read + *written) / (*floor * 1e3);
        }
        std::stable_sort(by_bandwidth.begin(), by_bandwidth.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        for (const auto& [gbps, r] : by_bandwidth) bars.push_back({{"name", r->name->row}, {"role", role_of(r->name->row)}, {"gb_per_s", gbps}});
        if (!bars.empty()) {
            panels.push_back({{"title", "Gaussian " + mask_text(k)},
                              {"bars", bars},
                              {"copy_floor_gb_per_s", floor_gbps ? json(*floor_gbps) : json(nullptr)}});
        }
    }
    if (!panels.empty()) {
        plots.push_back({{"kind", "bandwidth"}, {"file", kPlotBandwidth}, {"title", "achieved bandwidth at 8K, RGB AoS, replicate border"},
                         {"panels", panels}});
    }

    return {{"format", "klab plot-data 1"},
            {"gpu", gpu_title(file)},
            {"source", file.source},
            {"commit", file.context_value("git_commit")},
            {"plots", plots}};
}

// ---------------------------------------------------------------------------------------------
// Running the plot script.

// Runs argv[0] (looked up on PATH) and waits; the exit status, or -1 with `spawn_error` set when
// it could not be started, or -1 when it died from a signal.
int run_program(const std::vector<std::string>& args, int& spawn_error) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::fflush(stdout);  // the script's output comes after ours
    std::fflush(stderr);
    pid_t pid = 0;
    spawn_error = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
    if (spawn_error != 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

PlotOutcome draw_plots(const ReportRequest& request, const json& data, const fs::path& data_path, const fs::path& out_dir) {
    PlotOutcome outcome;
    std::vector<std::string> files;
    for (const json& p : data["plots"]) files.push_back(p["file"].get<std::string>());
    if (files.empty()) return outcome;  // nothing to draw: no section links a plot
    if (!request.draw_plots) {
        outcome.not_drawn = "klab report ran with --no-plots";
        return outcome;
    }
    if (!fs::is_regular_file(request.plot_script)) {
        outcome.not_drawn = fmt::format("the plot script {} does not exist (--plot-script PATH names another)", request.plot_script.string());
        return outcome;
    }
    // A PNG left by an earlier report would be linked as if this run had drawn it.
    for (const std::string& f : files) {
        std::error_code ignored;
        fs::remove(out_dir / f, ignored);
    }
    int spawn_error = 0;
    const int status = run_program({request.python, request.plot_script.string(), data_path.string(), out_dir.string()}, spawn_error);
    for (const std::string& f : files)
        if (fs::is_regular_file(out_dir / f)) outcome.drawn.push_back(f);
    if (spawn_error != 0) {
        outcome.not_drawn = fmt::format("{} could not be started ({})", request.python,
                                        spawn_error == ENOENT ? "not found on PATH" : std::strerror(spawn_error));
    } else if (status == kExitNoMatplotlib) {
        outcome.not_drawn = fmt::format("matplotlib is not installed for {} (pip install matplotlib, or apt install python3-matplotlib)",
                                        request.python);
    } else if (status != 0) {
        outcome.not_drawn = fmt::format("the plot script {} failed ({})", request.plot_script.string(),
                                        status < 0 ? "killed by a signal" : fmt::format("exit status {}", status));
    } else if (outcome.drawn.size() != files.size()) {
        outcome.not_drawn = fmt::format("the plot script {} drew {} of {} plots", request.plot_script.string(), outcome.drawn.size(), files.size());
    }
    return outcome;
}

void write_text(const fs::path& path, const std::string& text) { io::write_file_atomically(path, std::vector<std::uint8_t>(text.begin(), text.end())); }

}  // namespace

std::string plot_data_json(const BenchFile& file) { return plot_data(file, Rows(file)).dump(2) + "\n"; }

std::string report_markdown(const BenchFile& file, const PlotOutcome& plots) {
    const Rows rows(file);
    return header_section(file, rows, plots) + headline_section(file, rows, plots) + resolution_section(file, rows, plots) +
           mask_section(file, rows, plots) + general_mask_section(file, rows) + memory_section(rows) + layout_section(rows) + block_section(rows) +
           others_section(file, rows) + end_to_end_section(rows) + failures_section(rows);
}

ReportResult write_report(const ReportRequest& request) {
    const BenchFile file = load_bench_file(request.bench_json);
    const Rows rows(file);
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
    const json data = plot_data(file, rows);
    write_text(result.plot_data, data.dump(2) + "\n");
    result.plots = draw_plots(request, data, result.plot_data, out_dir);
    result.draw_later = fmt::format("{} {} {} {}", request.python, request.plot_script.string(), result.plot_data.string(),
                                    out_dir.string());
    write_text(result.report, report_markdown(file, result.plots));
    return result;
}

}  // namespace klab::bench
