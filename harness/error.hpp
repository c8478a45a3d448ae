#pragma once
// The one exception type of klab. Its message says what was wrong and, where it helps, what is
// allowed, so that a user can fix the input without reading the code.
#include <stdexcept>
#include <string>

namespace klab {

class Error : public std::runtime_error {
public:
    // `problem`: what was wrong ("mask is 4x3"); `allowed`: what would have been accepted
    // ("odd width and height from 1 to 31"). The message reads "problem; allowed: allowed".
    explicit Error(const std::string& problem, const std::string& allowed = {})
        : std::runtime_error(allowed.empty() ? problem : problem + "; allowed: " + allowed) {}
};

}  // namespace klab
