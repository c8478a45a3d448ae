#pragma once
// What klab knows about the CUDA devices of this machine. Queried on demand (after main starts,
// never during static initialisation); a machine without a GPU or driver yields an empty list
// and a reason.
#include <cstddef>
#include <string>
#include <vector>

namespace klab {

struct DeviceInfo {
    int index = 0;
    std::string name;
    int cc_major = 0;
    int cc_minor = 0;
    int sm_count = 0;
    std::size_t global_memory_bytes = 0;
    int l2_cache_bytes = 0;
    std::size_t shared_memory_per_block_optin = 0;
    int registers_per_sm = 0;
    int max_threads_per_sm = 0;
    int sm_clock_khz = 0;
    int memory_clock_khz = 0;
    int memory_bus_bits = 0;
    int driver_version = 0;   // e.g. 13000 for CUDA 13.0
    int runtime_version = 0;
};

struct DeviceQuery {
    std::vector<DeviceInfo> devices;
    std::string no_device_reason;  // set when `devices` is empty, e.g. "no CUDA device found (...)"
};

DeviceQuery query_devices();
// True when at least one usable CUDA device is present.
bool cuda_device_available();

// "13.0" from 13000.
std::string cuda_version_string(int version);

}  // namespace klab
