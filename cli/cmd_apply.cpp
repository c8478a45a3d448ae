// klab apply: filter an image file. The CPU backend runs the reference; the GPU backend runs a
// registered variant (harness/variant.hpp), chosen by name or the first that supports the problem.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "autotune/tuner.hpp"
#include "autotune/tuning_cache.hpp"
#include "cli/commands.hpp"
#include "harness/border.hpp"
#include "harness/cuda_check.hpp"
#include "harness/device_info.hpp"
#include "harness/device_run.hpp"
#include "harness/error.hpp"
#include "harness/filter_spec.hpp"
#include "harness/io/image_io.hpp"
#include "harness/numeric.hpp"
#include "harness/parallel.hpp"
#include "harness/problem.hpp"
#include "harness/reference/reference.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"

namespace klab::cli {

namespace {

struct ApplyOptions {
    std::string backend = "cpu";
    std::string variant = "auto";
    std::string layout = "aos";
    std::string filter;
    std::string border = "replicate";
    int threads = 0;
    std::string block;    // empty: the tuning cache's shape, else the variant's default
    std::string results = "results";  // the tuning cache: <results>/<gpu-slug>/autotune.json
    bool verify = false;  // GPU only: compare with the CPU reference before writing
    std::string input;
    std::string output;
};

// The integral image as a picture: each channel scaled so that its largest sum becomes 255.
ImageU8 integral_visualisation(const ImageU8& in, int threads) {
    const HostImage<std::uint64_t> sums = reference::integral<std::uint64_t>(in, threads);
    ImageU8 out(in.shape());
    for (int c = 0; c < in.channels(); ++c) {
        // An inclusive summed-area table is largest at its bottom-right corner.
        const double largest = static_cast<double>(sums.at(in.width() - 1, in.height() - 1, c));
        for (int y = 0; y < in.height(); ++y) {
            for (int x = 0; x < in.width(); ++x) {
                out.at(x, y, c) = largest == 0.0 ? 0 : saturate_round_u8(255.0 * static_cast<double>(sums.at(x, y, c)) / largest);
            }
        }
    }
    return out;
}

// A percentage on the terminal while a convolution runs; silent when stderr is not a terminal.
reference::Progress terminal_progress() {
    if (isatty(STDERR_FILENO) == 0) return {};
    struct State {
        std::mutex mutex;
        int last_percent = -1;
    };
    auto state = std::make_shared<State>();
    return [state](int done, int total) {
        const int percent = static_cast<int>(100LL * done / total);
        const std::lock_guard<std::mutex> lock(state->mutex);
        if (percent <= state->last_percent) return;
        state->last_percent = percent;
        fmt::print(stderr, "\rfiltering on the CPU: {:3d}%{}", percent, percent == 100 ? "\n" : "");
        std::fflush(stderr);
    };
}

ImageU8 apply_on_cpu(const ImageU8& image, const FilterSpec& spec, Border border, int threads) {
    switch (spec.operation) {
        case Operation::convolve: return reference::convolve(image, *spec.mask, border, threads, terminal_progress());
        case Operation::sobel: return reference::sobel(image, border, threads);
        case Operation::integral: return integral_visualisation(image, threads);
    }
    throw Error("unknown operation");
}

// "box:5 (convolve 5x5)"
std::string filter_text(const ApplyOptions& o, const FilterSpec& spec) {
    return fmt::format("{} ({}{})", o.filter, to_string(spec.operation),
                       spec.mask ? fmt::format(" {}x{}", spec.mask->width(), spec.mask->height()) : std::string());
}

// ---------------------------------------------------------------------------------------------
// CPU backend

// The GPU-only options make no sense for the reference; say so instead of ignoring them.
void check_cpu_options(const ApplyOptions& o) {
    if (o.variant != "auto") {
        throw Error(fmt::format("--variant {} with --backend cpu: the CPU backend always runs the reference", o.variant),
                    "--variant with --backend gpu only");
    }
    if (!o.block.empty()) {
        throw Error(fmt::format("--block {} with --backend cpu: the CPU reference has no launch shape", o.block),
                    "--block with --backend gpu only");
    }
    if (o.verify) {
        throw Error("--verify with --backend cpu: the CPU backend is the reference itself", "--verify with --backend gpu only");
    }
}

void run_apply_cpu(const ApplyOptions& o, const FilterSpec& spec, Border border, Layout layout, int threads) {
    check_cpu_options(o);
    ImageU8 image = io::read_image(o.input);
    const ImageShape input_shape = image.shape();
    io::check_writable(o.output, spec.operation == Operation::sobel ? 1 : input_shape.channels);
    if (layout != Layout::aos) image = reference::to_layout(image, layout);

    const auto start = std::chrono::steady_clock::now();
    ImageU8 result = apply_on_cpu(image, spec, border, threads);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    if (result.layout() != Layout::aos) result = reference::to_layout(result, Layout::aos);
    io::write_image(o.output, result);
    fmt::print("{} -> {}: {} with border {} on cpu, {} thread{}, {}x{}x{} {}: {:.1f} ms\n", o.input, o.output,
               filter_text(o, spec), to_string(border), threads, threads == 1 ? "" : "s", input_shape.width,
               input_shape.height, input_shape.channels, to_string(layout), seconds * 1e3);
}

// ---------------------------------------------------------------------------------------------
// GPU backend: option checks first (no device needed, so they are testable anywhere)

constexpr const char* kGpuFilters = "box:K, gaussian:K, sharpen, laplacian, emboss, unsharp:K, mask:FILE";

// The CLI runs convolutions on the GPU only (a device mask, verify_convolution); say which op lacks what.
void require_gpu_operation(const FilterSpec& spec) {
    const Operation op = spec.operation;
    const bool registered = !Registry::instance().for_op(op).empty();
    if (op == Operation::convolve && registered) return;
    const std::string problem =
        registered ? fmt::format("--backend gpu --filter {}: klab apply does not run {} on the GPU yet", spec.text, to_string(op))
                   : fmt::format("--backend gpu --filter {}: no GPU variant of {} is registered in this build", spec.text,
                                 to_string(op));
    if (op == Operation::convolve) throw Error(problem, "--backend cpu");
    throw Error(problem, fmt::format("--backend cpu for {}, or --backend gpu with a convolution filter ({})", to_string(op),
                                     kGpuFilters));
}

// nullptr for "auto"; otherwise the named variant, which must compute the filter's op.
const Variant* requested_variant(const ApplyOptions& o, const FilterSpec& spec) {
    if (o.variant == "auto") return nullptr;
    const Variant& variant = Registry::instance().get(o.variant);  // its error lists the names
    if (variant.op() != spec.operation) {
        std::vector<std::string> names;
        for (const Variant* v : Registry::instance().for_op(spec.operation)) names.push_back(v->name());
        throw Error(fmt::format("--variant {} computes {}, the filter {} is a {}", o.variant, to_string(variant.op()),
                                spec.text, to_string(spec.operation)),
                    fmt::format("auto, {}", fmt::join(names, ", ")));
    }
    return &variant;
}

// The name of the CUDA device the run uses (the current one, 0), or an error without one.
std::string require_device() {
    const DeviceQuery query = query_devices();
    if (query.devices.empty()) {
        throw Error(fmt::format("--backend gpu: {}", query.no_device_reason), "--backend cpu on a machine without a CUDA device");
    }
    int current = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&current));
    for (const DeviceInfo& d : query.devices) {
        if (d.index == current) return d.name;
    }
    return query.devices.front().name;
}

