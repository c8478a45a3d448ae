// klab run: the main job. On a GPU machine it will tune, benchmark every variant on the seeds'
// matrix and write results/<gpu>/; today it runs what exists — every GPU variant once, verified
// against the reference, and the CPU reference, sequential and multithreaded, on the seeds'
// resolutions and mask sizes — and says what is missing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.hpp"
#include "harness/device_info.hpp"
#include "harness/device_run.hpp"
#include "harness/error.hpp"
#include "harness/mask.hpp"
#include "harness/parallel.hpp"
#include "harness/reference/reference.hpp"
#include "harness/synth.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"

namespace klab::cli {

namespace {

struct RunOptions {
    std::vector<std::string> sizes = {"480p", "720p", "HD", "4K", "8K"};
    std::vector<int> mask_sizes = {3, 5, 7, 9};
    int threads = 0;
};

double seconds_of(const std::function<void()>& work) {
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One row of the study: the reference on one image and mask, sequential and multithreaded.
void time_row(const std::string& label, const ImageU8& image, const Mask& mask, int threads) {
    const Border border{BorderMode::replicate, 0};
    ImageU8 sequential, parallel;
    const double t1 = seconds_of([&] { sequential = reference::convolve(image, mask, border, 1); });
    const double tn = seconds_of([&] { parallel = reference::convolve(image, mask, border, threads); });
    fmt::print("  {:<22} {:>12.1f} {:>12.1f} {:>8.2f}x {}\n", label, t1 * 1e3, tn * 1e3, t1 / tn,
               same_pixels(sequential, parallel) ? "identical" : "DIFFERENT");
}

// Every registered convolution variant once on an HD image, verified against the reference: a
// quick check that this GPU runs them right. Timing is klab-bench's job; the launch time shown
// is one launch after a warm-up.
void check_gpu_variants() {
    const synth::Resolution hd = synth::parse_resolution("HD");
    const ImageU8 image = synth::generate(synth::Pattern::natural, hd.width, hd.height, 3);
    const Mask mask = masks::gaussian(5);
    const Border border{BorderMode::replicate, 0};
    const ImageU8 expected = reference::convolve(image, mask, border, 0);
    const Problem problem = convolve_problem(image.shape(), mask, border);
    fmt::print("GPU variants, each run once on HD natural RGB, gauss5, replicate, default block, verified:\n");
    std::vector<std::string> failed;
    for (const Variant* variant : Registry::instance().for_op(Operation::convolve)) {
        if (const Support s = variant->supports(problem); !s) {
            fmt::print("  {:<20} skipped: {}\n", variant->name(), s.reason());  // e.g. box masks only
            continue;
        }
        const LaunchShape shape = variant->default_shape(problem);
        const DeviceRun run = run_on_device(*variant, problem, image, shape);
        const Verification v = verify_convolution(image, mask, border, expected, run.output, variant->coefficient_error(problem));
        fmt::print("  {:<20} block {:<6} {:>9.3f} ms  {}\n", variant->name(), to_string(shape), run.launch_milliseconds,
                   v.summary());
        if (!v.ok()) failed.push_back(variant->name());
    }
    // A wrong result is a defect of this build on this GPU, not a figure: stop with an error.
    if (!failed.empty()) {
        throw Error(fmt::format("GPU variants differ from the CPU reference on this device: {}", fmt::join(failed, ", ")),
                    "results equal to the reference (run `ctest --preset release` and report the failure)");
    }
}

void run_study(const RunOptions& o) {
    const DeviceQuery query = query_devices();
    if (query.devices.empty()) {
        fmt::print("GPU: {}. Only the CPU reference can run here.\n", query.no_device_reason);
    } else {
        fmt::print("GPU: {} (compute capability {}.{}, {} SMs)\n", query.devices[0].name, query.devices[0].cc_major,
                   query.devices[0].cc_minor, query.devices[0].sm_count);
    }
    // Refuse a bad size before any work.
    const int threads = resolve_threads(o.threads);
    std::vector<synth::Resolution> resolutions;
    for (const auto& s : o.sizes) resolutions.push_back(synth::parse_resolution(s));
    for (int k : o.mask_sizes) (void)masks::gaussian(k);

    if (!query.devices.empty()) check_gpu_variants();
    fmt::print("Not built yet, so not run: klab-bench and results/<gpu>/bench.json (tune with `klab tune`).\n\n");

    fmt::print("CPU reference, gaussian, replicate border, synthetic natural RGB images, one run each\n");
    const auto header = [threads](const char* title) {
        fmt::print("{}\n  {:<22} {:>12} {:>12} {:>9}\n", title, "problem", "1 thread ms",
                   fmt::format("{} thr. ms", threads), "speedup");
    };
    header("by resolution (seed 000, table 1):");
    for (const auto& r : resolutions) {
        const ImageU8 image = synth::generate(synth::Pattern::natural, r.width, r.height, 3);
        time_row(fmt::format("{} gauss3", r.name), image, masks::gaussian(3), threads);
    }
    const synth::Resolution hd = synth::parse_resolution("HD");
    const ImageU8 image = synth::generate(synth::Pattern::natural, hd.width, hd.height, 3);
    header("by mask size at HD (seed 000, table 2):");
    for (int k : o.mask_sizes) time_row(fmt::format("HD gauss{}", k), image, masks::gaussian(k), threads);
}

}  // namespace

void add_run_command(CLI::App& app) {
    auto o = std::make_shared<RunOptions>();
    CLI::App* cmd = app.add_subcommand("run", "The main job: run the seeds' study with everything this build has");
    cmd->add_option("--sizes", o->sizes, "Resolutions: 480p, 720p, HD, 4K, 8K or WxH")->capture_default_str();
    cmd->add_option("--mask-sizes", o->mask_sizes, "Gaussian sizes for the HD mask study (odd, 1..31)")
        ->capture_default_str();
    cmd->add_option("--threads", o->threads, "CPU threads of the multithreaded reference: 0 = all")
        ->check(CLI::Range(0, kMaxThreads))
        ->capture_default_str();
    cmd->callback([o] { run_study(*o); });
}

}  // namespace klab::cli
