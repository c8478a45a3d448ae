// The tuner (autotune/tuner.hpp): every candidate shape of a variant measured on a problem class,
// each result verified against the CPU reference, the finalists remeasured in one pass, and the
// rules that pick the winner (the minimum occupancy applied, the rule's cost, ties). One file over
// ~400 lines: the measuring loop and the rules compare shapes the same way (same_shape) and share
// the class's host and device images, so either half is read with the other.
#include "autotune/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
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

// A natural synthetic image in the problem's layout, and the CPU reference of the problem on it as
// bytes: the output image (u8 for convolutions and Sobel, u32 or u64 sums for integral images)
// stored in a u8 image of element_bytes times the width, so that the tuner's device buffers,
// poisoning and byte comparison are the same for every operation.
struct HostPair {
    ImageU8 input;
    ImageU8 reference;  // the expected output's bytes
    ElementType output_type = ElementType::u8;
    ImageShape output_shape;
};

std::size_t element_bytes(ElementType type) { return type == ElementType::u64 ? 8 : type == ElementType::u32 ? 4 : 1; }

// `shape` with each element widened to `bytes` bytes: the shape of the same memory read as bytes.
ImageShape byte_shape(ImageShape shape, std::size_t bytes) {
    shape.width *= static_cast<int>(bytes);
    return shape;
}

template <class T>
ImageU8 bytes_of(const HostImage<T>& image) {
    ImageU8 bytes(byte_shape(image.shape(), sizeof(T)));
    std::memcpy(bytes.data(), image.data(), image.size_bytes());  // both tightly packed
    return bytes;
}

template <class T>
HostImage<T> typed_of(const ImageU8& bytes, const ImageShape& shape) {
    HostImage<T> image(shape);
    std::memcpy(image.data(), bytes.data(), image.size_bytes());  // both tightly packed
    return image;
}

HostPair host_pair(const Problem& problem, std::uint64_t seed, int threads) {
    HostPair pair;
    pair.input = synth::generate(synth::Pattern::natural, problem.shape.width, problem.shape.height, problem.shape.channels,
                                 seed, threads);
    if (problem.shape.layout != Layout::aos) pair.input = reference::to_layout(pair.input, problem.shape.layout);
    pair.output_shape = output_shape(problem);
    switch (problem.op) {
        case Operation::convolve: pair.reference = reference::convolve(pair.input, *problem.mask, problem.border, threads); break;
        case Operation::sobel: pair.reference = reference::sobel(pair.input, problem.border, threads); break;
        case Operation::integral:
            if (reference::integral_type(problem.shape.width, problem.shape.height) == reference::IntegralType::u64) {
                pair.output_type = ElementType::u64;
                pair.reference = bytes_of(reference::integral<std::uint64_t>(pair.input, threads));
            } else {
                pair.output_type = ElementType::u32;
                pair.reference = bytes_of(reference::integral<std::uint32_t>(pair.input, threads));
            }
            break;
    }
    return pair;
}

// A device image holding the output's bytes (u8, byte_shape), and the typed buffer a variant writes.
DeviceImage<std::uint8_t> output_bytes(const HostPair& host) {
    return DeviceImage<std::uint8_t>(byte_shape(host.output_shape, element_bytes(host.output_type)));
}
DeviceBuffer output_buffer(DeviceImage<std::uint8_t>& bytes, const HostPair& host) {
    DeviceBuffer b = device_buffer(bytes);
    b.shape = host.output_shape;
    b.type = host.output_type;
    return b;
}

// The full verification of an output that differs from the reference somewhere on the device: the
// fp32 tie rule for a convolution, exact equality for the integer operations.
Verification verify_output(const Variant& variant, const Problem& problem, const HostPair& host, const DeviceImage<std::uint8_t>& out) {
    const ImageU8 bytes = out.download();
    switch (host.output_type) {
        case ElementType::u32:
            return verify_exact(typed_of<std::uint32_t>(host.reference, host.output_shape), typed_of<std::uint32_t>(bytes, host.output_shape));
        case ElementType::u64:
            return verify_exact(typed_of<std::uint64_t>(host.reference, host.output_shape), typed_of<std::uint64_t>(bytes, host.output_shape));
        case ElementType::u8: break;
    }
    if (problem.op == Operation::sobel) return verify_exact(host.reference, bytes);
    return verify_convolution(host.input, *problem.mask, problem.border, host.reference, bytes, variant.coefficient_error(problem));
}

