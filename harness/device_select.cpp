#include "harness/device_select.hpp"

#include <cstdlib>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "harness/cuda_check.hpp"
#include "harness/error.hpp"

namespace klab {

namespace {

// " (CUDA_VISIBLE_DEVICES=1,3 decides which GPUs CUDA shows)", or nothing when unset.
std::string visibility_note(const char* visible_devices) {
    if (visible_devices == nullptr) return {};
    return fmt::format(" (CUDA_VISIBLE_DEVICES={} decides which GPUs CUDA shows)", visible_devices);
}

}  // namespace

DeviceRequest parse_device_request(const std::string& text, bool all_allowed) {
    DeviceRequest request;
    request.given = true;
    request.all_allowed = all_allowed;
    if (text == "all") {
        request.all = true;
        return request;
    }
    const bool digits = !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
        throw Error(fmt::format("--device {}: not a device index", text.empty() ? "''" : printable(text)),
                    all_allowed ? "--device N (0, 1, ... as `klab info` lists them) or --device all"
                                : "--device N (0, 1, ... as `klab info` lists them)");
    }
    request.index = std::stoi(text);
    return request;
}

std::vector<DeviceInfo> requested_devices(const DeviceRequest& request, const DeviceQuery& query,
                                          const char* visible_devices) {
    if (query.devices.empty()) {
        const std::string option = !request.given ? std::string()
                                   : request.all  ? std::string("--device all: ")
                                                  : fmt::format("--device {}: ", request.index);
        throw Error(fmt::format("{}{}{}", option, query.no_device_reason, visibility_note(visible_devices)),
                    "a machine with a CUDA GPU");
    }
    if (!request.given || request.all) return query.devices;
    for (const DeviceInfo& d : query.devices) {
        if (d.index == request.index) return {d};
    }
    std::string listed;
    for (const DeviceInfo& d : query.devices) listed += fmt::format("{}{}: {}", listed.empty() ? "" : ", ", d.index, d.name);
    const int last = query.devices.back().index;
    throw Error(fmt::format("--device {}: there is no CUDA device {}; the devices here are {}{}", request.index, request.index,
                            listed, visibility_note(visible_devices)),
                fmt::format("{}{}", last == 0 ? "--device 0" : fmt::format("--device 0 ... {}", last),
                            request.all_allowed ? (last == 0 ? " or --device all" : ", or --device all") : ""));
}

void use_device(int index) { KLAB_CUDA_CHECK(cudaSetDevice(index)); }

const DeviceInfo& current_device(const DeviceQuery& query) {
    if (query.devices.empty()) throw Error(query.no_device_reason, "a machine with a CUDA GPU");
    int current = 0;
    KLAB_CUDA_CHECK(cudaGetDevice(&current));
    for (const DeviceInfo& d : query.devices) {
        if (d.index == current) return d;
    }
    throw Error(fmt::format("the current CUDA device {} is not among the {} CUDA lists", current, query.devices.size()));
}

DeviceInfo select_one_device(const DeviceRequest& request, const std::string& command) {
    if (request.all) {
        throw Error(fmt::format("--device all: {} runs on one device", command),
                    "--device N (klab run --device all and klab tune --device all start one process per GPU)");
    }
    const DeviceQuery query = query_devices();
    (void)requested_devices(request, query, std::getenv("CUDA_VISIBLE_DEVICES"));  // throws when it names none
    if (request.given) use_device(request.index);
    return current_device(query);
}

}  // namespace klab
