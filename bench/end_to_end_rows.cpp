// klab-bench's end-to-end rows (bench/runner.hpp): host image to host image through
// harness/strip_pipeline.hpp, timed by the host's clock around the whole call (several streams run
// at once: no single pair of events brackets it). "Pinned" rows register their host images once,
// outside the timing, as a batch tool would; ".pageable" rows leave them pageable. The link rows
// are the floors, from pinned memory, filtering nothing: the image's bytes up alone (e2e.upload),
// down alone (e2e.download), and both at once, one whole-image copy each way on two streams
// (e2e.bidirectional: what the link carries both ways; the pipeline's interleaved strips have come
// out ahead of it on some machines).
#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "bench/bench_json.hpp"
#include "bench/gpu_session.hpp"
#include "bench/runner.hpp"
#include "harness/cuda_check.hpp"
#include "harness/cuda_event.hpp"
#include "harness/device_image.hpp"
#include "harness/error.hpp"
#include "harness/reference/reference.hpp"
#include "harness/strip_pipeline.hpp"
#include "harness/synth.hpp"
#include "harness/verify.hpp"

namespace klab::bench::runner {

namespace {

enum class LinkCopy { none, upload, download, both };

struct EndToEnd {
    ImageU8 input;
    ImageU8 output;
    std::vector<void*> registered;  // host memory pinned for the row, unpinned with it
    std::unique_ptr<StripPipeline> pipeline;
    LinkCopy link = LinkCopy::none;
    std::unique_ptr<DeviceImage<std::uint8_t>> device_input;   // the link rows' device images
    std::unique_ptr<DeviceImage<std::uint8_t>> device_output;
    std::unique_ptr<CudaStream> up, down;
    bool pin = false;
    std::string label;
    std::string error;

    EndToEnd() = default;
    EndToEnd(const EndToEnd&) = delete;
    EndToEnd& operator=(const EndToEnd&) = delete;
    ~EndToEnd() {
        for (void* p : registered) KLAB_CUDA_CHECK_NOTHROW(cudaHostUnregister(p));
    }
    void pin_host(ImageU8& image) {
        KLAB_CUDA_CHECK(cudaHostRegister(image.data(), image.size_bytes(), cudaHostRegisterDefault));
        registered.push_back(image.data());
    }
    void copy(bool upload, cudaStream_t stream) {
        if (upload) {
            device_input->upload(input, stream);
        } else {
            device_output->download_async(output, stream);
        }
    }
    // One run of the row; returns its wall time in microseconds.
    double run() {
        const auto start = Clock::now();
        if (link == LinkCopy::none) {
            pipeline->run(input, output, pin);
        } else {
            if (link != LinkCopy::download) copy(true, up->get());
            if (link != LinkCopy::upload) copy(false, down->get());
            KLAB_CUDA_CHECK(cudaStreamSynchronize(up->get()));
            KLAB_CUDA_CHECK(cudaStreamSynchronize(down->get()));
        }
        return seconds_since(start) * 1e6;
    }
};

std::map<std::string, std::unique_ptr<EndToEnd>>& end_to_end_rows() {
    static std::map<std::string, std::unique_ptr<EndToEnd>> rows;
    return rows;
}

// "e2e.pipelined.strips12" -> 12; 0 (the automatic split) for any other row.
int strips_of_row(const std::string& row) {
    const std::string_view prefix = "e2e.pipelined.strips";
    if (row.rfind(prefix, 0) != 0) return 0;
    const std::string_view digits = std::string_view(row).substr(prefix.size());
    int strips = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), strips);
    if (error != std::errc() || end != digits.data() + digits.size() || strips < 1) {
        throw Error(fmt::format("end-to-end row '{}'", row), "e2e.pipelined.strips<N> with N a positive count");
    }
    return strips;
}

