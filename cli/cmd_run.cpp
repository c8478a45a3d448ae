// klab run: the main job. On a GPU machine it tunes the study's problem classes (convolutions, Sobel, integral images) that have no
// record of this GPU yet (klab tune --study STUDY --missing-only), runs klab-bench's study (bench/) with
// repetitions, and writes results/<gpu-slug>/bench.json and its report. Without a GPU it says so
// and benchmarks the CPU reference into results/no-gpu/ instead. --device N runs on that GPU;
// --device all starts one klab run per GPU model at once (cli/device_fanout.hpp), each into its own
// results/<gpu-slug>/ (or <out>/<gpu-slug>/ with --out).
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "autotune/tuning_cache.hpp"
#include "bench/bench_json.hpp"
#include "bench/benchmarks.hpp"
#include "bench/report.hpp"
#include "bench/study.hpp"
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "cli/device_fanout.hpp"
#include "harness/device_info.hpp"
#include "harness/device_select.hpp"
#include "harness/error.hpp"
#include "harness/interrupt.hpp"
#include "harness/io/image_io.hpp"

namespace klab::cli {

namespace {

namespace fs = std::filesystem;

struct RunOptions {
    std::string study = "full";
    int repetitions = 5;
    std::string results = "results";
    std::string out;  // default: <results>/<gpu-slug>, or <results>/no-gpu
    std::string filter;
    bool tune = true;
    bool report = true;
    bool list = false;  // --list: the names of the benchmarks that would run, nothing else
    std::string device;  // --device N or all; empty: the current device
};

// Runs klab-bench's main in this process with `args`; returns its exit code.
int run_bench(std::vector<std::string> args) {
    args.insert(args.begin(), "klab-bench");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    return bench::bench_main(static_cast<int>(args.size()), argv.data());
}

// Google Benchmark's filter is a POSIX extended regular expression (a leading '-' negates it in
// newer versions): a malformed one is refused here, before tuning, not after it as "no benchmark
// ran".
void check_filter(const std::string& filter) {
    if (filter.empty()) return;
    try {
        const std::regex parsed(filter[0] == '-' ? filter.substr(1) : filter, std::regex::extended);
        (void)parsed;
    } catch (const std::regex_error& e) {
        throw Error(fmt::format("--filter '{}' is not a regular expression: {}", printable(filter), e.what()),
                    "a POSIX extended regular expression matched against the benchmark names (klab run --list shows them)");
    }
}

// --list: klab-bench's listing of the study (filtered), on this machine's GPU or the CPU.
void list_study(const RunOptions& o) {
    if (o.device == "all") {
        throw Error("--list with --device all: every GPU runs the same study",
                    "--list alone, or with --device N for the rows of that GPU's build");
    }
    std::vector<std::string> args = {fmt::format("--klab_study={}", o.study), fmt::format("--klab_results={}", o.results),
                                     "--benchmark_list_tests=true"};
    if (!o.filter.empty()) args.push_back(fmt::format("--benchmark_filter={}", o.filter));
    if (!o.device.empty()) args.push_back(fmt::format("--device={}", o.device));
    const int status = run_bench(args);
    if (status != 0) {
        throw Error(fmt::format("nothing of the {} study listed (klab-bench exit {}{})", o.study, status,
                                o.filter.empty() ? ": its message above says why" : ""),
                    o.filter.empty() ? "" : "a --filter that matches some benchmark name");
    }
}

// `path` or its nearest ancestor that is there ("." for a relative path none of whose folders is),
// by symlink_status: a dangling link or a loop of links is there, not missing (create_directories
// would fail on it). `missing` gets the folders create_directories(path) would make, outermost
// first (on the normal form of the path, so that "a/../b" or "c/" name what is made). `ec` is set
// where a path cannot be examined (a folder that cannot be searched); the walk stops there.
fs::path nearest_existing(const fs::path& path, std::vector<fs::path>& missing, std::error_code& ec) {
    missing.clear();
    fs::path p = path;
    for (;;) {
        const fs::file_status status = fs::symlink_status(p, ec);
        if (status.type() != fs::file_type::not_found) return p;
        ec.clear();
        missing.insert(missing.begin(), p);
        if (!p.has_parent_path()) return ".";
        p = p.parent_path();
    }
}

std::vector<fs::path> folders_to_make(const fs::path& path) {
    std::vector<fs::path> missing;
    std::error_code ec;
    (void)nearest_existing(path, missing, ec);
    return missing;
}

// Before any work (tuning can take minutes): `out` is, or can be made as, a writable folder whose
// bench.json is a file or free.
void check_results_folder(const fs::path& out) {
    const std::string allowed = "--out DIR (or --results DIR): a writable directory, made where missing";
    std::vector<fs::path> missing;
    std::error_code walk_ec;
    const fs::path existing = nearest_existing(out, missing, walk_ec);
    if (walk_ec) {
        throw FileSystemError(walk_ec.value(),
                              fmt::format("cannot write the results into {}: {}: {}", out.string(), existing.string(),
                                          walk_ec.message()),
                              allowed);
    }
    std::error_code ec;
    if (!fs::is_directory(existing, ec)) {
        std::error_code link_ec;
        const bool link = fs::is_symlink(fs::symlink_status(existing, link_ec));
        throw Error(fmt::format("cannot write the results into {}: {} is not a directory{}", out.string(), existing.string(),
                                link ? fmt::format(" (a link that leads to none: {})", ec ? ec.message() : "not a directory")
                                     : ""),
                    allowed);
    }
    if (missing.empty()) {
        io::check_file_writable(out / "bench.json");  // a writable folder, bench.json not a directory
    } else if (::access(existing.c_str(), W_OK) != 0) {
        const int error_number = errno;
        throw FileSystemError(error_number,
                              fmt::format("cannot make {}: directory {} is not writable: {}", out.string(), existing.string(),
                                          std::error_code(error_number, std::generic_category()).message()),
                              allowed);
    }
}

// results/<gpu>/ holds the full study only: a shorter or filtered run there would replace it
// (and the CI gate would see its rows as removed).
void check_out_option(const RunOptions& o) {
    if (o.out.empty() && (bench::parse_study(o.study) != bench::Study::full || !o.filter.empty())) {
        throw Error(fmt::format("klab run {}without --out: results/<gpu>/bench.json holds the full study only",
                                !o.filter.empty() ? "--filter " : fmt::format("--study {} ", o.study)),
                    "--out DIR for a shorter or filtered run, e.g. --out build/klab-run");
    }
}

// --device all: one klab run per GPU model, at once, each started with this command line and
// --device N (and --out <out>/<slug> when --out is given). A second GPU of a model stays idle.
void run_every_device(const RunOptions& o) {
    require_timing_build("run");
    check_out_option(o);
    const StudyPlan plan =
        plan_studies(requested_devices(parse_device_request("all"), query_devices(), std::getenv("CUDA_VISIBLE_DEVICES")));
    fmt::print("klab run --device all: {} stud{} at once, one process per GPU model\n", plan.studies.size(),
               plan.studies.size() == 1 ? "y" : "ies");
    std::vector<DeviceJob> jobs;
    for (const DeviceShare& share : plan.studies) {
        DeviceJob job{share, {}, {}};
        const fs::path out = o.out.empty() ? fs::path(o.results) / share.slug : fs::path(o.out) / share.slug;
        if (!o.out.empty()) job.options.emplace_back("--out", out.string());
        job.result = "results in " + out.string();
        fmt::print("  gpu {} {}: the study into {}\n", share.device.index, share.device.name, out.string());
        jobs.push_back(std::move(job));
    }
    for (const std::string& line : plan.idle) fmt::print("  {}\n", line);
    const std::vector<std::string> failed = run_per_device(jobs, own_executable());
    for (const std::string& line : plan.idle) fmt::print("{}\n", line);
    if (!failed.empty()) {
        throw Error(fmt::format("--device all: {} of {} stud{} failed: {}", failed.size(), jobs.size(),
                                jobs.size() == 1 ? "y" : "ies", fmt::join(failed, "; ")),
                    "every GPU's study succeeding (its lines are above, prefixed with its label)");
    }
}

void run_study(const RunOptions& o) {
    const auto started = std::chrono::steady_clock::now();
    const bench::Study study = bench::parse_study(o.study);
    check_filter(o.filter);
    if (o.list) return list_study(o);
    const DeviceRequest device = o.device.empty() ? DeviceRequest{} : parse_device_request(o.device);
    if (device.all) return run_every_device(o);
    check_out_option(o);
    const DeviceQuery query = query_devices();
    const bool gpu = device.given || !query.devices.empty();  // --device N without that device is an error
    fs::path out = o.out;
    if (gpu) {
        const DeviceInfo d = select_one_device(device, "klab run");  // a missing device first, in any build
        require_timing_build("run");
        fmt::print("GPU: {} (device {}, compute capability {}.{}, {} SMs); {} study, {} repetitions\n", d.name, d.index,
                   d.cc_major, d.cc_minor, d.sm_count, bench::to_string(study), o.repetitions);
        if (out.empty()) out = fs::path(o.results) / autotune::current_gpu_identity().slug();
    } else {
        fmt::print("No GPU found ({}): only the CPU reference is benchmarked here, into {}.\n", query.no_device_reason,
                   out.empty() ? (fs::path(o.results) / "no-gpu").string() : out.string());
        if (out.empty()) out = fs::path(o.results) / "no-gpu";
    }
    std::fflush(stdout);
    out = out.lexically_normal();
    if (!out.has_filename() && out.has_parent_path()) out = out.parent_path();  // "dir/" is "dir"
    check_results_folder(out);

    // A tuning job that fails leaves its rows on the default shape (their labels say so): the
    // benchmarks still run, and the failure is reported at the end.
    std::string tune_failure;
    if (gpu && o.tune) {
        fmt::print("\n== 1. Tuning the study's problem classes (convolutions, Sobel, integral images) that this GPU has no record of\n");
        std::fflush(stdout);
        try {
            tune_missing_classes(bench::tuned_classes(study), o.results);
        } catch (const Error& e) {
            tune_failure = e.what();
            fmt::print("tuning failed; the benchmarks go on with the shapes that were found: {}\n", tune_failure);
        }
    }

    fmt::print("\n== {}. Benchmarks (klab-bench, Google Benchmark)\n", gpu && o.tune ? 2 : 1);
    std::fflush(stdout);
    std::error_code ec;
    const std::vector<fs::path> made = folders_to_make(out);  // removed again if the run writes nothing
    fs::create_directories(out, ec);
    if (ec) throw Error(fmt::format("cannot create {}: {}", out.string(), ec.message()), "a writable results directory");
    // Written beside the final name and renamed only after a complete run: never a half-written bench.json.
    const fs::path json = out / "bench.json";
    const fs::path partial = out / fmt::format("bench.json.partial-{}", getpid());
    std::optional<TempFileRegistration> partial_registration(std::in_place, partial.string());  // a signal removes it
    std::vector<std::string> args = {fmt::format("--klab_study={}", o.study), fmt::format("--klab_results={}", o.results),
                                     fmt::format("--benchmark_out={}", partial.string()), "--benchmark_out_format=json",
                                     fmt::format("--benchmark_repetitions={}", o.repetitions)};
    if (!o.filter.empty()) args.push_back(fmt::format("--benchmark_filter={}", o.filter));
    const int status = run_bench(args);
    // A run that wrote nothing readable (no benchmark matched, a crash) must not replace bench.json.
    // klab-bench writes no output at all when no benchmark ran (a --filter that matches none).
    const bool wrote = fs::exists(partial, ec);
    bool readable = false;
    std::string unreadable_because = "it wrote no output: its messages above say why";
    if (wrote) {
        unreadable_because = "no benchmark in its output";
        try {
            readable = !bench::load_bench_file(partial).runs.empty();
        } catch (const Error& e) {
            unreadable_because = e.what();
        }
    }
    if (status != 0 || !readable) {
        std::string kept;
        if (wrote) {
            const fs::path failed = out / "bench.failed.json";
            fs::rename(partial, failed, ec);
            kept = ec ? fmt::format("; its output {} could not be kept ({})", partial.string(), ec.message())
                      : fmt::format("; its output is kept as {} for inspection", failed.string());
        } else {
            // The folders made for this run, innermost first (remove() takes only an empty one).
            for (auto it = made.rbegin(); it != made.rend(); ++it) fs::remove(*it, ec);
        }
        const std::string left = fs::exists(json, ec) ? fmt::format("{} is unchanged", json.string()) : "no bench.json was written";
        const std::string allowed = wrote ? "every row verified and timed (the failed rows are listed above)"
                                    : o.filter.empty()
                                        ? "a run of the study (klab-bench's messages above say what stopped it)"
                                        : "a --filter that matches some benchmark name (klab run --list --filter RE shows which do)";
        throw Error(fmt::format("klab-bench failed (exit {}{}){}, and {}", status, readable ? "" : ", " + unreadable_because, kept, left),
                    allowed);
    }
    fs::rename(partial, json, ec);
    if (ec) throw Error(fmt::format("cannot rename {} to {}: {}", partial.string(), json.string(), ec.message()));
    partial_registration.reset();
    fmt::print("wrote {}\n", json.string());

    if (o.report) {
        fmt::print("\n== Report\n");
        bench::ReportRequest request;
        request.bench_json = json;
        request.out_dir = out;
        request.plot_script = fs::path(KLAB_SOURCE_DIR) / "scripts" / "plot_bench.py";
        const bench::ReportResult report = bench::write_report(request);
        fmt::print("wrote {}{}{}\n", report.report.string(), report.drawn_text(),
                   report.plots.not_drawn.empty() ? std::string() : fmt::format(" (plots not drawn: {})", report.plots.not_drawn));
    } else if (fs::exists(out / "report.md", ec)) {
        fmt::print("note: --no-report: {} is an earlier run's (klab report {} writes this one's)\n", (out / "report.md").string(),
                   json.string());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    fmt::print("\nklab run finished in {:.0f} s; results in {}\n", seconds, out.string());
    if (!tune_failure.empty()) {
        throw Error("the benchmarks ran, but tuning failed: " + tune_failure, "every tuning job finding a verified shape");
    }
}

}  // namespace

void add_run_command(CLI::App& app) {
    auto o = std::make_shared<RunOptions>();
    CLI::App* cmd = app.add_subcommand(
        "run", "The main job: tune what is not tuned yet, benchmark every variant on the seeds' study, write results/<gpu>/");
    cmd->add_option("--study", o->study,
                    "full (the seeds' study), quick (HD and 8K, and the integral images at 4K and 4096x4096) or smoke "
                    "(tiny images)")
        ->check(CLI::IsMember({"full", "quick", "smoke"}))
        ->capture_default_str();
    cmd->add_option("--repetitions", o->repetitions, "Repetitions of each benchmark (klab compare needs 4 or more)")
        ->check(number_from(1, 100))
        ->capture_default_str();
    cmd->add_option("--results", o->results, "Results directory: the tuning cache and the default output folder")
        ->capture_default_str();
    cmd->add_option("--out", o->out,
                    "Output folder for bench.json and the report (default: <results>/<gpu-slug>; required with --filter "
                    "or a study other than full)");
    cmd->add_option("--filter", o->filter,
                    "Only the benchmarks whose names match this regex (Google Benchmark's filter: POSIX extended; --list shows "
                    "the names)");
    cmd->add_flag("--list", o->list, "Print the names of the study's benchmarks (those --filter matches), and do nothing else");
    cmd->add_flag_callback(
        "--no-tune", [o] { o->tune = false; },
        "Do not tune missing classes first (their rows take the lookup ladder's shape: this GPU's record at the "
        "nearest size, else one of the same compute capability, else the variant's default)");
    cmd->add_flag_callback("--no-report", [o] { o->report = false; }, "Do not write report.md and the plots");
    cmd->add_option("--device", o->device,
                    "The CUDA device (an index as `klab info` lists them; default: the first CUDA shows), or all: one study "
                    "per GPU model at once, one process each (a second GPU of one model stays idle: docs/multi-gpu.md)");
    cmd->callback([o] { run_study(*o); });
}

}  // namespace klab::cli
