#include "autotune/search_space.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"

namespace klab::autotune {

namespace {

// Every combination of the declared parameters' values, in declaration order.
std::vector<std::vector<std::pair<std::string, int>>> parameter_combinations(const std::vector<TunableParameter>& parameters) {
    std::vector<std::vector<std::pair<std::string, int>>> combinations(1);
    for (const TunableParameter& p : parameters) {
        std::vector<std::vector<std::pair<std::string, int>>> next;
        for (const auto& partial : combinations) {
            for (int value : p.values) {
                auto extended = partial;
                extended.emplace_back(p.name, value);
                next.push_back(std::move(extended));
            }
        }
        combinations = std::move(next);
    }
    return combinations;
}

// A short category of an exclusion reason, for the summary: the text before the first ':'.
std::string category(const std::string& reason) { return reason.substr(0, reason.find(':')); }

// CUDA's grid limits (every compute capability klab builds for): x up to 2^31 - 1, y and z up
// to 65535. prepare() refuses such launches; the space says so up front. "" when within.
std::string grid_beyond_limits(const Variant& variant, const Problem& problem, const LaunchShape& shape) {
    for (const KernelLaunch& k : variant.kernels(problem, shape)) {
        if (k.grid.x > 2147483647u || k.grid.y > 65535u || k.grid.z > 65535u) {
            return fmt::format("kernel {} needs a {}x{}x{} grid; CUDA allows at most 2147483647x65535x65535", k.kernel_name, k.grid.x,
                               k.grid.y, k.grid.z);
        }
    }
    return "";
}

}  // namespace

OccupancyOracle device_oracle() {
    return [](const KernelLaunch& launch) {
        const KernelResources resources = kernel_resources(launch.kernel);
        // A kernel must opt into more dynamic shared memory (as prepare() does), or the occupancy
        // API counts no block at all.
        const GpuModel model = current_gpu_model();
        if (resources.static_shared_bytes + launch.dynamic_shared_bytes > model.shared_per_block_optin) {
            throw Error(fmt::format("kernel {} needs {} bytes of shared memory per block", launch.kernel_name,
                                    resources.static_shared_bytes + launch.dynamic_shared_bytes),
                        fmt::format("at most {} on {}", model.shared_per_block_optin, model.name));
        }
        allow_dynamic_shared_memory(launch.kernel, launch.dynamic_shared_bytes);
        return KernelOccupancy{launch.kernel_name, resources, device_occupancy(launch)};
    };
}

OccupancyOracle offline_oracle(GpuModel model, std::function<std::optional<KernelResources>(const std::string&)> recorded) {
    return [model = std::move(model), recorded = std::move(recorded)](const KernelLaunch& launch) {
        const std::optional<KernelResources> resources = recorded(launch.kernel_name);
        if (!resources) {
            throw Error(fmt::format("no recorded registers and shared memory for kernel {}", launch.kernel_name),
                        "a tuning cache written by `klab tune` on a GPU, which records every kernel's resources");
        }
        const int threads = static_cast<int>(launch.block.x * launch.block.y * launch.block.z);
        return KernelOccupancy{launch.kernel_name, *resources, occupancy(model, *resources, threads, launch.dynamic_shared_bytes)};
    };
}

std::vector<const Candidate*> SearchSpace::included() const {
    std::vector<const Candidate*> out;
    for (const Candidate& c : candidates) {
        if (c.included()) out.push_back(&c);
    }
    return out;
}

std::string SearchSpace::summary() const {
    std::map<std::string, int> excluded;
    for (const Candidate& c : candidates) {
        if (!c.included()) ++excluded[category(c.excluded_because)];
    }
    std::string text = fmt::format("{} included", included().size());
    if (!excluded.empty()) {
        text += "; excluded:";
        const char* separator = " ";
        for (const auto& [reason, count] : excluded) {
            text += fmt::format("{}{} {}", separator, count, reason);
            separator = ", ";
        }
    }
    return text;
}

Candidate evaluate_shape(const Variant& variant, const Problem& problem, const LaunchShape& shape, double min_occupancy,
                         const OccupancyOracle& oracle) {
    Candidate c;
    c.shape = shape;
    c.threads = shape.block_x * shape.block_y;
    if (c.threads < kMinBlockThreads || c.threads > kMaxBlockThreads) {
        c.excluded_because = fmt::format("outside {}..{} threads: {}", kMinBlockThreads, kMaxBlockThreads, c.threads);
        return c;
    }
    if (const Support s = variant.check_shape(problem, shape); !s) {
        c.excluded_because = "refused by the variant: " + s.reason();
        return c;
    }
    try {
        for (const KernelLaunch& launch : variant.kernels(problem, shape)) {
            c.kernels.push_back(oracle(launch));
            const Occupancy& o = c.kernels.back().occupancy;
            if (!c.occupancy || o.fraction < c.occupancy->fraction) c.occupancy = o;
        }
    } catch (const Error& e) {
        c.excluded_because = std::string("cannot run: ") + e.what();
        return c;
    }
    if (!c.occupancy) {
        c.excluded_because = "cannot run: the variant describes no kernel launch for it";
    } else if (const std::string grid = grid_beyond_limits(variant, problem, shape); !grid.empty()) {
        c.excluded_because = "cannot run: " + grid;
    } else if (c.occupancy->fraction < min_occupancy - 1e-9) {
        c.excluded_because = fmt::format("below {} occupancy: {}", percent_text(min_occupancy), to_string(*c.occupancy));
    }
    return c;
}

SearchSpace search_space(const Variant& variant, const Problem& problem, double min_occupancy, const OccupancyOracle& oracle) {
    if (!(min_occupancy > 0.0 && min_occupancy <= 1.0)) {
        throw Error(fmt::format("a minimum occupancy of {}", min_occupancy), "a fraction above 0 and at most 1, e.g. 0.5");
    }
    if (variant.op() != problem.op) {
        throw Error(fmt::format("tuning {} (a {} variant) on {}", variant.name(), to_string(variant.op()), to_string(problem)),
                    "a problem of the variant's op");
    }
    if (const Support s = variant.supports(problem); !s) {
        throw Error(fmt::format("tuning {} on {}: {}", variant.name(), to_string(problem), s.reason()),
                    "a problem the variant supports (`klab list`)");
    }

    const TuningSpace declared = variant.tuning_space();
    SearchSpace space;
    space.min_occupancy = min_occupancy;
    for (const auto& parameters : parameter_combinations(declared.parameters)) {
        for (int y : declared.block_y) {
            for (int x : declared.block_x) {
                space.candidates.push_back(evaluate_shape(variant, problem, LaunchShape{x, y, parameters}, min_occupancy, oracle));
            }
        }
    }
    return space;
}

}  // namespace klab::autotune
