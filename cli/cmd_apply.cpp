// klab apply: filter image files. The CPU backend runs the reference; the GPU backend runs a
// registered variant (harness/variant.hpp), chosen by name or by `auto` (the fastest in the
// tuning cache, else a default), through the strip pipeline (harness/strip_pipeline.hpp) from
// pinned host memory, or with --sync in one synchronous piece. One file (IN OUT) or many
// (--out-dir DIR INPUT..., --list FILE: cli/apply_batch.hpp), on one GPU (--device N) or spread
// over every GPU (--device all: one strip pipeline per GPU, each taking the next file when free).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <unistd.h>

#include "autotune/tuning_cache.hpp"
#include "autotune/variant_choice.hpp"
#include "cli/apply_batch.hpp"
#include "cli/commands.hpp"
#include "harness/border.hpp"
#include "harness/cuda_check.hpp"
#include "harness/device_info.hpp"
#include "harness/device_select.hpp"
#include "harness/error.hpp"
#include "harness/filter_spec.hpp"
#include "harness/io/image_io.hpp"
#include "harness/mask.hpp"
#include "harness/numeric.hpp"
#include "harness/parallel.hpp"
#include "harness/problem.hpp"
#include "harness/reference/reference.hpp"
#include "harness/strip_pipeline.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"

namespace klab::cli {

namespace {

namespace fs = std::filesystem;

constexpr int kMaxStrips = 65536;

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
    int strips = 0;       // GPU: --strips N asks for about N strips (0: the automatic split)
    bool strips_given = false;
    int in_flight = 3;    // GPU: strips on the device at once in the strip path
    bool in_flight_given = false;
    bool sync = false;    // GPU: the synchronous one-shot path
    std::vector<std::string> paths;  // IN OUT; with --out-dir, the inputs
    std::string out_dir;
    std::string list;     // --list FILE: more inputs, one per line
    std::string format;   // --format: the batch outputs' extension; empty keeps the input's
    std::string device;   // GPU: --device N or all; empty: the current device
};

// What every image of a run is filtered with, parsed once.
struct Setup {
    FilterSpec spec;
    Border border;
    Layout layout = Layout::aos;
    int threads = 1;
};

// The output's channels for an input of `channels`: Sobel writes one gradient magnitude.
int output_channels(const FilterSpec& spec, int channels) { return spec.operation == Operation::sobel ? 1 : channels; }

// Progress lines and the GPU's choices: warnings to stderr, the rest to stdout.
void print_note(const std::string& note) {
    if (note.rfind("warning: ", 0) == 0) {
        fmt::print(stderr, "klab apply: {}\n", note);
    } else {
        fmt::print("{}\n", note);
    }
}

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

// "box:5 (convolve 5x5)"
std::string filter_text(const FilterSpec& spec) {
    return fmt::format("{} ({}{})", spec.text, to_string(spec.operation),
                       spec.mask ? fmt::format(" {}x{}", spec.mask->width(), spec.mask->height()) : std::string());
}

// ---------------------------------------------------------------------------------------------
// Option checks that need no file and no device, so that a typo costs nothing

// IN OUT, or --out-dir DIR with inputs; the batch-only options need --out-dir.
void check_mode_options(const ApplyOptions& o) {
    if (!o.out_dir.empty()) {
        if (o.paths.empty() && o.list.empty()) {
            throw Error("--out-dir without inputs", "--out-dir DIR INPUT... (image files or directories) and/or --list FILE");
        }
        return;
    }
    if (!o.list.empty()) {
        throw Error(fmt::format("--list {} without --out-dir: a batch writes into a directory", o.list), "--out-dir DIR --list FILE");
    }
    if (!o.format.empty()) {
        throw Error(fmt::format("--format {} without --out-dir: with IN OUT, OUT's extension picks the format", o.format),
                    "--format with --out-dir DIR");
    }
    if (o.paths.size() != 2) {
        throw Error(fmt::format("klab apply takes IN OUT, got {} path{}{}", o.paths.size(), o.paths.size() == 1 ? "" : "s",
                                o.paths.size() == 1 ? " (OUT is missing)" : ""),
                    "IN OUT for one image, or --out-dir DIR INPUT... (image files or directories) for many");
    }
}

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
    if (o.strips_given || o.in_flight_given || o.sync) {
        throw Error(fmt::format("{} with --backend cpu: strips and the synchronous path are the GPU pipeline's",
                                o.strips_given ? "--strips" : o.in_flight_given ? "--in-flight" : "--sync"),
                    "--strips, --in-flight and --sync with --backend gpu only");
    }
    if (!o.device.empty()) {
        throw Error(fmt::format("--device {} with --backend cpu: the CPU backend uses no device", o.device),
                    "--device with --backend gpu only");
    }
}

