#pragma once
// A tuning record as JSON and back, the form of the records in autotune.json (the tuning cache,
// autotune/tuning_cache.cpp). Internal to klab_autotune.
#include <nlohmann/json.hpp>

#include "autotune/tuning_cache.hpp"

namespace klab::autotune {

nlohmann::json record_json(const TuningRecord& r);

// Reading uses .at() and typed get<>() throughout, so a missing field or a wrong type throws
// nlohmann::json::exception, which the loader turns into a rejected file; so does an integer
// field out of its type's range.
TuningRecord record_from(const nlohmann::json& j);

}  // namespace klab::autotune
