#pragma once
// Problem classes: what the tuner tunes and the cache is keyed by. A class is an operation and a
// resolution bucket (480p, 720p, HD, 4K, 8K) with what decides a variant's best shape besides the
// size: for a convolution the mask size, channels and layout; for Sobel the channels (gray or
// colour) and layout; for the integral image the channels, layout and the sums' type (u32 or u64,
// by the rule in docs/numeric-contract.md). Every problem falls into one class (its resolution
// bucket is the nearest by pixel count), and each class has one representative problem that the
// tuner measures: a natural synthetic image of the bucket's size, border replicate, with a Gaussian
// mask for a convolution.
#include <string>
#include <string_view>

#include "harness/image.hpp"
#include "harness/problem.hpp"
#include "harness/variant.hpp"

namespace klab::autotune {

struct ProblemClass {
    Operation op = Operation::convolve;
    std::string resolution = "HD";  // one of synth::named_resolutions()
    int mask_width = 3;             // convolutions; 0 for the other operations
    int mask_height = 3;
    int channels = 3;
    Layout layout = Layout::aos;
    bool wide_sums = false;  // integral images: u64 sums (else u32)

    bool operator==(const ProblemClass& other) const {
        return op == other.op && resolution == other.resolution && mask_width == other.mask_width &&
               mask_height == other.mask_height && channels == other.channels && layout == other.layout &&
               wide_sums == other.wide_sums;
    }
};

// The cache's key, parsed back by parse_problem_class(): "HD/3x3/c3/aos" (a convolution, the form
// the first caches were written in), "sobel/8K/c1/aos", "integral/8K/c1/aos/u64".
std::string to_string(const ProblemClass& c);
ProblemClass parse_problem_class(std::string_view text);  // throws klab::Error naming the forms

ProblemClass problem_class(const Problem& problem);

// The bucket nearest to width x height by pixel count (on a log scale).
std::string resolution_bucket(int width, int height);
// Index of a bucket in size order (480p = 0 ... 8K = 4); throws klab::Error for an unknown name.
int resolution_rank(std::string_view bucket);

// The problem the tuner measures for a class. Convolutions: square masks a Gaussian of that size,
// others a box-like mask of the class's sides. Sobel: the bucket's image. Integral: the bucket's
// image where its sums have the class's type; the 8K bucket's u32 class (images from 16.6 M to
// 16.8 M pixels) is measured on 4096 x 4096 (2^24 pixels), a square whose sums fit u32 (the largest
// such square is 4104 x 4104).
Problem representative_problem(const ProblemClass& c);
// The same for one variant: for a convolution the Gaussian problem when the variant supports it,
// else the box mask of the class's sides when it supports that (conv.box_integral takes box masks
// only), else the Gaussian problem, which the caller will find unsupported.
Problem representative_problem(const ProblemClass& c, const Variant& variant);

}  // namespace klab::autotune
