#pragma once
// The tuning cache: what `klab tune` found, per GPU, in results/<gpu-slug>/autotune.json, and the
// run-time lookup of a launch shape in it.
//
// A record is keyed by the GPU's identity (name, compute capability, SM count, driver and runtime
// versions), the variant's name, the problem class and the occupancy rule it was tuned under; it
// is valid only for the variant code it was tuned with (KLAB_VARIANT_SOURCE_HASH, from the build:
// kernels/CMakeLists.txt; comment-only and blank lines do not count, and SourceHashes below says
// which hashes are current). It holds the three fastest
// verified candidates with their statistics, occupancy, registers and shared memory; the fastest
// at 50% occupancy or more, and what the 100% rule costs against it; the default shape's time;
// the candidates that failed verification and why.
//
// Files are written atomically (a temporary file renamed into place) under an exclusive lock,
// merged with what is there, so two tuners never corrupt or lose each other's records. A file
// that cannot be read, is corrupt or truncated, has another format or version, or holds records
// of a GPU other than the one its folder names is rejected with a warning and never used (and set
// aside, not overwritten, when a tuner stores into it).
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autotune/occupancy.hpp"
#include "autotune/problem_class.hpp"
#include "autotune/statistics.hpp"
#include "harness/variant.hpp"

namespace klab::autotune {

struct GpuIdentity {
    std::string name;  // "NVIDIA H200"
    int cc_major = 0;
    int cc_minor = 0;
    int sm_count = 0;
    int driver_version = 0;   // cudaDriverGetVersion, e.g. 13000
    int runtime_version = 0;  // cudaRuntimeGetVersion

    // "NVIDIA H200, cc 9.0, 132 SMs, driver 13.0, runtime 13.0": records match on all of it.
    std::string key() const;
    std::string slug() const;  // "nvidia-h200", the folder under results/
    bool same_compute_capability(const GpuIdentity& other) const {
        return cc_major == other.cc_major && cc_minor == other.cc_minor;
    }
};
// The current CUDA device's identity; throws klab::Error without one.
GpuIdentity current_gpu_identity();

struct KernelRecord {
    std::string name;
    KernelResources resources;
    std::size_t dynamic_shared_bytes = 0;
};

struct MeasuredCandidate {
    LaunchShape shape;
    Quartiles us;  // of the samples, microseconds
    int samples = 0;
    bool remeasured = false;  // a finalist: the figures come from the interleaved second pass
    Occupancy occupancy;  // the lowest of its kernels'
    std::vector<KernelRecord> kernels;
};

struct InvalidCandidate {
    LaunchShape shape;
    std::string reason;
};

struct TuningRecord {
    GpuIdentity gpu;
    std::string variant;
    std::string source_hash;
    ProblemClass problem_class;
    std::string problem;  // the representative problem measured, as text
    double requested_min_occupancy = 1.0;  // --min-occupancy
    double min_occupancy = 1.0;            // applied: lower when no shape reaches the requested one
    std::string note;                      // why they differ, or empty
    std::vector<MeasuredCandidate> top;  // fastest first (ties broken as the tuner says), at most 3
    double relaxed_min_occupancy = 0.5;
    std::optional<MeasuredCandidate> best_relaxed;  // fastest at relaxed_min_occupancy or more
    // What requiring min_occupancy costs: the fastest median at min_occupancy over best_relaxed's,
    // minus 1 (>= 0; 0.039 means the best shape at min_occupancy is 3.9% slower than the best at
    // relaxed_min_occupancy).
    std::optional<double> rule_cost;
    std::optional<MeasuredCandidate> default_shape;  // the variant's default shape, measured alike (its
                                                     // re-measured figures when it was a finalist)
    std::vector<KernelRecord> kernels_seen;  // every kernel of the space, its registers and shared memory
    int candidates_measured = 0;
    int candidates_excluded = 0;
    std::vector<InvalidCandidate> invalid;
    std::string tuned_at;      // UTC, ISO 8601
    std::string klab_version;  // the commit of the build (harness/version.hpp), "-dirty" when modified
};

class TuningCache {
public:
    // The text of one file; `source` names it in messages, `expected_slug` is the GPU folder it
    // was read from. Throws klab::Error saying why it is not a usable cache (see above).
    static TuningCache parse(const std::string& text, const std::string& source, const std::string& expected_slug);
    // One file. Any problem (see above) yields an empty cache and a warning in `warnings`.
    static TuningCache load_file(const std::filesystem::path& file, std::vector<std::string>& warnings);
    // Every <results_dir>/*/autotune.json; a missing directory is an empty cache, no warning.
    static TuningCache load_directory(const std::filesystem::path& results_dir, std::vector<std::string>& warnings);

