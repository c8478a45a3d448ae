// The README's results table (bench/report.hpp's readme_table): for a few headline problems, the
// fastest variant built on the seeds' techniques against the fastest klab variant, with the
// report's own figures of that row (report_figures.hpp): × copy floor, × roofline and NPP.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/report.hpp"
#include "bench/report_figures.hpp"
#include "harness/error.hpp"
#include "harness/io/image_io.hpp"

namespace klab::bench {

namespace {

using namespace report;

// The seeds' techniques as klab variants: global, constant and shared memory (seeds 000, 001,
// 004), halo threads and the two-pass separable filter (seed 002), Sobel's three kernels (seed
// 001). The seeds' integral image (seed 003) sums O(n²) pixels per output and has no klab variant.
const std::vector<std::string> kSeedVariants = {"conv.global",          "conv.constant",      "conv.tiled_2batch", "conv.halo_tiled",
                                                "conv.separable_2pass", "sobel.3kernel"};

struct Headline {
    std::string label;
    BenchName problem;  // row and block empty
};

// At most ~10 rows: the README stays short; the report has every problem.
const std::vector<Headline> kHeadlines = {
    {"8K RGB Gaussian 3×3", {"", "8K", "rgb.aos", "gauss3", "replicate", ""}},
    {"8K RGB Gaussian 9×9", {"", "8K", "rgb.aos", "gauss9", "replicate", ""}},
    {"8K RGB sharpen 3×3", {"", "8K", "rgb.aos", "sharpen", "replicate", ""}},
    {"8K RGB random 9×9", {"", "8K", "rgb.aos", "random9", "replicate", ""}},
    {"8K RGB box 9×9", {"", "8K", "rgb.aos", "box9", "replicate", ""}},
    {"HD RGB Gaussian 3×3", {"", "HD", "rgb.aos", "gauss3", "replicate", ""}},
    {"8K gray Sobel", {"", "8K", "gray", "sobel", "replicate", ""}},
    {"8K gray integral image", {"", "8K", "gray", "integral", "none", ""}},
};

bool is_seed_variant(const std::string& row) { return std::find(kSeedVariants.begin(), kSeedVariants.end(), row) != kSeedVariants.end(); }

std::string short_commit(const std::string& commit) { return commit.size() > 7 ? commit.substr(0, 7) : commit; }

// Where the line `marker` starts in `text`; klab::Error when it is not there exactly once.
std::size_t marker_line(const std::string& text, const std::string& marker, const std::string& source) {
    std::vector<std::size_t> found;
    for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
        const bool line_start = at == 0 || text[at - 1] == '\n';
        const std::size_t end = at + marker.size();
        if (line_start && (end == text.size() || text[end] == '\n' || text[end] == '\r')) found.push_back(at);
    }
    if (found.size() != 1) {
        throw Error(fmt::format("{}: {} the line {}", source, found.empty() ? "lacks" : "repeats", marker),
                    fmt::format("the README's table between the lines {} and {}, once", kReadmeTableBegin, kReadmeTableEnd));
    }
    return found.front();
}

// `readme` with the text between its begin and end lines replaced by `table`.
std::string replace_readme_table(const std::string& readme, const std::string& table, const std::string& source) {
    const std::size_t begin = marker_line(readme, kReadmeTableBegin, source);
    const std::size_t end = marker_line(readme, kReadmeTableEnd, source);
    if (end < begin) {
        throw Error(fmt::format("{}: the line {} comes before {}", source, kReadmeTableEnd, kReadmeTableBegin),
                    fmt::format("the README's table between the lines {} and {}", kReadmeTableBegin, kReadmeTableEnd));
    }
    const std::size_t body = readme.find('\n', begin) + 1;  // the line after the begin line
    return readme.substr(0, body) + table + readme.substr(end);
}

// "NVIDIA H200 (cc 9.0, 132 SMs), CUDA 13.0, NPP 13.0.1: medians of `<file>` (commit 7bcc59c), …"
std::string caption(const BenchFile& file) {
    const std::string cc = file.context_value("gpu_compute_capability"), sms = file.context_value("gpu_sm_count");
    return fmt::format("{}{}, CUDA {}, NPP {}: medians of `{}` (commit {}), written by `klab report --readme-table`.\n\n",
                       gpu_title(file), cc.empty() || sms.empty() ? "" : fmt::format(" (cc {}, {} SMs)", cc, sms),
                       context_or_none(file, "cuda_runtime"), context_or_none(file, "npp"), file.source,
                       short_commit(context_or_none(file, "git_commit")));
}

}  // namespace

