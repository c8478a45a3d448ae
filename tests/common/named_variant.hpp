#pragma once
// A test double of a registered variant: a convolution of any name that runs every problem and
// every shape and launches nothing (the registry's tests, the tuning-cache fuzz target's lookup).
#include <string>
#include <utility>
#include <vector>

#include "harness/variant.hpp"

namespace klab::test {

class NamedVariant final : public Variant {
public:
    explicit NamedVariant(std::string name) : name_(std::move(name)) {}
    std::string name() const override { return name_; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override { return "test double"; }
    Support supports(const Problem&) const override { return Support::yes(); }
    TuningSpace tuning_space() const override { return block_tuning_space(); }
    std::vector<KernelLaunch> kernels(const Problem&, const LaunchShape&) const override { return {}; }
    void enqueue(const LaunchPlan&, cudaStream_t) const override {}

private:
    std::string name_;
};

}  // namespace klab::test
