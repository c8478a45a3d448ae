#include "autotune/tuning_cache.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <utility>

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <unistd.h>

#include "autotune/gpu_model.hpp"
#include "autotune/json_limits.hpp"
#include "harness/cuda_check.hpp"
#include "harness/device_info.hpp"
#include "harness/error.hpp"
#include "harness/io/image_io.hpp"

namespace klab::autotune {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "klab-autotune";
constexpr int kVersion = 1;

// ---------------------------------------------------------------------------------------------
// JSON <-> records. Reading uses .at() and typed get<>() throughout, so a missing field or a
// wrong type throws json::exception, which the loader turns into a rejected file.

// An integer field. get<int>() of 1e300, or of -1 into a size_t, would convert out of range
// (undefined behaviour for a float): anything but an integer within Int's range is a damaged file.
template <class Int>
Int integer(const json& value, const char* what) {
    using Limits = std::numeric_limits<Int>;
    bool in_range = false;
    if (value.is_number_unsigned()) {
        in_range = value.get<std::uint64_t>() <= static_cast<std::uint64_t>(Limits::max());
    } else if (value.is_number_integer()) {
        const std::int64_t v = value.get<std::int64_t>();
        in_range = v >= 0 ? static_cast<std::uint64_t>(v) <= static_cast<std::uint64_t>(Limits::max())
                          : Limits::is_signed && v >= static_cast<std::int64_t>(Limits::min());
    }
    if (!in_range) {
        throw json::other_error::create(
            501, fmt::format("{} is not an integer from {} to {}", what, Limits::min(), Limits::max()), &value);
    }
    return value.get<Int>();  // exact: in range
}

template <class Int>
Int integer_at(const json& object, const char* key) {
    return integer<Int>(object.at(key), key);
}

// `text` as a decimal number of digits only, into `value`; false for anything else.
bool parse_digits(std::string_view text, int& value) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return !text.empty() && text[0] != '-' && ec == std::errc{} && end == text.data() + text.size();
}

json shape_json(const LaunchShape& s) {
    json parameters = json::object();
    for (const auto& [name, value] : s.parameters) parameters[name] = value;
    return {{"block", {s.block_x, s.block_y}}, {"parameters", parameters}, {"text", to_string(s)}};
}

LaunchShape shape_from(const json& j) {
    LaunchShape s;
    const json& block = j.at("block");
    if (!block.is_array() || block.size() != 2) throw json::other_error::create(501, "block is not [x, y]", &j);
    s.block_x = integer<int>(block.at(0), "block x");
    s.block_y = integer<int>(block.at(1), "block y");
    for (const auto& [name, value] : j.at("parameters").items()) s.parameters.emplace_back(name, integer<int>(value, "a parameter"));
    return s;
}

json kernels_json(const std::vector<KernelRecord>& list) {
    json kernels = json::array();
    for (const KernelRecord& k : list) {
        kernels.push_back({{"name", k.name},
                           {"registers_per_thread", k.resources.registers_per_thread},
                           {"static_shared_bytes", k.resources.static_shared_bytes},
                           {"dynamic_shared_bytes", k.dynamic_shared_bytes},
                           {"local_bytes_per_thread", k.resources.local_bytes_per_thread},
                           {"max_threads_per_block", k.resources.max_threads_per_block}});
    }
    return kernels;
}

std::vector<KernelRecord> kernels_from(const json& list) {
    std::vector<KernelRecord> out;
    for (const json& k : list) {
        KernelRecord r;
        r.name = k.at("name").get<std::string>();
        r.resources.registers_per_thread = integer_at<int>(k, "registers_per_thread");
        r.resources.static_shared_bytes = integer_at<std::size_t>(k, "static_shared_bytes");
        r.dynamic_shared_bytes = integer_at<std::size_t>(k, "dynamic_shared_bytes");
        r.resources.local_bytes_per_thread = integer_at<std::size_t>(k, "local_bytes_per_thread");
        r.resources.max_threads_per_block = integer_at<int>(k, "max_threads_per_block");
        out.push_back(std::move(r));
    }
    return out;
}

json candidate_json(const MeasuredCandidate& c) {
    const json kernels = kernels_json(c.kernels);
    return {{"shape", shape_json(c.shape)},
            {"median_us", c.us.median},
            {"q1_us", c.us.q1},
            {"q3_us", c.us.q3},
            {"samples", c.samples},
            {"remeasured", c.remeasured},
            {"occupancy", c.occupancy.fraction},
            {"blocks_per_sm", c.occupancy.blocks_per_sm},
            {"occupancy_limited_by", c.occupancy.limited_by},
            {"kernels", kernels}};
}

