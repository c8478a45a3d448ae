#include "harness/filter_spec.hpp"

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "harness/error.hpp"

namespace klab {

const char* const kFilterSpecHelp =
    "box:K, gaussian:K[:SIGMA], sharpen, laplacian, emboss, unsharp:K[:SIGMA[:AMOUNT]], random:K[:SEED], sobel, "
    "integral, mask:FILE (K odd, 1..31)";

const char* to_string(Operation operation) {
    switch (operation) {
        case Operation::convolve: return "convolve";
        case Operation::sobel: return "sobel";
        case Operation::integral: return "integral";
    }
    return "unknown";
}

namespace {

std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> parts;
    while (true) {
        const auto at = text.find(separator);
        parts.push_back(text.substr(0, at));
        if (at == std::string_view::npos) return parts;
        text.remove_prefix(at + 1);
    }
}

// `allowed` ends the message of a token that is no number, or one out of T's range.
template <class T>
T parse_number(std::string_view token, std::string_view spec, const char* what, const std::string& allowed = kFilterSpecHelp) {
    T value{};
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (!token.empty() && ec == std::errc::result_out_of_range && end == token.data() + token.size()) {
        throw Error(fmt::format("filter '{}': {} '{}' is out of range", printable(spec), what, printable(token)), allowed);
    }
    if (std::is_unsigned_v<T> && !token.empty() && token.front() == '-') {
        throw Error(fmt::format("filter '{}': {} '{}' is negative", printable(spec), what, printable(token)), allowed);
    }
    if (token.empty() || ec != std::errc{} || end != token.data() + token.size()) {
        throw Error(fmt::format("filter '{}': {} '{}' is not a number", printable(spec), what, printable(token)), allowed);
    }
    return value;
}

}  // namespace

FilterSpec parse_filter_spec(std::string_view spec) {
    FilterSpec result;
    result.text = std::string(spec);
    const auto parts = split(spec, ':');
    const std::string_view name = parts.front();
    const std::size_t arguments = parts.size() - 1;
    const auto require_arguments = [&](std::size_t min, std::size_t max) {
        if (arguments < min || arguments > max) {
            throw Error(fmt::format("filter '{}' has {} argument(s)", printable(spec), arguments), kFilterSpecHelp);
        }
    };
    const auto side = [&] { return parse_number<int>(parts[1], spec, "size"); };
    const auto real = [&](std::size_t index, double fallback) {
        return arguments >= index ? parse_number<double>(parts[index], spec, "value") : fallback;
    };

    if (name == "box") {
        require_arguments(1, 1);
        result.mask = masks::box(side());
    } else if (name == "gaussian") {
        require_arguments(1, 2);
        result.mask = masks::gaussian(side(), real(2, 0.0));
    } else if (name == "sharpen" || name == "laplacian" || name == "emboss") {
        require_arguments(0, 0);
        result.mask = name == "sharpen" ? masks::sharpen() : name == "laplacian" ? masks::laplacian() : masks::emboss();
    } else if (name == "unsharp") {
        require_arguments(1, 3);
        result.mask = masks::unsharp(side(), real(2, 0.0), real(3, 1.0));
    } else if (name == "random") {
        require_arguments(1, 2);
        const std::string seeds = fmt::format("a seed from 0 to {}", std::numeric_limits<std::uint32_t>::max());
        result.mask = masks::random(side(), arguments == 2 ? parse_number<std::uint32_t>(parts[2], spec, "seed", seeds) : 1u);
    } else if (name == "sobel" || name == "integral") {
        require_arguments(0, 0);
        result.operation = name == "sobel" ? Operation::sobel : Operation::integral;
    } else if (name == "mask") {
        if (arguments < 1 || spec.size() <= 5) throw Error(fmt::format("filter '{}' names no file", printable(spec)), kFilterSpecHelp);
        result.mask = read_mask_file(std::string(spec.substr(5)));  // the file name may hold ':'
    } else {
        throw Error(fmt::format("unknown filter '{}'", printable(spec)), kFilterSpecHelp);
    }
    return result;
}

}  // namespace klab
