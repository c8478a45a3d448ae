// klab apply: filter an image file. The CPU backend runs the reference; the GPU backend runs a
// registered variant (none is registered yet, so it says so).
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include <fmt/format.h>
#include <unistd.h>

#include "cli/commands.hpp"
#include "harness/border.hpp"
#include "harness/device_info.hpp"
#include "harness/error.hpp"
#include "harness/filter_spec.hpp"
#include "harness/io/image_io.hpp"
#include "harness/numeric.hpp"
#include "harness/parallel.hpp"
#include "harness/reference/reference.hpp"

namespace klab::cli {

namespace {

struct ApplyOptions {
    std::string backend = "cpu";
    std::string variant = "auto";
    std::string layout = "aos";
    std::string filter;
    std::string border = "replicate";
    int threads = 0;
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

void run_apply(const ApplyOptions& o) {
    // Check everything that can be checked before the filtering starts, so a typo costs nothing.
    const FilterSpec spec = parse_filter_spec(o.filter);
    const Border border = parse_border(o.border);
    const Layout layout = parse_layout(o.layout);
    const int threads = resolve_threads(o.threads);
    if (o.backend == "gpu") {
        const DeviceQuery devices = query_devices();
        throw Error(fmt::format("--backend gpu: no GPU variant is registered in this build{}",
                                devices.devices.empty() ? fmt::format(" and {}", devices.no_device_reason) : ""),
                    "--backend cpu (`klab list` shows the registered variants)");
    }
    if (o.variant != "auto") {
        throw Error(fmt::format("--variant {} with --backend cpu: the CPU backend always runs the reference", o.variant),
                    "--variant with --backend gpu only");
    }

    ImageU8 image = io::read_image(o.input);
    const ImageShape input_shape = image.shape();
    io::check_writable(o.output, spec.operation == Operation::sobel ? 1 : input_shape.channels);
    if (layout != Layout::aos) image = reference::to_layout(image, layout);

    const auto start = std::chrono::steady_clock::now();
    ImageU8 result = apply_on_cpu(image, spec, border, threads);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    if (result.layout() != Layout::aos) result = reference::to_layout(result, Layout::aos);
    io::write_image(o.output, result);
    fmt::print("{} -> {}: {} ({}{}) with border {} on cpu, {} thread{}, {}x{}x{} {}: {:.1f} ms\n", o.input, o.output,
               o.filter, to_string(spec.operation),
               spec.mask ? fmt::format(" {}x{}", spec.mask->width(), spec.mask->height()) : std::string(),
               to_string(border), threads, threads == 1 ? "" : "s", input_shape.width, input_shape.height,
               input_shape.channels, to_string(layout), seconds * 1e3);
}

}  // namespace

void add_apply_command(CLI::App& app) {
    auto o = std::make_shared<ApplyOptions>();
    CLI::App* cmd = app.add_subcommand("apply", "Filter an image file (PNG, JPEG, PGM/PPM)");
    cmd->add_option("--backend", o->backend, "Where to run: cpu (the reference) or gpu (a registered variant)")
        ->check(CLI::IsMember({"cpu", "gpu"}))
        ->capture_default_str();
    cmd->add_option("--variant", o->variant, "GPU variant name, or auto for the fastest verified one")
        ->capture_default_str();
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
