#pragma once
// Theoretical occupancy: the fraction of an SM's thread slots a kernel's blocks can fill, limited
// by threads, registers, shared memory, blocks and barriers per SM.
//
// Two ways to the same number:
//   occupancy(model, resources, ...)  offline, from NVIDIA's cuda_occupancy.h calculator, given a
//                                     GPU model (gpu_model.hpp) and a kernel's resource use; runs
//                                     on a CPU machine and for GPUs we do not have;
//   device_occupancy(launch)          on the current device, from
//                                     cudaOccupancyMaxActiveBlocksPerMultiprocessor.
// A kernel's registers and static shared memory come from cudaFuncGetAttributes on the device
// (kernel_resources()); the tuner records them in its cache so that a plan for another GPU can
// use them (register use can differ on another architecture: the plan says so).
#include <cstddef>
#include <string>

#include "autotune/gpu_model.hpp"
#include "harness/variant.hpp"

namespace klab::autotune {

struct KernelResources {
    int registers_per_thread = 0;
    std::size_t static_shared_bytes = 0;
    std::size_t local_bytes_per_thread = 0;  // spills and stack: not an occupancy limit, worth showing
    int max_threads_per_block = 1024;        // the kernel's own limit (registers, __launch_bounds__)
};

struct Occupancy {
    int blocks_per_sm = 0;
    int threads_per_sm = 0;   // blocks_per_sm * threads per block
    double fraction = 0.0;    // threads_per_sm / the SM's maximum
    std::string limited_by;   // "registers", "shared memory", "threads", "blocks", "barriers"; "" when full
};

// Offline. Throws klab::Error when the block cannot run at all (too many threads, registers or
// shared memory for one block), saying which limit it breaks.
Occupancy occupancy(const GpuModel& model, const KernelResources& resources, int block_threads,
                    std::size_t dynamic_shared_bytes);

// On the current device, for one kernel launch of a plan (its block and dynamic shared memory).
KernelResources kernel_resources(const void* kernel);
Occupancy device_occupancy(const KernelLaunch& launch);

// "100%" or "75% (registers)"
std::string to_string(const Occupancy& occupancy);
// "66.6%": a fraction in percent, cut (never rounded up) to 0.1%, so that only 100% reads "100%".
std::string percent_text(double fraction);

}  // namespace klab::autotune
