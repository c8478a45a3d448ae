#include "autotune/problem_class.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/mask.hpp"
#include "harness/reference/reference.hpp"
#include "harness/synth.hpp"

namespace klab::autotune {

namespace {

constexpr const char* kClassFormat =
    "RESOLUTION/WxH/cC/LAYOUT, e.g. HD/3x3/c3/aos, sobel/RESOLUTION/cC/LAYOUT or integral/RESOLUTION/cC/LAYOUT/u32|u64 "
    "(RESOLUTION one of 480p 720p HD 4K 8K; u64 only at 8K)";
// A square image whose sums fit u32 (2^24 pixels; the largest such square is 4104 x 4104): the 8K
// bucket's u32 class is measured on it.
constexpr int kU32Square = 4096;

const synth::Resolution& bucket_named(std::string_view name) {
    for (const synth::Resolution& r : synth::named_resolutions()) {
        if (r.name == name) return r;
    }
    throw Error(fmt::format("resolution bucket \"{}\"", printable(name)), "480p, 720p, HD, 4K or 8K");
}

}  // namespace

std::string to_string(const ProblemClass& c) {
    switch (c.op) {
        case Operation::sobel: return fmt::format("sobel/{}/c{}/{}", c.resolution, c.channels, to_string(c.layout));
        case Operation::integral:
            return fmt::format("integral/{}/c{}/{}/{}", c.resolution, c.channels, to_string(c.layout), c.wide_sums ? "u64" : "u32");
        case Operation::convolve: break;
    }
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
    // Decimal digits only: sscanf and stoi would also take spaces, signs and overflowing numbers.
    const auto number = [&](std::string_view digits) {
        int value = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (digits.empty() || digits[0] == '-' || ec != std::errc{} || end != digits.data() + digits.size()) throw fail();
        return value;
    };
    ProblemClass c;
    if (parts.front() == "sobel" || parts.front() == "integral") {
        c.op = parts.front() == "sobel" ? Operation::sobel : Operation::integral;
        c.mask_width = c.mask_height = 0;
        parts.erase(parts.begin());
        if (parts.size() != (c.op == Operation::integral ? 4u : 3u)) throw fail();
        if (c.op == Operation::integral) {
            if (parts.back() != "u32" && parts.back() != "u64") throw fail();
            c.wide_sums = parts.back() == "u64";
            parts.pop_back();
        }
        parts.insert(parts.begin() + 1, "");  // no mask part: the positions of a convolution's class
    } else if (parts.size() != 4) {
        throw fail();
    }
    try {
        c.resolution = bucket_named(parts[0]).name;
        if (c.op == Operation::convolve) {
            const std::string_view mask = parts[1];
            const std::size_t x = mask.find('x');
            if (x == std::string_view::npos) throw fail();
            c.mask_width = number(mask.substr(0, x));
            c.mask_height = number(mask.substr(x + 1));
        }
        if (parts[2].size() < 2 || parts[2][0] != 'c') throw fail();
        c.channels = number(std::string_view(parts[2]).substr(1));
        c.layout = parse_layout(parts[3]);
    } catch (const std::exception&) {
        throw fail();
    }
    const bool odd_sides = c.mask_width % 2 == 1 && c.mask_height % 2 == 1 && c.mask_width >= 1 && c.mask_height >= 1 &&
                           c.mask_width <= Mask::kMaxSide && c.mask_height <= Mask::kMaxSide;
    if ((c.op == Operation::convolve && !odd_sides) || (c.channels != 1 && c.channels != 3 && c.channels != 4)) throw fail();
    if (c.wide_sums && c.resolution != "8K") throw fail();  // every image of a smaller bucket has u32 sums
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
    ProblemClass c;
    c.op = problem.op;
    c.resolution = resolution_bucket(problem.shape.width, problem.shape.height);
    c.channels = problem.shape.channels;
    c.layout = problem.shape.layout;
    if (problem.op == Operation::convolve) {
        if (!problem.mask) throw Error(fmt::format("a tuning class for {}", to_string(problem)), "a convolve problem with a mask");
        c.mask_width = problem.mask->width();
        c.mask_height = problem.mask->height();
        return c;
    }
    c.mask_width = c.mask_height = 0;
    c.wide_sums = problem.op == Operation::integral &&
                  reference::integral_type(problem.shape.width, problem.shape.height) == reference::IntegralType::u64;
    return c;
}

Problem representative_problem(const ProblemClass& c) {
    const synth::Resolution& r = bucket_named(c.resolution);
    ImageShape shape{r.width, r.height, c.channels, c.layout};
    const Border replicate{BorderMode::replicate};
    if (c.op != Operation::convolve) {
        Problem p;
        p.op = c.op;
        p.border = replicate;
        const bool wide = reference::integral_type(shape.width, shape.height) == reference::IntegralType::u64;
        if (c.op == Operation::integral && wide != c.wide_sums) {  // only the 8K bucket's u32 class
            shape.width = shape.height = kU32Square;
        }
        p.shape = shape;
        return p;
    }
    if (c.mask_width == c.mask_height) return convolve_problem(shape, masks::gaussian(c.mask_width), replicate);
    // A rectangular mask: equal weights (no standard rectangular Gaussian among the factories).
    const int taps = c.mask_width * c.mask_height;
    Mask mask(c.mask_width, c.mask_height, std::vector<float>(taps, 1.0f / static_cast<float>(taps)),
              fmt::format("box{}x{}", c.mask_width, c.mask_height));
    return convolve_problem(shape, std::move(mask), replicate);
}

Problem representative_problem(const ProblemClass& c, const Variant& variant) {
    Problem problem = representative_problem(c);
    if (c.op != Operation::convolve || variant.supports(problem) || c.mask_width != c.mask_height) return problem;
    Problem box = problem;
    box.mask = masks::box(c.mask_width);
    return variant.supports(box) ? box : problem;
}

}  // namespace klab::autotune
