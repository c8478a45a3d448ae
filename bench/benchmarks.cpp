// klab-bench (bench/benchmarks.hpp): its flags, the run's context, the study's rows registered with
// Google Benchmark by kind, and what every row kind shares (bench/runner.hpp): the settings, the
// counters, the error rows.
#include "bench/benchmarks.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autotune/search_space.hpp"
#include "autotune/tuning_cache.hpp"
#include "bench/fma_rate.hpp"
#include "bench/npp_baselines.hpp"
#include "bench/runner.hpp"
#include "bench/study.hpp"
#include "harness/device_info.hpp"
#include "harness/device_select.hpp"
#include "harness/error.hpp"
#include "harness/cuda_check.hpp"
#include "harness/interrupt.hpp"
#include "harness/io/image_io.hpp"
#include "harness/version.hpp"

namespace klab::bench {

namespace runner {

namespace {

// Set once a row leaves the CUDA context unusable (a kernel fault): every later GPU row fails at
// once with this message instead of computing its reference for nothing.
std::string& context_lost() {
    static std::string message;
    return message;
}

}  // namespace

Settings& settings() {
    static Settings s;
    return s;
}

void set_counter(benchmark::State& state, const char* name, double value) {
    if (std::isfinite(value) && value != 0.0) state.counters[name] = value;
}

std::map<std::string, std::string>& failed_rows() {
    static std::map<std::string, std::string> failed;
    return failed;
}

void fail_row(benchmark::State& state, const std::string& name, const std::string& message) {
    failed_rows().emplace(name, message);
    state.SkipWithError(message.c_str());
}

void note_if_context_lost(const std::string& row) {
    const std::string sticky = sticky_cuda_error();
    if (!sticky.empty() && context_lost().empty()) {
        context_lost() = fmt::format("the CUDA context was lost at {} ({}); no later GPU row can run in this process", row, sticky);
    }
}

void run_guarded(benchmark::State& state, const BenchCase& c, void (*time_row)(benchmark::State&, const BenchCase&)) {
    if (!context_lost().empty()) {
        fail_row(state, c.name(), context_lost());
        return;
    }
    try {
        time_row(state, c);
    } catch (const std::exception& e) {
        note_if_context_lost(c.name());
        fail_row(state, c.name(), e.what());
    }
}

}  // namespace runner

namespace {

using runner::settings;

// Each repetition runs for at least this much event time unless --benchmark_min_time says
// otherwise: with the L2 flushed before every sample, enough for tens of samples of an 8K filter.
constexpr double kMinTimeSeconds = 0.02;
constexpr double kSmokeMinTimeSeconds = 0.001;

// The 100%-occupancy shapes of the block-shape study, from the tuner's search space on this GPU.
std::vector<LaunchShape> full_occupancy_shapes(const Variant& variant, const Problem& problem) {
    std::vector<LaunchShape> shapes;
    for (const autotune::Candidate* c : autotune::search_space(variant, problem, 1.0, autotune::device_oracle()).included()) {
        shapes.push_back(c->shape);
    }
    return shapes;
}

void add_context(const std::optional<DeviceInfo>& device) {
    const BuildVersion version = build_version();
    benchmark::AddCustomContext("git_commit", version.commit);
    benchmark::AddCustomContext("git_dirty", version.dirty ? "true" : "false");
    benchmark::AddCustomContext("klab_study", to_string(settings().study));
    benchmark::AddCustomContext("npp", npp_version());
    if (!device) {
        benchmark::AddCustomContext("klab_gpu_key", "none");
        benchmark::AddCustomContext("gpu_name", "none");
        return;
    }
    const autotune::GpuIdentity gpu = autotune::current_gpu_identity();
    benchmark::AddCustomContext("klab_gpu_key", fmt::format("{}, cc {}.{}, {} SMs", gpu.name, gpu.cc_major, gpu.cc_minor, gpu.sm_count));
    benchmark::AddCustomContext("gpu_name", device->name);
    benchmark::AddCustomContext("gpu_slug", gpu.slug());
    benchmark::AddCustomContext("gpu_compute_capability", fmt::format("{}.{}", device->cc_major, device->cc_minor));
    benchmark::AddCustomContext("gpu_sm_count", std::to_string(device->sm_count));
    benchmark::AddCustomContext("gpu_sm_clock_mhz", std::to_string(device->sm_clock_khz / 1000));
    benchmark::AddCustomContext("gpu_memory_clock_mhz", std::to_string(device->memory_clock_khz / 1000));
    benchmark::AddCustomContext("gpu_memory_bus_bits", std::to_string(device->memory_bus_bits));
    benchmark::AddCustomContext("gpu_l2_bytes", std::to_string(device->l2_cache_bytes));
    benchmark::AddCustomContext("cuda_driver", cuda_version_string(device->driver_version));
    benchmark::AddCustomContext("cuda_runtime", cuda_version_string(device->runtime_version));
    benchmark::AddCustomContext("gpu_ffma_per_second", fmt::format("{:.4g}", settings().ffma_per_second));
    benchmark::AddCustomContext("cpu_reference", runner::cpu_reference_method());
}

// Google Benchmark writes --benchmark_out=PATH while it runs, so a run that fails, runs nothing or
// only lists the benchmarks would leave PATH empty or cut short. klab-bench points it at a file
// beside PATH instead and puts that in PATH's place once some benchmark ran (PATH stays as it was
// otherwise; a crash leaves PATH.partial-PID beside it, a signal that ends the run does not).
class OutputFile {
public:
    // Rewrites a --benchmark_out=PATH argument to the file beside PATH; others are left alone. The
    // last one counts, as in Google Benchmark (an empty PATH: no output).
    void redirect(std::string& arg) {
        static const std::string kFlag = "--benchmark_out=";
        if (arg.rfind(kFlag, 0) != 0) return;
        target_ = arg.substr(kFlag.size());
        partial_.clear();
        if (target_.empty()) return;
        partial_ = target_.string() + fmt::format(".partial-{}", getpid());
        arg = kFlag + partial_.string();
    }
    // After every argument was seen: the last PATH's place is checked now (a directory, a missing
    // or read-only folder), not after the whole run, and the file beside it is registered for
    // removal by a signal that ends the run.
    void prepare() {
        if (partial_.empty()) return;
        std::error_code ec;
        if (!target_.has_filename() || std::filesystem::is_directory(target_, ec)) {
            throw Error(fmt::format("--benchmark_out={}: a directory, not a file", target_.string()), "--benchmark_out=FILE");
        }
        io::check_file_writable(target_);
        registration_.emplace(partial_.string());
    }
    // After the run: PATH replaced when a benchmark ran, the file beside it removed otherwise.
    // False when PATH could not be replaced (the reason printed).
    bool finish(bool ran) {
        if (partial_.empty()) return true;
        std::error_code ec;
        if (ran) {
            std::filesystem::rename(partial_, target_, ec);
            if (!ec) {
                registration_.reset();
                return true;
            }
            std::fprintf(stderr, "klab-bench: cannot put the output in %s's place: %s\n", target_.c_str(), ec.message().c_str());
        }
        std::filesystem::remove(partial_, ec);
        registration_.reset();
        if (std::filesystem::exists(target_, ec)) std::fprintf(stderr, "klab-bench: %s is unchanged\n", target_.c_str());
        return ran ? false : true;
    }

private:
    std::filesystem::path target_, partial_;
    std::optional<TempFileRegistration> registration_;  // removed by a signal that ends the run
};

// --benchmark_list_tests[=VALUE], read as Google Benchmark reads a flag's truth: only 0, f, n, false,
// no and off (any case) are false.
bool lists_benchmarks(const std::string& arg) {
    static const std::string kFlag = "--benchmark_list_tests";
    if (arg == kFlag) return true;
    if (arg.rfind(kFlag + "=", 0) != 0) return false;
    std::string value = arg.substr(kFlag.size() + 1);
    for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return !(value == "0" || value == "f" || value == "n" || value == "false" || value == "no" || value == "off");
}

// --benchmark_repetitions=N: Google Benchmark aborts on a negative N and runs nothing at 0.
void check_repetitions(const std::string& arg) {
    static const std::string kFlag = "--benchmark_repetitions=";
    if (arg.rfind(kFlag, 0) != 0) return;
    const std::string value = arg.substr(kFlag.size());
    std::size_t used = 0;
    int n = 0;
    try {
        n = std::stoi(value, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != value.size() || value.empty() || n < 1) {
        throw Error(fmt::format("{}: not a number of repetitions", arg), "a whole number of 1 or more");
    }
}

// The flags whose value Google Benchmark takes from a list: for any other it prints its usage and
// exits 0, as if the run had succeeded. klab-bench refuses them first, with the list.
void check_choice(const std::string& arg) {
    struct Choice {
        const char* flag;
        std::vector<std::string> allowed;  // "" : the flag given empty (Google Benchmark's default)
    };
    static const Choice kChoices[] = {
        {"--benchmark_format=", {"console", "json", "csv"}},
        {"--benchmark_out_format=", {"console", "json", "csv"}},
        {"--benchmark_time_unit=", {"", "ns", "us", "ms", "s"}},
    };
    for (const Choice& c : kChoices) {
        if (arg.rfind(c.flag, 0) != 0) continue;
        const std::string value = arg.substr(std::string(c.flag).size());
        if (std::find(c.allowed.begin(), c.allowed.end(), value) != c.allowed.end()) continue;
        std::vector<std::string> named(c.allowed.begin() + (c.allowed.front().empty() ? 1 : 0), c.allowed.end());
        const std::string last = named.back();
        named.pop_back();
        throw Error(fmt::format("{}: '{}' is not one of its values", arg, value), fmt::format("{} or {}", fmt::join(named, ", "), last));
    }
    if (arg == "--benchmark_color=") throw Error(arg + ": no value", "auto, true or false");
}

void register_cases(const std::vector<BenchCase>& cases, bool gpu) {
    for (const BenchCase& c : cases) {
        // Each kind's timing function: gpu_rows.cpp, end_to_end_rows.cpp, cpu_reference_rows.cpp.
        benchmark::internal::Benchmark* b =
            c.kind == RowKind::end_to_end
                ? benchmark::RegisterBenchmark(c.name().c_str(),
                                               [c](benchmark::State& state) { runner::run_guarded(state, c, runner::time_end_to_end_row); })
            : gpu ? benchmark::RegisterBenchmark(c.name().c_str(),
                                                 [c](benchmark::State& state) { runner::run_guarded(state, c, runner::time_gpu_row); })
                  : benchmark::RegisterBenchmark(c.name().c_str(), [c](benchmark::State& state) { runner::run_cpu_row(state, c); });
        b->Unit(gpu ? benchmark::kMicrosecond : benchmark::kMillisecond);
        if (gpu) {
            b->UseManualTime();
        } else {
            b->UseRealTime();
        }
    }
}

}  // namespace

int bench_main(int argc, char** argv) {
    // klab's flags first (CLI11, everything else left for Google Benchmark).
    CLI::App app{"klab-bench: the seeds' performance study (Google Benchmark; its --benchmark_* flags apply too)"};
    app.allow_extras();
    app.set_help_flag();  // --help goes to Google Benchmark, after klab's flags are listed
    std::string study = "full";
    app.add_option("--klab_study", study,
                   "full (the seeds' study), quick (HD and 8K, and the integral images at 4K and 4096x4096) or smoke (tiny images)")
        ->capture_default_str();
    app.add_option("--klab_results", settings().results, "Results directory holding <gpu-slug>/autotune.json")->capture_default_str();
    std::string device_option;  // klab's --device N (harness/device_select.hpp); empty: the current device
    app.add_option("--device", device_option, "CUDA device index, as `klab info` lists them (default: the first CUDA shows)");
    try {
        app.parse(argc, argv);
        settings().study = parse_study(study);
        if (!device_option.empty()) (void)select_one_device(parse_device_request(device_option, false), "klab-bench");
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;  // CLI11's own error numbers: 2, as for any refused input
    } catch (const Error& e) {
        std::fprintf(stderr, "klab-bench: %s\n", e.what());
        return 2;
    }
    std::vector<std::string> rest = app.remaining();
    std::vector<char*> args{argv[0]};
    OutputFile output;
    bool listing = false;  // --benchmark_list_tests: names only, no output file
    for (std::string& r : rest) {
        if (r == "--help" || r == "-h") std::fputs(app.help().c_str(), stdout);
        if (r.rfind("--benchmark_min_time", 0) == 0) settings().min_time_given = true;
        try {
            check_repetitions(r);
            check_choice(r);
            output.redirect(r);
        } catch (const Error& e) {
            std::fprintf(stderr, "klab-bench: %s\n", e.what());
            return 2;
        }
        if (r.rfind("--benchmark_list_tests", 0) == 0) listing = lists_benchmarks(r);
        args.push_back(r.data());
    }
    try {
        output.prepare();
    } catch (const Error& e) {
        std::fprintf(stderr, "klab-bench: %s\n", e.what());
        return 2;
    }
    // The default minimum time per repetition, as a flag: a per-benchmark MinTime() would be
    // appended to every benchmark's name. Google Benchmark 1.8 wants a unit suffix, 1.7 a number.
    std::string min_time = fmt::format("--benchmark_min_time={}", settings().study == Study::smoke ? kSmokeMinTimeSeconds : kMinTimeSeconds);
#ifdef KLAB_BENCHMARK_MIN_TIME_SUFFIX
    min_time += "s";
#endif
    if (!settings().min_time_given) args.push_back(min_time.data());
    int count = static_cast<int>(args.size());
    benchmark::Initialize(&count, args.data());
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;

    try {
        const DeviceQuery query = query_devices();
        std::optional<DeviceInfo> device;
        if (!query.devices.empty()) device = current_device(query);
        if (device) {
            // Before the context is written: the roofline's second floor, measured once per run.
            settings().ffma_per_second = measure_ffma_per_second(nullptr);
            std::fprintf(stderr, "klab-bench: FMA floor: %.1f T FFMA/s measured on %s\n", settings().ffma_per_second / 1e12,
                         device->name.c_str());
        }
        add_context(device);
        if (device) {
#if defined(KLAB_SYNC_AFTER_LAUNCH) || defined(KLAB_DEVICE_DEBUG)
            std::fprintf(stderr, "klab-bench: WARNING: a debug build (synchronised launches, -G device code): these times are "
                                 "not the kernels'; use the release preset\n");
#endif
            std::fprintf(stderr, "klab-bench: %s study on %s; NPP %s; tuning cache from %s\n", to_string(settings().study),
                         device->name.c_str(), npp_version().c_str(), settings().results.c_str());
            register_cases(gpu_study(settings().study, npp_built(), &full_occupancy_shapes), true);
        } else {
            std::fprintf(stderr, "klab-bench: no GPU found (%s): benchmarking the CPU reference only\n",
                         query.no_device_reason.c_str());
            register_cases(cpu_study(settings().study), false);
        }
    } catch (const Error& e) {
        std::fprintf(stderr, "klab-bench: %s\n", e.what());
        return 2;
    }
    std::size_t ran = 0;
    {
        // The rows' device memory goes before CUDA shuts down, whatever happens in the run.
        struct ReleaseDeviceMemory {
            ~ReleaseDeviceMemory() {
                runner::release_end_to_end_rows();
                runner::release_gpu_rows();
            }
        } release;
        ran = benchmark::RunSpecifiedBenchmarks();
        benchmark::Shutdown();
    }
    if (!output.finish(ran > 0 && !listing)) return 1;
    if (ran == 0) {
        if (listing) {
            std::fprintf(stderr, "klab-bench: no benchmark name matches the filter\n");
        } else {
            std::fprintf(stderr, "klab-bench: no benchmark ran (does the filter match any name? klab-bench "
                                 "--benchmark_list_tests, or klab run --list, lists them)\n");
        }
        return 2;
    }
    if (!runner::failed_rows().empty()) {
        std::fprintf(stderr, "klab-bench: %zu row(s) failed:\n", runner::failed_rows().size());
        for (const auto& [name, message] : runner::failed_rows()) std::fprintf(stderr, "  %s: %s\n", name.c_str(), message.c_str());
        return 1;
    }
    return 0;
}

}  // namespace klab::bench
