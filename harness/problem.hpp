#pragma once
// A problem: what a variant is asked to compute, independent of where the pixels live.
// Device buffers (variant.hpp) carry the pixels; the problem carries the operation, the input
// shape, the mask and the border, so that supports(), tuning and verification can reason about
// it without touching memory.
#include <optional>
#include <string>

#include "harness/border.hpp"
#include "harness/filter_spec.hpp"
#include "harness/image.hpp"
#include "harness/mask.hpp"

namespace klab {

struct Problem {
    Operation op = Operation::convolve;
    ImageShape shape;          // the input image; a convolution's output has the same shape
    std::optional<Mask> mask;  // Operation::convolve only
    Border border;
};

Problem convolve_problem(ImageShape shape, Mask mask, Border border);

// The problem `spec` poses for an input of `shape` with `border`: a convolution with the spec's
// mask, or Sobel or integral; validated (throws klab::Error as validate() does).
Problem make_problem(const FilterSpec& spec, const ImageShape& shape, Border border);

// Throws klab::Error when the problem cannot be computed by any variant: an invalid shape
// (empty, too large, 2 or 5 channels), a convolution without a mask, a mask on another op.
// Masks validate their own sides (odd, 1..31) when they are built.
void validate(const Problem& problem);

// The shape the op writes: the input shape for convolve and integral, 1 channel for sobel.
ImageShape output_shape(const Problem& problem);

// "convolve 1920x1080x3 aos, gauss5 (5x5), replicate"
std::string to_string(const Problem& problem);

}  // namespace klab