// The variant's default shape for the problem, with the block replaced by --block when given
// (declared parameters keep their defaults: --block sets only the block).
LaunchShape launch_shape(const Variant& variant, const Problem& problem, const std::optional<LaunchShape>& block) {
    LaunchShape shape = variant.default_shape(problem);
    if (block) {
        shape.block_x = block->block_x;
        shape.block_y = block->block_y;
    }
    return shape;
}

// "auto": the first registered variant (sorted by name) that supports the problem and the shape.
const Variant& auto_variant(const Problem& problem, const std::optional<LaunchShape>& block) {
    std::vector<std::string> refusals;
    for (const Variant* v : Registry::instance().for_op(problem.op)) {
        Support support = v->supports(problem);
        if (support) support = v->check_shape(problem, launch_shape(*v, problem, block));
        if (support) return *v;
        refusals.push_back(fmt::format("{}: {}", v->name(), support.reason()));
    }
    throw Error(fmt::format("no registered variant runs {}{} ({})", to_string(problem),
                            block ? " with block " + to_string(*block) : std::string(), fmt::join(refusals, "; ")),
                "the problems and blocks `klab list` shows for each variant");
}

// ---------------------------------------------------------------------------------------------
// GPU backend: the run

struct TunedShape {
    LaunchShape shape;
    std::string explanation;  // where it came from, for the log
};

