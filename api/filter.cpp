// The library entry point (klab/klab.hpp): thin on purpose. The variant and shape come from
// autotune::VariantChooser (the same choice as `klab apply`), the checks and the launch from
// prepare()/launch() (harness/variant.hpp), host images go through the strip pipeline
// (harness/strip_pipeline.hpp), the CPU path is the reference and --verify's rule is verify_result()
// (harness/verify.hpp). What is added here: a per-process memory of choices and device masks, so
// that a repeated call costs a map lookup instead of a tuning-cache search and an upload.
#include "klab/klab.hpp"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "api/interop.hpp"
#include "autotune/tuning_cache.hpp"
#include "autotune/variant_choice.hpp"
#include "harness/border.hpp"
#include "harness/cuda_check.hpp"
#include "harness/device_image.hpp"
#include "harness/device_info.hpp"
#include "harness/filter_spec.hpp"
#include "harness/problem.hpp"
#include "harness/reference/reference.hpp"
#include "harness/strip_pipeline.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"

namespace klab {

namespace {

// How messages name the variant option: the library's parameter, not the CLI's flag.
constexpr const char* kVariantOption = "variant=";

std::string results_folder(const FilterOptions& options) {
    if (!options.results.empty()) return options.results;
    const char* from_environment = std::getenv("KLAB_RESULTS");
    return from_environment != nullptr && *from_environment != '\0' ? from_environment : "results";
}

// A chosen variant and shape, with the notes that explain the choice.
struct Chosen {
    const Variant* variant = nullptr;
    LaunchShape shape;
    std::vector<std::string> notes;
};

// Everything the library remembers between calls, per process: one VariantChooser per (results
// folder, device) — the tuning cache read once —, the choice per problem, and the device masks.
// Never destroyed (the CUDA runtime may be gone when static destructors run); both maps are
// emptied when they reach their bound (a device mask is a few kilobytes).
class Memory {
public:
    Chosen choose(const Problem& problem, const FilterSpec& spec, const FilterOptions& options, int device) {
        const std::string folder = results_folder(options);
        const std::string chooser_key = fmt::format("{}|{}", device, folder);
        std::string key = fmt::format("{}|{}|{}", chooser_key, options.variant, to_string(problem));
        if (problem.mask) key += mask_bytes(*problem.mask);
        const std::lock_guard<std::mutex> lock(mutex_);
        if (const auto found = chosen_.find(key); found != chosen_.end()) return found->second;
        // Checked before the cache is read, so that a typo costs nothing.
        const Variant* requested = autotune::requested_variant(options.variant, spec, kVariantOption);
        auto chooser = choosers_.find(chooser_key);
        if (chooser == choosers_.end()) {
            std::vector<std::string> warnings;
            autotune::TuningCache cache = autotune::TuningCache::load_directory(folder, warnings);
            for (std::string& w : warnings) w = "warning: " + w;
            auto made = std::make_unique<autotune::VariantChooser>(std::move(cache), autotune::current_gpu_identity(), std::nullopt,
                                                                   std::string(), kVariantOption);
            chooser = choosers_.emplace(chooser_key, Chooser{std::move(made), std::move(warnings)}).first;
        }
        Chosen chosen;
        chosen.notes = chooser->second.warnings;
        const autotune::VariantChoice choice = chooser->second.chooser->choose(problem, requested, chosen.notes);
        chosen.variant = choice.variant;
        chosen.shape = choice.shape;
        chosen.notes.push_back("launch shape: " + choice.shape_explanation);
        if (chosen_.size() >= kMaxChoices) chosen_.clear();  // many image sizes: choose again
        return chosen_.emplace(std::move(key), std::move(chosen)).first->second;
    }

