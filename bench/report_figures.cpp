// The report's shared pieces (bench/report_figures.hpp): rows, figures, tables, selections.
#include "bench/report_figures.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/synth.hpp"

namespace klab::bench::report {

namespace {

int size_rank(const std::string& size) {
    const auto it = std::find(kSizes.begin(), kSizes.end(), size);
    return it == kSizes.end() ? static_cast<int>(kSizes.size()) : static_cast<int>(it - kSizes.begin());
}

bool in_sizes(const std::string& size) { return std::find(kSizes.begin(), kSizes.end(), size) != kSizes.end(); }

int decimals(double x) { return x >= 100 ? 0 : x >= 10 ? 1 : 2; }

// median / floor as "2.50×", or "—" without the counter.
std::string multiple_of(const Row& r, const std::string& floor_counter) {
    const auto floor = counter(*r.run, floor_counter);
    return floor && *floor > 0 ? multiple_text(r.us / *floor) : kNone;
}

const std::vector<std::string> kFigureHeader = {"median µs", "× copy floor", "% copy floor", "× roofline", "speedup over NPP",
                                                "speedup over CPU", "block (source)"};
const std::string kFigureAlign = "rrrrrrl";

}  // namespace

bool starts_with(const std::string& text, std::string_view prefix) { return text.rfind(prefix, 0) == 0; }
bool is_npp(const std::string& row) { return starts_with(row, "npp."); }
bool is_cpu(const std::string& row) { return starts_with(row, "cpu."); }
bool is_copy(const std::string& row) { return row == "baseline.copy"; }
bool is_end_to_end(const std::string& row) { return starts_with(row, "e2e."); }
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

std::string us_text(double us) { return fmt::format("{:.{}f}", us, decimals(us)); }
std::string multiple_text(double x) { return fmt::format("{:.2f}×", x); }
std::string pct_text(double pct) { return fmt::format("{:.1f}%", pct); }
std::string speedup_text(double x) { return fmt::format("{:.{}f}×", x, decimals(x)); }

Rows::Rows(const BenchFile& file) {
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

std::vector<Row> Rows::plain(const std::function<bool(const BenchName&)>& keep) const {
    std::vector<Row> out;
    for (const Row& r : all)
        if (r.name->block.empty() && keep(*r.name)) out.push_back(r);
    std::stable_sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return a.us < b.us; });
    return out;
}

const Row* Rows::find(const std::string& row, const BenchName& problem) const {
    for (const Row& r : all) {
        const BenchName& n = *r.name;
        if (n.row == row && n.block.empty() && n.problem() == problem.problem()) return &r;
    }
    return nullptr;
}

const Row* Rows::npp_for(const BenchName& n) const {
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

void sort_by_size(std::vector<Row>& rows, const std::function<std::string(const Row&)>& second) {
    std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
        const double ma = megapixels(a.name->size), mb = megapixels(b.name->size);
        if (size_rank(a.name->size) != size_rank(b.name->size)) return size_rank(a.name->size) < size_rank(b.name->size);
        if (ma != mb) return ma < mb;
        return second ? second(a) < second(b) : false;
    });
}

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

std::string launch_text(const BenchRun& run) {
    const auto x = counter(run, "block_x"), y = counter(run, "block_y");
    const std::string shape = x && y ? fmt::format("{}x{}", *x, *y) : std::string();
    if (shape.empty() || starts_with(run.label, shape)) return run.label;
    return run.label.empty() ? shape : shape + " " + run.label;
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
// The studies' row selections.

bool is_aos_replicate(const BenchName& n) { return n.format == "rgb.aos" && n.border == "replicate"; }

std::vector<Row> resolution_rows(const Rows& rows) {
    std::vector<Row> list = rows.plain([](const BenchName& n) {
        if (!in_sizes(n.size)) return false;
        return (is_aos_replicate(n) && n.filter == "gauss3" && !is_end_to_end(n.row)) ||
               (is_copy(n.row) && n.format == "rgb.aos" && n.filter == "copy");
    });
    sort_by_size(list);
    return list;
}

std::vector<Row> mask_rows(const Rows& rows, const std::string& size) {
    // Kernel rows only: an end-to-end row of the same problem (section 7) times host to host.
    std::vector<Row> list = rows.plain(
        [&](const BenchName& n) { return n.size == size && is_aos_replicate(n) && mask_of(n.filter) > 0 && !is_end_to_end(n.row); });
    std::stable_sort(list.begin(), list.end(), [](const Row& a, const Row& b) { return mask_of(a.name->filter) < mask_of(b.name->filter); });
    return list;
}

std::vector<Row> problem_rows(const Rows& rows, const std::string& size, const std::string& filter) {
    return rows.plain(
        [&](const BenchName& n) { return n.size == size && n.filter == filter && is_aos_replicate(n) && !is_end_to_end(n.row); });
}

// ---------------------------------------------------------------------------------------------
// The file's context.

std::string context_or_none(const BenchFile& file, const std::string& key) {
    const std::string v = file.context_value(key);
    return v.empty() ? "not recorded" : v;
}

std::string gpu_title(const BenchFile& file) {
    std::string name = file.context_value("gpu_name");
    if (name.empty()) name = file.gpu_key();
    return name.empty() || name == "none" ? "no GPU" : name;
}

}  // namespace klab::bench::report
