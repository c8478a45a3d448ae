// The strip pipeline (harness/strip_pipeline.hpp): the split of an image into strips within the
// device-memory budget, each strip's slot (device memory, events, plans), and the run that overlaps
// the strips' uploads, kernels and downloads. One file over ~400 lines: the split and the run share
// one account of a strip's device bytes (pipeline_bytes, Slot), and the budget the split promises
// holds only if both read it the same way, side by side.
#include "harness/strip_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "harness/border.hpp"
#include "harness/cuda_check.hpp"
#include "harness/cuda_event.hpp"
#include "harness/device_image.hpp"
#include "harness/device_layout.hpp"
#include "harness/error.hpp"

namespace klab {

namespace {

constexpr int kAutomaticStrips = 24;              // the automatic split's strip count
constexpr std::size_t kMinStripBytes = 2u << 20;  // and its least input per strip
// cudaMallocPitch's row alignment on current GPUs: what a strip's rows cost at the most.
constexpr std::size_t kPitchAlignment = 512;
constexpr const char* kBudgetVariable = "KLAB_DEVICE_MEMORY_BUDGET";

std::size_t parse_bytes(const std::string& text) {
    std::size_t end = 0;
    unsigned long long value = 0;
    // Digits first (std::stoull would take "-1" as 2^64 - 1 and skip leading blanks).
    if (!text.empty() && text[0] >= '0' && text[0] <= '9') {
        try {
            value = std::stoull(text, &end);
        } catch (const std::exception&) {
            end = 0;  // out of range
        }
    }
    const std::string suffix = end == 0 ? text : text.substr(end);
    unsigned long long scale = 0;
    if (suffix.empty()) scale = 1;
    if (suffix == "K" || suffix == "k") scale = 1ull << 10;
    if (suffix == "M" || suffix == "m") scale = 1ull << 20;
    if (suffix == "G" || suffix == "g") scale = 1ull << 30;
    if (end == 0 || scale == 0 || value == 0 || value > std::numeric_limits<unsigned long long>::max() / scale) {
        throw Error(fmt::format("{}='{}'", kBudgetVariable, text), "a positive number of bytes, optionally with K, M or G (e.g. 512M)");
    }
    return static_cast<std::size_t>(value * scale);
}

int vertical_radius(const Problem& problem) {
    return problem.op == Operation::convolve ? problem.mask->radius_y() : 1;  // Sobel's 3x3 window
}

std::size_t padded_row_bytes(std::size_t bytes) { return (bytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment; }

// Pins a host buffer for the run unless it is pinned already (or pinning is off or refused: the
// copies are then staged by the driver, correct but synchronous to the host).
class PinnedRegion {
public:
    PinnedRegion(const void* data, std::size_t bytes, bool pin) {
        if (!pin || bytes == 0) return;
        cudaPointerAttributes attributes{};
        if (cudaPointerGetAttributes(&attributes, data) == cudaSuccess && attributes.type == cudaMemoryTypeHost) return;
        (void)cudaGetLastError();
        if (cudaHostRegister(const_cast<void*>(data), bytes, cudaHostRegisterDefault) == cudaSuccess) {
            registered_ = const_cast<void*>(data);
        } else {
            (void)cudaGetLastError();  // not fatal: pageable copies still work
        }
    }
    ~PinnedRegion() {
        if (registered_ != nullptr) KLAB_CUDA_CHECK_NOTHROW(cudaHostUnregister(registered_));
    }
    PinnedRegion(const PinnedRegion&) = delete;
    PinnedRegion& operator=(const PinnedRegion&) = delete;

private:
    void* registered_ = nullptr;
};

// One strip in flight: its device memory (the strip as uploaded and as filtered, AoS, and their SoA
// twins when the variant runs planar), its launch plans (one per strip height) and the
// events that order its steps across the three streams. Strips take the slots in turn.
struct Slot {
    DeviceImage<std::uint8_t> input;
    DeviceImage<std::uint8_t> output;
    DeviceImage<std::uint8_t> input_soa;
    DeviceImage<std::uint8_t> output_soa;
    std::map<int, LaunchPlan> plans;  // by the strip's output rows
    CudaEvent uploaded{cudaEventDisableTiming};
    CudaEvent filtered{cudaEventDisableTiming};
    CudaEvent downloaded{cudaEventDisableTiming};
};

// A view of the first `rows` image rows of `image` (allocated for the largest strip).
DeviceBuffer strip_buffer(DeviceImage<std::uint8_t>& image, int rows) {
    DeviceBuffer b = device_buffer(image);
    b.shape.height = rows;
    return b;
}

// Device bytes of the pipeline for strips of `rows` output rows (the radius's halo rows added to
// each), with up to `in_flight` slots: every slot's strip buffers (AoS, and for SoA their planar
// twins, a padded row per plane), a launch plan's scratch for each strip height a slot runs (the
// slot that runs a shorter last strip as well as full ones holds two plans), and the mask once.
std::size_t pipeline_bytes(const Variant& variant, const Problem& problem, const LaunchShape& shape, int rows, int in_flight) {
    const int height = problem.shape.height;
    const int strips = (height + rows - 1) / rows;
    const int slots = std::min(in_flight, strips);
    const int plans = slots + (height % rows != 0 && strips > slots ? 1 : 0);
    const int r = vertical_radius(problem);
    const ImageShape in{problem.shape.width, rows + 2 * r, problem.shape.channels, problem.shape.layout};
    const ImageShape out = output_shape(Problem{problem.op, in, problem.mask, problem.border});
    const auto aos_bytes = [](const ImageShape& s) { return padded_row_bytes(static_cast<std::size_t>(s.width) * s.channels) * s.height; };
    const auto soa_bytes = [](const ImageShape& s) {
        return padded_row_bytes(static_cast<std::size_t>(s.width)) * s.height * static_cast<std::size_t>(s.channels);
    };
    const bool soa = problem.shape.layout == Layout::soa;
    const std::size_t buffers = aos_bytes(in) + aos_bytes(out) + (soa ? soa_bytes(in) + soa_bytes(out) : 0);
    const Problem strip{problem.op, in, problem.mask, problem.border};
    return static_cast<std::size_t>(slots) * buffers + static_cast<std::size_t>(plans) * variant.scratch_bytes(strip, shape) +
           (problem.mask ? problem.mask->coefficients().size() * sizeof(float) : 0);
}

}  // namespace

StripSplit plan_strip_split(const Variant& variant, const Problem& problem, const LaunchShape& shape, const PipelineOptions& o) {
    if (o.in_flight < 1 || o.in_flight > kMaxStripsInFlight) {
        throw Error(fmt::format("{} strips in flight", o.in_flight), fmt::format("1 to {}", kMaxStripsInFlight));
    }
    if (o.strips < 0) throw Error(fmt::format("{} strips", o.strips), "0 (automatic) or a positive count");
    const int height = problem.shape.height;
    const std::size_t budget = o.device_budget_bytes != 0 ? o.device_budget_bytes : device_memory_budget();
    const auto bytes = [&](int rows) { return pipeline_bytes(variant, problem, shape, rows, o.in_flight); };
    // The most rows per strip, up to `most`, whose pipeline fits the budget; 0 for none. (Not a
    // bisection: taller strips mean fewer strips, and fewer strips than in_flight fewer slots.)
    const auto largest_fitting = [&](int most) {
        for (int rows = most; rows >= 1; --rows) {
            if (bytes(rows) <= budget) return rows;
        }
        return 0;
    };
    StripSplit plan;
    // Strips of `rows` rows, the last taking what is left.
    const auto uniform = [&](int rows) {
        for (int y = 0; y < height; y += rows) plan.rows.push_back(std::min(rows, height - y));
    };
    if (o.strips > 0) {
        // More strips than rows: one row each.
        const int rows = std::max(1, (height + o.strips - 1) / o.strips);
        if (bytes(rows) > budget) {
            const int fit = largest_fitting(rows);
            throw Error(fmt::format("{} strips of {} rows for {}: with {} in flight they need {:.1f} MB, the budget is {:.1f} MB",
                                    o.strips, rows, to_string(problem), o.in_flight, bytes(rows) / 1e6, budget / 1e6),
                        fit == 0 ? fmt::format("a larger budget ({} or free device memory), or fewer strips in flight", kBudgetVariable)
                                 : fmt::format("at least {} strips, or 0 to choose", (height + fit - 1) / fit));
        }
        uniform(rows);
    } else {
        // Strips of at least 2 MiB of input (smaller copies are dominated by their fixed cost;
        // the last strip may be shorter), 24 of them where the image is large enough, shorter
        // where the budget needs it. On an H200, 8K RGB Gaussian 5x5 in one run (3 in flight): 6
        // strips took 2332 us, 12 2210, 24 2193, 48 2272, 96 2565: fewer strips lengthen the fill
        // and drain (the first upload and the last download, which nothing overlaps), more add
        // each copy's fixed cost (24 copies of an 8K RGB image's bytes each way at once took 4.6%
        // longer than one copy each way). A ramp (strips of a quarter and a half at both ends, to
        // shorten fill and drain) was tried and left out: in six alternating runs its median was
        // 2285 us against 2226 us for 24 even strips.
        const std::size_t row_bytes = static_cast<std::size_t>(problem.shape.width) * problem.shape.channels;
        const int min_rows = static_cast<int>(std::max<std::size_t>(1, (kMinStripBytes + row_bytes - 1) / row_bytes));
        const int even_rows = std::max(1, (height + kAutomaticStrips - 1) / kAutomaticStrips);
        const int rows = largest_fitting(std::min(height, std::max(even_rows, min_rows)));
        if (rows == 0) {
            throw Error(fmt::format("a device-memory budget of {:.1f} MB for {}: strips of 1 row need {:.1f} MB with {} in flight",
                                    budget / 1e6, to_string(problem), bytes(1) / 1e6, o.in_flight),
                        fmt::format("a larger budget ({} or free device memory), or fewer strips in flight", kBudgetVariable));
        }
        uniform(rows);
    }
    plan.strips = static_cast<int>(plan.rows.size());
    plan.strip_rows = *std::max_element(plan.rows.begin(), plan.rows.end());
    plan.in_flight = std::min(o.in_flight, plan.strips);
    return plan;
}

namespace {

// Enqueues the upload of input rows [first, first + count) (image coordinates, possibly outside
// the image) into `strip`'s rows 0 .. count-1, each row border-mapped: the image's rows in one
// 2D copy, rows outside it copied one by one from the row the border rule names, or set to a
// constant border's value.
void upload_rows(const ImageU8& input, const Border& border, int first, int count, DeviceImage<std::uint8_t>& strip,
                 cudaStream_t stream) {
    const int height = input.height();
    const std::size_t row_bytes = static_cast<std::size_t>(input.width()) * input.channels();
    auto* device = static_cast<std::uint8_t*>(static_cast<void*>(strip.view().data));
    const std::size_t pitch = strip.pitch_bytes();
    const int inside_first = std::max(first, 0);
    const int inside_last = std::min(first + count, height);  // exclusive
    if (inside_last > inside_first) {
        KLAB_CUDA_CHECK(cudaMemcpy2DAsync(device + static_cast<std::size_t>(inside_first - first) * pitch, pitch,
                                          input.row(inside_first), input.pitch_bytes(), row_bytes,
                                          static_cast<std::size_t>(inside_last - inside_first), cudaMemcpyHostToDevice, stream));
    }
    for (int y = first; y < first + count; ++y) {
        if (y >= 0 && y < height) continue;
        std::uint8_t* dst = device + static_cast<std::size_t>(y - first) * pitch;
        const int source = border_index(y, height, border.mode);
        if (source < 0) {
            KLAB_CUDA_CHECK(cudaMemsetAsync(dst, border.value, row_bytes, stream));
        } else {
            KLAB_CUDA_CHECK(cudaMemcpyAsync(dst, input.row(source), row_bytes, cudaMemcpyHostToDevice, stream));
        }
    }
}

}  // namespace

// Every slot's memory, events and plans are made here, before any copy: an allocation inside the
// strip loop would synchronise the device and stall the queues.
struct StripPipeline::Resources {
    const Variant* variant = nullptr;
    Problem problem;
    LaunchShape shape;
    StripSplit plan;
    int radius = 0;
    std::optional<DeviceMask> mask;  // shared by every plan, read only
    CudaStream upload_stream;        // every strip's upload, in strip order
    CudaStream filter_stream;        // every strip's kernel (and layout conversions)
    CudaStream download_stream;      // every strip's download
    std::vector<std::unique_ptr<Slot>> slots;
};

StripPipeline::StripPipeline(const Variant& variant, const Problem& problem, const LaunchShape& shape,
                             const PipelineOptions& options)
    : StripPipeline(variant, problem, shape, options, false) {}

StripPipeline::StripPipeline(const Variant& variant, const Problem& problem, const LaunchShape& shape,
                             const PipelineOptions& options, bool one_shot)
    : resources_(std::make_unique<Resources>()) {
    if (const Support s = strips_support(problem); !s) throw Error(fmt::format("{}: {}", to_string(problem), s.reason()));
    validate(problem);
    Resources& res = *resources_;
    res.variant = &variant;
    res.problem = problem;
    res.shape = shape;
    res.radius = vertical_radius(problem);
    if (one_shot) {
        res.plan.rows = {problem.shape.height};
        res.plan.strip_rows = problem.shape.height;
        res.plan.strips = 1;
        res.plan.in_flight = 1;
    } else {
        res.plan = plan_strip_split(variant, problem, shape, options);
    }
    const int r = res.radius;
    const bool soa = problem.shape.layout == Layout::soa;
    const ImageShape out_shape = output_shape(problem);
    const int slot_rows = res.plan.strip_rows + 2 * r;
    if (problem.mask) res.mask.emplace(*problem.mask);
    for (int s = 0; s < res.plan.in_flight; ++s) {
        Slot& slot = *res.slots.emplace_back(std::make_unique<Slot>());
        slot.input = DeviceImage<std::uint8_t>(ImageShape{problem.shape.width, slot_rows, problem.shape.channels, Layout::aos});
        slot.output = DeviceImage<std::uint8_t>(ImageShape{out_shape.width, slot_rows, out_shape.channels, Layout::aos});
        if (soa) {
            slot.input_soa = DeviceImage<std::uint8_t>(ImageShape{problem.shape.width, slot_rows, problem.shape.channels, Layout::soa});
            slot.output_soa = DeviceImage<std::uint8_t>(ImageShape{out_shape.width, slot_rows, out_shape.channels, out_shape.layout});
        }
        // A plan for each strip height this slot runs (see pipeline_bytes()).
        for (std::size_t i = static_cast<std::size_t>(s); i < res.plan.rows.size(); i += static_cast<std::size_t>(res.plan.in_flight)) {
            const int rows = res.plan.rows[i];
            if (slot.plans.count(rows) != 0) continue;
            Problem strip = problem;
            strip.shape.height = rows + 2 * r;
            DeviceBuffers buffers;
            buffers.input = strip_buffer(soa ? slot.input_soa : slot.input, strip.shape.height);
            buffers.output = strip_buffer(soa ? slot.output_soa : slot.output, strip.shape.height);
            if (res.mask) buffers.mask = res.mask->view();
            slot.plans.emplace(rows, prepare(variant, strip, buffers, shape));
        }
    }
}

StripPipeline::~StripPipeline() = default;
StripPipeline::StripPipeline(StripPipeline&&) noexcept = default;
StripPipeline& StripPipeline::operator=(StripPipeline&&) noexcept = default;

int StripPipeline::strips() const { return resources_->plan.strips; }

PipelineRun StripPipeline::run(const ImageU8& input, ImageU8& output, bool pin_host) {
    const auto started = std::chrono::steady_clock::now();
    Resources& res = *resources_;
    const Problem& problem = res.problem;
    if (input.width() != problem.shape.width || input.height() != problem.shape.height ||
        input.channels() != problem.shape.channels || input.layout() != Layout::aos) {
        throw Error(fmt::format("host image {} for the problem {}", to_string(input.shape()), to_string(problem)),
                    "an AoS image of the problem's width, height and channels");
    }
    if (&input == &output) {
        throw Error("strip pipeline: the output image is the input image", "a separate output image (strips read rows others write)");
    }
    const ImageShape out_shape = output_shape(problem);
    const ImageShape out_aos{out_shape.width, out_shape.height, out_shape.channels, Layout::aos};
    if (output.shape() != out_aos) output = ImageU8(out_aos);  // kept when it fits: it may be pinned already
    const PinnedRegion pinned_input(input.data(), input.size_bytes(), pin_host);
    const PinnedRegion pinned_output(output.data(), output.size_bytes(), pin_host);

    const int r = res.radius;
    const bool soa = problem.shape.layout == Layout::soa;
    const std::size_t out_row_bytes = static_cast<std::size_t>(out_shape.width) * out_shape.channels;
    const cudaStream_t up = res.upload_stream.get();
    const cudaStream_t filter = res.filter_stream.get();
    const cudaStream_t down = res.download_stream.get();
    const auto synchronize_all = [&] {
        for (const cudaStream_t stream : {up, filter, down}) KLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    };
    try {
        for (int i = 0, y0 = 0; i < res.plan.strips; y0 += res.plan.rows[static_cast<std::size_t>(i)], ++i) {
            Slot& slot = *res.slots[static_cast<std::size_t>(i % res.plan.in_flight)];
            const int rows = res.plan.rows[static_cast<std::size_t>(i)];
            const int n = rows + 2 * r;
            // Upload, once the slot's previous strip has left the device.
            if (i >= res.plan.in_flight) KLAB_CUDA_CHECK(cudaStreamWaitEvent(up, slot.downloaded.get(), 0));
            upload_rows(input, problem.border, y0 - r, n, slot.input, up);
            KLAB_CUDA_CHECK(cudaEventRecord(slot.uploaded.get(), up));
            // Filter.
            KLAB_CUDA_CHECK(cudaStreamWaitEvent(filter, slot.uploaded.get(), 0));
            const LaunchPlan& launch_plan = slot.plans.at(rows);
            if (soa) {
                convert_layout(strip_buffer(slot.input, n).view<const std::uint8_t>(), launch_plan.buffers.input.view<std::uint8_t>(),
                               filter);
            }
            launch(launch_plan, filter);
            if (soa) {
                convert_layout(launch_plan.buffers.output.view<const std::uint8_t>(), strip_buffer(slot.output, n).view<std::uint8_t>(),
                               filter);
            }
            KLAB_CUDA_CHECK(cudaEventRecord(slot.filtered.get(), filter));
            // Download output rows r .. r + rows - 1 of the strip: image rows y0 .. y0 + rows - 1.
            KLAB_CUDA_CHECK(cudaStreamWaitEvent(down, slot.filtered.get(), 0));
            const auto* strip_out = static_cast<const std::uint8_t*>(static_cast<void*>(slot.output.view().data));
            KLAB_CUDA_CHECK(cudaMemcpy2DAsync(output.row(y0), output.pitch_bytes(),
                                              strip_out + static_cast<std::size_t>(r) * slot.output.pitch_bytes(),
                                              slot.output.pitch_bytes(), out_row_bytes, static_cast<std::size_t>(rows),
                                              cudaMemcpyDeviceToHost, down));
            KLAB_CUDA_CHECK(cudaEventRecord(slot.downloaded.get(), down));
        }
        synchronize_all();
    } catch (...) {
        // Let queued copies finish before their buffers are freed and the host images unpinned.
        for (const cudaStream_t stream : {up, filter, down}) (void)cudaStreamSynchronize(stream);
        throw;
    }
    PipelineRun run;
    run.strips = res.plan.strips;
    run.strip_rows = res.plan.strip_rows;
    run.in_flight = res.plan.in_flight;
    run.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return run;
}

StripPipeline StripPipeline::one_shot(const Variant& variant, const Problem& problem, const LaunchShape& shape) {
    return StripPipeline(variant, problem, shape, PipelineOptions{}, true);
}


std::string PipelineRun::summary() const {
    return fmt::format("{} strip{} of {}{} row{}, {} in flight, {:.1f} ms", strips, strips == 1 ? "" : "s",
                       strips == 1 ? "" : "up to ", strip_rows,
                       strip_rows == 1 ? "" : "s", in_flight, milliseconds);
}

std::size_t device_memory_budget() {
    // The variable can only lower the budget: above the free memory it would let strips (or a
    // --sync one shot) be planned that cannot be allocated.
    std::optional<std::size_t> requested;
    if (const char* text = std::getenv(kBudgetVariable); text != nullptr && *text != '\0') requested = parse_bytes(text);
    std::size_t free_bytes = 0, total_bytes = 0;
    KLAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t usable = free_bytes / 10 * 9;  // leave room for the CUDA context's own allocations
    return requested ? std::min(*requested, usable) : usable;
}

std::size_t one_shot_bytes(const Variant& variant, const Problem& problem, const LaunchShape& shape) {
    if (const Support s = strips_support(problem); !s) throw Error(fmt::format("{}: {}", to_string(problem), s.reason()));
    return pipeline_bytes(variant, problem, shape, problem.shape.height, 1);
}

Support strips_support(const Problem& problem) {
    if (problem.op == Operation::integral) {
        return Support::no("an integral image carries its sums from row to row, so it runs in one piece (no strips)");
    }
    return Support::yes();
}

PipelineRun run_pipelined(const Variant& variant, const Problem& problem, const LaunchShape& shape, const ImageU8& input,
                          ImageU8& output, const PipelineOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    StripPipeline pipeline(variant, problem, shape, options);  // refuses what strips cannot run
    PipelineRun run = pipeline.run(input, output, options.pin_host);
    run.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return run;
}

PipelineRun run_one_shot(const Variant& variant, const Problem& problem, const LaunchShape& shape, const ImageU8& input,
                         ImageU8& output, bool pin_host) {
    const auto started = std::chrono::steady_clock::now();
    StripPipeline pipeline = StripPipeline::one_shot(variant, problem, shape);
    PipelineRun run = pipeline.run(input, output, pin_host);
    run.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    return run;
}

}  // namespace klab
