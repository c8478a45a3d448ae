#pragma once
// Small text helpers that the comparison (bench/compare.cpp) and the noise file
// (bench/noise_file.cpp) share. Internal to klab_bench.
#include <string>

#include <fmt/format.h>

#include "bench/bench_json.hpp"

namespace klab::bench {

// "+12.3%"
inline std::string percent(double fraction) { return fmt::format("{:+.1f}%", 100.0 * fraction); }

// A context value of `file`, or "(absent)".
inline std::string context_or_absent(const BenchFile& file, const std::string& key) {
    const std::string value = file.context_value(key);
    return value.empty() ? std::string("(absent)") : value;
}

// A GPU key as the messages quote it.
inline std::string shown_key(const std::string& key) { return key.empty() ? std::string("no klab_gpu_key") : "'" + key + "'"; }

}  // namespace klab::bench
