#include "harness/border.hpp"

#include <charconv>

#include <fmt/format.h>

#include "harness/error.hpp"

namespace klab {

namespace {
constexpr const char* kAllowedBorders = "constant[:V] with V an integer 0..255, replicate, mirror, reflect, wrap";
}

const char* to_string(BorderMode mode) {
    switch (mode) {
        case BorderMode::constant: return "constant";
        case BorderMode::replicate: return "replicate";
        case BorderMode::mirror: return "mirror";
        case BorderMode::reflect: return "reflect";
        case BorderMode::wrap: return "wrap";
    }
    return "unknown";
}

std::string to_string(Border border) {
    if (border.mode == BorderMode::constant) return fmt::format("constant:{}", border.value);
    return to_string(border.mode);
}

Border parse_border(std::string_view text) {
    const std::string_view name = text.substr(0, text.find(':'));
    const bool has_value = name.size() != text.size();
    for (BorderMode mode : {BorderMode::constant, BorderMode::replicate, BorderMode::mirror,
                            BorderMode::reflect, BorderMode::wrap}) {
        if (name != to_string(mode)) continue;
        Border border{mode, 0};
        if (!has_value) return border;
        if (mode != BorderMode::constant) {
            throw Error(fmt::format("border '{}' takes no value", printable(text)), kAllowedBorders);
        }
        const std::string_view digits = text.substr(name.size() + 1);
        int value = -1;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || value < 0 ||
            value > 255) {
            throw Error(fmt::format("border '{}' has a bad constant value '{}'", printable(text), printable(digits)),
                        kAllowedBorders);
        }
        border.value = static_cast<std::uint8_t>(value);
        return border;
    }
    throw Error(fmt::format("unknown border mode '{}'", printable(text)), kAllowedBorders);
}

}  // namespace klab
