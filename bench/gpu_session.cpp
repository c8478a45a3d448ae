// The GPU state of a klab-bench run (bench/gpu_session.hpp).
#include "bench/gpu_session.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "autotune/device_compare.hpp"
#include "autotune/tuner.hpp"
#include "bench/runner.hpp"
#include "harness/synth.hpp"

namespace klab::bench::runner {

namespace {

// Created by the first GPU row; destroyed by release_gpu_rows().
std::unique_ptr<Session>& session_slot() {
    static std::unique_ptr<Session> slot;
    return slot;
}

}  // namespace

Session& session() {
    if (!session_slot()) session_slot() = std::make_unique<Session>(settings().results);
    return *session_slot();
}

void release_gpu_rows() { session_slot().reset(); }

Workspace::Workspace(const Problem& p, int gen) : problem(p), generation(gen) {
    input_host = synth::generate(synth::Pattern::natural, p.shape.width, p.shape.height, p.shape.channels, 1, 0);
    if (p.shape.layout != Layout::aos) input_host = reference::to_layout(input_host, p.shape.layout);
    input = DeviceImage<std::uint8_t>(input_host);
    if (p.mask) mask = std::make_unique<DeviceMask>(*p.mask);
    const ImageShape out_shape = output_shape(p);
    if (p.op == Operation::integral) {
        integral = reference::integral_type(p.shape.width, p.shape.height);
        if (integral == reference::IntegralType::u64) {
            out64 = DeviceImage<std::uint64_t>(out_shape);
        } else {
            out32 = DeviceImage<std::uint32_t>(out_shape);
        }
    } else {
        out8 = DeviceImage<std::uint8_t>(out_shape);
    }
}

DeviceBuffers Workspace::buffers() {
    DeviceBuffers b;
    b.input = device_buffer(input);
    if (problem.op != Operation::integral) {
        b.output = device_buffer(out8);
    } else if (integral == reference::IntegralType::u64) {
        b.output = device_buffer(out64);
    } else {
        b.output = device_buffer(out32);
    }
    if (mask) b.mask = mask->view();
    return b;
}

void Workspace::compute_reference() {
    if (have_reference) return;
    std::fprintf(stderr, "klab-bench: CPU reference of %s (all threads) to verify against...\n", to_string(problem).c_str());
    switch (problem.op) {
        case Operation::convolve: reference8 = reference::convolve(input_host, *problem.mask, problem.border, 0); break;
        case Operation::sobel: reference8 = reference::sobel(input_host, problem.border, 0); break;
        case Operation::integral:
            if (integral == reference::IntegralType::u64) {
                reference64 = reference::integral<std::uint64_t>(input_host, 0);
            } else {
                reference32 = reference::integral<std::uint32_t>(input_host, 0);
            }
            break;
    }
    if (problem.op != Operation::integral) reference8_device = DeviceImage<std::uint8_t>(reference8);
    have_reference = true;
}

void Workspace::poison_output() {
    if (problem.op != Operation::integral) {
        out8.upload(complement(reference8));
    } else if (integral == reference::IntegralType::u64) {
        out64.upload(complement(reference64));
    } else {
        out32.upload(complement(reference32));
    }
    KLAB_CUDA_CHECK(cudaDeviceSynchronize());
}

Verification Workspace::verify_output(const Variant& variant) {
    if (problem.op == Operation::integral) {
        return integral == reference::IntegralType::u64 ? verify_exact(reference64, out64.download())
                                                        : verify_exact(reference32, out32.download());
    }
    // The device compares bytes first; only where they differ does the host apply the rule.
    if (autotune::count_differences(device_buffer(out8), device_buffer(reference8_device)) == 0) {
        Verification v;
        v.compared = reference8.shape().pixels() * static_cast<std::size_t>(reference8.channels());
        return v;
    }
    if (problem.op == Operation::sobel) return verify_exact(reference8, out8.download());
    return verify_convolution(input_host, *problem.mask, problem.border, reference8, out8.download(),
                              variant.coefficient_error(problem));
}

Session::Session(const std::string& results_dir) : gpu_(autotune::current_gpu_identity()) {
    flusher_ = std::make_unique<autotune::L2Flusher>();
    std::vector<std::string> warnings;
    cache_ = autotune::TuningCache::load_directory(results_dir, warnings);
    for (const std::string& w : warnings) std::fprintf(stderr, "klab-bench: warning: %s\n", w.c_str());
}

Workspace& Session::workspace(const Problem& problem) {
    if (!workspace_ || to_string(workspace_->problem) != to_string(problem)) {
        workspace_.reset();  // free the previous problem's memory first
        // The rows of earlier problems are done (Google Benchmark runs a benchmark's calls
        // back to back): their plans, NPP buffers and copy buffers go now, not at the end of
        // the run, so that the study's device memory stays that of one problem. A row called
        // again is set up again; a failed row keeps its error.
        for (auto& [name, row] : rows_) {
            if (row.error.empty()) row = RowState{};
        }
        workspace_ = std::make_unique<Workspace>(problem, ++generation_);
    }
    return *workspace_;
}

double Session::copy_floor_us(std::size_t bytes) {
    auto it = copy_floors_.find(bytes);
    if (it == copy_floors_.end()) {
        const CopyPair pair(bytes);
        autotune::TimingOptions options;
        options.min_samples = 50;
        options.budget_seconds = 0.1;
        options.target_spread = 0.0;  // always the full sample count
        const autotune::Timing t =
            autotune::measure([&pair](cudaStream_t s) { pair.enqueue(s); }, *flusher_, stream_.get(), options);
        // The mean, as Google Benchmark reports each repetition of the rows it is compared with.
        double sum = 0;
        for (double us : t.samples_us) sum += us;
        it = copy_floors_.emplace(bytes, sum / static_cast<double>(t.samples_us.size())).first;
    }
    return it->second;
}

std::pair<LaunchShape, std::string> Session::shape_for(const BenchCase& c) {
    if (c.forced_shape) return {*c.forced_shape, fmt::format("{} forced (block-shape study)", to_string(*c.forced_shape))};
    const autotune::Lookup found =
        autotune::lookup(cache_, *c.variant, autotune::source_hashes(*c.variant), c.problem, gpu_);
    if (found.level == autotune::LookupLevel::variant_default) {
        if (found.explanation.find("another source") != std::string::npos) {
            std::fprintf(stderr, "klab-bench: %s: %s\n", c.name().c_str(), found.explanation.c_str());
        }
        return {found.shape, fmt::format("{} default (no tuning record)", to_string(found.shape))};
    }
    const Verification check = autotune::verify_shape_once(*c.variant, c.problem, found.shape);
    if (!check.ok()) {
        std::fprintf(stderr, "klab-bench: %s: the cached block %s fails verification (%s); using the default\n",
                     c.name().c_str(), to_string(found.shape).c_str(), check.summary().c_str());
        const LaunchShape fallback = c.variant->default_shape(c.problem);
        return {fallback, fmt::format("{} default (the cached shape failed verification)", to_string(fallback))};
    }
    return {found.shape, fmt::format("{} tuned ({}: {})", to_string(found.shape), to_string(found.level),
                                     autotune::to_string(found.record->problem_class))};
}

}  // namespace klab::bench::runner
