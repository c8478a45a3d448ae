#pragma once
// The tuner's search space for one variant and problem: every block shape (x, y) the variant
// declares with 64 <= x*y <= 1024 threads, crossed with the variant's own parameters, each either
// included or excluded with a stated reason (too few or too many threads, the variant refuses it,
// a kernel cannot run it, or its theoretical occupancy is below the minimum).
//
// Occupancy comes from an oracle, so the same enumeration runs on the device (the CUDA occupancy
// API) and offline (a GPU model and recorded kernel resources; unit-tested on a CPU machine).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autotune/occupancy.hpp"
#include "harness/problem.hpp"
#include "harness/variant.hpp"

namespace klab::autotune {

constexpr int kMinBlockThreads = 64;
constexpr int kMaxBlockThreads = 1024;

// One kernel of a launch: its resources and theoretical occupancy at the launch's block.
struct KernelOccupancy {
    std::string kernel_name;
    KernelResources resources;
    Occupancy occupancy;
};

// Evaluates one kernel launch; throws klab::Error when the kernel cannot run that block.
using OccupancyOracle = std::function<KernelOccupancy(const KernelLaunch&)>;

// The oracle of the current device (cudaFuncGetAttributes + cudaOccupancyMaxActiveBlocksPerMultiprocessor).
OccupancyOracle device_oracle();
// The offline oracle: `model`'s limits and resources recorded per kernel name (see TuningCache);
// a kernel without a record is an error naming it.
OccupancyOracle offline_oracle(GpuModel model, std::function<std::optional<KernelResources>(const std::string&)> recorded);

struct Candidate {
    LaunchShape shape;
    int threads = 0;
    std::vector<KernelOccupancy> kernels;  // empty when excluded before the kernels were asked for
    std::optional<Occupancy> occupancy;    // the lowest of the kernels'
    std::string excluded_because;          // empty: the candidate is in the space

    bool included() const { return excluded_because.empty(); }
};

struct SearchSpace {
    std::vector<Candidate> candidates;  // included and excluded, in enumeration order
    double min_occupancy = 1.0;

    std::vector<const Candidate*> included() const;
    // "36 included; excluded: 45 outside 64..1024 threads, 4 below 100% occupancy (registers)"
    std::string summary() const;
};

// One shape: included, or excluded with its reason (as listed above).
Candidate evaluate_shape(const Variant& variant, const Problem& problem, const LaunchShape& shape, double min_occupancy,
                         const OccupancyOracle& oracle);

// Throws klab::Error when min_occupancy is outside (0, 1] or the problem is one the variant does
// not support.
SearchSpace search_space(const Variant& variant, const Problem& problem, double min_occupancy,
                         const OccupancyOracle& oracle);

}  // namespace klab::autotune