// The shape from the tuning cache (autotune/tuning_cache.hpp: exact class, nearest size, same
// compute capability, else the default). A cached shape is re-verified on a small image first;
// one that fails is reported and replaced by the variant's default.
TunedShape tuned_shape(const ApplyOptions& o, const Variant& variant, const Problem& problem) {
    std::vector<std::string> warnings;
    const autotune::TuningCache cache = autotune::TuningCache::load_directory(o.results, warnings);
    for (const std::string& w : warnings) fmt::print(stderr, "klab apply: warning: {}\n", w);
    const autotune::Lookup found =
        autotune::lookup(cache, variant, autotune::source_hash(variant), problem, autotune::current_gpu_identity());
    if (found.level == autotune::LookupLevel::variant_default) return {found.shape, found.explanation};
    std::string failure;
    try {
        const Verification check = autotune::verify_shape_once(variant, problem, found.shape);
        if (check.ok()) return {found.shape, found.explanation + "; re-verified on a 509x287 image"};
        failure = check.summary();
    } catch (const Error& e) {
        failure = e.what();  // e.g. a shape the device cannot run
    }
    fmt::print(stderr, "klab apply: warning: the cached block {} of {} fails verification ({}); using the default\n",
               to_string(found.shape), variant.name(), failure);
    const LaunchShape fallback = variant.default_shape(problem);
    return {fallback, fmt::format("block {}, the variant's default (the cached {} failed verification)", to_string(fallback),
                                  to_string(found.shape))};
}

// The CPU reference's verdict on `actual`; a failure throws, so nothing is written.
std::string verify_against_reference(const ApplyOptions& o, const Variant& variant, const Problem& problem,
                                     const ImageU8& image, const ImageU8& actual, int threads) {
    const ImageU8 expected = reference::convolve(image, *problem.mask, problem.border, threads, terminal_progress());
    const Verification verification = verify_convolution(image, *problem.mask, problem.border, expected, actual);
    if (!verification.ok()) {
        throw Error(fmt::format("--verify: {} differs from the CPU reference: {}; {} was not written", variant.name(),
                                verification.summary(), o.output),
                    "equal values, or 1 apart next to an fp32 rounding tie (harness/verify.hpp)");
    }
    return verification.summary();
}

