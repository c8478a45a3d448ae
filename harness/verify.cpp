#include "harness/verify.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/reference/reference.hpp"

namespace klab {

namespace {

template <class T>
void require_same_shape(const HostImage<T>& reference, const HostImage<T>& actual) {
    if (reference.shape() != actual.shape()) {
        throw Error(fmt::format("verification of a {} result against a {} reference", to_string(actual.shape()),
                                to_string(reference.shape())),
                    "a result of the reference's shape and layout");
    }
}

// Visits every element in row-major (y, x, c) order. A difference that `candidate(value, expected)`
// says might be tolerated goes to `tolerated(x, y, c, value, expected)`, which decides, until the
// first element that breaks the rule; after it, such differences are only counted as unchecked.
template <class T, class Candidate, class Tolerated>
Verification compare(const HostImage<T>& reference, const HostImage<T>& actual, Candidate candidate, Tolerated tolerated) {
    require_same_shape(reference, actual);
    Verification v;
    for (int y = 0; y < reference.height(); ++y) {
        for (int x = 0; x < reference.width(); ++x) {
            for (int c = 0; c < reference.channels(); ++c) {
                ++v.compared;
                const auto expected = static_cast<std::int64_t>(reference.at(x, y, c));
                const auto value = static_cast<std::int64_t>(actual.at(x, y, c));
                if (value == expected) continue;
                if (candidate(value, expected)) {
                    if (v.differing > 0) {
                        ++v.unchecked;
                        continue;
                    }
                    if (tolerated(x, y, c, value, expected)) {
                        ++v.tolerated;
                        continue;
                    }
                }
                if (v.differing++ == 0) v.first = PixelMismatch{x, y, c, value, expected};
            }
        }
    }
    return v;
}

}  // namespace

std::string Verification::summary() const {
    const std::string ties = tolerated == 0 ? std::string() : fmt::format(", {} within the fp32 tie bound", tolerated);
    if (ok()) return fmt::format("ok: {} values equal{}", compared, ties);
    const std::string unchecked_text =
        unchecked == 0 ? std::string()
                       : fmt::format("; {} more differ by 1, not checked against the tie bound after the first", unchecked);
    return fmt::format("{} of {} values differ; first at x={} y={} c={}: {}, reference {}{}{}", differing, compared,
                       first->x, first->y, first->c, first->value, first->expected, ties, unchecked_text);
}

double fp32_tie_bound(int taps, double magnitude) {
    const auto gamma = [taps](double unit_roundoff) {
        const double nu = taps * unit_roundoff;
        return nu / (1.0 - nu);
    };
    return (gamma(std::ldexp(1.0, -24)) + gamma(std::ldexp(1.0, -53))) * magnitude;
}

Verification verify_convolution(const ImageU8& input, const Mask& mask, Border border, const ImageU8& reference,
                                const ImageU8& actual, double coefficient_error) {
    require_same_shape(input, reference);
    if (!(coefficient_error >= 0.0) || !std::isfinite(coefficient_error)) {
        throw Error(fmt::format("a coefficient error of {}", coefficient_error), "a finite value >= 0");
    }
    const int taps = mask.width() * mask.height();
    const auto off_by_one = [](std::int64_t value, std::int64_t expected) { return std::llabs(value - expected) == 1; };
    return compare(reference, actual, off_by_one, [&](int x, int y, int c, std::int64_t value, std::int64_t expected) {
        const reference::ConvolutionSum sum = reference::convolve_sum_at(input.view(), mask, border, x, y, c);
        const double tie = std::floor(sum.value) + 0.5;  // the half-integer nearest to the exact sum
        // Only ties between two representable results: below 0.5 and above 254.5 saturation decides.
        if (tie < 0.5 || tie > 254.5) return false;
        const bool straddles = std::min(value, expected) == static_cast<std::int64_t>(std::floor(tie));
        const double slack = coefficient_error * sum.pixel_sum;
        return straddles && std::fabs(sum.value - tie) <= fp32_tie_bound(taps, sum.magnitude) + slack;
    });
}

template <class T>
Verification verify_exact(const HostImage<T>& reference, const HostImage<T>& actual) {
    const auto never = [](auto...) { return false; };  // no difference is a candidate, so none is tolerated
    return compare(reference, actual, never, never);
}

template Verification verify_exact(const HostImage<std::uint8_t>&, const HostImage<std::uint8_t>&);
template Verification verify_exact(const HostImage<std::uint32_t>&, const HostImage<std::uint32_t>&);
template Verification verify_exact(const HostImage<std::uint64_t>&, const HostImage<std::uint64_t>&);

Verification verify_result(const Problem& problem, const ImageU8& input, const ImageU8& actual, double coefficient_error,
                           int threads, const reference::Progress& progress) {
    switch (problem.op) {
        case Operation::convolve: {
            const ImageU8 expected = reference::convolve(input, *problem.mask, problem.border, threads, progress);
            return verify_convolution(input, *problem.mask, problem.border, expected, actual, coefficient_error);
        }
        case Operation::sobel: return verify_exact(reference::sobel(input, problem.border, threads), actual);
        case Operation::integral: break;
    }
    throw Error(fmt::format("a u8 result verified for {}", to_string(problem)), "convolve or sobel (integral results are u32 or u64)");
}

template <class T>
Verification verify_result(const Problem& problem, const ImageU8& input, const HostImage<T>& actual, int threads) {
    if (problem.op != Operation::integral) {
        throw Error(fmt::format("a {}-byte integer result verified for {}", sizeof(T), to_string(problem)), "integral");
    }
    return verify_exact(reference::integral<T>(input, threads), actual);
}

template Verification verify_result(const Problem&, const ImageU8&, const HostImage<std::uint32_t>&, int);
template Verification verify_result(const Problem&, const ImageU8&, const HostImage<std::uint64_t>&, int);

}  // namespace klab
