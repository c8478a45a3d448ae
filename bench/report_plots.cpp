// klab report's plots (bench/report_plots.hpp): the series of the three plots, and the plot
// script run as a child process.
#include "bench/report_plots.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>

extern char** environ;

namespace klab::bench::report {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kExitNoMatplotlib = 3;  // scripts/plot_bench.py's exit status when matplotlib is missing

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

}  // namespace

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
    outcome.asked = files;
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

}  // namespace klab::bench::report
