// klab apply: filter image files. The CPU backend runs the reference; the GPU backend runs a
// registered variant (harness/variant.hpp), chosen by name or by `auto` (the fastest in the
// tuning cache, else a default), through the strip pipeline (harness/strip_pipeline.hpp) from
// pinned host memory, or with --sync in one synchronous piece (cli/apply_gpu_filter.hpp). One file
// (IN OUT) or many (--out-dir DIR INPUT..., --list FILE: cli/apply_batch.hpp), on one GPU
// (--device N) or spread over every GPU (--device all: one strip pipeline per GPU, each taking the
// next file when free). This file holds the command line, the CPU backend and the runs of one file
// and of many; the option checks are in cli/apply_checks.cpp.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "autotune/variant_choice.hpp"
#include "cli/apply_batch.hpp"
#include "cli/apply_gpu_filter.hpp"
#include "cli/apply_options.hpp"
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "harness/border.hpp"
#include "harness/device_info.hpp"
#include "harness/device_select.hpp"
#include "harness/error.hpp"
#include "harness/filter_spec.hpp"
#include "harness/io/image_io.hpp"
#include "harness/numeric.hpp"
#include "harness/parallel.hpp"
#include "harness/reference/reference.hpp"
#include "harness/strip_pipeline.hpp"

namespace klab::cli {
namespace apply {

// Progress lines and the GPU's choices: warnings to stderr, the rest to stdout.
void print_note(const std::string& note) {
    if (note.rfind("warning: ", 0) == 0) {
        fmt::print(stderr, "klab apply: {}\n", note);
    } else {
        fmt::print("{}\n", note);
    }
}

// "box:5 (convolve 5x5)"
std::string filter_text(const FilterSpec& spec) {
    if (spec.mask) return fmt::format("{} ({} {}x{})", spec.text, to_string(spec.operation), spec.mask->width(), spec.mask->height());
    return spec.text == to_string(spec.operation) ? spec.text : fmt::format("{} ({})", spec.text, to_string(spec.operation));
}

std::string border_text(const FilterSpec& spec, const Border& border) {
    return spec.operation == Operation::integral ? std::string() : " with border " + to_string(border);
}

namespace {

namespace fs = std::filesystem;

constexpr int kMaxStrips = 65536;

// The output's channels for an input of `channels`: Sobel writes one gradient magnitude.
int output_channels(const FilterSpec& spec, int channels) { return spec.operation == Operation::sobel ? 1 : channels; }

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
        // At 100% the line is cleared: the result's own line says how long it took.
        fmt::print(stderr, "\rfiltering on the CPU: {:3d}%{}", percent, percent == 100 ? "\r\033[K" : "");
        std::fflush(stderr);
    };
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
    filtered.description = fmt::format("{}{} on cpu, {} thread{}, {}x{}x{} {}: {:.1f} ms", filter_text(s.spec),
                                       border_text(s.spec, s.border), s.threads, s.threads == 1 ? "" : "s", input_shape.width,
                                       input_shape.height, input_shape.channels, to_string(s.layout), seconds * 1e3);
    return filtered;
}

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
    if (!fs::exists(in, ec)) {
        // exists() fails, not just answers false, for a loop of symbolic links or a folder it may not search.
        const std::string why = ec ? ec.message() : "no such file";
        throw Error(fmt::format("IN '{}' cannot be read: {}", printable(in), why), "an existing, readable image file");
    }
    if (io::output_replaces_input(in, out)) {
        // The write would be safe (atomic, after the filtering), but the original would be gone.
        throw Error(fmt::format("OUT '{}' is IN '{}' itself: the filtered image would replace the input", printable(out),
                                printable(in)),
                    "an OUT other than IN (klab apply never replaces its input; a batch refuses it too)");
    }
    const GpuFilters gpus = make_gpus();  // the device first: without one, nothing is read
    GpuFilter* gpu = gpus.empty() ? nullptr : gpus.front().get();

    ImageU8 image = io::read_image(in);
    io::check_writable(out, output_channels(s.spec, image.channels()));
    check_jpeg_quality_option(o, {out});  // after OUT's own checks, whose errors say more
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
    io::write_image(out, filtered.image, s.write);
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
    const std::vector<BatchFile> files = plan_batch(o.paths, o.list, o.out_dir, o.format, [&o](const std::vector<BatchFile>& plan) {
        std::vector<fs::path> outputs;
        for (const BatchFile& file : plan) outputs.push_back(file.output);
        check_jpeg_quality_option(o, outputs);
    });
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
    run_batch(files, workers, s.write);
}