MeasuredCandidate candidate_from(const json& j) {
    MeasuredCandidate c;
    c.shape = shape_from(j.at("shape"));
    c.us.median = j.at("median_us").get<double>();
    c.us.q1 = j.at("q1_us").get<double>();
    c.us.q3 = j.at("q3_us").get<double>();
    c.samples = integer_at<int>(j, "samples");
    c.remeasured = j.at("remeasured").get<bool>();
    c.occupancy.fraction = j.at("occupancy").get<double>();
    c.occupancy.blocks_per_sm = integer_at<int>(j, "blocks_per_sm");
    c.occupancy.limited_by = j.at("occupancy_limited_by").get<std::string>();
    c.kernels = kernels_from(j.at("kernels"));
    // Values no tuner writes: a damaged file, never to be used. (Sides up to 1024 first: their
    // product cannot overflow.)
    const bool sane = c.shape.block_x >= 1 && c.shape.block_y >= 1 && c.shape.block_x <= 1024 && c.shape.block_y <= 1024 &&
                      c.shape.block_x * c.shape.block_y <= 1024 && std::isfinite(c.us.median) &&
                      c.us.q1 > 0.0 && c.us.q1 <= c.us.median && c.us.median <= c.us.q3 && std::isfinite(c.us.q3) &&
                      c.samples >= 1 && c.occupancy.fraction > 0.0 && c.occupancy.fraction <= 1.0 && !c.kernels.empty();
    if (!sane) throw json::other_error::create(501, "a candidate with impossible values (block, times, samples or occupancy)", &j);
    return c;
}

json optional_candidate(const std::optional<MeasuredCandidate>& c) { return c ? candidate_json(*c) : json(nullptr); }

std::optional<MeasuredCandidate> optional_candidate_from(const json& j) {
    if (j.is_null()) return std::nullopt;
    return candidate_from(j);
}

json gpu_json(const GpuIdentity& g) {
    return {{"name", g.name},
            {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
            {"sm_count", g.sm_count},
            {"driver_version", g.driver_version},
            {"runtime_version", g.runtime_version}};
}

GpuIdentity gpu_from(const json& j) {
    GpuIdentity g;
    g.name = j.at("name").get<std::string>();
    // "M.m", digits only (sscanf's %d would take signs, spaces and overflowing numbers).
    const std::string cc = j.at("compute_capability").get<std::string>();
    const std::size_t dot = cc.find('.');
    if (dot == std::string::npos || !parse_digits(std::string_view(cc).substr(0, dot), g.cc_major) ||
        !parse_digits(std::string_view(cc).substr(dot + 1), g.cc_minor)) {
        throw json::other_error::create(501, "compute_capability is not \"M.m\"", &j);
    }
    g.sm_count = integer_at<int>(j, "sm_count");
    g.driver_version = integer_at<int>(j, "driver_version");
    g.runtime_version = integer_at<int>(j, "runtime_version");
    return g;
}

json record_json(const TuningRecord& r) {
    json top = json::array();
    for (const MeasuredCandidate& c : r.top) top.push_back(candidate_json(c));
    json invalid = json::array();
    for (const InvalidCandidate& c : r.invalid) invalid.push_back({{"shape", shape_json(c.shape)}, {"reason", c.reason}});
    return {{"gpu", gpu_json(r.gpu)},
            {"variant", r.variant},
            {"source_hash", r.source_hash},
            {"class", to_string(r.problem_class)},
            {"problem", r.problem},
            {"requested_min_occupancy", r.requested_min_occupancy},
            {"min_occupancy", r.min_occupancy},
            {"note", r.note},
            {"top", top},
            {"relaxed_min_occupancy", r.relaxed_min_occupancy},
            {"best_relaxed", optional_candidate(r.best_relaxed)},
            {"rule_cost", r.rule_cost ? json(*r.rule_cost) : json(nullptr)},
            {"default_shape", optional_candidate(r.default_shape)},
            {"kernels_seen", kernels_json(r.kernels_seen)},
            {"candidates_measured", r.candidates_measured},
            {"candidates_excluded", r.candidates_excluded},
            {"invalid", invalid},
            {"tuned_at", r.tuned_at},
            {"klab_version", r.klab_version}};
}

TuningRecord record_from(const json& j) {
    TuningRecord r;
    r.gpu = gpu_from(j.at("gpu"));
    r.variant = j.at("variant").get<std::string>();
    r.source_hash = j.at("source_hash").get<std::string>();
    r.problem_class = parse_problem_class(j.at("class").get<std::string>());
    r.problem = j.at("problem").get<std::string>();
    r.requested_min_occupancy = j.at("requested_min_occupancy").get<double>();
    r.min_occupancy = j.at("min_occupancy").get<double>();
    r.note = j.at("note").get<std::string>();
    for (const json& c : j.at("top")) r.top.push_back(candidate_from(c));
    if (r.top.empty()) throw json::other_error::create(501, "a record without a measured candidate", &j);
    r.relaxed_min_occupancy = j.at("relaxed_min_occupancy").get<double>();
    r.best_relaxed = optional_candidate_from(j.at("best_relaxed"));
    if (!j.at("rule_cost").is_null()) r.rule_cost = j.at("rule_cost").get<double>();
    r.default_shape = optional_candidate_from(j.at("default_shape"));
    r.kernels_seen = kernels_from(j.at("kernels_seen"));
    r.candidates_measured = integer_at<int>(j, "candidates_measured");
    r.candidates_excluded = integer_at<int>(j, "candidates_excluded");
    for (const json& c : j.at("invalid")) r.invalid.push_back({shape_from(c.at("shape")), c.at("reason").get<std::string>()});
    r.tuned_at = j.at("tuned_at").get<std::string>();
    r.klab_version = j.at("klab_version").get<std::string>();
    return r;
}

// Records of one GPU, variant and class tuned under different occupancy rules coexist.
bool same_key(const TuningRecord& a, const TuningRecord& b) {
    return a.gpu.key() == b.gpu.key() && a.variant == b.variant && a.problem_class == b.problem_class &&
           a.requested_min_occupancy == b.requested_min_occupancy;
}

// Reads and parses a whole file (TuningCache::parse).
TuningCache parse_file(const fs::path& file, const std::string& expected_slug) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(fmt::format("cannot read {}: {}", printable(file.string()), std::strerror(errno)), "a readable file");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return TuningCache::parse(text, printable(file.string()), expected_slug);
}

