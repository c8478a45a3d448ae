#include "bench/bench_json.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autotune/json_limits.hpp"
#include "autotune/statistics.hpp"
#include "harness/error.hpp"
#include "harness/io/image_io.hpp"

namespace klab::bench {

namespace {

// Google Benchmark appends these to the names of benchmarks timed manually (GPU rows) or by the
// wall clock (CPU rows).
constexpr std::string_view kTimeSuffixes[] = {"/manual_time", "/real_time"};

std::vector<std::string> split(std::string_view text, char separator) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        if (i == text.size() || text[i] == separator) {
            parts.emplace_back(text.substr(start, i - start));
            start = i + 1;
        }
    }
    return parts;
}

// Strips every trailing time suffix, not just one: a name that ends in two ("x/real_time/real_time",
// which Google Benchmark never writes but a hand-edited file may) must map to the same key whether
// the parser or find() strips it, or find() would miss a run the file holds.
std::string_view without_manual_time(std::string_view name) {
    for (bool stripped = true; stripped;) {
        stripped = false;
        for (std::string_view suffix : kTimeSuffixes) {
            if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
                name.remove_suffix(suffix.size());
                stripped = true;
            }
        }
    }
    return name;
}

double microseconds_per_unit(const std::string& unit, const std::string& source) {
    if (unit == "ns") return 1e-3;
    if (unit == "us") return 1.0;
    if (unit == "ms") return 1e3;
    if (unit == "s") return 1e6;
    throw Error(source + ": unknown time_unit '" + printable(unit) + "'", "ns, us, ms or s");
}

