#pragma once
// nlohmann::json::parse with a nesting limit, for the JSON files klab reads (the tuning cache,
// benchmark results). The parser itself needs no stack, but dump() and any recursive reader of the
// result do: a file of 100,000 '[' would overflow it. klab's files nest a few levels deep.
#include <string>

#include <nlohmann/json.hpp>

namespace klab {

inline constexpr int kMaxJsonDepth = 64;

// Throws nlohmann::json::exception for invalid JSON, as parse() does, and for nesting deeper
// than kMaxJsonDepth.
inline nlohmann::json parse_json_limited(const std::string& text) {
    return nlohmann::json::parse(text, [](int depth, nlohmann::json::parse_event_t, const nlohmann::json&) {
        if (depth > kMaxJsonDepth) {
            throw nlohmann::json::out_of_range::create(
                406, "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels", static_cast<const nlohmann::json*>(nullptr));
        }
        return true;
    });
}

}  // namespace klab
