// The tuning cache on disk (autotune/tuning_cache.hpp): the GPU's identity, reading and checking a
// file, merging records, and the locked, atomic store. The records' JSON form is in
// autotune/tuning_record_json.cpp, the lookup ladder in autotune/tuning_lookup.cpp.
#include "autotune/tuning_cache.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <vector>
#include <utility>

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <unistd.h>

#include "autotune/gpu_model.hpp"
#include "autotune/json_limits.hpp"
#include "autotune/tuning_record_json.hpp"
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

// Records of one GPU, variant and class tuned under different occupancy rules coexist.
bool same_key(const TuningRecord& a, const TuningRecord& b) {
    return a.gpu.key() == b.gpu.key() && a.variant == b.variant && a.problem_class == b.problem_class &&
           a.requested_min_occupancy == b.requested_min_occupancy;
}

// Reads and parses a whole file (TuningCache::parse).
TuningCache parse_file(const fs::path& file, const std::string& expected_slug) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(fmt::format("cannot read {}: {}", printable(file.string()), std::strerror(errno)), "a readable file");
    const std::string name = printable(file.string());
    return TuningCache::parse(io::read_all(in, file, io::kMaxTextFileBytes, name, "a readable file"), name, expected_slug);
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
            // The value as the file spells it (dump() leaves a DEL byte as it is, and may be long).
            throw Error(fmt::format("{} has version {} of the tuning-cache format", source, printable(shortened(root.at("version").dump()))),
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
        throw Error(fmt::format("{} is corrupt or truncated: {}", source, printable(shortened(e.what()))), "a complete file written by `klab tune`");
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

namespace {

// The whole cache, written atomically over `file` (the caller holds its lock).
void write_cache(const fs::path& file, const TuningCache& cache) {
    json list = json::array();
    for (const TuningRecord& r : cache.records()) list.push_back(record_json(r));
    const json root = {{"format", kFormat}, {"version", kVersion}, {"records", list}};
    const std::string text = root.dump(2) + "\n";
    io::write_file_atomically(file, std::vector<std::uint8_t>(text.begin(), text.end()));
}

}  // namespace

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
    write_cache(file, cache);
}

std::vector<TuningRecord> restamped_with_code_hash(const TuningCache& cache, const GpuIdentity& gpu,
                                                   const SourceHashesOf& hashes_of) {
    const std::string key = gpu.key();
    std::vector<TuningRecord> restamped;
    for (const TuningRecord& r : cache.records()) {
        if (r.gpu.key() != key) continue;
        const std::optional<SourceHashes> hashes = hashes_of(r.variant);
        const bool full_text_only = hashes && !hashes->full_text.empty() && r.source_hash == hashes->full_text &&
                                    r.source_hash != hashes->code;
        if (!full_text_only) continue;
        TuningRecord same_sources = r;
        same_sources.source_hash = hashes->code;
        restamped.push_back(std::move(same_sources));
    }
    return restamped;
}

int restamp_with_code_hash(const fs::path& results_dir, const GpuIdentity& gpu, const SourceHashesOf& hashes_of) {
    const fs::path file = cache_file(results_dir, gpu);
    std::error_code error;
    if (!fs::exists(file, error)) return 0;
    const FileLock lock(fs::path(file).concat(".lock"));
    TuningCache cache;
    try {
        cache = parse_file(file, gpu.slug());  // as it is now, under the lock: a record re-tuned meanwhile is current
    } catch (const Error&) {
        return 0;  // an unusable file is left as it is (store() sets it aside when a tuner writes there)
    }
    const std::vector<TuningRecord> restamped = restamped_with_code_hash(cache, gpu, hashes_of);
    if (restamped.empty()) return 0;  // nothing written
    for (const TuningRecord& r : restamped) cache.merge(r);
    write_cache(file, cache);
    return static_cast<int>(restamped.size());
}

}  // namespace klab::autotune