MeasuredCandidate measured_candidate(const Candidate& c, const LaunchPlan& plan, const Timing& timing) {
    MeasuredCandidate m;
    m.shape = c.shape;
    m.us = timing.us;
    m.samples = static_cast<int>(timing.samples_us.size());
    m.occupancy = *c.occupancy;
    for (std::size_t k = 0; k < c.kernels.size(); ++k) {
        m.kernels.push_back({c.kernels[k].kernel_name, c.kernels[k].resources, plan.kernels[k].dynamic_shared_bytes});
    }
    return m;
}

// Every kernel the space asked the occupancy API about, with its registers and shared memory:
// what `klab tune --plan-for` needs for another GPU.
std::vector<KernelRecord> kernels_seen(const SearchSpace& space) {
    std::vector<KernelRecord> seen;
    for (const Candidate& c : space.candidates) {
        for (const KernelOccupancy& k : c.kernels) {
            const bool known = std::any_of(seen.begin(), seen.end(), [&](const KernelRecord& r) { return r.name == k.kernel_name; });
            if (!known) seen.push_back({k.kernel_name, k.resources, 0});
        }
    }
    return seen;
}

// After a failed candidate: an error that leaves the CUDA context unusable (an illegal address,
// a kernel fault) would make every later candidate fail for no reason of its own. Stop instead.
void stop_if_context_lost(const std::string& who, const LaunchShape& shape) {
    (void)cudaGetLastError();  // clears an error that does not stick
    const cudaError_t sticky = cudaDeviceSynchronize();
    if (sticky != cudaSuccess) {
        throw CudaContextLost(fmt::format("tuning {} stopped: block {} left the CUDA context unusable ({}: {})", who, to_string(shape),
                                          cudaGetErrorName(sticky), cudaGetErrorString(sticky)));
    }
}

// A mask's sides and coefficients as text: two masks with the same name may differ (mask files).
std::string mask_identity(const Mask& mask) {
    return fmt::format("{}x{}:{}", mask.width(), mask.height(), fmt::join(mask.coefficients(), ","));
}

// Whether any candidate of the list was re-measured in the finalists' interleaved pass.
bool has_remeasured(const std::vector<MeasuredCandidate>& list) {
    return std::any_of(list.begin(), list.end(), [](const MeasuredCandidate& m) { return m.remeasured; });
}

// The fastest of `list` by figures of one pass: among its re-measured candidates where it has any
// (the others were slower in the first pass), else among all; nullptr for an empty list.
const MeasuredCandidate* fastest_of(const std::vector<MeasuredCandidate>& list) {
    const bool second_pass = has_remeasured(list);
    const MeasuredCandidate* fastest = nullptr;
    for (const MeasuredCandidate& m : list) {
        if ((!second_pass || m.remeasured) && (fastest == nullptr || m.us.median < fastest->us.median)) fastest = &m;
    }
    return fastest;
}

}  // namespace

// The class being tuned: its problem, host images and device buffers, shared by the variants.
struct Tuner::Prepared {
    ProblemClass problem_class;
    Problem problem;
    HostPair host;
    DeviceImage<std::uint8_t> input;
    DeviceImage<std::uint8_t> reference;
    DeviceImage<std::uint8_t> poison;  // the reference's complement: what the output starts as
    DeviceImage<std::uint8_t> output;  // its bytes (output_buffer() gives the variant's view)
    std::unique_ptr<DeviceMask> mask;  // convolutions only