std::string as_text(const nlohmann::json& value) {
    return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

std::string BenchName::text() const {
    std::string name = row + "/" + problem();
    if (!block.empty()) name += "/block:" + block;
    return name;
}

std::string BenchName::problem() const { return size + "/" + format + "/" + filter + "/" + border; }

std::optional<BenchName> BenchName::parse(std::string_view name) {
    const std::vector<std::string> parts = split(without_manual_time(name), '/');
    if (parts.size() != 5 && parts.size() != 6) return std::nullopt;
    if (std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) return std::nullopt;
    BenchName n{parts[0], parts[1], parts[2], parts[3], parts[4], {}};
    if (parts.size() == 6) {
        constexpr std::string_view kBlock = "block:";
        if (parts[5].rfind(kBlock, 0) != 0 || parts[5].size() == kBlock.size()) return std::nullopt;
        n.block = parts[5].substr(kBlock.size());
    }
    return n;
}

bool is_link_row(std::string_view row) {
    return row == "e2e.upload" || row == "e2e.download" || row == "e2e.bidirectional";
}

std::string npp_family(const std::string& filter) {
    if (filter.rfind("gauss", 0) == 0) return "npp.gauss";
    if (filter.rfind("box", 0) == 0) return "npp.box";
    if (filter == "sobel") return "npp.sobel";
    if (filter == "integral") return "npp.integral";
    // The general masks of the study: NPP's arbitrary-mask filter.
    if (filter == "sharpen" || filter == "laplacian" || filter == "emboss" || filter.rfind("random", 0) == 0) return "npp.filter32f";
    return "";
}

double BenchRun::median_us() const { return samples_us.empty() ? 0.0 : autotune::quantile(samples_us, 0.5); }

std::string BenchFile::gpu_key() const { return context_value("klab_gpu_key"); }

std::string BenchFile::context_value(const std::string& key) const {
    const auto it = context.find(key);
    return it == context.end() ? std::string() : it->second;
}

const BenchRun* BenchFile::find(std::string_view name) const {
    const std::string_view key = without_manual_time(name);
    for (const BenchRun& run : runs)
        if (run.name == key) return &run;
    return nullptr;
}

namespace {

constexpr const char* kEntriesAllowed = "entries as Google Benchmark writes them";

// entry[key] as T (std::string or bool), `fallback` where it is absent; a field of another type is
// refused by its name, where nlohmann's message ("type must be string, but is number") would not
// name it.
template <class T>
T field(const nlohmann::json& entry, const char* key, const T& fallback, const std::string& where) {
    if (!entry.contains(key)) return fallback;
    const nlohmann::json& value = entry.at(key);
    constexpr bool text = std::is_same_v<T, std::string>;
    if (text ? !value.is_string() : !value.is_boolean()) {
        throw Error(fmt::format("{}: its \"{}\" is {} (a {}), not {}", where, key, printable(shortened(value.dump())),
                                value.type_name(), text ? "a string" : "true or false"),
                    kEntriesAllowed);
    }
    return value.get<T>();
}

BenchFile parse_document(const nlohmann::json& doc, const std::string& source) {
    if (!doc.is_object() || !doc.contains("benchmarks") || !doc.at("benchmarks").is_array()) {
        throw Error(source + " has no \"benchmarks\" array", "a Google Benchmark JSON file (klab-bench --benchmark_out)");
    }
    BenchFile file;
    file.source = source;
    if (doc.contains("context") && doc.at("context").is_object()) {
        for (const auto& [key, value] : doc.at("context").items()) file.context[key] = as_text(value);
    }
    // Counters per benchmark, one vector per counter over the repetitions, for their medians.
    std::map<std::string, std::map<std::string, std::vector<double>>> counter_samples;
    for (const nlohmann::json& entry : doc.at("benchmarks")) {
        if (!entry.is_object() || !entry.contains("name") || !entry.at("name").is_string()) {
            throw Error(source + ": a benchmark entry without a name", kEntriesAllowed);
        }
        const std::string where = fmt::format("{}: benchmark {}", source, printable(entry.at("name").get<std::string>()));
        if (field<std::string>(entry, "run_type", "iteration", where) != "iteration") continue;  // aggregates are recomputed
        const std::string full_name = field<std::string>(entry, "run_name", entry.at("name").get<std::string>(), where);
        const std::string name(without_manual_time(full_name));
        auto it = std::find_if(file.runs.begin(), file.runs.end(), [&](const BenchRun& r) { return r.name == name; });
        if (it == file.runs.end()) {
            BenchRun run;
            run.name = name;
            run.parts = BenchName::parse(name);
            run.label = field<std::string>(entry, "label", "", where);
            file.runs.push_back(std::move(run));
            it = std::prev(file.runs.end());
        }
        if (field<bool>(entry, "error_occurred", false, where)) {
            it->error = field<std::string>(entry, "error_message", "failed", where);
            continue;
        }
        if (!entry.contains("real_time")) throw Error(where + " has no real_time", kEntriesAllowed);
        if (!entry.at("real_time").is_number()) {
            throw Error(fmt::format("{}: its \"real_time\" is {}, not a number", where, printable(shortened(entry.at("real_time").dump()))),
                        kEntriesAllowed);
        }
        const double real_time = entry.at("real_time").get<double>();
        const double us = real_time * microseconds_per_unit(field<std::string>(entry, "time_unit", "ns", where), source);
        if (!(us >= 0.0) || !std::isfinite(us)) {
            throw Error(fmt::format("{}: benchmark {} has the real_time {}", source, printable(name), real_time),
                        "a time >= 0 (in microseconds within a double's range), as Google Benchmark writes it");
        }
        it->samples_us.push_back(us);
        for (const auto& [key, value] : entry.items()) {
            // Google Benchmark writes user counters as top-level numbers beside its own fields.
            static const char* const kOwnFields[] = {"family_index", "per_family_instance_index", "repetitions",
                                                     "repetition_index", "threads", "iterations", "real_time",
                                                     "cpu_time"};
            if (!value.is_number() || std::find(std::begin(kOwnFields), std::end(kOwnFields), key) != std::end(kOwnFields)) {
                continue;
            }
            counter_samples[name][key].push_back(value.get<double>());
        }
    }
    for (BenchRun& run : file.runs) {
        for (const auto& [key, values] : counter_samples[run.name]) run.counters[key] = autotune::quantile(values, 0.5);
    }
    return file;
}

}  // namespace

BenchFile parse_bench_json(const std::string& text, const std::string& source) {
    nlohmann::json doc;
    try {
        doc = parse_json_limited(text);
    } catch (const nlohmann::json::exception& e) {
        // e.g. a NaN counter, which Google Benchmark writes as the bare word NaN, or a number
        // beyond a double's range.
        throw Error(fmt::format("{} is not JSON ({})", source, printable(shortened(e.what()))), "a Google Benchmark JSON file (klab-bench --benchmark_out)");
    }
    try {
        return parse_document(doc, source);
    } catch (const nlohmann::json::exception& e) {
        // A field of another type than Google Benchmark writes (a numeric run_type, a string label...).
        throw Error(fmt::format("{}: {}", source, printable(shortened(e.what()))), kEntriesAllowed);
    }
}

BenchFile load_bench_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + printable(path.string()), "a readable Google Benchmark JSON file");
    const std::string name = printable(path.string());
    return parse_bench_json(io::read_all(in, path, io::kMaxTextFileBytes, name, "a readable Google Benchmark JSON file"), name);
}

}  // namespace klab::bench
