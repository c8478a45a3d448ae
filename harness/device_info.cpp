#include "harness/device_info.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "harness/cuda_check.hpp"

namespace klab {

std::string cuda_version_string(int version) { return fmt::format("{}.{}", version / 1000, (version % 1000) / 10); }

DeviceQuery query_devices() {
    DeviceQuery query;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
        (void)cudaGetLastError();  // clear the sticky "no device" error for later calls
        query.no_device_reason = status == cudaSuccess
                                     ? "no CUDA device found"
                                     : fmt::format("no CUDA device found ({}: {})", cudaGetErrorName(status),
                                                   cudaGetErrorString(status));
        return query;
    }
    int driver = 0, runtime = 0;
    KLAB_CUDA_CHECK(cudaDriverGetVersion(&driver));
    KLAB_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    for (int d = 0; d < count; ++d) {
        cudaDeviceProp prop{};
        KLAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
        DeviceInfo info;
        info.index = d;
        info.name = prop.name;
        info.cc_major = prop.major;
        info.cc_minor = prop.minor;
        info.sm_count = prop.multiProcessorCount;
        info.global_memory_bytes = prop.totalGlobalMem;
        info.l2_cache_bytes = prop.l2CacheSize;
        info.shared_memory_per_block_optin = prop.sharedMemPerBlockOptin;
        info.registers_per_sm = prop.regsPerMultiprocessor;
        info.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
        info.memory_bus_bits = prop.memoryBusWidth;
        KLAB_CUDA_CHECK(cudaDeviceGetAttribute(&info.sm_clock_khz, cudaDevAttrClockRate, d));
        KLAB_CUDA_CHECK(cudaDeviceGetAttribute(&info.memory_clock_khz, cudaDevAttrMemoryClockRate, d));
        info.driver_version = driver;
        info.runtime_version = runtime;
        query.devices.push_back(info);
    }
    return query;
}

bool cuda_device_available() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) (void)cudaGetLastError();
    return status == cudaSuccess && count > 0;
}

}  // namespace klab
