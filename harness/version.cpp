#include "harness/version.hpp"

#include <string_view>

namespace klab {

std::string build_version_text() {
    const BuildVersion v = build_version();
    const std::string_view commit(v.commit);
    if (commit == "unknown") return "unknown";
    return std::string(commit.substr(0, 12)) + (v.dirty ? "-dirty" : "");
}

}  // namespace klab
