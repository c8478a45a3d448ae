#pragma once
// What the `klab compare` tests on synthetic Google Benchmark JSON share (test_compare_verdicts.cpp,
// test_compare_allowance.cpp, test_compare_markdown_and_gate.cpp): benchmark files as klab-bench
// writes them (iteration rows per repetition plus the _mean/_median/_stddev/_cv aggregates), made
// from samples, and the CompareCli fixture that runs `klab compare` on two of them.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/cpu/compare_cli.hpp"

namespace klab::compare_fixtures {

constexpr const char* kH200 = "NVIDIA H200, cc 9.0, 132 SMs";
constexpr const char* kH100 = "NVIDIA H100 80GB HBM3, cc 9.0, 132 SMs";
constexpr const char* kHalo = "conv.halo_tiled/HD/rgb.aos/gauss9/replicate";
constexpr const char* kSobel = "sobel.fused/8K/gray/sobel/replicate";
constexpr const char* kCopy = "baseline.copy/8K/rgb.aos/copy/none";

struct Bench {
    std::string name;             // without "/manual_time"
    std::vector<double> samples;  // one per repetition, in us
    std::string error;            // error_message of every repetition when not empty
};

// A relative spread of +-0.4%: repetitions as tight as a quiet GPU gives.
inline std::vector<double> tight(double median) {
    std::vector<double> out;
    for (double f : {0.996, 0.998, 1.0, 1.002, 1.004}) out.push_back(median * f);
    return out;
}

inline std::vector<double> scaled(const std::vector<double>& samples, double factor) {
    std::vector<double> out;
    for (double s : samples) out.push_back(s * factor);
    return out;
}

inline double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

// Google Benchmark's JSON for `benches`, with aggregate rows when there are repetitions.
inline std::string bench_json(const std::string& gpu_key, const std::vector<Bench>& benches, const std::string& driver = "13.0") {
    nlohmann::json context = {{"date", "2026-11-21T12:00:00+00:00"},
                              {"host_name", "gpu-box"},
                              {"library_build_type", "release"},
                              {"cuda_driver", driver},
                              {"cuda_runtime", "13.0"},
                              {"klab_study", "quick"}};
    if (!gpu_key.empty()) context["klab_gpu_key"] = gpu_key;
    nlohmann::json rows = nlohmann::json::array();
    int family = 0;
    for (const Bench& b : benches) {
        const std::string run_name = b.name + "/manual_time";
        const int repetitions = static_cast<int>(b.samples.size());
        for (int i = 0; i < repetitions; ++i) {
            nlohmann::json row = {{"name", run_name},
                                  {"family_index", family},
                                  {"per_family_instance_index", 0},
                                  {"run_name", run_name},
                                  {"run_type", "iteration"},
                                  {"repetitions", repetitions},
                                  {"repetition_index", i},
                                  {"threads", 1},
                                  {"iterations", 200},
                                  {"real_time", b.samples[static_cast<std::size_t>(i)]},
                                  {"cpu_time", 3.5},
                                  {"time_unit", "us"},
                                  {"bytes_per_second", 1e12},
                                  {"label", "32x8 default (no tuning record)"}};
            if (!b.error.empty()) {
                row["error_occurred"] = true;
                row["error_message"] = b.error;
            }
            rows.push_back(row);
        }
        if (repetitions > 1 && b.error.empty()) {
            const double mean = std::accumulate(b.samples.begin(), b.samples.end(), 0.0) / repetitions;
            double square_sum = 0.0;
            for (double s : b.samples) square_sum += (s - mean) * (s - mean);
            const double stddev = std::sqrt(square_sum / (repetitions - 1));
            const std::vector<std::pair<std::string, double>> aggregates = {
                {"mean", mean}, {"median", median_of(b.samples)}, {"stddev", stddev}, {"cv", stddev / mean}};
            for (const auto& [aggregate, value] : aggregates) {
                rows.push_back({{"name", run_name + "_" + aggregate},
                                {"family_index", family},
                                {"per_family_instance_index", 0},
                                {"run_name", run_name},
                                {"run_type", "aggregate"},
                                {"repetitions", repetitions},
                                {"threads", 1},
                                {"aggregate_name", aggregate},
                                {"aggregate_unit", aggregate == "cv" ? "percentage" : "time"},
                                {"iterations", repetitions},
                                {"real_time", value},
                                {"cpu_time", 3.5},
                                {"time_unit", "us"}});
            }
        }
        ++family;
    }
    return nlohmann::json{{"context", context}, {"benchmarks", rows}}.dump(2);
}

class CompareCli : public test::CompareTest {
protected:
    // `klab compare --json OLD NEW [extra]` on two texts, parsed; the exit code through `exit_code`.
    nlohmann::json compare_json(const std::string& old_text, const std::string& new_text, int& exit_code,
                                const std::string& extra = "") const {
        return compare_files(write("old.json", old_text), write("new.json", new_text), exit_code, extra);
    }

    // The table form: `klab compare OLD NEW [extra]`.
    test::CommandResult compare_table(const std::string& old_text, const std::string& new_text, const std::string& extra = "") const {
        return klab(fmt::format("compare {} {} {}", write("old.json", old_text), write("new.json", new_text), extra));
    }
};

using test::row_of;
using test::verdict_of;

inline double p_of(const nlohmann::json& doc, const std::string& name) {
    const nlohmann::json row = row_of(doc, name);
    return row.contains("p_value") && row["p_value"].is_number() ? row["p_value"].get<double>() : -1.0;
}

// Three benchmarks with tight repetitions; the base of most tests.
inline std::vector<Bench> three_benches() {
    return {{kHalo, tight(250.0), ""}, {kSobel, tight(900.0), ""}, {kCopy, tight(120.0), ""}};
}

}  // namespace klab::compare_fixtures
