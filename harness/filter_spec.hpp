#pragma once
// Filter specifications as users write them on the command line:
//   box:K  gaussian:K[:SIGMA]  sharpen  laplacian  emboss  unsharp:K[:SIGMA[:AMOUNT]]
//   random:K[:SEED]  sobel  integral  mask:FILE
// K is an odd side 1..31; SIGMA <= 0 or absent picks OpenCV's default; AMOUNT defaults to 1;
// SEED (of random's K x K general mask, masks::random) defaults to 1.
#include <optional>
#include <string>
#include <string_view>

#include "harness/mask.hpp"

namespace klab {

enum class Operation { convolve, sobel, integral };

const char* to_string(Operation operation);

struct FilterSpec {
    Operation operation = Operation::convolve;
    std::optional<Mask> mask;  // set for Operation::convolve
    std::string text;          // the spec as written
};

// Throws klab::Error naming the spec and listing the allowed forms.
FilterSpec parse_filter_spec(std::string_view spec);

extern const char* const kFilterSpecHelp;

}  // namespace klab