std::string readme_table(const BenchFile& file) {
    const Rows rows(file);
    Table t{{"problem", "seeds' fastest", "µs", "klab's fastest", "µs", "× copy floor", "× roofline", "NPP µs", "klab vs NPP"},
            "llrlrrrrr",
            {}};
    std::vector<std::string> below_copy_floor;  // the rows that ran faster than the copy they are divided by
    for (const Headline& h : kHeadlines) {
        // Fastest first: the first variant row is klab's fastest, the first seed row the seeds'.
        const std::vector<Row> list = rows.plain([&](const BenchName& n) { return n.problem() == h.problem.problem(); });
        const auto best = std::find_if(list.begin(), list.end(), [](const Row& r) { return is_variant(r.name->row); });
        if (best == list.end()) continue;
        const auto seed = std::find_if(list.begin(), list.end(), [](const Row& r) { return is_seed_variant(r.name->row); });
        const Row* npp = rows.npp_for(*best->name);
        const Figures f = figures(rows, *best);
        if (const auto floor = counter(*best->run, "copy_floor_us"); floor && best->us < *floor) {
            below_copy_floor.push_back(fmt::format("{}: copy {} µs", h.label, us_text(*floor)));
        }
        t.rows.push_back({h.label, seed == list.end() ? kNone : seed->name->row, seed == list.end() ? kNone : us_text(seed->us),
                          best->name->row, f.us, f.copy_multiple, f.roofline_multiple, npp ? us_text(npp->us) : kNone, f.over_npp});
    }
    if (t.rows.empty()) {
        throw Error(fmt::format("{} holds no klab variant row of the README's problems (8K and HD RGB filters, 8K gray Sobel and "
                                "integral image)",
                                file.source),
                    "the bench.json of a GPU run of the full or quick study (klab run)");
    }
    std::string seed_list;
    for (const std::string& v : kSeedVariants) seed_list += (seed_list.empty() ? "" : ", ") + v;
    std::string table = render(t);
    table.pop_back();  // render() ends with a blank line; the block ends with the table
    return caption(file) + table + "\nSeeds' fastest: the fastest of the variants built on the seeds' techniques (" + seed_list +
           "; the seeds' integral image has none). × copy floor: klab's time over a device-to-device copy of the same bytes; "
           "× roofline: over the larger of that and the least FMAs at the measured FMA rate; klab vs NPP: NPP's time over "
           "klab's (above 1× klab is faster)." +
           (below_copy_floor.empty()
                ? std::string()
                : fmt::format(" Below 1.00× copy floor ({}): the row ran faster than the device-to-device copy it is divided by; "
                              "a copy of a few µs is itself a timing that moves more between runs of the same code than the "
                              "kernels' rows do (bench/README.md).",
                              fmt::join(below_copy_floor, "; "))) +
           "\n";
}

bool update_readme_table(const std::filesystem::path& readme, const std::string& table) {
    std::ifstream in(readme, std::ios::binary);
    if (!in) throw Error("cannot read " + readme.string(), "a readable README file (--update)");
    const std::string allowed = "a readable README file (--update)";
    const std::string text = io::read_all(in, readme, io::kMaxTextFileBytes, printable(readme.string()), allowed);
    const std::string updated = replace_readme_table(text, table, readme.string());
    if (updated == text) return false;  // left alone: its time stamp says when the table last changed
    io::write_file_atomically(readme, std::vector<std::uint8_t>(updated.begin(), updated.end()));
    return true;
}

}  // namespace klab::bench
