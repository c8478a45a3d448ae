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
#include <fmt/ranges.h>
#include <unistd.h>

#include "autotune/problem_class.hpp"
#include "autotune/tuner.hpp"
#include "autotune/tuning_cache.hpp"
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

// Whether `variant` runs `problem` with the shape it would get without the cache (--block or its default).
Support runs(const Variant& variant, const Problem& problem, const std::optional<LaunchShape>& block) {
    Support support = variant.supports(problem);
    if (support) support = variant.check_shape(problem, launch_shape(variant, problem, block));
    return support;
}

// The problem on the GPU: the image's shape in the requested layout.
Problem gpu_problem(const Setup& s, const ImageShape& image_shape) {
    const ImageShape shape{image_shape.width, image_shape.height, image_shape.channels, s.layout};
    Problem problem;
    if (s.spec.operation == Operation::convolve) {
        problem = convolve_problem(shape, *s.spec.mask, s.border);
    } else {
        problem.op = s.spec.operation;
        problem.shape = shape;
        problem.border = s.border;
    }
    validate(problem);
    return problem;
}

std::string megabytes(std::size_t bytes) {
    const double b = static_cast<double>(bytes);
    return b < 1e6 ? fmt::format("{:.1f} kB", b / 1e3) : fmt::format("{:.1f} MB", b / 1e6);
}

struct GpuChoice {
    const Variant* variant = nullptr;
    LaunchShape shape;
    std::string shape_explanation;  // the "launch shape:" line
};

// A variant's cached time for the problem, as autotune::lookup() found it.
struct CachedTime {
    const Variant* variant = nullptr;
    autotune::Lookup found;
    double median_us = 0;
};

// Runs the filter on one GPU: the variant and shape (named, or auto), the pipeline path, the
// optional verification. Loads the tuning cache once; one object serves every file of a batch on
// its device. Made with its device current; a thread that calls filter() makes it current first.
class GpuFilter {
public:
    // After a lost CUDA context (a kernel fault) nothing can be freed: the process's end releases
    // the kept pipeline, instead of an error line for each of its buffers, streams and events.
    void abandon_after_lost_context() { (void)pipeline_.release(); }

    GpuFilter(const ApplyOptions& o, const Setup& s, const Variant* requested, std::optional<LaunchShape> block,
              const DeviceInfo& device)
        : o_(o), s_(s), requested_(requested), block_(std::move(block)), device_index_(device.index),
          device_(fmt::format("gpu {} ({})", device.index, device.name)), gpu_(autotune::current_gpu_identity()) {
        std::vector<std::string> warnings;
        cache_ = autotune::TuningCache::load_directory(o.results, warnings);
        for (const std::string& w : warnings) print_note("warning: " + w);
    }
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
        const GpuChoice choice = requested_ != nullptr ? named_choice(problem, notes) : auto_choice(problem, notes);
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
    // --variant NAME: that variant, if it runs the problem, with --block, the cached or the default shape.
    GpuChoice named_choice(const Problem& problem, std::vector<std::string>& notes) const {
        const Support support = requested_->supports(problem);
        if (!support) {
            throw Error(fmt::format("--variant {} does not run {}: {}", requested_->name(), to_string(problem), support.reason()),
                        "--variant auto, or a variant `klab list` shows supporting the problem");
        }
        return with_shape(*requested_, problem, notes);
    }

    // The shape for a chosen variant: --block (checked), else the tuning cache's (re-verified) for
    // a convolution, else the default.
    GpuChoice with_shape(const Variant& variant, const Problem& problem, std::vector<std::string>& notes) const {
        if (block_) {
            const LaunchShape shape = launch_shape(variant, problem, block_);
            const Support support = variant.check_shape(problem, shape);
            if (!support) {
                throw Error(fmt::format("{} does not run {} with block {}: {}", variant.name(), to_string(problem), o_.block,
                                        support.reason()),
                            "a block `klab list` shows for the variant, or no --block");
            }
            return {&variant, shape, fmt::format("block {} (--block)", o_.block)};
        }
        if (problem.op != Operation::convolve) {
            const LaunchShape shape = variant.default_shape(problem);
            return {&variant, shape, fmt::format("block {}, the variant's default (klab tune tunes convolutions only)", to_string(shape))};
        }
        const autotune::Lookup found = autotune::lookup(cache_, variant, autotune::source_hash(variant), problem, gpu_);
        if (found.level == autotune::LookupLevel::variant_default) return {&variant, found.shape, found.explanation};
        std::string failure;
        if (reverified(variant, problem, found.shape, failure)) {
            return {&variant, found.shape, found.explanation + "; re-verified on a 509x287 image"};
        }
        notes.push_back(fmt::format("warning: the cached block {} of {} fails verification ({}); using the default",
                                    to_string(found.shape), variant.name(), failure));
        const LaunchShape fallback = variant.default_shape(problem);
        return {&variant, fallback,
                fmt::format("block {}, the variant's default (the cached {} failed verification)", to_string(fallback),
                            to_string(found.shape))};
    }

