#pragma once
// The autotuner: for one variant and problem class on the current GPU, every candidate of the
// search space (search_space.hpp) is run once and verified against the CPU reference, then timed
// cold (timing.hpp); the fastest verified candidates become a TuningRecord (tuning_cache.hpp).
//
// Ranking: candidates whose medians lie within `tie_tolerance` (1%) of the fastest are ties,
// ordered deterministically: the variant's default shape first, then fewer threads, then a
// narrower block, then the parameters' declaration order. The rest follow by median.
// Candidates between relaxed_min_occupancy (50%) and min_occupancy (100%) are measured too, so
// that the record can say what the occupancy rule costs.
#include <functional>
#include <memory>
#include <string>

#include "autotune/problem_class.hpp"
#include "autotune/search_space.hpp"
#include "autotune/timing.hpp"
#include "autotune/tuning_cache.hpp"
#include "harness/variant.hpp"
#include "harness/verify.hpp"

namespace klab::autotune {

struct TuneOptions {
    double min_occupancy = 1.0;
    double relaxed_min_occupancy = 0.5;
    double tie_tolerance = 0.01;
    TimingOptions timing;  // per candidate
    int reference_threads = 0;  // CPU threads of the reference; 0 = all
    std::uint64_t image_seed = 1;
};

// Called after each candidate: (candidates done, candidates in all, the last one's shape).
using CandidateProgress = std::function<void(int done, int total, const LaunchShape& shape)>;

// Tunes variants on the classes given to it, keeping the current class's input, reference and
// device buffers between variants (tune the variants of one class one after another).
class Tuner {
public:
    explicit Tuner(TuneOptions options);
    ~Tuner();
    Tuner(const Tuner&) = delete;
    Tuner& operator=(const Tuner&) = delete;

    // Throws klab::Error when the variant does not support the class's representative problem or
    // no candidate is valid (the message lists why).
    TuningRecord tune(const Variant& variant, const ProblemClass& problem_class, const CandidateProgress& progress = {});

private:
    struct Prepared;
    Prepared& prepared(const ProblemClass& problem_class);

    TuneOptions options_;
    GpuIdentity gpu_;
    std::unique_ptr<Prepared> prepared_;
    std::unique_ptr<L2Flusher> flusher_;
};

// The ranking above, on measured candidates; returns indices into `measured`, best first.
// `default_shape` is the variant's default for the problem. Exposed for tests.
std::vector<std::size_t> rank_candidates(const std::vector<MeasuredCandidate>& measured, const LaunchShape& default_shape,
                                         double tie_tolerance);

// The variant's source hash as the build recorded it (Registry), "unknown" when it has none.
std::string source_hash(const Variant& variant);

// Re-verification of a cached shape on its first use in a process: runs `variant` with `shape`
// on a small synthetic image (509x287, sides no block divides) with the problem's mask, border,
// channels and layout, and verifies it against the CPU reference. Remembers the verdict per
// (variant, shape, mask, border, channels, layout), so later uses cost nothing.
Verification verify_shape_once(const Variant& variant, const Problem& problem, const LaunchShape& shape);

}  // namespace klab::autotune
