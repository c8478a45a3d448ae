#pragma once
// Which variant and launch shape run a problem on this GPU: a variant named by the caller, or
// `auto`, the fastest verified variant of the tuning cache for the problem's class, else a
// default. Shared by `klab apply --variant` and the library (api/: klab::filter, the Python module),
// so that both choose the same way and say why in the same words.
//
// auto: this GPU's records of the exact class, else of the nearest tuned size, are compared; the
// fastest whose cached shape passes re-verification (verify_shape_once(), on a 509x287 image) wins.
// Without usable records: conv.separable_fused for a separable mask, conv.halo_tiled otherwise,
// sobel.register_window (else sobel.fused) for Sobel, where registered and running the problem;
// else the first registered variant that does. A named variant gets the cached shape (re-verified)
// or its default. Every operation is tuned (problem_class.hpp), so every one is looked up.
#include <optional>
#include <string>
#include <vector>

#include "autotune/tuning_cache.hpp"
#include "harness/problem.hpp"
#include "harness/variant.hpp"

namespace klab::autotune {

// How messages name the caller's variant option, followed by its value: the CLI's flag by
// default ("--variant conv.global does not run ..."); the library passes "variant=". (Only the CLI
// sets a block, so messages about one name --block.)
inline constexpr const char* kCliVariantOption = "--variant ";

struct VariantChoice {
    const Variant* variant = nullptr;
    LaunchShape shape;
    std::string shape_explanation;  // where the shape came from, for a "launch shape:" line
};

// nullptr for "auto"; otherwise the named variant (the registry's error lists the names), which
// must compute `spec`'s operation.
const Variant* requested_variant(const std::string& name, const FilterSpec& spec,
                                 const std::string& variant_option = kCliVariantOption);

class VariantChooser {
public:
    // `block`, when given, replaces every candidate's block (`block_text` as the caller wrote it).
    VariantChooser(TuningCache cache, GpuIdentity gpu, std::optional<LaunchShape> block = std::nullopt,
                   std::string block_text = {}, std::string variant_option = kCliVariantOption);

    // `requested`: a variant from requested_variant(), or nullptr for auto. `notes` receives the
    // choices as they are made ("auto: ...", warnings start with "warning: "), so that they can be
    // shown even when a later step fails. Throws klab::Error when nothing runs the problem.
    VariantChoice choose(const Problem& problem, const Variant* requested, std::vector<std::string>& notes) const;


private:
    // A variant's cached time for the problem, as lookup() found it.
    struct CachedTime {
        const Variant* variant = nullptr;
        Lookup found;
        double median_us = 0;
    };

    VariantChoice named_choice(const Variant& requested, const Problem& problem, std::vector<std::string>& notes) const;
    VariantChoice with_shape(const Variant& variant, const Problem& problem, std::vector<std::string>& notes) const;
    VariantChoice auto_choice(const Problem& problem, std::vector<std::string>& notes) const;
    std::vector<CachedTime> comparable_times(const Problem& problem, const ProblemClass& wanted) const;
    std::vector<std::string> stale_variants(const Problem& problem, const ProblemClass& compared) const;
    VariantChoice default_choice(const Problem& problem, const std::string& reason, std::vector<std::string>& notes) const;

    TuningCache cache_;
    GpuIdentity gpu_;
    std::optional<LaunchShape> block_;
    std::string block_text_;
    std::string variant_option_;
};

}  // namespace klab::autotune
