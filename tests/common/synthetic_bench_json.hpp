#pragma once
// Synthetic klab-bench JSON for the report's tests (tests/cpu/test_report.cpp,
// test_readme_table.cpp): benchmarks written as Google Benchmark writes them, a GPU run's context,
// and a small GPU study whose figures the tests can compute by hand.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace klab::test {

// One benchmark: its name (without /manual_time), one time per repetition (µs) and counters.
struct Bench {
    std::string name;
    std::vector<double> us;
    std::map<std::string, double> counters;
    std::string label;
};

// Google Benchmark's JSON as klab-bench writes it: one "iteration" entry per repetition, then the
// aggregates (with a time that would spoil every figure if the report took it for a sample).
inline nlohmann::json bench_json(const std::vector<Bench>& benches, const nlohmann::json& context) {
    nlohmann::json entries = nlohmann::json::array();
    for (const Bench& b : benches) {
        // CPU rows are timed by wall clock, GPU rows by CUDA events (bench/README.md).
        const std::string name = b.name + (b.name.rfind("cpu.", 0) == 0 ? "/real_time" : "/manual_time");
        for (std::size_t i = 0; i < b.us.size(); ++i) {
            nlohmann::json e = {{"name", name},          {"run_name", name},     {"run_type", "iteration"},
                      {"repetitions", b.us.size()}, {"repetition_index", i}, {"threads", 1},
                      {"iterations", 20},      {"real_time", b.us[i]}, {"cpu_time", 3.0},
                      {"time_unit", "us"},     {"label", b.label}};
            for (const auto& [key, value] : b.counters) e[key] = value;
            entries.push_back(e);
        }
        entries.push_back({{"name", name + "_median"}, {"run_name", name}, {"run_type", "aggregate"},
                           {"aggregate_name", "median"}, {"real_time", 999999.0}, {"time_unit", "us"}});
    }
    return {{"context", context}, {"benchmarks", entries}};
}

inline nlohmann::json gpu_context(const std::string& npp = "13.0") {
    return {{"date", "2025-06-01T12:00:00+00:00"},
            {"host_name", "gpu-box"},
            {"klab_gpu_key", "NVIDIA H200, cc 9.0, 132 SMs"},
            {"gpu_name", "NVIDIA H200"},
            {"cuda_driver", "13.0"},
            {"cuda_runtime", "13.0"},
            {"npp", npp},
            {"git_commit", "abc1234"},
            {"git_dirty", false},
            {"klab_study", "full"},
            {"cpu_reference", "sequential reference timed on 1280x720, scaled by pixel count"}};
}

// 8K RGB: 99532800 bytes in, as many out.
inline constexpr double k8KBytes = 7680.0 * 4320 * 3;

inline std::map<std::string, double> traffic(double floor_us, double us) {
    return {{"bytes_read", k8KBytes}, {"bytes_written", k8KBytes}, {"bytes_per_second", 2 * k8KBytes / (us * 1e-6)},
            {"copy_floor_us", floor_us}, {"pct_copy_floor", 100.0 * floor_us / us}};
}

inline std::map<std::string, double> with(std::map<std::string, double> counters, const std::map<std::string, double>& more) {
    for (const auto& [k, v] : more) counters[k] = v;
    return counters;
}

// A GPU study: two variants and NPP on 8K gauss3 (halo_tiled fastest), two variants and NPP on
// 8K gauss9 (separable_fused fastest), the copy row, HD rows with an SoA pair, other operations.
inline std::vector<Bench> gpu_rows(bool with_npp) {
    std::vector<Bench> rows = {
        {"conv.global/8K/rgb.aos/gauss3/replicate", {200, 200, 200},
         with(traffic(40, 200), {{"speedup_vs_cpu", 617}, {"block_x", 16}, {"block_y", 16}}), "16x16 default (no tuning record)"},
        {"conv.halo_tiled/8K/rgb.aos/gauss3/replicate", {90, 130, 100},  // median 100
         with(traffic(40, 100), {{"speedup_vs_cpu", 1234.4}, {"block_x", 32}, {"block_y", 8}, {"roofline_us", 40}}),
         "32x8 tuned (exact problem class on this GPU)"},
        // A general mask: the FMA floor (265 µs) is the roofline, above the copy floor.
        {"conv.register_window_async/8K/rgb.aos/random9/replicate", {318}, with(traffic(40, 318), {{"roofline_us", 265}}), "128x1 tuned"},
        {"conv.tile_fp32/8K/rgb.aos/random9/replicate", {900}, with(traffic(40, 900), {{"roofline_us", 265}}), "32x8 tuned"},
        {"conv.register_window_async/8K/rgb.soa/random9/replicate", {330}, with(traffic(40, 330), {{"roofline_us", 265}}), "128x1 tuned"},
        {"conv.halo_tiled/8K/rgb.aos/gauss9/replicate", {150}, with(traffic(40, 150), {{"block_x", 32}, {"block_y", 8}}), "32x8 tuned"},
        {"conv.separable_fused/8K/rgb.aos/gauss9/replicate", {120}, with(traffic(40, 120), {{"block_x", 32}, {"block_y", 4}}), "32x4 tuned"},
        {"baseline.copy/8K/rgb.aos/copy/none", {40}, traffic(40, 40), "cudaMemcpy"},
        {"conv.global/HD/rgb.aos/gauss3/replicate", {20}, {}, "32x8 default"},
        {"conv.global/HD/rgb.soa/gauss3/replicate", {15}, {}, "32x8 default"},
        {"conv.halo_tiled/HD/rgb.aos/gauss3/replicate", {10.5}, {}, "32x8 default"},
        {"sobel.fused/8K/rgb.aos/sobel/replicate", {50}, {}, "32x8 default"},
        {"sobel.fused/8K/gray/sobel/replicate", {44}, {}, "32x8 default"},
        {"integral.scan/8K/gray/integral/none", {40}, {}, "256x1 default"},
    };
    if (with_npp) {
        const std::vector<Bench> npp = {
            {"npp.gauss/8K/rgb.aos/gauss3/replicate", {300, 310, 290}, traffic(40, 300), "nppiFilterGaussBorder_8u_C3R"},
            {"npp.gauss/8K/rgb.aos/gauss9/replicate", {614}, traffic(40, 614), "nppiFilterGaussBorder_8u_C3R"},
            {"npp.separable32f/8K/rgb.aos/gauss9/replicate", {731}, traffic(40, 731), "nppiFilterRowBorder32f"},
            {"npp.filter32f/8K/rgb.aos/gauss9/replicate", {1557}, traffic(40, 1557), "nppiFilterBorder32f_8u_C3R"},
            {"npp.filter32f/8K/rgb.aos/random9/replicate", {1553}, traffic(40, 1553), "nppiFilterBorder32f_8u_C3R"},
            {"npp.sobel/8K/gray/sobel/replicate", {110}, {}, "nppiFilterSobelHorizBorder"},
            {"npp.integral/8K/gray/integral/none", {1004}, {}, "nppiIntegral_8u32s_C1R"},
        };
        rows.insert(rows.end(), npp.begin(), npp.end());
    }
    return rows;
}

// A whole text file ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace klab::test