    // A cached shape passes verify_shape_once(); `failure` says why not.
    static bool reverified(const Variant& variant, const Problem& problem, const LaunchShape& shape, std::string& failure) {
        try {
            const Verification check = autotune::verify_shape_once(variant, problem, shape);
            if (check.ok()) return true;
            failure = check.summary();
        } catch (const Error& e) {
            failure = e.what();  // e.g. a shape the device cannot run
        }
        return false;
    }

    // --variant auto: the fastest verified variant of the tuning cache for this problem, else a default.
    GpuChoice auto_choice(const Problem& problem, std::vector<std::string>& notes) const {
        if (block_) {
            return default_choice(problem, fmt::format("--block {}: the tuning cache's times are for its own blocks", o_.block),
                                  notes);
        }
        if (problem.op != Operation::convolve) {
            return default_choice(problem, fmt::format("no tuning records for {} (klab tune tunes convolutions only)", to_string(problem.op)),
                                  notes);
        }
        const autotune::ProblemClass wanted = autotune::problem_class(problem);
        std::vector<CachedTime> times = comparable_times(problem, wanted);
        if (times.empty()) {
            return default_choice(problem,
                                  fmt::format("no tuning records for this GPU/class ({} on {})", to_string(wanted), gpu_.name), notes);
        }
        const autotune::ProblemClass& compared = times.front().found.record->problem_class;
        std::vector<std::string> failed;  // faster variants whose cached shape failed re-verification
        for (std::size_t i = 0; i < times.size(); ++i) {
            const CachedTime& t = times[i];
            std::string failure;
            if (!reverified(*t.variant, problem, t.found.shape, failure)) {
                notes.push_back(fmt::format("warning: the cached block {} of {} fails verification ({}); not choosing it",
                                            to_string(t.found.shape), t.variant->name(), failure));
                failed.push_back(t.variant->name());
                continue;
            }
            std::string why = fmt::format("auto: {}, fastest {}in the tuning cache for {}{} on {}: {:.1f} us",
                                          t.variant->name(), failed.empty() ? "" : "verified ", to_string(compared),
                                          compared == wanted ? "" : fmt::format(" (the nearest tuned size to {})", to_string(wanted)),
                                          gpu_.name, t.median_us);
            if (i + 1 < times.size()) {
                why += fmt::format("; next {} {:.1f} us", times[i + 1].variant->name(), times[i + 1].median_us);
            } else if (times.size() == 1) {
                why += "; no other variant has a record of this class";
            }
            if (!failed.empty()) why += fmt::format("; skipped (cached shape failed verification): {}", fmt::join(failed, ", "));
            const std::vector<std::string> stale = stale_variants(problem, compared);
            if (!stale.empty()) {
                why += fmt::format("; not compared (records of {} tuned with another source of the variant: klab tune again): {}",
                                   to_string(compared), fmt::join(stale, ", "));
            }
            notes.push_back(why);
            return {t.variant, t.found.shape, t.found.explanation + "; re-verified on a 509x287 image"};
        }
        return default_choice(problem, fmt::format("no cached shape of {} on {} passed re-verification", to_string(compared), gpu_.name),
                              notes);
    }

    // The cached times of every variant that runs the problem, comparable with one another: this
    // GPU's records (exact class, or the nearest size), all of one class — the exact one where any
    // variant has it, else the nearest tuned size (the larger on a tie, as lookup() prefers) —
    // fastest first. Records of another GPU of the same compute capability are not compared.
    std::vector<CachedTime> comparable_times(const Problem& problem, const autotune::ProblemClass& wanted) const {
        std::vector<CachedTime> times;
        for (const Variant* v : Registry::instance().for_op(problem.op)) {
            if (!v->supports(problem)) continue;
            autotune::Lookup found = autotune::lookup(cache_, *v, autotune::source_hash(*v), problem, gpu_);
            if (found.level != autotune::LookupLevel::exact && found.level != autotune::LookupLevel::nearest_size) continue;
            double median = found.record->top.front().us.median;
            for (const autotune::MeasuredCandidate& m : found.record->top) {
                if (to_string(m.shape) == to_string(found.shape)) {
                    median = m.us.median;
                    break;
                }
            }
            times.push_back({v, std::move(found), median});
        }
        if (times.empty()) return times;
        const int wanted_rank = autotune::resolution_rank(wanted.resolution);
        const auto distance = [&](const CachedTime& t) {
            const int rank = autotune::resolution_rank(t.found.record->problem_class.resolution);
            return std::make_pair(std::abs(rank - wanted_rank), -rank);
        };
        const auto nearest = std::min_element(times.begin(), times.end(),
                                              [&](const CachedTime& a, const CachedTime& b) { return distance(a) < distance(b); });
        const autotune::ProblemClass compared = nearest->found.record->problem_class;
        times.erase(std::remove_if(times.begin(), times.end(),
                                   [&](const CachedTime& t) { return !(t.found.record->problem_class == compared); }),
                    times.end());
        std::stable_sort(times.begin(), times.end(), [](const CachedTime& a, const CachedTime& b) { return a.median_us < b.median_us; });
        return times;
    }

