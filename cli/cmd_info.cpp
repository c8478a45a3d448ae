// klab info: the CUDA devices of this machine (or the one --device names) and how this klab was
// built. Each device's slug names its folder under results/ (and the CI runner label of its model).
#include <cstdlib>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autotune/gpu_model.hpp"
#include "cli/commands.hpp"
#include "harness/device_info.hpp"
#include "harness/device_select.hpp"
#include "harness/version.hpp"

namespace klab::cli {

namespace {

struct InfoOptions {
    bool json = false;
    std::string device;  // empty or "all": every device
};

nlohmann::json to_json(const DeviceInfo& d) {
    return {{"index", d.index},
            {"name", d.name},
            {"slug", autotune::gpu_slug(d.name)},
            {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
            {"sm_count", d.sm_count},
            {"global_memory_bytes", d.global_memory_bytes},
            {"l2_cache_bytes", d.l2_cache_bytes},
            {"shared_memory_per_block_optin_bytes", d.shared_memory_per_block_optin},
            {"registers_per_sm", d.registers_per_sm},
            {"max_threads_per_sm", d.max_threads_per_sm},
            {"sm_clock_khz", d.sm_clock_khz},
            {"memory_clock_khz", d.memory_clock_khz},
            {"memory_bus_bits", d.memory_bus_bits},
            {"driver_cuda_version", cuda_version_string(d.driver_version)},
            {"runtime_cuda_version", cuda_version_string(d.runtime_version)}};
}

void run_info(const InfoOptions& options) {
    DeviceQuery query = query_devices();
    if (!options.device.empty()) {
        // A missing index is an error even here: a script asking about device 7 must not read "no device".
        query.devices = requested_devices(parse_device_request(options.device), query, std::getenv("CUDA_VISIBLE_DEVICES"));
    }
#if defined(KLAB_HAVE_NPP)
    const bool npp = true;
#else
    const bool npp = false;
#endif
    if (options.json) {
        const BuildVersion version = build_version();
        nlohmann::json out = {{"build",
                               {{"commit", version.commit},
                                {"dirty", version.dirty},
                                {"cuda_toolkit", cuda_version_string(CUDART_VERSION)},
                                {"npp", npp}}},
                              {"devices", nlohmann::json::array()}};
        for (const auto& d : query.devices) out["devices"].push_back(to_json(d));
        if (query.devices.empty()) out["no_device_reason"] = query.no_device_reason;
        fmt::print("{}\n", out.dump(2));
        return;
    }
    // The commit that results written by this build will name (cmake/KlabVersion.cmake).
    fmt::print("klab built from commit {} with CUDA {}, NPP baseline {}\n", build_version_text(), cuda_version_string(CUDART_VERSION),
               npp ? "available" : "not available");
    if (query.devices.empty()) {
        fmt::print("{}\n", query.no_device_reason);
        return;
    }
    for (const auto& d : query.devices) {
        fmt::print("device {}: {} (compute capability {}.{}; slug {})\n", d.index, d.name, d.cc_major, d.cc_minor,
                   autotune::gpu_slug(d.name));
        fmt::print("  SMs {}, max threads/SM {}, registers/SM {}, shared memory/block (opt-in) {} KiB\n", d.sm_count,
                   d.max_threads_per_sm, d.registers_per_sm, d.shared_memory_per_block_optin / 1024);
        fmt::print("  global memory {:.1f} GiB, L2 {:.1f} MiB, memory bus {} bits\n",
                   static_cast<double>(d.global_memory_bytes) / (1 << 30), d.l2_cache_bytes / 1048576.0,
                   d.memory_bus_bits);
        fmt::print("  SM clock {} MHz, memory clock {} MHz\n", d.sm_clock_khz / 1000, d.memory_clock_khz / 1000);
        fmt::print("  driver supports CUDA {}, runtime CUDA {}\n", cuda_version_string(d.driver_version),
                   cuda_version_string(d.runtime_version));
    }
}

}  // namespace

void add_info_command(CLI::App& app) {
    auto options = std::make_shared<InfoOptions>();
    CLI::App* cmd = app.add_subcommand("info", "Show the CUDA devices and their properties, and how klab was built");
    cmd->add_flag("--json", options->json, "Print JSON instead of text");
    cmd->add_option("--device", options->device,
                    "Only this CUDA device (an index as listed here; CUDA_VISIBLE_DEVICES decides which are listed), or all: "
                    "every device, as without --device, but an error (exit status 2) on a machine without one");
    cmd->callback([options] { run_info(*options); });
}

}  // namespace klab::cli
