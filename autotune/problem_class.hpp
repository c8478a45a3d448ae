#pragma once
// Problem classes: what the tuner tunes and the cache is keyed by. A class is a resolution bucket
// (480p, 720p, HD, 4K, 8K), a mask size, a channel count and a layout. Every problem falls into
// one class (its resolution bucket is the nearest by pixel count), and each class has one
// representative problem that the tuner measures: a natural synthetic image of the bucket's size
// and a Gaussian mask, border replicate.
#include <string>
#include <string_view>

#include "harness/image.hpp"
#include "harness/problem.hpp"
#include "harness/variant.hpp"

namespace klab::autotune {

struct ProblemClass {
    std::string resolution = "HD";  // one of synth::named_resolutions()
    int mask_width = 3;
    int mask_height = 3;
    int channels = 3;
    Layout layout = Layout::aos;

    bool operator==(const ProblemClass& other) const {
        return resolution == other.resolution && mask_width == other.mask_width && mask_height == other.mask_height &&
               channels == other.channels && layout == other.layout;
    }
};

// "HD/3x3/c3/aos": the cache's key, parsed back by parse_problem_class().
std::string to_string(const ProblemClass& c);
ProblemClass parse_problem_class(std::string_view text);  // throws klab::Error naming the format

// Convolutions only (the tuner tunes convolution variants): throws klab::Error for another op.
ProblemClass problem_class(const Problem& problem);

// The bucket nearest to width x height by pixel count (on a log scale).
std::string resolution_bucket(int width, int height);
// Index of a bucket in size order (480p = 0 ... 8K = 4); throws klab::Error for an unknown name.
int resolution_rank(std::string_view bucket);

// The problem the tuner measures for a class (square masks: gaussian k; others: a box-like
// mask of the class's sides).
Problem representative_problem(const ProblemClass& c);
// The same for one variant: the Gaussian problem when the variant supports it, else the box
// mask of the class's sides when it supports that (conv.box_integral takes box masks only), else
// the Gaussian problem, which the caller will find unsupported.
Problem representative_problem(const ProblemClass& c, const Variant& variant);

}  // namespace klab::autotune