    // Variants that run the problem and have a record of the compared class on this GPU, but only
    // ones tuned with another source of the variant (lookup() skips those): the log says why they
    // are missing.
    std::vector<std::string> stale_variants(const Problem& problem, const autotune::ProblemClass& compared) const {
        std::vector<std::string> names;
        const std::string key = gpu_.key();
        for (const Variant* v : Registry::instance().for_op(problem.op)) {
            if (!v->supports(problem)) continue;
            bool current = false;
            bool stale = false;
            for (const autotune::TuningRecord& r : cache_.records()) {
                if (r.variant != v->name() || r.gpu.key() != key || !(r.problem_class == compared)) continue;
                if (r.source_hash == autotune::source_hash(*v)) {
                    current = true;
                } else {
                    stale = true;
                }
            }
            if (stale && !current) names.push_back(v->name());
        }
        return names;
    }

    // Without usable records: conv.separable_fused for a separable mask, else conv.halo_tiled
    // (sobel.fused for Sobel: one pass, several times faster than sobel.3kernel in the H200 study),
    // where registered and running the problem; else the first registered variant that does.
    GpuChoice default_choice(const Problem& problem, const std::string& reason, std::vector<std::string>& notes) const {
        std::vector<std::pair<std::string, std::string>> preferred;  // name, why
        if (problem.op == Operation::convolve) {
            if (separable_variant_factors(*problem.mask)) {
                preferred = {{"conv.separable_fused", "the mask is separable"}, {"conv.halo_tiled", "the mask is separable"}};
            } else {
                preferred = {{"conv.halo_tiled", "the mask is not separable"}};
            }
        } else if (problem.op == Operation::sobel) {
            preferred = {{"sobel.fused", "one pass over the image"}};
        }
        std::vector<std::string> refusals;
        const auto choose = [&](const Variant& v, const std::string& why) {
            notes.push_back(fmt::format("auto: {}: default choice {} ({}{})", reason, v.name(), why,
                                        refusals.empty() ? "" : fmt::format("; {}", fmt::join(refusals, "; "))));
            return with_shape(v, problem, notes);
        };
        for (const auto& [name, why] : preferred) {
            const Variant* v = Registry::instance().find(name);
            if (v == nullptr) {
                refusals.push_back(name + " is not registered");
                continue;
            }
            const Support support = runs(*v, problem, block_);
            if (support) return choose(*v, why);
            refusals.push_back(fmt::format("{}: {}", name, support.reason()));
        }
        for (const Variant* v : Registry::instance().for_op(problem.op)) {
            if (runs(*v, problem, block_)) return choose(*v, "the first registered variant that runs the problem");
            refusals.push_back(fmt::format("{}: {}", v->name(), runs(*v, problem, block_).reason()));
        }
        throw Error(fmt::format("no registered variant runs {}{} ({})", to_string(problem),
                                block_ ? " with block " + to_string(*block_) : std::string(), fmt::join(refusals, "; ")),
                    "the problems and blocks `klab list` shows for each variant");
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
        Verification verification;
        std::string allowed;
        if (problem.op == Operation::convolve) {
            const ImageU8 expected = reference::convolve(image, *problem.mask, problem.border, s_.threads, progress);
            verification = verify_convolution(image, *problem.mask, problem.border, expected, actual, variant.coefficient_error(problem));
            allowed = "equal values, or 1 apart next to an fp32 rounding tie (harness/verify.hpp)";
        } else {
            verification = verify_exact(reference::sobel(image, problem.border, s_.threads), actual);
            allowed = "equal values (Sobel is exact)";
        }
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
    std::optional<LaunchShape> block_;
    int device_index_;
    std::string device_;  // "gpu 0 (NVIDIA H200)"
    autotune::GpuIdentity gpu_;
    autotune::TuningCache cache_;
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
        requested = requested_variant(o, s.spec);
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