// --device all spreads a batch over the GPUs: one file runs on one.
void check_device_option(const ApplyOptions& o, const DeviceRequest& request) {
    if (request.all && o.out_dir.empty()) {
        throw Error("--device all with IN OUT: one file runs on one GPU",
                    "--device N for one file, or --device all --out-dir DIR INPUT... to spread a batch over the GPUs");
    }
}

// --sync is the one-shot path, one piece at a time: strips in flight contradict it.
void check_pipeline_options(const ApplyOptions& o) {
    if (o.sync && o.strips_given) {
        throw Error(fmt::format("--sync with --strips {}: --sync filters the whole image in one piece, --strips cuts it into strips",
                                o.strips),
                    "one of them");
    }
    if (o.sync && o.in_flight_given) {
        throw Error(fmt::format("--sync with --in-flight {}: the synchronous path holds the whole image, one piece", o.in_flight),
                    "--in-flight without --sync (the strip path)");
    }
}

constexpr const char* kGpuFilters = "box:K, gaussian:K, sharpen, laplacian, emboss, unsharp:K, mask:FILE, sobel";

// The GPU runs what the strip pipeline runs (convolutions and Sobel); say which op lacks what.
void require_gpu_operation(const FilterSpec& spec) {
    const Operation op = spec.operation;
    if (op == Operation::integral) {
        throw Error(fmt::format("--backend gpu --filter {}: klab apply computes integral images on the CPU only (their sums "
                                "carry across the whole image, so they cannot go through the strip pipeline)",
                                spec.text),
                    fmt::format("--backend cpu for integral, or --backend gpu with {}", kGpuFilters));
    }
    if (Registry::instance().for_op(op).empty()) {
        throw Error(fmt::format("--backend gpu --filter {}: no GPU variant of {} is registered in this build", spec.text,
                                to_string(op)),
                    "--backend cpu");
    }
}

// ---------------------------------------------------------------------------------------------
// CPU backend

ImageU8 apply_on_cpu(const ImageU8& image, const Setup& s, const reference::Progress& progress) {
    switch (s.spec.operation) {
        case Operation::convolve: return reference::convolve(image, *s.spec.mask, s.border, s.threads, progress);
        case Operation::sobel: return reference::sobel(image, s.border, s.threads);
        case Operation::integral: return integral_visualisation(image, s.threads);
    }
    throw Error("unknown operation");
}

FilteredImage filter_on_cpu(const Setup& s, ImageU8 image, const reference::Progress& progress) {
    const ImageShape input_shape = image.shape();
    if (s.layout != Layout::aos) image = reference::to_layout(image, s.layout);
    const auto start = std::chrono::steady_clock::now();
    ImageU8 result = apply_on_cpu(image, s, progress);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (result.layout() != Layout::aos) result = reference::to_layout(result, Layout::aos);
    FilteredImage filtered;
    filtered.image = std::move(result);
    filtered.description = fmt::format("{} with border {} on cpu, {} thread{}, {}x{}x{} {}: {:.1f} ms", filter_text(s.spec),
                                       to_string(s.border), s.threads, s.threads == 1 ? "" : "s", input_shape.width,
                                       input_shape.height, input_shape.channels, to_string(s.layout), seconds * 1e3);
    return filtered;
}

// ---------------------------------------------------------------------------------------------
// GPU backend

// The devices the run uses: the one --device names, every one for --device all, else the current
// one; an error without any.
std::vector<DeviceInfo> gpu_devices(const ApplyOptions& o, const DeviceRequest& request) {
    const DeviceQuery query = query_devices();
    if (query.devices.empty()) {
        throw Error(fmt::format("--backend gpu{}: {}", o.device.empty() ? "" : " --device " + o.device, query.no_device_reason),
                    "--backend cpu on a machine without a CUDA device");
    }
    if (!request.given) return {current_device(query)};
    return requested_devices(request, query, std::getenv("CUDA_VISIBLE_DEVICES"));
}