std::string utc_now(const char* format) {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char text[32];
    std::strftime(text, sizeof text, format, &tm);
    return text;
}

// An exclusive advisory lock on a file beside the cache, held for the lifetime of the object.
class FileLock {
public:
    explicit FileLock(const fs::path& path) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) throw Error(fmt::format("cannot open the lock file {}: {}", path.string(), std::strerror(errno)), "a writable results directory");
        while (::flock(fd_, LOCK_EX) != 0) {
            if (errno == EINTR) continue;
            const int error = errno;
            ::close(fd_);
            throw Error(fmt::format("cannot lock {}: {}", path.string(), std::strerror(error)), "a file system with flock()");
        }
    }
    ~FileLock() {
        ::flock(fd_, LOCK_UN);
        ::close(fd_);
    }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

private:
    int fd_ = -1;
};

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string GpuIdentity::key() const {
    return fmt::format("{}, cc {}.{}, {} SMs, driver {}, runtime {}", name, cc_major, cc_minor, sm_count,
                       cuda_version_string(driver_version), cuda_version_string(runtime_version));
}

std::string GpuIdentity::slug() const { return gpu_slug(name); }

GpuIdentity current_gpu_identity() {
    const GpuModel model = current_gpu_model();
    GpuIdentity g;
    g.name = model.name;
    g.cc_major = model.cc_major;
    g.cc_minor = model.cc_minor;
    g.sm_count = model.sm_count;
    KLAB_CUDA_CHECK(cudaDriverGetVersion(&g.driver_version));
    KLAB_CUDA_CHECK(cudaRuntimeGetVersion(&g.runtime_version));
    return g;
}

TuningCache TuningCache::parse(const std::string& text, const std::string& source, const std::string& expected_slug) {
    TuningCache cache;
    try {
        const json root = parse_json_limited(text);
        if (!root.is_object() || root.value("format", std::string()) != kFormat) {
            throw Error(fmt::format("{} is not a klab tuning cache (no \"format\": \"{}\")", source, kFormat),
                        "a file written by `klab tune`");
        }
        if (!root.at("version").is_number_integer() || root.at("version").get<std::int64_t>() != kVersion) {
            throw Error(fmt::format("{} has version {} of the tuning-cache format", source, root.at("version").dump()),
                        fmt::format("version {}", kVersion));
        }
        for (const json& j : root.at("records")) {
            TuningRecord record = record_from(j);
            if (record.gpu.slug() != expected_slug) {
                throw Error(fmt::format("{} holds a record of {} (folder {}), not of {}", source, printable(record.gpu.name),
                                        record.gpu.slug(), expected_slug),
                            "only records of the GPU its folder names: a cache is never shared between GPU models");
            }
            cache.merge(record);
        }
    } catch (const json::exception& e) {
        throw Error(fmt::format("{} is corrupt or truncated: {}", source, printable(e.what())), "a complete file written by `klab tune`");
    } catch (const Error& e) {
        const std::string what = e.what();
        if (what.find(source) != std::string::npos) throw;
        throw Error(fmt::format("{} is corrupt: {}", source, what));  // e.g. a bad problem class
    }
    return cache;
}

