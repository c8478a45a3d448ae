#include "harness/problem.hpp"

#include <fmt/format.h>

#include "harness/error.hpp"

namespace klab {

Problem convolve_problem(ImageShape shape, Mask mask, Border border) {
    Problem problem;
    problem.op = Operation::convolve;
    problem.shape = shape;
    problem.mask = std::move(mask);
    problem.border = border;
    return problem;
}

Problem make_problem(const FilterSpec& spec, const ImageShape& shape, Border border) {
    Problem problem;
    if (spec.operation == Operation::convolve) {
        problem = convolve_problem(shape, *spec.mask, border);
    } else {
        problem.op = spec.operation;
        problem.shape = shape;
        problem.border = border;
    }
    validate(problem);
    return problem;
}

void validate(const Problem& problem) {
    validate_shape(problem.shape);
    if (problem.op == Operation::convolve && !problem.mask) {
        throw Error("a convolve problem without a mask", "a mask with odd sides from 1 to 31");
    }
    if (problem.op != Operation::convolve && problem.mask) {
        throw Error(fmt::format("a mask given to the {} operation", to_string(problem.op)),
                    "a mask for convolve only");
    }
}

ImageShape output_shape(const Problem& problem) {
    ImageShape shape = problem.shape;
    if (problem.op == Operation::sobel) {
        shape.channels = 1;
        shape.layout = Layout::aos;
    }
    return shape;
}

std::string to_string(const Problem& problem) {
    std::string text = fmt::format("{} {}", to_string(problem.op), to_string(problem.shape));
    if (problem.mask) text += fmt::format(", {} ({}x{})", problem.mask->name(), problem.mask->width(), problem.mask->height());
    return text + ", " + to_string(problem.border);
}

}  // namespace klab