// The problem on the GPU: the image's shape in the requested layout.
Problem gpu_problem(const Setup& s, const ImageShape& image_shape) {
    return make_problem(s.spec, {image_shape.width, image_shape.height, image_shape.channels, s.layout}, s.border);
}

std::string megabytes(std::size_t bytes) {
    const double b = static_cast<double>(bytes);
    return b < 1e6 ? fmt::format("{:.1f} kB", b / 1e3) : fmt::format("{:.1f} MB", b / 1e6);
}

// Runs the filter on one GPU: the variant and shape (named, or auto: autotune::VariantChooser),
// the pipeline path, the optional verification. Loads the tuning cache once; one object serves
// every file of a batch on its device. Made with its device current; a thread that calls filter()
// makes it current first.
class GpuFilter {
public:
    // After a lost CUDA context (a kernel fault) nothing can be freed: the process's end releases
    // the kept pipeline, instead of an error line for each of its buffers, streams and events.
    void abandon_after_lost_context() { (void)pipeline_.release(); }

    GpuFilter(const ApplyOptions& o, const Setup& s, const Variant* requested, std::optional<LaunchShape> block,
              const DeviceInfo& device)
        : o_(o), s_(s), requested_(requested), device_index_(device.index),
          device_(fmt::format("gpu {} ({})", device.index, device.name)),
          chooser_(load_cache(o.results), autotune::current_gpu_identity(), std::move(block), o.block) {}
    // The kept pipeline's streams and memory are freed with their own device current.
    ~GpuFilter() {
        if (pipeline_) KLAB_CUDA_CHECK_NOTHROW(cudaSetDevice(device_index_));
    }
    GpuFilter(const GpuFilter&) = delete;
    GpuFilter& operator=(const GpuFilter&) = delete;

    int device_index() const { return device_index_; }
    const std::string& device_name() const { return device_; }

    // `notes`: the choices made, as they are made (so that they can be printed even when a later
    // step fails). Throws klab::Error when the image cannot be filtered or fails --verify.
    FilteredImage filter(const ImageU8& image, const std::string& output_name, const reference::Progress& progress,
                         std::vector<std::string>& notes) const {
        const Problem problem = gpu_problem(s_, image.shape());
        const autotune::VariantChoice choice = chooser_.choose(problem, requested_, notes);
        notes.push_back("launch shape: " + choice.shape_explanation);
        FilteredImage filtered;
        const PipelineRun run = run_path(*choice.variant, problem, choice.shape, image, filtered.image, notes);
        const ImageShape& in = image.shape();
        filtered.description =
            fmt::format("{} with border {} on {}, variant {}{}, block {}, {}x{}x{} {}: {} (host wall time, pinning and "
                        "transfers included)",
                        filter_text(s_.spec), to_string(s_.border), device_, choice.variant->name(),
                        requested_ != nullptr ? "" : " (auto)", to_string(choice.shape), in.width, in.height, in.channels,
                        to_string(s_.layout), run.summary());
        if (o_.verify) {
            filtered.description += "\nverified against the CPU reference: " +
                                    verify(*choice.variant, problem, image, filtered.image, output_name, progress);
        }
        return filtered;
    }

private:
    // The tuning cache of every GPU under --results; its warnings are printed.
    static autotune::TuningCache load_cache(const std::string& results) {
        std::vector<std::string> warnings;
        autotune::TuningCache cache = autotune::TuningCache::load_directory(results, warnings);
        for (const std::string& w : warnings) print_note("warning: " + w);
        return cache;
    }

