// A tuning record as JSON and back (autotune/tuning_record_json.hpp).
#include "autotune/tuning_record_json.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace klab::autotune {

using nlohmann::json;

namespace {

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

}  // namespace

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

}  // namespace klab::autotune