void run_apply_gpu(const ApplyOptions& o, const FilterSpec& spec, Border border, Layout layout, int threads) {
    require_gpu_operation(spec);
    const std::optional<LaunchShape> block =
        o.block.empty() ? std::nullopt : std::optional<LaunchShape>(parse_block_shape(o.block));
    const Variant* requested = requested_variant(o, spec);
    const std::string device = require_device();

    const ImageU8 image = io::read_image(o.input);
    const ImageShape input_shape = image.shape();
    io::check_writable(o.output, input_shape.channels);
    const Problem problem =
        convolve_problem({input_shape.width, input_shape.height, input_shape.channels, layout}, *spec.mask, border);
    const Variant& variant = requested != nullptr ? *requested : auto_variant(problem, block);
    const TunedShape tuned = block ? TunedShape{launch_shape(variant, problem, block), fmt::format("block {} (--block)", o.block)}
                                   : tuned_shape(o, variant, problem);
    const LaunchShape& shape = tuned.shape;
    fmt::print("launch shape: {}\n", tuned.explanation);

    const DeviceRun result = run_on_device(variant, problem, image, shape);
    const std::string verdict = o.verify ? verify_against_reference(o, variant, problem, image, result.output, threads) : "";
    io::write_image(o.output, result.output);
    fmt::print("{} -> {}: {} with border {} on gpu ({}), variant {}{}, block {}, {}x{}x{} {}: {:.3f} ms GPU time "
               "(CUDA events around one launch after a warm-up)\n",
               o.input, o.output, filter_text(o, spec), to_string(border), device, variant.name(),
               requested != nullptr ? "" : " (auto: the first registered variant that supports the problem)",
               to_string(shape), input_shape.width, input_shape.height, input_shape.channels, to_string(layout),
               result.launch_milliseconds);
    if (o.verify) fmt::print("verified against the CPU reference: {}\n", verdict);
}

void run_apply(const ApplyOptions& o) {
    // Check everything that can be checked before the filtering starts, so a typo costs nothing.
    const FilterSpec spec = parse_filter_spec(o.filter);
    const Border border = parse_border(o.border);
    const Layout layout = parse_layout(o.layout);
    const int threads = resolve_threads(o.threads);
    if (o.backend == "gpu") {
        run_apply_gpu(o, spec, border, layout, threads);
    } else {
        run_apply_cpu(o, spec, border, layout, threads);
    }
}

}  // namespace

void add_apply_command(CLI::App& app) {
    auto o = std::make_shared<ApplyOptions>();
    CLI::App* cmd = app.add_subcommand("apply", "Filter an image file (PNG, JPEG, PGM/PPM)");
    cmd->add_option("--backend", o->backend, "Where to run: cpu (the reference) or gpu (a registered variant)")
        ->check(CLI::IsMember({"cpu", "gpu"}))
        ->capture_default_str();
    cmd->add_option("--variant", o->variant,
                    "GPU variant name (`klab list`), or auto: the first registered one that supports the problem")
        ->capture_default_str();
    cmd->add_option("--block", o->block,
                    "GPU block shape XxY, e.g. 32x8 (default: the tuning cache's for this GPU, else the variant's default)");
    cmd->add_option("--results", o->results, "GPU: results directory holding the tuning cache <results>/<gpu-slug>/autotune.json")
        ->capture_default_str();
    cmd->add_flag("--verify", o->verify,
                  "GPU only: also run the CPU reference and compare; a difference is an error and nothing is written");
    cmd->add_option("--layout", o->layout, "Pixel layout during filtering: aos (interleaved) or soa (planar)")
        ->check(CLI::IsMember({"aos", "soa"}))
        ->capture_default_str();
    cmd->add_option("--filter", o->filter, std::string("Filter: ") + kFilterSpecHelp)->required();
    cmd->add_option("--border", o->border,
                    "Border mode: constant[:V] (V 0..255, default 0), replicate, mirror (reflect-101), reflect, wrap")
        ->capture_default_str();
    cmd->add_option("--threads", o->threads, "CPU threads: 0 = one per hardware thread, 1 = sequential")
        ->check(CLI::Range(0, kMaxThreads))
        ->capture_default_str();
    cmd->add_option("IN", o->input, "Input image")->required()->check(CLI::ExistingFile);
    cmd->add_option("OUT", o->output, "Output image; its extension picks the format")->required();
    cmd->callback([o] { run_apply(*o); });
}

}  // namespace klab::cli