    // The mask in the current device's memory, uploaded on first use.
    std::shared_ptr<const DeviceMask> device_mask(const Mask& mask, int device) {
        const std::string key = fmt::format("{}|{}x{}|", device, mask.width(), mask.height()) + mask_bytes(mask);
        const std::lock_guard<std::mutex> lock(mutex_);
        if (const auto found = masks_.find(key); found != masks_.end()) return found->second;
        // A call that still uses a dropped mask holds its own reference until it returns.
        if (masks_.size() >= kMaxMasks) masks_.clear();
        return masks_.emplace(key, std::make_shared<const DeviceMask>(mask)).first->second;
    }

private:
    static constexpr std::size_t kMaxMasks = 64;
    static constexpr std::size_t kMaxChoices = 4096;

    struct Chooser {
        std::unique_ptr<autotune::VariantChooser> chooser;
        std::vector<std::string> warnings;  // reading the tuning cache's files
    };

    static std::string mask_bytes(const Mask& mask) {
        const std::vector<float>& c = mask.coefficients();
        return std::string(reinterpret_cast<const char*>(c.data()), c.size() * sizeof(float));
    }

    std::mutex mutex_;
    std::map<std::string, Chooser> choosers_;
    std::map<std::string, Chosen> chosen_;
    std::map<std::string, std::shared_ptr<const DeviceMask>> masks_;
};

Memory& memory() {
    static Memory* const instance = new Memory();  // never destroyed: see Memory
    return *instance;
}

// Makes options.device current for a call and restores the caller's device afterwards.
class DeviceScope {
public:
    explicit DeviceScope(int device) {
        KLAB_CUDA_CHECK(cudaGetDevice(&previous_));
        device_ = previous_;
        if (device < 0 || device == previous_) return;
        int count = 0;
        KLAB_CUDA_CHECK(cudaGetDeviceCount(&count));
        if (device >= count) {
            throw Error(fmt::format("device={}: this machine has {} CUDA device{}", device, count, count == 1 ? "" : "s"),
                        count == 1 ? std::string("device 0, or -1 for the current device")
                                   : fmt::format("0 to {}, or -1 for the current device", count - 1));
        }
        KLAB_CUDA_CHECK(cudaSetDevice(device));
        device_ = device;
    }
    ~DeviceScope() {
        if (device_ != previous_) KLAB_CUDA_CHECK_NOTHROW(cudaSetDevice(previous_));
    }
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;
    int device() const { return device_; }

private:
    int previous_ = 0;
    int device_ = 0;
};

// The GPU needs a device: say so plainly instead of a CUDA error code.
void require_gpu() {
    if (!cuda_device_available()) {
        throw Error(fmt::format("klab's GPU path needs a CUDA device: {}", query_devices().no_device_reason),
                    "klab::filter_on_cpu() (the CPU reference) on a machine without one");
    }
}

FilterReport report_of(const Chosen& chosen) {
    FilterReport report;
    report.variant = chosen.variant->name();
    report.shape = to_string(chosen.shape);
    report.notes = chosen.notes;
    return report;
}

// The problem a call poses: the spec, the input's shape, the border.
Problem problem_of(const FilterSpec& spec, const ImageShape& shape, const FilterOptions& options) {
    return make_problem(spec, shape, parse_border(options.border));
}

template <class T>
DeviceBuffer device_buffer_of(ImageView<T> view) {
    const std::size_t row_bytes = static_cast<std::size_t>(view.shape.row_elements()) * sizeof(T);
    // The bytes the rows span: the last row needs no padding after it (a sliced array's does not).
    const std::size_t span = view.shape.rows() > 0 ? static_cast<std::size_t>(view.shape.rows() - 1) * view.pitch_bytes + row_bytes : 0;
    return {const_cast<std::remove_const_t<T>*>(view.data), view.shape, view.pitch_bytes, span,
            element_type_of<std::remove_const_t<T>>()};
}

// A device image's pixels in host memory (tightly packed), copied on `stream` after its work.
template <class T>
HostImage<std::remove_const_t<T>> download(ImageView<T> view, cudaStream_t stream) {
    HostImage<std::remove_const_t<T>> host(view.shape);
    const std::size_t row_bytes = static_cast<std::size_t>(view.shape.row_elements()) * sizeof(T);
    KLAB_CUDA_CHECK(cudaMemcpy2DAsync(host.data(), host.pitch_bytes(), view.data, view.pitch_bytes, row_bytes,
                                      static_cast<std::size_t>(view.shape.rows()), cudaMemcpyDeviceToHost, stream));
    KLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    return host;
}

// FilterOptions::verify: a failure throws VerificationFailed; otherwise the verdict's summary.
std::string require_verified(const Verification& verification, const Chosen& chosen, const Problem& problem) {
    if (!verification.ok()) {
        throw VerificationFailed(fmt::format("verify: {} differs from the CPU reference on {}: {}", chosen.variant->name(),
                                             to_string(problem), verification.summary()),
                                 problem.op == Operation::convolve
                                     ? "equal values, or 1 apart next to an fp32 rounding tie (harness/verify.hpp)"
                                     : "equal values (sobel and integral are exact)");
    }
    return verification.summary();
}

template <class T>
Verification verify_against_reference(const Problem& problem, const Chosen& chosen, const ImageU8& input,
                                      const HostImage<T>& actual, int threads) {
    if constexpr (std::is_same_v<T, std::uint8_t>) {
        return verify_result(problem, input, actual, chosen.variant->coefficient_error(problem), threads);
    } else {
        return verify_result(problem, input, actual, threads);
    }
}

// The device path: choose, check and plan (prepare()), launch on the caller's stream, wait.
template <class T>
FilterReport run_on_device(ImageView<const std::uint8_t> input, ImageView<T> output, const FilterSpec& spec,
                           const FilterOptions& options) {
    require_gpu();
    const DeviceScope scope(options.device);
    const Problem problem = problem_of(spec, input.shape, options);
    const Chosen chosen = memory().choose(problem, spec, options, scope.device());
    const std::shared_ptr<const DeviceMask> mask = problem.mask ? memory().device_mask(*problem.mask, scope.device()) : nullptr;
    const DeviceBuffers buffers{device_buffer_of(input), device_buffer_of(output), mask ? mask->view() : DeviceMaskView{}};
    const LaunchPlan plan = prepare(*chosen.variant, problem, buffers, chosen.shape);
    launch(plan, options.stream);
    // The plan's scratch memory and the mask must outlive the kernels.
    KLAB_CUDA_CHECK(cudaStreamSynchronize(options.stream));
    FilterReport report = report_of(chosen);
    if (options.verify) {
        const ImageU8 host_input = download(input, options.stream);
        report.verification = require_verified(
            verify_against_reference(problem, chosen, host_input, download(ImageView<const T>(output), options.stream), options.threads),
            chosen, problem);
    }
    return report;
}

FilterSpec parse_image_filter(const std::string& filter, const char* integral_instead) {
    FilterSpec spec = parse_filter_spec(filter);
    if (spec.operation == Operation::integral) {
        throw Error(fmt::format("filter \"{}\" writes 32- or 64-bit sums, not an 8-bit image", filter),
                    fmt::format("{} for integral images; here a convolution or sobel", integral_instead));
    }
    return spec;
}

// A host integral on the GPU: upload, the device path, download.
template <class T>
FilterReport integral_on_gpu(const ImageU8& input, HostImage<T>& output, const FilterOptions& options) {
    require_gpu();
    const DeviceScope scope(options.device);
    const DeviceImage<std::uint8_t> device_input(input);
    DeviceImage<T> device_output(input.shape());
    FilterOptions on_default_stream = options;
    on_default_stream.stream = nullptr;  // the upload above went there
    FilterReport report = run_on_device(device_input.view(), device_output.view(), parse_filter_spec("integral"), on_default_stream);
    output = device_output.download();
    return report;
}

}  // namespace

std::vector<VariantInfo> variants() {
    std::vector<VariantInfo> list;
    for (const Variant* v : Registry::instance().all()) list.push_back({v->name(), to_string(v->op()), v->technique()});
    return list;
}

bool gpu_available() { return cuda_device_available(); }

bool integral_needs_u64(int width, int height) {
    validate_size(width, height);
    return reference::integral_type(width, height) == reference::IntegralType::u64;
}

FilterReport filter(const ImageU8& input, ImageU8& output, const std::string& filter, const FilterOptions& options) {
    const FilterSpec spec = parse_image_filter(filter, "klab::integral()");
    require_gpu();
    const DeviceScope scope(options.device);
    const Problem problem = problem_of(spec, input.shape(), options);
    const Chosen chosen = memory().choose(problem, spec, options, scope.device());
    // The strip pipeline reads and writes AoS host images and runs the variant in the problem's
    // layout (SoA strips are converted on the device).
    std::optional<ImageU8> aos_input;
    if (input.layout() != Layout::aos) aos_input = reference::to_layout(input, Layout::aos);
    ImageU8 result;
    run_pipelined(*chosen.variant, problem, chosen.shape, aos_input ? *aos_input : input, result);
    if (output_shape(problem).layout != Layout::aos) result = reference::to_layout(result, output_shape(problem).layout);
    FilterReport report = report_of(chosen);
    if (options.verify) {
        report.verification = require_verified(verify_against_reference(problem, chosen, input, result, options.threads), chosen, problem);
    }
    output = std::move(result);
    return report;
}

template <class T>
FilterReport integral(const ImageU8& input, HostImage<T>& output, const FilterOptions& options) {
    return integral_on_gpu(input, output, options);
}

ImageU8 filter_on_cpu(const ImageU8& input, const std::string& filter, const FilterOptions& options) {
    const FilterSpec spec = parse_image_filter(filter, "klab::integral_on_cpu()");
    const Problem problem = problem_of(spec, input.shape(), options);
    if (problem.op == Operation::sobel) return reference::sobel(input, problem.border, options.threads);
    return reference::convolve(input, *problem.mask, problem.border, options.threads);
}

template <class T>
HostImage<T> integral_on_cpu(const ImageU8& input, const FilterOptions& options) {
    validate_shape(input.shape());
    return reference::integral<T>(input, options.threads);
}

FilterReport filter(ImageView<const std::uint8_t> input, ImageView<std::uint8_t> output, const std::string& filter,
                    const FilterOptions& options) {
    return run_on_device(input, output, parse_image_filter(filter, "klab::integral()"), options);
}

FilterReport integral(ImageView<const std::uint8_t> input, ImageView<std::uint32_t> output, const FilterOptions& options) {
    return run_on_device(input, output, parse_filter_spec("integral"), options);
}

FilterReport integral(ImageView<const std::uint8_t> input, ImageView<std::uint64_t> output, const FilterOptions& options) {
    return run_on_device(input, output, parse_filter_spec("integral"), options);
}

FilterReport choose_variant(const ImageShape& shape, const std::string& filter, const FilterOptions& options) {
    const FilterSpec spec = parse_filter_spec(filter);
    require_gpu();
    const DeviceScope scope(options.device);
    return report_of(memory().choose(problem_of(spec, shape, options), spec, options, scope.device()));
}

template FilterReport integral(const ImageU8&, HostImage<std::uint32_t>&, const FilterOptions&);
template FilterReport integral(const ImageU8&, HostImage<std::uint64_t>&, const FilterOptions&);
template HostImage<std::uint32_t> integral_on_cpu(const ImageU8&, const FilterOptions&);
template HostImage<std::uint64_t> integral_on_cpu(const ImageU8&, const FilterOptions&);

namespace interop {

void wait_for(cudaStream_t waiting, cudaStream_t producer) {
    if (waiting == producer) return;
    cudaEvent_t ready = nullptr;
    KLAB_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    const cudaError_t recorded = cudaEventRecord(ready, producer);
    const cudaError_t waited = recorded == cudaSuccess ? cudaStreamWaitEvent(waiting, ready, 0) : recorded;
    KLAB_CUDA_CHECK_NOTHROW(cudaEventDestroy(ready));  // released once the wait is satisfied
    KLAB_CUDA_CHECK(waited);
}

}  // namespace interop

}  // namespace klab
