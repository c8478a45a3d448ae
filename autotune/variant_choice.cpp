#include "autotune/variant_choice.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autotune/problem_class.hpp"
#include "autotune/tuner.hpp"
#include "harness/error.hpp"
#include "harness/mask.hpp"
#include "harness/verify.hpp"

namespace klab::autotune {

namespace {

// The variant's default shape for the problem, with the block replaced by `block` when given
// (declared parameters keep their defaults: a block sets only the block).
LaunchShape launch_shape(const Variant& variant, const Problem& problem, const std::optional<LaunchShape>& block) {
    LaunchShape shape = variant.default_shape(problem);
    if (block) {
        shape.block_x = block->block_x;
        shape.block_y = block->block_y;
    }
    return shape;
}

// Whether `variant` runs `problem` with the shape it would get without the cache (the block or its default).
Support runs(const Variant& variant, const Problem& problem, const std::optional<LaunchShape>& block) {
    Support support = variant.supports(problem);
    if (support) support = variant.check_shape(problem, launch_shape(variant, problem, block));
    return support;
}

// A cached shape passes verify_shape_once(); `failure` says why not.
bool reverified(const Variant& variant, const Problem& problem, const LaunchShape& shape, std::string& failure) {
    try {
        const Verification check = verify_shape_once(variant, problem, shape);
        if (check.ok()) return true;
        failure = check.summary();
    } catch (const Error& e) {
        failure = e.what();  // e.g. a shape the device cannot run
    }
    return false;
}

}  // namespace

const Variant* requested_variant(const std::string& name, const FilterSpec& spec, const std::string& variant_option) {
    if (name == "auto") return nullptr;
    const Variant& variant = Registry::instance().get(name);  // its error lists the names
    if (variant.op() != spec.operation) {
        std::vector<std::string> names;
        for (const Variant* v : Registry::instance().for_op(spec.operation)) names.push_back(v->name());
        throw Error(fmt::format("{}{} computes {}, the filter {} is a {}", variant_option, name, to_string(variant.op()), spec.text,
                                to_string(spec.operation)),
                    fmt::format("auto, {}", fmt::join(names, ", ")));
    }
    return &variant;
}

VariantChooser::VariantChooser(TuningCache cache, GpuIdentity gpu, std::optional<LaunchShape> block, std::string block_text,
                               std::string variant_option)
    : cache_(std::move(cache)), gpu_(std::move(gpu)), block_(std::move(block)), block_text_(std::move(block_text)),
      variant_option_(std::move(variant_option)) {}

VariantChoice VariantChooser::choose(const Problem& problem, const Variant* requested, std::vector<std::string>& notes) const {
    return requested != nullptr ? named_choice(*requested, problem, notes) : auto_choice(problem, notes);
}

// A named variant: that variant, if it runs the problem, with the block, the cached or the default shape.
VariantChoice VariantChooser::named_choice(const Variant& requested, const Problem& problem, std::vector<std::string>& notes) const {
    const Support support = requested.supports(problem);
    if (!support) {
        throw Error(fmt::format("{}{} does not run {}: {}", variant_option_, requested.name(), to_string(problem), support.reason()),
                    fmt::format("{}auto, or a variant `klab list` shows supporting the problem", variant_option_));
    }
    return with_shape(requested, problem, notes);
}

// The shape for a chosen variant: the block (checked), else the tuning cache's (re-verified), else
// the default.
VariantChoice VariantChooser::with_shape(const Variant& variant, const Problem& problem, std::vector<std::string>& notes) const {
    if (block_) {
        const LaunchShape shape = launch_shape(variant, problem, block_);
        const Support support = variant.check_shape(problem, shape);
        if (!support) {
            throw Error(fmt::format("{} does not run {} with block {}: {}", variant.name(), to_string(problem), block_text_,
                                    support.reason()),
                        "a block `klab list` shows for the variant, or no --block");
        }
        return {&variant, shape, fmt::format("block {} (--block)", block_text_)};
    }
    const Lookup found = lookup(cache_, variant, source_hashes(variant), problem, gpu_);
    if (found.level == LookupLevel::variant_default) return {&variant, found.shape, found.explanation};
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

// auto: the fastest verified variant of the tuning cache for this problem, else a default.
VariantChoice VariantChooser::auto_choice(const Problem& problem, std::vector<std::string>& notes) const {
    if (block_) {
        return default_choice(problem, fmt::format("--block {}: the tuning cache's times are for its own blocks", block_text_), notes);
    }
    const ProblemClass wanted = problem_class(problem);
    std::vector<CachedTime> times = comparable_times(problem, wanted);
    if (times.empty()) {
        return default_choice(problem, fmt::format("no tuning records for this GPU/class ({} on {})", to_string(wanted), gpu_.name),
                              notes);
    }
    const ProblemClass& compared = times.front().found.record->problem_class;
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
        std::string why = fmt::format("auto: {}, fastest {}in the tuning cache for {}{} on {}: {:.1f} us", t.variant->name(),
                                      failed.empty() ? "" : "verified ", to_string(compared),
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
std::vector<VariantChooser::CachedTime> VariantChooser::comparable_times(const Problem& problem, const ProblemClass& wanted) const {
    std::vector<CachedTime> times;
    for (const Variant* v : Registry::instance().for_op(problem.op)) {
        if (!v->supports(problem)) continue;
        Lookup found = lookup(cache_, *v, source_hashes(*v), problem, gpu_);
        if (found.level != LookupLevel::exact && found.level != LookupLevel::nearest_size) continue;
        double median = found.record->top.front().us.median;
        for (const MeasuredCandidate& m : found.record->top) {
            if (to_string(m.shape) == to_string(found.shape)) {
                median = m.us.median;
                break;
            }
        }
        times.push_back({v, std::move(found), median});
    }
    if (times.empty()) return times;
    const int wanted_rank = resolution_rank(wanted.resolution);
    const auto distance = [&](const CachedTime& t) {
        const int rank = resolution_rank(t.found.record->problem_class.resolution);
        return std::make_pair(std::abs(rank - wanted_rank), -rank);
    };
    const auto nearest =
        std::min_element(times.begin(), times.end(), [&](const CachedTime& a, const CachedTime& b) { return distance(a) < distance(b); });
    const ProblemClass compared = nearest->found.record->problem_class;
    times.erase(std::remove_if(times.begin(), times.end(), [&](const CachedTime& t) { return !(t.found.record->problem_class == compared); }),
                times.end());
    std::stable_sort(times.begin(), times.end(), [](const CachedTime& a, const CachedTime& b) { return a.median_us < b.median_us; });
    return times;
}

// Variants that run the problem and have a record of the compared class on this GPU, but only
// ones tuned with another source of the variant (lookup() skips those): the log says why they
// are missing.
std::vector<std::string> VariantChooser::stale_variants(const Problem& problem, const ProblemClass& compared) const {
    std::vector<std::string> names;
    const std::string key = gpu_.key();
    for (const Variant* v : Registry::instance().for_op(problem.op)) {
        if (!v->supports(problem)) continue;
        const SourceHashes source = source_hashes(*v);
        bool current = false;
        bool stale = false;
        for (const TuningRecord& r : cache_.records()) {
            if (r.variant != v->name() || r.gpu.key() != key || !(r.problem_class == compared)) continue;
            if (source.current(r.source_hash)) {
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
// (sobel.register_window, else sobel.fused, for Sobel: one pass, several times faster than
// sobel.3kernel),
// where registered and running the problem; else the first registered variant that does.
VariantChoice VariantChooser::default_choice(const Problem& problem, const std::string& reason, std::vector<std::string>& notes) const {
    std::vector<std::pair<std::string, std::string>> preferred;  // name, why
    if (problem.op == Operation::convolve) {
        if (separable_variant_factors(*problem.mask)) {
            preferred = {{"conv.separable_fused", "the mask is separable"}, {"conv.halo_tiled", "the mask is separable"}};
        } else {
            preferred = {{"conv.halo_tiled", "the mask is not separable"}};
        }
    } else if (problem.op == Operation::sobel) {
        preferred = {{"sobel.register_window", "one pass, the window in registers"}, {"sobel.fused", "one pass over the image"}};
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

}  // namespace klab::autotune