    // The path: --sync the synchronous one shot, from the decoded (pageable) image; otherwise the
    // strip pipeline from pinned memory, whether or not the image fits the device (--strips N
    // fixes the strip count). The pipeline is kept for the next image of the same problem (a
    // batch pays for its buffers and plans once). On an H200, 8K RGB Gaussian 5x5 host to host:
    // 2.2 ms pipelined from pinned memory against 17 to 31 ms one shot from pageable memory;
    // pinning the two images for the call costs about 10 ms more (cudaHostRegister took 3.4 to 4.4
    // ms and cudaHostUnregister 1.6 ms per 8K RGB image), still ahead of the pageable one shot.
    // One `klab apply` of an 8K PNG printed 61 ms against 66 ms with --sync: for a single image
    // the call's own costs (device allocation, the result's host memory, pinning) dominate.
    PipelineRun run_path(const Variant& variant, const Problem& problem, const LaunchShape& shape, const ImageU8& image,
                         ImageU8& output, std::vector<std::string>& notes) const {
        const std::size_t needed = one_shot_bytes(variant, problem, shape);
        const std::string key = fmt::format("{} {} {}", variant.name(), to_string(problem), to_string(shape));
        if (pipeline_ && pipeline_key_ != key) pipeline_.reset();  // its device memory is free before the budget is read
        const std::size_t budget = device_memory_budget();
        if (o_.sync) {
            if (needed > budget) {
                throw Error(fmt::format("--sync: the image needs {} of device memory, the budget is {}", megabytes(needed),
                                        megabytes(budget)),
                            "no --sync: the strip path holds only a few strips on the device");
            }
            notes.push_back(fmt::format("gpu path: one shot, synchronous (--sync; the image needs {} of device memory, the budget is {})",
                                        megabytes(needed), megabytes(budget)));
            return run_one_shot(variant, problem, shape, image, output);
        }
        require_strips(problem);
        PipelineOptions options;
        options.in_flight = o_.in_flight;
        options.strips = o_.strips_given ? o_.strips : 0;
        options.device_budget_bytes = budget;
        if (!pipeline_) {
            pipeline_ = std::make_unique<StripPipeline>(variant, problem, shape, options);
            pipeline_key_ = key;
            pipeline_note_.clear();
        }
        const PipelineRun run = pipeline_->run(image, output, true);
        // Said as the pipeline was made: the budget read for a later image of a batch counts the
        // kept pipeline as used, and the line would change for nothing.
        if (pipeline_note_.empty()) {
            pipeline_note_ = fmt::format("gpu path: strip pipeline from pinned host memory ({}{} strip{}, {} in flight; the whole "
                                         "image would need {} of device memory, the budget is {})",
                                         o_.strips_given ? "--strips: " : "", run.strips, run.strips == 1 ? "" : "s", run.in_flight,
                                         megabytes(needed), megabytes(budget));
        }
        notes.push_back(pipeline_note_);
        return run;
    }

    static void require_strips(const Problem& problem) {
        const Support support = strips_support(problem);
        if (!support) {
            throw Error(fmt::format("{} cannot go through strips: {}", to_string(problem), support.reason()),
                        "a convolution or sobel");
        }
    }

    // The CPU reference's verdict on `actual`; a failure throws, so nothing is written.
    std::string verify(const Variant& variant, const Problem& problem, const ImageU8& image, const ImageU8& actual,
                       const std::string& output_name, const reference::Progress& progress) const {
        const Verification verification =
            verify_result(problem, image, actual, variant.coefficient_error(problem), s_.threads, progress);
        const std::string allowed = problem.op == Operation::convolve
                                        ? "equal values, or 1 apart next to an fp32 rounding tie (harness/verify.hpp)"
                                        : "equal values (Sobel is exact)";
        if (!verification.ok()) {
            throw Error(fmt::format("--verify: {} differs from the CPU reference: {}; {} was not written", variant.name(),
                                    verification.summary(), output_name),
                        allowed);
        }
        return verification.summary();
    }

    const ApplyOptions& o_;
    const Setup& s_;
    const Variant* requested_;
    int device_index_;
    std::string device_;  // "gpu 0 (NVIDIA H200)"
    autotune::VariantChooser chooser_;
    // The strip pipeline of the last image, reused while the problem stays the same.
    mutable std::unique_ptr<StripPipeline> pipeline_;
    mutable std::string pipeline_key_;
    mutable std::string pipeline_note_;  // its "gpu path:" line
};

// ---------------------------------------------------------------------------------------------
// One file, many files

// One GpuFilter per device the run uses (none for the CPU backend), each made with its device current.
using GpuFilters = std::vector<std::unique_ptr<GpuFilter>>;
using MakeGpuFilters = std::function<GpuFilters()>;