    // Adds `record`, replacing one of the same GPU key, variant and class.
    void merge(const TuningRecord& record);
    const std::vector<TuningRecord>& records() const { return records_; }

private:
    std::vector<TuningRecord> records_;
};

// results_dir/<slug>/autotune.json for `gpu`.
std::filesystem::path cache_file(const std::filesystem::path& results_dir, const GpuIdentity& gpu);

// Merges `records` (all of one GPU) into cache_file(): under an exclusive lock of a ".lock" file
// beside it, re-reads the file, merges, writes a temporary file and renames it into place. A
// rejected existing file is renamed to "autotune.json.rejected-<UTC time>" with a warning.
// Throws klab::Error when the directory cannot be created or written.
void store(const std::filesystem::path& results_dir, const std::vector<TuningRecord>& records,
           std::vector<std::string>& warnings);

// The run-time lookup, in this order: the exact problem class on this GPU (same identity key), the
// same GPU at the nearest resolution bucket (mask, channels and layout equal; the larger bucket on
// a tie), the same compute capability (the same GPU model first, then the nearest size), else the
// variant's default shape. Records tuned with another source of the variant are skipped, and so
// are shapes the variant refuses for the problem (check_shape, or parameters its tuning space does
// not declare: parameter_mismatch; the record's next shape is tried).
// Between records of several occupancy rules at one level, the faster shape wins.
enum class LookupLevel { exact, nearest_size, same_compute_capability, variant_default };
const char* to_string(LookupLevel level);

struct Lookup {
    LaunchShape shape;
    LookupLevel level = LookupLevel::variant_default;
    std::string explanation;  // one line for the log: where the shape came from, or why the default
    const TuningRecord* record = nullptr;
};

// The source hashes a record of a variant may carry and still be current: `code`, the hash of the
// variant's code (comment-only and blank lines left out), which the tuner writes; `full_text`,
// the hash of its files' whole text, which records tuned before 2026-11-30 carry (empty: none).
// A comment edit changes only the second, so it leaves records of the first kind current.
struct SourceHashes {
    std::string code;
    std::string full_text;
    bool current(std::string_view recorded) const { return recorded == code || (!full_text.empty() && recorded == full_text); }
};

Lookup lookup(const TuningCache& cache, const Variant& variant, const SourceHashes& source, const Problem& problem,
              const GpuIdentity& gpu);

// A variant's source hashes by its name; nullopt for a name the build does not know.
using SourceHashesOf = std::function<std::optional<SourceHashes>(const std::string& variant)>;

// The records of `gpu` (same identity key) that are current only by their variant's full-text
// hash, each with source_hash set to the variant's code hash, for the caller to store. Such a
// record was tuned on files whose whole text is the current one, so the code hash names its
// sources as well; with it, a later comment edit leaves the record current. Nothing else in the
// record changes (its figures, its time, its commit).
std::vector<TuningRecord> restamped_with_code_hash(const TuningCache& cache, const GpuIdentity& gpu,
                                                   const SourceHashesOf& hashes_of);

// The same on the file: under store()'s lock, re-reads cache_file(results_dir, gpu), restamps what
// restamped_with_code_hash() finds in it as it is then, and writes it back; returns how many. A
// missing or unusable file, or nothing to restamp, writes nothing (0). Throws klab::Error when the
// lock or the file cannot be written.
int restamp_with_code_hash(const std::filesystem::path& results_dir, const GpuIdentity& gpu, const SourceHashesOf& hashes_of);

}  // namespace klab::autotune
