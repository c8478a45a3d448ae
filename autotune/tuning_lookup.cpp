// The run-time lookup ladder of the tuning cache (autotune/tuning_cache.hpp): the exact problem
// class on this GPU, the same GPU at the nearest size, the same compute capability, the variant's
// default shape.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "autotune/tuning_cache.hpp"

namespace klab::autotune {

const char* to_string(LookupLevel level) {
    switch (level) {
        case LookupLevel::exact: return "exact problem class on this GPU";
        case LookupLevel::nearest_size: return "same GPU, nearest size";
        case LookupLevel::same_compute_capability: return "same compute capability";
        case LookupLevel::variant_default: return "the variant's default shape";
    }
    return "?";
}

Lookup lookup(const TuningCache& cache, const Variant& variant, const SourceHashes& source, const Problem& problem,
              const GpuIdentity& gpu) {
    const ProblemClass wanted = problem_class(problem);
    const int wanted_rank = resolution_rank(wanted.resolution);
    const std::string key = gpu.key();

    const TuningSpace space = variant.tuning_space();
    // A candidate answer: a record and the first of its top shapes the variant accepts (its
    // check_shape, and parameters its tuning space declares: what prepare() will check).
    struct Choice {
        const TuningRecord* record = nullptr;
        const MeasuredCandidate* shape = nullptr;
    };
    int stale_same_class = 0;  // records of this class skipped for another source of the variant

    // The best record among those `admit` lets in, ordered by `rank` (smaller first; the median
    // of the chosen shape breaks ties, so records of several occupancy rules give the fastest).
    const auto best = [&](auto admit, auto rank) {
        Choice chosen;
        decltype(rank(std::declval<const TuningRecord&>())) chosen_rank{};
        for (const TuningRecord& r : cache.records()) {
            if (r.variant != variant.name() || !admit(r)) continue;
            ProblemClass same_but_size = wanted;
            same_but_size.resolution = r.problem_class.resolution;
            if (!(r.problem_class == same_but_size)) continue;
            if (!source.current(r.source_hash)) {
                if (r.problem_class == wanted) ++stale_same_class;
                continue;
            }
            const MeasuredCandidate* usable = nullptr;
            for (const MeasuredCandidate& m : r.top) {
                if (!parameter_mismatch(space, m.shape) && variant.check_shape(problem, m.shape)) {
                    usable = &m;
                    break;
                }
            }
            if (usable == nullptr) continue;
            const auto this_rank = rank(r);
            if (chosen.record == nullptr || this_rank < chosen_rank ||
                (!(chosen_rank < this_rank) && usable->us.median < chosen.shape->us.median)) {
                chosen = {&r, usable};
                chosen_rank = this_rank;
            }
        }
        return chosen;
    };
    // Size distance first, then the larger bucket (a shape tuned on more pixels, fuller grids).
    const auto by_size = [&](const TuningRecord& r) {
        const int rank = resolution_rank(r.problem_class.resolution);
        return std::make_pair(std::abs(rank - wanted_rank), -rank);
    };
    const auto found = [&](const Choice& c, LookupLevel level) {
        Lookup l;
        l.shape = c.shape->shape;
        l.level = level;
        l.record = c.record;
        l.explanation = fmt::format("block {} from the tuning cache ({}: {} on {}, minimum occupancy {}, {:.1f} us median, tuned {})",
                                    to_string(l.shape), to_string(level), to_string(c.record->problem_class), c.record->gpu.name,
                                    percent_text(c.record->min_occupancy), c.shape->us.median, c.record->tuned_at);
        if (stale_same_class > 0) {
            l.explanation += fmt::format("; {} record(s) of this class were tuned with another source of {} and skipped",
                                         stale_same_class, variant.name());
        }
        return l;
    };

    if (const Choice c = best([&](const TuningRecord& r) { return r.gpu.key() == key; }, by_size); c.record) {
        return found(c, c.record->problem_class == wanted ? LookupLevel::exact : LookupLevel::nearest_size);
    }
    // The same compute capability: the same GPU model (another driver or runtime) first.
    const auto same_model = [&](const TuningRecord& r) { return r.gpu.name == gpu.name && r.gpu.sm_count == gpu.sm_count; };
    const auto by_model_then_size = [&](const TuningRecord& r) { return std::make_pair(same_model(r) ? 0 : 1, by_size(r)); };
    stale_same_class = 0;  // counted again over the wider set
    if (const Choice c = best([&](const TuningRecord& r) { return r.gpu.same_compute_capability(gpu); }, by_model_then_size);
        c.record) {
        return found(c, LookupLevel::same_compute_capability);
    }
    Lookup l;
    l.shape = variant.default_shape(problem);
    l.level = LookupLevel::variant_default;
    l.explanation = fmt::format("block {}, the variant's default: no usable tuning for {} {} on {}{}", to_string(l.shape),
                                variant.name(), to_string(wanted), gpu.name,
                                stale_same_class > 0 ? fmt::format(" ({} record(s) of this class were tuned with another source of "
                                                                   "the variant: run klab tune again)",
                                                                   stale_same_class)
                                                     : std::string());
    return l;
}

}  // namespace klab::autotune
