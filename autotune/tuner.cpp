#include "autotune/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autotune/device_compare.hpp"
#include "harness/cuda_check.hpp"
#include "harness/device_image.hpp"
#include "harness/error.hpp"
#include "harness/reference/reference.hpp"
#include "harness/synth.hpp"
#include "harness/version.hpp"


namespace klab::autotune {

namespace {

std::string utc_timestamp() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

bool same_shape(const LaunchShape& a, const LaunchShape& b) {
    return a.block_x == b.block_x && a.block_y == b.block_y && a.parameters == b.parameters;
}

// A natural synthetic image in the problem's layout, and the CPU reference of the problem on it.
struct HostPair {
    ImageU8 input;
    ImageU8 reference;
};

HostPair host_pair(const Problem& problem, std::uint64_t seed, int threads) {
    ImageU8 input = synth::generate(synth::Pattern::natural, problem.shape.width, problem.shape.height,
                                    problem.shape.channels, seed, threads);
    if (problem.shape.layout != Layout::aos) input = reference::to_layout(input, problem.shape.layout);
    ImageU8 expected = reference::convolve(input, *problem.mask, problem.border, threads);
    return {std::move(input), std::move(expected)};
}

// The full verification of an output that differs from the reference somewhere on the device.
Verification verify_output(const Variant& variant, const Problem& problem, const HostPair& host, DeviceImage<std::uint8_t>& out) {
    return verify_convolution(host.input, *problem.mask, problem.border, host.reference, out.download(),
                              variant.coefficient_error(problem));
}

// A mask's sides and coefficients as text: two masks with the same name may differ (mask files).
std::string mask_identity(const Mask& mask) {
    return fmt::format("{}x{}:{}", mask.width(), mask.height(), fmt::join(mask.coefficients(), ","));
}

}  // namespace

// The class being tuned: its problem, host images and device buffers, shared by the variants.
struct Tuner::Prepared {
    ProblemClass problem_class;
    Problem problem;
    HostPair host;
    DeviceImage<std::uint8_t> input;
    DeviceImage<std::uint8_t> reference;
    DeviceImage<std::uint8_t> output;
    DeviceMask mask;