    Prepared(ProblemClass c, Problem p, HostPair h)
        : problem_class(std::move(c)),
          problem(std::move(p)),
          host(std::move(h)),
          input(host.input),
          reference(host.reference),
          poison(complement(host.reference)),
          output(output_bytes(host)),
          mask(problem.mask ? std::make_unique<DeviceMask>(*problem.mask) : nullptr) {}
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

Tuner::Prepared& Tuner::prepared(const ProblemClass& problem_class, const Problem& problem) {
    if (!prepared_ || !(prepared_->problem_class == problem_class) || to_string(prepared_->problem) != to_string(problem)) {
        prepared_.reset();  // free the previous problem's buffers first
        HostPair host = host_pair(problem, options_.image_seed, options_.reference_threads);
        prepared_ = std::make_unique<Prepared>(problem_class, problem, std::move(host));
    }
    return *prepared_;
}

TuningRecord Tuner::tune(const Variant& variant, const ProblemClass& problem_class, const CandidateProgress& progress) {
    const Problem representative = representative_problem(problem_class, variant);
    if (const Support s = variant.supports(representative); !s) {
        throw Error(fmt::format("{} does not support {}: {}", variant.name(), to_string(representative), s.reason()),
                    "a class the variant supports (`klab list`)");
    }
    Prepared& p = prepared(problem_class, representative);
    // Every shape that runs, first: the occupancy the variant can reach decides the minimum (a
    // variant whose fixed-size kernels stay below it is tuned at the highest it reaches).
    const SearchSpace space = search_space(variant, p.problem, kAnyOccupancy, device_oracle());
    const LaunchShape default_shape = variant.default_shape(p.problem);
    const double min_occupancy = applied_min_occupancy(space, options_.min_occupancy);
    const double relaxed = std::min(min_occupancy, options_.relaxed_min_occupancy);
    const std::string who = fmt::format("{} on {}", variant.name(), to_string(problem_class));

    TuningRecord record;
    record.gpu = gpu_;
    record.variant = variant.name();
    record.source_hash = source_hash(variant);
    record.problem_class = problem_class;
    record.problem = to_string(p.problem);
    record.requested_min_occupancy = options_.min_occupancy;
    record.min_occupancy = min_occupancy;
    if (min_occupancy < options_.min_occupancy - 1e-9) {
        record.note = fmt::format("no shape reaches {} occupancy; tuned at the highest reached, {}",
                                  percent_text(options_.min_occupancy), percent_text(min_occupancy));
    }
    record.relaxed_min_occupancy = relaxed;
    record.tuned_at = utc_timestamp();
    record.klab_version = build_version_text();
    record.kernels_seen = kernels_seen(space);

    // What to measure: the space at the relaxed minimum, plus the default shape when the space
    // excludes it (measured only to compare the tuned shape with it).
    struct ToMeasure {
        Candidate candidate;
        bool in_space = true;
    };
    std::vector<ToMeasure> to_measure;
    bool default_in_space = false;
    for (const Candidate& c : space.candidates) {
        if (!c.included() || c.occupancy->fraction < relaxed - 1e-9) {
            ++record.candidates_excluded;
            continue;
        }
        to_measure.push_back({c, true});
        default_in_space = default_in_space || same_shape(c.shape, default_shape);
    }
    if (!default_in_space) {
        // Whatever its occupancy (hence the minimum of 0): it is measured only for comparison.
        const Candidate c = evaluate_shape(variant, p.problem, default_shape, 0.0, device_oracle());
        if (c.included()) to_measure.push_back({c, false});
    }

    const DeviceBuffers buffers{device_buffer(p.input), output_buffer(p.output, p.host), p.mask ? p.mask->view() : DeviceMaskView{}};
    const DeviceBuffer reference_buffer = device_buffer(p.reference);
    const DeviceBuffer poison_buffer = device_buffer(p.poison);
    // Runs the candidate once and verifies it: the output is first filled with the complement of
    // the reference, so that any pixel it does not write differs.
    const auto verified_plan = [&](const LaunchShape& shape) {
        LaunchPlan plan = prepare(variant, p.problem, buffers, shape);
        KLAB_CUDA_CHECK(cudaMemcpy2D(buffers.output.data, buffers.output.pitch_bytes, poison_buffer.data, poison_buffer.pitch_bytes,
                                     static_cast<std::size_t>(poison_buffer.shape.row_elements()), poison_buffer.shape.rows(),
                                     cudaMemcpyDeviceToDevice));
        launch(plan);
        KLAB_CUDA_CHECK(cudaDeviceSynchronize());
        if (count_differences(device_buffer(p.output), reference_buffer) != 0) {
            const Verification v = verify_output(variant, p.problem, p.host, p.output);
            if (!v.ok()) throw Error("differs from the CPU reference: " + v.summary(), "a verified output");
        }
        return plan;
    };

    // The GPU idled while the CPU reference was computed: let its clocks ramp up first.
    if (!to_measure.empty()) {
        try {
            const LaunchPlan plan = prepare(variant, p.problem, buffers, to_measure.front().candidate.shape);
            warm_up([&plan](cudaStream_t stream) { launch(plan, stream); }, nullptr, 0.05);
        } catch (const Error&) {
            stop_if_context_lost(who, to_measure.front().candidate.shape);  // an invalid first candidate is found below
        }
    }

    std::vector<MeasuredCandidate> at_minimum;     // in the space, at min_occupancy or more
    std::vector<MeasuredCandidate> below_minimum;  // in the space, from relaxed to min_occupancy
    int done = 0;
    for (const auto& [c, in_space] : to_measure) {
        try {
            const LaunchPlan plan = verified_plan(c.shape);
            const Timing timing = measure([&plan](cudaStream_t stream) { launch(plan, stream); }, *flusher_, nullptr, options_.timing);
            MeasuredCandidate m = measured_candidate(c, plan, timing);
            ++record.candidates_measured;
            if (same_shape(c.shape, default_shape)) record.default_shape = m;
            if (in_space) (c.occupancy->fraction >= min_occupancy - 1e-9 ? at_minimum : below_minimum).push_back(std::move(m));
        } catch (const Error& e) {
            stop_if_context_lost(who, c.shape);
            record.invalid.push_back({c.shape, e.what()});
        }
        if (progress) progress(++done, static_cast<int>(to_measure.size()), c.shape);
    }
    if (at_minimum.empty()) {
        std::string reasons;
        for (const InvalidCandidate& i : record.invalid) reasons += fmt::format("; {}: {}", to_string(i.shape), i.reason);
        throw Error(fmt::format("no valid candidate for {} at {} occupancy or more ({}{})", who, percent_text(min_occupancy),
                                space.summary(), reasons),
                    "at least one block shape that runs and verifies");
    }

    // The finalists — the fastest few at the minimum and the fastest below it — measured again
    // in interleaved rounds, so that drift during the long first pass cannot decide the order.
    remeasure_finalists(variant, p.problem, buffers, default_shape, at_minimum, below_minimum);
    for (const auto* list : {&at_minimum, &below_minimum}) {
        for (const MeasuredCandidate& m : *list) {
            if (m.remeasured && same_shape(m.shape, default_shape)) record.default_shape = m;  // the same pass as its rivals
        }
    }

    const std::vector<std::size_t> order = rank_candidates(at_minimum, default_shape, options_.tie_tolerance);
    for (std::size_t i = 0; i < order.size() && i < 3; ++i) record.top.push_back(at_minimum[order[i]]);
    // The fastest at the relaxed minimum, by figures of one pass (as the ranking compares them).
    const MeasuredCandidate* fastest = fastest_of(at_minimum);
    const MeasuredCandidate* fastest_below = fastest_of(below_minimum);
    if (fastest_below != nullptr && fastest_below->us.median < fastest->us.median) fastest = fastest_below;
    record.best_relaxed = *fastest;
    record.rule_cost = rule_cost(at_minimum, below_minimum, relaxed < min_occupancy - 1e-9);
    return record;
}

void Tuner::remeasure_finalists(const Variant& variant, const Problem& problem, const DeviceBuffers& buffers,
                                const LaunchShape& default_shape, std::vector<MeasuredCandidate>& at_minimum,
                                std::vector<MeasuredCandidate>& below_minimum) {
    // The fastest few within 5% (or the tie floor) of the fastest, and the default shape when it is
    // among those close: the tie rule then compares figures of the same interleaved pass.
    constexpr double kFinalistWindow = 0.05;
    constexpr std::size_t kMostFinalists = 6;
    std::vector<MeasuredCandidate*> finalists;
    const auto pick = [&](std::vector<MeasuredCandidate>& list, std::size_t most) {
        std::vector<MeasuredCandidate*> sorted;
        for (MeasuredCandidate& m : list) sorted.push_back(&m);
        std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->us.median < b->us.median; });
        if (sorted.empty()) return;
        const double limit = sorted[0]->us.median + std::max(sorted[0]->us.median * kFinalistWindow, 2.0 * kEventResolutionUs);
        for (std::size_t i = 0; i < sorted.size() && sorted[i]->us.median <= limit; ++i) {
            const bool is_default = same_shape(sorted[i]->shape, default_shape);
            if (i < most || is_default) finalists.push_back(sorted[i]);
        }
    };
    pick(at_minimum, kMostFinalists);
    pick(below_minimum, 1);
    if (finalists.size() < 2) return;
    std::vector<LaunchPlan> plans;
    for (MeasuredCandidate* m : finalists) plans.push_back(prepare(variant, problem, buffers, m->shape));
    std::vector<Work> works;
    for (const LaunchPlan& plan : plans) works.push_back([&plan](cudaStream_t stream) { launch(plan, stream); });
    const std::vector<Timing> timings = measure_interleaved(works, *flusher_, nullptr, options_.timing);
    for (std::size_t i = 0; i < finalists.size(); ++i) {
        finalists[i]->us = timings[i].us;
        finalists[i]->samples = static_cast<int>(timings[i].samples_us.size());
        finalists[i]->remeasured = true;
    }
}

