// report.md's text (bench/report.hpp's report_markdown): a header saying where the figures come
// from, the headline, then one section per study of the seeds (by resolution, by mask size, the
// general masks, the memory levels, AoS against SoA, block shapes, the other operations, end to
// end) and the benchmarks that failed. Each study selects its rows by their name's parts, so a
// table holds whatever rows the file has and is skipped with a one-line note when it has none.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/report.hpp"
#include "bench/report_figures.hpp"

namespace klab::bench {

namespace {

using namespace report;

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
    std::vector<std::string> missing;  // problems without a klab variant row, and without CPU rows
    std::vector<Row> shown;
    const std::string why = fmt::format("(GPU: {}, study: {})", context_or_none(file, "klab_gpu_key"), context_or_none(file, "klab_study"));
    for (const std::string& filter : {gauss(3), gauss(9), std::string("sharpen"), std::string("random9")}) {
        const std::vector<Row> list = problem_rows(rows, "8K", filter);
        const auto best = std::find_if(list.begin(), list.end(), [](const Row& r) { return is_variant(r.name->row); });
        const std::string problem = "8K/rgb.aos/" + filter + "/replicate";
        if (best == list.end()) {
            std::string cpu;
            for (const Row& r : list)
                if (is_cpu(r.name->row)) cpu += fmt::format("{}{} {} µs", cpu.empty() ? "" : ", ", r.name->row, us_text(r.us));
            if (cpu.empty()) {
                missing.push_back(problem);
            } else {
                notes += fmt::format("{}: no klab variant row in this file {}; the CPU reference took {}.\n\n", problem, why, cpu);
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
    if (!missing.empty()) {
        out += fmt::format("{}: no klab variant row in this file {}.\n\n", fmt::join(missing, ", "), why);
    }
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
        {"Sobel", {"sobel"}, {"HD", "8K"}, "sobel at HD or 8K"},
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

}  // namespace

std::string report_markdown(const BenchFile& file, const PlotOutcome& plots) {
    const Rows rows(file);
    return header_section(file, rows, plots) + headline_section(file, rows, plots) + resolution_section(file, rows, plots) +
           mask_section(file, rows, plots) + general_mask_section(file, rows) + memory_section(rows) + layout_section(rows) + block_section(rows) +
           others_section(file, rows) + end_to_end_section(rows) + failures_section(rows);
}

}  // namespace klab::bench
