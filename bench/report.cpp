// klab report (bench/report.hpp): loads the file, writes plot-data.json, draws the plots, writes
// report.md. The parts live in files of their own: report_figures.* (rows, figures, tables),
// report_markdown.cpp (report.md's sections), report_plots.* (plot-data.json and the plot script),
// readme_table.cpp (the README's results table).
#include "bench/report.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>
#include <system_error>
#include <vector>

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

// A folder beside the report's files where they are all made before any is put in place, so that
// a failure on the way (a full disk, an interrupt) leaves the earlier report whole, not its
// plot-data.json new and its report.md old. Removed with what is left in it; one that a klab
// ended by a signal left is removed by a later report into the same folder (remove_abandoned).
class StagingFolder {
public:
    explicit StagingFolder(const fs::path& out_dir) : path_(out_dir / fmt::format("{}{}", kPrefix, getpid())) {
        remove_abandoned(out_dir);
        std::error_code ec;
        if (!fs::create_directory(path_, ec)) {
            throw Error(fmt::format("cannot write the report into {}: cannot create {}: {}", out_dir.string(), path_.string(),
                                    ec ? ec.message() : "it exists"),
                        "a writable directory (--out DIR)");
        }
    }
    ~StagingFolder() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    StagingFolder(const StagingFolder&) = delete;
    StagingFolder& operator=(const StagingFolder&) = delete;
    const fs::path& path() const { return path_; }

    // Writes `text` as `name` in this folder; a failure (a full disk) says that the report in
    // `out_dir` was left as it was.
    void make(const std::string& name, const std::string& text, const fs::path& out_dir) const {
        try {
            write_text(path_ / name, text);
        } catch (const Error& e) {
            throw Error(fmt::format("cannot make the report's {} (the report in {} is left as it was): {}", name, out_dir.string(),
                                    e.what()));
        }
    }

    // Moves `name` from this folder to `out_dir` (a rename: no disk space needed).
    void put(const std::string& name, const fs::path& out_dir) const {
        std::error_code ec;
        fs::rename(path_ / name, out_dir / name, ec);
        if (ec) {
            throw Error(fmt::format("cannot put {} in place: {}", (out_dir / name).string(), ec.message()),
                        "a writable directory (--out DIR)");
        }
    }

private:
    static constexpr const char* kPrefix = ".klab-report-";

    // The staging folders of processes that no longer run and were left an hour ago or more (a
    // folder shared with other machines or containers, whose pids this one cannot see, keeps
    // their reports running now), and this pid's own (one report at a time per process).
    static void remove_abandoned(const fs::path& out_dir) {
        const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
        std::error_code ec;
        for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
            const std::string name = it->path().filename().string();
            if (name.rfind(kPrefix, 0) != 0) continue;
            const std::string digits = name.substr(std::string(kPrefix).size());
            if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
            const pid_t pid = static_cast<pid_t>(std::stol(digits));
            if (pid != getpid()) {
                if (::kill(pid, 0) == 0 || errno == EPERM) continue;  // a report running now
                std::error_code time_ec;
                const fs::file_time_type left = fs::last_write_time(it->path(), time_ec);
                if (time_ec || left > an_hour_ago) continue;
            }
            std::error_code ignored;
            fs::remove_all(it->path(), ignored);
        }
    }

    fs::path path_;
};

}  // namespace

std::string ReportResult::drawn_text() const {
    std::string paths;
    for (const std::string& png : plots.drawn) paths += (paths.empty() ? "" : ", ") + (report.parent_path() / png).string();
    return paths.empty() ? paths : "; plots: " + paths;
}

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
    // What goes in place at the end must be able to: a folder in the way is found now.
    std::vector<std::string> names = {result.plot_data.filename().string(), result.report.filename().string()};
    for (const nlohmann::json& plot : data["plots"]) names.push_back(plot["file"].get<std::string>());
    for (const std::string& name : names) {
        if (io::output_replaces_input(request.bench_json, out_dir / name)) {
            throw Error(fmt::format("cannot write {}: it is the bench file read, {}", (out_dir / name).string(),
                                    request.bench_json.string()),
                        "a bench file named other than report.md, plot-data.json and the plots' PNGs, or --out DIR elsewhere");
        }
        if (fs::is_directory(out_dir / name, ec)) {
            throw Error(fmt::format("cannot write {}: it is an existing directory", (out_dir / name).string()),
                        "a report folder (--out DIR) whose report.md, plot-data.json and PNG names are files or free");
        }
    }

    const StagingFolder staging(out_dir);
    staging.make(result.plot_data.filename().string(), data.dump(2) + "\n", out_dir);
    result.plots = report::draw_plots(request, data, staging.path() / result.plot_data.filename(), staging.path());
    result.draw_later = fmt::format("{} {} {} {}", request.python, request.plot_script.string(), result.plot_data.string(),
                                    out_dir.string());
    staging.make(result.report.filename().string(), report_markdown(file, result.plots), out_dir);

    // All made: into place, report.md last. Then a PNG the script was asked for and did not draw
    // goes, so that an earlier report's is not taken for this one's.
    for (const std::string& png : result.plots.drawn) staging.put(png, out_dir);
    staging.put(result.plot_data.filename().string(), out_dir);
    staging.put(result.report.filename().string(), out_dir);
    for (const std::string& png : result.plots.asked) {
        if (std::find(result.plots.drawn.begin(), result.plots.drawn.end(), png) == result.plots.drawn.end()) {
            std::error_code ignored;
            fs::remove(out_dir / png, ignored);
        }
    }
    return result;
}

}  // namespace klab::bench