double applied_min_occupancy(const SearchSpace& space, double requested) {
    double highest = 0.0;
    for (const Candidate* c : space.included()) highest = std::max(highest, c->occupancy->fraction);
    if (highest <= 0.0) {
        throw Error(fmt::format("no candidate reaches {} occupancy ({})", percent_text(space.min_occupancy), space.summary()),
                    "a variant with at least one shape at that occupancy; see `klab tune --dry-run --verbose`");
    }
    return std::min(requested, highest);
}

std::optional<double> rule_cost(const std::vector<MeasuredCandidate>& at_minimum, const std::vector<MeasuredCandidate>& below_minimum,
                                bool relaxed_is_wider) {
    if (at_minimum.empty() || !relaxed_is_wider) return std::nullopt;
    const double best_at_minimum = fastest_of(at_minimum)->us.median;
    const MeasuredCandidate* below = fastest_of(below_minimum);
    const double best_overall = below != nullptr ? std::min(below->us.median, best_at_minimum) : best_at_minimum;
    return best_at_minimum / best_overall - 1.0;
}

std::vector<std::size_t> rank_candidates(const std::vector<MeasuredCandidate>& measured, const LaunchShape& default_shape,
                                         double tie_tolerance, double tie_floor_us) {
    std::vector<std::size_t> order(measured.size());
    std::iota(order.begin(), order.end(), 0);
    if (measured.empty()) return order;
    const auto by_median = [&](std::size_t a, std::size_t b) { return measured[a].us.median < measured[b].us.median; };
    // Figures of one pass decide: where finalists were re-measured, they come first (the others
    // were slower in the first pass), and the fastest of them sets the ties.
    const bool second_pass = has_remeasured(measured);
    const auto deciding = [&](std::size_t i) { return !second_pass || measured[i].remeasured; };
    const Quartiles& best = fastest_of(measured)->us;
    // Within the tolerance: a tie. Beyond it, up to the timer's floor: a tie only where the samples
    // do not tell the two apart (the interquartile ranges overlap), so that thousands of samples
    // whose quartiles lie apart are not overruled by the tie-break.
    const auto tied = [&](std::size_t i) {
        if (!deciding(i)) return false;  // the others follow by median
        const Quartiles& q = measured[i].us;
        const double gap = q.median - best.median;
        return gap <= best.median * tie_tolerance || (gap <= tie_floor_us && q.q1 <= best.q3);
    };
    // The tie-break key: not the default shape, threads, block width, then enumeration order.
    const auto tie_key = [&](std::size_t i) {
        const LaunchShape& s = measured[i].shape;
        return std::make_tuple(!same_shape(s, default_shape), s.block_x * s.block_y, s.block_x, i);
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (deciding(a) != deciding(b)) return deciding(a);
        const bool ta = tied(a);
        const bool tb = tied(b);
        if (ta != tb) return ta;
        if (ta) return tie_key(a) < tie_key(b);
        return by_median(a, b);
    });
    return order;
}

