#pragma once
// Checks of option values with klab's kind of message ("what was wrong; allowed: ..."). CLI11's
// own say "Value abc not in range 1 to 100" for text that is no number at all, and only
// "--channels: abc" for a value outside a set of numbers.
#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/error.hpp"

namespace klab::cli {

// A number from `lowest` to `highest` (an integer where T is one).
template <class T>
CLI::Validator number_from(T lowest, T highest) {
    const char* const kind = std::is_integral_v<T> ? "an integer" : "a number";
    const std::string allowed = fmt::format("{} from {} to {}", kind, lowest, highest);
    return CLI::Validator(
        [lowest, highest, kind, allowed](std::string& text) -> std::string {
            T value{};
            if (!CLI::detail::lexical_cast(text, value)) {
                // An integer too large for T fails the cast too: it is out of range, not "not an integer".
                long double wide = 0;
                const bool number = CLI::detail::lexical_cast(text, wide);
                const bool whole = text.find_first_not_of("+-0123456789") == std::string::npos;
                if (number && (whole || !std::is_integral_v<T>)) return fmt::format("{} is out of range; allowed: {}", text, allowed);
                return fmt::format("'{}' is not {}; allowed: {}", printable(text), kind, allowed);
            }
            if (!(value >= lowest && value <= highest)) return fmt::format("{} is out of range; allowed: {}", text, allowed);
            return std::string();
        },
        fmt::format("{} to {}", lowest, highest));
}

// One of `values`.
inline CLI::Validator one_of(const std::vector<int>& values) {
    const std::string allowed = fmt::format("{}", fmt::join(values, ", "));
    return CLI::Validator(
        [values, allowed](std::string& text) -> std::string {
            int value = 0;
            if (CLI::detail::lexical_cast(text, value)) {
                for (const int v : values)
                    if (v == value) return std::string();
            }
            return fmt::format("'{}' is not among the choices; allowed: {}", printable(text), allowed);
        },
        allowed);
}

}  // namespace klab::cli
