#pragma once
// The autotuner: for one variant and problem class on the current GPU, every candidate of the
// search space (search_space.hpp) is run once and verified against the CPU reference, then timed
// cold (timing.hpp); the fastest verified candidates become a TuningRecord (tuning_cache.hpp).
//
// Each candidate is verified before it is timed: its output buffer starts as the complement of
// the reference (so an unwritten pixel differs), a byte comparison runs on the device, and only
// where bytes differ does the full rule of harness/verify.hpp decide. A failing candidate is
// recorded as invalid and the tune goes on; one that breaks the CUDA context stops it.
//
// The GPU is warmed up before the first candidate; after the first pass the finalists (the
// fastest few within 5%, the default shape if it is among them, and the fastest below the
// minimum occupancy) are measured again in interleaved rounds, so that clock drift during the
// pass cannot decide their order.
//
// Ranking: candidates whose medians lie within `tie_tolerance` (1%) of the fastest are ties, and
// so are those within twice the CUDA events' documented resolution (1 us) whose interquartile
// range overlaps the fastest's (a gap the samples do not resolve); ties are ordered
// deterministically: the variant's default shape first, then fewer threads, then a narrower
// block, then enumeration order. The rest follow by median. Where finalists were re-measured,
// they are ranked (and the ties found) among themselves first, by the second pass's figures, and
// the others follow by their first-pass medians. Candidates between
// relaxed_min_occupancy (50%) and min_occupancy (100%) are measured too, so that the record can
// say what the rule costs.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

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

// Tunes variants on the classes given to it, keeping the current problem's input, reference and
// device buffers between variants (tune the variants of one class one after another). Each
// variant runs its class's representative problem (problem_class.hpp): for a convolution the
// Gaussian one, or the box one for a variant that takes box masks only; for Sobel and the integral
// image the bucket's image (their results must equal the reference exactly).
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
    Prepared& prepared(const ProblemClass& problem_class, const Problem& problem);
    void remeasure_finalists(const Variant& variant, const Problem& problem, const DeviceBuffers& buffers,
                             const LaunchShape& default_shape, std::vector<MeasuredCandidate>& at_minimum,
                             std::vector<MeasuredCandidate>& below_minimum);

    TuneOptions options_;
    GpuIdentity gpu_;
    std::unique_ptr<Prepared> prepared_;
    std::unique_ptr<L2Flusher> flusher_;
};

// Thrown when a candidate left the CUDA context unusable (a kernel fault): nothing more can be
// measured in this process, so the tune stops instead of blaming every later candidate.
class CudaContextLost : public Error {
public:
    using Error::Error;
};

// The ranking above, on measured candidates; returns indices into `measured`, best first.
// Ties: medians at most tie_tolerance x the fastest above it, or at most tie_floor_us (twice
// the CUDA event resolution) with the first quartile at or below the fastest's third. Where any
// candidate is `remeasured`, only those are ranked so (the fastest being the fastest of them) and
// the rest follow by median. `default_shape` is the variant's default for the problem.
std::vector<std::size_t> rank_candidates(const std::vector<MeasuredCandidate>& measured, const LaunchShape& default_shape,
                                         double tie_tolerance, double tie_floor_us = 2.0 * kEventResolutionUs);

// The lowest minimum a search space accepts: every shape that runs at all.
inline constexpr double kAnyOccupancy = 1e-6;

// The occupancy a tune applies: the requested minimum, or the highest any included candidate
// reaches where that is lower (a variant using more registers than full occupancy allows, or one
// whose fixed-size kernels stay below it). Throws klab::Error when the space includes no candidate.
double applied_min_occupancy(const SearchSpace& space, double requested);

// What the minimum costs: the fastest median at the minimum over the fastest overall (those
// below it included), minus 1, so >= 0; in each list, among its re-measured finalists where it has
// any (one pass's figures). nullopt without a candidate at the minimum or when the relaxed set is not wider
// than the minimum (--min-occupancy at or below the relaxed one).
std::optional<double> rule_cost(const std::vector<MeasuredCandidate>& at_minimum, const std::vector<MeasuredCandidate>& below_minimum,
                                bool relaxed_is_wider);

// The variant's source hash as the build recorded it (Registry), "unknown" when it has none: the
// hash of its code, which new records carry.
std::string source_hash(const Variant& variant);
// The hashes a current record of the variant may carry: source_hash() and the hash of its files'
// whole text (records tuned before 2026-11-30).
SourceHashes source_hashes(const Variant& variant);
// The same by the variant's name; nullopt for a name no variant of this build has.
std::optional<SourceHashes> source_hashes(std::string_view variant_name);

// Re-verification of a cached shape on its first use in a process: runs `variant` with `shape`
// on a small synthetic image (509x287, sides no block divides) with the problem's operation, mask,
// border, channels and layout, and verifies it against the CPU reference (an integral image's sums
// are u32 at that size, whatever the problem's). Remembers the verdict per (variant, shape, mask,
// border, channels, layout), so later uses cost nothing.
Verification verify_shape_once(const Variant& variant, const Problem& problem, const LaunchShape& shape);

}  // namespace klab::autotune