TuningCache TuningCache::load_file(const fs::path& file, std::vector<std::string>& warnings) {
    try {
        return parse_file(file, file.parent_path().filename().string());
    } catch (const Error& e) {
        warnings.push_back(fmt::format("ignoring the tuning cache: {}", e.what()));
        return {};
    }
}

TuningCache TuningCache::load_directory(const fs::path& results_dir, std::vector<std::string>& warnings) {
    TuningCache all;
    std::error_code error;
    if (!fs::is_directory(results_dir, error)) return all;
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(results_dir, error)) {
        const fs::path file = entry.path() / "autotune.json";
        if (entry.is_directory(error) && fs::exists(file, error)) files.push_back(file);
    }
    std::sort(files.begin(), files.end());  // a deterministic order of records
    for (const fs::path& file : files) {
        const TuningCache one = load_file(file, warnings);  // a named cache: records() refers into it
        for (const TuningRecord& r : one.records()) all.merge(r);
    }
    return all;
}

void TuningCache::merge(const TuningRecord& record) {
    for (TuningRecord& r : records_) {
        if (same_key(r, record)) {
            r = record;
            return;
        }
    }
    records_.push_back(record);
}

fs::path cache_file(const fs::path& results_dir, const GpuIdentity& gpu) { return results_dir / gpu.slug() / "autotune.json"; }

void store(const fs::path& results_dir, const std::vector<TuningRecord>& records, std::vector<std::string>& warnings) {
    if (records.empty()) return;
    const GpuIdentity& gpu = records.front().gpu;
    for (const TuningRecord& r : records) {
        if (r.gpu.slug() != gpu.slug()) {
            throw Error(fmt::format("storing records of {} and {} together", gpu.name, r.gpu.name), "records of one GPU per store()");
        }
    }
    const fs::path file = cache_file(results_dir, gpu);
    std::error_code error;
    fs::create_directories(file.parent_path(), error);
    if (error) {
        throw Error(fmt::format("cannot create {}: {}", file.parent_path().string(), error.message()), "a writable results directory");
    }

    const FileLock lock(fs::path(file).concat(".lock"));
    TuningCache cache;
    if (fs::exists(file, error)) {
        try {
            cache = parse_file(file, gpu.slug());
        } catch (const Error& e) {
            // A name no earlier set-aside file has: the time, then a counter.
            const std::string stem = fs::path(file).concat(".rejected-" + utc_now("%Y%m%dT%H%M%SZ")).string();
            fs::path aside = stem;
            for (int n = 2; fs::exists(aside); ++n) aside = fmt::format("{}-{}", stem, n);
            fs::rename(file, aside, error);
            warnings.push_back(fmt::format("{}; set it aside as {} and started a new cache", e.what(),
                                           error ? std::string("(could not rename it)") : aside.filename().string()));
            if (error) throw Error(fmt::format("cannot set aside the rejected cache {}: {}", file.string(), error.message()),
                                   "a writable results directory");
        }
    }
    for (const TuningRecord& r : records) cache.merge(r);

    json list = json::array();
    for (const TuningRecord& r : cache.records()) list.push_back(record_json(r));
    const json root = {{"format", kFormat}, {"version", kVersion}, {"records", list}};
    const std::string text = root.dump(2) + "\n";
    io::write_file_atomically(file, std::vector<std::uint8_t>(text.begin(), text.end()));
}

// ---------------------------------------------------------------------------------------------

const char* to_string(LookupLevel level) {
    switch (level) {
        case LookupLevel::exact: return "exact problem class on this GPU";
        case LookupLevel::nearest_size: return "same GPU, nearest size";
        case LookupLevel::same_compute_capability: return "same compute capability";
        case LookupLevel::variant_default: return "the variant's default shape";
    }
    return "?";
}

Lookup lookup(const TuningCache& cache, const Variant& variant, std::string_view source_hash, const Problem& problem,
              const GpuIdentity& gpu) {
    const ProblemClass wanted = problem_class(problem);
    const int wanted_rank = resolution_rank(wanted.resolution);
    const std::string key = gpu.key();

    // A candidate answer: a record and the first of its top shapes the variant accepts.
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
            if (r.source_hash != source_hash) {
                if (r.problem_class == wanted) ++stale_same_class;
                continue;
            }
            const MeasuredCandidate* usable = nullptr;
            for (const MeasuredCandidate& m : r.top) {
                if (variant.check_shape(problem, m.shape)) {
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
