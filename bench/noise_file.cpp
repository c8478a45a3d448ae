// The noise file of `klab compare` (bench/compare.hpp): the run-to-run change of each row learned
// from runs meant to be identical (--learn-noise), its JSON form, and reading it back.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/compare.hpp"
#include "autotune/json_limits.hpp"
#include "bench/compare_text.hpp"
#include "harness/error.hpp"
#include "harness/io/image_io.hpp"

namespace klab::bench {

namespace {

// The gate promises to catch a 10% slowdown; a kernel row that moved more than this between runs
// meant to be identical makes that promise void for it, so learning says so.
constexpr double kSuspiciousNoise = 0.10;

}  // namespace

std::optional<double> NoiseFile::largest_change(const std::string& row) const {
    const auto it = medians_us.find(row);
    if (it == medians_us.end()) return std::nullopt;
    std::vector<double> present;
    for (const std::optional<double>& m : it->second)
        if (m && *m > 0.0) present.push_back(*m);
    if (present.size() < 2) return std::nullopt;
    const auto [low, high] = std::minmax_element(present.begin(), present.end());
    return *high / *low - 1.0;
}

LearnedNoise learn_noise(const std::vector<BenchFile>& runs) {
    if (runs.size() < 2) {
        throw Error(fmt::format("{} run(s) to learn the noise from", runs.size()),
                    "two or more klab-bench files of identical code on one GPU model");
    }
    const std::string key = runs.front().gpu_key();
    for (const BenchFile& file : runs) {
        if (file.gpu_key().empty() || file.gpu_key() != key) {
            throw Error(fmt::format("refusing to learn one GPU model's noise from {} (GPU key {}) and {} (GPU key {})",
                                    runs.front().source, shown_key(key), file.source, shown_key(file.gpu_key())),
                        "klab-bench files whose context has the same klab_gpu_key");
        }
    }
    LearnedNoise out;
    NoiseFile& noise = out.noise;
    noise.gpu_key = key;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const BenchFile& file = runs[i];
        noise.runs.push_back({file.source, file.context_value("git_commit"), file.context_value("date"), file.context_value("host_name")});
        for (const BenchRun& run : file.runs) {
            if (!run.error.empty() || run.samples_us.empty()) continue;
            std::vector<std::optional<double>>& medians = noise.medians_us[run.name];
            medians.resize(runs.size());
            medians[i] = run.median_us();
        }
    }
    for (auto it = noise.medians_us.begin(); it != noise.medians_us.end();) {
        it = noise.largest_change(it->first) ? std::next(it) : noise.medians_us.erase(it);
    }
    for (const char* context_key : {"git_commit", "klab_study"}) {
        std::set<std::string> values;
        for (const BenchFile& file : runs) values.insert(context_or_absent(file, context_key));
        if (values.size() > 1) {
            std::string listed;
            for (const std::string& v : values) listed += (listed.empty() ? "" : ", ") + v;
            out.warnings.push_back(fmt::format("the runs differ in {} ({}): learn only from runs that time the same code", context_key, listed));
        }
    }
    std::string moved;
    int moved_count = 0;
    for (const auto& [name, medians] : noise.medians_us) {
        const double change = *noise.largest_change(name);
        if (row_class(name) != RowClass::kernel || change <= kSuspiciousNoise) continue;
        // The spread of its medians (largest over smallest), unsigned: no run is "before" another.
        if (++moved_count <= 5) moved += fmt::format("{}{} {:.1f}% apart", moved.empty() ? "" : ", ", name, 100.0 * change);
    }
    if (moved_count > 0) {
        out.warnings.push_back(fmt::format("{} kernel row(s) moved more than {:g}% between these runs ({}{}): were they of identical "
                                           "code? A row's allowance grows with its noise",
                                           moved_count, 100.0 * kSuspiciousNoise, moved, moved_count > 5 ? ", ..." : ""));
    }
    return out;
}