    Prepared(ProblemClass c, Problem p, HostPair h)
        : problem_class(std::move(c)),
          problem(std::move(p)),
          host(std::move(h)),
          input(host.input),
          reference(host.reference),
          output(problem.shape),
          mask(*problem.mask) {}
};

Tuner::Tuner(TuneOptions options) : options_(options) {
    if (!(options_.min_occupancy > 0.0 && options_.min_occupancy <= 1.0)) {
        throw Error(fmt::format("a minimum occupancy of {}", options_.min_occupancy), "a fraction above 0 and at most 1");
    }
    if (options_.timing.min_samples < 1 || !(options_.timing.budget_seconds >= 0.0)) {
        throw Error(fmt::format("{} samples minimum and a budget of {} s per candidate", options_.timing.min_samples,
                                options_.timing.budget_seconds),
                    "at least 1 sample and a budget >= 0");
    }
    gpu_ = current_gpu_identity();
    flusher_ = std::make_unique<L2Flusher>();
}

Tuner::~Tuner() = default;

Tuner::Prepared& Tuner::prepared(const ProblemClass& problem_class) {
    if (!prepared_ || !(prepared_->problem_class == problem_class)) {
        prepared_.reset();  // free the previous class's buffers first
        Problem problem = representative_problem(problem_class);
        HostPair host = host_pair(problem, options_.image_seed, options_.reference_threads);
        prepared_ = std::make_unique<Prepared>(problem_class, std::move(problem), std::move(host));
    }
    return *prepared_;
}

TuningRecord Tuner::tune(const Variant& variant, const ProblemClass& problem_class, const CandidateProgress& progress) {
    const Problem representative = representative_problem(problem_class);
    if (const Support s = variant.supports(representative); !s) {
        throw Error(fmt::format("{} does not support {}: {}", variant.name(), to_string(representative), s.reason()),
                    "a class the variant supports (`klab list`)");
    }
    Prepared& p = prepared(problem_class);
    const double relaxed = std::min(options_.min_occupancy, options_.relaxed_min_occupancy);
    const SearchSpace space = search_space(variant, p.problem, relaxed, device_oracle());
    const LaunchShape default_shape = variant.default_shape(p.problem);
    // A variant whose kernels cannot reach the minimum at any shape (e.g. more than 32 registers
    // per thread cannot reach 100%) is tuned at the highest occupancy it does reach, and says so.
    double highest = 0.0;
    for (const Candidate* c : space.included()) highest = std::max(highest, c->occupancy->fraction);
    const double min_occupancy = std::min(options_.min_occupancy, highest);

    TuningRecord record;
    record.gpu = gpu_;
    record.variant = variant.name();
    record.source_hash = source_hash(variant);
    record.problem_class = problem_class;
    record.problem = to_string(p.problem);
    record.requested_min_occupancy = options_.min_occupancy;
    record.min_occupancy = min_occupancy;
    if (min_occupancy < options_.min_occupancy - 1e-9) {
        record.note = fmt::format("no shape reaches {} occupancy; tuned at the highest reached, {}", percent_text(options_.min_occupancy),
                                  percent_text(min_occupancy));
    }
    record.relaxed_min_occupancy = relaxed;
    record.tuned_at = utc_timestamp();
    record.klab_version = build_version_text();

    // The candidates to measure: the space at the relaxed minimum, plus the default shape when
    // the space excludes it (so that the record can compare the tuned shape with it).
    struct ToMeasure {
        Candidate candidate;
        bool in_space = true;  // false: the default shape, measured only for comparison
    };
    std::vector<ToMeasure> to_measure;
    bool default_in_space = false;
    for (const Candidate& c : space.candidates) {
        if (c.included()) {
            to_measure.push_back({c, true});
            default_in_space = default_in_space || same_shape(c.shape, default_shape);
        } else {
            ++record.candidates_excluded;
        }
    }
    if (!default_in_space) {
        Candidate c;
        c.shape = default_shape;
        c.threads = default_shape.block_x * default_shape.block_y;
        try {
            for (const KernelLaunch& launch : variant.kernels(p.problem, default_shape)) {
                c.kernels.push_back(device_oracle()(launch));
                if (!c.occupancy || c.kernels.back().occupancy.fraction < c.occupancy->fraction) c.occupancy = c.kernels.back().occupancy;
            }
            to_measure.push_back({c, false});
        } catch (const Error&) {
            // A default the device cannot run shows up as an invalid candidate only if measured;
            // prepare() below would say the same. Leave it out.
        }
    }

    const DeviceBuffers buffers{device_buffer(p.input), device_buffer(p.output), p.mask.view()};
    const DeviceBuffer reference_buffer = device_buffer(p.reference);
    std::vector<MeasuredCandidate> measured;       // in the space at min_occupancy
    std::vector<MeasuredCandidate> relaxed_only;   // below min_occupancy, at relaxed or more
    int done = 0;
    for (const auto& [c, in_space] : to_measure) {
        const bool is_default = same_shape(c.shape, default_shape);
        try {
            const LaunchPlan plan = prepare(variant, p.problem, buffers, c.shape);
            KLAB_CUDA_CHECK(cudaMemset(buffers.output.data, 0xA5, p.output.capacity_bytes()));
            launch(plan);
            KLAB_CUDA_CHECK(cudaDeviceSynchronize());
            if (count_differences(buffers.output, reference_buffer) != 0) {
                const Verification v = verify_output(variant, p.problem, p.host, p.output);
                if (!v.ok()) throw Error("differs from the CPU reference: " + v.summary(), "a verified output");
            }
            const Timing timing = measure([&plan](cudaStream_t stream) { launch(plan, stream); }, *flusher_, nullptr, options_.timing);

            MeasuredCandidate m;
            m.shape = c.shape;
            m.us = timing.us;
            m.samples = static_cast<int>(timing.samples_us.size());
            m.occupancy = *c.occupancy;
            for (std::size_t k = 0; k < c.kernels.size(); ++k) {
                m.kernels.push_back({c.kernels[k].kernel_name, c.kernels[k].resources, plan.kernels[k].dynamic_shared_bytes});
            }
            ++record.candidates_measured;
            if (is_default) record.default_shape = m;
            const bool meets_rule = c.occupancy->fraction >= min_occupancy - 1e-9;
            if (in_space && meets_rule) {
                measured.push_back(std::move(m));
            } else if (in_space) {
                relaxed_only.push_back(std::move(m));
            }
        } catch (const Error& e) {
            record.invalid.push_back({c.shape, e.what()});
        }
        if (progress) progress(++done, static_cast<int>(to_measure.size()), c.shape);
    }

    if (measured.empty()) {
        std::string reasons;
        for (const InvalidCandidate& i : record.invalid) reasons += fmt::format("; {}: {}", to_string(i.shape), i.reason);
        throw Error(fmt::format("no valid candidate for {} on {} at {} occupancy or more (space at {}: {}{})", variant.name(),
                                to_string(problem_class), percent_text(min_occupancy), percent_text(relaxed), space.summary(), reasons),
                    "at least one block shape that runs and verifies");
    }
    const std::vector<std::size_t> order = rank_candidates(measured, default_shape, options_.tie_tolerance);
    for (std::size_t i = 0; i < order.size() && i < 3; ++i) record.top.push_back(measured[order[i]]);

    // The fastest at the relaxed minimum, by median alone, and what the rule costs against it.
    const MeasuredCandidate* fastest = &measured.front();
    for (const auto* list : {&measured, &relaxed_only}) {
        for (const MeasuredCandidate& m : *list) {
            if (m.us.median < fastest->us.median) fastest = &m;
        }
    }
    record.best_relaxed = *fastest;
    record.rule_cost = record.top.front().us.median / fastest->us.median - 1.0;
    return record;
}

std::vector<std::size_t> rank_candidates(const std::vector<MeasuredCandidate>& measured, const LaunchShape& default_shape,
                                         double tie_tolerance) {
    std::vector<std::size_t> order(measured.size());
    std::iota(order.begin(), order.end(), 0);
    if (measured.empty()) return order;
    const auto by_median = [&](std::size_t a, std::size_t b) { return measured[a].us.median < measured[b].us.median; };
    const double fastest = measured[*std::min_element(order.begin(), order.end(), by_median)].us.median;
    const auto tied = [&](std::size_t i) { return measured[i].us.median <= fastest * (1.0 + tie_tolerance); };
    // The tie-break key: not the default shape, threads, block width, then enumeration order.
    const auto tie_key = [&](std::size_t i) {
        const LaunchShape& s = measured[i].shape;
        return std::make_tuple(!same_shape(s, default_shape), s.block_x * s.block_y, s.block_x, i);
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const bool ta = tied(a);
        const bool tb = tied(b);
        if (ta != tb) return ta;
        if (ta) return tie_key(a) < tie_key(b);
        return by_median(a, b);
    });
    return order;
}