void run_single(const ApplyOptions& o, const Setup& s, const MakeGpuFilters& make_gpus) {
    const std::string& in = o.paths[0];
    const std::string& out = o.paths[1];
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
        throw Error(fmt::format("IN '{}' is a directory", in), "an image file, or --out-dir DIR INPUT... for a directory's images");
    }
    if (!fs::exists(in, ec)) throw Error(fmt::format("IN '{}' does not exist", in), "an image file");
    const GpuFilters gpus = make_gpus();  // the device first: without one, nothing is read
    GpuFilter* gpu = gpus.empty() ? nullptr : gpus.front().get();

    ImageU8 image = io::read_image(in);
    io::check_writable(out, output_channels(s.spec, image.channels()));
    FilteredImage filtered;
    if (gpu != nullptr) {
        std::vector<std::string> notes;
        try {
            filtered = gpu->filter(image, out, terminal_progress(), notes);
        } catch (...) {
            for (const std::string& note : notes) print_note(note);
            if (!sticky_cuda_error().empty()) gpu->abandon_after_lost_context();
            throw;
        }
        for (const std::string& note : notes) print_note(note);
    } else {
        filtered = filter_on_cpu(s, std::move(image), terminal_progress());
    }
    io::write_image(out, filtered.image);
    fmt::print("{} -> {}: {}\n", in, out, filtered.description);
}

// One file of a batch on `gpu` (its device made current: this may be a worker thread of its own),
// or on the CPU for a null `gpu`. `last_notes`: the worker's previous notes; the GPU's choices are
// printed again only when they change.
FilteredImage filter_batch_file(const Setup& s, GpuFilter* gpu, std::vector<std::string>& last_notes, ImageU8 image,
                                const BatchFile& file) {
    // The output is checked before the filtering (e.g. RGBA into a JPEG), as for one file.
    io::check_writable(file.output, output_channels(s.spec, image.channels()));
    if (gpu == nullptr) return filter_on_cpu(s, std::move(image), {});
    use_device(gpu->device_index());
    std::vector<std::string> notes;
    FilteredImage filtered;
    try {
        filtered = gpu->filter(image, file.output.string(), {}, notes);
    } catch (const std::exception& e) {
        // A lost CUDA context fails every later file too: stop with this one's message.
        if (const std::string sticky = sticky_cuda_error(); !sticky.empty()) {
            gpu->abandon_after_lost_context();
            throw BatchStop(fmt::format("{}; the CUDA context is lost ({}), so the batch stops", e.what(), sticky));
        }
        throw;
    }
    if (notes != last_notes) {
        filtered.notes = notes;
        last_notes = std::move(notes);
    }
    return filtered;
}

void run_many(const ApplyOptions& o, const Setup& s, const MakeGpuFilters& make_gpus) {
    const GpuFilters gpus = make_gpus();  // the devices first: without one, nothing is created
    const std::vector<BatchFile> files = plan_batch(o.paths, o.list, o.out_dir, o.format);
    if (gpus.size() > 1) {
        std::string names;
        for (const auto& gpu : gpus) names += (names.empty() ? "" : ", ") + gpu->device_name();
        fmt::print("--device all: {} files over {} GPUs ({}), each taking the next file when it is free\n", files.size(),
                   gpus.size(), names);
    }
    std::vector<std::vector<std::string>> last_notes(std::max<std::size_t>(gpus.size(), 1));
    std::vector<BatchFilter> workers;
    for (std::size_t w = 0; w < last_notes.size(); ++w) {
        GpuFilter* gpu = gpus.empty() ? nullptr : gpus[w].get();
        workers.push_back([&s, gpu, &notes = last_notes[w]](ImageU8 image, const BatchFile& file) {
            return filter_batch_file(s, gpu, notes, std::move(image), file);
        });
    }
    run_batch(files, workers);
}