std::string noise_json(const NoiseFile& noise) {
    // Written by hand around nlohmann's dumps so that each run and each row keeps to one line.
    const auto text = [](const std::string& s) { return nlohmann::json(s).dump(); };
    std::string out = "{\n \"klab_noise\": 1,\n";
    out += " \"about\": " +
           text("each row's median (us) in identical-code runs of one GPU model, written by klab compare --learn-noise; "
                "klab compare --noise gives each row an allowance of at least noise_margin (default 2) times its largest "
                "change between them (bench/README.md, Comparing runs)") +
           ",\n";
    out += " \"gpu_key\": " + text(noise.gpu_key) + ",\n \"runs\": [\n";
    for (std::size_t i = 0; i < noise.runs.size(); ++i) {
        const NoiseRun& r = noise.runs[i];
        const nlohmann::ordered_json run = {{"file", r.file}, {"git_commit", r.git_commit}, {"date", r.date}, {"host_name", r.host_name}};
        out += "  " + run.dump() + (i + 1 < noise.runs.size() ? ",\n" : "\n");
    }
    out += " ],\n \"medians_us\": {\n";
    std::size_t written = 0;
    for (const auto& [name, values] : noise.medians_us) {
        std::string row;
        // To the nanosecond: the file stays readable, and no noise is below that.
        for (const std::optional<double>& v : values) {
            row += (row.empty() ? "" : ", ") + (v ? nlohmann::json(std::round(*v * 1e3) / 1e3).dump() : std::string("null"));
        }
        out += "  " + text(name) + ": [" + row + "]" + (++written < noise.medians_us.size() ? ",\n" : "\n");
    }
    return out + " }\n}\n";
}

NoiseFile parse_noise_json(const std::string& text, const std::string& source) {
    const std::string allowed = "a noise file written by klab compare --learn-noise";
    nlohmann::json doc;
    try {
        doc = parse_json_limited(text);  // the nesting limit every JSON file klab reads has
    } catch (const nlohmann::json::exception& e) {
        throw Error(fmt::format("{} is not JSON ({})", source, printable(shortened(e.what()))), allowed);
    }
    const auto text_of = [](const nlohmann::json& object, const char* key) {
        return object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : std::string();
    };
    if (!doc.is_object() || !doc.contains("klab_noise") || doc["klab_noise"] != 1 || !doc.contains("gpu_key") || !doc["gpu_key"].is_string() ||
        !doc.contains("runs") || !doc["runs"].is_array() || !doc.contains("medians_us") || !doc["medians_us"].is_object()) {
        throw Error(source + " is not a klab noise file (version 1: klab_noise, gpu_key, runs, medians_us)", allowed);
    }
    NoiseFile noise;
    noise.source = source;
    noise.gpu_key = doc["gpu_key"].get<std::string>();
    for (const nlohmann::json& r : doc["runs"]) {
        if (!r.is_object()) throw Error(source + ": a run that is not an object", allowed);
        noise.runs.push_back({text_of(r, "file"), text_of(r, "git_commit"), text_of(r, "date"), text_of(r, "host_name")});
    }
    for (const auto& [name, values] : doc["medians_us"].items()) {
        if (!values.is_array() || values.size() != noise.runs.size()) {
            throw Error(fmt::format("{}: row {} has no array of {} medians (one per run)", source, printable(name), noise.runs.size()),
                        allowed);
        }
        std::vector<std::optional<double>>& medians = noise.medians_us[name];
        for (const nlohmann::json& v : values) {
            if (v.is_null()) {
                medians.emplace_back();
            } else if (v.is_number() && v.get<double>() > 0.0) {
                medians.emplace_back(v.get<double>());
            } else {
                throw Error(fmt::format("{}: row {} has a median that is neither a positive number nor null", source, printable(name)),
                            allowed);
            }
        }
    }
    return noise;
}

NoiseFile load_noise_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + printable(path), "a readable noise file (klab compare --learn-noise)");
    const std::string allowed = "a readable noise file (klab compare --learn-noise)";
    return parse_noise_json(io::read_all(in, path, io::kMaxTextFileBytes, printable(path), allowed), printable(path));
}

}  // namespace klab::bench
