#pragma once
// What the autotuner's CPU tests share (test_occupancy.cpp, test_search_space.cpp,
// test_tuner_rules.cpp, test_problem_classes.cpp, test_tuning_cache.cpp, test_tuning_lookup.cpp,
// test_tune_cli.cpp): GPU models and kernel resources, a variant made for the tests, problems,
// measured candidates and cache records.
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autotune/gpu_model.hpp"
#include "autotune/occupancy.hpp"
#include "autotune/problem_class.hpp"
#include "autotune/search_space.hpp"
#include "autotune/statistics.hpp"
#include "autotune/tuner.hpp"
#include "autotune/tuning_cache.hpp"
#include "harness/variant.hpp"

namespace klab::autotune::fixtures {

inline GpuModel model(const char* name) {
    const std::optional<GpuModel> m = find_gpu_model(name);
    if (!m) throw std::runtime_error(std::string("no model ") + name);
    return *m;
}

inline KernelResources resources(int registers, std::size_t static_shared = 0) {
    KernelResources r;
    r.registers_per_thread = registers;
    r.static_shared_bytes = static_shared;
    return r;
}

// A variant made for the tests (never registered): two kernels, the second with 40 registers when
// the block is wider than 128; blocks narrower than 8 refused.
class SpaceVariant : public Variant {
public:
    std::string name() const override { return "test.space"; }
    Operation op() const override { return Operation::convolve; }
    std::string technique() const override { return "test"; }
    Support supports(const Problem& p) const override {
        return p.shape.channels == 4 ? Support::no("no RGBA") : Support::yes();
    }
    TuningSpace tuning_space() const override {
        TuningSpace s = block_tuning_space(LaunchShape{32, 8, {{"outputs", 1}}});
        s.parameters.push_back({"outputs", {1, 2}, "outputs per thread"});
        return s;
    }
    Support check_shape(const Problem&, const LaunchShape& shape) const override {
        return shape.block_x < 8 ? Support::no("blocks at least 8 wide") : Support::yes();
    }
    std::vector<KernelLaunch> kernels(const Problem&, const LaunchShape& shape) const override {
        const dim3 block(shape.block_x, shape.block_y);
        const std::string second = shape.block_x > 128 ? "wide_kernel" : "narrow_kernel";
        return {KernelLaunch{nullptr, "first_kernel", dim3(1), block, 0}, KernelLaunch{nullptr, second, dim3(1), block, 0}};
    }
    void enqueue(const LaunchPlan&, cudaStream_t) const override {}
};

inline Problem hd_problem(int channels = 3) {
    return convolve_problem({1920, 1080, channels, Layout::aos}, masks::gaussian(3), Border{BorderMode::replicate, 0});
}

inline MeasuredCandidate measured(int x, int y, double median_us, double occupancy_fraction = 1.0,
                                  std::vector<std::pair<std::string, int>> parameters = {}) {
    MeasuredCandidate m;
    m.shape = LaunchShape{x, y, std::move(parameters)};
    m.us = {median_us * 0.99, median_us, median_us * 1.02};
    m.samples = 10;
    m.occupancy.fraction = occupancy_fraction;
    m.kernels.push_back({"k", resources(30, 16), 1024});
    return m;
}

inline Problem op_problem(Operation op, ImageShape shape) {
    Problem p;
    p.op = op;
    p.shape = shape;
    p.border = Border{BorderMode::replicate, 0};
    return p;
}

inline GpuIdentity h200(int driver = 13000) { return {"NVIDIA H200", 9, 0, 132, driver, 13000}; }
inline GpuIdentity h100() { return {"NVIDIA H100 80GB HBM3", 9, 0, 132, 13000, 13000}; }

// A record of `variant` for `problem_class` whose best shape is x by y; its shapes set SpaceVariant's
// parameter (outputs=1), so that a variant made from SpaceVariant can launch them.
inline TuningRecord record(const GpuIdentity& gpu, const std::string& variant, const std::string& problem_class, int x, int y,
                           const std::string& hash = "hash") {
    const std::vector<std::pair<std::string, int>> outputs = {{"outputs", 1}};
    TuningRecord r;
    r.gpu = gpu;
    r.variant = variant;
    r.source_hash = hash;
    r.problem_class = parse_problem_class(problem_class);
    r.problem = "convolve ...";
    MeasuredCandidate best = measured(x, y, 10.0, 1.0, outputs);
    best.kernels = {{"k", resources(30, 16), 1024}};
    best.occupancy.blocks_per_sm = 8;
    r.top = {best, measured(x, y * 2 <= 256 ? y * 2 : 1, 10.5, 1.0, outputs)};
    r.best_relaxed = best;
    r.rule_cost = 0.0;
    r.default_shape = measured(32, 8, 12.0, 1.0, outputs);
    r.kernels_seen = {{"k", resources(30, 16), 0}, {"k2", resources(40), 0}};
    r.candidates_measured = 30;
    r.candidates_excluded = 51;
    r.invalid.push_back({LaunchShape{8, 8, outputs}, "differs from the CPU reference"});
    r.tuned_at = "2026-11-21T22:00:00Z";
    r.klab_version = "abc";
    return r;
}

}  // namespace klab::autotune::fixtures