std::string source_hash(const Variant& variant) {
    const RegisteredVariant* entry = Registry::instance().entry(variant.name());
    return entry != nullptr && !entry->source_hash.empty() ? entry->source_hash : "unknown";
}

Verification verify_shape_once(const Variant& variant, const Problem& problem, const LaunchShape& shape) {
    using Key = std::tuple<std::string, std::string, std::string, std::string, int, int>;
    static std::mutex mutex;
    static std::map<Key, Verification> verdicts;
    const Key key{variant.name(), to_string(shape), mask_identity(*problem.mask), to_string(problem.border),
                  problem.shape.channels, static_cast<int>(problem.shape.layout)};
    {
        const std::lock_guard<std::mutex> lock(mutex);
        if (const auto it = verdicts.find(key); it != verdicts.end()) return it->second;
    }
    Problem small = problem;
    small.shape.width = 509;
    small.shape.height = 287;
    const HostPair host = host_pair(small, 7, 0);
    DeviceImage<std::uint8_t> in(host.input);
    DeviceImage<std::uint8_t> out(small.shape);
    const DeviceMask mask(*small.mask);
    run(variant, small, {device_buffer(in), device_buffer(out), mask.view()}, shape);
    KLAB_CUDA_CHECK(cudaDeviceSynchronize());
    const Verification v = verify_output(variant, small, host, out);
    const std::lock_guard<std::mutex> lock(mutex);
    verdicts.emplace(key, v);
    return v;
}

}  // namespace klab::autotune