std::optional<SourceHashes> source_hashes(std::string_view variant_name) {
    const RegisteredVariant* entry = Registry::instance().entry(variant_name);
    if (entry == nullptr) return std::nullopt;
    return SourceHashes{entry->source_hash.empty() ? "unknown" : entry->source_hash, entry->full_text_hash};
}

SourceHashes source_hashes(const Variant& variant) { return source_hashes(variant.name()).value_or(SourceHashes{"unknown", {}}); }

std::string source_hash(const Variant& variant) { return source_hashes(variant).code; }

Verification verify_shape_once(const Variant& variant, const Problem& problem, const LaunchShape& shape) {
    using Key = std::tuple<std::string, std::string, std::string, std::string, int, int>;
    static std::mutex mutex;
    static std::map<Key, Verification> verdicts;
    const Key key{variant.name(), to_string(shape), problem.mask ? mask_identity(*problem.mask) : std::string("no mask"),
                  to_string(problem.border), problem.shape.channels, static_cast<int>(problem.shape.layout)};
    {
        const std::lock_guard<std::mutex> lock(mutex);
        if (const auto it = verdicts.find(key); it != verdicts.end()) return it->second;
    }
    Problem small = problem;
    small.shape.width = 509;
    small.shape.height = 287;
    const HostPair host = host_pair(small, 7, 0);  // an integral image's sums are u32 at this size
    DeviceImage<std::uint8_t> in(host.input);
    DeviceImage<std::uint8_t> out = output_bytes(host);
    const std::unique_ptr<DeviceMask> mask = small.mask ? std::make_unique<DeviceMask>(*small.mask) : nullptr;
    run(variant, small, {device_buffer(in), output_buffer(out, host), mask ? mask->view() : DeviceMaskView{}}, shape);
    KLAB_CUDA_CHECK(cudaDeviceSynchronize());
    const Verification v = verify_output(variant, small, host, out);
    const std::lock_guard<std::mutex> lock(mutex);
    verdicts.emplace(key, v);
    return v;
}

}  // namespace klab::autotune
