#include "autotune/problem_class.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/mask.hpp"
#include "harness/synth.hpp"

namespace klab::autotune {

namespace {

constexpr const char* kClassFormat = "RESOLUTION/WxH/cC/LAYOUT, e.g. HD/3x3/c3/aos (RESOLUTION one of 480p 720p HD 4K 8K)";

const synth::Resolution& bucket_named(std::string_view name) {
    for (const synth::Resolution& r : synth::named_resolutions()) {
        if (r.name == name) return r;
    }
    throw Error(fmt::format("resolution bucket \"{}\"", printable(name)), "480p, 720p, HD, 4K or 8K");
}

}  // namespace

std::string to_string(const ProblemClass& c) {
    return fmt::format("{}/{}x{}/c{}/{}", c.resolution, c.mask_width, c.mask_height, c.channels, to_string(c.layout));
}

ProblemClass parse_problem_class(std::string_view text) {
    const auto fail = [&] { return Error(fmt::format("problem class \"{}\"", printable(text)), kClassFormat); };
    std::vector<std::string> parts;
    std::string part;
    for (char ch : text) {
        if (ch == '/') {
            parts.push_back(part);
            part.clear();
        } else {
            part += ch;
        }
    }
    parts.push_back(part);
    if (parts.size() != 4) throw fail();
    // Decimal digits only: sscanf and stoi would also take spaces, signs and overflowing numbers.
    const auto number = [&](std::string_view digits) {
        int value = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (digits.empty() || digits[0] == '-' || ec != std::errc{} || end != digits.data() + digits.size()) throw fail();
        return value;
    };
    ProblemClass c;
    try {
        c.resolution = bucket_named(parts[0]).name;
        const std::string_view mask = parts[1];
        const std::size_t x = mask.find('x');
        if (x == std::string_view::npos || parts[2].size() < 2 || parts[2][0] != 'c') throw fail();
        c.mask_width = number(mask.substr(0, x));
        c.mask_height = number(mask.substr(x + 1));
        c.channels = number(std::string_view(parts[2]).substr(1));
        c.layout = parse_layout(parts[3]);
    } catch (const std::exception&) {
        throw fail();
    }
    const bool odd_sides = c.mask_width % 2 == 1 && c.mask_height % 2 == 1 && c.mask_width >= 1 && c.mask_height >= 1 &&
                           c.mask_width <= Mask::kMaxSide && c.mask_height <= Mask::kMaxSide;
    if (!odd_sides || (c.channels != 1 && c.channels != 3 && c.channels != 4)) throw fail();
    return c;
}

std::string resolution_bucket(int width, int height) {
    const double pixels = std::log(static_cast<double>(width) * height);
    std::string nearest;
    double best = std::numeric_limits<double>::infinity();
    for (const synth::Resolution& r : synth::named_resolutions()) {
        const double distance = std::fabs(std::log(static_cast<double>(r.width) * r.height) - pixels);
        if (distance < best) {
            best = distance;
            nearest = r.name;
        }
    }
    return nearest;
}

int resolution_rank(std::string_view bucket) {
    const auto& all = synth::named_resolutions();
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (all[i].name == bucket) return static_cast<int>(i);
    }
    throw Error(fmt::format("resolution bucket \"{}\"", printable(bucket)), "480p, 720p, HD, 4K or 8K");
}

ProblemClass problem_class(const Problem& problem) {
    if (problem.op != Operation::convolve || !problem.mask) {
        throw Error(fmt::format("a tuning class for {}", to_string(problem)), "a convolve problem");
    }
    ProblemClass c;
    c.resolution = resolution_bucket(problem.shape.width, problem.shape.height);
    c.mask_width = problem.mask->width();
    c.mask_height = problem.mask->height();
    c.channels = problem.shape.channels;
    c.layout = problem.shape.layout;
    return c;
}

Problem representative_problem(const ProblemClass& c) {
    const synth::Resolution& r = bucket_named(c.resolution);
    const ImageShape shape{r.width, r.height, c.channels, c.layout};
    if (c.mask_width == c.mask_height) return convolve_problem(shape, masks::gaussian(c.mask_width), Border{BorderMode::replicate});
    // A rectangular mask: equal weights (no standard rectangular Gaussian among the factories).
    const int taps = c.mask_width * c.mask_height;
    Mask mask(c.mask_width, c.mask_height, std::vector<float>(taps, 1.0f / static_cast<float>(taps)),
              fmt::format("box{}x{}", c.mask_width, c.mask_height));
    return convolve_problem(shape, std::move(mask), Border{BorderMode::replicate});
}

Problem representative_problem(const ProblemClass& c, const Variant& variant) {
    Problem problem = representative_problem(c);
    if (variant.supports(problem) || c.mask_width != c.mask_height) return problem;
    Problem box = problem;
    box.mask = masks::box(c.mask_width);
    return variant.supports(box) ? box : problem;
}

}  // namespace klab::autotune