// The variant the end-to-end rows filter with: the separable one where the mask allows (the
// fastest at 8K in the study), else the halo-tiled one; its shape as the other rows find it.
std::unique_ptr<EndToEnd> make_end_to_end(const BenchCase& c) {
    auto row = std::make_unique<EndToEnd>();
    row->input = synth::generate(synth::Pattern::natural, c.problem.shape.width, c.problem.shape.height, c.problem.shape.channels, 1);
    row->output = ImageU8(output_shape(c.problem));
    const bool pageable = c.row.find(".pageable") != std::string::npos;
    row->pin = !pageable;
    if (row->pin) {
        row->pin_host(row->input);
        row->pin_host(row->output);
    }
    if (is_link_row(c.row)) {
        row->link = c.row == "e2e.upload" ? LinkCopy::upload : c.row == "e2e.download" ? LinkCopy::download : LinkCopy::both;
        row->device_input = std::make_unique<DeviceImage<std::uint8_t>>(c.problem.shape);
        row->device_output = std::make_unique<DeviceImage<std::uint8_t>>(c.problem.shape);
        KLAB_CUDA_CHECK(cudaMemset(row->device_output->view().data, 0, row->device_output->pitch_bytes() * c.problem.shape.height));
        row->up = std::make_unique<CudaStream>();
        row->down = std::make_unique<CudaStream>();
        row->label = row->link == LinkCopy::upload     ? "cudaMemcpy2DAsync of the image host to device, pinned"
                     : row->link == LinkCopy::download ? "cudaMemcpy2DAsync of the image device to host, pinned"
                                                       : "both at once on two streams: the image up and another down, pinned";
        return row;
    }
    const Variant* variant = Registry::instance().find("conv.separable_fused");
    if (variant == nullptr || !variant->supports(c.problem)) variant = &Registry::instance().get("conv.halo_tiled");
    BenchCase as_variant = c;
    as_variant.kind = RowKind::variant;
    as_variant.variant = variant;
    const LaunchShape shape = session().shape_for(as_variant).first;
    const bool pipelined = c.row.rfind("e2e.pipelined", 0) == 0;
    PipelineOptions options;
    options.strips = strips_of_row(c.row);
    row->pipeline = std::make_unique<StripPipeline>(pipelined ? StripPipeline(*variant, c.problem, shape, options)
                                                              : StripPipeline::one_shot(*variant, c.problem, shape));
    // Verified once, like every GPU row: the strip path must equal the CPU reference.
    const PipelineRun first = row->pipeline->run(row->input, row->output, row->pin);
    const ImageU8 expected = reference::convolve(row->input, *c.problem.mask, c.problem.border, 0);
    const Verification v = verify_convolution(row->input, *c.problem.mask, c.problem.border, expected, row->output,
                                              variant->coefficient_error(c.problem));
    if (!v.ok()) throw Error(fmt::format("{} differs from the CPU reference: {}", c.name(), v.summary()), "a verified result");
    row->label = fmt::format("{} {}, {}: {} strip(s), {} in flight, {} host memory", variant->name(), to_string(shape),
                             pipelined ? "strip pipeline" : "one shot", first.strips, first.in_flight, pageable ? "pageable" : "pinned");
    return row;
}

}  // namespace

void time_end_to_end_row(benchmark::State& state, const BenchCase& c) {
    std::unique_ptr<EndToEnd>& row = end_to_end_rows()[c.name()];
    if (!row) {
        // The other end-to-end rows are done: their device buffers and pinned images go first.
        for (auto& [name, other] : end_to_end_rows()) {
            if (name != c.name() && other && other->error.empty()) other.reset();
        }
        try {
            row = make_end_to_end(c);
        } catch (const Error& e) {
            note_if_context_lost(c.name());
            row = std::make_unique<EndToEnd>();
            row->error = e.what();
        }
    }
    if (!row->error.empty()) {
        fail_row(state, c.name(), row->error);
        return;
    }
    double total_us = 0;
    for (auto _ : state) {
        const double us = row->run();
        state.SetIterationTime(us * 1e-6);
        total_us += us;
    }
    const double mean_us = total_us / static_cast<double>(std::max<benchmark::IterationCount>(state.iterations(), 1));
    const double image_bytes = static_cast<double>(row->input.width()) * row->input.height() * row->input.channels();
    const double upload_bytes = row->link == LinkCopy::download ? 0.0 : image_bytes;
    const double download_bytes = row->link == LinkCopy::upload ? 0.0
                                                                : static_cast<double>(row->output.width()) * row->output.height() *
                                                                      row->output.channels();
    set_counter(state, "bytes_read", upload_bytes);
    set_counter(state, "bytes_written", download_bytes);
    set_counter(state, "bytes_per_second", (upload_bytes + download_bytes) / (mean_us * 1e-6));
    set_counter(state, "pixels_per_second", static_cast<double>(c.problem.shape.pixels()) / (mean_us * 1e-6));
    state.SetLabel(row->label);
}

void release_end_to_end_rows() { end_to_end_rows().clear(); }

}  // namespace klab::bench::runner
