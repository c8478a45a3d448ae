// klab apply's GPU backend (cli/apply_gpu_filter.hpp): the devices a run uses, and GpuFilter's
// choice of variant and shape, its path (the strip pipeline or the synchronous one shot) and the
// optional verification against the CPU reference.
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "cli/apply_gpu_filter.hpp"
#include "harness/cuda_check.hpp"
#include "harness/error.hpp"
#include "harness/verify.hpp"

namespace klab::cli::apply {

namespace {

// The problem on the GPU: the image's shape in the requested layout.
Problem gpu_problem(const Setup& s, const ImageShape& image_shape) {
    return make_problem(s.spec, {image_shape.width, image_shape.height, image_shape.channels, s.layout}, s.border);
}

std::string megabytes(std::size_t bytes) {
    const double b = static_cast<double>(bytes);
    return b < 1e6 ? fmt::format("{:.1f} kB", b / 1e3) : fmt::format("{:.1f} MB", b / 1e6);
}

}  // namespace

std::vector<DeviceInfo> gpu_devices(const ApplyOptions& o, const DeviceRequest& request) {
    const DeviceQuery query = query_devices();
    if (query.devices.empty()) {
        throw Error(fmt::format("--backend gpu{}: {}", o.device.empty() ? "" : " --device " + o.device, query.no_device_reason),
                    "--backend cpu on a machine without a CUDA device");
    }
    if (!request.given) return {current_device(query)};
    return requested_devices(request, query, std::getenv("CUDA_VISIBLE_DEVICES"));
}

GpuFilter::GpuFilter(const ApplyOptions& o, const Setup& s, const Variant* requested, std::optional<LaunchShape> block,
                     const DeviceInfo& device)
    : o_(o), s_(s), requested_(requested), device_index_(device.index),
      device_(fmt::format("gpu {} ({})", device.index, device.name)),
      chooser_(load_cache(o.results), autotune::current_gpu_identity(), std::move(block), o.block) {}

GpuFilter::~GpuFilter() {
    if (pipeline_) KLAB_CUDA_CHECK_NOTHROW(cudaSetDevice(device_index_));
}

FilteredImage GpuFilter::filter(const ImageU8& image, const std::string& output_name, const reference::Progress& progress,
                                    std::vector<std::string>& notes) const {
    const Problem problem = gpu_problem(s_, image.shape());
    const autotune::VariantChoice choice = chooser_.choose(problem, requested_, notes);
    notes.push_back("launch shape: " + choice.shape_explanation);
    FilteredImage filtered;
    const PipelineRun run = run_path(*choice.variant, problem, choice.shape, image, filtered.image, notes);
    const ImageShape& in = image.shape();
    filtered.description =
        fmt::format("{}{} on {}, variant {}{}, block {}, {}x{}x{} {}: {} (host wall time, {})",
                    filter_text(s_.spec), border_text(s_.spec, s_.border), device_, choice.variant->name(),
                    requested_ != nullptr ? "" : " (auto)", to_string(choice.shape), in.width, in.height, in.channels,
                    to_string(s_.layout), run.summary(),
                    o_.sync ? "the one-shot pipeline's set-up and the transfers included"
                            : "pinning the images and the transfers included, the strip pipeline's set-up not");
    if (o_.verify) {
        filtered.description += "\nverified against the CPU reference: " +
                                verify(*choice.variant, problem, image, filtered.image, output_name, progress);
    }
    return filtered;
}

autotune::TuningCache GpuFilter::load_cache(const std::string& results) {
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
// the call's own costs dominate (the result's host memory and pinning in the first, which leaves
// out building the strip pipeline; the device buffers in the second). docs/apply.md says what each
// printed time covers.
PipelineRun GpuFilter::run_path(const Variant& variant, const Problem& problem, const LaunchShape& shape,
                                const ImageU8& image, ImageU8& output, std::vector<std::string>& notes) const {
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

void GpuFilter::require_strips(const Problem& problem) {
    const Support support = strips_support(problem);
    if (!support) {
        throw Error(fmt::format("{} cannot go through strips: {}", to_string(problem), support.reason()),
                    "a convolution or sobel");
    }
}

std::string GpuFilter::verify(const Variant& variant, const Problem& problem, const ImageU8& image, const ImageU8& actual,
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

}  // namespace klab::cli::apply
