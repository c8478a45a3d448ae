#pragma once
// The commit this build was made from (cmake/KlabVersion.cmake writes it at build time), for
// the records klab writes under results/.
#include <string>

namespace klab {

struct BuildVersion {
    const char* commit;  // full git SHA, or "unknown"
    bool dirty;          // files differed from the commit, or files git does not ignore were untracked (results/ aside)
};

BuildVersion build_version();

// "0123456789ab" or "0123456789ab-dirty" (12 hex digits), "unknown" without git.
std::string build_version_text();

}  // namespace klab