void run_apply(const ApplyOptions& o) {
    // Check everything that can be checked before the filtering starts, so a typo costs nothing.
    check_mode_options(o);
    Setup s{parse_filter_spec(o.filter), parse_border(o.border), parse_layout(o.layout), resolve_threads(o.threads)};
    MakeGpuFilters make_gpus = [] { return GpuFilters(); };
    std::optional<LaunchShape> block;
    const Variant* requested = nullptr;
    DeviceRequest device;
    if (o.backend == "gpu") {
        require_gpu_operation(s.spec);
        block = o.block.empty() ? std::nullopt : std::optional<LaunchShape>(parse_block_shape(o.block));
        requested = autotune::requested_variant(o.variant, s.spec);
        check_pipeline_options(o);
        if (!o.device.empty()) device = parse_device_request(o.device);
        check_device_option(o, device);
        make_gpus = [&] {
            GpuFilters gpus;
            for (const DeviceInfo& d : gpu_devices(o, device)) {
                use_device(d.index);
                gpus.push_back(std::make_unique<GpuFilter>(o, s, requested, block, d));
            }
            use_device(gpus.front()->device_index());  // the calling thread filters on the first
            return gpus;
        };
    } else {
        check_cpu_options(o);
    }
    if (o.out_dir.empty()) {
        run_single(o, s, make_gpus);
    } else {
        run_many(o, s, make_gpus);
    }
}

}  // namespace

void add_apply_command(CLI::App& app) {
    auto o = std::make_shared<ApplyOptions>();
    CLI::App* cmd = app.add_subcommand(
        "apply", "Filter an image file (PNG, JPEG, PGM/PPM): klab apply [OPTIONS] IN OUT, or many: klab apply [OPTIONS] "
                 "--out-dir DIR INPUT... (files or directories) [--list FILE]");
    cmd->add_option("--backend", o->backend, "Where to run: cpu (the reference) or gpu (a registered variant)")
        ->check(CLI::IsMember({"cpu", "gpu"}))
        ->capture_default_str();
    cmd->add_option("--variant", o->variant,
                    "GPU variant name (`klab list`), or auto: the fastest verified one in the tuning cache for the problem, "
                    "else a default (conv.separable_fused for a separable mask, conv.halo_tiled, sobel.fused)")
        ->capture_default_str();
    cmd->add_option("--block", o->block,
                    "GPU block shape XxY, e.g. 32x8 (default: the tuning cache's for this GPU, else the variant's default)");
    cmd->add_option("--results", o->results, "GPU: results directory holding the tuning cache <results>/<gpu-slug>/autotune.json")
        ->capture_default_str();
    cmd->add_flag("--verify", o->verify,
                  "GPU only: also run the CPU reference and compare; a difference is an error and nothing is written");
    CLI::Option* strips = cmd->add_option("--strips", o->strips,
                                          "GPU: about N horizontal strips, whose upload, kernel and download overlap (default: 24 "
                                          "strips of at least 2 MiB, shorter where the device-memory budget, KLAB_DEVICE_MEMORY_BUDGET, "
                                          "needs it)")
                              ->check(CLI::Range(1, kMaxStrips));
    CLI::Option* in_flight = cmd->add_option("--in-flight", o->in_flight,
                                             "GPU: strips on the device at once in the strip path (one device buffer each)")
                                 ->check(CLI::Range(1, kMaxStripsInFlight))
                                 ->capture_default_str();
    cmd->add_flag("--sync", o->sync,
                  "GPU: the synchronous one-shot path (upload all from pageable memory, filter, download all); not with --strips "
                  "or --in-flight");
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
    cmd->add_option("--out-dir", o->out_dir,
                    "Batch: write DIR/<input file name> for every input (DIR is created when missing); the paths are then inputs");
    cmd->add_option("--list", o->list, "Batch: a file naming more inputs, one per line ('#' lines are comments)");
    cmd->add_option("--format", o->format, "Batch: the outputs' format (default: each input's extension)")
        ->check(CLI::IsMember({"png", "jpg", "pgm", "ppm"}));
    cmd->add_option("--device", o->device,
                    "GPU: the CUDA device (an index as `klab info` lists them; default: the first CUDA shows), or all: a "
                    "batch spread over every GPU, each taking the next file when it is free (same outputs as one GPU)");
    cmd->add_option("PATHS", o->paths,
                    "IN OUT (OUT's extension picks the format), or with --out-dir the inputs: image files, or directories "
                    "(their .png .jpg .jpeg .pgm .ppm files, sorted, not recursive)");
    cmd->callback([o, strips, in_flight] {
        o->strips_given = strips->count() > 0;
        o->in_flight_given = in_flight->count() > 0;
        run_apply(*o);
    });
}

}  // namespace klab::cli