void run_apply(const ApplyOptions& o) {
    // Check everything that can be checked before the filtering starts, so a typo costs nothing.
    check_mode_options(o);
    Setup s{parse_filter_spec(o.filter), parse_border(o.border), parse_layout(o.layout), resolve_threads(o.threads),
            io::WriteOptions{o.jpeg_quality}};
    check_border_option(o, s.spec);
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
}  // namespace apply

void add_apply_command(CLI::App& app) {
    using namespace apply;
    auto o = std::make_shared<ApplyOptions>();
    CLI::App* cmd = app.add_subcommand(
        "apply", "Filter an image file (PNG, JPEG, PGM/PPM): klab apply [OPTIONS] IN OUT, or many: klab apply [OPTIONS] "
                 "--out-dir DIR INPUT... (files or directories) [--list FILE]");
    cmd->add_option("--backend", o->backend, "Where to run: cpu (the reference) or gpu (a registered variant)")
        ->check(CLI::IsMember({"cpu", "gpu"}))
        ->capture_default_str();
    cmd->add_option("--variant", o->variant,
                    "GPU variant name (`klab list`), or auto: the fastest verified one in the tuning cache for the problem, "
                    "else a default (conv.separable_fused for a separable mask, conv.halo_tiled otherwise, sobel.register_window for Sobel)")
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
                              ->check(number_from(1, kMaxStrips));
    CLI::Option* in_flight = cmd->add_option("--in-flight", o->in_flight,
                                             "GPU: strips on the device at once in the strip path (one device buffer each)")
                                 ->check(number_from(1, kMaxStripsInFlight))
                                 ->capture_default_str();
    cmd->add_flag("--sync", o->sync,
                  "GPU: the synchronous one-shot path (upload all from pageable memory, filter, download all); not with --strips "
                  "or --in-flight");
    cmd->add_option("--layout", o->layout, "Pixel layout during filtering: aos (interleaved) or soa (planar)")
        ->check(CLI::IsMember({"aos", "soa"}))
        ->capture_default_str();
    cmd->add_option("--filter", o->filter, std::string("Filter: ") + kFilterSpecHelp)->required();
    CLI::Option* border = cmd->add_option("--border", o->border,
                    "Border mode: constant[:V] (V 0..255, default 0), replicate, mirror (reflect-101), reflect, wrap")
        ->capture_default_str();
    cmd->add_option("--threads", o->threads, "CPU threads: 0 = one per hardware thread, 1 = sequential")
        ->check(number_from(0, kMaxThreads))
        ->capture_default_str();
    // An empty value would read as the option left out (IN OUT, no list): refused instead.
    const CLI::Validator named(
        [](std::string& value) { return value.empty() ? std::string("an empty path names nothing; allowed: a path") : ""; }, "");
    cmd->add_option("--out-dir", o->out_dir,
                    "Batch: write DIR/<input file name> for every input (DIR is created when missing); the paths are then inputs")
        ->check(named);
    cmd->add_option("--list", o->list, "Batch: a file naming more inputs, one per line ('#' lines are comments)")->check(named);
    cmd->add_option("--format", o->format, "Batch: the outputs' format (default: each input's extension)")
        ->check(CLI::IsMember({"png", "jpg", "jpeg", "pgm", "ppm", "pnm"}));
    CLI::Option* jpeg_quality =
        cmd->add_option("--jpeg-quality", o->jpeg_quality,
                        "JPEG outputs: the quality, 1 (smallest file) to 100 (least loss); baseline, RGB as YCbCr 4:2:0; "
                        "refused where no output is a JPEG")
            ->check(number_from(1, 100))
            ->capture_default_str();
    cmd->add_option("--device", o->device,
                    "GPU: the CUDA device (an index as `klab info` lists them; default: the first CUDA shows), or all: a "
                    "batch spread over every GPU, each taking the next file when it is free (same outputs as one GPU)");
    cmd->add_option("PATHS", o->paths,
                    "IN OUT (OUT's extension picks the format), or with --out-dir the inputs: image files, or directories "
                    "(their .png .jpg .jpeg .pgm .ppm .pnm files, sorted, not recursive)");
    cmd->callback([o, strips, in_flight, jpeg_quality, border] {
        o->border_given = border->count() > 0;
        o->strips_given = strips->count() > 0;
        o->in_flight_given = in_flight->count() > 0;
        o->jpeg_quality_given = jpeg_quality->count() > 0;
        run_apply(*o);
    });
}

}  // namespace klab::cli
